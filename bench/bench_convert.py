"""What `convert --to markdown` costs beside `convert --to openai` of the same files, in one run.

Each input is read once (`load`, timed as the third reference); then, as the command
line does it, in process:

- **openai**: the Chat Completions request bodies (`request_bodies`), written as JSONL;
- **view**: the token counts and the view a person reads (`build_view`), what markdown
  and HTML both render;
- **markdown**: the view, then `to_markdown` (markdown-it-py parses each message whose
  lines may open a block).

Every step runs once untimed, then in turn for `--rounds` rounds with the garbage
collector off; the fastest of each counts (the machine's load then falls on all alike).
A fresh token counter each time: nothing counted carries over. Inputs: the files named,
else the shared corpus where it is beside the checkout (samples/ where not); a file a
step refuses (nothing to convert) is left out of every step and named.

    PYTHONPATH=. python bench/bench_convert.py [--rounds N] [FILE ...]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.breakdown import transcript_models  # noqa: E402
from ctxpack.convert import request_bodies  # noqa: E402
from ctxpack.errors import InputError, UsageError  # noqa: E402
from ctxpack.jsonl import dumps  # noqa: E402
from ctxpack.loader import load  # noqa: E402
from ctxpack.models import TABLE  # noqa: E402
from ctxpack.render.document import to_markdown  # noqa: E402
from ctxpack.tokens import TokenCounter  # noqa: E402
from ctxpack.transcript import Transcript  # noqa: E402
from ctxpack.view import View, build_view  # noqa: E402
from tests.helpers import CORPUS  # noqa: E402

STEPS = ("read", "openai", "view", "markdown")


def inputs(named: list[str]) -> list[Path]:
    if named:
        return [Path(p) for p in named]
    folder = CORPUS if CORPUS.is_dir() else ROOT / "samples"
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and p.name not in ("MANIFEST.md", "README.md"))


def openai(t: Transcript) -> bytes:
    return b"".join(dumps(body) + b"\n" for body in request_bodies(t, "openai"))


def view(t: Transcript) -> View:
    counter = TokenCounter(TABLE.choose(transcript_models(t)), TABLE)
    return build_view(t, counter, flagged=False)


def steps(path: Path) -> dict[str, Callable[[], object]] | None:
    """Each step for `path`, or None where one refuses it (after naming it)."""
    try:
        t = load(path)
        fns: dict[str, Callable[[], object]] = {
            "read": lambda: load(path), "openai": lambda: openai(t),
            "view": lambda: view(t), "markdown": lambda: to_markdown(view(t))}
        for fn in fns.values():
            fn()  # once untimed: it works, and caches are warm
    except (InputError, UsageError) as exc:
        print(f"left out: {path.name}: {str(exc).splitlines()[0][:100]}")
        return None
    return fns


def best(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in fns.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    finally:
        gc.enable()
    return {name: min(t) for name, t in times.items()}


def row(what: str, took: dict[str, float]) -> str:
    render = max(0.0, took["markdown"] - took["view"])  # (noise may put it below)
    return (f"{what:<44} " + " ".join(f"{took[s]:7.2f} s" for s in STEPS)
            + f"   markdown {took['markdown'] / took['openai']:5.2f}x openai, "
              f"{took['markdown'] / took['read']:5.2f}x read; to_markdown {render:5.2f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    found = [(p, fns) for p in inputs(args.files) if (fns := steps(p)) is not None]
    if not found:
        print("no input converts")
        return 1
    size = sum(p.stat().st_size for p, _ in found) / 1e6
    print(f"{len(found)} files ({size:.1f} MB); best of {args.rounds}")
    print(f"{'':<44} " + " ".join(f"{s:>9}" for s in STEPS))
    each = [(p, best(fns, args.rounds)) for p, fns in found]
    largest, took = max(each, key=lambda e: e[0].stat().st_size)
    if len(each) > 1:
        print(row(f"largest: {largest.name[:35]}", took))
    print(row(f"all {len(each)}", {s: sum(t[s] for _, t in each) for s in STEPS}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

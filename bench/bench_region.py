"""How many summaries the region search writes before it chooses one, and what they cost.

The summarize stage chooses where the archived region ends; each summary it writes to
see whether an end fits is a full render and fit of the summarizer (`summary.draft`).
This compresses every sample and corpus file at the default trigger and at 90% down to
10% of its tokens, with both offline summarizers, and counts the summaries written and
the time spent in the stage, in this tree and, with `--base`, in an earlier commit's,
one after the other in fresh processes (one process each: no worker processes).

    PYTHONPATH=. python bench/bench_region.py --base 5e70525
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from identity import export  # noqa: E402

SHARES = (None, 0.9, 0.7, 0.5, 0.3, 0.1)
STRATEGIES = ("extractive", "structured")


def inputs(shared: Path) -> list[Path]:
    found = sorted(p for p in (ROOT / "samples").iterdir() if p.suffix in (".jsonl", ".json"))
    corpus = shared / "corpus"
    if corpus.is_dir():
        found += sorted(p for p in corpus.rglob("*") if p.suffix in (".jsonl", ".json"))
    return found


def child(paths: list[str]) -> dict[str, object]:
    """In the tree on sys.path: the summaries written and the stage's time, per compress."""
    from ctxpack.compression import compress_file, pipeline, summarizing
    from ctxpack.compression.settings import Options
    from ctxpack.errors import CtxpackError

    written = [0]
    spent = [0.0]
    draft, stage = summarizing.draft, summarizing.summarize

    def counted(*args: object, **kwargs: object) -> object:
        written[0] += 1
        return draft(*args, **kwargs)

    def timed(plan: object) -> object:
        start = time.perf_counter()
        try:
            return stage(plan)
        finally:
            spent[0] += time.perf_counter() - start

    summarizing.draft = counted
    pipeline.summarize = timed  # the stage list reads it from the module
    runs = []
    for path in paths:
        tokens = _tokens(path)
        for strategy in STRATEGIES:
            for share in SHARES:
                written[0], spent[0] = 0, 0.0
                budget = max(1, int(tokens * share)) if share else None
                try:
                    compress_file(path, Options(strategy=strategy, budget=budget),
                                  cache=False).close()
                except CtxpackError:
                    pass
                if written[0]:
                    runs.append({"case": f"{Path(path).name} {strategy} {share or 'default'}",
                                 "written": written[0], "seconds": spent[0]})
    return {"runs": runs}


def _tokens(path: str) -> int:
    from ctxpack.breakdown import stats
    from ctxpack.errors import CtxpackError

    try:
        return stats(path, cache=False).tokens or 1
    except CtxpackError:
        return 1


def measure(tree: Path, paths: list[Path]) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXPACK_")}
    env.update(PYTHONPATH=str(tree), CTXPACK_WORKERS="1")
    with tempfile.TemporaryDirectory() as cache:
        env["CTXPACK_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, __file__, "--child", *map(str, paths)],
                             capture_output=True, env=env, check=True).stdout
    return json.loads(out)


def summary(name: str, found: dict) -> str:
    runs = found["runs"]
    written = sum(r["written"] for r in runs)
    seconds = sum(r["seconds"] for r in runs)
    most = max(runs, key=lambda r: r["written"])
    extra = sum(r["written"] > 1 for r in runs)
    return (f"{name}: {len(runs)} compresses wrote a summary; {written} summaries written "
            f"({written - len(runs)} beyond the one chosen, in {extra} compresses); the stage "
            f"took {seconds:.2f} s in all; most: {most['written']} ({most['case']}, "
            f"{most['seconds']:.2f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="an earlier commit to measure too")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return 0
    paths = inputs(Path(args.shared))
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        if args.base:
            export(args.base, Path(tmp) / "base")
            trees = {f"--base {args.base}": Path(tmp) / "base", **trees}
        for name, tree in trees.items():
            print(summary(name, measure(tree, paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

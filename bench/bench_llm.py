"""Measure what the `llm` summarizer costs: requests and tokens per compress.

A corpus transcript grows: its first part is compressed (run 1), then the whole of it
(run 2), as an agent runtime that keeps its full log compresses it each turn. Each
mode is run on its own, with a fresh step cache:

- sections: one summary in sections (chunked and merged when long);
- sections, continued: run 2 compresses run 1's output with the new lines added, so
  the earlier summary is merged rather than the old steps sent again;
- per-step, no cache: a line per step, asked for every run;
- per-step, cached: the same, the lines of run 1 reused in run 2.

The numbers are what the server counted (`usage`). By default the server is the test
suite's chat-completions server on 127.0.0.1 (answers sized like a summary, usage at
about 4 characters a token); `--base-url` points at a real one (llama.cpp, vLLM, ...).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ctxpack.breakdown import stats  # noqa: E402
from ctxpack.compression import compress_file  # noqa: E402
from ctxpack.compression.settings import Options  # noqa: E402
from ctxpack.errors import CtxpackError  # noqa: E402
from tests.helpers import CORPUS  # noqa: E402

DEFAULT = CORPUS / "claude-code" / "claude-reliability__python-to-rust-port.jsonl"
SHARE = 0.6  # of the transcript's lines, run 1 sees this much
BUDGET = 0.25  # of the whole transcript's tokens, the budget of both runs


def answer(body: dict[str, Any]) -> str:
    """A reply shaped like the one asked for: a step line, or summary sections."""
    system = body["messages"][0]["content"]
    if "single line" in system:
        return "Ran the step's command and read its output; no errors."
    return "\n".join(["### Task goal", "- port the module", "### Completed work",
                      *(f"- finished item {n} in src/module_{n}.rs" for n in range(30)),
                      "### Pending items", "- run the integration suite"])


def run(path: Path, options: Options, cache: bool) -> dict[str, Any]:
    try:
        result = compress_file(path, options, cache=cache)
    except CtxpackError as exc:
        raise SystemExit(f"{path.name}: {exc}") from None
    llm = result.report.llm
    if llm is None:
        raise SystemExit(f"{path.name}: no summary was needed at this budget: pick a longer "
                         "transcript")
    if not llm["used"]:
        raise SystemExit(f"{path.name}: the llm summary was not used: {llm['fallback']}")
    return {"data": result.data, **llm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--base-url", help="a real OpenAI-compatible server (default: the "
                        "test suite's server, started here)")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--context", type=int, default=32768, help="the summarizer's window")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per request")
    parser.add_argument("--max-tokens", type=int, default=2000, help="the most an answer "
                        "may take (a small model may not stop before)")
    args = parser.parse_args()
    if not args.file.is_file():
        raise SystemExit(f"{args.file} not found (the corpus is in ../shared/corpus)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CTXPACK_CACHE_DIR"] = str(Path(tmp) / "cache")
        os.environ.setdefault("OPENAI_API_KEY", "bench")
        if args.base_url:
            measure(args, Path(tmp), args.base_url)
        else:
            from tests.chat_server import ChatServer

            with ChatServer(responder=answer) as server:
                measure(args, Path(tmp), server.base_url)


def measure(args: argparse.Namespace, tmp: Path, url: str) -> None:
    lines = args.file.read_bytes().splitlines(keepends=True)
    cut = int(len(lines) * SHARE)
    first, whole = tmp / "first.jsonl", tmp / "whole.jsonl"
    first.write_bytes(b"".join(lines[:cut]))
    whole.write_bytes(b"".join(lines))
    budget = int(stats(whole, cache=False).tokens * BUDGET)
    base = {"strategy": "llm", "llm_base_url": url, "llm_model": args.model,
            "llm_context": args.context, "llm_timeout": args.timeout,
            "llm_max_tokens": args.max_tokens, "budget": budget}
    rows = []
    for mode, per_step, cache, continued in (
            ("sections", False, False, False), ("sections, continued", False, False, True),
            ("per-step, no cache", True, False, False), ("per-step, cached", True, True, False)):
        for folder in (tmp / "cache").glob("*"):
            folder.unlink()
        options = Options(**base, llm_per_step=per_step)  # type: ignore[arg-type]
        one = run(first, options, cache)
        second = whole
        if continued:
            second = tmp / "continued.jsonl"
            second.write_bytes(one["data"] + b"".join(lines[cut:]))
        two = run(second, options, cache)
        rows.append((mode, one, two))
    print(f"{args.file.name}: {len(lines):,} lines; run 1 = the first {cut:,}, run 2 = all; "
          f"budget {budget:,} tokens; summarizer window {args.context:,}")
    print()
    print("| mode | run | requests | prompt tokens | completion tokens | steps (cached) |")
    print("|---|---|---:|---:|---:|---:|")
    for mode, one, two in rows:
        for n, r in ((1, one), (2, two)):
            steps = f"{r['steps']} ({r['cached_steps']})" if r["per_step"] else "–"
            print(f"| {mode} | {n} | {r['requests']} | {r['prompt_tokens']:,} | "
                  f"{r['completion_tokens']:,} | {steps} |")


if __name__ == "__main__":
    main()

"""tiktoken against the accelerated tokenizer (the `fast` extra, bpe-openai) in one run:
the same texts counted by both, the time of each, their ratio, and any text they count
differently. Texts: every message of samples/ and, where it is beside the checkout, of
the shared corpus's Claude Code and Codex sessions.

    PYTHONPATH=. python bench/bench_tokenizer.py [--rounds N] [--encoding NAME]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.errors import CtxpackError  # noqa: E402
from ctxpack.loader import load  # noqa: E402
from ctxpack.tokens import accelerated, encode_count  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def texts() -> list[str]:
    paths = [*sorted((ROOT / "samples").glob("*.jsonl")),
             *sorted(p for d in ("claude-code", "codex") for p in (CORPUS / d).glob("*.jsonl"))]
    found: set[str] = set()
    for path in paths:
        try:
            found |= {m.text for m in load(path).messages if m.text}
        except CtxpackError:
            continue
    return sorted(found)


def timed(enc: object, corpus: list[str], rounds: int) -> tuple[float, list[int]]:
    best, counts = float("inf"), []
    for _ in range(rounds):
        start = time.perf_counter()
        counts = [encode_count(enc, t) for t in corpus]
        best = min(best, time.perf_counter() - start)
    return best, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--encoding", default="o200k_base")
    args = parser.parse_args()
    import tiktoken

    reference = tiktoken.get_encoding(args.encoding)
    fast = accelerated(args.encoding, reference)
    if fast is None:
        sys.exit("no accelerated tokenizer that passes parity is installed (pip install "
                 "'ctxpack[fast]')")
    corpus = texts()
    chars = sum(map(len, corpus))
    slow_s, slow = timed(reference, corpus, args.rounds)
    fast_s, quick = timed(fast, corpus, args.rounds)
    mismatches = sum(a != b for a, b in zip(slow, quick, strict=True))
    print(f"{len(corpus):,} texts, {chars:,} characters, {sum(slow):,} tokens "
          f"({args.encoding}), best of {args.rounds}")
    print(f"tiktoken     {slow_s:8.3f} s  {chars / slow_s / 1e6:6.2f} M chars/s")
    print(f"bpe-openai   {fast_s:8.3f} s  {chars / fast_s / 1e6:6.2f} M chars/s")
    print(f"ratio        {slow_s / fast_s:.2f}x; texts counted differently: {mismatches}")


if __name__ == "__main__":
    main()

"""Measure `ctxpack.redact`: how fast it reads transcript text, against a baseline.

The text is every string of the corpus transcripts and the samples (JSON strings as
the summarizer sends them). The baseline, timed in the same run, is the least a
secret scanner does: one pass of a compiled regex for long token-like words. Both are
timed in CPU time, which the other work of a shared machine disturbs less than wall
time. Read the ratio; absolute speeds drift.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.redact import redact  # noqa: E402
from tests.helpers import CORPUS, strings  # noqa: E402

BASELINE = re.compile(r"[A-Za-z0-9_\-]{20,}")


def texts(limit: int) -> list[str]:
    out: list[str] = []
    size = 0
    files = sorted([*CORPUS.rglob("*.jsonl"), *CORPUS.rglob("*.json"),
                    *(ROOT / "samples").glob("*.json*")])
    for path in files:
        for raw in path.read_bytes().splitlines():
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            for s in strings(record):
                out.append(s)
                size += len(s)
                if size >= limit:
                    return out
    return out


def best(fn, items: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        for x in items:
            fn(x)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20, help="megabytes of text to read")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    items = texts(int(args.mb * 1e6))
    size = sum(len(x) for x in items) / 1e6
    if not items:
        raise SystemExit(f"no text found: the corpus is in {CORPUS}")
    base = best(BASELINE.findall, items, args.repeat)
    ours = best(redact, items, args.repeat)
    found = sum(sum(redact(x)[1].values()) for x in items)
    print(f"{len(items):,} strings, {size:.1f} MB (characters); CPU time, best of {args.repeat}")
    print(f"  baseline, one regex pass   {base:6.2f} s  {size / base:6.1f} MB/s")
    print(f"  redact                     {ours:6.2f} s  {size / ours:6.1f} MB/s "
          f"({found:,} secrets)")
    print(f"redact / baseline: {ours / base:.2f}x the time")


if __name__ == "__main__":
    main()

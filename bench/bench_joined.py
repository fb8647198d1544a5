"""Should a message sent joined to the one before it pay the per-message overhead?

Claude Code sends each `attachment` record (a reminder, a mentioned file, a task's
notice) as user content merged with the user content before it, so ctxpack reads it as
a message marked `joined` that nonetheless pays the chat overhead of a message of its
own (TOKENS_PER_MESSAGE and its role). This runs the calibration bench's measure on
every corpus file that has joined messages twice in one run, as ctxpack counts now
and with joined messages charged no overhead, and prints the calibrated and anchored
errors of each (median, mean, worst) and how many anchored calls are counted short.

    PYTHONPATH=. python bench/bench_joined.py [FILES...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_calibration  # noqa: E402

from ctxpack.calibration import anchored  # noqa: E402
from ctxpack.errors import CtxpackError  # noqa: E402
from ctxpack.loader import load  # noqa: E402
from ctxpack.tokens import MessagePlan, TokenCounter  # noqa: E402

CHARGED = TokenCounter.plan


def uncharged(self: TokenCounter, message, need) -> MessagePlan:  # type: ignore[no-untyped-def]
    plan = CHARGED(self, message, need)
    return MessagePlan([], plan.parts) if message.joined else plan


def errors(values: list[float]) -> str:
    if not values:
        return "       -"
    return (f"{statistics.median(values):6.2%} {statistics.mean(values):6.2%} "
            f"{max(values):6.2%}")


def short(row: dict) -> int:
    """Anchored calls counted below their bill."""
    pts = row["points"]
    return sum(anchored(row["slope"], pts[k - 1][1], pts[k - 1][0], pts[k][0]) < pts[k][1]
               for k in range(1, len(pts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args()
    files = args.files or sorted(p for p in bench_calibration.CORPUS.rglob("*")
                                 if p.is_file() and p.name != "MANIFEST.md")
    print(f"{'file':40} {'joined':>6} {'overhead':8} {'calibrated med/mean/worst':>27}  "
          f"{'anchored med/mean/worst':>27}  short")
    for path in files:
        try:
            joined = sum(m.joined for m in load(path).messages)
        except CtxpackError:
            continue
        if not joined:
            continue
        for name, plan in (("charged", CHARGED), ("none", uncharged)):
            TokenCounter.plan = plan  # type: ignore[method-assign]
            try:
                rows = bench_calibration.measure(path)
            finally:
                TokenCounter.plan = CHARGED  # type: ignore[method-assign]
            for r in rows:
                print(f"{r['file'][:40]:40} {joined:6} {name:8} {errors(r['calibrated'])}  "
                      f"{errors(r['anchored'])}  {short(r)}/{len(r['anchored'])}")


if __name__ == "__main__":
    main()

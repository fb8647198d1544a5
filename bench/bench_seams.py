"""What each piece of compress's speed machinery buys, on the big benchmark transcript.

All of it lives in `ctxpack/workers.py`; here compress runs with everything on and with
one piece turned off at a time, each run a fresh child process with an empty token
cache, the variants taking turns within each round (each round starting with the next
one). A variant's time over the default's in the same round is what that piece is worth
(above 1.00x: it pays). The machine is shared and noisy: read the medians.

    PYTHONPATH=. python bench/bench_seams.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_stats  # noqa: E402
import make_transcript  # noqa: E402

MODEL = "gpt-4o"
MB = 1e6
# name -> what it turns off (see `_turn_off`)
VARIANTS = {
    "default": "nothing",
    "one process": "worker processes (CTXPACK_WORKERS=1): counting and facts in this process",
    "no facts ahead": "the summary's facts found ahead by the workers",
    "archive on one thread": "the archive's blocks compressed on threads",
    "collector on": "the garbage collector paused while compress plans",
}


def _turn_off(variant: str) -> None:
    """In a child: turn off the piece `variant` names."""
    import gc

    from ctxpack import workers

    if variant == "no facts ahead":
        workers.Ahead.start = lambda self, *args, **kwargs: None  # type: ignore[method-assign]
    elif variant == "archive on one thread":
        workers.on_threads = lambda fn, items, most=4: map(fn, items)  # type: ignore[assignment]
    elif variant == "collector on":
        gc.disable = lambda: None  # compress_file's pause finds nothing to pause


def child(variant: str, path: Path, budget: int) -> dict[str, float]:
    _turn_off(variant)
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options

    start = time.perf_counter()
    result = compress_file(path, Options(budget=budget), model=MODEL)
    with tempfile.TemporaryFile() as out:
        for chunk in result.chunks():
            out.write(chunk)
    return {"seconds": time.perf_counter() - start}


def timed(variant: str, path: Path, budget: int) -> bench_stats.Run:
    cmd = [sys.executable, __file__, "--child", variant, "--file", str(path),
           "--budget", str(budget)]
    with tempfile.TemporaryDirectory() as cache:
        env = {"CTXPACK_CACHE_DIR": cache,
               "CTXPACK_WORKERS": "1" if variant == "one process" else ""}
        return bench_stats.measure(cmd, env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="rounds")
    ap.add_argument("--size-mb", type=float, default=210)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--child", choices=tuple(VARIANTS), help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    ap.add_argument("--budget", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.file), args.budget)))
        return 0

    path, meta = make_transcript.ensure(args.size_mb, args.seed)
    from ctxpack.breakdown import stats

    budget = stats(path, MODEL, cache=False).tokens // 2
    rounds = []
    names = list(VARIANTS)
    for n in range(args.repeat):
        order = names[n % len(names):] + names[:n % len(names)]  # none always goes first
        runs = {v: timed(v, path, budget) for v in order}
        rounds.append({v: (json.loads(r.out)["seconds"], r) for v, r in runs.items()})
    print(bench_stats.describe(path, meta))
    print(bench_stats.machine())
    print(f"compress --budget {budget:,} (half the tokens) and write; {args.repeat} rounds, "
          "call time; a variant's time over the default's in the same round")
    size = float(meta["bytes"])
    for variant, what in VARIANTS.items():
        ratios = [r[variant][0] / r["default"][0] for r in rounds]
        best = min(r[variant][0] for r in rounds)
        rss = max(r[variant][1].max_rss_mb for r in rounds)
        told = ", ".join(f"{x:.2f}x" for x in ratios)
        print(f"  {variant:<22} best {best:6.2f} s  largest process {rss * MB / size:4.2f}x "
              f"the input  {told}; median {statistics.median(ratios):.2f}x  (off: {what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

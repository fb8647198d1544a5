"""Many files in one compress: `-j 2` against `-j 1` and against a loop of one
`ctxpack compress` call per file, in the same run (ratios; this machine is shared).

The folder is made of the bundled samples, each copied `--files / 7` times with a line
of its own changed, so that no two files are the same and the token cache holds none
of them (`--no-cache` on every run besides).

    PYTHONPATH=. python bench/bench_batch.py --files 700 --loop 70
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*.jsonl"))
BUDGET = "3000"


def make_folder(folder: Path, count: int) -> list[Path]:
    made = []
    for n in range(count):
        sample = SAMPLES[n % len(SAMPLES)]
        lines = sample.read_bytes().splitlines(keepends=True)
        first = json.loads(lines[0])
        first["ctxpack_bench_copy"] = n  # a line of its own: nothing is counted twice
        lines[0] = json.dumps(first).encode() + b"\n"
        path = folder / f"{n // 100:02d}" / f"{n:05d}-{sample.name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(lines))
        made.append(path)
    return made


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ctxpack", *args], capture_output=True)
    if proc.returncode not in (0, 3):
        raise SystemExit(proc.stderr.decode())
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=700)
    parser.add_argument("--loop", type=int, default=70,
                        help="files the one-call-a-file loop is timed on (it is slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "in"
        files = make_folder(folder, args.files)
        size = sum(p.stat().st_size for p in files)
        print(f"{len(files):,} files, {size / 2**20:.1f} MB")
        times = {}
        for jobs in ("1", "2"):
            out = Path(tmp) / f"out-{jobs}"
            times[jobs] = timed(["compress", str(folder), "--out-dir", str(out), "-j", jobs,
                                 "--budget", BUDGET, "--no-cache", "-q"])
            shutil.rmtree(out)
            print(f"  compress --out-dir -j {jobs}: {times[jobs]:7.1f} s "
                  f"({len(files) / times[jobs]:6.1f} files/s)")
        loop = 0.0
        for path in files[: args.loop]:
            loop += timed(["compress", str(path), "-o", os.devnull, "--budget", BUDGET,
                           "--no-cache", "-q"])
        per_file = loop / args.loop
        print(f"  one call a file (timed on {args.loop}): {per_file:.3f} s a file, "
              f"{per_file * len(files):7.1f} s for all")
        print(f"-j 2 / -j 1: {times['1'] / times['2']:.2f}x faster; "
              f"-j 2 / the loop: {per_file * len(files) / times['2']:.2f}x faster")


if __name__ == "__main__":
    main()

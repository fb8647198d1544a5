"""A Parquet dataset of trajectories: stats and compress throughput on one core and on
two, and the same two on a local Ray of 2 CPUs, in the same run (ratios; this machine
is shared, so each is timed `--repeat` times and the fastest kept), with the peak
memory of each worker. Each Ray run is on a Ray started afresh, its workers cold, as a
job sent to a running cluster finds them; the start of Ray itself is not timed.

The dataset is made of the bundled samples' OpenAI-style trajectories (each eval
conversation, the support chat, the mini-swe-agent run), each row's user messages
marked with its number so that no two rows are the same; every timed run counts with
a token cache of its own, empty.

    PYTHONPATH=. python bench/bench_dataset.py --rows 20000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
GROUP_ROWS = 1000  # rows per Parquet row group: Ray's unit of work
BUDGET = 1500


def trajectories() -> list[list[dict[str, Any]]]:
    evals = [json.loads(line)["messages"]
             for line in (SAMPLES / "evals.openai-conversations.jsonl").open()]
    chat = [json.loads(line) for line in (SAMPLES / "support-chat.openai.jsonl").open()]
    swe = json.loads((SAMPLES / "bugfix.mini-swe-agent.traj.json").read_text())["messages"]
    return [*evals, chat, [m for m in swe if m.get("role") != "exit"]]


def make_dataset(path: Path, rows: int) -> int:
    """Write the dataset; the bytes of its messages column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sources = trajectories()
    texts = []
    for n in range(rows):
        messages = [dict(m) for m in sources[n % len(sources)]]
        for m in messages:
            if m.get("role") == "user" and isinstance(m.get("content"), str):
                m["content"] = f"{m['content']} (case {n})"
        texts.append(json.dumps(messages))
    pq.write_table(pa.table({"id": [f"row-{n}" for n in range(rows)], "messages": texts,
                             "split": ["train"] * rows}), path, row_group_size=GROUP_ROWS)
    return sum(len(t.encode()) for t in texts)


class PeakWatch:
    """The highest peak RSS (VmHWM) of the processes whose command line holds `mark`,
    looked at every 0.2 s while the block runs (Ray's actors are not our children)."""

    def __init__(self, mark: str) -> None:
        self.mark = mark.encode()
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> PeakWatch:
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if self.mark not in Path(f"/proc/{pid}/cmdline").read_bytes():
                        continue
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak = max(self.peak, int(line.split()[1]) << 10)


def run(path: Path, work: Any, engine: Any, out: Path | None) -> float:
    """Seconds to run `work` over the dataset (writing the result to `out`, if given)."""
    from ctxpack.dataset import Rows
    from ctxpack.dataset.files import results, written

    os.environ["CTXPACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-dataset-cache-")
    settings = {"budget": BUDGET} if work.__name__ == "compress_table" else {}
    start = time.perf_counter()
    if out is None:
        for _ in results(str(path), Rows(), work, engine, **settings):
            pass
    else:
        with written(str(out)) as add:
            for table in results(str(path), Rows(), work, engine, **settings):
                add(table)
    return time.perf_counter() - start


def best(repeat: int, fn: Any) -> float:
    return min(fn() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    from ctxpack.dataset import compress_table, stats_table

    tmp = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    data = tmp / "data.parquet"
    size = make_dataset(data, args.rows)
    print(f"dataset: {args.rows:,} rows, {size / 1e6:.1f} MB of messages, row groups of "
          f"{GROUP_ROWS:,}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    works = ((stats_table, None), (compress_table, tmp / "small.parquet"))
    times: dict[str, dict[str, float]] = {w.__name__: {} for w, _ in works}
    for work, out in works:  # here first: a process that runs Ray must not fork
        for cores in (1, 2):
            os.environ["CTXPACK_WORKERS"] = str(cores)
            times[work.__name__][f"local {cores}"] = best(
                args.repeat, lambda w=work, o=out: run(data, w, None, o))
    peak_local = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10
    peak_here = _self_peak()
    peak_ray = 0
    if not args.no_ray:
        import ray

        from ctxpack.dataset.on_ray import RayEngine

        def on_ray(work: Any, out: Path | None) -> float:
            """One run on a Ray started afresh (not timed: a cluster is up already), so
            its workers start cold, as they do for each job a user sends."""
            ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                     log_to_driver=False)
            try:
                return run(data, work, RayEngine(), out)
            finally:
                ray.shutdown()

        with PeakWatch("ray::row_group") as watch:
            for work, out in works:
                times[work.__name__]["ray 2"] = best(
                    args.repeat, lambda w=work, o=out: on_ray(w, o))
        peak_ray = watch.peak
    for name, timed in times.items():
        name = name.removesuffix("_table")
        for label, seconds in timed.items():
            cores = int(label.split()[-1])
            print(f"{name:8} {label:8} {seconds:7.2f} s  {size / 1e6 / seconds:6.2f} MB/s  "
                  f"{size / 1e6 / seconds / cores:6.2f} MB/s per core  "
                  f"{args.rows / seconds:8.0f} rows/s")
        print(f"{name:8} 2 cores over 1: {timed['local 1'] / timed['local 2']:.2f}x", end="")
        if "ray 2" in timed:
            print(f"; ray 2 takes {timed['ray 2'] / timed['local 2']:.2f}x the time of "
                  "local 2", end="")
        print()
    print(f"peak memory: this process {_mb(peak_here)}, a local worker {_mb(peak_local)}"
          + (f", a Ray worker {_mb(peak_ray)}" if not args.no_ray else ""))
    sys.stdout.flush()


def _self_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


if __name__ == "__main__":
    main()

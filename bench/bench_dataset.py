"""A Parquet dataset of trajectories: stats and compress throughput on one core and on
two, and the same two on a local Ray of 2 CPUs, in the same run (ratios), with the peak
memory of each worker. Each run is a process of its own, as a user's command is; the
three are taken in turn, `--repeat` times, so that each sees the load the others see
(this machine is shared), and the fastest of each is kept, with the load average at
its start. Each Ray run starts its own Ray before the clock (a cluster is up already)
and its workers cold, as a job sent to a running cluster finds them.

The dataset is made of the bundled samples' OpenAI-style trajectories (each eval
conversation, the support chat, the mini-swe-agent run), each row's user messages
marked with its number so that no two rows are the same; every timed run counts with
a token cache of its own, empty. Besides the time, each run's CPU seconds (its own and
those of every process it started: the local workers, or Ray's daemons and workers)
say how much work it took whatever share of the machine other users' processes took.

    PYTHONPATH=. python bench/bench_dataset.py --rows 20000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
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


LABELS = ("local 1", "local 2", "ray 2")


def one_run(label: str, work_name: str, data: Path, out: Path | None) -> dict[str, Any]:
    """One timed run in this process (a fresh one, as a user's command is): the seconds,
    and the peak memory of this process and of its local workers."""
    from ctxpack.dataset import compress_table, stats_table

    work = {"stats_table": stats_table, "compress_table": compress_table}[work_name]
    # set before Ray starts, so that its workers (started with its environment) count
    # with this run's empty cache too, not the user's own
    os.environ["CTXPACK_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench-dataset-cache-")
    engine = None
    if label.startswith("ray"):
        import ray

        from ctxpack.dataset.on_ray import RAY_STARTED_HERE, RayEngine

        # started before the clock (a cluster is up already), its workers cold, as a
        # job sent to a running cluster finds them; as the engine starts a Ray (its
        # workers at this process's priority), but with 2 CPUs whatever the machine has
        os.environ.update(RAY_STARTED_HERE)
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
                 log_to_driver=False)
        engine = RayEngine()
    else:
        os.environ["CTXPACK_WORKERS"] = label.split()[-1]
    cpu = cpu_seconds()
    seconds = run(data, work, engine, out)
    return {"seconds": seconds, "cpu": cpu_seconds() - cpu, "here": _self_peak(),
            "workers": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10}


def cpu_seconds() -> float:
    """CPU seconds of this process and all it started, ended (the local engine's
    workers) or running (Ray's daemons and workers): the work done, whatever share of
    the machine other users' processes took meanwhile."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()  # after the command's name, which may hold spaces
        parents[int(pid)] = int(fields[1])
        used[int(pid)] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    mine, found = {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                found = True
    alive = sum(used[pid] for pid in mine - {os.getpid()})
    me, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ended.ru_utime + ended.ru_stime + alive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--one", nargs=4, metavar=("LABEL", "WORK", "DATA", "OUT"),
                        help=argparse.SUPPRESS)  # a run of its own, in its own process
    args = parser.parse_args()
    if args.one:
        label, work_name, data, out = args.one
        print(json.dumps(one_run(label, work_name, Path(data), Path(out) if out != "-"
                                 else None)))
        return

    tmp = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    data = tmp / "data.parquet"
    size = make_dataset(data, args.rows)
    print(f"dataset: {args.rows:,} rows, {size / 1e6:.1f} MB of messages, row groups of "
          f"{GROUP_ROWS:,}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    labels = LABELS[:2] if args.no_ray else LABELS
    works = (("stats_table", "-"), ("compress_table", str(tmp / "small.parquet")))
    times: dict[str, dict[str, list[tuple[float, float, float]]]] = {
        w: {label: [] for label in labels} for w, _ in works}
    peaks = {"here": 0, "local worker": 0, "ray worker": 0}
    with PeakWatch("ray::row_group") as watch:
        for work, out in works:
            for _ in range(args.repeat):  # taken in turn, so that each sees the same load
                for label in labels:
                    load = os.getloadavg()[0]
                    done = subprocess.run(
                        [sys.executable, __file__, "--one", label, work, str(data), out],
                        capture_output=True, text=True, check=True)
                    got = json.loads(done.stdout.strip().splitlines()[-1])
                    times[work][label].append((got["seconds"], load, got["cpu"]))
                    peaks["here"] = max(peaks["here"], got["here"])
                    if label.startswith("local"):
                        peaks["local worker"] = max(peaks["local worker"], got["workers"])
    peaks["ray worker"] = watch.peak
    for name, timed in times.items():
        fastest = {label: min(runs) for label, runs in timed.items()}
        cpu = {label: min(c for _, _, c in runs) for label, runs in timed.items()}
        for label, (seconds, load, _) in fastest.items():
            cores = int(label.split()[-1])
            print(f"{name.removesuffix('_table'):8} {label:8} {seconds:7.2f} s  "
                  f"{size / 1e6 / seconds:6.2f} MB/s  {size / 1e6 / seconds / cores:6.2f} "
                  f"MB/s per core  {args.rows / seconds:7.0f} rows/s  (load {load:.1f}; "
                  f"all runs: {', '.join(f'{t:.1f}' for t, _, _ in timed[label])} s; "
                  f"CPU {cpu[label]:.1f} s, {size / 1e6 / cpu[label]:.2f} MB per CPU-s)")
        print(f"{name.removesuffix('_table'):8} 2 cores over 1: "
              f"{fastest['local 1'][0] / fastest['local 2'][0]:.2f}x", end="")
        if "ray 2" in fastest:
            print(f"; ray 2 takes {fastest['ray 2'][0] / fastest['local 2'][0]:.2f}x the time "
                  f"of local 2 and {cpu['ray 2'] / cpu['local 2']:.2f}x its CPU", end="")
        print()
    print(f"peak memory: the command's process {_mb(peaks['here'])}, a local worker "
          f"{_mb(peaks['local worker'])}"
          + (f", a Ray worker {_mb(peaks['ray worker'])}" if not args.no_ray else ""))
    print(f"load at the end: {os.getloadavg()[0]:.1f}")
    sys.stdout.flush()


def _self_peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB"


if __name__ == "__main__":
    main()

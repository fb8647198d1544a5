"""Many files in one compress: `-j 2` against `-j 1` and against a loop of one
`ctxpack compress` call per file, in the same run (ratios; this machine is shared).

The folder is built at run time from the real transcripts of the shared corpus
(`--corpus DIR`, else `$CTXPACK_SHARED/corpus`, else `../shared/corpus` beside the
checkout, as the tests find it); nothing of it is copied into the project. Its JSONL
files of a format compress writes (Claude Code, Codex, Anthropic stream-json and agent
events, Gemini stream-json; not the one marked SYNTHETIC) are taken in turn, each file
a prefix of one cut at a step boundary (before an assistant message that opens a step,
so no tool call is parted from its result), as a session looks when it stopped there.
The step to cut at is drawn log-uniformly (seeded), so most files are short and a few
are whole sessions, as in a real folder of sessions; no cut is used twice while a
source has unused ones.
Without the corpus the bundled samples are used instead, each copy with a line of its
own changed, and the run says so.

The loop of one call a file is timed on `--loop` files spread evenly over the folder
(every k-th), and its mean scaled to the whole folder. Every run has `--no-cache`.
`compress DIR --out-dir OUT` is run three ways: on one core (`-j 1` with
`CTXPACK_WORKERS=1`: one file at a time, and no workers inside a big file), with `-j 1`
as a user runs it (one file at a time, a big file's own workers on every core), and
with `-j 2` (a file a core). Each run's CPU time (user and system, its workers'
included) is printed beside its wall time: what the machine's load cannot change. With
`--repeat N` the three are run in turn N times, so that each sees the load the others
see, and the fastest of each counts.

    PYTHONPATH=. python bench/bench_batch.py --files 1000 --loop 40 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*.jsonl"))
BUDGET = "60000"


def default_corpus() -> Path:
    shared = os.environ.get("CTXPACK_SHARED")
    return (Path(shared) if shared else ROOT.parent / "shared") / "corpus"


def step_cuts(path: Path) -> list[int] | None:
    """The lines (1-based) before which the file can be cut at a step boundary, the
    file's end last; None when compress does not write its format."""
    import ctxpack
    from ctxpack import formats

    try:
        t = ctxpack.load(str(path))
    except ctxpack.CtxpackError:
        return None
    if not hasattr(formats.get(t.format), "editor"):
        return None
    cuts = sorted({t.messages[s.action].line for r in t.rounds() for s in r.steps
                   if t.messages[s.action].role == "assistant"} - {0, 1})
    return [*cuts, len(t.records) + 1]


def corpus_sources(corpus: Path) -> list[tuple[Path, list[bytes], list[int]]]:
    """Each JSONL file of the corpus that compress writes: its lines and its cuts."""
    sources = []
    for path in sorted(corpus.rglob("*.jsonl")):
        if "SYNTHETIC" in path.name:  # a schema fixture, not a session (see its MANIFEST)
            continue
        cuts = step_cuts(path)
        if cuts:
            sources.append((path, path.read_bytes().splitlines(keepends=True), cuts))
    return sources


def make_folder(folder: Path, count: int, corpus: Path, seed: int) -> list[Path]:
    sources = corpus_sources(corpus) if corpus.is_dir() else []
    if not sources:
        print(f"note: no corpus at {corpus}: the folder is made of the {len(SAMPLES)} "
              "bundled samples instead (copies with a line of their own changed)")
        return sample_folder(folder, count)
    print(f"corpus: {len(sources)} transcripts of formats compress writes, from {corpus}")
    rng = random.Random(seed)
    used: dict[int, set[int]] = {}
    made = []
    for n in range(count):
        s = n % len(sources)
        path, lines, cuts = sources[s]
        taken = used.setdefault(s, set())
        i = min(len(cuts), int(math.exp(rng.uniform(0, math.log(len(cuts) + 1))))) - 1
        free = [j for j in range(len(cuts)) if j not in taken]
        if free:  # the nearest cut not used yet
            i = min(free, key=lambda j: (abs(j - i), j))
        taken.add(i)
        out = folder / path.parent.name / f"{n:05d}-{path.name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"".join(lines[: cuts[i] - 1]))
        made.append(out)
    return made


def sample_folder(folder: Path, count: int) -> list[Path]:
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


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds of the command, and CPU seconds of it and its workers."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ctxpack", *args], capture_output=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):  # 3: a file could not fit the budget (counted)
        raise SystemExit(proc.stderr.decode())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--loop", type=int, default=100,
                        help="files the one-call-a-file loop is timed on (it is slow)")
    parser.add_argument("--corpus", type=Path, default=default_corpus())
    parser.add_argument("--budget", default=BUDGET)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of -j 1 and -j 2, in turn (the fastest of each counts)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "in"
        files = make_folder(folder, args.files, args.corpus, args.seed)
        sizes = sorted(p.stat().st_size for p in files)
        print(f"{len(files):,} files, {sum(sizes) / 2**20:.1f} MB; per file median "
              f"{sizes[len(sizes) // 2] / 1024:.0f} KB, p90 "
              f"{sizes[len(sizes) * 9 // 10] / 1024:.0f} KB, max {sizes[-1] / 2**20:.1f} MB")
        print(f"load average (1/5/15 min) at the start: {load()}")
        common = ["--budget", args.budget, "--no-cache", "-q"]
        times: dict[str, float] = {}
        runs = {"1 core": ("1", {"CTXPACK_WORKERS": "1"}), "-j 1": ("1", {}), "-j 2": ("2", {})}
        for _ in range(args.repeat):
            for name, (jobs, env) in runs.items():
                out, report = Path(tmp) / "out", Path(tmp) / "report.json"
                wall, cpu = timed(["compress", str(folder), "--out-dir", str(out), "-j", jobs,
                                   "--report-json", str(report), *common], env)
                shutil.rmtree(out)
                times[name] = min(wall, times.get(name, wall))
                done = Counter(f["status"] for f in json.loads(report.read_text())["files"])
                print(f"  {name:6}: {wall:7.1f} s, CPU {cpu:6.1f} s "
                      f"({len(files) / wall:6.1f} files/s; "
                      + ", ".join(f"{v} {k}" for k, v in sorted(done.items()))
                      + f"; load {load()})")
        step = max(1, len(files) // args.loop)
        sample = files[::step][: args.loop]
        loop = loop_cpu = 0.0
        one = Path(tmp) / "one-output"
        for path in sample:
            wall, cpu = timed(["compress", str(path), "-o", str(one), *common])
            loop, loop_cpu = loop + wall, loop_cpu + cpu
        per_file = loop / len(sample)
        print(f"  one call a file (timed on {len(sample)}, every {step}th file): "
              f"{per_file:.3f} s a file ({loop_cpu / len(sample):.3f} s CPU), "
              f"{per_file * len(files):7.1f} s for all")
        print(f"-j 2 over one core: {times['1 core'] / times['-j 2']:.2f}x faster; over -j 1: "
              f"{times['-j 1'] / times['-j 2']:.2f}x; over the loop: "
              f"{per_file * len(files) / times['-j 2']:.2f}x")
        print(f"load average at the end: {load()}")


if __name__ == "__main__":
    main()

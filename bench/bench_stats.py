"""Time `ctxpack stats` on a large transcript against a naive baseline, in one run.

The baseline json-loads each line and tiktoken-encodes each message's texts one by
one, as a user without ctxpack would. Every command runs as a child process whose
wall time, peak RSS and (sampled) whole-tree PSS are taken; the machine is shared
and noisy, so read the ratios, which compare runs made minutes apart at most.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import make_transcript  # noqa: E402

MB = 1e6
OUT = HERE / "out"
# Children keep their bytecode out of the tree, and do keep it (an installed package
# has its .pyc files), whatever this shell says.
CHILD_ENV = {"PYTHONPYCACHEPREFIX": str(OUT / "pycache"), "PYTHONDONTWRITEBYTECODE": ""}


@dataclass
class Run:
    seconds: float
    cpu: float  # user + system seconds of the child and every process it waited for
    max_rss_mb: float  # largest single process (ru_maxrss over the child and what it waited for)
    tree_pss_mb: float  # largest sampled sum of PSS over the child and its children
    out: bytes


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        try:
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            pass
    return pids


def _pss_mb(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        except OSError:
            pass
    return total / 1024


def measure(cmd: list[str], env: dict[str, str] | None = None, *, sample: bool = False) -> Run:
    """Run `cmd`; with `sample`, its process tree's memory is sampled until it exits
    (tree_pss_mb), which slows the run: reading a process's PSS walks its page tables."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        full = {**os.environ, **CHILD_ENV, **(env or {})}
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT,
                                env={k: v for k, v in full.items() if v})
        peak = 0.0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if sample else 0)
            if pid:
                break
            peak = max(peak, _pss_mb(_tree(proc.pid)))
            time.sleep(0.02)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read().decode()}")
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return Run(seconds, cpu, usage.ru_maxrss / 1024, peak, out.read())


def message_texts(record: dict) -> list[str]:
    """The texts of one line, as a user reading the format's docs would pick them out."""
    message = record.get("message", record)  # claude-code events wrap the message
    texts = [message.get("role", "")]
    content = message.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    for block in blocks:
        if block.get("type") == "tool_result":
            inner = block.get("content")
            blocks += inner if isinstance(inner, list) else [{"type": "text", "text": inner}]
        elif block.get("type") == "tool_use":
            texts += [block["name"], json.dumps(block["input"])]
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
    for call in message.get("tool_calls") or []:
        texts += [call["function"]["name"], call["function"]["arguments"]]
    return texts


def baseline(path: str) -> None:
    """Mode --baseline: json.loads each line, encode each text one by one; print the total."""
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    total = messages = 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            messages += 1
            total += 3 + sum(len(enc.encode_ordinary(t)) for t in message_texts(json.loads(line)))
    print(json.dumps({"messages": messages, "tokens": total + 3}))


def _encode_all(texts: list[str]) -> int:
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    return sum(len(enc.encode_ordinary(t)) for t in texts)


def _halves(texts: list[str]) -> list[list[str]]:
    """Two lists of about the same number of characters."""
    halves: list[list[str]] = [[], []]
    sizes = [0, 0]
    for text in sorted(texts, key=len, reverse=True):
        lighter = sizes.index(min(sizes))
        halves[lighter].append(text)
        sizes[lighter] += len(text)
    return halves


def ceiling(path: str, sample_mb: float) -> None:
    """Mode --ceiling: tiktoken alone on the file's first texts, in one and in two processes."""
    import multiprocessing

    texts, size = [], 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            texts += message_texts(json.loads(line))
            size = sum(map(len, texts))
            if size >= sample_mb * MB:
                break
    size = sum(len(t.encode()) for t in texts)
    _encode_all(["warm up"])
    start = time.perf_counter()
    _encode_all(texts)
    one = time.perf_counter() - start
    context = multiprocessing.get_context("fork")  # both children start with the encoding loaded
    with context.Pool(2) as pool:
        pool.map(_encode_all, [["warm up"]] * 2)
        start = time.perf_counter()
        pool.map(_encode_all, _halves(texts), chunksize=1)
        two = time.perf_counter() - start
    print(json.dumps({"mb": size / MB, "one": size / MB / one, "two": size / MB / two}))


def ctxpack(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctxpack", *args]


def help_ms(runs: int) -> dict[str, float]:
    """Median wall times (ms) of `ctxpack --help`, with and without bytecode, and of `pass`."""
    times: dict[str, list[float]] = {"help": [], "help_source": [], "pass": []}
    source = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": ""}  # ctxpack compiles
    measure(ctxpack("--help"))  # writes the bytecode, as installing a package does
    for _ in range(runs):  # interleaved, so all see the same noise
        times["help"].append(measure(ctxpack("--help")).seconds)
        times["help_source"].append(measure(ctxpack("--help"), source).seconds)
        times["pass"].append(measure([sys.executable, "-c", "pass"]).seconds)
    return {k: statistics.median(v) * 1000 for k, v in times.items()}


def machine() -> str:
    import orjson
    import tiktoken

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"{cpus} CPUs ({platform.processor() or platform.machine()}), "
            f"load {os.getloadavg()[0]:.2f} at start; Python {platform.python_version()}, "
            f"tiktoken {tiktoken.__version__}, orjson {orjson.__version__}")


def describe(path: Path, meta: dict) -> str:
    text = sum(meta["text_bytes"].values())
    return (f"{path.relative_to(ROOT)}: {meta['bytes'] / MB:.1f} MB, {meta['messages']:,} lines, "
            f"{meta['images']} PNG screenshots ({meta['image_base64_bytes'] / MB:.1f} MB base64), "
            f"{meta['long_lines']} one-line JSON dumps; tool text {text / MB:.1f} MB, of which "
            f"{meta['repeated_text_bytes'] / MB:.1f} MB verbatim repeats")


def row(name: str, run: Run, size: float, base: float | None) -> str:
    ratio = f"{base / run.seconds:5.2f}x" if base else "   — "
    pss = f"{run.tree_pss_mb:7.0f} MB" if run.tree_pss_mb else f"{'—':>10}"
    return (f"  {name:<34} {run.seconds:7.2f} s {size / MB / run.seconds:7.1f} MB/s  {ratio}"
            f"  {run.cpu:6.1f} s {run.max_rss_mb:7.0f} MB {pss}")


def run_once(path: Path, args: argparse.Namespace) -> dict:
    """One round of every timed run; returns what was measured."""
    model = ["--model", "gpt-4o"]
    ceiling_run = None
    if not args.no_ceiling:
        ceiling_run = json.loads(measure([sys.executable, __file__, "--ceiling", str(path),
                                          "--sample-mb", str(args.sample_mb)]).out)
    base = None if args.no_baseline else measure(
        [sys.executable, __file__, "--baseline", str(path)])
    runs = {}
    for sample in (False, True):  # timed, then again for the memory (sampling slows a run)
        with tempfile.TemporaryDirectory() as cache:
            env = {"CTXPACK_CACHE_DIR": cache}
            runs[sample] = {
                "nocache": measure(ctxpack("stats", "--json", "--no-cache", *model, str(path)),
                                   env, sample=sample),
                "no_cache_left": os.listdir(cache),
                "cold": measure(ctxpack("stats", "--json", *model, str(path)), env,
                                sample=sample),
                "warm": measure(ctxpack("stats", "--json", *model, str(path)), env,
                                sample=sample),
                "db_mb": sum(f.stat().st_size for f in Path(cache).iterdir()) / MB}
    timed = runs[False]
    for key in ("nocache", "cold", "warm"):
        timed[key].tree_pss_mb = runs[True][key].tree_pss_mb
    return {"ceiling": ceiling_run, "baseline": base, **timed}


def best(rounds: list[dict]) -> dict:
    """The fastest of each run over the rounds (noise only ever adds time)."""
    out = dict(rounds[-1])
    for key in ("baseline", "nocache", "cold", "warm"):
        if out[key] is not None:
            out[key] = min((r[key] for r in rounds), key=lambda run: run.seconds)
    if out["ceiling"]:
        out["ceiling"] = {k: max(r["ceiling"][k] for r in rounds) for k in ("mb", "one", "two")}
    return out


def report(path: Path, meta: dict, facts: str, rounds: list[dict], startup: dict[str, float]
           ) -> list[str]:
    r = best(rounds)
    size = float(meta["bytes"])
    base = r["baseline"].seconds if r["baseline"] else None
    lines = [describe(path, meta), facts, ""]
    if r["ceiling"]:
        c = r["ceiling"]
        lines.append(f"tiktoken alone, o200k, first {c['mb']:.0f} MB of text: 1 process "
                     f"{c['one']:.1f} MB/s, 2 processes {c['two']:.1f} MB/s "
                     f"({c['two'] / c['one']:.2f}x)")
    lines.append(f"best of {len(rounds)} round(s):")
    lines.append(f"  {'run':<34} {'wall':>9} {'file rate':>12}  {'vs (a)':>6}  {'CPU':>8} "
                 f"{'max RSS':>10} {'tree PSS':>10}")
    runs = [("(a) baseline: json + encode each", r["baseline"]),
            ("(b) stats --json --no-cache", r["nocache"]),
            ("(c1) stats --json, empty cache", r["cold"]),
            ("(c2) stats --json, warm cache", r["warm"])]
    lines += [row(name, run, size, base) for name, run in runs if run]
    if r["ceiling"]:
        distinct = sum(meta["text_bytes"].values()) - meta["repeated_text_bytes"]
        rate = distinct / MB / r["nocache"].seconds
        lines.append(f"(b) counted {distinct / MB:.0f} MB of distinct tool text at "
                     f"{rate:.1f} MB/s: {rate / r['ceiling']['two']:.0%} of what two bare "
                     "tiktoken processes do")
    if len(rounds) > 1 and base:
        each = ", ".join(f"{x['baseline'].seconds / x['nocache'].seconds:.2f}x" for x in rounds)
        lines.append(f"(b) vs (a) round by round: {each}")
    lines += _checks(r, rounds)
    lines.append(f"startup: ctxpack --help {startup['help']:.0f} ms median with bytecode "
                 f"cached, {startup['help_source']:.0f} ms compiling from source "
                 f"(python -c pass {startup['pass']:.0f} ms)")
    warm = r["cold"].seconds / r["warm"].seconds
    lines += ["", *targets(size, r, warm, startup)]
    return lines


def _checks(r: dict, rounds: list[dict]) -> list[str]:
    docs = [json.loads(x[k].out) for x in rounds for k in ("nocache", "cold", "warm")]
    tokens = docs[0]["files"][0]["tokens"]
    same = all(d == docs[0] for d in docs)
    lines = [f"counts: (b), (c1), (c2) identical in every round: {'yes' if same else 'NO'}; "
             f"{tokens:,} tokens"]
    if r["baseline"]:
        b = json.loads(r["baseline"].out)["tokens"]
        lines.append(f"        baseline counted {b:,} text tokens ({(tokens - b) / b:+.2%}: "
                     "images by formula, tool-call framing, arguments as stored)")
    warm = r["cold"].seconds / r["warm"].seconds
    lines.append(f"cache: warm run {warm:.1f}x faster than the cold one; database "
                 f"{r['db_mb']:.1f} MB; --no-cache left {len(r['no_cache_left'])} files")
    return lines


def targets(size: float, r: dict, warm: float, startup: dict[str, float]) -> list[str]:
    nocache = r["nocache"]
    checks = [
        ("(b) at least 2x the baseline",
         r["baseline"] and r["baseline"].seconds / nocache.seconds >= 2),
        ("(b) at least 25 MB/s of transcript", size / MB / nocache.seconds >= 25),
        ("(b) at least 70% of two bare tiktoken processes (what 25 MB/s stands for)",
         r["ceiling"] and size / MB / nocache.seconds >= 0.7 * r["ceiling"]["two"]),
        ("peak memory under 300 MB (whole process tree, PSS)",
         max(r[k].tree_pss_mb for k in ("nocache", "cold", "warm")) < 300),
        ("peak memory under 300 MB (largest process)",
         max(r[k].max_rss_mb for k in ("nocache", "cold", "warm")) < 300),
        ("second run at least 5x faster than the first", warm >= 5),
        ("ctxpack --help under 150 ms", startup["help"] < 150),
    ]
    return [f"target: {name}: {'met' if ok else 'MISSED'}" for name, ok in checks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=210)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--format", choices=("openai", "claude-code"), default="openai")
    parser.add_argument("--help-runs", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; the best of each counts")
    parser.add_argument("--sample-mb", type=float, default=32)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-ceiling", action="store_true")
    parser.add_argument("--baseline", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--ceiling", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline:
        baseline(args.baseline)
        return 0
    if args.ceiling:
        ceiling(args.ceiling, args.sample_mb)
        return 0
    path, meta = make_transcript.ensure(args.size_mb, args.seed, args.format)
    facts = machine()
    rounds = [run_once(path, args) for _ in range(args.repeat)]
    startup = help_ms(args.help_runs)
    print("\n".join(report(path, meta, facts, rounds, startup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

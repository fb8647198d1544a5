"""How much ctxpack's JSON parsing costs over plain orjson, in one run.

ctxpack reads each JSONL line with `parse_line` and each whole document with
`parse_document` (`loads` for values it writes again): orjson, then the standard
parser only for a value in which orjson may have turned an integer past 64 bits into
a float. The baseline is bare `orjson.loads` of the same bytes; a second reference is
the check this replaced (a regular expression looking for 19 digits before each
parse). Inputs: the files named, else samples/ and, where it is beside the
checkout, the shared corpus.

    PYTHONPATH=. python bench/bench_parse.py [--rounds N] [FILE ...]
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxpack.jsonl import loads, parse_document, parse_line  # noqa: E402
from tests.helpers import CORPUS  # noqa: E402

_REGEX = re.compile(rb"[0-9]{19}")


def inputs(named: list[str]) -> tuple[list[bytes], list[bytes]]:
    """The JSONL lines and the whole JSON documents to parse."""
    paths = [Path(p) for p in named] or [
        *sorted(ROOT.joinpath("samples").rglob("*.json*")),
        *sorted(p for p in CORPUS.rglob("*.json*") if p.is_file())]
    lines: list[bytes] = []
    docs: list[bytes] = []
    for path in paths:
        data = path.read_bytes()
        if path.suffix == ".json":
            docs.append(data)
        else:
            lines += [raw for raw in data.splitlines(keepends=True) if raw.strip()]
    return _valid(lines), _valid(docs)


def _valid(items: list[bytes]) -> list[bytes]:
    out = []
    for item in items:
        try:
            orjson.loads(item)
        except orjson.JSONDecodeError:
            continue
        out.append(item)
    return out


def best(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    """The best time of each function, run in turn each round (the machine's load then
    falls on all alike), with the garbage collector off while timed."""
    for fn in fns:
        fn()  # once untimed: caches warm, the interpreter's memory grown
    times: list[list[float]] = [[] for _ in fns]
    gc.disable()
    try:
        for _ in range(rounds):
            for fn, took in zip(fns, times, strict=True):
                start = time.perf_counter()
                fn()
                took.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return [min(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    lines, docs = inputs(args.files)
    size = sum(map(len, lines)) / 1e6, sum(map(len, docs)) / 1e6
    print(f"{len(lines):,} JSONL lines ({size[0]:.1f} MB), {len(docs)} documents "
          f"({size[1]:.1f} MB); best of {args.rounds}")
    for what, items, ours in (
            ("lines", lines, lambda: [parse_line(r, "f", 1) for r in lines]),
            ("lines, loads", lines, lambda: [loads(r) for r in lines]),
            ("documents", docs, lambda: [parse_document(d, "f", 1) for d in docs])):
        if not items:
            continue
        base, regex, mine = best([
            lambda items=items: [orjson.loads(r) for r in items],
            lambda items=items: [(_REGEX.search(r), orjson.loads(r)) for r in items],
            ours], args.rounds)
        print(f"{what:<13} orjson {base * 1e3:8.1f} ms   ctxpack {mine / base:5.2f}x   "
              f"regex check then orjson {regex / base:5.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

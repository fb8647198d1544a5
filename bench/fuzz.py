"""Fuzz every reader, and compress with restore, on mutated real-shaped transcripts.

Seeds are short runs of records cut from the bundled samples (one per format, and a
JSON document of messages), and from any folder of transcripts named with `--corpus`;
a text format's seed (Aider's Markdown) is its opening line and a run of lines, mutated
a line at a time (lines dropped, repeated, moved, given another kind's marker, odd
characters, numbers past what a float holds).
Each input is a seed put through one to four mutations — a value swapped for one of
another type, nesting past the parsers' limits, records reordered, duplicated, dropped
or cut short, lone surrogates and odd characters, huge numbers, NaN and Infinity — and
written as JSON the way one of several writers would. Every input is read by the
sniffer and by one forced reader, and its stats, problems and view are made and printed
to a strict UTF-8 console; a share of them is also compressed, restored and compared.

What counts: inputs, accepted, rejected with an InputError (or another CtxpackError:
CannotFit, ...), round-trip failures (restore(compress(x)) != x, or restore refused
what compress wrote) and internal errors (any other exception). The first reproducers
of each kind of failure go to `--save DIR`. Input i of a run with seed S is always the
same, so `--start i --count 1` runs one again.

    python bench/fuzz.py --count 1000000 --compress-share 0.3 --save fuzz-out
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing
import os
import pickle
import random
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxpack.formats import FORMATS as READERS

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
# every registered format: of JSON records, and of text (Aider's Markdown), whose lines
# are mutated instead; not a binary one (a database, read through its own library)
FORMATS = tuple(name for name, fmt in READERS.items() if not getattr(fmt, "magic", None))
TEXT_FORMATS = {name for name, fmt in READERS.items() if getattr(fmt, "text", False)}
DEPTHS = (3, 50, 999, 1000, 1022, 1023, 1024, 1025, 1100, 2500)
LONG = 600  # seed strings are cut to about this many characters, so inputs stay small
TIMEOUT = 20  # seconds one input may take before it counts as a hang


# ---- seeds ---------------------------------------------------------------------------


@dataclass
class Seed:
    """Records of one format (for a `document`: the one JSON value), and their name."""

    format: str
    records: list[Any]
    name: str
    document: bool = False
    text: bool = False  # `records` are the lines of a text file


def _short(value: Any) -> Any:
    """`value` with long strings cut to their head and tail (inputs stay fast to read)."""
    if isinstance(value, str) and len(value) > LONG:
        return value[: LONG // 2] + "\n...\n" + value[-LONG // 2:]
    if isinstance(value, list):
        return [_short(v) for v in value]
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _windows(records: list[Any], fmt: str, name: str, rng: random.Random,
             n: int) -> list[Seed]:
    """Up to `n` runs of consecutive records (the first records are always in one)."""
    out = [Seed(fmt, records[: rng.randint(3, 25)], f"{name}[head]")]
    for _ in range(n):
        size = rng.randint(2, 30)
        start = rng.randrange(max(1, len(records) - size))
        out.append(Seed(fmt, records[start:start + size], f"{name}[{start}:{start + size}]"))
    return out


def _format_of(path: Path) -> str | None:
    from ctxpack.loader import load

    try:
        return load(path).format
    except Exception:  # noqa: BLE001 - a corpus file ctxpack does not read is no seed
        return None


def load_seeds(corpus: Path | None, rng: random.Random) -> list[Seed]:
    """Seeds from the samples, and from `corpus` (any *.jsonl and .json below it)."""
    seeds: list[Seed] = []
    paths = sorted(SAMPLES.rglob("*.jsonl")) + sorted(SAMPLES.rglob("*.json")) + \
        sorted(SAMPLES.rglob("*.md"))
    if corpus is not None:
        paths += sorted(p for p in corpus.rglob("*") if p.suffix in (".jsonl", ".json", ".md")
                        and p.stat().st_size < 20 << 20)
    for path in paths:
        fmt = _format_of(path) if path.name != "README.md" else None
        if fmt is None or fmt not in FORMATS:
            continue
        data = path.read_bytes()
        if fmt in TEXT_FORMATS:
            lines = [_short(line) for line in data.decode("utf-8").splitlines()]
            head = next((n for n, line in enumerate(lines) if line.strip()), 0)
            for window in _windows(lines[head + 1:], fmt, path.name, rng, 6):
                seeds.append(Seed(fmt, [lines[head], *window.records], window.name, text=True))
            continue
        if data.lstrip()[:1] == b"[" or data.split(b"\n", 1)[0].strip() == b"{":
            doc = _short(json.loads(data))
            seeds.append(Seed(fmt, [doc], path.name, document=True))
            continue
        records = [_short(json.loads(line)) for line in data.splitlines() if line.strip()]
        seeds += _windows(records, fmt, path.name, rng, 12)
        if fmt == "openai":  # the same messages as a bare JSON array: a json-messages file
            seeds.append(Seed("json-messages", [records[:20]], f"{path.name}[array]", True))
        plain = [r for r in records if "role" in r][:20]
        if fmt == "anthropic" and plain:  # the same messages as a request body, as convert writes
            seeds.append(Seed("anthropic-requests", [{"system": "Be brief.", "messages": plain}],
                              f"{path.name}[body]"))
    return seeds


# ---- mutations -----------------------------------------------------------------------

ODD = ["\ud800", "\udfff", "\udc80x", "\x00", "\u2028", "\u202e", "\ufeff", "e\u0301",
       "\U0001f642", "\r", "\r\n", "\t", "\\", '"', "\x1b[31m", "\uffff", "\U0010ffff"]


def _odd_string(rng: random.Random) -> str:
    return "".join(rng.choice(ODD + ["a", " ", "Z"]) for _ in range(rng.randint(1, 6)))


def _scalar(rng: random.Random) -> Any:
    return rng.choice([
        None, True, False, 0, -1, 1, 2**31, 2**63, -(2**63) - 1, 2**64 + 1, 10**30,
        1.5, -0.0, 1e308, math.nan, math.inf, -math.inf, "", "x", "user", "assistant",
        "tool", "tool_result", "tool_use", "function_call", "message", "text",
        _odd_string(rng),
    ])


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON-ish value (NaN and surrogates included)."""
    roll = rng.random()
    if depth > 2 or roll < 0.5:
        return _scalar(rng)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["type", "id", "role", "text", "content", "name", _odd_string(rng)]):
            _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _nested(rng: random.Random, inner: Any) -> Any:
    depth = rng.choice(DEPTHS)
    value = inner
    as_list = rng.random() < 0.5
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = (), limit: int = 400) -> list[tuple]:
    """Paths to the values inside `value` (at most `limit`, shallow ones first)."""
    out: list[tuple] = []
    todo = [(prefix, value)]
    while todo and len(out) < limit:
        path, v = todo.pop(0)
        out.append(path)
        if isinstance(v, dict):
            todo += [((*path, k), x) for k, x in v.items()]
        elif isinstance(v, list):
            todo += [((*path, i), x) for i, x in enumerate(v)]
    return out


def _copy(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # quick, and exact


def _get(root: Any, path: tuple) -> Any:
    for key in path:
        root = root[key]
    return root


def _set(root: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _pick(records: list[Any], rng: random.Random) -> tuple[int, tuple] | None:
    if not records:
        return None
    i = rng.randrange(len(records))
    paths = _paths(records[i])
    return i, rng.choice(paths)


def _swap_type(records: list[Any], rng: random.Random) -> None:
    """A value becomes one of another type (list where a string was, ...)."""
    at = _pick(records, rng)
    if at is None:
        return
    i, path = at
    if not path and rng.random() < 0.7:  # mostly inside the record, not the whole record
        return _swap_type(records, rng)
    records[i] = _set(records[i], path, _value(rng))


def _swap_key_field(records: list[Any], rng: random.Random) -> None:
    """A field readers rely on (type, role, id, parentUuid, call_id...) gets an odd value."""
    keys = ("type", "role", "id", "uuid", "parentUuid", "call_id", "tool_call_id",
            "tool_use_id", "name", "content", "message", "payload", "tool_calls",
            "function", "arguments", "input", "subtype", "isSidechain", "agentId",
            "text", "output", "messages", "model", "usage", "session_id", "source",
            "image_url", "url", "history", "traj", "info", "is_error", "summary")
    at = _pick(records, rng)
    if at is None:
        return
    i = at[0]
    found = [p for p in _paths(records[i]) if p and p[-1] in keys]
    if not found:
        return _swap_type(records, rng)
    records[i] = _set(records[i], rng.choice(found), _value(rng))


def _deepen(records: list[Any], rng: random.Random) -> None:
    at = _pick(records, rng)
    if at is None:
        return
    i, path = at
    if not path:  # a record stays an object: nest one of its fields
        if isinstance(records[i], dict):
            records[i]["deep"] = _nested(rng, 1)
        return
    records[i] = _set(records[i], path, _nested(rng, _get(records[i], path)))


def _reorder(records: list[Any], rng: random.Random) -> None:
    if len(records) < 2:
        return
    how = rng.randrange(4)
    if how == 0:
        rng.shuffle(records)
    elif how == 1:
        records.reverse()
    else:
        i, j = rng.randrange(len(records)), rng.randrange(len(records))
        if how == 2:
            records[i], records[j] = records[j], records[i]
        else:
            records.insert(j, records.pop(i))


def _duplicate(records: list[Any], rng: random.Random) -> None:
    if not records:
        return
    i = rng.randrange(len(records))
    records.insert(rng.randrange(len(records) + 1), _copy(records[i]))


def _drop(records: list[Any], rng: random.Random) -> None:
    if len(records) > 1:
        del records[rng.randrange(len(records))]


def _odd_text(records: list[Any], rng: random.Random) -> None:
    """Lone surrogates and other odd characters into a string (or a key)."""
    at = _pick(records, rng)
    if at is None:
        return
    i, path = at
    value = _get(records[i], path)
    if isinstance(value, str):
        k = rng.randint(0, len(value))
        records[i] = _set(records[i], path, value[:k] + _odd_string(rng) + value[k:])
    elif isinstance(value, dict) and value:
        key = rng.choice(list(value))
        value[key + _odd_string(rng)] = value.pop(key)


def _delete_key(records: list[Any], rng: random.Random) -> None:
    at = _pick(records, rng)
    if at is None:
        return
    i, path = at
    value = _get(records[i], path)
    if isinstance(value, dict) and value:
        del value[rng.choice(list(value))]


def _copy_value(records: list[Any], rng: random.Random) -> None:
    """A value of one record put in another's place (ids, links and blocks mixed up)."""
    a, b = _pick(records, rng), _pick(records, rng)
    if a is None or b is None or not a[1]:
        return
    value = _copy(_get(records[b[0]], b[1]))
    records[a[0]] = _set(records[a[0]], a[1], value)


MUTATIONS = (_swap_type, _swap_key_field, _swap_key_field, _deepen, _reorder, _duplicate,
             _drop, _odd_text, _delete_key, _copy_value, _reorder, _duplicate)


# the marks that open a line of an Aider history, and lines that stretch its numbers
LINE_MARKS = ("#### ", "> ", "", "# aider chat started at ", "```", ">>>>>>> REPLACE", "> /")
ODD_LINES = ("> Tokens: 1e400 sent, 1e999k received. Cost: $1e400 message, $nan session.",
             "> Tokens: 99999999999999999999999999999M sent, -3 received.",
             "> Tokens: 2.5k sent, 310 cache write, 1.1k cache hit, 90 received.",
             "#### /clear", "#### /ask", "#### /code " + "x" * 50, "#### /reset",
             "> Main model: " + "m" * 300, "> Model: gpt-4o with whole edit format",
             "\x00\x1b[31m\ud800", "```" * 3, "", "#### " * 40)


def _mutate_lines(lines: list[str], rng: random.Random) -> None:
    """One change to the lines of a text transcript, in place."""
    if not lines:
        lines.append(rng.choice(ODD_LINES))
        return
    k = rng.randrange(len(lines))
    how = rng.randrange(6)
    if how == 0:
        del lines[k]
    elif how == 1:
        lines.insert(k, lines[rng.randrange(len(lines))])
    elif how == 2:
        lines.insert(rng.randrange(len(lines) + 1), lines.pop(k))
    elif how == 3:  # another kind of line: the text behind another marker
        text = lines[k].lstrip("#> ")
        lines[k] = rng.choice(LINE_MARKS) + text
    elif how == 4:
        lines.insert(k, rng.choice(ODD_LINES))
    else:
        lines[k] = lines[k][: rng.randrange(len(lines[k]) + 1)] + _odd_string(rng)


# ---- writing an input ----------------------------------------------------------------


def _dump(value: Any, rng: random.Random) -> bytes:
    """One JSON value as one of several writers would put it."""
    how = rng.randrange(4)
    try:
        if how == 0:
            import orjson

            return orjson.dumps(value)
    except (TypeError, ValueError):
        pass  # surrogates, deep nesting, big ints: the standard writer
    try:
        text = json.dumps(value, ensure_ascii=how != 2, allow_nan=True,
                          separators=(",", ":") if how != 3 else (", ", ": "))
    except RecursionError:
        return b"{}"
    return text.encode("utf-8", "surrogatepass")  # raw surrogates: not UTF-8, rejected


def _bytes_mutation(data: bytes, rng: random.Random) -> bytes:
    how = rng.randrange(7)
    if not data:
        return data
    k = rng.randrange(len(data))
    if how == 0:
        return data[:k]  # cut short
    if how == 1:
        return data.replace(b"\n", b"\r\n")
    if how == 2:
        return b"\xef\xbb\xbf" + data
    if how == 3:
        return data[:k] + bytes([rng.randrange(256)]) + data[k + 1:]
    if how == 4:
        return data[:k] + b"\n\n" + data[k:]
    if how == 5:
        return data.rstrip(b"\n")
    return data[:k] + rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"1" * 400,
                                  b"\\ud800", b"\"\\udc00\"", b"[" * 1100]) + data[k:]


def make_input(seeds: list[Seed], seed: int, i: int) -> tuple[str, bytes, random.Random]:
    """Input i of the run seeded `seed`: the seed's format, the bytes, and its random source.

    Mutated values nest deep, and copying them recurses: the recursion limit is raised
    while the input is made, and only then (ctxpack must cope with the usual one)."""
    usual = sys.getrecursionlimit()
    sys.setrecursionlimit(max(usual, 30_000))
    try:
        return _made(seeds, seed, i)
    finally:
        sys.setrecursionlimit(usual)


def _made(seeds: list[Seed], seed: int, i: int) -> tuple[str, bytes, random.Random]:
    rng = random.Random(seed * 1_000_003 + i)
    base = rng.choice(seeds)
    if base.text:
        lines = list(base.records)
        for _ in range(rng.randint(1, 4)):
            _mutate_lines(lines, rng)
        ending = rng.choice(["\n", "\r\n", "  \n"])
        text = ending.join(lines) + ending
        data = text.encode("utf-8", "surrogatepass")  # a lone surrogate: not UTF-8, rejected
        if rng.random() < 0.08:
            data = _bytes_mutation(data, rng)
        return base.format, data, rng
    records = _copy(base.records)
    if base.document:
        records = [records[0]]
    for _ in range(rng.randint(1, 4)):
        if base.document and rng.random() < 0.5:
            inner = records[0]
            holder = inner if isinstance(inner, list) else next(
                (v for v in inner.values() if isinstance(v, list)), None) \
                if isinstance(inner, dict) else None
            if holder:
                rng.choice(MUTATIONS)(holder, rng)
                continue
        rng.choice(MUTATIONS)(records, rng)
    if base.document:
        data = _dump(records[0] if records else [], rng)
        if rng.random() < 0.5:  # as a .traj file: indented (where orjson can)
            import orjson

            try:
                data = orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2)
            except (TypeError, ValueError):
                pass
    else:
        data = b"".join(_dump(r, rng) + b"\n" for r in records)
    if rng.random() < 0.08:
        data = _bytes_mutation(data, rng)
    return base.format, data, rng


# ---- running one input ---------------------------------------------------------------


@dataclass
class Outcome:
    counts: Counter = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)  # the first of each kind
    kinds: Counter = field(default_factory=Counter)


def _where(exc: BaseException) -> str:
    """The innermost ctxpack frame of a traceback: file and line."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if "/ctxpack/" in f.filename.replace("\\", "/")] or frames
    f = own[-1] if own else None
    return f"{Path(f.filename).name}:{f.lineno}" if f else "?"


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang(f"no answer in {TIMEOUT} s")


def _render(stats: Any, view: Any, problems: list[Any]) -> None:
    """Print the stats tables, the view and the problems to a strict UTF-8 stream, and
    make their JSON, as the CLI does."""
    import orjson
    from rich.console import Console

    from ctxpack.render.show import print_view
    from ctxpack.render.stats import print_tables, to_csv, to_json, to_markdown

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    console = Console(file=out, width=100, color_system=None, highlight=False)
    print_tables(console, [stats])
    print_view(console, view)
    out.write(to_csv([stats]) + to_markdown([stats]))
    out.write("".join(f"x.jsonl:{p.line}: {p.message}\n" for p in problems))
    to_json([stats])
    orjson.dumps([p.to_dict() for p in problems])
    out.flush()


def read_one(data: bytes, fmt: str | None, stats: bool, view: bool, render: bool) -> None:
    """Load and validate an input; with `stats`, `view` and `render`, what `stats` and
    `show` make of it too, and with `render` those printed."""
    from ctxpack.breakdown import stats as stats_of
    from ctxpack.breakdown import transcript_models
    from ctxpack.checks import validate
    from ctxpack.loader import load
    from ctxpack.models import TABLE
    from ctxpack.tokens import TokenCounter
    from ctxpack.view import build_view

    found = stats_of(io.BytesIO(data), format=fmt, cache=False) if stats or render else None
    t = load(io.BytesIO(data), fmt)
    problems = validate(t)
    if view or render:
        # the model as `show` picks it: the file's, if the table knows it (a name the
        # table does not know is an error of a --model flag, not of the file)
        shown = build_view(t, TokenCounter(TABLE.choose(transcript_models(t)), TABLE),
                           flagged=False)
        if render:
            _render(found, shown, problems)


def compress_one(data: bytes, rng: random.Random) -> str:
    """Compress and restore: 'same', or what went wrong (raises what compress raises)."""
    from ctxpack.compression import compress_file
    from ctxpack.compression.cutting import Limits
    from ctxpack.compression.settings import Options
    from ctxpack.loader import load
    from ctxpack.undo import restore

    options = Options(budget=rng.choice([None, 40, 120, 400, 1500]),
                      keep_steps=rng.randint(0, 2), keep_observations=rng.randint(0, 3),
                      limits=Limits(max_lines=rng.choice([3, 20, 300]), max_bytes=400),
                      max_summary_tokens=rng.choice([60, 400]),
                      strategy=rng.choice(["extractive", "structured"]))
    result = compress_file(io.BytesIO(data), options, cache=False)
    out = result.data
    try:
        back = restore([out])
    except Exception as exc:  # noqa: BLE001 - restore refused what compress wrote
        return f"restore refused it: {type(exc).__name__} at {_where(exc)}"
    if back != data:
        return "restored bytes differ"
    if out != data:
        load(io.BytesIO(out))  # what compress wrote reads again
    return "same"


@dataclass(frozen=True)
class Shares:
    """Which share of the inputs goes further than the sniffed read, stats and validate."""

    other: float = 0.25  # read by a reader of another format too (forced)
    stats: float = 0.25  # their stats made (as `ctxpack stats` does, streaming)
    view: float = 0.1  # `show`'s view made
    render: float = 0.01  # the stats and the view printed
    compress: float = 0.3  # compressed, restored and compared


def _attempt(name: str, results: list[tuple[str, str, str | None]], fn: Any,
             *args: Any) -> None:
    """Run one target on the input; note accepted, rejected or what went wrong."""
    from ctxpack.errors import CtxpackError

    if _SEEDS_OWNED:
        signal.alarm(TIMEOUT)
    try:
        said = fn(*args)
        ok = said in (None, "same")
        results.append((name, "accepted" if ok else "roundtrip", None if ok else said))
    except CtxpackError as exc:
        results.append((name, f"rejected:{type(exc).__name__}", None))
    except Exception as exc:  # noqa: BLE001 - what the fuzzer looks for
        results.append((name, "internal", f"{type(exc).__name__} at {_where(exc)}"))
    finally:
        if _SEEDS_OWNED:
            signal.alarm(0)


def run_one(seeds: list[Seed], seed: int, i: int,
            shares: Shares) -> list[tuple[str, str, str | None]]:
    """(target:format, result, what went wrong) for each target input i went through; the
    format of `read` and `compress` is the seed's, of `forced` the reader's."""
    fmt, data, rng = make_input(seeds, seed, i)
    results: list[tuple[str, str, str | None]] = []
    stats, view = rng.random() < shares.stats, rng.random() < shares.view
    render = rng.random() < shares.render
    _attempt(f"read:{fmt}", results, read_one, data, None, stats, view, render)
    if rng.random() < shares.other:
        other = rng.choice(FORMATS)
        _attempt(f"forced:{other}", results, read_one, data, other, False, False, False)
    if rng.random() < shares.compress:
        _attempt(f"compress:{fmt}", results, compress_one, data, rng)
    return results


# ---- the run -------------------------------------------------------------------------

_SEEDS: list[Seed] = []
_SEEDS_OWNED = False  # a process of the fuzzer's own: inputs that hang are stopped


def _init(corpus: str | None, seed: int) -> None:
    """Set a process up to run inputs: the seeds (once; forked processes share them)."""
    global _SEEDS, _SEEDS_OWNED
    os.environ.setdefault("CTXPACK_WORKERS", "1")  # the fuzzer's processes are the workers
    signal.signal(signal.SIGALRM, _alarm)
    _SEEDS_OWNED = True
    if not _SEEDS:
        _SEEDS = load_seeds(Path(corpus) if corpus else None, random.Random(seed))


def _batch(args: tuple[int, int, int, Shares]) -> Outcome:
    seed, start, count, shares = args
    out = Outcome()
    for i in range(start, start + count):
        try:
            results = run_one(_SEEDS, seed, i, shares)
        except _Hang as exc:  # in making the input itself
            results = [("make:-", "internal", str(exc))]
        out.counts["inputs"] += 1
        for target, result, what in results:
            refused = result.startswith("rejected:")
            kind = ("InputError" if result == "rejected:InputError" else "refused") \
                if refused else result
            out.counts[(*target.split(":"), kind)] += 1
            if result in ("internal", "roundtrip"):
                kind = f"{target.split(':')[0]} {result}: {what}"
                out.kinds[kind] += 1
                if out.kinds[kind] <= 3:
                    out.failures.append({"index": i, "target": target, "kind": kind})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10_000, help="inputs to make")
    ap.add_argument("--start", type=int, default=0, help="index of the first input")
    ap.add_argument("--seed", type=int, default=1, help="seed of the run")
    for name, value in vars(Shares()).items():
        ap.add_argument(f"--{name}-share", type=float, default=value,
                        help=f"share of inputs (default {value})")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    ap.add_argument("--corpus", help="a folder of transcripts to take seeds from too")
    ap.add_argument("--save", help="folder for the first reproducers of each failure")
    ap.add_argument("--batch", type=int, default=200, help="inputs per task")
    ns = ap.parse_args(argv)
    shares = Shares(**{k: getattr(ns, f"{k}_share") for k in vars(Shares())})
    started = time.monotonic()
    total = Outcome()
    tasks = [(ns.seed, s, min(ns.batch, ns.start + ns.count - s), shares)
             for s in range(ns.start, ns.start + ns.count, ns.batch)]
    fork = hasattr(os, "fork")
    if fork:
        _init(ns.corpus, ns.seed)
        print(f"{len(_SEEDS):,} seeds", file=sys.stderr, flush=True)
    ctx = multiprocessing.get_context("fork" if fork else "spawn")
    with ctx.Pool(ns.jobs, _init, (ns.corpus, ns.seed)) as pool:
        for n, part in enumerate(pool.imap_unordered(_batch, tasks), 1):
            for f in part.failures:  # said at once: a long run's first finds are not kept back
                if f["kind"] not in total.kinds:
                    print(f"new failure at input {f['index']}: {f['kind']}", file=sys.stderr,
                          flush=True)
            total.counts.update(part.counts)
            total.kinds.update(part.kinds)
            total.failures += [f for f in part.failures
                               if sum(g["kind"] == f["kind"] for g in total.failures) < 3]
            if n % 50 == 0 or n == len(tasks):
                print(f"{total.counts['inputs']:,} inputs, {time.monotonic() - started:,.0f} s,"
                      f" {sum(total.kinds.values())} failures", file=sys.stderr, flush=True)
    print(report(total, ns, time.monotonic() - started))
    if ns.save and total.failures:
        save(total.failures, ns)
    return 1 if total.kinds else 0


# what became of a run: taken, refused with an InputError naming file, line and problem,
# refused otherwise (CannotFit: compress cannot meet the budget), restored other than it
# was, or crashed
RESULTS = ("accepted", "InputError", "refused", "roundtrip", "internal")


def report(total: Outcome, ns: argparse.Namespace, seconds: float) -> str:
    """A table: per target and format, the inputs and what became of them."""
    c = total.counts
    lines = [f"seed {ns.seed}, inputs {ns.start:,} to {ns.start + ns.count - 1:,}, "
             f"{ns.jobs} processes, {seconds:,.0f} s", f"inputs: {c['inputs']:,}", "",
             f"| {'target':<30} | {'runs':>9} | " + " | ".join(f"{r:>9}" for r in RESULTS)
             + " |", "|" + "---|" * (len(RESULTS) + 2)]
    keys = sorted({k[:2] for k in c if isinstance(k, tuple)})
    for target in ("read", "forced", "compress"):
        rows = [(f"{target} {fmt}", [c[(target, fmt, r)] for r in RESULTS])
                for t, fmt in keys if t == target]
        rows.append((f"{target} (all)",
                     [sum(r[1][k] for r in rows) for k in range(len(RESULTS))]))
        for name, values in rows:
            lines.append(f"| {name:<30} | {sum(values):>9,} | "
                         + " | ".join(f"{v:>9,}" for v in values) + " |")
    lines.append("")
    lines += [f"FAIL {n:,} x {kind}" for kind, n in total.kinds.most_common()]
    return "\n".join(lines)


def save(failures: list[dict[str, Any]], ns: argparse.Namespace) -> None:
    """Each reproducer's input, and how to run it again."""
    folder = Path(ns.save)
    folder.mkdir(parents=True, exist_ok=True)
    _init(ns.corpus, ns.seed)
    for f in failures:
        fmt, data, _ = make_input(_SEEDS, ns.seed, f["index"])
        name = f"{f['index']:09d}-{f['target'].replace(':', '-')}"
        (folder / f"{name}.{'json' if fmt == 'json-messages' else 'jsonl'}").write_bytes(data)
        (folder / f"{name}.txt").write_text(
            f"{f['kind']}\nformat {fmt}; again: python bench/fuzz.py --seed {ns.seed} "
            f"--start {f['index']} --count 1 --jobs 1\n", encoding="utf-8",
            errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())

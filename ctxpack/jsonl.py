"""Streaming JSONL input: raw lines with their numbers, parsed one at a time.

Lines are read in large chunks and yielded as bytes with their terminators so a
writer can put back exactly what it read. Parse errors name file, line and problem.
"""

from __future__ import annotations

import decimal
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from array import array
from bisect import bisect_right
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, ClassVar, overload

import orjson

from .errors import InputError
from .transcript import Record

CHUNK = 1 << 22
# the byte order mark some editors (Notepad, PowerShell's Out-File) open a UTF-8 file with:
# read past on a file's first line, kept in its raw bytes so a write gives it back
BOM = b"\xef\xbb\xbf"


@dataclass
class Source:
    """An opened input: a binary stream, the name to report, its size when known."""

    stream: BinaryIO
    name: str
    size: int | None
    owned: bool

    def close(self) -> None:
        if self.owned:
            self.stream.close()

    def snapshot(self) -> Snapshot | None:
        """The file as it is now, to tell later if it was rewritten meanwhile; None for a
        stream that is not a file, or where there is no os.pread to read it aside."""
        try:
            now = os.fstat(self.stream.fileno())
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation included
            return None
        if not hasattr(os, "pread"):
            return None
        return Snapshot(now.st_size, now.st_mtime_ns, self._tail(now.st_size))

    def rewritten(self, seen: Snapshot) -> bool:
        """Has the file changed since `seen` other than by bytes added at its end? (Its
        size fell, its time changed at the same size, or its last bytes then differ.)"""
        now = os.fstat(self.stream.fileno())
        if now.st_size < seen.size or (now.st_size == seen.size
                                        and now.st_mtime_ns != seen.mtime_ns):
            return True
        return self._tail(seen.size) != seen.tail

    def _tail(self, size: int) -> bytes:
        start = max(0, size - Snapshot.TAIL)
        return os.pread(self.stream.fileno(), size - start, start)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file's size, time and last bytes when it was read."""

    TAIL: ClassVar[int] = 1 << 16

    size: int
    mtime_ns: int
    tail: bytes


def open_source(source: str | os.PathLike[str] | IO[Any] | Source,
                session: str | None = None) -> Source:
    """Open a path, `-` (stdin) or a file object for binary reading; a folder that is one
    transcript, as the file it stands for (of an OpenCode storage tree, its session
    `session`'s info file where one is named)."""
    if isinstance(source, Source):  # opened already: the caller keeps it
        source.stream.seek(0)
        return Source(source.stream, source.name, source.size, False)
    if hasattr(source, "read"):
        stream = getattr(source, "buffer", source)
        return Source(stream, getattr(source, "name", "<stream>"), None, False)
    name = os.fspath(source)
    if name == "-":
        return Source(sys.stdin.buffer, "<stdin>", None, False)
    if os.path.isdir(name):  # a folder that is one transcript (a Cline task...) is read so
        from .formats import folder_transcript

        name = folder_transcript(name, session) or name
    try:
        stream = open(name, "rb")  # noqa: SIM115 - closed by Source.close
    except FileNotFoundError:
        raise InputError(name, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(name, None, "is a directory") from None
    except PermissionError:
        raise InputError(name, None, "permission denied") from None
    info = os.fstat(stream.fileno())
    # a pipe (`<(cmd)`, a FIFO) or a device has no size to go by: read as a stream
    return Source(stream, name, info.st_size if stat.S_ISREG(info.st_mode) else None, True)


def reopenable(source: str | os.PathLike[str] | IO[Any]) -> Source:
    """`source` opened so that it can be read again: a file as it is, anything else
    (stdin, a pipe, a file object) copied to a temporary file first."""
    src = open_source(source)
    if src.owned and src.size is not None:
        return src
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by Source.close
    try:
        shutil.copyfileobj(src.stream, spool, CHUNK)
    except BaseException:
        spool.close()
        raise
    finally:
        if src.owned:
            src.stream.close()
    size = spool.tell()
    spool.seek(0)
    return Source(spool, src.name, size, True)


class LineIndex(Sequence[Record]):
    """The lines of a seekable file by offset: a Record's bytes are read when asked for,
    so that a huge file can be written back line for line without being held in memory."""

    BLOCK = 1 << 22  # bytes read at a time when lines are walked in order

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._ends = array("q")

    def add(self, length: int) -> None:
        """Index the next line, `length` bytes long."""
        self._ends.append((self._ends[-1] if self._ends else 0) + length)

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def size(self) -> int:
        """Bytes of all the lines."""
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            records = list(self.span(lo, max(lo, hi)))
            return records if step == 1 else records[::step]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("line index out of range")
        return Record(i + 1, self._read(self._start(i), self._ends[i]))

    def __iter__(self) -> Iterator[Record]:
        return self.span(0, len(self))

    def span(self, lo: int, hi: int) -> Iterator[Record]:
        """The records of lines lo+1 .. hi (0-based [lo, hi)), read in large blocks."""
        for i, j in self._runs(lo, hi, self.BLOCK):
            base = self._start(i)
            data = self._read(base, self._ends[j - 1])
            for k in range(i, j):
                yield Record(k + 1, data[self._start(k) - base : self._ends[k] - base])

    def chunks(self, lo: int, hi: int) -> Iterator[bytes]:
        """The bytes of lines lo+1 .. hi in large blocks of whole lines: the span read
        through (to hash or copy it) without a copy of each line."""
        for i, j in self._runs(lo, hi, self.BLOCK):
            yield self._read(self._start(i), self._ends[j - 1])

    def blocks(self, size: int) -> list[tuple[int, int]]:
        """The lines cut into runs [lo, hi) of about `size` bytes (a longer line alone)."""
        return list(self._runs(0, len(self), size))

    def _runs(self, lo: int, hi: int, size: int) -> Iterator[tuple[int, int]]:
        return line_runs(self._ends, size, lo, hi)

    def _start(self, i: int) -> int:
        return self._ends[i - 1] if i else 0

    def _read(self, start: int, end: int) -> bytes:
        self._stream.seek(start)
        return self._stream.read(end - start)


class ParsedRecords(Sequence[Record]):
    """Records given as parsed values (a library caller's list of message dicts), one a
    line: each is serialized only if its bytes are asked for (to hash a span, say)."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...

    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return Record(i + 1, dumps(self.values[i]) + b"\n")

    def value(self, i: int) -> Any:
        """Record i (0-based) as it was given."""
        return self.values[i]


def line_runs(ends: Sequence[int], size: int, lo: int = 0,
              hi: int | None = None) -> Iterator[tuple[int, int]]:
    """Lines lo .. hi (0-based; `ends` says where each ends) in runs [i, j) of about `size`
    bytes, a longer line alone."""
    hi = len(ends) if hi is None else hi
    i = lo
    while i < hi:
        start = ends[i - 1] if i else 0
        j = max(bisect_right(ends, start + size, i, hi), i + 1)
        yield i, j
        i = j


def iter_lines(stream: BinaryIO, limit: int | None = None) -> Iterator[bytes]:
    """Yield raw lines, each with its `\\n` (the last one may lack it).

    With `limit`, stop after that many bytes: a file still being appended to is
    read as it was when opened, never chased forever.
    """
    pending: list[bytes] = []
    remaining = limit
    while True:
        size = CHUNK if remaining is None else min(CHUNK, remaining)
        if size <= 0:
            break
        chunk = stream.read(size)
        if not chunk:
            break
        if remaining is not None:
            remaining -= len(chunk)
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            if pending:
                pending.append(chunk[start : end + 1])
                yield b"".join(pending)
                pending.clear()
            else:
                yield chunk[start : end + 1]
            start = end + 1
        if start < len(chunk):
            pending.append(chunk[start:])
    if pending:
        yield b"".join(pending)


def parse_line(raw: bytes, path: str, line: int) -> dict[str, Any] | None:
    """Parse one raw line into a JSON object; None for a blank line."""
    if line == 1 and raw.startswith(BOM):
        raw = raw[len(BOM):]
    try:
        value = _fast(raw)
    except orjson.JSONDecodeError:
        if not raw.strip():
            return None
        value = _parse_slow(raw, path, line)
    if not isinstance(value, dict):
        raise InputError(path, line, f"expected a JSON object, found {json_kind(value)}")
    return value


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, as a problem names it: "an array", "null", ..."""
    if value is None:
        return "null"
    kinds = {bool: "a boolean", str: "a string", int: "a number", float: "a number",
             list: "an array", dict: "an object"}
    return kinds.get(type(value), type(value).__name__)


# An integer past 64 bits has 19 digits or more in a row; orjson turns such integers into
# floats, so a value holding a float that large may have lost one, and is read again by the
# standard parser, which keeps every integer. The digit run is looked for first (a table
# maps every digit to "0"): that is cheap, and most data has none.
_INEXACT = float(2**63)
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_RUN = b"0" * 19


def _fast(data: bytes) -> Any:
    """`data` parsed by orjson when it gives the value exactly; orjson.JSONDecodeError when
    it cannot parse it or turned an integer past 64 bits into a float (for the standard
    parser to read it again)."""
    value = orjson.loads(data)
    if _has_run(data) and _huge_float(value):
        raise orjson.JSONDecodeError("an integer past 64 bits", "", 0)
    return value


def _has_run(data: bytes) -> bool:
    """Does `data` hold 19 digits in a row? (Looked for a block at a time: no copy of a
    large document at once.)"""
    step = CHUNK
    for start in range(0, len(data), step):
        if data[start : start + step + len(_RUN) - 1].translate(_DIGITS).find(_RUN) >= 0:
            return True
    return False


def _huge_float(value: Any) -> bool:
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict:
            todo.extend(item.values())
        elif kind is list:
            todo.extend(item)
        elif kind is float and not -_INEXACT < item < _INEXACT:
            return True
    return False


def loads(data: bytes) -> Any:
    """A JSON value as the readers take it: by orjson, else by the standard parser (which
    takes lone surrogates, NaN and nesting past orjson's limit, and keeps integers past 64
    bits exact, where orjson makes floats of them); ValueError if not JSON. Compress
    writes again what this gives, so a value must come out as it went in. A byte order
    mark before it (a file's first line) is no part of it."""
    data = data.removeprefix(BOM)
    try:
        return _fast(data)
    except orjson.JSONDecodeError:
        pass
    text = data.decode("utf-8")  # a UnicodeDecodeError is a ValueError
    try:
        return json.loads(text)
    except RecursionError:
        pass
    try:
        return deep_call(json.loads, text)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {DEEP_LIMIT:,} levels") from None


def parse_document(data: bytes, path: str, line: int) -> Any:
    """Parse a whole JSON document (any value); errors name the line where it breaks.
    Integers past 64 bits stay exact, as with `loads`."""
    if line == 1 and data.startswith(BOM):
        data = data[len(BOM):]
    try:
        return _fast(data)
    except orjson.JSONDecodeError:
        if not data.strip():
            raise InputError(path, line, "empty JSON document") from None
        try:
            return _parse_slow(data, path, line)
        except InputError as err:
            problem = err.problem.replace("truncated last line", "truncated document")
            # a whole document has no line to skip: --skip-invalid would not help
            hint = err.hint and err.hint.replace("; --skip-invalid skips it", "")
            raise InputError(path, err.line, problem, hint) from None


_BLANK = re.compile(r"[ \t\n\r]*")


def line_in(data: bytes, first: int, at: Sequence[str | int]) -> int | None:
    """The line where the value at `at` (keys and indexes from the top) starts in the JSON
    document `data` whose first line is `first`, or None if it holds no such value. The
    standard parser's scanner steps over each value before it (C speed; no value is
    kept), so the cost is one parse of the document's bytes up to the value."""
    text = data.decode("utf-8", "replace")
    pos = _seek(text, at)
    return None if pos is None else first + text.count("\n", 0, pos)


def lines_at(data: bytes, first: int,
             paths: Collection[tuple[str | int, ...]]) -> dict[tuple[str | int, ...], int]:
    """The line where the value at each of `paths` starts (as `line_in` of each), in one
    walk over the document that goes down only towards them; a path it lacks is left
    out."""
    text = data.decode("utf-8", "replace")
    scan = json.JSONDecoder().scan_once
    prefixes = {p[:n] for p in paths for n in range(len(p))}
    wanted = set(paths)
    found: dict[tuple[str | int, ...], int] = {}

    def walk(pos: int, at: tuple[str | int, ...]) -> int:
        """Note the values below the one at `pos` (at `at`); where that value ends."""
        if at in wanted:
            found[at] = pos
        if at not in prefixes or text[pos] not in "[{":
            return scan(text, pos)[1]
        closing = "]" if text[pos] == "[" else "}"
        pos, n = _blank(text, pos + 1), 0
        while text[pos] != closing:
            step: str | int = n
            if closing == "}":
                step, pos = scan(text, pos)
                pos = _blank(text, pos)
                if text[pos] != ":":
                    raise ValueError(pos)
                pos = _blank(text, pos + 1)
            pos = _blank(text, walk(pos, (*at, step)))
            if text[pos] == ",":
                pos = _blank(text, pos + 1)
            n += 1
        return pos + 1

    try:
        walk(_opening(text), ())
    except (IndexError, StopIteration, ValueError, RecursionError):
        pass  # not JSON as the paths say: what was found so far
    lines: dict[tuple[str | int, ...], int] = {}
    line, counted = first, 0
    for at, pos in sorted(found.items(), key=lambda x: x[1]):
        line, counted = line + text.count("\n", counted, pos), pos
        lines[at] = line
    return lines


def item_lines(data: bytes | None, first: int,
               paths: Collection[tuple[str | int, ...]]) -> dict[tuple[str | int, ...], int]:
    """`lines_at` of a document printed over many lines; {} of one on a single line (or
    none), whose line tells its items apart no more than "line 1" does."""
    if data is None or b"\n" not in data.rstrip():
        return {}
    return lines_at(data, first, paths)


def _opening(text: str) -> int:
    """Where a document's text starts: past a byte order mark and blanks."""
    return _blank(text, 1 if text.startswith("\ufeff") else 0)


def _blank(text: str, pos: int) -> int:
    return _BLANK.match(text, pos).end()  # type: ignore[union-attr]


def _seek(text: str, at: Sequence[str | int]) -> int | None:
    """Where the value at `at` starts in the JSON text, or None."""
    scan = json.JSONDecoder().scan_once
    try:
        pos = _opening(text)
        for step in at:
            opening = "[" if isinstance(step, int) else "{"
            if text[pos] != opening:
                return None
            pos = _blank(text, pos + 1)
            n = 0
            while True:
                if isinstance(step, str):  # a key: its value follows
                    key, pos = scan(text, pos)
                    pos = _blank(text, pos)
                    if text[pos] != ":":
                        return None
                    pos = _blank(text, pos + 1)
                    if key == step:
                        break
                elif n == step:
                    break
                pos = _blank(text, scan(text, pos)[1])
                if text[pos] != ",":
                    return None
                pos, n = _blank(text, pos + 1), n + 1
    except (IndexError, StopIteration, ValueError, RecursionError):
        return None
    return pos


def _integer(text: str) -> int:
    """A whole number as JSON writes it, of any length (Python turns text of more than
    4,300 digits into an int only by way of a Decimal)."""
    return int(text) if len(text) <= 4_000 else int(decimal.Decimal(text))


def _parse_slow(raw: bytes, path: str, line: int) -> Any:
    """Second try with the standard parser, which accepts lone surrogates; explain
    failures at their line (`line` is the first of `raw`) and column on that line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        below, column = _place(raw, exc.start)
        raise InputError(path, line + below, f"not valid UTF-8: byte 0x{raw[exc.start]:02x} "
                         f"at column {column}") from None
    try:
        try:
            return json.loads(text, parse_int=_integer)
        except RecursionError:
            return deep_call(lambda t: json.loads(t, parse_int=_integer), text)
    except RecursionError:
        raise InputError(path, line, f"JSON nested deeper than {DEEP_LIMIT:,} levels") from None
    except json.JSONDecodeError as exc:
        if text[exc.pos:].strip():  # the parser stopped at a character of the text
            below, column, end = exc.lineno - 1, exc.colno, ""
        else:  # the text ends before its value: the parser points past it, at no character
            below, column = _place(text, len(text[:exc.pos].rstrip()))
            end = ", where the line ends"
        # a line cut off runs out of text (in a value, or in a string the parser then
        # points back to); a mistake before its end is no cut
        cut = bool(end) or exc.msg.startswith("Unterminated string")
        if cut and not raw.endswith(b"\n"):
            raise InputError(
                path, line + below, "truncated last line: the JSON ends before it is complete",
                "the file may still be being written; --skip-invalid skips it",
            ) from None
        raise InputError(path, line + below,
                         f"malformed JSON: {exc.msg} at column {column}{end}") from None


def _place(data: str | bytes, offset: int) -> tuple[int, int]:
    """Where `offset` is in `data`: the lines before its own, and its column on it."""
    newline = b"\n" if isinstance(data, bytes) else "\n"
    start = data.rfind(newline, 0, offset) + 1  # type: ignore[arg-type]
    return data.count(newline, 0, offset), offset - start + 1  # type: ignore[arg-type]


# Nesting beyond the parsers' recursion limits is rare but legal JSON; such values
# are handled on a thread with a large stack and a raised recursion limit.
DEEP_LIMIT = 100_000
_DEEP_STACK = 512 << 20


def deep_call(fn: Any, *args: Any) -> Any:
    """Run `fn(*args)` where deep recursion is safe; re-raise what it raises."""
    import threading

    box: dict[str, Any] = {}

    def run() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, DEEP_LIMIT + 1000))
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    previous = threading.stack_size(_DEEP_STACK)
    try:
        worker = threading.Thread(target=run, name="ctxpack-deep-json")
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def dumps(value: Any, indent: int | None = None) -> bytes:
    """Compact JSON as agents write it (no spaces), or with `indent` as the standard library
    indents it; without a newline, and always UTF-8. Any value JSON can hold is written:
    an integer past 64 bits too."""
    if indent in (None, 2):
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else None)
        except TypeError:
            pass  # lone surrogates, integers past 64 bits, nesting deeper than orjson takes
    try:
        text = _dumps_std(value, indent)
    except RecursionError:
        text = deep_call(_dumps_std, value, indent)
    return text.encode("utf-8")


# a surrogate not in a pair (JSON's `\ud800` escape reads as one): no UTF-8 for it, and
# no provider takes a request holding one
LONE = re.compile("[\ud800-\udfff]")


def _dumps_std(value: Any, indent: int | None = None) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=indent,
                      separators=(",", ":") if indent is None else None)
    # escaped, as JSON allows and the readers take, so that the output is UTF-8
    return LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _strings(value: Any) -> Iterator[tuple[str, str]]:
    """Each string in `value` (an object's keys too) with its path (`content[0].text`;
    "" for `value` itself), in document order."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:  # (no recursion: a record may nest deeper than the stack goes)
        path, v = stack.pop()
        if isinstance(v, str):
            yield path, v
        elif isinstance(v, dict):
            for key, x in reversed(v.items()):
                at = f"{path}.{key}" if path else str(key)
                stack.append((at, x))
                if isinstance(key, str):
                    stack.append((f"{at} (its key)", key))
        elif isinstance(v, list):
            stack += ((f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v))))


def lone_surrogates(value: Any) -> list[tuple[str, str]]:
    """Where in `value` a string (or an object's key) holds a lone surrogate, in document
    order: its path and the first one's escape (`\\ud800`)."""
    return [(path, f"\\u{ord(hit.group()):04x}") for path, text in _strings(value)
            if (hit := LONE.search(text))]


def lone_count(value: Any) -> int:
    """How many lone surrogates the strings of `value` hold."""
    return sum(len(LONE.findall(text)) for _, text in _strings(value))

"""Streaming JSONL input: raw lines with their numbers, parsed one at a time.

Lines are read in large chunks and yielded as bytes with their terminators so a
writer can put back exactly what it read. Parse errors name file, line and problem.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO

import orjson

from .errors import InputError

CHUNK = 1 << 22


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


def open_source(source: str | os.PathLike[str] | IO[Any]) -> Source:
    """Open a path, `-` (stdin) or a file object for binary reading."""
    if hasattr(source, "read"):
        stream = getattr(source, "buffer", source)
        return Source(stream, getattr(source, "name", "<stream>"), None, False)
    name = os.fspath(source)
    if name == "-":
        return Source(sys.stdin.buffer, "<stdin>", None, False)
    try:
        stream = open(name, "rb")  # noqa: SIM115 - closed by Source.close
    except FileNotFoundError:
        raise InputError(name, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(name, None, "is a directory") from None
    except PermissionError:
        raise InputError(name, None, "permission denied") from None
    size = os.fstat(stream.fileno()).st_size
    return Source(stream, name, size, True)


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
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not raw.strip():
            return None
        value = _parse_slow(raw, path, line)
    if not isinstance(value, dict):
        kind = type(value).__name__ if value is not None else "null"
        kind = {"list": "an array", "str": "a string", "int": "a number", "float": "a number",
                "bool": "a boolean"}.get(kind, kind)
        raise InputError(path, line, f"expected a JSON object, found {kind}")
    return value


def parse_document(data: bytes, path: str, line: int) -> Any:
    """Parse a whole JSON document (any value); errors name the line where it breaks."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if not data.strip():
            raise InputError(path, line, "empty JSON document") from None
        try:
            return _parse_slow(data, path, line)
        except InputError as err:
            where = line + data.count(b"\n", 0, getattr(exc, "pos", 0))
            problem = err.problem.replace("truncated last line", "truncated document")
            raise InputError(path, where, problem, err.hint) from None


def _parse_slow(raw: bytes, path: str, line: int) -> Any:
    """Second try with the standard parser, which accepts lone surrogates; explain failures."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        raise InputError(
            path, line, f"not valid UTF-8: byte 0x{byte:02x} at column {exc.start + 1}"
        ) from None
    try:
        try:
            return json.loads(text)
        except RecursionError:
            return deep_call(json.loads, text)
    except RecursionError:
        raise InputError(path, line, f"JSON nested deeper than {DEEP_LIMIT:,} levels") from None
    except json.JSONDecodeError as exc:
        if not raw.endswith(b"\n"):
            raise InputError(
                path, line, "truncated last line: the JSON ends before it is complete",
                "the file may still be being written; --skip-invalid skips it",
            ) from None
        raise InputError(path, line, f"malformed JSON: {exc.msg} at column {exc.colno}") from None


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


def dumps(value: Any) -> bytes:
    """Compact JSON as agents write it (no spaces), without a newline."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass  # lone surrogates, or nesting deeper than orjson takes
    try:
        text = _dumps_std(value)
    except RecursionError:
        text = deep_call(_dumps_std, value)
    return text.encode("utf-8", "surrogatepass")


def _dumps_std(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def write_atomic(path: str, chunks: Iterator[bytes] | list[bytes]) -> None:
    """Write `chunks` to `path` through a temp file, fsync and rename: never half a file."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ctxpack-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise

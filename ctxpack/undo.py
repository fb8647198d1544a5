"""Restore: a compressed transcript back to its original, byte for byte.

One pass over the lines takes off one layer of compression: each group of lines
with one id becomes the original its archive holds, read in pieces. Each pass
writes to a spool on disk, so memory holds one compressed item at a time, never
the file; a transcript compressed twice takes two passes.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import IO, TYPE_CHECKING, Any, overload

from .archive import KEY, MARK, meta_of, unpack_pieces
from .errors import InputError, UsageError
from .jsonl import BOM, CHUNK, Source, iter_lines, loads, reopenable

if TYPE_CHECKING:
    from .loader import PathOrFile

MAX_LAYERS = 64  # a transcript compressed again and again nests its archives
# What restore may write, in times the bytes it was given (the input, and the originals
# read from an archive folder, which are there already): zlib gives back at most about
# 1,000 times what it holds, so a real transcript stays far below, while nested inline
# archives crafted to expand (a zip bomb) stop here.
MAX_GROWTH = 2000
ITEM = MARK + b':{"id":"'  # how the `ctxpack` object of a line compress wrote begins

Group = list[tuple[int, bytes, dict[str, Any]]]  # (line number, raw line, its meta)


class Restored:
    """What a restore made: the original's bytes (`chunks`, `read`), how many layers of
    compression came off (0: the input had nothing to restore and is given back as is)
    and the name of the input."""

    def __init__(self, stream: IO[bytes], layers: int, name: str,
                 size: int | None = None) -> None:
        self._stream = stream
        self._size = size  # bytes to read (an input still being appended to: as opened)
        self.layers = layers
        self.name = name

    def chunks(self) -> Iterator[bytes]:
        self._stream.seek(0)
        left = self._size
        while chunk := self._stream.read(CHUNK if left is None else min(CHUNK, left)):
            if left is not None:
                left -= len(chunk)
            yield chunk

    def read(self) -> bytes:
        return b"".join(self.chunks())


@overload
def restore(source: PathOrFile | list[bytes], *, only: str | None = ...,
            archive_dir: str | None = ..., output: None = ...,
            max_growth: int = ...) -> bytes: ...
@overload
def restore(source: PathOrFile | list[bytes], *, only: str | None = ...,
            archive_dir: str | None = ..., output: PathOrFile,
            max_growth: int = ...) -> None: ...


def restore(source: PathOrFile | list[bytes], *, only: str | None = None,
            archive_dir: str | None = None, output: PathOrFile | None = None,
            max_growth: int = MAX_GROWTH) -> bytes | None:
    """The original of a compressed transcript (a file, `-`, or its lines), byte for byte;
    with `output` (a path, written atomically, or a binary file), written there as it is
    read instead of returned, never held in memory whole."""
    with restoring(source, only=only, folder=archive_dir, max_growth=max_growth) as restored:
        if output is None:
            return restored.read()
        if hasattr(output, "write"):
            for chunk in restored.chunks():
                output.write(chunk)
        else:
            from .atomic import write_atomic

            write_atomic(os.fspath(output), restored.chunks())
        return None


@contextmanager
def restoring(source: PathOrFile | list[bytes], *, only: str | None = None,
              folder: str | None = None, max_growth: int = MAX_GROWTH) -> Iterator[Restored]:
    """Restore `source`; what it gives is readable until the `with` block ends.

    Without `only`, every layer comes off: a transcript compressed twice comes back
    as it was before the first compress. With `only`, one item of the top layer is
    expanded (with the lines that go with it) and the rest stays compressed. No layer
    may come to more than `max_growth` times the bytes given (see MAX_GROWTH).
    """
    if not isinstance(max_growth, int) or max_growth < 1:
        raise UsageError(f"max_growth must be a whole number, 1 or more, not {max_growth!r}")
    src = _opened(source)
    near = _folder_of(source)
    spool: IO[bytes] | None = None
    given = _Given(src.size if src.size is not None else _size_of(src.stream), max_growth,
                   src.name)
    try:
        wanted = None
        if only is not None:
            metas = [m for _, m in top_metas(src)]
            if only not in {m["id"] for m in metas}:
                raise UsageError(f"{src.name}: no compressed item {only!r}",
                                 "`ctxpack restore --list` shows the ids")
            wanted = _together(only, metas)
        layers = 0
        while True:
            current = spool or src.stream
            current.seek(0)
            out = tempfile.TemporaryFile()  # noqa: SIM115 - closed here or as `spool`
            try:
                expanded, more = _pass(current, src.size if spool is None else None,
                                       _Bounded(out, given), src.name, wanted, folder, near)
            except BaseException:
                out.close()
                raise
            if not expanded:
                out.close()
                break
            if spool is not None:
                spool.close()
            spool = out
            layers += 1
            if layers > MAX_LAYERS:
                raise InputError(src.name, None, f"more than {MAX_LAYERS} layers of compression")
            if only is not None or not more:
                break
        yield Restored(spool, layers, src.name) if spool is not None else \
            Restored(src.stream, 0, src.name, src.size)
    finally:
        if spool is not None:
            spool.close()
        src.close()


class _Given:
    """The bytes a restore was given, and so how much it may write: the input, and each
    original read from an archive folder (they are on disk already, not expanded)."""

    def __init__(self, size: int, growth: int, name: str) -> None:
        self.size = size
        self.growth = growth
        self.name = name

    @property
    def most(self) -> int:
        return self.growth * max(self.size, 1)


class _Bounded:
    """A layer's output, which stops the restore once it passes what `given` allows."""

    def __init__(self, out: IO[bytes], given: _Given) -> None:
        self.out = out
        self.given = given
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)
        if self.written > self.given.most:
            raise too_large(self.given.name, self.given.growth)
        self.out.write(data)

    def writelines(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            self.write(line)


def too_large(where: str, growth: int) -> InputError:
    """The error of a restore that would write more than `growth` times what it was given."""
    return InputError(where, None, f"restoring it would write more than {growth:,} times the "
                      "bytes it holds (nested archives crafted to expand, or damaged); "
                      "nothing was written", f"if you trust it, pass --max-growth {growth * 10}")


def _size_of(stream: IO[bytes]) -> int:
    at = stream.tell()
    size = stream.seek(0, os.SEEK_END)
    stream.seek(at)
    return size


def _opened(source: PathOrFile | list[bytes]) -> Source:
    if isinstance(source, list):
        return Source(io.BytesIO(b"".join(source)), "<lines>", None, True)
    return reopenable(source)  # read more than once: stdin is spooled first


def _folder_of(source: PathOrFile | list[bytes]) -> str | None:
    """The folder of a compressed file given by its path (where its archive folder may
    be, named from there); None for stdin and other streams."""
    if isinstance(source, (str, os.PathLike)) and os.fspath(source) != "-":
        return os.path.dirname(os.path.abspath(source))
    return None


def _pass(stream: IO[bytes], limit: int | None, out: _Bounded, path: str,
          wanted: set[str] | None, folder: str | None,
          near: str | None) -> tuple[int, bool]:
    """Take one layer off `stream` into `out` (only the `wanted` items, if given): (items
    expanded, whether the result may hold more items)."""
    doc, lines = _document(iter_lines(stream, limit))  # type: ignore[arg-type]
    if doc is not None:
        if wanted is not None and doc["id"] not in wanted:
            out.writelines(lines)
            return 0, False
        return 1, _write_marked(_unpacked(doc["archive"], f"{path}:1", folder, near, out),
                                out)
    expanded = 0
    more = False
    group: Group = []
    for number, raw in enumerate(lines, 1):
        meta = _line_meta(raw, path, number)
        if group and (meta is None or meta["id"] != group[0][2]["id"]):
            done, found = _expand(group, path, wanted, folder, near, out)
            expanded, more, group = expanded + done, more or found, []
        if meta is None:
            out.write(raw)
        else:  # the line is written back only if its item is not expanded
            group.append((number, raw if wanted is not None else b"", meta))
    if group:
        done, found = _expand(group, path, wanted, folder, near, out)
        expanded, more = expanded + done, more or found
    return expanded, more


def _line_meta(raw: bytes, path: str, number: int) -> dict[str, Any] | None:
    """`meta_of(raw)`, but a line that opens a ctxpack object as compress writes one and
    is not JSON is an error: it is an item cut short or damaged, whose original cannot
    come back (other lines that are not JSON are the input's own, and stay as they are)."""
    meta = meta_of(raw)
    if meta is None and ITEM in raw:
        try:
            loads(raw)
        except ValueError:
            raise InputError(path, number, "a line compress wrote is not valid JSON (the "
                             "file is damaged or cut short); nothing was restored") from None
    return meta


def _together(only: str, metas: list[dict[str, Any]]) -> set[str]:
    """The ids that come back with `only`: the summary it follows, the lines that follow
    it (or that summary)."""
    summaries = {only} | {m["follows"] for m in metas if m["id"] == only and m.get("follows")}
    return summaries | {m["id"] for m in metas if m.get("follows") in summaries}


def _expand(group: Group, path: str, wanted: set[str] | None, folder: str | None,
            near: str | None, out: _Bounded) -> tuple[int, bool]:
    """Write the original of one group of lines, or the lines themselves if it is not
    `wanted`: (1 if expanded else 0, whether what was written may hold items)."""
    first, _, meta = group[0]
    if wanted is not None and meta["id"] not in wanted:
        out.writelines(raw for _, raw, _ in group)
        return 0, True
    heads = [(n, m) for n, _, m in group if isinstance(m.get("archive"), dict)]
    if len(heads) != 1 or heads[0][1].get("lines", 1) != len(group):
        raise InputError(path, first, f"compressed item {meta['id']} is incomplete or damaged "
                         "(lines were added, removed or reordered)")
    n, head = heads[0]
    return 1, _write_marked(_unpacked(head["archive"], f"{path}:{n}", folder, near, out), out)


def _unpacked(ref: Any, where: str, folder: str | None, near: str | None,
              out: _Bounded) -> Iterator[bytes]:
    """The original of an archive; one read from a folder adds to what the restore was
    given (it is checked to be the size it records as it is read)."""
    if not isinstance(ref, dict):
        raise InputError(where, None, "the archive is damaged")
    if not ref.get("inline") and type(ref.get("bytes")) is int and ref["bytes"] > 0:
        out.given.size += ref["bytes"]
    return unpack_pieces(ref, where, folder, near)


def _write_marked(pieces: Iterable[bytes], out: _Bounded) -> bool:
    """Write `pieces`; whether they hold MARK (and so, maybe, items of an earlier layer)."""
    found = False
    tail = b""  # MARK may straddle two pieces
    for piece in pieces:
        out.write(piece)
        found = found or MARK in tail + piece[: len(MARK)] or MARK in piece
        tail = piece[-len(MARK):]
    return found


def _document(lines: Iterator[bytes]) -> tuple[dict[str, Any] | None, Iterator[bytes]]:
    """The `ctxpack` object of a multi-line JSON document compress wrote, if `lines` are
    one (then read whole: compress writes such files whole too), and the lines again."""
    first = next(lines, None)
    if first is None or first.strip().removeprefix(BOM) not in (b"{", b"["):
        return None, chain([first] if first is not None else [], lines)
    every = [first, *lines]
    if len(every) < 2 or not any(MARK in x for x in every):
        return None, iter(every)
    try:
        doc = loads(b"".join(every))
    except ValueError:
        return None, iter(every)
    holder = doc[0] if isinstance(doc, list) and doc else doc
    meta = holder.get(KEY) if isinstance(holder, dict) else None
    found = meta if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None
    return found, iter(every)


def _metas(lines: Iterator[bytes], path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, meta) of each line compress wrote, without the archived data (which
    may be most of the file)."""
    doc, lines = _document(lines)
    if doc is not None:
        yield 1, _light(doc)
        return
    for number, raw in enumerate(lines, 1):
        meta = _line_meta(raw, path, number)
        if meta is not None:
            yield number, _light(meta)


def _light(meta: dict[str, Any]) -> dict[str, Any]:
    ref = meta.get("archive")
    if isinstance(ref, dict) and "data" in ref:
        return {**meta, "archive": {k: v for k, v in ref.items() if k != "data"}}
    return meta


def top_metas(source: PathOrFile | Source) -> list[tuple[int, dict[str, Any]]]:
    """(line number, meta) of every line of the top layer that compress wrote."""
    src = source if isinstance(source, Source) else reopenable(source)
    try:
        src.stream.seek(0)
        return list(_metas(iter_lines(src.stream, src.size), src.name))
    finally:
        if src is not source:
            src.close()


def items(source: PathOrFile | Source) -> list[tuple[str, str, int, str]]:
    """(id, kind, line, what) for each compressed item of the top layer, in file order."""
    out: list[tuple[str, str, int, str]] = []
    for number, meta in top_metas(source):
        if not isinstance(meta.get("archive"), dict):
            continue
        ref = meta["archive"]
        where = "inline" if ref.get("inline") else "dropped" if ref.get("dropped") \
            else f"in {ref.get('dir')}"
        size = ref.get("bytes")
        what = f"{size:,} bytes {where}" if type(size) is int else f"? bytes {where}"
        span, done = meta.get("range"), meta.get("items")
        if meta.get("kind") == "archived_summary" and isinstance(span, dict):
            what = f"messages {span.get('start')}–{span.get('end')}, {what}"
        elif isinstance(done, list) and done:
            actions = sorted({str(i.get("action") if isinstance(i, dict) else "?")
                              for i in done})
            what = f"{'+'.join(actions)}, {what}"
        out.append((meta["id"], str(meta.get("kind")), number, what))
    return out

"""Where originals go when compress replaces them, and how `restore` gets them back.

Every line compress writes or changes carries a `ctxpack` object with an `id`;
one line of each id's group holds `archive`: the replaced original bytes inline
(zlib + base64, so nesting never multiplies escapes), or their sha256 in a
content-addressed `--archive-dir`. Restoring swaps each group back for its bytes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import threading
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from .errors import InputError, UsageError
from .formats.base import META_KEY as KEY
from .jsonl import LineIndex, iter_lines, open_source

PathOrFile = str | os.PathLike[str] | IO[Any]
MARK = b'"ctxpack"'  # a line without it was not written by compress: no need to parse it
VERSION = 1


PIECE = 3 << 20  # compressed bytes base64-encoded at a time (a multiple of 3: no padding)
BLOCK = 4 << 20  # an inline archive is compressed in blocks this big, side by side
LEVEL = 1  # the fastest level: text still shrinks to about 40%, at several times the speed

try:  # ISA-L writes the same zlib format about four times as fast (and lets go of the GIL)
    from isal.isal_zlib import compress as deflate
except ImportError:  # no wheel for this platform: the standard library's zlib
    from zlib import compress as deflate


@dataclass(frozen=True, slots=True)
class Archiver:
    """Archives originals inline (the default), in a folder, or not at all (`enabled` off)."""

    folder: str | None = None
    enabled: bool = True

    def pack(self, original: bytes) -> dict[str, Any]:
        """The `archive` object for `original`, storing it as configured."""
        packed = self.pack_stream([original])
        return packed.ref if packed.slot is None else {**packed.ref, "data": packed.text()}

    def pack_stream(self, chunks: Iterable[bytes],
                    squeezed: Iterable[bytes] | None = None) -> Packed:
        """Archive an original given in pieces, in one pass, never holding it whole: it
        is hashed, and compressed into a temporary file (inline) or stored in the folder.

        Inline, each block becomes a zlib stream of its own, compressed on a thread
        (zlib lets go of the GIL), and the streams follow one another; `squeezed` gives
        those streams ready-made (see `Prepack`)."""
        sha = hashlib.sha256()
        size = 0

        def hashed(pieces: Iterable[bytes]) -> Iterator[bytes]:
            nonlocal size
            for piece in pieces:
                sha.update(piece)
                size += len(piece)
                yield piece

        blocks = hashed(chunks)
        if not self.enabled:
            deque(blocks, maxlen=0)  # hashed only
            return Packed({"sha256": sha.hexdigest(), "bytes": size, "inline": False,
                           "dropped": True})
        if self.folder is None:
            spool = tempfile.TemporaryFile()  # noqa: SIM115 - Packed.pieces closes it
            try:
                if squeezed is None:
                    _squeeze(_blocks(blocks, BLOCK), spool)
                else:
                    for stream in squeezed:
                        spool.write(stream)
                    deque(blocks, maxlen=0)  # hashed only: the streams are made already
            except BaseException:
                spool.close()
                raise
            slot = f"ctxpack-data-{os.urandom(12).hex()}"
            return Packed({"sha256": sha.hexdigest(), "bytes": size, "inline": True,
                           "encoding": "zlib+base64", "data": slot}, slot, spool)
        Path(self.folder).mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ctxpack-", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as out:
                for block in blocks:
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
            path = blob_path(self.folder, sha.hexdigest())
            if path.exists():  # content-addressed: the same original is there already
                os.unlink(tmp)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return Packed({"sha256": sha.hexdigest(), "bytes": size, "inline": False,
                       "dir": self.folder})


def _blocks(chunks: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The bytes of `chunks` regrouped in blocks of at least `size` (but the last)."""
    pending: list[bytes] = []
    held = 0
    for chunk in chunks:
        pending.append(chunk)
        held += len(chunk)
        if held >= size:
            yield b"".join(pending)
            pending, held = [], 0
    if pending:
        yield b"".join(pending)


def _squeeze(blocks: Iterator[bytes], out: IO[bytes]) -> None:
    """Compress each block to a zlib stream of its own, on threads, written in order."""
    for stream in _squeezing(blocks):
        out.write(stream)


def _squeezing(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The zlib stream of each block, in order, compressed on threads."""
    from concurrent.futures import ThreadPoolExecutor

    workers = max(1, min(4, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        flying: deque[Any] = deque()
        for block in blocks:
            if len(flying) >= 2 * workers:  # bounded: never the whole original in memory
                yield flying.popleft().result()
            flying.append(pool.submit(deflate, block, LEVEL))
        while flying:
            yield flying.popleft().result()


class Prepack:
    """Compresses a file's lines block by block on a thread while compress plans, so that
    the inline archive of a span of most of the file is nearly done when it is written;
    it begins once `after` is set, if given (work the plan needs sooner).

    `streams` gives the zlib streams of a span: the blocks done that lie wholly in it,
    the rest compressed then. It reads with os.pread (`possible` tells if there is one).
    """

    def __init__(self, records: LineIndex, after: threading.Event | None = None) -> None:
        self.records = records
        self.after = after  # set when other work that comes first is done
        self.bounds = records.blocks(BLOCK)
        self.done: list[tuple[int, int]] = []  # (offset, length) in the spool, per block
        self.spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.halt = threading.Event()
        self.thread: threading.Thread | None = threading.Thread(
            target=self._run, name="ctxpack-prepack", daemon=True)
        self.thread.start()

    @staticmethod
    def possible() -> bool:
        return hasattr(os, "pread")

    def _run(self) -> None:
        while self.after is not None and not self.after.wait(0.05):
            if self.halt.is_set():
                return
        offset = 0
        for lo, hi in self.bounds:
            if self.halt.is_set():
                return
            stream = deflate(self.records.bytes_of(lo, hi), LEVEL)
            self.spool.write(stream)
            self.done.append((offset, len(stream)))
            offset += len(stream)

    def _halt(self) -> None:
        self.halt.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def streams(self, lo: int, hi: int) -> Iterator[bytes]:
        """The zlib streams of lines lo+1 .. hi (0-based [lo, hi)), in order."""
        self._halt()
        run: list[tuple[int, int]] = []  # line ranges not done: compressed now

        def now() -> Iterator[bytes]:
            pieces = (self.records.bytes_of(a, b) for a, b in run)
            return _squeezing(_blocks(pieces, BLOCK))

        for n, (a, b) in enumerate(self.bounds):
            if b <= lo or a >= hi:
                continue
            if n < len(self.done) and lo <= a and b <= hi:
                if run:
                    yield from now()
                    run = []
                offset, length = self.done[n]
                self.spool.seek(offset)
                yield self.spool.read(length)
            else:
                run.append((max(a, lo), min(b, hi)))
        if run:
            yield from now()

    def close(self) -> None:
        self._halt()
        self.spool.close()


def inflate(data: bytes) -> bytes:
    """The bytes of one or more zlib streams, one after the other."""
    out = []
    while data:
        stream = zlib.decompressobj()
        out.append(stream.decompress(data))
        if not stream.eof:
            raise zlib.error("incomplete zlib stream")
        data = stream.unused_data
    return b"".join(out)


@dataclass
class Packed:
    """An archived original: its `archive` object and, when inline, the compressed bytes,
    which stand in the record as the string `slot` until written (see `splice`)."""

    ref: dict[str, Any]
    slot: str | None = None
    spool: IO[bytes] | None = None

    def pieces(self) -> Iterator[bytes]:
        """The base64 text of the compressed bytes, in pieces; the spool is closed after."""
        assert self.spool is not None
        try:
            self.spool.seek(0)
            while chunk := self.spool.read(PIECE):
                yield base64.b64encode(chunk)
        finally:
            self.spool.close()

    def text(self) -> str:
        return b"".join(self.pieces()).decode("ascii")

    def splice(self, line: bytes) -> Iterator[bytes]:
        """`line` (a record holding `ref`) with the base64 text in place of the slot."""
        if self.slot is None:
            yield line
            return
        before, found, after = line.partition(self.slot.encode("ascii"))
        assert found, "the archive slot is missing from its record"
        yield before
        yield from self.pieces()
        yield after


def blob_path(folder: str | os.PathLike[str], sha: str) -> Path:
    return Path(folder) / sha[:2] / sha


def reference(item_id: str) -> str:
    """How a marker in the text names an archived item: `ctxpack restore --only` takes the id."""
    return f"ctxpack:{item_id}"


def unpack(ref: dict[str, Any], where: str, folder: str | None = None) -> bytes:
    """The original bytes an `archive` object stands for, checked against its sha256."""
    sha = ref.get("sha256")
    if ref.get("dropped"):
        raise InputError(where, None, "the original was not archived (compressed with "
                         "--no-archive); it cannot be restored")
    if ref.get("inline"):
        try:
            data = inflate(base64.b64decode(ref["data"]))
        except (KeyError, TypeError, ValueError, zlib.error):
            raise InputError(where, None, "the inline archive is damaged") from None
    else:
        base = folder or ref.get("dir")
        if not isinstance(base, str) or not isinstance(sha, str):
            raise InputError(where, None, "the archive names no folder; pass --archive-dir")
        path = blob_path(base, sha)
        try:
            data = path.read_bytes()
        except OSError:
            raise UsageError(f"{where}: archived original {sha[:12]} not found in {base}",
                             "pass the --archive-dir it was compressed with") from None
    if hashlib.sha256(data).hexdigest() != sha:
        raise InputError(where, None, "archived original does not match its sha256")
    return data


def document_meta(item: str, kind: str, now: str, changes: list[dict[str, Any]], raw: bytes,
                  archiver: Archiver) -> dict[str, Any]:
    """The `ctxpack` object of a record rewritten whole (a conversation, a JSON document)."""
    return {"id": item, "kind": kind, "version": VERSION, "compressed_at": now,
            "conversations": changes, "lines": 1, "archive": archiver.pack(raw)}


def _document_of(lines: list[bytes]) -> dict[str, Any] | None:
    """The `ctxpack` object of a multi-line JSON document compress wrote, if it is one."""
    head = lines[0].strip() if lines else b""
    if len(lines) < 2 or head not in (b"{", b"[") or not any(MARK in x for x in lines):
        return None
    try:
        doc = orjson.loads(b"".join(lines))
    except orjson.JSONDecodeError:
        return None
    holder = doc[0] if isinstance(doc, list) and doc else doc
    meta = holder.get(KEY) if isinstance(holder, dict) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None


def meta_of(raw: bytes) -> dict[str, Any] | None:
    """The `ctxpack` object of a line, or None for a line compress did not write."""
    if MARK not in raw:
        return None
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    meta = record.get(KEY) if isinstance(record, dict) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None


def restore_lines(lines: Iterable[bytes], path: str, *, only: str | None = None,
                  folder: str | None = None) -> Iterator[bytes]:
    """Undo one layer of compression: each group of lines with one id becomes its original.

    With `only`, just that id's group is expanded and every other line stays; but a
    summary and the lines compress re-pointed at it (their `follows`) come back together,
    or the links between them would break.
    """
    lines = list(lines)
    doc = _document_of(lines)
    if doc is not None:
        if only is None or only == doc["id"]:
            yield unpack(doc["archive"], f"{path}:1", folder) if "archive" in doc else b""
        else:
            yield from lines
        return
    metas = [meta_of(raw) for raw in lines]
    wanted = None if only is None else _together(only, [m for m in metas if m is not None])
    group: list[tuple[int, bytes, dict[str, Any]]] = []
    for number, (raw, meta) in enumerate(zip(lines, metas, strict=True), 1):
        if group and (meta is None or meta["id"] != group[0][2]["id"]):
            yield from _expand(group, path, wanted, folder)
            group = []
        if meta is None:
            yield raw
        else:
            group.append((number, raw, meta))
    if group:
        yield from _expand(group, path, wanted, folder)


def _together(only: str, metas: list[dict[str, Any]]) -> set[str]:
    """The ids that come back with `only`: the summary it follows, the lines that follow
    it (or that summary)."""
    summaries = {only} | {m["follows"] for m in metas if m["id"] == only and m.get("follows")}
    return summaries | {m["id"] for m in metas if m.get("follows") in summaries}


def _expand(group: list[tuple[int, bytes, dict[str, Any]]], path: str,
            wanted: set[str] | None, folder: str | None) -> Iterator[bytes]:
    first, _, meta = group[0]
    if wanted is not None and meta["id"] not in wanted:
        yield from (raw for _, raw, _ in group)
        return
    heads = [(n, m) for n, _, m in group if isinstance(m.get("archive"), dict)]
    if len(heads) != 1 or heads[0][1].get("lines", 1) != len(group):
        raise InputError(path, first, f"compressed item {meta['id']} is incomplete or damaged "
                         "(lines were added, removed or reordered)")
    n, head = heads[0]
    yield unpack(head["archive"], f"{path}:{n}", folder)


def ids(lines: list[bytes]) -> list[str]:
    """The ids of the compressed items in file order."""
    doc = _document_of(lines)
    if doc is not None:
        return [doc["id"]]
    seen: dict[str, None] = {}
    for raw in lines:
        meta = meta_of(raw)
        if meta is not None:
            seen.setdefault(meta["id"])
    return list(seen)


def strip(raw: bytes) -> bytes:
    """The line without its `ctxpack` object (for API-ready output)."""
    meta = meta_of(raw)
    if meta is None:
        return raw
    record = orjson.loads(raw)
    if not isinstance(record, dict) or KEY not in record:
        return raw
    del record[KEY]
    end = b"\n" if raw.endswith(b"\n") else b""
    return orjson.dumps(record) + end


MAX_LAYERS = 64  # a transcript compressed again and again nests its archives


def restore(source: PathOrFile | list[bytes], *, only: str | None = None,
            archive_dir: str | None = None) -> bytes:
    """The original of a compressed transcript (a file, `-`, or its lines), byte for byte."""
    if isinstance(source, list):
        return b"".join(restore_layers(source, "<lines>", only=only, folder=archive_dir)[0])
    src = open_source(source)
    try:
        lines = list(iter_lines(src.stream, src.size))
    finally:
        src.close()
    return b"".join(restore_layers(lines, src.name, only=only, folder=archive_dir)[0])


def restore_layers(lines: list[bytes], path: str, *, only: str | None = None,
                   folder: str | None = None) -> tuple[list[bytes], int]:
    """The original lines and how many layers of compression were undone.

    Without `only`, every layer comes off: a transcript compressed twice comes
    back as it was before the first compress. With `only`, one item of the top
    layer is expanded and the rest stays compressed.
    """
    if only is not None:
        if only not in ids(lines):
            raise UsageError(f"{path}: no compressed item {only!r}",
                             "`ctxpack restore --list` shows the ids")
        return split_lines(restore_lines(lines, path, only=only, folder=folder)), 1
    layers = 0
    while _document_of(lines) is not None or any(meta_of(line) is not None for line in lines):
        if layers == MAX_LAYERS:
            raise InputError(path, None, f"more than {MAX_LAYERS} layers of compression")
        lines = split_lines(restore_lines(lines, path, folder=folder))
        layers += 1
    return lines, layers


def split_lines(chunks: Iterable[bytes]) -> list[bytes]:
    """Chunks (an archived span may hold many lines) as lines, each with its newline."""
    data = b"".join(chunks)
    lines = [piece + b"\n" for piece in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]  # what followed the last newline has none
    return lines if lines[-1] else lines[:-1]


def items(lines: list[bytes]) -> list[tuple[str, str, int, str]]:
    """(id, kind, line, what) for each compressed item of the top layer, in file order."""
    out: list[tuple[str, str, int, str]] = []
    doc = _document_of(lines)
    metas = [(1, doc)] if doc is not None else [(n, meta_of(raw)) for n, raw in
                                                enumerate(lines, 1)]
    for number, meta in metas:
        if meta is None or not isinstance(meta.get("archive"), dict):
            continue
        ref = meta["archive"]
        where = "inline" if ref.get("inline") else "dropped" if ref.get("dropped") \
            else f"in {ref.get('dir')}"
        what = f"{ref.get('bytes', 0):,} bytes {where}"
        if meta.get("kind") == "archived_summary":
            span = meta.get("range") or {}
            what = f"messages {span.get('start')}–{span.get('end')}, {what}"
        elif meta.get("items"):
            actions = sorted({str(i.get("action")) for i in meta["items"]})
            what = f"{'+'.join(actions)}, {what}"
        out.append((meta["id"], str(meta.get("kind")), number, what))
    return out

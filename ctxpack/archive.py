"""Where originals go when compress replaces them, and how they are read back.

Every line compress writes or changes carries a `ctxpack` object with an `id`;
one line of each id's group holds `archive`: the replaced original bytes inline
(zlib + base64, so nesting never multiplies escapes), or their sha256 in a
content-addressed `--archive-dir`. `ctxpack.restore` swaps each group back for its bytes.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import re
import stat
import tempfile
import zlib
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

from .atomic import temporary
from .errors import InputError, UsageError
from .jsonl import LineIndex, dumps, line_runs, loads
from .transcript import META_KEY as KEY
from .transcript import Record

MARK = b'"ctxpack"'  # a line without it was not written by compress: no need to parse it
BIG = 1 << 20  # a line this long is parsed without its inline archive's text (see meta_of)
DATA = b'"encoding":"zlib+base64","data":"'  # how compress writes an inline archive's text
VERSION = 1
SHA256 = re.compile(r"[0-9a-f]{64}")  # what names an archived original: its content
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


PIECE = 3 << 20  # compressed bytes read back from a spool at a time
BLOCK = 4 << 20  # an inline archive is compressed in blocks this big, side by side
LEVEL = 1  # the fastest level: text still shrinks to about 40%, at several times the speed

OUT = 4 << 20  # bytes of an original restored at a time
PIECE_CHARS = 4 << 20  # base64 characters decoded at a time (a multiple of 4)

try:  # ISA-L reads and writes the same zlib format several times as fast (and lets go of the GIL)
    from isal.isal_zlib import compress as deflate
    from isal.isal_zlib import decompressobj
    from isal.isal_zlib import error as _isal_error

    INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, _isal_error)
except ImportError:  # no wheel for this platform: the standard library's zlib
    from zlib import compress as deflate
    from zlib import decompressobj

    INFLATE_ERRORS = (zlib.error,)


@dataclass(frozen=True, slots=True)
class Archiver:
    """Archives originals inline (the default), in a folder, or not at all (`enabled` off)."""

    folder: str | None = None
    enabled: bool = True

    def pack(self, original: bytes) -> dict[str, Any]:
        """The `archive` object for `original`, storing it as configured."""
        packed = self.pack_stream([original])
        return packed.ref if packed.slot is None else {**packed.ref, "data": packed.text()}

    def pack_stream(self, blocks: Iterable[bytes]) -> Packed:
        """Archive an original given in blocks, in one pass, never holding it whole: it
        is hashed, and compressed into a temporary file (inline) or stored in the folder.

        Inline, each block becomes a zlib stream of its own, compressed on threads (zlib
        lets go of the GIL), and the streams follow one another."""
        sha = hashlib.sha256()
        size = 0

        def hashed(pieces: Iterable[bytes]) -> Iterator[bytes]:
            nonlocal size
            for piece in pieces:
                sha.update(piece)
                size += len(piece)
                yield piece

        blocks = hashed(blocks)
        if not self.enabled:
            deque(blocks, maxlen=0)  # hashed only
            return Packed({"sha256": sha.hexdigest(), "bytes": size, "inline": False,
                           "dropped": True})
        if self.folder is None:
            spool = tempfile.TemporaryFile()  # noqa: SIM115 - _spooled closes it
            try:
                _squeeze(blocks, spool)
            except BaseException:
                spool.close()
                raise
            return _inline_packed(sha.hexdigest(), size, _spooled(spool))
        try:
            Path(self.folder).mkdir(parents=True, exist_ok=True)
            with temporary(self.folder) as draft:
                for block in blocks:
                    draft.file.write(block)
                draft.file.flush()
                os.fsync(draft.file.fileno())
                path = blob_path(self.folder, sha.hexdigest())
                path.parent.mkdir(parents=True, exist_ok=True)
                with suppress(FileExistsError):  # content-addressed: it is there already
                    draft.publish(str(path), replace=False)
        except OSError as exc:
            raise UsageError(f"{self.folder}: cannot keep originals there: "
                             f"{exc.strerror or exc}", "see --archive-dir") from None
        return Packed({"sha256": sha.hexdigest(), "bytes": size, "inline": False,
                       "dir": self.folder})


def _inline_packed(sha256: str, size: int, streams: Iterator[bytes]) -> Packed:
    """An original archived inline: its zlib `streams`, base64-encoded when written."""
    slot = f"ctxpack-data-{os.urandom(12).hex()}"
    return Packed({"sha256": sha256, "bytes": size, "inline": True,
                   "encoding": "zlib+base64", "data": slot}, slot, streams)


def _spooled(spool: IO[bytes]) -> Iterator[bytes]:
    """The bytes written to `spool`, in pieces; it is closed after."""
    try:
        spool.seek(0)
        while chunk := spool.read(PIECE):
            yield chunk
    finally:
        spool.close()


def span_blocks(records: Sequence[Record], lo: int, hi: int) -> Iterator[bytes]:
    """The bytes of lines lo+1 .. hi (0-based [lo, hi)) in the blocks an inline archive
    compresses one by one: the file's runs of lines of about BLOCK bytes (a longer line
    alone), cut to the span, so that a span's streams do not depend on where it starts."""
    if isinstance(records, LineIndex):
        runs, read = records.blocks(BLOCK), records.chunks
    else:
        runs = list(line_runs(list(accumulate(len(r.raw) for r in records)), BLOCK))
        read = lambda a, b: (r.raw for r in records[a:b])  # noqa: E731
    for a, b in runs:
        a, b = max(a, lo), min(b, hi)
        if a < b:
            yield b"".join(read(a, b))


def _squeeze(blocks: Iterator[bytes], out: IO[bytes]) -> None:
    """Compress each block to a zlib stream of its own, on threads, written in order."""
    from functools import partial

    from .workers import on_threads

    for stream in on_threads(partial(deflate, level=LEVEL), blocks):
        out.write(stream)


def inflate_pieces(compressed: Iterable[bytes]) -> Iterator[bytes]:
    """The bytes of zlib streams that follow one another, given and made in pieces: no
    piece made is longer than OUT, however well a stream was compressed."""
    stream = decompressobj()
    begun = False  # the current stream has had input, so it must come to its end
    for data in compressed:
        while True:
            out = stream.decompress(data, OUT)
            begun = begun or bool(data)
            if out:
                yield out
            if stream.eof:
                data, stream, begun = stream.unused_data, decompressobj(), False
                if not data:
                    break
            elif stream.unconsumed_tail or len(out) == OUT:  # more is waiting
                data = stream.unconsumed_tail
            else:
                break
    if begun:
        raise zlib.error("incomplete zlib stream")


@dataclass
class Packed:
    """An archived original: its `archive` object and, when inline, the compressed bytes,
    which stand in the record as the string `slot` until written (see `splice`)."""

    ref: dict[str, Any]
    slot: str | None = None
    streams: Iterator[bytes] | None = None  # inline: the zlib streams, to be read once

    def pieces(self) -> Iterator[bytes]:
        """The base64 text of the compressed bytes, in pieces, once."""
        assert self.streams is not None
        yield from _base64(self.streams)

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


def _base64(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The base64 text of the bytes of `chunks`, a piece per chunk: each piece encodes a
    multiple of 3 bytes (no padding inside the text), the rest waits for the next chunk."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk if rest else chunk
        whole = len(data) - len(data) % 3
        if whole:
            yield base64.b64encode(memoryview(data)[:whole])
        rest = data[whole:]
    if rest:
        yield base64.b64encode(rest)


def blob_path(folder: str | os.PathLike[str], sha: str) -> Path:
    return Path(folder) / sha[:2] / sha


def item_id(kind: str, line: int, raw: bytes) -> str:
    """A stable id for what compress replaces at `line`: same input, same id."""
    digest = hashlib.sha256(b"%d:" % line)
    digest.update(raw)  # not `+ raw`: a line may be megabytes, better not copied
    return f"{kind}-{digest.hexdigest()[:10]}"


def reference(item_id: str) -> str:
    """How a marker in the text names an archived item: `ctxpack restore --only` takes the id."""
    return f"ctxpack:{item_id}"


def unpack(ref: dict[str, Any], where: str, folder: str | None = None) -> bytes:
    """The original bytes an `archive` object stands for, checked against its sha256."""
    return b"".join(unpack_pieces(ref, where, folder))


def unpack_pieces(ref: dict[str, Any], where: str, folder: str | None = None,
                  near: str | None = None) -> Iterator[bytes]:
    """The original bytes an `archive` object stands for, in pieces; the sha256 is
    checked once all are out, so a consumer must not keep them before the end.

    The archive is trusted no further than it can be checked: its sha256 must be one,
    and the original stops at the size it records (an archive that expands past it was
    crafted or damaged). An original kept in a folder is looked for in `folder` if given,
    else in the folder the archive names, and, if that is a relative path not found from
    here, in that path from `near` (the compressed file's folder: compress may have run
    there); only a regular file of that folder, named by its sha256, is read."""
    sha, size = ref.get("sha256"), ref.get("bytes")
    if ref.get("dropped"):
        raise InputError(where, None, "the original was not archived (compressed with "
                         "--no-archive); it cannot be restored")
    if not isinstance(sha, str) or not SHA256.fullmatch(sha) or type(size) is not int \
            or size < 0:
        raise InputError(where, None, "the archive is damaged (no sha256 and size)")
    digest = hashlib.sha256()
    left = size
    for piece in _inline(ref, where) if ref.get("inline") else _stored(sha, size, where,
                                                                         ref, folder, near):
        left -= len(piece)
        if left < 0:
            raise InputError(where, None, f"the archive holds more than the {size:,} bytes "
                             "it records (crafted or damaged); nothing was restored")
        digest.update(piece)
        yield piece
    if left or digest.hexdigest() != sha:
        raise InputError(where, None, "archived original does not match its sha256")


def _inline(ref: dict[str, Any], where: str) -> Iterator[bytes]:
    data = ref.get("data")  # a str, or bytes-like when read without parsing it
    if not isinstance(data, (str, bytes, memoryview)):
        raise InputError(where, None, "the inline archive is damaged")
    # whole quanta of base64 at a time: each slice decodes on its own
    decoded = (base64.b64decode(data[i:i + PIECE_CHARS], validate=True)
               for i in range(0, len(data), PIECE_CHARS))
    try:
        yield from inflate_pieces(decoded)
    except (ValueError, *INFLATE_ERRORS):  # binascii.Error is a ValueError
        raise InputError(where, None, "the inline archive is damaged") from None


def _stored(sha: str, size: int, where: str, ref: dict[str, Any], folder: str | None,
            near: str | None) -> Iterator[bytes]:
    base = folder or ref.get("dir")
    if not isinstance(base, str):
        raise InputError(where, None, "the archive names no folder; pass --archive-dir")
    bases = [base]
    if not folder and near is not None and not os.path.isabs(base) \
            and os.path.abspath(base) != os.path.abspath(os.path.join(near, base)):
        bases.append(os.path.join(near, base))
    fd = None
    for base in bases:
        try:  # not a link, and never waiting on a pipe: a regular file, or nothing
            fd = os.open(blob_path(base, sha), os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
            break
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError(where, None, f"archived original {sha[:12]} is a link, "
                                 "not a file") from None
    if fd is None:
        raise UsageError(f"{where}: archived original {sha[:12]} not found in "
                         f"{' nor in '.join(bases)}",
                         "pass the --archive-dir it was compressed with")
    with os.fdopen(fd, "rb") as blob:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(where, None, f"archived original {sha[:12]} is not a file")
        left = size + 1  # one byte more tells a file longer than recorded
        while left and (piece := blob.read(min(OUT, left))):
            left -= len(piece)
            yield piece


def document_meta(item: str, kind: str, now: str, changes: list[dict[str, Any]], raw: bytes,
                  archiver: Archiver) -> dict[str, Any]:
    """The `ctxpack` object of a record rewritten whole (a conversation, a JSON document)."""
    return {"id": item, "kind": kind, "version": VERSION, "compressed_at": now,
            "conversations": changes, "lines": 1, "archive": archiver.pack(raw)}


def meta_of(raw: bytes) -> dict[str, Any] | None:
    """The `ctxpack` object of a line, or None for a line compress did not write.

    A long line's inline archive is left out of the parse (as a str it would take as
    much memory again as the line): its `data` is then a view of `raw`."""
    if MARK not in raw:
        return None
    if len(raw) < BIG or (at := raw.find(DATA)) < 0 \
            or (end := raw.find(b'"', at + len(DATA))) < 0:
        return _parsed_meta(raw)
    start = at + len(DATA)
    meta = _parsed_meta(raw[:start] + raw[end:])
    ref = meta.get("archive") if meta is not None else None
    if not isinstance(ref, dict) or ref.get("data") != "":  # that text was not the archive
        return _parsed_meta(raw)
    ref["data"] = memoryview(raw)[start:end]
    return meta


def _parsed_meta(raw: bytes) -> dict[str, Any] | None:
    try:
        record = loads(raw)  # as it was read: compress writes what the readers took
    except ValueError:
        return None
    meta = record.get(KEY) if isinstance(record, dict) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("id"), str) else None


def strip(raw: bytes) -> bytes:
    """The line without its `ctxpack` object (for API-ready output)."""
    meta = meta_of(raw)
    if meta is None:
        return raw
    record = loads(raw)
    if not isinstance(record, dict) or KEY not in record:
        return raw
    del record[KEY]
    end = b"\n" if raw.endswith(b"\n") else b""
    return dumps(record) + end


def split_lines(chunks: Iterable[bytes]) -> list[bytes]:
    """Chunks (an archived span may hold many lines) as lines, each with its newline."""
    data = b"".join(chunks)
    lines = [piece + b"\n" for piece in data.split(b"\n")]
    lines[-1] = lines[-1][:-1]  # what followed the last newline has none
    return lines if lines[-1] else lines[:-1]

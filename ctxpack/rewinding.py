"""Rewind a transcript file: take its newest steps (or rounds) back out, whole tool calls
with their results, so that an agent that went down a wrong path resumes from before it.

The lines taken out go, with the last line kept, into the archive of that line's
`ctxpack` object: it is written again as it was, plus that object, so that `ctxpack
restore` puts back the lines byte for byte (see ctxpack.undo), and the agent, which
ignores the object as it does on every line compress writes, reads the context as it
was before those steps.

Where that line is one an earlier compress (or rewind) wrote as an item of its own, its
`ctxpack` object is replaced by the rewind's, whose archive holds the line as it was,
object and archive included: restore takes the rewind off, then that item, byte for
byte. A line that is one of several compress wrote as one item is refused (the item
would lose a line), and so is one whose `ctxpack` key is not compress's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .archive import VERSION, Archiver, item_id, meta_of, span_blocks
from .errors import JoinedSessions, UsageError
from .formats.base import naming
from .jsonl import dumps, loads
from .loader import PathOrFile, load
from .loop import rewind_point, steps_from
from .transcript import META_KEY, REWOUND, Transcript, compress_wrote

__all__ = ["Rewound", "rewind_file"]


@dataclass
class Rewound:
    """What a rewind did (`steps`, `messages_before` and `_after` of the context, the
    `lines` [first, last] taken out and the `id` restore --only takes) and the output,
    made as `chunks` is read."""

    path: str
    format: str
    id: str
    messages_before: int
    messages_after: int
    steps: int
    lines: tuple[int, int]
    chunks: Iterator[bytes]

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)


def rewind_file(source: PathOrFile, *, steps: int | None = None, rounds: int | None = None,
                to: int | None = None, to_round: int | None = None,
                format: str | None = None, skip_invalid: bool = False,
                archive_dir: str | None = None) -> Rewound:
    """Rewind a transcript file by `steps` steps, `rounds` rounds, to step `to` or to
    round `to_round` (see `rewind_point`); the input is not touched (the caller writes
    the output)."""
    from .compression import now_iso
    from .compression.reading import editor_of

    t = load(source, format, skip_invalid=skip_invalid)
    try:
        editor_of(t)  # a format compress cannot write is one rewind cannot either
    except JoinedSessions:
        raise  # (a format it writes, but not a file of many sessions: that says so)
    except UsageError:
        raise UsageError(f"{t.path}: rewind cannot write {t.format} files",
                         naming("`ctxpack convert FILE --to openai -o run.jsonl`, then "
                                "`ctxpack rewind run.jsonl`, rewinds it as Chat Completions "
                                "messages", t.path)) from None
    cut = rewind_point(t.messages, steps=steps, rounds=rounds, to=to, to_round=to_round,
                       name=t.path)
    first = min(t.messages[cut].lines)
    kept_last = max((n for m in t.messages[:cut] for n in m.lines), default=0)
    if kept_last >= first:
        raise UsageError(f"{t.path}: rewind takes out whole lines, and in {t.format} files "
                         "the steps kept and those taken out share a record",
                         "`ctxpack convert` to openai, then rewind that")
    anchor, record, earlier = _anchor(t, first)
    records = t.records
    raw = records[anchor - 1].raw
    archiver = Archiver(archive_dir)
    packed = archiver.pack_stream(span_blocks(records, anchor - 1, len(records)))
    ident = item_id("w", anchor, raw)
    steps_out = steps_from(t.messages, cut)
    meta = {"id": ident, "kind": REWOUND, "version": VERSION, "rewound_at": now_iso(),
            "range": {"start": cut, "end": len(t.messages)}, "original_count": len(t.messages),
            "new_count": cut, "lines": 1, "archive": packed.ref}
    if compress_wrote(earlier):  # it stays compress's line
        meta["over"] = earlier.get("over", earlier.get("kind"))
        meta.update({k: earlier[k] for k in ("not_in_file_tokens", "billed_slope",
                                             "converted_slope", "billed_model")
                     if k in earlier})
    line = dumps({**record, META_KEY: meta}) + raw[len(raw.rstrip(b"\r\n")):]  # its ending

    def chunks() -> Iterator[bytes]:
        for r in records[: anchor - 1]:
            yield r.raw
        yield from packed.splice(line) if packed.slot else [line]

    return Rewound(t.path, t.format, ident, len(t.messages), cut, steps_out,
                   (anchor + 1, len(records)), chunks())


def _anchor(t: Transcript,
            first: int) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
    """The line whose `ctxpack` object holds the archive of what is taken out: the last
    line before line `first` (blank lines between go into the archive too), its record
    as parsed, and the `ctxpack` object an earlier compress wrote on it (or None)."""
    records = t.records
    n = first - 1
    while n >= 1 and not records[n - 1].raw.strip():
        n -= 1
    if n < 1:
        raise UsageError(f"{t.path}: nothing would be left", "rewind fewer steps")
    raw = records[n - 1].raw
    try:
        value: Any = loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise UsageError(f"{t.path}:{n}: the line before the steps taken out is no JSON "
                         "object, so it cannot hold their archive", "rewind another number "
                         "of steps")
    if META_KEY not in value:
        return n, value, None
    meta = meta_of(raw)
    if meta is None:  # a key of that name the line had of its own: it would be lost
        raise UsageError(f"{t.path}:{n}: the line before the steps taken out has a "
                         f"`{META_KEY}` key of its own, which the archive would replace",
                         "rewind another number of steps")
    if not isinstance(meta.get("archive"), dict) or meta.get("lines", 1) != 1:
        raise UsageError(f"{t.path}:{n}: the line before the steps taken out is one of the "
                         f"lines compress wrote as one item ({meta.get('id')})",
                         "rewind another number of steps, or restore the file first")
    return n, value, meta

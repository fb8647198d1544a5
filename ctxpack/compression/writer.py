"""Turn a compress plan into the output lines: the input's lines, some replaced.

A line the plan does not touch is written as read. Every new or changed line
carries a `ctxpack` object; one line of each group holds the archive of the
input lines the group replaced, so `restore` can put them back byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson

from ..archive import VERSION, Archiver, Packed, item_id, meta_of, span_blocks
from ..archive import strip as strip_line
from ..formats.base import Compaction
from ..jsonl import LineIndex, dumps
from ..transcript import META_KEY, Message, Record
from .plan import Plan
from .region import OBSERVATIONS
from .summary import span_start


def span_lines(plan: Plan) -> tuple[int, int]:
    """The first and last line (1-based) of the span that the plan's summary replaces,
    and its archive holds."""
    s = plan.summary
    assert s is not None
    region = plan.read.messages[s.head:s.end]
    first = span_start(plan, s.head) or min(line for m in region for line in m.lines)
    last = max(line for m in region for line in m.lines)
    return _whole_groups(plan.read.transcript.records, first, last)


def output(plan: Plan, archiver: Archiver, now: str, strip: bool = False) -> Iterator[bytes]:
    """The compressed file in pieces: whole lines, but for the summary record, whose
    inline archive comes in pieces (see `Packed.splice`). With `strip`, records come
    without their `ctxpack` object, and so without the archive."""
    read = plan.read
    records = read.transcript.records
    assert isinstance(records, LineIndex)
    first = last = 0
    group: list[dict[str, Any]] = []
    packed = None
    if plan.summary is not None:
        first, last, group, packed = _compaction(plan, Archiver(enabled=False) if strip
                                                 else archiver, now)
    edited: dict[int, dict[str, Any]] = {}
    items: dict[int, list[dict[str, Any]]] = {}
    ids: dict[int, str] = {}
    for i in plan.edited:
        line = read.messages[i].line
        if first <= line <= last:
            continue  # archived with the region
        ids[line] = read.line_id(i)
        edited[line] = read.editor.with_results(_parse(records[line - 1].raw), plan.texts(i))
        items[line] = [e.item for e in plan.edits_of(i)]
    # lines re-pointed at the summary, which go back with it (`restore --only`)
    follows = next((r[META_KEY]["id"] for r in group if META_KEY in r), None)
    relinked = dict.fromkeys(_relink(plan, group, first, last, edited) if group else (),
                             follows)
    finish = strip_line if strip else _same
    yield from _lines(records.span(0, max(first - 1, 0)), edited, items, ids, relinked,
                      archiver, finish)
    for record in group:
        line = dumps(record) + b"\n"
        if strip:
            yield strip_line(line)
        elif packed is not None and packed.slot and packed.slot.encode() in line:
            yield from packed.splice(line)
        else:
            yield line
    yield from _lines(records.span(last, len(records)), edited, items, ids, relinked,
                      archiver, finish)


def _same(line: bytes) -> bytes:
    return line


def _lines(records: Iterable[Record], edited: dict[int, dict[str, Any]],
           items: dict[int, list[dict[str, Any]]], ids: dict[int, str],
           relinked: dict[int, str | None], archiver: Archiver,
           finish: Callable[[bytes], bytes]) -> Iterator[bytes]:
    """Records as read, but the edited ones, each with the archive of what it was;
    `relinked`: lines re-pointed at a summary, and that summary's id."""
    for record in records:
        n, raw = record.line, record.raw
        if n not in edited:
            yield finish(raw)
            continue
        kind = OBSERVATIONS if n in items else "relinked"
        meta: dict[str, Any] = {"id": ids[n] if n in ids else item_id("r", n, raw),
                                "kind": kind, "version": VERSION}
        if n in items:
            meta["items"] = items[n]
        if n in relinked and n in items:
            meta["relinked"] = True
        if relinked.get(n):
            meta["follows"] = relinked[n]
        meta.update(lines=1, archive=archiver.pack(raw))
        yield finish(dumps({**edited[n], META_KEY: meta}) + _eol(raw))


def _compaction(plan: Plan, archiver: Archiver, now: str
                ) -> tuple[int, int, list[dict[str, Any]], Packed]:
    """The span of lines the summary replaces, the records that replace it, and the
    archive of the span (read and packed in one pass)."""
    s, read = plan.summary, plan.read
    assert s is not None
    records = read.transcript.records
    assert isinstance(records, LineIndex)
    first, last = span_lines(plan)
    packed = archiver.pack_stream(span_blocks(records, first - 1, last))
    sid = item_id("s", first, bytes.fromhex(packed.ref["sha256"]))
    editor, messages = read.editor, read.messages
    head = [m for m in messages[: s.head] if not editor.keeps_place(m)] \
        if editor.resets else []
    meta: dict[str, Any] = {
        "id": sid, "kind": "archived_summary", "version": VERSION, "compressed_at": now,
        "strategy": s.strategy, "range": {"start": s.start, "end": s.end},
        "original_count": len(messages),
        "new_count": len(messages) - (s.end - s.start) + (0 if s.merged else 1),
        "original_tokens": read.total, "archived_tokens": s.archived_tokens,
        "summary_tokens": s.tokens, "tokens_after": plan.total,
    }
    if s.strategy == "llm" and s.llm:
        meta["llm"] = llm_meta(s.llm)
    before = _parse(records[first - 2].raw) if first > 1 else None
    merge = messages[s.head - 1].raw if s.merged else None
    c = Compaction(s.text, meta, {"id": sid, "kind": "part"}, _head_records(plan, head),
                   before if isinstance(before, dict) else None, merge,
                   tokens_before=meta["original_tokens"], time=now, seed=sid)
    group = editor.compaction(c)
    meta.update(lines=len(group), archive=packed.ref)  # the record holds `meta`
    return first, last, group, packed


def llm_meta(outcome: dict[str, Any]) -> dict[str, Any]:
    """What a summary's metadata says of the model that wrote it (what it cost is in the
    report: the same answers, from the cache or not, give the same output)."""
    return {k: outcome[k] for k in ("model", "per_step")}


def _whole_groups(records: list[Record], first: int, last: int) -> tuple[int, int]:
    """Widen a span so that it never splits the lines of an earlier compress's item
    (its boundary record before the head, say): restore needs each group whole."""
    def group(line: int) -> str | None:
        meta = meta_of(records[line - 1].raw) if 1 <= line <= len(records) else None
        return meta["id"] if meta else None

    while first > 1 and group(first) is not None and group(first - 1) == group(first):
        first -= 1
    while last < len(records) and group(last) is not None and group(last + 1) == group(last):
        last += 1
    return first, last


def _head_records(plan: Plan, head: list[Message]) -> list[dict[str, Any]]:
    records = plan.read.transcript.records
    out: list[dict[str, Any]] = []
    for m in head:
        if len(m.lines) == 1 and isinstance(m.raw, dict):
            out.append(m.raw)
        else:
            out += [_parse(records[line - 1].raw) for line in m.lines]
    return out


def _relink(plan: Plan, group: list[dict[str, Any]], first: int, last: int,
            edited: dict[int, dict[str, Any]]) -> set[int]:
    """Re-point later records whose parent was in the span to the summary record."""
    target = next((r.get("uuid") for r in group if r.get(META_KEY, {}).get("kind")
                   == "archived_summary"), None)
    if not isinstance(target, str):
        return set()
    records = plan.read.transcript.records
    assert isinstance(records, LineIndex)
    kept = {r.get("uuid") for r in group}
    removed = set()
    for record in records.span(first - 1, last):
        if b'"uuid"' in record.raw:
            uuid = _parse(record.raw).get("uuid")
            if isinstance(uuid, str) and uuid not in kept:
                removed.add(uuid)
    out = set()
    for record in records.span(last, len(records)):
        if b'"parentUuid"' not in record.raw:
            continue
        n = record.line
        new = plan.read.editor.relink(edited.get(n) or _parse(record.raw), removed, target)
        if new is not None:
            edited[n] = new
            out.add(n)
    return out


def _parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return {}


def _eol(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return b"\r\n"
    return b"\n" if raw.endswith(b"\n") else b""


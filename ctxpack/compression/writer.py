"""Turn a compress plan into the output: the input's records, some replaced.

`changes` works out which records change; `output` writes the file, where a line the
plan does not touch is written as read, and every new or changed line carries a
`ctxpack` object (one line of each group holds the archive of the input lines the group
replaced, so `restore` can put them back byte for byte); `records_out` gives records
that were given as values back as values, API-ready.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, NamedTuple

from ..archive import VERSION, Archiver, Packed, item_id, meta_of, span_blocks
from ..archive import strip as strip_line
from ..calibration import Bill, Call
from ..formats.base import Compaction
from ..jsonl import BOM, LineIndex, ParsedRecords, dumps, loads
from ..transcript import META_KEY, Message, Record
from .plan import Plan
from .region import OBSERVATIONS
from .summary import head_lines


def span_lines(plan: Plan) -> tuple[int, int]:
    """The first and last line (1-based) of the span that the plan's summary replaces,
    and its archive holds."""
    s = plan.summary
    assert s is not None
    found = head_lines(plan, s.head)
    assert found is not None, "the summary's region ends where the head can be written again"
    lines = [*found[0], *(line for m in plan.read.messages[s.head:s.end] for line in m.lines)]
    return _whole_groups(plan.read.transcript.records, min(lines), max(lines))


@dataclass
class Changes:
    """What the output changes of the input's records: the span of lines [first, last]
    (1-based; none when first is 0) the `group` stands for, the archive of the span, and
    the lines written anew: `edited` (their records), `items` (what was done to their
    outputs), `ids`, `relinked` (re-pointed at the summary whose id it gives) and
    `resized` (their usage restated for the smaller context: see `_resize`)."""

    first: int = 0
    last: int = 0
    group: list[dict[str, Any]] = field(default_factory=list)
    packed: Packed | None = None
    edited: dict[int, dict[str, Any]] = field(default_factory=dict)
    items: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    ids: dict[int, str] = field(default_factory=dict)
    relinked: dict[int, str | None] = field(default_factory=dict)
    resized: set[int] = field(default_factory=set)
    summary: str | None = None  # the id of the summary's group, if any
    # what the file's calls showed is sent besides the messages, and the slope the bill
    # was of (`carried_meta`), for every line it writes
    billing: dict[str, Any] = field(default_factory=dict)

    def meta(self, n: int, raw: bytes, archiver: Archiver) -> dict[str, Any]:
        """The `ctxpack` object of edited line n, whose bytes were `raw`: it archives them
        (made as the line is written, so that only one is held at a time)."""
        kind = OBSERVATIONS if n in self.items else "relinked" if n in self.relinked \
            else "usage"
        meta: dict[str, Any] = {"id": self.ids.get(n) or item_id("r", n, raw),
                                "kind": kind, "version": VERSION}
        if n in self.items:
            meta["items"] = self.items[n]
        if n in self.relinked and n in self.items:
            meta["relinked"] = True
        if n in self.resized and kind != "usage":
            meta["usage"] = True
        follows = self.relinked.get(n) or (self.summary if n in self.resized else None)
        if follows:
            meta["follows"] = follows
        return {**meta, **self.billing, "lines": 1, "archive": archiver.pack(raw)}


def carried(bill: Bill) -> int | None:
    """What the recorded calls of a file showed is sent besides its messages, for the
    lines compress writes to say: the calls they keep were of the context before (see
    loader.Scanner._stale_calls). (Of calls all far below the count, the table's overhead
    the bill took instead: see `Bill.below`; of calls made only before the newest
    compaction, what they measured: see `Bill.earlier`.)"""
    return bill.unlogged if bill.kind == "anchored" or bill.below or bill.earlier else None


def carried_call(bill: Bill) -> Call | None:
    """The call that stands for `bill` once the calls it rests on are no longer of the
    context (None where it carries nothing: see `carried`): billed what is sent besides
    the messages, at the slope of the bill's line (the file's own, which its calls, no
    longer of the context, cannot show again; written as is, not rounded: JSON reads a
    float back the same, and the report prices what compress kept at this very slope,
    where a rounded one would put stats of the output a token off wherever the count ×
    the rounding crosses a half), hidden output converted at the slope the bill
    converted it at (`Bill.converted`: the output counts what compress kept as compress
    counted it). A compressed file's lines carry it
    (`carried_meta`), as does a Context whose messages the call was of."""
    known = carried(bill)
    return None if known is None else \
        Call(0, known, None, None, slope=bill.slope, converted=bill.converted)


def carried_meta(bill: Bill, model: str | None) -> dict[str, Any]:
    """What the lines compress writes say of the bill, so that stats of the output bills
    as compress's report did: `carried_call` of `bill` (loader reads it back: see
    Scanner._stale_calls), where it carries one; and (a summary's, a record's written
    whole) the model the file names (`model`), which the replies kept may no longer name
    (Claude Code keeps only `<synthetic>` ones where every real reply is summarized)."""
    call = carried_call(bill)
    meta: dict[str, Any] = {} if call is None else {"not_in_file_tokens": call.billed,
                                                    "billed_slope": call.slope,
                                                    "converted_slope": call.converted}
    if model:
        meta["billed_model"] = model
    return meta


def changes(plan: Plan, archiver: Archiver, now: str) -> Changes:
    """The records that change, and how: the summary's span and group (archived as
    `archiver` says), the lines whose outputs are replaced and those re-pointed at it."""
    read = plan.read
    records = read.transcript.records
    out = Changes(billing=carried_meta(read.bill, None))
    if plan.summary is not None:
        out.first, out.last, out.group, out.packed = _compaction(plan, archiver, now)
    for i in plan.edited:
        line = read.messages[i].line
        if out.first <= line <= out.last:
            continue  # archived with the region
        out.ids[line] = read.line_id(i)
        out.edited[line] = read.editor.with_results(_data(records, line), plan.texts(i))
        out.items[line] = [e.item for e in plan.edits_of(i)]
    # lines re-pointed at the summary, which go back with it (`restore --only`)
    follows = next((r[META_KEY]["id"] for r in out.group if META_KEY in r), None)
    out.relinked = dict.fromkeys(_relink(plan, out) if out.group else (), follows)
    out.resized, out.summary = _resize(plan, out), follows  # restated usage goes back too
    return out


def output(plans: Sequence[Plan], archiver: Archiver, now: str,
           strip: bool = False) -> Iterator[bytes]:
    """The compressed file in pieces: whole lines, but for each summary record, whose
    inline archive comes in pieces (see `Packed.splice`). `plans` are of the file's
    conversations (most files have one; each run of a Gemini CLI stream is its own), their
    lines apart. With `strip`, records come without their `ctxpack` object, and so
    without the archive."""
    records = plans[0].read.transcript.records
    archiver = Archiver(enabled=False) if strip else archiver
    dones = sorted((changes(plan, archiver, now) for plan in plans), key=lambda d: d.first)
    finish = strip_line if strip else _same
    at = 0  # the last line written
    for done in dones:
        if not done.first:
            continue  # nothing summarized: only its edited lines change
        yield from (finish(line) for line in _lines(_span(records, at, done.first - 1),
                                                    dones, archiver))
        for record in done.group:
            line = dumps(record) + b"\n"
            if strip:
                yield strip_line(line)
            elif done.packed is not None and done.packed.slot and done.packed.slot.encode() in line:
                yield from done.packed.splice(line)
            else:
                yield line
        at = done.last
    yield from (finish(line) for line in _lines(_span(records, at, len(records)), dones,
                                                archiver))


def keeping_bom(records: Sequence[Record], chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The output `chunks`, opening with the byte order mark the input opens with, where
    compress rewrote its first line or the whole document (written without one)."""
    chunks = iter(chunks)
    if len(records) and records[0].raw.startswith(BOM):
        for chunk in chunks:
            if chunk:
                yield chunk if chunk.startswith(BOM) else BOM + chunk
                break
    yield from chunks


def records_out(plan: Plan, now: str) -> list[Any]:
    """The compressed records as values, without `ctxpack` objects (and so without the
    archive): for records that were given as values (see `ParsedRecords`)."""
    records = plan.read.transcript.records
    done = changes(plan, Archiver(enabled=False), now)

    def bare(n: int) -> Any:
        value = done.edited.get(n) or _data(records, n)
        return {k: v for k, v in value.items() if k != META_KEY} \
            if isinstance(value, dict) and META_KEY in value else value

    before = [bare(n) for n in range(1, max(done.first, 1))]
    group = [{k: v for k, v in r.items() if k != META_KEY} for r in done.group]
    return [*before, *group, *(bare(n) for n in range(done.last + 1, len(records) + 1))]


def _same(line: bytes) -> bytes:
    return line


def _lines(records: Iterable[Record], dones: Sequence[Changes],
           archiver: Archiver) -> Iterator[bytes]:
    """Records as read, but the edited ones, each with the `ctxpack` object that holds
    the archive of what it was."""
    for record in records:
        n, raw = record.line, record.raw
        done = next((d for d in dones if n in d.edited), None)
        if done is not None:
            yield dumps({**done.edited[n], META_KEY: done.meta(n, raw, archiver)}) + _eol(raw)
        else:
            yield raw


def _span(records: Sequence[Record], lo: int, hi: int) -> Iterator[Record]:
    """The records of lines lo+1 .. hi, read in large blocks when they are a file's."""
    return records.span(lo, hi) if isinstance(records, LineIndex) else iter(records[lo:hi])


def _data(records: Sequence[Record], line: int) -> Any:
    """The record at `line` as a value: given so, or parsed from its bytes."""
    if isinstance(records, ParsedRecords):
        return records.value(line - 1)
    return _parse(records[line - 1].raw)


def _compaction(plan: Plan, archiver: Archiver, now: str
                ) -> tuple[int, int, list[dict[str, Any]], Packed]:
    """The span of lines the summary replaces, the records that replace it, and the
    archive of the span (read and packed in one pass)."""
    s, read = plan.summary, plan.read
    assert s is not None
    records = read.transcript.records
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
        "new_count": len(messages) - s.removed,
        "original_tokens": read.total, "archived_tokens": s.archived_tokens,
        "summary_tokens": s.tokens, "tokens_after": plan.total,
    }
    meta.update(carried_meta(read.bill, read.transcript.model))
    if s.strategy == "llm" and s.llm:
        meta["llm"] = llm_meta(s.llm)
    before = _data(records, first - 1) if first > 1 else None
    merge = messages[s.head - 1].raw if s.merged else None
    kept = [r for r in _records(records, first - 1, last, editor.keeps_mark) if editor.keeps(r)]
    usage = _stated(plan, last)
    context = Shrink(plan, first).context(last + 1, *(usage or (0, 0)))
    c = Compaction(s.text, meta, {"id": sid, "kind": "part"}, _head_records(plan, head),
                   before if isinstance(before, dict) else None, merge,
                   tokens_before=read.bill(meta["original_tokens"]), time=now, seed=sid,
                   kept=kept, tokens_after=plan.billed,
                   usage=_data(records, usage[0]) if usage else None, context=context)
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
    written: set[int] = set()  # (the turns the alternation joined share their line: once)
    for m in head:
        lines = [line for line in m.lines if line not in written]
        written.update(lines)
        if lines and len(m.lines) == 1 and isinstance(m.raw, dict):
            out.append(m.raw)
        else:
            out += [_data(records, line) for line in lines]
    return out


def _relink(plan: Plan, done: Changes) -> set[int]:
    """Re-point later records whose parent was in the span to the summary record (they
    join `done.edited`); the lines re-pointed."""
    target = next((r.get("uuid") for r in done.group if r.get(META_KEY, {}).get("kind")
                   == "archived_summary"), None)
    if not isinstance(target, str):
        return set()
    records = plan.read.transcript.records
    kept = {r.get("uuid") for r in done.group}
    removed = set()
    for record in _span(records, done.first - 1, done.last):
        if b'"uuid"' in record.raw:
            uuid = _data(records, record.line).get("uuid")
            if isinstance(uuid, str) and uuid not in kept:
                removed.add(uuid)
    out = set()
    for record in _span(records, done.last, len(records)):
        if b'"parentUuid"' not in record.raw:
            continue
        n = record.line
        new = plan.read.editor.relink(done.edited.get(n) or _data(records, n), removed, target)
        if new is not None:
            done.edited[n] = new
            out.add(n)
    return out


class Shrink:
    """How much smaller the context before a line of the file is after the plan: every
    context message wholly before it counts as planned, not as read; the summary counts
    at the first line of the span it replaces (`first`, 0 for none). What is taken out is
    restated at the slope of the file's bill (`slope`), as compress's report bills it."""

    def __init__(self, plan: Plan, first: int) -> None:
        s, read = plan.summary, plan.read
        self.slope = read.bill.slope
        points: list[tuple[int, int, int]] = []  # (last line, tokens read, tokens planned)
        for j, (m, count) in enumerate(zip(read.messages, read.counts, strict=True)):
            archived = s is not None and s.start <= j < s.end
            points.append((max(m.lines, default=0), count.total,
                           0 if archived else plan.counts[j]))
        if s is not None:
            points.append((first, 0, s.tokens))
        points.sort()
        self.lines = [p[0] for p in points]
        self.read = [0, *accumulate(p[1] for p in points)]
        self.planned = [0, *accumulate(p[2] for p in points)]

    def before(self, line: int) -> tuple[int, int]:
        """(tokens read, tokens planned) of the context before `line`."""
        k = bisect_left(self.lines, line)
        return self.read[k], self.planned[k]

    def context(self, line: int, at: int, stated: int) -> int:
        """The context before `line` after the plan, in the agent's terms: what a record
        at line `at` stated (0: nothing stated) less what the plan took out before it, in
        the provider's tokens as the bill has them (the slope × ctxpack's count: usage is
        billed tokens, and compress's report and stats of its output bill the context so;
        what the agent sends and ctxpack does not count, its system prompt and tools say,
        stays), and never less than what ctxpack's own count of it bills at that slope —
        nor more than was stated:
        compress only takes out (a file whose agent sent less than ctxpack counts, having
        cut old outputs itself, is not made to look larger)."""
        read, planned = self.before(at)
        taken = round(self.slope * (read - planned))
        return min(stated, max(round(self.slope * self.before(line)[1]), stated - taken))


class _Restated(NamedTuple):
    """A call `_resize` restated last: its key (`Editor.call`), the size its record stated
    and the line it was first stated on (where its pieces, or its event told again, are
    restated as of), and what the next call has cached: this call's restated size, or 0
    for the call the summary's group restated (the summary is a new prompt)."""

    key: str | None
    stated: int
    line: int
    next_cached: int


def _resize(plan: Plan, done: Changes) -> set[int]:
    """Restate the usage of records after the first change for the smaller context (they
    join `done.edited`, each, its size changed or not); the lines restated. Records of
    the span are archived, and the summary's group states the size at its end itself."""
    editor, records = plan.read.editor, plan.read.transcript.records
    if not editor.usage_mark or not plan.changed:
        return set()
    start = min([plan.read.messages[i].line for i in plan.edited] + [done.first or 1 << 62])
    shrink = Shrink(plan, done.first)
    context = {n for m in plan.read.messages for n in m.lines} \
        if editor.usage_on_messages else None
    out: set[int] = set()
    cached = 0  # what the call restated now has cached
    call: _Restated | None = None
    usage = _stated(plan, done.last) if done.first else None
    if usage is not None and usage[0] >= done.first:
        # the call the summary's group restated (the span's last statement of a size): told
        # of again after the span (Codex's event written before and after its reply), it
        # is restated as the group has it; the call after it has nothing cached (the
        # summary is a new prompt)
        value = _data(records, usage[0])
        call = _Restated(editor.call(value) if isinstance(value, dict) else None, usage[1],
                         usage[0], next_cached=0)
    for record in _span(records, start - 1, len(records)):
        n = record.line
        if done.first <= n <= done.last or editor.usage_mark not in record.raw \
                or (context is not None and n not in context):
            continue
        value = done.edited.get(n) or _data(records, n)
        stated = editor.recorded(value) if isinstance(value, dict) else None
        if stated is None:
            continue
        key = editor.call(value)
        # a call stated again is restated as of its first record, with the same cache:
        # each piece of a Claude Code response (its output grown on later ones), or
        # Codex's event written twice (CLI 0.60: one before the reply, one after it)
        if call is not None and (key == call.key if key is not None else stated == call.stated):
            at = call.line
        else:
            cached, at = call.next_cached if call is not None else 0, n
        new = shrink.context(at, at, stated)
        call = _Restated(key, stated, at, next_cached=new)
        # written anew even where the size stands (a usage at or below ctxpack's count,
        # made up, that the bill passed over): each call kept was made on the context
        # before, and a reader takes a call after the last line compress wrote for one
        # made since (see loader.Scanner._stale_calls)
        done.edited[n] = editor.resized(value, new, min(cached, new)) if new != stated \
            else value
        out.add(n)
    return out


def _stated(plan: Plan, end: int) -> tuple[int, int] | None:
    """(line, tokens) of the last record up to line `end` that states the context's
    size, or None."""
    editor, records = plan.read.editor, plan.read.transcript.records
    if not editor.usage_mark:
        return None
    for n in range(end, 0, -1):
        raw = records[n - 1].raw
        if editor.usage_mark in raw:
            value = _data(records, n)
            stated = editor.recorded(value) if isinstance(value, dict) else None
            if stated is not None:
                return n, stated
    return None


def _records(records: Sequence[Record], lo: int, hi: int, marks: tuple[bytes, ...]
             ) -> Iterator[dict[str, Any]]:
    """The records of lines lo+1 .. hi whose bytes hold one of `marks`, as values."""
    if not marks:
        return
    found = re.compile(b"|".join(map(re.escape, marks))).search  # one pass over each line
    for record in _span(records, lo, hi):
        if found(record.raw):
            value = _data(records, record.line)
            if isinstance(value, dict):
                yield value


def _parse(raw: bytes) -> Any:
    try:
        return loads(raw)  # as the reader took it (NaN, lone surrogates, deep nesting)
    except ValueError:
        return {}  # a line skipped as invalid


def _eol(raw: bytes) -> bytes:
    if raw.endswith(b"\r\n"):
        return b"\r\n"
    return b"\n" if raw.endswith(b"\n") else b""


"""Compress for files that hold whole conversations in one record: a JSON document
(.traj, tau-bench runs) or one `{"messages": [...]}` conversation per line.

Each conversation is its own prompt, so each is compressed on its own; its record
is then written again with the new message list and one `ctxpack` object that
archives the record as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..archive import Archiver, document_meta, item_id, split_lines
from ..formats.json_messages import conversations, messages_of
from ..jsonl import ParsedRecords, dumps, loads, parse_document
from ..transcript import META_KEY, Transcript
from .plan import Plan, Summary
from .writer import carried_meta, llm_meta

Planner = Callable[[list[int], str], Plan]  # a conversation's message indexes and id -> plan


def compress_records(t: Transcript, planner: Planner, archiver: Archiver, now: str,
                     strip: bool) -> tuple[list[bytes], list[Plan]]:
    """The output lines and the plan of each conversation."""
    groups = conversation_indexes(t)
    if t.format == "json-messages":
        return _document(t, groups, planner, archiver, now, strip)
    out: list[bytes] = []
    plans = []
    by_line = {t.messages[ms[0]].line: ms for ms in groups.values()}
    for record in t.records:
        indexes = by_line.get(record.line)
        if indexes is None:
            out.append(record.raw)
            continue
        raw = record.raw
        plan = planner(indexes, item_id("c", record.line, raw))
        plans.append(plan)
        if not plan.changed:
            out.append(raw)
            continue
        data = loads(raw)
        data["messages"] = _new_list(data["messages"], plan)
        if not strip:
            data[META_KEY] = _meta(plan, archiver, raw, now)
        out.append(dumps(data) + (b"\n" if raw.endswith(b"\n") else b""))
    return out, plans


def conversations_out(t: Transcript, planner: Planner) -> tuple[list[Any], list[Plan]]:
    """For records given as values (a list of `{"messages": [...]}` conversations): the
    records compressed, as values without `ctxpack` objects — a conversation that does
    not change is the very object given, one that does keeps the message dicts it keeps —
    and the plan of each conversation."""
    assert isinstance(t.records, ParsedRecords)
    records = t.records
    by_line = {t.messages[ms[0]].line: ms for ms in conversation_indexes(t).values()}
    out: list[Any] = []
    plans = []
    for n in range(len(records)):
        value, indexes = records.value(n), by_line.get(n + 1)
        if indexes is None:
            out.append(value)
            continue
        plan = planner(indexes, item_id("c", n + 1, records[n].raw))
        plans.append(plan)
        out.append({**value, "messages": _new_list(value["messages"], plan)}
                   if plan.changed else value)
    return out, plans


def apart(t: Transcript, groups: dict[int, list[int]]) -> bool:
    """Do the conversations' messages lie in line ranges of their own (none between the
    first and last line of another)?"""
    spans = sorted((min(t.messages[i].line for i in g), max(t.messages[i].lines[-1] for i in g))
                   for g in groups.values())
    return all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))


def conversation_indexes(t: Transcript) -> dict[int, list[int]]:
    """The indexes of each conversation's messages, by conversation."""
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(t.messages):
        groups.setdefault(m.conversation, []).append(i)
    return groups


def _document(t: Transcript, groups: dict[int, list[int]], planner: Planner,
              archiver: Archiver, now: str, strip: bool) -> tuple[list[bytes], list[Plan]]:
    raw = b"".join(r.raw for r in t.records)
    doc = parse_document(raw, t.path, 1)
    ident = item_id("d", 1, raw)
    plans = [planner(groups[k], ident) for k in sorted(groups)]
    if not any(p.changed for p in plans):
        return [r.raw for r in t.records], plans
    lists = conversations(doc)
    for k, plan in zip(sorted(groups), plans, strict=True):
        lists[k][:] = _new_list(lists[k], plan)
    if not strip:
        holder = doc if isinstance(doc, dict) else doc[0]
        if not isinstance(holder, dict):
            from ..errors import UsageError

            raise UsageError(f"{t.path}: a bare list of messages has no place for the archive",
                             "pass --strip-metadata to write it without one")
        holder[META_KEY] = _meta_document(plans, archiver, raw, now)
    text = dumps(doc, indent=2 if b"\n" in raw.strip() else None)  # one line stays one
    return split_lines([text, b"\n" if raw.endswith(b"\n") else b""]), plans


def _new_list(items: list[Any], plan: Plan) -> list[Any]:
    """A conversation's message dicts with the plan applied; other entries stay put."""
    model = messages_of(items)
    index = {id(d): i for i, d in enumerate(model)}
    s: Summary | None = plan.summary
    out: list[Any] = []
    for d in items:
        i = index.get(id(d))
        if i is None:
            out.append(d)
        elif s is not None and s.start <= i < s.end:
            if i == s.start:
                out.append({"role": "user", "content": s.text})
        elif plan.edits_of(i):
            out.append(plan.read.editor.with_results(d, plan.texts(i)))
        else:
            out.append(d)
    return out


def _meta(plan: Plan, archiver: Archiver, raw: bytes, now: str) -> dict[str, Any]:
    return {**document_meta(plan.read.item or "", "conversation", now, [_changes(plan)], raw,
                            archiver), **_billing(plan)}


def _meta_document(plans: list[Plan], archiver: Archiver, raw: bytes,
                   now: str) -> dict[str, Any]:
    done = [_changes(p) for p in plans if p.changed]
    return {**document_meta(plans[0].read.item or "", "document", now, done, raw, archiver),
            **_billing(plans[0])}


def _billing(plan: Plan) -> dict[str, Any]:
    """What the record says of the file's bill (one for all its conversations), as the
    lines compress writes in other formats say it (`writer.carried_meta`)."""
    return carried_meta(plan.read.bill, plan.read.transcript.model)


def _changes(plan: Plan) -> dict[str, Any]:
    """What changed in one conversation, for the record's `ctxpack` object."""
    s = plan.summary
    n = len(plan.read.messages)
    out: dict[str, Any] = {"items": [e.item for i in plan.edited for e in plan.edits_of(i)]}
    if s is not None:
        out.update(kind="archived_summary", strategy=s.strategy,
                   range={"start": s.start, "end": s.end}, original_count=n,
                   new_count=n - s.removed,
                   archived_tokens=s.archived_tokens, summary_tokens=s.tokens)
        if s.strategy == "llm" and s.llm:
            out["llm"] = llm_meta(s.llm)
    out["original_tokens"] = plan.read.total
    out["tokens_after"] = plan.total
    return out


"""Compress for files that hold whole conversations in one record: a JSON document
(.traj, tau-bench runs) or one `{"messages": [...]}` conversation per line.

Each conversation is its own prompt, so each is compressed on its own; its record
is then written again with the new message list and one `ctxpack` object that
archives the record as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from ..archive import Archiver, document_meta, item_id, split_lines
from ..formats.json_messages import NOT_INPUT_ROLES, conversations
from ..jsonl import parse_document
from ..transcript import META_KEY, Transcript
from .pipeline import Summary, Work
from .writer import llm_meta

Plan = Callable[[list[int], str], Work]  # a conversation's message indexes and id -> plan


def compress_records(t: Transcript, plan: Plan, archiver: Archiver, now: str,
                     strip: bool) -> tuple[list[bytes], list[Work]]:
    """The output lines and the plan of each conversation."""
    groups: dict[int, list[int]] = {}
    for i, m in enumerate(t.messages):
        groups.setdefault(m.conversation, []).append(i)
    if t.format == "json-messages":
        return _document(t, groups, plan, archiver, now, strip)
    out: list[bytes] = []
    works = []
    by_line = {t.messages[ms[0]].line: ms for ms in groups.values()}
    for record in t.records:
        indexes = by_line.get(record.line)
        if indexes is None:
            out.append(record.raw)
            continue
        raw = record.raw
        work = plan(indexes, item_id("c", record.line, raw))
        works.append(work)
        if not _changed(work):
            out.append(raw)
            continue
        data = orjson.loads(raw)
        data["messages"] = _new_list(data["messages"], work)
        if not strip:
            data[META_KEY] = _meta(work, archiver, raw, now)
        out.append(orjson.dumps(data) + (b"\n" if raw.endswith(b"\n") else b""))
    return out, works


def _document(t: Transcript, groups: dict[int, list[int]], plan: Plan, archiver: Archiver,
              now: str, strip: bool) -> tuple[list[bytes], list[Work]]:
    raw = b"".join(r.raw for r in t.records)
    doc = parse_document(raw, t.path, 1)
    ident = item_id("d", 1, raw)
    works = [plan(groups[k], ident) for k in sorted(groups)]
    if not any(_changed(w) for w in works):
        return [r.raw for r in t.records], works
    lists = conversations(doc)
    for k, work in zip(sorted(groups), works, strict=True):
        lists[k][:] = _new_list(lists[k], work)
    if not strip:
        holder = doc if isinstance(doc, dict) else doc[0]
        if not isinstance(holder, dict):
            from ..errors import UsageError

            raise UsageError(f"{t.path}: a bare list of messages has no place for the archive",
                             "pass --strip-metadata to write it without one")
        holder[META_KEY] = _meta_document(works, archiver, raw, now)
    text = json.dumps(doc, indent=2, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return split_lines([text, b"\n" if raw.endswith(b"\n") else b""]), works


def _changed(work: Work) -> bool:
    return bool(work.texts) or work.summary is not None


def _new_list(items: list[Any], work: Work) -> list[Any]:
    """A conversation's message dicts with the plan applied; other entries stay put."""
    model = [d for d in items if isinstance(d, dict) and d.get("role") not in NOT_INPUT_ROLES]
    index = {id(d): i for i, d in enumerate(model)}
    s: Summary | None = work.summary
    out: list[Any] = []
    for d in items:
        i = index.get(id(d))
        if i is None:
            out.append(d)
        elif s is not None and s.start <= i < s.end:
            if i == s.start:
                out.append({"role": "user", "content": s.text})
        elif i in work.texts:
            out.append(work.editor.with_results(d, work.texts[i]))
        else:
            out.append(d)
    return out


def _meta(work: Work, archiver: Archiver, raw: bytes, now: str) -> dict[str, Any]:
    return document_meta(work.item or "", "conversation", now, [_summary(work)], raw, archiver)


def _meta_document(works: list[Work], archiver: Archiver, raw: bytes,
                   now: str) -> dict[str, Any]:
    done = [_summary(w) for w in works if _changed(w)]
    return document_meta(works[0].item or "", "document", now, done, raw, archiver)


def _summary(work: Work) -> dict[str, Any]:
    """What changed in one conversation, for the record's `ctxpack` object."""
    s = work.summary
    out: dict[str, Any] = {"items": [x for items in work.items.values() for x in items]}
    if s is not None:
        out.update(kind="archived_summary", strategy=s.strategy,
                   range={"start": s.start, "end": s.end}, original_count=len(work.messages),
                   new_count=len(work.messages) - (s.end - s.start) + 1,
                   archived_tokens=s.archived_tokens, summary_tokens=s.tokens)
        if s.strategy == "llm" and s.llm:
            out["llm"] = llm_meta(s.llm)
    out["original_tokens"] = work.steps[0].tokens_before if work.steps else work.total
    out["tokens_after"] = work.total
    return out


"""The compress pipeline: truncate big outputs, mask old ones, summarize old history.

The plan is made on the model-visible messages (`Work`); `writer` then turns it
into the input's lines with the planned ones replaced. Token counts are kept per
message as the plan changes them, so the report's numbers are the output's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..archive import reference
from ..bulk import BulkCounter
from ..errors import CannotFit
from ..formats.base import META_KEY, Editor
from ..model import Message, Text, ToolResult, Transcript
from ..tokens import REPLY_PRIMING, MessageCount, TokenCounter
from . import units as cutting
from .mask import is_masked, placeholder
from .options import Options
from .truncate import MARKER, truncate


@dataclass
class StepReport:
    """What one step of the pipeline did: tokens of the whole context before and after."""

    name: str
    tokens_before: int
    tokens_after: int
    items: int = 0
    note: str = ""


@dataclass
class Summary:
    """The summary a compress wrote, and the region of context messages it replaces."""

    text: str
    start: int  # first archived context message (index)
    end: int  # first kept message after the region
    head: int  # messages before `head` are kept as the task
    archived_tokens: int
    tokens: int
    message: Message = field(repr=False, default_factory=lambda: Message("user", []))
    merged: bool = False  # joined into the head's last user message
    retention: dict[str, Any] = field(default_factory=dict)


@dataclass
class Work:
    """The plan: the messages as they will be, their counts, and what changed where."""

    transcript: Transcript
    counter: TokenCounter
    editor: Editor
    options: Options
    messages: list[Message]
    counts: list[int]
    texts: dict[int, dict[str | None, str]] = field(default_factory=dict)
    items: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    summary: Summary | None = None
    steps: list[StepReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    item: str | None = None  # set where a record holds whole conversations: the id of all
    # its changes, as the record is written again whole

    @property
    def total(self) -> int:
        if self.summary is None:
            return sum(self.counts) + REPLY_PRIMING
        s = self.summary
        kept = sum(self.counts[: s.head]) + sum(self.counts[s.end:])
        if s.merged:
            kept -= self.counts[s.head - 1]
        return kept + s.tokens + REPLY_PRIMING


def count_all(counter: TokenCounter, messages: list[Message]) -> list[int]:
    """Tokens of each message, counted in bulk (persistent cache, worker processes)."""
    counts = [0] * len(messages)

    def fill(i: int, count: MessageCount) -> None:
        counts[i] = count.total

    bulk: BulkCounter[int] = BulkCounter(counter, fill, persistent=True)
    try:
        for i, m in enumerate(messages):
            bulk.add(counter.plan(m, bulk.need), i)
        bulk.finish()
    finally:
        bulk.close()
    return counts


def item_id(kind: str, line: int, raw: bytes) -> str:
    """A stable id for what compress replaces at `line`: same input, same id."""
    return f"{kind}-{hashlib.sha256(b'%d:' % line + raw).hexdigest()[:10]}"


def line_id(work: Work, i: int, kind: str = "o") -> str:
    """The id the marker of message i's outputs names: its line's, or the whole record's."""
    if work.item is not None:
        return work.item
    m = work.messages[i]
    return item_id(kind, m.line, work.transcript.records[m.line - 1].raw)


def _result_message(m: Message) -> bool:
    return m.role != "assistant" and bool(m.tool_results) and len(m.lines) == 1


def _done(m: Message) -> dict[str | None, set[str]]:
    """What earlier compress runs did to each result of a message."""
    meta = m.raw.get(META_KEY) if isinstance(m.raw, dict) else None
    out: dict[str | None, set[str]] = {}
    for item in (meta or {}).get("items") or ():
        out.setdefault(item.get("call_id"), set()).add(item.get("action"))
    return out


def _set_result(work: Work, i: int, result: ToolResult, text: str, item: dict[str, Any]) -> None:
    m = work.messages[i]
    parts = [ToolResult(p.call_id, (Text(text),), p.is_error) if p is result else p
             for p in m.parts]
    work.messages[i] = replace(m, parts=parts)
    work.counts[i] = work.counter.message(work.messages[i]).total
    work.texts.setdefault(i, {})[result.call_id] = text
    items = work.items.setdefault(i, [])
    items[:] = [x for x in items if x.get("call_id") != result.call_id] + [item]


def truncate_outputs(work: Work) -> int:
    """Step 1: cut every tool output over the limits; returns how many were cut."""
    n = 0
    for i, m in enumerate(work.messages):
        if not _result_message(m) or _done(m):
            continue  # an output compress wrote is within the limits already
        for result in m.tool_results:
            if not result.parts or not all(isinstance(p, Text) for p in result.parts) \
                    or MARKER in result.text:
                continue
            cut = truncate(result.text, work.options.limits, work.counter.text,
                           reference(line_id(work, i)))
            if cut is None:
                continue
            _set_result(work, i, result, cut.text, {
                "call_id": result.call_id, "action": "truncated",
                "tokens_before": cut.tokens_before, "tokens_after": cut.tokens_after,
                "lines_cut": cut.lines_cut})
            n += 1
    return n


def mask_outputs(work: Work, allowed: list[int]) -> int:
    """Step 2: outputs older than the last K steps become a one-line placeholder."""
    keep = work.options.keep_observations
    steps = [u for u in cutting.units(work.messages, allowed, 0) if u.step]
    if len(steps) <= keep:
        return 0
    old_end = steps[-keep].start if keep else len(work.messages)
    calls = {c.id: c for m in work.messages for c in m.tool_calls if c.id is not None}
    original = work.transcript.messages
    n = 0
    for i in range(old_end):
        m = work.messages[i]
        if not _result_message(m):
            continue
        done = _done(m)
        for result, first in zip(m.tool_results, original[i].tool_results, strict=True):
            if "masked" in done.get(result.call_id, ()) or is_masked(result.text):
                continue
            tokens = work.counter.part(first)
            call = calls.get(result.call_id) if result.call_id else None
            lines = first.text.count("\n") + 1
            # decided on a fixed id: ids follow line numbers, which a compress shifts
            probe = placeholder(call, tokens, lines, "o-0000000000", result.is_error)
            if work.counter.text(probe) >= work.counter.part(result):
                continue  # the placeholder would not be smaller
            text = placeholder(call, tokens, lines, line_id(work, i), result.is_error)
            _set_result(work, i, result, text, {
                "call_id": result.call_id, "action": "masked", "tokens_before": tokens,
                "tokens_after": work.counter.text(text)})
            n += 1
    return n


def run(transcript: Transcript, counter: TokenCounter, editor: Editor, options: Options,
        summarize: Callable[[Work, list[int]], Summary | None], item: str | None = None) -> Work:
    """Plan the whole compression; raises CannotFit when no plan fits the limit."""
    work = Work(transcript, counter, editor, options, list(transcript.messages),
                count_all(counter, transcript.messages), item=item)
    allowed = cutting.cuts(work.messages)
    for name, enabled, step in (
        ("truncate", options.truncate, lambda: truncate_outputs(work)),
        ("mask", options.mask, lambda: mask_outputs(work, allowed)),
    ):
        before = work.total
        if enabled:
            items = step()
            work.steps.append(StepReport(name, before, work.total, items))
    before = work.total
    if options.summarize and before > trigger(work):
        work.summary = summarize(work, allowed)
        note = "" if work.summary else "no region could be archived"
        items = work.summary.end - work.summary.start if work.summary else 0
        work.steps.append(StepReport("summarize", before, work.total, items, note))
    check_fits(work)
    return work


def window(work: Work) -> int:
    return work.counter.info.context_window


def trigger(work: Work) -> int:
    """Summarize above this: `--budget`, else threshold × the context window."""
    o = work.options
    return min(o.budget, window(work)) if o.budget else int(o.threshold * window(work))


def target(work: Work) -> int:
    """Summarize down to this: `--target`, else half the window (never above the trigger)."""
    return work.options.target or min(window(work) // 2, trigger(work))


def limit(work: Work) -> int:
    """The output must not pass this: the explicit budget, else the model's window."""
    return min(work.options.budget or window(work), window(work))


def check_fits(work: Work) -> None:
    total, most = work.total, limit(work)
    if total <= most:
        if total > target(work) and work.summary is not None:
            work.warnings.append(f"the output ({total:,} tokens) is above the target "
                                 f"({target(work):,}); the newest steps it keeps are large")
        return
    what = "budget" if work.options.budget else f"context window of {work.counter.model}"
    s = work.summary
    head = sum(work.counts[: s.head]) if s else 0
    parts = [f"the system prompt and task take {head:,}"] if s else []
    if s:
        parts.append(f"the summary {s.tokens:,}")
    parts.append(f"the newest message {work.counts[-1] if work.counts else 0:,}")
    raise CannotFit(
        f"cannot fit the {what} ({most:,} tokens): the best compression leaves {total:,} "
        f"tokens ({', '.join(parts)})",
        "raise --budget, pick a model with a larger window, or lower the truncate limits")


def summary_units(work: Work, start: int, end: int) -> tuple[list[Any], str | None]:
    """The region's units for a summarizer, and the body of an earlier summary in it."""
    from .summarize import HEADING, Unit

    previous: str | None = None
    for m in work.messages[:start]:
        previous = _summary_text(m, HEADING) or previous
    out = []
    for u in cutting.units(work.messages, cutting.cuts(work.messages), start):
        if u.start >= end:
            break
        group = work.messages[u.start:u.end]
        if len(group) == 1 and (text := _summary_text(group[0], HEADING)):
            previous = text
            continue
        calls = tuple(c for m in group for c in m.tool_calls)
        results = tuple(r for i in range(u.start, u.end)
                        for r in work.transcript.messages[i].tool_results)
        texts = [p.text for m in group if m.role == "assistant" or not m.tool_results
                 for p in m.parts if isinstance(p, Text)]
        role = "assistant" if u.step else group[0].role
        out.append(Unit(role, "\n".join(texts), calls, results, u.human))
    return out, previous


def _summary_text(m: Message, heading: str) -> str | None:
    for p in m.parts:
        if isinstance(p, Text) and p.text.startswith(heading):
            return p.text
    return None


def region_text(units: list[Any]) -> str:
    """All the text of archived units, for the retention audit."""
    out = []
    for u in units:
        out.append(u.text)
        out += [f"{c.name} {c.arguments}" for c in u.calls]
        out += [r.text for r in u.results]
    return "\n".join(out)


"""Step 3: choose the old history to archive and summarize it into one message.

The kept head (system prompts, the task) and the newest units stay; the region
between becomes the summary. The region ends at the earliest cut that brings the
context under the target, never keeping fewer than `--keep-steps` / `--keep-rounds`;
if that is still over the limit, more of the newest units are archived too.
"""

from __future__ import annotations

from typing import Any

from ..model import SUMMARY_HEADING as HEADING
from ..model import Message, Text
from . import units as cutting
from .pipeline import Summary, Work, limit, region_text, summary_units, target

OVERHEAD = 8  # a message's framing around the summary text, with room to spare


def summarizer(name: str) -> Any:
    """The summarizer called `name`."""
    if name == "structured":
        from .summarize.structured import StructuredSummarizer

        return StructuredSummarizer()
    from .summarize.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def summarize(work: Work, allowed: list[int]) -> Summary | None:
    """Archive the oldest region that must go; None when nothing can be archived."""
    head = cutting.head_end(work.messages, allowed)
    ends = _ends(work, allowed, head)
    if not ends:
        return None
    floor = _floor(work, allowed, head)
    reserve = min(work.options.max_summary_tokens, target(work) // 4) + OVERHEAD
    suffix = _suffix_sums(work.counts)
    fixed = sum(work.counts[:head])
    first = next((c for c in ends if fixed + reserve + suffix[c] <= target(work)), ends[-1])
    start = min(first, floor)
    chosen = None
    for end in (c for c in ends if c >= start or c == ends[-1]):
        chosen = build(work, head, end)
        total = work_total(work, chosen)
        if total <= target(work) or (end >= floor and total <= limit(work)):
            break  # later ends archive more: the first that fits is the one
    return chosen


def _ends(work: Work, allowed: list[int], head: int) -> list[int]:
    """Cuts that can end the region: its lines all before the kept tail's lines."""
    from .writer import span_start

    if work.item is not None:  # the record is written whole: any cut will do
        return [c for c in allowed if head < c < len(work.messages)]
    if span_start(work, head) is None:
        return []
    tail_min = [0] * (len(work.messages) + 1)
    tail_min[-1] = 1 << 62
    for i in range(len(work.messages) - 1, -1, -1):
        tail_min[i] = min(tail_min[i + 1], min(work.messages[i].lines, default=1 << 62))
    out, last = [], 0
    bounds = set(allowed)
    for i in range(head, len(work.messages)):
        last = max(last, max(work.messages[i].lines, default=0))
        end = i + 1
        if end in bounds and end < len(work.messages) and last < tail_min[end]:
            out.append(end)
    return out


def build(work: Work, head: int, end: int) -> Summary:
    """The summary of messages [head, end) with its token counts."""
    from .facts import extract, retention

    units, previous = summary_units(work, head, end)
    from .summarize import Region

    strategy = summarizer(work.options.strategy)
    text = strategy.summarize(Region(tuple(units), previous), work.options.max_summary_tokens,
                              work.counter.text)
    merged = work.editor.alternates and head > 0 and work.messages[head - 1].role == "user"
    message = _message(work, head, text, merged)
    audit = retention(extract(region_text(units)), text)
    return Summary(text, head, end, head, sum(work.counts[head:end]),
                   work.counter.message(message).total, message, merged,
                   {k: {"total": v.total, "kept": v.kept, "dropped": list(v.dropped)}
                    for k, v in audit.items()})


def _message(work: Work, head: int, text: str, merged: bool) -> Message:
    if not merged:
        return Message("user", [Text(text)])
    base = work.messages[head - 1]
    kept = [p for p in base.parts if not (isinstance(p, Text) and p.text.startswith(HEADING))]
    return Message("user", [*kept, Text(text)])


def work_total(work: Work, summary: Summary) -> int:
    saved, work.summary = work.summary, summary
    try:
        return work.total
    finally:
        work.summary = saved


def _suffix_sums(counts: list[int]) -> list[int]:
    out = [0] * (len(counts) + 1)
    for i in range(len(counts) - 1, -1, -1):
        out[i] = out[i + 1] + counts[i]
    return out


def _floor(work: Work, allowed: list[int], head: int) -> int:
    """The latest end that still keeps the newest steps and rounds the options ask for."""
    found = cutting.units(work.messages, allowed, head)
    end = len(work.messages)
    steps = [u for u in found if u.step][-work.options.keep_steps:] if work.options.keep_steps \
        else []
    rounds = [u for u in found if u.human][-work.options.keep_rounds:] \
        if work.options.keep_rounds else []
    for u in (*steps[:1], *rounds[:1]):
        end = min(end, u.start)
    return end

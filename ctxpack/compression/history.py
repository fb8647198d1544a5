"""Step 3: choose the old history to archive and summarize it into one message.

The kept head (system prompts, the task) and the newest units stay; the region
between becomes the summary. The region ends at the earliest cut that brings the
context under the target, never keeping fewer than `--keep-steps` / `--keep-rounds`;
if that is still over the limit, more of the newest units are archived too.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

from ..transcript import SUMMARY_HEADING as HEADING
from ..transcript import Message, Text
from . import units as cutting
from .pipeline import Summary, Work, limit, target
from .region import summary_region, summary_text, whole_units
from .summarizers import Region, Unit
from .summarizers._layout import CONDENSED
from .writer import span_lines

OVERHEAD = 8  # a message's framing around the summary text, with room to spare


def summarizer(name: str) -> Any:
    """The summarizer called `name`; for `llm`, the extractive one that sizes the region
    (and stands in if the model fails: see `_by_llm`)."""
    if name == "structured":
        from .summarizers.structured import StructuredSummarizer

        return StructuredSummarizer()
    from .summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def summarize(work: Work) -> Summary | None:
    """Archive the oldest region that must go; None when nothing can be archived.

    The region ends at the first cut where the rest and its summary are under the target;
    or, from the floor on (the newest steps asked for kept), under the limit, the summary
    condensed to the room left if it must be, before any kept step is archived."""
    head = cutting.head_end(work.messages, work.allowed)
    ends = _ends(work, head)
    if not ends:
        return None
    floor = _floor(work, head)
    start = _first_end(work, head, ends, floor)
    if work.ahead is not None:  # with the span the archive of the first region tried holds
        first, last = span_lines(work, head, start)
        work.ahead.collect((first - 1, last))
    suffix = _suffix_sums(work.counts)
    fixed = _fixed(work, head)
    cap = _caps(work, head)
    chosen = None
    for end in (c for c in ends if c >= start or c == ends[-1]):
        chosen = build(work, head, end, cap(end), cap(end))
        total = work_total(work, chosen)
        if total <= target(work):
            break  # later ends archive more: the first that fits is the one
        if end >= floor or end == ends[-1]:
            if total > limit(work):
                room = limit(work) - fixed - suffix[end]
                chosen = build(work, head, end, max(1, min(cap(end), room)), cap(end))
            if work_total(work, chosen) <= limit(work):
                break
    if chosen is not None and chosen.max_tokens < chosen.cap and CONDENSED in chosen.text:
        chosen.squeezed = True
        what = "budget" if work.options.budget else "context window"
        work.warnings.append(
            f"the {what} leaves the summary {chosen.max_tokens:,} tokens (it could take "
            f"{chosen.cap:,}): it is condensed more than it would be")
    if chosen is not None and work.options.strategy == "llm":
        chosen = _by_llm(work, chosen)
    return chosen


def _first_end(work: Work, head: int, ends: list[int], floor: int) -> int:
    """The first end worth trying: where the rest, and a summary given its reserve, are
    under the target; never after the floor."""
    reserve = min(work.options.max_summary_tokens, target(work) // 4)
    suffix = _suffix_sums(work.counts)
    fixed = _fixed(work, head)
    first = next((c for c in ends if fixed + reserve + suffix[c] <= target(work)), ends[-1])
    return min(first, floor)


def likely_whole(work: Work) -> tuple[Unit, ...]:
    """The units a summary of `work` would read whole if its region ended where the
    counts as they are now say it does (see `compress.ahead`)."""
    head = cutting.head_end(work.messages, work.allowed)
    ends = _ends(work, head)
    if not ends:
        return ()
    return whole_units(work, head,
                       _first_end(work, head, ends, _floor(work, head)))


def _fixed(work: Work, head: int) -> int:
    """What the output holds whatever is archived: the kept head, and a message's framing."""
    return sum(work.counts[:head]) + OVERHEAD


def _by_llm(work: Work, chosen: Summary) -> Summary:
    """The model's summary of the region the extractive one was sized for, given the
    room that one left under the same bound; the extractive one if the model fails."""
    from .summarizers.llm import Failed, LLMSummarizer

    if work.dry_run:
        chosen.llm = {"used": False, "fallback": None, "note": "dry run: nothing was sent"}
        return chosen
    total = work_total(work, chosen)
    bound = target(work) if total <= target(work) else limit(work)
    framing = chosen.tokens - work.counter.text(chosen.text)
    room = min(chosen.max_tokens, bound - (total - chosen.tokens) - framing)
    info = work.counter.table.find(work.options.llm_model)
    llm = LLMSummarizer(work.options, info.context_window if info else None, work.cache)
    try:
        text = llm.summarize(chosen.region, room, work.counter.text)
    except Failed as exc:
        work.warnings.append(f"the llm summarizer failed: {exc}; the extractive summary "
                             "is used instead")
        chosen.llm = {**llm.outcome.to_dict(), "used": False, "fallback": str(exc)}
        return chosen
    made = _made(work, chosen.region, chosen.audited, chosen.head, chosen.end, text, room,
                 chosen.cap, "llm")
    made.llm = {**llm.outcome.to_dict(), "used": True, "fallback": None}
    made.squeezed = chosen.squeezed  # given the room the squeezed one had
    return made


def _caps(work: Work, head: int) -> Callable[[int], int]:
    """For a region [head, end), the most tokens its summary may take: max_summary_tokens,
    and a `summary_ratio`-th of what it archives as read, where an earlier summary it
    continues counts whole (it is made small already, and never shrinks by merging)."""
    earlier = [0] * (len(work.messages) + 1)  # prefix sums: earlier summaries' tokens
    archived = [0] * (len(work.messages) + 1)  # and the other messages' from `head` on
    for i, m in enumerate(work.messages):
        text = summary_text(m)
        earlier[i + 1] = earlier[i] + (work.counter.text(text) if text is not None else 0)
        archived[i + 1] = archived[i] + (work.base[i].total if text is None and i >= head
                                         else 0)
    most, ratio = work.options.max_summary_tokens, work.options.summary_ratio
    return lambda end: max(1, min(most, earlier[end] + archived[end] // ratio))


def _ends(work: Work, head: int) -> list[int]:
    """Cuts that can end the region: its lines all before the kept tail's lines."""
    from .writer import span_start

    if work.item is not None:  # the record is written whole: any cut will do
        return [c for c in work.allowed if head < c < len(work.messages)]
    if span_start(work, head) is None:
        return []
    messages = work.messages
    never = 1 << 62
    # the first line of messages i.. (at i), and the last line of messages head..i
    tail_min = [*accumulate(reversed([min(m.lines, default=never) for m in messages]), min)]
    tail_min.reverse()
    last = accumulate((max(m.lines, default=0) for m in messages[head:]), max)
    bounds = set(work.allowed)
    return [end for end, seen in zip(range(head + 1, len(messages)), last, strict=False)
            if end in bounds and seen < tail_min[end]]


def build(work: Work, head: int, end: int, max_tokens: int, cap: int) -> Summary:
    """The summary of messages [head, end), condensed to `max_tokens` if it can be, with
    its token counts (`cap`: what its caps would allow)."""
    region, audited = summary_region(work, head, end)
    strategy = summarizer(work.options.strategy)
    text = strategy.summarize(region, max_tokens, work.counter.text)
    return _made(work, region, audited, head, end, text, max_tokens, cap, strategy.name)


def _made(work: Work, region: Region, audited: int, head: int, end: int, text: str,
          max_tokens: int, cap: int, strategy: str) -> Summary:
    """The Summary of messages [head, end) whose text is `text`, with its counts and its
    retention audit."""
    from .facts import merge, retention
    from .summarizers._steps import unit_facts

    merged = work.editor.alternates and head > 0 and work.messages[head - 1].role == "user"
    message = _message(work, head, text, merged)
    audit = retention(merge(*(unit_facts(u) for u in region.units)), text)
    return Summary(text, head, end, head, sum(work.counts[head:end]),
                   work.counter.message(message).total, message, merged,
                   {k: {"total": v.total, "kept": v.kept, "dropped": list(v.dropped)}
                    for k, v in audit.items()}, audited, max_tokens, cap,
                   sum(c.total for c in work.base[head:end]), strategy=strategy,
                   region=region)


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


def _floor(work: Work, head: int) -> int:
    """The latest end that still keeps the newest steps and rounds the options ask for."""
    found = work.units(head)
    end = len(work.messages)
    steps = [u for u in found if u.step][-work.options.keep_steps:] if work.options.keep_steps \
        else []
    rounds = [u for u in found if u.human][-work.options.keep_rounds:] \
        if work.options.keep_rounds else []
    for u in (*steps[:1], *rounds[:1]):
        end = min(end, u.start)
    return end

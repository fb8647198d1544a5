"""The summary message: where its region may end, how big it may be, and how it is made.

A summary stands for messages [head, end): the kept head (system prompts, the task) stays
before it and the newest units after it. The stages that choose `end` (`summarizing`,
`limit`) size candidates with `draft`; the report audits the one chosen (`retention_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate, islice
from typing import Any
from weakref import WeakKeyDictionary

from ..tokens import REPLY_PRIMING
from ..transcript import SUMMARY_HEADING as HEADING
from ..transcript import Message, Text
from .audit import retention
from .facts import merge
from .plan import Plan, Summary
from .reading import Input
from .region import bare_sizes, summary_region, summary_text, whole_texts
from .summarizers import Region
from .summarizers._digest import piece_facts

OVERHEAD = 8  # a message's framing around the summary text, with room to spare
# A summary given room for M tokens that must be condensed comes out within a line or so
# of M; over the samples and the corpus none came out under LOW * M - SLACK (see
# `least_total` and BENCHMARKS.md).
LOW, SLACK = 0.9, 64


def summarizer(name: str) -> Any:
    """The offline summarizer called `name`; the extractive one also sizes the region an
    `llm` summary is asked for (see `rewriting`)."""
    if name == "structured":
        from .summarizers.structured import StructuredSummarizer

        return StructuredSummarizer()
    from .summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def draft(plan: Plan, end: int, max_tokens: int, cap: int) -> Summary:
    """The summary of messages [head, end), condensed to `max_tokens` if it can be, with
    its token counts (`cap`: what its caps would allow); not audited yet."""
    head = plan.read.head
    region, audited = summary_region(plan, head, end)
    strategy = summarizer(plan.options.strategy)
    text = strategy.write(region, max_tokens, plan.read.counter.text)
    return made(plan, region, audited, end, text, max_tokens, cap, strategy.name)


def made(plan: Plan, region: Region, audited: int, end: int, text: str, max_tokens: int,
         cap: int, strategy: str) -> Summary:
    """The Summary of messages [head, end) whose text is `text`, with its counts."""
    read, head = plan.read, plan.read.head
    merged = merges(plan)
    message = _message(plan, head, text, merged)
    return Summary(text, head, end, head, read.counter.message(message).total, message,
                   region, archived_tokens=plan.tokens(head, end),
                   read_tokens=sum(c.total for c in read.counts[head:end]), merged=merged,
                   audited=audited, max_tokens=max_tokens, cap=cap, strategy=strategy)


def retention_of(summary: Summary) -> dict[str, dict[str, Any]]:
    """The retention audit of the summary a plan chose: which facts of the pieces it read
    whole it still shows verbatim, by kind."""
    found = retention(merge(*(piece_facts(p) for p in summary.region.pieces)), summary.text)
    return {k: {"total": v.total, "kept": v.kept, "dropped": list(v.dropped)}
            for k, v in found.items()}


def merges(plan: Plan) -> bool:
    """Does the summary join the head's last message (formats whose roles alternate)?"""
    read, head = plan.read, plan.read.head
    return read.editor.alternates and head > 0 and read.messages[head - 1].role == "user"


def least_total(plan: Plan) -> Callable[[int, int], float]:
    """For a region [head, end) and its summary's `max_tokens`, a low estimate of the plan's
    total: what it keeps, and a summary that shows every unit's bare line or, where those
    pass `max_tokens`, is condensed to near it. (A merged summary's message holds its text.)"""
    from bisect import bisect_right

    head, n = plan.read.head, len(plan.read.messages)
    kept = plan.tokens(0, head) - (plan.counts[head - 1] if merges(plan) else 0) + REPLY_PRIMING
    ends_at, shown = bare_sizes(plan, head)

    def total(end: int, max_tokens: int) -> float:
        at = bisect_right(ends_at, end) - 1
        least = min(shown[at] if at >= 0 else 0, max_tokens)
        return kept + plan.tokens(end, n) + LOW * least - SLACK

    return total


def _message(plan: Plan, head: int, text: str, merged: bool) -> Message:
    if not merged:
        return Message("user", (Text(text),))
    base = plan.read.messages[head - 1]
    kept = [p for p in base.parts if not (isinstance(p, Text) and p.text.startswith(HEADING))]
    # (a turn the alternation joined to the one before pays no message's overhead: nor
    # does it with the summary in it, written into the same line)
    return Message("user", (*kept, Text(text)), joined=base.joined, split=base.split)


def ends(plan: Plan) -> list[int]:
    """Cuts that can end the region: its lines all before the kept tail's lines. They
    depend on the input alone: found once for each."""
    found = _ENDS.get(plan.read)
    if found is None:
        found = _ENDS[plan.read] = _ends(plan)
    return found


_ENDS: WeakKeyDictionary[Input, list[int]] = WeakKeyDictionary()


def _ends(plan: Plan) -> list[int]:
    read, head = plan.read, plan.read.head
    messages = read.messages
    if read.item is not None:  # the record is written whole: any cut will do
        return [c for c in read.cuts if head < c < len(messages)]
    found = head_lines(plan, head)
    if found is None:
        return []
    moved, stays = found
    never = 1 << 62
    # the first line of messages i.. (at i); the first and last line the span holds when
    # the region is messages head..i (the head's lines written again, and the region's)
    tail_min = [*accumulate(reversed([min(m.lines, default=never) for m in messages]), min)]
    tail_min.reverse()
    region = messages[head:]
    first = accumulate((min(m.lines, default=never) for m in region), min,
                       initial=min(moved, default=never))
    last = accumulate((max(m.lines, default=0) for m in region), max,
                      initial=max(moved, default=0))
    before = max(stays, default=0)
    bounds = set(read.cuts)
    return [end for end, lo, hi in zip(range(head + 1, len(messages)), islice(first, 1, None),
                                       islice(last, 1, None), strict=False)
            if end in bounds and before < lo and hi < tail_min[end]]


def head_lines(plan: Plan, head: int) -> tuple[list[int], list[int]] | None:
    """The lines of the head's messages that the summary's group writes again, and those
    that stay where they are; None when the head cannot be written again.

    Formats with a reset marker write the head again after it (but what keeps its place,
    as Codex's system prompt); formats that alternate roles rewrite the user message the
    summary joins. Whatever a file's order, the span of lines the summary replaces holds
    the lines it writes again, and the lines that stay must come before it."""
    editor, messages = plan.read.editor, plan.read.messages[:head]
    if editor.resets:
        moved = [line for m in messages if not editor.keeps_place(m) for line in m.lines]
        stays = [line for m in messages if editor.keeps_place(m) for line in m.lines]
        if moved and not all(line < min(moved) for line in stays):
            return None
        return moved, stays
    if editor.alternates and messages and messages[-1].role == "user":
        first = len(messages) - 1  # the user message as sent: its turns the alternation
        while first and messages[first].joined:  # joined (see anthropic.merged_turns)
            first -= 1  # share its line, and are written again with it
        lines = {line for m in messages[first:] for line in m.lines}
        if len(lines) != 1:
            return None
        return sorted(lines), [line for m in messages[:first] for line in m.lines]
    return [], [line for m in messages for line in m.lines]


def floor(plan: Plan) -> int:
    """The latest end that still keeps the newest steps and rounds the settings ask for."""
    found = plan.read.units(plan.read.head)
    o = plan.options
    end = len(plan.read.messages)
    steps = [u for u in found if u.step][-o.keep_steps:] if o.keep_steps else []
    rounds = [u for u in found if u.human][-o.keep_rounds:] if o.keep_rounds else []
    for u in (*steps[:1], *rounds[:1]):
        end = min(end, u.start)
    return end


def caps(plan: Plan) -> Callable[[int], int]:
    """For a region [head, end), the most tokens its summary may take: max_summary_tokens,
    and a `summary_ratio`-th of what it archives as read, where an earlier summary it
    continues counts whole (it is made small already, and never shrinks by merging)."""
    read, head = plan.read, plan.read.head
    earlier = [0] * (len(read.messages) + 1)  # prefix sums: earlier summaries' tokens
    archived = [0] * (len(read.messages) + 1)  # and the other messages' from `head` on
    for i, m in enumerate(read.messages):
        text = summary_text(m)
        earlier[i + 1] = earlier[i] + (read.counter.text(text) if text is not None else 0)
        archived[i + 1] = archived[i] + (read.counts[i].total if text is None and i >= head
                                         else 0)
    most, ratio = plan.options.max_summary_tokens, plan.options.summary_ratio
    return lambda end: max(1, min(most, earlier[end] + archived[end] // ratio))


def fixed(plan: Plan) -> int:
    """What the output holds whatever is archived: the kept head, and a message's framing."""
    return plan.tokens(0, plan.read.head) + OVERHEAD


def first_end(plan: Plan, candidates: list[int], lowest: int) -> int:
    """The first end worth trying: where the rest, and a summary given its reserve, are
    under the target; never after `lowest` (the floor)."""
    reserve = min(plan.options.max_summary_tokens, plan.target // 4)
    n = len(plan.read.messages)
    first = next((c for c in candidates
                  if fixed(plan) + reserve + plan.tokens(c, n) <= plan.target), candidates[-1])
    return min(first, lowest)


def likely_texts(plan: Plan) -> list[str]:
    """The texts a summary of this plan would read whole if its region ended where the
    counts as read say it does: what is worth finding the facts of ahead."""
    if not (plan.options.summarize and plan.triggered):
        return []
    found = ends(plan)
    if not found:
        return []
    return whole_texts(plan, plan.read.head, first_end(plan, found, floor(plan)))

"""The compress plan, a value: what is decided about the messages of an `Input`.

A plan holds the tool outputs replaced (`Edit`) and the summary that stands for a region
of messages; each message's count and the total are computed from them. A stage of the
pipeline reads a plan and returns `Edits`; `apply` makes the next plan from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from ..tokens import REPLY_PRIMING
from ..transcript import Message
from .settings import Options

if TYPE_CHECKING:
    from .reading import Input
    from .summarizers import Region


@dataclass(frozen=True, slots=True)
class Edit:
    """Output `output` (in order among the message's tool results) of message `message`
    now reads `text`; `item` is what the line's `ctxpack` object says of it."""

    message: int
    output: int
    text: str
    item: dict[str, Any]

    @property
    def tokens(self) -> int:
        return int(self.item["tokens_after"])  # a result's count is its text's


@dataclass(frozen=True, eq=False)
class Summary:
    """The summary message that stands for messages [start, end) of the context."""

    text: str
    start: int  # first archived context message (index)
    end: int  # first kept message after the region
    head: int  # messages before `head` are kept as the task
    tokens: int  # of the summary message
    message: Message = field(repr=False)
    region: Region = field(repr=False)  # what the summarizer read
    archived_tokens: int = 0  # of the region as planned (its outputs truncated or masked)
    read_tokens: int = 0  # of the region as read
    merged: bool = False  # joined into the head's last user message
    audited: int = 0  # archived messages the retention audit read (the newest)
    max_tokens: int = 0  # what the summarizer was given: the cap, or less where the
    cap: int = 0  # budget left less; the cap: max_summary_tokens and summary_ratio allow
    squeezed: bool = False  # condensed to fit a budget that left it less than a fair size
    strategy: str = "extractive"  # the summarizer that wrote `text`
    llm: dict[str, Any] | None = None  # what the llm summarizer did, when it was asked

    @property
    def removed(self) -> int:
        """Context messages the summary takes out: those it stands for, less its own
        message (none when it joins the head's last one)."""
        return self.end - self.start - (0 if self.merged else 1)


@dataclass(frozen=True)
class StageReport:
    """What one stage did: tokens of the whole context before and after it."""

    name: str
    tokens_before: int
    tokens_after: int
    items: int = 0
    note: str = ""


@dataclass(frozen=True)
class Edits:
    """What one stage decided: outputs replaced, a summary (in place of the plan's), and
    what the report should say of it."""

    outputs: tuple[Edit, ...] = ()
    summary: Summary | None = None
    warnings: tuple[str, ...] = ()
    note: str = ""

    @property
    def items(self) -> int:
        """Outputs replaced, or messages the summary stands for."""
        s = self.summary
        return len(self.outputs) + (s.end - s.start if s is not None else 0)


@dataclass(frozen=True, eq=False)
class Plan:
    """The input, the settings, and what the stages decided so far."""

    read: Input
    options: Options
    outputs: Mapping[tuple[int, int], Edit] = field(default_factory=dict)  # (message, output)
    summary: Summary | None = None
    warnings: tuple[str, ...] = ()
    stages: tuple[StageReport, ...] = ()  # what each stage that ran did, in order

    @cached_property
    def counts(self) -> tuple[int, ...]:
        """Each message's tokens as planned."""
        counts = [c.total for c in self.read.counts]
        for (i, j), edit in self.outputs.items():
            counts[i] += edit.tokens - self.read.result_tokens(i, j)
        return tuple(counts)

    @cached_property
    def _prefix(self) -> tuple[int, ...]:
        return (0, *accumulate(self.counts))

    def tokens(self, start: int, end: int) -> int:
        """Tokens of messages [start, end) as planned."""
        return self._prefix[end] - self._prefix[start]

    @property
    def total(self) -> int:
        return self.total_with(self.summary)

    def total_with(self, summary: Summary | None) -> int:
        """The prompt's tokens were `summary` the plan's summary."""
        n = len(self.counts)
        if summary is None:
            return self.tokens(0, n) + REPLY_PRIMING
        kept = self.tokens(0, summary.head) + self.tokens(summary.end, n)
        if summary.merged:
            kept -= self.counts[summary.head - 1]
        return kept + summary.tokens + REPLY_PRIMING

    def texts(self, i: int) -> dict[str | None, str]:
        """The new texts of message i's outputs, by call id."""
        results = self.read.messages[i].tool_results
        return {results[e.output].call_id: e.text for e in self.edits_of(i)}

    def edits_of(self, i: int) -> list[Edit]:
        """The edits of message i's outputs, in the order they were made."""
        return self._by_message.get(i, [])

    @cached_property
    def _by_message(self) -> dict[int, list[Edit]]:
        out: dict[int, list[Edit]] = {}
        for edit in self.outputs.values():
            out.setdefault(edit.message, []).append(edit)
        return out

    @property
    def edited(self) -> list[int]:
        """The messages some of whose outputs are replaced, in the order first edited."""
        return list(self._by_message)

    @property
    def changed(self) -> bool:
        return bool(self.outputs) or self.summary is not None

    # The numbers the settings ask for, of this plan's model: in the tokens its provider
    # bills (the settings' own figures: `billed_*`), and what they allow of ctxpack's count
    # of the messages (the rest, that the stages compare counts with). They are the same
    # where the count is exact and the file holds all the prompt; see Input.bill.

    @property
    def window(self) -> int:
        return self.read.window

    @property
    def billed_trigger(self) -> int:
        """Summarize above this: `--budget`, else threshold × the context window."""
        o = self.options
        return min(o.budget, self.window) if o.budget else int(o.threshold * self.window)

    @property
    def billed_target(self) -> int:
        """Summarize down to this: `--target` (at most the limit: a target above the
        budget or the window aims at it, see limiting.settings_warnings), else half the
        window, or 5/8 of the trigger (`--budget`, or the `--threshold` share of the
        window) if that is less: as far under the trigger as the default target is under
        the default trigger (0.5 and 0.8 of the window), so the next turns do not trigger
        it."""
        o = self.options
        if o.target:
            return min(o.target, self.billed_limit)
        # (the threshold's share in one step: 0.8 of the window, then 5/8 of that, rounded
        # twice, would fall a token short of half of some windows)
        share = o.budget * 5 // 8 if o.budget else round(o.threshold * self.window * 5 / 8)
        return min(self.window // 2, share)

    @property
    def by_budget(self) -> bool:
        """Is the limit the budget asked for, not the model's window (a budget above the
        window leaves the window: see limiting.of_settings)?"""
        return bool(self.options.budget) and self.options.budget < self.window

    @property
    def billed_limit(self) -> int:
        """The output must not pass this: the explicit budget, else the model's window."""
        return min(self.options.budget or self.window, self.window)

    @property
    def trigger(self) -> int:
        return self.read.bill.counted_at(self.billed_trigger)

    @property
    def triggered(self) -> bool:
        """The context as read is over the trigger: masking and summarizing act only
        then (truncating runs whatever the size), and go down to the target."""
        return self.read.total > self.trigger

    @property
    def target(self) -> int:
        return self.read.bill.counted_at(self.billed_target)

    @property
    def limit(self) -> int:
        return self.read.bill.counted_at(self.billed_limit)

    @property
    def billed(self) -> int:
        """The plan's prompt as the provider would bill it."""
        return self.read.bill(self.total)

def apply(plan: Plan, edits: Edits, stage: str | None = None) -> Plan:
    """The plan with a stage's edits made: outputs replaced, the summary put in, and
    (given the `stage`'s name) what it did."""
    outputs = {**plan.outputs, **{(e.message, e.output): e for e in edits.outputs}} \
        if edits.outputs else plan.outputs
    after = Plan(plan.read, plan.options, outputs,
                 edits.summary if edits.summary is not None else plan.summary,
                 plan.warnings + edits.warnings, plan.stages)
    if stage is None:
        return after
    done = StageReport(stage, plan.total, after.total, edits.items, edits.note)
    return replace(after, stages=(*plan.stages, done))

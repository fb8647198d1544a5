"""The compress pipeline: truncate big outputs, mask old ones, summarize old history.

The plan is made on the model-visible messages (`Work`); `writer` then turns it
into the input's lines with the planned ones replaced. Token counts are kept per
message as the plan changes them, so the report's numbers are the output's.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from ..archive import item_id, reference
from ..errors import CannotFit
from ..formats.base import Editor
from ..tokens import REPLY_PRIMING, MessageCount, TokenCounter
from ..transcript import META_KEY, Message, Text, ToolResult, Transcript
from . import units as cutting
from .args import call_label
from .mask import placeholder
from .scan import Output
from .settings import Options
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
    audited: int = 0  # archived messages the retention audit read (the newest)
    max_tokens: int = 0  # what the summarizer was given: the cap, or less if the budget
    cap: int = 0  # left less; the cap: max_summary_tokens and summary_ratio allow this
    read_tokens: int = 0  # of the archived messages as read (archived_tokens: as planned)
    squeezed: bool = False  # condensed to fit a budget that left it less than a fair size
    strategy: str = "extractive"  # the summarizer that wrote `text`
    region: Any = field(default=None, repr=False, compare=False)  # what it summarized
    llm: dict[str, Any] | None = None  # what the llm summarizer did, when it was asked


@dataclass
class Work:
    """The plan: the messages as they will be, their counts, and what changed where.

    Messages may come without the text of their tool outputs (see `scan`); `outputs`
    says what is known of each output, and `originals` reads whole messages back.
    """

    transcript: Transcript
    counter: TokenCounter
    editor: Editor
    options: Options
    messages: list[Message]
    base: list[MessageCount]  # each message's count as read
    outputs: list[tuple[Output, ...]]  # per message, one per tool result
    fetch: Callable[[Iterable[int]], dict[int, Message]] = field(repr=False)
    counts: list[int] = field(default_factory=list)
    parts: list[list[int]] = field(default_factory=list)  # each message's count per part
    texts: dict[int, dict[str | None, str]] = field(default_factory=dict)
    items: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    summary: Summary | None = None
    steps: list[StepReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    item: str | None = None  # set where a record holds whole conversations: the id of all
    # its changes, as the record is written again whole
    ids: dict[tuple[int, str], str] = field(default_factory=dict)  # line_id's, made once
    read: dict[int, str] = field(default_factory=dict)  # line -> its "o" id, made as read
    dry_run: bool = False  # plan only: nothing is sent to an LLM endpoint
    cache: bool = True  # caches across runs may be used (tokens, per-step summary lines)
    ahead: Any = None  # a FactsAhead: the summary's facts, found in a child process

    def __post_init__(self) -> None:
        self.counts = [c.total for c in self.base]
        self.parts = [list(c.parts) for c in self.base]

    @cached_property
    def allowed(self) -> list[int]:
        """Where the messages may be cut (see units.cuts): truncating and masking change
        no role, call or id, so this holds for the whole plan."""
        return cutting.cuts(self.messages)

    @cached_property
    def _units(self) -> list[cutting.Unit]:
        return cutting.units(self.messages, self.allowed, 0)

    def units(self, start: int = 0) -> list[cutting.Unit]:
        """The units from `start` (an allowed cut) on: made once, as they hold for the
        whole plan (like `allowed`)."""
        return self._units[bisect_left(self.allowed, start):]

    @property
    def total(self) -> int:
        if self.summary is None:
            return sum(self.counts) + REPLY_PRIMING
        s = self.summary
        kept = sum(self.counts[: s.head]) + sum(self.counts[s.end:])
        if s.merged:
            kept -= self.counts[s.head - 1]
        return kept + s.tokens + REPLY_PRIMING

    def originals(self, indexes: Iterable[int]) -> dict[int, Message]:
        """The messages at `indexes` as read, whole (read again if their outputs were set
        aside); a message the plan has not changed is made whole in the plan too."""
        found = self.fetch(sorted(set(indexes)))
        for i, m in found.items():
            if i not in self.texts:
                self.messages[i] = m
        return found


OBSERVATIONS = "observations"  # the kind of a line whose outputs were masked or cut


def archived_as(work: Work, i: int) -> str | None:
    """The id under which the outputs of message i are archived; None if they are not."""
    return line_id(work, i) if work.options.archive else None


def line_id(work: Work, i: int, kind: str = "o") -> str:
    """The id the marker of message i's outputs names: its line's, or the whole record's.
    Made once (the plan names it, then the writer); a long line's output id was made as
    the file was read (see scan), another is made from the line read again."""
    if work.item is not None:
        return work.item
    found = work.ids.get((i, kind))
    if found is None:
        line = work.messages[i].line
        found = work.ids[i, kind] = (work.read.get(line) if kind == "o" else None) \
            or item_id(kind, line, work.transcript.records[line - 1].raw)
    return found


def _result_message(m: Message) -> bool:
    return m.role != "assistant" and bool(m.tool_results) and len(m.lines) == 1


def _done(m: Message) -> dict[str | None, set[str]]:
    """What earlier compress runs did to each result of a message."""
    meta = m.raw.get(META_KEY) if isinstance(m.raw, dict) else None
    out: dict[str | None, set[str]] = {}
    for item in (meta or {}).get("items") or ():
        out.setdefault(item.get("call_id"), set()).add(item.get("action"))
    return out


def _part_index(m: Message, j: int) -> int:
    """Where the j-th tool result of `m` sits among its parts."""
    return [k for k, p in enumerate(m.parts) if isinstance(p, ToolResult)][j]


def _set_result(work: Work, i: int, j: int, text: str, item: dict[str, Any]) -> None:
    """Output j of message i now reads `text`, whose count `item` holds (tokens_after);
    the message's count follows."""
    m = work.messages[i]
    k = _part_index(m, j)
    result = m.parts[k]
    assert isinstance(result, ToolResult)
    parts = list(m.parts)
    parts[k] = ToolResult(result.call_id, (Text(text),), result.is_error)
    work.messages[i] = replace(m, parts=parts)
    tokens = item["tokens_after"]  # a result's count is its texts'
    work.counts[i] += tokens - work.parts[i][k]
    work.parts[i][k] = tokens
    work.texts.setdefault(i, {})[result.call_id] = text
    items = work.items.setdefault(i, [])
    items[:] = [x for x in items if x.get("call_id") != result.call_id] + [item]


def _over(work: Work, i: int, j: int) -> bool:
    """Does output j of message i pass a limit? Told without its text."""
    o = work.outputs[i][j]
    tokens = work.base[i].parts[_part_index(work.messages[i], j)]
    return o.text_only and work.options.limits.passed(o.lines, o.bytes, lambda: tokens)


def truncate_outputs(work: Work, skip: set[tuple[int, int]]) -> int:
    """Step 1: cut every tool output over the limits, but those in `skip` (message,
    output), which step 2 replaces; returns how many were cut."""
    candidates = []
    for i, m in enumerate(work.messages):
        if not _result_message(m) or _done(m):
            continue  # an output compress wrote is within the limits already
        candidates += [(i, j) for j in range(len(m.tool_results)) if (i, j) not in skip
                       and _over(work, i, j)]
    whole = work.originals({i for i, _ in candidates})
    n = 0
    for i, j in candidates:
        result = whole[i].tool_results[j]
        if not result.parts or not all(isinstance(p, Text) for p in result.parts) \
                or MARKER in result.text:  # cut before (under other limits): left as it is
            continue
        archived = archived_as(work, i)
        cut = truncate(result.text, work.options.limits, work.counter.text,
                       reference(archived) if archived else None)
        if cut is None:
            continue
        _set_result(work, i, j, cut.text, {
            "call_id": result.call_id, "action": "truncated",
            "tokens_before": cut.tokens_before, "tokens_after": cut.tokens_after,
            "lines_cut": cut.lines_cut})
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Mask:
    """A planned mask: output j of message i becomes `text`."""

    i: int
    j: int
    text: str
    item: dict[str, Any]


def plan_masks(work: Work) -> list[Mask]:
    """Step 2, decided before step 1 runs so that no output is cut and then masked:
    outputs older than the last K steps become a one-line placeholder, if they are
    over the truncate limits or else bigger than it."""
    keep = work.options.keep_observations
    steps = [u for u in work.units() if u.step]
    if len(steps) <= keep:
        return []
    old_end = steps[-keep].start if keep else len(work.messages)
    calls = {c.id: c for m in work.messages for c in m.tool_calls if c.id is not None}
    chosen = []
    for i in range(old_end):
        m = work.messages[i]
        if not _result_message(m):
            continue
        done = _done(m)
        for j, result in enumerate(m.tool_results):
            output = work.outputs[i][j]
            if "masked" in done.get(result.call_id, ()) or output.masked:
                continue
            tokens = work.base[i].parts[_part_index(m, j)]
            call = calls.get(result.call_id) if result.call_id else None
            what = call_label(call) if call is not None else "a tool call"
            # decided on a fixed id: ids follow line numbers, which a compress shifts
            probe = placeholder(what, tokens, output.lines,
                                "o-0000000000" if work.options.archive else None, output.failed)
            # (a token is at least a byte: a text longer in tokens is surely longer)
            if tokens <= len(probe.encode()) and work.counter.text(probe) >= tokens \
                    and not (work.options.truncate and _over(work, i, j)):
                continue  # the placeholder would not be smaller
            chosen.append((i, j, what, tokens, output, result.call_id))
    out = []
    for i, j, what, tokens, output, call_id in chosen:
        text = placeholder(what, tokens, output.lines, archived_as(work, i), output.failed)
        out.append(Mask(i, j, text, {"call_id": call_id, "action": "masked",
                                     "tokens_before": tokens,
                                     "tokens_after": work.counter.text(text)}))
    return out


def mask_outputs(work: Work, masks: list[Mask]) -> int:
    """Step 2: put the planned placeholders in."""
    for mask in masks:
        _set_result(work, mask.i, mask.j, mask.text, mask.item)
    return len(masks)


def run(work: Work, summarize: Callable[[Work], Summary | None]) -> Work:
    """Plan the whole compression; raises CannotFit when no plan fits the limit."""
    options = work.options
    masks = plan_masks(work) if options.mask else []
    skip = {(m.i, m.j) for m in masks}
    for name, enabled, step in (
        ("truncate", options.truncate, lambda: truncate_outputs(work, skip)),
        ("mask", options.mask, lambda: mask_outputs(work, masks)),
    ):
        before = work.total
        if enabled:
            items = step()
            work.steps.append(StepReport(name, before, work.total, items))
    before = work.total
    if options.summarize and before > trigger(work):
        work.summary = summarize(work)
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
    """Summarize down to this: `--target`, else half the window, or 5/8 of the budget if
    that is less: as far under the trigger as the default target is under the default
    trigger (0.5 and 0.8 of the window), so that the next turns do not trigger it again."""
    if work.options.target:
        return work.options.target
    half = window(work) // 2
    return min(half, trigger(work) * 5 // 8) if work.options.budget else half


def limit(work: Work) -> int:
    """The output must not pass this: the explicit budget, else the model's window."""
    return min(work.options.budget or window(work), window(work))


def check_fits(work: Work) -> None:
    total, most = work.total, limit(work)
    if total <= most:
        # the default target is a soft aim (room to grow); one that was asked for is not
        if total > target(work) and work.summary is not None and work.options.target:
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
    if s is None and work.options.summarize:
        parts.append("no older messages could be summarized: the task and the steps "
                     "--keep-steps and --keep-rounds keep are all there is")
    raise CannotFit(
        f"cannot fit the {what} ({most:,} tokens): the best compression leaves {total:,} "
        f"tokens ({', '.join(parts)})",
        "raise --budget, pick a model with a larger window, or lower the truncate limits")

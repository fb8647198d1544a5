"""What the provider billed for each call a transcript records, beside what ctxpack counts
of the same prompt: the data that tells how far a count is from the bill, and the two
ways of closing the gap.

An agent's file records, for many of its calls, how many tokens the prompt held as the
provider counted them (Claude Code: `input_tokens` + both cache fields of each API
response; Codex: `last_token_usage.input_tokens` of each new `token_count`). The prompt of
such a call is a prefix of the context: the messages before the call's reply. ctxpack's
count of that prefix misses what no file records (the system prompt the agent sends,
its tool definitions) and, for models without a public tokenizer, counts with another
one. So:

- calibrated: `slope × counted + overhead`, the slope a model family's (tokens of its
  tokenizer per token of the one counted with), the overhead what the file's own first
  calls show is sent but not written;
- anchored: the prompt size recorded last, plus the calibrated count of what came after.

A reply whose thinking the file stores empty is counted at the output tokens recorded
for it, since the next prompt carries it (an output the next prompt cannot hold is set
aside with its call: see ctxpack.recorded). Those are the provider's tokens, as the
reasoning tokens recorded of what a file holds only encrypted are: each is taken as the
count the slope bills at that many (`with_hidden`). `bill` puts these together for a
context: what `stats` reports and `compress` decides with.
"""

from __future__ import annotations

import heapq
import itertools
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import UsageError
from .formats import model_of
from .models import SLOPES, TABLE, ModelTable, model_key, overhead_bound, same_model
from .recorded import cannot, most_for, wrong_counts
from .tokens import REPLY_PRIMING, MessageCount, TokenCounter
from .transcript import (
    NO_PLACE,
    OPENS,
    SUMMARIZED,
    UNPLACED,
    Message,
    RecordedCall,
    Transcript,
    printable,
)

Call = RecordedCall
# the counts of a context before a compaction, and the calls made on it (see `bill`)
Earlier = tuple[Sequence[int], Sequence[Call]]

# What an agent sends with every call and does not write to its file (system prompt, tool
# definitions), by format, where the file records no call to measure it from: the
# overhead column of BENCHMARKS.md's "counts against the bill" (Claude Code 18-42k,
# Codex 0.7-18k, 5-7k in most). The config's `calibration:` entries give a model's own figure.
UNLOGGED: dict[str, int] = {"claude-code": 25_000, "codex": 5_500}
# The agents that summarize older messages themselves, writing the summary nowhere in the
# file: Aider (aider/history.py, `ChatSummary`) replaces the older part of a chat past its
# `max_chat_history_tokens` (1/16 of the model's input window, 1,024 to 8,192) with a
# summary it keeps in memory only. Of such a file, a recorded prompt far below the count of
# the messages before it is the summarized chat, and no sign of usage made up.
SUMMARIZES: dict[str, str] = {
    "aider": "Aider summarizes older messages once its chat history passes its limit, and "
             "the summary is not in the history file"}
# The expected error of a count of each kind, where the file has no calls of its own to
# measure it on: BENCHMARKS.md's medians (calibrated: under 5% on every file with 10 or
# more calls; anchored: 0.0-0.3%, 1% allowing for a call after a compaction).
CALIBRATED_ERROR = 0.05
ANCHORED_ERROR = 0.01
LEAST_ERROR = 0.001  # the least expected error an anchored count is given
KINDS = ("exact", "calibrated", "anchored", "estimated")
# The least share of the calibrated count a file's last recorded prompt may be for the
# file's own ratio to stand for the slope (the corpus: Cline 0.93, Gemini with its thoughts
# 0.69 of the count)
LEAST_RATIO = 0.6
# The least share of the table's slope, either way, the slope a file's own calls read may be
# for the bill to take it (see `implausible`): the corpus's files read 0.86 to 1.14 of it;
# calls whose prompts fall while the messages grow read 0.62 of it
SLOPE_RATIO = 0.8
# The least share of the part in the file a file's own fit puts at its slope that the part
# its overhead leaves may be, either way, for that overhead to split the bill (see `sound`):
# the corpus's files split at 0.88 to 1.16 of it; OpenCode "Cap", whose agent, restarted
# mid-session, sent 65,000 tokens more unlogged from then on, at 1.56
SPLIT_RATIO = 0.75


def calls_of(t: Transcript) -> list[Call]:
    """The calls `t` records the prompt size of, in order (none for formats that do not
    record it per call): what its reader found."""
    return list(t.calls)


def slope_of(model: str | None, table: ModelTable = TABLE) -> float:
    found = table.calibration(model)
    return found.slope if found is not None else 1.0


def billed_model(calls: Sequence[Call], named: str | None, counter: TokenCounter,
                 flagged: bool) -> str | None:
    """The model a context is billed as: the one its file's calls name (else the one the
    file names, else the counter's) unless `--model` (`flagged`) named one."""
    return counter.model if flagged else \
        (calls[-1].model if calls else None) or named or counter.model


def as_counted(tokens: int, slope: float) -> int:
    """The count a model of `slope` bills at `tokens` of its own (recorded) tokens."""
    return round(tokens / slope)


def with_hidden(counts: Sequence[int], calls: Sequence[Call], slope: float = 1.0) -> list[int]:
    """Each message's count, a reply whose text is not all in the file (see the module's
    note) counted at its recorded output where that is more, and with the reasoning it
    holds only encrypted: both recorded in the provider's tokens, so each taken as the
    count `slope` bills at that many."""
    out = list(counts)
    for c in calls:
        if c.hidden and c.output and c.prompt < len(out):
            out[c.prompt] = max(out[c.prompt], as_counted(c.output, slope))
        if c.reasoning and c.until is None and c.prompt < len(out):
            out[c.prompt] += as_counted(c.reasoning, slope)
    return out


def counts_with_hidden(counts: Sequence[int], calls: Sequence[Call], billed: Bill
                       ) -> list[int]:
    """`with_hidden` at the slope the context's bill (`billed`) converts hidden output at
    (`Bill.converted`: every call of the context, as the bill counts them): the messages'
    counts that stats reports, compress reads and the bill is of."""
    return with_hidden(counts, calls, billed.converted)


def conversation_bills(counts: Sequence[int], conversations: Sequence[int],
                       calls: Sequence[Call], named: str | None, counter: TokenCounter,
                       format: str, flagged: bool, exact: bool = True
                       ) -> list[ConversationBill]:
    """Each conversation of a file of several (`conversations[i]`: message i's, counted
    `counts[i]` as read), each sent to the model whole: its places, its calls and its
    bill, anchored on the calls it records itself, where it records some."""
    places: dict[int, list[int]] = {}
    for i, n in enumerate(conversations):
        places.setdefault(n, []).append(i)
    out = []
    for at in places.values():
        local = {i: k for k, i in enumerate(at)}
        own = [replace(c, prompt=local[c.prompt]) for c in calls if c.prompt in local]
        out.append((at, own, bill_for([counts[i] for i in at], own, named, counter, format,
                                      flagged, exact=exact)))
    return out


def hidden_by_conversation(counts: Sequence[int], bills: Sequence[ConversationBill]
                           ) -> list[int]:
    """`counts` of a file of several conversations, each conversation's raised as
    `counts_with_hidden` raises it at its own bill (`conversation_bills`), as the file of
    that conversation alone would be."""
    out = list(counts)
    for at, calls, billed in bills:
        for i, n in zip(at, counts_with_hidden([counts[i] for i in at], calls, billed),
                        strict=True):
            out[i] = n
    return out


def hidden_counts_of(t: Transcript, counts: Sequence[MessageCount], counter: TokenCounter,
                     flagged: bool) -> list[MessageCount]:
    """`message_counts_with_hidden` of a loaded transcript whose messages count `counts`,
    at the slope its bill converts hidden output at (each conversation's own, where it
    holds several: see `hidden_by_conversation`), as stats and compress count it."""
    totals = [c.total for c in counts]
    conversations = [m.conversation for m in t.messages]
    if len(set(conversations)) > 1:
        raised = hidden_by_conversation(totals, conversation_bills(
            totals, conversations, t.calls, t.model, counter, t.format, flagged))
        return with_totals(counts, raised)
    held = (*t.messages, *t.sidechain, *t.outside)
    billed = bill_for(totals, t.calls, t.model, counter, t.format, flagged,
                      earlier=([counter.message(held[n]).total for n in t.earlier],
                               t.earlier_calls))
    return message_counts_with_hidden(counts, t.calls, billed)


def message_counts_with_hidden(counts: Sequence[MessageCount], calls: Sequence[Call],
                               billed: Bill) -> list[MessageCount]:
    """Each message's count, its total raised as `counts_with_hidden` raises it (its parts
    as counted): what compress reads and `show` shows."""
    return with_totals(counts, counts_with_hidden([c.total for c in counts], calls, billed))


def with_totals(counts: Sequence[MessageCount], totals: Sequence[int]) -> list[MessageCount]:
    """`counts` with their totals raised to `totals` (their parts as counted)."""
    return [c if n == c.total else MessageCount(n, c.parts)
            for c, n in zip(counts, totals, strict=True)]


def prompts_of(counts: Sequence[int], calls: Sequence[Call], slope: float = 1.0) -> list[int]:
    """The count of each call's prompt: the messages before its reply, from counts
    `with_hidden` made (at `slope`, as is the reasoning sent back for a while)."""
    running, upto, sizes = 0, 0, []
    # reasoning sent back until a later user message (see RecordedCall): in the prompts of
    # the calls between its reply and that message
    passing = sorted(((c.prompt, c.until, as_counted(c.reasoning, slope)) for c in calls
                      if c.reasoning and c.until is not None), reverse=True)
    leaving: list[tuple[int, int]] = []
    carried = 0
    for call in calls:
        running += sum(counts[upto:call.prompt])
        upto = max(upto, call.prompt)
        while passing and passing[-1][0] < call.prompt:
            _, until, tokens = passing.pop()
            heapq.heappush(leaving, (until, tokens))
            carried += tokens
        while leaving and leaving[0][0] < call.prompt:
            carried -= heapq.heappop(leaving)[1]
        # (a call before any message stands for the bill ctxpack carried over a compaction
        # it wrote: `billed` is then what is sent besides the messages; see loader)
        sizes.append(running + carried + REPLY_PRIMING if call.prompt else 0)
    return sizes


def prompt_sizes(t: Transcript, calls: Sequence[Call], counter: TokenCounter,
                 model: str | None = None) -> list[int]:
    """ctxpack's count of each call's prompt, a reply whose text is not in the file
    counted at its recorded output (as any of the file's calls tells of it, at `model`'s
    slope: by default the one `billed_model` says); in a file of several conversations,
    of the call's own conversation (each is sent apart)."""
    slope = slope_of(model or billed_model(calls, t.model, counter, False), counter.table)
    counts = with_hidden([counter.message(m).total for m in t.messages], t.calls, slope)
    start: dict[int, int] = {}  # conversation -> the count of the messages before it
    running = 0
    for m, n in zip(t.messages, counts, strict=True):
        start.setdefault(m.conversation, running)
        running += n
    return [size - start[t.messages[c.prompt].conversation]
            if size and c.prompt < len(t.messages) else size
            for size, c in zip(prompts_of(counts, calls, slope), calls, strict=True)]


def by_conversation(t: Transcript, calls: Sequence[Call]) -> list[list[Call]]:
    """`calls` grouped by the conversation of their reply, in file order: each
    conversation of a file of several is its own run of calls, sent apart."""
    groups: dict[int, list[Call]] = {}
    for c in calls:
        key = t.messages[c.prompt].conversation if c.prompt < len(t.messages) else -1
        groups.setdefault(key, []).append(c)
    return list(groups.values())


@dataclass(frozen=True)
class Fit:
    """calibrated = slope × counted + overhead."""

    slope: float
    overhead: float
    steps: int = 0  # the slopes read off between calls (see `runs_fit`)
    # why the slope the calls read was not taken for `slope`, the table's being taken
    # instead (see `implausible`; "": it was, or none was read)
    refused: str = ""

    def __call__(self, counted: int) -> int:
        return round(self.slope * counted + self.overhead)


def fit(model: str | None, counted: Sequence[int], billed: Sequence[int],
        table: ModelTable = TABLE) -> Fit:
    """The model's slope, and the overhead the calls given show (their median gap; none
    where they are billed below slope × their count: a prompt holds its messages)."""
    slope = slope_of(model, table)
    gaps = [b - slope * c for c, b in zip(counted, billed, strict=True)]
    return Fit(slope, max(0.0, statistics.median(gaps)) if gaps else 0.0)


def anchored(slope: float, last_billed: int, last_counted: int, counted: int) -> int:
    """The prompt size recorded last, plus the calibrated count of what came since."""
    return round(last_billed + slope * (counted - last_counted))


@dataclass(frozen=True)
class Bill:
    """A context as the provider would bill it, and what kind of count that is:

    - exact: the model's own tokenizer, and nothing sent that the file does not hold;
    - calibrated: `slope` × the count + `overhead` (the model's figures, see
      models.CALIBRATED, and what its agent sends unlogged, see UNLOGGED);
    - anchored: the prompt size the file records last, plus slope × what came after;
    - estimated: a count with another tokenizer, or none, that nothing calibrates.

    `visible` is the part the file holds (slope × `counted`, ctxpack's count with hidden
    content from the recorded output), `not_in_file` the rest, never below 0; of an
    anchored bill, `not_in_file` is the overhead `calibrate` fits the file where that fit
    is sound (see `sound`), `visible` the rest. `error` is the expected relative error of
    `tokens` (None: unknown). A count of other messages is billed `slope × counted +
    overhead` (how compress decides): the line through the bill and, where the file's fit
    splits it, through that fit's overhead, so that what compress leaves is split as the
    file is. `after` is the slope an anchored bill adds what came after its last call at,
    where that is not `slope` (the file's fit's, read off its steps), else None."""

    kind: str
    tokens: int
    visible: int
    not_in_file: int
    error: float | None
    slope: float
    overhead: float
    counted: int
    calls: int = 0
    # where no recorded call is used (the bill is then what no usage gives, `unanchored`:
    # every call is far below the count, or the last that is not is itself below the count
    # of its prompt, or of the next one's where the agent is known to send more, with calls
    # passed over after it), the prompt size that call (else the last) records; else 0
    below: int = 0
    # the last recorded calls, each far below the count, that the bill passed over (no
    # anchor: see `far_below`), as (place of the call's reply in the context, its prompt
    # size as recorded)
    passed: tuple[tuple[int, int], ...] = ()
    after: float | None = None
    # where no call is recorded since the newest compaction, the calls before it that
    # measured what is sent besides the messages (the overhead); else 0
    earlier: int = 0
    # the overhead those calls measured, where it was not taken for being at or past the
    # model's window (no overhead a config could give it): the table's stands; else 0
    past_window: int = 0
    # the model the context is billed as (`billed_model`), its slope and overhead the
    # table's entry for it (None: none named)
    model: str | None = None
    # where calls were passed over for leaving no room for what the table says the agent
    # sends besides the messages (see `least_billed`), that overhead; else 0 (they were
    # far below the count)
    sends: int = 0
    # the model the file's recorded calls name where `--model` named another: their usage
    # is that model's, not used for this one's bill (see `bill_for`); else ""
    usage_of: str = ""
    # the slope output the file records but does not hold (see `with_hidden`) is converted
    # into counted tokens at: the one this bill prices what it adds at, so that a hidden
    # reply is billed the tokens recorded of it (1.0: none)
    converted: float = 1.0
    # whether the bill rests on no recorded call but on the size a compaction states it
    # left (no call made since: see RecordedCall.stated)
    stated: bool = False
    # why the slope the file's own calls read was not used, the table's being used
    # instead (see `implausible`); else ""
    refused: str = ""
    # where the agent summarized older messages (`SUMMARIZES`) and the calls show it, why
    # the file holds more than was sent: the bill rests on the calls, not the file; else ""
    summarized: str = ""

    def __call__(self, counted: int) -> int:
        """What a context counted `counted` would be billed."""
        return round(self.slope * counted + self.overhead)

    @property
    def unlogged(self) -> int:
        """What `__call__` bills besides the messages of any context: the part of compress's
        figures that is not in the file, as stats splits a file."""
        return max(0, round(self.overhead)) if self.kind != "exact" else 0

    def counted_at(self, billed: int) -> int:
        """The most a context may count to be billed at most `billed` as `__call__` bills
        it, rounded (0 where what is not in the file takes all of it): a budget of what a
        context is billed holds that context."""
        counted = max(0, int((billed - self.overhead) // self.slope))
        while self(counted + 1) <= billed:
            counted += 1
        return counted

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "tokens": self.tokens, "visible": self.visible,
                "not_in_file": self.not_in_file, "error": self.error,
                # (of a summarized chat the bill over the count, no slope of the model:
                # null, `summarized` says why)
                "slope": None if self.summarized else self.slope,
                # (of an anchored bill, the slope of what came after its anchor: the text's)
                "after_slope": (self.after or self.slope) if self.kind == "anchored" else None,
                "overhead": round(self.overhead),
                "counted": self.counted, "calls": self.calls, "below": self.below,
                "billed_model": self.model and printable(self.model),
                "earlier_calls": self.earlier,
                "earlier_overhead_past_window": self.past_window,
                "passed_over_known_overhead": self.sends,
                "usage_of_another_model": self.usage_of,
                "compaction_stated": self.stated, "own_slope_refused": self.refused,
                "summarized": self.summarized}


# a conversation's places among a file's messages, its calls (placed in it) and its bill
ConversationBill = tuple[list[int], list[Call], Bill]


def far_below(call: Call, prompt: int, slope: float, sends: int = 0) -> bool:
    """Whether `call`'s recorded prompt is under the least a prompt counted `prompt` may
    be billed (`least_billed`, at `slope` unless the call says its own): made up, or of an
    agent that cut old outputs itself. Such a call is no anchor."""
    return call.billed < least_billed(call.slope or slope, prompt, sends)


def least_billed(slope: float, prompt: int, sends: int = 0) -> float:
    """The least a prompt counted `prompt` may be billed by a model of `slope` and still
    anchor a bill: `LEAST_RATIO` of the calibrated count; of an agent the table says
    `sends` tokens besides the messages (`table_overhead`: Claude Code, Codex, a config's
    `overhead`), the count of the messages alone at the least slope a model of the family
    has (`TABLE_SPREAD` below the table's): less would leave no room for what the agent is
    known to send, so it is no prompt of theirs. (The corpus's calls of such agents all
    record more, rtchess's too, whose prompts bill 0.98 of the count at 150,000, Codex
    having cut old outputs.)"""
    return (slope - TABLE_SPREAD if sends else LEAST_RATIO * slope) * prompt


def below_words(sends: int) -> str:
    """How stats and compress say why calls were passed over (`Bill.sends`, see
    `far_below`)."""
    return "far below the count" if not sends else \
        f"below the count of the messages alone, where the agent is known to send {sends:,} besides"


def no_room(b: Bill, window: int | None, model: str, budget: int | None = None) -> str:
    """What stats says, and compress refuses with, where what is sent besides the messages
    (the bill's part not in the file: for an agent whose file records no call, the table's
    overhead, built in or the config's) is not below the model's `window`, or the
    `budget` compress is asked to hold the context to where that is less: no prompt of
    that agent fits it, however few its messages, as no overhead a config gives may be
    (ctxpack.config). "" where it is below."""
    if b.kind == "exact" or not window:
        return ""
    limit = min(budget or window, window)
    if b.unlogged < limit:
        return ""
    source = "as the recorded calls show" if b.kind == "anchored" else \
        "the table's figure for this agent"
    sent = (f"the {b.unlogged:,} tokens sent besides the messages (system prompt, tool "
            f"definitions: {source}) are not below the ")
    if limit < window:
        return (f"{sent}budget of {limit:,} tokens: no prompt fits it (a budget is of the "
                "whole prompt as billed; raise it above what the agent sends)")
    return (f"{sent}{window:,}-token window of {printable(model)}: no prompt fits it (give "
            "the model its real window in the config's models:, or what the agent sends as "
            "its calibration: overhead)")


def anchoring(calls: Sequence[Call], prompts: Sequence[int], slope: float, sends: int
              ) -> tuple[int, bool]:
    """Which of `calls` (in order, their prompts counted `prompts`, of a model of `slope`
    and an agent the table says sends `sends` besides the messages) the bill may rest on:
    how many, from the first, come before the last ones passed over (each `far_below`),
    and whether those can anchor at all. They cannot where every call is passed over, nor
    where the one before those passed over is below the calibrated count of its own
    prompt (at the slope its calls show) or, of an agent known to send more, below the
    least the first passed-over call's prompt may be billed: usage made up small where
    the count was small too, or that did not grow with the messages (flat, every call
    recording one figure), no more a prompt size than the calls after it. The bill and
    `calibrate` both judge a run of calls here."""
    keep = len(calls)
    while keep and far_below(calls[keep - 1], prompts[keep - 1], slope, sends):
        keep -= 1
    if keep in (0, len(calls)):
        return keep, keep > 0
    last = calls[keep - 1]
    holds = least_billed(last.slope or slope, prompts[keep], sends) if sends else 0
    if not holds:
        run = [(p, c.billed) for p, c in zip(prompts[:keep], calls[:keep], strict=True)
               if c.prompt]
        holds = (last.slope or own_fit([run], slope).slope) * prompts[keep - 1]
    return keep, last.billed >= holds


def bill(counts: Sequence[int], calls: Sequence[Call], *, model: str | None, format: str,
         exact: bool, estimated: bool, table: ModelTable = TABLE,
         priming: int = REPLY_PRIMING, earlier: Earlier | None = None) -> Bill:
    """The bill of a context whose messages count `counts` (ctxpack's count of each) and
    whose file records `calls`; `exact`/`estimated` say what the counter counted with.
    `earlier`: the counts of the context before the newest compaction and the calls made
    on it, whose slope and overhead stand while no call is recorded after it."""
    found = table.calibration(model)
    slope = found.slope if found is not None else 1.0
    sends = table_overhead(found, format)
    raw, recorded = counts, calls
    counts = with_hidden(raw, recorded, slope)
    counted = sum(counts) + priming
    # (not those only telling of hidden content; one standing for what compress carried
    # says its slope, and may carry nothing: see prompts_of)
    calls = [c for c in calls if c.billed > 0 or c.slope]
    # the calls made on the context before the newest compaction, as `calibrate` fits them
    # (on that context): what the agent sends besides the
    # messages, and the model's slope, are the same after it, so the file's own fit is of
    # every context it holds
    before = [c for c in earlier[1] if c.billed > 0 and c.prompt] if earlier else []
    before_run = fitted_run(before, prompts_of(with_hidden(earlier[0], earlier[1], slope),
                                               before, slope), None, "", slope, sends)[0] \
        if earlier and before else []
    if not calls and before_run:
        # what the agent sends besides the messages (system prompt, tool definitions) is
        # the same after a compaction: the calls before it measured that, as `calibrate`
        # fits them (the first calls, whose prompts are least of the messages, say it best),
        # where it is an overhead a config could give the model (below its window), else
        # the table's; in whole tokens, as compress carries it to its output (see
        # compression.writer.carried), so that the output is billed as compress said
        f = own_fit([before_run], slope)
        f, past = replace(f, overhead=round(f.overhead)), 0
        if f.overhead >= overhead_bound(model or "", table)[0]:
            past, f = round(f.overhead), replace(f, overhead=table_overhead(found, format))
        counted = sum(with_hidden(raw, recorded, f.slope)) + priming
        return replace(_bill("calibrated", f(counted), f.slope, f.overhead, counted,
                             _calibrated_error(found)), earlier=len(before_run),
                       past_window=past, converted=f.slope, refused=f.refused)
    if calls:
        prompts = prompts_of(counts, calls, slope)
        # the file's own slope where its calls show one, as `calibrate` fits it, so that
        # the bill splits into in and not in the file as `calibrate` fits the file (a call
        # before any message is no prompt of these messages: see prompts_of; one standing
        # for what compress carried says the slope it billed with)
        # the last calls far below the count are passed over (one made-up small usage
        # would otherwise throw away every sane call before it): the bill anchors on the
        # last call that is not, where it can (see `anchoring`)
        keep, anchors = anchoring(calls, prompts, slope, sends)
        if summarized_from(calls, prompts, slope, keep, format) is not None:
            return summarized(calls, prompts, slope, counted, found, SUMMARIZES[format])
        passed = tuple((c.prompt, c.billed) for c in calls[keep:])
        # (the agent's known overhead, where it set the line the calls passed over fell
        # below: what stats and compress say of them)
        said = sends if passed else 0
        if not anchors:
            # every call far below the count (usage made up, or an agent that cut old
            # outputs itself from the start), or the one before the calls passed over
            # below the count too (see `anchoring`): the usage is passed over, and the bill
            # is what it would be with no usage recorded (the table's slope and overhead:
            # usage that says less than the file holds is no sign the agent sends less
            # besides it), saying so rather than that it is anchored
            return replace(unanchored(found, format, counted, exact, estimated),
                           calls=len(calls), below=calls[keep - 1 if keep else -1].billed,
                           passed=passed, sends=said)
        calls, prompts, last = calls[:keep], prompts[:keep], calls[keep - 1]
        # the file's own fit, of the calls on this context and those before its compaction,
        # as `calibrate` fits the file (a file of one model)
        runs = [fitted_run(calls, prompts, None, "", slope, sends)[0], before_run]
        own = own_fit(runs, slope)
        slope = last.slope or own.slope
        if LEAST_RATIO * slope * prompts[-1] <= last.billed < slope * prompts[-1]:
            # a bill below the calibrated count (a file whose text the model's tokenizer
            # splits more tightly, or an agent that sends less than it logs): the file's
            # own ratio is the slope, and nothing is outside the file
            slope = last.billed / prompts[-1]
        # hidden output (recorded in the provider's tokens) converted at the slope that
        # bills it, so that a hidden reply after the last call adds what was recorded of it;
        # where the call stands for what compress carried, at the one compress's input
        # converted it at (its line's slope is that bill's split: see `sound`), so that
        # the output counts what compress said it kept
        converted = last.converted or slope
        counts = with_hidden(raw, recorded, converted)
        counted, prompts = sum(counts) + priming, prompts_of(counts, calls, converted)
        overhead = max(0, round(last.billed - slope * prompts[-1]))
        tokens = round(slope * counted + overhead)
        billed = _bill("anchored", tokens, slope, overhead, counted,
                       anchored_error(step_error(calls, prompts, slope), last.billed, tokens,
                                      _calibrated_error(found)),
                       len(calls) + len(passed))
        if slope == own.slope and sound(sum(map(len, runs)), own, tokens, slope * counted):
            # the bill rests on the last call, but what is sent besides the messages is
            # what the first calls, mostly made of it, show: the split is `calibrate`'s fit
            # of the file where that fit is sound, so that a file whose steps are steeper
            # than its prompts as a whole does not have the slope's error over its whole
            # prompt taken off what is not in the file. Other messages (what compress
            # leaves) are billed on the line from that overhead through this bill: what is
            # not in the file is the same in both, and this context's bill unchanged (the
            # fit's own line, at its steps' slope, misses the last call)
            outside = round(own.overhead)
            billed = replace(billed, visible=tokens - outside, not_in_file=outside,
                             slope=(tokens - outside) / counted, overhead=outside,
                             after=slope)
        return replace(billed, passed=passed, sends=said, converted=converted,
                       stated=last.stated, refused="" if last.slope else own.refused)
    return unanchored(found, format, counted, exact, estimated)


def recorded_sizes(calls: Sequence[Call], billed: Bill) -> dict[int, int]:
    """The prompt size the provider recorded of each of `calls` that `billed` (their
    context's bill) rests on, by the place of the last message before its reply (the
    context the call was made on): none where the bill rests on no recorded call, nor of
    the calls it passed over, nor a size a compaction stated or compress carried (no call
    made on these messages)."""
    if billed.kind != "anchored" or billed.usage_of:
        return {}
    passed = set(billed.passed)
    return {c.prompt - 1: c.billed for c in calls
            if c.prompt and c.billed > 0 and not c.stated and not c.slope
            and (c.prompt, c.billed) not in passed}


def billed_points(counted: Sequence[int], recorded: dict[int, int], billed: Bill) -> list[int]:
    """The context as billed at each point of a run whose point i counts `counted[i]`
    (the reply's priming in it): where a call was made on it, the prompt size the provider
    recorded (`recorded`, as `recorded_sizes` places them); after one, anchored on the
    last such call at the slope of what came after it, as `billed` is on its last call;
    before any, `billed`'s line. A last point that counts what `billed` counts is its
    figure, to the token (whose parts, in the file and not, are rounded apart)."""
    out: list[int] = []
    last: tuple[int, int] | None = None  # (recorded size, count) of the newest call
    for i, n in enumerate(counted):
        if i in recorded:
            last = recorded[i], n
        out.append(billed(n) if last is None else
                   anchored(billed.after or billed.slope, last[0], last[1], n))
    if out and counted[-1] == billed.counted:
        out[-1] = billed.tokens
    return out


def step_error(calls: Sequence[Call], prompts: Sequence[int], slope: float) -> float:
    """The error an anchored bill's steps show: the median of how far each call's recorded
    prompt is from the one before it plus `slope` × what its prompt counts more."""
    steps = [abs(anchored(slope, calls[k - 1].billed, prompts[k - 1], prompts[k])
                 - calls[k].billed) / calls[k].billed for k in range(1, len(calls))]
    # (a median of 0 over a file's calls is no promise of 0 on the next)
    return max(statistics.median(steps), LEAST_ERROR) if steps else ANCHORED_ERROR


def holds_newest(calls: Sequence[Call], prompts: Sequence[int], slope: float) -> bool:
    """Whether the last of `calls` (their prompts counted `prompts`) records at least what
    its prompt holds in full however the agent summarized the chat before: the messages
    since the call before (the person's newest turn), at `LEAST_RATIO` of their calibrated
    count, as `far_below` judges a whole prompt. Less is usage made up, not a summary."""
    newest = prompts[-1] - (prompts[-2] if len(prompts) > 1 else 0)
    return not far_below(calls[-1], newest, slope)


def summarized(calls: Sequence[Call], prompts: Sequence[int], slope: float, counted: int,
               found: Any, why: str) -> Bill:
    """The bill of a context counted `counted` whose agent summarized older messages, its
    recorded calls far below the count of the file's messages: the file's messages are not
    the prompt, so the bill is the last call's recorded prompt plus `slope` × the count of
    what came after it; its error measured on the steps of all the calls. What the prompt
    held of the file is not known (the summary, and how much it replaced, are not in it),
    so none of it is counted as not in the file; `after` is the slope of what came after."""
    last = calls[-1]
    tokens = anchored(slope, last.billed, prompts[-1], counted)
    billed = _bill("anchored", tokens, tokens / max(counted, 1), 0, counted,
                   anchored_error(step_error(calls, prompts, slope), last.billed, tokens,
                                  _calibrated_error(found)),
                   len(calls))
    return replace(billed, after=slope, summarized=why)


def anchored_error(steps: float, anchor: int, tokens: int, calibrated: float) -> float:
    """The expected error of an anchored bill of `tokens` resting on a recorded prompt of
    `anchor`: the error its steps show (`steps`) for the anchor's share of the bill, and
    a calibrated count's (`calibrated`) for the share calibrated from what came after it
    (docs/counting.md): a tail as large as the anchor is counted, not recorded."""
    after = max(tokens - anchor, 0)
    return round((steps * anchor + calibrated * after) / max(tokens, 1), 4)


def unanchored(found: Any, format: str, counted: int, exact: bool, estimated: bool) -> Bill:
    """The bill of a context counted `counted` that no recorded call anchors: the model's
    table entry `found` (its slope, and its overhead or the format's `UNLOGGED`)."""
    slope = found.slope if found is not None else 1.0
    overhead = table_overhead(found, format)
    if estimated or (not exact and found is None):
        billed = _bill("estimated", counted + overhead, 1.0, overhead, counted, None)
    elif not exact or overhead:
        billed = _bill("calibrated", round(slope * counted + overhead), slope, overhead,
                       counted, _calibrated_error(found))
    else:
        billed = _bill("exact", counted, 1.0, 0, counted, 0.0)
    return replace(billed, converted=slope)  # (the slope `bill` converted hidden output at)


def text_bill(counted: int, model: str | None, *, exact: bool, estimated: bool,
              table: ModelTable = TABLE) -> Bill:
    """The bill of plain text counted `counted` (what `ctxpack count` prints): the model's
    slope as a context's with no recorded call, and nothing besides (plain text is no
    agent's prompt, so no overhead, the table's or a config's)."""
    found = table.calibration(model)
    return unanchored(None if found is None else replace(found, overhead=0), "", counted,
                      exact, estimated)


def table_overhead(found: Any, format: str) -> int:
    """What an agent of `format` sends unlogged by the table: the model's entry `found`'s
    overhead, else the format's `UNLOGGED`."""
    return found.overhead if found is not None and found.overhead is not None \
        else UNLOGGED.get(format, 0)


def _calibrated_error(found: Any) -> float:
    """The expected error of a calibrated count: the table's for the model, else 5%."""
    return found.error if found is not None and found.error is not None \
        else CALIBRATED_ERROR


def _bill(kind: str, tokens: int, slope: float, overhead: float, counted: int,
          error: float | None, calls: int = 0) -> Bill:
    """A bill of `tokens`, split into slope × `counted` in the file and the rest not in
    it."""
    not_in_file = max(0, tokens - round(slope * counted))
    return Bill(kind, tokens, tokens - not_in_file, not_in_file, error, slope, overhead,
                counted, calls)


def bill_for(counts: Sequence[int], calls: Sequence[Call], named: str | None,
             counter: TokenCounter, format: str, flagged: bool, conversations: int = 1,
             exact: bool = True, earlier: Earlier | None = None) -> Bill:
    """The bill of a context `counter` counted `counts`, calibrated as the model its
    file's calls name (else the one it names, else the counter's) unless `--model`
    (`flagged`) named one; not `exact` when the counter's model is not the file's;
    `earlier` as `bill` takes it. A call's recorded usage is of the model that made it:
    where `--model` names another, no prompt size it records is used (the bill is as with
    none recorded; its reply's recorded output still stands for what the file does not
    hold of it), and the bill says whose it was. stats and compress both ask here."""
    named_by = calls or (earlier[1] if earlier else ())
    model = billed_model(named_by, named, counter, flagged)
    other = another_model(named_by, model) if flagged else ""
    if other:
        calls, earlier = [replace(c, billed=0, slope=None) for c in calls], None
    return replace(bill(counts, calls, model=model, format=format,
                        exact=exact and counter.exact, estimated=counter.failed,
                        table=counter.table, priming=REPLY_PRIMING * conversations,
                        earlier=earlier), model=model, usage_of=other)


def another_model(calls: Sequence[Call], model: str | None) -> str:
    """The model `calls` name last where it is not `model` (another whole name: see
    `models.same_model`), as printed; else ""."""
    named = next((c.model for c in reversed(calls) if c.model), None)
    if not named or not model:
        return ""
    return "" if same_model(named, model) else printable(named)


_PROMPT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
# a prompt's size in one field: Chat Completions', Gemini's (its SDK's, its REST JSON's)
_WHOLE_FIELDS = ("prompt_tokens", "prompt_token_count", "promptTokenCount")


def reported(t: Transcript, usage: Any, model: str | None = None) -> Transcript:
    """`t` with the provider's usage of its last call, the one whose reply is its last
    assistant message: a prompt size, or the usage object (or dict) the API returned
    (see `prompt_size`), of `model` where the reply names none. Its bill is then anchored
    on it, unless it is far below the count (see `far_below`), as a file's calls are."""
    return replace(t, calls=(*t.calls, last_call(t.messages, usage, model)))


def last_call(messages: Sequence[Any], usage: Any, model: str | None = None) -> Call:
    """The call whose reply is the last assistant message of `messages`, billed as
    `usage` says (see `prompt_size`). A prompt no call of its model (the reply's, else
    `model`) can hold is refused, by the bound a file's recorded calls are held to
    (ctxpack.recorded.most_for)."""
    billed = prompt_size(usage)
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=None)
    if last is None:
        raise UsageError("usage is of the last call, whose reply is the last assistant "
                         "message: there is none")
    most, why = most_for(messages[last].model or model)
    if billed > most:
        raise UsageError(f"usage: a prompt of {billed:,} tokens cannot be true: more than "
                         f"{most:,}, {why}", "pass response.usage as the API gave it")
    return Call(last, billed, None, messages[last].model)


def prompt_size(usage: Any) -> int:
    """The prompt size of a call: a number, or the usage object (or dict) the API
    returned — Anthropic Messages (input_tokens and both cache fields), Chat Completions
    (prompt_tokens), the Responses API (input_tokens), Gemini's usage_metadata
    (prompt_token_count, cached content included; promptTokenCount in its REST JSON)."""
    def field(name: str) -> Any:
        return usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)

    # every part it has is judged as a file's usage is (a cache count of -3 is no part of
    # a prompt); one the API left out, or null, is none
    parts = {n: field(n) for n in (*_WHOLE_FIELDS, *_PROMPT_FIELDS)}
    if not isinstance(usage, int) and (wrong := wrong_counts(parts, tuple(parts))):
        raise UsageError(f"usage {cannot(wrong)}", "pass response.usage as the API gave it")
    whole = next((n for n in _WHOLE_FIELDS if parts[n] is not None), None)
    if isinstance(usage, int) and not isinstance(usage, bool):
        billed: Any = usage
    elif whole is not None:
        billed = parts[whole]
    else:
        billed = sum(parts[n] or 0 for n in _PROMPT_FIELDS) \
            if parts[_PROMPT_FIELDS[0]] is not None else None
    if not isinstance(billed, int) or isinstance(billed, bool) or billed <= 0:
        raise UsageError("usage: expected the prompt size of the last call (a positive "
                         "number) or the usage the API returned for it",
                         "pass response.usage as the API gave it")
    return billed


def compaction_agent(format: str, first: Message | None) -> bool:
    """Whether a file of `format` whose first message is `first` is the side-agent Claude
    Code runs to summarize a conversation it compacts (agentId `acompact-...`): its prompt
    is mostly that parent conversation, which its own file does not hold."""
    return format == "claude-code" and first is not None and isinstance(first.raw, dict) \
        and str(first.raw.get("agentId") or "").startswith("acompact-")


def unlogged_cause(format: str = "", first: Message | None = None) -> str:
    """What the part of a file's bill not in the file mostly is (see `compaction_agent`)."""
    return ("mostly the parent conversation this agent summarizes, not a system prompt"
            if compaction_agent(format, first)
            else "system prompt, tool definitions the agent sends but does not log")


# The fewest calls a fit is written to the config from (half of them held out to score it)
LEAST_CALLS = 4
# The most a fit's worst call held out may be off by for it to be written to the config:
# the worst the study saw of a model family's slope with the overhead of a file's
# own first calls (11-15%). Past it, the fit predicts some session badly: what an agent
# sends unlogged is a session's (its project's CLAUDE.md, tools), and one overhead pooled
# over sessions that differ fits none of them (the corpus's opus-4-6 sessions: 25.8k to
# 41.6k at the fitted slope, worst 30%).
WORST_ERROR = 0.15
STEP_GROWTH = 500  # counted tokens two calls must differ by for a slope to be read off
# How far a model's slope may be from the one the shipped table gives its family (the
# table's own entries differ by 0.02-0.1), and how far one step's slope strays where too
# few steps show it: a fit reads the slope off its steps, weighed against the table's as
# their number and spread say, so that a model seen in a few calls keeps near the table
# (three calls of gpt-5.5 read 2.24 off one step, 33% off on the calls held out) and one
# seen in many consistent steps gets its own.
TABLE_SPREAD = 0.1
STEP_SPREAD = 0.5


def step_slopes(points: Sequence[tuple[int, int]]) -> list[float]:
    """Billed tokens per counted token between consecutive calls (counted, billed) whose
    prompts grew by `STEP_GROWTH` or more: what the overhead cannot change."""
    return [(b1 - b0) / (c1 - c0) for (c0, b0), (c1, b1) in itertools.pairwise(points)
            if c1 - c0 >= STEP_GROWTH]


def runs_fit(runs: Sequence[Sequence[tuple[int, int]]], prior: float) -> Fit:
    """The slope and overhead runs of calls (counted, billed) show, as `calibrate` fits a
    model and the bill splits a file: the slope read off the steps of each run's first
    half, shrunk toward `prior` (the table's) and rounded as `calibrate` shows it; the
    overhead their median gap at that slope (0 where there are none)."""
    halves = [fit_half(r) for r in runs if r]
    steps = [x for h in halves for x in step_slopes(h)]
    slope = round(shrunk(steps, prior), 3)
    return Fit(slope, overhead_at(halves, slope), len(steps))


def overhead_at(halves: Sequence[Sequence[tuple[int, int]]], slope: float) -> float:
    """The median gap of the calls (counted, billed) of `halves` over `slope` × their count
    (none below 0: a prompt holds its messages)."""
    gaps = [b - slope * c for h in halves for c, b in h]
    return max(0.0, statistics.median(gaps)) if gaps else 0.0


def implausible(slope: float, prior: float) -> str:
    """Why a slope a file's calls read cannot be that of a model whose table's slope is
    `prior` ("": it can): more than `SLOPE_RATIO` off it either way (the table's values
    for a family differ by 0.02 to 0.1), or below 1 where the table's is more than
    `TABLE_SPREAD` above 1 (a Claude model's tokenizer splits text finer than the one
    counted with: below 1 would put what is in the file below its count)."""
    if not SLOPE_RATIO <= slope / prior <= 1 / SLOPE_RATIO:
        off = f"{1 - SLOPE_RATIO:.0%} below" if slope < prior else \
            f"{1 / SLOPE_RATIO - 1:.0%} above"
        return f"{slope:.4g}, more than {off} the table's {prior:g}"
    if slope < 1 < prior - TABLE_SPREAD:
        return f"{slope:.4g}, below 1 where the table's is {prior:g}"
    return ""


def own_fit(runs: Sequence[Sequence[tuple[int, int]]], prior: float) -> Fit:
    """`runs_fit` of a file's runs of calls, where the bill can take its slope: one
    `implausible` for the model is not taken, and the fit says why (calls whose prompts do
    not grow with the messages were made up, or cut by the agent: see `bill`); the
    overhead is then the calls' median gap over `prior`."""
    found = runs_fit(runs, prior)
    refused = implausible(found.slope, prior)
    if not refused:
        return found
    return Fit(prior, overhead_at([fit_half(r) for r in runs if r], prior), found.steps,
               refused)


def summarized_from(calls: Sequence[Call], prompts: Sequence[int], slope: float, keep: int,
                    format: str) -> int | None:
    """Of an agent that summarizes its chat itself (`SUMMARIZES`), where `calls` (their
    prompts counted `prompts`; the first `keep` of them those `anchoring` keeps) show it,
    the last ones far below the count yet holding the person's newest turn
    (`holds_newest`): the first call made on the summary, which the file does not hold
    (the first whose prompt shrank); else None."""
    if keep == len(calls) or format not in SUMMARIZES or \
            not holds_newest(calls, prompts, slope):
        return None
    return next((k for k in range(1, len(calls)) if calls[k].billed < calls[k - 1].billed),
                len(calls))


def fitted_run(calls: Sequence[Call], prompts: Sequence[int], model: str | None,
               named: str, slope: float, sends: int, format: str = ""
               ) -> tuple[list[tuple[int, int]], bool]:
    """The points (counted, billed) a fit of `model` takes of a run of calls whose prompts
    count `prompts` (a call naming no model is of `named`'s; None: of every model, as the
    bill reads a file; see `anchoring` for `slope` and `sends`): of those calls, the ones
    the bill may rest on, but none far below the
    count of its prompt (made up, or of an agent that cut old outputs itself) nor any
    before a message (no prompt of these messages). `calibrate` and the bill both take a
    run's points here; of an agent of `format` that summarizes its chat itself, those
    before the first made on the summary (`summarized_from`), and whether it did."""
    mine = [(c, p) for c, p in zip(calls, prompts, strict=True)
            if model is None or (c.model or named) == model]
    made, sizes = [c for c, _ in mine], [p for _, p in mine]
    keep, anchors = anchoring(made, sizes, slope, sends)
    first = summarized_from(made, sizes, slope, keep, format)
    if first is not None:
        keep, anchors = first, True
    return [(p, c.billed) for c, p in mine[:keep if anchors else 0]
            if c.prompt and not far_below(c, p, slope, sends)], first is not None


def sound(points: int, fitted: Fit, tokens: int, visible: float) -> bool:
    """Whether `own_fit`'s `fitted` of `points` calls can split a bill of `tokens`
    whose part in the file its slope puts at `visible`: fitted from `LEAST_CALLS` or more
    calls (as `calibrate` writes a fit to the config), and the part in the file it leaves
    within `SPLIT_RATIO` of `visible` either way (a fit far off the file's last calls,
    as where what is sent besides the messages grew mid-session, would make the file's
    own text a fraction or a multiple of its count; the last call's own overhead splits
    the bill then)."""
    left = tokens - fitted.overhead
    return points >= LEAST_CALLS and fitted.overhead > 0 and visible > 0 \
        and SPLIT_RATIO <= left / visible <= 1 / SPLIT_RATIO


def fit_half(points: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The calls of a run a slope is read off: the first half (the rest held out to score
    it, in `calibrate`; the bill reads the same, so that it splits a file as `calibrate`
    fits it)."""
    return list(points[:max(1, len(points) // 2)])


@dataclass(frozen=True)
class Fitted:
    """A model's calibration fitted on the first half of each run of calls (those made on
    one context a file holds: see `contexts_of`; of each conversation of a file of several),
    and its relative error on the second half (held out): median and worst."""

    model: str
    files: int  # the files whose calls were fitted
    calls: int
    steps: int  # the slopes read off (0: the table's slope is kept; few: near it)
    slope: float
    overhead: int
    error: float | None
    worst: float | None
    # why the fit cannot stand as the model's entry in a config ("": it can)
    untrusted: str = ""
    # the calls left out of the fit, as the bill passes them over (see `anchoring`): far
    # below the count of their prompts, or below it where the agent is known to send
    # more, or before such calls without growing with the messages
    left_out: int = 0
    # the calls whose usage the files record on no prompt they hold as it stands (see
    # `calls_of_no_prompt`), which nothing can be fitted on
    no_prompt: int = 0
    # what keeps the fit apart from the model's own: "compaction" (Claude Code's compaction
    # side-agent), "assumed" (no file names the model: the one its format assumes), or ""
    # (see `apart_of`)
    apart: str = ""
    # the calls whose recorded usage cannot be true, set aside (see ctxpack.recorded)
    set_aside: int = 0
    # the calls recording no prompt size (a prompt of 0, with a reply)
    no_size: int = 0
    # the least and the most overhead one file's calls show at the fitted slope (the
    # median gap of its first half): how far what the agent sends differs by session
    overhead_range: tuple[int, int] | None = None
    # the calls of `no_prompt` by why their prompts are no context the files hold (each a
    # phrase of `transcript.UNPLACED`, in that order): how many each
    no_prompt_why: dict[str, int] = field(default_factory=dict)
    # the slope the calls read where no model of the family can have it (see `implausible`),
    # as stats refuses it: `slope` is then the table's, `overhead` the gap at it; else ""
    refused: str = ""

    @property
    def recorded(self) -> int:
        """Every call of the model the files record: fitted (`calls`, half of each run's
        held out), or left out for one of the reasons each count of the rest names."""
        return self.calls + self.left_out + self.no_prompt + self.set_aside + self.no_size

    @property
    def label(self) -> str:
        """The fit's name in a listing: its model, and what keeps it apart, if anything
        (`claude-opus-4-6 (compaction)` beside `claude-opus-4-6`)."""
        return f"{self.model} ({self.apart})" if self.apart else self.model

    def to_dict(self) -> dict[str, object]:
        return {**vars(self), "label": self.label, "recorded": self.recorded}


def shrunk(slopes: Sequence[float], prior: float) -> float:
    """The median of `slopes` and the table's `prior`, each weighed by how sure it is:
    the steps by their number over their spread (a robust one, from 3 steps on; else
    `STEP_SPREAD`), the table by `TABLE_SPREAD`."""
    if not slopes:
        return prior
    middle = statistics.median(slopes)
    spread = STEP_SPREAD if len(slopes) < 3 else \
        max(0.02, 1.4826 * statistics.median(abs(x - middle) for x in slopes))
    sure, table_sure = len(slopes) / spread ** 2, 1 / TABLE_SPREAD ** 2
    return (sure * middle + table_sure * prior) / (sure + table_sure)


def calibrate(transcripts: Iterable[Transcript], table: ModelTable = TABLE) -> list[Fitted]:
    """Fit each model's slope and overhead on the calls the transcripts record, each on the
    context it was made on (see `contexts_of`): the slope read off the first half of each
    run's calls, shrunk toward the table's (`shrunk`), the overhead their median gap; the
    error is of the second half, held out. Every call a file records is in its model's row:
    fitted (or held out), or left out and counted by why (see `Fitted`)."""
    # (model, what keeps it apart: see `Fitted.apart`) -> each run's (counted, billed)
    # points, by the number of the file it is of (a file of several conversations, or
    # with calls before its newest compaction, has a run of each); a compaction agent's
    # are fitted apart, since what it sends unlogged is the parent conversation, not what
    # the model's other calls send, and so are the calls of a model no file named
    # (assumed: `claude` for files of any Claude agent), which can stand for no model's
    # entry
    points: dict[tuple[str, str], list[tuple[int, list[tuple[int, int]]]]] = {}
    # a model's name as first seen, by what the table takes of it (`GPT-5.4`,
    # `openai/gpt-5.4`: one model, one entry in the config)
    spelled: dict[str, str] = {}
    # the calls not fitted, by row and why (the names of `Fitted`'s fields that count them)
    untaken: dict[tuple[str, str], Counter[str]] = {}

    def key(model: str, apart: str) -> tuple[str, str]:
        return spelled.setdefault(model_key(model), model), apart

    # the calls of no prompt the files hold, by row and why (`Fitted.no_prompt_why`)
    unplaced: dict[tuple[str, str], Counter[str]] = {}
    for number, t in enumerate(transcripts):
        named = model_of(t.model, t.format) or "?"
        for why, calls in unfitted(t).items():
            for c in calls:
                found = key(c.model or named, apart_of(t, [c]))
                untaken.setdefault(found, Counter())[why] += 1
                if why == "no_prompt":
                    unplaced.setdefault(found, Counter())[c.unplaced or NO_PLACE] += 1
        for view in contexts_of(t):
            recorded = [c for c in view.calls if fittable(c)]
            for calls in by_conversation(view, recorded):  # (each conversation a run)
                # each call under the model that made it (a session may switch models):
                # the prompts are counted whole, as that model counts them, and its calls'
                # points are a run of its own
                for model in dict.fromkeys(c.model or named for c in calls):
                    counter = TokenCounter(model if table.find(model) else None, table)
                    counted = prompt_sizes(view, calls, counter, model)
                    # not the calls the bill passes over (see `anchoring`: the last ones
                    # far below the count of their prompts, or below it where the agent is
                    # known to send more, and all of them where the one before those did
                    # not grow with the messages), nor any other far below: made up, or of
                    # an agent that cut old outputs itself
                    sends = table_overhead(table.calibration(model), t.format)
                    slope = slope_of(model, table)
                    # (of an agent that summarized the chat, the calls made on the summary,
                    # which the file does not hold, are no usage made up but no prompt of
                    # its messages)
                    run, summary = fitted_run(calls, counted, model, named, slope, sends,
                                              t.format)
                    made = [c for c in calls if (c.model or named) == model]
                    found = key(model, apart_of(t, made))
                    # (a run all left out is kept empty: the model is still shown, with
                    # the calls left out)
                    points.setdefault(found, []).append((number, run))
                    untaken.setdefault(found, Counter())[
                        "no_prompt" if summary else "left_out"] += len(made) - len(run)
                    if summary:
                        unplaced.setdefault(found, Counter())[SUMMARIZED] += \
                            len(made) - len(run)
    out = []
    for model, apart in sorted({*points, *untaken}):
        runs = [(n, f) for n, f in points.get((model, apart), ()) if f]
        files = [f for _, f in runs]
        # (the bill splits a file by the same fit, and refuses the same slopes: see
        # `own_fit`; a slope refused is the table's, the overhead at it)
        f = own_fit(files, slope_of(model, table))
        slope, overhead = f.slope, f.overhead
        held = [f[len(fit_half(f)):] for f in files]
        errors = [abs(slope * c + overhead - b) / b for f in held for c, b in f if b > 0]
        calls = sum(map(len, files))
        why = untaken.get((model, apart), Counter())
        each = [round(overhead_at([fit_half(run)], slope)) for run in files]
        spread = (min(each), max(each)) if each else None
        pooled = len({n for n, _ in runs})
        out.append(Fitted(model, pooled, calls, f.steps, slope, round(overhead),
                          round(statistics.median(errors), 4) if errors else None,
                          round(max(errors), 4) if errors else None,
                          untrusted(model, apart == "compaction", calls,
                                    max(errors) if errors else None,
                                    slope, round(overhead), table,
                                    assumed=apart == "assumed",
                                    spread=spread if pooled > 1 else None,
                                    refused=f.refused),
                          why["left_out"], why["no_prompt"], apart, why["set_aside"],
                          why["no_size"], spread,
                          {w: n for w in UNPLACED
                           if (n := unplaced.get((model, apart), Counter())[w])},
                          f.refused))
    return out


def apart_of(t: Transcript, calls: Sequence[Call]) -> str:
    """What keeps `calls` of `t` apart from their model's own fit (`Fitted.apart`):
    "compaction" where `t` is Claude Code's compaction side-agent, "assumed" where none
    of them names a model and `t` names none either (the model is its format's), else ""."""
    if compaction_agent(t.format, next(iter(t.messages), None)):
        return "compaction"
    assumed = t.model is None and model_of(None, t.format) is not None
    return "assumed" if assumed and all(c.model is None for c in calls) else ""


def fittable(c: Call) -> bool:
    """Whether a call of a context a file holds can be fitted: it records a prompt size,
    and its prompt is messages of that context (not none: its reply is the context's
    first message)."""
    return c.billed > 0 and c.prompt > 0


def recorded_calls(t: Transcript) -> bool:
    """Whether `t` records the usage of any call of its own, fittable or not (not the one
    standing for what a compress carried: see `prompts_of`)."""
    return any(unfitted(t).values()) or any(
        fittable(c) for view in contexts_of(t) for c in view.calls)


def contexts_of(t: Transcript) -> list[Transcript]:
    """`t` as each context its file holds with the calls made on it: the context as it
    stands, the one before its newest compaction and the one before each older compaction
    (made of messages the file holds outside the context), with their calls' `prompt`
    places in it. A call is fitted on the prompt it was sent, not on the context that
    replaced it."""
    views = [replace(t, calls=tuple(c for c in t.calls if c.slope is None))]
    held = (*t.messages, *t.sidechain, *t.outside)
    for places, calls in ((t.earlier, t.earlier_calls), *t.older):
        if places and calls:
            views.append(replace(t, messages=tuple(held[n] for n in places), calls=calls,
                                 earlier=(), earlier_calls=(), older=()))
    return views


def unfitted(t: Transcript) -> dict[str, list[Call]]:
    """The calls `t` records that no fit can take, by why (the name of the `Fitted` field
    that counts them): `no_prompt`, made on no prompt the file holds (see
    `calls_of_no_prompt`); `no_size`, recording no prompt size (0, with a reply);
    `set_aside`, whose recorded usage cannot be true (see ctxpack.recorded)."""
    held = [c for view in contexts_of(t) for c in view.calls]
    return {"no_prompt": calls_of_no_prompt(t),
            "no_size": [c for c in held if c.billed <= 0],
            "set_aside": [x.call for x in t.set_aside if x.call is not None]}


def calls_of_no_prompt(t: Transcript) -> list[Call]:
    """The calls `t` records the usage of but no prompt it holds: made off the branch,
    before a cut to fit the window, or of no place its record names (each of
    `unbilled_calls`, its reader saying which in its `unplaced`), or whose reply opens
    the context it is in (what was sent before it is not in the file: `OPENS`).
    Their prompts are not messages the file holds, so no fit takes them."""
    return [replace(c, unplaced=OPENS) for view in contexts_of(t) for c in view.calls
            if c.billed > 0 and not fittable(c)] + list(t.unbilled_calls)


def untrusted(model: str, side: bool, calls: int, worst: float | None,
              slope: float, overhead: int, table: ModelTable = TABLE, *,
              assumed: bool = False, spread: tuple[int, int] | None = None,
              refused: str = "") -> str:
    """Why a fit cannot be written as `model`'s entry, for every file of it ("": it can);
    `side`: of Claude Code's compaction side-agent; `assumed`: of calls no file names a
    model for, read as `model`, the one their format assumes; `worst` is its largest
    error on the calls held out (None: none were), bounded by `WORST_ERROR`, and
    `spread` the least and most overhead its files show, where it pools several (said
    with that bound); a slope or overhead a config refuses (`models.SLOPES`,
    `models.overhead_bound` in `table`) would make the config unreadable; `refused` is
    the slope the calls read where stats would not use it (`implausible`): the table's
    stands, and nothing is written over it."""
    if model == "?":
        return "no model named"
    if assumed:
        return f"no model named: {model} is only what its files are assumed to be"
    if side:
        return "a compaction side-agent: its overhead is the conversation it summarizes"
    if refused:
        return (f"the calls read slope {refused}, which no model of the family can have "
                "(usage that does not grow with the messages); stats uses the table's, "
                "shown here, and so does the config")
    if calls < LEAST_CALLS or worst is None:
        return f"{calls} call{'s' if calls != 1 else ''}, fewer than {LEAST_CALLS}"
    if worst > WORST_ERROR:  # (a config's error, the median, is then at most this too)
        return (f"a call held out is off by {worst:.1%}, more than {WORST_ERROR:.0%}"
                + (f" (its files' own overheads run from {spread[0]:,} to {spread[1]:,}: "
                   "what the agent sends unlogged differs by session; calibrate each "
                   "project's files apart)" if spread and spread[0] != spread[1] else ""))
    low, high = SLOPES
    if not low <= slope <= high:
        return f"slope {slope:g} is outside {low:g} to {high:g}, the range a config takes"
    window, which = overhead_bound(model, table)
    if overhead >= window:
        return (f"overhead {overhead:,} is outside 0 to {window - 1:,} (below {which}), the "
                "range a config takes")
    return ""

"""Which prompt sizes a file records can be true: the rest are set aside before anything
bills with them or sizes a window by them.

Files come from strangers, and a recorded usage is only a number someone wrote. One that
no model could have taken would become the window and the bill (the window is raised to
the largest recorded call, the bill anchored on the last). The rule: a call whose prompt
and reply are more than `WINDOWS` times the window the file records for its model (a Codex
rollout's `model_context_window`, where it is one the model can have), else the window the
built-in model table gives its model (a Claude model's 200,000 allows 1,000,000, its
largest window), or more than `MOST` whatever the model, cannot be true (the built-in
table: loading reads no config). The
counts of what the file holds are no test: what is not in the file (a system prompt, the
parent conversation of a compaction agent, the part cut from a session) legitimately
makes a prompt hundreds of times the visible count. Nor can a count that is negative or
not a whole number (true, 1.5, "500", a list, or null: see `wrong_counts`), or more than
`MOST` in any field a reader sums (a cache, reasoning or output count, as much as a
prompt): every reader that meets
one in a call's usage keeps it as the call's `problem`, named by `wrong_counts`, and the
call is set aside; so is a call whose recorded cost (Cline's, OpenCode's) is not a number
of zero or more ("0.02", -1, NaN), kept as its `costs`, named by `wrong_costs`.

Within one context (the calls after a compaction, of one conversation) the agent resends
the conversation, so a prompt grows only by what was added: a call whose prompt is more
than `RISE` times one a later call of the same context records, and more than `RISE` times
what the call before it could have grown to (that call's prompt and reply, plus every byte
of the file between the two replies: a token is at least a byte), rose and fell back with
nothing to carry it: it cannot be true either. Nor can one, with or without a later call,
that is more than `RISE` times what the call before could have grown to and more than
`MARGIN` tokens above it (the last call of a context has no later call to contradict it).
Nor can the first call of a context (the file's first, or the first after a compaction)
whose prompt is more than `RISE` times every later call of its context and more than
`MARGIN` above the least of them, where at least two later calls agree (each within `RISE`
times the other): the later calls, which resend what it held, outvote it. Nor can a
prompt less than 1/`RISE` of the call before it in its context, that fell by more than that
prompt can have held of the file (its messages' text, a token being at least a byte, an
image `IMAGE_MOST`, and the thinking and reasoning its calls recorded, which the file holds
no text of: see `collapsed`), unless the next call of its context agrees with it (within
`RISE` times it: what the agent sends besides the messages changed); the last call of a
context has none to agree. A prompt that shrinks legitimately (Claude Code clearing old
tool results, Codex dropping an earlier turn's reasoning) drops what the file holds, so the
rules leave it; a call
with no call before it (but for the outvote), or whose file places its reply on the same
line as the one before (one-line documents, a database, OpenCode's storage), is not judged.

The next call of a context resends the reply before it, so its prompt grows by at least
that reply. A call whose recorded output is more than `RISE` times and more than `MARGIN`
above what the next call's prompt grew by (nothing, where it shrank) records a reply that
prompt cannot hold: it cannot be true either, and is set aside, its reply counted as the
file holds it. A reply whose thinking the file stores empty is counted at its recorded
output, for the next prompt carries it (see ctxpack.calibration): its output is held to
that closely, more than `RISE` times and `HIDDEN_MARGIN` above what the next prompt grew
by, since that output is what the count, the bill's tail, compress and calibrate would
take for it. A call recording a prompt of 0 and a reply
is judged so too, against the whole of the next prompt (the next call that records one),
and by the bound on what a call holds: its reply is summed into the usage totals, and
counted where its thinking is stored empty. The last call of a context, with no next
call to hold its reply, and one whose next call's reply is on the same line, are not
judged by this. Every call's reply, theirs too, must fit its model's window after its
prompt (the window the file records for it or the table's, the larger): one that does
not, in a file no recorded prompt of which passes that window (which would show the model
served with more), cannot be true either (`outgrew`); a call's own figures never make the
window it is judged by.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from .jsonl import json_kind
from .models import TABLE, table_window
from .numbers import LONG, figure, number
from .transcript import Image, Message, RecordedCall, ToolResult, printable, where_in

# How many times its table window a call of a known model may hold (the tables give a
# model's usual window; some are served with up to five times it, as Claude's 1M beta)
WINDOWS = 5
# The most a call may hold whatever its model: twice the largest window of the table
# (1,048,576), the largest any model has been served with (Gemini 1.5 Pro's 2,097,152)
MOST = 2 * max(m.context_window for m in TABLE.all())
# How many times a later prompt of the same context, and what the call before could grow
# to, a prompt may be (see the module's note): Codex dropping a turn's reasoning at the
# next user message halves a prompt of the corpus (60,423 -> 30,273) after a rise the
# file holds; a rise the file does not hold, followed by such a fall, is made up
RISE = 2
# How far above what the call before could grow to, or above every later call of its
# context, a prompt may be before a rise alone sets it aside, and a reply above what the
# next prompt grew by (old tool results cleared as it was resent, or its thinking dropped,
# can leave that growth less than the reply): what no file records (a system prompt,
# tool definitions, a CLAUDE.md an agent adds mid-session) measures 5,000 to 30,000
# tokens in the corpus, and a few MCP servers' tools add tens of thousands more; 100,000
# (half a Claude window) leaves room for all of it
MARGIN = 100_000
# How far above what the next prompt of its context grew by a reply whose thinking the
# file stores empty may be (see the module's note): that prompt resends it whole, and in
# the corpus every such reply is below what the next prompt grew by (by 8 tokens at the
# least); what an agent sends once and drops from the next call (a reminder of a file
# changed, a list of skills) is a few hundred tokens to 2,000
HIDDEN_MARGIN = 2_000
# The most tokens one image may be billed, a few times what any provider bills the largest
# (Anthropic's about 1,600; OpenAI's high detail about 1,500)
IMAGE_MOST = 5_000
# The most a run's totals (a `result` line's, an agent's tally, Codex's running total) may
# hold: a million calls (a call every 30 seconds for most of a year) of `MOST` each
RUN_MOST = 1_000_000 * MOST
# The dearest price per token any current model charges, in dollars: o1-pro's $600 per
# million output tokens (gpt-5-pro's is $120, claude-opus-4's $75); a cost is at most its
# most tokens at that price, each as if it were output (input costs a quarter or less):
# a call's `MOST` tokens ($1,258.29), a run's `RUN_MOST`
DEAREST = 600 / 1_000_000
# the rule a value breaks that is no count, or no cost, at all, as a problem names it
NO_COUNT = "(a token count is a whole number, zero or more)"
# (a whole number written as a decimal, 9412.0: JSON writes a count as an integer, and the
# readers sum counts as integers, so it is named as what it is, and its call set aside)
NO_DECIMAL = "(a token count is written as a whole number, not a decimal)"
NO_COST = "(a cost is a number, zero or more)"
NULL = "(a null is no count)"
# each bound with what it is, as a problem names it (as `most_for` gives a call's): every
# count of a call's usage is held to the first, whatever its field
CALL_BOUND = (MOST, "twice the largest window of any model")
RUN_BOUND = (RUN_MOST, f"the most a run's totals can hold: a million calls of {MOST:,}")
_PRICE = f"at the dearest price any model charges, ${DEAREST * 1_000_000:,.0f} per million"
RUN_COST_BOUND = (RUN_MOST * DEAREST, f"what a run's most tokens ({RUN_MOST:,}) cost {_PRICE}")
CALL_COST_BOUND = (MOST * DEAREST, f"what a call's most tokens ({MOST:,}) cost {_PRICE}")


@dataclass(frozen=True, slots=True)
class SetAside:
    """Recorded usage left out of the bill and the window, at its line, and why: a call's
    that cannot be true (at the line of its reply; `call`: the call itself, where it was
    read as one), a record of run totals that cannot be true (no `call`: see
    `wrong_totals`), or, not `readable`, a record of usage that cannot be read; at `place`
    in a document (`line 38 event 3`, as Message.where says it; "" where its line tells
    it), and in `file` where that is not the transcript's (its path)."""

    line: int
    problem: str
    call: RecordedCall | None = None
    readable: bool = True
    place: str = ""
    file: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"line": self.line}
        if self.place:
            out["place"] = self.place
        if self.file:
            out["file"] = self.file
        return {**out, "problem": self.problem}


def whole(value: Any) -> bool:
    """Is `value` a token count: a whole number, zero or more (not true, 1.0 or "500")?"""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def miscounted(value: Any, most: int | None = None) -> bool:
    """Is `value` written as a count no token count can be, or more than `most` (a missing
    or null field is no count, not a wrong one)?"""
    return value is not None and not (whole(value) and (most is None or value <= most))


def wrong_counts(usage: Any, fields: Sequence[str], prefix: str = "",
                 most: tuple[int, str] = CALL_BOUND, parts: Sequence[tuple[str, str]] = (),
                 nulls: Sequence[str] = ()) -> str:
    """The `fields` of a usage object that no token count can be, as the file has them
    ("": none), each named with `prefix` (where in the usage object they are): a value no
    whole number, zero or more; one more than `most` (a bound and what it is: a call's
    `CALL_BOUND` unless told, `RUN_BOUND` for a run's totals); a part more than the
    whole the format makes it part of (`parts`, each a part's field and its whole's:
    Codex's cached input is input); and a field of `nulls` written as null (a null is no
    count, and read as 0 it would make the prompt smaller than it was: the call is set
    aside). A reader gives as `nulls` the fields its call's prompt size rests on, in
    every format alike: not a count of the reply (a null there leaves the prompt size
    known: the reader names it with `null_counts` as the call's `unsized`, and the call is
    kept, see `unsized`), nor a cache count an SDK's dump writes as null where the
    provider reported none. Every count a reader puts in a file's usage summary is read
    through here."""
    if not isinstance(usage, Mapping):
        return ""
    bound, why = most
    wrong = [f"{prefix}{f} null {NULL}" if usage[f] is None
             else f"{prefix}{f} {figure(usage[f])} (more than {bound:,}, {why})"
             if whole(usage[f]) else f"{prefix}{f} {shown(usage[f])} {not_count(usage[f])}"
             for f in fields if f in usage and (
                 miscounted(usage[f], bound) or usage[f] is None and f in nulls)]
    wrong += [f"{prefix}{part} {figure(usage[part])} (more than the {prefix}{of} "
              f"{figure(usage[of])} it is part of)" for part, of in parts
              if whole(usage.get(part)) and whole(usage.get(of)) and usage[part] > usage[of]
              and not miscounted(usage[part], bound)]
    return ", ".join(wrong)


def not_count(value: Any) -> str:
    """Why `value`, written where a token count belongs, is none, in the words of the rule it
    breaks: a whole number, zero or more, written as a decimal (9412.0) is `NO_DECIMAL`,
    any other value `NO_COUNT`."""
    decimal = isinstance(value, float) and value.is_integer() and value >= 0
    return NO_DECIMAL if decimal else NO_COUNT


def null_counts(usage: Any, fields: Sequence[str], prefix: str = "") -> str:
    """The `fields` a usage object writes as null, each named with `prefix` ("": none): a
    null is no count (read as 0 it would make a prompt smaller than it was), so what it
    stands for is unknown; the reader names it, and leaves out a call whose prompt size
    it makes unknown (see `wrong_counts`), keeping one whose reply's size alone it makes
    unknown (see `unsized`)."""
    if not isinstance(usage, Mapping):
        return ""
    return ", ".join(f"{prefix}{f} null" for f in fields if f in usage and usage[f] is None)


def wrong_totals(line: int, counts: str, costs: str = "", place: str = "", item: int = 0
                 ) -> SetAside | None:
    """A record of run totals (a run's `result` stats, an agent's tally of its session) at
    `line` with values no token count can be (`counts`, as `wrong_counts` names them) or no
    cost (`costs`, as `wrong_costs` does), set aside; None where it has none. In a document
    it is placed as a call's usage is: its problem opens with its `place` (`info`), and a
    document printed over many lines gives the line its item starts on, `item`. Its totals
    are then left out of the usage summary: no part of them is counted."""
    if not counts and not costs:
        return None
    why = (f"recorded run totals {cannot(counts, costs)}; set aside, not counted "
           f"in the usage totals")
    return SetAside(item or line, f"{place}: {why}" if place else why,
                    place=where_in(place, item) if place else "")


def unreadable(line: int, what: str, place: str = "", item: int = 0, file: str = ""
               ) -> SetAside:
    """A record of usage at `line` that cannot be read at all (`what`: what it is instead,
    "the token_count's info is a string, not an object"), left out of the bill and the
    totals, and named: by validate, and in stats' `usage_unread`. In a document it is placed
    as a call's usage is (see `wrong_totals`); `file`: where it is not the transcript."""
    why = f"recorded usage that cannot be read: {what}; left out"
    return SetAside(item or line, f"{place}: {why}" if place else why, readable=False,
                    place=where_in(place, item) if place else "", file=file)


def wrong_costs(record: Any, fields: Sequence[str], prefix: str = "", cents: bool = False,
                most: tuple[float, str] = RUN_COST_BOUND) -> str:
    """The `fields` of a record that no cost can be (a cost is a number, zero or more, and
    no more than `most`, what its most tokens cost at the dearest price: `RUN_COST_BOUND`
    for a run's totals, `CALL_COST_BOUND` for a call's; a missing or null field is no
    cost, not a wrong one), named as `wrong_counts` names counts ("": none); `cents`: a
    cost in hundredths of a dollar, which may be written as decimal text ("1032", $10.32),
    as the managed-agent API writes its list cost."""
    if not isinstance(record, Mapping):
        return ""
    bound, why = most
    return ", ".join(f"{prefix}{f} {shown(record[f])}" + (
        f" (more than ${bound:,.2f}, {why})" if _cost(record[f], cents) else f" {NO_COST}")
        for f in fields if record.get(f) is not None and not _cost(record[f], cents, bound))


def cannot(counts: str = "", costs: str = "", again: str = "") -> str:
    """Why values a file records cannot be true, the one wording of every such problem:
    `counts` no token count can be and `costs` no cost can be, as `wrong_counts` and
    `wrong_costs` name them, each with the rule it breaks; `again`, why what the file
    records twice of one call disagrees."""
    return f"cannot be true: {', '.join(w for w in (counts, costs, again) if w)}"


def _cost(value: Any, cents: bool = False, most: float = math.inf) -> bool:
    found = number(value, cents)  # (an int past what a float holds compared exactly)
    return found is not None and 0 <= found <= most * (100 if cents else 1)


Summed = tuple[tuple[str, int | float], ...]  # as `RecordedCall.summed`


def summed(**amounts: int | float) -> Summed:
    """What a reader added to its usage summary for one call, as `RecordedCall.summed`."""
    return tuple(amounts.items())


def dollars(costs: Iterable[int | float]) -> float:
    """Costs added up as the file wrote them: each as it prints (its shortest decimal), the
    sum rounded to the 6 places a summary shows, so that a sum, or a total less a cost set
    aside, prints as the figures written do ($0.06, not $0.059998 or 0.30000000000000004)."""
    return round(float(sum((Decimal(repr(c)) for c in costs), Decimal(0))), 6)


def shown(value: Any) -> str:
    """A value as a problem names it: a number as written (a whole number too long to read
    by its digits, as `figure` says it), text as written (cut short), another value by its
    kind (a stranger's list may nest deeper than repr can go)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= LONG:
        return figure(value)
    if isinstance(value, (bool, int, float, str)):
        return repr(value)[:60]
    return f"({json_kind(value)})"


def most_for(model: str | None, recorded: int | None = None) -> tuple[int, str]:
    """The most tokens a call of `model` can hold, and what says so: `WINDOWS` times the
    window the file records for it (`recorded`; see `recorded_window`), else times the one
    the table gives it, named by the model the file names; never more than `MOST`."""
    window = recorded_window(model, recorded)
    found = TABLE.find(model) if model else None
    named = printable(model)[:60] if model else "its model"
    if window is not None:
        why = f"the {window:,}-token window the file records for {named}"
    elif found is not None:
        window, why = found.context_window, table_window(named, found)
    if window is None or WINDOWS * window >= MOST:
        return CALL_BOUND
    return WINDOWS * window, f"{WINDOWS} times {why}"


def recorded_window(model: str | None, recorded: Any) -> int | None:
    """The window a file records for `model` (`recorded`), where it is one the model can
    have: a whole number above 0 and no more than a call of it can hold by the table
    (`WINDOWS` times its window, `MOST` for a model it does not know); else None."""
    if not whole(recorded) or recorded == 0:
        return None
    found = TABLE.find(model) if model else None
    most = MOST if found is None else min(WINDOWS * found.context_window, MOST)
    return recorded if recorded <= most else None


class Usage(Protocol):
    """What a call's recorded usage says it held: its prompt size and its reply (None:
    not recorded)."""

    @property
    def billed(self) -> int: ...

    @property
    def output(self) -> int | None: ...


def held(call: Usage) -> int:
    """The tokens a call's usage says it held, prompt and reply: what its model's window
    must hold."""
    return call.billed + (call.output or 0)


def unbelievable(call: RecordedCall) -> str:
    """Why `call` cannot be true ("": it can)."""
    counts = {"prompt": call.billed, "reply": call.output or 0, "reasoning": call.reasoning}
    wrong = call.problem or ", ".join(f"{k} {figure(v)} {NO_COUNT}" for k, v in counts.items()
                                      if v < 0)
    # the cost it added to the file's totals, held to what a call's most tokens cost (one
    # no cost can be is named by its reader)
    cost = dict(call.summed).get("cost_usd", 0)
    dear = "" if wrong or call.costs or call.again else \
        wrong_costs({"cost": cost}, ("cost",), most=CALL_COST_BOUND)
    again = "" if wrong or call.costs else call.again
    if wrong or call.costs or again or dear:
        return (f"recorded usage {cannot(wrong, call.costs or dear, again)}; set aside, not "
                f"{'counted twice nor ' if again else ''}used for the bill or the window")
    tokens = held(call)
    most, why = most_for(call.model, call.window)
    if tokens <= most:
        return ""
    return (f"recorded usage of {figure(tokens)}{' of' * (tokens >= LONG)} tokens (prompt and "
            f"reply) cannot be true: more "
            f"than {most:,}, {why}; set aside, not used for the bill or the window")


def believed(calls: Sequence[RecordedCall], lines: Sequence[int],
             conversations: Sequence[int] = (),
             span: Callable[[int, int], int | None] = lambda a, b: None,
             places: Sequence[tuple[str, int]] = (), sizes: Sequence[int] = (),
             ) -> tuple[list[RecordedCall], list[SetAside]]:
    """The calls that can be true, and the others set aside; `lines[c.prompt]` is the line
    of call `c`'s reply (0 where unknown), `conversations[c.prompt]` its conversation,
    `span(a, b)` the bytes of the file's lines a to b (None where unknown), and
    `places[c.prompt]` the reply's place in a document and the line its item starts on
    (`("[3]", 38)`; "" and 0 where unknown), and `sizes[m]` the most tokens message `m`
    may be of a prompt (`most_held`; none: unknown). A call set aside is placed where its usage
    is (`at` and `place`, in `file`), else at its reply's item, else at its reply's line;
    its problem opens with its place, as a document's other problems do (`[3]: ...`)."""
    def line(c: RecordedCall) -> int:
        return lines[c.prompt] if c.prompt < len(lines) else 0

    def aside_of(c: RecordedCall, why: str) -> SetAside:
        return _placed(c, why, lines, places)

    def conversation(c: RecordedCall) -> int:
        return conversations[c.prompt] if c.prompt < len(conversations) else -1

    kept, aside = [], []
    for c in calls:
        why = unbelievable(c)
        if why:
            aside.append(aside_of(c, why))
        else:
            kept.append(c)
    # each context's calls (of one conversation, with a prompt size or a reply) in order,
    # by place
    runs: dict[int, list[int]] = {}
    for k, c in enumerate(kept):
        if c.prompt > 0 and (c.billed > 0 or c.output):
            runs.setdefault(conversation(c), []).append(k)
    fell: dict[int, str] = {}
    # first the replies: one made up would be room for the next prompt to grow (fell_back);
    # one its model's window cannot hold after its prompt, the window no recorded prompt
    # of the file passes, is made up whether or not a next prompt would resend it
    widest = max((c.billed for c in kept), default=0)
    fell.update((k, why) for k, c in enumerate(kept) if (why := outgrew(c, widest)))
    # each is held by the next call of its context that records a prompt (one recording a
    # prompt of 0 tells nothing of what the reply before it added)
    for run in runs.values():
        after = None
        for k in reversed(run):
            if after is not None and (why := overran(kept[k], kept[after], line)):
                fell[k] = why
            if kept[k].billed > 0:
                after = k
    # what the context holds of the file up to each message, of its conversation (what a
    # prompt may drop of it: see `collapsed`), where the reader tells each message's size
    upto: list[int] = []
    totals: dict[int, int] = {}
    for m, size in enumerate(sizes):
        key = conversations[m] if m < len(conversations) else -1
        totals[key] = totals.get(key, 0) + size
        upto.append(totals[key])
    for every in runs.values():
        run = [k for k in every if k not in fell and kept[k].billed > 0]
        lows: list[RecordedCall | None] = [None] * len(run)  # the least later prompt
        for n in range(len(run) - 2, -1, -1):
            later, least = kept[run[n + 1]], lows[n + 1]
            lows[n] = later if least is None or later.billed <= least.billed else least
        before, carried = None, 0
        for n, k in enumerate(run):
            if before is None:
                agree = [kept[j] for j in run[n + 1:n + 3]]
                why = outvoted(kept[k], agree, lows[n], line)
            else:
                after = kept[run[n + 1]] if n + 1 < len(run) else None
                held = upto[before.prompt] + carried if before.prompt < len(upto) else None
                why = fell_back(kept[k], before, lows[n], line, span) or collapsed(
                    kept[k], before, after, held, line)
            if why:
                fell[k] = why
            else:
                before = kept[k]
                # (what the prompts after it may drop that the file holds no text of)
                carried += before.reasoning + (before.output or 0 if before.hidden else 0)
    aside += [aside_of(kept[k], why) for k, why in fell.items()]
    out = [c for k, c in enumerate(kept) if k not in fell]
    return out, sorted(aside, key=lambda x: x.line)


def no_prompt_size(nulls: str) -> str:
    """What validate says of a call whose usage writes a count its prompt size rests on as
    null (`nulls`, as `null_counts` names them), in every format: the call is left out."""
    return f"recorded usage with no prompt size: {nulls} (a null is no count); left out"


def no_output(nulls: str) -> str:
    """What validate says of a call whose usage writes the counts of its reply `nulls` as
    null (as `null_counts` names them), in every format: its prompt size is still known,
    so the call is kept, fitted and anchored on; only its reply's size is unknown."""
    return (f"recorded usage with no output size: {nulls} (a null is no count); the "
            "reply's size is unknown")


def unsized(calls: Sequence[RecordedCall], lines: Sequence[int] = (),
            places: Sequence[tuple[str, int]] = ()) -> list[SetAside]:
    """Each of `calls` whose usage writes a count of its reply as null (`unsized`), named
    (`no_output`) where its usage is, placed as `believed` places a call it sets aside
    (`lines` and `places` as it takes them): it is not set aside, as one whose prompt
    count is null is, for its prompt size is known."""
    return [_placed(c, no_output(c.unsized), lines, places) for c in calls if c.unsized]


def _placed(c: RecordedCall, why: str, lines: Sequence[int], places: Sequence[tuple[str, int]]
            ) -> SetAside:
    """`c` named for `why` where its usage is (see `_aside`), its reply's line and place
    `lines[c.prompt]` and `places[c.prompt]` where they are given."""
    place, item = places[c.prompt] if c.prompt < len(places) and not c.file else ("", 0)
    return _aside(c, why, place, item, lines[c.prompt] if c.prompt < len(lines) else 0)


def alone(calls: Sequence[RecordedCall]) -> list[SetAside]:
    """Those of `calls` that cannot be true by themselves (see `unbelievable`), set aside
    where their usage is: calls made on no context a bill measures (before a compaction
    older than the newest one with calls, off the branch, before a cut to fit the window,
    or told of with no reply), which only the usage totals hold; the rules of a context's
    rise and fall are not theirs to judge."""
    return [_aside(c, why) for c in calls if (why := unbelievable(c))]


def _aside(c: RecordedCall, why: str, place: str = "", item: int = 0, line: int = 0
           ) -> SetAside:
    """`c` set aside for `why`, where its usage is (`at` and `place`, in `file`), else at
    its reply's `place` and `item`, else at its reply's `line`; its problem opens with its
    place, as a document's other problems do (`[3]: ...`)."""
    if c.place or c.at:
        place, item = c.place, c.at
    # (in another file written on one line: that file's line 1, not the reply's; where no
    # reply places it either, as in a log of requests with no reply, the file's line 1)
    return SetAside(item or (0 if c.file else line) or 1, f"{place}: {why}" if place else why, c,
                    place=where_in(place, item) if place else "", file=c.file)


WHOLE_RUN = "whole_run"  # a usage summary's key that names its run totals


def with_run_totals(usage: dict[str, Any], totals: dict[str, Any]) -> dict[str, Any]:
    """A usage summary with a run's totals as the agent wrote them (a Claude stream-json
    `result` line's, a managed-agent session's), named under `whole_run`: they are the whole
    run's, so a call set aside is not taken out of them (see `believed_usage`), where the
    summary's other figures are sums of the calls judged true."""
    if not totals:
        return usage
    return {**usage, **totals, WHOLE_RUN: [*usage.get(WHOLE_RUN, ()), *totals]}


def believed_usage(usage: dict[str, Any], aside: Sequence[SetAside],
                   kept: Sequence[RecordedCall], earlier: Sequence[SetAside] = ()
                   ) -> dict[str, Any]:
    """A file's usage summary without the calls set aside (`aside` of the context, whose
    calls `kept` can be true, and `earlier`, of the contexts before a compaction): what
    each added to it taken back out, its cost (`cost_usd`) too (never below 0: a total the
    agent kept may never have held a count made up in one call's record), `calls` less them,
    `calls_set_aside` how many there were,
    and the last prompt size the last kept call's where the last one recorded was set
    aside (none where no call was kept)."""
    last = [x.call for x in aside if x.call is not None]
    calls = [x.call for x in earlier if x.call is not None] + last
    if not usage or not calls:
        return usage
    out = dict(usage)
    # each call's share (none of a summary that is no sum of calls)
    shares = [{"calls": 1, **dict(c.summed)} if c.summed else {} for c in calls]
    for share in shares:
        for key, amount in share.items():
            value = out.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                # (a cost as the readers add them up: as written, never below 0)
                out[key] = max(dollars((value, -amount)), 0) if isinstance(value, float) \
                    or isinstance(amount, float) else max(value - amount, 0)
    out["calls_set_aside"] = len(shares)
    if "last_input_tokens" in out and last and max(c.prompt for c in last) > max(
            (c.prompt for c in kept), default=-1):
        billed = next((c.billed for c in reversed(kept) if c.billed > 0), None)
        if billed is None:
            del out["last_input_tokens"]
        else:
            out["last_input_tokens"] = billed
    return out


def fell_back(call: RecordedCall, before: RecordedCall, low: RecordedCall | None,
              line: Callable[[RecordedCall], int], span: Callable[[int, int], int | None]
              ) -> str:
    """Why `call` cannot be true, as a prompt that rose with nothing in the file to carry
    it and fell back, or rose more than `MARGIN` besides (see the module's note), given the
    call `before` it and the later call of its context with the least prompt, `low` ("": it
    can)."""
    between = span(line(before), line(call)) if 0 < line(before) < line(call) else None
    if between is None:
        return ""
    most = before.billed + (before.output or 0) + before.reasoning + between
    if call.billed <= RISE * most:
        return ""
    grew = (f"{RISE} times the most the call before it could grow to (its "
            f"{before.billed:,} at line {line(before):,}, its reply and the {between:,} bytes "
            f"of the file between them)")
    if low is not None and call.billed > RISE * low.billed:
        return (f"recorded prompt of {call.billed:,} tokens cannot be true: more than {RISE} "
                f"times the {low.billed:,} a later call of the same context records (line "
                f"{line(low):,}), and {grew}; set aside, not used for the bill or the window")
    if call.billed <= most + MARGIN:
        return ""
    return (f"recorded prompt of {call.billed:,} tokens cannot be true: more than {grew}, "
            f"and more than {MARGIN:,} above it; set aside, not used for the bill or the "
            f"window")


def collapsed(call: RecordedCall, before: RecordedCall, after: RecordedCall | None,
              held: int | None, line: Callable[[RecordedCall], int]) -> str:
    """Why `call` cannot be true, as a prompt that fell with nothing in the file to account
    for it (see the module's note), given the call `before` it, the next call of its
    context, `after` (None: none), and the most the prompt before it held of the file
    (`held`, in tokens: its messages' `most_held`, and the thinking and reasoning its calls
    recorded; None: unknown) ("": it can)."""
    if held is None or RISE * call.billed >= before.billed or \
            before.billed - call.billed <= held or not 0 < line(before) < line(call):
        return ""
    if after is not None and after.billed <= RISE * call.billed:
        return ""  # the next call agrees: what is sent besides the messages changed
    next_call = "it is the last call of its context" if after is None else \
        f"the next call (line {line(after):,}) records {after.billed:,}, more than {RISE} times it"
    return (f"recorded prompt of {call.billed:,} tokens cannot be true: less than 1/{RISE} of "
            f"the {before.billed:,} the call before it records (line {line(before):,}), with "
            f"no compaction between, it is {before.billed - call.billed:,} less, more than "
            f"that prompt can have held of the file ({held:,}), and {next_call}; set aside, "
            f"not used for the bill or the window")


def most_held(message: Message) -> int:
    """The most tokens `message` may be of a prompt: its text's bytes (a token is at least
    one), and `IMAGE_MOST` an image."""
    images = sum(isinstance(p, Image) for p in message.parts) + sum(
        isinstance(q, Image) for p in message.parts if isinstance(p, ToolResult)
        for q in p.parts)
    return len(message.text.encode("utf-8", "surrogatepass")) + IMAGE_MOST * images


def outvoted(call: RecordedCall, agree: Sequence[RecordedCall], low: RecordedCall | None,
             line: Callable[[RecordedCall], int]) -> str:
    """Why the first call of a context cannot be true, as a prompt more than `RISE` times
    and `MARGIN` above every later call of its context, the next two of which (`agree`)
    are within `RISE` times each other (see the module's note) ("": it can)."""
    if low is None or len(agree) < 2:
        return ""
    a, b = sorted(c.billed for c in agree)
    if b > RISE * a or call.billed <= RISE * low.billed or call.billed <= low.billed + MARGIN:
        return ""
    return (f"recorded prompt of {call.billed:,} tokens cannot be true: the first of its "
            f"context, more than {RISE} times and {MARGIN:,} above every later call of it "
            f"(the least, {low.billed:,} at line {line(low):,}, and the next two agree); set "
            f"aside, not used for the bill or the window")


def outgrew(call: RecordedCall, widest: int) -> str:
    """Why `call` cannot be true, as a reply its model's window cannot hold after its
    prompt (the larger of the window the file records for it and the table's: Codex
    records what the prompt may take, 272,000 of gpt-5's 400,000), where no recorded
    prompt of the file, the largest of which is `widest`, is larger than that window (a
    larger one would show the model served with more, as Claude's 1M): a call's own
    figures never make its window ("": it can, or its model's window is unknown)."""
    found = TABLE.find(call.model) if call.model else None
    windows = [w for w in (recorded_window(call.model, call.window),
                           found and found.context_window) if w]
    window = max(windows, default=None)
    if window is None or not call.output or widest > window or held(call) <= window:
        return ""
    return (f"recorded reply of {call.output:,} tokens cannot be true: with its prompt of "
            f"{call.billed:,} it is more than the {window:,}-token window of "
            f"{printable(call.model or '')[:60]}, and no call of the file records a prompt "
            f"larger than that window; set aside, not used for the bill or the window")


def overran(call: RecordedCall, after: RecordedCall, line: Callable[[RecordedCall], int]
            ) -> str:
    """Why `call` cannot be true, as a reply more than `RISE` times and `MARGIN` above what
    the prompt of the next call of its context, `after`, grew by (the whole of it, where
    `call` records a prompt of 0), `HIDDEN_MARGIN` where the file stores its thinking
    empty: that prompt resends it (see the module's note) ("": it can)."""
    if not call.output or not 0 < line(call) < line(after):
        return ""
    grew = max(after.billed - call.billed, 0)
    margin = HIDDEN_MARGIN if call.hidden else MARGIN
    if call.output <= RISE * grew or call.output <= grew + margin:
        return ""
    reply = "the reply (its thinking stored empty, counted at this output)" if call.hidden \
        else "the reply"
    by = f"to this call's {call.billed:,}, and {reply} is more than {RISE} times and " \
         f"{margin:,} above the {grew:,} it grew by" if call.billed else \
         f"(this call records a prompt of 0), and {reply} is more than {RISE} times and " \
         f"{margin:,} above the whole of it"
    return (f"recorded reply of {call.output:,} tokens cannot be true: the next call of the "
            f"same context (line {line(after):,}), which resends it, records a prompt of "
            f"{after.billed:,} tokens {by}; set aside, not used for the bill or the window")

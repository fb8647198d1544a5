"""`Context`: the messages of an agent loop, kept counted and compressed as the loop runs.

The loop appends each message it sends or receives; only the new message is read and
tokenized (the counter remembers texts it has seen). `needs_compress` is the trigger
`ctxpack compress` uses; `compress()` runs the same pipeline on the messages held and
takes them to the target, well under the trigger, so that the messages sent stay the
same from one compress to the next, only growing at the end: the provider's prompt
cache keeps working between compressions. `rewind(n)` takes the newest steps back out.
Every message appended is kept (in memory, or in a folder once it leaves the context),
and `restore()` gives them all back as they were appended.

`record_usage` (or `append(reply, usage=...)`) tells the prompt size the provider billed
for the call whose reply is the last assistant message: the count is then anchored on it
as `ctxpack.compress(..., usage=...)` anchors it (the size billed, plus the count of what
came after), so the trigger is of what is billed, the system prompt and tools the loop
sends beside the messages included. After a compress (or a rewind past that reply) what
the provider added beside the messages is carried over, as a compressed file carries it.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .archive import Archiver, unpack
from .calibration import Bill, Call, bill_for, last_call, prompt_size
from .errors import InputError, UsageError
from .jsonl import dumps, loads
from .loader import load_values, unmarked_format
from .models import TABLE, ModelTable
from .render import counted
from .tokens import REPLY_PRIMING, MessageCount, TokenCounter
from .transcript import Message
from .workers import Remembered

__all__ = ["Context", "Event", "rewind_point", "steps_from"]


@dataclass
class Event:
    """One change `Context` made to the messages: a compress or a rewind, when (UTC),
    the tokens and messages before and after, and what was done, in words. `report` is
    a compress's own report (as `ctxpack.compress` gives it; made when first asked for:
    its retention audit takes a while), None for a rewind; `warnings` what it warns of
    (the report's, as `ctxpack.compress` gives them; a budget above the window is said
    by the first compress of the Context only)."""

    kind: str
    at: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    done: str
    warnings: list[str] = field(default_factory=list)
    _report: Any = field(default=None, repr=False, compare=False)

    @property
    def report(self) -> Any:
        if callable(self._report):
            self._report = self._report()
        return self._report


class Context:
    """The messages of an agent loop, for `model`, to be kept under `budget` tokens.

    `messages` is the list to send. `settings` are compress's config keys
    (`keep_steps=4`, `strategy="structured"`, `target=12000`, ...). With `archive_dir`,
    originals that leave the context are written there (content-addressed, as
    `compress --archive-dir` keeps them) rather than held in memory."""

    def __init__(self, model: str | None = None, budget: int | None = None, *,
                 format: str | None = None, archive_dir: str | None = None,
                 table: ModelTable = TABLE, **settings: Any) -> None:
        from .compression.settings import from_keywords

        self.model = model
        self.format = format
        self.table = table
        self.options = replace(from_keywords({**settings, "budget": budget}), archive=False)
        self.archive_dir = archive_dir
        self.history: list[Event] = []
        self._messages: list[Any] = []
        # each message held as a file of them is read: a message the API's alternation
        # joined turns into is its turns (see formats.anthropic.merged_turns), each with
        # the message's number as its line; and the count of each
        self._parsed: list[Message] = []
        self._counts: list[MessageCount] = []
        self._tokens = REPLY_PRIMING
        self._counter: TokenCounter | None = None
        self._guess: str | None = None  # the format the counter was chosen for
        self._originals: list[Any] = []  # every message appended and not yet stored away
        self._stored: list[dict[str, Any]] = []  # archive refs of those written to the folder
        self._trigger: int | None = None  # in ctxpack's count, for the bill as it is
        self._billed_trigger: int | None = None  # in billed tokens: the settings' own
        self._call: Call | None = None  # the newest call whose prompt size was recorded
        self._said: set[str] = set()  # what the settings warn of, said once (a budget
        # above the window, a target not below the trigger): by the first compress to say it

    # -- the loop's side -------------------------------------------------------------

    @property
    def messages(self) -> list[Any]:
        """The messages to send, in order (a new list; the dicts are those appended or
        written by compress: do not change them)."""
        return list(self._messages)

    @property
    def tokens(self) -> int:
        """The prompt's tokens as ctxpack counts them (what `ctxpack stats` says)."""
        return self._tokens

    @property
    def billed(self) -> int:
        """The prompt as the provider would bill it (see `record_usage`)."""
        return self._bill().tokens if self._messages else 0

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, message: Any, usage: Any = None) -> list[str]:
        """Add one message (a Chat Completions or Anthropic Messages dict); only it is
        read and counted. It must be JSON (it is archived as JSON). With `usage`, the
        message is a reply and `usage` what the provider reported of its call (see
        `record_usage`, whose warnings it returns; none without `usage`). A usage
        `record_usage` refuses is refused before the message is taken: nothing changes."""
        if usage is None:
            self.extend([message])
            return []
        self._judge(message, usage)
        self.extend([message])
        return self.record_usage(usage)

    def record_usage(self, usage: Any) -> list[str]:
        """What the provider reported of the call whose reply is the last assistant
        message: `response.usage` as the API returned it (Chat Completions, Anthropic
        Messages, Responses), or the prompt size. The count is anchored on it, as the
        file API's `usage=` is: the trigger and target are then of what is billed. One no
        call of the model can hold is refused (UsageError); one far below the count is
        passed over, as a file's recorded call is: the warnings returned say so, in the
        words of `ctxpack.compress`'s report (and each compress's Event says it again)."""
        from .compression.report import passed_over

        self._call = last_call(self._parsed, usage, self.model)
        self._trigger = None
        return passed_over(self._bill())

    def _judge(self, message: Any, usage: Any) -> None:
        """Refuse `usage` (UsageError) where `record_usage` would once `message` is held:
        judged on the message read alone, so that a refusal leaves the messages as they
        were (and a retry does not hold the message twice)."""
        prompt_size(usage)  # (no prompt size at all: the message need not be read)
        if isinstance(message, dict):
            turns = load_values([message], self.format, model=self.model,
                                table=self.table).messages
            last_call([*self._parsed, *turns], usage, self.model)

    def extend(self, messages: Iterable[Any]) -> None:
        for message in messages:
            if not isinstance(message, dict):
                raise InputError("<messages>", len(self._messages) + 1,
                                 f"expected a message object, found {type(message).__name__}")
            parsed, counts = self._read(message, len(self._messages) + 1)
            self._messages.append(message)
            self._originals.append(message)
            self._parsed += parsed
            self._counts += counts
            self._tokens += sum(c.total for c in counts)

    @property
    def trigger(self) -> int:
        """The count above which `compress()` acts: the one `ctxpack compress` uses."""
        if self._trigger is None:
            if self._billed_trigger is None:
                from .compression.plan import Plan

                self._billed_trigger = Plan(self._input(), self.options).billed_trigger
            self._trigger = self._bill().counted_at(self._billed_trigger)
        return self._trigger

    @property
    def needs_compress(self) -> bool:
        return bool(self._messages) and self._tokens > self.trigger

    def compress(self) -> Event | None:
        """Compress the messages held through the pipeline of `ctxpack compress`, which
        acts only over the trigger (`needs_compress`) and then goes down to the target:
        tool calls stay with their results, the result fits the budget (or CannotFit is
        raised and nothing changes). What was done is added to `history` and returned;
        None when nothing was."""
        from .compression import now_iso
        from .compression.limiting import of_settings
        from .compression.pipeline import run
        from .compression.report import report_of, warnings_of
        from .compression.writer import records_out

        if not self._messages:
            return None
        given = self._input()
        plan = run(given, self.options)
        if not plan.changed:
            return None
        now = now_iso()
        out = records_out(plan, now)
        before, n = self._tokens, len(self._messages)
        self._replace(out)
        self._carry(given.bill)
        self._store()
        once = set(of_settings(plan))
        warnings = [w for w in warnings_of(given, [plan]) if w not in once & self._said]
        self._said |= once
        event = Event("compress", now, before, self._tokens, n, len(out), _done(plan.stages),
                      warnings,
                      lambda: report_of(given, [plan], Archiver(enabled=False)))
        self.history.append(event)
        return event

    def rewind(self, steps: int = 1, *, rounds: int | None = None, to: int | None = None,
               to_round: int | None = None) -> Event:
        """Take the newest `steps` steps (or `rounds` rounds, or every step after step
        `to`, or every round after round `to_round`) back out of the messages: whole
        tool calls with their results, and whatever came after them. They stay
        archived: `restore()` gives them back."""
        from .compression import now_iso

        other = rounds is not None or to is not None or to_round is not None
        cut = rewind_point(self._parsed, steps=None if other else steps, rounds=rounds,
                           to=to, to_round=to_round, name="<messages>")
        before, n = self._tokens, len(self._messages)
        what = counted(steps_from(self._parsed, cut), "step")
        bill = self._bill()
        kept = self._parsed[cut].line - 1  # (no cut parts a message's turns)
        self._replace(self._messages[:kept])
        if self._call is not None and self._call.prompt >= cut:
            self._carry(bill)  # the reply of the call recorded is taken out
        self._store()
        event = Event("rewind", now_iso(), before, self._tokens, n, kept,
                      f"rewound {what}: {n - kept} message(s) out")
        self.history.append(event)
        return event

    def restore(self) -> list[Any]:
        """Every message appended, in the order appended, as it was appended: what the
        compressions replaced and the rewinds took out included."""
        out: list[Any] = []
        for ref in self._stored:
            data = unpack(ref, "<archive>", self.archive_dir)
            out += [loads(line) for line in io.BytesIO(data)]
        return out + self._originals

    # -- inside ------------------------------------------------------------------------

    def _bill(self) -> Bill:
        """The bill of the messages held, as compress works it out (`Input.bill`)."""
        format = self.format or unmarked_format(self.model, self.table)
        counter = self._counting(format)
        return bill_for([c.total for c in self._counts], self._calls(), None, counter,
                        format, self.model is not None)

    def _calls(self) -> tuple[Call, ...]:
        return (self._call,) if self._call is not None else ()

    def _carry(self, bill: Bill) -> None:
        """After the messages the recorded call was of are gone: what its bill showed is
        sent beside the messages stands for it (as a compressed file's lines carry it;
        see loader.Scanner._stale_calls)."""
        if self._call is not None:
            from .compression.writer import carried_call

            self._call = carried_call(bill)
        self._trigger = None

    def _read(self, message: dict[str, Any], number: int
              ) -> tuple[list[Message], list[MessageCount]]:
        """The message appended as `number`, read and counted as a file of it is: the
        turns the API's alternation joined into it, if it is such a message."""
        try:
            dumps(message)
        except TypeError as exc:
            raise InputError("<messages>", number, f"not JSON: {exc}") from None
        t = load_values([message], self.format, model=self.model, table=self.table)
        if t.format in _WHOLE:
            raise UsageError(f"a Context holds the messages of one conversation, not "
                             f"{t.format} records")
        turns = t.messages
        if not turns or any(not m.split for m in turns[1:]):
            raise InputError("<messages>", number, "not a message the model sees")
        if self.format is None and not t.unsure:
            # the first message that tells the API apart: those before were read as
            # the API a message alone looked like, and counted for its usual model
            self.format = t.format
            if self._counter is not None and t.format != self._guess:
                self._counter, self._trigger, self._billed_trigger = None, None, None
                self._replace(self._messages, again=True)
        counter = self._counting(t.format)
        return [replace(m, lines=(number,)) for m in turns], \
            [counter.message(m) for m in turns]

    def _counting(self, format: str) -> TokenCounter:
        """The counter, made on first need for `model`, else the usual model of the API
        the messages are in."""
        if self._counter is None:
            from .formats import usual_model

            self._guess = format
            self._counter = TokenCounter(self.model or usual_model(format), self.table)
        return self._counter

    def _input(self) -> Any:
        """The messages held as compress reads them: parsed and counted once more only
        where a reader needs its neighbours (`human`: who opened a round)."""
        from .compression.reading import of_transcript

        t = load_values(self._messages, self.format, model=self.model, table=self.table)
        if self._call is not None:
            t = replace(t, calls=(*t.calls, self._call))
        counter = self._counting(t.format)
        return of_transcript(t, self.model, self.table, counted=(counter, self._counts),
                             facts=_facts())

    def _replace(self, messages: list[Any], again: bool = False) -> None:
        """Hold `messages` instead: those held already keep their count (unless read
        `again`); others are read and counted."""
        held: dict[int, list[int]] = {}  # each message held: where its turns are
        for k, p in enumerate(self._parsed):
            held.setdefault(id(self._messages[p.line - 1]), []).append(k)
        parsed: list[Message] = []
        counts: list[MessageCount] = []
        for n, m in enumerate(messages, 1):
            turns = None if again else held.get(id(m))
            if turns is not None:
                parsed += [replace(self._parsed[k], lines=(n,)) for k in turns]
                counts += [self._counts[k] for k in turns]
            else:
                p, c = self._read(m, n)
                parsed += p
                counts += c
        self._messages, self._parsed, self._counts = list(messages), parsed, counts
        self._tokens = sum(c.total for c in counts) + REPLY_PRIMING

    def _store(self) -> None:
        """With an archive folder, write the originals held there and let them go."""
        if self.archive_dir is None or not self._originals:
            return
        blob = b"".join(dumps(m) + b"\n" for m in self._originals)
        self._stored.append(Archiver(self.archive_dir).pack(blob))
        self._originals = []


_WHOLE = ("json-messages", "openai-conversations")
REMEMBER_CHARS = 64 << 20  # of text whose facts compressions in this process remember
_remembered: list[Any] = []


def _facts() -> Any:
    """The facts of texts, remembered by every Context of this process: a loop that
    compresses again, or rewinds and goes on, meets the same outputs again."""
    if not _remembered:
        from .compression.facts import extract_all

        _remembered.append(Remembered(extract_all, len, REMEMBER_CHARS))
    return _remembered[0]


def _done(stages: Iterable[Any]) -> str:
    """What a compress did, in words (as its report's stages say)."""
    words = []
    for s in stages:
        if s.items:
            what = "messages" if s.name in ("summarize", "limit") else "outputs"
            words.append(f"{s.name} {s.items} {what}")
    return ", ".join(words) or "nothing"


def rewind_point(messages: Sequence[Message], *, steps: int | None = None,
                 rounds: int | None = None, to: int | None = None,
                 to_round: int | None = None, name: str = "<messages>") -> int:
    """Where the context is cut to take out the newest `steps` steps, or the newest
    `rounds` rounds, or every step after step `to`, or every round after round
    `to_round` (numbered from 1): the index of the first message taken out, always
    where no tool call is parted from its result."""
    from .compression.units import cuts, units_of
    from .transcript import group_rounds

    given = [x for x in (steps, rounds, to, to_round) if x is not None]
    if len(given) != 1:
        raise UsageError("rewind takes one of: steps, rounds, or the step or round to go "
                         "back to")
    if given[0] < (0 if to is not None or to_round is not None else 1):
        raise UsageError(f"rewind: {given[0]} is not a number of steps or rounds, 1 or more")
    allowed = cuts(messages)
    starts = [u.start for u in units_of(messages, allowed, 0) if u.step]
    if rounds is not None or to_round is not None:
        opened = [r.start for r in group_rounds(messages) if messages[r.start].human]
        if rounds is not None and rounds > len(opened):
            raise UsageError(f"{name}: it has {len(opened)} round(s), not {rounds}")
        if to_round is not None and to_round >= len(opened):
            raise UsageError(f"{name}: it has {len(opened)} round(s); nothing comes after "
                             f"round {to_round}")
        at = opened[-rounds] if rounds is not None else opened[to_round]  # type: ignore[index]
        cut = max(c for c in allowed if c <= at)
    elif steps is not None:
        if steps > len(starts):
            raise UsageError(f"{name}: it has {len(starts)} step(s), not {steps}")
        cut = starts[-steps]
    else:
        assert to is not None
        if to >= len(starts):
            raise UsageError(f"{name}: it has {len(starts)} step(s); nothing comes after "
                             f"step {to}")
        cut = starts[to]
    if cut == 0:
        raise UsageError(f"{name}: nothing would be left", "rewind fewer steps")
    return cut


def steps_from(messages: Sequence[Message], cut: int) -> int:
    """The steps of the messages from `cut` (an allowed cut) on."""
    from .compression.units import cuts, units_of

    return sum(1 for u in units_of(messages, cuts(messages), cut) if u.step)

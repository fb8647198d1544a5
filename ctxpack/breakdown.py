"""Where the tokens of a transcript went: pure computation, no printing.

`stats()` streams a file (or walks a loaded Transcript), counts every message
once, and returns a `FileStats`: totals, by role, by tool (results attributed to
the tool that was called), the largest messages, rounds and steps, context use,
what lies outside the model's context, and the provider's own usage records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .bulk import StreamCounter
from .calibration import (
    Bill,
    ConversationBill,
    bill_for,
    conversation_bills,
    counts_with_hidden,
    hidden_by_conversation,
    no_room,
    unlogged_cause,
)
from .formats import usual_model
from .formats.agent_text import BEFORE_THE_PERSON, round_title
from .formats.base import OUTSIDE_WHY, Layout, Records
from .loader import PathOrFile, Scanner
from .models import TABLE, ModelTable
from .tokens import REPLY_PRIMING, MessageCount, TokenCounter, model_and_window, reported_model
from .transcript import (
    Image,
    Message,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    group_rounds,
    printable,
)
from .workers import Workers

T = TypeVar("T")

# 2: by_role counts tool results as `tool` in every format, reasoning and the reply
# priming as rows of their own (the roles add up to `tokens`); `context` (the context as
# billed, see ctxpack.calibration: of the largest conversation in a file of several, each
# anchored on its own recorded calls, context.file_tokens the file's conversations
# together); context_ratio is of its tokens; usage no longer holds
# counted_context_tokens, not_in_file_tokens and explanation (context.visible and
# context.not_in_file say it)
# 3: context (and its ratio) of the largest conversation in a file of several
# 4: tokens (and by_role's reasoning row) hold what a reply's record says it held but the
#    file does not (thinking stored empty, encrypted reasoning), as compress counts it
# 5: total's billed_tokens and largest_billed renamed billed_all_conversations and
#    billed_largest_conversation (the first read as the largest's, as the CSV's is);
#    context.slope is null where the agent summarized the chat (context.summarized)
SCHEMA_VERSION = 5
PREVIEW_CHARS = 80
UNKNOWN_TOOL = "(unknown tool)"  # a result whose call, and so its tool, the file does not name
REASONING = "reasoning"  # the by_role row of thinking the model is shown again
PRIMING = "priming"  # the by_role row of the tokens each request adds to prime the reply


@dataclass(slots=True)
class MessageStat:
    """What stats keeps of one message once its content is dropped.

    `role` is the row it counts under: `tool` for a message that only carries tool
    results, whatever role its format gives it; `thinking` is the tokens of its
    reasoning parts (an index list until the counts come), and of the reasoning the file
    records but does not hold (see `add_hidden`)."""

    line: int
    role: str
    tokens: int
    preview: str
    human: bool
    result_only: bool
    tool: str | None = None
    calls: list[tuple[str | None, str, int]] = field(default_factory=list)
    results: list[tuple[str | None, str, int]] = field(default_factory=list)
    # the results (places in `results`) that answer a command the reply wrote as text, of
    # no call part (an SWE-agent observation): each is a call of its tool, but where the
    # reply is marked as writing it (`acts`), which counts it
    acted: list[int] = field(default_factory=list)
    acts: str = ""  # as Message.acts
    thinking: list[int] = field(default_factory=list)
    conversation: int = 0
    where: str = ""  # as Message.where names it
    # the same where its line alone does not say it (a document whose messages share one
    # line: `[3]`, `line 38 [3]`), else ""
    place: str = ""
    title: str = ""  # of a message of the person's, the title of the round it opens

    def shares(self) -> dict[str, int]:
        """The message's tokens by row: tool results under `tool`, reasoning under
        `reasoning`, the rest (framing included) under its role."""
        tool = sum(n for _, _, n in self.results)
        reasoning = sum(self.thinking)
        out = {self.role: self.tokens - tool - reasoning}
        if tool:
            out["tool"] = out.get("tool", 0) + tool
        if reasoning:
            out[REASONING] = reasoning
        return out


@dataclass
class ToolStat:
    calls: int = 0
    call_tokens: int = 0
    result_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.call_tokens + self.result_tokens


@dataclass
class Largest:
    line: int
    role: str
    tool: str | None
    tokens: int
    preview: str
    place: str = ""  # in a one-line document, where the message is (`[3]`, `line 38 [3]`)


@dataclass
class RoundStat:
    number: int
    line: int
    messages: int
    steps: int
    tokens: int
    cumulative: int
    place: str = ""  # in a one-line document, where its first message is (as Largest's)
    title: str = ""  # as show heads the round: the first line of the person's words


@dataclass
class FileStats:
    """Stats of one transcript; `--json` serializes exactly this."""

    path: str
    format: str
    model: str
    encoding: str
    exact: bool
    note: str
    messages: int
    tokens: int
    by_role: dict[str, int]
    by_tool: dict[str, ToolStat]
    largest: list[Largest]
    rounds: list[RoundStat]
    steps: int
    context_window: int | None
    context_ratio: float | None
    outside: dict[str, Any]  # messages, tokens, and why they are not context
    sidechain: dict[str, int]
    lines: int
    bytes: int
    skipped: list[dict[str, Any]]
    usage: dict[str, Any]
    conversations: int = 1
    largest_conversation: dict[str, Any] | None = None  # of a file of several conversations
    unsure: str = ""  # why the format was taken without a record that marks it
    # the context as the provider would bill it (kind, visible part, the rest, error): of
    # a file of several conversations, the largest one's (each is its own prompt)
    context: Bill | None = None
    file_context: int | None = None  # the file's conversations together, as billed
    not_in_file_why: str = ""  # what the part of the bill not in the file mostly is
    # the window assumed for the model, where the file records a larger call (the window is
    # then that call's size); None where it is the window
    window_assumed: int | None = None
    # recorded calls that cannot be true, left out of the bill and the window: line, problem
    set_aside: list[dict[str, object]] = field(default_factory=list)
    # recorded usage that cannot be read, left out as well: line, place, problem
    unread: list[dict[str, object]] = field(default_factory=list)
    # requests the file records as failed, with no reply (a batch output's): line, problem
    failed: list[dict[str, object]] = field(default_factory=list)
    # the last recorded calls the bill passed over, far below the count (see
    # calibration.far_below): the line of each reply, and the prompt size it records
    passed_over: list[dict[str, int]] = field(default_factory=list)
    # what counting cost (cache hits, texts tokenized, workers); not part of the JSON schema
    counting: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def no_room(self) -> str:
        """Why no prompt fits the window, where what is sent besides the messages fills
        it (see calibration.no_room); "" where it does not."""
        return "" if self.context is None else \
            no_room(self.context, self.context_window, self.model)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (schema_version SCHEMA_VERSION) of one file's stats."""
        return {
            "path": self.path, "format": self.format, "model": self.model,
            "encoding": self.encoding, "exact": self.exact, "note": self.note,
            "messages": self.messages, "tokens": self.tokens, "by_role": self.by_role,
            "by_tool": {k: {"calls": v.calls, "call_tokens": v.call_tokens,
                            "result_tokens": v.result_tokens, "tokens": v.tokens}
                        for k, v in self.by_tool.items()},
            "largest": [vars(x) for x in self.largest],
            "rounds": len(self.rounds), "steps": self.steps,
            "round_tokens": [vars(r) for r in self.rounds],
            "context_window": self.context_window, "context_ratio": self.context_ratio,
            "context_window_assumed": self.window_assumed,
            "usage_set_aside": self.set_aside, "usage_unread": self.unread,
            "failed_requests": self.failed,
            "conversations": self.conversations,
            "largest_conversation": self.largest_conversation, "outside": self.outside,
            "sidechain": self.sidechain, "lines": self.lines, "bytes": self.bytes,
            "skipped": self.skipped, "usage": self.usage, "format_unsure": self.unsure,
            "context": None if self.context is None else {
                **self.context.to_dict(), "file_tokens": self.file_context
                if self.file_context is not None else self.context.tokens,
                "not_in_file_why": self.not_in_file_why, "passed_over": self.passed_over,
                "no_room": self.no_room},
        }


def preview(message: Message) -> str:
    """A one-line preview of a message's content."""
    text = message.text
    if not text and any(isinstance(p, Image) for p in message.parts):
        text = "[image]"
    # str.split() splits at exactly the characters re's \s matches, at a tenth of the cost
    text = printable(" ".join(text[:4 * PREVIEW_CHARS].split()))
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def message_stat(message: Message) -> MessageStat:
    """What stats keeps of a message: its tokens are filled in once they are counted."""
    role = "tool" if message.result_only else printable(message.role)
    where = printable(message.where)
    stat = MessageStat(message.item_line or message.line, role, 0, preview(message),
                       message.human, message.result_only, conversation=message.conversation,
                       where=where, place=where if message.place else "",
                       title=round_title(message, printable) if message.human else "",
                       acts=printable(message.acts))
    for i, part in enumerate(message.parts):  # part indexes until the counts come
        if isinstance(part, ToolCall):
            stat.calls.append((part.id, printable(part.name), i))
        elif isinstance(part, ToolResult):
            if part.call_id is None and part.written:
                stat.acted.append(len(stat.results))
            stat.results.append((part.call_id, printable(part.name), i))
        elif isinstance(part, Thinking):
            stat.thinking.append(i)
    if stat.calls:
        stat.tool = stat.calls[0][1]
    return stat


def counted(message: Message, count: MessageCount) -> MessageStat:
    """What stats keeps of a message already counted."""
    stat = message_stat(message)
    _fill(stat, count)
    return stat


def _fill(stat: MessageStat, count: MessageCount) -> None:
    stat.tokens = count.total
    parts = count.parts
    if stat.calls:
        stat.calls = [(call_id, name, parts[i]) for call_id, name, i in stat.calls]
    if stat.results:
        stat.results = [(call_id, name, parts[i]) for call_id, name, i in stat.results]
    if stat.thinking:
        stat.thinking = [parts[i] for i in stat.thinking]


def stats(source: PathOrFile | Transcript, model: str | None = None, *, format: str | None = None,
          skip_invalid: bool = False, top: int = 10, table: ModelTable = TABLE,
          progress: Callable[[int], None] | None = None, cache: bool = True,
          session: str | None = None) -> FileStats:
    """Token stats of a transcript file (streamed; of an OpenCode database, its session
    `session` if given) or of a loaded Transcript.

    With `cache`, token counts persist across runs (see ctxpack.cache), so a file
    seen before, or grown since, costs only its new text.
    """
    if isinstance(source, Transcript):
        return _stats_of_transcript(source, model, top, table, cache)
    scanner = Scanner(source, format, skip_invalid=skip_invalid, progress=progress,
                      session=session)
    found = []
    records = Records()  # (of each message, for Layout.held)
    with Workers() as workers:
        collector: StreamCounter[MessageStat] = StreamCounter(
            model, table, scanner.model_of, scanner.usual_model, _fill,
            cache=cache, workers=workers)
        try:
            first = None
            for message in scanner.messages():
                first = first or message
                found.append(stat := message_stat(message))
                records.add(message)
                collector.add(message, stat)
            counter = collector.done()
        finally:
            collector.close()
    assert scanner.layout is not None and scanner.format is not None
    skipped = [{"line": b.line, "problem": b.problem} for b in scanner.skipped]
    result = _breakdown(found, scanner.layout, counter, top, path=scanner.path,
                        format=scanner.format.name, lines=scanner.lines,
                        size=scanner.bytes_read, skipped=skipped, flagged=model is not None,
                        once=scanner.layout.counted_once(
                            scanner.layout.held(records.keys.__getitem__)))
    result.unsure = scanner.unsure
    result.not_in_file_why = unlogged_cause(scanner.format.name, first)
    result.counting = collector.tally
    return result


def transcript_models(t: Transcript) -> list[str | None]:
    """The models to count a loaded transcript with, in order: the one it names, its format's."""
    return [t.model, usual_model(t.format)]


def count_loaded(t: Transcript, items: Iterable[tuple[Message, T]], model: str | None,
                 table: ModelTable, deliver: Callable[[T, MessageCount], None], *,
                 cache: bool = False,
                 workers: Workers | None = None) -> tuple[TokenCounter, dict[str, Any]]:
    """Count the messages of the loaded transcript `t` (each with its payload for
    `deliver`) as stats streams a file's (StreamCounter): each conversation with the model
    it names (`Transcript.model_of`), the first, where it names none, with its format's.
    The counter of the last conversation is returned, and the counting's tally."""
    collector: StreamCounter[T] = StreamCounter(model, table, t.model_of,
                                                lambda: usual_model(t.format), deliver,
                                                cache=cache, workers=workers)
    try:
        for m, payload in items:
            collector.add(m, payload)
        return collector.done(), collector.tally
    finally:
        collector.close()


def context_counts(t: Transcript, counter: TokenCounter, flagged: bool) -> list[MessageCount]:
    """Each context message of `t` counted as stats counts it: with `counter` (its model
    asked for, `flagged`, or the one the file's only conversation is counted with), else
    each conversation with the model it names (see `count_loaded`), as sessions of several
    models joined in one file are."""
    if flagged or len({m.conversation for m in t.messages}) < 2:
        return [counter.message(m) for m in t.messages]
    counts: list[MessageCount | None] = [None] * len(t.messages)
    count_loaded(t, ((m, i) for i, m in enumerate(t.messages)), None, counter.table,
                 counts.__setitem__)
    return counts  # type: ignore[return-value]


def _stats_of_transcript(t: Transcript, model: str | None, top: int,
                         table: ModelTable, cache: bool) -> FileStats:
    ordered = [*t.messages, *t.sidechain, *t.outside]
    n, s = len(t.messages), len(t.sidechain)
    layout = Layout(list(range(n)), list(range(n, n + s)), t.model, t.usage,
                    conversations=t.conversations, empty=t.conversations,
                    calls=list(t.calls), outside_why=t.outside_why,
                    earlier=list(t.earlier), earlier_calls=list(t.earlier_calls),
                    set_aside=list(t.set_aside), failed=list(t.failed))
    found = [message_stat(m) for m in ordered]
    with Workers() as workers:
        counter, tally = count_loaded(t, zip(ordered, found, strict=True), model, table,
                                      _fill, cache=cache, workers=workers)
    size = sum(len(r.raw) for r in t.records)
    skipped = [{"line": b.line, "problem": b.problem} for b in t.skipped]
    repeated = {id(m) for m in t.repeated}
    result = _breakdown(found, layout, counter, top, path=t.path, format=t.format,
                        lines=len(t.records), size=size, skipped=skipped,
                        flagged=model is not None,
                        once={i for i, m in enumerate(ordered) if id(m) in repeated})
    result.unsure = t.unsure
    result.not_in_file_why = unlogged_cause(t.format, next(iter(ordered), None))
    result.counting = tally
    return result


def _breakdown(all_stats: list[MessageStat], layout: Layout, counter: TokenCounter, top: int,
               once: set[int], **meta: Any) -> FileStats:
    """`once`: the messages outside the context that are not counted there, as the context
    or an earlier message holds them (Layout.counted_once)."""
    context = [all_stats[i] for i in layout.context]
    counts = [s.tokens for s in context]  # as read: the bill adds what the file hides
    flagged = meta.get("flagged", False)
    conversations = layout.held_conversations()
    # each conversation sent is primed for its reply; one of no messages (an OpenHands run
    # that failed before its first event) is counted among the file's, and sends nothing
    primed = len({s.conversation for s in context})
    reported, exact, note = reported_model(counter, layout.model, usual_model(meta["format"]),
                                           flagged)
    # each conversation's bill says the slope its hidden output is converted at
    if conversations > 1 and context:
        single, bills = None, _conversation_bills(context, counts, layout, counter,
                                                  meta["format"], flagged, exact)
        hidden = hidden_by_conversation(counts, bills)
    else:
        single = bill_for(counts, layout.calls, layout.model, counter, meta["format"],
                          flagged, primed, exact=exact,
                          earlier=([all_stats[i].tokens for i in layout.earlier],
                                   layout.earlier_calls))
        hidden = counts_with_hidden(counts, layout.calls, single)
    add_hidden(context, hidden)
    side = [all_stats[i] for i in layout.sidechain]
    seen = set(layout.context) | set(layout.sidechain)
    beyond = [s for i, s in enumerate(all_stats) if i not in seen]
    outside = [s for i, s in enumerate(all_stats) if i not in seen and i not in once]
    total = sum(s.tokens for s in context) + REPLY_PRIMING * primed
    by_role = _by_role(context, primed)
    model, window, assumed = model_and_window(counter, layout.model, layout.usage, flagged,
                                              layout.calls)
    if reported != counter.model:  # (a model ctxpack does not know is reported as named)
        model = reported
    if single is None:  # each conversation is its own prompt: the largest is billed
        billed, largest, whole = _largest_conversation(context, bills)
    else:
        billed, largest, whole = single, None, single.tokens
    measured = billed.tokens
    rounds = _rounds(context)
    return FileStats(
        path=meta["path"], format=meta["format"], model=model,
        encoding=counter.encoding_name, exact=exact, note=note,
        messages=len(context), tokens=total, by_role=by_role, by_tool=by_tool(context, beyond),
        largest=_largest(context, top), rounds=rounds,
        steps=sum(len(r.steps) for r in group_rounds(context)),
        context_window=window, context_ratio=round(measured / window, 4) if window else None,
        window_assumed=assumed if assumed < window else None,
        outside={"messages": len(outside), "tokens": sum(s.tokens for s in outside),
                 "why": (layout.outside_why or OUTSIDE_WHY) if outside else ""},
        sidechain={"messages": len(side), "tokens": sum(s.tokens for s in side)},
        lines=meta["lines"], bytes=meta["size"], skipped=meta["skipped"],
        usage=dict(layout.usage), conversations=conversations,
        largest_conversation=largest, context=billed, file_context=whole,
        set_aside=[x.to_dict() for x in layout.set_aside if x.readable],
        unread=[x.to_dict() for x in layout.set_aside if not x.readable],
        failed=[{"line": line, "problem": problem} for line, problem in layout.failed],
        passed_over=[{"line": context[p].line, "billed": b} for p, b in billed.passed
                     if p < len(context)],
    )


def add_hidden(context: list[MessageStat], raised: list[int]) -> None:
    """Each reply's count raised to what the file records of it but does not hold
    (thinking stored empty, reasoning held encrypted: see calibration.counts_with_hidden),
    the difference under `reasoning`: the figure compress reads and the bill is of."""
    for s, n in zip(context, raised, strict=True):
        if n > s.tokens:
            s.thinking.append(n - s.tokens)
            s.tokens = n


def _by_role(context: list[MessageStat], conversations: int) -> dict[str, int]:
    """Tokens by row, largest first; the rows add up to the context's total."""
    by_role: dict[str, int] = {}
    for s in context:
        for role, n in s.shares().items():
            by_role[role] = by_role.get(role, 0) + n
    if conversations:
        by_role[PRIMING] = REPLY_PRIMING * conversations
    return dict(sorted(by_role.items(), key=lambda kv: -kv[1]))


def _conversation_bills(context: list[MessageStat], counts: list[int], layout: Layout,
                        counter: TokenCounter, format: str, flagged: bool, exact: bool
                        ) -> list[ConversationBill]:
    """Each conversation of a many-conversation file (calibration.conversation_bills), the
    calls its bill passed over placed in the context. `counts` are the messages' counts as
    read (the bill adds what the file hides)."""
    return [(at, calls, replace(billed, passed=tuple((at[p], b) for p, b in billed.passed)))
            for at, calls, billed in conversation_bills(
                counts, [s.conversation for s in context], layout.calls, layout.model,
                counter, format, flagged, exact)]


def _largest_conversation(context: list[MessageStat],
                          bills: list[ConversationBill]) -> tuple[Bill, dict[str, int], int]:
    """Of a many-conversation file's conversations (`_conversation_bills`), the one
    measured against the window, the largest as billed: its bill, its number (1-based, in
    file order), first line, messages and tokens (its reply priming included); and the
    bills of all of them together."""
    best: tuple[Bill, dict[str, int]] | None = None
    whole = 0
    for at, _, billed in bills:
        whole += billed.tokens
        if best is None or billed.tokens > best[0].tokens:
            # (numbered as the file holds them, an empty one counted; placed as `show`
            # names its first message: `line 3` where each message has a line of its own)
            first = context[at[0]]
            best = billed, {"number": first.conversation + 1, "line": first.line,
                            "place": first.place or f"line {first.line:,}",
                            "messages": len(at),
                            "tokens": sum(context[i].tokens for i in at) + REPLY_PRIMING}
    assert best is not None  # (a file of several conversations has messages)
    return (*best, whole)


def by_tool(context: list[MessageStat], outside: Iterable[MessageStat] = ()
            ) -> dict[str, ToolStat]:
    """Calls and tokens by tool, largest first; each result message's `tool` is set to
    the tool it answers (a call `outside` the context, cut from it, names it too)."""
    names = {call_id: name for s in outside for call_id, name, _ in s.calls if call_id}
    tools: dict[str, ToolStat] = {}
    written = False  # the reply before wrote the command a result of no call answers
    for s in context:
        if s.role == "assistant":
            written = bool(s.acts)
        if s.acts:  # a call where it is written (its tokens are the reply's text)
            tools.setdefault(s.acts, ToolStat()).calls += 1
        for call_id, name, tokens in s.calls:
            if call_id:
                names[call_id] = name
            t = tools.setdefault(name or "?", ToolStat())
            t.calls += 1
            t.call_tokens += tokens
        for k, (call_id, own, tokens) in enumerate(s.results):
            name = names.get(call_id or "") or own or UNKNOWN_TOOL
            tool = tools.setdefault(name, ToolStat())
            tool.result_tokens += tokens
            if k in s.acted:  # (its call's tokens are the reply's text)
                tool.calls += not written
                written = False
            if s.tool is None:
                s.tool = name
    return dict(sorted(tools.items(), key=lambda kv: -kv[1].tokens))


def _largest(context: list[MessageStat], top: int) -> list[Largest]:
    biggest = sorted(context, key=lambda s: -s.tokens)[: max(top, 0)]
    return [Largest(s.line, s.role, s.tool, s.tokens, s.preview, s.place) for s in biggest]


def _rounds(context: list[MessageStat]) -> list[RoundStat]:
    """Each round's tokens, and the context so far: the rounds' tokens and the reply
    priming of each conversation begun (so the last is the file's total)."""
    out: list[RoundStat] = []
    running = 0
    begun: set[int] = set()
    for r in group_rounds(context):
        tokens = sum(context[i].tokens for i in r.indexes)
        running += tokens
        begun.update(context[i].conversation for i in r.indexes)
        out.append(RoundStat(r.number, context[r.start].line, r.end - r.start, len(r.steps),
                             tokens, running + REPLY_PRIMING * len(begun),
                             context[r.start].place,
                             context[r.start].title or BEFORE_THE_PERSON))
    return out

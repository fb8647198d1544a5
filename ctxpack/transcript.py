"""The canonical transcript model: plain values, no I/O, no tokens.

A transcript is an ordered sequence of messages made of typed parts. Rounds start at
a human user message; steps are an assistant action plus the tool results that
answer it. Every message remembers where in the file it came from. Transcripts,
messages and parts are frozen: a loaded transcript is a read-only view of its file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeGuard

# The first line of every summary message ctxpack writes: such a message is never a
# person's request, whatever its role.
SUMMARY_HEADING = "## Archived Session Summary"
META_KEY = "ctxpack"  # the field of every record compress writes or changes
REWOUND = "rewound"  # the kind of the `ctxpack` object a rewind writes


def compress_wrote(meta: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a line's `ctxpack` object is compress's: any but a rewind's, unless the
    rewind took the place of one compress wrote (`over`; a rewind written before that key
    kept only compress's bill, `not_in_file_tokens`). A rewind changes no line's content,
    so the usage recorded before it is still of the context as it is."""
    if not isinstance(meta, dict):
        return False
    return meta.get("kind") != REWOUND or "over" in meta or "not_in_file_tokens" in meta


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    kind: ClassVar[str] = "text"


@dataclass(frozen=True, slots=True)
class Thinking:
    text: str
    kind: ClassVar[str] = "thinking"


@dataclass(frozen=True, slots=True)
class Image:
    """An image; `data` is base64 when inline, `url` when referenced."""

    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    detail: str | None = None
    kind: ClassVar[str] = "image"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call as the model wrote it; `arguments` is the JSON (or free) text it produced.

    `written`: the model wrote the call in its reply's text (Cline's `<read_file>` XML), so
    that the API carried text, not a call: `arguments` is that text as written, and it is
    counted and validated as the text it is; only ctxpack reads it as a call (and convert,
    where a tool answered it, makes it one).

    `place`: where a call the file gives no id is in its message's record (`parts[0]`,
    `toolCalls[1]`), which is how validate names it; its `id` is then the reader's own,
    made up to pair it with its result, and never shown."""

    id: str | None
    name: str
    arguments: str
    written: bool = False
    place: str = ""
    kind: ClassVar[str] = "tool_call"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's output; `written`: it answers a written call (see ToolCall), and was sent
    as the text its parts hold. `name`: the function it is the output of, where the
    format gives a result one (a Gemini `functionResponse`, a Gemini CLI call holding
    its result): how validate names a result no call asked for, and how a Gemini result
    without an id finds its call."""

    call_id: str | None
    parts: tuple[Text | Image, ...]
    is_error: bool = False
    written: bool = False
    name: str = ""
    kind: ClassVar[str] = "tool_result"

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, Text))


Part = Text | Thinking | Image | ToolCall | ToolResult


@dataclass(frozen=True, slots=True)
class Message:
    """One message the model sees.

    `role` is system, developer, user, assistant or tool. `human` marks a user
    message a person typed (it starts a round). `lines` are the 1-based source
    lines it was read from; `raw` is the record (or item) it came from, as parsed: read
    it, do not edit it.
    """

    role: str
    parts: tuple[Part, ...]
    lines: tuple[int, ...] = ()
    raw: Any = None
    id: str | None = None
    name: str | None = None
    model: str | None = None
    human: bool = False
    conversation: int = 0
    # where in a one-line document the message is (`history[3]`), when its line says nothing
    place: str = ""
    # the line its item starts on in such a document pretty-printed (0: `line` says it)
    item_line: int = 0
    # context the agent sends with the message before it (Claude Code's attachments: a
    # file a person mentioned, a reminder after a tool result): never cut from that message
    joined: bool = False
    # a turn read out of the message before it in the file (the person's words after a
    # tool result, which the Messages API's alternation sends as one message: see
    # formats.anthropic.merged_turns): billed as blocks of that message, it pays no
    # message's overhead of its own. Always `joined` too.
    split: bool = False
    # of a reply written over several lines (one block a line, as Claude Code and
    # stream-json write a response), each line's message as read, its record its `raw`:
    # what the provider would refuse is in any of them (validate); else ()
    pieces: tuple[Message, ...] = ()
    # of a reply that writes its command in its text, of no call part, where its file
    # names the command apart (SWE-agent's `action`): the tool the command's first word
    # names, a call of which stats counts where it is written, answered or not ("": none)
    acts: str = ""

    @property
    def line(self) -> int:
        return self.lines[0] if self.lines else 0

    @property
    def where(self) -> str:
        """Where the message is, as a person looks for it (show, stats, convert, validate's
        pairing): its line; in a document whose messages share one line, its place in it,
        after the line its item starts on where the document is printed over many
        (`line 38 [3]`, as a JSONL line of many names its messages: `line 1 event 4`)."""
        return where_in(self.place, self.item_line) if self.place else f"line {self.line:,}"

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p for p in self.parts if isinstance(p, ToolResult)]

    @property
    def result_only(self) -> bool:
        """True when the message only carries tool results (a step's second half)."""
        return only_results(self.parts)

    @property
    def text(self) -> str:
        """All readable text of the message, parts joined by newlines."""
        return self.text_with({})

    def text_with(self, outputs: Mapping[int, str]) -> str:
        """The message's text with its jth tool output read as `outputs[j]` where given
        (as compress left it: masked, truncated)."""
        out: list[str] = []
        j = 0
        for p in self.parts:
            if isinstance(p, (Text, Thinking)):
                out.append(p.text)
            elif isinstance(p, ToolCall):
                out.append(p.arguments if p.written else f"{p.name}({p.arguments})")
            elif isinstance(p, ToolResult):
                out.append(outputs.get(j, p.text))
                j += 1
        return "\n".join(out)


def where_in(place: str, line: int = 0) -> str:
    """A place in a document (`[3]`, `event 3`) as a person looks for it: after the line it
    starts on, where that says more than the document's one line (`line 38 [3]`)."""
    return f"line {line:,} {place}" if line else place


def printable(text: str) -> str:
    """`text` with each lone surrogate (JSON may hold one, UTF-8 cannot) as '?': for what
    is printed of a file's text, and written as JSON, CSV and markdown."""
    return text.encode("utf-8", "replace").decode("utf-8")


def only_results(parts: Sequence[Part]) -> bool:
    """True for parts that are all tool results (and not none)."""
    return bool(parts) and all(isinstance(p, ToolResult) for p in parts)


def opens_with_summary(message: Message) -> bool:
    """Is this a summary compress wrote (its first part opens with SUMMARY_HEADING)?"""
    first = message.parts[0] if message.parts else None
    return isinstance(first, Text) and first.text.startswith(SUMMARY_HEADING)


@dataclass(frozen=True, slots=True)
class Record:
    """One line of the file, kept as read so that writing it back is exact."""

    line: int
    raw: bytes


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    problem: str


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A model call whose prompt size the file records: its prompt was the first `prompt`
    messages of the context (its reply is message `prompt`), and the provider counted
    `billed` tokens in it; `output` is what it recorded of the reply (None where it did
    not). `hidden`: the file stores the reply's thinking empty, though the next prompt
    carries it. `reasoning`: tokens of reasoning the file holds only encrypted, which the
    next prompts carry besides what the file shows of the reply — up to the message
    `until` (a user message: the prompts of calls after it no longer do; None: for good)."""

    prompt: int
    billed: int
    output: int | None
    model: str | None
    hidden: bool = False
    reasoning: int = 0
    until: int | None = None
    # of a call standing for what compress carried (`prompt` 0): the slope it billed with,
    # and the one it converted hidden output at (see calibration.Bill.converted)
    slope: float | None = None
    converted: float | None = None
    # no call made, but the size of the context a compaction states it left (Claude
    # Code's `postTokens` of one compress wrote, Codex's `token_count` after `compacted`),
    # standing for the call on it while none is made since
    stated: bool = False
    # what the file recorded of it that no token count can be, and of its cost that no
    # cost can be, as `recorded.wrong_counts` and `wrong_costs` name them ("": nothing)
    problem: str = ""
    costs: str = ""
    # why what the file records of its usage twice disagrees ("": it does not), as a
    # problem says it (a Codex token_count event written again with other values)
    again: str = ""
    # the line its usage is recorded on, where that is not its reply's (0: the reply's),
    # its place in a document (`event 4`: "" for the reply's), and the file it is in,
    # where that is not the transcript's (a sibling file the reader took usage from)
    at: int = 0
    place: str = ""
    file: str = ""
    # what the reader added to the file's usage summary for it (key, amount: tokens, or
    # its cost): taken back out where the call is set aside (empty: a summary that is no
    # sum of calls)
    summed: tuple[tuple[str, int | float], ...] = ()
    # the context window the file records for its model (a Codex rollout's
    # `model_context_window`; None: it records none), as written
    window: int | None = None
    # the counts of its reply the file writes as null, as `recorded.null_counts` names them
    # ("": none): the reply's size is unknown (`output` None), its prompt's still known, so
    # the call is kept (see `recorded.unsized`)
    unsized: str = ""
    # of a call made on no context the file holds (Layout.unbilled_calls), why, as
    # calibrate says it: one of `UNPLACED` ("": at no place the file names)
    unplaced: str = ""


# why a call's prompt is no context the file holds (RecordedCall.unplaced), as calibrate
# says of each count of such calls it cannot fit: each a short phrase after "not used, "
OFF_BRANCH = "off the branch"
CUT = "made before a cut to fit the window"
FORGOTTEN = "made on events a condensation forgot since"
CLEARED = "made on a chat cleared since"
EDITOR = "made by the editor model, on a prompt the file does not hold"
REWRITTEN = "of a reply rewound or written again since"
NO_PLACE = "at no place the file names"
SUMMARIZED = "made on a chat the agent summarized, which the file does not hold"
OPENS = "with nothing before the reply in the file"
UNPLACED = (OFF_BRANCH, CUT, FORGOTTEN, CLEARED, EDITOR, REWRITTEN, NO_PLACE, SUMMARIZED,
            OPENS)


def hides_thinking(message: Message) -> bool:
    """Does the file leave out text of this reply that the next prompt carries? (Thinking
    stored empty, as Claude Code writes it for some models.)"""
    return message.role == "assistant" and any(isinstance(p, Thinking) and not p.text
                                               for p in message.parts)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A loaded transcript: every line of the file plus the messages the model sees.

    `messages` is the model-visible context in order. `sidechain` holds sub-agent
    messages found in the file; `outside` counts message records that are in the
    file but no longer model input (before a compaction, off the active branch).
    It is a read-only view of the file: `write` gives back its `records` as read;
    `compress` is how what a transcript holds changes.
    """

    format: str
    path: str
    records: Sequence[Record] = ()
    messages: tuple[Message, ...] = ()
    sidechain: tuple[Message, ...] = ()
    outside: tuple[Message, ...] = ()
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    skipped: tuple[BadLine, ...] = ()
    unsure: str = ""  # why the format was taken without a record that marks it
    calls: tuple[RecordedCall, ...] = ()  # of context messages, in order
    # recorded calls that cannot be true, left out of `calls` (see ctxpack.recorded)
    set_aside: tuple[Any, ...] = ()
    # recorded calls kept whose reply's size the file writes as null, each named where its
    # usage is (see ctxpack.recorded.unsized)
    unsized: tuple[Any, ...] = ()
    failed: tuple[tuple[int, str], ...] = ()  # requests the file records as failed (Layout)
    problems: tuple[tuple[int, str], ...] = ()  # records its agent reads otherwise (Layout)
    notes: tuple[tuple[int, str, str], ...] = ()  # told, not wrong: line, what, file (Layout)
    outside_why: str = ""  # why `outside` is not context, if the reader says
    # the messages the whole log leaves out, as it holds them elsewhere: those of `outside`
    # that repeat what the file holds again (Layout.copies), and every statement of a
    # message the file states again but the newest (Layout.restated)
    copies: tuple[Message, ...] = ()
    # the newest statement of each message stated again, each message of it with the first
    # message of the first statement: the whole log holds it there (Layout.held)
    held_first: tuple[tuple[Message, Message], ...] = ()
    # those of `outside` that stats leaves out of what lies outside the context, as the
    # context or an earlier message holds them (Layout.counted_once)
    repeated: tuple[Message, ...] = ()
    document: bool = False  # read as one whole document (JSON or text), not line by line
    # how many conversations the file holds (Layout.held_conversations): an OpenHands
    # instance whose run ended before its first event is one, holding no message
    conversations: int = 1
    # the context before the newest compaction (places in `messages`, `sidechain` and
    # `outside` in that order, in model order: a system prompt may be in both contexts)
    # and the calls made on it (their `prompt` a place in `earlier`): what they measured
    # was sent besides the messages stands until a call is recorded after it
    earlier: tuple[int, ...] = ()
    earlier_calls: tuple[RecordedCall, ...] = ()
    # the context before each older compaction, newest first (places as `earlier`'s), and
    # the calls made on it (Layout.older): fitted by calibrate, billed by nothing
    older: tuple[tuple[tuple[int, ...], tuple[RecordedCall, ...]], ...] = ()
    # the calls the usage totals hold that were made on no context the file holds (see
    # Layout.unbilled_calls), but those set aside
    unbilled_calls: tuple[RecordedCall, ...] = ()
    # every message read (context, outside and sub-agent's alike) in the order the reader
    # gave them, which within a line is the order its record holds them
    read: tuple[Message, ...] = ()
    # of a file joining sessions, the model each names (Layout.models): see `model_of`
    models: tuple[str | None, ...] = ()

    def rounds(self) -> list[Round]:
        return group_rounds(self.messages)

    def model_of(self, conversation: int) -> str | None:
        """The model conversation `conversation` names besides its messages: a joined
        session's own (`models`), else the transcript's, of its first."""
        if conversation < len(self.models):
            return self.models[conversation]
        return self.model if conversation == 0 else None


class _Entry(Protocol):
    @property
    def role(self) -> str: ...

    @property
    def human(self) -> bool: ...

    @property
    def result_only(self) -> bool: ...

    @property
    def conversation(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Step:
    """An assistant message (index) and the indexes of the tool-result messages after it."""

    action: int
    results: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Round:
    """Messages from one human message up to the next; round 0 may be a preamble."""

    number: int
    start: int
    end: int
    steps: tuple[Step, ...]

    @property
    def indexes(self) -> range:
        return range(self.start, self.end)


def group_rounds(entries: Sequence[_Entry]) -> list[Round]:
    """Split messages into rounds at human messages, and each round into steps.

    Messages before the first human message (system prompts, injected context)
    form round 0; the first human message opens round 1. In a file of many
    conversations, each is sent apart, so a round never runs into the next one:
    each conversation opens a round of its own (its preamble, or its first request),
    numbered on from the last.
    """
    starts = [i for i, e in enumerate(entries)
              if e.human or i and e.conversation != entries[i - 1].conversation]
    preamble = not starts or starts[0] != 0
    if preamble:
        starts.insert(0, 0)
    bounds = [*starts, len(entries)]
    first = 0 if preamble else 1
    return [
        Round(first + n, start, end, _steps(entries, start, end))
        for n, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False))
        if start < end
    ]


def _steps(entries: Sequence[_Entry], start: int, end: int) -> tuple[Step, ...]:
    steps: list[Step] = []
    action: int | None = None
    results: list[int] = []
    for i in range(start, end):
        e = entries[i]
        if e.role == "assistant":
            if action is not None:
                steps.append(Step(action, tuple(results)))
            action, results = i, []
        elif action is not None and (e.role == "tool" or e.result_only):
            results.append(i)
    if action is not None:
        steps.append(Step(action, tuple(results)))
    return tuple(steps)

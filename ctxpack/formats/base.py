"""What every format module provides: a sniffer and a streaming reader.

A reader is fed parsed records in file order and hands back messages as soon as
they are complete, so a caller may count and drop them (stats of a 1 GB file
never holds the whole file). At the end it says which of the messages it handed
out form the model-visible context, in model order.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from ..jsonl import json_kind
from ..recorded import SetAside, whole
from ..transcript import (
    Message,
    RecordedCall,
    Text,
)

P = TypeVar("P")


# a command as hints quote it, and the word in it that stands for the file
_COMMAND = re.compile(r"`[^`]*`")
_FILE = re.compile(r"\bFILE\b")


def naming(hint: str | None, path: str) -> str | None:
    """A hint that shows the commands to run on a file (`ctxpack convert FILE ...`, `jq
    -c '.[]' FILE`: each in backquotes, as the constants here word them) with the file's
    own name in them."""
    if hint is None or path.startswith("<"):  # (stdin, a stream: FILE stays)
        return hint
    name = shlex.quote(path)
    return _COMMAND.sub(lambda command: _FILE.sub(lambda _: name, command.group()), hint)


# the hint of compress for a format it only reads (`why_not_written` of such a format)
NOT_WRITTEN = ("compress does not rewrite this format, since its agent would not read the result: "
               "`ctxpack convert FILE --to openai -o run.jsonl`, then `ctxpack compress "
               "run.jsonl`, compresses its context as Chat Completions messages")


# what compress says of the output of a format it writes but whose agent reads no such file
# (`not_read_back` of such a format)
NOT_READ_BACK = ("{agent} does not read this file back: the output is for people and for "
                 "ctxpack (restore gives the original back); to send the context to a model, "
                 "`ctxpack convert FILE --to openai -o run.jsonl`, then `ctxpack compress "
                 "run.jsonl`")


class RecordError(Exception):
    """A record that does not fit the format being read; the loader adds file and line
    (`line` if the reader knows it, as of an event deep in a whole-file document, else the
    line where the item at `at` starts, keys and indexes from the top of a whole-file
    document, else the record's first line)."""

    def __init__(self, problem: str, line: int | None = None,
                 at: tuple[str | int, ...] = ()) -> None:
        super().__init__(problem)
        self.line = line
        self.at = at


class Items:
    """A reader's walk over a list of items in a document, which knows the item it is at:
    a RecordError raised while one is read names it (`message 12: ...`), and the loader
    finds the line it starts on in a pretty-printed file by `at` (keys and indexes from
    the top)."""

    def __init__(self, label: str) -> None:
        self.label = label  # of an item, its index in braces: "message {}"
        self.at: tuple[str | int, ...] = ()

    def each(self, values: list[Any], *keys: str) -> Iterator[tuple[int, Any]]:
        """`enumerate(values)`, the list at `keys` in the record, noting each item."""
        for n, value in enumerate(values):
            self.at = (*keys, n)
            yield n, value
        self.at = ()

    def placed(self, error: RecordError) -> RecordError:
        """`error` naming the item being read, if one is and the error has no place."""
        if not self.at or error.at or error.line:
            return error
        return RecordError(f"{self.label.format(self.at[-1])}: {error}", None, self.at)


@dataclass
class Layout:
    """Which emitted messages (numbered 0, 1, ... in emission order) the model sees.

    `context` lists them in model order; `sidechain` lists sub-agent messages;
    every other emitted message is in the file but outside the model's context.
    `records_outside` counts non-message records kept in the file only. `calls` are the
    model calls the file records the prompt size of, their `prompt` a place in `context`.
    """

    context: list[int]
    sidechain: list[int] = field(default_factory=list)
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    conversations: int = 1
    # of a file whose conversations hold no message at all, how many it holds (OpenHands
    # instances whose runs ended before their first event): stats counts them so
    empty: int = 0
    calls: list[RecordedCall] = field(default_factory=list)
    # why the messages outside the context are (a phrase; "" for OUTSIDE_WHY)
    outside_why: str = ""
    # the context before the newest compaction, in model order, and the calls made on it
    # (their `prompt` a place in `earlier`): the bill measures what was sent besides the
    # messages on them until a call is recorded after the compaction
    earlier: list[int] = field(default_factory=list)
    earlier_calls: list[RecordedCall] = field(default_factory=list)
    # the contexts before each older compaction than the newest, newest first, in model
    # order, each with the calls made on it (their `prompt` a place in it): no bill
    # measures them, but calibrate fits each call on the prompt it was sent
    older: list[tuple[list[int], list[RecordedCall]]] = field(default_factory=list)
    # the calls the usage totals hold whose replies are in neither `context` nor `earlier`
    # (made before an older compaction, off the branch, before a cut to fit the window, on a
    # chat cleared since, by a sub-agent the file tells only by its usage (Aider's editor
    # model), or told of with no reply the file holds; `prompt` 0, as they have no place,
    # `at` the line their usage is on): judged by themselves, the totals leave out those
    # that cannot be true
    unbilled_calls: list[RecordedCall] = field(default_factory=list)
    # recorded calls that cannot be true, taken out of `calls` and `earlier_calls` (see
    # ctxpack.recorded)
    set_aside: list[SetAside] = field(default_factory=list)
    # recorded calls kept whose reply's size their usage writes as null (see
    # ctxpack.recorded.unsized): named by validate, their prompt sizes used
    unsized: list[SetAside] = field(default_factory=list)
    # requests the file records as failed (a batch output's error for a request), each
    # at its line with what the provider said: no message, no usage
    failed: list[tuple[int, str]] = field(default_factory=list)
    # records the file's own agent reads otherwise than they seem to say (a rewind to a
    # message the file does not have, which drops them all), or values of the wrong kind
    # read past (a reply's model that is a number, a window no model has), each at its line
    # with what happens: read as the agent reads them, or as said, and named by validate
    problems: list[tuple[int, str]] = field(default_factory=list)
    # messages outside the context that repeat what the file holds elsewhere (Gemini CLI
    # writes tool results again as the next user message): the whole log keeps one copy,
    # leaving these out
    copies: list[int] = field(default_factory=list)
    # what validate tells of the file without calling it wrong, each at its line (in
    # `file`, where that is not the transcript's: "" for it): a Cline request whose own
    # message the history does not hold yet, as a copy of the task taken between the
    # writes of its two files has it
    notes: list[tuple[int, str, str]] = field(default_factory=list)
    # messages that state again one the file holds earlier, each with the first message of
    # its first statement (Codex's `replacement_history` repeating what it replaces, a
    # system prompt a resumed session states again alike, the records a resumed Claude
    # Code session writes again under their uuids, a Gemini CLI message written again in
    # full whenever it changes, every message of each copy): the whole log holds the
    # newest statement (its messages on the line of its last) in the first one's place,
    # and what lies outside the context counts none of the others
    restated: dict[int, int] = field(default_factory=dict)
    # of a file joining sessions, the model each names (its conversation's); else empty:
    # the file's `model` is its only conversation's
    models: list[str | None] = field(default_factory=list)

    def held_conversations(self) -> int:
        """How many conversations the file holds, as stats counts them: the reader's (one at
        least) where the context holds a message, else those that hold none (`empty`)."""
        return max(self.conversations, 1) if self.context else self.empty

    def statements(self) -> dict[int, list[int]]:
        """Each message stated again (`restated`), by the first message of its first
        statement: the messages of every statement, in order."""
        out: dict[int, list[int]] = {}
        for n, first in sorted(self.restated.items()):
            out.setdefault(first, [first]).append(n)
        return out

    def held(self, record_of: Callable[[int], Hashable]) -> dict[int, int]:
        """The messages the whole log holds of each message stated again, each with the
        first message of its first statement, whose place they take: those of its newest
        statement, read from the record of its last message (`record_of(n)`: the record
        message `n` is read from, as `Records` tells them apart; a line may hold several,
        as a Gemini CLI `$set` list stating one message twice does)."""
        held = {}
        for first, numbers in self.statements().items():
            newest = record_of(numbers[-1])
            held |= {n: first for n in numbers if record_of(n) == newest}
        return held

    def counted_once(self, held: dict[int, int]) -> set[int]:
        """The messages outside the context that stats leaves out of what lies outside, as
        the file states them again: every statement but the messages the whole log holds
        (`held`), or all of them where the context holds another statement."""
        inside = set(self.context) | set(self.sidechain)
        out: set[int] = set()
        for numbers in self.statements().values():
            kept = set() if inside.intersection(numbers) - held.keys() else held.keys()
            out |= {n for n in numbers if n not in inside and n not in kept}
        return out


class Records:
    """Tells apart the records messages are read from (see Layout.held), as they are read
    in order: the messages of one record come together, each holding it as `raw`. Each
    message's is its line (of its item, in a document) and how many records came before."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, int]] = []
        self._raw: Any = None

    def add(self, message: Message) -> None:
        count = self.keys[-1][1] + (message.raw is not self._raw) if self.keys else 0
        self._raw = message.raw
        self.keys.append((message.item_line or message.line, count))


# why messages are outside the context, unless the reader says otherwise
OUTSIDE_WHY = "before a compaction or off the branch"


def no_input(outside: int, sidechain: int, skipped: int, failed: int = 0,
             format: str = "") -> str:
    """Why a file of `format` has no message in the model's context, given how many
    messages lie outside it or in a sub-agent, how many lines were skipped and how many
    requests it records as failed (stats, convert); where none of those is why, in the
    format's own words (its `holds_no_message`), if it has them."""
    if failed and not outside and not sidechain:
        return (f"every request in the file failed ({failed:,}), with no reply: "
                "`ctxpack validate` says why")
    if outside or sidechain:
        return "every message is outside the model's context or a sub-agent's"
    if skipped:
        return "every line that could hold a message was skipped as invalid"
    from . import FORMATS

    return getattr(FORMATS.get(format), "holds_no_message", None) or \
        "the file holds no message the model reads"


class Reader(Protocol):
    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        """Take one record; return the messages it completes (maybe none)."""
        ...

    def finish(self) -> tuple[list[Message], Layout]:
        """Return the messages still pending and the layout of all of them."""
        ...

    # optional `located(path, data, first)`: a reader of a whole-file document is told its
    # path, bytes and first line before it is fed, to read what the agent keeps beside it
    # (Cline's usage in ui_messages.json) or to give each message the line it starts on


class Format(Protocol):
    name: str
    description: str
    # optional `default_model`: the model to assume when a file of this format names none
    # optional `records_usage`: the agent whose files of this format record each call's
    # usage, where its reader gives those calls (`Layout.calls`; see `usage_recorders`)
    # optional `doubt(record) -> str`: why a file it claims by this record (the first it
    # claims most surely, or the whole document) might be of another format after all (""
    # when nothing says so); stats shows it as unsure
    # optional `one_record(value) -> bool`, of a format that reads documents and lines: is
    # this value, a file's only line, one record of its JSONL form rather than a document
    # optional `sniff_place(record, path) -> int`, of a format that reads documents: how
    # surely the document at `path` is of it by where its agent keeps such files, as
    # `sniff` scores (a Cline task's history beside its UI log); a file there is sure

    def sniff(self, record: dict[str, Any]) -> int:
        """How surely `record` is of this format: 0 no, 1 maybe (it fits, but so may
        others), 2 surely, 3 by a mark no other format has (it beats another's 2)."""
        ...

    def reader(self) -> Reader: ...


class LineFinder:
    """The lines of things found in a document's bytes in order: `find` looks on from the
    last thing found, so a whole document is walked once."""

    def __init__(self, data: bytes, first: int) -> None:
        self.data, self.pos, self.line = data, 0, first

    def find(self, pattern: re.Pattern[bytes]) -> int | None:
        """The line of the next match of `pattern`, or None (and nothing moves)."""
        found = pattern.search(self.data, self.pos)
        if found is None:
            return None
        self.line += self.data.count(b"\n", self.pos, found.start())
        self.pos = found.start()
        return self.line


def string_field(d: dict[str, Any], key: str) -> str | None:
    """`d[key]` if it is a string, None if it is absent or null. Any other value does not
    fit the format: ids, types and links are used as keys and compared, so a reader that
    took an array for one would fail far from the line that holds it."""
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    from ..jsonl import json_kind

    raise RecordError(f"{key!r} is {json_kind(value)}, not a string")


def int_field(d: dict[str, Any], key: str) -> int | None:
    """`d[key]` if it is a whole number, None if it is absent or null; like `string_field`,
    any other value (text, an array, true) does not fit the format."""
    value = d.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    from ..jsonl import json_kind

    raise RecordError(f"{key!r} is {json_kind(value)}, not a whole number")


def array_field(d: dict[str, Any], key: str) -> list[Any]:
    """`d[key]` if it is an array, [] if it is absent or null; like `string_field`, any
    other value (a number, an object) does not fit the format."""
    value = d.get(key)
    if value is None or isinstance(value, list):
        return value or []
    from ..jsonl import json_kind

    raise RecordError(f"{key!r} is {json_kind(value)}, not an array")


def object_field(d: dict[str, Any], key: str) -> dict[str, Any]:
    """`d[key]` if it is an object, {} if it is absent or null; like `string_field`, any
    other value (a number, an array) does not fit the format."""
    value = d.get(key)
    if value is None or isinstance(value, dict):
        return value or {}
    from ..jsonl import json_kind

    raise RecordError(f"{key!r} is {json_kind(value)}, not an object")


def marks(names: Iterable[str]) -> tuple[bytes, ...]:
    """The bytes of each name as a JSON string: one is in every record that holds it."""
    return tuple(f'"{name}"'.encode() for name in names)


def number(value: Any) -> int:
    """A count as recorded: a whole number of at least 0, else 0 (absent, null, text, NaN;
    `recorded.wrong_counts` names such a value, so that its call is set aside rather than
    billed as 0)."""
    return value if whole(value) else 0


def measure(value: Any) -> int | float:
    """A recorded count or cost as a number a float holds exactly, else 0: text, NaN,
    infinity and numbers past 2**53 are no real count, and a sum with them overflows."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not abs(value) <= 2**53:
        return 0
    return value


def day(ms: int | float) -> str:
    """A time stamp in milliseconds since 1970 (as Cline and OpenCode write them) as a
    person reads it, to the minute in UTC; one no calendar holds as the number it is."""
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms:,}"


def text_of(value: Any) -> str:
    """Text of a content value that may be a string, a list of blocks or something else."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                out.append(item["text"])
        return "\n".join(out)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    from ..jsonl import dumps

    return dumps(value).decode("utf-8", "surrogatepass")


def content_parts(content: Any, item_part: Callable[[dict[str, Any]], P | None]) -> list[P | Text]:
    """Parts of a `content` value: a string, a list of items, or anything else as text.

    Each dict item becomes what `item_part` makes of it (None drops it); this is
    the one walk every format shares, the item shapes are each format's own.
    """
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        return [Text(text_of(content))]
    parts: list[P | Text] = []
    for item in content:
        if isinstance(item, str):
            parts.append(Text(item))
        elif isinstance(item, dict) and (part := item_part(item)) is not None:
            parts.append(part)
    return parts


def refused_items(content: Any, item: str,
                  refused_item: Callable[[dict[str, Any]], list[str]]) -> list[str]:
    """What an API of typed content items refuses of a `content` that is not null: a value
    that is no string or array, an item that is no object or names no `type`, and what
    `refused_item` (the format's own rules) says of an item; each named `content[i]: ...`
    (readers take such content as text, so only the record shows it). `item` names an
    item as the API does ("content part", "content block")."""
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        return [f"content is {json_kind(content)}, not a string or an array of {item}s"]
    out = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            out.append(f"content[{i}] is {json_kind(part)}, not a {item} object")
        elif not isinstance(part.get("type"), str):
            out.append(f"content[{i}] has no 'type'")
        else:
            out += [f"content[{i}]: {problem}" for problem in refused_item(part)]
    return out


def refused_string(d: dict[str, Any], key: str, what: str) -> list[str]:
    """`what` (a text part, a call's arguments) has no string at `key`, if so."""
    value = d.get(key)
    if isinstance(value, str):
        return []
    if key not in d:
        return [f"{what} without {key!r}"]
    return [f"{what}'s {key!r} is {json_kind(value)}, not a string"]


@dataclass
class Compaction:
    """What replaces an archived span of the file: a summary and what must come with it.

    `meta` is the `ctxpack` object of the summary record, `part` the one every other
    new record of the span carries. `head` holds the records of the kept head (the
    system prompt, the task) to write again after a reset marker; `before` is the
    last record before the span; `merge` a user record the summary joins (formats
    that need roles to alternate), else None. `kept` holds the span's records the
    agent reads back for itself (titles, the session index's first message: see
    `Editor.keeps`), in file order; `tokens_before` and `tokens_after` are the context
    before and after, as the provider would bill it (as an agent states its own);
    `usage` is the last record before the span's end that states the context's size, if
    any, and `context` the size to state after the summary, in the agent's terms (see
    `Editor.recorded`).
    """

    summary: str
    meta: dict[str, Any]
    part: dict[str, Any]
    head: list[dict[str, Any]] = field(default_factory=list)
    before: dict[str, Any] | None = None
    merge: dict[str, Any] | None = None
    tokens_before: int = 0
    time: str = ""
    seed: str = ""
    kept: list[dict[str, Any]] = field(default_factory=list)
    tokens_after: int = 0
    usage: dict[str, Any] | None = None
    context: int = 0


class Editor(Protocol):
    """How compress writes a format: tool results replaced, a span compacted."""

    resets: bool  # the format has a marker after which the context starts again
    alternates: bool  # the summary must join an adjacent user message

    def keeps_place(self, message: Message) -> bool:
        """True for a head message that stays in context across a reset marker."""
        ...

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        """A copy of `record` whose tool results (by call id) read `texts` instead."""
        ...

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        """The records that replace the archived span."""
        ...

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        """A copy of a later record re-pointed from a removed record to `to`, or None."""
        ...

    # Records that state the size of the agent's context (its usage): an agent decides
    # from the last of them whether to compact. After compress they must state the
    # smaller context, or the agent compacts again what compress already made fit.
    # `usage_mark` is in the bytes of every such record (b"" for a format without them);
    # `usage_on_messages`: they are the context's own message records (else events).
    usage_mark: bytes
    usage_on_messages: bool
    keeps_mark: tuple[bytes, ...]  # one is in the bytes of every record `keeps` takes

    def recorded(self, record: dict[str, Any]) -> int | None:
        """The context tokens `record` states the agent had, or None if it states none."""
        ...

    def call(self, record: dict[str, Any]) -> str | None:
        """The API call whose usage `record` states, where each piece of one response
        states it again (None: each record is a call of its own)."""
        ...

    def resized(self, record: dict[str, Any], tokens: int, cached: int) -> dict[str, Any]:
        """A copy of usage record `record` stating `tokens` instead, of which the agent's
        provider had `cached` in its prompt cache (the previous call's prompt)."""
        ...

    def keeps(self, record: dict[str, Any]) -> bool:
        """True for a record of an archived span that the agent reads back for itself
        (not as model input): it is written again with the summary."""
        ...


class NoUsage:
    """For an editor of a format whose records state no usage and keep nothing."""

    usage_mark = b""
    usage_on_messages = False
    keeps_mark: tuple[bytes, ...] = ()

    def recorded(self, record: dict[str, Any]) -> int | None:
        return None

    def call(self, record: dict[str, Any]) -> str | None:
        return None

    def resized(self, record: dict[str, Any], tokens: int, cached: int) -> dict[str, Any]:
        return record

    def keeps(self, record: dict[str, Any]) -> bool:
        return False


def tool_result_blocks(blocks: Any, texts: dict[str | None, str]) -> Any:
    """Content blocks with each `tool_result` named in `texts` holding that text instead."""
    if not isinstance(blocks, list):
        return blocks
    out = []
    for block in blocks:
        key = block.get("tool_use_id") if isinstance(block, dict) else None
        if isinstance(block, dict) and block.get("type") == "tool_result" and key in texts:
            block = {**block, "content": texts[key]}
        out.append(block)
    return out


# what a reader of a file of one session says of a header (`Sessions.header`) that opens
# another, and what compress and rewind say of such a file
JOINED = ("{what} of another session ({ident!r}) after the messages of the one before: the "
          "file joins sessions end to end (as `cat` does), which {agent} never writes; each "
          "is read as a conversation of its own")
ONE_SESSION = "{path} joins {count:,} sessions, and ctxpack rewrites one session at a time"
SPLIT = "split it at the line each session's {what} is on (validate names them), then " \
    "rewrite each file"


def one_session(transcript: Any, what: str) -> None:
    """Refuse to rewrite (compress, rewind) a file that joins sessions (see Sessions): its
    agent reads one."""
    count = len({m.conversation for m in transcript.messages})
    if count > 1:
        from ..errors import JoinedSessions

        raise JoinedSessions(ONE_SESSION.format(path=transcript.path, count=count),
                             SPLIT.format(what=what))


class Sessions:
    """The reader of a format whose files each hold one session, for a file that joins
    several end to end: each session is read by a reader of its own, as a conversation of
    its own, as the runs of a file of many are. A session starts again at a record naming
    a session (`header(record)`: the session id it states, the ids it links to (the thread
    it is forked from or an agent of, the record it follows), and the ids it gives the
    session (its own, its record's); else None) that is not the one being read and links
    to nothing, after that session's messages and its own header; that record is named
    (Layout.problems). A forked session's header names its source, whose header and
    history follow it."""

    def __init__(self, make: Callable[[], Any],
                 header: Callable[[Any], tuple[str, set[str], set[str]] | None],
                 what: str, agent: str) -> None:
        self.make, self.header, self.what, self.agent = make, header, what, agent
        self.reader = make()
        self.done: list[tuple[int, Layout]] = []  # each session read: its first message, layout
        self.ids: set[str] = set()  # of the session being read and its records
        self.said = False  # the session being read has messages besides a system prompt
        self.count = 0  # messages emitted
        self.start = 0  # the first of the session being read
        self.joined: list[tuple[int, str]] = []  # (line, problem) of each header joined

    @property
    def items(self) -> Items | None:
        return getattr(self.reader, "items", None)

    def model_of(self, session: int) -> str | None:
        """The model session `session` (its conversation) has named so far: its layout's,
        once read, else its reader's."""
        if session < len(self.done):
            return self.done[session][1].model
        return getattr(self.reader, "model", None) if session == len(self.done) else None

    def located(self, path: str, data: bytes, first: int) -> None:
        """A document (one session) told to its reader, where it reads one (`located`)."""
        if hasattr(self.reader, "located"):
            self.reader.located(path, data, first)

    def feed(self, line: int, record: Any) -> list[Message]:
        head = self.header(record)
        out: list[Message] = []
        if head is not None:
            ident, links, names = head
            # (a session of no header yet takes the first as its own: messages written
            # before it are no session of their own)
            if self.said and self.ids and ident not in self.ids and not links:
                out = self._next()
                self.joined.append((line, JOINED.format(what=self.what, ident=ident,
                                                        agent=self.agent)))
            self.ids |= {ident, *names}
        got = self.reader.feed(line, record)
        # (a system prompt is a header's own: Codex states it in its `session_meta`)
        self.said = self.said or any(m.role != "system" for m in got)
        return out + self._numbered(got)

    def _numbered(self, messages: list[Message]) -> list[Message]:
        self.count += len(messages)
        n = len(self.done)
        return [replace(m, conversation=n) for m in messages] if n else messages

    def _next(self) -> list[Message]:
        rest, layout = self.reader.finish()
        out = self._numbered(rest)
        self.done.append((self.start, layout))
        self.reader, self.ids, self.said, self.start = self.make(), set(), False, self.count
        return out

    def finish(self) -> tuple[list[Message], Layout]:
        rest, layout = self.reader.finish()
        rest = self._numbered(rest)
        if not self.done:
            return rest, layout
        return rest, joined([*self.done, (self.start, layout)], self.joined)


def joined(sessions: list[tuple[int, Layout]], problems: list[tuple[int, str]]) -> Layout:
    """One layout of the sessions' layouts (each with the number of its first message), each
    session a conversation: message numbers and calls' places moved past the sessions
    before; usage totals added (the newest session's last call and window stand). The
    context before the newest compaction is the newest session's (the bill measures
    on it); every context a session before it holds before its compactions is an older
    one (`older`, newest first), so that each call made on it is fitted on it as in the
    session alone. Each session's model is its conversation's (`models`)."""
    out = Layout([], problems=list(problems))
    usage: dict[str, Any] = {}
    conversations = 0
    # the contexts before a compaction of the sessions before the newest, newest first
    passed: list[tuple[list[int], list[RecordedCall]]] = []
    for k, (start, lay) in enumerate(sessions):
        out.calls += [replace(c, prompt=c.prompt + len(out.context)) for c in lay.calls]
        out.context += [start + n for n in lay.context]
        out.sidechain += [start + n for n in lay.sidechain]
        out.copies += [start + n for n in lay.copies]
        out.restated |= {start + n: start + first for n, first in lay.restated.items()}
        out.unbilled_calls += lay.unbilled_calls
        contexts = [([start + n for n in held], calls) for held, calls in
                    ((lay.earlier, lay.earlier_calls), *lay.older)]
        if k == len(sessions) - 1:
            (out.earlier, out.earlier_calls), *older = contexts
            out.older = [*older, *passed]
        else:
            passed[:0] = contexts
        out.set_aside += lay.set_aside
        out.failed += lay.failed
        out.problems += lay.problems
        out.notes += lay.notes
        for key, value in lay.usage.items():
            before = usage.get(key)
            adds = not key.startswith("last_") and key != "context_window" and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in (before, value))
            usage[key] = before + value if adds else value
        out.model = lay.model or out.model
        out.models.append(lay.model)
        if lay.outside_why and lay.outside_why not in out.outside_why:
            out.outside_why = "; ".join(w for w in (out.outside_why, lay.outside_why) if w)
        conversations += max(lay.conversations, 1)
    out.usage, out.conversations = usage, conversations
    out.problems.sort()
    out.notes.sort()
    out.set_aside.sort(key=lambda x: x.line)
    return out

"""Anthropic Messages API transcripts: one message per line, or Claude Code stream-json.

Owns the Messages API shapes shared with `claude_code`: content blocks to canonical
parts, the merging of one streamed response written as several lines, and usage
counted once per API call. Stream-json `system` and `result` lines are not messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from ..jsonl import dumps, json_kind
from ..recorded import (
    RUN_BOUND,
    SetAside,
    no_output,
    no_prompt_size,
    null_counts,
    summed,
    unreadable,
    with_run_totals,
    wrong_costs,
    wrong_counts,
    wrong_totals,
)
from ..transcript import (
    META_KEY,
    SUMMARY_HEADING,
    Image,
    Message,
    Part,
    RecordedCall,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    hides_thinking,
)
from .agent_text import labelled_persons, observed, persons
from .base import (
    Compaction,
    Layout,
    NoUsage,
    RecordError,
    content_parts,
    number,
    refused_items,
    refused_string,
    string_field,
    text_of,
    tool_result_blocks,
)
from .openai import foreign_parts

CONTINUATION = "This session is being continued from a previous conversation"
SYNTHETIC_MODEL = "<synthetic>"
_CALL_BLOCKS = {"tool_use", "server_tool_use", "mcp_tool_use"}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def image_part(block: dict[str, Any]) -> Image:
    """An `image` block: base64 `source.data` inline, or a `source.url` reference."""
    source = block.get("source")
    source = source if isinstance(source, dict) else {}
    return Image(media_type=_str(source.get("media_type")), data=_str(source.get("data")),
                 url=_str(source.get("url")))


def _result_item(item: dict[str, Any]) -> Text | Image:
    kind = item.get("type")
    if kind == "image":
        return image_part(item)
    if kind == "tool_reference":
        return Text(string_field(item, "tool_name") or "")
    return Text(text_of(item))


def result_parts(content: Any) -> tuple[Text | Image, ...]:
    """Parts of a `tool_result` block's content (a string or a list of blocks)."""
    return tuple(content_parts(content, _result_item))


def arguments(value: Any) -> str:
    """A tool_use `input` as compact JSON, the way the model wrote it."""
    return dumps({} if value is None else value).decode("utf-8", "surrogatepass")


# the content blocks the Messages API takes, besides server tools' results (`*_tool_result`)
BLOCK_TYPES = frozenset({"text", "image", "document", "search_result", "thinking",
                         "redacted_thinking", "tool_use", "tool_result", "server_tool_use",
                         "mcp_tool_use", "container_upload", "tool_reference"})


def unknown_block(kind: str) -> bool:
    """Is `kind` the type of no content block the Messages API takes?"""
    return kind not in BLOCK_TYPES and not kind.endswith("_tool_result")


def unknown_blocks(content: Any, field: str = "content") -> list[str]:
    """The blocks of a message's `content` (at `field` of its record) of a type the
    Messages API does not take, and with no text to read: each named, as what every
    reader leaves out of the message (not counted, not converted). Every reader of
    Anthropic-shaped messages names them so (Layout.problems)."""
    return [f"{field}[{n}] is a block of type {block['type']!r}, which the Messages API "
            "does not take: left out (not counted, not converted)"
            for n, block in enumerate(content if isinstance(content, list) else ())
            if isinstance(block, dict) and isinstance(block.get("type"), str)
            and unknown_block(block["type"]) and not isinstance(block.get("text"), str)]


def block_part(block: dict[str, Any]) -> Part | None:
    """One content block as a canonical part; None for blocks the model does not read."""
    kind = string_field(block, "type")
    if kind == "text":
        return Text(block["text"]) if isinstance(block.get("text"), str) else None
    if kind == "thinking":
        return Thinking(_str(block.get("thinking")) or "")
    if kind == "redacted_thinking":
        return Thinking("")  # encrypted: present in the prompt, unreadable here
    if kind in _CALL_BLOCKS:
        return ToolCall(string_field(block, "id"), string_field(block, "name") or "",
                        arguments(block.get("input")))
    if kind is not None and kind.endswith("tool_result"):
        # server tools (web_search_tool_result, ...) answer inside the assistant message
        return ToolResult(string_field(block, "tool_use_id"),
                          result_parts(block.get("content")), block.get("is_error") is True)
    if kind == "image":
        return image_part(block)
    return Text(block["text"]) if isinstance(block.get("text"), str) else None


def message_parts(content: Any) -> tuple[Part, ...]:
    """Parts of a message's `content`: a string or a list of blocks."""
    return tuple(content_parts(content, block_part))


def api_message(d: dict[str, Any], line: int, raw: Any, role: str | None = None) -> Message:
    """Convert one Messages API message dict; `human` is set for the person's words
    (see agent_text)."""
    role = _str(d.get("role")) or role
    if role is None:
        raise RecordError("message without a 'role'")
    parts = observed(role, message_parts(d.get("content")))
    human = role == "user" and persons(parts) and not is_continuation(parts)
    return Message(role, parts, (line,), raw, id=_id(d.get("id")), model=_str(d.get("model")),
                   human=human)


def merged_turns(message: Message) -> list[Message]:
    """A user message as the turns the Messages API's alternation merged into it
    (`convert --to anthropic` joins the tool results, the agent's notes and the person's
    words that came one after another, as an agent sending the API's messages does): a
    turn of the person's opens at each of their texts after a part not theirs, and at
    convert's label of the person's next message (two of theirs in a row), so that it
    opens a round of its own, titled by their words. Every reader of Messages API
    messages reads them so: a request body's, one a line, or an array of them, and a
    `Context` each message appended. Each turn after the first is sent as blocks of the
    message before it (`joined`, `split`: billed as that message, with no overhead of its
    own); one turn is the message as it was. Notes of the agent's that open a message (a
    reminder, an IDE's note of the open file) stay in the turn of the person's words
    after them: a message the agent sent so (Claude Code's first) is one turn, and one
    sent alone before the person's is told from it by nothing in the message."""
    if message.role != "user":
        return [message]
    parts = message.parts
    starts = [i for i, p in enumerate(parts) if i and (labelled_persons(p) or (
        _persons_text(p) and not _persons(parts[i - 1])
        and not all(isinstance(q, Text) and not _persons(q) for q in parts[:i])))]
    if not starts:
        return [message]
    bounds = [0, *starts, len(message.parts)]
    turns = [message.parts[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    return [replace(message, parts=parts, joined=n > 0, split=n > 0,
                    human=persons(parts) and not is_continuation(parts))
            for n, parts in enumerate(turns)]


def _persons_text(part: Part) -> bool:
    return isinstance(part, Text) and bool(part.text.strip()) and persons((part,))


def _persons(part: Part) -> bool:
    return isinstance(part, Image) or _persons_text(part)


def _id(value: Any) -> str | None:
    """A message's `id`: a string, or a number read as its digits (no API writes one, but
    the pieces of a response that share it are still one response). An empty one (as a
    proxy may write) is no id."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _str(value) or None


def reply_problems(d: dict[str, Any]) -> list[str]:
    """What is of the wrong kind in a reply's `message`, read past but named by validate:
    a `model` that is no name (the reply is billed as the file's model, or the one
    given), an `id` that is no string."""
    out = []
    if d.get("model") is not None and not isinstance(d["model"], str):
        out.append(f"message.model is {json_kind(d['model'])}, not a model's name: billed "
                   "as the file's model")
    if d.get("id") is not None and not isinstance(d["id"], str):
        out.append(f"message.id is {json_kind(d['id'])}, not a string")
    return out


def made_up(message: Message, usage: Any) -> bool:
    """A reply the agent made up itself (`<synthetic>`: an error it shows, a turn it
    skipped), billed nothing: its usage records no token, and it is no call. (One that
    records tokens is read as any reply is, whatever its model.)"""
    return message.model == SYNTHETIC_MODEL and not (
        isinstance(usage, dict) and any(number(usage.get(f)) for f in _USAGE_FIELDS))


def is_continuation(parts: Sequence[Part]) -> bool:
    """True for the parts of the summary user message Claude Code writes after a compaction."""
    first = next((p for p in parts if isinstance(p, Text)), None)
    return first is not None and first.text.lstrip().startswith(CONTINUATION)


class Emitted(NamedTuple):
    """A finished message, the caller's keys of its lines, whether it answers the
    response emitted just before it (a tool result that arrived while it was open), and
    the call a response is of (see `UsageTally.key`)."""

    message: Message
    keys: list[Any]
    attached: bool = False
    call: str | None = None


class OpenResponse(NamedTuple):
    """The response a reply line may be a piece of (the one open in its lane, or the one
    it follows in a chain the file links): its call, and whether the line comes right
    after a piece of it (else after its tool results only)."""

    call: str | None
    next_to: bool


@dataclass
class ResponseMerger:
    """Joins the lines of one streamed API response, holding results that arrive meanwhile.

    Only the open response (its lines' messages, `pieces`, of one `call`) and its pending
    results are held; they are handed out, the pieces joined into one message, when an
    assistant line of another call or a message that is not a tool result arrives, or on
    `flush`.
    """

    pieces: list[Message] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    results: list[tuple[Message, Any]] = field(default_factory=list)
    call: str | None = None
    since: int = 0  # the results held when its last piece came

    @property
    def open(self) -> OpenResponse | None:
        """The response still open, if any."""
        return OpenResponse(self.call, len(self.results) == self.since) if self.pieces \
            else None

    def add(self, message: Message, key: Any = None, call: str | None = None) -> list[Emitted]:
        """Take one line's message (a reply's: of `call`, see `UsageTally.key`); return
        the messages this completes."""
        pieces = self.pieces
        if message.role == "assistant":
            if pieces and call is not None and call == self.call:
                pieces.append(message)
                self.keys.append(key)
                self.since = len(self.results)
                return []
            out = self.flush()
            self.pieces, self.keys, self.call, self.since = [message], [key], call, 0
            return out
        if pieces and message.result_only:
            self.results.append((message, key))
            return []
        return [*self.flush(), Emitted(message, [key])]

    def flush(self) -> list[Emitted]:
        """Hand out the open response and its results."""
        if not self.pieces:
            return []
        response = _joined(self.pieces)
        calls = {c.id for c in response.tool_calls}
        out = [Emitted(response, self.keys, call=self.call)]
        out += [Emitted(m, [key], any(r.call_id in calls for r in m.tool_results))
                for m, key in self.results]
        self.pieces, self.keys, self.results = [], [], []
        return out


def _joined(pieces: Sequence[Message]) -> Message:
    """One response written as several lines: the first line's message, with the parts
    and lines of all of them, and each of them as its `pieces`."""
    first = pieces[0]
    if len(pieces) == 1:
        return first
    return replace(first, parts=tuple(p for m in pieces for p in m.parts),
                   lines=tuple(n for m in pieces for n in m.lines), pieces=tuple(pieces))


_USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                 "output_tokens")


class UsageTally:
    """Provider usage per API call; the copies on every piece of a response count once.
    `field`: where a record holds a call's usage, as its problems name it (a Messages API
    reply's `message.usage`, a managed-agent request's `model_usage`)."""

    def __init__(self, field: str = "message.usage") -> None:
        self.field = field
        self.calls: dict[str, list[int]] = {}
        self.wrong: dict[str, str] = {}  # a call's fields that are no token count
        # a usage that is no object, or whose prompt size a null leaves unknown, at its line
        self.unread: list[SetAside] = []
        self.nulls: list[tuple[int, str]] = []  # a null output count, at its line
        # the first line each call's usage is on (a reply piece's, or a managed-agent
        # event's, apart from its reply): its problems are named there
        self.lines: dict[str, int] = {}
        self.ids: dict[str, int] = {}  # a reply's message.id -> the line it was first on
        self.id_of: dict[str, str | None] = {}  # a call's key -> its reply's id

    def key(self, message: Message, usage: Any, open: OpenResponse | None
            ) -> tuple[str, str]:
        """The call a reply's line is of, and what is wrong with its id ("": nothing).

        Each piece of a streamed response is a line of its own with the response's `id`
        and a copy of its usage. A line with the `id` of the response it may be a piece
        of (`open`) is of its call where it comes right after a piece of it, or, after
        tool results of it (as a parallel call's piece does), records the same prompt;
        without an id (as a proxy may write), the same prompt recorded by both says it.
        Any other line is a call of its own, named where its id is an earlier call's
        (another request came in between, or it records another prompt), as the provider
        gives each response its own id."""
        ident = message.id
        if open is not None and open.call in self.id_of and ident == self.id_of[open.call] \
                and (open.next_to and ident is not None
                     or self._same_prompt(open.call, usage, known=ident is None)):
            return open.call, ""
        if ident is None:  # (one of its own: lines of a document hold several)
            key, first = f"line {message.line} #{len(self.id_of)}", message.line
        else:
            first = self.ids.setdefault(ident, message.line)
            key = ident if first == message.line else f"{ident} (line {message.line})"
        self.id_of[key] = ident
        return key, "" if first == message.line else (
            f"message.id {ident!r} is the id of an earlier call (line {first}): read as "
            "a new call")

    def _same_prompt(self, key: str, usage: Any, known: bool) -> bool:
        """Whether `usage` records the prompt the call `key` has recorded so far (either
        unknown: nothing says it does not, unless it must be `known`)."""
        nums = self.calls.get(key)
        if nums is None or not isinstance(usage, dict):
            return not known
        return [number(usage.get(f)) for f in _USAGE_FIELDS[:3]] == nums[:3]

    def add(self, key: str, usage: Any, line: int = 0) -> None:
        """Record one piece's `usage`; per field the largest value seen for the call wins.
        `line`: the line it is on (the piece's, or a managed-agent
        `span.model_request_end` event's, not its reply's; 0: unknown). A usage that is no
        object is named, and left out."""
        if not isinstance(usage, dict):
            if usage is not None:
                self.unread.append(unreadable(line, f"{self.field} is {json_kind(usage)}, "
                                                    "not an object"))
            return
        # (both cache fields null beside a prompt count: the SDK's dump of a response that
        # reported no cache, as its optional fields are written, is a prompt of no cache)
        unreported = usage.get("input_tokens") is not None and all(
            f in usage and usage[f] is None for f in _USAGE_FIELDS[1:3])
        if not unreported and (nulls := null_counts(usage, _USAGE_FIELDS[:3],
                                                    f"{self.field}.")):
            self.unread.append(SetAside(line, no_prompt_size(nulls), readable=False))
            return
        if nulls := null_counts(usage, _USAGE_FIELDS[3:], f"{self.field}."):
            self.nulls.append((line, no_output(nulls)))
        if line:
            self.lines.setdefault(key, line)
        new = [number(usage.get(f)) for f in _USAGE_FIELDS]
        if wrong := wrong_counts(usage, _USAGE_FIELDS, f"{self.field}."):
            self.wrong.setdefault(key, wrong)
        old = self.calls.get(key)
        # copies agree on input; output grows (or is only real) on later pieces
        self.calls[key] = new if old is None else list(map(max, old, new))

    def prompt(self, key: str | None) -> int | None:
        """Full prompt size of one call: uncached input plus cache writes and reads."""
        nums = self.calls.get(key) if key is not None else None
        return None if nums is None else nums[0] + nums[1] + nums[2]

    def summary(self, source: str, last: str | None = None) -> dict[str, Any]:
        """The shared usage shape; empty when the file reported no calls."""
        if not self.calls:
            return {}
        values = self.calls.values()
        usage: dict[str, Any] = {
            "source": source,
            "calls": len(self.calls),
            "input_tokens": sum(v[0] + v[1] + v[2] for v in values),
            "output_tokens": sum(v[3] for v in values),
            "cache_read_tokens": sum(v[2] for v in values),
            "cache_creation_tokens": sum(v[1] for v in values),
        }
        if (size := self.prompt(last)) is not None:
            usage["last_input_tokens"] = size
        return usage

    def recorded(self, context: list[int], replies: dict[int, Reply]) -> list[RecordedCall]:
        """The calls whose replies are in `context`, with the prompt size of each (a reply
        the agent made up itself, billed nothing, is none; one recording a reply but a
        prompt of 0 is, to be judged as any: see ctxpack.recorded)."""
        out = []
        for i, n in enumerate(context):
            reply = replies.get(n)
            nums = self.calls.get(reply[0]) if reply is not None else None
            if nums is None:
                continue
            wrong = self.wrong.get(reply[0], "")
            if (billed := nums[0] + nums[1] + nums[2]) > 0 or nums[3] or wrong:
                out.append(RecordedCall(i, billed, nums[3] or None, reply[1], reply[2],
                                        problem=wrong, at=self.lines.get(reply[0], 0),
                                        summed=summed(
                                            input_tokens=billed, output_tokens=nums[3],
                                            cache_read_tokens=nums[2],
                                            cache_creation_tokens=nums[1])))
        return out


Reply = tuple[str, str | None, bool]  # a reply's call key, model, and whether it hides thinking


def reply_of(message: Message, key: str) -> Reply:
    """A reply's call: its key, the model it names (`<synthetic>` names none: the call is
    the file's model's), and whether it hides its thinking."""
    model = None if message.model == SYNTHETIC_MODEL else message.model
    return key, model, hides_thinking(message)


def sniff_record(record: dict[str, Any]) -> int:
    """How surely a record is an Anthropic message or a stream-json line."""
    if "parentUuid" in record or "sessionId" in record:
        return 0  # Claude Code session records
    kind = record.get("type")
    if kind in ("user", "assistant") and isinstance(record.get("message"), dict):
        return 2 if "session_id" in record else 1
    if kind == "system" and record.get("subtype") == "init":
        return 2
    if kind == "result" and "subtype" in record and "session_id" in record:
        return 2
    if "message" in record or record.get("role") not in ("user", "assistant"):
        return 0
    content = record.get("content")
    if isinstance(content, str):
        return 1
    if not isinstance(content, list):
        return 0
    if foreign_parts(content):
        return 2  # a block Chat Completions does not take: Anthropic's shape (see `doubt`)
    kinds = {b.get("type") for b in content
             if isinstance(b, dict) and isinstance(b.get("type"), str)}
    return 1 if kinds <= {"text"} else 0


def doubt(messages: Any) -> str:
    """Why messages taken for Anthropic's by their blocks might be no Anthropic messages:
    the blocks Chat Completions does not take are of types the Messages API does not
    take either; "" when one is a block it takes (or no block marks them)."""
    kinds = [k for m in (messages if isinstance(messages, list) else ())
             if isinstance(m, dict) for k in foreign_parts(m.get("content"))]
    if not kinds or not all(unknown_block(k) for k in kinds):
        return ""
    named = ", ".join(repr(k) for k in dict.fromkeys(kinds))
    return (f"read as Anthropic messages by content blocks of type {named}, which Chat "
            "Completions does not take; the Messages API does not take them either")


def bad_content(record: dict[str, Any]) -> bool:
    """A plain user or assistant message whose `content` is a value the API refuses (a
    number, an object, true): the message's problem, which validate names, and no sign
    that a file whose other messages are sure is of another format."""
    content = record.get("content")
    return (record.get("role") in ("user", "assistant") and "message" not in record
            and content is not None and not isinstance(content, (str, list)))


def _refused_block(block: dict[str, Any]) -> list[str]:
    """What the Messages API refuses of one typed content block: a text block without its
    text or with an empty one, an image without its `source` object, a tool_use whose
    `input` is no object, a tool_result whose content is no string or array of blocks (a
    number), or holds a block it refuses."""
    kind = block["type"]
    if kind == "text":
        if block.get("text") == "":
            return ["text block's 'text' is empty (the API refuses empty text blocks)"]
        return refused_string(block, "text", "text block")
    if kind == "image" and not isinstance(block.get("source"), dict):
        return [f"image block's 'source' is {json_kind(block['source'])}, not an object"
                if "source" in block else "image block without 'source' (the image)"]
    if kind == "tool_use" and not isinstance(block.get("input"), dict):
        return [f"tool_use block's 'input' is {json_kind(block['input'])}, not an object"
                if "input" in block else "tool_use block without 'input'"]
    if kind == "tool_result" and block.get("content") is not None:
        return [f"tool_result {problem}"
                for problem in refused_items(block["content"], "content block", _refused_block)]
    return []


def refused(read: Message) -> list[str]:
    """What the Messages API refuses in one message's content besides its pairs: no
    content, a value that is no string or array of typed blocks, a block it cannot read.
    The message is the record, or the one it holds (stream-json, Claude Code: under
    `message`). A message that is the record is sent as it is written (a request's,
    Cline's history), so whitespace-only text is named too (see `_blank`); one a record
    holds is a reply the model wrote, as it wrote it, which its agent sends back
    normalised: Claude Code logs the `"\n\n"` text blocks the model writes before its
    thinking, and its sessions go on past them."""
    record = read.raw
    message = record if "role" in record else record.get("message")
    if not isinstance(message, dict):
        return []
    if message.get("content") is None:
        return [f"{'content is null' if 'content' in message else 'no content'} (the "
                "Messages API takes no message without content)"]
    out = refused_items(message["content"], "content block", _refused_block)
    return out + _blank(message["content"]) if message is record else out


def _blank(content: Any) -> list[str]:
    """Whitespace-only text the Messages API refuses ("text content blocks must contain
    non-whitespace text"): content that is such a string, or text blocks of nothing but
    whitespace beside no text block with more in the message (the API takes a blank block
    beside text; empty ones are `_refused_block`'s)."""
    if isinstance(content, str):
        return ["content is whitespace only (the API refuses text without non-whitespace "
                "text)"] if content and not content.strip() else []
    texts = [(i, b["text"]) for i, b in enumerate(content if isinstance(content, list) else ())
             if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    if any(t.strip() for _, t in texts):
        return []
    return [f"content[{i}]: text block's 'text' is whitespace only, and no text block of "
            "the message has more (the API refuses it)" for i, t in texts if t]


class AnthropicReader:
    """Reads plain Messages API lines and stream-json lines alike."""

    def __init__(self) -> None:
        self.count = 0
        # the first message of each context: the file's, then the one after each compaction
        self.starts = [0]
        self.side: list[int] = []
        self.lanes: dict[str | None, ResponseMerger] = {}
        self.init_model: str | None = None
        self.last_model: str | None = None
        self.tally = UsageTally()
        self.replies: dict[int, Reply] = {}
        self.totals: dict[str, Any] = {}
        self.aside: list[SetAside] = []  # a result line's totals no count or cost can be
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        kind = record.get("type")
        if isinstance(record.get("message"), dict) and kind in ("user", "assistant"):
            return self._message(line, record, record["message"], kind)
        if "role" in record:
            return self._message(line, record, record, None)
        if kind in ("user", "assistant"):
            raise RecordError(f"a {kind!r} line without a 'message' object")
        if kind == "system" and record.get("subtype") == "init":
            self.init_model = _str(record.get("model")) or self.init_model
        elif kind == "system" and record.get("subtype") == "compact_boundary":
            out = self._flush_all()
            self.starts.append(self.count)
            return out
        elif kind == "result":
            aside = wrong_totals(line, wrong_counts(record.get("usage"), _USAGE_FIELDS,
                                                    "usage.", RUN_BOUND),
                                 wrong_costs(record, ("total_cost_usd",)))
            self.aside += [aside] if aside else []
            self.totals = {} if aside else _result_totals(record)
        elif not isinstance(kind, str):
            raise RecordError("neither a 'type' nor a 'role'")
        return []  # other line kinds (status, hooks, ...) are not model input

    def _message(self, line: int, record: dict[str, Any], d: dict[str, Any],
                 kind: str | None) -> list[Message]:
        message = api_message(d, line, record, kind)
        self.problems += [(line, p) for p in unknown_blocks(
            d.get("content"), "content" if d is record else "message.content")]
        lane = _str(record.get("parent_tool_use_id"))  # sub-agent traffic, when interleaved
        merger = self.lanes.setdefault(lane, ResponseMerger())
        if message.role == "user":
            typed = record.get("isSynthetic") is not True and lane is None
            return [m for turn in merged_turns(message) for m in self._emit(merger.add(
                turn if typed else replace(turn, human=False)), lane is not None)]
        call = None
        if message.role == "assistant":
            call, wrong = self.tally.key(message, d.get("usage"), merger.open)
            self.problems += [(line, p) for p in (*reply_problems(d), wrong) if p]
        if call is not None and not made_up(message, d.get("usage")):
            if message.model != SYNTHETIC_MODEL:
                self.last_model = message.model or self.last_model
            if lane is None and "usage" in d:
                self.tally.add(call, d["usage"], line)
        return self._emit(merger.add(message, call=call), lane is not None)

    def _emit(self, items: list[Emitted], side: bool) -> list[Message]:
        for item in items:
            if side:
                self.side.append(self.count)
            elif item.call in self.tally.calls:
                self.replies[self.count] = reply_of(item.message, item.call)
            self.count += 1
        return [item.message for item in items]

    def _flush_all(self) -> list[Message]:
        out: list[Message] = []
        for lane, merger in self.lanes.items():
            out += self._emit(merger.flush(), lane is not None)
        return out

    def finish(self) -> tuple[list[Message], Layout]:
        rest = self._flush_all()
        side = set(self.side)
        # each context, newest first: the one standing, then the one each compaction
        # summarized (the newest's is `earlier`, the older ones' `older`)
        ends = [*self.starts[1:], self.count]
        context, *before = [[n for n in range(start, end) if n not in side]
                            for start, end in reversed(list(zip(self.starts, ends,
                                                                strict=True)))]
        earlier = before[0] if before else []
        last = next((self.replies[n][0] for n in reversed(context) if n in self.replies), None)
        usage = self.tally.summary("assistant message.usage, once per message.id", last)
        if self.totals:
            source = usage.get("source", "")
            source += "; cost and result_* from the result line" if source else "the result line"
            usage = {**with_run_totals(usage, self.totals), "source": source}
        # the calls made on the context the newest compaction summarized, and on the one
        # each older compaction did: each fitted on the context it was sent (see
        # calibration.contexts_of)
        return rest, Layout(context, self.side, self.init_model or self.last_model, usage,
                            calls=self.tally.recorded(context, self.replies),
                            earlier=earlier,
                            earlier_calls=self.tally.recorded(earlier, self.replies),
                            older=[(held, self.tally.recorded(held, self.replies))
                                   for held in before[1:]],
                            outside_why="before a compaction",
                            set_aside=[*self.aside, *self.tally.unread],
                            problems=[*self.problems, *self.tally.nulls])


def _result_totals(record: dict[str, Any]) -> dict[str, Any]:
    """Run totals of a stream-json `result` line, under their own keys (one whose counts
    or cost cannot be true is set aside before: see `wrong_totals`)."""
    out: dict[str, Any] = {}
    usage = record.get("usage")
    if isinstance(usage, dict):
        out["result_input_tokens"] = sum(number(usage.get(f)) for f in _USAGE_FIELDS[:3])
        out["result_output_tokens"] = number(usage.get("output_tokens"))
    if record.get("total_cost_usd") is not None:
        out["cost_usd"] = record["total_cost_usd"]
    return out


def text_blocks(content: Any) -> list[Any]:
    """A `content` value as a list of blocks (a string becomes one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


# the `compactMetadata.trigger` of the compactions ctxpack writes (Claude Code's own are
# "auto" or "manual")
COMPRESS_TRIGGER = "ctxpack"


def boundary_record(c: Compaction, fields: dict[str, Any]) -> dict[str, Any]:
    """A `compact_boundary` system record in Claude Code's shape, before a ctxpack summary,
    stating the context before and after as billed (the size after: what a reader takes
    for it while no call is made since, see claude_code.compressed_to)."""
    return {**fields, "type": "system", "subtype": "compact_boundary",
            "content": "Conversation compacted", "timestamp": c.time,
            "compactMetadata": {"trigger": COMPRESS_TRIGGER, "preTokens": c.tokens_before,
                                "postTokens": c.tokens_after},
            META_KEY: c.part}


class AnthropicEditor(NoUsage):
    """Plain Messages API lines alternate roles, so the summary joins the user message
    before it; stream-json has Claude Code's compact boundary to restart after."""

    def __init__(self, plain: bool) -> None:
        self.plain = self.alternates = plain
        self.resets = not plain

    def keeps_place(self, message: Message) -> bool:
        return False

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        if isinstance(record.get("message"), dict):
            message = record["message"]
            content = tool_result_blocks(message.get("content"), texts)
            return {**record, "message": {**message, "content": content}}
        return {**record, "content": tool_result_blocks(record.get("content"), texts)}

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        block = {"type": "text", "text": c.summary}
        if self.plain:
            if c.merge is None:
                return [{"role": "user", "content": [block], META_KEY: c.meta}]
            kept = [b for b in text_blocks(c.merge.get("content")) if not _is_summary(b)]
            return [{**c.merge, "content": [*kept, block], META_KEY: c.meta}]
        session = next((r["session_id"] for r in (c.before, *c.head)
                        if r is not None and "session_id" in r), None)
        fields = {} if session is None else {"session_id": session}
        boundary = boundary_record(c, fields)
        boundary["compact_metadata"] = boundary.pop("compactMetadata")
        del boundary["timestamp"], boundary["content"]
        head = [{**r, META_KEY: c.part} for r in c.head]
        summary = {"type": "user", "message": {"role": "user", "content": [block]},
                   "parent_tool_use_id": None, **fields, META_KEY: c.meta}
        return [boundary, *head, summary]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None


def _is_summary(block: Any) -> bool:
    return isinstance(block, dict) and str(block.get("text", "")).startswith(SUMMARY_HEADING)


class AnthropicFormat:
    name = "anthropic"
    default_model = "claude"  # when the file names no model
    description = "Anthropic Messages API messages, one per line, or Claude Code stream-json"
    records_usage = "Claude stream-json"  # (see formats.usage_recorders)

    def sniff(self, record: dict[str, Any]) -> int:
        return sniff_record(record)

    def doubt(self, record: Any) -> str:
        return doubt([record])

    def reader(self) -> AnthropicReader:
        return AnthropicReader()

    def editor(self, transcript: Any) -> AnthropicEditor:
        first = transcript.messages[0].raw if transcript.messages else None
        return AnthropicEditor(plain=isinstance(first, dict) and "role" in first)

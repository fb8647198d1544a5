"""Gemini CLI: chat recordings (`session-*.json` and `.jsonl`) and `stream-json` output.

A chat recording holds `messages` of type user, gemini, info, error and warning;
only user and gemini records are model input. A gemini record carries its text,
`thoughts` (summaries the model wrote: reasoning), `toolCalls` holding each call
with its `result`, and the reply's `tokens`. Newer CLIs also write each result
again as the next user message (`functionResponse` parts): that copy counts once.
The thoughts are not context: the CLI keeps no thought part of a reply in the
history it sends (`GeminiChat` filters `part.thought` out of the response before
recording it), so they are read as a message of their own, outside the context.

The older form is one JSON document; the newer one is JSONL: a metadata line, a
line per message written again in full whenever it changes (its newest copy holds
its place), `{"$set": {...}}` metadata updates (`$set.messages` replaces the whole
list, as the CLI does after compressing its history) and `{"$rewindTo": id}`,
which drops that message and every later one.

A checkpoint (`/chat save TAG` writes `checkpoint-TAG.json` beside the recordings) is
the history the CLI sends, as it sends it: `{"history": [Content...]}` (older CLIs: the
bare array), each Content `{role: user|model, parts}` of Gemini API parts. It records no
usage and no model; `/chat resume TAG` sends it again as it is. The model's calls in it
carry the ids the API gave them (often none) and the CLI gives each response one of its
own, so a response answers its call by name, as the API pairs them (see `Links`).
(stream-json's `tool_result` names no tool, and the CLI writes each result as its call
finishes, not in the order the calls were made (a batch runs in parallel, topic updates
first), with the call's `tool_id`: one without a `tool_id` is paired with the oldest call not
yet answered, and one whose `tool_id` no call has with the oldest call written without one,
guesses that validate names.)

`--output-format stream-json` writes events: `init` (model, session), `message`
(user, or assistant text in `delta` chunks), `tool_use`, `tool_result` and a
closing `result` with run totals. Each `init` starts a new run, a conversation of
its own, but for a run of `--resume ID` (its `init` names a session an earlier run
had), which goes on with that session's history; lines between runs (after a `result`,
before the next `init`) are not the CLI's. A file that opens without an `init` (the tail of
a run) is read as a run whose model it does not name, and validate says so. An event of a
type the CLI does not write, or of a field of the wrong kind, is kept in the file and named
by validate; what can be read of it is read.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..jsonl import dumps, item_lines, json_kind
from ..recorded import (
    RUN_BOUND,
    SetAside,
    Summed,
    null_counts,
    summed,
    unreadable,
    whole,
    wrong_counts,
    wrong_totals,
)
from ..transcript import (
    META_KEY,
    REWRITTEN,
    Image,
    Message,
    Part,
    RecordedCall,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from .agent_text import persons
from .base import (
    NOT_READ_BACK,
    Compaction,
    Items,
    Layout,
    NoUsage,
    RecordError,
    Sessions,
    array_field,
    naming,
    number,
    one_session,
    string_field,
)

_MODEL_INPUT = {"user", "gemini"}
_NOTICES = {"info", "error", "warning"}  # the UI's own records: not model input
_STREAM_TYPES = {"init", "message", "tool_use", "tool_result", "result", "error"}


def _json(value: Any) -> str:
    return dumps(value).decode("utf-8", "surrogatepass")


def _result_parts(response: Any) -> tuple[tuple[Text | Image, ...], bool]:
    """The text a `functionResponse.response` puts before the model, and whether it failed."""
    if not isinstance(response, dict):
        return ((Text(_json(response)),) if response is not None else ()), False
    error = "error" in response and response["error"] not in (None, "")
    rest = {k: v for k, v in response.items() if k not in ("output", "error")}
    value = response.get("error") if error else response.get("output")
    if isinstance(value, str) and not rest:
        return (Text(value),), error
    return (Text(_json(response)),), error


def _part(item: Any) -> Part | None:
    """One Gemini API `Part`: text, thought, inline or file data, call or response."""
    if isinstance(item, str):
        return Text(item)
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("text"), str):
        return Thinking(item["text"]) if item.get("thought") is True else Text(item["text"])
    call = item.get("functionCall")
    if isinstance(call, dict):
        args = call.get("args")
        return ToolCall(string_field(call, "id"), string_field(call, "name") or "",
                        "" if args is None else _json(args))
    response = item.get("functionResponse")
    if isinstance(response, dict):
        parts, error = _result_parts(response.get("response"))
        return ToolResult(string_field(response, "id"), parts, error,
                          name=string_field(response, "name") or "")
    inline = item.get("inlineData")
    if isinstance(inline, dict):
        mime = string_field(inline, "mimeType")
        if mime and mime.startswith("image/"):
            return Image(mime, data=string_field(inline, "data"))
        return Text(_json(item))
    data = item.get("fileData")
    if isinstance(data, dict):
        uri = string_field(data, "fileUri")
        mime = string_field(data, "mimeType")
        return Image(mime, url=uri) if mime and mime.startswith("image/") else Text(uri or "")
    return None


def _parts(content: Any) -> list[Part]:
    """The parts of a `PartListUnion`: a string, one part, or a list of them."""
    if content is None or content == "":
        return []
    items = content if isinstance(content, list) else [content]
    return [p for p in map(_part, items) if p is not None]


class Links:
    """Calls and responses of one conversation paired by name, as the Gemini API pairs
    them where they carry no `id` (its ids are optional, and the Gemini CLI gives its own
    to each response, not to the call the model made): each call without one is given
    `NAME#k` (no id of the file: never shown, nor kept by `convert`) and its place in its
    Content's parts, which names it; a response answers the call its id names, else (no
    id, or one no call was given) the oldest call of its name not yet answered (of those
    without an id, for a response with one). None: it stays unlinked, and validate names
    it."""

    def __init__(self) -> None:
        self.made = 0
        self.open: dict[str, list[str]] = {}  # tool name -> its calls not yet answered
        self.given: set[str] = set()  # the ids the file gives calls
        self.answered: list[tuple[str, str]] = []  # each call answered: its name, its id

    def forget(self) -> None:
        """Start again, as for a conversation of its own (the ids made stay unique)."""
        self.open, self.given = {}, set()

    def reopen(self, answered: list[tuple[str, str]]) -> None:
        """Open again the calls `answered` (names and ids, in the order they were
        answered), oldest first, as for a message written again that answers them anew."""
        for name, call in reversed(answered):
            waiting = self.open.setdefault(name, [])
            if call not in waiting:
                waiting.insert(0, call)

    def part(self, part: Part, index: int) -> Part:
        """`part`, the `index`th of its Content's parts, linked."""
        if isinstance(part, ToolCall):
            if part.id is None:
                self.made += 1
                part = replace(part, id=f"{part.name}#{self.made}", place=f"parts[{index}]")
            else:
                self.given.add(part.id)
            self.open.setdefault(part.name, []).append(part.id)  # type: ignore[arg-type]
        elif isinstance(part, ToolResult):
            waiting = self.open.get(part.name, [])
            if part.call_id in waiting:
                waiting.remove(part.call_id)
                self.answered.append((part.name, part.call_id))  # type: ignore[arg-type]
            elif part.call_id is None or part.call_id not in self.given:
                named = next((c for c in waiting if part.call_id is None or c not in self.given),
                             None)
                if named is not None:
                    waiting.remove(named)
                    self.answered.append((part.name, named))
                    part = replace(part, call_id=named)
        return part


def linked_parts(content: Any, links: Links) -> list[Part]:
    """The parts of a Content's `parts` (as `_parts` reads them), calls and responses
    paired by `links`."""
    if content is None or content == "":
        return []
    items = content if isinstance(content, list) else [content]
    return [links.part(p, i) for i, item in enumerate(items) for p in _parts([item])]


def refused_part(part: dict[str, Any]) -> list[str]:
    """What the Gemini API refuses of one Part object: text that is no string."""
    if "text" in part and not isinstance(part["text"], str):
        return [f"'text' is {json_kind(part['text'])}, not a string"]
    return []


def refused(read: Message) -> list[str]:
    """What the Gemini API refuses of a chat recording's user or gemini record: a Part of
    its `content` (a string, a Part or a list of them, as the CLI sends it) it cannot read;
    and fields of the reply the CLI cannot read (`thoughts` and `toolCalls` of no objects),
    which ctxpack passes over (`tokens` no object is usage that cannot be read: see
    `_Tokens.add`)."""
    raw = read.raw
    content = raw.get("content")
    out = []
    if isinstance(content, dict):
        out += [f"content: {problem}" for problem in refused_part(content)]
    elif isinstance(content, list):
        for i, item in enumerate(content):
            if isinstance(item, dict):
                out += [f"content[{i}]: {problem}" for problem in refused_part(item)]
            elif not isinstance(item, str):
                out.append(f"content[{i}] is {json_kind(item)}, not a Part")
    elif content is not None and not isinstance(content, str):
        out.append(f"'content' is {json_kind(content)}, not a string, Part or array")
    if raw.get("type") != "gemini":
        return out
    for key in ("thoughts", "toolCalls"):  # (toolCalls of no array cannot be read at all)
        value = raw.get(key)
        if value is not None and not isinstance(value, list):
            out.append(f"'{key}' is {json_kind(value)}, not an array")
        out += [f"{key}[{k}] is {json_kind(item)}, not an object"
                for k, item in enumerate(value if isinstance(value, list) else ())
                if not isinstance(item, dict)]
    return out

def _thoughts(value: Any) -> list[Thinking]:
    out = []
    for t in value if isinstance(value, list) else ():
        if not isinstance(t, dict):
            continue
        text = "\n".join(s for s in (t.get("subject"), t.get("description"))
                         if isinstance(s, str) and s)
        if text:
            out.append(Thinking(text))
    return out


def record_messages(record: dict[str, Any], line: int, key: str = "",
                    links: Links | None = None) -> list[Message]:
    """The messages one user or gemini record puts before the model, in order. A call of
    its `toolCalls` without an id is given one made of `key` (the record's own, unique
    in its file) and its place, never shown: its result beside it answers it. The calls
    and responses of its `content` are paired by `links`, where given."""
    kind, ident = record.get("type"), string_field(record, "id")
    content = record.get("content")
    parts = _parts(content) if links is None else linked_parts(content, links)
    if kind == "user":
        results = tuple(p for p in parts if isinstance(p, ToolResult))
        said = [p for p in parts if not isinstance(p, ToolResult)]
        out = []
        if results:
            out.append(Message("tool", results, (line,), record))
        if said or not results:
            out.append(Message("user", tuple(said), (line,), record, id=ident,
                               human=persons(said)))
        return out
    model = string_field(record, "model")
    calls = array_field(record, "toolCalls")
    thoughts = [*_thoughts(record.get("thoughts")), *(p for p in parts if isinstance(p, Thinking))]
    said: list[Part] = [p for p in parts if not isinstance(p, Thinking)]
    results: list[Part] = []
    for k, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        args = call.get("args")
        made = ToolCall(string_field(call, "id"), string_field(call, "name") or "",
                        "" if args is None else _json(args))
        if made.id is None:
            made = replace(made, id=f"{key}\0toolCalls[{k}]", place=f"toolCalls[{k}]")
        said.append(made)
        for p in _parts(call.get("result")):
            if isinstance(p, ToolResult):  # (the call holding it names it)
                results.append(replace(p, call_id=p.call_id or made.id,
                                       name=p.name or made.name))
    out = [Message("assistant", tuple(said), (line,), record, id=ident, model=model)]
    if results:
        out.append(Message("tool", tuple(results), (line,), record))
    if thoughts:  # first, as the model thought them; never sent back (see `unsent`)
        out.insert(0, Message("assistant", tuple(thoughts), (line,), record, id=ident,
                              model=model))
    return out


def unsent(message: Message) -> bool:
    """Is this the message of a reply's thoughts, which the CLI does not send back?"""
    return bool(message.parts) and all(isinstance(p, Thinking) for p in message.parts)


# the model Gemini CLI runs when none is set (its DEFAULT_GEMINI_MODEL): assumed for a file
# that names none, by a name the API serves (stats, and the bodies convert writes)
CLI_MODEL = "gemini-2.5-pro"

_TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool")  # of a reply's `tokens`
# its cached input is part of `input`; its `total` is input, output, thoughts and tool
_ADDED = ("input", "output", "thoughts", "tool")
_WRITTEN = (*_TOKEN_FIELDS, "total")  # every count the CLI writes of a reply
_REPLY = ("output", "thoughts")  # the counts of the reply itself, not of its prompt
_TOKEN_PARTS = (("cached", "input"), *((f, "total") for f in _ADDED))


def chat_recordings(folder: str) -> list[str]:
    """The chat recordings written as one JSON document that a Gemini CLI `chats/` folder
    holds (`session-*.json`; the JSONL ones end as every JSONL transcript does)."""
    if os.path.basename(os.path.normpath(folder)) != "chats":
        return []
    return sorted(str(p) for p in Path(folder).glob("session-*.json") if p.is_file())


def _unadded(tokens: dict[str, Any]) -> str:
    """Where a reply's `tokens.total` is not its input, output, thoughts and tool added up,
    as the CLI writes it ("": it is, or a count is not written)."""
    counts = [tokens.get(f, 0 if f == "tool" else None) for f in _ADDED]
    total = tokens.get("total")
    if not all(whole(c) for c in (*counts, total)) or sum(counts) == total:
        return ""
    return (f"tokens.total {total:,} (not the {sum(counts):,} its "
            f"tokens.{', '.join(_ADDED[:-1])} and {_ADDED[-1]} add up to)")


class _Tokens:
    """Per-reply `tokens`, each reply counted once (a JSONL line may repeat a reply); a
    reply later rewound was still a call the provider answered, so it stays."""

    def __init__(self) -> None:
        self.replies: dict[str, dict[str, int]] = {}
        # each reply's model, the counts of its `tokens` no token count can be, its line,
        # and the counts of the reply itself written as null (see RecordedCall.unsized)
        self.checked: dict[str, tuple[str | None, str, int, str]] = {}
        self.unread: dict[str, SetAside] = {}  # each reply's `tokens` that is no object

    def add(self, key: str, tokens: Any, model: str | None, line: int,
            place: tuple[str, int] = ("", 0)) -> None:
        """Take the `tokens` of the reply `key` (its newest copy's stand), at `line`, and in
        a document at `place` (`messages[3]` and the line its item starts on)."""
        self.unread.pop(key, None)
        if isinstance(tokens, dict):
            self.replies[key] = {k: number(tokens.get(k)) for k in _TOKEN_FIELDS}
            wrong = wrong_counts(tokens, _WRITTEN, "tokens.", parts=_TOKEN_PARTS,
                                 nulls=[f for f in _WRITTEN if f not in _REPLY]) \
                or _unadded(tokens)
            self.checked[key] = (model, wrong, line, null_counts(tokens, _REPLY, "tokens."))
        elif tokens is not None:
            self.replies.pop(key, None)
            self.checked.pop(key, None)
            self.unread[key] = unreadable(line, f"'tokens' is {json_kind(tokens)}, not an "
                                                "object", *place)

    def wrong(self, key: str) -> str:
        """The counts of the reply `key` no token count can be ("": none)."""
        return self.checked[key][1] if key in self.checked else ""

    def unsized(self, key: str) -> str:
        """The counts of the reply `key` itself written as null ("": none)."""
        return self.checked[key][3] if key in self.checked else ""

    def uncalled(self, called: set[str]) -> list[RecordedCall]:
        """The replies the summary holds but for those of `called` (the calls of the
        context), as calls on no context (a reply rewound, replaced by a later copy, or
        of thoughts alone): judged alone, as a compacted context's are."""
        return [RecordedCall(0, v["input"], None, self.checked[key][0],
                             problem=self.checked[key][1], at=self.checked[key][2],
                             summed=self.added(key), unsized=self.unsized(key), unplaced=REWRITTEN)
                for key, v in self.replies.items() if key not in called]

    def added(self, key: str) -> Summed:
        """What the reply `key` adds to the summary."""
        v = self.replies.get(key)
        return () if v is None else summed(
            input_tokens=v["input"], output_tokens=v["output"] + v["thoughts"],
            cache_read_tokens=v["cached"], reasoning_tokens=v["thoughts"])

    def summary(self) -> dict[str, Any]:
        if not self.replies:
            return {}
        values = list(self.replies.values())
        return {"source": "tokens of each gemini reply", "calls": len(values),
                "input_tokens": sum(v["input"] for v in values),
                "output_tokens": sum(v["output"] + v["thoughts"] for v in values),
                "cache_read_tokens": sum(v["cached"] for v in values),
                "reasoning_tokens": sum(v["thoughts"] for v in values),
                "last_input_tokens": values[-1]["input"]}


class GeminiChatReader:
    """Replays a recording as the CLI does; the context is the messages left at the end.

    `entries` maps each live message id (in the order the CLI keeps them) to the
    numbers of the messages emitted for its newest copy.
    """

    def __init__(self) -> None:
        self.count = 0
        self.entries: dict[str, list[int]] = {}
        self.echoes: dict[int, set[str]] = {}  # user-copied results: emitted number -> call ids
        self.answers: dict[int, set[str]] = {}  # results beside their calls, likewise
        self.calls: dict[int, set[str]] = {}  # the calls a reply makes, likewise
        # the replies' calls, for the results a user message repeats without an id (the
        # CLI writes one; a file that gives none is paired by name, as the API pairs them)
        self.links = Links()
        self.linked: set[str] = set()  # the calls given to `links` (a reply is written again)
        # the calls each user message's results answered (by its id): written again, its
        # results answer them anew, not the next open calls of their names
        self.answering: dict[str, list[tuple[str, str]]] = {}
        self.tokens = _Tokens()
        # reply number: its input, model, the counts of its `tokens` no count can be, and
        # what they added to the summary
        self.prompts: dict[int, tuple[int, str | None, str, Summed, str, str]] = {}
        self.model: str | None = None
        self.anonymous = 0
        self.replacing = False
        self.gone: set[str] = set()  # why messages left the context, in the words of `finish`
        self.thoughts: set[int] = set()  # the messages of replies' thoughts: never context
        self.items = Items("message {}")
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)
        self.open: list[ToolCall] = []  # the calls of the run not yet answered, in order
        self.copies: list[int] = []  # (see Layout.copies)
        self.restated: dict[int, int] = {}  # (see Layout.restated)
        # of each live message id, the first message of its first copy, and those of
        # every copy (a message rewound or replaced and then written anew starts afresh)
        self.first: dict[str, int] = {}
        self.stated: dict[str, list[int]] = {}
        self.data: tuple[bytes, int] | None = None  # a document's bytes, its first line

    def feed(self, line: int, record: Any) -> list[Message]:
        if not isinstance(record, dict):
            raise RecordError("not a Gemini CLI chat record: not a JSON object")
        if "$rewindTo" in record:
            target = string_field(record, "$rewindTo")
            if target is not None:  # the CLI passes over a null one
                self._rewind(target, line)
            return []
        if "$set" in record:
            update = record["$set"]
            if not isinstance(update, dict):
                raise RecordError("'$set' is not an object")
            messages = array_field(update, "messages")
            # as the CLI's own loader: an empty list replaces nothing
            return self._replace(line, messages, ("$set", "messages"), compressed=True) \
                if messages else []
        if "sessionId" in record and "type" not in record:
            if not isinstance(record["sessionId"], str):  # (the CLI writes every session's)
                self.problems.append((line, f"'sessionId' is {json_kind(record['sessionId'])}, "
                                            "not a string: the session has no id, and is not "
                                            "told from another in the file"))
            if record.get("messages") is None:  # the metadata line of the JSONL form
                return []
            return self._replace(line, array_field(record, "messages"), ("messages",))
        return self._upsert(line, record)

    def _replace(self, line: int, messages: list[Any], keys: tuple[str, ...],
                 compressed: bool = False) -> list[Message]:
        if any(self.entries.values()):
            self.gone.add("replaced by a compression's `$set`")
        self.entries = {}
        # the list is read afresh, its calls and results paired anew in its order: a
        # result repeated without an id finds its own call, not a later one of its name
        self.links.forget()
        self.linked = set()
        self.answering = {}
        if compressed:  # the replies of a list the CLI compressed were of another context
            self.prompts = {}
        out: list[Message] = []
        self.replacing = compressed
        for _, m in self.items.each(messages, *keys):
            if isinstance(m, dict):
                out += self._upsert(line, m)
        self.replacing = False
        return out

    def _upsert(self, line: int, record: dict[str, Any]) -> list[Message]:
        kind = string_field(record, "type")
        if kind is None:
            raise RecordError("no message 'type' (user, gemini, info, ...), '$set' or "
                              "'$rewindTo'")
        ident = string_field(record, "id")
        if ident is None:
            self.anonymous += 1
            ident = f"\0{self.anonymous}"
        if kind not in _MODEL_INPUT:  # a notice of the UI: not model input
            if kind not in _NOTICES:  # (nor a kind the CLI does not write; kept in the file)
                self.problems.append((line, f"a message of type {kind!r}, which Gemini CLI "
                                            "does not write (it writes "
                                            f"{', '.join(sorted(_MODEL_INPUT | _NOTICES))}): "
                                            "kept in the file, not read"))
            self.entries[ident] = []  # but a rewind may name it
            return []
        if kind == "user":
            self.links.reopen(self.answering.pop(ident, []))
            before = len(self.links.answered)
        messages = record_messages(record, line, ident,
                                   self.links if kind == "user" else None)
        if kind == "user":
            self.answering[ident] = self.links.answered[before:]
        for call in (c for m in messages for c in m.tool_calls
                     if c.id is not None and c.id not in self.linked):
            self.linked.add(call.id)  # type: ignore[arg-type]
            self.links.part(call, 0)
        numbers = list(range(self.count, self.count + len(messages)))
        self.count += len(messages)
        for n, m in zip(numbers, messages, strict=True):
            if kind == "gemini" and unsent(m):
                self.thoughts.add(n)
            self.calls[n] = {c.id for c in m.tool_calls if c.id is not None}
            ids = {r.call_id for r in m.tool_results if r.call_id is not None}
            if ids and kind == "user":
                self.echoes[n] = ids
            elif ids:
                self.answers[n] = ids
        if self.entries.get(ident):  # written again: every message of each copy states
            # the message again, from the first of its first copy on
            first = self.first[ident]
            self.restated |= {n: first for n in
                              [*self.stated[ident], *numbers] if n != first}
            self.stated[ident] += numbers
        else:
            self.first[ident], self.stated[ident] = numbers[0], list(numbers)
        self.entries[ident] = numbers  # an existing id keeps its place, as in a JS Map
        if kind == "gemini":
            model = string_field(record, "model")
            self.model = model or self.model
            self.tokens.add(ident, record.get("tokens"), model or self.model, line,
                            self._place())
            tokens = record.get("tokens")
            billed = number(tokens.get("input")) if isinstance(tokens, dict) else 0
            wrong = self.tokens.wrong(ident)
            sent = [n for n in numbers if n not in self.thoughts]
            if (billed or wrong) and sent and not self.replacing:
                # `input`: the prompt before this reply
                self.prompts[sent[0]] = (billed, model or self.model, wrong,
                                         self.tokens.added(ident), ident,
                                         self.tokens.unsized(ident))
        return messages

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the bytes of a recording that is one document: a record is placed in it."""
        self.data = (data, first)

    def _place(self) -> tuple[str, int]:
        """Where in a document the record being read is (`messages[3]`, as its messages are
        placed) and the line it starts on (0: the document is one line); none in a JSONL
        recording, whose lines place its records."""
        at = self.items.at
        if self.data is None or not at:
            return "", 0
        place = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in at).lstrip(".")
        return place, item_lines(*self.data, [at]).get(at, 0)

    def _rewind(self, ident: str, line: int) -> None:
        keys = list(self.entries)
        why = "rewound (`$rewindTo`)"
        if ident not in self.entries:  # the CLI's loader then clears the whole history
            why = "rewound by a `$rewindTo` naming no message, which drops them all"
            self.problems.append((line, f"'$rewindTo' names {ident!r}, which no "
                                        "message before it has: Gemini CLI drops every "
                                        "message before it from the context, as ctxpack "
                                        "does"))
        cut = keys.index(ident) if ident in self.entries else 0
        for key in keys[cut:]:
            if self.entries.pop(key):
                self.gone.add(why)

    def finish(self) -> tuple[list[Message], Layout]:
        context: list[int] = []
        answered: set[str] = set()
        live = [n for numbers in self.entries.values() for n in numbers]
        called = {c for n in live for c in self.calls.get(n, ())}
        beside = set().union(*self.answers.values())  # results the replies hold
        for numbers in self.entries.values():
            for n in numbers:
                if n in self.thoughts:
                    self.gone.add("thoughts, which the CLI does not send back")
                    continue
                echo = self.echoes.get(n)
                # results a user message repeats count where they first answer a call the
                # context holds: not again beside the reply's own copy, nor after the
                # call has gone (into a summary, say)
                if echo is not None and (echo <= answered or not echo & called):
                    self.gone.add("tool results a user message repeats, counted once")
                    if echo <= beside:  # (a copy of a reply's own results, in the file)
                        self.copies.append(n)
                    continue
                answered |= self.answers.get(n, set()) | (echo or set())
                context.append(n)
        calls = [RecordedCall(i, self.prompts[n][0], None, self.prompts[n][1],
                              problem=self.prompts[n][2], summed=self.prompts[n][3],
                              unsized=self.prompts[n][5])
                 for i, n in enumerate(context) if n in self.prompts]
        called = {self.prompts[n][4] for n in context if n in self.prompts}
        return [], Layout(context, model=self.model, usage=self.tokens.summary(), calls=calls,
                          outside_why="; ".join(sorted(self.gone)), problems=self.problems,
                          unbilled_calls=self.tokens.uncalled(called), copies=self.copies,
                          restated=self.restated,
                          set_aside=list(self.tokens.unread.values()))


def sniff_chat(record: Any) -> int:
    if not isinstance(record, dict):
        return 0
    if isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
        return 2  # the metadata line, or the whole legacy document
    if isinstance(record.get("$rewindTo"), str) or isinstance(record.get("$set"), dict):
        return 2
    kind = record.get("type")
    if kind in ("gemini", "info", "warning") and isinstance(record.get("id"), str) \
            and "content" in record:
        return 2
    return 0


def chat_doubt(record: Any) -> str:
    """Why a file taken for a recording by a message line (`sniff_chat`) might be another
    log: the CLI opens each recording with its session line (or the whole document is the
    session), so a file whose first mark is a message has lost that line or never had it.
    A reply as the CLI records every one (stamped, with its `model` or `tokens`) is of a
    recording cut above it; an id, a type and content (a notice's type, `info`, or
    `gemini` alone) are what many a log writes. "" when nothing says it might be another."""
    if not isinstance(record, dict) or "type" not in record:
        return ""  # the session line or a control line
    if record["type"] == "gemini" and isinstance(record.get("timestamp"), str) and any(
            k in record for k in ("model", "tokens", "toolCalls", "thoughts")):
        return ""
    return (f"read as a Gemini CLI recording by a message of type {record['type']!r} alone, "
            "though no session line (sessionId, projectHash) opens the file, as it opens "
            "each the CLI writes")


_HOLDERS = ("$set", "messages", "toolCalls", "result", "content")  # where responses live


def _with_responses(value: Any, texts: dict[str | None, str], call: str | None = None) -> Any:
    """`value` with each `functionResponse` answering a call in `texts` reading its text."""
    if isinstance(value, list):
        return [_with_responses(v, texts, call) for v in value]
    if not isinstance(value, dict):
        return value
    response = value.get("functionResponse")
    if isinstance(response, dict):
        key = response.get("id") if isinstance(response.get("id"), str) else call
        if key in texts:
            return {**value, "functionResponse": {**response, "response": {
                "output": texts[key]}}}
        return value
    own = value.get("id") if isinstance(value.get("id"), str) and "args" in value else call
    return {k: _with_responses(v, texts, own) if k in _HOLDERS else v for k, v in value.items()}


class GeminiChatEditor(NoUsage):
    """A JSONL recording: results are replaced where the line holds them; the summary and
    the kept head are written as a `$set` of `messages`, which is how the CLI itself
    records a compressed history (it replaces every message before it)."""

    resets = True
    alternates = False

    def keeps_place(self, message: Message) -> bool:
        return False  # nothing before the `$set` counts any more

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        return _with_responses(record, texts)  # type: ignore[no-any-return]

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        head, seen = [], set()
        for r in c.head:  # a reply and its results are one record
            if id(r) not in seen:
                seen.add(id(r))
                head.append(r)
        summary = {"id": c.seed, "timestamp": c.time, "type": "user",
                   "content": [{"text": c.summary}]}
        return [{"$set": {"messages": [*head, summary], "lastUpdated": c.time},
                 META_KEY: c.meta}]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None


def _session_of(record: Any) -> tuple[str, set[str], set[str]] | None:
    """The session a recording's metadata line (or document) states (it links to none)."""
    if isinstance(record, dict) and "type" not in record and \
            isinstance(ident := record.get("sessionId"), str):
        return ident, set(), {ident}
    return None


class GeminiChatFormat:
    name = "gemini-cli"
    default_model = CLI_MODEL  # when the file names no model
    description = "Gemini CLI chat recording (session-*.json or .jsonl)"
    records_usage = "Gemini CLI"  # (see formats.usage_recorders)
    holds_no_message = ("the recording holds no user or gemini message (its session's "
                        "metadata and notices only)")
    document = True  # the older form is one JSON document

    def sniff(self, record: Any) -> int:
        return sniff_chat(record)

    def doubt(self, record: Any) -> str:
        return chat_doubt(record)

    def one_record(self, value: Any) -> bool:
        # the older document holds its messages; the JSONL form's lines hold none (its
        # metadata line may be the whole file, before the first message is written; a
        # `messages` of another type is the document's, which the reader names)
        return not (isinstance(value, dict) and value.get("messages") is not None)

    def reader(self) -> Sessions:
        return Sessions(GeminiChatReader, _session_of, "a metadata line", "Gemini CLI")

    def editor(self, transcript: Any) -> GeminiChatEditor:
        one_session(transcript, "metadata line")
        if transcript.document:  # the older form, pretty or on one line
            from ..errors import UsageError

            raise UsageError(f"{transcript.path}: compress writes Gemini CLI recordings in "
                             "their JSONL form, not the older single JSON document",
                             naming("the CLI turns a .json session into .jsonl when it "
                                    "resumes it; or `ctxpack convert FILE --to openai -o "
                                    "run.jsonl`, then `ctxpack compress run.jsonl`",
                                    transcript.path))
        return GeminiChatEditor()


def checkpoint_history(value: Any) -> list[Any] | None:
    """The Contents of a checkpoint document (`{history}` or the older bare array), if
    the value is one: entries of role user or model, each with a list of parts."""
    history = value.get("history") if isinstance(value, dict) else value
    if not isinstance(history, list) or not history:
        return None
    head = history[:20]
    if all(isinstance(c, dict) and c.get("role") in ("user", "model")
           and isinstance(c.get("parts"), list) for c in head):
        return history
    return None


class GeminiCheckpointReader:
    """A checkpoint's history, each Content the messages a recording's record would be."""

    def __init__(self) -> None:
        self.count = 0
        self.thoughts: set[int] = set()
        self.items = Items("history[{}]")
        self.links = Links()  # the history is one conversation, its calls paired by name

    def feed(self, line: int, record: Any) -> list[Message]:
        history = record.get("history") if isinstance(record, dict) else record
        if not isinstance(history, list):
            raise RecordError("not a Gemini CLI checkpoint: no 'history' list of contents")
        out: list[Message] = []
        keys = ("history",) if isinstance(record, dict) else ()
        for i, content in self.items.each(history, *keys):
            if not isinstance(content, dict):
                raise RecordError(f"history[{i}] is {json_kind(content)}, not a Content object",
                                  at=self.items.at)
            role = string_field(content, "role")
            if role not in ("user", "model"):
                raise RecordError(f"history[{i}] has role {role!r}, not 'user' or 'model'",
                                  at=self.items.at)
            kind = "gemini" if role == "model" else "user"
            for m in record_messages({"type": kind, "content": content.get("parts")}, line,
                                     links=self.links):
                if kind == "gemini" and unsent(m):
                    self.thoughts.add(self.count)
                out.append(replace(m, raw=content))
                self.count += 1
        return out

    def finish(self) -> tuple[list[Message], Layout]:
        context = [n for n in range(self.count) if n not in self.thoughts]
        return [], Layout(context, outside_why="thoughts, which the CLI does not send back")


class GeminiCheckpointFormat:
    name = "gemini-checkpoint"
    default_model = CLI_MODEL  # a checkpoint names no model
    description = "Gemini CLI checkpoint (`/chat save`: the history as the CLI sends it)"
    document = True
    why_not_written = ("compress does not rewrite Gemini CLI checkpoints: `ctxpack convert "
                       "FILE --to openai -o run.jsonl`, then `ctxpack compress run.jsonl`, "
                       "compresses its context as Chat Completions messages")

    def sniff(self, record: Any) -> int:
        return 2 if checkpoint_history(record) is not None else 0

    def reader(self) -> GeminiCheckpointReader:
        return GeminiCheckpointReader()


# the counts of a stream-json `result` line's run totals (`stats`)
_STATS_FIELDS = ("input_tokens", "output_tokens", "cached", "total_tokens", "tool_calls")
# its cached input is part of `input_tokens` (its `input`, the rest)
_STATS_PARTS = (("cached", "input_tokens"),)


class GeminiStreamReader:
    """Assistant text chunks and the calls that follow them make one model turn."""

    def __init__(self) -> None:
        self.count = 0
        self.context: list[int] = []
        self.sessions: dict[str, int] = {}  # session_id -> its conversation
        self.conversation = 0  # of the newest run
        self.started = 0  # conversations
        self.live = False  # inside a run: after its init, before its result
        # before any init: the messages held (a harness may write the prompt before the run,
        # outside it) and the line of the first, until the run's own events say the file
        # opens inside a run, its tail (then they are that run's)
        self.held: list[int] = []
        self.held_from = 0
        self.between = False  # a message came after a run's result, before the next init
        # the lines of the turn being read, each with the parts it adds (read as it comes,
        # so that a bad field is the problem of its own line)
        self.pending: list[tuple[int, dict[str, Any], Part]] = []
        self.model: str | None = None
        self.totals: dict[str, int] = {}
        self.stats_runs = 0
        # run totals no token count can be, or that cannot be read
        self.aside: list[SetAside] = []
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)
        self.open: list[ToolCall] = []  # the calls of the run not yet answered, in order

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        kind = string_field(record, "type")
        if kind not in _STREAM_TYPES:
            what = f"of type {kind!r}" if kind is not None else "without a 'type'" \
                if "type" not in record else f"whose 'type' is {json_kind(record['type'])}"
            self.problems.append((line, f"an event {what}, which Gemini CLI does not write "
                                        f"(it writes {', '.join(sorted(_STREAM_TYPES))}): "
                                        "kept in the file, not read"))
            return []
        if not self.started and kind not in ("init", "message", "error") or \
                kind == "message" and record.get("role") == "assistant" and not self.started:
            self._tail(line)
        self.problems += [(line, p) for p in _wrong_fields(kind, record)]
        if kind == "init":
            out = self._turn()
            self.live = True
            # a run of `--resume ID` goes on with that session's history (the CLI keeps its
            # id), so it is the same conversation; any other run starts one of its own
            session = string_field(record, "session_id")
            self.open = []
            if session is not None and session in self.sessions:
                self.conversation = self.sessions[session]
            else:
                self.conversation, self.started = self.started, self.started + 1
                if session is not None:
                    self.sessions[session] = self.conversation
            self.model = string_field(record, "model") or self.model
            return out
        if kind == "result":
            self._stats(line, record.get("stats"))
            out = self._turn()
            self.live = False
            return out
        if kind == "tool_use":
            params = record.get("parameters")
            made = ToolCall(string_field(record, "tool_id"),
                            string_field(record, "tool_name") or "",
                            "" if params is None else _json(params))
            if made.id is None:  # given one of the reader's own, to pair it with its result
                made = replace(made, id=f"{line}\0tool_use", place=f"line {line:,}")
            self.pending.append((line, record, made))
            self.open.append(made)
            return []
        if kind == "message" and record.get("role") == "assistant":
            content = record.get("content")
            text = content if isinstance(content, str) else "".join(
                p.text for p in _parts(content) if isinstance(p, Text))
            self.pending.append((line, record, Text(text)))
            return []
        if kind == "tool_result":
            status = record.get("status")
            error = record.get("error")
            text = record.get("output")
            if not isinstance(text, str) or not text and isinstance(error, dict):
                text = error.get("message") if isinstance(error, dict) else text
            answers = string_field(record, "tool_id")
            taken = next((c for c in self.open if c.id == answers), None) \
                if answers is not None else next(iter(self.open), None)
            guessed = answers is None
            if answers is not None and taken is None:
                # an id no open call has: the oldest call that has none is taken for its
                # own, as a result without one takes the oldest (its id is then no link)
                taken = next((c for c in self.open if c.place), None)
                guessed = taken is not None
            if taken is not None:
                self.open.remove(taken)
            if guessed and taken is not None:
                named = taken.name if taken.place else f"{taken.id!r} ({taken.name})"
                self.problems.append((line, (
                    "tool_result without a 'tool_id' (Gemini CLI writes its call's, and "
                    "writes results as their calls finish): taken for the oldest call not "
                    f"yet answered, {named}, which may not be its own") if answers is None
                    else (f"tool_result of tool_id {answers!r}, which no tool_use gave (Gemini "
                          "CLI writes each call's): taken for the oldest call not yet "
                          f"answered that has none, {named}, which may not be its own")))
                answers = taken.id
            part = ToolResult(answers,
                              (Text(text if isinstance(text, str) else _json(text)),),
                              status == "error", name=taken.name if taken else "")
            return self._turn() + self._emit(Message("tool", (part,), (line,), record))
        if kind == "message":
            role = string_field(record, "role")
            parts = tuple(_parts(record.get("content")))
            return self._turn() + self._emit(Message(role or "user", parts, (line,), record,
                                                     human=role == "user"))
        return []  # an error event: a notice, not model input

    def _tail(self, line: int) -> None:
        """The file opens inside a run (its tail): what was held before is that run's."""
        self.started, self.live = 1, True
        self.context += self.held
        self.held = []
        self.problems.append((self.held_from or line,
                              "no `init` event before this one (the file opens inside a run, "
                              "its tail?): read as a run whose model the file does not name"))

    def _emit(self, message: Message) -> list[Message]:
        if self.live:
            self.context.append(self.count)
        elif not self.started:
            self.held.append(self.count)
            self.held_from = self.held_from or message.line
        else:
            self.between = True
        self.count += 1
        return [replace(message, conversation=self.conversation)]

    def _turn(self) -> list[Message]:
        if not self.pending:
            return []
        parts: list[Part] = []
        for _, _, part in self.pending:
            if isinstance(part, Text) and parts and isinstance(parts[-1], Text):
                parts[-1] = Text(parts[-1].text + part.text)  # chunks of one text
            elif not isinstance(part, Text) or part.text:
                parts.append(part)
        lines = tuple(n for n, _, _ in self.pending)
        first = self.pending[0][1]
        self.pending = []
        return self._emit(Message("assistant", tuple(parts), lines, first, model=self.model))

    def _stats(self, line: int, stats: Any) -> None:
        if not isinstance(stats, dict):
            if stats is not None:
                self.aside.append(unreadable(line, f"the result's 'stats' is "
                                                   f"{json_kind(stats)}, not an object"))
            return
        wrong = wrong_counts(stats, _STATS_FIELDS, "stats.", RUN_BOUND, _STATS_PARTS,
                             _STATS_FIELDS)
        if aside := wrong_totals(line, wrong):
            self.aside.append(aside)
            return
        self.stats_runs += 1
        for key in _STATS_FIELDS:
            self.totals[key] = self.totals.get(key, 0) + number(stats.get(key))

    def usage(self) -> dict[str, Any]:
        if not self.stats_runs:
            return {}
        t = self.totals
        return {"source": f"result stats of {self.stats_runs} run(s) (run totals)",
                "input_tokens": t["input_tokens"], "output_tokens": t["output_tokens"],
                "cache_read_tokens": t["cached"], "tool_calls": t["tool_calls"]}

    def finish(self) -> tuple[list[Message], Layout]:
        rest = self._turn()
        # why what is outside is so, by where the file holds it
        why = [w for w, holds in (("before the first `init`" if self.started else
                                   "the file has no `init` to start one", self.held),
                                  ("after a run's `result`, before the next `init`",
                                   self.between)) if holds]
        return rest, Layout(self.context, model=self.model, usage=self.usage(),
                            outside_why=f"outside a run: {'; '.join(why)}" if why else "",
                            conversations=max(self.started, 1), set_aside=self.aside,
                            problems=self.problems)


def _wrong_fields(kind: str, record: dict[str, Any]) -> list[str]:
    """The fields of a stream-json event of a kind other than Gemini CLI writes: a message's
    role (user or assistant) and text (a string), a call's `parameters` (an object)."""
    out = []
    if kind == "message":
        role = record.get("role")
        if role not in ("user", "assistant"):
            said = f"of role {role!r}" if isinstance(role, str) else "without a 'role'" \
                if role is None else f"whose 'role' is {json_kind(role)}"
            out.append(f"a message {said}: Gemini CLI writes user and assistant messages, "
                       f"read as {role if isinstance(role, str) else 'user'}")
        content = record.get("content")
        if content is not None and not isinstance(content, str):
            out.append(f"'content' is {json_kind(content)}, not a string (the message's "
                       "text)")
    if kind == "tool_use":
        params = record.get("parameters")
        if params is not None and not isinstance(params, dict):
            out.append(f"'parameters' is {json_kind(params)}, not an object (the call's "
                       "arguments)")
    return out


def sniff_stream(record: Any) -> int:
    if not isinstance(record, dict):
        return 0
    kind = record.get("type")
    if kind == "init" and isinstance(record.get("session_id"), str) and "model" in record:
        return 2
    if kind in ("tool_use", "tool_result") and isinstance(record.get("tool_id"), str):
        return 2
    if kind == "result" and isinstance(record.get("stats"), dict) and "status" in record:
        return 2
    if kind == "message" and "delta" in record and record.get("role") == "assistant":
        return 2
    return 0


class GeminiStreamEditor(NoUsage):
    """stream-json lines: a result is a `tool_result` event, the summary a user message.
    The CLI never reads such a file back; what compress writes is for people and tools."""

    resets = False
    alternates = False

    def keeps_place(self, message: Message) -> bool:
        return True

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        return {**record, "output": next(iter(texts.values()))}  # one result per event

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        return [{"type": "message", "timestamp": c.time, "role": "user", "content": c.summary,
                 META_KEY: c.meta}]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None


class GeminiStreamFormat:
    name = "gemini-stream"
    default_model = CLI_MODEL  # when the file names no model
    description = "Gemini CLI --output-format stream-json events"
    not_read_back = NOT_READ_BACK.format(agent="Gemini CLI")

    def sniff(self, record: Any) -> int:
        return sniff_stream(record)

    def reader(self) -> GeminiStreamReader:
        return GeminiStreamReader()

    def editor(self, transcript: Any) -> GeminiStreamEditor:
        return GeminiStreamEditor()

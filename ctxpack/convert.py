"""A transcript of any format as request bodies a provider accepts: Chat Completions
`{"messages": [...]}` or Anthropic Messages `{"system": ..., "messages": [...]}`, one
per conversation. Pure: messages in, JSON values out, and notes on what had to change.

Both APIs want each tool call answered, and Chat Completions wants the answers right
after the call, Anthropic at the start of the next user message. So every result is
placed after its call, wherever the log had it; a call the log never answered gets a
result that says so, a result whose call is not in the log becomes text, a call the
model wrote in its reply's text (Cline's XML) that a tool answered becomes a call of the
API (its arguments a JSON object of the XML's parameters) and that answer its result (one
the person answered stays the text it was, and their answer), a user message of text
an agent sent with tool results, not the person (Cline's environment details, a
reminder), goes into the last of those results (as a user message, either API's
readers would take it for the person's turn), and the reasoning a model wrote is left
out (neither API takes reasoning back without its signature, and a part here keeps
none, though the file may have signed it). Anthropic
also wants the roles to alternate, starting with the user: messages of one role in a
row are merged (a message of the person's joined to one of theirs opens with a line
saying so, which its readers split the turn at), and a log that opens with the assistant
gets a short user message first.
An Anthropic body ends on the user's turn: Claude's newest models take no request that
ends on the assistant's (a prefill), so the log's last replies are left out unless asked
for; Chat Completions answers a request that ends on a reply, and keeps them.
Each of these is counted in `Notes`, which the command prints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import InputError, UsageError
from .formats import FAMILIES, model_of
from .formats.agent_text import (
    LATE_SYSTEM_LABEL,
    OPENS_WITH_ASSISTANT,
    PERSONS_LABEL,
    UNANSWERING_LABEL,
    older_label,
    persons,
)
from .formats.cline import call_arguments
from .jsonl import LONE, deep_call, lone_surrogates
from .transcript import Image, Message, Part, Text, Thinking, ToolCall, ToolResult, Transcript

TARGETS = ("openai", "anthropic")
# what both APIs take as a tool call's id (Chat Completions: at most 40 characters) and name
CALL_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
NO_RESULT = "[no result for this call in the transcript]"
# an Anthropic body's `max_tokens`, which the Messages API requires (and which tells the
# body from a Chat Completions one when nothing else does): 4,096, what every Claude model
# can give in one reply
MAX_TOKENS = 4096


# What converting may change, each said after its count: the words for many things are the
# note (Notes.add takes them), ONE has the words for one.
USAGE_LEFT_OUT = "model calls' recorded usage left out (a request body has no place for it)"
BLANK_LEFT_OUT = ("conversations of nothing but empty or blank text left out (no body can "
                  "hold them)")
# signed thinking (Claude Code's, OpenCode's Anthropic replies) is left out as well: the
# parts convert builds from keep no signature
REASONING_LEFT_OUT = ("reasoning parts left out (neither API takes reasoning back without "
                      "its signature, which convert does not keep, signed or not)")
WRITTEN_MADE_CALLS = ("tool calls the model wrote in its reply's text (Cline's XML) made tool "
                      "calls of the API, and the text results that answer them its tool results")
WRITTEN_KEPT = ("tool calls the model wrote in its reply's text and no tool answered (the "
                "person did, or no one) kept as that text")
SENT_WITH_RESULTS = ("messages not the person's sent with tool results (an agent's environment "
                     "details or reminders) put into the last of those results, so that the "
                     "target's readers do not take them for the person's turn")
UNANSWERING_RESULTS = "tool results that answer no open call kept as user text"
CALLS_NOT_THE_ASSISTANTS = "tool calls in a message not the assistant's written as text"
CALLS_WITHOUT_RESULT = "tool calls without a result given one that says so"
NAMES_REFUSED = "tool names the APIs refuse written with _ for each character they refuse"
IMAGES_AS_TEXT = "images where the API takes only text written as [image]"
LATE_SYSTEM = "system messages after the first turn written as user text"
PERSONS_LABELLED = (f"messages of the person's opened with {PERSONS_LABEL}, so that they "
                    "read back as turns of their own: joined by alternation to one of "
                    "theirs before, or opening as an older convert's labels did")
OTHER_ROLES = ("messages of a role no API knows (such as mini-swe-agent's exit before the "
               "run's end) written as user text under their role")
BLANK_TURNS_LEFT_OUT = "turns of nothing but blank text left out (the Messages API refuses it)"
USER_ADDED = "user messages added before an opening assistant message"
LAST_REPLY_LEFT_OUT = ("assistant replies at the end left out, so that each Anthropic body "
                       "ends on the user's turn, as Claude's newest models require (--all "
                       "keeps them)")
ARGUMENTS_PUT_UNDER_INPUT = "tool calls whose arguments are no JSON object: put under 'input'"
LONE_REPLACED = ("lone surrogates (halves of UTF-16 pairs, no Unicode text, which the APIs "
                 "refuse) written as U+FFFD")
ONE = {
    USAGE_LEFT_OUT: "model call's recorded usage left out (a request body has no place for it)",
    BLANK_LEFT_OUT: "conversation of nothing but empty or blank text left out (no body can "
                    "hold it)",
    REASONING_LEFT_OUT: "reasoning part left out (neither API takes reasoning back without "
                        "its signature, which convert does not keep, signed or not)",
    WRITTEN_MADE_CALLS: "tool call the model wrote in its reply's text (Cline's XML) made a "
                        "tool call of the API, and the text result that answers it its tool "
                        "result",
    WRITTEN_KEPT: "tool call the model wrote in its reply's text and no tool answered (the "
                  "person did, or no one) kept as that text",
    SENT_WITH_RESULTS: "message not the person's sent with tool results (an agent's "
                       "environment details or reminders) put into the last of those "
                       "results, so that the target's readers do not take it for the "
                       "person's turn",
    UNANSWERING_RESULTS: "tool result that answers no open call kept as user text",
    CALLS_NOT_THE_ASSISTANTS: "tool call in a message not the assistant's written as text",
    CALLS_WITHOUT_RESULT: "tool call without a result given one that says so",
    NAMES_REFUSED: "tool name the APIs refuse written with _ for each character they refuse",
    IMAGES_AS_TEXT: "image where the API takes only text written as [image]",
    LATE_SYSTEM: "system message after the first turn written as user text",
    PERSONS_LABELLED: (f"message of the person's opened with {PERSONS_LABEL}, so that it "
                       "reads back as a turn of its own: joined by alternation to one of "
                       "theirs before, or opening as an older convert's labels did"),
    OTHER_ROLES: ("message of a role no API knows (such as mini-swe-agent's exit before the "
                  "run's end) written as user text under its role"),
    BLANK_TURNS_LEFT_OUT: "turn of nothing but blank text left out (the Messages API refuses "
                          "it)",
    USER_ADDED: "user message added before an opening assistant message",
    LAST_REPLY_LEFT_OUT: "assistant reply at the end left out, so that each Anthropic body "
                         "ends on the user's turn, as Claude's newest models require (--all "
                         "keeps them)",
    ARGUMENTS_PUT_UNDER_INPUT: "tool call whose arguments are no JSON object: put under "
                               "'input'",
    LONE_REPLACED: ("lone surrogate (half of a UTF-16 pair, no Unicode text, which the APIs "
                    "refuse) written as U+FFFD"),
}


@dataclass
class Notes:
    """What converting had to change, counted: each kind's count, in the order first met."""

    counts: dict[str, int] = field(default_factory=dict)
    said: list[str] = field(default_factory=list)  # what is said once, without a count

    def add(self, what: str, n: int = 1) -> None:
        """Count `n` of note `what` (a key of ONE, which has its words for one)."""
        if what not in ONE:
            raise ValueError(f"no words for one in convert.ONE: {what!r}")
        if n:
            self.counts[what] = self.counts.get(what, 0) + n

    def say(self, what: str) -> None:
        if what not in self.said:
            self.said.append(what)

    def lines(self) -> list[str]:
        return [*self.said, *(f"{n:,} {ONE[what] if n == 1 else what}"
                              for what, n in self.counts.items())]


@dataclass(frozen=True, slots=True)
class _Item:
    """One turn on its way out: system, user, assistant, or result (one tool result)."""

    kind: str
    parts: tuple[Part, ...]
    role: str = ""  # system items keep whether they were system or developer
    call_id: str = ""
    human: bool = False  # a user turn of the person's


def whole_log(t: Transcript) -> Transcript:
    """The transcript with every message the file holds as its messages, in file order:
    those outside the model's context and a sub-agent's too (`--all`), each once: not the
    copies of what the file holds elsewhere (an earlier copy of a message written again,
    results repeated in a user message): a message stated again is its newest statement,
    where the first stands."""
    replaced = {id(m) for m in t.copies}
    order = {id(m): k for k, m in enumerate(t.read)}
    place = {id(m): first for m, first in t.held_first}

    def key(m: Message) -> tuple[int, int, int]:
        # by line, and within one (a record of several messages, a document on one line)
        # in the order the record holds them: a reply's thoughts before what it said
        at = place.get(id(m), m)
        return at.line, order[id(at)], order[id(m)]

    every = sorted((m for m in t.read if id(m) not in replaced), key=key)
    return replace(t, messages=tuple(every), outside=(), sidechain=(), copies=(),
                   held_first=(), earlier=(), earlier_calls=(), older=(), read=tuple(every))


def conversations(messages: Sequence[Message]) -> list[list[Message]]:
    """The messages of each conversation, in order (most transcripts hold one)."""
    groups: dict[int, list[Message]] = {}
    for m in messages:
        groups.setdefault(m.conversation, []).append(m)
    return list(groups.values())


def request_bodies(t: Transcript, to: str, notes: Notes | None = None,
                   model: str | None = None, keep_last_reply: bool = False
                   ) -> list[dict[str, Any]]:
    """One request body per conversation of `t`, for the API `to` (openai or anthropic),
    naming `model` or else the model the transcript is read as: the one it names, else its
    format's, as stats reports it (a body's `model` is where a later reading of the file
    finds the model, and so its window). An Anthropic body ends on the user's turn unless
    `keep_last_reply`."""
    if to not in TARGETS:
        raise UsageError(f"unknown API {to!r}", f"one of {', '.join(TARGETS)}")
    notes = notes if notes is not None else Notes()
    if model is None:
        model = model_of(t.model, t.format)
        if model is None:
            notes.say("no model named: the transcript names none, nor does its format "
                      "assume one (-m names one)")
        elif t.model is None:
            # (a family stays: a later reading of the bodies finds its window and format)
            notes.say(f"model {model} assumed, as stats assumes it: the transcript names "
                      f"none, and its format is {t.format} (-m names another" + (
                          f"; {model} names a family, which no API serves as a model: send "
                          "them with -m naming one)" if model in FAMILIES else ")"))
    if to == "anthropic" and model and "claude" not in model.lower():
        notes.say(f"the bodies name {model}, which the Messages API does not serve: -m names "
                  "the Claude model to send them to")
    calls = t.usage.get("calls") if t.usage else None
    if isinstance(calls, int) and not isinstance(calls, bool):
        notes.add(USAGE_LEFT_OUT, calls)
    bodies = []
    for group in conversations(t.messages):
        items = _items(group, notes)
        body = _openai(items, notes) if to == "openai" else \
            _anthropic(items, notes, keep_last_reply)
        if not body["messages"]:  # (empty or blank text only, which no API takes)
            notes.add(BLANK_LEFT_OUT)
            continue
        bodies.append(_unicode({**({"model": model} if model else {}), **body}, notes))
    if not bodies and t.messages:
        api = "Messages API" if to == "anthropic" else "Chat Completions API"
        raise InputError(t.path, None, f"nothing to convert: no message holds anything "
                         f"but empty or blank text, which the {api} refuses")
    return bodies


def _unicode(body: dict[str, Any], notes: Notes) -> dict[str, Any]:
    """The body with each lone surrogate its text holds (JSON's `\\ud800` escape read
    alone) as U+FFFD, the replacement character: as it is, no provider would take it."""
    if not lone_surrogates(body):
        return body

    def replaced() -> tuple[dict[str, Any], int]:
        text, n = LONE.subn("\ufffd", json.dumps(body, ensure_ascii=False))
        return json.loads(text), n

    body, n = deep_call(replaced)  # (a call's input may nest deep)
    notes.add(LONE_REPLACED, n)
    return body


def _items(messages: list[Message], notes: Notes) -> list[_Item]:
    """The conversation as turns, each call's result right after the call that made it."""
    native = _native(messages)
    ids = _call_ids(messages, native)
    results, matched = _results(messages, ids, native)
    out: list[_Item] = []
    seen_call = 0
    for mi, m in enumerate(messages):
        pending: list[Part] = []
        for pi, part in enumerate(m.parts):
            if isinstance(part, Thinking):
                notes.add(REASONING_LEFT_OUT)
            elif isinstance(part, ToolCall) and part.written and part.id in native:
                pending.append(replace(part, arguments=call_arguments(part)))
                notes.add(WRITTEN_MADE_CALLS)
            elif isinstance(part, ToolCall) and part.written:
                _glue(pending, part.arguments)
                notes.add(WRITTEN_KEPT)
            elif isinstance(part, Text) and _after_kept_call(m, pi, native):
                _glue(pending, part.text)
            elif isinstance(part, ToolResult) and part.written and (mi, pi) not in matched:
                pending.extend(part.parts)  # the result of a call kept as text, as it was sent
            elif isinstance(part, ToolResult):
                if (mi, pi) not in matched:
                    label = UNANSWERING_LABEL.format(id=part.call_id or "(no id)")
                    pending.append(Text(f"{label}\n{part.text}"))
                    pending.extend(p for p in part.parts if isinstance(p, Image))
                    notes.add(UNANSWERING_RESULTS)
            elif isinstance(part, ToolCall) and m.role != "assistant":
                pending.append(Text(f"{part.name}({part.arguments})"))
                notes.add(CALLS_NOT_THE_ASSISTANTS)
            else:
                pending.append(part)
        if m.role in ("system", "developer"):
            if pending:
                out.append(_Item("system", tuple(pending), m.role))
            continue
        if m.role != "assistant":
            if pending and m.role not in ("user", "tool", "function"):
                first = pending[0]
                pending[:1] = [Text(f"[{m.role}]\n{first.text}")] \
                    if isinstance(first, Text) else [Text(f"[{m.role}]"), first]
                notes.add(OTHER_ROLES)
            if pending and _with_results(m, pending, out):
                result = out[-1].parts[0]
                assert isinstance(result, ToolResult)
                out[-1] = replace(out[-1], parts=(
                    replace(result, parts=(*result.parts, *pending)),))
                notes.add(SENT_WITH_RESULTS)
            elif pending:
                out.append(_Item("user", tuple(pending), human=m.human))
            continue
        calls = [p for p in pending if isinstance(p, ToolCall)]
        named = [replace(c, id=ids[seen_call + i], name=_tool_name(c.name, notes))
                 for i, c in enumerate(calls)]
        seen_call += len(calls)
        rest = [p for p in pending if not isinstance(p, ToolCall)]
        if rest or named:
            out.append(_Item("assistant", (*rest, *named)))
        for call in named:
            assert call.id is not None
            found = results.get(call.id)
            if found is None:
                notes.add(CALLS_WITHOUT_RESULT)
                found = ToolResult(call.id, (Text(NO_RESULT),))
            out.append(_Item("result", (found,), call_id=call.id))
    return out


def _with_results(m: Message, pending: list[Part], out: list[_Item]) -> bool:
    """Is `m` a user message of text sent with the tool results just placed, and not the
    person's turn (Cline's environment details after its results, a reminder an agent
    adds)? Both APIs' readers would take it, as a user message, for the person's: it
    goes into the last of those results."""
    return m.role == "user" and not m.human and bool(out) and out[-1].kind == "result" \
        and all(isinstance(p, Text) for p in pending)


def _native(messages: list[Message]) -> set[str | None]:
    """The written calls (see ToolCall) made calls of the API: those a written result
    answers, which becomes their tool result. One the person answered, or none did, stays
    the text it was, as does the person's answer: a call of the API would need a result
    the log does not have."""
    answered = {r.call_id for m in messages for r in m.tool_results if r.written}
    return {c.id for m in messages if m.role == "assistant" for c in m.tool_calls
            if c.written and c.id in answered}


def _after_kept_call(m: Message, i: int, native: set[str | None]) -> bool:
    """Is part `i` of `m` the text after a written call kept as text (glued back to it)?"""
    before = m.parts[i - 1] if i else None
    return isinstance(before, ToolCall) and before.written and before.id not in native


def _glue(pending: list[Part], text: str) -> None:
    """A written call (cut from its reply's text) or the text after one, glued back to
    the text before it: the reply's text as the model wrote it."""
    if pending and isinstance(pending[-1], Text):
        pending[-1] = Text(pending[-1].text + text)
    else:
        pending.append(Text(text))


def _tool_name(name: str, notes: Notes) -> str:
    if TOOL_NAME.fullmatch(name):
        return name
    notes.add(NAMES_REFUSED)
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "_"


def _call_ids(messages: list[Message], native: set[str | None]) -> list[str]:
    """An id for every call in order: its own, or a new one where it has none, one an
    earlier call took, or one the APIs refuse."""
    taken: set[str] = set()
    out = []
    for m in messages:
        if m.role != "assistant":
            continue
        for call in _api_calls(m, native):
            own = call.id and CALL_ID.fullmatch(call.id) and call.id not in taken
            cid = call.id if own and call.id else f"call_{len(out) + 1}"
            while cid in taken:
                cid += "_"
            taken.add(cid)
            out.append(cid)
    return out


def _api_calls(m: Message, native: set[str | None]) -> list[ToolCall]:
    """The calls a message makes through the API: its own, and its written ones `native`
    makes calls (another written one is text)."""
    return [c for c in m.tool_calls if not c.written or c.id in native]


def _results(messages: list[Message], ids: list[str], native: set[str | None]
             ) -> tuple[dict[str, ToolResult], set[tuple[int, int]]]:
    """Each call's result by the call's id, and where in the messages each one was: the
    first result naming the call (where the log gives calls one id again, as tau-bench's
    do, the oldest of them the newest message making one made, not yet answered: a call
    left unanswered when a later message gives its id to another stays so), or, for a
    result naming none (the legacy function role), the oldest call not yet answered."""
    by_id: dict[str, ToolResult] = {}
    where: set[tuple[int, int]] = set()
    original: dict[str, list[str]] = {}  # a call's id in the file -> its ids in the output
    open_calls: list[str] = []
    n = 0
    for mi, m in enumerate(messages):
        if m.role == "assistant":
            calls = _api_calls(m, native)
            for call in calls:  # a result after these answers these, not an earlier call
                if call.id:
                    original[call.id] = []
            for call in calls:
                if call.id:
                    original[call.id].append(ids[n])
                open_calls.append(ids[n])
                n += 1
        for pi, part in enumerate(m.parts):
            if not isinstance(part, ToolResult) or part.written and part.call_id not in native:
                continue
            named = open_calls if part.call_id is None else original.get(part.call_id, [])
            cid = next((c for c in named if c not in by_id), None)
            if cid is None:
                continue  # no call, or a second answer to one: text, as a result with no call is
            by_id[cid] = replace(part, call_id=cid)
            where.add((mi, pi))
    return by_id, where


def _text(parts: Iterable[Part], notes: Notes) -> str:
    out = []
    for p in parts:
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, Image):
            out.append("[image]")
            notes.add(IMAGES_AS_TEXT)
    return "\n".join(out)


def _image_url(p: Image) -> str:
    if p.data:
        return f"data:{p.media_type or 'image/png'};base64,{p.data}"
    return p.url or ""


def _openai(items: list[_Item], notes: Notes) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for item in items:
        if item.kind == "system":
            messages.append({"role": item.role, "content": _text(item.parts, notes)})
        elif item.kind == "user":
            messages.append({"role": "user", "content": _openai_content(item.parts)})
        elif item.kind == "assistant":
            calls = [p for p in item.parts if isinstance(p, ToolCall)]
            text = _text((p for p in item.parts if not isinstance(p, ToolCall)), notes)
            if not text and not calls:
                continue  # the API refuses an assistant message with neither
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                out["tool_calls"] = [_openai_call(c) for c in calls]
            messages.append(out)
        else:
            result = item.parts[0]
            assert isinstance(result, ToolResult)
            messages.append({"role": "tool", "tool_call_id": item.call_id,
                             "content": _text(result.parts, notes)})
    return {"messages": messages}


def _openai_call(c: ToolCall) -> dict[str, Any]:
    """A call as Chat Completions writes it: a function call where its arguments are a
    JSON object, else a custom tool's call holding its free text (Codex's freeform
    apply_patch), which a function call's arguments may not be."""
    if _object(c.arguments) is not None or not c.arguments.strip():
        return {"id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.arguments}}
    return {"id": c.id, "type": "custom", "custom": {"name": c.name, "input": c.arguments}}


def _object(arguments: str) -> dict[str, Any] | None:
    """`arguments` as the JSON object it holds, if it holds one."""
    try:
        value = json.loads(arguments) if arguments.strip() else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _openai_content(parts: Sequence[Part]) -> str | list[dict[str, Any]]:
    if all(isinstance(p, Text) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, Text))
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, Text):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            url: dict[str, Any] = {"url": _image_url(p)}
            if p.detail:
                url["detail"] = p.detail
            out.append({"type": "image_url", "image_url": url})
    return out


def _anthropic(items: list[_Item], notes: Notes, keep_last_reply: bool) -> dict[str, Any]:
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    replies = 0  # the assistant turns merged into the last message, when it is a reply
    last: Part | None = None  # the last part written
    for item in items:
        if item.kind == "system" and not messages:
            system.append(_text(item.parts, notes))
            continue
        if item.kind == "system":
            notes.add(LATE_SYSTEM)
            label = LATE_SYSTEM_LABEL.format(role=item.role)
            role, blocks = "user", [_text_block(f"{label}\n{_text(item.parts, notes)}")]
        elif item.kind == "assistant":
            role, blocks = "assistant", [_anthropic_block(p, notes) for p in item.parts]
        elif item.kind == "result":
            role, blocks = "user", [_tool_result(item.parts[0], notes)]
        else:
            role, blocks = "user", [_anthropic_block(p, notes) for p in item.parts]
        kept = [p for p, b in zip(item.parts, blocks, strict=False) if b is not None]
        blocks = [b for b in blocks if b is not None]
        if not blocks:
            if item.parts and all(isinstance(p, Text) for p in item.parts):
                notes.add(BLANK_TURNS_LEFT_OUT)
            continue
        if item.human and _unread_as_persons(kept[0], last if messages and
                                             messages[-1]["role"] == "user" else None):
            notes.add(PERSONS_LABELLED)
            if blocks[0]["type"] == "text":
                blocks[0] = _text_block(f"{PERSONS_LABEL}\n{blocks[0]['text']}")
            else:
                blocks.insert(0, _text_block(PERSONS_LABEL))
        # (a late system message is written as the labelled text its block holds)
        last = Text(blocks[-1]["text"]) if item.kind == "system" else kept[-1]
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks
        else:
            if not messages and role == "assistant":
                notes.add(USER_ADDED)
                messages.append({"role": "user", "content": [_text_block(OPENS_WITH_ASSISTANT)]})
            messages.append({"role": role, "content": blocks})
        replies = replies + 1 if role == "assistant" else 0
    if replies and not keep_last_reply:
        # never a call: each is answered in a user message after it
        notes.add(LAST_REPLY_LEFT_OUT, replies)
        messages.pop()
    body: dict[str, Any] = {"max_tokens": MAX_TOKENS}
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = messages
    return body


def _unread_as_persons(first: Part, before: Part | None) -> bool:
    """Would a turn of the person's opening with `first` not read back as theirs, after
    `before` in the same user message (None: it opens one)? Joined to words or an image
    of theirs, it reads as more of that turn; opening with an older convert's label, as
    that label's text (see `merged_turns`, `older_label`)."""
    if isinstance(first, Text) and older_label(first.text):
        return True
    return before is not None and persons((before,)) and persons((first,))


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _anthropic_block(p: Part, notes: Notes) -> dict[str, Any] | None:
    if isinstance(p, Text):
        return _text_block(p.text) if p.text.strip() else None  # the API refuses blank text
    if isinstance(p, Image):
        if p.data:
            source = {"type": "base64", "media_type": p.media_type or "image/png", "data": p.data}
        else:
            source = {"type": "url", "url": p.url or ""}
        return {"type": "image", "source": source}
    if isinstance(p, ToolCall):
        return {"type": "tool_use", "id": p.id, "name": p.name, "input": _input(p, notes)}
    return None


def _input(call: ToolCall, notes: Notes) -> dict[str, Any]:
    """A call's arguments as the object Anthropic's `input` must be."""
    if not call.arguments.strip():
        return {}
    value = _object(call.arguments)
    if value is not None:
        return value
    notes.add(ARGUMENTS_PUT_UNDER_INPUT)
    return {"input": call.arguments}


def _tool_result(result: Part, notes: Notes) -> dict[str, Any]:
    assert isinstance(result, ToolResult)
    content: str | list[dict[str, Any]] = result.text
    if any(isinstance(p, Image) for p in result.parts):
        content = [b for b in (_anthropic_block(p, notes) for p in result.parts) if b]
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id,
                           "content": content}
    if result.is_error:
        out["is_error"] = True
    return out

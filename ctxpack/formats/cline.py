"""Cline and Roo Code task files: `api_conversation_history.json` and `ui_messages.json`.

`api_conversation_history.json` is the model input: a JSON array of Anthropic messages
with Cline's extras (`ts`, `modelInfo`, `metrics`). Tools are called either as XML in the
assistant's text (the results come back as user text blocks `[read_file for 'x']
Result:` ...) or as `tool_use` blocks (answered by `tool_result` blocks, or by such text
blocks in order). A result sent as text counts as `tool`: the result blocks become a tool
message, what else the user message holds (environment details, feedback) stays a user
message. Roo Code condenses without deleting: messages tagged `condenseParent` (or
`truncationParent`) whose summary (`condenseId`) or marker (`truncationId`) is in the
file are archived, not context. Usage is read from the sibling `ui_messages.json` when
there is one, else from the assistant messages' `metrics` (newer Cline writes them). A
sibling that is another task's log (`other_task`: more requests than the history has
replies, events naming messages it does not have, or stamped at another time) is not
read, and validate names it: its usage and its cut would be taken for this task's. The
two files are written one after the other, so a copy taken between two writes holds one
request more in one of them: that much is this task's.

A call written as XML in the reply's text (`<read_file>` on a line of its own, up to its
`</read_file>`), as older Cline and Roo Code have the model write them, is read as a
written call (see ToolCall): the tool names are Cline's and Roo's and those the file's
results name, and the text results that follow answer the calls in order. The text is
cut only at the start of the call's line and after the newlines that end it (a call
its line goes on after is text), where tiktoken's encodings split the text anyway, so
the reply counts as the text it was.

`ui_messages.json` alone is the UI's event log: each `api_req_started` event holds the
user side of one request (`request`) and its usage; the `text`, `reasoning` and tool
events after it, up to the next request, are the assistant's side as the UI showed it.
Its events that show a call (tool, command, question, completion, MCP, browser, plan-mode
reply: `_UI_CALLS`) are the reply's calls (written: the UI shows them as JSON or text,
the model wrote XML), named by the `[name ...] Result:` the next request opens with,
which is their result, else by the tool the event is of. A command event right after a
completion is the command `attempt_completion` carries (`<command>`): part of that call,
its text after the result's.
The task the log opens with (`say: task`, or `say: text` before any request, as older
Cline wrote it) is the person's, and is sent in the first request: it is no reply (in a
log that holds no request, it is the person's message). What the UI shows after it and
before the first request is a reply no request of the log asked for: outside the context,
and named by validate (in a log that holds no request, the reply to the task).
When Cline cut the history to fit the window, the newest event's inclusive
`conversationHistoryDeletedRange` names the api_conversation_history messages it no longer
sends; they are not context, in either file.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Container
from dataclasses import replace
from typing import Any, NamedTuple

from ..errors import InputError
from ..jsonl import item_lines, json_kind, loads, parse_document
from ..recorded import (
    SetAside,
    Summed,
    dollars,
    null_counts,
    shown,
    summed,
    wrong_costs,
    wrong_counts,
)
from ..render import counted
from ..transcript import (
    CUT,
    NO_PLACE,
    Image,
    Message,
    Part,
    RecordedCall,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    where_in,
)
from .agent_text import PERSONS_LINE, RESULT_HEAD
from .anthropic import block_part, unknown_blocks
from .base import (
    NOT_WRITTEN,
    Items,
    Layout,
    RecordError,
    content_parts,
    day,
    measure,
    number,
    string_field,
)

# a result opening a line, where a request holds several
_LINE_HEAD = re.compile(r"^\[([\w:-]+)(?: for [^\n]*?)?\] Result:", re.M)
# a tag opening a line: a written call where it names a tool
_OPENING = re.compile(r"^[ \t]*<([a-z_]+)>", re.M)
# the tools Cline and Roo Code have the model call in XML
TOOLS = frozenset((
    "execute_command", "read_file", "write_to_file", "replace_in_file", "search_files",
    "list_files", "list_code_definition_names", "browser_action", "use_mcp_tool",
    "access_mcp_resource", "ask_followup_question", "attempt_completion", "plan_mode_respond",
    "act_mode_respond", "load_mcp_documentation", "new_task", "condense", "summarize_task",
    "report_bug", "new_rule", "web_fetch", "web_search", "apply_diff", "insert_content",
    "search_and_replace", "switch_mode", "fetch_instructions", "codebase_search",
    "update_todo_list", "run_slash_command", "generate_image"))
# UI events (say or ask) that show a call of the model's, and the tool each is of until
# the next request's result names it (see _UI_NAMED); a reply's last calls, answered by
# no request, keep these names
_UI_CALLS = {
    "tool": "tool", "command": "execute_command", "followup": "ask_followup_question",
    "completion_result": "attempt_completion", "plan_mode_respond": "plan_mode_respond",
    "act_mode_respond": "act_mode_respond", "use_mcp_server": "use_mcp_tool",
    "load_mcp_documentation": "load_mcp_documentation", "browser_action": "browser_action",
    "browser_action_launch": "browser_action", "new_task": "new_task", "condense": "condense",
    "summarize_task": "summarize_task", "report_bug": "report_bug",
    "use_subagents": "use_subagents"}
# the JSON key of a call event's text that names its tool, where it has one
_UI_NAMED = {"tool": "tool", "use_mcp_server": "type"}
UI_SIBLING = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def task_file(folder: str) -> str | None:
    """The file a Cline / Roo Code task folder stands for: its model input, else its UI
    log alone; None for a folder that holds neither."""
    for name in (API_HISTORY, UI_SIBLING):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


# what Cline and Roo Code write on a message of the history besides Anthropic's fields
# and `ts`: the model and usage of a reply, a condensed or truncated history's links
_OWN_FIELDS = ("modelInfo", "metrics", "isSummary", "isTruncationMarker", "condenseId",
               "condenseParent", "truncationId", "truncationParent")
ROLES = ("user", "assistant")  # of a history's messages (Cline sends its system prompt apart)


def is_api_history(value: Any) -> bool:
    """Messages with a mark of a task's history: a field only Cline and Roo Code write, or
    their `ts` stamps on user and assistant messages (a stamp is what any log may add, and
    such a log may hold other roles). A message of another role in a history marked so is
    the history's, which its reader names."""
    if not isinstance(value, list) or not value or not all(
            isinstance(m, dict) and "role" in m for m in value):
        return False
    return any(k in m for m in value for k in _OWN_FIELDS) or (
        all(m["role"] in ROLES for m in value) and any("ts" in m for m in value))


def in_task_folder(path: str) -> bool:
    """Is `path` a task's api_conversation_history.json where Cline and Roo Code keep it:
    beside the task's ui_messages.json, or in a `tasks/<id>/` folder? Older Cline stamps
    no message, so its history is known by its place."""
    if os.path.basename(path) != API_HISTORY:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.isfile(os.path.join(folder, UI_SIBLING)) or \
        os.path.basename(os.path.dirname(folder)) == "tasks"


def clines_own(value: Any) -> bool:
    """Does a list of messages carry a field only Cline and Roo Code write, or in its text
    what they send (the task and the feedback they wrap, the environment details, a
    result's `[tool] Result:`)? (An entry that is no message object says so too: the
    history's reader names it.)"""
    for m in value if isinstance(value, list) else ():
        if not isinstance(m, dict) or any(k in m for k in _OWN_FIELDS):
            return True
        for part in content_parts(m.get("content"), block_part):
            text = part.text if isinstance(part, Text) else ""
            if PERSONS_LINE.search(text) or RESULT_HEAD.match(text) or \
                    text.lstrip().startswith("<environment_details>"):
                return True
    return False


def history_doubt(value: Any) -> str:
    """Why messages taken for a task's history by their `ts` stamps might be another log
    of Anthropic messages (a timestamp is what any log may add): "" when a message also
    carries a field only Cline and Roo Code write, or its text what they send (the task
    and the feedback they wrap, the environment details, a result's `[tool] Result:`)."""
    if clines_own(value):
        return ""
    return ("read as a Cline / Roo Code task's history by the `ts` on its messages alone: "
            "none carries Cline's other fields (modelInfo, metrics) or what it sends (the "
            "<task> it wraps, <environment_details>, a `[tool] Result:`)")


def is_ui_log(value: Any) -> bool:
    """Cline's UI events: `ts`, `type` say|ask."""
    return (isinstance(value, list) and bool(value)
            and all(isinstance(e, dict) and "ts" in e and e.get("type") in ("say", "ask")
                    for e in value))


_REQUEST_COUNTS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")  # of a request
_PROMPT_COUNTS = ("tokensIn", "cacheWrites", "cacheReads")  # what its prompt size rests on
_METRICS = ("prompt", "completion", "cached")  # of a history message's `metrics.tokens`


class Wrong(NamedTuple):
    """What a call's usage records that no count or cost can be (`counts`, `costs`, as
    `recorded.wrong_counts` and `wrong_costs` name them: the call is set aside), and the
    count of its reply it writes as null (`unsized`, as `null_counts` names it: the call
    is kept, its reply's size unknown)."""

    counts: str
    costs: str
    unsized: str = ""

    @property
    def any(self) -> bool:
        """Whether the call is wrong (a count or cost no value can be)."""
        return bool(self.counts or self.costs)


class RequestUsage:
    """Usage of each API request from the `api_req_started` events of a UI log."""

    def __init__(self) -> None:
        self.calls = 0
        self.input = self.output = self.read = self.write = 0
        self.costs: list[float] = []  # each call's, as written
        self.last: int | None = None

    def add_events(self, events: list[Any]) -> None:
        for e in events:
            if isinstance(e, dict) and e.get("say") == "api_req_started":
                self.add(request_info(e))

    def add(self, info: dict[str, Any]) -> Summed:
        """Take a request's usage; what it added to the summary, its prompt size first
        (empty: it records none)."""
        if not any(k in info for k in _REQUEST_COUNTS) or billed_nothing(info):
            return ()
        read, write = number(info.get("cacheReads")), number(info.get("cacheWrites"))
        prompt, output = number(info.get("tokensIn")) + read + write, number(info.get("tokensOut"))
        self.calls += 1
        self.input += prompt
        self.read += read
        self.write += write
        self.output += output
        cost = measure(info.get("cost"))
        self.costs.append(cost)
        self.last = prompt
        return summed(input_tokens=prompt, output_tokens=output, cache_read_tokens=read,
                      cache_creation_tokens=write, cost_usd=cost)

    def summary(self, source: str) -> dict[str, Any]:
        if not self.calls:
            return {}
        usage: dict[str, Any] = {"source": source, "calls": self.calls,
                                 "input_tokens": self.input, "output_tokens": self.output,
                                 "cache_read_tokens": self.read,
                                 "cache_creation_tokens": self.write}
        if self.last is not None:
            usage["last_input_tokens"] = self.last
        if cost := dollars(self.costs):
            usage["cost_usd"] = cost
        return usage


def billed_nothing(info: dict[str, Any]) -> bool:
    """Does the usage `info` of a request record nothing billed, every count and the cost
    0, as Cline writes a request cancelled before the provider answered (`cancelReason`)?
    Such a request is no call: not among the calls nor the last prompt, as the bill has
    it (a prompt of 0 is no size of the context)."""
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0
               for v in (info.get(k, 0) for k in (*_REQUEST_COUNTS, "cost")))


def request_info(event: dict[str, Any]) -> dict[str, Any]:
    """The JSON object an `api_req_started` event's text holds ({} when it holds none)."""
    text = event.get("text")
    return _dict(_json(text)) if isinstance(text, str) else {}


UNREAD = ("recorded usage that cannot be read: the text of this api_req_started event is no "
          "JSON object, so its request's usage is not counted")


def unread_request(event: Any) -> bool:
    """Is `event` an `api_req_started` event whose text holds no JSON object (text that is
    none, null or a number as much as text of no JSON)? Its usage cannot be read (and the
    UI reader keeps its text, where it is text, as the request)."""
    if not isinstance(event, dict) or event.get("say") != "api_req_started":
        return False
    text = event.get("text")
    return not isinstance(_json(text) if isinstance(text, str) else text, dict)


def event_lines(events: list[int], data: bytes | None, first: int) -> dict[int, int]:
    """The line each event at `events` (indexes) starts on in the UI log `data` (from line
    `first`), where it is printed over many lines (else none)."""
    lines = item_lines(data, first, [(n,) for n in events])
    return {n: lines[(n,)] for n in events if (n,) in lines}


def unread_usage(events: list[int], data: bytes | None, first: int, file: str = ""
                 ) -> list[SetAside]:
    """The usage of the events at `events` (indexes, of such requests) set aside as it
    cannot be read, each at the line its event starts on in the UI log `data` (from line
    `first`) where it is printed over many lines; `file`: the log's path, where it is
    not the transcript's."""
    lines = event_lines(events, data, first)
    return [SetAside(lines.get(n, first), f"event {n}: {UNREAD}", readable=False,
                     place=where_in(f"event {n}", lines.get(n, 0)), file=file)
            for n in events]


def request_wrong(info: dict[str, Any]) -> Wrong:
    """The counts of the usage `info` of an `api_req_started` event that no token count
    can be (a null prompt count among them), its cost where no cost can be (a string, a
    negative number), and its reply's count where it is null (see `Wrong`)."""
    return Wrong(wrong_counts(info, _REQUEST_COUNTS, nulls=_PROMPT_COUNTS),
                 wrong_costs(info, ("cost",)), null_counts(info, ("tokensOut",)))


def _json(text: str) -> Any:
    """The JSON value an event's text holds (None where it holds none)."""
    try:
        return loads(text.encode("utf-8", "surrogatepass"))
    except ValueError:
        return None


def _metrics(value: Any) -> dict[str, Any]:
    """An assistant message's `metrics` ({tokens: {prompt, completion, cached}, cost}) in the
    shape of an api_req_started event: `prompt` is the uncached input, `cached` the cache
    reads and writes together (which are not told apart)."""
    metrics = _dict(value)
    tokens = _dict(metrics.get("tokens"))
    if not tokens:
        return {}
    return {"tokensIn": tokens.get("prompt"), "tokensOut": tokens.get("completion"),
            "cacheReads": tokens.get("cached"), "cost": metrics.get("cost")}


def deleted_range(events: list[Any]) -> range:
    """The messages of api_conversation_history.json (by index) Cline no longer sends: the
    inclusive `conversationHistoryDeletedRange` the newest event carries (none: empty)."""
    for e in reversed(events):
        pair = e.get("conversationHistoryDeletedRange") if isinstance(e, dict) else None
        if isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(n, int) and not isinstance(n, bool) for n in pair):
            return range(pair[0], pair[1] + 1)
    return range(0)


def sent_before_cut(made: list[Made], since: int, events: list[Any], position: list[int],
                    kept: list[int]) -> tuple[list[tuple[list[int], list[Made]]], list[Made]]:
    """The calls of `made` sent before the newest cut to fit the window (at event `since`
    or before), grouped by the cut in force when each was sent (the range of history
    messages Cline no longer sent then: as with the newest cut (see `cut_at`), a request
    is sent without the range the next request's event is the first to carry, so each
    is of the range the next request carries, none before the first), each group with
    the messages it was sent on: those of `kept` (in order; `position` gives each one's
    history index) less that range. The file holds them, so each such call is fitted on
    the prompt it was sent (its reply one of them); and the rest of `made`, in order."""
    requests = [n for n, e in enumerate(events)
                if isinstance(e, dict) and e.get("say") == "api_req_started"]
    carried, cut = {}, range(0)
    for n, e in enumerate(events):
        cut = deleted_range([e]) or cut
        carried[n] = cut
    later = dict(zip(requests, requests[1:], strict=False))
    groups: dict[range, list[Made]] = {}
    for m in made:
        n = m[2]
        cut = carried[later[n]] if n in later else carried.get(n, range(0))
        if n <= since and m[0] is not None and m[0] in kept and position[m[0]] not in cut:
            groups.setdefault(cut, []).append(m)
    taken = {id(m) for group in groups.values() for m in group}
    return [([k for k in kept if position[k] not in cut], group)
            for cut, group in groups.items()], [m for m in made if id(m) not in taken]


def cut_at(events: list[Any], gone: range) -> int:
    """The index of the last event before the first request Cline sent without `gone` (-1:
    from the start). The first event to carry the range the newest one does follows that
    request (its cache reads fall to the system prompt); a request before it was of a
    prompt that held what is no longer context."""
    if not gone:
        return -1
    first = next((n for n, e in enumerate(events) if isinstance(e, dict) and
                  deleted_range([e]) == gone), 0)
    return next((n - 1 for n in range(first - 1, -1, -1) if isinstance(events[n], dict)
                 and events[n].get("say") == "api_req_started"), first - 1)


def _stamp(value: Any) -> bool:
    """Is `value` a time stamp as Cline writes one: milliseconds since 1970 (`Date.now()`),
    a number of 0 or more that a float holds exactly (not -1, NaN, text or true)?"""
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and 0 <= value <= 2**53


def _stamps(items: list[Any]) -> list[int | float]:
    """The `ts` each of `items` (messages or events) carries where it is a time stamp."""
    return [t for d in items if isinstance(d, dict) and _stamp(t := d.get("ts"))]


# how far apart a task's UI events and history messages may be stamped and still be of
# one time: the two are written by one process as the task runs, within milliseconds
# (the history's first message after the UI's task event); a minute allows for any
# clock or write order
_STAMP_SLACK = 60_000


def other_task(events: list[Any], history: list[Any]) -> str:
    """How the UI log `events` beside the api_conversation_history `history` shows it is
    another task's ("": nothing does). A task's two files grow together: each request's
    event names the history's message before its own (`conversationHistoryIndex`), each
    request that records usage has its reply in the history (the last may still be being
    written, and so may its message, which the events after it name), and the UI's events
    and the history's messages are stamped (`ts`) over the same time."""
    why = []
    calls = RequestUsage()
    calls.add_events(events)
    replies = sum(1 for m in history if m.get("role") == "assistant")
    if calls.calls > replies + 1:
        why.append(f"{calls.calls:,} requests of it record usage, and the history holds "
                   f"{replies:,} replies")
    named = [i for e in events if isinstance(e, dict) for i in (
        e.get("conversationHistoryIndex"), *deleted_range([e])[-1:])
        if isinstance(i, int) and not isinstance(i, bool)]
    if named and max(named) > len(history):
        why.append(f"its events name the history's message {max(named):,} (from 0), and "
                   f"the history holds {len(history):,}")
    ui, sent = _stamps(events), _stamps(history)
    if ui and sent and (max(ui) + _STAMP_SLACK < min(sent)
                        or max(sent) + _STAMP_SLACK < min(ui)):
        why.append(f"its events are from {day(min(ui))} to {day(max(ui))}, the history's "
                   f"messages from {day(min(sent))} to {day(max(sent))}")
    return "; ".join(why)


def _prompt(added: Summed) -> int:
    """The prompt size of a request, from what it added to the summary."""
    return int(dict(added).get("input_tokens", 0))


# what a call `made` is, as `recorded` takes it
Made = tuple[int | None, Summed, int, str | None, Wrong]


def recorded(context: list[int], made: list[Made], since: int,
             lines: dict[int, int] | None = None, file: str = "", item: str = "event {}",
             before: dict[int, int] | None = None, first: int = 1
             ) -> tuple[list[RecordedCall], list[RecordedCall]]:
    """The calls `made` (the emitted number of the reply, None where the event names no
    place in the history, what its usage added to the summary, its prompt size first, the
    event's index, the model, the counts of its usage that no token count can be and its
    cost where no cost can be) that were of the context as it is now, `prompt` a place in
    it; and those made before the request Cline first sent without what it cut to fit the
    window (event `since` and before), of a prompt that held what is no longer context, or
    of no known place (`prompt` 0: of the usage totals only). Given the
    `lines` each index starts on (as `event_lines`; in `file` where that is not the
    transcript), each call's usage is at its `item` (`event 8`); a call made before is
    placed so in any case, by the lines `before` gives where it is given, else at the
    line the file's items start on, `first`."""
    where = sorted(context)

    def call(reply: int | None, added: Summed, n: int, model: str | None,
             wrong: Wrong, placed: bool) -> RecordedCall:
        known = lines if placed or before is None else before
        at = {} if placed and lines is None else {
            "at": (known or {}).get(n, 0 if placed else first), "place": item.format(n),
            "file": file}
        return RecordedCall(bisect.bisect_left(where, reply) if reply is not None and placed
                            else 0, _prompt(added),
                            None, model, problem=wrong.counts, costs=wrong.costs,
                            summed=added, unsized=wrong.unsized,
                            unplaced="" if placed else NO_PLACE if reply is None else CUT, **at)

    calls = [m for m in made if _prompt(m[1]) > 0 or m[4].any]
    placed = [m[0] is not None and m[2] > since for m in calls]
    return ([call(*m, placed=True) for m, p in zip(calls, placed, strict=True) if p],
            [call(*m, placed=False) for m, p in zip(calls, placed, strict=True) if not p])


def written_calls(text: str, tools: Container[str], where: str) -> list[Text | ToolCall]:
    """The text with each call written in it (see the module) cut out as a written call,
    `where` and its number making its id."""
    out: list[Text | ToolCall] = []
    at = 0
    for opening in _OPENING.finditer(text):
        name = opening.group(1)
        if opening.start() < at or name not in tools:
            continue  # in an earlier call, or no tool
        close = text.find(f"</{name}>", opening.end())
        end = len(text) if close < 0 else close + len(name) + 3  # unclosed: to the end
        if end < len(text) and not text[end].isspace():
            continue  # text goes on after it on its line: no cut the tokenizer makes
        while end < len(text) and text[end] in "\r\n":
            end += 1
        if opening.start() > at:
            out.append(Text(text[at:opening.start()]))
        out.append(ToolCall(f"{where}.{len(out)}", name, text[opening.start():end],
                            written=True))
        at = end
    if at < len(text):
        out.append(Text(text[at:]))
    return out


# a parameter of a written call opening (`<path>`); what may follow a parameter's end
_PARAMETER = re.compile(r"<([a-z_]+)>")
_AFTER_PARAMETER = re.compile(r"\s*(?:<[a-z_]+>|\Z)")


def call_arguments(call: ToolCall) -> str:
    """A written call's arguments as a tool call of the API carries them: a JSON object of
    the parameters its XML names (`<path>src/a.ts</path>`: "path"), each trimmed as Cline
    trims them; a UI log's call holds the JSON object its event shows, or the command line
    a command event shows (its `command`), or the result a completion event shows (its
    `result`; with the command it carries, both)."""
    text = call.arguments.strip()
    if text.startswith(f"<{call.name}>"):
        value: Any = _parameters(text, call.name)
    else:
        value = _json(text) if text else {}
        key = "result" if call.name == _UI_CALLS["completion_result"] else "command"
        value = value if isinstance(value, dict) else {key: text}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _parameters(text: str, name: str) -> dict[str, str]:
    """The parameters of a call written `<name><p>value</p>...</name>`: a value runs to the
    first `</p>` followed by nothing but the next parameter or the call's end, so a file's
    text that holds the tag (a `content` about Cline's XML) stays whole."""
    body = text[len(name) + 2:]
    close = body.rfind(f"</{name}>")
    body = body[:close] if close >= 0 else body  # (unclosed: the call runs to the end)
    out: dict[str, str] = {}
    at = 0
    while (opening := _PARAMETER.search(body, at)) is not None:
        key, end = opening.group(1), f"</{opening.group(1)}>"
        value, at = body[opening.end():], len(body)
        look = opening.end()
        while (shut := body.find(end, look)) >= 0:
            if _AFTER_PARAMETER.match(body, shut + len(end)):
                value, at = body[opening.end():shut], shut + len(end)
                break
            look = shut + 1
        out.setdefault(key, value.strip())
    return out


def _heads(request: str) -> list[re.Match[str]]:
    """The results a request holds: none unless it opens with one, then each that opens a
    line after it."""
    first = RESULT_HEAD.match(request)
    return [first, *_LINE_HEAD.finditer(request, first.end())] if first else []


def _answers(request: str, heads: list[re.Match[str]], calls: list[ToolCall]
             ) -> tuple[Part, ...]:
    """A request of results (`heads`): the results of the reply's calls in order, the text
    cut where each opens a line (the last takes the rest); the whole text as one where
    the reply made no call."""
    if not calls:
        return (Text(request),)
    starts = [h.start() for h in heads[:len(calls)]]
    ends = [*starts[1:], len(request)]
    return tuple(ToolResult(call.id, (Text(request[a:b]),), written=True)
                 for call, a, b in zip(calls, starts, ends, strict=False))


def _tools(record: list[Any]) -> set[str]:
    """The tools a history's calls may name: Cline's and Roo's, and those its results name."""
    named = set(TOOLS)
    for m in record:
        if m.get("role") == "user":
            for part in content_parts(m.get("content"), block_part):
                head = RESULT_HEAD.match(part.text) if isinstance(part, Text) else None
                if head:
                    named.add(head.group(1))
    return named


def _human(texts: list[str], first: bool) -> bool:
    return first or any(PERSONS_LINE.search(t) for t in texts)


def _user_parts(content: Any) -> tuple[list[tuple[int, Part]], list[list[tuple[int, Part]]]]:
    """A user message's own parts, and the results it sends as text (one list each), each
    part with its place in the message (so that feedback sent as a result keeps it)."""
    own: list[tuple[int, Part]] = []
    results: list[list[tuple[int, Part]]] = []
    current: list[tuple[int, Part]] | None = None
    for n, part in enumerate(content_parts(content, block_part)):
        if isinstance(part, Text) and RESULT_HEAD.match(part.text):
            current = [(n, part)]
            results.append(current)
        elif current is not None and not (isinstance(part, Text)
                                          and part.text.lstrip().startswith("<environment")):
            current.append((n, part))
        else:
            current = None
            own.append((n, part))
    return own, results


def _links(message: dict[str, Any]) -> tuple[str | None, ...]:
    """A message's condense and truncation ids and the ids it points to, in that order:
    they are matched against each other, so each must be a string (or absent)."""
    return tuple(string_field(message, key) for key in
                 ("condenseId", "condenseParent", "truncationId", "truncationParent"))


def _odd_fields(message: dict[str, Any]) -> list[str]:
    """What a history message holds that Cline does not write (see `_odd`)."""
    out = unknown_blocks(message.get("content"))
    stamp = message.get("ts")
    if "ts" in message and not _stamp(stamp):
        number = isinstance(stamp, int | float) and not isinstance(stamp, bool)
        out.append(f"'ts' is {json_kind(stamp)}"
                   f"{f' ({shown(stamp)})' if isinstance(stamp, str) or number else ''}, not "
                   "a time stamp (milliseconds since 1970, as Cline writes it): read past")
    return out


def _history_message(m: Any) -> None:
    """Refuse what is no message of a task's history (the reader names which)."""
    if not isinstance(m, dict):
        raise RecordError(f"{json_kind(m)}, not a message object")
    role = m.get("role")
    if role not in ROLES:
        said = f"role {role!r}" if isinstance(role, str) else \
            "no 'role'" if role is None else f"a 'role' that is {json_kind(role)}"
        raise RecordError(f"{said}, where a task's history holds user and assistant "
                          "messages only (Cline sends its system prompt apart)")


class ClineHistoryReader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.archived: set[int] = set()
        self.position: list[int] = []  # index in the file's array of each message
        self.model: str | None = None
        self.sibling: str | None = None
        self.metrics = RequestUsage()  # of the assistant messages' own `metrics`
        self.made: list[Made] = []  # calls by `metrics`, as `recorded`
        self.items = Items("message {}")
        self.unread: list[SetAside] = []  # the sibling UI log's unreadable usage
        self.line = 1
        self.data: bytes | None = None  # the file's bytes, which place a call's item
        self.history: list[Any] = []  # the file's messages, as read
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)
        self.notes: list[tuple[int, str, str]] = []  # (see Layout.notes)

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the file's path: its usage is in the `ui_messages.json` beside it."""
        self.sibling = os.path.join(os.path.dirname(path), UI_SIBLING)
        self.data = data

    def feed(self, line: int, record: Any) -> list[Message]:
        if not isinstance(record, list):
            raise RecordError(f"{json_kind(record)}, not the array of messages a "
                              "task's api_conversation_history.json is")
        for _, m in self.items.each(record):
            _history_message(m)
        links = [_links(m) for _, m in self.items.each(record)]
        summaries = {ids[0] for m, ids in zip(record, links, strict=True)
                     if m.get("isSummary") is True}
        markers = {ids[2] for m, ids in zip(record, links, strict=True)
                   if m.get("isTruncationMarker") is True}
        tools = _tools(record)
        self.history += record
        pending: list[ToolCall] = []  # the calls the next results answer, in order
        first, begin = True, len(self.messages)
        self.line = line
        self._odd(line, record)
        for index, d in self.items.each(record):
            role = d["role"]
            archived = links[index][1] in summaries - {None} or \
                links[index][3] in markers - {None}
            start = len(self.messages)
            if role == "assistant":
                parts = tuple(p for part in content_parts(d.get("content"), block_part)
                              for p in (written_calls(part.text, tools, f"xml-{index}")
                                        if isinstance(part, Text) else (part,)))
                model = string_field(_dict(d.get("modelInfo")), "modelId")
                self.model = model or self.model
                metrics = _dict(d.get("metrics"))
                added = self.metrics.add(_metrics(metrics))
                tokens = _dict(metrics.get("tokens"))
                wrong = Wrong(wrong_counts(tokens, _METRICS, "metrics.tokens.",
                                           nulls=("prompt", "cached")),
                              wrong_costs(metrics, ("cost",), "metrics."),
                              null_counts(tokens, ("completion",), "metrics.tokens."))
                if added and (_prompt(added) or wrong.any):
                    self.made.append((len(self.messages), added, index, model or self.model,
                                      wrong))
                self.messages.append(Message("assistant", parts, (line,), d, model=model))
                pending = [p for p in parts if isinstance(p, ToolCall)]
            else:
                placed, sent = _user_parts(d.get("content"))
                answered = [p for _, p in placed if isinstance(p, ToolResult)]
                pending = [c for c in pending if c.id not in {r.call_id for r in answered}]
                results: list[Part] = list(answered)
                for group in sent:
                    parts = [p for _, p in group]
                    call = pending.pop(0) if pending else None  # answered, if by the person
                    if _human([p.text for p in parts if isinstance(p, Text)], False):
                        placed.extend(group)  # the person's feedback, sent as a result
                    elif call is None:
                        results.append(Text("\n".join(p.text for p in parts
                                                      if isinstance(p, Text))))
                    else:
                        results.append(ToolResult(call.id, tuple(
                            p for p in parts if isinstance(p, (Text, Image))),
                            written=call.written))
                own = [p for _, p in sorted(placed, key=lambda x: x[0])
                       if not isinstance(p, ToolResult)]
                if results:
                    self.messages.append(Message("tool", tuple(results), (line,), d))
                if own or not results:
                    texts = [p.text for p in own if isinstance(p, Text)]
                    human = d.get("isSummary") is not True and _human(texts, first)
                    self.messages.append(Message("user", tuple(own), (line,), d, human=human))
                    first = False
            if d.get("isSummary") is True:
                # Roo's condensed context opens again at its summary (of either role): the
                # person's plain message after it is theirs, as the task opening the file is
                first = True
            if archived:
                self.archived.update(range(start, len(self.messages)))
            self.position += [index] * (len(self.messages) - start)
        return self.messages[begin:]

    def _odd(self, line: int, history: list[Any]) -> None:
        """Name, at the line each message starts on, what Cline does not write: a content
        block of a type the Messages API does not take (left out: not counted, not
        converted) and a `ts` that is no time stamp (read past)."""
        odd = [(i, problem) for i, m in enumerate(history) for problem in _odd_fields(m)]
        at = item_lines(self.data, line, [(i,) for i, _ in odd]) if odd else {}
        self.problems += [(at.get((i,), line), f"message {i}: {problem}") for i, problem in odd]

    def finish(self) -> tuple[list[Message], Layout]:
        usage: dict[str, Any] = {}
        events, data, why = self._ui_events()
        made, since = self.made, -1
        at: dict[int, int] | None = None  # the sibling's events' lines, if it is read
        then: list[tuple[list[int], list[Made]]] = []  # (see `sent_before_cut`)
        if events is not None:
            tally = RequestUsage()
            made = []
            # the sibling's, in it: its own line and event named
            self.unread = unread_usage([n for n, e in enumerate(events) if unread_request(e)],
                                       data, 1, self.sibling or "")
            at = event_lines([n for n, e in enumerate(events) if isinstance(e, dict)
                              and e.get("say") == "api_req_started"], data, 1)
            for n, e in enumerate(events):
                info = request_info(e) if isinstance(e, dict) and \
                    e.get("say") == "api_req_started" else {}
                added = tally.add(info)
                wrong = request_wrong(info)
                call = added and (_prompt(added) or wrong.any)
                if not call:
                    continue
                asked = e.get("conversationHistoryIndex")
                # its reply is the history's message asked + 2 (the prompt: all before);
                # one that names none, or whose own message (asked + 1) the history has not
                # had written yet (a copy of the two files taken between two writes), is
                # of the usage totals only, checked all the same
                named = isinstance(asked, int) and not isinstance(asked, bool)
                reply = bisect.bisect_left(self.position, asked + 2) if named \
                    and asked + 1 < len(self.history) else None
                if named and reply is None:
                    self.notes.append((at.get(n, 1), (
                        f"event {n}: a request on history message {asked + 1:,}, which the "
                        f"history does not hold yet ({counted(len(self.history), 'message')}): "
                        f"a copy taken between the writes of the two files; its usage counts "
                        f"in the totals, not in the bill"),
                        self.sibling or ""))
                made.append((reply, added, n, self.model, wrong))
            usage = tally.summary(f"api_req_started events of the sibling {UI_SIBLING}")
            # what Cline cut from the history to fit the window is not sent any more
            gone = deleted_range(events)
            since = cut_at(events, gone)
            then, made = sent_before_cut(made, since, events, self.position, [
                n for n in range(len(self.messages)) if n not in self.archived])
            self.archived.update(n for n, i in enumerate(self.position) if i in gone)
        else:
            # (a sibling read past is said where no metrics are read either)
            usage = self.metrics.summary(f"metrics of each assistant message ({why})") or (
                {"source": f"none: {why}"} if data else {})
            if any(i in self.archived for i in range(len(self.messages))):
                # the calls before the newest are of a context condensed or cut since
                since = made[-1][2] - (made[-1][0] not in self.archived) if made else -1
        context = [n for n in range(len(self.messages)) if n not in self.archived]
        calls, before = recorded(context, made, since, at, self.sibling or "", *(
            () if events is not None else
            ("message {}", event_lines([n for _, _, n, _, _ in made], self.data, self.line),
             self.line)))
        older = [(held, recorded(held, group, -1, at, self.sibling or "")[0])
                 for held, group in then]
        return [], Layout(context, model=self.model, usage=usage, calls=calls,
                          older=older, unbilled_calls=before, set_aside=self.unread,
                          outside_why="condensed into a summary, or cut to fit the window",
                          problems=self.problems, notes=self.notes)

    def _ui_events(self) -> tuple[list[Any] | None, bytes, str]:
        """The UI log beside the file and its bytes, if there is one that reads as this
        task's; else why not (and the bytes of one that is there but not read)."""
        if not self.sibling or not os.path.isfile(self.sibling):
            return None, b"", f"no {UI_SIBLING} beside the file"
        try:
            with open(self.sibling, "rb") as f:
                data = f.read()
            events = parse_document(data, self.sibling, 1)
        except OSError as exc:
            return None, b"", f"the {UI_SIBLING} beside the file cannot be read: {exc.strerror}"
        except InputError as exc:
            return None, data, f"the {UI_SIBLING} beside the file is unreadable: {exc}"
        if not is_ui_log(events):
            return None, data, f"the {UI_SIBLING} beside the file is no Cline UI log"
        if other := other_task(events, self.history):
            # its usage, and its cut of the history, are of another task: a log copied or
            # left beside this one would bill it as that task
            why = f"the {UI_SIBLING} beside the file is another task's ({other})"
            self.problems.append((self.line, f"{why}: its usage and its cut to fit the "
                                             "window are not read"))
            return None, data, why
        return events, data, ""


class ClineUiReader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.position: list[int] = []  # the api_conversation_history index of each message
        self.gone = range(0)
        self.model: str | None = None
        self.usage = RequestUsage()
        self.made: list[Made] = []  # as `recorded` takes them
        self.events: list[Any] = []  # the log's events, as read
        self.since = -1
        self.items = Items("event {}")
        self.unread: list[int] = []  # the requests whose usage cannot be read
        self.data: bytes | None = None
        self.line = 1
        # a reply shown before the first request (which no request of the log asked for):
        # the message and the event it opens with
        self.early: list[tuple[int, int]] = []

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the log's bytes: usage it cannot read is named at its event's own line."""
        self.data = data

    def feed(self, line: int, record: Any) -> list[Message]:
        if not is_ui_log(record):
            raise RecordError("not a Cline ui_messages array of say/ask events")
        reply: list[Part] = []
        opened: list[Any] = []  # the event the reply's first part is of
        first, begin = True, len(self.messages)
        self.line = line
        asked = -1  # conversationHistoryIndex of the open request: its user message is next
        requested = False  # a request was made: a text event is the model's, not the task
        task: list[tuple[Any, str]] = []  # the person's task (event and text), until then
        shown = 0  # the event the reply's first part is of

        def close(answers: list[str]) -> list[ToolCall]:
            """The reply ends: its calls, each named as the next request's results name
            the tool they answer, in order."""
            calls = [p for p in reply if isinstance(p, ToolCall)]
            for call, name in zip(calls, answers, strict=False):
                reply[reply.index(call)] = replace(call, name=name)
            calls = [p for p in reply if isinstance(p, ToolCall)]
            if reply:
                self.messages.append(Message("assistant", tuple(reply), (line,), opened[0],
                                             model=self.model))
                self.position.append(asked + 2)
                reply.clear()
                opened.clear()
            return calls

        for n, e in self.items.each(record):
            kind = e.get("say") if e["type"] == "say" else e.get("ask")
            text = e.get("text") if isinstance(e.get("text"), str) else ""
            model = string_field(_dict(e.get("modelInfo")), "modelId")
            self.model = model or self.model
            if e.get("partial") is True:
                continue  # a streaming copy the finished event replaces
            if kind == "api_req_started":
                if not requested and reply:  # shown before any request: no context
                    self.early.append((len(self.messages), shown))
                requested = True
                info = request_info(e)
                request = info.get("request") if isinstance(info.get("request"), str) else ""
                if unread_request(e):
                    self.unread.append(n)
                    request = text  # kept as written: the request is in it
                heads = _heads(request)
                calls = close([h.group(1) for h in heads])
                index = e.get("conversationHistoryIndex")
                asked = index if isinstance(index, int) and not isinstance(index, bool) else asked
                added = self.usage.add(info)
                wrong = request_wrong(info)
                if request:
                    human = _human([request], first)
                    results = bool(heads) and not human
                    self.messages.append(Message(
                        "tool" if results else "user",
                        _answers(request, heads, calls) if results else (Text(request),),
                        (line,), e, human=human))
                    self.position.append(asked + 1)
                    first = False
                if added and (_prompt(added) or wrong.any):  # its prompt: all to its reply
                    self.made.append((len(self.messages), added, n, self.model, wrong))
            elif e["type"] == "say" and text and not requested and not task and \
                    kind in ("task", "text"):
                task.append((e, text))  # sent in the first request, which shows it
            elif kind == "text" and e["type"] == "say" and text:
                reply.append(Text(text))
            elif kind == "reasoning" and text:
                reply.append(Thinking(text))
            elif kind == "command" and (completion := _completion(reply)) is not None:
                # the command an attempt_completion carries, shown after its result: one call
                # of the two parameters, written as the model writes them
                name = completion.name
                reply[-1] = replace(completion, arguments=(
                    f"<{name}>\n<result>\n{completion.arguments}\n</result>\n"
                    f"<command>{text}</command>\n</{name}>"))
            elif kind in _UI_CALLS and (text or kind != "completion_result"):
                # (an empty completion_result is the UI waiting for the person's word)
                reply.append(ToolCall(f"ui-{n}", _ui_tool(kind, text), text, written=True))
            if reply and not opened:
                opened.append(e)
                shown = n
        if not requested and task:  # the log holds no request: the task is in no other
            (e, text), = task
            self.messages.append(Message("user", (Text(text),), (line,), e, human=first))
            self.position.append(asked + 1)
        close([])
        self.gone = deleted_range(record)
        self.since = cut_at(record, self.gone)
        self.events = record
        return self.messages[begin:]

    def finish(self) -> tuple[list[Message], Layout]:
        # Cline no longer sends the requests and replies it cut to fit the window, and
        # never sent a reply shown before its first request
        early = {m for m, _ in self.early}
        cut = [n for n, i in enumerate(self.position) if i in self.gone and n not in early]
        context = [n for n in range(len(self.messages)) if n not in early and n not in cut]
        at = event_lines([n for _, _, n, _, _ in self.made], self.data, self.line)
        then, made = sent_before_cut(self.made, self.since, self.events, self.position,
                                     [n for n in range(len(self.messages)) if n not in early])
        calls, before = recorded(context, made, self.since, at, first=self.line)
        lines = event_lines([n for _, n in self.early], self.data, self.line)
        problems = [(lines.get(n, self.line), f"event {n}: a reply shown before the first "
                     "request (no request of the log asked for it): kept outside the context")
                    for _, n in self.early]
        why = [w for w, some in (("cut to fit the window", cut),
                                 ("shown before the first request", early)) if some]
        return [], Layout(context, model=self.model,
                          usage=self.usage.summary("api_req_started events"),
                          calls=calls, unbilled_calls=before,
                          older=[(held, recorded(held, group, -1, at, first=self.line)[0])
                                 for held, group in then],
                          set_aside=unread_usage(self.unread, self.data, self.line),
                          outside_why="; ".join(why) or "cut to fit the window",
                          problems=problems)


def _completion(reply: list[Part]) -> ToolCall | None:
    """The attempt_completion call the reply ends on, if it ends on one. A command event
    after it is the command that call carries (`<command>`): Cline shows the result, then
    asks to run the command, and sends its output as the completion's result."""
    last = reply[-1] if reply else None
    return last if isinstance(last, ToolCall) and \
        last.name == _UI_CALLS["completion_result"] else None


def _ui_tool(kind: str, text: str) -> str:
    """The tool a call event of `kind` shows a call of, as far as the event says."""
    key = _UI_NAMED.get(kind)
    named = _dict(_json(text)).get(key) if key else None
    return named if isinstance(named, str) and named else _UI_CALLS[kind]


# when a task names no model: Cline's default provider is Anthropic's, and the task's
# history is in its Messages shape (as for the other formats of Claude's); its UI log is
# the same task's, so it assumes the same
CLINE_MODEL = "claude"


class ClineFormat:
    name = "cline"
    default_model = CLINE_MODEL
    description = "a Cline / Roo Code task's api_conversation_history.json (JSON)"
    records_usage = "Cline"  # (see formats.usage_recorders)
    document = True
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return 3 if is_api_history(record) else 0

    def sniff_place(self, record: Any, path: str) -> int:
        """A task's history by its place: any array of messages there is."""
        return 3 if isinstance(record, list) and record and in_task_folder(path) else 0

    def doubt(self, record: Any) -> str:
        return history_doubt(record)

    def reader(self) -> ClineHistoryReader:
        return ClineHistoryReader()


class ClineUiFormat:
    name = "cline-ui"
    default_model = CLINE_MODEL
    description = "a Cline / Roo Code task's ui_messages.json, the UI's event log (JSON)"
    records_usage = "Cline"  # (see formats.usage_recorders)
    document = True
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return 2 if is_ui_log(record) else 0

    def reader(self) -> ClineUiReader:
        return ClineUiReader()

"""OpenHands event histories: an evaluation `output.jsonl` (one instance a line, its events
in `history`) or a saved trajectory (a JSON array of events).

Events are actions (`action`) and observations (`observation`, `cause` = the action's id).
The model reads them the way OpenHands' conversation memory turns them into messages:
the `system` action is the system prompt, a `message` action from the user is the user's
request (from the agent, a plain reply), an action the model called a tool for
(`tool_call_metadata`) is an assistant message — the actions of one LLM response, which
share its `model_response.id`, are one message — and the observation that answers it is
a tool result linked by `tool_call_id` (of a file edit, the text the ACI editor shows the
model, `extras.formatted_output_and_error`, where the event has one: `content` holds
the diff, for people); the workspace-context `recall` observation reaches
the model as a user message. Other events (agent state changes, `null` observations,
recall actions) are the UI's only; an action OpenHands does not write is read as a message
of its source where it holds text (`args.content`), and named; an observation no tool call
asked for (a command the user ran) reaches the model as a user message. A `condensation`
action drops the events it names (`forgotten_event_ids`, or the
`forgotten_events_start_id`..`end_id` range) from the context; its `summary` reaches the
model as a user message, inserted at `summary_offset` among the events the agent's view
holds, until a newer condensation's summary stands in its place. Usage is an instance's
`metrics.token_usages` (one entry per LLM call, by `response_id`) or, where it has none (a
trajectory), each LLM response's own `usage`: one source for a conversation, so the calls
the bill anchors on are those the usage summary adds up (a response whose own usage the
metrics do not list is not counted: validate notes it). The `prompt_tokens` of a response
(the whole prompt, cached parts included, as LiteLLM reports it) is the prompt size of the
call whose reply is the assistant message made of it. Calls before a condensation, or
whose entry names no reply the file holds, are not recorded calls of the context (their
prompts held the events it forgot, or what the file does not show): the usage summary holds
them, judged by themselves, and calibrate fits each one made before a condensation on the
events it was sent (those before that condensation that none before it forgot, and the
summary that stood).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..jsonl import dumps, json_kind
from ..recorded import SetAside, Summed, null_counts, summed, unreadable, wrong_counts
from ..transcript import (
    FORGOTTEN,
    Message,
    Part,
    RecordedCall,
    Text,
    ToolCall,
    ToolResult,
)
from .base import (
    NOT_WRITTEN,
    Layout,
    LineFinder,
    RecordError,
    array_field,
    int_field,
    number,
    object_field,
    refused_string,
    string_field,
    text_of,
)

# observations of the UI only: no text reaches the model
_NOT_SHOWN = {None, "null", "agent_state_changed", "user_rejected", "success"}


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# the actions OpenHands writes (openhands/core/schema/action.py, `ActionType`): one of
# another name is none it sends as it is known to (see `OpenHandsReader._conversation`)
_ACTIONS = frozenset({
    "message", "system", "start", "read", "write", "edit", "run", "run_ipython", "browse",
    "browse_interactive", "call_tool_mcp", "delegate", "think", "finish", "reject", "null",
    "pause", "resume", "stop", "change_agent_state", "push", "send_pr", "recall",
    "condensation", "condensation_request", "task_tracking", "loop_recovery"})

# the events the agent's view of its history does not hold (openhands/memory/view.py, and
# the history's filter in openhands/controller/state/state_tracker.py)
_UNVIEWED = frozenset({"null", "change_agent_state", "agent_state_changed", "condensation",
                       "condensation_request"})

# the counts of a `metrics.token_usages` entry or of an LLM response's `usage`
_COUNTS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens",
           "cache_read_input_tokens", "cache_creation_input_tokens")


def is_event(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "observation" in value) \
        and "source" in value


def events_of(record: Any) -> list[Any] | None:
    """The events of an output.jsonl instance or a trajectory array; None for neither. An
    instance's `history` may be empty: the run failed before its first event."""
    if isinstance(record, dict) and isinstance(record.get("history"), list):
        history = record["history"]
        return history if all(is_event(e) for e in history) else None
    if isinstance(record, list) and record and all(is_event(e) for e in record):
        return record
    return None


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else dumps(value).decode("utf-8", "surrogatepass")


def _shown(event: dict[str, Any]) -> str:
    """What the model reads of an observation: its content, but for a file edit of the
    ACI editor, which shows the model its `formatted_output_and_error` ("File created
    successfully at: ...") and keeps the diff in `content` for people."""
    shown = _dict(event.get("extras")).get("formatted_output_and_error")
    if event.get("observation") == "edit" and isinstance(shown, str) and shown:
        return shown
    return _text(event.get("content"))


def _recall_text(event: dict[str, Any]) -> str:
    """What a workspace-context recall tells the model: the instructions and knowledge its
    extras hold, each in the block OpenHands' prompt template puts it in (its template
    words around them are left out)."""
    extras = _dict(event.get("extras"))
    hosts = extras.get("runtime_hosts")
    sections = {
        "REPOSITORY_INFO": [extras.get("repo_name"), extras.get("repo_directory")],
        "REPOSITORY_INSTRUCTIONS": [extras.get("repo_instructions")],
        "RUNTIME_INFORMATION": [extras.get("additional_agent_instructions"),
                                extras.get("date"),
                                *(list(hosts) if isinstance(hosts, dict) else [])],
        "EXTRA_INFO": [_dict(k).get("content")
                       for k in array_field(extras, "microagent_knowledge")]}
    blocks = []
    for tag, pieces in sections.items():
        said = "\n".join(p for p in pieces if isinstance(p, str) and p)
        if said:
            blocks.append(f"<{tag}>\n{said}\n</{tag}>")
    return "\n\n".join(blocks)


def refused(read: Message) -> list[str]:
    """What OpenHands cannot send of the event a message was read from: a `system` or
    `message` action whose `args.content` is no string (the text the model reads)."""
    event = read.raw
    args, action = event.get("args"), event.get("action")
    if action not in ("system", "message") or not isinstance(args, dict):
        return []
    content = args.get("content")
    if content is None or isinstance(content, str):
        return []
    return [f"{action} action's 'args.content' is {json_kind(content)}, not a string"]


def _summary(args: dict[str, Any]) -> tuple[tuple[str, int] | None, str]:
    """A condensation's summary and its `summary_offset` (None with neither), or None and
    why OpenHands cannot insert it."""
    summary, offset = args.get("summary"), args.get("summary_offset")
    if summary is None and offset is None:
        return None, ""
    if not isinstance(summary, str):
        return None, f"'summary' is {json_kind(summary)}, not a string"
    if type(offset) is not int:
        return None, f"'summary_offset' is {json_kind(offset)}, not a whole number"
    return (summary, offset), ""


def _dropped(event: dict[str, Any], forgotten: tuple[set[int], list[tuple[int, int]]]) -> bool:
    """True if `event` is among the ids and ranges of ids condensations forgot (`forgotten`)."""
    ident = event.get("id")
    if type(ident) is not int:
        return False
    ids, ranges = forgotten
    return ident in ids or any(start <= ident <= end for start, end in ranges)


def _in_view(event: dict[str, Any], forgotten: tuple[set[int], list[tuple[int, int]]]) -> bool:
    """True if OpenHands' `View` of the agent's history holds `event`: the history leaves
    out null events and agent state changes, the view condensations, requests for one and
    what they forgot (`summary_offset` counts the events it holds)."""
    if event.get("action") in _UNVIEWED or event.get("observation") in _UNVIEWED:
        return False
    return not _dropped(event, forgotten)


def _view(built: list[Message], events: list[dict[str, Any]],
          forgotten: tuple[set[int], list[tuple[int, int]]],
          summary: tuple[int, int] | None) -> list[int]:
    """The messages `built` of `events` the model reads, in its order: those of the events
    `forgotten` spares, and the summary that stands (its place in `built`, its offset)
    inserted among the events the view holds as OpenHands inserts it (a Python list's
    insert: an offset past them puts it last, a negative one counts from the end)."""
    held = [i for i, m in enumerate(built)
            if m.raw.get("action") != "condensation" and not _dropped(m.raw, forgotten)]
    if summary is None:
        return held
    at, offset = summary
    view = [k for k, e in enumerate(events) if _in_view(e, forgotten)]
    k = min(max(offset + len(view) if offset < 0 else offset, 0), len(view))
    cut = view[k] if k < len(view) else len(events)
    index = {id(e): n for n, e in enumerate(events)}
    held.insert(sum(index[id(built[i].raw)] < cut for i in held), at)
    return held


def _forgotten(args: dict[str, Any]) -> tuple[set[int], list[tuple[int, int]]]:
    """The ids a condensation's `args` name and its range of ids (kept as bounds: a
    stranger's range may be far larger than the events it could name)."""
    ids = {i for i in array_field(args, "forgotten_event_ids") if type(i) is int}
    start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
    ranges = [(start, end)] if type(start) is int and type(end) is int else []
    return ids, ranges


def _call(usage: Any, where: str) -> RecordedCall:
    """One LLM call as its usage records it (a `token_usages` entry, or a response's own
    `usage`; `prompt` 0 until its reply is placed): its prompt size (the whole prompt, as
    LiteLLM reports it) and reply, the counts that no token count can be (named with
    `where`, the usage's path in its record), and what it adds to the usage summary."""
    u = _dict(usage)
    billed, output = number(u.get("prompt_tokens")), number(u.get("completion_tokens"))
    return RecordedCall(0, billed, output, None,
                        problem=wrong_counts(usage, _COUNTS, where, nulls=_COUNTS[:1]),
                        unsized=null_counts(usage, _COUNTS[1:2], where), summed=summed(
        input_tokens=billed, output_tokens=output,
        cache_read_tokens=number(u.get("cache_read_tokens", u.get("cache_read_input_tokens"))),
        cache_creation_tokens=number(u.get("cache_write_tokens",
                                           u.get("cache_creation_input_tokens")))))


def _unlisted(n: int, rid: str, call: RecordedCall) -> str:
    """The note for an LLM response whose own usage the instance's metrics, which its
    usage is read from, do not list."""
    counts = "" if call.problem or call.billed is None else \
        f" (prompt {call.billed:,}" + ("" if call.output is None else
                                        f", reply {call.output:,}") + ")"
    return (f"event {n}: LLM response {rid}'s usage{counts} is not among the instance's "
            "metrics.token_usages, which its usage is read from: not counted")


def _response(meta: dict[str, Any]) -> tuple[str | None, str, dict[str, str]]:
    """The LLM response an action came from: its id, its text, and each call's arguments."""
    response = _dict(meta.get("model_response"))
    choices = response.get("choices")
    message = _dict(choices[0].get("message")) if isinstance(choices, list) and choices \
        and isinstance(choices[0], dict) else {}
    args = {}
    for call in array_field(message, "tool_calls"):
        call = _dict(call)
        fn = _dict(call.get("function"))
        if isinstance(call.get("id"), str):
            args[call["id"]] = _text(fn.get("arguments"))
    rid = response.get("id")
    return (rid if isinstance(rid, str) else None, _text(message.get("content")), args)


class OpenHandsReader:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.context: list[int] = []
        self.conversations = 0
        self.model: str | None = None
        self.finder: LineFinder | None = None
        self.at = (0, 0)  # the event being read and its line
        self.forgotten: tuple[set[int], list[tuple[int, int]]] = (set(), [])
        # the summary that stands: its message's place in the conversation and its offset
        self.summary: tuple[int, int] | None = None
        # of the conversation being read, each condensation: how many of its messages and
        # events came before it, and what the condensations before it had forgotten and the
        # summary that stood then (`forgotten` and `summary`)
        self.condensations: list[tuple[int, int, tuple[set[int], list[tuple[int, int]]],
                                       tuple[int, int] | None]] = []
        # the context before each condensation and the calls made on it (Layout.older)
        self.older: list[tuple[list[int], list[RecordedCall]]] = []
        # the calls of the conversation being read, by response id (`_call`), from its
        # `metrics.token_usages` where it has them (`measured`), else each response's own
        self.prompts: dict[str, RecordedCall] = {}
        self.measured = False
        self.sources: set[bool] = set()  # which of the two each conversation's usage is
        self.summed: list[Summed] = []  # what every recorded call adds to the summary
        self.replies: list[RecordedCall] = []  # `prompt`: the reply's number, until finish
        # calls on no context: before a condensation, or with no reply the file holds
        self.unbilled: list[RecordedCall] = []
        self.notes: list[tuple[int, str, str]] = []  # (see Layout.notes)
        self.unread: list[SetAside] = []  # usage that cannot be read
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told a trajectory's bytes: each event is at the line of its `id`."""
        self.finder = LineFinder(data, first)

    def feed(self, line: int, record: Any) -> list[Message]:
        events = events_of(record)
        if events is None:
            raise RecordError("not an OpenHands instance ('history' of events) or event list")
        self.prompts, loose = {}, []
        metrics = _dict(record.get("metrics")) if isinstance(record, dict) else {}
        usages = metrics.get("token_usages")
        if usages is not None and not isinstance(usages, list):
            self.unread.append(unreadable(line, "metrics.token_usages is "
                                                f"{json_kind(usages)}, not an array"))
            usages = []
        found = [(k, u) for k, u in enumerate(usages or ()) if isinstance(u, dict)]
        self.unread += [unreadable(line, f"metrics.token_usages[{k}] is {json_kind(u)}, not "
                                         "an object") for k, u in enumerate(usages or ())
                        if not isinstance(u, dict)]
        # one source of a conversation's calls: its metrics, where it has them
        self.measured = bool(found)
        for k, u in found:
            call = replace(_call(u, f"metrics.token_usages[{k}]."), at=line)
            self.summed.append(call.summed)
            rid = u.get("response_id")
            if isinstance(rid, str) and rid not in self.prompts:
                self.prompts[rid] = call
            else:
                loose.append(call)
        if isinstance(record, dict):
            model = _dict(_dict(record.get("metadata")).get("llm_config")).get("model")
            self.model = model if isinstance(model, str) else self.model
        start = len(self.messages)
        # of this conversation
        self.forgotten, self.summary, self.condensations = (set(), []), None, []
        try:
            built = self._conversation(line, events)
        except RecordError as error:  # a field of the wrong type: name the event and its line
            n, at = self.at
            raise RecordError(f"event {n}: {error}", at) from None
        if self.prompts or loose:
            self.sources.add(self.measured)
        self.messages += built
        self.context += [start + i for i in _view(built, events, self.forgotten, self.summary)]
        # the context each condensation replaced: the messages before it that those before
        # it had not forgotten (a call made on it is fitted on it: calibration.contexts_of)
        before = [[start + i for i in _view(built[:at], events[:n], gone, summary)]
                  for at, n, gone, summary in self.condensations]
        on: list[list[RecordedCall]] = [[] for _ in before]
        for i, m in enumerate(built, start):
            call = self.prompts.pop(m.id or "", None) if m.role == "assistant" else None
            if call is None or not (call.billed or call.output or call.problem):
                continue
            call = replace(call, model=m.model or self.model)
            made = next((k for k, (at, *_) in enumerate(self.condensations)
                         if i - start < at), None)
            if made is None:
                self.replies.append(replace(call, prompt=i))
            elif i in before[made]:
                on[made].append(replace(call, prompt=before[made].index(i)))
            else:  # (its reply forgotten by a condensation made before it)
                self.unbilled.append(replace(call, at=m.line, place=m.place, unplaced=FORGOTTEN))
        self.older[:0] = [(held, calls) for held, calls in reversed(list(zip(
            before, on, strict=True))) if calls]
        # entries of the metrics no reply of the conversation is made of
        self.unbilled += [replace(c, model=self.model) for c in [*self.prompts.values(), *loose]]
        self.conversations += 1
        return built

    def _conversation(self, line: int, events: list[dict[str, Any]]) -> list[Message]:
        """The messages of one conversation's events (each condensation noted in
        `condensations`, what it forgot in `forgotten`, the summary that stands in
        `summary`)."""
        out: list[Message] = []
        response: str | None = None
        conversation = self.conversations
        unlisted: set[str] = set()  # responses whose usage the metrics do not list
        for n, e in enumerate(events):
            ident = e.get("id")
            if self.finder is not None and type(ident) is int:
                line = self.finder.find(re.compile(rb'"id"\s*:\s*%d\b' % ident)) or line
            self.at = (n, line)  # where a field of the wrong type is (see feed)
            # the fields compared and used as keys: a stranger's may be of any type
            int_field(e, "id")
            action, source = string_field(e, "action"), string_field(e, "source")
            observation, said = string_field(e, "observation"), string_field(e, "message")
            args = object_field(e, "args")
            if observation is not None and not isinstance(e.get("content"), str):
                # every observation holds the text it shows (maybe ""): one without is broken
                raise RecordError(refused_string(e, "content", f"{observation} observation")[0])
            if action == "condensation":
                self.condensations.append((len(out), n, (set(self.forgotten[0]),
                                                         list(self.forgotten[1])), self.summary))
                named, spans = _forgotten(args)
                self.forgotten[0].update(named)
                self.forgotten[1].extend(spans)
                self._summarized(n, line, e, events[:n], out)
            meta = e.get("tool_call_metadata")
            if isinstance(meta, dict) and action is not None:
                rid, text, args = _response(meta)
                call_id = string_field(meta, "tool_call_id")
                call = ToolCall(call_id, string_field(meta, "function_name") or action,
                                args.get(call_id or "", "") or _text(e.get("args")))
                last = out[-1] if out else None
                if rid is not None and rid == response and last is not None \
                        and last.role == "assistant":
                    out[-1] = Message("assistant", (*last.parts, call), last.lines, last.raw,
                                      id=rid, model=last.model, conversation=conversation)
                    continue
                model = _dict(meta.get("model_response")).get("model")
                usage = _dict(meta.get("model_response")).get("usage")
                if rid is not None and rid not in self.prompts and isinstance(usage, dict) \
                        and usage:
                    recorded = _call(usage, "tool_call_metadata.model_response.usage.")
                    if not self.measured:
                        self.prompts[rid] = recorded
                        self.summed.append(recorded.summed)
                    elif rid not in unlisted:  # the metrics are the one source: say so
                        unlisted.add(rid)
                        self.notes.append((line, _unlisted(n, rid, recorded), ""))
                parts: list[Part] = [Text(text)] if text else []
                out.append(Message("assistant", (*parts, call), (line,), e, id=rid,
                                   model=model if isinstance(model, str) else None,
                                   conversation=conversation))
                if isinstance(model, str):
                    self.model = self.model or model
                response = rid
            elif isinstance(meta, dict) and "observation" in e:
                result = ToolResult(string_field(meta, "tool_call_id"),
                                    (Text(_shown(e)),), observation == "error")
                out.append(Message("tool", (result,), (line,), e, conversation=conversation))
            elif action == "system":
                text = args.get("content") or said
                out.append(Message("system", (Text(text_of(text)),), (line,), e,
                                   conversation=conversation))
            elif action == "message":
                # (content that is no string, which validate names, is shown as the text
                # it holds)
                text = args.get("content") or said
                role = "user" if source == "user" else "assistant"
                out.append(Message(role, (Text(text_of(text)),), (line,), e,
                                   human=role == "user", conversation=conversation))
            elif action is not None and action not in _ACTIONS:
                # an action OpenHands does not write: read as its source's message where it
                # holds text (as a `message` action is), else read past; named either way
                text = args.get("content")
                what = f"event {n}: action {action[:60]!r}, which OpenHands does not write"
                if isinstance(text, str) and text:
                    role = "user" if source == "user" else "assistant"
                    out.append(Message(role, (Text(text),), (line,), e, human=role == "user",
                                       conversation=conversation))
                    self.problems.append((line, f"{what}: read as {role} text (its "
                                                "'args.content')"))
                else:
                    self.problems.append((line, f"{what}, and with no 'args.content' text: "
                                                "read past"))
            elif observation == "recall":
                if text := _recall_text(e):
                    out.append(Message("user", (Text(text),), (line,), e,
                                       conversation=conversation))
            elif observation not in _NOT_SHOWN and (text := _text(e.get("content"))):
                # an observation no tool call asked for (a command the user ran) reaches
                # the model as a user message
                out.append(Message("user", (Text(text),), (line,), e, conversation=conversation))
        # each message named by its event, as a problem reading it is (in a trajectory
        # printed over many lines, after the line it is on)
        index = {id(e): n for n, e in enumerate(events)}
        return [replace(m, place=f"event {index[id(m.raw)]}",
                        item_line=m.line if self.finder is not None else 0)
                for m in out]

    def _summarized(self, n: int, line: int, event: dict[str, Any],
                    before: list[dict[str, Any]], out: list[Message]) -> None:
        """Read condensation `n`'s summary, if it has one, as the user message OpenHands
        inserts in the view in place of what it forgot (an `AgentCondensationObservation`):
        it stands until a newer one does. One OpenHands cannot insert is named, read past."""
        found, why = _summary(object_field(event, "args"))
        what = f"event {n}: condensation's"
        if found is None:
            if why:
                self.problems.append((line, f"{what} {why}: its summary is read past"))
            return
        summary, offset = found
        held = sum(_in_view(e, self.forgotten) for e in before)
        if not 0 <= offset <= held:
            self.problems.append((line, f"{what} 'summary_offset' {offset} is outside the "
                                        f"{held:,} events its view holds: read where "
                                        "OpenHands inserts it, as a Python list does"))
        self.summary = (len(out), offset)
        out.append(Message("user", (Text(summary),), (line,), event,
                           conversation=self.conversations))

    def finish(self) -> tuple[list[Message], Layout]:
        where = {n: i for i, n in enumerate(self.context)}
        calls = [replace(c, prompt=where[c.prompt]) for c in self.replies if c.prompt in where]
        forgotten = [replace(c, prompt=0, at=m.line, place=m.place, unplaced=FORGOTTEN)
                     for c in self.replies
                     if c.prompt not in where for m in (self.messages[c.prompt],)]
        return [], Layout(self.context, model=self.model, usage=self._usage(),
                          outside_why="forgotten by a condensation",
                          conversations=max(self.conversations, 1), calls=calls,
                          unbilled_calls=[*self.unbilled, *forgotten], older=self.older,
                          set_aside=self.unread, problems=self.problems,
                          empty=0 if self.context else self.conversations,
                          notes=self.notes)

    def _usage(self) -> dict[str, Any]:
        """The sum of every call recorded, each as its conversation's one source has it."""
        if not self.summed:
            return {}
        source = {frozenset({True}): "metrics.token_usages (one entry per LLM call)",
                  frozenset({False}): "each LLM response's usage"}.get(
            frozenset(self.sources), "metrics.token_usages (one entry per LLM call), or each "
                                     "LLM response's usage where an instance has none")
        usage: dict[str, Any] = {"source": source, "calls": len(self.summed)}
        for share in self.summed:
            for key, amount in share:
                usage[key] = usage.get(key, 0) + amount
        if self.conversations == 1 and self.replies:  # (the last call on the context)
            usage["last_input_tokens"] = self.replies[-1].billed
        return usage


class OpenHandsFormat:
    name = "openhands"
    description = "OpenHands events: evaluation output.jsonl or a saved trajectory (JSON array)"
    records_usage = "OpenHands"  # (see formats.usage_recorders)
    document = True  # a trajectory is one JSON array; output.jsonl is read line by line
    why_not_written = NOT_WRITTEN
    holds_no_message = ("every instance's 'history' is empty: each run ended before its "
                        "first event (as one that failed to start)")

    def sniff(self, record: Any) -> int:
        events = events_of(record)
        if events:
            return 2
        # an instance of a run that failed before its first event: its id beside the empty
        # history says so (an evaluation's output whose every run failed is still one)
        return 2 if events == [] and isinstance(record.get("instance_id"), str) else 0

    def reader(self) -> OpenHandsReader:
        return OpenHandsReader()

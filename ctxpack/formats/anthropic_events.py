"""Anthropic managed-agent session events, bare or wrapped one per line.

An event is `{id: "sevt_…", type, processed_at, …}`; some tools save each inside
`{role, kind, tool, content, time, raw}`, where `raw` is the event and the rest a
copy of it for display. `user.*` events are what a person sent, `agent.message`,
`agent.tool_use` and their kin are the model's output, `agent.tool_result` answers
a call by its event id (`tool_use_id`). What one model request wrote (between two
`span.model_request_start` events) is one assistant turn. `span.model_request_end`
holds the usage of each request, `session.*` and `span.*` events are bookkeeping. An
`agent.thinking` event holds no text, though the next request carries the thinking: the
request's recorded output tokens stand for its reply (see calibration.with_hidden).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..jsonl import dumps, json_kind
from ..numbers import number
from ..recorded import SetAside, with_run_totals, wrong_costs, wrong_totals
from ..transcript import META_KEY, Message, Part, Text, ToolCall, ToolResult
from .anthropic import Reply, UsageTally, unknown_blocks
from .base import (
    NOT_READ_BACK,
    Compaction,
    Layout,
    NoUsage,
    RecordError,
    content_parts,
    string_field,
)

_PREFIXES = ("user.", "agent.", "session.", "span.")
# the managed-agent event types (the API adds more in these families, which are read past);
# another agent's events may share a family and a name (GitHub Copilot CLI's user.message)
_TYPES = frozenset({
    "user.message", "user.interrupt", "user.custom_tool_result", "user.tool_confirmation",
    "user.define_outcome", "agent.message", "agent.thinking", "agent.tool_use",
    "agent.tool_result", "agent.mcp_tool_use", "agent.mcp_tool_result",
    "agent.custom_tool_use", "agent.thread_context_compacted", "agent.thread_message_sent",
    "agent.thread_message_received", "session.status_running", "session.status_idle",
    "session.status_rescheduled", "session.status_terminated", "session.thread_status_running",
    "session.thread_status_idle", "session.thread_created", "session.thread_idle",
    "session.outcome_evaluated", "session.error", "session.deleted", "session.usage",
    "span.model_request_start", "span.model_request_end", "span.outcome_evaluation_start",
    "span.outcome_evaluation_ongoing", "span.outcome_evaluation_end"})
_CALLS = {"agent.tool_use", "agent.mcp_tool_use", "agent.custom_tool_use"}
_RESULTS = {"agent.tool_result": "tool_use_id", "agent.mcp_tool_result": "mcp_tool_use_id",
            "user.custom_tool_result": "custom_tool_use_id"}


def _json(value: Any) -> str:
    return dumps(value).decode("utf-8", "surrogatepass")


def _text_block(block: dict[str, Any]) -> Text | None:
    return Text(block["text"]) if isinstance(block.get("text"), str) else None


def _unwrapped(record: dict[str, Any]) -> dict[str, Any]:
    """What a line holds as its event: its `raw` field where that has a type, else itself."""
    raw = record.get("raw")
    return raw if isinstance(raw, dict) and "type" in raw else record


def event_of(record: Any) -> dict[str, Any] | None:
    """The session event a line holds: the line itself, or its `raw` field."""
    if not isinstance(record, dict):
        return None
    event = _unwrapped(record)
    kind = event.get("type")
    return event if isinstance(kind, str) and kind.startswith(_PREFIXES) else None


def _not_event(record: Any) -> str:
    """Why a record the reader was given is no managed-agent event."""
    kind = _unwrapped(record).get("type") if isinstance(record, dict) else None
    if kind is None:
        return "not a session event: no 'type' such as agent.message"
    if not isinstance(kind, str):
        return f"not a session event: its 'type' is {json_kind(kind)}, not a string"
    return (f"not a session event: its type {kind!r} is not a managed-agent event type "
            "(user.*, agent.*, session.*, span.*)")


def _own_fields(event: dict[str, Any]) -> bool:
    """Does `event` carry its fields itself, as a managed-agent event does? Another
    agent's events of the same families (GitHub Copilot CLI's `session.start`,
    `user.message`) hold theirs in a `data` object."""
    return not isinstance(event.get("data"), dict)


class EventsReader:
    def __init__(self) -> None:
        self.count = 0
        # the lines of the turn being read: line, record, event id, the parts it adds
        # (read as it comes, so that a bad field is the problem of its own line)
        self.pending: list[tuple[int, dict[str, Any], str | None, list[Part]]] = []
        self.tally = UsageTally("model_usage")
        self.last_call: str | None = None
        # the newest session totals' list cost and its currency (None: none recorded)
        self.list_cost: tuple[int | float, str | None] | None = None
        self.aside: list[SetAside] = []  # session totals whose list cost no cost can be
        # the outcome grader's usage (`span.outcome_evaluation_end`), added over its
        # evaluations: the run's, no call of the agent's context
        self.grader: dict[str, int] = {}
        self.model: str | None = None
        self.replies: dict[int, Reply] = {}  # a request's reply (its number): its usage key
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        event = event_of(record)
        if event is None:
            raise RecordError(_not_event(record))
        kind = event["type"]
        self.problems += [(line, p) for p in unknown_blocks(
            event.get("content"), "content" if event is record else "raw.content")]
        if kind in _CALLS and "input" in event and not isinstance(event["input"], dict):
            # (the Messages API takes a call's arguments as an object alone)
            self.problems.append((line, f"{kind} event's 'input' is "
                                        f"{json_kind(event['input'])}, not an object: the "
                                        "call's arguments read as written"))
        if kind in _CALLS or kind in ("agent.message", "agent.thinking"):
            self.pending.append((line, record, string_field(event, "id"), self._parts(event)))
            return []
        if kind == "span.model_request_start":
            return self._turn()
        if kind == "span.model_request_end":
            key = string_field(event, "model_request_start_id") or f"line {line}"
            self.tally.add(key, event.get("model_usage"), line)
            self.last_call = key
            model = event.get("model")
            self.model = model if isinstance(model, str) else self.model
            thought = any(e.get("type") == "agent.thinking" for _, r, _, _ in self.pending
                          if isinstance(e := event_of(r), dict))
            reply = self._turn()
            if reply:  # the request's usage is of the prompt before it and of this reply
                self.replies[self.count - 1] = (key, self.model, thought)
            return reply
        if kind == "span.outcome_evaluation_end" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            for key, fields in _GRADED.items():
                self.grader[key] = self.grader.get(key, 0) + sum(
                    n for f in fields if type(n := usage.get(f)) is int and n >= 0)
            return []
        if kind == "session.usage" and isinstance(event.get("usage"), dict):
            self.list_cost, wrong = _list_cost(event["usage"])
            aside = wrong_totals(line, "", wrong)
            self.aside += [aside] if aside else []
            return []
        if kind in _RESULTS:
            parts = tuple(content_parts(event.get("content"), _text_block))
            result = ToolResult(string_field(event, _RESULTS[kind]), parts,  # type: ignore
                                event.get("is_error") is True)
            return self._turn() + self._emit(Message("tool", (result,), (line,), record,
                                                     id=string_field(event, "id")))
        if kind == "user.message":
            parts = tuple(content_parts(event.get("content"), _text_block))
            return self._turn() + self._emit(Message("user", parts, (line,), record,
                                                     id=string_field(event, "id"), human=True))
        if kind == "user.define_outcome":
            text = event.get("description")
            parts = (Text(text),) if isinstance(text, str) and text else ()
            return self._turn() + self._emit(Message("user", parts, (line,), record,
                                                     id=string_field(event, "id"), human=True))
        return []

    def _emit(self, message: Message) -> list[Message]:
        self.count += 1
        return [message]

    @staticmethod
    def _parts(event: dict[str, Any]) -> list[Part]:
        kind = event["type"]
        if kind == "agent.message":
            return list(content_parts(event.get("content"), _text_block))
        if kind in _CALLS:
            args = event.get("input")
            return [ToolCall(string_field(event, "id"), string_field(event, "name") or "",
                             "" if args is None else _json(args))]
        return []  # agent.thinking holds no text

    def _turn(self) -> list[Message]:
        if not self.pending:
            return []
        parts = [p for *_, more in self.pending for p in more]
        lines = tuple(n for n, *_ in self.pending)
        _, first, ident, _ = self.pending[0]
        self.pending = []
        if not parts:
            return []  # thinking only
        return self._emit(Message("assistant", tuple(parts), lines, first, id=ident,
                                  model=self.model))

    def usage(self) -> dict[str, Any]:
        usage = self.tally.summary("span.model_request_end model_usage, once per request",
                                   self.last_call)
        totals: dict[str, Any] = dict(self.grader)
        if self.list_cost is not None:
            cost, currency = self.list_cost
            totals["list_cost"] = cost
            if currency is not None:
                totals["list_cost_currency"] = currency
        return with_run_totals(usage, totals)

    def finish(self) -> tuple[list[Message], Layout]:
        rest = self._turn()
        context = list(range(self.count))
        return rest, Layout(context, model=self.model, usage=self.usage(),
                            calls=self.tally.recorded(context, self.replies),
                            set_aside=[*self.aside, *self.tally.unread],
                            problems=sorted([*self.tally.nulls, *self.problems]))


# the usage figures of the outcome grader's calls, each the sum of the fields it adds up
_GRADED = {"grader_input_tokens": ("input_tokens", "cache_creation_input_tokens",
                                   "cache_read_input_tokens"),
           "grader_output_tokens": ("output_tokens",)}


def _list_cost(usage: dict[str, Any]
               ) -> tuple[tuple[int | float, str | None] | None, str]:
    """The list cost session totals record, in dollars, a number as every cost is, and its
    currency (`(10.32, "USD")`; None: they record none, or one no cost can be), and the
    field no cost can be, as `wrong_costs` names it ("": none). The API writes `{amount,
    currency}`, the amount as decimal text in the currency's minor units: "1032" is $10.32
    (the Anthropic SDK's `BetaMonetaryAmount`: "an integer decimal string ... '2500' is
    $25.00"; USD is the only currency it prices in). A bare number is read the same."""
    cost = usage.get("list_cost")
    if isinstance(cost, dict):
        amount, currency = cost.get("amount"), cost.get("currency")
        wrong = wrong_costs(cost, ("amount",), "usage.list_cost.", cents=True)
    else:
        amount, currency = cost, None
        wrong = wrong_costs(usage, ("list_cost",), "usage.", cents=True)
    found = number(amount, text=True)
    if wrong or found is None:
        return None, wrong
    # (hundredths as written: 1079 is 10.79, not 10.790000000000001)
    in_dollars = float(Decimal(repr(found)).scaleb(-2))
    return (in_dollars, currency if isinstance(currency, str) else None), ""


class EventsEditor(NoUsage):
    """A result is the event's `content` (and the wrapper's copy of it, when wrapped); the
    summary is a `user.message` event. The service never reads such a file back."""

    resets = False
    alternates = False

    def __init__(self, wrapped: bool) -> None:
        self.wrapped = wrapped

    def keeps_place(self, message: Message) -> bool:
        return True

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        text = next(iter(texts.values()))  # one result per event
        if isinstance(record.get("raw"), dict):
            raw = {**record["raw"], "content": [{"type": "text", "text": text}]}
            return {**record, "content": text, "raw": raw}
        return {**record, "content": [{"type": "text", "text": text}]}

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        event = {"type": "user.message", "processed_at": c.time,
                 "content": [{"type": "text", "text": c.summary}]}
        if self.wrapped:
            return [{"role": "user", "kind": "message", "content": c.summary, "time": c.time,
                     "raw": event, META_KEY: c.meta}]
        return [{**event, META_KEY: c.meta}]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None


class EventsFormat:
    name = "anthropic-events"
    default_model = "claude"  # when the file names no model
    description = "Anthropic managed-agent session events (bare or wrapped in {role, kind, raw})"
    records_usage = "Anthropic managed-agent"  # (see formats.usage_recorders)
    not_read_back = NOT_READ_BACK.format(agent="the managed-agent API")

    def sniff(self, record: Any) -> int:
        event = event_of(record)
        if event is None or not _own_fields(event):
            return 0
        ident = event.get("id")
        if isinstance(ident, str) and ident.startswith("sevt_"):
            return 3
        return 2 if event["type"] in _TYPES else 0

    def reader(self) -> EventsReader:
        return EventsReader()

    def editor(self, transcript: Any) -> EventsEditor:
        first = transcript.messages[0].raw if transcript.messages else None
        return EventsEditor(wrapped=isinstance(first, dict) and "raw" in first)

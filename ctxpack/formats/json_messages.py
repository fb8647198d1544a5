"""JSON documents that hold chat messages: SWE-agent `.traj`, mini-swe-agent `.traj.json`,
tau-bench run lists, a JSON array of dataset rows each with its `messages`, or a bare
JSON array of Chat Completions messages.

The whole file is one JSON value, read at once (these files are small next to
JSONL logs) and written back as the bytes it was. Messages are in the OpenAI
shape; each run of a tau-bench list is its own conversation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..jsonl import item_lines, json_kind
from ..models import DEFAULT_MODEL
from ..recorded import RUN_BOUND, SetAside, null_counts, summed, wrong_counts, wrong_totals
from ..transcript import Message, RecordedCall, ToolResult
from .base import Layout, RecordError, number
from .cline import clines_own
from .openai import OpenAIEditor, message_from_dict, sniff_message

# mini-swe-agent ends with a role the API does not know: the run's exit, not model input
# (as its last message only: anywhere else it is read, and validate names its role)
NOT_INPUT_ROLES = {"exit"}


def conversations(document: Any) -> list[list[dict[str, Any]]]:
    """The message lists a document holds, one per conversation."""
    if isinstance(document, dict):
        for key in ("history", "messages"):
            if isinstance(document.get(key), list):
                return [document[key]]
        raise RecordError("a JSON object without a 'history' or 'messages' list")
    if isinstance(document, list):
        if all(isinstance(x, dict) and isinstance(x.get("traj"), list) for x in document):
            return [run["traj"] for run in document]
        if document and all(isinstance(x, dict) and isinstance(x.get("messages"), list)
                            for x in document):  # dataset rows, as one JSON array
            return [row["messages"] for row in document]
        if all(isinstance(x, dict) and "role" in x for x in document):
            return [document]
    raise RecordError("not a list of messages, a list of runs with 'traj' or rows with "
                      "'messages', or a trajectory")


def messages_of(items: list[Any]) -> list[dict[str, Any]]:
    """The message dicts of a conversation's list the model reads: all but a last one the
    model never does (mini-swe-agent's `exit`, which ends a run)."""
    out = [d for d in items if isinstance(d, dict)]
    if items and out and out[-1] is items[-1] and _not_input(out[-1]):
        out.pop()
    return out


def _not_input(d: dict[str, Any]) -> bool:
    role = d.get("role")
    return isinstance(role, str) and role in NOT_INPUT_ROLES


def _message(d: dict[str, Any], line: int, conversation: int) -> Message:
    message = message_from_dict(d, line, conversation)
    ids = d.get("tool_call_ids")
    if message.role == "tool" and isinstance(ids, list) and ids and message.tool_results:
        # SWE-agent answers a call with `tool_call_ids: [id]` instead of `tool_call_id`
        result = message.tool_results[0]
        if not isinstance(ids[0], str):
            raise RecordError(f"'tool_call_ids' holds {json_kind(ids[0])}, not a string")
        return replace(message, parts=(ToolResult(ids[0], result.parts, result.is_error),))
    return message


def _named_by_action(kept: list[dict[str, Any]], messages: list[Message]) -> list[Message]:
    """The messages, each result of no call named by the command of the reply before it:
    SWE-agent writes its command in the reply's text (and in its `action`) and sends the
    output as the user's, so the tool is the command's first word, as SWE-agent names it;
    the reply is marked as acting so (`Message.acts`), a call stats counts where it is
    written, answered or not (a run's last command, `submit`, gets no output)."""
    out, command = [], ""
    for d, message in zip(kept, messages, strict=True):
        if message.role == "assistant":
            action = d.get("action")
            words = action.split(None, 1) if isinstance(action, str) else []
            command = words[0] if words else ""
            if command and not message.tool_calls:  # (a call part is the call itself)
                message = replace(message, acts=command)
        elif command and any(r.call_id is None and not r.name for r in message.tool_results):
            message = replace(message, parts=tuple(
                replace(p, name=command) if isinstance(p, ToolResult) and p.call_id is None
                and not p.name else p for p in message.parts))
            command = ""
        out.append(message)
    return out


# the counts of a response's `usage`
_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _calls(messages: list[dict[str, Any]], first: int) -> list[RecordedCall]:
    """The calls whose usage mini-swe-agent keeps with each reply (`extra.response`): its
    `prompt_tokens` is the prompt of the messages before it (numbered from `first`)."""
    out = []
    for n, d in enumerate(messages, first):
        extra = d.get("extra")
        response = extra.get("response") if isinstance(extra, dict) else None
        usage = response.get("usage") if isinstance(response, dict) else None
        if d.get("role") != "assistant" or not isinstance(usage, dict):
            continue
        billed, wrong = number(usage.get("prompt_tokens")), wrong_counts(usage, _COUNTS,
                                                                          nulls=_COUNTS[:1])
        output = number(usage.get("completion_tokens"))
        if billed > 0 or output or wrong:  # (a prompt of 0 with a reply: judged too)
            model = response.get("model")  # type: ignore[union-attr]
            out.append(RecordedCall(n, billed, output or None,
                                    model if isinstance(model, str) else None, problem=wrong,
                                    summed=summed(input_tokens=billed, output_tokens=output),
                                    unsized=null_counts(usage, _COUNTS[1:2])))
    return out


# the counts of SWE-agent's run totals, and where they are
_STATS = ("tokens_sent", "tokens_received", "api_calls")
_STATS_AT = ("info", "model_stats")


def _usage(document: Any) -> tuple[dict[str, Any], str]:
    """The document's usage summary, and what of SWE-agent's run totals (`info.model_stats`,
    read where no response records its own usage) no token count can be: those totals are
    then set aside, and the summary is empty."""
    if not isinstance(document, dict):
        return {}, ""
    stats = (document.get("info") or {}).get("model_stats") if isinstance(
        document.get("info"), dict) else None
    messages = document.get("messages")  # usage only informs: a 'messages' of another
    # type beside the 'history' read is no usage, not a broken file
    calls = [m["extra"]["response"]["usage"] for m in (messages if isinstance(messages, list)
                                                         else ())
             if isinstance(m, dict) and isinstance(m.get("extra"), dict)
             and isinstance(m["extra"].get("response"), dict)
             and isinstance(m["extra"]["response"].get("usage"), dict)]
    if calls:
        return {"source": "usage of each response (mini-swe-agent extra.response)",
                "calls": len(calls),
                "input_tokens": sum(number(u.get("prompt_tokens")) for u in calls),
                "output_tokens": sum(number(u.get("completion_tokens")) for u in calls),
                "last_input_tokens": number(calls[-1].get("prompt_tokens"))}, ""
    if wrong := wrong_counts(stats, _STATS, "info.model_stats.", RUN_BOUND, nulls=_STATS):
        return {}, wrong
    if isinstance(stats, dict) and number(stats.get("tokens_sent")):
        return {"source": "info.model_stats (SWE-agent run totals)",
                "calls": number(stats.get("api_calls")),
                "input_tokens": number(stats.get("tokens_sent")),
                "output_tokens": number(stats.get("tokens_received"))}, ""
    return {}, ""


def _model(document: Any) -> str | None:
    """The model a run names: mini-swe-agent `info.config.model.model_name`, a request
    body's `model` (what `convert --to openai` writes, saved as one document), or a
    response's."""
    if not isinstance(document, dict):
        return None
    if isinstance(document.get("model"), str) and document["model"] \
            and isinstance(document.get("messages"), list):
        return document["model"]
    info = document.get("info")
    config = info.get("config") if isinstance(info, dict) else None
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


class JsonMessagesReader:
    def __init__(self) -> None:
        self.count = 0
        self.conversations = 0
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.calls: list[RecordedCall] = []
        self.data: bytes | None = None  # the document's bytes, from line `first`
        self.first = 1
        self.aside: list[SetAside] = []

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the document's bytes: run totals are named at the line they start on."""
        self.data, self.first = data, first

    def feed(self, line: int, record: Any) -> list[Message]:
        out: list[Message] = []
        for messages in conversations(record):
            kept = messages_of(messages)
            if isinstance(record, dict) and messages is record.get("messages"):
                self.calls += _calls(kept, self.count + len(out))
            out += _named_by_action(kept, [_message(d, line, self.conversations)
                                           for d in kept])
            self.conversations += 1
        self.usage, wrong = _usage(record)
        # (set aside at the line the run totals start on, in a document printed over many)
        at = item_lines(self.data, self.first, [_STATS_AT]) if wrong else {}
        aside = wrong_totals(at.get(_STATS_AT) or line, wrong)
        self.aside = [aside] if aside else []
        self.model = _model(record)
        self.count += len(out)
        return out

    def finish(self) -> tuple[list[Message], Layout]:
        return [], Layout(list(range(self.count)), model=self.model, usage=self.usage,
                          conversations=max(self.conversations, 1),
                          calls=self.calls if self.conversations <= 1 else [],
                          set_aside=self.aside)


def doubt(record: Any) -> str:
    """What else a document read as chat messages may be, where something in it says so
    (its messages hold nothing of Chat Completions' own): an Amp thread, by the `T-` id
    Amp gives its threads; a Cline / Roo Code task's history saved without its `ts`
    stamps, by what Cline writes in its messages. "" if nothing does."""
    if isinstance(record, dict) and isinstance(record.get("id"), str) \
            and record["id"].startswith("T-"):
        return ("read as chat messages, though its `T-` id is how Amp names its threads: "
                "it may be an Amp thread, whose messages are Anthropic's (-m names its "
                "Claude model)")
    if isinstance(record, list) and clines_own(record):
        return ("plain {role, content} messages fit several readers, and theirs hold "
                "what Cline sends (<task>, <environment_details>, `[tool] Result:`): it "
                "may be a Cline / Roo Code task's history without its `ts` stamps "
                "(--format cline reads it so)")
    return ""


class JsonMessagesFormat:
    name = "json-messages"
    default_model = DEFAULT_MODEL  # Chat Completions with no model named: the usual one
    description = "one JSON document of chat messages (.traj, .traj.json, run lists)"
    records_usage = "mini-swe-agent"  # (see formats.usage_recorders)
    document = True  # the whole file is one JSON value, not JSONL

    def sniff(self, record: Any) -> int:
        if isinstance(record, dict) and "system" in record:
            return 0  # a system prompt beside the messages: an Anthropic request body
        try:
            lists = conversations(record)
        except RecordError:
            return 0
        # every message must be a Chat Completions one: an Anthropic block or an
        # agent's event in the list is some other format (a role that is no string is
        # this format's broken line, which the reader names)
        if any(isinstance(m, dict) and ("role" not in m or "parts" in m and "content" not in m
                                        or isinstance(m["role"], str) and sniff_message(m) == 0)
               for ms in lists for m in ms):
            return 0
        # no message at all marks nothing: a format whose own keys the value carries (a
        # Gemini CLI session of `messages: []`) claims it more surely
        if not any(lists):
            return 1
        # a bare array of plain {role, content} messages (no system prompt, tool call or
        # result among them) fits other readers as well: taken, but not surely
        if isinstance(record, list) and lists == [record] and not any(
                isinstance(m, dict) and sniff_message(m) == 2 for m in record):
            return 1
        return 2

    def doubt(self, record: Any) -> str:
        return doubt(record)

    def editor(self, transcript: Any) -> OpenAIEditor:
        return OpenAIEditor()  # the messages are Chat Completions dicts

    def reader(self) -> JsonMessagesReader:
        return JsonMessagesReader()


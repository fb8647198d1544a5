"""Anthropic Messages request bodies, one a line: `{"model", "system", "messages"}`, as
`ctxpack convert --to anthropic` writes them (and as batch and eval files hold them); or
one body as a whole document, pretty-printed (as `jq .` shows one), read as its line is.

Each line is one conversation: its `system` (a string or text blocks) and its messages,
whose tool results come at the start of the next user message, merged there with the
user turns that follow them (the API wants the roles to alternate): each of the
person's turns in such a message is read as its own (see `merged_turns`). A body an
older convert wrote labels what it sent as user text `[system]`, `[developer]` or
`[result of tool call ID]`: text opening so is no turn of the person's here, where
convert put it, and the person's words after it in one message are a turn of their own
(in other files a person typing `[developer]` is read as they typed).
Read for stats, show, validate and convert; compress rewrites the transcript they were
made from instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..jsonl import json_kind
from ..transcript import Message, Text
from .agent_text import older_label, persons
from .anthropic import (
    api_message,
    bad_content,
    merged_turns,
    message_parts,
    sniff_record,
    unknown_blocks,
)
from .anthropic import (
    doubt as blocks_doubt,
)
from .base import Layout, RecordError
from .openai import foreign_parts
from .openai_conversations import ConversationsReader

# settings only the Messages API takes (Bedrock and Vertex bodies name a version, no model)
_ANTHROPIC_KEYS = {"anthropic_version", "top_k", "stop_sequences", "thinking", "container",
                   "mcp_servers"}
# settings only Chat Completions takes: a body with one is OpenAI's, whatever else it holds
_CHAT_KEYS = {"max_completion_tokens", "n", "seed", "stop", "response_format", "logprobs",
              "top_logprobs", "logit_bias", "frequency_penalty", "presence_penalty",
              "parallel_tool_calls", "reasoning_effort", "modalities", "audio", "prediction",
              "functions", "function_call", "stream_options", "store"}


def _mark(record: Any) -> str:
    """What says a record is an Anthropic request body, where anything does: "" if it is
    not one (a message is not Anthropic's, or a setting is Chat Completions' only);
    "max_tokens" where only that does (the Messages API requires it, and Chat Completions
    takes it too, though OpenAI names it deprecated)."""
    messages = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(messages, list) or not messages:
        return ""
    if not all(isinstance(m, dict) and (sniff_record(m) > 0 or bad_content(m))
               for m in messages):
        return ""
    blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]
              if isinstance(b, dict)]
    if any(b.get("type") == "tool_result" and not {"tool_use_id", "content"} & b.keys()
           for b in blocks):
        return ""  # a result of another shape (Amp's threads: `toolUseID`, output in `run`)
    system = record.get("system")
    if isinstance(system, str) or isinstance(system, list) and all(
            isinstance(b, dict) and b.get("type") == "text" for b in system):
        return "system"
    if any(foreign_parts(m["content"]) for m in messages):
        return "blocks"  # a block no Chat Completions message holds
    if _CHAT_KEYS & record.keys():
        return ""
    # (a Claude model alone is no mark: `convert --to openai` names the model the
    # transcript names, a Claude one in a Chat Completions body)
    if _ANTHROPIC_KEYS & record.keys():
        return "settings"
    return "max_tokens" if isinstance(record.get("max_tokens"), int) else ""


def sniff_body(record: Any) -> int:
    """How surely a record is an Anthropic request body: one with a top-level `system`, a
    block only Anthropic has, a setting only Anthropic takes or the `max_tokens` it
    requires (3: it beats the Chat Completions reading the same messages
    fit); 0 if a message is not an Anthropic message or a setting is Chat Completions'."""
    mark = _mark(record)
    return 2 if mark in ("system", "blocks") else 3 if mark else 0


def doubt(record: Any) -> str:
    """Why a body taken for Anthropic's might be a Chat Completions one, or no Anthropic
    body (its only marks blocks neither API takes); "" if nothing says it might."""
    mark = _mark(record)
    if mark == "blocks":
        return blocks_doubt(record["messages"])
    model = record.get("model") if mark == "max_tokens" else None
    if not isinstance(model, str) or model.lower().startswith("claude"):
        return ""
    return (f"read as Anthropic request bodies by their max_tokens, which that API "
            f"requires; but they name {model}, not a Claude model, and their messages fit "
            "Chat Completions too")


class RequestsReader(ConversationsReader):
    """Each line a conversation, as Chat Completions conversations are read; its messages
    Anthropic's, its `system` the first."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[tuple[int, str]] = []  # (see Layout.problems)

    def finish(self) -> tuple[list[Message], Layout]:
        rest, layout = super().finish()
        layout.problems = self.problems
        return rest, layout

    def messages(self, line: int, record: dict[str, Any]) -> list[Message]:
        if not isinstance(record, dict):  # (a whole document, as a line is checked already)
            raise RecordError(f"{json_kind(record)}, not a request body object")
        messages = record.get("messages")
        if not isinstance(messages, list):
            raise RecordError("not a request body: no 'messages' list")
        if not isinstance(record.get("model"), str) and "anthropic_version" not in record \
                and "max_tokens" in record:
            # (a Bedrock or Vertex body names its model in the URL, and a version instead;
            # messages saved without a body's settings are a conversation, not a request)
            self.problems.append((line, "body without a 'model', which the Messages API "
                                        "requires (`ctxpack convert -m` names one)"))
        out: list[Message] = []
        system = record.get("system")
        if system is not None:
            parts = message_parts(system)
            if not parts and system:
                raise RecordError("'system' is neither a string nor a list of text blocks")
            out.append(Message("system", parts, (line,), record, conversation=self.conversations))
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                raise RecordError(f"a message that is not an object: {type(m).__name__}")
            message = replace(api_message(m, line, m), conversation=self.conversations)
            self.problems += [(line, p) for p in unknown_blocks(m.get("content"),
                                                                f"messages[{i}].content")]
            out += [t for turn in merged_turns(message) for t in _older(turn)]
        return out


def _older(turn: Message) -> list[Message]:
    """A turn as an older convert meant it. The texts it labelled as sent as user text
    (`[system]`, see `older_label`) are its own: a turn of only those is not the
    person's, and where the person's words come after them (a late system message the
    alternation joined to the person's next one), those words are a turn of their own,
    titled by them."""
    if not turn.human:
        return [turn]
    labelled = [isinstance(p, Text) and older_label(p.text) for p in turn.parts]
    rest = [p for p, label in zip(turn.parts, labelled, strict=True) if not label]
    if not persons(rest):
        return [replace(turn, human=False)]
    start = next(i for i, p in enumerate(turn.parts) if not labelled[i] and persons((p,)))
    if not any(labelled[:start]):
        return [turn]
    return [replace(turn, parts=turn.parts[:start], human=False),
            replace(turn, parts=turn.parts[start:], joined=True)]


class RequestsFormat:
    name = "anthropic-requests"
    default_model = "claude"  # when the file names no model
    description = "Anthropic Messages request bodies ({system, messages}), one per line"
    document = True  # one body may be the whole file (see the module's docstring)

    def sniff(self, record: Any) -> int:
        return sniff_body(record)

    def one_record(self, value: Any) -> bool:
        return True  # a file of one body on one line: its JSONL form

    def doubt(self, record: Any) -> str:
        return doubt(record)

    def reader(self) -> RequestsReader:
        return RequestsReader()

    def editor(self, transcript: Any) -> Any:
        raise UsageError(f"{transcript.path}: compress does not rewrite Anthropic request "
                         "bodies", "compress the transcript they were converted from, then "
                         "`ctxpack convert --to anthropic` the result")

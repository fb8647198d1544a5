"""OpenAI Chat Completions messages, one per line.

`role`, `content` (a string or a list of parts), `tool_calls` with JSON-string
arguments, `tool_call_id` on `role: tool` results, and the legacy
`function_call` / `role: function` pair. Every record is model input.
"""

from __future__ import annotations

from typing import Any

from ..jsonl import dumps, json_kind
from ..models import DEFAULT_MODEL
from ..transcript import META_KEY, Image, Message, Part, Text, Thinking, ToolCall, ToolResult
from .agent_text import observed, persons
from .base import (
    Compaction,
    Layout,
    NoUsage,
    RecordError,
    content_parts,
    refused_items,
    refused_string,
    string_field,
)

_SURE_ROLES = {"system", "developer", "tool", "function"}


def parse_data_url(url: str) -> Image:
    """An image part from a URL; base64 `data:` URLs keep their payload for sizing."""
    if url.startswith("data:") and ";base64," in url[:100]:
        head, _, data = url.partition(",")
        return Image(media_type=head[5:].split(";")[0] or None, data=data)
    return Image(url=url)


def _item_part(item: dict[str, Any]) -> Text | Image | None:
    """One Chat Completions content part: text, image_url or refusal."""
    if item.get("type") == "image_url":
        image = item.get("image_url")
        url = string_field(image, "url") if isinstance(image, dict) else \
            string_field(item, "image_url")
        img = parse_data_url(url or "")
        detail = string_field(image, "detail") if isinstance(image, dict) else None
        return Image(img.media_type, img.data, img.url, detail)
    for key in ("text", "refusal"):
        if isinstance(item.get(key), str):
            return Text(item[key])
    return None


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else dumps(value).decode("utf-8", "surrogatepass")


def message_from_dict(d: dict[str, Any], line: int, conversation: int = 0) -> Message:
    """Convert one Chat Completions message dict into the canonical model."""
    role = string_field(d, "role")
    if role is None:
        raise RecordError("not a chat message: no 'role'")
    parts: list[Part] = []
    reasoning = d.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Thinking(reasoning))
    content = content_parts(d.get("content"), _item_part)
    if role in ("tool", "function"):
        parts.append(ToolResult(string_field(d, "tool_call_id"), tuple(content)))
    else:
        parts.extend(observed(role, content))
    calls = d.get("tool_calls") or ()
    if not isinstance(calls, (list, tuple)):
        raise RecordError(f"'tool_calls' is {json_kind(calls)}, not an array")
    for call in calls:
        if isinstance(call, dict):
            # a function's call, or a custom tool's (its free text in `input`)
            custom = call.get("custom") if isinstance(call.get("custom"), dict) else None
            fn = custom or (call.get("function") if isinstance(call.get("function"), dict)
                            else {})
            parts.append(ToolCall(string_field(call, "id"), string_field(fn, "name") or "",
                                  _arguments(fn.get("input" if custom else "arguments"))))
    legacy = d.get("function_call")
    if isinstance(legacy, dict):
        parts.append(ToolCall(None, string_field(legacy, "name") or "",
                              _arguments(legacy.get("arguments"))))
    name = d.get("name") if isinstance(d.get("name"), str) else None
    return Message(role, tuple(parts), (line,), d, name=name,
                   human=role == "user" and persons(parts), conversation=conversation)


# the content parts Chat Completions takes (an assistant's only text and refusal)
PART_TYPES = ("text", "image_url", "input_audio", "file", "refusal")


# the content types of OpenAI's Responses API, which Chat Completions refuses but which
# are no other API's (a message holding one is OpenAI's, wrongly made)
_RESPONSES_TYPES = ("input_text", "input_image", "input_file", "output_text",
                    "reasoning_text", "summary_text")


def foreign_parts(content: Any) -> list[str]:
    """The types, in order, of the typed parts of a message's `content` that no OpenAI
    API takes: a list of such blocks is Anthropic's shape (`server_tool_use`,
    `document`, or a block of a type no reader knows)."""
    return [p["type"] for p in (content if isinstance(content, list) else ())
            if isinstance(p, dict) and isinstance(p.get("type"), str)
            and p["type"] not in PART_TYPES and p["type"] not in _RESPONSES_TYPES]


def _refused_part(part: dict[str, Any]) -> list[str]:
    """What Chat Completions refuses of one typed content part: a type it does not take
    (the Responses API's `output_text`, say), text that is no string, an image_url part
    without an image (an object with its `url`)."""
    if part["type"] not in PART_TYPES:
        return [f"a part of type {part['type']!r}, which Chat Completions does not take (it "
                f"takes {', '.join(PART_TYPES)})"]
    if part["type"] == "text":
        return refused_string(part, "text", "text part")
    if part["type"] == "image_url":
        image = part.get("image_url")
        if not isinstance(image, dict):
            return [f"image_url part's 'image_url' is {json_kind(image)}, not an object "
                    "with the image's url" if "image_url" in part
                    else "image_url part without 'image_url' (the image)"]
        return refused_string(image, "url", "image_url part's image")
    return []


def refused(read: Message) -> list[str]:
    """What Chat Completions refuses in one message besides its role and its pairs:
    content that is no string or array of typed parts (null only on an assistant message
    that makes calls, or a legacy function result), a part it cannot read, and a call
    whose `function.arguments` is no string (the API takes the JSON as text)."""
    message, out = read.raw, []
    content = message.get("content")
    if content is not None:
        out += refused_items(content, "content part", _refused_part)
    elif not (message.get("role") == "assistant" and (
            message.get("tool_calls") or message.get("function_call"))
            or message.get("role") == "function"):
        out.append(f"{'content is null' if 'content' in message else 'no content'} (Chat "
                   "Completions takes a message without content only from an assistant that "
                   "makes tool calls)")
    calls = message.get("tool_calls")
    for i, call in enumerate(calls if isinstance(calls, list) else ()):
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out += refused_string(fn, "arguments", f"tool_calls[{i}].function")
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        out += refused_string(legacy, "arguments", "function_call")
    return out


def sniff_message(record: dict[str, Any]) -> int:
    role = record.get("role")
    if not isinstance(role, str) or "type" in record and "message" in record:
        return 0
    if "content" not in record and not any(
            k in record for k in ("tool_calls", "function_call", "tool_call_id")):
        # no message of Chat Completions: one that says nothing has `content` (the Gemini
        # API's contents, of `parts`; an OpenCode message, whose words are in other files)
        return 0
    if role in _SURE_ROLES or "tool_calls" in record or "tool_call_id" in record:
        return 2
    content = record.get("content")
    if foreign_parts(content):
        return 0  # blocks of another API's (see anthropic.sniff_record)
    if isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("image_url", "input_audio", "refusal")
        for p in content
    ):
        return 2
    return 1


class OpenAIReader:
    def __init__(self) -> None:
        self.count = 0
        self.model: str | None = None

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        message = message_from_dict(record, line)
        if isinstance(record.get("model"), str):
            self.model = record["model"]
        self.count += 1
        return [message]

    def finish(self) -> tuple[list[Message], Layout]:
        return [], Layout(list(range(self.count)), model=self.model)


class OpenAIFormat:
    name = "openai"
    default_model = DEFAULT_MODEL  # Chat Completions with no model named: the usual one
    description = "one Chat Completions message per line"

    def sniff(self, record: dict[str, Any]) -> int:
        return sniff_message(record)

    def reader(self) -> OpenAIReader:
        return OpenAIReader()

    def editor(self, transcript: Any) -> OpenAIEditor:
        return OpenAIEditor()


class OpenAIEditor(NoUsage):
    """Chat Completions lines: a result is a `tool` message; the summary a user message."""

    resets = False
    alternates = False

    def keeps_place(self, message: Message) -> bool:
        return True

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        return {**record, "content": next(iter(texts.values()))}  # one result per message

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        return [{"role": "user", "content": c.summary, META_KEY: c.meta}]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None

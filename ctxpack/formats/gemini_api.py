"""Gemini API request bodies, one a line: `{"contents", "systemInstruction", "tools",
"generationConfig"}`, as a log of the requests an application sent (or one body, the
JSON a `curl` example posts, on one line or indented).

Each body is one conversation, sent whole: its `systemInstruction` first, then its
`contents`, each Content `{role: user|model, parts}` of Gemini API parts (`text`,
`functionCall`, `functionResponse`, `thought` text, inline or file data). A user
Content's `functionResponse` parts are the tool results of the model's calls before it,
and a model Content's thought parts are reasoning. `tools` and `generationConfig` are
settings, not messages.

A batch line, `{"key"?, "request": body, "response"?: GenerateContentResponse}` (the
Gemini API's batch files, Vertex AI's batch prediction output), is read the same way:
the response's first candidate is the model's reply, after the request, and its
`usageMetadata` the usage of that call (`promptTokenCount`: the prompt it was sent).

Read for stats, show, validate and convert; compress does not rewrite it (see
`NOT_WRITTEN`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..jsonl import json_kind
from ..recorded import Summed, summed, wrong_counts
from ..transcript import Message, Part, RecordedCall, Text, ToolCall, ToolResult
from .base import NOT_WRITTEN, Layout, RecordError, number, string_field
from .gemini import _parts

ROLES = ("user", "model")  # what the API takes (the older `function` role is a user side)
_HEAD = 20  # contents looked at to tell a body


def body_of(record: Any) -> dict[str, Any] | None:
    """The request body a record holds: itself, or a batch line's `request`."""
    if not isinstance(record, dict):
        return None
    request = record.get("request")
    if "contents" not in record and isinstance(request, dict):
        return request
    return record


def _roles(record: Any) -> set[str | None] | None:
    """The roles of a body's first Contents (None for one that names none), if the record
    holds a body of Contents: objects of `parts` whose role, if any, is a string (`parts`
    that is no array is the Content's problem, which validate names)."""
    body = body_of(record)
    contents = body.get("contents") if body is not None else None
    if not isinstance(contents, list) or not contents:
        return None
    head = contents[:_HEAD]
    if not all(isinstance(c, dict) and "parts" in c and "content" not in c
               and isinstance(c.get("role", ""), str) for c in head):
        return None
    return {c.get("role") for c in head}


def sniff_body(record: Any) -> int:
    """2 for a body (or batch line) whose `contents` are Gemini Contents, one of them the
    user's or the model's (another role is the body's problem, which validate names), or
    none naming a role (taken unsure: see `doubt`); else 0."""
    roles = _roles(record)
    return 2 if roles is not None and (roles & set(ROLES) or roles == {None}) else 0


def doubt(record: Any) -> str:
    if (_roles(record) or set()) & set(ROLES):
        return ""
    return ("read as Gemini API request bodies by their `contents` of `parts`, though no "
            "Content names its role (user or model)")


class Links:
    """Calls and responses of one body paired by name, as the API pairs them where they
    carry no `id` (its ids are optional): each call without one is given `NAME#k` (no id
    of the file, and none `convert` keeps), and a response without one answers the oldest
    call of its name not yet answered (none: it stays unlinked, and validate names it)."""

    def __init__(self) -> None:
        self.made = 0
        self.open: dict[str, list[str]] = {}

    def part(self, item: Any, part: Part) -> Part:
        if isinstance(part, ToolCall):
            if part.id is None:
                self.made += 1
                part = replace(part, id=f"{part.name}#{self.made}")
            self.open.setdefault(part.name, []).append(part.id)  # type: ignore[arg-type]
        elif isinstance(part, ToolResult):
            response = item.get("functionResponse") if isinstance(item, dict) else None
            name = response.get("name") if isinstance(response, dict) else None
            waiting = self.open.get(name, []) if isinstance(name, str) else []
            if part.call_id is None and waiting:
                part = replace(part, call_id=waiting.pop(0))
            elif part.call_id in waiting:
                waiting.remove(part.call_id)
        return part


def content_messages(content: dict[str, Any], line: int, conversation: int,
                     links: Links) -> list[Message]:
    """The messages one Content puts before the model: a model Content is the assistant's
    turn (its thought parts reasoning); any other holds the tool results, then what the
    user said. A Content with no part the reader knows is an empty message, so that every
    Content has its place (validate names an empty one)."""
    role = string_field(content, "role")
    items = content.get("parts")
    parts = [links.part(item, p) for item in (items if isinstance(items, list) else [items])
             for p in _parts([item])]
    if role in ("model", "assistant"):  # ("assistant": a Chat Completions habit, refused)
        return [Message("assistant", tuple(parts), (line,), content,
                        conversation=conversation)]
    results = tuple(p for p in parts if isinstance(p, ToolResult))
    said: list[Part] = [p for p in parts if not isinstance(p, ToolResult)]
    out = []
    if results:
        out.append(Message("tool", results, (line,), content, conversation=conversation))
    if said or not results:
        out.append(Message("user", tuple(said), (line,), content, conversation=conversation,
                           human=any(isinstance(p, Text) and p.text for p in said)))
    return out


# the counts of a response's `usageMetadata` that the summary sums
_COUNTS = ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
           "cachedContentTokenCount")


class _Usage:
    """The `usageMetadata` of each logged response."""

    def __init__(self) -> None:
        self.calls: list[dict[str, int]] = []

    def add(self, meta: Any) -> tuple[int, str, Summed]:
        """Keep one response's usage; its prompt's size (0 if it states none), the counts
        of it that no token count can be, and what it adds to the summary."""
        if not isinstance(meta, dict):
            return 0, "", ()
        c = {k: number(meta.get(k)) for k in _COUNTS}
        self.calls.append(c)
        return c["promptTokenCount"], wrong_counts(meta, (*_COUNTS, "totalTokenCount"),
                                                   "usageMetadata."), summed(
            input_tokens=c["promptTokenCount"],
            output_tokens=c["candidatesTokenCount"] + c["thoughtsTokenCount"],
            cache_read_tokens=c["cachedContentTokenCount"],
            reasoning_tokens=c["thoughtsTokenCount"])

    def summary(self) -> dict[str, Any]:
        if not self.calls:
            return {}
        return {"source": "usageMetadata of each logged response", "calls": len(self.calls),
                "input_tokens": sum(c["promptTokenCount"] for c in self.calls),
                "output_tokens": sum(c["candidatesTokenCount"] + c["thoughtsTokenCount"]
                                     for c in self.calls),
                "cache_read_tokens": sum(c["cachedContentTokenCount"] for c in self.calls),
                "reasoning_tokens": sum(c["thoughtsTokenCount"] for c in self.calls),
                "last_input_tokens": self.calls[-1]["promptTokenCount"]}


def _model(name: Any) -> str | None:
    return name.removeprefix("models/") if isinstance(name, str) and name else None


class GeminiApiReader:
    """Each line a conversation: the body's system instruction and contents, then the
    reply of a logged response."""

    def __init__(self) -> None:
        self.count = 0
        self.conversations = 0
        self.model: str | None = None
        self.usage = _Usage()
        self.calls: list[RecordedCall] = []

    def feed(self, line: int, record: Any) -> list[Message]:
        body = body_of(record)
        contents = body.get("contents") if body is not None else None
        if body is None or not isinstance(contents, list):
            raise RecordError("not a Gemini API request body: no 'contents' list")
        conversation = self.conversations
        out: list[Message] = []
        links = Links()
        system = body.get("systemInstruction")
        if system is not None:
            parts = _parts(system.get("parts") if isinstance(system, dict) else system)
            if not parts and system:
                raise RecordError("'systemInstruction' is neither text nor a Content of parts")
            out.append(Message("system", tuple(parts), (line,), system,
                               conversation=conversation))
        for i, content in enumerate(contents):
            if not isinstance(content, dict):
                raise RecordError(f"contents[{i}] is {json_kind(content)}, not a Content object")
            out += content_messages(content, line, conversation, links)
        response = record.get("response") if body is not record else None
        model = _model(body.get("model")) or _model(
            response.get("modelVersion") if isinstance(response, dict) else None)
        self.model = model or self.model
        if isinstance(response, dict):
            out += self._reply(line, response, model, len(out), conversation, links)
        self.conversations += 1
        self.count += len(out)
        return out

    def _reply(self, line: int, response: dict[str, Any], model: str | None, before: int,
               conversation: int, links: Links) -> list[Message]:
        """The reply a logged response holds (its first candidate), and its usage as a
        call whose prompt is the request."""
        billed, wrong, added = self.usage.add(response.get("usageMetadata"))
        candidates = response.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        if not isinstance(content, dict):
            return []  # (a prompt the API blocked: usage, but no reply)
        reply = content_messages({**content, "role": "model"}, line, conversation, links)
        reply = [replace(m, raw=content, model=model) for m in reply]
        if billed or wrong:
            self.calls.append(RecordedCall(self.count + before, billed, None, model,
                                           problem=wrong, summed=added))
        return reply

    def finish(self) -> tuple[list[Message], Layout]:
        return [], Layout(list(range(self.count)), model=self.model,
                          usage=self.usage.summary(), calls=self.calls,
                          conversations=max(self.conversations, 1))


class GeminiApiFormat:
    name = "gemini-api"
    default_model = "gemini"  # a body names its model in the URL, not in itself
    description = "Gemini API request bodies ({contents, systemInstruction}), one per line"
    document = True  # one body, indented, as a `curl -d @request.json` example posts it
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return sniff_body(record)

    def doubt(self, record: Any) -> str:
        return doubt(record)

    def one_record(self, value: Any) -> bool:
        return True  # a body on one line is a log of one request

    def reader(self) -> GeminiApiReader:
        return GeminiApiReader()

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
`usageMetadata` the usage of that call (`promptTokenCount`: the prompt it was sent). The
Gemini API's batch output holds no request, only `{"key", "response"}`: such a line is
the reply alone, a conversation of its own whose prompt is not in the file (its usage
still says how large it was). A request that failed has a `status` in place of its
response (the Gemini API's `{"key", "status": {"code", "message"}}`, a google.rpc.Status;
Vertex AI's `"status"`, its error as text, beside the request and an empty response or
none): the line is a failed request only, which validate names and stats lists (see
`failure`): no reply, no usage, and no conversation (its request was not answered).

Keys are read as the REST docs write them or in the snake_case of the Python SDK's
`model_dump()` (and of many `curl` examples): `system_instruction`, `function_call`,
`inline_data`, `usage_metadata`, `prompt_token_count` and the like (see `camel`).

Read for stats, show, validate and convert; compress does not rewrite it (see
`NOT_WRITTEN`).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..jsonl import json_kind
from ..recorded import Summed, null_counts, shown, summed, wrong_counts
from ..transcript import Message, Part, RecordedCall, Text, ToolResult
from .base import NOT_WRITTEN, Layout, RecordError, number, string_field
from .gemini import Links, _parts, linked_parts, refused_part

ROLES = ("user", "model")  # what the API takes (the older `function` role is a user side)
_HEAD = 20  # contents looked at to tell a body


# a user's own data, kept as written: a call's arguments, what a function returned
_OPAQUE = {("functionCall", "args"), ("functionResponse", "response")}
_SNAKE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
# the deepest key read: response.candidates[0].content.parts[j].functionCall.name
_DEPTH = 8


def camel(record: Any) -> Any:
    """A record with the Python SDK's snake_case keys (`function_call`, `inline_data`,
    `usage_metadata`, `system_instruction`: what `model_dump()` writes, and what the REST
    API takes too) as the camelCase ones of the REST docs; what a call or a function's
    response holds is the user's data, kept as it is. A key written both ways keeps the
    camelCase one. What has no snake_case key is the very object it was (so the loader
    finds each Content's place in a document by it), and so is what lies deeper than any
    key ctxpack reads (a stranger's deeply nested value). Most logs are camelCase
    throughout: looking for a snake_case key costs a quarter of renaming none."""
    return _renamed(record) if _snake(record) else record


def _snake(value: Any, key: str = "", depth: int = 0) -> bool:
    """Does `value` hold a snake_case key that `_renamed` would rename?"""
    if depth > _DEPTH:
        return False
    if isinstance(value, list):
        return any(isinstance(v, (dict, list)) and _snake(v, key, depth + 1) for v in value)
    if not isinstance(value, dict):
        return False
    for k, v in value.items():
        if "_" in k and _SNAKE.fullmatch(k):
            return True
        if isinstance(v, (dict, list)) and (key, k) not in _OPAQUE and _snake(v, k, depth + 1):
            return True
    return False


def _renamed(value: Any, key: str = "", depth: int = 0) -> Any:
    if depth > _DEPTH:
        return value
    if isinstance(value, list):
        items = [_renamed(v, key, depth + 1) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        name = re.sub(r"_([a-z0-9])", lambda m: m[1].upper(), k) if _SNAKE.fullmatch(k) else k
        if name != k and name in value:
            continue
        out[name] = v if (key, name) in _OPAQUE else _renamed(v, name, depth + 1)
    same = out.keys() == value.keys() and all(out[k] is value[k] for k in out)
    return value if same else out


def body_of(record: Any) -> dict[str, Any] | None:
    """The request body a record holds: itself, or a batch line's `request` (None for a
    batch output line of its response alone)."""
    if not isinstance(record, dict):
        return None
    request = record.get("request")
    if "contents" not in record and isinstance(request, dict):
        return request
    return None if _reply_only(record) else record


def failure(record: Any) -> str:
    """What a batch output line says of its request's failure ("": none): a `status` with
    no response (or an empty one), the Gemini API's Status object (`code`, `message`) or
    Vertex AI's error text (`""` on a line that succeeded)."""
    if not isinstance(record, dict) or record.get("response") or "contents" in record:
        return ""
    status = record.get("status")
    if isinstance(status, dict):
        code, message = status.get("code"), status.get("message")
        said = [f"code {shown(code)}" if code is not None else "",
                message if isinstance(message, str) else ""]
        why = ": ".join(s for s in said if s) or "no code or message"
    elif isinstance(status, str) and status:
        why = status
    else:
        return ""
    key = record.get("key")
    named = f"request {shown(key)}" if key is not None else "the request"
    return f"{named} failed with no reply ({why[:300]})"


def _reply_only(record: dict[str, Any]) -> bool:
    """A batch output line of a response and no request (the Gemini API's batch output
    holds only each request's `key` and its `response`): a response's candidates or
    usage, and no `contents`."""
    response = record.get("response")
    return "contents" not in record and "request" not in record and isinstance(
        response, dict) and ("candidates" in response or "usageMetadata" in response
                             or "usage_metadata" in response)


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
    none naming a role (taken unsure: see `doubt`), and for a batch output line of a
    response whose candidates hold Contents; else 0."""
    if failure(record) and body_of(record) is record:
        return 1  # a failed request's line alone: of a batch, whose other lines tell it
    if isinstance(record, dict) and _reply_only(record):
        candidates = record["response"].get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        return 2 if isinstance(content, dict) and isinstance(content.get("parts"), list) \
            else 0
    roles = _roles(record)
    return 2 if roles is not None and (roles & set(ROLES) or roles == {None}) else 0


def doubt(record: Any) -> str:
    if (_roles(record) or set()) & set(ROLES) or isinstance(record, dict) and _reply_only(
            record) or failure(record):
        return ""
    return ("read as Gemini API request bodies by their `contents` of `parts`, though no "
            "Content names its role (user or model)")


def refused(read: Message) -> list[str]:
    """What the Gemini API refuses of the Content a message was read from (one of
    `contents`, the system instruction, a reply) besides its calls' pairs (which the reader
    links by name): a role other than user or model (or the older function), no parts or
    parts that are no array, a Part that is no object or that it cannot read."""
    out, content = [], read.raw
    role = content.get("role")
    # (the system instruction's role is not looked at: SDKs send it as "system")
    if read.role != "system" and role is not None and role not in (*ROLES, "function"):
        out.append(f"role {role!r} is not accepted by the Gemini API (user or model)")
    parts = content.get("parts")
    if parts is not None and not isinstance(parts, list):
        return [*out, f"parts is {json_kind(parts)}, not an array of Parts"]
    if not parts:
        return [*out, "no parts (the Gemini API refuses a Content with empty parts)"]
    for i, part in enumerate(parts):
        if not isinstance(part, dict):
            out.append(f"parts[{i}] is {json_kind(part)}, not a Part object")
        else:
            out += [f"parts[{i}]: {problem}" for problem in refused_part(part)]
    return out


def content_messages(content: dict[str, Any], line: int, conversation: int,
                     links: Links) -> list[Message]:
    """The messages one Content puts before the model: a model Content is the assistant's
    turn (its thought parts reasoning); any other holds the tool results, then what the
    user said. A Content with no part the reader knows is an empty message, so that every
    Content has its place (validate names an empty one)."""
    role = string_field(content, "role")
    parts = linked_parts(content.get("parts"), links)
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

    def add(self, meta: Any) -> tuple[int, str, str, Summed]:
        """Keep one response's usage; its prompt's size (0 if it states none), the counts
        of it that no token count can be (a null prompt count among them), the counts of
        its reply written as null (see RecordedCall.unsized), and what it adds to the
        summary."""
        if not isinstance(meta, dict):
            return 0, "", "", ()
        c = {k: number(meta.get(k)) for k in _COUNTS}
        self.calls.append(c)
        return c["promptTokenCount"], wrong_counts(meta, (*_COUNTS, "totalTokenCount"),
                                                   "usageMetadata.", nulls=_COUNTS[:1]), \
            null_counts(meta, _COUNTS[1:2], "usageMetadata."), summed(
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
        self.failed: list[tuple[int, str]] = []  # requests failed: line, what it says

    def feed(self, line: int, record: Any) -> list[Message]:
        record = camel(record)
        body = body_of(record)
        failed = failure(record)
        if failed:  # no reply, and its request (if the line holds it) was not answered
            self.failed.append((line, failed))
            return []
        if body is None and isinstance(record, dict) and _reply_only(record):
            body = {"contents": []}  # the reply alone: its prompt is not in the file
        contents = body.get("contents") if body is not None else None
        if body is None or not isinstance(contents, list):
            raise RecordError("neither a Gemini API request body (no 'contents' list) nor a "
                              "batch line (no 'request' body or 'response' of candidates)")
        conversation = self.conversations
        out: list[Message] = []
        links = Links()
        # each message at its place in the line (a log's line holds a whole conversation)
        at = "" if body is record else "request."
        system = body.get("systemInstruction")
        if system is not None:
            parts = _parts(system.get("parts") if isinstance(system, dict) else system)
            if not parts and system:
                raise RecordError("'systemInstruction' is neither text nor a Content of parts")
            out.append(Message("system", tuple(parts), (line,), system,
                               conversation=conversation, place=f"{at}systemInstruction"))
        for i, content in enumerate(contents):
            if not isinstance(content, dict):
                raise RecordError(f"contents[{i}] is {json_kind(content)}, not a Content object")
            out += [replace(m, place=f"{at}contents[{i}]")
                    for m in content_messages(content, line, conversation, links)]
        response = record.get("response") if body is not record else None  # (a batch line)
        model = _model(body.get("model")) or _model(
            response.get("modelVersion") if isinstance(response, dict) else None)
        self.model = model or self.model
        if isinstance(response, dict):
            out += [replace(m, place="response")
                    for m in self._reply(line, response, model, len(out), conversation, links)]
        self.conversations += 1
        self.count += len(out)
        return out

    def _reply(self, line: int, response: dict[str, Any], model: str | None, before: int,
               conversation: int, links: Links) -> list[Message]:
        """The reply a logged response holds (its first candidate), and its usage as a
        call whose prompt is the request."""
        billed, wrong, unsized, added = self.usage.add(response.get("usageMetadata"))
        candidates = response.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        content = first.get("content") if isinstance(first, dict) else None
        if not isinstance(content, dict):
            return []  # (a prompt the API blocked: usage, but no reply)
        reply = content_messages({**content, "role": "model"}, line, conversation, links)
        reply = [replace(m, raw=content, model=model) for m in reply]
        if billed or wrong:
            self.calls.append(RecordedCall(self.count + before, billed, None, model,
                                           problem=wrong, summed=added, unsized=unsized))
        return reply

    def finish(self) -> tuple[list[Message], Layout]:
        return [], Layout(list(range(self.count)), model=self.model,
                          usage=self.usage.summary(), calls=self.calls,
                          conversations=max(self.conversations, 1), failed=self.failed)


class GeminiApiFormat:
    name = "gemini-api"
    default_model = "gemini"  # a body names its model in the URL, not in itself
    description = "Gemini API request bodies ({contents, systemInstruction}), one per line"
    records_usage = "Gemini API batch"  # (see formats.usage_recorders)
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

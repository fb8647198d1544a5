"""OpenCode sessions as `opencode export` writes them: one JSON document `{info, messages}`.

Each message is `{info, parts}`. A user message's `text` parts are what the person sent;
an assistant message is a model step (it may hold several, each ended by a `step-finish`
part, though the exports seen write one a message): `reasoning` and `text` parts, and
`tool` parts that hold the call (`callID`, `tool`, `state.input`) and its result
(`state.output`, or `state.error` when it failed) together. The model reads the results
as a tool message after the step, so each step with finished tool parts is emitted as two
messages: the step, then its results. Usage is the `step-finish` parts' `tokens` (an
assistant `info.tokens` is the sum of its steps: only the parts are counted); each step
that records them is a recorded call, its prompt the messages before it (the earlier
steps of its message too), and the reasoning tokens of a step whose reasoning the file
holds only encrypted are counted in the prompts that carry it. A compaction is a user
message with a `compaction` part, completed by an assistant message with `summary: true`
whose `parentID` names it and that finished, its `finish` set, and did not fail. After the
newest completed compaction the model sees only that user message and what follows it,
and, where its part names a `tail_start_id` (the recent turns OpenCode keeps), the
messages from that one up to the compaction, sent after the summary (`_after_compaction`);
a call made in that tail was sent the history before it, and is of the usage totals only.
OpenCode sends the model a text of its own for a user message's `compaction` part ("What
did we do so far?") and `subtask` part ("The following tool was executed by the user"):
counted as part of that message, which is not the person's. A part of a type OpenCode
does not write is kept in the file, not read, and named by validate; so is a file of a
user message OpenCode sends as it is (a PDF: ctxpack counts images, not documents), and a
message of no parts (OpenCode sends nothing of it). An assistant message that failed (an
`info.error`) OpenCode leaves out of every later prompt, unless it was aborted after
writing more than reasoning: it is kept in the file, outside the context, and a failed
summary ends no compaction.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace
from typing import Any

from ..jsonl import dumps, item_lines, json_kind
from ..models import keeps_reasoning
from ..recorded import (
    NULL,
    SetAside,
    Summed,
    dollars,
    null_counts,
    shown,
    summed,
    unreadable,
    wrong_costs,
    wrong_counts,
)
from ..transcript import Image, Message, Part, RecordedCall, Text, Thinking, ToolCall, ToolResult
from .base import (
    NOT_WRITTEN,
    Items,
    Layout,
    LineFinder,
    RecordError,
    measure,
    number,
    string_field,
)
from .openai import parse_data_url


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def looks_like_export(value: Any) -> bool:
    """An `opencode export` document: session `info` with a `ses_` id and `messages`."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    info = value.get("info")
    ident = info.get("id") if isinstance(info, dict) else None
    return isinstance(ident, str) and ident.startswith("ses_")  # (no str() of a deep value)


# where a step's or a message's counts are in its `tokens`, in the order they are named
_COUNTS = (("input",), ("output",), ("reasoning",), ("cache", "read"), ("cache", "write"))
_REPLY = (("output",), ("reasoning",))  # the counts of a step's reply, not of its prompt


def _wrong_at(tokens: Any, paths: tuple[tuple[str, ...], ...] = _COUNTS,
              nulls: tuple[tuple[str, ...], ...] = tuple(p for p in _COUNTS if p not in _REPLY)
              ) -> list[tuple[tuple[str, ...], str]]:
    """Each count of a `tokens` object that no token count can be, a null at one of
    `nulls` among them (by default those a step's prompt size rests on): its path in it
    and the problem (`wrong_counts`'s, the path its prefix); an object of counts (`cache`)
    written as null or as no object is named once, its counts unknown."""
    out: list[tuple[tuple[str, ...], str]] = []
    for path in paths:
        holder = tokens
        for k, key in enumerate(path[:-1]):
            value = _dict(holder).get(key, {})
            if not isinstance(value, dict) and path[:k + 1] not in (p for p, _ in out):
                named = "tokens." + ".".join(path[:k + 1])
                out.append((path[:k + 1], f"{named} null {NULL}" if value is None else
                            f"{named} is {json_kind(value)}, not an object of counts"))
            holder = value
        if wrong := wrong_counts(holder, path[-1:], "tokens." + "".join(
                f"{key}." for key in path[:-1]), nulls=path[-1:] if path in nulls else ()):
            out.append((path, wrong))
    return out


def _unsized_at(tokens: Any) -> list[tuple[tuple[str, ...], str]]:
    """Each count of a step's reply its `tokens` writes as null: its path in it and the
    count named (`null_counts`'s): the reply's size is unknown, its prompt's known."""
    held = [(path, *_holder(tokens, path)) for path in _REPLY]
    return [(path, nulls) for path, holder, prefix in held
            if (nulls := null_counts(holder, path[-1:], prefix))]


def _holder(tokens: Any, path: tuple[str, ...]) -> tuple[Any, str]:
    """The object of `tokens` holding the count at `path`, and the prefix naming it."""
    holder = tokens
    for key in path[:-1]:
        holder = _dict(holder).get(key)
    return holder, "tokens." + "".join(f"{key}." for key in path[:-1])


class StepUsage:
    """Tokens of each model step, from `step-finish` parts."""

    def __init__(self) -> None:
        self.steps = 0
        self.input = self.output = self.reasoning = self.read = self.write = 0
        self.last_input: int | None = None
        self.costs: list[float] = []  # each call's, as written

    def add(self, part: dict[str, Any]) -> tuple[int, tuple[str, str], Summed]:
        """Take a step's tokens; its prompt size (what `calls` records), the counts of its
        tokens that no token count can be and its cost where no cost can be, and what it
        added to the summary."""
        tokens = _dict(part.get("tokens"))
        cache = _dict(tokens.get("cache"))
        fresh, read, write = (number(tokens.get("input")), number(cache.get("read")),
                              number(cache.get("write")))
        wrong = ", ".join(w for _, w in _wrong_at(tokens))
        self.steps += 1
        self.input += fresh + read + write
        self.read += read
        self.write += write
        output, reasoning = number(tokens.get("output")), number(tokens.get("reasoning"))
        self.output += output
        self.reasoning += reasoning
        cost = measure(part.get("cost"))
        self.costs.append(cost)
        self.last_input = fresh + read + write
        return self.last_input, (wrong, wrong_costs(part, ("cost",))), summed(
            input_tokens=self.last_input, output_tokens=output, reasoning_tokens=reasoning,
            cache_read_tokens=read, cache_creation_tokens=write, cost_usd=cost)

    def summary(self) -> dict[str, Any]:
        if not self.steps:
            return {}
        usage: dict[str, Any] = {
            "source": "step-finish tokens of each model step",
            "calls": self.steps,
            "input_tokens": self.input,
            "output_tokens": self.output,
            "reasoning_tokens": self.reasoning,
            "cache_read_tokens": self.read,
            "cache_creation_tokens": self.write,
        }
        if self.last_input is not None:
            usage["last_input_tokens"] = self.last_input
        if cost := dollars(self.costs):
            usage["cost_usd"] = cost
        return usage


def _encrypted(part: Any) -> bool:
    """A reasoning part whose text is a summary of what the model is sent back: the
    encrypted reasoning OpenAI's Responses API returns (counted at the step's output)."""
    if not isinstance(part, dict) or part.get("type") != "reasoning":
        return False
    return any(isinstance(_dict(v).get("reasoningEncryptedContent"), str)
               for v in _dict(part.get("metadata")).values())


def _signed(part: Any) -> bool:
    """A reasoning part Anthropic signed: of Claude 4 models, its text is a summary of the
    model's thinking, the whole of which travels encrypted in the signature, and the next
    prompt carries it (the step's recorded output stands for the reply where it is more)."""
    if not isinstance(part, dict) or part.get("type") != "reasoning":
        return False
    return any(isinstance(_dict(v).get("signature"), str)
               for v in _dict(part.get("metadata")).values())


def _result(state: dict[str, Any]) -> ToolResult | None:
    """The result a tool part holds, or None while it has none (pending, running)."""
    status = state.get("status")
    if status == "completed":
        output = state.get("output")
        return ToolResult(None, (Text(output if isinstance(output, str) else
                                      dumps(output).decode("utf-8", "surrogatepass")),))
    if status == "error":
        error = state.get("error")
        return ToolResult(None, (Text(error if isinstance(error, str) else ""),), True)
    return None


# the part types OpenCode writes (packages/opencode/src/session/message-v2.ts, `Part`)
_PART_TYPES = ("agent", "compaction", "file", "patch", "reasoning", "retry", "snapshot",
               "step-finish", "step-start", "subtask", "text", "tool")
# the files of a user message OpenCode does not send as files: their content is in the
# synthetic text parts beside them (message-v2.ts, `toModelMessages`)
_READ_AS_TEXT = ("text/plain", "application/x-directory")
# the text OpenCode sends in place of a user message's part of these types (`toModelMessages`)
_SENT_FOR = {"compaction": "What did we do so far?",
             "subtask": "The following tool was executed by the user"}

Placed = tuple[tuple[str | int, ...], str]  # the path of the value a problem names, it


def _unread(n: int, info: dict[str, Any], parts: list[Any]) -> list[Placed]:
    """What of message `n` OpenCode could not have written, or sends in a form ctxpack does
    not count, and ctxpack would read past without a word: a part that is no object, has
    no type or one OpenCode does not write (kept in the file, not read), a text part
    without its text, a tool part whose input is no object or whose completed output is
    no string, a file of a user message OpenCode sends as it is and not as an image (a
    PDF), a message of no parts (OpenCode sends nothing of it), and the message's own
    `info.tokens` (the sum of its steps) no object (a count in it no count can be, or its
    `cache` no object, is named where it is: see `OpenCodeReader._tokens`); each with the path of
    the value it names."""
    out: list[Placed] = []
    user = info.get("role") == "user"
    if not parts:
        out.append((("messages", n, "parts"), f"messages[{n}] ({string_field(info, 'role')}) "
                                               "has no parts: OpenCode sends nothing of it"))
    for i, p in enumerate(parts):
        at = f"messages[{n}].parts[{i}]"
        path: tuple[str | int, ...] = ("messages", n, "parts", i)
        if not isinstance(p, dict):
            out.append((path, f"{at} is {json_kind(p)}, not an object: left out"))
        elif not isinstance(p.get("type"), str):
            out.append((path, f"{at} has no 'type': left out"))
        elif p["type"] not in _PART_TYPES:
            out.append((path, f"{at} is of type {p['type'][:60]!r}, which OpenCode does not "
                              f"write (it writes {', '.join(_PART_TYPES)}): kept in the "
                              "file, not read"))
        elif p["type"] in ("text", "reasoning") and p.get("text") is None:
            out.append((path, f"{at} ({p['type']}) has no 'text': left out"))
        elif p["type"] == "file" and user and not _image(p) \
                and p.get("mime") not in _READ_AS_TEXT:
            out.append((path, f"{at} (file {shown(p.get('mime'))}): a file OpenCode "
                              "sends the model as it is, not an image: not counted"))
        elif p["type"] == "tool":
            state = p.get("state")
            if not isinstance(state, dict):
                out.append((path, f"{at} (tool): 'state' is {json_kind(state)}, not an "
                                  "object"))
                continue
            if "input" in state and not isinstance(state["input"], dict):
                out.append((path, f"{at} (tool): 'state.input' is "
                                  f"{json_kind(state['input'])}, not an object"))
            if state.get("status") == "completed" and not isinstance(state.get("output"), str):
                out.append((path, f"{at} (tool): completed, its 'state.output' is "
                                  f"{json_kind(state.get('output'))}, not a string"))
    tokens = info.get("tokens")
    where: tuple[str | int, ...] = ("messages", n, "info", "tokens")
    if tokens is not None and not isinstance(tokens, dict):
        out.append((where, f"messages[{n}].info.tokens is {json_kind(tokens)}, not an "
                           "object"))
    return out


def _truthy(value: Any) -> bool:
    """Is a field set, as OpenCode's JavaScript tells (null, false, 0 and "" are not)?"""
    return not (value is None or value is False or value == 0 or value == "")


def _failed(info: dict[str, Any]) -> bool:
    """Has an assistant message an `error`?"""
    return _truthy(info.get("error"))


def _sent_back(info: dict[str, Any], parts: list[Any]) -> bool:
    """Does OpenCode put an assistant message into the prompts after it? Not one that
    failed, unless it was aborted once it had written more than its step's start and
    reasoning."""
    error = info.get("error")
    return not _failed(info) or isinstance(error, dict) \
        and error.get("name") == "MessageAbortedError" and any(
            isinstance(p, dict) and p.get("type") not in ("step-start", "reasoning")
            for p in parts)


def _compaction(parts: list[Any], tailed: bool = False) -> dict[str, Any] | None:
    """A message's first `compaction` part (`tailed`: the first that has a `tail_start_id`
    field, null or not), if it has one."""
    return next((p for p in parts if isinstance(p, dict) and p.get("type") == "compaction"
                 and (not tailed or "tail_start_id" in p)), None)


def _cut(messages: list[dict[str, Any]], parts: list[list[Any]]) -> tuple[int, int | None]:
    """Where OpenCode cuts the history of the document's messages (their `info`, their
    `parts`): the number of the first it keeps, and of the compaction's message (None: it
    cuts none). As `filterCompacted` (session/message-v2.ts) reads them, newest first: a
    summary that finished without error completes the compaction its `parentID` names
    (naming a message of no `compaction` part, it completes none); the newest completed
    compaction cuts at its message or, where its part names a `tail_start_id`, at that
    message (nowhere, if no message has that id)."""
    completed: set[str] = set()  # (a parentID that is no string names no message)
    retain: Any = None
    cut: int | None = None
    for n in reversed(range(len(messages))):
        info = messages[n]
        if retain is not None:
            if info.get("id") == retain:
                return n, cut
            continue
        compaction = _compaction(parts[n]) if info.get("role") == "user" else None
        if compaction is not None and info.get("id") in completed:
            cut, tail = n, compaction.get("tail_start_id")
            if not _truthy(tail) or info.get("id") == tail:
                return n, n
            retain = tail
        elif info.get("role") == "assistant" and _truthy(info.get("summary")) \
                and _truthy(info.get("finish")) and not _failed(info) \
                and isinstance(info.get("parentID"), str):
            completed.add(info["parentID"])
    return 0, None


def _after_compaction(messages: list[dict[str, Any]], parts: list[list[Any]]
                      ) -> tuple[list[int], int | None]:
    """The numbers of the document's messages OpenCode sends the model, in the order it
    sends them, and that of the compaction's message the history is cut at (`_cut`). Of
    those kept, the newest compaction whose part has a `tail_start_id` field, its tail and
    a summary of it (by `parentID` alone, finished or not: `filterCompacted` again) kept,
    is sent with its summary first, then its tail, then what follows; what was kept
    before its tail is left out."""
    first, cut = _cut(messages, parts)
    kept = list(range(first, len(messages)))
    for at in reversed(range(len(kept))):
        part = _compaction(parts[kept[at]], tailed=True) \
            if messages[kept[at]].get("role") == "user" else None
        if part is not None:
            break
    else:
        return kept, cut
    compaction, tail = messages[kept[at]].get("id"), part["tail_start_id"]
    start = next((k for k, n in enumerate(kept) if messages[n].get("id") == tail), -1) \
        if _truthy(tail) else -1
    summary = next((k for k in range(at + 1, len(kept)) if messages[kept[k]].get("role")
                    == "assistant" and _truthy(messages[kept[k]].get("summary"))
                    and messages[kept[k]].get("parentID") == compaction), -1)
    if 0 <= start < at < summary:
        return [*kept[at:summary + 1], *kept[start:at], *kept[summary + 1:]], cut
    return kept, cut


def _image(part: dict[str, Any]) -> bool:
    """A file part that is an image (its `mime`), which the model is sent as one."""
    return str(part.get("mime", "")).startswith("image/")


class OpenCodeReader:
    def __init__(self) -> None:
        self.count = 0
        self.sent: list[int] = []  # the messages OpenCode sends, in the order it sends them
        self.cut: int | None = None  # the compaction's message, where one cuts the history
        self.model: str | None = None
        self.usage = StepUsage()
        self.calls: list[RecordedCall] = []  # their `prompt` the number of the step's message
        self.unread: list[SetAside] = []  # step-finish usage that cannot be read
        self.users: list[int] = []  # the numbers of user messages
        self.failed: set[int] = set()  # the numbers of replies OpenCode does not send back
        self.finder: LineFinder | None = None
        self.data: tuple[bytes, int] | None = None  # the document's bytes, its first line
        self.items = Items("message {}")
        # (see Layout.problems) each with the path of the value it names, placed at that
        # value's line once the document is read, else at `line`, its message's
        self.problems: list[tuple[tuple[str | int, ...], int, str]] = []

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the document's bytes: each message is at the line of its `id`."""
        self.finder = LineFinder(data, first)
        self.data = (data, first)

    def _line(self, info: dict[str, Any], line: int) -> int:
        ident = info.get("id")
        if self.finder is None or not isinstance(ident, str):
            return line
        found = self.finder.find(re.compile(rb'"id"\s*:\s*"' + re.escape(ident.encode(
            "utf-8", "surrogatepass")) + rb'"'))
        return line if found is None else found

    def _value_line(self, path: tuple[str | int, ...]) -> int:
        """The line the value at `path` is written on (0: the document is one line)."""
        return item_lines(*self.data, [path]).get(path, 0) if self.data is not None else 0

    def _tokens(self, n: int, info: dict[str, Any]) -> list[Placed]:
        """Each count of message `n`'s own `info.tokens` (the sum of its steps) that no
        token count can be, named by its path, with that path."""
        return [(("messages", n, "info", "tokens", *path),
                 f"messages[{n}].info.{wrong}: not used (the step-finish parts' counts are)")
                for path, wrong in _wrong_at(info.get("tokens"), (("total",), *_COUNTS),
                                             (("total",), *_COUNTS))]

    def feed(self, line: int, record: Any) -> list[Message]:
        if not looks_like_export(record):
            raise RecordError("not an opencode export: no session 'info' with a 'ses_' id "
                              "and 'messages' list")
        session = _dict(record.get("info"))
        self.model = string_field(_dict(session.get("model")), "id") or self.model
        out: list[Message] = []
        infos: list[dict[str, Any]] = []
        held: list[list[Any]] = []  # their parts
        spans: list[range] = []  # the numbers of the messages each of the document's gives
        for n, item in self.items.each(record["messages"], "messages"):
            if not isinstance(item, dict) or not isinstance(item.get("info"), dict):
                raise RecordError(f"message {n} is {json_kind(item)} without an 'info' object",
                                  at=("messages", n))
            info, parts = item["info"], item.get("parts")
            if not isinstance(parts, list):
                raise RecordError(f"message {n} has 'parts' that is {json_kind(parts)}",
                                  at=("messages", n))
            role = string_field(info, "role")
            at = self._line(info, line)
            self.problems += [(path, at, problem) for path, problem in
                              [*_unread(n, info, parts), *self._tokens(n, info)]]
            for i, p in enumerate(parts):
                if isinstance(p, dict) and p.get("type") in ("text", "reasoning") \
                        and p.get("text") is not None and not isinstance(p["text"], str):
                    # read past, the message would be lost without a word
                    raise RecordError(f"message {n} part {i} ({p['type']}): 'text' is "
                                      f"{json_kind(p['text'])}, not a string", at)
            infos.append(info)
            held.append(parts)
            begin = self.count + len(out)
            if role == "user":
                said = self._user(at, info, parts)
                self.users += [self.count + len(out)] if said else []
                out += said
            elif role == "assistant":
                made = self._assistant(at, info, parts, self.count + len(out), n)
                if not _sent_back(info, parts):
                    self.failed.update(range(self.count + len(out),
                                             self.count + len(out) + len(made)))
                out += made
            else:
                raise RecordError(f"message {n} has role {role!r}, not 'user' or 'assistant'",
                                  at=("messages", n))
            spans.append(range(begin, self.count + len(out)))
        order, cut = _after_compaction(infos, held)
        self.sent += [k for n in order for k in spans[n]]
        self.cut = spans[cut].start if cut is not None else self.cut
        self.count += len(out)
        return out

    def _user(self, line: int, info: dict[str, Any], parts: list[Any]) -> list[Message]:
        out: list[Part] = []
        for p in parts:
            if not isinstance(p, dict):
                continue
            if p.get("type") == "text" and isinstance(p.get("text"), str) \
                    and p.get("ignored") is not True:
                out.append(Text(p["text"]))
            elif p.get("type") in _SENT_FOR:
                out.append(Text(_SENT_FOR[p["type"]]))
            elif p.get("type") == "file" and _image(p):
                # an attached image goes to the model; a text file's content is in the
                # synthetic text parts OpenCode adds beside it
                image = parse_data_url(p["url"] if isinstance(p.get("url"), str) else "")
                out.append(Image(image.media_type or p["mime"], image.data, image.url))
        if not out:
            return []
        synthetic = all(p.get("synthetic") is True for p in parts
                        if isinstance(p, dict) and p.get("type") == "text")
        return [Message("user", tuple(out), (line,), info, id=string_field(info, "id"),
                        human=not synthetic)]

    def _assistant(self, line: int, info: dict[str, Any], parts: list[Any],
                   place: int, index: int) -> list[Message]:
        """Message `index` of the document, an assistant's (`place`: the number of the
        first message it gives). Each of its steps, the parts up to a `step-finish`, is a
        call of the model, whose prompt held what came before it, the earlier steps' results
        too: each is given as its reply and then the results of its finished tool parts, and
        its `step-finish` usage is that call's (the exports seen write one step a message;
        where one holds several, its first step's usage does not stand for the others)."""
        model = string_field(info, "modelID")
        self.model = model or self.model
        msg_id = string_field(info, "id")
        messages: list[Message] = []
        out: list[Part] = []
        results: list[ToolResult] = []
        step: list[Any] = []  # the parts of the step so far

        def flush(out: list[Part], results: list[ToolResult]) -> None:
            """A step's reply, then its results."""
            if out:
                messages.append(Message("assistant", tuple(out), (line,), info, id=msg_id,
                                        model=model))
            if out and results:
                messages.append(Message("tool", tuple(results), (line,), info, id=msg_id))

        for i, p in enumerate(parts):
            if not isinstance(p, dict):
                continue
            step.append(p)
            kind = p.get("type")
            if kind == "text" and isinstance(p.get("text"), str):
                out.append(Text(p["text"]))
            elif kind == "reasoning" and isinstance(p.get("text"), str):
                out.append(Thinking(p["text"]))
            elif kind == "tool":
                call_id = string_field(p, "callID")
                state = _dict(p.get("state"))
                out.append(ToolCall(call_id, string_field(p, "tool") or "",
                                    dumps(state.get("input") or {}).decode("utf-8",
                                                                            "surrogatepass")))
                result = _result(state)
                if result is not None:
                    results.append(ToolResult(call_id, result.parts, result.is_error))
            elif kind == "step-finish" and not isinstance(p.get("tokens"), dict | None):
                # usage that cannot be read: named, and no call of the usage totals
                where = f"messages[{index}].parts[{i}]"
                self.unread.append(unreadable(line, f"'tokens' is {json_kind(p['tokens'])}, "
                                              "not an object",
                                              where, self._value_line(
                                                  ("messages", index, "parts", i, "tokens"))))
                flush(out, results)
                out, results, step = [], [], []
            elif kind == "step-finish" and p.get("tokens") is None:
                # no usage recorded (older OpenCode wrote none): no call, of the usage
                # totals or of the bill
                flush(out, results)
                out, results, step = [], [], []
            elif kind == "step-finish":
                prompt, wrong, share = self.usage.add(p)
                # (a prompt of 0 with a reply: judged too)
                if out and (prompt or dict(share)["output_tokens"] or any(wrong)):
                    self.calls.append(self._call(p, index, i, step, model, prompt, wrong,
                                                 share, place + len(messages)))
                flush(out, results)
                out, results, step = [], [], []
        flush(out, results)  # parts after the last step's end (an aborted step's)
        return messages

    def _call(self, finish: dict[str, Any], index: int, i: int, step: list[Any],
              model: str | None, prompt: int, wrong: tuple[str, str], share: Summed,
              reply: int) -> RecordedCall:
        """The call of a step of message `index` whose `step-finish` is its part `i`: its
        prompt size, what no count or cost can be of it (`wrong`, named at the first such
        value: its line, where the document has lines of its own), its share of the
        summary; `reply`, the number of the message it gave."""
        counts = dict(share)
        where, at = "", 0
        unsized = _unsized_at(finish.get("tokens"))
        if any(wrong) or unsized:
            # (its counts named before its cost; a null of its reply, where nothing is wrong)
            first = _wrong_at(finish.get("tokens")) if any(wrong) else unsized
            where = f"messages[{index}].parts[{i}]"
            at = self._value_line(("messages", index, "parts", i,
                                   *(("tokens", *first[0][0]) if first else ("cost",))))
        return RecordedCall(reply, prompt, counts["output_tokens"] or None,
                            model or self.model, hidden=any(map(_signed, step)),
                            reasoning=counts["reasoning_tokens"] if any(map(_encrypted, step))
                            else 0, problem=wrong[0], costs=wrong[1], at=at, place=where,
                            summed=share, unsized=", ".join(n for _, n in unsized))

    def finish(self) -> tuple[list[Message], Layout]:
        # reasoning held encrypted is sent back for good, or (older models) until the next
        # user message (see models.keeps_reasoning)
        context = [n for n in self.sent if n not in self.failed]
        at = {n: k for k, n in enumerate(context)}
        users = sorted(at[n] for n in self.users if n in at)
        # a call whose reply is not in the context (before a compaction, or failed) is of
        # the usage summary only; so is one of the tail kept before the compaction, whose
        # prompt held the history the compaction took out
        calls = [replace(c, prompt=at[c.prompt], until=None if keeps_reasoning(c.model) or (
                     after := bisect.bisect_right(users, at[c.prompt])) == len(users)
                     else users[after])
                 for c in self.calls
                 if c.prompt in at and (self.cut is None or c.prompt > self.cut)]
        why = [*(["before a compaction"] if len(self.sent) < self.count else []),
               *(["a reply that failed, which OpenCode does not send again"]
                 if self.failed else [])]
        return [], Layout(context, model=self.model, outside_why="; ".join(why),
                          usage=self.usage.summary(), calls=calls, problems=self._placed(),
                          set_aside=self.unread)

    def _placed(self) -> list[tuple[int, str]]:
        """The problems, each at the line of the value it names (one walk over the
        document), or its message's where the document is one line."""
        lines = item_lines(*self.data, [path for path, _, _ in self.problems]) \
            if self.data is not None else {}
        return [(lines.get(path) or line, problem) for path, line, problem in self.problems]


class OpenCodeFormat:
    name = "opencode"
    description = "an OpenCode session as `opencode export` writes it (JSON)"
    records_usage = "OpenCode"  # (see formats.usage_recorders)
    holds_no_message = "the session holds no message with text, a call or an image"
    document = True  # the whole file is one JSON value
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return 3 if looks_like_export(record) else 0  # the `ses_` id is its mark

    def reader(self) -> OpenCodeReader:
        return OpenCodeReader()

"""OpenAI Codex CLI rollout files: one `{timestamp, type, payload}` item per line.

Only `response_item` payloads, the items of a `compacted` line and the
`session_meta` instructions are model input; the rest is UI and telemetry. The
context is the newest system prompt plus whatever follows the last `compacted`
line. Usage comes from the `token_count` events (each call's own `last_token_usage`),
the model from `turn_context`, the window the agent gave the model from the
`model_context_window` of a `token_count`'s info, else of the turn's `task_started` event
(or a `turn_context`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..jsonl import dumps, json_kind
from ..models import keeps_reasoning
from ..recorded import (
    CALL_BOUND,
    RUN_BOUND,
    RUN_MOST,
    SetAside,
    Summed,
    held,
    miscounted,
    most_for,
    no_output,
    no_prompt_size,
    null_counts,
    recorded_window,
    shown,
    summed,
    unbelievable,
    unreadable,
    wrong_counts,
)
from ..transcript import (
    META_KEY,
    Image,
    Message,
    Part,
    RecordedCall,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from .agent_text import persons
from .base import (
    Compaction,
    Layout,
    RecordError,
    Sessions,
    content_parts,
    marks,
    number,
    one_session,
    string_field,
)
from .openai import parse_data_url

_SURE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_DETAILS = {"low", "high", "auto", "original"}
_OPAQUE = {"reasoning", "compaction", "compaction_summary"}  # items with encrypted_content
_USAGE_SOURCE = "codex token_count events (each call's own usage)"
# the summary's keys of the totals, and their fields in a call's usage
_TOTALS = (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
           ("cache_read_tokens", "cached_input_tokens"),
           ("reasoning_tokens", "reasoning_output_tokens"))
# the counts of a call's `last_token_usage`, and of the running `total_token_usage`
_CALL_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens",
                "reasoning_output_tokens", "total_tokens")
# those of them counting the reply (the prompt's size is known without them)
_REPLY_FIELDS = _CALL_FIELDS[2:]
# what stands for a `model_context_window` that is not the model's: the window recorded
# before it that is (a later one that is takes over), else the table's
_STANDS = "the window recorded before it that is the model's stands, else the table's"
_USAGES = ("last_token_usage", "total_token_usage")
# the bound of each (a call's prompt and reply are held to its model's by
# ctxpack.recorded), and the part of each count that another holds: cached input is input,
# reasoning is output (the Responses API counts it in `output_tokens`)
_BOUNDS = {"last_token_usage": CALL_BOUND, "total_token_usage": RUN_BOUND}
_PARTS = (("cached_input_tokens", "input_tokens"), ("reasoning_output_tokens", "output_tokens"))


def _json(value: Any) -> str:
    return dumps(value).decode("utf-8", "surrogatepass")


def _image(item: dict[str, Any]) -> Image | None:
    url = item.get("image_url")
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str) or not url:
        return None
    img = parse_data_url(url)
    detail = item.get("detail")
    detail = detail if isinstance(detail, str) and detail in _DETAILS else None
    return Image(img.media_type, img.data, img.url, detail)


def _item_part(item: dict[str, Any]) -> Text | Image | None:
    if item.get("type") == "input_image":
        return _image(item)
    return Text(item["text"]) if isinstance(item.get("text"), str) else None


def _content_parts(content: Any) -> list[Text | Image]:
    """Parts of a `content` / `output` value: a string, an item, or a list of items."""
    typed_item = isinstance(content, dict) and "type" in content
    return content_parts([content] if typed_item else content, _item_part)


def _readable(item: Any) -> bool:
    if isinstance(item, dict):
        return isinstance(item.get("text"), str) or item.get("type") == "input_image"
    return isinstance(item, str)


class _Content(NamedTuple):
    """What one item puts in the model's context; `item_message` adds where it came from."""

    role: str
    parts: tuple[Part, ...]
    human: bool = False
    name: str | None = None


def _message(item: dict[str, Any]) -> _Content | None:
    role = item.get("role")
    if not isinstance(role, str):
        return None
    parts = _content_parts(item.get("content"))
    return _Content(role, tuple(parts), role == "user" and persons(parts))


def _agent_message(item: dict[str, Any]) -> _Content:
    # Another agent of a multi-agent run speaking: input to this one, never a person.
    author = item.get("author") if isinstance(item.get("author"), str) else None
    return _Content("user", tuple(_content_parts(item.get("content"))), name=author)


def _reasoning(item: dict[str, Any]) -> _Content | None:
    texts = [p.text for p in _content_parts(item.get("summary"))
             + _content_parts(item.get("content")) if isinstance(p, Text) and p.text]
    if not texts:
        return None  # encrypted only: nothing readable to count or show
    return _Content("assistant", (Thinking("\n\n".join(texts)),))


def _call(item: dict[str, Any], name: str | None, arguments: Any) -> _Content:
    if not isinstance(arguments, str):
        arguments = "" if arguments is None else _json(arguments)
    return _Content("assistant", (ToolCall(string_field(item, "call_id"), name or "",
                                           arguments),))


def _web_search(item: dict[str, Any]) -> _Content:
    # Searched and answered inside the API: no output item follows, so not a ToolCall.
    action = item.get("action") if isinstance(item.get("action"), dict) else {}
    queries = action.get("queries") if isinstance(action.get("queries"), list) else []
    what = action.get("query") or "; ".join(q for q in queries if isinstance(q, str))
    if not isinstance(what, str) or not what:
        what = _json({k: v for k, v in action.items() if v is not None})
    return _Content("assistant", (Text(f"web_search: {what}"),))


def _image_generation(item: dict[str, Any]) -> _Content:
    # Like web search, the result travels in the call item itself.
    prompt = item.get("revised_prompt")
    parts: list[Part] = [Text(f"image_generation: {prompt if isinstance(prompt, str) else ''}")]
    result = item.get("result")
    if isinstance(result, str) and result:
        parts.append(Image("image/png", data=result))
    return _Content("assistant", tuple(parts))


def _output(item: dict[str, Any]) -> _Content:
    value = item.get("output")
    if value is None:
        value = item.get("tools")  # tool_search_output lists the tools it found
    error = False
    if isinstance(value, dict) and "content" in value:  # older {content, success} payloads
        error = value.get("success") is False
        value = value["content"]
    items = [value] if isinstance(value, dict) else value
    if isinstance(items, list) and items and not any(map(_readable, items)):
        value = _json(value)  # plain data, not content items: keep all of it
    return _Content("tool", (ToolResult(string_field(item, "call_id"),
                                        tuple(_content_parts(value)), error),))


_CONVERTERS: dict[str, Callable[[dict[str, Any]], _Content | None]] = {
    "message": _message,
    "agent_message": _agent_message,
    "reasoning": _reasoning,
    "function_call": lambda i: _call(i, string_field(i, "name"), i.get("arguments")),
    "custom_tool_call": lambda i: _call(i, string_field(i, "name"), i.get("input")),
    "local_shell_call": lambda i: _call(i, "local_shell", i.get("action")),
    "tool_search_call": lambda i: _call(i, "tool_search", i.get("arguments")),
    "web_search_call": _web_search,
    "image_generation_call": _image_generation,
    "function_call_output": _output,
    "custom_tool_call_output": _output,
    "tool_search_output": _output,
}


def item_message(item: dict[str, Any], line: int, raw: Any = None,
                 model: str | None = None) -> Message | None:
    """Convert one Responses API item into a message; None for items the model never reads.
    `model` is the model that wrote it, if it is an assistant's."""
    convert = _CONVERTERS.get(string_field(item, "type") or "")
    content = convert(item) if convert else None
    if content is None:
        return None
    role = content.role
    return Message(role, content.parts, (line,), item if raw is None else raw,
                   id=item.get("id") if isinstance(item.get("id"), str) else None,
                   name=content.name, model=model if role == "assistant" else None,
                   human=content.human)


def _instructions(meta: dict[str, Any]) -> str | None:
    base = meta.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else base
    if not isinstance(text, str) or not text:
        text = meta.get("instructions")
    return text if isinstance(text, str) and text else None


@dataclass(slots=True)
class _Told:
    """A call as a `token_count` event tells of it: its prompt size, output, reasoning
    tokens, the counts of its usage no token count can be (`wrong`) and their line, what
    it adds to the running totals, and the window recorded for its model."""

    billed: int
    output: int | None
    reasoning: int
    wrong: str
    at: int
    added: Summed
    window: Any = None  # (as written: see `CodexReader._windows`)
    again: str = ""  # the event told again with other usage, as `RecordedCall.again`
    # of an event written after a compaction with no reply since (the CLI states the
    # context the compaction left so, as compress does): that size, its `total_tokens`
    left: int | None = None


class CodexReader:
    """Keeps numbers of the current context window and the last usage values only."""

    def __init__(self) -> None:
        self.count = 0
        self.system: int | None = None
        self.system_text = ""  # the prompt `system` states
        self.restated: dict[int, int] = {}  # (see Layout.restated)
        self.window: list[int] = []
        self.said: list[Message] = []  # the message of each number in `window`
        self.turn_model: str | None = None  # the newest `turn_context`'s
        self.meta_model: str | None = None
        self.totals: dict[str, Any] | None = None  # the running totals, as the file has them
        self.summed: dict[str, int] = {}  # the summary's totals: each call's share added
        self.last_call: dict[str, Any] | None = None
        self.context_window: Any = None  # the newest window recorded, as written
        # each window recorded (by `shown`), the first line it is on and the value
        self.windows: dict[str, tuple[int, Any]] = {}
        self.unread: list[SetAside] = []  # a token_count whose info is no object
        self.nulls: list[tuple[int, str]] = []  # a call's usage with null counts, at its line
        self.calls = 0
        self._previous: tuple[Any, Any] | None = None
        self.encrypted_items = 0
        self.encrypted_chars = 0
        self.reply: tuple[int, str | None] | None = None  # the first reply since the last call
        self.replying = False  # the newest message is the model's (a reply under way)
        self.streamed = False  # the model's output was shown since the newest item was written
        self.users: set[int] = set()  # the numbers of user messages
        # a call told of before its reply is written (older CLIs)
        self.ahead: _Told | None = None
        # each call's reply (its number, model) and what was told of the call
        self.recorded: list[tuple[int, str | None, _Told]] = []
        self.told: _Told | None = None  # the newest call told of
        self.every: list[tuple[_Told, str | None]] = []  # each call told of, and its model
        # the context the newest compaction replaced that calls were made on, and whether
        # reasoning was sent encrypted in it: those calls measured what is sent besides
        # the messages until one is made after it (see calibration.bill)
        self.earlier: list[int] = []
        # the contexts before older compactions that had calls, oldest first, and whether
        # reasoning was sent encrypted in each (as `earlier` and `earlier_encrypted`)
        self.older: list[tuple[list[int], bool]] = []
        self.earlier_encrypted = False
        self.compacted = False  # no reply since the newest compaction

    def feed(self, line: int, record: dict[str, Any]) -> list[Message]:
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(kind, str) or "payload" not in record:
            raise RecordError("no 'type' and 'payload' envelope")
        if not isinstance(payload, dict):
            return []
        if kind == "response_item":
            self.streamed = False
            self._note_encrypted(payload)
            return self._emit([item_message(payload, line, record, self.model)])
        if kind == "compacted":
            return self._compacted(line, record, payload)
        if kind == "session_meta":
            return self._session_meta(line, record, payload)
        if kind == "turn_context" and isinstance(payload.get("model"), str):
            self.turn_model = payload["model"]
            self._window(line, payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            self._token_count(line, payload.get("info"))
        elif kind == "event_msg" and payload.get("type") == "task_started":
            # (a turn's start names the window too: the calls of the turn are told of
            # under it where their own token_count names none)
            self._window(line, payload)
        elif kind == "event_msg" and payload.get("type") in ("agent_reasoning", "agent_message"):
            self.streamed = True
        return []

    @property
    def model(self) -> str | None:
        """The model assistant messages read now were written by."""
        return self.turn_model or self.meta_model

    def _emit(self, messages: list[Message | None]) -> list[Message]:
        out = [m for m in messages if m is not None]
        for m in out:
            if self.reply is None and m.role == "assistant":
                self.reply = (self.count, m.model)
                self.compacted = False
                if self.ahead is not None:  # the reply of the call told of before it
                    self.recorded.append((*self.reply, self.ahead))
                    self.ahead = None
            self.replying = m.role == "assistant"
            if m.role == "user":
                self.users.add(self.count)
            self.window.append(self.count)
            self.said.append(m)
            self.count += 1
        return out

    def _note_encrypted(self, item: dict[str, Any]) -> None:
        kind, secret = item.get("type"), item.get("encrypted_content")
        if isinstance(kind, str) and kind in _OPAQUE and isinstance(secret, str) and secret:
            self.encrypted_items += 1
            self.encrypted_chars += len(secret)

    def _session_meta(self, line: int, record: dict[str, Any],
                      meta: dict[str, Any]) -> list[Message]:
        if isinstance(meta.get("model"), str):
            self.meta_model = meta["model"]
        text = _instructions(meta)
        if text is None:
            return []
        # A resumed or forked session states its prompt again; only the newest one counts,
        # and one it states alike is the older one again
        if self.system is not None and text == self.system_text:
            self.restated[self.count] = self.restated.get(self.system, self.system)
        self.system, self.system_text = self.count, text
        self.count += 1
        return [Message("system", (Text(text),), (line,), record)]

    def _compacted(self, line: int, record: dict[str, Any],
                   payload: dict[str, Any]) -> list[Message]:
        replies = {n for n, _, _ in self.recorded}
        if any(n in replies for n in self.window):  # (else the one before stands)
            if self.earlier:  # (made older by this compaction: calibrate still fits it)
                self.older.append((self.earlier, self.earlier_encrypted))
            self.earlier = ([] if self.system is None else [self.system]) + self.window
            self.earlier_encrypted = bool(self.encrypted_items)
        replaced = list(zip(self.window, self.said, strict=True))
        self.window, self.said = [], []
        self.reply = self.ahead = None
        self.compacted = True
        self.encrypted_items = self.encrypted_chars = 0
        history = payload.get("replacement_history")
        if isinstance(history, list) and history:
            items = [i for i in history if isinstance(i, dict)]
            for item in items:
                self._note_encrypted(item)
            model = self.model
            first = self.count
            kept = self._emit([item_message(item, line, model=model) for item in items])
            self._restates(replaced, list(enumerate(kept, first)))
            return kept
        summary = payload.get("message")
        if isinstance(summary, str) and summary:
            return self._emit([Message("user", (Text(summary),), (line,), record)])
        return []

    def _restates(self, replaced: list[tuple[int, Message]],
                  kept: list[tuple[int, Message]]) -> None:
        """Note the messages a compaction `kept` (numbered) that state again one of those
        it `replaced`: the CLI keeps them in their order, so each is the next alike."""
        at = 0
        for n, m in kept:
            same = next((k for k in range(at, len(replaced)) if _alike(replaced[k][1], m)),
                        None)
            if same is not None:
                earlier = replaced[same][0]
                self.restated[n] = self.restated.get(earlier, earlier)
                at = same + 1

    def _token_count(self, line: int, info: Any) -> None:
        if not isinstance(info, dict):
            if info is not None:  # (null: a rate-limit-only update)
                self.unread.append(unreadable(line, f"the token_count's info is "
                                                    f"{json_kind(info)}, not an object"))
            return
        self._window(line, info)
        total, last = _numbers(info.get("total_token_usage")), _numbers(
            info.get("last_token_usage"))
        wrong = ", ".join(w for w in (_wrong(info.get(k), k) for k in _USAGES) if w)
        # The CLI re-emits the same values several times a turn; a change marks a new call
        # (a count no token count can be is none, and marks nothing), but for an event
        # written again with other values: its call's usage with a running total that did
        # not rise by it, or a running total that did not rise (see `_other`)
        restated = _restated(self._previous, (total, last))
        other = "" if restated else _other(self._previous, (total, last))
        if not restated and not other:
            self.calls += 1
            self._previous = (total, last)
            # a new call: its prompt ended where the first reply since the last one began.
            # Older CLIs (0.60) write the event after the reply was shown but before its
            # items (after the last call's results): then its reply is the next to begin.
            usage = last if isinstance(last, dict) else {}
            billed, output = usage.get("input_tokens"), usage.get("output_tokens")
            output = None if output is None else number(output)
            reasoning = number(usage.get("reasoning_output_tokens"))
            # what the call adds to the summary's totals: its own usage, so that a call set
            # aside is taken back out whatever its running total says (a value no count
            # can be, one going backwards); the rise of the running total only where the
            # event records no usage of the call alone
            added = summed(**_share(last, total, self.totals))
            for key, amount in added:
                self.summed[key] = self.summed.get(key, 0) + amount
            call = self.told = _Told(number(billed), output, reasoning, wrong, line, added,
                                     self.context_window)
            self.every.append((call, self.model))
            self.ahead = None
            # (worded as every format words them: a null prompt count leaves the call out,
            # a null count of the reply leaves only its size unknown; the cached input is
            # part of the input, so a null of it alone leaves the prompt size known)
            named = "last_token_usage."
            if billed is None and (nulls := null_counts(last, _CALL_FIELDS, named)):
                self.nulls.append((line, no_prompt_size(nulls)))
            elif nulls := null_counts(last, _REPLY_FIELDS, named):
                self.nulls.append((line, no_output(nulls)))
            if billed is not None and (nulls := null_counts(last, _CALL_FIELDS[1:2], named)):
                self.nulls.append((line, f"recorded usage with no count: {nulls} (a null is "
                                         "no count); the prompt size is known"))
            if billed is None and not wrong:
                pass  # a call that records no prompt size
            elif self.streamed and not self.replying:
                self.ahead = call
            elif self.reply is not None:
                self.recorded.append((*self.reply, call))
            elif self.compacted and isinstance(last, dict):
                # no reply since a compaction: the size of the context it left, a prompt
                # of every message so far (the place of the next)
                call.left = number(last.get("total_tokens")) or None
                if call.left is not None:
                    self.recorded.append((self.count, self.model, call))
            self.reply = None
        elif self.told is not None and not (self.told.wrong or self.told.again) and (
                wrong or other):
            # the call's usage told again, with a count no token count can be or with other
            # values than it was: the call is set aside (not counted twice), named where
            # it says so
            if not wrong:
                self.told.again = (f"the token_count event of line {self.told.at:,} is "
                                   f"written again here with other usage ({other}), where "
                                   f"Codex writes one call's event twice alike")
            self.told.wrong, self.told.at = wrong, line
        if isinstance(total, dict):
            # a running total no token count can be leaves the one before it standing
            self.totals = {**total, **{k: v for k, v in (self.totals or {}).items()
                                       if k in _CALL_FIELDS and miscounted(total.get(k),
                                                                           RUN_MOST)}}
        if isinstance(last, dict):
            self.last_call = last

    def _window(self, line: int, record: dict[str, Any]) -> None:
        """Note the model's window where `record` (a `turn_context`, a `task_started` event,
        a `token_count`'s info, at `line`) names it, as written (judged once the file is
        read: `_windows`)."""
        value = record.get("model_context_window")
        if value is not None:
            self.context_window = value
            # (kept in the order each was last recorded, at the first line it is on)
            key = shown(value)
            self.windows[key] = self.windows.pop(key, (line, value))

    def _windows(self, model: str | None) -> tuple[dict[str, int], list[tuple[int, str]]]:
        """The windows the file records that can be its model's (by `shown`), and the
        others named at the first line each is on: a value no window can be (see
        `recorded_window`), or one by which most of the calls told of under it cannot be
        true (more than `most_for` it: those calls are then judged by the table's window,
        which the bill's window is raised to the largest of, as for any window assumed)."""
        good: dict[str, int] = {}
        problems = []
        for key, (line, value) in self.windows.items():
            window = recorded_window(model, value)
            told = [t for t, _ in self.every if shown(t.window) == key]
            most = most_for(model, window)[0] if window is not None else 0
            over = sum(held(t) > most for t in told)
            if window is not None and 2 * over <= len(told):
                good[key] = window
            elif window is not None:
                problems.append((line, f"model_context_window {value:,} is not the model's "
                                       f"window: {over:,} of the {len(told):,} calls recorded "
                                       f"under it hold more than {most:,} (prompt and reply); "
                                       f"{_STANDS}"))
            else:
                problems.append((line, f"model_context_window {shown(value)} is no window a "
                                       "model has (a whole number above 0, within what a "
                                       f"call can hold): {_STANDS}"))
        return good, problems

    def usage(self, older: list[RecordedCall], windows: dict[str, int]) -> dict[str, Any]:
        """Provider usage in the shape all formats share, plus the opaque reasoning seen
        (and the newest window recorded, where it is one of `windows`, the model's);
        `older`: the calls told of with no place in the contexts (see `_older`)."""
        usage: dict[str, Any] = {"source": _USAGE_SOURCE, "calls": self.calls} if self.calls else {}
        usage.update(self.summed)
        if self.last_call is not None and self.last_call.get("input_tokens") is not None:
            # (one no token count can be is its call's, set aside: the last kept call's
            # takes its place)
            usage["last_input_tokens"] = number(self.last_call["input_tokens"])
            if self.told is not None and all(t is not self.told for _, _, t in self.recorded) \
                    and unbelievable(older[-1]):
                # the newest call told of has no reply the file holds (the last of `older`),
                # and cannot be true: set aside, its prompt is not the last either, but the
                # newest call's with a reply (as where a call with one is set aside)
                if self.recorded:
                    usage["last_input_tokens"] = self.recorded[-1][2].billed
                else:
                    del usage["last_input_tokens"]
        # the newest window recorded that is the model's (one that is not is named, and
        # leaves the one before it standing)
        window = next((windows[k] for k in reversed(self.windows) if k in windows), None)
        if window is not None:
            usage["context_window"] = window
        if self.encrypted_items:
            usage["encrypted_reasoning_items"] = self.encrypted_items
            usage["encrypted_reasoning_chars"] = self.encrypted_chars
        return usage

    def finish(self) -> tuple[list[Message], Layout]:
        context = ([] if self.system is None else [self.system]) + self.window
        model = self.model
        windows, problems = self._windows(model)
        stands = None  # (a window not the model's: judged by the one before it, if any)
        for told, _ in self.every:
            told.window = stands = windows.get(shown(told.window), stands)
        older = self._older(context, model)
        return [], Layout(context, model=model, usage=self.usage(older, windows),
                          calls=self._calls_on(context, bool(self.encrypted_items), model,
                                               newest=True),
                          outside_why="before a compaction, or a system prompt replaced since",
                          earlier=self.earlier,
                          earlier_calls=self._calls_on(self.earlier, self.earlier_encrypted,
                                                       model),
                          older=[(held, self._calls_on(held, encrypted, model))
                                 for held, encrypted in reversed(self.older)],
                          unbilled_calls=older, set_aside=self.unread,
                          problems=sorted([*problems, *self.nulls]),
                          restated=self.restated)

    def _older(self, context: list[int], model: str | None) -> list[RecordedCall]:
        """The calls told of whose replies are in no context the file holds (`context`, and
        those before each compaction that had calls): told of with no reply the file holds
        (an event with new values and no reply since the call before, or one told of ahead
        of a reply never written), they are of the usage totals only."""
        placed = {*context, *self.earlier, *(n for held, _ in self.older for n in held)}
        replied = {id(t): reply_model for n, reply_model, t in self.recorded}
        on = {id(t) for n, _, t in self.recorded if n in placed}
        return [RecordedCall(0, t.billed, t.output, replied.get(id(t)) or told or model,
                             problem=t.wrong, again=t.again, at=t.at, summed=t.added,
                             window=t.window)
                for t, told in self.every if id(t) not in on]

    def _calls_on(self, context: list[int], encrypted: bool, model: str | None,
                  newest: bool = False) -> list[RecordedCall]:
        """The recorded calls whose replies are in `context` (message numbers), each at its
        reply's place there; `encrypted`: whether reasoning was sent encrypted in it. Of
        the `newest` context, the size a compaction left where no message follows it is a
        prompt of the whole."""
        where = {n: i for i, n in enumerate(context)}
        if newest:
            where[self.count] = len(context)
        # reasoning the file holds only encrypted is sent back with the next prompts: for
        # good, or (older models) until the next user message
        users = [i for i, n in enumerate(context) if n in self.users]
        return [RecordedCall(where[n], t.billed, t.output, reply_model or model,
                             reasoning=t.reasoning if encrypted else 0,
                             until=None if keeps_reasoning(reply_model or model) or
                             (after := bisect.bisect_right(users, where[n])) == len(users)
                             else users[after], problem=t.wrong, again=t.again, at=t.at,
                             summed=t.added, window=t.window) if t.left is None else
                RecordedCall(where[n], t.left, None, reply_model or model, problem=t.wrong,
                             again=t.again, at=t.at, summed=t.added, window=t.window,
                             stated=True)
                for n, reply_model, t in self.recorded if n in where]


def _alike(a: Message, b: Message) -> bool:
    """Is `b` the message `a` is, stated again?"""
    return (a.role, a.parts, a.name, a.human) == (b.role, b.parts, b.name, b.human)


def _share(last: dict[str, Any] | None, total: dict[str, Any] | None,
           before: dict[str, Any] | None) -> dict[str, int]:
    """A call's share of the summary's totals: the fields of its `last` usage, else what
    its running `total` rose by from the one `before` it (none where it starts again, as a
    resumed session's may); only fields the event records."""
    if isinstance(last, dict):
        return {key: number(last[field]) for key, field in _TOTALS if field in last}
    if not isinstance(total, dict):
        return {}
    return {key: max(number(total[field]) - number((before or {}).get(field)), 0)
            for key, field in _TOTALS if field in total}


def _wrong(usage: Any, name: str) -> str:
    """What of a `token_count` event's usage object (`name`) no usage can be: a value no
    object, or counts no token count can be ("": none)."""
    if usage is None:
        return ""
    if not isinstance(usage, dict):
        return f"{name} {shown(usage)} (a usage is an object of token counts)"
    return wrong_counts(usage, _CALL_FIELDS, f"{name}.", _BOUNDS[name], _PARTS)


def _other(before: tuple[Any, Any] | None, now: tuple[Any, Any]) -> str:
    """Where a `token_count` event (`_numbers` of its total and last usage, `now`) tells of
    the call `before` told of with other values, what differs ("": it tells of another
    call, or of the same alike): a call's usage again (the same `last_token_usage`) with a
    running total that did not rise by it, or a running total that did not rise (each
    call adds its prompt to it)."""
    if before is None:
        return ""
    (total0, last0), (total, last) = before, now
    same_call = isinstance(last, dict) and _agree(last0, last) and not (
        isinstance(total, dict) and isinstance(total0, dict)
        and all(number(total[k]) == number(total0.get(k)) + number(last.get(k))
                for k in _CALL_FIELDS if k in total))
    if not same_call and not (isinstance(total, dict) and _agree(total0, total)):
        return ""
    differ = []
    for name, a, b in (("total_token_usage", total0, total), ("last_token_usage", last0, last)):
        if isinstance(a, dict) and isinstance(b, dict):
            differ += [f"{name}.{k} {shown(b.get(k))} for {shown(a.get(k))}"
                       for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
        elif a != b:
            differ.append(f"{name} {shown(b)} for {shown(a)}")
    return ", ".join(differ)


def _restated(before: tuple[Any, Any] | None, now: tuple[Any, Any]) -> bool:
    """Do the usage objects of a `token_count` event (`_numbers` of its total and last
    usage) tell again of the call `before` told of?"""
    return before is not None and all(_agree(a, b) for a, b in zip(before, now, strict=True))


def _agree(a: Any, b: Any) -> bool:
    """Are two usage objects the same, a count no token count can be agreeing with any?"""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a == b
    return a.keys() == b.keys() and all(
        a[k] == b[k] or k in _CALL_FIELDS and (miscounted(a[k]) or miscounted(b[k])) for k in a)


def _numbers(usage: Any) -> dict[str, Any] | None:
    """A usage object's flat values (what else it holds is no count, and comparing it
    could recurse as deep as it is nested); None for what is not an object."""
    if not isinstance(usage, dict):
        return None
    return {k: v for k, v in usage.items() if not isinstance(v, (dict, list))}


# Events the CLI reads back from an archived span: its session index takes a thread's
# first message, title and settings from them (`resume --last` lists a thread by its first
# `user_message`). They are written again before the `compacted` line.
_INDEXED_EVENTS = {"user_message", "thread_name_updated", "thread_settings_applied",
                   "thread_goal_updated", "session_configured"}
# Records of the state a turn runs in (model, working folder, permissions): written again
# after the `compacted` line, the last `turn_context` and every `world_state` (which may
# be a change to the one before), so the next turn knows what the archived ones ran in.
_STATE_TYPES = {"turn_context", "world_state"}
_ZERO_USAGE = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
               "reasoning_output_tokens": 0, "total_tokens": 0}


class CodexEditor:
    """Writes a `compacted` line whose replacement history is the kept head and the summary,
    as the CLI's own compaction does; the system prompt stays in its `session_meta`."""

    resets = True
    alternates = False
    usage_mark = b'"token_count"'
    usage_on_messages = False  # token_count events after each call
    keeps_mark = marks(_INDEXED_EVENTS | _STATE_TYPES)

    def keeps(self, record: dict[str, Any]) -> bool:
        kind, payload = record.get("type"), record.get("payload")
        if kind == "event_msg" and isinstance(payload, dict):
            kind = payload.get("type")
            return isinstance(kind, str) and kind in _INDEXED_EVENTS
        return isinstance(kind, str) and kind in _STATE_TYPES

    def recorded(self, record: dict[str, Any]) -> int | None:
        payload = record.get("payload")
        if record.get("type") != "event_msg" or not isinstance(payload, dict) \
                or payload.get("type") != "token_count":
            return None
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        return number(last.get("total_tokens")) or None if isinstance(last, dict) else None

    def call(self, record: dict[str, Any]) -> str | None:
        return None  # (an event written twice states the same total: see writer._resize)

    def resized(self, record: dict[str, Any], tokens: int, cached: int) -> dict[str, Any]:
        """The event with its last call's usage stating `tokens` (the CLI's measure of the
        context); the session's running totals stay what was spent."""
        payload = record["payload"]
        info = payload["info"]
        last = info["last_token_usage"]
        output = min(number(last.get("output_tokens")), tokens)
        new = {**last, "input_tokens": tokens - output,
               "cached_input_tokens": min(cached, tokens - output), "output_tokens": output,
               "reasoning_output_tokens": min(number(last.get("reasoning_output_tokens")),
                                              output),
               "total_tokens": tokens}
        return {**record, "payload": {**payload, "info": {**info, "last_token_usage": new}}}

    def keeps_place(self, message: Message) -> bool:
        return message.role == "system"

    def with_results(self, record: dict[str, Any], texts: dict[str | None, str]) -> dict[str, Any]:
        return {**record, "payload": {**record["payload"], "output": next(iter(texts.values()))}}

    def compaction(self, c: Compaction) -> list[dict[str, Any]]:
        items = [r["payload"] if "payload" in r else r for r in c.head]
        items.append({"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": c.summary}]})
        events = [r for r in c.kept if r.get("type") == "event_msg"]
        turns = [r for r in c.kept if r.get("type") == "turn_context"][-1:]
        states = [r for r in c.kept if r.get("type") == "world_state"]
        usage = c.usage if c.usage is not None else {
            "timestamp": c.time, "type": "event_msg",
            "payload": {"type": "token_count", "rate_limits": None,
                        "info": {"total_token_usage": _ZERO_USAGE,
                                 "last_token_usage": _ZERO_USAGE}}}
        fresh = {**self.resized(usage, c.context, 0), "timestamp": c.time}
        compacted = {"timestamp": c.time, "type": "compacted",
                     "payload": {"message": c.summary, "replacement_history": items},
                     META_KEY: c.meta}
        return [*({**r, META_KEY: c.part} for r in events), compacted,
                *({**r, META_KEY: c.part} for r in (*turns, *states)),
                {**fresh, META_KEY: c.part}]

    def relink(self, record: dict[str, Any], removed: set[str], to: str) -> dict[str, Any] | None:
        return None


class CodexFormat:
    name = "codex"
    default_model = "gpt-5"  # when the file names no model
    description = "Codex CLI rollout: one {timestamp, type, payload} item per line"
    records_usage = "Codex"  # (see formats.usage_recorders)
    # compress restates the usage of every record after its change (the editor's
    # usage_mark), so a call whose reply starts after the last line it wrote is a new one
    restates_usage = True

    def sniff(self, record: dict[str, Any]) -> int:
        kind, payload = record.get("type"), record.get("payload")
        sure = isinstance(kind, str) and kind in _SURE_TYPES
        return 2 if sure and isinstance(payload, dict) else 0

    def reader(self) -> Sessions:
        return Sessions(CodexReader, _session_of, "a `session_meta`", "Codex")

    def editor(self, transcript: Any) -> CodexEditor:
        one_session(transcript, "`session_meta`")
        return CodexEditor()


def _session_of(record: Any) -> tuple[str, set[str], set[str]] | None:
    """The session a `session_meta` line states, the threads it is forked from or an agent
    of (a forked rollout holds its source's header and history after its own), and its
    ids."""
    payload = record.get("payload") if isinstance(record, dict) else None
    if not isinstance(payload, dict) or record.get("type") != "session_meta" or \
            not isinstance(ident := payload.get("id"), str):
        return None

    def strings(*keys: str) -> set[str]:
        return {v for k in keys if isinstance(v := payload.get(k), str)}

    return ident, strings("forked_from_id", "parent_thread_id"), strings("id", "session_id")

"""What a file no reader takes looks like: agents' logs ctxpack knows of but does not read.

Each entry recognises one shape by the fields its writer always puts there, so the
error can name it instead of listing what the file is not. A format that gains a
reader simply takes such files before this is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _items(value: Any) -> list[dict[str, Any]]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _cline_ui(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all(isinstance(x.get("ts"), (int, float))
                               and x.get("type") in ("say", "ask") for x in items[:20])


def _cline_api(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all("role" in x and "content" in x for x in items[:20]) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "thinking")
        for x in items for b in (x["content"] if isinstance(x["content"], list) else ()))


def _opencode(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    messages = _items(value.get("messages"))
    return isinstance(value.get("info"), dict) and bool(messages) and all(
        "info" in m and "parts" in m for m in messages[:20])


def _openhands_events(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all("source" in x and ("action" in x or "observation" in x)
                               for x in items[:20])


def _openhands_output(value: Any) -> bool:
    return isinstance(value, dict) and "instance_id" in value and \
        _openhands_events(value.get("history"))


def _gemini_checkpoint(value: Any) -> bool:
    items = _items(value.get("history") if isinstance(value, dict) else value)
    return bool(items) and all(x.get("role") in ("user", "model") and isinstance(
        x.get("parts"), list) for x in items[:20])


_SHAPES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("a Gemini CLI checkpoint (`/chat save`: a history of role user/model with parts)",
     _gemini_checkpoint),
    ("a Cline / Roo Code ui_messages.json (UI events)", _cline_ui),
    ("a Cline / Roo Code api_conversation_history.json (Anthropic messages with blocks)",
     _cline_api),
    ("an `opencode export` session (info and messages of parts)", _opencode),
    ("an OpenHands trajectory (actions and observations)", _openhands_events),
    ("an OpenHands evaluation output.jsonl line (instance_id and a history of events)",
     _openhands_output),
)


def looks_like(value: Any) -> str | None:
    """A name for what `value` (a JSON document or a file's first record) looks like."""
    for name, fits in _SHAPES:
        if fits(value):
            return name
    return None


def looks_like_text(first_line: bytes) -> str | None:
    """A name for a text (not JSON) log, from its first line."""
    if first_line.lstrip().startswith(b"# aider chat started at"):
        return "an Aider chat history (.aider.chat.history.md)"
    return None

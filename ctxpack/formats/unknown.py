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


def _gemini_checkpoint(value: Any) -> bool:
    items = _items(value.get("history") if isinstance(value, dict) else value)
    return bool(items) and all(x.get("role") in ("user", "model") and isinstance(
        x.get("parts"), list) for x in items[:20])


def _anthropic_array(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all("role" in x and "content" in x for x in items[:20]) and any(
        isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "thinking")
        for x in items for b in (x["content"] if isinstance(x["content"], list) else ()))


_SHAPES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("a Gemini CLI checkpoint (`/chat save`: a history of role user/model with parts)",
     _gemini_checkpoint),
    ("Anthropic Messages in one JSON array (the `anthropic` format reads one message a line)",
     _anthropic_array),
)


def looks_like(value: Any) -> str | None:
    """A name for what `value` (a JSON document or a file's first record) looks like."""
    for name, fits in _SHAPES:
        if fits(value):
            return name
    return None

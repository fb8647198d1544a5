"""A tool call's arguments in short: the few values that say what the call did.

Used wherever a call is named in one line (mask placeholders, summary step lines),
so that `Bash(command=pytest -x)` reads the same everywhere.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..model import ToolCall

# The argument names that say most about a call, most telling first.
KEY_NAMES = ("command", "cmd", "file_path", "path", "filename", "notebook_path", "pattern",
             "query", "url", "description", "prompt", "old_str", "content", "code", "input")
MAX_VALUE = 60


def parsed(call: ToolCall) -> Any:
    """The call's arguments as JSON when they are JSON, else the raw text."""
    text = call.arguments.strip()
    if text[:1] in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return text


def key_args(call: ToolCall, width: int = MAX_VALUE) -> str:
    """`name=value, ...` for the most telling arguments, each value cut to `width`."""
    args = parsed(call)
    if isinstance(args, str):
        return shorten(args, width)
    if isinstance(args, list):
        return shorten(_flat(args), width)
    if not isinstance(args, dict) or not args:
        return ""
    names = [k for k in KEY_NAMES if k in args] or list(args)[:1]
    return ", ".join(f"{k}={shorten(_flat(args[k]), width)}" for k in names[:2])


def describe(call: ToolCall, width: int = MAX_VALUE) -> str:
    """`name(key args)`: a call in one short line."""
    return f"{call.name or 'tool'}({key_args(call, width)})"


def shorten(text: str, width: int) -> str:
    """One line of at most `width` characters; an ellipsis marks a cut."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


def _flat(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)  # an argv list: the command as typed
    return orjson.dumps(value).decode()

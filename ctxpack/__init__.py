"""ctxpack: inspect and compress LLM agent transcripts.

The public API: `load` and `write` transcripts in any supported format,
`count` and `stats` for where the tokens went, `validate` for what a provider would reject,
`compress` to make a transcript fit its model and `restore` to undo it, `request_bodies`
for a transcript as Chat Completions or Anthropic request bodies; `Context` keeps an agent
loop's messages counted and compressed as the loop runs.
Names are imported on first use so that the command line starts fast; no module is named
like a function it exports, so importing a module never hides a public name.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "CtxpackError": "errors", "InputError": "errors", "UsageError": "errors",
    "CannotFit": "errors",
    "load": "loader", "write": "loader",
    "Transcript": "transcript", "Message": "transcript", "Text": "transcript",
    "Thinking": "transcript", "Image": "transcript", "ToolCall": "transcript",
    "ToolResult": "transcript",
    "count": "tokens", "stats": "breakdown", "FileStats": "breakdown",
    "validate": "checks", "Problem": "checks",
    "compress": "compression", "restore": "undo", "request_bodies": "convert",
    "Context": "loop",
}

__all__ = [
    "CannotFit", "Context", "CtxpackError", "FileStats", "Image", "InputError", "Message",
    "Problem", "Text", "Thinking", "ToolCall", "ToolResult", "Transcript", "UsageError",
    "compress", "count", "load", "request_bodies", "restore", "stats", "validate", "write",
]

if TYPE_CHECKING:
    from .breakdown import FileStats, stats
    from .checks import Problem, validate
    from .compression import compress
    from .convert import request_bodies
    from .errors import CannotFit, CtxpackError, InputError, UsageError
    from .loader import load, write
    from .loop import Context
    from .tokens import count
    from .transcript import Image, Message, Text, Thinking, ToolCall, ToolResult, Transcript
    from .undo import restore


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxpack' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value

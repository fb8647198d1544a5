"""ctxpack: inspect and compress LLM agent transcripts.

The public API: `load` and `write` transcripts in any supported format,
`count` and `stats` for where the tokens went, `validate` for what a provider would reject,
`compress` to make a transcript fit its model and `restore` to undo it.
Names are imported on first use so that the command line starts fast.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "CtxpackError": "errors", "InputError": "errors", "UsageError": "errors",
    "CannotFit": "errors",
    "load": "loader", "write": "loader",
    "Transcript": "model", "Message": "model", "Text": "model", "Thinking": "model",
    "Image": "model", "ToolCall": "model", "ToolResult": "model",
    "count": "tokens", "stats": "stats", "FileStats": "stats",
    "validate": "validate", "Problem": "validate",
    "compress": "compress", "restore": "restore",
}

__all__ = [
    "CannotFit", "CtxpackError", "FileStats", "Image", "InputError", "Message", "Problem", "Text",
    "Thinking", "ToolCall", "ToolResult", "Transcript", "UsageError", "compress", "count", "load",
    "restore", "stats", "validate", "write",
]

if TYPE_CHECKING:
    from .compress import compress
    from .errors import CannotFit, CtxpackError, InputError, UsageError
    from .loader import load, write
    from .model import Image, Message, Text, Thinking, ToolCall, ToolResult, Transcript
    from .restore import restore
    from .stats import FileStats, stats
    from .tokens import count
    from .validate import Problem, validate


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxpack' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """The package module: importing the submodule `stats` must not hide the function.

    Python sets `ctxpack.stats = <module>` when the submodule is imported; the
    public name is the function, as an eager `from .stats import stats` would make it.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

"""ctxpack: inspect and compress LLM agent transcripts.

The public API: `load` and `write` transcripts in any supported format,
`stats` for where the tokens went, `validate` for what a provider would reject.
"""

from .errors import CtxpackError, InputError, UsageError
from .loader import load, write
from .model import Image, Message, Text, Thinking, ToolCall, ToolResult, Transcript
from .stats import FileStats, stats
from .validate import Problem, validate

__version__ = "0.1.0"

__all__ = [
    "CtxpackError", "FileStats", "Image", "InputError", "Message", "Problem", "Text", "Thinking",
    "ToolCall", "ToolResult", "Transcript", "UsageError", "load", "stats", "validate", "write",
]

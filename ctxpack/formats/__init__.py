"""The format registry and the sniffer that picks a format from the first records."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from .base import Format, Layout, Reader, RecordError
from .openai import OpenAIFormat
from .openai_conversations import ConversationsFormat

FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> None:
    FORMATS[fmt.name] = fmt


def get(name: str) -> Format:
    """The format called `name`; an unknown name lists the valid ones."""
    try:
        return FORMATS[name]
    except KeyError:
        valid = ", ".join(FORMATS)
        raise UsageError(f"unknown format {name!r}", f"valid formats: {valid}") from None


def usual_model(name: str) -> str | None:
    """The model to assume for a file of format `name` that names none."""
    return getattr(FORMATS.get(name), "default_model", None)


def usage_recorders() -> list[str]:
    """The agents whose files record the usage of each call, once each, in alphabetical
    order: a format's optional `records_usage` names the agent where its reader gives
    the calls it records (`Layout.calls`), which `calibrate` fits and the bill anchors on."""
    return sorted({name for fmt in FORMATS.values()
                   if (name := getattr(fmt, "records_usage", ""))}, key=str.lower)


# models formats assume that name a family, for its tokenizer, window and calibration: no
# API serves a model of that name, so a request body does not name it
FAMILIES = frozenset({"claude", "gemini"})


def model_of(named: str | None, format: str) -> str | None:
    """The model a file of `format` that names `named` (or none) is read as: the one it
    names, else the one its format assumes; None when neither. stats reports this model
    (and its window), and the bodies convert writes name it."""
    return named or usual_model(format)


def sniff(record: Any, document: bool = False, path: str = "") -> tuple[Format | None, int]:
    """The format that claims `record` most surely, and how surely (0 = none). A
    `document` (a whole file that is one JSON value) is read only by formats that
    say they read documents, and is claimed by where it lies (`path`) as well."""
    best: Format | None = None
    score = 0
    for fmt in FORMATS.values():
        if document and not getattr(fmt, "document", False):
            continue
        s = claims(fmt, record, path if document else "")
        if s > score:
            best, score = fmt, s
    return best, score


def claims(fmt: Format, record: Any, path: str = "") -> int:
    """How surely `fmt` claims `record`, a document at `path` also by the place its agent
    keeps such files in (a format's optional `sniff_place(record, path)`: a Cline task's
    history beside its UI log)."""
    placed = getattr(fmt, "sniff_place", None) if path else None
    return max(fmt.sniff(record), placed(record, path) if placed else 0)


def sniff_text(first_line: bytes) -> Format | None:
    """The text (not JSON) format whose files open with this first non-blank line, if any."""
    for fmt in FORMATS.values():
        if getattr(fmt, "text", False) and fmt.sniff_text(first_line):  # type: ignore[attr-defined]
            return fmt
    return None


def sniff_headless(head: bytes) -> tuple[Format | None, str]:
    """The text format whose files these first lines are, though without the line that
    opens them (cut off), and why it is taken; (None, "") if none."""
    for fmt in FORMATS.values():
        why = fmt.headless(head) if hasattr(fmt, "headless") else ""
        if why:
            return fmt, why
    return None, ""


def sniff_magic(first_line: bytes) -> Format | None:
    """The binary format (a database) whose files open with its `magic` bytes, if any."""
    for fmt in FORMATS.values():
        magic = getattr(fmt, "magic", None)
        if magic and first_line.startswith(magic):
            return fmt
    return None


def folder_transcript(folder: str, session: str | None = None) -> str | None:
    """The file a folder that is one transcript stands for: of an OpenCode storage tree,
    its session `session`'s info file, else its most recently updated one's; of a Cline /
    Roo Code task, its model input (else its UI log). None for any other folder. Every
    reader of a path takes a folder so, the CLI's one-file commands and the library's."""
    from .cline import task_file
    from .opencode_storage import session_file

    return session_file(folder, session) or task_file(folder)


def _register_builtin() -> None:
    from .anthropic import AnthropicFormat
    from .anthropic_array import ArrayFormat
    from .anthropic_events import EventsFormat
    from .anthropic_requests import RequestsFormat
    from .claude_code import ClaudeCodeFormat
    from .codex import CodexFormat
    from .gemini import GeminiChatFormat, GeminiCheckpointFormat, GeminiStreamFormat
    from .gemini_api import GeminiApiFormat
    from .json_messages import JsonMessagesFormat
    from .more import FORMATS as MORE

    for fmt in (OpenAIFormat(), ConversationsFormat(), AnthropicFormat(), RequestsFormat(),
                ClaudeCodeFormat(),
                CodexFormat(), JsonMessagesFormat(), GeminiChatFormat(), GeminiStreamFormat(),
                GeminiCheckpointFormat(), GeminiApiFormat(), EventsFormat(), ArrayFormat(), *MORE):
        register(fmt)


_register_builtin()

__all__ = ["FORMATS", "Format", "Layout", "Reader", "RecordError", "folder_transcript",
           "get", "register", "sniff", "model_of", "sniff_headless", "sniff_magic", "sniff_text",
           "usage_recorders", "usual_model"]

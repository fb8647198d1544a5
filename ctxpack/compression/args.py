"""A tool call in one line: its name and the few arguments that say what it did.

Used wherever a call is named in a line (mask placeholders, summary step lines, open
calls), so that `Bash(command=pytest -x)` reads the same everywhere.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from ..transcript import ToolCall
from .facts import shell_command

# Arguments that tell most about a call, best first; paths among them are never cut.
KEY_ARGS = ("command", "cmd", "file_path", "notebook_path", "path", "filePath", "pattern",
            "glob", "url", "query", "description", "prompt")
PATH_ARGS = frozenset({"file_path", "notebook_path", "path", "filePath"})
SKIP_ARGS = frozenset({"content", "old_string", "new_string", "timeout", "timeout_ms",
                       "yield_time_ms", "max_output_tokens", "workdir", "sandbox_permissions",
                       "justification", "replace_all", "run_in_background", "limit", "offset"})
MAX_ARGS = 3
ARG_CHARS = 100
BRIEF_CHARS = 40  # a brief label (a condensed summary line) shows one argument, this long
DONE = frozenset({"completed", "complete", "done", "cancelled", "canceled"})  # plan states

_PATCH_FILE = re.compile(r"\*\*\* ((?:Add|Update|Delete) File: [^\n\\\"]+)")
_EMBEDDED_CMD = re.compile(r'"(?:cmd|command)"\s*:\s*("(?:[^"\\\n]|\\.)*"|\[[^\]\n]*\])')


def call_label(call: ToolCall, brief: bool = False) -> str:
    """`Name(key=value, ...)` with the most telling arguments, long values cut; `brief`:
    `Name(value)` of the most telling one, cut shorter."""
    return f"{call.name}({key_args(call.arguments, brief)})"


@lru_cache(maxsize=1 << 16)
def key_args(arguments: str, brief: bool = False) -> str:
    """The most telling arguments of a call in short (see `call_label`)."""
    limit = BRIEF_CHARS if brief else ARG_CHARS
    args = parse_args(arguments)
    if args is None:
        return _free_args(arguments, limit)
    plan = plan_list(args)
    if plan is not None:  # a todo list says most by how far along it is
        counts = Counter(status for status, _ in plan)
        return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    keys = [k for k in KEY_ARGS if args.get(k) not in (None, "", [], {})]
    if "command" in keys or "cmd" in keys:
        keys = [k for k in keys if k not in ("description", "prompt")]
    if not keys:
        keys = [k for k, v in args.items() if k not in SKIP_ARGS and _scalar(v)]
    if brief:
        return _value(keys[0], args[keys[0]], limit) if keys else ""
    return ", ".join(f"{k}={_value(k, args[k], limit)}" for k in keys[:MAX_ARGS])


def _free_args(arguments: str, limit: int) -> str:
    files = list(dict.fromkeys(m.strip() for m in _PATCH_FILE.findall(arguments)))
    if files:
        most = 5 if limit >= ARG_CHARS else 1
        more = f", +{len(files) - most} files" if len(files) > most else ""
        return ", ".join(files[:most]) + more
    embedded = _EMBEDDED_CMD.search(arguments)
    if embedded:
        try:
            command = shorten(shell_command(json.loads(embedded.group(1))), limit)
            return command if limit < ARG_CHARS else f"cmd={command}"
        except (ValueError, RecursionError):
            pass
    return shorten(arguments, limit)


def _value(key: str, value: Any, limit: int) -> str:
    if key in ("command", "cmd"):
        value = shell_command(value) or value
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return " ".join(value.split()) if key in PATH_ARGS else shorten(value, limit)


def shorten(text: str, limit: int = ARG_CHARS) -> str:
    """`text` on one line, cut near `limit` at a space so that paths stay whole."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    end = flat.find(" ", limit)
    if end < 0 or end > limit + min(80, limit):
        end = limit
    return flat[:end].rstrip() + "…"


def plan_list(args: dict[str, Any]) -> list[tuple[str, str]] | None:
    """(status, text) of each item, when the arguments are a todo list or plan."""
    items = args.get("todos", args.get("plan"))
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return None
    out = []
    for item in items:
        text = next((item[k] for k in ("content", "step", "title", "task", "description")
                     if isinstance(item.get(k), str)), None)
        if text is not None:
            out.append((str(item.get("status", "pending")).lower(), text))
    return out


def parse_args(arguments: str) -> dict[str, Any] | None:
    """The arguments as a JSON object, or None when they are not one."""
    if not arguments.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's limit
        return None
    return value if isinstance(value, dict) else None


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and len(str(value)) <= 200

"""How a summarizer reads one archived unit: its calls in short, its status and its facts.

Shared by the extractive and structured summarizers so both describe a step the same
way; also finds the verbatim items (last request, open todo items, unanswered calls).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...model import ToolCall, ToolResult
from .. import facts as F
from . import Unit
from ._layout import Line

# Arguments that tell most about a call, best first; paths among them are never cut.
KEY_ARGS = ("command", "cmd", "file_path", "notebook_path", "path", "filePath", "pattern",
            "glob", "url", "query", "description", "prompt")
PATH_ARGS = frozenset({"file_path", "notebook_path", "path", "filePath"})
SKIP_ARGS = frozenset({"content", "old_string", "new_string", "timeout", "timeout_ms",
                       "yield_time_ms", "max_output_tokens", "workdir", "sandbox_permissions",
                       "justification", "replace_all", "run_in_background", "limit", "offset"})
MAX_ARGS = 3
ARG_CHARS = 100
DONE = frozenset({"completed", "complete", "done", "cancelled", "canceled"})

_PATCH_FILE = re.compile(r"\*\*\* ((?:Add|Update|Delete) File: [^\n\\\"]+)")
_EMBEDDED_CMD = re.compile(r'"(?:cmd|command)"\s*:\s*("(?:[^"\\\n]|\\.)*"|\[[^\]\n]*\])')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True, slots=True)
class Digest:
    """One unit in short: what it did, how it went, and the facts worth keeping."""

    number: int | None  # the step number; None for a lone message
    label: str  # "Bash(command=ls), Read(file_path=a.py)", "said: ...", "Request: ..."
    status: str  # "ok", "error", "no result"; "" when nothing was called
    tools: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]  # (category, fact), error lines first
    text: str  # the message's own words


def digest(unit: Unit, number: int | None) -> Digest:
    """Describe `unit`; `number` is its step number when it is an assistant step."""
    label, status, tools, pairs = _describe(unit)
    return Digest(number, label, status, tools, pairs, unit.text)


@lru_cache(maxsize=4096)
def _describe(unit: Unit) -> tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    # cached: a pipeline may summarize overlapping regions while it looks for the cut
    calls = unit.calls
    status = step_status(unit) if calls else ""
    if calls:
        label = ", ".join(call_label(c) for c in calls)
    elif unit.is_step:
        label = f"said: {first_sentence(unit.text) or '(no text)'}"
    elif unit.human:
        label = f"Request: {first_sentence(unit.text)}"
    else:
        kind = "Result" if unit.role == "tool" or unit.results else "Context"
        label = f"{kind}: {first_sentence(unit.text or _results_text(unit.results))}"
    own = {x for c in calls for x in F.commands(c.arguments)}  # already in the label
    found = unit_facts(unit)
    pairs = [("errors", e) for e in found.errors]
    if status == "error":
        pairs.extend(("errors", line) for line in _telling_lines(unit.results))
    for name in ("paths", "urls", "identifiers", "commands", "numbers"):
        pairs.extend((name, x) for x in getattr(found, name) if x not in own)
    return label, status, tuple(c.name for c in calls), tuple(pairs)


def head(d: Digest) -> str:
    """The bullet head of a digest: `* Step N: <calls> -> <status>`, or `* <label>`."""
    if d.number is None:
        return f"* {d.label}"
    return f"* Step {d.number}: {d.label}" + (f" -> {d.status}" if d.status else "")


def as_line(d: Digest, pos: int, kinds: Iterable[str] | None = None, text: str = "",
            optional: bool = False) -> Line:
    """`d` as a summary line holding its facts of `kinds` (all when None)."""
    wanted = None if kinds is None else set(kinds)
    facts = tuple(f for f in d.facts if wanted is None or f[0] in wanted)
    steps = (d.number, d.number) if d.number is not None else None
    tools = tuple(Counter(d.tools).items())
    return Line(pos, text or head(d), facts, steps, tools, int(d.status == "error"),
                int(d.number is None), optional)


def unit_facts(unit: Unit) -> F.Facts:
    """All facts of a unit: its text, its calls' arguments and its results."""
    return F.extract(source_text(unit))


def source_text(unit: Unit) -> str:
    """The text a unit archives, as one string (what the retention audit should read)."""
    parts = [unit.text, *(f"{c.name}({c.arguments})" for c in unit.calls)]
    parts.extend(r.text for r in unit.results)
    return "\n".join(p for p in parts if p)


def step_status(unit: Unit) -> str:
    """`error` if a call failed, `no result` if none was answered, else `ok`."""
    answers = [answers_of(unit, i) for i in range(len(unit.calls))]
    if any(result_failed(r) for rs in answers for r in rs):
        return "error"
    return "ok" if any(answers) else "no result"


def answers_of(unit: Unit, index: int) -> tuple[ToolResult, ...]:
    """The results answering call `index` of `unit`: by id, or by position when ids are absent."""
    if any(r.call_id for r in unit.results):
        call_id = unit.calls[index].id
        return tuple(r for r in unit.results if r.call_id == call_id)
    return unit.results[index : index + 1]


def result_failed(result: ToolResult) -> bool:
    """True when a result is an error: flagged, a non-zero exit code, or error lines."""
    if result.is_error:
        return True
    code = F.exit_code(result.text)
    if code is not None:
        return code != 0
    return next(F.error_lines(result.text), None) is not None


def call_label(call: ToolCall) -> str:
    """`Name(key=value, ...)` with the most telling arguments, long values cut."""
    return f"{call.name}({key_args(call.arguments)})"


def key_args(arguments: str) -> str:
    """The most telling arguments of a call in short."""
    args = _parse(arguments)
    if args is None:
        return _free_args(arguments)
    plan = _plan_list(args)
    if plan is not None:  # a todo list says most by how far along it is
        counts = Counter(status for status, _ in plan)
        return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    keys = [k for k in KEY_ARGS if args.get(k) not in (None, "", [], {})]
    if "command" in keys or "cmd" in keys:
        keys = [k for k in keys if k not in ("description", "prompt")]
    if not keys:
        keys = [k for k, v in args.items() if k not in SKIP_ARGS and _scalar(v)]
    return ", ".join(f"{k}={_value(k, args[k])}" for k in keys[:MAX_ARGS])


def _free_args(arguments: str) -> str:
    files = list(dict.fromkeys(m.strip() for m in _PATCH_FILE.findall(arguments)))
    if files:
        more = f", +{len(files) - 5} files" if len(files) > 5 else ""
        return ", ".join(files[:5]) + more
    embedded = _EMBEDDED_CMD.search(arguments)
    if embedded:
        try:
            return f"cmd={shorten(F.shell_command(json.loads(embedded.group(1))))}"
        except ValueError:
            pass
    return shorten(arguments)


def _value(key: str, value: Any) -> str:
    if key in ("command", "cmd"):
        value = F.shell_command(value) or value
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return " ".join(value.split()) if key in PATH_ARGS else shorten(value)


def shorten(text: str, limit: int = ARG_CHARS) -> str:
    """`text` on one line, cut near `limit` at a space so that paths stay whole."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    end = flat.find(" ", limit)
    if end < 0 or end > limit + 80:
        end = limit
    return flat[:end].rstrip() + "…"


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence or line of `text`, short; `;` becomes `,` so the line parses back."""
    for piece in _SENTENCE_END.split(text.strip()):
        if piece.strip():
            return shorten(piece, limit).replace(";", ",")
    return ""


def todo_items(units: Sequence[Unit]) -> list[str] | None:
    """Open items of the newest todo or plan call, verbatim; None when there is no such call."""
    for unit in reversed(units):
        for call in reversed(unit.calls):
            items = _plan_list(_args(call))
            if items is not None:
                return [f"[{status}] {text}" for status, text in items if status not in DONE]
    return None


def _plan_list(args: dict[str, Any]) -> list[tuple[str, str]] | None:
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


def unanswered(units: Iterable[Unit]) -> list[str]:
    """Labels of the calls that got no result."""
    return [call_label(c) for u in units for i, c in enumerate(u.calls) if not answers_of(u, i)]


def last_request(units: Sequence[Unit]) -> str | None:
    """The text of the newest message a person typed, verbatim."""
    return next((u.text for u in reversed(units) if u.human and u.text.strip()), None)


def first_request(units: Sequence[Unit]) -> str | None:
    """The text of the oldest message a person typed, verbatim."""
    return next((u.text for u in units if u.human and u.text.strip()), None)


def fence(text: str) -> str:
    """`text` in a code fence longer than any backtick run inside it, so it stays intact."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}" if not text.endswith("\n") else f"{marks}\n{text}{marks}"


def _telling_lines(results: Iterable[ToolResult]) -> list[str]:
    """For each failed result whose error lines only give an exit code, its first other line."""
    lines = []
    for r in results:
        if not result_failed(r) or any(F.exit_code(e) is None for e in F.error_lines(r.text)):
            continue
        text = next((x.strip() for x in r.text.splitlines()
                     if x.strip() and F.exit_code(x) is None), "")
        if text:
            lines.append(text[: F.MAX_LINE])
    return lines


def _results_text(results: Iterable[ToolResult]) -> str:
    return "\n".join(r.text for r in results)


def _args(call: ToolCall) -> dict[str, Any]:
    return _parse(call.arguments) or {}


def _parse(arguments: str) -> dict[str, Any] | None:
    if not arguments.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and len(str(value)) <= 200

"""How a summarizer reads one archived piece: its calls in short, its status and its facts.

Shared by the extractive and structured summarizers so both describe a step the same
way; also finds the verbatim items (last request, open todo items, unanswered calls).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ...transcript import ToolResult
from ..args import BRIEF_CHARS, DONE, call_label, parse_args, plan_list, shorten
from ..facts import Facts, commands, extract
from ..failures import MAX_LINE, error_lines, exit_code
from . import Piece
from ._layout import Line, fold_line

CONTEXT = "Context:"  # the label of a message that is neither a step nor a request
SENTENCE_CHARS = 160  # of a message's words a line shows (BRIEF_CHARS once condensed)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass(frozen=True, slots=True)
class Digest:
    """One piece in short: what it did, how it went, and the facts worth keeping."""

    number: int | None  # the step number; None for a lone message
    label: str  # "Bash(command=ls), Read(file_path=a.py)", "said: ...", "Request: ..."
    status: str  # "ok", "error", "no result"; "" when nothing was called
    tools: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]  # (category, fact), error lines first
    text: str  # the message's own words
    brief: str = ""  # the label with each call's one telling argument, short ("": as is)


def digest(piece: Piece, number: int | None) -> Digest:
    """Describe `piece`; `number` is its step number when it is an assistant step."""
    label, brief, status, tools, pairs = _describe(piece)
    return Digest(number, label, status, tools, pairs, piece.text,
                  brief if brief != label else "")


@lru_cache(maxsize=4096)
def _describe(piece: Piece) -> tuple[str, str, str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    # cached: a pipeline may summarize overlapping regions while it looks for the cut
    calls = piece.calls
    label, status = _label(piece)
    brief, _ = _label(piece, brief=True)
    own = {x for c in calls for x in commands(c.arguments)}  # already in the label
    found = piece_facts(piece)
    pairs = [("errors", e) for e in found.errors]
    if status == "error":
        pairs.extend(("errors", line) for line in _telling_lines(piece.results))
    for name in ("paths", "urls", "identifiers", "commands", "numbers"):
        pairs.extend((name, x) for x in getattr(found, name) if x not in own)
    return label, brief, status, tuple(c.name for c in calls), tuple(pairs)


def _label(piece: Piece, brief: bool = False) -> tuple[str, str]:
    """What a piece did, and how its calls went ("" when it made none); `brief`: in
    short, for a line condensed to make room for the facts."""
    calls = piece.calls
    if calls:
        return ", ".join(call_label(c, brief) for c in calls), step_status(piece)
    words = BRIEF_CHARS if brief else SENTENCE_CHARS
    if piece.is_step:
        return f"said: {first_sentence(piece.text, words) or '(no text)'}", ""
    if piece.human:
        return f"Request: {first_sentence(piece.text, words)}", ""
    kind = "Result:" if piece.role == "tool" or piece.results else CONTEXT
    return f"{kind} {first_sentence(piece.text or _results_text(piece.results), words)}", ""


def bare_line(piece: Piece, number: int) -> str:
    """The shortest line a summary gives `piece` short of folding it: its head, no facts
    (`number` is its step number, or the last one before it)."""
    label, status = _label(piece)
    return head(Digest(number if piece.is_step else None, label, status, (), (), piece.text))


def head(d: Digest) -> str:
    """The bullet head of a digest: `* Step N: <calls> -> <status>`, or `* <label>`."""
    if d.number is None:
        return f"* {d.label}"
    return f"* Step {d.number}: {d.label}" + (f" -> {d.status}" if d.status else "")


def as_line(d: Digest, pos: int, kinds: Iterable[str] | None = None, text: str = "",
            optional: bool = False) -> Line:
    """`d` as a summary line holding its facts of `kinds` (all when None). Injected
    context (a hook's reminder, a caveat) gets a line only when it has facts to show."""
    wanted = None if kinds is None else set(kinds)
    facts = tuple(f for f in d.facts if wanted is None or f[0] in wanted)
    steps = (d.number, d.number) if d.number is not None else None
    tools = tuple(Counter(d.tools).items())
    brief = head(replace(d, label=d.brief)) if d.brief and not text else ""
    return Line(pos, text or head(d), facts, steps, tools, int(d.status == "error"),
                int(d.number is None), optional or d.label.startswith(CONTEXT), brief)


def folded(pieces: Sequence[Piece], first: int) -> Line:
    """One line telling `pieces` in counts, as a summary folds lines it cannot show: their
    steps (numbered from `first`), tools, errors and other messages."""
    steps = sum(u.is_step for u in pieces)
    tools = Counter(c.name for u in pieces for c in u.calls)
    errors = sum(bool(u.calls) and step_status(u) == "error" for u in pieces)
    counts = Line(first + steps - 1, "", (), (first, first + steps - 1) if steps else None,
                  tuple(tools.items()), errors, len(pieces) - steps)
    return replace(counts, head=fold_line([counts], "messages"))


def piece_facts(piece: Piece) -> Facts:
    """All facts of a piece: its text, its calls' arguments and its results (found for it
    when it was made, or now)."""
    return piece.facts if piece.facts is not None else extract(source_text(piece))


def source_text(piece: Piece) -> str:
    """The text a piece archives, as one string (what the retention audit should read)."""
    parts = [piece.text, *(f"{c.name}({c.arguments})" for c in piece.calls)]
    parts.extend(r.text for r in piece.results)
    return "\n".join(p for p in parts if p)


def step_status(piece: Piece) -> str:
    """`error` if a call failed, `no result` if none was answered, else `ok`."""
    answers = [answers_of(piece, i) for i in range(len(piece.calls))]
    if any(r.is_error for rs in answers for r in rs):  # see Piece
        return "error"
    return "ok" if any(answers) else "no result"


def answers_of(piece: Piece, index: int) -> tuple[ToolResult, ...]:
    """The results answering call `index` of `piece`: by id, or by position when ids are absent."""
    if any(r.call_id for r in piece.results):
        call_id = piece.calls[index].id
        return tuple(r for r in piece.results if r.call_id == call_id)
    return piece.results[index : index + 1]


def first_sentence(text: str, limit: int = SENTENCE_CHARS) -> str:
    """The first sentence or line of `text`, short; `;` becomes `,` so the line parses back."""
    for piece in _SENTENCE_END.split(text.strip()):
        if piece.strip():
            return shorten(piece, limit).replace(";", ",")
    return ""


def todo_items(pieces: Sequence[Piece]) -> list[str] | None:
    """Open items of the newest todo or plan call, verbatim; None when there is no such call."""
    for piece in reversed(pieces):
        for call in reversed(piece.calls):
            if "todos" not in call.arguments and "plan" not in call.arguments:
                continue  # not one: no need to parse its arguments (some are big)
            items = plan_list(parse_args(call.arguments) or {})
            if items is not None:
                return [f"[{status}] {text}" for status, text in items if status not in DONE]
    return None


def unanswered(pieces: Iterable[Piece]) -> list[str]:
    """Labels of the calls that got no result."""
    return [call_label(c) for u in pieces for i, c in enumerate(u.calls) if not answers_of(u, i)]


def last_request(pieces: Sequence[Piece]) -> str | None:
    """The text of the newest message a person typed, verbatim."""
    return next((u.text for u in reversed(pieces) if u.human and u.text.strip()), None)


def first_request(pieces: Sequence[Piece]) -> str | None:
    """The text of the oldest message a person typed, verbatim."""
    return next((u.text for u in pieces if u.human and u.text.strip()), None)


def fence(text: str) -> str:
    """`text` in a code fence longer than any backtick run inside it, so it stays intact."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}" if not text.endswith("\n") else f"{marks}\n{text}{marks}"


def _telling_lines(results: Iterable[ToolResult]) -> list[str]:
    """For each failed result whose error lines only give an exit code, its first other line."""
    lines = []
    for r in results:
        if not r.is_error or any(exit_code(e) is None for e in error_lines(r.text)):
            continue
        text = next((x.strip() for x in r.text.splitlines()
                     if x.strip() and exit_code(x) is None), "")
        if text:
            lines.append(text[:MAX_LINE])
    return lines


def _results_text(results: Iterable[ToolResult]) -> str:
    return "\n".join(r.text for r in results)

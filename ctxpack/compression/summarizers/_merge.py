"""Continuing an earlier summary: read its sections and lines back, find its last step
number, and build the verbatim sections (last request, pending items) that replace
the old ones only when the new region has newer ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import HEADING, Piece, Region
from ._digest import fence, todo_items, unanswered
from ._layout import Line, Section

_STEP = re.compile(r"\* Steps? (\d+)(?:[–-](\d+))?\b")
_STATUS = re.compile(r" -> (?:ok|error|no result)(?=;|$)")
_PLAIN = re.compile(r"\* (?:Step \d+: said|Request|Context|Result|Latest request):")
_NOTED = re.compile(r"(\* Step \d+ \([^)]*\):) (.*)")
_FOLD = re.compile(r"\* (?:Steps? [\d–-]+|Earlier messages) \(condensed\): (.*)")
_FOLD_TOOL = re.compile(r"([^\s,;]+) ×(\d+)")
_FOLD_COUNT = re.compile(r"(?:^|; )(\d+) (\w+)")
_TOOL_NAME = re.compile(r"(?:: |, )([\w.:\-]+)\(")
_OWN_PREAMBLE = re.compile(r"(?:.* archived by ctxpack; .*|Condensed to fit the token budget: .*)")
NO_RESULT = "* No result: "


@dataclass(frozen=True, slots=True)
class Part:
    """One section of an earlier summary as written: its title, block text and bullets."""

    title: str
    block: str
    bullets: tuple[str, ...]


def split_region(region: Region) -> tuple[tuple[Piece, ...], tuple[Piece, ...], str | None]:
    """The older pieces, the pieces to summarize and the earlier summary; a piece that is
    one joins the latter."""
    previous = [region.previous] if region.previous else []
    older: list[Piece] = []
    pieces: list[Piece] = []
    for group, into in ((region.older, older), (region.pieces, pieces)):
        for piece in group:
            # an earlier summary met among the pieces is merged, never summarized again
            if piece.text.lstrip().startswith(HEADING):
                previous.append(piece.text)
            else:
                into.append(piece)
    return tuple(older), tuple(pieces), "\n".join(previous) if previous else None


def parse(body: str | None) -> dict[str, Part]:
    """The sections of an earlier summary by title; text before any section is kept too."""
    parts: dict[str, Part] = {}
    title, block, bullets, fence_mark = "Earlier summary", [], [], ""
    for raw in (body or "").splitlines():
        if fence_mark:
            block.append(raw)
            if raw.strip().startswith(fence_mark) and not raw.strip().strip("`"):
                fence_mark = ""
        elif raw.startswith("```"):
            fence_mark = raw[: len(raw) - len(raw.lstrip("`"))]
            block.append(raw)
        elif raw.startswith("### "):
            _add(parts, title, block, bullets)
            title, block, bullets = raw[4:].strip(), [], []
        elif raw.startswith("* "):
            bullets.append(raw)
        elif raw.strip() != HEADING and not _OWN_PREAMBLE.fullmatch(raw.strip()):
            block.append(raw)
    _add(parts, title, block, bullets)
    return parts


def _add(parts: dict[str, Part], title: str, block: list[str], bullets: list[str]) -> None:
    text = "\n".join(block).strip("\n")
    if text.strip() or bullets:
        old = parts.get(title)
        if old:  # the same title twice (two summaries met): one section
            text = "\n".join(t for t in (old.block, text) if t)
            bullets = [*old.bullets, *bullets]
        parts[title] = Part(title, text, tuple(bullets))


def last_step(parts: dict[str, Part]) -> int:
    """The largest step number an earlier summary mentions in its lines (0 if none)."""
    numbers = [int(m.group(2) or m.group(1)) for p in parts.values() for b in p.bullets
               if (m := _STEP.match(b))]
    return max(numbers, default=0)


def lines_of(bullets: Iterable[str]) -> list[Line]:
    """Lines read back from bullets; each sits at its step, or at the step before it."""
    out, pos = [], 0
    for bullet in bullets:
        line = parse_line(bullet, pos)
        if line.steps:
            pos = line.steps[1]
            line = Line(pos, line.head, line.facts, line.steps, line.tools, line.errors,
                        line.others)
        out.append(line)
    return out


def parse_line(text: str, pos: int) -> Line:
    """A bullet of an earlier summary as a Line: its head, facts, steps and counts."""
    m = _STEP.match(text)
    steps = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else None
    fold = _FOLD.fullmatch(text)
    if fold:
        counts = {noun: int(n) for n, noun in _FOLD_COUNT.findall(fold.group(1))}
        errors = counts.pop("error", 0) + counts.pop("errors", 0)
        tools = tuple((name, int(n)) for name, n in _FOLD_TOOL.findall(fold.group(1)))
        return Line(pos, text, (), steps, tools, errors, sum(counts.values()))
    status = _STATUS.search(text)
    if status:
        head, rest = text[: status.end()], text[status.end() :]
        after = head.split(": ", 1)[-1] if steps else head
        tools = tuple((name, 1) for name in _TOOL_NAME.findall(": " + after))
        return Line(pos, head, _facts(rest), steps, tools, int("-> error" in head))
    noted = _NOTED.match(text)
    if noted:
        return Line(pos, noted.group(1), _facts(noted.group(2)), steps, optional=True)
    if _PLAIN.match(text):
        head, _, rest = text.partition("; ")
        return Line(pos, head, _facts("; " + rest if rest else ""), steps, others=1)
    return Line(pos, text, (), steps, others=1)


def _facts(rest: str) -> tuple[tuple[str, str], ...]:
    return tuple(("", f) for f in rest.removeprefix("; ").split("; ") if f) if rest else ()


def request_section(title: str, text: str | None, old: Part | None) -> Section | None:
    """The newest request verbatim, or the earlier summary's when the region has none."""
    if text is not None:
        return Section(title, block=fence(text), fixed=True)
    if old is not None:
        return Section(title, block=old.block, fixed=True,
                       lines=tuple(Line(0, b) for b in old.bullets))
    return None


def pending_section(title: str, pieces: Sequence[Piece], old: Part | None) -> Section | None:
    """Open todo items of the newest plan (else the earlier ones) and unanswered calls."""
    items = todo_items(pieces)
    if items is None:
        block = old.block if old else ""
    else:
        block = fence("\n".join(items)) if items else ""
    calls = [*(old.bullets if old else ()), *(NO_RESULT + label for label in unanswered(pieces))]
    if not block and not calls:
        return None
    return Section(title, block=block, lines=tuple(Line(0, c) for c in calls), fixed=True)


FOCUS = "Focus"


def focus_section(region: Region) -> Section | None:
    """What matters next (`--focus`) and the archived facts that name its words, kept
    whatever the summary condenses."""
    if not region.focus:
        return None
    listed = "\n".join(f"- `{x}`" if "`" not in x else f"- {x}" for x in region.focused)
    block = f"What matters next: {region.focus}" + (f"\n{listed}" if listed else "")
    return Section(FOCUS, block=block, fixed=True)


def carried(parts: dict[str, Part], known: Iterable[str]) -> list[Section]:
    """Sections of an earlier summary this strategy has no place for, kept as they were."""
    skip = set(known)
    return [Section(p.title, block=p.block, lines=tuple(lines_of(p.bullets)))
            for p in parts.values() if p.title not in skip]


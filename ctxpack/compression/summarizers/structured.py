"""The structured summarizer: the extractive facts arranged by what they are for.

Sections: task goal, key decisions, completed work, pending items (verbatim) and
important findings. Offline and deterministic; it condenses and continues an earlier
summary (structured or extractive) the same way the extractive one does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..args import shorten
from . import Count, Piece, Region
from ._budget import fit
from ._digest import Digest, as_line, digest, fence, first_request, first_sentence, folded
from ._layout import Doc, Line, Section
from ._merge import (
    FOCUS,
    Part,
    carried,
    focus_section,
    last_step,
    lines_of,
    parse,
    pending_section,
    split_region,
)

GOAL, DECISIONS, DONE = "Task goal", "Key decisions", "Completed work"
PENDING, FINDINGS = "Pending items", "Important findings"
GOAL_CHARS = 600  # the task goal is the first request's opening, verbatim up to here
KEPT_TASK = "The task, kept whole before this summary:"
DONE_FACTS = ("paths", "commands")
FOUND_FACTS = ("errors", "urls", "identifiers", "numbers")
MAX_DECISIONS = 2  # per step
_CUE = re.compile(
    r"\b(?:I'll|I’ll|I will|I'm going to|I’m going to|decided|decide to|instead|because|"
    r"will use|going with|chose|opted|switching to|the plan is|let's use)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# What an earlier summary's sections become here (an extractive one has Steps).
OLD_PLACES = {GOAL: "goal", DECISIONS: "decisions", DONE: "done", FINDINGS: "findings"}
OLD_KNOWN = (*OLD_PLACES, "Steps", PENDING, "Pending (verbatim)", "Last request (verbatim)",
             FOCUS)


@dataclass(slots=True)
class _Parts:
    """The lines of each condensable section, gathered oldest first."""

    goal: list[Line] = field(default_factory=list)
    decisions: list[Line] = field(default_factory=list)
    done: list[Line] = field(default_factory=list)
    findings: list[Line] = field(default_factory=list)


class StructuredSummarizer:
    """Task goal, key decisions, completed work, pending items and important findings."""

    name = "structured"

    def write(self, region: Region, max_tokens: int, count: Count) -> str:
        """The summary of `region` (continuing `region.previous`), fit to `max_tokens`."""
        older, pieces, previous = split_region(region)
        old = parse(previous)
        parts = _old_parts(old)
        goal = _goal_block(old, older + pieces, region.task)
        skip_first = GOAL not in old and "Last request (verbatim)" not in old \
            and not region.task and first_request(older) is None
        number = last_step(old)
        if older:
            parts.done.append(folded(older, number + 1))
            number += sum(u.is_step for u in older)
        for piece in pieces:
            if piece.is_step:
                number += 1
            if skip_first and piece.human and piece.text.strip():
                skip_first = False
                if len(piece.text) <= GOAL_CHARS:
                    continue  # it is the task goal, whole; a cut one keeps its facts below
            _place(digest(piece, number if piece.is_step else None), number, parts)
        old_pending = old.get(PENDING) or old.get("Pending (verbatim)")
        doc = Doc.of([
            focus_section(region),
            Section(GOAL, block=goal, lines=tuple(parts.goal), noun="requests"),
            Section(DECISIONS, lines=tuple(parts.decisions), noun="decisions"),
            Section(DONE, lines=tuple(parts.done)),
            pending_section(PENDING, older + pieces, old_pending),
            Section(FINDINGS, lines=tuple(parts.findings)),
            *carried(old, OLD_KNOWN),
        ], region.archived)
        return fit(doc, max_tokens, count)


def _goal_block(old: dict[str, Part], pieces: tuple[Piece, ...], task: str | None) -> str:
    """The earlier summary's goal; else the task kept before the summary, in a line; else
    the earlier summary's last request, or this region's first request."""
    if GOAL in old and old[GOAL].block:
        return old[GOAL].block
    if task and task.strip():
        return f"{KEPT_TASK} {first_sentence(task)}"
    if "Last request (verbatim)" in old and old["Last request (verbatim)"].block:
        return old["Last request (verbatim)"].block
    text = first_request(pieces)
    if text is None:
        return ""
    cut = text if len(text) <= GOAL_CHARS else text[:GOAL_CHARS] + "…"
    return fence(cut)


def _old_parts(old: dict[str, Part]) -> _Parts:
    parts = _Parts()
    for title, place in OLD_PLACES.items():
        if title in old:
            getattr(parts, place).extend(lines_of(old[title].bullets))
    for line in lines_of(old["Steps"].bullets) if "Steps" in old else ():
        if line.head.startswith("* Request:"):
            parts.goal.append(line)
        elif line.errors or line.head.startswith(("* Context:", "* Result:")):
            parts.findings.append(line)
        else:
            parts.done.append(line)
    return parts


def _place(d: Digest, pos: int, parts: _Parts) -> None:
    """Put one piece's lines where they belong."""
    if d.number is None:
        target = parts.goal if d.label.startswith("Request:") else parts.findings
        target.append(as_line(d, pos))
        return
    for sentence in decisions(d.text):
        parts.decisions.append(Line(pos, f"* Step {d.number}: {sentence}", (),
                                    (d.number, d.number), others=1))
    if d.status in ("error", "no result"):
        parts.findings.append(as_line(d, pos))
        return
    parts.done.append(as_line(d, pos, DONE_FACTS))
    what = ", ".join(dict.fromkeys(d.tools)) or "said"
    parts.findings.append(as_line(d, pos, FOUND_FACTS, text=f"* Step {d.number} ({what}):",
                                  optional=True))


def decisions(text: str) -> list[str]:
    """The sentences of `text` that state a decision or its reason, short."""
    found: list[str] = []
    for sentence in _SENTENCES.split(text):
        if _CUE.search(sentence) and len(found) < MAX_DECISIONS:
            short = shorten(sentence, 200).replace(";", ",")
            if short and short not in found:
                found.append(short)
    return found

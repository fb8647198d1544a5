"""What the `llm` summarizer makes of the model's answers: its sections, set in the
Frame of what ctxpack writes itself (a counted line of the archived steps and the
verbatim sections), or one line for a step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import HEADING, Piece
from ._digest import folded, last_request
from ._endpoint import Failed
from ._layout import Doc, Line, Section, fold_line, render
from ._merge import lines_of, pending_section, request_section
from ._prompts import SECTIONS
from .extractive import LAST_REQUEST, PENDING, PENDING_SECTIONS, STEP_SECTIONS, STEPS

OWN_SECTIONS = frozenset({STEPS, LAST_REQUEST, PENDING})  # ctxpack writes these
# The model's sections titled as ctxpack's verbatim ones (a later compress would take
# their words for the transcript's own) are renamed.
RETITLED = {SECTIONS[3]: f"{SECTIONS[3]} (summarized)"}
_FENCE = re.compile(r"`{3,}|~{3,}")
LINE_CHARS = 400  # a step line is cut to this


@dataclass(frozen=True, slots=True)
class Frame:
    """What ctxpack writes around the model's sections: a counted line of the steps
    archived (so far) and the verbatim sections."""

    steps: Line
    verbatim: tuple[Section, ...]
    archived: bool

    @classmethod
    def of(cls, older: tuple[Piece, ...], pieces: tuple[Piece, ...], first: int,
           old: dict[str, Any], archived: bool) -> Frame:
        """The frame of a summary of `older` and `pieces`, numbered from `first`, that
        carries on the earlier summary parsed as `old`."""
        earlier = [ln for title in STEP_SECTIONS if title in old
                   for ln in lines_of(old[title].bullets)]
        everything = [*earlier, folded(older + pieces, first)]
        steps = Line(everything[-1].pos, fold_line(everything, "messages"),
                     steps=_span(everything), others=sum(ln.others for ln in everything))
        old_pending = next((old[t] for t in PENDING_SECTIONS if t in old), None)
        verbatim = (request_section(LAST_REQUEST, last_request(older + pieces),
                                    old.get(LAST_REQUEST)),
                    pending_section(PENDING, older + pieces, old_pending))
        return cls(steps, tuple(s for s in verbatim if s is not None), archived)

    def around(self, body: list[Section]) -> str:
        """The whole summary: heading, the model's sections `body`, the steps line, the
        verbatim items."""
        return render(Doc.of([*body, Section(STEPS, lines=(self.steps,)), *self.verbatim],
                             self.archived))


def _span(lines: Iterable[Line]) -> tuple[int, int] | None:
    spans = [ln.steps for ln in lines if ln.steps]
    return (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None


# An answer that opens so, with no section of a summary in it, declines the task.
_REFUSAL = re.compile(
    r"\W*(?:(?:I['’]?m|I am) (?:so )?sorry|sorry\b|I apologi[sz]e|unfortunately,? I\b"
    r"|I (?:can(?:no|['’])?t|won['’]t|will not|am unable|am not able|['’]m unable|['’]m not able)"
    r"|as an AI\b)", re.IGNORECASE)


def refusal(answer: str) -> bool:
    """Does the model's answer decline to summarize rather than summarize?"""
    text = answer.strip()
    return bool(_REFUSAL.match(text)) and not re.search(r"^#{1,3} ", text, re.MULTILINE)


def own_words(answer: str) -> list[Section]:
    """The model's answer as sections, its text kept in order; a heading of ctxpack's own
    it repeats is left out, text under no heading becomes a section of its own, and
    headings inside a section are made bold lines, so they cannot open sections. An
    answer that is a refusal raises Failed."""
    if refusal(answer):
        raise Failed("the model declined to write the summary (its answer is a refusal)")
    found: list[tuple[str, list[str]]] = [("Summary", [])]
    fence = ""
    for raw in answer.strip().splitlines():
        mark = _FENCE.match(raw.lstrip())
        if fence or mark:
            closes = fence and raw.strip().startswith(fence) and not raw.strip().strip(fence[0])
            fence = "" if closes else fence or (mark.group() if mark else "")
            found[-1][1].append(raw)
        elif (m := re.match(r"#{1,3} +(.+?)\s*#*\s*$", raw)) and raw.strip() != HEADING:
            found.append((m.group(1).strip(), []))
        elif raw.strip() != HEADING:
            found[-1][1].append(re.sub(r"^#{4,} +(.+)$", r"**\1**", raw))
    if fence:  # cut short inside a code block: close it, or it would swallow the rest
        found[-1][1].append(fence)
    sections = [Section(RETITLED.get(title, title), block="\n".join(lines).strip("\n"),
                        fixed=True)
                for title, lines in found if title not in OWN_SECTIONS and "".join(lines).strip()]
    if not sections:
        raise Failed("the model answered with no summary text")
    return sections


def one_line(answer: str) -> str:
    """A step line from the model's answer: its first line of words that is not a
    heading, without a bullet or a step number of its own, whitespace folded, at most
    LINE_CHARS."""
    for raw in answer.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        line = re.sub(r"^\s*(?:[*\-•]\s*)?(?:\**Step\s*\d+\**\s*[:.)-]\s*)?", "", raw)
        line = " ".join(line.split())
        if line:
            return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + "…"
    return ""

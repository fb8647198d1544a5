"""The default summarizer: offline and deterministic, one line per archived step.

Each step becomes `* Step N: <tool>(<key args>) -> <status>; <facts>`; the last request
and the pending items follow verbatim. An earlier summary is continued, not summarized.
"""

from __future__ import annotations

from collections.abc import Callable

from . import Count, Piece, Region
from ._budget import fit
from ._digest import as_line, digest, fence, folded, last_request
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
    request_section,
    split_region,
)

STEPS = "Steps"
LAST_REQUEST = "Last request (verbatim)"
PINNED = "Pinned (verbatim)"
PENDING = "Pending (verbatim)"
# Sections of an earlier structured summary that hold step lines, and its pending items.
STEP_SECTIONS = (STEPS, "Completed work", "Important findings")
PENDING_SECTIONS = (PENDING, "Pending items")


class ExtractiveSummarizer:
    """A line per step with its key arguments, status and verbatim facts."""

    name = "extractive"

    def write(self, region: Region, max_tokens: int, count: Count) -> str:
        """The summary of `region` (continuing `region.previous`), fit to `max_tokens`."""
        return fit(document(region), max_tokens, count)


def document(region: Region, heads: Callable[[Piece, int], str | None] | None = None) -> Doc:
    """The extractive summary of `region` before fitting; `heads` may give a step's line
    its own words (`* Step N: ...`, its facts still after them), None keeping the usual."""
    older, pieces, previous = split_region(region)
    old = parse(previous)
    lines = _old_step_lines(old)
    number = last_step(old)
    if older:
        lines.append(folded(older, number + 1))
        number += sum(u.is_step for u in older)
    for piece in pieces:
        if piece.is_step:
            number += 1
        own = heads(piece, number) if heads and piece.is_step else None
        lines.append(as_line(digest(piece, number if piece.is_step else None), number,
                             text=own or ""))
    old_pending = next((old[t] for t in PENDING_SECTIONS if t in old), None)
    return Doc.of([
        *carried(old, (*STEP_SECTIONS, *PENDING_SECTIONS, LAST_REQUEST, PINNED, FOCUS)),
        focus_section(region),
        pinned_section(region, old.get(PINNED)),
        Section(STEPS, lines=tuple(lines)),
        request_section(LAST_REQUEST, last_request(older + pieces), old.get(LAST_REQUEST)),
        pending_section(PENDING, older + pieces, old_pending),
    ], region.archived)


def pinned_section(region: Region, old: Part | None) -> Section | None:
    """The messages `--pin` keeps, verbatim: an earlier summary's, then this region's."""
    blocks = [old.block] if old is not None and old.block else []
    blocks += [fence(text) for text in region.pinned]
    return Section(PINNED, block="\n".join(blocks), fixed=True) if blocks else None


def _old_step_lines(old: dict[str, Part]) -> list[Line]:
    """Step lines of an earlier summary in step order (a structured one has them in two places)."""
    lines = [ln for title in STEP_SECTIONS if title in old for ln in lines_of(old[title].bullets)]
    return sorted(lines, key=lambda ln: ln.pos)  # stable: an extractive body is already in order

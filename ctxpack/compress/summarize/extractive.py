"""The default summarizer: offline and deterministic, one line per archived step.

Each step becomes `* Step N: <tool>(<key args>) -> <status>; <facts>`; the last request
and the pending items follow verbatim. An earlier summary is continued, not summarized.
"""

from __future__ import annotations

from . import Count, Region
from ._budget import fit
from ._layout import Doc, Line, Section
from ._merge import (
    Part,
    carried,
    last_step,
    lines_of,
    parse,
    pending_section,
    request_section,
    split_region,
)
from ._steps import as_line, digest, folded, last_request

STEPS = "Steps"
LAST_REQUEST = "Last request (verbatim)"
PENDING = "Pending (verbatim)"
# Sections of an earlier structured summary that hold step lines, and its pending items.
STEP_SECTIONS = (STEPS, "Completed work", "Important findings")
PENDING_SECTIONS = (PENDING, "Pending items")


class ExtractiveSummarizer:
    """A line per step with its key arguments, status and verbatim facts."""

    name = "extractive"

    def summarize(self, region: Region, max_tokens: int, count: Count) -> str:
        """The summary of `region` (continuing `region.previous`), fit to `max_tokens`."""
        older, units, previous = split_region(region)
        old = parse(previous)
        lines = _old_step_lines(old)
        number = last_step(old)
        if older:
            lines.append(folded(older, number + 1))
            number += sum(u.is_step for u in older)
        for unit in units:
            if unit.is_step:
                number += 1
            lines.append(as_line(digest(unit, number if unit.is_step else None), number))
        old_pending = next((old[t] for t in PENDING_SECTIONS if t in old), None)
        doc = Doc.of([
            *carried(old, (*STEP_SECTIONS, *PENDING_SECTIONS, LAST_REQUEST)),
            Section(STEPS, lines=tuple(lines)),
            request_section(LAST_REQUEST, last_request(older + units), old.get(LAST_REQUEST)),
            pending_section(PENDING, older + units, old_pending),
        ], region.archived)
        return fit(doc, max_tokens, count)


def _old_step_lines(old: dict[str, Part]) -> list[Line]:
    """Step lines of an earlier summary in step order (a structured one has them in two places)."""
    lines = [ln for title in STEP_SECTIONS if title in old for ln in lines_of(old[title].bullets)]
    return sorted(lines, key=lambda ln: ln.pos)  # stable: an extractive body is already in order

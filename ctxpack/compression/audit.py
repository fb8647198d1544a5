"""The retention audit: which of a source's facts a summary still shows verbatim.

Fast on long summaries: each fact is looked up by its ends, not searched for.
"""

from __future__ import annotations

from dataclasses import dataclass

from .facts import CATEGORIES, Facts

GRAM = 6  # the length of the summary pieces a fact is looked up by: see `retention`


@dataclass(frozen=True, slots=True)
class Retention:
    """How many facts of one category a summary kept, and which it dropped."""

    total: int
    kept: int
    dropped: tuple[str, ...]

    @property
    def ratio(self) -> float:
        return self.kept / self.total if self.total else 1.0


def retention(source: Facts, summary: str) -> dict[str, Retention]:
    """For each category, how many of the source facts appear verbatim in the summary."""
    # Lookups, where a search would read the whole summary once per fact: a fact shorter
    # than GRAM is in it if it is one of its pieces that long; a longer one can only start
    # where its first GRAM characters do, and end where its last do: it is compared there
    # alone, from whichever of the two places are fewer.
    pieces = {summary[i : i + n] for n in range(GRAM) for i in range(len(summary) - n + 1)}
    at: dict[str, list[int]] = {}
    for i in range(len(summary) - GRAM + 1):
        at.setdefault(summary[i : i + GRAM], []).append(i)

    def dropped_fact(x: str) -> bool:
        if len(x) < GRAM:
            return x not in pieces
        starts, ends = at.get(x[:GRAM]), at.get(x[-GRAM:])
        if starts is None or ends is None:
            return True
        if len(ends) < len(starts):
            back = len(x) - GRAM
            return not any(summary.startswith(x, i - back) for i in ends if i >= back)
        return not any(summary.startswith(x, i) for i in starts)

    out: dict[str, Retention] = {}
    for name in CATEGORIES:
        items: tuple[str, ...] = getattr(source, name)
        dropped = tuple(filter(dropped_fact, items))
        out[name] = Retention(len(items), len(items) - len(dropped), dropped)
    return out

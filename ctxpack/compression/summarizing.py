"""Stage 3: when the context is over its trigger, archive the oldest region that must go
and put one summary message in its place.

The kept head (system prompts, the task) and the newest units stay. The search starts at
the first cut where the rest and a reserve for the summary are under the target
(`first_end`), and the region ends at the first cut from there where the rest and its
summary are, but never later than the floor, which keeps the newest steps and rounds the
settings ask for: there it stops, under the target or not (the hard limit, `limit`,
takes it from there). A summary is written only for the cuts that a low estimate of it
leaves under the target.
"""

from __future__ import annotations

from .plan import Edits, Plan, Summary
from .summary import OVERHEAD, caps, draft, ends, first_end, floor, least_total


def summarize(plan: Plan) -> Edits:
    """The summary of the oldest region that brings the plan under its target."""
    candidates = ends(plan)
    if not candidates:
        return Edits(note="no region could be archived")
    lowest = floor(plan)
    cap = caps(plan)
    start = first_end(plan, candidates, lowest)
    least = least_total(plan)
    chosen = None
    for end in (c for c in candidates if c >= start):
        if end < lowest and end != candidates[-1] and least(end, cap(end)) > plan.target:
            continue  # its summary cannot leave the plan under the target
        chosen = draft(plan, end, cap(end), cap(end))
        if plan.total_with(chosen) <= plan.target or end >= lowest:
            break  # later ends archive more: the first that fits is the one
    assert chosen is not None
    return Edits(summary=roomier(plan, chosen))


def roomier(plan: Plan, summary: Summary) -> Summary:
    """Where the target cannot be met (the newest steps kept are over it), the summary
    given the room the limit leaves beside them, up to max_summary_tokens: more of the
    facts it archives stay in sight. (Kept only if it fits the limit.) A plan that meets
    the target keeps its room below the trigger, so that the next turns do not trigger
    a compress again at once."""
    if plan.total_with(summary) <= plan.target:
        return summary
    room = min(plan.options.max_summary_tokens,
               plan.limit - (plan.total_with(summary) - summary.tokens) - OVERHEAD)
    if room <= summary.max_tokens or not summary.squeezed and summary.cap >= room:
        return summary
    wider = draft(plan, summary.end, room, summary.cap)
    if wider.tokens <= summary.tokens or plan.total_with(wider) > plan.limit:
        return summary
    return wider

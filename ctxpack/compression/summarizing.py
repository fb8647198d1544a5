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

from collections.abc import Callable

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
    # the ends worth a draft, up to the first at the floor (the search stops there)
    tried: list[int] = []
    for end in (c for c in candidates if c >= start):
        if end < lowest and end != candidates[-1] and least(end, cap(end)) > plan.target:
            continue  # its summary cannot leave the plan under the target
        tried.append(end)
        if end >= lowest:
            break
    drafts: dict[int, Summary] = {}

    def fits(i: int) -> bool:
        if i not in drafts:
            drafts[i] = draft(plan, tried[i], cap(tried[i]), cap(tried[i]))
        return plan.total_with(drafts[i]) <= plan.target

    return Edits(summary=roomier(plan, drafts[first_fit(len(tried), fits)]))


def first_fit(n: int, fits: Callable[[int], bool]) -> int:
    """The first of `n` ends whose summary `fits`, else the last: later ends archive
    more, so the totals nearly always fall as the ends go on. Found by trying the
    first, then ends 2, 4, 8... apart until one fits, then bisecting the last gap: a
    draft for each try, about 2 log2 k for the k-th end where a scan of them all drafts
    k. (Where the totals do not fall, an end that fits may be passed over for a later
    one, or for the last.)"""
    if n == 0:
        raise AssertionError("no end to try")
    low, step = 0, 1  # the ends before `low` do not fit
    at = 0
    while not fits(at):
        if at == n - 1:
            return at  # none fits: the last, at the floor
        low, at = at + 1, min(n - 1, at + step)
        step *= 2
    while low < at:  # `at` fits; the first that fits is in [low, at]
        mid = (low + at) // 2
        if fits(mid):
            at = mid
        else:
            low = mid + 1
    return at


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

"""Stage 4, the hard limit: a plan still over the budget (or, without one, the model's
window) has its summary condensed to the room that is left, then more of the newest units
archived, one at a time, until it fits; `check_fits` says when nothing can.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..calibration import no_room
from ..errors import CannotFit
from .plan import Edits, Plan, Summary
from .reading import Input
from .settings import Options
from .summarizers._layout import CONDENSED
from .summary import caps, draft, ends, fixed


def limit(plan: Plan) -> Edits:
    """A summary that brings the plan under its limit, if there is one; else the last
    tried (`check_fits` then says how far over it is)."""
    s = plan.summary
    if s is None or plan.total <= max(plan.limit, plan.target):
        return Edits()
    cap = caps(plan)
    n = len(plan.read.messages)
    chosen: Summary = s
    for end in (c for c in ends(plan) if c >= s.end):
        if end > s.end:
            chosen = draft(plan, end, cap(end), cap(end))
            if plan.total_with(chosen) <= plan.target:
                break
        if plan.total_with(chosen) > plan.limit:
            room = plan.limit - fixed(plan) - plan.tokens(end, n)
            chosen = draft(plan, end, max(1, min(cap(end), room)), cap(end))
        if plan.total_with(chosen) <= plan.limit:
            break
    if chosen.max_tokens < chosen.cap and CONDENSED in chosen.text:
        what = "budget" if plan.by_budget else "context window"
        warning = (f"the {what} leaves the summary {chosen.max_tokens:,} tokens (it could "
                   f"take {chosen.cap:,}): it is condensed more than it would be")
        return Edits(summary=replace(chosen, squeezed=True), warnings=(warning,))
    return Edits(summary=chosen)


def missed_target(plan: Plan) -> list[str]:
    """The warning of a plan that summarized and fits its limit but not its target: where
    part of the bill is not in the file, that part is said, since no compression of the
    file takes it off (the next turns may trigger compress again). The default target is
    otherwise a soft aim (room to grow); one that was asked for is not."""
    unlogged = min(plan.read.bill.unlogged, plan.billed)
    if plan.summary is None or plan.billed <= plan.billed_target:
        return []
    if unlogged:
        return [f"target {plan.billed_target:,} billed tokens not reached: {unlogged:,} are "
                f"not in the file and the messages kept are billed "
                f"{plan.billed - unlogged:,} (the output {plan.billed:,}); the next turns "
                f"may trigger compress again"]
    if plan.options.target:
        return [f"the output ({plan.billed:,} tokens) is above the target "
                f"({plan.billed_target:,}); the newest steps it keeps are large"]
    return []


def of_settings(plan: Plan) -> list[str]:
    """The warnings that depend on the settings alone (and the model's window they are
    held to): a budget above the window, a target not below the trigger. A `Context`
    says each once however many times it compresses, and a run over many files or rows
    once for them all (`of_report`)."""
    return settings_warnings(plan.options, plan.window, plan.read.model, plan.billed_target,
                             plan.billed_trigger)


def of_report(report: Any, options: Options) -> list[str]:
    """`of_settings` of the compress `report` tells of, run with `options`."""
    return settings_warnings(options, report.context_window, report.model, report.target,
                             report.trigger)


def settings_warnings(options: Options, window: int, model: str, target: int,
                      trigger: int) -> list[str]:
    """What `of_settings` says: of a `budget` asked for above the `model`'s `window` (the
    window is what compress holds the context to: a prompt past it is refused whatever
    the budget), and of a `--target` asked for at or above the `trigger` (billed tokens,
    as `target`, the one aimed at): what compress writes may be compressed again at the
    next turn (the default target is always below it); above the limit (the budget, else
    the window), compress aims at the limit instead (see Plan.billed_target)."""
    said = []
    if options.budget and options.budget > window:
        said.append(f"the budget asked for ({options.budget:,} tokens) is more than the "
                    f"{window:,}-token window of {model}: the window is used instead")
    asked = options.target
    if asked and 0 < trigger <= target:  # (a report of no plan has neither)
        again = "the next turns may trigger compress again"
        by_budget = bool(options.budget) and options.budget < window
        limit = options.budget if by_budget else window
        if asked > limit:
            of = "budget" if by_budget else f"{window:,}-token window of {model}"
            said.append(f"the target asked for ({asked:,} billed tokens) is above the {of}: "
                        f"compress aims at the {'budget' if by_budget else 'window'} "
                        f"({limit:,}) instead; {again}")
        else:
            said.append(f"the target asked for ({target:,} billed tokens) is not below the "
                        f"trigger ({trigger:,}): {again}")
    return said


def check_room(read: Input, options: Options) -> None:
    """Raise CannotFit, before any work, where what is sent besides the messages fills
    the model's window, or the budget asked for below it (see calibration.no_room): no
    compression of the file makes room for them."""
    said = no_room(read.bill, read.window, read.model, options.budget)
    if said:
        what = "budget" if options.budget and options.budget < read.window else \
            "context window"
        raise CannotFit(f"cannot fit the {what}: {said}")


def check_fits(plan: Plan) -> list[str]:
    """Raise CannotFit when the plan is over its limit; the warnings of one that fits."""
    total = plan.total
    s = plan.summary
    if total <= plan.limit:
        return of_settings(plan) + missed_target(plan)
    what = "budget" if plan.by_budget else f"context window of {plan.read.model}"
    left = f"{plan.billed:,} tokens"
    if plan.read.bill.kind != "exact":  # the limit is of the bill; the parts are counts
        left += (f" billed ({plan.read.bill.kind}; the messages count {total:,}, the rest "
                 "is sent but not in the file)")
    parts = [f"the system prompt and task take {plan.tokens(0, s.head):,}",
             f"the summary {s.tokens:,}"] if s else []
    counts = plan.counts
    parts.append(f"the newest message {counts[-1] if counts else 0:,}")
    if s is None and plan.options.summarize:
        parts.append("no older messages could be summarized: the task and the steps "
                     "--keep-steps and --keep-rounds keep are all there is")
    raise CannotFit(
        f"cannot fit the {what} ({plan.billed_limit:,} tokens): the best compression leaves "
        f"{left} ({', '.join(parts)})",
        "raise the budget (--budget, or budget= in the library), pick a model with a "
        "larger window, or lower the truncate limits")

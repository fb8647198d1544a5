"""The compress pipeline, in its order: truncate, mask, summarize, the hard limit, and
(for `--strategy llm`) the model's rewrite of the summary.

Each stage reads the plan and returns its `Edits`; `apply` makes the next plan and notes
what the stage did. A stage runs when its setting is on and the plan needs it. Whatever
the stages did, the plan must fit the limit in the end, or compress stops
(`limiting.check_fits`; before any stage, where what is sent besides the messages fills
the window or the budget, `limiting.check_room`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .limiting import check_fits, check_room, limit
from .masking import mask
from .plan import Edits, Plan, apply
from .reading import Input
from .rewriting import rewrite
from .settings import Options
from .summarizing import summarize
from .truncation import truncate


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Plan], Edits]
    wanted: Callable[[Plan], bool] = lambda plan: True


def stages(options: Options, *, dry_run: bool = False, cache: bool = True) -> list[Stage]:
    """The stages the settings turn on, in order."""
    out = []
    if options.truncate:
        out.append(Stage("truncate", truncate))
    if options.mask:
        out.append(Stage("mask", mask))
    if options.summarize:
        out += [Stage("summarize", summarize, _summary_wanted),
                Stage("limit", limit, lambda plan: plan.summary is not None
                      and plan.total > max(plan.limit, plan.target))]
        if options.strategy == "llm":
            out.append(Stage("llm", rewrite(dry_run, cache),
                             lambda plan: plan.summary is not None))
    return out


def _summary_wanted(plan: Plan) -> bool:
    """The context as read is over the trigger, and what truncating and masking left is
    still over the target (or the trigger, where a target asked for is above it): a
    compress that acts goes down to its target, so the next turns do not trigger it (and
    an agent loop's prompt keeps its prefix between compressions). A context under the
    trigger is never summarized, though huge outputs in it were truncated."""
    return plan.triggered and plan.total > min(plan.target, plan.trigger)


def run(read: Input, options: Options, *, dry_run: bool = False, cache: bool = True) -> Plan:
    """The plan of a compress, with what each stage did; CannotFit if no plan fits.
    `dry_run`: no LLM endpoint is asked anything; `cache`: the llm summarizer's lines
    may be kept across runs."""
    check_room(read, options)
    plan = Plan(read, options)
    for stage in stages(options, dry_run=dry_run, cache=cache):
        if stage.wanted(plan):
            plan = apply(plan, stage.run(plan), stage.name)
    plan = never_worse(plan)
    return apply(plan, Edits(warnings=tuple(check_fits(plan))))


def never_worse(plan: Plan) -> Plan:
    """The plan, or where it is not smaller than its input, the input as it is (saying so)."""
    if not plan.changed or plan.total < plan.read.total:
        return plan
    return apply(Plan(plan.read, plan.options, stages=plan.stages), Edits(warnings=(
        f"the compressed result ({plan.total:,} tokens) is not smaller than the input "
        f"({plan.read.total:,}): the input is kept as it is",)))

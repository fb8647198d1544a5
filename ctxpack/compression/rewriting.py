"""Stage 5, for `--strategy llm`: a model writes the summary of the region the stages
before chose (sized with the extractive summary), in the room that one left under the
same bound. If the model fails, the extractive summary stays and a warning says why.
With `llm_verify`, a second request shows the model the facts its summary dropped; the
summary it writes then is kept only if the retention audit finds more facts in it.

A model's summary that keeps clearly fewer of the facts an agent acts on (VERIFIED) than
the extractive summary of the same region is rejected as a failure is: the extractive
one stays. Clearly fewer: under half as many, and at least MIN_SHORTFALL fewer (so
that a region of a few facts does not turn on one of them). See `short_of`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .plan import Edits, Plan, Summary
from .summary import made, retention_of

if TYPE_CHECKING:
    from .summarizers.llm import LLMSummarizer


def rewrite(dry_run: bool, cache: bool) -> Callable[[Plan], Edits]:
    """The stage: with `dry_run` nothing is sent; `cache` keeps per-step lines across runs."""

    def stage(plan: Plan) -> Edits:
        from .summarizers._endpoint import Failed
        from .summarizers.llm import LLMSummarizer

        chosen = plan.summary
        if chosen is None:
            return Edits()
        if dry_run:
            note = {"used": False, "fallback": None, "note": "dry run: nothing was sent"}
            return Edits(summary=replace(chosen, llm=note))
        total, counter = plan.total, plan.read.counter
        bound = plan.target if total <= plan.target else plan.limit
        framing = chosen.tokens - counter.text(chosen.text)
        room = min(chosen.max_tokens, bound - (total - chosen.tokens) - framing)
        info = counter.table.find(plan.options.llm_model)
        llm = LLMSummarizer(plan.options, info.context_window if info else None, cache)
        try:
            text = llm.write(chosen.region, room, counter.text)
        except Failed as exc:
            outcome = {**llm.outcome.to_dict(), "used": False, "fallback": str(exc)}
            return Edits(summary=replace(chosen, llm=outcome),
                         warnings=(f"the llm summarizer failed: {exc}; the extractive "
                                   "summary is used instead",))
        written = made(plan, chosen.region, chosen.audited, chosen.end, text, room, chosen.cap,
                       "llm")
        verified: dict[str, Any] = {}
        if plan.options.llm_verify:
            written, verified = verify(plan, llm, written, room)
        outcome = {**llm.outcome.to_dict(), "used": True, "fallback": None}
        if verified:
            outcome["verify"] = verified
        short = short_of(written, chosen)
        if short is not None:
            outcome.update(used=False, fallback=short)
            return Edits(summary=replace(chosen, llm=outcome),
                         warnings=(f"the llm summary was rejected: {short}; the extractive "
                                   "summary is used instead",))
        return Edits(summary=replace(written, squeezed=chosen.squeezed, llm=outcome))

    return stage


# What `--llm-verify` shows the model its summary dropped: the facts an agent acts on.
VERIFIED = ("paths", "urls", "errors", "identifiers", "commands")


MIN_SHORTFALL = 3  # the fewest facts fewer than the extractive summary's that reject one


def checked(summary: Summary) -> tuple[int, list[str]]:
    """How many of the facts of VERIFIED kinds that `summary` archives it shows verbatim,
    and those it dropped."""
    found = retention_of(summary)
    return (sum(found[k]["kept"] for k in VERIFIED),
            [x for k in VERIFIED for x in found[k]["dropped"]])


def short_of(written: Summary, extractive: Summary) -> str | None:
    """Why the model's summary `written` keeps clearly fewer of the facts checked than the
    extractive summary of the same region: under half as many, and at least
    MIN_SHORTFALL fewer; None when it does not."""
    ours, _ = checked(written)
    theirs, _ = checked(extractive)
    if ours * 2 >= theirs or theirs - ours < MIN_SHORTFALL:
        return None
    return (f"it keeps {ours:,} of the facts checked (paths, URLs, errors, identifiers, "
            f"commands), the extractive summary {theirs:,}: under half as many")


def verify(plan: Plan, llm: LLMSummarizer, written: Summary,
           room: int) -> tuple[Summary, dict[str, Any]]:
    """`written`, or the summary the model writes again when shown what `written` dropped
    of the facts the retention audit reads, if that one keeps more of them; and what
    was done, for the report."""
    from .summarizers._endpoint import Failed

    before, dropped = checked(written)
    done: dict[str, Any] = {"asked": False, "kept_before": before, "dropped_before": len(dropped),
                            "kept_after": before, "used": False, "note": None}
    if not dropped:
        return written, {**done, "note": "the summary dropped none of the facts checked"}
    if plan.options.llm_per_step:
        return written, {**done, "note": "per-step lines are not written again"}
    try:
        text = llm.revise(written.region, written.text, dropped, room, plan.read.counter.text)
    except Failed as exc:
        return written, {**done, "asked": True, "note": f"the second pass failed: {exc}"}
    again = made(plan, written.region, written.audited, written.end, text, room, written.cap,
                 "llm")
    after, _ = checked(again)
    better = after > before
    return (again if better else written), {**done, "asked": True, "kept_after": after,
                                            "used": better}

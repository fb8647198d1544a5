"""Stage 5, for `--strategy llm`: a model writes the summary of the region the stages
before chose (sized with the extractive summary), in the room that one left under the
same bound. If the model fails, the extractive summary stays and a warning says why.
With `llm_verify`, a second request shows the model the facts its summary dropped; the
summary it writes then is kept only if the retention audit finds more facts in it.
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
        return Edits(summary=replace(written, squeezed=chosen.squeezed, llm=outcome))

    return stage


# What `--llm-verify` shows the model its summary dropped: the facts an agent acts on.
VERIFIED = ("paths", "urls", "errors", "identifiers", "commands")


def verify(plan: Plan, llm: LLMSummarizer, written: Summary,
           room: int) -> tuple[Summary, dict[str, Any]]:
    """`written`, or the summary the model writes again when shown what `written` dropped
    of the facts the retention audit reads, if that one keeps more of them; and what
    was done, for the report."""
    from .summarizers._endpoint import Failed

    def kept(summary: Summary) -> tuple[int, list[str]]:
        found = retention_of(summary)
        return (sum(found[k]["kept"] for k in VERIFIED),
                [x for k in VERIFIED for x in found[k]["dropped"]])

    before, dropped = kept(written)
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
    after, _ = kept(again)
    better = after > before
    return (again if better else written), {**done, "asked": True, "kept_after": after,
                                            "used": better}

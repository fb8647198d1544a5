"""Stage 5, for `--strategy llm`: a model writes the summary of the region the stages
before chose (sized with the extractive summary), in the room that one left under the
same bound. If the model fails, the extractive summary stays and a warning says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .plan import Edits, Plan
from .summary import made


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
        return Edits(summary=replace(written, squeezed=chosen.squeezed,
                                     llm={**llm.outcome.to_dict(), "used": True,
                                          "fallback": None}))

    return stage

"""Stage 1: every tool output over the limits is cut down to them (see `cutting`);
masking may replace a cut output later, when the budget needs it.
"""

from __future__ import annotations

from ..archive import reference
from ..transcript import Text
from .cutting import MARKER, cut
from .outputs import archived_as, done, over, result_message
from .plan import Edit, Edits, Plan


def truncate(plan: Plan) -> Edits:
    """The outputs over the limits, cut; outputs compress wrote before are left as they are."""
    read = plan.read
    candidates = []
    for i in range(len(read.messages)):
        m = read.messages[i]
        if not result_message(m) or done(m):
            continue  # an output compress wrote is within the limits already
        candidates += [(i, j) for j in range(len(m.tool_results)) if over(plan, i, j)]
    whole = read.originals(i for i, _ in candidates)
    edits = []
    for i, j in candidates:
        result = whole[i].tool_results[j]
        if not result.parts or not all(isinstance(p, Text) for p in result.parts) \
                or MARKER in result.text:  # cut before (under other limits): left as it is
            continue
        archived = archived_as(plan, i)
        cutting = cut(result.text, plan.options.limits, read.counter.text,
                      reference(archived) if archived else None)
        if cutting is not None:
            edits.append(Edit(i, j, cutting.text, {
                "call_id": result.call_id, "action": "truncated",
                "tokens_before": cutting.tokens_before, "tokens_after": cutting.tokens_after,
                "lines_cut": cutting.lines_cut}))
    return Edits(tuple(edits))

"""Stage 2: an output older than the newest `keep_observations` steps becomes one line
naming the call, what was removed and how to get it back.

The result record and its call id stay, so the call still has its answer; the full
output is archived and `ctxpack restore --only ID` brings it back.
"""

from __future__ import annotations

from .args import call_label
from .cutting import MARKER
from .outputs import archived_as, done, over, result_message
from .plan import Edit, Edits, Plan

PREFIX = f"{MARKER}output of "
FAILED = " (an error) masked:"
PROBE_ID = "o-0000000000"  # ids follow line numbers, which a compress shifts: decide on one


def mask(plan: Plan) -> Edits:
    """Placeholders for the outputs before the boundary that are over the truncate limits
    (truncation leaves those to this stage), or else bigger than their placeholder."""
    read, options = plan.read, plan.options
    calls = {c.id: c for m in read.messages for c in m.tool_calls if c.id is not None}
    chosen = []
    for i in range(boundary(plan)):
        m = read.messages[i]
        if not result_message(m):
            continue
        earlier = done(m)
        for j, result in enumerate(m.tool_results):
            output = read.outputs[i][j]
            if "masked" in earlier.get(result.call_id, ()) or output.masked:
                continue
            tokens = read.result_tokens(i, j)
            call = calls.get(result.call_id) if result.call_id else None
            what = call_label(call) if call is not None else "a tool call"
            probe = placeholder(what, tokens, output.lines,
                                PROBE_ID if options.archive else None, output.failed)
            # (a token is at least a byte: a text longer in tokens is surely longer)
            size = len(probe.encode("utf-8", "surrogatepass"))
            if tokens <= size and read.counter.text(probe) >= tokens \
                    and not (options.truncate and over(plan, i, j)):
                continue  # the placeholder would not be smaller
            chosen.append((i, j, what, tokens, output, result.call_id))
    edits = []
    for i, j, what, tokens, output, call_id in chosen:
        text = placeholder(what, tokens, output.lines, archived_as(plan, i), output.failed)
        edits.append(Edit(i, j, text, {"call_id": call_id, "action": "masked",
                                       "tokens_before": tokens,
                                       "tokens_after": read.counter.text(text)}))
    return Edits(tuple(edits))


def boundary(plan: Plan) -> int:
    """Where the newest `keep_observations` steps begin: outputs before it are masked."""
    keep = plan.options.keep_observations
    steps = [u for u in plan.read.units() if u.step]
    if len(steps) <= keep:
        return 0
    return steps[-keep].start if keep else len(plan.read.messages)


def placeholder(what: str, tokens: int, lines: int, item_id: str | None,
                error: bool = False) -> str:
    """The one line that stands in for a masked output of the call `what` names; `error`:
    the output reported a failure; `item_id` None: the output is not archived."""
    status = FAILED if error else " masked:"
    where = f"restore with `ctxpack restore --only {item_id}`" if item_id else "not kept"
    return f"{PREFIX}{what}{status} {tokens:,} tokens, {lines:,} lines; {where}]"


def is_masked(text: str) -> bool:
    return text.startswith(PREFIX)


def masked_failure(text: str) -> bool:
    """Does this placeholder say the output it stands for failed?"""
    return is_masked(text) and FAILED in text

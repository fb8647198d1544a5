"""Which tool outputs compress may edit, and what it knows of one without its text."""

from __future__ import annotations

from ..transcript import META_KEY, Message
from .plan import Plan


def result_message(m: Message) -> bool:
    """A message of tool results on a line of its own: the only kind compress edits."""
    return m.role != "assistant" and bool(m.tool_results) and len(m.lines) == 1


def done(m: Message) -> dict[str | None, set[str]]:
    """What earlier compress runs did to each result of a message."""
    meta = m.raw.get(META_KEY) if isinstance(m.raw, dict) else None
    out: dict[str | None, set[str]] = {}
    for item in (meta or {}).get("items") or ():
        out.setdefault(item.get("call_id"), set()).add(item.get("action"))
    return out


def over(plan: Plan, i: int, j: int) -> bool:
    """Does output j of message i pass a limit? Told without its text."""
    o = plan.read.outputs[i][j]
    return o.text_only and plan.options.limits.passed(o.lines, o.bytes,
                                                      lambda: plan.read.result_tokens(i, j))


def archived_as(plan: Plan, i: int) -> str | None:
    """The id under which the outputs of message i are archived; None if they are not."""
    return plan.read.line_id(i) if plan.options.archive else None

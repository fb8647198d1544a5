"""The retention audit of the whole output: of the facts a compress took out of sight,
those the model still sees anywhere in what it is given.

What is taken out of sight: every message the summary archives, its outputs read whole
(where an earlier compress masked or cut them, as first read, from its archive), the
earlier summary it replaces, and every output masked or truncated, as they were read
(`audited_messages`: the archived messages read). Each of their facts is seen if the
output's text (the summary, the placeholders, the messages kept, a truncated output as
cut) holds it verbatim. A fact is searched for
only where its first and last few characters both occur in the output; an output over
AUDIT_TOKENS (a window of a million tokens, a budget of half a huge file) is not
audited, and the report says so.
"""

from __future__ import annotations

from typing import Any

from ..transcript import Message
from .audit import GRAM
from .facts import CATEGORIES, Facts, merge
from .plan import Plan
from .region import out_of_sight

DROPPED_LISTED = 20  # of each kind, the dropped facts the report names
AUDIT_TOKENS = 250_000  # the largest output audited (its pieces are held in memory)


def sight(plan: Plan) -> dict[str, Any] | None:
    """What the model still sees of what the plan took out of sight, by kind: total,
    kept and (up to DROPPED_LISTED) dropped; None when nothing was taken out."""
    if not plan.changed:
        return None
    read, s = plan.read, plan.summary
    region = range(s.start, s.end) if s is not None else range(0)
    if plan.total > AUDIT_TOKENS:
        return {"messages": len(region), "audited_messages": 0, "outputs": 0,
                "skipped": f"the output is over {AUDIT_TOKENS:,} tokens: not audited"}
    edited = [i for i in plan.edited if i not in region]
    whole = read.originals(edited)
    texts = [whole[i].tool_results[e.output].text for i in edited for e in plan.edits_of(i)]
    archived = out_of_sight(plan, s.start, s.end) if s is not None else []
    sources: list[Facts] = read.facts(archived + texts)
    kept = [i for i in range(len(read.messages)) if i not in region]
    # outputs compress replaced, or set aside when read, whole (in one pass over the file)
    whole = read.originals(i for i in kept if plan.edits_of(i)
                           or any(not r.parts for r in read.messages[i].tool_results))
    shown = "\n".join([s.text] if s is not None else []) + "\n" + "\n".join(
        _text(plan, whole.get(i, read.messages[i]), i) for i in kept)
    grams = {shown[i:i + GRAM] for i in range(len(shown) - GRAM + 1)}

    def seen(fact: str) -> bool:
        if len(fact) >= GRAM and (fact[:GRAM] not in grams or fact[-GRAM:] not in grams):
            return False
        return fact in shown

    facts = merge(*sources)
    out: dict[str, Any] = {"messages": len(region), "audited_messages": len(region),
                           "outputs": len(texts)}
    for name in CATEGORIES:
        items = getattr(facts, name)
        dropped = [x for x in items if not seen(x)]
        out[name] = {"total": len(items), "kept": len(items) - len(dropped),
                     "dropped": dropped[:DROPPED_LISTED]}
    return out


def _text(plan: Plan, m: Message, i: int) -> str:
    """The text of message i (`m`, whole) as the output has it: its outputs as compress
    left them."""
    return m.text_with({e.output: e.text for e in plan.edits_of(i)})

"""Stage 2: when the context is over its trigger, the oldest tool outputs become
placeholders, only as many as bring it down to the target.

Outputs of the newest `keep_observations` steps, and the newest `keep_output_tokens`
tokens of output (at most half the target), are never masked, nor is an output whose
placeholder would free little. A placeholder keeps what a model needs to act on the
output within a fixed small cost (`FACT_TOKENS`): its exit status, error lines, first
and last line, paths and URLs, its size, and the command that restores it. The result
record and its call id stay, so the call still has its answer; the full output is
archived and `ctxpack restore --only ID` brings it back.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .args import call_label
from .cutting import MARKER
from .facts import Facts
from .failures import MAX_LINE, exit_code
from .outputs import archived_as, done, result_message
from .plan import Edit, Edits, Plan

PREFIX = f"{MARKER}output of "
FAILED = " (an error) masked:"
FACT_TOKENS = 120  # what a placeholder may spend on the output's facts, at most
FACT_CHARS = 3 * FACT_TOKENS  # the facts are chosen by characters, then counted exactly
LINE_CHARS = 160  # of the first and last line shown
# the lines a shell tool wraps an output in (Codex's): the exit row says what they do
_WRAPPER = re.compile(r"(?:Exit code: -?\d+|Wall time: [\d.]+ seconds|Output:"
                      r"|Total output lines: \d+)$")
MIN_FREED = 50  # an output whose placeholder frees fewer tokens than this stays


def mask(plan: Plan) -> Edits:
    """Placeholders for the oldest outputs, as many as bring the plan to its target."""
    if not plan.triggered:
        return Edits(note="under the trigger: nothing masked")
    read = plan.read
    calls = {c.id: c for m in read.messages for c in m.tool_calls if c.id is not None}
    order = candidates(plan)
    edits: list[Edit] = []
    total = plan.total
    for lo in range(0, len(order), BATCH):
        batch = [(i, j) for i, j in order[lo:lo + BATCH] if _now(plan, i, j) >= MIN_FREED]
        whole = read.originals({i for i, _ in batch})
        texts = [whole[i].tool_results[j].text for i, j in batch]
        for (i, j), text, facts in zip(batch, texts, read.facts(texts), strict=True):
            if total <= plan.target:
                return Edits(tuple(edits))
            result = read.messages[i].tool_results[j]
            call = calls.get(result.call_id) if result.call_id else None
            what = call_label(call) if call is not None else "a tool call"
            tokens, output = read.result_tokens(i, j), read.outputs[i][j]
            new = placeholder(what, tokens, output.lines, archived_as(plan, i),
                              output.failed, text, facts, read.counter.text)
            after = read.counter.text(new)
            if _now(plan, i, j) - after < MIN_FREED:
                continue  # the placeholder would free little
            total -= _now(plan, i, j) - after
            edits.append(Edit(i, j, new, {"call_id": result.call_id, "action": "masked",
                                          "tokens_before": tokens, "tokens_after": after}))
    return Edits(tuple(edits))


BATCH = 64  # outputs whose whole text is read at a time (older ones may be read again)


def _now(plan: Plan, i: int, j: int) -> int:
    """Tokens of output j of message i as planned (truncated, or as read)."""
    edit = plan.outputs.get((i, j))
    return edit.tokens if edit is not None else plan.read.result_tokens(i, j)


def candidates(plan: Plan) -> list[tuple[int, int]]:
    """The outputs masking may replace, oldest first: before the newest steps and the
    newest output tokens it keeps, not masked before, and text."""
    read = plan.read
    end = boundary(plan)
    keep = min(plan.options.keep_output_tokens, plan.target // 2)
    found: list[tuple[int, int]] = []
    for i in range(len(read.messages) - 1, -1, -1):
        m = read.messages[i]
        if not result_message(m):
            continue
        earlier = done(m)
        for j in range(len(m.tool_results) - 1, -1, -1):
            output = read.outputs[i][j]
            if keep > 0:
                keep -= _now(plan, i, j)
                continue
            if i >= end or "masked" in earlier.get(m.tool_results[j].call_id, ()) \
                    or output.masked or not output.text_only:
                continue
            found.append((i, j))
    return found[::-1]


def boundary(plan: Plan) -> int:
    """Where the newest `keep_observations` steps begin: outputs from there stay."""
    keep = plan.options.keep_observations
    steps = [u for u in plan.read.units() if u.step]
    if len(steps) <= keep:
        return 0
    return steps[-keep].start if keep else len(plan.read.messages)


def placeholder(what: str, tokens: int, lines: int, item_id: str | None,
                error: bool = False, text: str = "", facts: Facts | None = None,
                count: Callable[[str], int] | None = None) -> str:
    """What stands in for a masked output of the call `what` names: a first line saying
    what it was and how to restore it (`item_id` None: it is not archived; `error`: it
    reported a failure), then what of its `text` and `facts` fits in FACT_TOKENS
    (`count` tells a text's tokens)."""
    status = FAILED if error else " masked:"
    where = f"restore with `ctxpack restore --only {item_id}`" if item_id else "not kept"
    head = f"{PREFIX}{what}{status} {tokens:,} tokens, {lines:,} lines; {where}]"
    cost = min(FACT_TOKENS, tokens // 4)  # a small output is masked for little else
    room = 3 * cost
    while text and room > 0:
        body = "\n".join(fact_rows(text, facts, room))
        used = count(body) if count is not None and body else 0
        if used <= cost:
            return f"{head}\n{body}" if body else head
        room = min(room - 1, room * cost // used)  # fewer characters to a token than thought
    return head


def fact_rows(text: str, facts: Facts | None, room: int = FACT_CHARS) -> list[str]:
    """Lines of what a model needs of an output, most needed first, within `room`
    characters: exit status, error lines, first and last line, then paths and URLs."""
    rows: list[str] = []

    def add(row: str) -> bool:
        nonlocal room
        if len(row) + 1 > room:
            return False
        rows.append(row)
        room -= len(row) + 1
        return True

    code = exit_code(text)
    if code is not None:
        add(f"exit {code}")
    errors = [x for x in (facts.errors if facts else ()) if not _WRAPPER.match(x)][:3]
    for line in errors:
        add(line[:MAX_LINE] if "error" in line.lower() else f"error: {line[:MAX_LINE]}")
    shown = [s.strip() for s in text.strip().split("\n")
             if s.strip() and not _WRAPPER.match(s.strip())]
    if shown and shown[0] not in errors:
        add(f"first: {shown[0][:LINE_CHARS]}")
    if len(shown) > 1 and shown[-1] not in errors:
        add(f"last: {shown[-1][:LINE_CHARS]}")
    said = "\n".join(rows)
    lists = {name: [x for x in items if x not in said]
             for name, items in (("paths", facts.paths if facts else ()),
                                 ("urls", facts.urls if facts else ()))}
    # the URLs may take half the room left, and the paths what they leave
    urls = _listed("urls", lists["urls"], room // 2 if lists["paths"] else room)
    paths = _listed("paths", lists["paths"], room - len(urls) - 1)
    for row in (paths, urls):
        if row:
            add(row)
    return rows


def _listed(name: str, items: list[str], room: int) -> str:
    """`name: a b c (+N more)` within `room` characters, or "" if none fits."""
    taken: list[str] = []
    used = len(name) + 2 + 12  # the name, and room for the count of those left out
    for x in items:
        if used + len(x) + 1 > room:
            break
        taken.append(x)
        used += len(x) + 1
    if not taken:
        return ""
    more = f" (+{len(items) - len(taken)} more)" if len(taken) < len(items) else ""
    return f"{name}: {' '.join(taken)}{more}"


def is_masked(text: str) -> bool:
    return text.startswith(PREFIX)


def masked_failure(text: str) -> bool:
    """Does this placeholder say the output it stands for failed?"""
    return is_masked(text) and FAILED in text.split("\n", 1)[0]

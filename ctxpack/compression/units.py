"""Where a transcript may be cut without splitting a tool call from its result.

A cut before message i is allowed when every call made before i is answered
before i, i does not fall inside a run of assistant messages (Codex writes
reasoning, text and each call as separate items of one turn) and message i is not
sent joined to the one before it (`Message.joined`). The messages
between two cuts form a unit: a step, or a lone message.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ..transcript import Message, opens_with_summary


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    step: bool  # holds an assistant message
    human: bool  # starts with a person's message


def cuts(messages: Sequence[Message]) -> list[int]:
    """Every index where the messages may be cut, in order (0 and len(messages) included)."""
    answered = _answer_index(messages)
    out = [0]
    reach = -1  # the furthest index at which a call made so far gets its result
    for i, m in enumerate(messages):
        if i and reach < i and not m.joined \
                and not (m.role == "assistant" and messages[i - 1].role == "assistant"):
            out.append(i)
        for n, _ in enumerate(m.tool_calls):
            reach = max(reach, answered.get((i, n), -1))
    if out[-1] != len(messages):
        out.append(len(messages))
    return out


def _answer_index(messages: Sequence[Message]) -> dict[tuple[int, int], int]:
    """(message, call number) -> index of the message that answers that call: the first
    result with its id after it (models do reuse ids: tau-bench's gpt-4o runs do)."""
    by_id: dict[str, list[int]] = {}
    legacy: list[int] = []  # results of calls that carry no id, in order
    for i, m in enumerate(messages):
        for r in m.tool_results:
            if r.call_id is None:
                legacy.append(i)
            else:
                by_id.setdefault(r.call_id, []).append(i)
    out: dict[tuple[int, int], int] = {}
    for i, m in enumerate(messages):
        for n, call in enumerate(m.tool_calls):
            answers = by_id.get(call.id) if call.id is not None else None
            at = bisect_left(answers, i) if answers else 0
            if answers and at < len(answers):
                out[(i, n)] = answers[at]
            elif call.id is None:
                later = next((k for k in legacy if k > i), None)
                if later is not None:
                    legacy.remove(later)
                    out[(i, n)] = later
    return out


def head_end(messages: Sequence[Message], allowed: list[int]) -> int:
    """Where the kept head ends: after the messages before the first assistant message
    (system prompts, the task and whatever came with it, such as a local command run
    before it) or before an earlier compress's summary; always at an allowed cut."""
    end = next((i for i, m in enumerate(messages)
                if m.role == "assistant" or opens_with_summary(m)), len(messages))
    return next(c for c in allowed if c >= end)


def units_of(messages: Sequence[Message], allowed: list[int], start: int) -> list[Unit]:
    """The units from `start` (an allowed cut) to the end."""
    bounds = [c for c in allowed if c >= start]
    return [Unit(a, b, any(messages[i].role == "assistant" for i in range(a, b)),
                 messages[a].human)
            for a, b in zip(bounds, bounds[1:], strict=False)]

"""units.py, where a transcript may be cut: never between a tool call and its result
(ids may be reused: a call is answered by the next result with its id), nor inside one
turn of assistant messages; and where the kept head ends."""

from __future__ import annotations

import io

from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.compression.units import cuts, head_end, units_of
from ctxpack.loader import load, load_values

from .transcripts import agent_run, fitted


def test_reused_call_ids_pair_each_call_with_the_next_result() -> None:
    t = load(io.BytesIO(agent_run(9, reuse_ids=True)))
    allowed = cuts(t.messages)
    assert allowed == [0, 1, *range(2, len(t.messages) + 1, 2)]  # a cut after every step
    data = agent_run(30, reuse_ids=True)
    result = compress_file(io.BytesIO(data), Options(budget=fitted(data) * 3 // 4))
    assert result.report.summary is not None
    out = load(io.BytesIO(result.data))
    for i, m in enumerate(out.messages):  # every call still has its result right after it
        if m.tool_calls:
            assert out.messages[i + 1].tool_results[0].call_id == m.tool_calls[0].id


def test_parallel_calls_and_a_turn_of_assistant_messages_are_one_unit() -> None:
    call = {"type": "function", "function": {"name": "bash", "arguments": "{}"}}
    t = load_values([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Check both."},
        {"role": "assistant", "content": "Looking."},  # one turn: text, then its calls
        {"role": "assistant", "content": None,
         "tool_calls": [{**call, "id": "a"}, {**call, "id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"},
        {"role": "user", "content": "Thanks."},
        {"role": "assistant", "content": "Done."},
    ])
    allowed = cuts(t.messages)
    assert allowed == [0, 1, 2, 6, 7, 8]
    assert head_end(t.messages, allowed) == 2  # the system prompt and the task
    found = units_of(t.messages, allowed, 2)
    assert [(u.start, u.end, u.step, u.human) for u in found] == [
        (2, 6, True, False), (6, 7, False, True), (7, 8, True, False)]

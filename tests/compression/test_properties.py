"""Property tests of compress on generated tool-calling transcripts.

Whatever the transcript and the settings: restore(compress(x)) == x, tool calls
and results are never split (the output validates when the input did), the
output is within the budget or compress says it cannot fit (exit 3), and a
second compress with the same settings changes nothing; one with a smaller budget
merges and still restores to the original.
"""

from __future__ import annotations

import io

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.checks import validate
from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.undo import restore

WORDS = st.sampled_from(["ok", "error:", "src/app.py", "FAILED", "https://x.io/a", "42",
                         "Traceback", "the", "value", "def f():", "    return 1", "é", "🙂"])
TEXT = st.lists(WORDS, min_size=1, max_size=40).map(" ".join)
OUTPUT = st.lists(TEXT, min_size=1, max_size=60).map("\n".join)


@st.composite
def transcripts(draw: st.DrawFn, reuse_ids: bool = False) -> bytes:
    """A Chat Completions run: system, task, then steps with parallel calls and chat;
    `reuse_ids`: later steps may use the ids of earlier ones again, as some models do."""
    lines = [{"role": "system", "content": draw(TEXT)}, {"role": "user", "content": draw(TEXT)}]
    n = 0
    for _ in range(draw(st.integers(1, 14))):
        if reuse_ids and n and draw(st.booleans()):
            n = 0  # the next step's ids are an earlier step's
        kind = draw(st.sampled_from(["step", "step", "step", "say", "ask"]))
        if kind == "say":
            lines.append({"role": "assistant", "content": draw(TEXT)})
        elif kind == "ask":
            lines.append({"role": "user", "content": draw(TEXT)})
        else:
            ids = [f"call_{n + k}" for k in range(draw(st.integers(1, 3)))]
            n += len(ids)
            calls = [{"id": i, "type": "function", "function": {
                "name": draw(st.sampled_from(["bash", "read_file", "grep"])),
                "arguments": orjson.dumps({"command": draw(TEXT)}).decode()}} for i in ids]
            lines.append({"role": "assistant", "content": None, "tool_calls": calls})
            lines += [{"role": "tool", "tool_call_id": i, "content": draw(OUTPUT)} for i in ids]
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=transcripts(), share=st.floats(0.2, 1.0), keep=st.integers(0, 4),
       max_lines=st.integers(3, 40), steps=st.integers(0, 3))
def test_compress_invariants(data: bytes, share: float, keep: int, max_lines: int,
                             steps: int) -> None:
    total = compress_file(io.BytesIO(data), Options(truncate=False, mask=False,
                                                     summarize=False)).report.tokens_after
    budget = max(int(total * share), 1)
    options = Options(budget=budget, keep_observations=keep, keep_steps=steps,
                      limits=Limits(max_lines=max_lines), max_summary_tokens=400)
    try:
        result = compress_file(io.BytesIO(data), options)
    except CannotFit:
        return
    out = result.data
    assert result.report.tokens_after <= budget
    assert validate(load(io.BytesIO(out))) == []
    restored = restore(result.lines)
    assert restored == data
    assert compress_file(io.BytesIO(out), options).data == out
    smaller = Options(budget=max(budget * 3 // 4, 1), keep_observations=keep,
                      keep_steps=steps, limits=Limits(max_lines=max_lines),
                      max_summary_tokens=400)
    try:
        twice = compress_file(io.BytesIO(out), smaller)
    except CannotFit:
        return
    assert validate(load(io.BytesIO(twice.data))) == []
    assert restore(twice.lines) == data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=transcripts(reuse_ids=True), share=st.floats(0.2, 1.0), steps=st.integers(0, 3))
def test_reused_call_ids_never_split_a_call_from_its_result(data: bytes, share: float,
                                                            steps: int) -> None:
    total = compress_file(io.BytesIO(data), Options(truncate=False, mask=False,
                                                     summarize=False)).report.tokens_after
    options = Options(budget=max(int(total * share), 1), keep_steps=steps,
                      max_summary_tokens=400)
    try:
        result = compress_file(io.BytesIO(data), options)
    except CannotFit:
        return
    out = [orjson.loads(line) for line in result.lines if line.strip()]
    open_calls: list[str] = []  # Chat Completions: the results right after their call
    for m in out:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, "a result without its call"
            open_calls.remove(m["tool_call_id"])
            continue
        assert not open_calls, "a call without its result"
        open_calls = [c["id"] for c in m.get("tool_calls") or ()]
    assert not open_calls
    assert restore(result.lines) == data

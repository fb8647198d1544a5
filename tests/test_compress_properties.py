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
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack import archive
from ctxpack.compress import compress_file
from ctxpack.compress.options import Options
from ctxpack.compress.truncate import Limits
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.validate import validate

pytestmark = pytest.mark.usefixtures("exact_tokens")

WORDS = st.sampled_from(["ok", "error:", "src/app.py", "FAILED", "https://x.io/a", "42",
                         "Traceback", "the", "value", "def f():", "    return 1", "é", "🙂"])
TEXT = st.lists(WORDS, min_size=1, max_size=40).map(" ".join)
OUTPUT = st.lists(TEXT, min_size=1, max_size=60).map("\n".join)


@st.composite
def transcripts(draw: st.DrawFn) -> bytes:
    """A Chat Completions run: system, task, then steps with parallel calls and chat."""
    lines = [{"role": "system", "content": draw(TEXT)}, {"role": "user", "content": draw(TEXT)}]
    n = 0
    for _ in range(draw(st.integers(1, 14))):
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
    restored, _ = archive.restore_layers(result.lines, "out.jsonl")
    assert b"".join(restored) == data
    assert compress_file(io.BytesIO(out), options).data == out
    smaller = Options(budget=max(budget * 3 // 4, 1), keep_observations=keep,
                      keep_steps=steps, limits=Limits(max_lines=max_lines),
                      max_summary_tokens=400)
    try:
        twice = compress_file(io.BytesIO(out), smaller)
    except CannotFit:
        return
    assert validate(load(io.BytesIO(twice.data))) == []
    assert archive.restore(twice.lines) == data

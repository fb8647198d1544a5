"""Content a file records only as the provider's token counts (thinking stored empty or as
a summary, reasoning held encrypted) is billed at those counts: the provider's tokens are
not multiplied by the slope that turns ctxpack's count into them (ctxpack.calibration)."""

from __future__ import annotations

import io
import json

from ctxpack.breakdown import REASONING, stats
from ctxpack.calibration import bill, prompts_of, slope_of, with_hidden
from ctxpack.loader import load
from ctxpack.transcript import RecordedCall

from .conftest import SAMPLES

OPENCODE = SAMPLES / "opencode" / "book-search.opencode.json"


def test_a_hidden_reply_is_taken_as_the_count_its_recorded_output_is_billed_at() -> None:
    slope = slope_of("claude-opus-4-7")
    hidden = RecordedCall(1, 10_000, 1_450, "claude-opus-4-7", hidden=True)
    assert with_hidden([100, 20, 300], [hidden], slope)[1] == round(1_450 / slope)
    # a reply whose visible text counts more than that keeps its count
    assert with_hidden([100, 2_000, 300], [hidden], slope)[1] == 2_000
    encrypted = RecordedCall(1, 10_000, 400, "gpt-5.5", reasoning=1_100)
    assert with_hidden([100, 20, 300], [encrypted], 1.1)[1] == 20 + 1_000


def test_the_bill_adds_a_hidden_reply_at_its_recorded_tokens() -> None:
    counts = [100, 20, 300]  # the task, a reply whose thinking is stored empty, a result
    call = RecordedCall(1, 10_000, 1_450, "claude-opus-4-7", hidden=True)
    b = bill(counts, [call], model="claude-opus-4-7", format="claude-code", exact=False,
             estimated=False)
    assert b.kind == "anchored"
    # the prompt recorded, the reply as the provider counted it, the rest at the slope
    expected = 10_000 + 1_450 + b.slope * 300  # (the priming is in the prompt recorded)
    assert abs(b.tokens - expected) <= 2, (b.tokens, expected)


def test_reasoning_sent_back_for_a_while_is_in_those_prompts_at_its_recorded_tokens() -> None:
    turn = RecordedCall(1, 1_000, 520, "gpt-5.1-codex-max", reasoning=515, until=3)
    later = RecordedCall(2, 2_000, 20, "gpt-5.1-codex-max")
    sizes = prompts_of([100, 20, 300, 50], [turn, later], 1.03)
    assert sizes[1] - sizes[0] == 20 + round(515 / 1.03)


def _signed_export(output: int) -> bytes:
    """The OpenCode sample with its first step's reasoning signed (as Anthropic's Claude 4
    models return it: the text a summary) and recorded at `output` tokens."""
    doc = json.loads(OPENCODE.read_bytes())
    step = doc["messages"][1]
    for part in step["parts"]:
        if part["type"] == "reasoning":
            part["metadata"] = {"anthropic": {"signature": "EuoDCokBCA8YAipA" + "x" * 200}}
        if part["type"] == "step-finish":
            part["tokens"]["output"] = output
    return json.dumps(doc, indent=2).encode()


def test_an_opencode_step_whose_thinking_is_signed_counts_at_its_recorded_output() -> None:
    plain = load(OPENCODE)
    assert not any(c.hidden for c in plain.calls)
    # (2,000: the next step's prompt grew by 511, and resends it; ctxpack.recorded holds a
    # hidden reply to that growth, 2,000 besides)
    t = load(io.BytesIO(_signed_export(2_000)), format="opencode")
    assert [c.hidden for c in t.calls] == [True] + [False] * (len(t.calls) - 1)
    before = stats(OPENCODE, cache=False)
    after = stats(io.BytesIO(_signed_export(2_000)), format="opencode", cache=False)
    slope = slope_of(t.calls[-1].model)
    # the step's reply is its recorded output, in the provider's tokens; the difference is
    # thinking the file holds only as a summary
    raised = after.by_role[REASONING] - before.by_role.get(REASONING, 0)
    assert raised > 0 and after.tokens - before.tokens == raised
    reply = round(2_000 / slope)
    assert raised < reply
    # a step recording less than the reply's count changes nothing
    small = stats(io.BytesIO(_signed_export(5)), format="opencode", cache=False)
    assert small.tokens == before.tokens

"""masking.py, the mask stage: over the trigger, the oldest outputs become placeholders,
only as many as bring the context to the target; the newest steps and output tokens
stay; a placeholder keeps the output's facts within a fixed cost and names the id that
restores it; an output its placeholder would not shrink stays."""

from __future__ import annotations

import io
from dataclasses import replace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.compression import compress_file
from ctxpack.compression.masking import FACT_TOKENS, MIN_FREED, candidates, mask
from ctxpack.compression.plan import apply
from ctxpack.compression.settings import Options

from ..conftest import SAMPLES
from .transcripts import agent_run, jsonl, plan_of, records, squeezed, tokens


def result_messages(plan, start: int = 0, end: int | None = None) -> set[int]:
    return {i for i, m in enumerate(plan.read.messages[start:end], start) if m.tool_results}


def test_masked_outputs_name_their_archive_id() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    result = compress_file(path, squeezed(path, keep_observations=1, summarize=False))
    changed = [r for r in records(result.data) if r.get("ctxpack", {}).get("kind")
               == "observations"]
    assert changed
    for r in changed:
        assert r["ctxpack"]["id"] in r["content"]
        assert r["ctxpack"]["items"][0]["action"] == "masked"


def test_under_the_trigger_nothing_is_masked() -> None:
    data = agent_run(12)
    assert mask(plan_of(data, Options(keep_observations=0))).outputs == ()
    assert mask(plan_of(data, Options(budget=tokens(data), keep_observations=0))).outputs == ()
    assert mask(plan_of(data, Options(budget=tokens(data) - 1, keep_observations=0))).outputs


@pytest.mark.parametrize("keep", [0, 1, 3, 6])
def test_the_outputs_before_the_newest_steps_are_masked(keep: int) -> None:
    data = agent_run(6)
    plan = plan_of(data, squeezed(data, keep_observations=keep))
    n = len(plan.read.messages)  # system, task, then a call and its result a step
    edits = mask(plan)
    assert {e.message for e in edits.outputs} == result_messages(plan, 0, n - 2 * keep)
    for e in edits.outputs:
        k = (e.message - 3) // 2  # the step's number
        assert e.text.startswith(f"[ctxpack: output of bash(command=make target_{k})")
        assert f"ctxpack restore --only {plan.read.line_id(e.message)}" in e.text
        assert e.item["action"] == "masked" and e.item["call_id"] == f"call_{k}"
        assert e.item["tokens_before"] == plan.read.result_tokens(e.message, e.output)
        assert e.item["tokens_after"] == plan.read.counter.text(e.text)
        assert e.tokens < e.item["tokens_before"]


def test_a_placeholder_keeps_the_outputs_facts_within_a_fixed_cost() -> None:
    lines = ["$ make all", *(f"compiling src/mod_{k}/file_{k}.c" for k in range(400)),
             "see https://ci.example.org/build/77 for the log",
             "src/mod_3/file_3.c:12:5: error: expected ';' before '}' token",
             "make: *** [all] Error 2", "Exit code: 2"]
    data = jsonl({"role": "user", "content": "Build it."},
                 {"role": "assistant", "content": None, "tool_calls": [{
                     "id": "c1", "type": "function",
                     "function": {"name": "bash", "arguments": '{"command": "make all"}'}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "\n".join(lines)},
                 {"role": "assistant", "content": "It failed."})
    plan = plan_of(data, squeezed(data, keep_observations=0, truncate=False))
    (edit,) = mask(plan).outputs
    head, _, body = edit.text.partition("\n")
    assert "(an error) masked" in head and "ctxpack restore --only" in head
    assert "exit 2" in body and "expected ';' before '}' token" in body
    assert "first: $ make all" in body and "last: make: *** [all] Error 2" in body
    assert "src/mod_0/file_0.c" in body and "https://ci.example.org/build/77" in body
    assert "more)" in body  # the paths that did not fit are counted
    assert plan.read.counter.text(body) <= FACT_TOKENS


def test_without_archive_the_placeholder_says_nothing_is_kept() -> None:
    failed = {"role": "tool", "tool_call_id": "c1",
              "content": "Traceback (most recent call last):\n" + "  frame\n" * 200
              + "KeyError: 'x'"}
    data = jsonl({"role": "user", "content": "Run it."},
                 {"role": "assistant", "content": None, "tool_calls": [{
                     "id": "c1", "type": "function",
                     "function": {"name": "bash", "arguments": '{"command": "run"}'}}]},
                 failed, {"role": "assistant", "content": "It failed."})
    (bare,) = mask(plan_of(data, squeezed(data, keep_observations=0, archive=False))).outputs
    assert bare.text.split("\n")[0].endswith("; not kept]")
    assert "ctxpack restore" not in bare.text and "KeyError: 'x'" in bare.text


def test_an_output_whose_placeholder_frees_little_stays() -> None:
    data = agent_run(4)
    short = [orjson.loads(line) for line in data.splitlines()]
    short[3]["content"] = "ok"  # the first step's output
    plan = plan_of(jsonl(*short), squeezed(jsonl(*short), keep_observations=0))
    masked = {e.message for e in mask(plan).outputs}
    assert 3 not in masked
    for e in mask(plan).outputs:
        assert e.item["tokens_before"] - e.item["tokens_after"] >= MIN_FREED // 2


def test_the_newest_output_tokens_stay() -> None:
    data = agent_run(10)
    plan = plan_of(data, squeezed(data, keep_observations=0))
    read = plan.read
    sizes = {i: read.result_tokens(i, 0) for i in result_messages(plan)}
    newest_two = sorted(sizes)[-2:]
    keep = sum(sizes[i] for i in newest_two)
    # the target caps what is kept: half of it
    options = squeezed(data, keep_observations=0, keep_output_tokens=keep, target=2 * keep)
    masked = {e.message for e in mask(replace(plan, options=options)).outputs}
    assert not masked & set(newest_two) and masked


def test_an_output_masked_before_is_not_masked_again() -> None:
    data = agent_run(6)
    options = squeezed(data, keep_observations=2, summarize=False)
    once = compress_file(io.BytesIO(data), options).data
    again = replace(options, budget=tokens(once) - 1)
    assert mask(plan_of(once, again)).outputs == ()
    fewer = mask(plan_of(once, replace(again, keep_observations=1))).outputs
    assert {e.message for e in fewer} == {len(plan_of(once).read.messages) - 3}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(2, 14), share=st.floats(0.3, 0.99), keep=st.integers(0, 4),
       keep_tokens=st.sampled_from([0, 300, 2_000]))
def test_masking_is_oldest_first_and_only_as_much_as_the_target_needs(
        steps: int, share: float, keep: int, keep_tokens: int) -> None:
    data = agent_run(steps)
    options = Options(budget=max(1, int(tokens(data) * share)), keep_observations=keep,
                      keep_output_tokens=keep_tokens, truncate=False)
    plan = plan_of(data, options)
    edits = mask(plan)
    after = apply(plan, edits)
    order = candidates(plan)
    masked = [(e.message, e.output) for e in edits.outputs]
    assert set(masked) <= set(order)  # never a protected output
    assert masked == order[: len(masked)]  # oldest first, none skipped (all free plenty)
    if len(masked) < len(order):  # it stopped: the target was met
        assert after.total <= plan.target
    if masked:  # and one fewer would not have met it
        last = edits.outputs[-1]
        assert after.total + last.item["tokens_before"] - last.tokens > plan.target

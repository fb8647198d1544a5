"""masking.py, the mask stage: outputs older than the newest `keep_observations` steps
become one line naming the call, the size removed, whether it failed, and the id that
restores it; an output its placeholder would not shrink stays."""

from __future__ import annotations

import io
from dataclasses import replace

import orjson
import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.masking import mask
from ctxpack.compression.settings import Options

from ..conftest import SAMPLES
from .transcripts import agent_run, jsonl, plan_of, records


def result_messages(plan, start: int = 0, end: int | None = None) -> set[int]:
    return {i for i, m in enumerate(plan.read.messages[start:end], start) if m.tool_results}


def test_masked_outputs_name_their_archive_id() -> None:
    result = compress_file(SAMPLES / "support-chat.openai.jsonl",
                           Options(keep_observations=1, summarize=False))
    changed = [r for r in records(result.data) if r.get("ctxpack", {}).get("kind")
               == "observations"]
    assert changed
    for r in changed:
        assert r["ctxpack"]["id"] in r["content"]
        assert r["ctxpack"]["items"][0]["action"] == "masked"


@pytest.mark.parametrize("keep", [0, 1, 3, 6])
def test_the_outputs_before_the_newest_steps_are_masked(keep: int) -> None:
    plan = plan_of(agent_run(6), Options(keep_observations=keep))
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


def test_a_placeholder_says_the_output_failed_and_that_none_is_kept_without_archive() -> None:
    failed = {"role": "tool", "tool_call_id": "c1",
              "content": "Traceback (most recent call last):\n" + "  frame\n" * 200
              + "KeyError: 'x'"}
    data = jsonl({"role": "user", "content": "Run it."},
                 {"role": "assistant", "content": None, "tool_calls": [{
                     "id": "c1", "type": "function",
                     "function": {"name": "bash", "arguments": '{"command": "run"}'}}]},
                 failed, {"role": "assistant", "content": "It failed."})
    (edit,) = mask(plan_of(data, Options(keep_observations=0))).outputs
    assert "(an error) masked" in edit.text and "ctxpack restore" in edit.text
    (bare,) = mask(plan_of(data, Options(keep_observations=0, archive=False))).outputs
    assert bare.text.endswith("; not kept]") and "ctxpack restore" not in bare.text


def test_an_output_shorter_than_its_placeholder_stays() -> None:
    data = agent_run(4)
    short = [orjson.loads(line) for line in data.splitlines()]
    short[3]["content"] = "ok"  # the first step's output
    plan = plan_of(jsonl(*short), Options(keep_observations=0))
    assert {e.message for e in mask(plan).outputs} == result_messages(plan) - {3}


def test_an_output_masked_before_is_not_masked_again() -> None:
    data = agent_run(6)
    options = Options(keep_observations=2, summarize=False)
    once = compress_file(io.BytesIO(data), options).data
    assert mask(plan_of(once, options)).outputs == ()
    fewer = mask(plan_of(once, replace(options, keep_observations=1))).outputs
    assert {e.message for e in fewer} == {len(plan_of(once).read.messages) - 3}

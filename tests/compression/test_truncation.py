"""truncation.py, the truncate stage: the outputs over the limits are cut (cutting.py cuts
one), but those the mask stage replaces anyway, and those compress cut before."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson

from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits, line_count
from ctxpack.compression.settings import Options
from ctxpack.compression.truncation import truncate

from .transcripts import agent_run, jsonl, plan_of

LINES = 15  # of each output of agent_run


def test_every_output_over_the_limits_is_cut_masking_on_or_off() -> None:
    # masking replaces only what the budget needs: it may leave any output as it is
    options = Options(limits=Limits(max_lines=LINES - 5), keep_observations=2)
    plan = plan_of(agent_run(6), options)
    n = len(plan.read.messages)
    edits = truncate(plan)
    assert {e.message for e in edits.outputs} == set(range(3, n, 2))  # every output
    for e in edits.outputs:
        assert line_count(e.text) <= LINES - 5 and "cut " in e.text
        assert f"ctxpack:{plan.read.line_id(e.message)}" in e.text  # where the whole is
        assert e.item["action"] == "truncated" and e.item["lines_cut"] > 0
        assert e.item["tokens_before"] == plan.read.result_tokens(e.message, e.output)
        assert e.tokens == plan.read.counter.text(e.text) < e.item["tokens_before"]
    assert truncate(replace(plan, options=replace(options, mask=False))) == edits


def test_outputs_within_the_limits_are_left_alone() -> None:
    plan = plan_of(agent_run(6), Options(limits=Limits(max_lines=LINES), mask=False))
    assert truncate(plan).outputs == ()


def test_an_output_cut_before_is_not_cut_again_under_smaller_limits(tmp_path: Path) -> None:
    """Without its metadata (--strip-metadata), a cut output is known by its marker line:
    tighter limits the next time leave it as the first compress left it."""
    log = "\n".join(f"step {n}: compiled module_{n}.c in {n % 7} ms" for n in range(400))
    records = [{"role": "user", "content": "Build it."},
               {"role": "assistant", "content": None, "tool_calls": [{
                   "id": "call_1", "type": "function",
                   "function": {"name": "bash", "arguments": '{"command": "make"}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": log},
               {"role": "assistant", "content": "Built."}]
    path = tmp_path / "build.jsonl"
    path.write_bytes(jsonl(*records))
    once = compress_file(path, Options(limits=Limits(max_lines=100), mask=False,
                                       summarize=False), strip_metadata=True)
    assert once.report.truncated == 1
    assert b'"ctxpack"' not in once.data  # no metadata says it was cut
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(once.data)
    again = compress_file(cut, Options(limits=Limits(max_lines=20), mask=False,
                                       summarize=False))
    assert again.report.truncated == 0
    assert again.data == once.data
    with_meta = compress_file(path, Options(limits=Limits(max_lines=100), mask=False,
                                            summarize=False)).data
    plan = plan_of(with_meta, Options(limits=Limits(max_lines=20), mask=False))
    assert orjson.loads(with_meta.splitlines()[2])["ctxpack"]["items"][0]["action"] \
        == "truncated"
    assert truncate(plan).outputs == ()  # nor with its metadata

"""Anthropic managed-agent session events, bare and wrapped, on the corpus and by hand."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import compress, restore
from ctxpack.errors import InputError
from ctxpack.loader import load, write
from ctxpack.transcript import Text, ToolCall

from .conftest import SAMPLES, corpus_params
from .helpers import assert_tool_pairs, ctxpack, records_of


def event(n: int, kind: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"sevt_{n:04d}", "type": kind, "processed_at": "2026-05-12T10:00:00Z",
            **fields}


def wrap(e: dict[str, Any]) -> dict[str, Any]:
    role, _, kind = e["type"].partition(".")
    return {"role": {"agent": "agent", "user": "user"}.get(role, "system"), "kind": kind,
            "time": e["processed_at"], "raw": e}


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def run() -> list[dict[str, Any]]:
    return [
        event(1, "user.message", content=[{"type": "text", "text": "why did it fail?"}]),
        event(2, "span.model_request_start"),
        event(3, "agent.thinking"),
        event(4, "agent.message", content=[{"type": "text", "text": "Looking."}]),
        event(5, "agent.tool_use", name="bash", input={"command": "ls"}),
        event(6, "span.model_request_end", model_request_start_id="sevt_0002",
              model_usage={"input_tokens": 3, "cache_creation_input_tokens": 100,
                           "cache_read_input_tokens": 900, "output_tokens": 20}),
        event(7, "agent.tool_result", tool_use_id="sevt_0005", is_error=True,
              content=[{"type": "text", "text": "denied"}]),
        event(8, "span.model_request_start"),
        event(9, "agent.thinking"),
        event(10, "span.model_request_end", model_request_start_id="sevt_0008",
              model_usage={"input_tokens": 2, "cache_creation_input_tokens": 0,
                           "cache_read_input_tokens": 1010, "output_tokens": 5}),
        event(11, "session.status_idle"),
    ]


def test_a_model_request_is_one_assistant_turn_and_results_are_tool_messages() -> None:
    t = load(io.BytesIO(jsonl(run())))
    assert t.format == "anthropic-events"
    person, turn, result = t.messages  # the thinking-only request writes no message
    assert person.human and person.text == "why did it fail?"
    assert turn.parts == (Text("Looking."), ToolCall("sevt_0005", "bash", '{"command":"ls"}'))
    assert turn.lines == (3, 4, 5)  # its thinking event too
    assert result.role == "tool" and result.tool_results[0].is_error
    assert t.usage["calls"] == 2 and t.usage["input_tokens"] == 1003 + 1012
    assert t.usage["last_input_tokens"] == 1012


def test_the_outcome_graders_usage_is_told_apart_from_the_agents() -> None:
    # the grader's calls (an outcome evaluation) are the run's, not calls of the agent's
    # context: their usage is its own figure, the agent's totals and calls as without it
    graded = [*run(), event(12, "span.outcome_evaluation_start"),
              event(13, "span.outcome_evaluation_end", usage={
                  "input_tokens": 7, "cache_creation_input_tokens": 40,
                  "cache_read_input_tokens": 500, "output_tokens": 30}),
              event(14, "span.outcome_evaluation_end", usage={
                  "input_tokens": 1, "cache_read_input_tokens": 600, "output_tokens": "x"})]
    alone = load(io.BytesIO(jsonl(run())))
    both = load(io.BytesIO(jsonl(graded)))
    assert both.usage["grader_input_tokens"] == 7 + 40 + 500 + 1 + 600
    assert both.usage["grader_output_tokens"] == 30
    assert {k: v for k, v in both.usage.items() if not k.startswith("grader_")
            and k != "whole_run"} == {k: v for k, v in alone.usage.items() if k != "whole_run"}
    assert both.calls == alone.calls


def test_wrapped_lines_read_as_the_bare_events_they_hold() -> None:
    bare, wrapped = load(io.BytesIO(jsonl(run()))), load(io.BytesIO(jsonl(
        [wrap(e) for e in run()])))
    assert [m.parts for m in wrapped.messages] == [m.parts for m in bare.messages]
    assert wrapped.usage == bare.usage


def test_a_wrapped_line_with_role_system_is_no_chat_message() -> None:
    # the wrapper's `role` once made these lines OpenAI chat messages
    lines = [wrap(event(1, "session.status_running")), *map(wrap, run())]
    assert load(io.BytesIO(jsonl(lines))).format == "anthropic-events"


@pytest.mark.parametrize("wrapped", [False, True])
def test_compress_summarizes_and_restore_gives_back_exactly(wrapped: bool,
                                                            tmp_path: Path) -> None:
    records = []
    for i in range(12):
        records += [event(100 + 3 * i, "agent.tool_use", name="bash", input={"n": i}),
                    event(101 + 3 * i, "agent.tool_result", tool_use_id=f"sevt_{100 + 3 * i:04d}",
                          content=[{"type": "text", "text": f"line {i}\n" * 400}]),
                    event(102 + 3 * i, "span.model_request_start")]
    records = [run()[0], *records]
    data = jsonl([wrap(r) for r in records] if wrapped else records)
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(data)
    compressed, report = compress(str(src), model="claude-sonnet-4", budget=3000,
                                  truncate=False, mask=False)
    assert report.summary is not None
    write(compressed, out)
    after = load(out)
    summaries = [m for m in after.messages if m.text.startswith("## Archived Session Summary")]
    assert len(summaries) == 1 and summaries[0].role == "user"
    assert len(after.messages) < len(load(src).messages)
    assert after.format == "anthropic-events"
    assert_tool_pairs(after.messages)
    assert restore(str(out)) == data


texts = st.text(max_size=30)
events = st.lists(st.one_of(
    st.builds(lambda t: ("agent.message", {"content": [{"type": "text", "text": t}]}), texts),
    st.builds(lambda t: ("agent.tool_use", {"name": "bash", "input": {"c": t}}), texts),
    st.builds(lambda t, e: ("agent.tool_result", {"content": [{"type": "text", "text": t}],
                                                  "is_error": e}), texts, st.booleans()),
    st.just(("span.model_request_start", {})),
    st.just(("agent.thinking", {})),
), min_size=1, max_size=30)  # (an empty file is no transcript: refused)


@settings(max_examples=150, deadline=None)
@given(events, st.booleans())
def test_any_event_log_round_trips_and_keeps_every_call(items, wrapped) -> None:
    records, last_use = [], None
    for n, (kind, fields) in enumerate(items):
        if kind == "agent.tool_result":
            fields = {**fields, "tool_use_id": last_use}
        e = event(n, kind, **fields)
        last_use = e["id"] if kind == "agent.tool_use" else last_use
        records.append(wrap(e) if wrapped else e)
    data = jsonl(records)
    t = load(io.BytesIO(data))
    calls = [c.id for m in t.messages for c in m.tool_calls]
    assert calls == [f"sevt_{n:04d}" for n, (k, _) in enumerate(items) if k == "agent.tool_use"]
    assert sum(len(m.tool_results) for m in t.messages) == sum(
        k == "agent.tool_result" for k, _ in items)
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


EVENTS = corpus_params("anthropic-agent-events")


@pytest.mark.corpus
@pytest.mark.parametrize("path", EVENTS)
def test_corpus_is_read_as_events_with_every_call_and_its_usage(path: Path,
                                                                tmp_path: Path) -> None:
    records = records_of(path)
    raw = [r["raw"] for r in records]
    t = load(path)
    assert t.format == "anthropic-events" and t.unsure == ""
    calls = [c for m in t.messages for c in m.tool_calls]
    assert len(calls) == sum(e["type"] == "agent.tool_use" for e in raw) == 92
    assert_tool_pairs(t.messages)
    ends = [e["model_usage"] for e in raw if e["type"] == "span.model_request_end"]
    assert t.usage["calls"] == len(ends)
    assert t.usage["output_tokens"] == sum(u["output_tokens"] for u in ends)
    out = tmp_path / path.name
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


def test_sample_reads_as_events() -> None:
    t = load(SAMPLES / "export-timeout.anthropic-events.jsonl")
    assert t.format == "anthropic-events"
    assert_tool_pairs(t.messages)
    assert [m.role for m in t.messages].count("tool") == 4
    assert t.messages[-1].text.startswith("Cause: migration 0031")


def test_a_bad_field_in_the_last_turn_is_the_problem_of_its_line() -> None:
    data = jsonl([run()[0], event(2, "agent.tool_use", name=["ls"], input={})])
    with pytest.raises(InputError) as info:
        load(io.BytesIO(data))
    assert info.value.line == 2 and "'name' is an array" in info.value.problem


@pytest.mark.parametrize("wrapped", [False, True])
def test_usage_that_cannot_be_true_is_named_at_its_request_end_line(
        wrapped: bool, tmp_path: Path) -> None:
    """The usage is on the `span.model_request_end` line, not on the reply's lines."""
    records = run()
    records[5]["model_usage"]["input_tokens"] = -3
    path = tmp_path / "run.jsonl"
    path.write_bytes(jsonl([wrap(e) if wrapped else e for e in records]))
    problems = ctxpack("validate", str(path))
    assert problems.code == 1
    assert f"{path}:6: recorded usage cannot be true: model_usage.input_tokens -3 (" in problems.out
    f = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert [x["line"] for x in f["usage_set_aside"]] == [6]
    assert f["usage"]["calls"] == 1  # the other request's

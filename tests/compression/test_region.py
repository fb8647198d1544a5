"""region.py, what a summary reads of the messages it archives: the newest pieces whole,
the older without their outputs' text, an earlier summary to continue, and outputs an
earlier compress masked or cut as they first were, from its archive."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.compression import compress_file
from ctxpack.compression.region import summary_region
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.undo import restore

from ..conftest import SAMPLES
from .transcripts import agent_run, billed, fitted, plan_of, squeezed, summary_texts


def test_a_second_compress_summarizes_masked_outputs_from_their_archive(tmp_path: Path) -> None:
    path = SAMPLES / "refactor.codex.jsonl"
    first = tmp_path / "first.jsonl"
    first.write_bytes(compress_file(path, squeezed(path, summarize=False)).data)
    masked = [i for i, m in enumerate(load(first).messages)
              if any("go build" in r.text and "masked" in r.text for r in m.tool_results)]
    assert masked
    assert "(an error) masked" in load(first).messages[masked[0]].tool_results[0].text
    # keep the steps after it: its step is the newest archived, whose line shows its facts
    later = [u for u in plan_of(first).read.units() if u.step and u.start > masked[0]]
    second = compress_file(first, Options(budget=billed(first, fitted(first)) - 1, target=1,
                                          keep_steps=len(later)))
    (summary,) = summary_texts(load(io.BytesIO(second.data)))
    line = next(x for x in summary.splitlines() if "go build" in x)
    assert "-> error" in line  # as the original said, not the placeholder
    assert 'main.go:11:2: "log" imported and not used' in line
    assert restore(second.lines) == path.read_bytes()


def test_the_newest_pieces_are_read_whole_the_older_without_their_outputs() -> None:
    plan = plan_of(agent_run(30), Options(max_summary_tokens=200))
    head, end = plan.read.head, len(plan.read.messages) - 2
    region, audited = summary_region(plan, head, end)
    assert region.older and region.pieces  # more steps than 200 tokens show a line each
    assert len(region.older) + len(region.pieces) == (end - head) // 2
    assert audited == 2 * len(region.pieces)  # the messages read whole
    assert all(r.parts == () for p in region.older for r in p.results)
    assert all(r.is_error for p in region.older for r in p.results)  # "error: step k failed"
    assert all("error: step" in r.text for p in region.pieces for r in p.results)
    assert region.task is not None and region.task.startswith("Fix the failing build.")
    assert region.previous is None


def test_an_earlier_summary_is_continued_not_summarized_again() -> None:
    data = agent_run(20)
    once = compress_file(io.BytesIO(data), Options(budget=fitted(data) * 3 // 4)).data
    (previous,) = summary_texts(load(io.BytesIO(once)))
    plan = plan_of(once)
    region, _ = summary_region(plan, plan.read.head, len(plan.read.messages) - 2)
    assert region.previous == previous
    pieces = (*region.older, *region.pieces)
    assert not any(p.text.startswith("## Archived") for p in pieces)


def pinned_run(steps: int, pins: set[int]) -> bytes:
    """agent_run with an assistant remark before the calls of the steps in `pins`,
    each holding the phrase --pin looks for, and one remark elsewhere that does not."""
    out = []
    for line in agent_run(steps).splitlines():
        record = orjson.loads(line)
        call = (record.get("tool_calls") or [{}])[0].get("id", "")
        k = int(call.split("_")[1]) if call else -1
        if k in pins:
            record["content"] = f"RULE {k}: never edit generated/ files (keep this {k})"
        elif k == 0:
            record["content"] = "A remark to forget."
        out.append(orjson.dumps(record))
    return b"\n".join(out) + b"\n"


def test_pinned_messages_stay_verbatim_through_every_compress(tmp_path: Path) -> None:
    data = pinned_run(12, {1, 4})
    first = compress_file(io.BytesIO(data), Options(budget=fitted(data) * 3 // 4,
                                                    pin=r"rule \d+:"))
    (summary,) = summary_texts(load(io.BytesIO(first.data)))
    assert "RULE 1: never edit generated/ files (keep this 1)" in summary
    assert "A remark to forget." not in summary
    kept = summary_texts(load(io.BytesIO(first.data)))
    # a second compress merges the summary with more steps: the pins go on, and new ones join
    again = compress_file(io.BytesIO(first.data), Options(budget=fitted(first.data) * 2 // 3,
                                                          pin=r"rule \d+:", keep_steps=1))
    (merged,) = summary_texts(load(io.BytesIO(again.data)))
    assert merged != kept[0]
    assert "RULE 1: never edit generated/ files (keep this 1)" in merged
    assert "RULE 4: never edit generated/ files (keep this 4)" in merged
    assert restore(again.lines) == data  # every layer comes off


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(3, 12), pins=st.sets(st.integers(0, 11), max_size=4),
       share=st.floats(0.3, 0.9))
def test_every_archived_pinned_message_is_in_the_summary(steps: int, pins: set[int],
                                                          share: float) -> None:
    data = pinned_run(steps, pins)
    try:
        result = compress_file(io.BytesIO(data), Options(budget=int(fitted(data) * share),
                                                         pin="keep this"))
    except CannotFit:
        return
    out = load(io.BytesIO(result.data))
    shown = "\n".join(m.text for m in out.messages)
    for k in pins & set(range(steps)):
        assert f"RULE {k}: never edit generated/ files (keep this {k})" in shown

"""plan.py, the plan: a value holding the outputs replaced and the summary, from which
each message's count and the total are computed; `apply` makes the next plan from a
stage's edits; the budget's numbers (trigger, target, limit) are the plan's."""

from __future__ import annotations

import io

import pytest

from ctxpack.archive import Archiver
from ctxpack.breakdown import stats
from ctxpack.compression.plan import Edit, Edits, StageReport, apply
from ctxpack.compression.settings import Options
from ctxpack.compression.summarizing import summarize
from ctxpack.compression.writer import output

from .transcripts import agent_run, plan_of


def edit(plan, i: int, text: str) -> Edit:
    tokens = plan.read.counter.text(text)
    return Edit(i, 0, text, {"call_id": plan.read.messages[i].tool_results[0].call_id,
                             "action": "masked", "tokens_after": tokens})


def written_tokens(plan) -> int:
    """What stats counts of the plan written out: the plan's numbers must agree."""
    data = b"".join(output([plan], Archiver(enabled=False), "2026-01-02T03:04:05Z"))
    return stats(io.BytesIO(data), cache=False).tokens


def test_counts_and_the_total_follow_the_edits() -> None:
    plan = plan_of(agent_run(4))
    before = plan.read.result_tokens(3, 0)
    after = apply(plan, Edits((edit(plan, 3, "gone"), edit(plan, 5, "gone too"))), "mask")
    shrunk = before - plan.read.counter.text("gone")
    assert after.counts[3] == plan.counts[3] - shrunk
    assert [c for i, c in enumerate(after.counts) if i not in (3, 5)] == \
        [c for i, c in enumerate(plan.counts) if i not in (3, 5)]
    assert after.total < plan.total == plan.read.total == written_tokens(plan)
    assert after.total == written_tokens(after)
    assert after.texts(3) == {"call_0": "gone"} and after.edited == [3, 5]
    assert after.changed and not plan.changed


def test_a_plan_is_a_value_apply_makes_the_next_one() -> None:
    plan = plan_of(agent_run(4))
    first = apply(plan, Edits((edit(plan, 3, "first"),), warnings=("one",)), "mask")
    second = apply(first, Edits((edit(plan, 3, "second"),), warnings=("two",)))
    assert plan.outputs == {} and plan.stages == () and plan.warnings == ()
    assert first.texts(3) == {"call_0": "first"}  # untouched by what came after it
    assert second.texts(3) == {"call_0": "second"}  # a later edit of an output wins
    assert second.warnings == ("one", "two")
    assert first.stages == (StageReport("mask", plan.total, first.total, 1, ""),)
    assert second.stages == first.stages  # no stage named: nothing reported


def test_a_summary_stands_for_its_region_in_the_total() -> None:
    data = agent_run(12)
    plan = plan_of(data, Options(budget=plan_of(data).read.total - 1))
    edits = summarize(plan)
    after = apply(plan, edits, "summarize")
    s = after.summary
    assert s is edits.summary and s is not None
    assert after.total == written_tokens(after) < plan.total
    assert after.stages[-1].items == s.end - s.start  # messages archived
    unchanged = apply(after, Edits(warnings=("w",)))
    assert unchanged.summary is s and unchanged.total == after.total


@pytest.mark.parametrize("settings, expected", [
    ({"budget": 4000}, (4000, 2500, 4000)),  # the target: 5/8 of the budget
    ({"budget": 4000, "target": 3900}, (4000, 3900, 4000)),
    ({"budget": 10_000_000}, ("window", "half", "window")),  # never past the window
    ({}, ("0.8", "half", "window")),
    # under a lower trigger, the target is 5/8 of it, as under a budget
    ({"threshold": 0.5}, ("0.5", 40_000, "window")),
    ({"threshold": 0.3}, (38_400, 24_000, "window")),
])
def test_the_trigger_the_target_and_the_limit(settings: dict, expected: tuple) -> None:
    plan = plan_of(agent_run(1), Options(**settings), model="gpt-4o")
    window = plan.window
    assert window == 128_000  # gpt-4o's, in the model table
    named = {"window": window, "half": window // 2, "0.8": int(0.8 * window),
             "0.5": window // 2}
    assert (plan.trigger, plan.target, plan.limit) == tuple(named.get(x, x) for x in expected)

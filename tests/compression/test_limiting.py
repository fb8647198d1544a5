"""limiting.py, the hard limit: a plan still over its budget has its summary condensed to
the room left, then more of the newest steps archived; when nothing fits, CannotFit
(exit 3) says how big it is, and nothing is written."""

from __future__ import annotations

import io

import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.limiting import check_fits, limit
from ctxpack.compression.pipeline import run
from ctxpack.compression.plan import Edits, apply
from ctxpack.compression.settings import Options
from ctxpack.compression.summarizing import summarize
from ctxpack.compression.summary import floor
from ctxpack.errors import CannotFit
from ctxpack.undo import restore

from ..conftest import SAMPLES
from .transcripts import agent_run, plan_of


def test_an_impossible_budget_is_exit_3_with_the_sizes() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    plan = plan_of(path)
    head = plan.tokens(0, plan.read.head)  # the system prompt and task fill it
    with pytest.raises(CannotFit) as info:
        compress_file(path, Options(budget=head))
    assert info.value.exit_code == 3
    assert f"cannot fit the budget ({head:,} tokens)" in str(info.value)
    assert f"the system prompt and task take {head:,}" in str(info.value)


def test_a_tight_budget_squeezes_the_summary_rather_than_failing() -> None:
    data = agent_run(24)
    full = compress_file(io.BytesIO(data), Options(summarize=False, mask=False))
    options = {"keep_steps": 14, "mask": False}  # steps 1-10 may be archived, no more
    # an unreachable target: the region goes as far as it may, the summary at full size
    # (or more, where the budget leaves it room)
    loose = compress_file(io.BytesIO(data), Options(budget=full.report.tokens_after - 1,
                                                    target=1, **options))
    s = loose.report.summary
    assert s is not None and s["messages"] == 20 and s["max_tokens"] >= s["cap_tokens"]
    kept = loose.report.tokens_after - s["tokens"]
    budget = kept + s["cap_tokens"] * 2 // 3  # less room than its caps allow
    result = compress_file(io.BytesIO(data), Options(budget=budget, **options))
    s = result.report.summary
    assert result.report.tokens_after <= budget and s["messages"] == 20
    assert s["squeezed"] and s["max_tokens"] < s["cap_tokens"]
    assert any("leaves the summary" in w for w in result.report.warnings)
    assert restore(result.lines) == data


def test_past_the_floor_more_steps_are_archived_until_it_fits() -> None:
    """The steps --keep-steps keeps give way when the budget cannot hold them."""
    data = agent_run(24)
    loose = plan_of(data, Options(keep_steps=14, mask=False))
    lowest = floor(loose)
    n = len(loose.read.messages)
    budget = loose.tokens(lowest, n)  # the steps kept alone fill it
    plan = run(loose.read, Options(keep_steps=14, mask=False, budget=budget))
    assert plan.summary is not None and plan.summary.end > lowest
    assert plan.total <= budget
    assert [s.name for s in plan.stages][-1] == "limit"


def test_the_stage_leaves_a_plan_within_its_limit_as_it_is() -> None:
    data = agent_run(24)
    plan = plan_of(data, Options(budget=plan_of(data).read.total - 1, mask=False))
    assert limit(plan) == Edits()  # no summary to condense
    summarized = apply(plan, summarize(plan))
    assert summarized.summary is not None and summarized.total <= summarized.limit
    assert limit(summarized) == Edits()
    assert check_fits(summarized) == []


def test_a_plan_over_its_limit_cannot_fit() -> None:
    data = agent_run(6)
    plan = plan_of(data, Options(budget=plan_of(data).read.total - 1, summarize=False))
    with pytest.raises(CannotFit) as info:
        check_fits(plan)
    assert info.value.exit_code == 3 and f"leaves {plan.total:,} tokens" in str(info.value)

"""summarizing.py, the summarize stage, the choice of the region: after the kept head,
ending at the first cut worth trying where the rest and the summary are under the
target, but never past the floor that keeps the newest steps and rounds the settings
ask for; summaries are written only for the ends a low estimate lets through."""

from __future__ import annotations

import io
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.compression import compress_file
from ctxpack.compression.pipeline import stages
from ctxpack.compression.plan import Edits, Plan, apply
from ctxpack.compression.settings import Options
from ctxpack.compression.summarizing import summarize
from ctxpack.compression.summary import caps, draft, ends, first_end, floor
from ctxpack.loader import load

from ..conftest import SAMPLES
from .test_properties import transcripts
from .transcripts import agent_run, fitted, plan_of


def test_keep_rounds_keeps_the_newest_requests_in_full() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    requests = [m.text for m in load(path).messages if m.human]
    assert len(requests) > 4
    for rounds in range(4):
        # an unreachable target: the region goes as far as the floor lets it
        result = compress_file(path, Options(budget=fitted(path) - 1, target=1,
                                             keep_rounds=rounds, keep_steps=0))
        kept = [m.text for m in load(io.BytesIO(result.data)).messages if m.human]
        newest = requests[len(requests) - rounds:] if rounds else []
        assert kept[len(kept) - len(newest):] == newest
        assert all(r not in kept for r in requests[1:len(requests) - rounds])


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_keep_steps_keeps_the_newest_steps_whatever_the_target(steps: int) -> None:
    data = agent_run(12)
    plan = plan_of(data, Options(budget=plan_of(data).read.total - 1, target=1,
                                 keep_steps=steps, mask=False))
    s = summarize(plan).summary
    n = len(plan.read.messages)
    assert s is not None and s.start == plan.read.head == 2  # after the system prompt, task
    assert s.end == (n - 2 * steps if steps else n - 2)  # a region keeps one step at least
    assert s.end - s.start == len(s.region.pieces) * 2 + len(s.region.older) * 2


def reachable(data: bytes, **settings) -> Plan:
    """A plan over its budget whose target is half its tokens: a region short of the
    floor brings it there."""
    total = plan_of(data, Options(mask=False)).read.total
    return plan_of(data, Options(budget=total - 1, target=total // 2, mask=False,
                                 keep_steps=1, **settings))


def test_a_reachable_target_stops_the_region_short_of_the_floor() -> None:
    plan = reachable(agent_run(24))
    s = summarize(plan).summary
    assert s is not None and plan.total_with(s) <= plan.target
    assert s.end < floor(plan)
    assert apply(plan, Edits(summary=s)).total == plan.total_with(s)


def every_end_drafted(plan: Plan) -> int | None:
    """The end the region search chooses when it writes the summary of every end from the
    first worth trying (`first_end`) until one fits or the floor is reached."""
    candidates = ends(plan)
    if not candidates:
        return None
    lowest, cap = floor(plan), caps(plan)
    end = None
    for end in (c for c in candidates if c >= first_end(plan, candidates, lowest)):
        if plan.total_with(draft(plan, end, cap(end), cap(end))) <= plan.target \
                or end >= lowest:
            break
    return end


def test_the_region_ends_at_the_first_end_worth_trying_whose_summary_fits() -> None:
    plan = reachable(agent_run(24))
    s = summarize(plan).summary
    assert s is not None and plan.total_with(s) <= plan.target
    assert s.end == every_end_drafted(plan) < floor(plan)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=transcripts(), share=st.floats(0.05, 0.9), steps=st.integers(0, 3),
       most=st.integers(40, 2000), strategy=st.sampled_from(["extractive", "structured"]))
def test_ends_ruled_out_by_estimate_are_ends_no_summary_would_fit(
        data: bytes, share: float, steps: int, most: int, strategy: str) -> None:
    """The stage writes a summary only for the ends a low estimate of it lets through: it
    must choose the end that writing one for every end would choose."""
    total = plan_of(data).read.total
    options = Options(budget=max(1, int(total * share)), keep_steps=steps,
                      max_summary_tokens=most, strategy=strategy)
    plan = plan_of(data, options)
    for stage in stages(options):
        if stage.name == "summarize":
            break
        plan = apply(plan, stage.run(plan), stage.name)
    chosen = summarize(plan).summary
    assert (chosen.end if chosen else None) == every_end_drafted(plan)


def test_without_a_target_the_stage_aims_at_five_eighths_of_the_budget() -> None:
    """So that the turns that follow do not trigger it again at once."""
    data = agent_run(24)
    budget = plan_of(data).read.total * 3 // 4
    plan = plan_of(data, Options(budget=budget, mask=False))
    s = summarize(plan).summary
    assert s is not None and plan.total_with(s) <= budget * 5 // 8
    assert plan.total_with(s) > budget * 5 // 8 // 2  # and not far under it


def test_nothing_to_archive_is_said_and_changes_nothing() -> None:
    plan = plan_of(agent_run(0), Options(budget=1))  # a system prompt and a task alone
    assert summarize(plan) == Edits(note="no region could be archived")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=200), st.integers(0, 200))
def test_first_fit_finds_the_first_end_that_fits_in_few_drafts(
        any_order: list[bool], threshold: int) -> None:
    """Where the totals fall as the ends go on (the ends from some k on fit), the first
    that fits is found, in about 2 log2 k drafts; in any order, an end that fits, or
    the last (none fits)."""
    from ctxpack.compression.summarizing import first_fit

    n = len(any_order)
    falling = [i >= threshold for i in range(n)]
    tried: list[int] = []

    def fits(i: int) -> bool:
        tried.append(i)
        return falling[i]

    found = first_fit(n, fits)
    assert found == (min(threshold, n - 1))
    k = min(threshold, n - 1) + 1
    assert len(set(tried)) <= 2 * math.ceil(math.log2(k)) + 2
    anyhow = first_fit(n, lambda i: any_order[i])
    assert any_order[anyhow] or anyhow == n - 1

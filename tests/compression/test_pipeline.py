"""pipeline.py: the stages in their order (truncate, mask, summarize, limit, llm), each run
when its setting is on and the plan needs it, each noted with what it did; and what the
report (report.py) tells of them."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxpack.compression import compress_file
from ctxpack.compression.cutting import Limits
from ctxpack.compression.pipeline import never_worse, run
from ctxpack.compression.plan import Edit, Edits, apply
from ctxpack.compression.settings import Options
from ctxpack.compression.summary import floor
from ctxpack.errors import CannotFit

from ..conftest import SAMPLES
from .transcripts import agent_run, fitted, plan_of, squeezed, tokens

SMALL = Limits(max_lines=10)  # agent_run's outputs have 15 lines


def names(plan) -> list[str]:
    return [s.name for s in plan.stages]


def test_within_limits_nothing_changes() -> None:
    path = SAMPLES / "multi-round.anthropic.jsonl"
    result = compress_file(path, Options(mask=False))
    assert result.data == path.read_bytes()
    assert not result.report.changed


def test_each_stage_runs_in_order_when_its_setting_is_on() -> None:
    data = agent_run(16)
    read = plan_of(data).read
    budget = fitted(data, limits=SMALL, keep_observations=4) * 3 // 4
    options = {"limits": SMALL, "keep_observations": 4, "budget": budget}
    assert names(run(read, Options(**options))) == ["truncate", "mask", "summarize"]
    assert names(run(read, Options(**options, truncate=False))) == ["mask", "summarize"]
    assert names(run(read, Options(**options, mask=False))) == ["truncate", "summarize"]
    assert names(run(read, Options(limits=SMALL, keep_observations=4, summarize=False))) \
        == ["truncate", "mask"]
    dry = run(read, Options(**options, strategy="llm"), dry_run=True)
    assert names(dry) == ["truncate", "mask", "summarize", "llm"]
    assert dry.summary is not None and dry.summary.strategy == "extractive"
    assert dry.summary.llm is not None and "nothing was sent" in dry.summary.llm["note"]


def test_a_stage_the_plan_does_not_need_is_not_run() -> None:
    data = agent_run(16)
    read = plan_of(data).read
    under = run(read, Options(budget=read.total))  # at the budget: no summary needed
    assert names(under) == ["truncate", "mask"] and under.summary is None
    over = run(read, Options(budget=read.total - 1, mask=False, keep_steps=1))
    assert names(over) == ["truncate", "summarize"]  # the summary fits: no limit
    lowest = floor(plan_of(data, Options(keep_steps=8)))
    tight = run(read, Options(budget=plan_of(data).tokens(lowest, len(read.messages)),
                              mask=False, keep_steps=8))
    assert names(tight) == ["truncate", "summarize", "limit"]  # the floor is over it
    assert tight.summary is not None and tight.summary.end > lowest


def test_each_stage_is_noted_with_what_it_did() -> None:
    data = agent_run(16)
    read = plan_of(data).read
    budget = fitted(data, limits=SMALL, keep_observations=4) * 3 // 4
    plan = run(read, Options(limits=SMALL, keep_observations=4, keep_output_tokens=0,
                             budget=budget))
    truncated, masked, summarized = plan.stages
    assert truncated.tokens_before == read.total
    for before, after in zip(plan.stages, plan.stages[1:], strict=False):
        assert after.tokens_before == before.tokens_after  # each reads the one before
        assert after.tokens_after < after.tokens_before
    assert summarized.tokens_after == plan.total <= budget
    assert truncated.items == 16 and masked.items == 12  # all; all but the newest four steps'
    s = plan.summary
    assert s is not None and summarized.items == s.end - s.start
    report = compress_file(io.BytesIO(data), plan.options).report
    assert report.stages == list(plan.stages)
    assert (report.truncated, report.masked) == (truncated.items, masked.items)
    assert (report.tokens_before, report.tokens_after) == (read.total, plan.total)
    assert (report.trigger, report.target, report.limit) == (plan.trigger, plan.target,
                                                             plan.limit)


def test_a_result_not_smaller_than_its_input_keeps_the_input_and_says_so() -> None:
    data = agent_run(4)
    plan = plan_of(data)
    read = plan.read
    i = next(k for k, m in enumerate(read.messages) if m.tool_results)
    longer = read.messages[i].tool_results[0].text * 2  # an edit that grows the output
    grown = apply(plan, Edits((Edit(i, 0, longer, {
        "call_id": None, "action": "truncated",
        "tokens_before": read.result_tokens(i, 0),
        "tokens_after": read.counter.text(longer)}),)), "truncate")
    assert grown.total > read.total
    kept = never_worse(grown)
    assert not kept.changed and kept.total == read.total
    assert any("not smaller than the input" in w for w in kept.warnings)
    assert never_worse(plan) is plan  # nothing done: nothing to say
    shrunk = run(read, squeezed(data, summarize=False, keep_observations=0))
    assert shrunk.changed and never_worse(shrunk) is shrunk


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(1, 12), share=st.floats(0.2, 1.2), keep=st.integers(0, 4))
def test_compress_gives_a_smaller_output_or_the_input_unchanged(steps: int, share: float,
                                                                 keep: int) -> None:
    data = agent_run(steps)
    options = Options(budget=max(1, int(tokens(data) * share)), keep_steps=keep)
    try:
        result = compress_file(io.BytesIO(data), options)
    except CannotFit:
        return
    if result.report.changed:
        assert result.report.tokens_after < result.report.tokens_before
    else:
        assert result.data == data


def test_a_compress_that_truncated_short_of_its_target_goes_on_to_it() -> None:
    """Truncation that brings the prompt under the trigger but not to the target is
    followed by the summary, as masking is: else the next turns trigger it again (and an
    agent loop's prompt changes at each)."""
    data = agent_run(16)
    before = tokens(data)
    cut = fitted(data, limits=SMALL, mask=False)
    budget = (before + cut) // 2  # truncation alone takes it under this
    assert cut < budget < before
    plan = run(plan_of(data).read, Options(limits=SMALL, mask=False, budget=budget,
                                          target=cut - 200))
    assert names(plan)[:2] == ["truncate", "summarize"]
    assert plan.total <= plan.target
    kept = run(plan_of(data).read, Options(limits=SMALL, mask=False, budget=budget,
                                          target=cut + 200))
    assert names(kept) == ["truncate"]  # at its target already: no summary

"""summary.py, the summary message: how big it may be (`caps`: max_summary_tokens and a
`summary_ratio`-th of what it archives), where its region may end (`ends`), and the
summary drafted for a region (`draft`)."""

from __future__ import annotations

import io

import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.compression.summary import caps, draft, ends
from ctxpack.compression.units import cuts

from .transcripts import agent_run, fitted, plan_of


def test_the_summary_is_a_fifth_of_what_it_archives_at_most() -> None:
    data = agent_run(40)
    budget = fitted(data, mask=False) // 3
    counts = {}
    for ratio in (5, 1):
        options = Options(budget=budget, target=budget, summary_ratio=ratio, mask=False)
        result = compress_file(io.BytesIO(data), options)
        s = result.report.summary
        counts[ratio] = s["tokens"]
        assert s["cap_tokens"] == min(10_000, s["archived_tokens_read"] // ratio)
        assert s["tokens"] <= s["cap_tokens"] + 16  # the message's framing
    assert counts[5] < counts[1]


@pytest.mark.parametrize("most", [50, 10_000])
def test_the_cap_is_the_least_of_max_summary_tokens_and_the_ratio(most: int) -> None:
    plan = plan_of(agent_run(12), Options(max_summary_tokens=most, summary_ratio=4))
    cap = caps(plan)
    head = plan.read.head
    for end in ends(plan):
        assert cap(end) == max(1, min(most, plan.tokens(head, end) // 4))


def test_a_region_ends_only_where_no_call_is_split_from_its_result() -> None:
    plan = plan_of(agent_run(6))
    allowed = set(cuts(plan.read.messages))
    found = ends(plan)
    assert found == [e for e in range(plan.read.head + 1, len(plan.read.messages))
                     if e in allowed]
    assert all(plan.read.messages[e - 1].role == "tool" for e in found)


def test_a_draft_is_condensed_to_the_tokens_it_is_given() -> None:
    plan = plan_of(agent_run(12))
    end = ends(plan)[-1]
    whole = draft(plan, end, 10_000, 10_000)
    small = draft(plan, end, whole.tokens // 2, 10_000)
    assert (whole.start, whole.end, small.end) == (plan.read.head, end, end)
    assert plan.read.counter.text(small.text) <= whole.tokens // 2 < whole.tokens
    assert small.tokens == plan.read.counter.message(small.message).total
    assert small.archived_tokens == plan.tokens(plan.read.head, end)

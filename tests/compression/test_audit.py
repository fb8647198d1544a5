"""audit.py, the retention audit: which of the facts of what a summary archived it still
shows verbatim, found by lookups fast on long summaries, and exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.compression.audit import GRAM, retention
from ctxpack.compression.facts import Facts


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab/c.1 é", max_size=12), max_size=30),
       st.text(alphabet="ab/c.1 é\n", max_size=300))
def test_the_retention_audit_keeps_exactly_the_facts_the_summary_holds(facts, summary) -> None:
    """Its set lookups only rule facts out: what it says is kept, the summary holds."""
    distinct = tuple(dict.fromkeys(facts))
    found = retention(Facts(paths=distinct), summary)["paths"]
    assert found.dropped == tuple(x for x in distinct if x not in summary)
    assert found.kept == len(distinct) - len(found.dropped)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab", min_size=GRAM, max_size=3 * GRAM), max_size=30),
       st.text(alphabet="ab\n", max_size=200))
def test_the_retention_audit_finds_facts_among_many_alike(facts, summary) -> None:
    """Over two letters every piece recurs: a fact is looked for where its beginning is,
    or where its end is, whichever is rarer; either way it is found exactly."""
    distinct = tuple(dict.fromkeys(facts))
    found = retention(Facts(paths=distinct), summary)["paths"]
    assert found.dropped == tuple(x for x in distinct if x not in summary)

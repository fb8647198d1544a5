"""rewriting.py, the llm stage alone: a model rewrites the summary of the region the
stages before chose, in the room that one left; on a dry run nothing is sent, and when
the model fails the extractive summary stays, with a warning. (The llm summarizer
itself, against a chat server, is tested in summarizers/test_llm.py.)"""

from __future__ import annotations

import re

import pytest

from ctxpack.compression.plan import Plan, apply
from ctxpack.compression.rewriting import MIN_SHORTFALL, VERIFIED, rewrite
from ctxpack.compression.settings import Options
from ctxpack.compression.summarizing import summarize
from ctxpack.compression.summary import made, retention_of

from ..chat_server import ChatServer, Reply
from .transcripts import agent_run, plan_of

ANSWER = "### Completed work\n- built every target; step 7 failed"


def summarized(**settings):
    """The plan of a run after the summarize stage, for the llm stage to rewrite."""
    data = agent_run(16)
    plan = plan_of(data, Options(budget=plan_of(data).read.total - 1, mask=False,
                                 strategy="llm", llm_retries=0, llm_timeout=5.0, **settings))
    after = apply(plan, summarize(plan), "summarize")
    assert after.summary is not None and after.summary.strategy == "extractive"
    return after


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path / "cache"))


def checked_facts(plan: Plan) -> list[str]:
    """The facts of the kinds checked (VERIFIED) of the region that the plan's (extractive)
    summary keeps: those a summary without any drops, but for those it drops."""
    s = plan.summary
    none = retention_of(made(plan, s.region, s.audited, s.end, "", s.max_tokens, s.cap, "llm"))
    dropped = retention_of(s)
    return [x for kind in VERIFIED for x in none[kind]["dropped"]
            if x not in dropped[kind]["dropped"]]


def test_the_model_rewrites_the_summary_of_the_same_region_in_its_room() -> None:
    answers = [ANSWER]
    with ChatServer(responder=lambda body: Reply(answers[-1])) as server:
        plan = summarized(llm_base_url=server.base_url)
        kept = checked_facts(plan)  # the model keeps two thirds of the extractive's facts
        answers.append(ANSWER + "".join(f"\n- {x}" for x in kept[:len(kept) * 2 // 3]))
        edits = rewrite(dry_run=False, cache=False)(plan)
    s, extractive = edits.summary, plan.summary
    assert s is not None and len(server.requests) == 1
    assert s.strategy == "llm" and s.llm["used"] and edits.warnings == ()
    assert "- built every target; step 7 failed" in s.text and s.text != extractive.text
    assert (s.start, s.end) == (extractive.start, extractive.end)  # the region it chose
    assert plan.total <= plan.target  # the extractive summary fit the target:
    assert apply(plan, edits).total <= plan.target  # the model's fits it as well
    # the audit reads the model's text, which keeps fewer of the region's facts verbatim
    ours, theirs = retention_of(s), retention_of(extractive)
    assert [v["total"] for v in ours.values()] == [v["total"] for v in theirs.values()]
    assert sum(v["kept"] for v in ours.values()) < sum(v["kept"] for v in theirs.values())


def test_a_dry_run_sends_nothing_and_keeps_the_extractive_summary() -> None:
    with ChatServer(responder=lambda body: Reply(ANSWER)) as server:
        plan = summarized(llm_base_url=server.base_url)
        edits = rewrite(dry_run=True, cache=False)(plan)
    assert server.requests == []
    assert edits.summary is not None and edits.summary.text == plan.summary.text
    assert edits.summary.llm == {"used": False, "fallback": None,
                                 "note": "dry run: nothing was sent"}


def test_a_failing_model_leaves_the_extractive_summary_and_says_why() -> None:
    plan = summarized(llm_base_url="http://127.0.0.1:1/v1")  # nothing listens there
    edits = rewrite(dry_run=False, cache=False)(plan)
    assert edits.summary is not None and edits.summary.text == plan.summary.text
    assert edits.summary.llm["used"] is False and edits.summary.llm["fallback"]
    (warning,) = edits.warnings
    assert warning.startswith("the llm summarizer failed: ")
    assert warning.endswith("; the extractive summary is used instead")


def test_without_a_summary_there_is_nothing_to_rewrite() -> None:
    plan = plan_of(agent_run(4), Options(strategy="llm"))
    assert rewrite(dry_run=False, cache=False)(plan).summary is None


def test_a_summary_that_keeps_under_half_the_facts_checked_is_rejected() -> None:
    """The model's summary is used unless it keeps under half as many of the facts checked
    (paths, URLs, errors, identifiers, commands) as the extractive summary of the same
    region, and MIN_SHORTFALL fewer; rejected, the extractive one stays and both counts
    are told."""
    answers: list[str] = []
    with ChatServer(responder=lambda body: Reply(answers[-1])) as server:
        plan = summarized(llm_base_url=server.base_url)
        s = plan.summary
        facts = checked_facts(plan)
        theirs = sum(retention_of(s)[kind]["kept"] for kind in VERIFIED)
        assert theirs > 2 * MIN_SHORTFALL and len(facts) == theirs
        outcomes = set()
        for k in sorted({0, 1, theirs // 2 - 1, theirs // 2, theirs // 2 + 1, theirs}):
            answers.append(ANSWER + "".join(f"\n- {x}" for x in facts[:k]))
            edits = rewrite(dry_run=False, cache=False)(plan)
            used = edits.summary.llm["used"]
            outcomes.add(used)
            if used:  # the audit of what is written: not clearly fewer
                assert edits.summary.strategy == "llm" and edits.warnings == ()
                assert answers[-1] in edits.summary.text
                ours = sum(retention_of(edits.summary)[kind]["kept"] for kind in VERIFIED)
                assert ours >= k
                assert 2 * ours >= theirs or theirs - ours < MIN_SHORTFALL
                continue
            assert edits.summary.text == s.text and edits.summary.strategy == "extractive"
            reason = edits.summary.llm["fallback"]
            found = re.fullmatch(r"it keeps ([\d,]+) of the facts checked \(paths, URLs, "
                                 r"errors, identifiers, commands\), the extractive summary "
                                 r"([\d,]+): under half as many", reason)
            assert found, reason
            ours = int(found.group(1).replace(",", ""))
            assert int(found.group(2).replace(",", "")) == theirs
            assert k <= ours and 2 * ours < theirs and theirs - ours >= MIN_SHORTFALL
            assert edits.warnings == (f"the llm summary was rejected: {reason}; the "
                                      "extractive summary is used instead",)
    assert outcomes == {True, False}

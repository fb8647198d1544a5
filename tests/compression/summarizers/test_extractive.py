"""The summarizers on their own: what a line shows, and what goes first when it must shrink.

A summary over its budget is condensed oldest line first, and within the lines in
this order: long arguments, identifiers and numbers; then paths, URLs and error
lines; then whole steps folded into counts.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.compression.args import BRIEF_CHARS, call_label
from ctxpack.compression.audit import GRAM, retention
from ctxpack.compression.facts import Facts
from ctxpack.compression.failures import EDGE, error_lines, exit_code, looks_failed
from ctxpack.compression.summarizers import Piece, Region
from ctxpack.compression.summarizers import _budget as budget_module
from ctxpack.compression.summarizers._layout import CONDENSED, Condensing
from ctxpack.compression.summarizers.extractive import ExtractiveSummarizer
from ctxpack.compression.summarizers.structured import StructuredSummarizer
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Text, ToolCall, ToolResult

pytestmark = pytest.mark.usefixtures("exact_tokens")

LONG_COMMAND = ("curl -sL https://downloads.example.org/releases/v8.11.1/wrapper.jar -o "
                "build/wrapper.jar && sha256sum build/wrapper.jar && ls -la build")


def step(n: int, command: str, output: str, failed: bool = False) -> Piece:
    call = ToolCall(f"call_{n}", "bash", orjson.dumps({"command": command}).decode())
    return Piece("assistant", "", (call,), (ToolResult(f"call_{n}", (Text(output),), failed),))


def test_a_brief_label_shows_one_argument_short() -> None:
    call = ToolCall("c1", "WebFetch", orjson.dumps(
        {"url": "https://example.org/a/very/long/path/to/a/page.html",
         "prompt": "What does this page say about scrolling in embedded terminals?"}).decode())
    full, brief = call_label(call), call_label(call, brief=True)
    assert full.startswith("WebFetch(url=https://example.org/") and "prompt=" in full
    assert brief.startswith("WebFetch(https://example.org/a/") and "prompt" not in brief
    bash = ToolCall("c2", "bash", orjson.dumps({"command": LONG_COMMAND}).decode())
    short = call_label(bash, brief=True)
    assert short.startswith("bash(curl -sL") and short.endswith("…)")
    assert len(short) <= len("bash()") + 2 * BRIEF_CHARS


def units_with_facts(n: int) -> tuple[Piece, ...]:
    """Steps whose outputs hold one path, one URL, one error and a few lesser facts each."""
    return tuple(step(k, f"{LONG_COMMAND} --attempt {k}",
                      f"wrote src/module_{k}/handler_{k}.py\n"
                      f"see https://docs.example.org/guide/part-{k}\n"
                      f"Error: check {k} failed with code_{k}_value and RequestId_{k}\n"
                      f"took {100 + k} ms, {k * 1000 + 7} rows, sha a1b2c3d{k:04d}",
                      failed=True)
                 for k in range(1, n + 1))


def test_condensing_drops_lesser_facts_and_long_arguments_before_paths_urls_errors() -> None:
    count = TokenCounter("gpt-4o").text
    units = units_with_facts(12)
    whole = ExtractiveSummarizer().write(Region(units), 100_000, count)
    assert CONDENSED not in whole and LONG_COMMAND[:60] in whole
    # room for the primary facts and short heads, not for everything
    budget = count(whole) * 3 // 4
    text = ExtractiveSummarizer().write(Region(units), budget, count)
    assert count(text) <= budget
    assert CONDENSED in text and "long arguments" in text
    for k in range(1, 13):
        assert f"src/module_{k}/handler_{k}.py" in text
        assert f"https://docs.example.org/guide/part-{k}" in text
        assert f"Error: check {k} failed" in text
    oldest = next(line for line in text.splitlines() if line.startswith("* Step 1:"))
    assert "sha256sum" not in oldest and "command=" not in oldest  # a brief head
    assert "a1b2c3d0001" not in oldest and "1007 rows" not in oldest  # no lesser facts


def test_a_summary_is_fit_without_rendering_it_whole_unless_it_may_fit(monkeypatch) -> None:
    """The search estimates from counts of texts near the answer: a summary many times its
    budget is never rendered whole (the costliest text of all), and one its budget holds
    exactly comes out whole, not condensed on an estimate."""
    count = TokenCounter("gpt-4o").text
    units = units_with_facts(60)
    whole = ExtractiveSummarizer().write(Region(units), 1_000_000, count)
    rendered: list = []
    render = budget_module.render
    monkeypatch.setattr(budget_module, "render",
                        lambda doc, cut=None: rendered.append(cut) or render(doc, cut))
    text = ExtractiveSummarizer().write(Region(units), count(whole) // 8, count)
    assert count(text) <= count(whole) // 8 and CONDENSED in text
    assert rendered and Condensing() not in rendered
    assert ExtractiveSummarizer().write(Region(units), count(whole), count) == whole
    assert CONDENSED in ExtractiveSummarizer().write(Region(units), count(whole) - 1, count)


def test_steps_fold_into_counts_only_when_nothing_else_is_left() -> None:
    count = TokenCounter("gpt-4o").text
    units = units_with_facts(12)
    text = ExtractiveSummarizer().write(Region(units), 150, count)
    assert count(text) <= 150
    assert "(condensed): bash ×" in text and " errors" in text  # what the folded steps did
    assert "folded into counts" in text


def test_a_line_is_failed_by_its_flag_as_the_pipeline_found_it() -> None:
    count = TokenCounter("gpt-4o").text
    # the pipeline flags a result from its exit code and error lines; the summary trusts it
    units = (step(1, "make", "all good", failed=True), step(2, "make", "Error: boom"))
    text = ExtractiveSummarizer().write(Region(units), 4000, count)
    assert "* Step 1: bash(command=make) -> error" in text
    assert "* Step 2: bash(command=make) -> ok" in text


@pytest.mark.parametrize("summarizer", [ExtractiveSummarizer(), StructuredSummarizer()])
def test_injected_context_gets_a_line_only_with_facts(summarizer) -> None:
    count = TokenCounter("gpt-4o").text
    units = (Piece("user", "<local-command-caveat>Caveat: generated by local commands."),
             Piece("user", "<system-reminder>The user edited src/app/config.toml.</system-reminder>"
                  ),
             step(1, "ls", "src"))
    text = summarizer.write(Region(units), 4000, count)
    assert "Caveat" not in text
    assert "src/app/config.toml" in text


@pytest.mark.parametrize("text", [
    "all tests passed\n",
    "Traceback (most recent call last):\n  File \"a.py\", line 1\nValueError: x\n",
    "log line\nERROR something broke\nmore\n",
    "build ok\nExit code: 0\n",
    "build\nerror: linker failed\nExit code: 2\n",
    "    raise ValueError('not an error line')\n",
    "ok\n" * 1000 + "FAILED tests/test_a.py::test_b\n",
    "make: leaving directory\nprocess exited with code 3\n",
    "<returncode>1</returncode>\n",
    "Exit status: 0\nNo such file or directory\n",  # the code has the last word
    "preexit code 1\n",  # no exit code (glued), but an error line all the same
])
def test_looks_failed_agrees_with_the_error_lines_and_exit_code(text: str) -> None:
    code = exit_code(text)
    expected = code != 0 if code is not None else bool(list(error_lines(text)))
    assert looks_failed(text) is expected


def test_a_long_output_is_judged_by_its_first_and_last_lines() -> None:
    filler = "collected line of output\n" * (2 * EDGE // 25)
    error = "ERROR: the database is locked\n"
    assert looks_failed(error + filler + filler)  # it could not start
    assert looks_failed(filler + filler + error)  # it ended so
    assert not looks_failed(filler + error + filler)  # a log it printed, say
    assert not looks_failed(filler + error + filler + "Exit code: 0\n")  # the code decides
    assert looks_failed(filler + filler + "Exit code: 1\n")
    pad = "x" * (2 * EDGE)  # lines longer than the edge are cut in them
    assert not looks_failed(pad + " No such file or directory " + pad)
    assert looks_failed(pad + pad + " No such file or directory")


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


def test_the_structured_goal_points_to_a_task_kept_before_the_summary() -> None:
    count = TokenCounter("gpt-4o").text
    units = (step(1, "make", "ok"), step(2, "make test", "ok"))
    task = "Port the parser to Rust. Keep the public API. Tests must pass."
    text = StructuredSummarizer().write(Region(units, task=task), 4000, count)
    goal = text.split("### Task goal\n", 1)[1].split("\n", 1)[0]
    assert "kept whole before this summary" in goal and "Port the parser to Rust." in goal
    assert "Keep the public API" not in text  # a pointer, not a second copy
    assert "### Task goal" not in StructuredSummarizer().write(Region(units), 4000, count)

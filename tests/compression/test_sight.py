"""sight.py, the retention audit of the whole output: what the model still sees of the
facts a compress took out of sight, wherever the output shows them."""

from __future__ import annotations

import io
import re

import pytest

from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.loader import load
from ctxpack.transcript import SUMMARY_HEADING as HEADING

from .transcripts import agent_run, billed, fitted, squeezed, summary_texts

RUN = agent_run(60)


def shown(options: Options) -> tuple[dict, dict | None, str]:
    """The report's whole-output audit, its summary audit, and the output's text as a
    model is given it."""
    made = compress_file(io.BytesIO(RUN), options, strip_metadata=True)
    text = "\n".join(m.text for m in load(io.BytesIO(made.data), made.report.format).messages)
    assert made.report.seen is not None
    summary = made.report.summary
    return made.report.seen, summary["retention"] if summary else None, text


@pytest.mark.parametrize("how", ["masked", "summarized", "summary condensed"])
def test_what_the_audit_calls_dropped_is_nowhere_in_the_output(how: str) -> None:
    options = {
        "masked": squeezed(RUN, summarize=False),
        "summarized": Options(budget=billed(RUN, fitted(RUN) * 2 // 3)),
        "summary condensed": Options(budget=billed(RUN, fitted(RUN) * 2 // 3),
                                     max_summary_tokens=200),
    }[how]
    seen, summary, text = shown(options)
    for kind in ("paths", "urls", "errors", "identifiers", "commands"):
        assert seen[kind]["total"] > 0 or kind in ("identifiers", "commands"), kind
        assert seen[kind]["kept"] + len(seen[kind]["dropped"]) <= seen[kind]["total"]
        for fact in seen[kind]["dropped"]:
            assert fact not in text, (kind, fact)
        if summary is not None:  # the whole output shows at least what its summary does
            assert seen[kind]["kept"] >= summary[kind]["kept"], kind
    if how == "masked":  # the placeholders keep the outputs' paths and URLs
        assert seen["paths"]["kept"] > 0 and seen["urls"]["kept"] > 0
        assert seen["outputs"] > 0 and seen["messages"] == 0
    if how == "summary condensed":
        assert sum(len(seen[k]["dropped"]) for k in ("paths", "urls", "errors")) > 0


def test_nothing_taken_out_nothing_audited() -> None:
    made = compress_file(io.BytesIO(RUN), Options(budget=billed(RUN, fitted(RUN) * 4)))
    assert not made.report.changed and made.report.seen is None


def test_an_output_too_long_to_audit_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxpack.compression import sight

    options = Options(budget=billed(RUN, fitted(RUN) * 2 // 3))
    monkeypatch.setattr(sight, "AUDIT_TOKENS", fitted(RUN) // 10)
    made = compress_file(io.BytesIO(RUN), options)
    assert made.report.changed
    assert "not audited" in made.report.seen["skipped"]
    assert "paths" not in made.report.seen


def test_every_archived_message_is_read_not_only_those_the_summary_reads_whole() -> None:
    """A summary reads its newest units whole (as many as it could show a line of); the
    audit reads every message it archives: each step's URL is counted."""
    options = Options(budget=billed(RUN, fitted(RUN) // 2), max_summary_tokens=120)
    made = compress_file(io.BytesIO(RUN), options, strip_metadata=True)
    seen, summary = made.report.seen, made.report.summary
    archived = summary["end"] - summary["start"]
    assert summary["audited_messages"] < archived  # the summary's own audit: the newest
    assert seen["audited_messages"] == seen["messages"] == archived
    steps = archived // 2  # each step a call and its output, each output one URL
    assert seen["urls"]["total"] == steps > summary["retention"]["urls"]["total"]
    assert seen["errors"]["total"] == steps


URL = re.compile(r"https://ci\.example\.org/runs/\d+")


def test_the_earlier_summary_a_compress_replaces_is_read() -> None:
    """Compressed, grown and compressed again: the second compress replaces the first's
    summary, so what that one showed of the steps archived before is audited too."""
    options = Options(budget=billed(RUN, fitted(RUN) // 2))
    first = compress_file(io.BytesIO(RUN), options)
    more = agent_run(90).splitlines(keepends=True)[2 + 2 * 60:]
    grown = first.data + b"".join(more)
    shown_before = set(URL.findall(summary_texts(load(io.BytesIO(first.data)))[0]))
    assert shown_before
    second = compress_file(io.BytesIO(grown), Options(budget=billed(RUN, fitted(RUN) // 2)))
    s, seen = second.report.summary, second.report.seen
    messages = load(io.BytesIO(grown)).messages[s["start"]:s["end"]]
    archived = {u for m in messages if not m.text.startswith(HEADING)
                for u in URL.findall(m.text)}
    assert archived and not archived & shown_before  # (steps archived the first time)
    assert seen["urls"]["total"] == len(shown_before | archived)
    assert seen["audited_messages"] == s["end"] - s["start"]

"""One figure for a context's size: `stats` and `compress` count the same messages the same
way, hidden content included (a reply whose thinking the file stores empty counted at its
recorded output, reasoning held only encrypted at its recorded tokens: see
ctxpack.calibration.with_hidden), and the bill is of that figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.breakdown import REASONING, stats
from ctxpack.compression import compress_file
from ctxpack.errors import UsageError
from ctxpack.tokens import REPLY_PRIMING
from ctxpack.view import view_file

from .conftest import SAMPLES, corpus_files

# the files compress rewrites (see samples/README.md: the others are in folders)
WRITTEN = sorted(SAMPLES.glob("*.json*"))


def corpus_params() -> list:
    files = [p for p in corpus_files(pattern="*.json*") if p.name != "MANIFEST.md"]
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason="corpus not found beside the checkout (../shared/corpus)"))]
    return [pytest.param(p, id=p.name) for p in files]


def check_one_figure(path: Path) -> None:
    counted = stats(path, cache=False)
    try:
        report = compress_file(path, dry_run=True, cache=False).report
    except UsageError as exc:  # a format compress does not write
        pytest.skip(str(exc).splitlines()[0])
    assert report.tokens_before == counted.tokens
    # the role table adds up to the headline, hidden content under `reasoning`
    assert sum(counted.by_role.values()) == counted.tokens
    if counted.rounds:
        assert counted.rounds[-1].cumulative == counted.tokens
    c = counted.context
    assert c is not None
    if counted.conversations == 1:
        # the bill is of the figure both report, and compress bills it as stats does
        assert c.counted == counted.tokens
        assert report.billed["tokens_before"] == c.tokens


@pytest.mark.parametrize("path", WRITTEN, ids=[p.name for p in WRITTEN])
def test_compress_starts_from_the_figure_stats_reports(path: Path) -> None:
    check_one_figure(path)


@pytest.mark.parametrize("path", WRITTEN, ids=[p.name for p in WRITTEN])
def test_show_heads_the_transcript_with_the_same_figure(path: Path) -> None:
    view, counted = view_file(str(path)), stats(path, cache=False)
    assert view.header.tokens == counted.tokens
    # its rounds add up to it, as stats' do
    assert sum(r.tokens for r in view.rounds) + REPLY_PRIMING * counted.conversations \
        == view.header.tokens


def test_a_reply_that_hides_its_thinking_counts_at_its_recorded_output_in_stats() -> None:
    path = SAMPLES / "export-timeout.anthropic-events.jsonl"
    s = stats(path, cache=False)
    # the agent.thinking events hold no text: each request's recorded output is more than
    # its reply's visible text, and what it adds is the reasoning row (no more than the
    # output the requests recorded)
    assert 0 < s.by_role.get(REASONING, 0) <= s.usage["output_tokens"]
    assert s.context is not None and s.context.counted == s.tokens


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params())
def test_compress_starts_from_the_figure_stats_reports_on_the_corpus(path: Path) -> None:
    check_one_figure(path)

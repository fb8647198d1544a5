"""compress and restore end to end: every sample and corpus file keeps its invariants.

For each file: the output validates when the input did, stays within the budget,
keeps the format's own markers, leaves untouched lines byte-identical, counts
the same tokens as `stats` of the output, restores byte for byte, and a second
compress with the same settings changes nothing. The same invariants over generated
transcripts are in test_properties.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import archive
from ctxpack.breakdown import stats
from ctxpack.checks import validate
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit
from ctxpack.loader import load
from ctxpack.undo import restore
from ctxpack.workers import WORTH_CHARS, worker_count

from ..conftest import SAMPLES, corpus_params
from ..helpers import bench_generator
from .transcripts import billed, summary_texts

COMPRESSIBLE = sorted([*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")])
DOCUMENTS = ("json-messages", "openai-conversations")  # records written again whole


def roundtrip(path: Path, tmp_path: Path, share: float = 0.6) -> tuple[bytes, dict]:
    """Compress `path` to `share` of its tokens and check every invariant on the way."""
    original = path.read_bytes()
    before = stats(path, cache=False)
    budget = max(billed(path, int(before.tokens * share)), 1)
    try:
        result = compress_file(path, Options(budget=budget))
    except CannotFit:
        budget = billed(path, before.tokens)
        result = compress_file(path, Options(budget=budget))
    out = tmp_path / path.name
    out.write_bytes(result.data)
    report = result.report
    after = stats(out, cache=False)
    assert after.context is not None
    # (stats bills a file of several conversations by its largest; the report sums them)
    counted = after.context.counted if report.conversations == 1 else after.tokens
    assert counted == report.tokens_after
    if report.conversations == 1:  # the budget holds per conversation
        assert report.billed["tokens_after"] <= budget
    if not validate(load(path)):
        assert validate(load(out)) == []
    assert load(out).format == load(path).format
    if report.format not in DOCUMENTS:
        untouched = [line for line in result.lines if archive.meta_of(line) is None]
        originals = original.splitlines(keepends=True)
        assert _subsequence(untouched, originals)
    restored = restore(result.lines)
    assert restored == original
    again = compress_file(out, Options(budget=budget))
    assert again.data == result.data, "a second compress with the same settings changed it"
    return result.data, report.to_dict()


def _subsequence(part: list[bytes], whole: list[bytes]) -> bool:
    it = iter(whole)
    return all(any(line == x or line.rstrip(b"\n") == x.rstrip(b"\n") for x in it)
               for line in part)


@pytest.mark.parametrize("path", COMPRESSIBLE, ids=lambda p: p.name)
def test_samples_keep_every_invariant(path: Path, tmp_path: Path) -> None:
    data, report = roundtrip(path, tmp_path)
    assert report["changed"] or report["conversations"] > 1
    assert report["tokens_after"] <= report["tokens_before"]


@pytest.mark.corpus
@pytest.mark.parametrize("path", [
    *corpus_params("claude-code", "codex", "anthropic-messages"),
    *corpus_params("openai-chat", pattern="*.json"), *corpus_params("swe-agent", pattern="*.traj"),
])
def test_corpus_files_keep_every_invariant(path: Path, tmp_path: Path) -> None:
    roundtrip(path, tmp_path, share=0.5)


@pytest.mark.parametrize("path", COMPRESSIBLE, ids=lambda p: p.name)
def test_compressing_again_merges_the_summary_and_restores_whole(path: Path,
                                                                 tmp_path: Path) -> None:
    tokens = stats(path, cache=False).tokens
    first = tmp_path / "first.jsonl"
    first.write_bytes(compress_file(path, Options(budget=billed(path, int(tokens * 0.8)))).data)
    old = summary_texts(load(first))
    try:
        second = compress_file(first, Options(budget=billed(path, int(tokens * 0.6)),
                                                    keep_steps=1))
    except CannotFit:
        pytest.skip("the second budget cannot be met for this sample")
    out = tmp_path / "second.jsonl"
    out.write_bytes(second.data)
    if not validate(load(path)):
        assert validate(load(out)) == []
    new = summary_texts(load(out))
    assert len(new) == (1 if old or second.report.summary else 0)
    if old and second.report.summary:
        step_lines = [line for line in old[0].splitlines() if line.startswith("* Step")]
        assert all(line in new[0] for line in step_lines[:3]), "old steps were not merged"
    assert restore(out) == path.read_bytes()


@pytest.mark.parametrize("path", [SAMPLES / "support-chat.openai.jsonl",
                                  SAMPLES / "coding-agent.claude-code.jsonl"],
                         ids=lambda p: p.name)
def test_structured_strategy_keeps_the_invariants(path: Path, tmp_path: Path) -> None:
    tokens = stats(path, cache=False).tokens
    result = compress_file(path, Options(budget=billed(path, int(tokens * 0.75)),
                                           strategy="structured"))
    out = tmp_path / path.name
    out.write_bytes(result.data)
    (summary,) = summary_texts(load(out))
    assert "### Pending items" in summary or "### Completed work" in summary
    assert result.report.summary["strategy"] == "structured"
    assert validate(load(out)) == []
    assert restore(out) == path.read_bytes()

def test_the_output_is_the_same_with_worker_processes_and_without(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a file this big, worker processes count its tokens (exact counts) and find the
    facts of the texts the summary reads ahead: what compress writes must not depend on
    whether they did."""
    path, _ = bench_generator().ensure(3, seed=5, out_dir=tmp_path)
    assert path.stat().st_size > WORTH_CHARS["fork"]  # big enough for forked workers
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")
    options = Options(budget=billed(path, stats(path, cache=False).tokens // 10))
    made = {}
    for workers in ("1", "default"):
        if workers == "1":
            monkeypatch.setenv("CTXPACK_WORKERS", "1")
        else:
            monkeypatch.delenv("CTXPACK_WORKERS")
            if worker_count() < 2:  # one core: ask for two all the same
                monkeypatch.setenv("CTXPACK_WORKERS", "2")
        result = compress_file(path, options, cache=False)
        made[workers] = result.data, result.report.to_dict()
    data, report = made["1"]
    assert report["summary"] is not None and report["tokens_after"] <= options.budget
    assert made["default"] == made["1"]
    assert restore(archive.split_lines([data])) == path.read_bytes()

"""What compress reports of a file, said as stats says it: the model and its window."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.breakdown import stats
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CtxpackError

from ..conftest import SAMPLES, corpus_params

SAMPLE_FILES = sorted(SAMPLES.glob("*.json*"))


def model_and_window(path: Path, model: str | None = None) -> tuple[tuple, tuple]:
    try:
        report = compress_file(path, Options(), model=model, dry_run=True).report
    except CtxpackError as exc:
        pytest.skip(f"compress does not take this file: {exc}")
    seen = stats(path, model, cache=False)
    return (report.model, report.context_window), (seen.model, seen.context_window)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in SAMPLE_FILES])
def test_compress_and_stats_agree_on_a_samples_window(path: Path) -> None:
    compressed, seen = model_and_window(path)
    assert compressed == seen
    assert model_and_window(path, "gpt-4.1")[0] == model_and_window(path, "gpt-4.1")[1] \
        == ("gpt-4.1", 1_047_576)


def test_a_codex_rollouts_own_window_sets_the_trigger() -> None:
    path = SAMPLES / "refactor.codex.jsonl"
    report = compress_file(path, Options(), dry_run=True).report
    assert report.context_window == 272_000  # what the rollout records, not the model's
    assert report.trigger == int(0.8 * 272_000)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params())
def test_compress_and_stats_agree_on_a_corpus_files_window(path: Path) -> None:
    compressed, seen = model_and_window(path)
    assert compressed == seen

"""The llm summarizer against a real small model (SmolLM2-135M) served by llama.cpp.

A 135M model writes poor summaries, so these tests check structure, not wording: the
model's summary is used, or rejected because it keeps under half the facts the
extractive one does (as such a small model's mostly is); the report holds the token
usage the server reported, and the output validates and restores byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxpack.checks import validate
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.loader import load
from ctxpack.undo import restore

from ...llama_server import MODEL, smollm_server
from ..transcripts import tokens
from .test_llm import summary_meta, summary_text, transcript, write

pytestmark = pytest.mark.llm_model


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with smollm_server(threads=1, ctx=8192) as url:  # llama.cpp threads spin: never oversubscribe
        yield url


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server wants none
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")  # outputs compare byte for byte


def settings(base_url: str, budget: int, **more: object) -> Options:
    return Options(strategy="llm", llm_base_url=base_url, llm_model=MODEL, budget=budget,
                   llm_context=8192, llm_max_tokens=160, llm_timeout=60, llm_retries=0,
                   **more)  # type: ignore[arg-type]


def used_or_rejected(llm: dict, data: bytes) -> None:
    """The model's summary is in the output, or the audit rejected it and says why."""
    if llm["used"]:
        assert summary_meta(data)["strategy"] == "llm"
    else:
        assert "under half as many" in llm["fallback"], llm["fallback"]
        assert summary_meta(data)["strategy"] == "extractive"


def check_output(path: Path, data: bytes, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(data)
    assert validate(load(out)) == []
    restored = restore(data.splitlines(keepends=True))
    assert restored == path.read_bytes()


def test_a_real_model_writes_the_summary(base_url: str, tmp_path: Path) -> None:
    path = write(tmp_path, transcript(steps=10, output_lines=3, secrets=True))  # ~1,000 tokens
    # (summary_ratio=1: the model gets the room the budget leaves, not a fifth of a region
    # this small, which its fixed parts may fill when tokens are estimated)
    result = compress_file(path, settings(base_url, tokens(path) * 7 // 10, summary_ratio=1))
    llm = result.report.llm
    used_or_rejected(llm, result.data)
    assert llm["requests"] == llm["answers"] == 1
    assert llm["prompt_tokens"] > 200 and 0 < llm["completion_tokens"] <= 160
    text = summary_text(result.data)
    assert text.startswith("## Archived Session Summary")
    assert "Also keep docs/CHANGELOG.md in step with each fix." in text  # from the file
    check_output(path, result.data, tmp_path)


def test_a_real_model_writes_step_lines(base_url: str, tmp_path: Path) -> None:
    path = write(tmp_path, transcript(steps=6, output_lines=2))  # ~450 tokens
    budget = tokens(path) * 7 // 9  # (350 on tiktoken's counts)
    result = compress_file(path, settings(base_url, budget, llm_per_step=True, summary_ratio=1,
                                          llm_concurrency=1))
    llm = result.report.llm
    used_or_rejected(llm, result.data)
    assert llm["steps"] == llm["requests"] > 0 and llm["completion_tokens"] > 0
    check_output(path, result.data, tmp_path)
    again = compress_file(path, settings(base_url, budget, llm_per_step=True, summary_ratio=1))
    assert again.report.llm["requests"] == 0 and again.data == result.data  # all cached

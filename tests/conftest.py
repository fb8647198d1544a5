"""Shared fixtures: the real-transcript corpus, the samples, and tokenizer availability."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"

# The persistent token cache of every test (and of the CLI runs they start) lives
# in a throwaway folder: tests never read or write the real user cache.
_CACHE = tempfile.mkdtemp(prefix="ctxpack-test-cache-")
os.environ["CTXPACK_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

from .helpers import CORPUS, SHARED  # noqa: E402  (after the cache is set: it imports ctxpack)

if "TIKTOKEN_CACHE_DIR" not in os.environ and (SHARED / "tiktoken-cache").is_dir():
    os.environ["TIKTOKEN_CACHE_DIR"] = str(SHARED / "tiktoken-cache")


def corpus_files(*subdirs: str, pattern: str = "*.jsonl") -> list[Path]:
    """Corpus files under `subdirs` (all when none); empty when the corpus is absent."""
    if not CORPUS.is_dir():
        return []
    dirs = [CORPUS / s for s in subdirs] if subdirs else [CORPUS]
    return sorted(p for d in dirs for p in d.rglob(pattern))


def corpus_params(*subdirs: str, pattern: str = "*.jsonl") -> list:
    """Parametrize values for corpus files: one skipped placeholder when there are none."""
    files = corpus_files(*subdirs, pattern=pattern)
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="corpus not found beside the "
                                                             "checkout (../shared/corpus)"))]
    return [pytest.param(p, id=p.name) for p in files]


@pytest.fixture(scope="session")
def exact_tokens() -> None:
    """Skip unless tiktoken's encoding files can be loaded (a fresh offline machine has none)."""
    from ctxpack.tokens import load_encoding

    for name in ("o200k_base", "cl100k_base"):
        if load_encoding(name) is None:
            pytest.skip(f"tiktoken encoding {name} unavailable offline; set TIKTOKEN_CACHE_DIR")

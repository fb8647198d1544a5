"""The accelerated tokenizer (the `fast` extra): used only where it gives tiktoken's very
tokens, and then counting everything the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack import tokens
from ctxpack.loader import load

from .conftest import SAMPLES

bpe_openai = pytest.importorskip("bpe_openai", reason="the `fast` extra (bpe-openai) is absent")
tiktoken = pytest.importorskip("tiktoken")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_encoding decides anew (it remembers each encoding it loaded)."""
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_failures", {})


def reference(name: str):
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - no encoding files here
        pytest.skip(f"tiktoken's {name} files cannot be had: {type(exc).__name__}")


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_installed_version_passes_parity_and_is_used(fresh: None, name: str) -> None:
    ref = reference(name)
    fast = bpe_openai.get_encoding(name)
    for text in tokens.PARITY_TEXTS:
        assert fast.encode_ordinary(text) == ref.encode_ordinary(text), text
    assert isinstance(tokens.load_encoding(name), tokens._Checked)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_it_counts_every_sample_text_as_tiktoken_does(fresh: None, name: str) -> None:
    ref = reference(name)
    enc = tokens.load_encoding(name)
    texts = {m.text for path in sorted(SAMPLES.glob("*.jsonl")) for m in load(path).messages}
    assert len(texts) > 100
    assert [tokens.encode_count(enc, t) for t in texts] == \
        [tokens.encode_count(ref, t) for t in texts]


def test_one_that_splits_a_parity_text_otherwise_is_not_used(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = reference("o200k_base")
    real = bpe_openai.get_encoding

    class Off:
        def __init__(self, name: str) -> None:
            self.inner = real(name)

        def encode_ordinary(self, text: str) -> list[int]:
            out = list(self.inner.encode_ordinary(text))
            return out[:-1] if "12:30pm" in text else out  # one token short on one text

    monkeypatch.setattr(bpe_openai, "get_encoding", Off)
    enc = tokens.load_encoding("o200k_base")
    assert not isinstance(enc, tokens._Checked)
    assert enc.encode_ordinary("12:30pm") == ref.encode_ordinary("12:30pm")


def test_a_text_it_fails_on_is_counted_by_tiktoken(fresh: None, tmp_path: Path) -> None:
    ref = reference("o200k_base")

    class Failing:
        def encode_ordinary(self, text: str) -> list[int]:
            raise RuntimeError("panic")

    checked = tokens._Checked(Failing(), ref)
    assert tokens.encode_count(checked, "two words") == len(ref.encode_ordinary("two words"))

"""The accelerated tokenizer (the `fast` extra): taken over to only once a process has
counted enough text that loading it pays, only where it gives tiktoken's very tokens,
and then counting everything the same."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ctxpack import tokens
from ctxpack.loader import load
from ctxpack.tokens import TokenCounter

from .conftest import SAMPLES

bpe_openai = pytest.importorskip("bpe_openai", reason="the `fast` extra (bpe-openai) is absent")
tiktoken = pytest.importorskip("tiktoken")

SAMPLE = SAMPLES / "coding-agent.claude-code.jsonl"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_encoding decides anew (it remembers each encoding it loaded)."""
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_failures", {})


def after(monkeypatch: pytest.MonkeyPatch, chars: int) -> None:
    """Hand over after `chars` characters, whatever the encoding."""
    monkeypatch.setattr(tokens, "FAST_AFTER_CHARS",
                        dict.fromkeys(tokens.FAST_AFTER_CHARS, chars))


def reference(name: str):
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - no encoding files here
        pytest.skip(f"tiktoken's {name} files cannot be had: {type(exc).__name__}")


def sample_texts() -> list[str]:
    texts = sorted({m.text for path in sorted(SAMPLES.glob("*.jsonl"))
                    for m in load(path).messages if m.text})
    assert len(texts) > 100
    return texts


def loads(monkeypatch: pytest.MonkeyPatch, make=None) -> list[str]:
    """The encodings bpe-openai is asked for from now on (made by `make`, else its own)."""
    asked: list[str] = []
    real = bpe_openai.get_encoding

    def get_encoding(name: str):
        asked.append(name)
        return (make or real)(name)

    monkeypatch.setattr(bpe_openai, "get_encoding", get_encoding)
    return asked


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_every_encoding_it_may_take_over_passes_parity_on_the_installed_version(
        name: str) -> None:
    assert name in tokens.FAST_AFTER_CHARS
    ref, fast = reference(name), bpe_openai.get_encoding(name)
    for text in tokens.PARITY_TEXTS:
        assert fast.encode_ordinary(text) == ref.encode_ordinary(text), text


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_it_takes_over_once_enough_text_is_counted_and_counts_the_same(
        fresh: None, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    ref = reference(name)
    texts = sample_texts()
    half = sum(map(len, texts)) // 2
    after(monkeypatch, half)
    asked = loads(monkeypatch)
    counter = TokenCounter("gpt-4o" if name == "o200k_base" else "gpt-4")
    counted, handed_over_at = 0, None
    for text in texts:
        assert counter.count_now(text) == tokens.encode_count(ref, text), text
        counted += len(text)
        if asked and handed_over_at is None:
            handed_over_at = counted
    assert asked == [name]  # loaded once, past the threshold and not before
    assert handed_over_at is not None and handed_over_at > half
    assert counter.encoding().fast is not None


def test_a_short_stats_never_loads_it_and_prints_what_it_would(tmp_path) -> None:
    """The point of waiting: `ctxpack stats` of a small file pays no bpe-openai import."""
    reference("o200k_base")
    code = ("import atexit, runpy, sys\n"
            "from ctxpack import tokens\n"
            "if sys.argv.pop(1) == 'at-once':\n"
            "    tokens.FAST_AFTER_CHARS.update(dict.fromkeys(tokens.FAST_AFTER_CHARS, 0))\n"
            "atexit.register(lambda: print('bpe_openai' in sys.modules, file=sys.stderr))\n"
            "runpy.run_module('ctxpack', run_name='__main__', alter_sys=True)\n")
    outs = {}
    for policy in ("shipped", "at-once"):
        done = subprocess.run(
            [sys.executable, "-c", code, policy, "stats", "--json", "--no-cache", str(SAMPLE)],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**os.environ, "CTXPACK_WORKERS": "1"})
        assert done.returncode == 0, done.stderr
        outs[policy] = (done.stdout, done.stderr.splitlines()[-1])
    assert outs["shipped"][1] == "False" and outs["at-once"][1] == "True"
    assert outs["shipped"][0] == outs["at-once"][0]


def test_one_that_splits_a_parity_text_otherwise_is_not_taken_over_to(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = reference("o200k_base")
    real = bpe_openai.get_encoding

    class Off:
        def __init__(self, name: str) -> None:
            self.inner = real(name)

        def encode_ordinary(self, text: str) -> list[int]:
            out = list(self.inner.encode_ordinary(text))
            return [] if "12:30pm" in text else out  # wrong on one parity text

    after(monkeypatch, 0)
    asked = loads(monkeypatch, Off)
    counter = TokenCounter("gpt-4o")
    text = "It's 12:30pm."
    assert counter.count_now(text) == len(ref.encode_ordinary(text))
    assert asked == ["o200k_base"] and counter.encoding().fast is None
    counter.count_now("more text")
    assert asked == ["o200k_base"]  # decided once


def test_a_text_it_fails_on_is_counted_by_tiktoken(
        fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = reference("o200k_base")
    real = bpe_openai.get_encoding

    class Panicky:
        def __init__(self, name: str) -> None:
            self.inner = real(name)

        def encode_ordinary(self, text: str) -> list[int]:
            if "zebra" in text:
                raise BaseException("a Rust panic")  # noqa: TRY002 - as pyo3 raises one
            return self.inner.encode_ordinary(text)

    after(monkeypatch, 0)
    loads(monkeypatch, Panicky)
    counter = TokenCounter("gpt-4o")
    text = "two zebra words"
    assert counter.count_now(text) == len(ref.encode_ordinary(text))
    assert counter.encoding().fast is not None

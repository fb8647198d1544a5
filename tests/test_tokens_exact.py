"""Exact counts are tiktoken's: a text with a long run is cut only between the pieces of
the encoding's pre-tokenizer, so its count is the whole text's; only a single piece
longer than `tokens.PIECE_LIMIT` is counted in parts, within the bound docs/counting.md
states. Checked for cl100k and o200k, with tiktoken and with the accelerated tokenizer
(the `fast` extra) where it is installed."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import tokens
from ctxpack.tokens import TokenCounter

tiktoken = pytest.importorskip("tiktoken")

MODELS = {"o200k_base": "gpt-4o", "cl100k_base": "gpt-4"}

# Runs without a space whose pre-tokenizer pieces stay short: digits, code, scripts, emoji.
UNITS = ["1234567890", "a1", "x=y;", "foo(bar)", "中文1", "==>1", "é9", "😀1", "0x1F,", "ab'sd",
         "Ünï-", "e\u0301x2", "if(a){b}", "٣٤٥"]
SPACES = [" ", "\n", "\t", "\r\n", "\u3000", " \n", "\u00a0", "  \t"]
segment = st.one_of(
    st.builds(lambda unit, n: unit * n, st.sampled_from(UNITS), st.integers(1, 3000)),
    st.builds(lambda space, n: space * n, st.sampled_from(SPACES), st.integers(1, 1500)),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
)
texts = st.lists(segment, max_size=8).map("".join)


def reference(name: str):
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - no encoding files here
        pytest.skip(f"tiktoken's {name} files cannot be had: {type(exc).__name__}")


def backends(name: str) -> list:
    """The tokenizers exact counts may come from: tiktoken's, and bpe-openai's where it is
    installed and passes parity (as `tokens.Encoding` would take it over)."""
    found = [tokens.load_encoding(name) or reference(name)]
    fast = tokens.accelerated(name, reference(name))
    return found + ([fast] if fast is not None else [])


def minified(chars: int) -> str:
    rnd = random.Random(3)
    bits = ["function(a,b){return a+b}", "var q=[1,2,3];", "if(x.length>0){x.pop()}",
            "'use strict';", "0x1F|0;", "a.b.c=d||{};", "Ünïcödé", "中文", "=>"]
    return "".join(rnd.choice(bits) for _ in range(chars // 8))[:chars]


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("text", ["1234567890" * 5000, minified(80_000), "x" * 8191 + "1" * 9000],
                         ids=["digits", "minified", "letters-then-digits"])
def test_long_runs_count_as_tiktoken_counts_them(exact_tokens, name, text):
    expected = len(reference(name).encode_ordinary(text))
    assert TokenCounter(MODELS[name]).text(text) == expected
    for enc in backends(name):
        assert tokens.encode_count(enc, text) == expected


def test_the_issue_s_digits_count_16667(exact_tokens):
    """The case that was 16,669 when texts were cut every 8,192 characters."""
    assert TokenCounter("gpt-4o").text("1234567890" * 5000) == 16_667


@settings(max_examples=40, deadline=None)
@given(texts, st.sampled_from(sorted(MODELS)))
def test_every_text_without_a_long_piece_counts_as_tiktoken(exact_tokens, text, name):
    # a piece is at most a run of one kind of character and a few more: whitespace runs
    # are kept well under the limit, and the units above break every other kind of run
    assume(not re.search(r"\s{6000}", text))
    expected = len(reference(name).encode_ordinary(text))
    assert TokenCounter(MODELS[name]).count_now(text) == expected
    for enc in backends(name):
        assert tokens.encode_count(enc, text) == expected


def long_pieces() -> list[str]:
    rnd = random.Random(11)
    return ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(40_000)),
            "".join(rnd.choice("etaoinshrdlu") for _ in range(40_000)),
            "".join(rnd.choice("中文字的一是不了人我在有他这为之大来以个") for _ in range(30_000)),
            "".join(rnd.choice("=-_*#~!@$%^&()[]{};:,.<>?|") for _ in range(30_000)),
            "".join(rnd.choice(" \t") for _ in range(30_000)),
            "see " + "a" * 30_000 + " then " + "=" * 20_000 + "\n"]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_piece_over_the_limit_is_counted_in_parts_within_the_stated_bound(exact_tokens,
                                                                           name):
    """docs/counting.md: each cut inside one piece moves the count by at most 2 tokens."""
    pattern = re.compile(rf"\S{{{tokens.PIECE_LIMIT + 1},}}|\s{{{tokens.PIECE_LIMIT + 1},}}")
    ref = reference(name)
    for text in long_pieces():
        cuts = sum(-(-len(run) // tokens.PIECE_LIMIT) - 1 for run in pattern.findall(text))
        assert cuts >= 2
        expected = len(ref.encode_ordinary(text))
        counted = TokenCounter(MODELS[name]).text(text)
        assert abs(counted - expected) <= 2 * cuts, (text[:20], counted, expected)
        assert {tokens.encode_count(enc, text) for enc in backends(name)} == {counted}



@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_run_of_digits_is_tokenized_whole_where_digits_are_short_pieces(exact_tokens, name):
    """cl100k and o200k take digits 3 at a time, so a long run of them is no long piece and
    is never cut into pieces first (the slow path). Other scripts' digits, told apart from
    letters only by the pre-tokenizer, are cut between pieces: the same count."""
    digits = "1234567890" * 5000
    for enc in backends(name):
        assert tokens.split_long_pieces(enc, digits) == [digits]
    for text in (digits, "\u0663\u0664\u0665\u0666" * 3000, "12\u0663" * 4000):
        expected = len(reference(name).encode_ordinary(text))
        assert {tokens.encode_count(enc, text) for enc in backends(name)} == {expected}


def test_digits_are_cut_between_pieces_where_the_encoding_takes_them_whole(exact_tokens):
    """p50k_base's pre-tokenizer takes a run of digits as one piece: that is cut."""
    enc = tokens.load_encoding("p50k_base")
    if enc is None:
        pytest.skip("tiktoken's p50k_base files cannot be had")
    text = "see " + "7" * 20_000
    parts = tokens.split_long_pieces(enc, text)
    assert "".join(parts) == text and max(map(len, parts)) <= tokens.PIECE_LIMIT


def test_an_encoding_that_keeps_no_pre_tokenizer_counts_every_text_whole(
        exact_tokens, monkeypatch: pytest.MonkeyPatch):
    """ctxpack reads the pre-tokenizer under tiktoken's private name `_pat_str`; a tiktoken
    without it gets its own encode of the whole text: no crash, tiktoken's count."""
    real = reference("o200k_base")
    asked: list[int] = []

    class Bare:  # tiktoken's public face only
        name = real.name

        def encode_ordinary(self, text: str) -> list[int]:
            asked.append(len(text))
            return real.encode_ordinary(text)

    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_failures", {})
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: Bare())
    # a piece of 9,000 letters, which ctxpack would otherwise cut, and a run of digits
    text = "see " + "x" * 9000 + " and " + "1234567890" * 2000
    assert ctxpack.count(text, "gpt-4o") == len(real.encode_ordinary(text))
    assert asked == [len(text)]

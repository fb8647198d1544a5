"""Bulk counting: worker processes give exactly the sequential counts; images stay untouched.

The transcript is the benchmark's generator at a few MB, plus lines that hit
tiktoken's weak spots (long runs of spaces and of letters, non-ASCII text).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import sys
import types
from pathlib import Path

import pytest
import regex
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ctxpack import bulk, images, tokens, workers
from ctxpack.breakdown import stats
from ctxpack.bulk import BulkCounter
from ctxpack.loader import load
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Image, Message, Text
from ctxpack.workers import Workers

from .helpers import bench_generator


def _png(width: int, height: int, size: int) -> str:
    import random

    return bench_generator().png_base64(random.Random(1), width, height, size)


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~3 MB agent run with weak-spot lines appended."""
    path, _ = bench_generator().ensure(3, seed=11, out_dir=tmp_path_factory.mktemp("bulk"))
    odd = [" " * 100_000 + "end", "a" * 50_000, "naïve café — 日本語のテキスト " * 2000,
           "\u3000" * 20_000 + "x" + "\t \n" * 5000]
    with open(path, "a", encoding="utf-8") as out:
        for text in odd:
            out.write(json.dumps({"role": "tool", "tool_call_id": "x", "content": text}) + "\n")
    return path


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force worker processes even for a small file, with many small tasks."""
    monkeypatch.setenv("CTXPACK_WORKERS", "2")
    monkeypatch.setitem(workers.WORTH_CHARS, "fork", 0)
    monkeypatch.setitem(workers.WORTH_CHARS, "spawn", 0)
    monkeypatch.setattr(bulk, "BATCH_CHARS", 64 << 10)
    monkeypatch.setattr(bulk, "TASK_CHARS", 16 << 10)


def bulk_counts(messages: list[Message], count: int | None = None
                ) -> tuple[list[tokens.MessageCount], BulkCounter[int]]:
    counter = TokenCounter("gpt-4o")
    got: dict[int, tokens.MessageCount] = {}
    with Workers(count) as pool:
        counting: BulkCounter[int] = BulkCounter(counter, got.__setitem__, workers=pool)
        for i, message in enumerate(messages):
            counting.add(counter.plan(message, counting.need), i)
        counting.finish()
    return [got[i] for i in range(len(messages))], counting


def test_workers_count_every_message_as_the_sequential_path(exact_tokens, transcript, parallel):
    messages = load(transcript).messages
    sequential = TokenCounter("gpt-4o")
    expected = [sequential.message(m) for m in messages]
    counts, counting = bulk_counts(messages)
    assert counting.tally["workers"] == 2
    assert counts == expected  # totals and every part's share
    assert counting.counter.tokenized == sequential.tokenized  # each distinct text once


def test_stats_agree_with_and_without_workers(exact_tokens, transcript, parallel, monkeypatch):
    par = stats(transcript, "gpt-4o", cache=False)
    monkeypatch.setenv("CTXPACK_WORKERS", "1")
    seq = stats(transcript, "gpt-4o", cache=False)
    assert par.counting["workers"] == 2 and seq.counting["workers"] == 0
    assert par.to_dict() == seq.to_dict()


def _die(encoding: str, texts: list[str]) -> list[int]:
    os._exit(3)


def test_a_dying_worker_falls_back_to_counting_here(exact_tokens, transcript, parallel,
                                                    monkeypatch):
    messages = load(transcript).messages[:400]
    expected = [TokenCounter("gpt-4o").message(m) for m in messages]
    monkeypatch.setattr(bulk, "_tokenize", _die)
    counts, _ = bulk_counts(messages)
    assert counts == expected


def test_small_inputs_stay_in_one_process(exact_tokens):
    messages = [Message("user", (Text(f"hello {i}"),)) for i in range(50)]
    counts, counting = bulk_counts(messages, count=2)
    assert counting.tally["workers"] == 0
    assert [c.total for c in counts] == [TokenCounter("gpt-4o").message(m).total
                                         for m in messages]


def test_images_are_sized_from_their_header_not_tokenized(exact_tokens, monkeypatch):
    data = _png(1920, 1080, 2_000_000)
    decoded: list[int] = []

    def a2b_base64(chars: str | bytes) -> bytes:
        decoded.append(len(chars))
        return binascii.a2b_base64(chars)

    monkeypatch.setattr(images, "binascii", types.SimpleNamespace(
        a2b_base64=a2b_base64, Error=binascii.Error))
    message = Message("user", (Text("what is wrong here?"), Image("image/png", data)))
    counter = TokenCounter("gpt-4o")
    seen: list[str] = []
    counting: BulkCounter[int] = BulkCounter(counter, lambda i, c: None)

    def need(text: str) -> int | tokens.Key:
        seen.append(text)
        return counting.need(text)

    counting.add(counter.plan(message, need), 0)
    counting.finish()
    assert seen == ["user", "what is wrong here?"]
    assert sum(decoded) < 100_000 < len(data)
    assert counter.message(message).total < 2_000


def test_the_screen_misses_no_long_piece():
    for text in (" " * 8192, "\u3000" * 8192, "x" * 8192, "é" * 8192, " \u2028" * 4096,
                 "\udcff" * 8192, "\x1c" * 8192, "\u00a0" * 8192, "=\n/" * 3000,
                 "7" * 8192, "x" * 8191 + "'s"):
        assert tokens.may_have_long_piece(text), text[:4]
    # runs of short pieces: digits among letters, code, base64, compact JSON, words
    for text in ("ab " * 5000, "é " * 5000, "a1" * 5000, "x=y;" * 5000, "{\"a\":[1,2]}," * 2000,
                 "QUJDREVGR0g0NTY3+/==" * 1000, "x" * 8000 + " " + "x" * 8000):
        assert not tokens.may_have_long_piece(text), text[:4]


def test_wide_spaces_are_every_non_ascii_space():
    spaces = {c for c in map(chr, range(128, sys.maxunicode + 1)) if re.match(r"\s", c)}
    assert spaces == set(tokens.WIDE_SPACES)


_run = st.sampled_from([" ", "\n", "\t", "\u3000", "\u00a0", "\x1c", "a", "é", "語", "-", "😀",
                        "7", "/", "A", "\u0301"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_run, st.integers(1, 9000)), max_size=6),
       st.sampled_from(["o200k_base", "cl100k_base", "p50k_base"]))
def test_no_long_piece_escapes_the_screen(exact_tokens, runs, name):
    """A text with a piece of the encoding's pre-tokenizer over the limit, or a run of
    whitespace that long, comes back in parts of at most the limit; any text comes back
    as parts that make it up."""
    enc = tokens.load_encoding(name)
    assume(enc is not None)  # (p50k's files, with its unbounded digit pieces, may be absent)
    text = "".join(char * n for char, n in runs)
    parts = tokens.split_long_pieces(enc, text)
    assert "".join(parts) == text
    longest = max(map(len, regex.findall(enc._pat_str, text)), default=0)
    if longest > tokens.PIECE_LIMIT or re.search(rf"\s{{{tokens.PIECE_LIMIT + 1}}}", text):
        assert max(map(len, parts)) <= tokens.PIECE_LIMIT


def test_png_helper_is_a_png():
    data = base64.b64decode(_png(640, 480, 1000))
    assert images.image_size(data) == (640, 480)

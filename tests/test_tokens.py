"""Token counting: cookbook equality, guards for tiktoken's weak spots, cache, fallback."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import tokens
from ctxpack.loader import load
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Message, Text


def cookbook_count(messages: list[dict], encoding) -> int:
    """The OpenAI cookbook's num_tokens_from_messages, written out independently."""
    total = 0
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(encoding.encode(value))
            if key == "name":
                total += 1
    return total + 3


chat_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200)
chat_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant"]), "content": chat_text},
    optional={"name": st.from_regex(r"[a-z_]{1,12}", fullmatch=True)},
)


@settings(max_examples=60, deadline=None)
@given(st.lists(chat_message, min_size=1, max_size=6), st.sampled_from(["gpt-4o", "gpt-4"]))
def test_plain_chat_equals_the_cookbook(exact_tokens, messages, model):
    counter = TokenCounter(model)
    enc = __import__("tiktoken").get_encoding(counter.encoding_name)  # the cookbook's own
    data = "".join(__import__("json").dumps(m) + "\n" for m in messages).encode()
    transcript = load(io.BytesIO(data), "openai")
    assert counter.messages(transcript.messages) == cookbook_count(messages, enc)


def test_known_counts(exact_tokens):
    assert TokenCounter("gpt-4o").text("hello world") == 2
    assert TokenCounter("gpt-4").text("tiktoken is great!") == 6
    assert TokenCounter("gpt-4o").encoding_name == "o200k_base"
    assert TokenCounter("gpt-3.5-turbo").encoding_name == "cl100k_base"


def test_approximate_models_are_marked(exact_tokens):
    claude = TokenCounter("claude-opus-4-6")
    assert not claude.exact and "approximation" in claude.note
    assert TokenCounter("gpt-4o").exact


def test_a_million_spaces_count_close_to_unsplit(exact_tokens):
    counter = TokenCounter("gpt-4o")
    n = counter.text(" " * 1_000_000)
    assert 0 < n < 1_000_000
    text = "x = 1\n" + "a" * 50_000 + "\n"
    assert counter.text(text) > 0


def test_cache_tokenizes_repeats_once(exact_tokens):
    counter = TokenCounter("gpt-4o")
    long = "traceback line\n" * 500
    first = counter.text(long)
    misses = counter.misses
    assert counter.text(long) == first
    assert counter.misses == misses and counter.hits >= 1


def test_fallback_estimate_when_no_encoding_file(monkeypatch):
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_failures", {"o200k_base": "ConnectionError: offline"})
    counter = TokenCounter("gpt-4o")
    assert counter.estimated and not counter.exact
    assert counter.text("abcdefgh") == 2
    assert "estimated" in counter.note and "offline" in counter.note


def test_fallback_cli_warns_once_and_marks_inexact(tmp_path):
    import json

    from .helpers import ctxpack

    path = tmp_path / "c.jsonl"
    path.write_text('{"role":"user","content":"hello there"}\n')
    run = ctxpack("stats", "--json", str(path), str(path),
                  env={"TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"),
                       "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"})
    assert run.code == 0, run.err
    assert run.err.count("warning:") == 1 and "estimated" in run.err
    doc = json.loads(run.out)
    assert doc["files"][0]["exact"] is False and doc["total"]["exact"] is False


def test_image_counted_by_size_not_base64(exact_tokens):
    from ctxpack.transcript import Image

    counter = TokenCounter("gpt-4o")
    huge = Message("user", (Image(media_type="image/png", data="A" * 2_000_000),))
    small = Message("user", (Text("x"),))
    assert counter.message(huge).total < 2000
    assert counter.message(small).total < 10


def test_unknown_model_is_a_usage_error():
    from ctxpack.errors import UsageError

    with pytest.raises(UsageError, match="unknown model"):
        TokenCounter("not-a-model")


def test_the_public_count_is_what_the_command_prints(exact_tokens):
    import ctxpack

    from .helpers import ctxpack as run

    text = "Summarize this paragraph in one line."
    assert ctxpack.count(text, model="gpt-4") == TokenCounter("gpt-4").text(text) == 9
    assert ctxpack.count(text) == TokenCounter("gpt-4o").text(text)  # the default model
    assert run("count", "--model", "gpt-4", text).out.strip() == "9"
    assert ctxpack.count("", model="gpt-4o") == 0
    with pytest.raises(ctxpack.UsageError, match="unknown model"):
        ctxpack.count(text, model="not-a-model")

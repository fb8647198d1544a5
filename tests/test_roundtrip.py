"""Lossless: load then write gives back the very bytes that were read."""

from __future__ import annotations

import io
import json
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxpack.dataset.rows import PARQUET_MAGIC
from ctxpack.errors import InputError, UsageError
from ctxpack.formats.unknown import looks_binary
from ctxpack.loader import load, write
from ctxpack.transcript import Text

from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, ctxpack


def roundtrip(data: bytes, **kw) -> bytes:
    out = io.BytesIO()
    write(load(io.BytesIO(data), **kw), out)
    return out.getvalue()


texts = st.text(max_size=60)
messages = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                           "content": texts}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": texts, "content": texts}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none(),
                           "tool_calls": st.lists(st.fixed_dictionaries({
                               "id": texts, "type": st.just("function"),
                               "function": st.fixed_dictionaries({"name": texts,
                                                                  "arguments": texts})}),
                               max_size=3)},
                          optional={"x_unknown": st.dictionaries(texts, st.integers())}),
)
styles = st.sampled_from([
    {"separators": (",", ":"), "ensure_ascii": False},
    {"separators": (", ", ": "), "ensure_ascii": True},
    {"indent": None, "sort_keys": True},
])
endings = st.sampled_from([b"\n", b"\r\n"])


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, min_size=1, max_size=12), styles, endings, st.booleans())
def test_any_openai_jsonl_round_trips_byte_for_byte(msgs, style, ending, final_newline):
    lines = [json.dumps(m, **style).encode() for m in msgs]
    data = ending.join(lines) + (ending if final_newline and lines else b"")
    assert roundtrip(data) == data


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=40).filter(lambda b: b"\n" not in b),
                          st.just(b'{"role":"user","content":"ok"}')), max_size=10))
@example([b"PAR1", b'{"role":"user","content":"ok"}'])
@example([b"{", b"\x00"])  # (opens as a document would, goes on as none does)
@example([b"{", b"{"])  # (an object opened goes on with a key, not with another)
@example([b"\x01\x01\t   "])  # (binary without its line end, text with it: judged with)
def test_garbage_lines_survive_a_skip_invalid_round_trip(lines):
    data = b"\n".join(lines) + b"\n"
    if not data.strip():  # nothing but blank space: no transcript (see test_bad_input)
        with pytest.raises(InputError, match="empty"):
            roundtrip(data, skip_invalid=True, format="openai")
        return
    # a binary file is named, not skipped through (its first line judged as read: with
    # its line end)
    if looks_binary(lines[0] + b"\n") is not None:
        with pytest.raises(InputError, match="not a transcript ctxpack reads"):
            roundtrip(data, skip_invalid=True, format="openai")
        return
    if data.startswith(PARQUET_MAGIC):  # a Parquet file is read by its path, not skipped
        with pytest.raises(UsageError, match="Parquet"):
            roundtrip(data, skip_invalid=True, format="openai")
        return
    try:
        out = roundtrip(data, skip_invalid=True, format="openai")
    except Exception as exc:  # only our own errors are acceptable, e.g. none at all
        raise AssertionError(f"unexpected {type(exc).__name__}: {exc}") from exc
    assert out == data


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code", "codex", "anthropic-messages"))
def test_corpus_round_trip(path, tmp_path):
    target = tmp_path / path.name
    t = load(path)
    write(t, target)
    assert target.read_bytes() == path.read_bytes()


def test_samples_round_trip(tmp_path):
    files = sorted([*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")])
    assert files, "samples/ must hold transcripts"
    for path in files:
        target = tmp_path / path.name
        write(load(path), target)
        assert target.read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("path", sorted([*SAMPLES.glob("*.jsonl"), *SAMPLES.glob("*.json")]),
                         ids=lambda p: p.name)
def test_a_loaded_transcript_is_a_read_only_view_of_its_file(path):
    # `write` writes the records as read; an edit it would drop must fail where it is made
    t = load(path)
    every = [*t.messages, *t.sidechain, *t.outside]
    assert all(type(m.parts) is tuple for m in every), "a reader built parts as a list"
    for held in (t.messages, t.sidechain, t.outside, t.skipped, t.records):
        with pytest.raises(AttributeError, match="'tuple' object has no attribute 'append'"):
            held.append(None)
    m = t.messages[0]
    with pytest.raises(TypeError, match="does not support item assignment"):
        t.messages[0] = m
    with pytest.raises(FrozenInstanceError):
        t.messages = t.messages[1:]
    with pytest.raises(AttributeError, match="'tuple' object has no attribute 'append'"):
        m.parts.append(Text("more"))
    with pytest.raises(TypeError, match="does not support item assignment"):
        m.parts[0] = Text("other")
    with pytest.raises(FrozenInstanceError):
        m.human = not m.human
    with pytest.raises(FrozenInstanceError):
        t.records[0].raw = b""
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == path.read_bytes()


@pytest.mark.parametrize("name", ["support-chat.openai.jsonl", "bugfix.mini-swe-agent.traj.json",
                                  "aider/architect-lint.aider.chat.history.md",
                                  "coding-agent.claude-code.jsonl"])
def test_a_file_opening_with_a_byte_order_mark_is_read_as_without_and_written_back_with_it(
        name, tmp_path):
    # editors on Windows open UTF-8 with a BOM: the file reads as the same transcript, on
    # the same lines, and a write gives the mark back with every other byte
    plain = (SAMPLES / name).read_bytes()
    marked = b"\xef\xbb\xbf" + plain
    assert roundtrip(marked) == marked
    without, with_mark = load(io.BytesIO(plain)), load(io.BytesIO(marked))
    assert with_mark.format == without.format
    assert [(m.line, m.role) for m in with_mark.messages] == \
        [(m.line, m.role) for m in without.messages]
    path = tmp_path / Path(name).name
    path.write_bytes(marked)
    again = tmp_path / ("plain-" + Path(name).name)
    again.write_bytes(plain)
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    assert json.loads(run.out)["files"][0]["tokens"] == \
        json.loads(ctxpack("stats", "--json", str(again)).out)["files"][0]["tokens"]
    # (validate's own checks read the first line past its mark too: a Claude Code file's
    # first uuid was lost, and a parentUuid naming it said to resolve to nothing)
    assert ctxpack("validate", str(path)).out.replace(str(path), "") == \
        ctxpack("validate", str(again)).out.replace(str(again), "")


@pytest.mark.parametrize("stdin", [False, True])
@pytest.mark.parametrize(("name", "budget"), [("bugfix.mini-swe-agent.traj.json", "2500"),
                                            ("evals.openai-conversations.jsonl", "600")])
def test_compress_keeps_a_byte_order_mark_where_it_rewrites_the_first_line(name, budget, stdin,
                                                                          tmp_path):
    # a rewritten document, or first line, was written without the mark the file opens
    # with (restore gave it back; compress's own output lost it)
    lines = (SAMPLES / name).read_bytes().splitlines(keepends=True)
    if name.endswith(".jsonl"):  # the largest conversation first, so that it is rewritten
        largest = max(lines, key=len)
        lines = [largest, *(x for x in lines if x is not largest)]
    marked = b"\xef\xbb\xbf" + b"".join(lines)
    path = tmp_path / name
    path.write_bytes(marked)
    out = tmp_path / ("out-" + name)
    args = ("compress", "-", "--format", load(io.BytesIO(marked)).format) if stdin \
        else ("compress", str(path))
    run = ctxpack(*args, "--budget", budget, "-o", str(out),
                  input=marked if stdin else None)
    assert run.code == 0, run.err
    written = out.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf") and not written.startswith(b"\xef\xbb\xbf" * 2)
    assert written != marked  # (a document is written whole again)
    if name.endswith(".jsonl"):  # the line of the conversation compressed
        assert written.splitlines()[0] != marked.splitlines()[0]
    assert ctxpack("validate", str(out)).code == 0
    again = tmp_path / "restored"
    assert ctxpack("restore", str(out), "-o", str(again)).code == 0
    assert again.read_bytes() == marked


def test_a_file_of_nothing_but_a_byte_order_mark_is_empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"\xef\xbb\xbf")
    for command in ("validate", "stats", "compress"):
        assert_clean_error(ctxpack(command, str(path)), 2, f"{path}", "the file is empty")
    assert_clean_error(ctxpack("validate", "-", input=b"\xef\xbb\xbf"), 2, "the file is empty")

"""Anthropic Messages API messages saved as one JSON array (`anthropic-array`)."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess

import pytest
from hypothesis import assume, given, settings

from ctxpack import load, stats, write
from ctxpack.errors import InputError

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack
from .strategies import anthropic_chat

SAMPLE = SAMPLES / "anthropic-array" / "late-orders.anthropic-array.json"


def _lines(messages):
    """The same messages one a line: the `anthropic` format."""
    return io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in messages))


def _read_alike(a, b):
    assert [(m.role, m.text, [c.id for c in m.tool_calls],
             [r.call_id for r in m.tool_results]) for m in a.messages] == \
        [(m.role, m.text, [c.id for c in m.tool_calls], [r.call_id for r in m.tool_results])
         for m in b.messages]


def test_the_sample_reads_as_its_messages_one_a_line_do(tmp_path):
    t = load(SAMPLE)
    assert (t.format, len(t.messages), t.unsure) == ("anthropic-array", 10, "")
    lines = load(_lines(json.loads(SAMPLE.read_text())))
    assert lines.format == "anthropic"
    _read_alike(t, lines)
    assert stats(str(SAMPLE)).tokens == stats(_lines(json.loads(SAMPLE.read_text()))).tokens
    write(t, tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == SAMPLE.read_bytes()


def test_the_commands_read_it_and_compress_says_what_to_do(tmp_path):
    for args in (("stats",), ("show", "--no-pager"), ("validate",),
                 ("convert", "--to", "openai")):
        run = ctxpack(*args, str(SAMPLE))
        assert run.code == 0, (args, run.err)
    assert "anthropic-array, 10 messages: ok" in ctxpack("validate", str(SAMPLE)).err
    out = tmp_path / "out.json"
    run = ctxpack("compress", str(SAMPLE), "-o", str(out))
    assert_clean_error(run, 2, f"{SAMPLE}: compress does not rewrite a JSON array",
                       f"`jq -c '.[]' {SAMPLE} > run.jsonl`")
    assert not out.exists()


def test_the_command_compress_gives_names_the_file_and_makes_one_it_rewrites(tmp_path):
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    odd = tmp_path / "late orders (Ann's).json"  # a name the shell must have quoted
    odd.write_bytes(SAMPLE.read_bytes())
    run = ctxpack("compress", str(odd), "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, "compress does not rewrite a JSON array")
    command = re.search(r"`(jq [^`]*)`", run.err).group(1)
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    lines = load(tmp_path / "run.jsonl")
    assert (lines.format, [m.text for m in lines.messages]) == \
        ("anthropic", [m.text for m in load(SAMPLE).messages])
    assert ctxpack("compress", "run.jsonl", "-o", "small.jsonl", "--budget", "2000",
                   cwd=str(tmp_path)).code == 0


def test_an_array_of_plain_text_messages_is_still_json_messages():
    chat = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    assert load(io.BytesIO(json.dumps(chat).encode())).format == "json-messages"


def test_an_item_that_is_no_message_is_named():
    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                               "input": {}}]},
            "a note"]
    try:
        load(io.BytesIO(json.dumps(chat, indent=2).encode()), "anthropic-array")
    except InputError as exc:
        assert "item 2 of the array is not a message" in exc.problem
    else:
        raise AssertionError("read an array holding a string")


@settings(max_examples=60, deadline=None)
@given(chat=anthropic_chat())
def test_any_array_is_written_back_exactly_and_read_as_its_lines(chat):
    assume(any(isinstance(b, dict) and b["type"] in ("tool_use", "thinking")
               for m in chat if isinstance(m["content"], list) for b in m["content"]))
    for data in (json.dumps(chat).encode(), json.dumps(chat, indent=2).encode() + b"\n"):
        t = load(io.BytesIO(data))
        assert t.format == "anthropic-array"
        _read_alike(t, load(_lines(chat)))
        out = io.BytesIO()
        write(t, out)
        assert out.getvalue() == data


def test_one_bad_content_value_keeps_the_format_and_is_named(tmp_path):
    from ctxpack.checks import validate

    messages = json.loads(SAMPLE.read_text())
    messages[3]["content"] = 5
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(messages, indent=2))
    t = load(path)
    assert t.format == "anthropic-array" and len(t.messages) == len(messages)
    assert "[3]: content is a number, not a string or an array of content blocks" in [
        p.message for p in validate(t)]
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"model": "claude-opus-4-6", "max_tokens": 100,
                                "messages": [{"role": "user", "content": 5}]}))
    t = load(body)
    assert t.format == "anthropic-requests"
    assert [p.message for p in validate(t)] == [
        "content is a number, not a string or an array of content blocks"]
    # a Chat Completions message's null content is no such value: the body stays OpenAI's
    body.write_text(json.dumps({"model": "gpt-4o", "max_tokens": 100, "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]}))
    assert load(body).format != "anthropic-requests"

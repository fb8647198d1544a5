"""compression/__init__.py, the library's entry points: `ctxpack.compress` inside an agent
loop (message dicts in, API-ready dicts out; a Transcript in, one with its archive
out), and `compress_file`'s output, made once as it is read."""

from __future__ import annotations

import orjson
import pytest

import ctxpack
from ctxpack.compression import compress_file
from ctxpack.compression.settings import Options
from ctxpack.errors import CannotFit, UsageError
from ctxpack.loader import load
from ctxpack.undo import restore

from ..conftest import SAMPLES, corpus_params
from .transcripts import agent_run, fitted, tokens


def test_the_library_takes_message_dicts_and_gives_api_ready_ones_back() -> None:
    data = agent_run(30)
    messages = [orjson.loads(line) for line in data.splitlines()]
    budget = fitted(data) * 3 // 4
    out, report = ctxpack.compress(messages, model="gpt-4o", budget=budget, keep_steps=3)
    assert report.tokens_after <= budget < report.tokens_before
    assert out[:2] == messages[:2]  # the system prompt and the task
    assert out[-6:] == messages[-6:]  # the three newest steps, untouched
    assert all("ctxpack" not in m for m in out)
    (summary,) = [m["content"] for m in out if str(m["content"]).startswith("## Archived")]
    assert "their full text was not kept" in summary  # the caller holds the originals
    open_calls: list[str] = []
    for m in out:  # Chat Completions accepts it: each call's results right after it
        if m["role"] == "tool":
            open_calls.remove(m["tool_call_id"])
        else:
            assert not open_calls
            open_calls = [c["id"] for c in m.get("tool_calls") or ()]
    assert messages == [orjson.loads(line) for line in data.splitlines()]  # not changed


def test_the_library_on_a_transcript_keeps_the_archive() -> None:
    path = SAMPLES / "support-chat.openai.jsonl"
    small, report = ctxpack.compress(load(path), budget=fitted(path) * 3 // 4)
    assert report.summary is not None and small.format == "openai"
    assert restore([r.raw for r in small.records]) == path.read_bytes()


@pytest.mark.parametrize("settings, fragment", [
    ({"keep_step": 3}, "compress(): unknown setting(s): keep_step"),
    ({"threshold": "high"}, "threshold must be float"),
    ({"summary_ratio": 0}, "summary_ratio must be at least 1"),
    ({"keep_steps": True}, "keep_steps must be int"),
])
def test_the_library_refuses_bad_settings_by_name(settings: dict, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        ctxpack.compress([{"role": "user", "content": "hi"}], **settings)
    assert fragment in str(info.value)


def test_settings_given_as_text_are_read_as_their_type() -> None:
    _, report = ctxpack.compress([{"role": "user", "content": "hi"}], budget="3000",
                                 threshold="0.5")
    assert report.limit == 3000


def test_a_files_output_is_made_once_as_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")  # the two runs stamp alike
    path = SAMPLES / "support-chat.openai.jsonl"
    result = compress_file(path, Options(budget=fitted(path) * 3 // 4))
    pieces = list(result.chunks())
    assert len(pieces) > 1 and b"".join(pieces).startswith(path.read_bytes()[:20])
    with pytest.raises(RuntimeError, match="read already"):
        list(result.chunks())
    again = compress_file(path, Options(budget=fitted(path) * 3 // 4))
    assert again.data == b"".join(pieces) and list(again.chunks()) == [again.data]


def test_the_garbage_collector_is_set_back_however_the_output_is_read() -> None:
    """Compress pauses the cyclic collector while it plans and while its output is made;
    a caller's process gets it back as it was, whether it reads the output, drops it
    half read, or never reads it."""
    import gc
    import io

    data = agent_run(30)
    options = Options(budget=fitted(data) * 3 // 4)
    assert gc.isenabled()
    result = compress_file(io.BytesIO(data), options)
    assert gc.isenabled()
    pieces = result.chunks()
    next(pieces)
    pieces.close()  # dropped half read
    assert gc.isenabled()
    assert restore(compress_file(io.BytesIO(data), options).lines) == data
    assert gc.isenabled()
    gc.disable()
    try:  # and a caller that had it off keeps it off
        b"".join(compress_file(io.BytesIO(data), options).chunks())
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("path", [
    *(pytest.param(p, id=p.name) for p in sorted(SAMPLES.glob("*.jsonl"))),
    *corpus_params("claude-code", "codex", "anthropic-messages"),
])
def test_a_list_of_records_comes_back_as_the_command_line_writes_it_stripped(
        path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ctxpack.compress(records)` plans and writes on values, the command line on the
    file's lines: with the time pinned, the records are the same, every field of the
    records compress writes (their time stamps, ids and links) included."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1795000000")
    records = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    if load(path).format in ("openai-conversations", "json-messages"):
        pytest.skip("records that hold whole conversations are compared in test_documents")
    options = {"budget": max(1, tokens(path) // 2)}
    try:
        written = compress_file(path, Options(**options), strip_metadata=True).lines
    except CannotFit:
        with pytest.raises(CannotFit):
            ctxpack.compress(records, **options)
        return
    out, _ = ctxpack.compress(records, **options)
    assert out == [orjson.loads(line) for line in written if line.strip()]

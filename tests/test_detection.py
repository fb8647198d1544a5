"""Never misread: each file is taken for its real format; one no reader takes is named."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from ctxpack import stats
from ctxpack.errors import InputError
from ctxpack.loader import load

from .conftest import CORPUS, corpus_params
from .helpers import assert_clean_error, ctxpack

# the corpus folder a file lies in -> the format it is
READ = {"claude-code": "claude-code", "codex": "codex", "openai-chat": "json-messages",
        "swe-agent": "json-messages", "anthropic-messages": "anthropic",
        "anthropic-agent-events": "anthropic-events", "gemini-cli": "gemini-stream",
        "gemini-cli-chat": "gemini-cli", "aider": "aider", "cline": "cline-ui",
        "opencode": "opencode", "openhands": "openhands"}


def _every(*folders: str) -> list:
    return [p for d in folders for p in corpus_params(d, pattern="*")
            if not p.values[0] or p.values[0].is_file()]


@pytest.mark.corpus
@pytest.mark.parametrize("path", _every(*READ))
def test_every_corpus_file_is_detected_as_its_real_format(path: Path) -> None:
    t = load(path)
    assert t.format == READ[path.relative_to(CORPUS).parts[0]]
    assert t.unsure == ""  # each carries a mark of its format


def test_plain_role_content_lines_are_read_but_said_to_be_unsure() -> None:
    data = b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n'
    t = load(io.BytesIO(data))
    assert t.format == "openai" and "plain {role, content}" in t.unsure
    s = stats(t)
    assert s.unsure == t.unsure and s.to_dict()["format_unsure"] == t.unsure
    marked = b'{"role":"system","content":"be brief"}\n' + data
    assert load(io.BytesIO(marked)).unsure == ""


def test_stats_prints_why_it_is_unsure(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(b'{"role":"user","content":"hi"}\n')
    run = ctxpack("stats", str(path))
    assert run.code == 0 and "format unsure" in run.out.replace("\n", " ")


def test_a_list_of_anthropic_block_messages_is_not_read_as_chat_completions() -> None:
    doc = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                              "input": {}}]}]
    with pytest.raises(InputError) as info:
        load(io.BytesIO(json.dumps(doc, indent=1).encode()))
    assert "looks like Anthropic Messages" in info.value.problem


def test_a_document_no_reader_takes_says_so_and_lists_the_formats() -> None:
    with pytest.raises(InputError) as info:
        load(io.BytesIO(b'{\n "kind": "something else"\n}\n'))
    assert info.value.problem == "this fits no transcript format ctxpack reads"
    assert "json-messages" in str(info.value) and "--format" not in str(info.value)


@pytest.mark.parametrize("doc", [
    {"history": [{"role": "user", "parts": [{"text": "hi"}]},
                 {"role": "model", "parts": [{"text": "hello"}]}]},
    [{"role": "user", "parts": [{"text": "hi"}]}],
])
def test_a_gemini_checkpoint_is_read_as_one_not_as_chat_messages(doc) -> None:
    t = load(io.BytesIO(json.dumps(doc, indent=2).encode()))
    assert t.format == "gemini-checkpoint" and not t.unsure
    assert [m.text for m in t.messages] == ["hi", "hello"][:len(t.messages)]


def test_an_unread_shape_is_one_clean_line_with_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}]}]))
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "Anthropic Messages")

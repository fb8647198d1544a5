"""The Codex rollout reader: real sessions from the corpus and small hand-written records."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from ctxpack.errors import InputError
from ctxpack.formats.codex import CodexFormat
from ctxpack.loader import load, write
from ctxpack.transcript import Image, Text, Thinking, ToolCall, ToolResult, Transcript

from .conftest import corpus_files, corpus_params
from .helpers import ctxpack, records_of

TS = "2026-01-01T00:00:00.000Z"
PROMPT = "You are Codex, a coding agent."


def rollout(*records: dict[str, Any]) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in records))


def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TS, "type": kind, "payload": payload}


def meta(text: str = PROMPT) -> dict[str, Any]:
    return line("session_meta", {"id": "s1", "cwd": "/repo", "cli_version": "0.128.0",
                                 "base_instructions": {"text": text}})


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return line("response_item", payload)


def say(role: str, *texts: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return item({"type": "message", "role": role,
                 "content": [{"type": kind, "text": t} for t in texts]})


def token_count(total_in: int, last_in: int) -> dict[str, Any]:
    usage = {"cached_input_tokens": 10, "output_tokens": 5, "reasoning_output_tokens": 2}
    return line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": total_in, **usage},
        "last_token_usage": {"input_tokens": last_in, **usage},
        "model_context_window": 258400}})



def instructions_of(payload: dict[str, Any]) -> str | None:
    base = payload.get("base_instructions")
    text = base.get("text") if isinstance(base, dict) else None
    return text or payload.get("instructions") or None


# --- the corpus ---------------------------------------------------------------------------

CODEX = corpus_params("codex")


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_is_detected_and_written_back_exactly(path: Path, tmp_path: Path) -> None:
    transcript = load(path)
    assert transcript.format == "codex"
    assert transcript.skipped == ()
    assert len(transcript.messages) > 0
    out = tmp_path / "out.jsonl"
    write(transcript, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_tool_results_follow_their_calls(path: Path) -> None:
    messages = load(path).messages
    called: set[str | None] = set()
    answered: set[str | None] = set()
    last_result = -1
    for i, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCall):
                called.add(part.id)
            elif isinstance(part, ToolResult):
                assert part.call_id in called, f"line {message.line}: result without its call"
                answered.add(part.call_id)
                last_result = i
    # Calls still waiting for output happen only where a file was copied mid-step:
    # valdyum-labs ends on five parallel shell calls, edgerunner on one `exec` call.
    for message in messages[: last_result + 1]:
        for call in message.tool_calls:
            assert call.id in answered, f"line {message.line}: call {call.id} never answered"


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_context_opens_with_the_newest_system_prompt(path: Path) -> None:
    prompts = [instructions_of(r["payload"]) for r in records_of(path)
               if r.get("type") == "session_meta"]
    prompts = [p for p in prompts if p]
    messages = load(path).messages
    systems = [m for m in messages if m.role == "system"]
    if prompts:
        assert systems == [messages[0]]
        assert messages[0].text == prompts[-1]
    else:  # rtchess: an older CLI that wrote `instructions: null`
        assert systems == []


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_usage_sums_each_calls_own_usage(path: Path) -> None:
    infos = [r["payload"]["info"] for r in records_of(path)
             if r.get("type") == "event_msg" and r["payload"].get("type") == "token_count"
             and r["payload"].get("info")]
    usage = load(path).usage
    assert infos, "every corpus file has token counts"
    # each call once: the CLI writes an event again with the same values
    calls = [b for a, b in zip([None, *infos[:-1]], infos, strict=True) if a != b]
    for key, field in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                       ("cache_read_tokens", "cached_input_tokens"),
                       ("reasoning_tokens", "reasoning_output_tokens")):
        assert usage[key] == sum(c["last_token_usage"][field] for c in calls)
        totals = [c["total_token_usage"][field] for c in calls]
        if totals == sorted(totals):  # a running total that never starts again: the same
            assert usage[key] == totals[-1]
    last = infos[-1]["last_token_usage"]
    assert usage["last_input_tokens"] == last["input_tokens"]
    # (a window no model has, the fixture's 0, is named and leaves the one before it
    # standing: see test_recorded)
    windows = [i["model_context_window"] for i in infos if i.get("model_context_window")]
    assert usage.get("context_window") == (windows[-1] if windows else None)
    assert usage["calls"] == len(calls)


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_model_is_the_last_turn_context(path: Path) -> None:
    models = [r["payload"].get("model") for r in records_of(path)
              if r.get("type") == "turn_context"]
    assert load(path).model == [m for m in models if m][-1]


@pytest.mark.corpus
@pytest.mark.parametrize("path", [p for p in CODEX if "SYNTHETIC" not in str(p.values[0])])
def test_corpus_human_messages_are_what_the_person_typed(path: Path) -> None:
    typed = [r["payload"]["message"] for r in records_of(path)
             if r.get("type") == "event_msg" and r["payload"].get("type") == "user_message"]
    assert [m.text for m in load(path).messages if m.human] == typed


@pytest.mark.corpus
def test_synthetic_file_context_starts_after_its_last_compaction() -> None:
    found = [p for p in corpus_files("codex") if "SYNTHETIC" in p.name]
    if not found:
        pytest.skip("synthetic schema-coverage fixture not in the corpus")
    records = records_of(found[0])
    compacted = [n for n, r in enumerate(records, 1) if r["type"] == "compacted"]
    prompt_line = [n for n, r in enumerate(records, 1) if r["type"] == "session_meta"
                   and instructions_of(r["payload"])][-1]
    assert len(compacted) == 6
    last = compacted[-1]
    history = records[last - 1]["payload"]["replacement_history"]
    kept = [i for i in history if i["type"] == "message"]

    transcript = load(found[0])
    system, *rest = transcript.messages
    assert system.role == "system" and system.line == prompt_line < last
    assert [m.line for m in rest[: len(kept)]] == [last] * len(kept)
    assert all(m.line > last for m in rest[len(kept):])
    assert all(m.line <= last for m in transcript.outside)
    assert transcript.usage["encrypted_reasoning_items"] == 1  # the compaction item


# --- hand-written records -----------------------------------------------------------------

def test_function_call_and_output_pair() -> None:
    t = load(rollout(
        meta(), line("turn_context", {"model": "gpt-5.5"}), say("user", "list files"),
        item({"type": "function_call", "name": "shell_command", "call_id": "call_1",
              "arguments": "{\"command\": \"ls\"}"}),
        item({"type": "function_call_output", "call_id": "call_1",
              "output": "Exit code: 0\nOutput:\nREADME.md\n"}),
        say("assistant", "There is a README."), token_count(900, 400), token_count(900, 400)))
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[0].parts == (Text(PROMPT),) and t.messages[0].line == 1
    assert t.messages[2].parts == (ToolCall("call_1", "shell_command", "{\"command\": \"ls\"}"),)
    result = t.messages[3].parts[0]
    assert isinstance(result, ToolResult) and result.call_id == "call_1"
    assert result.text == "Exit code: 0\nOutput:\nREADME.md\n"
    assert t.model == "gpt-5.5" and t.messages[2].model == "gpt-5.5"
    assert [m.line for m in t.messages] == [1, 3, 4, 5, 6]
    # the call's own usage, once: re-emits are not summed
    assert t.usage["calls"] == 1 and t.usage["input_tokens"] == 400


def test_token_counts_holding_a_value_nested_deep_are_read() -> None:
    # a usage object is compared with the one before it (the CLI repeats them): what it
    # holds besides counts is no count, and comparing it must not recurse as deep
    deep, odd = token_count(900, 400), token_count(900, 400)
    for event in (deep, odd):
        event["payload"]["info"]["total_token_usage"]["extra"] = "@deep@"
    data = rollout(meta(), say("user", "hi"), deep, odd).getvalue()
    data = data.replace(b'"@deep@"', b"[" * 5000 + b"]" * 5000)
    t = load(io.BytesIO(data))
    assert t.usage["calls"] == 1 and t.usage["input_tokens"] == 400


def test_custom_tool_call_apply_patch_pair() -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n"
    output = json.dumps({"output": "Success. Updated: A a.txt\n", "metadata": {"exit_code": 0}})
    t = load(rollout(meta(), item({"type": "custom_tool_call", "name": "apply_patch",
                                   "call_id": "call_p", "input": patch, "status": "completed"}),
                     item({"type": "custom_tool_call_output", "call_id": "call_p",
                           "output": output})))
    assert t.messages[1].parts == (ToolCall("call_p", "apply_patch", patch),)
    assert t.messages[2].tool_results[0].parts == (Text(output),)


def test_output_as_content_item_array() -> None:
    t = load(rollout(meta(), item({"type": "function_call", "name": "view_image",
                                   "call_id": "c", "arguments": "{}"}),
                     item({"type": "function_call_output", "call_id": "c", "output": [
                         {"type": "input_text", "text": "Chunk ID: 1\nOutput:\nok"},
                         {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K",
                          "detail": "high"}]})))
    assert t.messages[2].tool_results[0].parts == (
        Text("Chunk ID: 1\nOutput:\nok"), Image("image/png", "iVBORw0K", None, "high"))


def test_output_as_object_is_kept_as_json() -> None:
    t = load(rollout(meta(), item({"type": "tool_search_call", "call_id": "s",
                                   "arguments": {"query": "calendar"}}),
                     item({"type": "tool_search_output", "call_id": "s",
                           "tools": [{"type": "function", "name": "cal"}]})))
    assert t.messages[1].parts == (ToolCall("s", "tool_search", '{"query":"calendar"}'),)
    assert t.messages[2].text == '[{"type":"function","name":"cal"}]'


def test_compacted_replacement_history_replaces_what_came_before() -> None:
    t = load(rollout(
        meta(), say("user", "first task"), say("assistant", "done"),
        line("compacted", {"message": "", "replacement_history": [
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "first task"}]},
            {"type": "compaction", "encrypted_content": "QUJD" * 10}]}),
        line("event_msg", {"type": "context_compacted"}), say("user", "next task")))
    assert [(m.role, m.line, m.text) for m in t.messages] == [
        ("system", 1, PROMPT), ("user", 4, "first task"), ("user", 6, "next task")]
    assert [m.line for m in t.outside] == [2, 3]
    assert t.usage["encrypted_reasoning_items"] == 1
    assert t.usage["encrypted_reasoning_chars"] == 40


def test_compacted_with_only_a_summary_message() -> None:
    t = load(rollout(meta(), say("user", "old"),
                     line("compacted", {"message": "Summary: the tests pass."})))
    assert [(m.role, m.text, m.human) for m in t.messages] == [
        ("system", PROMPT, False), ("user", "Summary: the tests pass.", False)]


def test_human_flag_only_for_typed_prompts() -> None:
    t = load(rollout(
        meta(), say("developer", "<permissions instructions>\nsandbox</permissions instructions>"),
        say("user", "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nhi\n</INSTRUCTIONS>"),
        say("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        say("user", "<new_injection>later CLIs add these</new_injection>"),
        say("user", "fix the <div> in index.html"),
        line("event_msg", {"type": "user_message", "message": "fix the <div> in index.html"})))
    assert [m.human for m in t.messages] == [False, False, False, False, False, True]
    assert [r.number for r in t.rounds()] == [0, 1]


def test_reasoning_summary_is_thinking_and_encrypted_part_is_only_counted() -> None:
    t = load(rollout(meta(), item({"type": "reasoning", "summary": [
        {"type": "summary_text", "text": "**Planning**"},
        {"type": "summary_text", "text": "Look at the tests."}],
        "content": None, "encrypted_content": "gAAAA" * 4}),
        item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA"})))
    assert [m.parts for m in t.messages[1:]] == [(Thinking("**Planning**\n\nLook at the tests."),)]
    assert t.usage == {"encrypted_reasoning_items": 2, "encrypted_reasoning_chars": 25}


def test_self_contained_calls_are_text_not_unanswered_tool_calls() -> None:
    t = load(rollout(meta(), item({"type": "web_search_call", "status": "completed",
                                   "action": {"type": "search", "query": "codex rollout"}}),
                     item({"type": "web_search_call", "status": "completed",
                           "action": {"type": "open_page", "url": "https://example.org"}})))
    assert [m.text for m in t.messages[1:]] == [
        "web_search: codex rollout", 'web_search: {"type":"open_page","url":"https://example.org"}']
    assert all(not m.tool_calls for m in t.messages)


def test_local_shell_call_pairs_with_its_output() -> None:
    action = {"type": "exec", "command": ["ls", "-a"]}
    t = load(rollout(meta(), item({"type": "local_shell_call", "call_id": "ls1",
                                   "status": "completed", "action": action}),
                     item({"type": "function_call_output", "call_id": "ls1", "output": "."})))
    assert t.messages[1].parts == (ToolCall("ls1", "local_shell", json.dumps(
        action, separators=(",", ":"))),)
    assert t.messages[2].tool_results[0].call_id == "ls1"


def test_newest_session_meta_gives_the_system_prompt() -> None:
    t = load(rollout(meta("old prompt"), say("user", "hi"), meta("new prompt")))
    assert [(m.role, m.text) for m in t.messages] == [("system", "new prompt"), ("user", "hi")]
    assert [(m.role, m.text) for m in t.outside] == [("system", "old prompt")]
    assert t.copies == ()  # another prompt: the whole log keeps it


def test_a_prompt_a_resumed_session_states_again_alike_is_held_where_it_first_appears(
        tmp_path: Path) -> None:
    # the context holds the newest statement; the whole log holds the prompt once, the
    # newest statement at the top where the session began, not in the middle where it was
    # stated again
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (
        meta(), say("user", "hi"), say("assistant", "hello"), meta(), say("user", "again"),
        meta(), say("user", "third"))))
    t = load(path)
    assert t.messages[0].line == 6 and [m.line for m in t.copies] == [1, 4]
    body = json.loads(ctxpack("convert", str(path), "--all", "--to", "openai").out)
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", PROMPT), ("user", "hi"), ("assistant", "hello"), ("user", "again"),
        ("user", "third")]
    page = ctxpack("convert", str(path), "--all", "--to", "markdown").out
    assert page.count(PROMPT) == 1 and page.index(PROMPT) < page.index("hi")
    # stats: the older statements are the prompt the context holds, not outside it too
    stats = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert stats["outside"]["messages"] == 0 and stats["messages"] == 5


def test_a_compaction_keeps_messages_the_whole_log_and_stats_count_once(
        tmp_path: Path) -> None:
    # replacement_history repeats the person's messages it keeps: the same messages, so
    # `convert --all` prints each once (where it was first said) and stats does not count
    # them outside the context as well as in it
    ask, other = "list the files, all of them", "and the tests?"
    kept = [{"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": text}]}
            for text in (ask, "ok", "Summary: two files, no tests.")]
    records = [meta(), say("user", ask), say("assistant", "a.py b.py"), say("user", "ok"),
               say("assistant", "ok"), say("user", "ok"),
               line("compacted", {"message": "", "replacement_history": kept}),
               say("user", other)]
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    t = load(path)
    assert [m.text for m in t.messages] == [PROMPT, ask, "ok",
                                            "Summary: two files, no tests.", other]
    # the first "ok" is the one kept (the CLI keeps them in order), the second is not
    assert [m.line for m in t.copies] == [2, 4] and [m.line for m in t.repeated] == [2, 4]
    out = tmp_path / "again.jsonl"
    write(t, out)
    assert out.read_bytes() == path.read_bytes()
    body = json.loads(ctxpack("convert", str(path), "--all", "--to", "openai").out)
    assert [m["content"] for m in body["messages"]] == [
        PROMPT, ask, "a.py b.py", "ok", "ok", "ok", "Summary: two files, no tests.", other]
    page = ctxpack("convert", str(path), "--all", "--to", "markdown").out
    assert page.count(ask) == 2  # the round's title and the message, once
    files = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    # outside: the two replies and the second "ok"; the kept messages are context
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in
                               (say("assistant", "a.py b.py"), say("assistant", "ok"),
                                say("user", "ok"))))
    alone = json.loads(ctxpack("stats", "--json", str(plain)).out)["files"][0]
    assert files["outside"]["messages"] == 3
    assert files["outside"]["tokens"] == alone["tokens"] - alone["by_role"]["priming"]


def test_bookkeeping_and_unknown_records_are_not_messages() -> None:
    t: Transcript = load(rollout(
        meta(), line("world_state", {"full": True}), line("event_msg", {"type": "agent_message",
                                                                         "message": "copy"}),
        item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        item({"type": "brand_new_item", "text": "?"}), line("turn_context", {"cwd": "/"})))
    assert [m.role for m in t.messages] == ["system"]
    assert t.outside == () and len(t.records) == 6


def test_record_without_payload_is_an_input_error_or_skipped() -> None:
    def data() -> io.BytesIO:
        return rollout(meta(), {"timestamp": TS, "type": "response_item"}, say("user", "hi"))

    with pytest.raises(InputError) as caught:
        load(data())
    assert caught.value.line == 2 and caught.value.exit_code == 2
    assert "payload" in caught.value.problem
    t = load(data(), skip_invalid=True)
    assert [bad.line for bad in t.skipped] == [2]
    assert [m.text for m in t.messages] == [PROMPT, "hi"]


@pytest.mark.parametrize(("record", "score"), [
    (meta(), 2), (line("event_msg", {"type": "token_count"}), 2),
    (line("compacted", {"message": "s"}), 2), ({"type": "response_item", "payload": "x"}, 0),
    ({"role": "user", "content": "hi"}, 0), ({"type": "user", "message": {}}, 0),
])
def test_sniff(record: dict[str, Any], score: int) -> None:
    assert CodexFormat().sniff(record) == score


@pytest.mark.corpus
@pytest.mark.parametrize("path", CODEX)
def test_corpus_whole_log_holds_what_a_compaction_restates_once(path: Path) -> None:
    # each message the whole log leaves out is one it holds later, alike, in the place of
    # its first statement; each left out of what stats counts outside is in the file
    # before a compaction kept it
    t = load(path)
    kept = [m for m in t.read if all(m is not c for c in t.copies)]
    for copy in t.copies:
        assert any((m.role, m.parts) == (copy.role, copy.parts) and m.line > copy.line
                   for m in kept), copy
    assert all(any(m is r for m in t.outside) for r in t.repeated)
    files = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert files["outside"]["messages"] == len(t.outside) - len(t.repeated)

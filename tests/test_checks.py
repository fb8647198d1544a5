"""validate: orphans, misplaced results, roles, parent links — each reported with its line."""

from __future__ import annotations

import base64
import io
import json

import pytest

from ctxpack.checks import validate
from ctxpack.images import anthropic_image_tokens
from ctxpack.loader import load

from .conftest import SAMPLES, corpus_params
from .helpers import ctxpack


def lines(*records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def call(cid, name="get"):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def result(cid):
    return {"role": "tool", "tool_call_id": cid, "content": "ok"}


USER = {"role": "user", "content": "hi"}


def problems(data: bytes, fmt=None):
    return [(p.line, p.message) for p in validate(load(io.BytesIO(data), fmt))]


def test_valid_openai_has_no_problems():
    assert problems(lines(USER, call("a"), result("a"), {"role": "assistant", "content": "x"})) \
        == []


def test_orphan_result_and_unanswered_call_with_lines():
    found = problems(lines(USER, result("zz"), call("a")))
    assert [line for line, _ in found] == [2, 3]
    assert "no earlier assistant message" in found[0][1]
    assert "has no result" in found[1][1]


def test_openai_results_must_directly_follow_the_call():
    found = problems(lines(USER, call("a"), USER, result("a")))
    assert found and found[0][0] == 2 and "before the user message at line 3" in found[0][1]


def test_duplicate_ids_and_second_results():
    found = problems(lines(USER, call("a"), result("a"), result("a")))
    assert found == [(4, "second result for tool call 'a'")]


def test_unknown_role():
    assert problems(lines({"role": "robot", "content": "beep"}))[0][1].startswith("role 'robot'")


def test_anthropic_first_message_must_be_user():
    data = lines({"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
                 {"role": "user", "content": [{"type": "text", "text": "yo"}]})
    found = problems(data, "anthropic")
    assert (1, "the first message must have role 'user'") in found


def test_claude_code_dangling_parent():
    base = {"sessionId": "s", "isSidechain": False, "type": "user"}
    data = lines({**base, "uuid": "u1", "parentUuid": None,
                  "message": {"role": "user", "content": "hello"}},
                 {**base, "uuid": "u2", "parentUuid": "missing",
                  "message": {"role": "user", "content": "again"}})
    found = problems(data, "claude-code")
    assert (2, "parentUuid 'missing' does not resolve to any record in the file") in found


def test_cli_exit_codes_and_lines(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_bytes(lines(USER, call("a"), result("a")))
    bad.write_bytes(lines(USER, call("a")))
    assert ctxpack("validate", str(good)).code == 0
    run = ctxpack("validate", str(good), str(bad))
    assert run.code == 1
    assert run.out.strip() == f"{bad}:2: tool call 'a' (get) has no result in the transcript"
    doc = json.loads(ctxpack("validate", "--json", str(bad)).out)
    assert doc["files"][0]["valid"] is False and doc["files"][0]["problems"][0]["line"] == 2


def test_stdin(tmp_path):
    run = ctxpack("validate", "-", input=lines(USER, call("a"), result("a")))
    assert run.code == 0, run.err


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("claude-code", "codex", "anthropic-messages"))
def test_corpus_files_validate_without_crashing(path):
    t = load(path)
    found = validate(t)
    # every problem names a real line of the file
    assert all(1 <= p.line <= len(t.records) for p in found)


def submit(cid, command):
    return {"role": "assistant", "content": "done", "tool_calls": [{"id": cid, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}


def test_a_final_action_is_no_problem_but_only_at_the_end():
    # OpenHands' finish and mini-swe-agent's submit end the run: no result follows by design
    assert problems(lines(USER, call("a"), result("a"), call("f", "finish"))) == []
    assert problems(lines(USER, submit("s", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"))) == []
    assert problems(lines(USER, submit("s", "echo MINI_SWE_AGENT_FINAL_OUTPUT"))) == []
    # a finish the run went on past, and any other last call left open, are still reported
    assert problems(lines(USER, call("f", "finish"), USER)) == [
        (2, "tool call 'f' (finish) has no result before the user message at line 3")]
    assert problems(lines(USER, call("a"), result("a"), call("b", "get"))) == [
        (4, "tool call 'b' (get) has no result in the transcript")]
    assert problems(lines(USER, submit("s", "echo hello"))) == [
        (2, "tool call 's' (bash) has no result in the transcript")]


def test_runs_that_end_by_their_final_action_validate(tmp_path):
    from .conftest import SAMPLES

    for name in ("bugfix.mini-swe-agent.traj.json", "openhands/env-flags.openhands.jsonl"):
        run = ctxpack("validate", str(SAMPLES / name))
        assert run.code == 0, run.out + run.err


@pytest.mark.parametrize(("content", "problem"), [
    (5, "content is a number, not a string or an array of content parts"),
    ({"type": "text", "text": "hi"}, "content is an object, not a string or an array of "
     "content parts"),
    (True, "content is a boolean, not a string or an array of content parts"),
    ([{"text": "hi"}], "content[0] has no 'type'"),
    (["hi"], "content[0] is a string, not a content part object"),
    ([{"type": "text", "text": "a"}, 7], "content[1] is a number, not a content part object"),
    ([{"type": "output_text", "text": "hi"}], "content[0]: a part of type 'output_text', "
     "which Chat Completions does not take (it takes text, image_url, input_audio, file, "
     "refusal)"),
])
def test_content_chat_completions_refuses_is_named_at_its_line(tmp_path, content, problem):
    found = problems(lines(USER, {"role": "user", "content": content}), "openai")
    assert found == [(2, problem)]
    path = tmp_path / "chat.jsonl"
    path.write_bytes(lines(USER, {"role": "user", "content": content}))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and f"{path}:2: {problem}" in run.out + run.err, run.out + run.err


def test_a_block_no_openai_api_takes_is_refused_under_a_forced_openai(tmp_path):
    # a list of blocks of another type is Anthropic's shape, whatever the file was said to be
    path = tmp_path / "chat.jsonl"
    path.write_bytes(lines(USER, {"role": "user", "content": [{"type": "banana"}]}))
    run = ctxpack("validate", "--format", "openai", str(path))
    assert run.code == 2 and f"{path}:2: not read as openai: this line looks like anthropic" \
        in run.err, run.out + run.err


@pytest.mark.parametrize("content", ["hi", [], [{"type": "text", "text": "hi"}],
                                     [{"type": "image_url", "image_url": {"url": "x"}}]])
def test_content_chat_completions_takes_is_no_problem(content):
    assert problems(lines(USER, {"role": "assistant", "content": content}), "openai") == []


NO_CONTENT = ("(Chat Completions takes a message without content only from an assistant that "
              "makes tool calls)")


@pytest.mark.parametrize(("message", "problem"), [
    ({"role": "user", "content": None}, f"content is null {NO_CONTENT}"),
    ({"role": "user"}, f"no content {NO_CONTENT}"),
    ({"role": "assistant", "content": None}, f"content is null {NO_CONTENT}"),
    ({"role": "user", "content": [{"type": "text"}]}, "content[0]: text part without 'text'"),
    ({"role": "user", "content": [{"type": "text", "text": 5}]},
     "content[0]: text part's 'text' is a number, not a string"),
    ({"role": "user", "content": [{"type": "image_url"}]},
     "content[0]: image_url part without 'image_url' (the image)"),
    ({"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url",
                                                                    "image_url": {}}]},
     "content[1]: image_url part's image without 'url'"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": "https://x/a.png"}]},
     "content[0]: image_url part's 'image_url' is a string, not an object with the image's "
     "url"),
    ({"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get", "arguments": 5}}]},
     "tool_calls[0].function's 'arguments' is a number, not a string"),
    ({"role": "assistant", "content": None, "function_call": {"name": "get", "arguments": {}}},
     "function_call's 'arguments' is an object, not a string"),
])
def test_messages_chat_completions_refuses_are_named_at_their_line(tmp_path, message, problem):
    # each was read (its text or call counted) and passed validate, which the API refuses
    path = tmp_path / "chat.jsonl"
    answered = ([result("a")] if "tool_calls" in message else
                [{"role": "function", "name": "get", "content": "ok"}]
                if "function_call" in message else [])
    path.write_bytes(lines(USER, message, *answered))
    assert problems(path.read_bytes(), "openai") == [(2, problem)]
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:2: {problem}", run.out + run.err


def test_null_content_is_no_problem_where_chat_completions_takes_it():
    legacy = {"role": "assistant", "content": None,
              "function_call": {"name": "get", "arguments": "{}"}}
    answer = {"role": "function", "name": "get", "content": None}
    assert problems(lines(USER, call("a"), result("a"), legacy, answer), "openai") == []


ANSWER = {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}


@pytest.mark.parametrize(("blocks", "problem"), [
    ([ANSWER, {"type": "text"}], "content[1]: text block without 'text'"),
    ([ANSWER, {"type": "text", "text": ["hi"]}], "content[1]: text block's 'text' is an "
     "array, not a string"),
    ([{**ANSWER, "content": 5}], "content[0]: tool_result content is a number, not a string "
     "or an array of content blocks"),
    ([{**ANSWER, "content": [{"type": "text"}]}], "content[0]: tool_result content[0]: text "
     "block without 'text'"),
])
def test_blocks_the_messages_api_refuses_are_named_once_at_their_line(tmp_path, blocks, problem):
    # a message of tool results and text is read as two messages: its problem is named once
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                             "input": {}}]}
    path = tmp_path / "messages.jsonl"
    path.write_bytes(lines(USER, use, {"role": "user", "content": blocks}))
    assert problems(path.read_bytes(), "anthropic") == [(3, problem)]
    run = ctxpack("validate", "--format", "anthropic", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:3: {problem}", run.out + run.err


LS = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}


@pytest.mark.parametrize(("message", "problem"), [
    ({"role": "user", "content": None},
     "content is null (the Messages API takes no message without content)"),
    ({"role": "user"}, "no content (the Messages API takes no message without content)"),
    ({"role": "assistant", "content": [{**LS, "input": 5}]},
     "content[0]: tool_use block's 'input' is a number, not an object"),
    ({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls"}]},
     "content[0]: tool_use block without 'input'"),
    ({"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image"}]},
     "content[1]: image block without 'source' (the image)"),
    ({"role": "user", "content": [{"type": "image", "source": "a.png"}]},
     "content[0]: image block's 'source' is a string, not an object"),
    ({"role": "user", "content": [{"type": "text", "text": ""}]},
     "content[0]: text block's 'text' is empty (the API refuses empty text blocks)"),
    ({"role": "user", "content": [{**ANSWER, "content": [{"type": "image"}]}]},
     "content[0]: tool_result content[0]: image block without 'source' (the image)"),
    # "text content blocks must contain non-whitespace text": a message of a request is
    # sent as it is written
    ({"role": "user", "content": " \n"},
     "content is whitespace only (the API refuses text without non-whitespace text)"),
    ({"role": "user", "content": [{"type": "text", "text": "\t"}, IMAGE]},
     "content[0]: text block's 'text' is whitespace only, and no text block of the message "
     "has more (the API refuses it)"),
    ({"role": "assistant", "content": [{"type": "text", "text": "\n\n"}, LS]},
     "content[0]: text block's 'text' is whitespace only, and no text block of the message "
     "has more (the API refuses it)"),
])
def test_messages_the_messages_api_refuses_are_named_at_their_line(tmp_path, message, problem):
    # each was read and passed validate; the API refuses it
    use = {"role": "assistant", "content": [LS]}
    calls = message["role"] == "assistant"
    answered = [{"role": "user", "content": [ANSWER]}] if calls else []
    before = [USER, use] if "tool_result" in str(message) else [USER]
    path = tmp_path / "messages.jsonl"
    path.write_bytes(lines(*before, message, *answered))
    at = len(before) + 1
    assert problems(path.read_bytes(), "anthropic") == [(at, problem)]
    run = ctxpack("validate", "--format", "anthropic", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:{at}: {problem}", run.out + run.err


def test_blocks_the_messages_api_takes_are_no_problem():
    said = {"role": "assistant", "content": [{"type": "text", "text": "looking"}, LS]}
    # (a blank text block beside one with text is taken)
    shown = {"role": "user", "content": [{**ANSWER, "content": [IMAGE]}, IMAGE,
                                         {"type": "text", "text": " "},
                                         {"type": "text", "text": "see"}]}
    assert problems(lines(USER, said, shown), "anthropic") == []


def test_validate_counts_its_problems_in_words(tmp_path):
    # one call without its result is one problem; two are two problems
    def call(n):
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": "ls", "arguments": "{}"}}]}
    path = tmp_path / "broken.jsonl"
    lines = [{"role": "user", "content": "go"}, call(1), {"role": "user", "content": "and?"}]
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.err.rstrip().endswith(": 1 problem"), run.err
    lines += [call(2), {"role": "user", "content": "well?"}]
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.err.rstrip().endswith(": 2 problems"), run.err


@pytest.mark.parametrize(("records", "place"), [
    # (json.dumps writes a lone surrogate as its `\ud800` escape, as a file would hold it)
    ([{"role": "user", "content": "half \ud800 a pair"}, {"role": "assistant", "content": "ok"}],
     "1: content holds a lone surrogate (\\ud800"),
    ([{"role": "user", "content": [{"type": "text", "text": "x"}]},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "get",
                                         "input": {"q": "\udc00"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "ok"}]}],
     "2: content[0].input.q holds a lone surrogate (\\udc00"),
])
def test_a_lone_surrogate_is_named_at_its_line_and_path(tmp_path, records, place):
    """Providers refuse a body holding one (no UTF-8 for it): validate said ok."""
    path = tmp_path / "half.jsonl"
    path.write_bytes(lines(*records))
    run = ctxpack("validate", str(path))
    assert run.code == 1, run.err
    assert f"{path}:{place}, half of a UTF-16 pair)" in run.out, run.out
    # a whole pair, escaped as two halves, is one character: no problem
    path.write_bytes(lines(*records).replace(b"\\ud800", b"\\ud83d\\ude00")
                     .replace(b"\\udc00", b"\\ud83d\\ude00"))
    assert ctxpack("validate", str(path)).code == 0


def _pieced_tool_use(tmp_path, input_value):
    """The Claude Code sample with the tool_use of a reply written over two lines (its
    text, then its call, under one message.id; the last, in the context) given
    `input_value`: the file and the call's line."""
    records = [json.loads(x) for x in (SAMPLES / "coding-agent.claude-code.jsonl")
               .read_text().splitlines()]
    ids = [r.get("message", {}).get("id") if r.get("type") == "assistant" else None
           for r in records]
    at = max(i for i, r in enumerate(records) if i and ids[i] and ids[i] in ids[:i]
             and any(b.get("type") == "tool_use" for b in r["message"]["content"]))
    block = next(b for b in records[at]["message"]["content"] if b.get("type") == "tool_use")
    block["input"] = input_value
    path = tmp_path / "pieced.claude-code.jsonl"
    path.write_bytes(lines(*records))
    return path, at + 1


def test_a_block_of_a_reply_written_over_lines_is_checked_as_in_an_anthropic_file(tmp_path):
    # Claude Code writes a response a block a line; the reply read from them is one message,
    # and each line's block is checked at its own line as a Messages API file's is
    path, line = _pieced_tool_use(tmp_path, "ls -la")
    problem = "content[0]: tool_use block's 'input' is a string, not an object"
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:{line}: {problem}", run.out + run.err
    messages = tmp_path / "messages.jsonl"
    messages.write_bytes(lines(USER, {"role": "assistant", "content": [
        {**LS, "input": "ls -la"}]}, {"role": "user", "content": [ANSWER]}))
    assert problems(messages.read_bytes(), "anthropic") == [(2, problem)]
    path, _ = _pieced_tool_use(tmp_path, {"command": "ls -la"})
    assert ctxpack("validate", str(path)).code == 0


def _stats(path):
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    return json.loads(run.out)["files"][0]


@pytest.mark.parametrize("data", ["!!!notbase64", "data:image/png;base64,@@@@", "===="])
def test_image_data_that_is_no_base64_is_named_and_counted_as_no_picture(tmp_path, data):
    bad = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                       "data": data}}
    said = {"role": "assistant", "content": [LS]}
    for with_image in (False, True):
        shown = [ANSWER, bad] if with_image else [ANSWER]
        (tmp_path / f"m{with_image:d}.jsonl").write_bytes(
            lines(USER, said, {"role": "user", "content": shown}))
    path = tmp_path / "m1.jsonl"
    problem = "image data is not base64 (no picture: counted as 0 tokens)"
    run = ctxpack("validate", "--format", "anthropic", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:3: {problem}", run.out + run.err
    # no 1024x1024 picture assumed: the file counts as it does without the block
    assert _stats(path)["tokens"] == _stats(tmp_path / "m0.jsonl")["tokens"]
    # a Claude Code file names it too, at the line of the record that holds it
    records = [json.loads(x) for x in (SAMPLES / "coding-agent.claude-code.jsonl")
               .read_text().splitlines()]
    at = max(i for i, r in enumerate(records) if r.get("type") == "user"
             and isinstance(r["message"]["content"], list))
    plain = tmp_path / "plain.claude-code.jsonl"
    plain.write_bytes(lines(*records))
    records[at]["message"]["content"].append(bad)
    claude = tmp_path / "bad.claude-code.jsonl"
    claude.write_bytes(lines(*records))
    run = ctxpack("validate", str(claude))
    assert run.code == 1 and run.out.strip() == f"{claude}:{at + 1}: {problem}", run.out
    assert _stats(claude)["tokens"] == _stats(plain)["tokens"]


def test_base64_of_a_picture_of_unread_size_is_still_counted_as_one(tmp_path):
    # base64 whose bytes are no format ctxpack reads the size of is an image of unknown
    # size, assumed 1024x1024 (README), and no problem
    odd = {"type": "image", "source": {"type": "base64", "media_type": "image/heic",
                                       "data": base64.b64encode(b"\0" * 64).decode()}}
    said = {"role": "assistant", "content": [LS]}
    for n, shown in enumerate(([ANSWER], [ANSWER, odd])):
        (tmp_path / f"m{n}.jsonl").write_bytes(lines(USER, said, {"role": "user",
                                                                  "content": shown}))
    assert problems((tmp_path / "m1.jsonl").read_bytes(), "anthropic") == []
    assert _stats(tmp_path / "m1.jsonl")["tokens"] - _stats(tmp_path / "m0.jsonl")["tokens"] \
        == anthropic_image_tokens(1024, 1024)

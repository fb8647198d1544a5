"""Gemini API request bodies (`gemini-api`): a log of bodies, batch lines, one body."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import stats
from ctxpack.checks import validate
from ctxpack.loader import load, write
from ctxpack.transcript import Thinking, ToolCall, ToolResult, Transcript

from .conftest import SAMPLES
from .helpers import assert_clean_error, assert_tool_pairs, ctxpack, records_of

LOG = SAMPLES / "gemini-api" / "irrigation.gemini-api.jsonl"
BATCH = SAMPLES / "gemini-api" / "inbox-batch.gemini-api.jsonl"


def jsonl(*records: Any) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in records))


def text(role: str, said: str, **more: Any) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": said, **more}]}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args}}


def answer(name: str, output: Any) -> dict[str, Any]:
    return {"functionResponse": {"name": name, "response": {"output": output}}}


def by_conversation(t: Transcript) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for m in t.messages:
        out.setdefault(m.conversation, []).append(m)
    return out


@pytest.mark.parametrize("path", [LOG, BATCH], ids=lambda p: p.name)
def test_the_samples_read_write_back_exactly_and_validate(path: Path, tmp_path: Path) -> None:
    t = load(path)
    assert t.format == "gemini-api" and not t.unsure and t.outside == ()
    assert validate(t) == []
    conversations = by_conversation(t)
    assert len(conversations) == len(records_of(path))  # a body a line, each sent whole
    for messages in conversations.values():
        assert messages[0].role == "system"  # the systemInstruction first
        assert_tool_pairs(messages)
    out = tmp_path / path.name
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


def test_the_log_pairs_calls_and_responses_by_name_and_counts_them_as_tool() -> None:
    t = load(LOG)
    last = by_conversation(t)[len(records_of(LOG)) - 1]
    names = {c.id: c.name for m in last for c in m.tool_calls}
    body = records_of(LOG)[-1]
    responses = [p["functionResponse"]["name"] for c in body["contents"] for p in c["parts"]
                 if "functionResponse" in p]
    # the file holds no ids: each response answers the oldest open call of its name
    assert [names[r.call_id] for m in last for r in m.tool_results] == responses
    assert all(m.role == "tool" for m in last if m.tool_results)
    assert [r.is_error for m in last for r in m.tool_results][-1]  # valve 4's error
    counted = stats(t)
    assert counted.by_role["tool"] > 0 and counted.by_role["reasoning"] > 0
    assert counted.by_role["user"] < counted.by_role["tool"]  # the person typed little


def test_thought_parts_are_reasoning_in_the_context() -> None:
    t = load(jsonl({"contents": [text("user", "go"), {"role": "model", "parts": [
        {"text": "Plan it", "thought": True}, {"text": "Done."}]}]}))
    assert [m.parts for m in t.messages] == [t.messages[0].parts,
                                             (Thinking("Plan it"), t.messages[1].parts[1])]
    assert stats(t).by_role["reasoning"] > 0


def test_a_batch_line_holds_the_reply_and_the_usage_of_its_call() -> None:
    t = load(BATCH)
    lines = records_of(BATCH)
    usage = [line["response"]["usageMetadata"] for line in lines]
    assert t.usage["calls"] == len(lines)
    assert t.usage["input_tokens"] == sum(u["promptTokenCount"] for u in usage)
    assert t.usage["output_tokens"] == sum(u["candidatesTokenCount"] + u.get(
        "thoughtsTokenCount", 0) for u in usage)
    assert t.usage["last_input_tokens"] == usage[-1]["promptTokenCount"]
    assert t.model == "gemini-2.5-flash"
    # each call's reply is the last message of its own conversation, after its request
    assert [c.billed for c in t.calls] == [u["promptTokenCount"] for u in usage]
    for c, messages in zip(t.calls, by_conversation(t).values(), strict=True):
        assert t.messages[c.prompt] is messages[-1] and messages[-1].role == "assistant"
    replies = [line["response"]["candidates"][0]["content"]["parts"][-1]["text"]
               for line in lines]
    assert [m[-1].parts[-1].text for m in by_conversation(t).values()] == replies


def snake(value: Any, opaque: bool = False) -> Any:
    """`value` with the Python SDK's snake_case keys, as `model_dump()` writes a request:
    what a call or a function's response holds is the user's, left as it is."""
    if isinstance(value, list):
        return [snake(v) for v in value]
    if not isinstance(value, dict) or opaque:
        return value
    out = {}
    for k, v in value.items():
        name = "".join(f"_{c.lower()}" if c.isupper() else c for c in k)
        out[name] = {a: snake(b, a in ("args", "response")) for a, b in v.items()} \
            if k in ("functionCall", "functionResponse") else snake(v)
    return out


def seen(t: Transcript) -> list[Any]:
    # (each message is placed by its key as the file writes it)
    return [(m.role, m.parts, m.conversation, m.where.replace("systemInstruction",
                                                              "system_instruction"))
            for m in t.messages]


@pytest.mark.parametrize("path", [LOG, BATCH], ids=lambda p: p.name)
def test_the_python_sdks_snake_case_keys_read_as_the_rest_apis(path: Path,
                                                                tmp_path: Path) -> None:
    dumped = tmp_path / path.name
    dumped.write_text("".join(json.dumps(snake(r)) + "\n" for r in records_of(path)))
    assert "system_instruction" in dumped.read_text()
    assert ("function_call" in dumped.read_text()) == (path == LOG)
    camel_case, snake_case = load(path), load(dumped)
    assert snake_case.format == "gemini-api" and not snake_case.unsure
    assert seen(snake_case) == seen(camel_case)  # the system prompt, calls, thoughts...
    assert (snake_case.usage, snake_case.model) == (camel_case.usage, camel_case.model)
    assert stats(snake_case).by_role == stats(camel_case).by_role
    assert validate(snake_case) == []
    out = tmp_path / "out.jsonl"
    write(snake_case, out)
    assert out.read_bytes() == dumped.read_bytes()


def test_snake_case_parts_and_usage_and_the_users_own_keys() -> None:
    body = {"system_instruction": {"parts": [{"text": "Be brief."}]}, "contents": [
        {"role": "user", "parts": [{"text": "What is in it?"}, {"inline_data": {
            "mime_type": "image/png", "data": "iVBORw0KGgo="}}]},
        {"role": "model", "parts": [{"function_call": {"name": "ls", "args": {
            "dir_path": "/srv", "showHidden": True}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "ls", "response": {
            "exit_code": 0, "output": "a b"}}}]}]}
    line = {"request": body, "response": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Two files."}]}}],
        "usage_metadata": {"prompt_token_count": 120, "candidates_token_count": 3},
        "model_version": "gemini-2.5-flash"}}
    t = load(jsonl(line))
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool",
                                            "assistant"]
    assert t.messages[1].parts[1].media_type == "image/png"
    # a call's arguments and a function's response are the user's: read as written
    assert json.loads(t.messages[2].tool_calls[0].arguments) == {"dir_path": "/srv",
                                                                 "showHidden": True}
    assert json.loads(t.messages[3].tool_results[0].parts[0].text) == {"exit_code": 0,
                                                                       "output": "a b"}
    assert (t.usage["input_tokens"], t.usage["output_tokens"]) == (120, 3)
    assert t.model == "gemini-2.5-flash" and [c.billed for c in t.calls] == [120]


def test_one_snake_case_key_deep_in_a_camel_case_log_is_read() -> None:
    # the one key `model_dump()` style in a REST log: the last part's, under its content
    part = {"inlineData": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}
    body = {"systemInstruction": {"parts": [{"text": "Be brief."}]}, "contents": [
        {"role": "user", "parts": [{"text": "Look."}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {
            "dir_path": "/srv"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {
            "exit_code": 0}}}, part]}]}
    t = load(jsonl(body))
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "user"]
    assert t.messages[-1].parts[0].media_type == "image/png"
    assert json.loads(t.messages[2].tool_calls[0].arguments) == {"dir_path": "/srv"}


def reply_only(key: str, said: str, prompt: int, out: int) -> dict[str, Any]:
    return {"key": key, "response": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": said}]},
                        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": out},
        "modelVersion": "gemini-2.5-flash"}}


def test_batch_output_lines_of_a_response_alone_are_each_a_reply(tmp_path: Path) -> None:
    # the Gemini API's batch output holds each request's key and response, not the request
    path = tmp_path / "output.jsonl"
    lines = [reply_only("r1", "order_status", 99, 4), reply_only("r2", "plant_care", 80, 3),
             records_of(BATCH)[0]]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    t = load(path)
    assert t.format == "gemini-api" and not t.unsure
    conversations = by_conversation(t)
    assert [[(m.role, m.text) for m in c] for c in conversations.values()][:2] == [
        [("assistant", "order_status")], [("assistant", "plant_care")]]
    assert len(conversations) == 3 and t.messages[0].where == "line 1 response"
    assert t.usage["calls"] == 3 and t.usage["input_tokens"] == 99 + 80 + lines[2][
        "response"]["usageMetadata"]["promptTokenCount"]
    assert [c.billed for c in t.calls][:2] == [99, 80]
    assert validate(t) == []
    run = ctxpack("stats", str(path))
    assert run.code == 0 and "gemini-api" in run.out, run.err
    out = tmp_path / "out.jsonl"
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


def test_a_batch_line_of_neither_request_nor_response_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(reply_only("r1", "ok", 9, 1)) + "\n"
                    + json.dumps({"key": "r2", "outcome": "failed"}) + "\n")
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:2:",
                       "neither a Gemini API request body")


FAILED = {"key": "r2", "status": {"code": 8, "message": "Resource has been exhausted."}}


@pytest.mark.parametrize("at", [0, 1], ids=["first-line", "later-line"])
def test_a_failed_request_of_a_batch_output_is_named_not_refused(at: int,
                                                                  tmp_path: Path) -> None:
    # one failed request (a `status` in place of its response) made the whole batch
    # output refused: `not read as gemini-api`, exit 2
    path = tmp_path / "b2.jsonl"
    lines = [reply_only("r1", "order_status", 99, 4), reply_only("r3", "plant_care", 80, 3)]
    lines.insert(at, FAILED)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    t = load(path)
    assert t.format == "gemini-api" and not t.unsure
    # no message and no usage of its own: the replies and calls are those of the others
    assert [m.text for m in t.messages] == ["order_status", "plant_care"]
    assert [c.billed for c in t.calls] == [99, 80] and t.usage["calls"] == 2
    line = at + 1
    said = "request 'r2' failed with no reply (code 8: Resource has been exhausted.)"
    assert [(p.line, p.message) for p in validate(t)] == [(line, said)]
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [f"{path}:{line}: {said}"], run
    f = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert f["failed_requests"] == [{"line": line, "problem": said}]
    assert f["messages"] == 2 and f["skipped"] == []
    table = " ".join(ctxpack("stats", str(path)).out.split())
    assert f"1 request failed, no reply (`ctxpack validate` says why): line {line}" in table
    shown = " ".join(ctxpack("show", "--no-pager", str(path)).out.split())
    assert "1 failed request, with no reply" in shown
    out = tmp_path / "out.jsonl"
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("response", [None, {}], ids=["no-response", "empty-response"])
def test_a_vertex_line_of_a_request_and_its_error_is_a_failed_request_only(
        response: Any, tmp_path: Path) -> None:
    # Vertex AI's batch output keeps each request beside its `status` ("" when it was
    # answered); a failed one was read as a conversation of its request, and reported
    # failed too: it was answered by nothing, so it is a failed request only
    answered = {"status": "", "request": {"contents": [text("user", "Sort the inbox.")]},
                "response": {"candidates": [{"content": text("model", "Sorted.")}],
                             "usageMetadata": {"promptTokenCount": 6,
                                               "candidatesTokenCount": 2}}}
    failed = {"status": "Bad Request: Invalid argument",
              "request": {"contents": [text("user", "Summarise the spam folder.")]}}
    if response is not None:
        failed["response"] = response
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(answered) + "\n" + json.dumps(failed) + "\n")
    said = "the request failed with no reply (Bad Request: Invalid argument)"
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [f"{path}:2: {said}"], run
    f = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
    assert f["failed_requests"] == [{"line": 2, "problem": said}]
    assert f["messages"] == 2 and f["conversations"] == 1
    shown = ctxpack("show", "--no-pager", str(path)).out
    assert "Sort the inbox." in shown and "spam folder" not in shown


def test_a_batch_of_failed_requests_only_says_so_where_it_has_no_model_input(
        tmp_path: Path) -> None:
    # stats said the file held "only the agent's own lines (commands, notices)", and
    # convert refused it in the same words: every line was a request that failed
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(FAILED) + "\n" + json.dumps(
        {"status": "Bad Request: Invalid argument",
         "request": {"contents": [text("user", "Summarise the spam folder.")]}}) + "\n")
    table = " ".join(ctxpack("stats", str(path)).out.split())
    assert "no model input: every request in the file failed (2), with no reply" in table
    assert "agent's own lines" not in table
    run = ctxpack("convert", str(path), "--to", "openai")
    assert_clean_error(run, 2, f"{path}: nothing to convert: every request in the file "
                       "failed (2)")


def test_a_batch_with_no_failed_request_says_none() -> None:
    f = json.loads(ctxpack("stats", "--json", str(BATCH)).out)["files"][0]
    assert f["failed_requests"] == []
    assert "failed" not in ctxpack("stats", str(BATCH)).out


def test_one_indented_body_is_read_as_a_document_and_written_back() -> None:
    data = json.dumps({"contents": [text("user", "hi"), text("model", "yo")],
                       "generationConfig": {"temperature": 0}}, indent=2).encode()
    t = load(io.BytesIO(data))
    assert t.format == "gemini-api" and t.document
    assert [(m.role, m.text, m.place) for m in t.messages] == [
        ("user", "hi", "contents[0]"), ("assistant", "yo", "contents[1]")]
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


def test_a_body_whose_contents_name_no_role_is_read_but_unsure() -> None:
    t = load(jsonl({"contents": [{"parts": [{"text": "Explain tides briefly."}]}]}))
    assert t.format == "gemini-api" and "names its role" in t.unsure
    assert [(m.role, m.human) for m in t.messages] == [("user", True)]


def test_validate_names_what_the_gemini_api_refuses(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in [
        {"contents": [text("user", "fine")]},
        {"contents": [text("user", "go"), text("assistant", "ok"), {"role": "model",
                                                                    "parts": []}]},
        {"contents": [text("user", "go"), {"role": "model", "parts": [call("ls")]},
                      {"role": "user", "parts": [answer("cat", "x")]}]},
        {"contents": [text("system", "Be brief."), text("user", "go")]},
    ]) + "\n")
    problems = [(p.line, p.message) for p in validate(load(path))]
    assert (2, "contents[1]: role 'assistant' is not accepted by the Gemini API "
               "(user or model)") in problems
    assert any(line == 2 and "contents[2]: no parts" in m for line, m in problems)
    # cat's response answers no call of that name; ls's call has no response
    assert any(line == 3 and "without a preceding call" in m for line, m in problems)
    assert (3, "contents[1]: tool call ls at parts[0] has no result in the transcript") \
        in problems
    assert (4, "contents[0]: role 'system' is not accepted by the Gemini API "
               "(user or model)") in problems
    assert not any(line == 1 for line, _ in problems)
    run = ctxpack("validate", str(path))
    assert run.code == 1 and f"{path}:2: contents[1]: role 'assistant'" in run.out


@pytest.mark.parametrize(("parts", "kind"), [(5, "a number"), ("hi", "a string"),
                                              ({"text": "hi"}, "an object")])
def test_parts_that_are_no_array_are_named_and_do_not_change_the_format(
        parts: Any, kind: str, tmp_path: Path) -> None:
    bad = json.dumps({"contents": [{"role": "user", "parts": parts}]})
    named = f"contents[0]: parts is {kind}, not an array of Parts"
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"contents": [text("user", "ok")]}) + "\n" + bad + "\n")
    alone = tmp_path / "alone.jsonl"
    alone.write_text(bad + "\n")
    for path, line in ((log, 2), (alone, 1)):
        t = load(path)
        assert t.format == "gemini-api"
        assert [(p.line, p.message) for p in validate(t)] == [(line, named)]
        run = ctxpack("validate", str(path))
        assert run.code == 1 and f"{path}:{line}: {named}" in run.out, run


@pytest.mark.parametrize(("part", "problem"), [
    ({"text": 5}, "parts[1]: 'text' is a number, not a string"),
    ({"text": None}, "parts[1]: 'text' is null, not a string"),
    ("hi", "parts[1] is a string, not a Part object"),
])
@pytest.mark.parametrize("indent", [None, 2])
def test_parts_the_gemini_api_refuses_are_named_at_their_content(
        part: Any, problem: str, indent: int | None, tmp_path: Path) -> None:
    # the reader drops a Part it cannot read, so only validate can say the API refuses it
    body = {"contents": [text("user", "go"), {"role": "model", "parts": [{"text": "ok"}, part]},
                         text("user", "and?")]}
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps({"contents": [text("user", "fine")]}) + "\n"
                    + json.dumps(body) + "\n")
    line = 2
    if indent:
        path = tmp_path / "request.json"
        path.write_text(json.dumps(body, indent=indent))
        line = [n for n, x in enumerate(path.read_text().splitlines(), 1) if x == "    {"][1]
    found = [(p.line, p.message) for p in validate(load(path))]
    assert found == [(line, f"contents[1]: {problem}")]
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:{line}: contents[1]: {problem}", run


def test_the_system_instruction_is_checked_for_its_parts_not_its_role(tmp_path: Path) -> None:
    # SDKs send the system instruction as a Content of role "system"
    path = tmp_path / "bodies.jsonl"
    path.write_text("\n".join(json.dumps({"systemInstruction": system, "contents": [
        text("user", "go")]}) for system in [text("system", "Be brief."),
                                             {"parts": [{"text": "Hi."}, {"text": 5}]}])
                    + "\n")
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:2: systemInstruction: parts[1]: 'text' is a number, not a string"], run


def test_pairing_problems_name_the_content_of_a_line_of_one_content(tmp_path: Path) -> None:
    path = tmp_path / "bodies.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in [
        {"contents": [text("user", "go"), {"role": "model", "parts": [call("ls")]}]},
        {"contents": [{"role": "user", "parts": [answer("cat", "x")]}]},
    ]) + "\n")
    run = ctxpack("validate", str(path))
    assert run.code == 1
    unanswered, unasked = run.out.splitlines()
    assert unanswered == f"{path}:1: contents[1]: tool call ls at parts[0] has no result in " \
        "the transcript"
    assert unasked == f"{path}:2: contents[0]: tool result of cat without a preceding call"
    # show names each message by its line and its place in it
    shown = ctxpack("show", str(path)).out
    assert "line 1 contents[1]" in shown and "line 2 contents[0]" in shown


def test_a_call_without_an_id_is_named_by_its_tool_and_part_never_a_made_up_id(
        tmp_path: Path) -> None:
    # the API's ids are optional: the reader pairs by name, with ids of its own, which
    # are in no file and so must not be what validate names a call by
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps({"contents": [
        text("user", "go"),
        {"role": "model", "parts": [{"text": "Looking."}, call("ls"), call("cat", p="a"),
                                    call("ls", p="b")]},
        {"role": "user", "parts": [answer("cat", "x"), answer("ls", "y")]}]}) + "\n")
    run = ctxpack("validate", str(path))
    assert run.code == 1
    assert run.out.splitlines()[0] == (f"{path}:1: contents[1]: tool call ls at parts[3] has "
                                       "no result in the transcript"), run.out
    assert "#" not in run.out
    # a call with an id of the file is named by it
    path.write_text(json.dumps({"contents": [
        text("user", "go"), {"role": "model", "parts": [
            {"functionCall": {"id": "c-7", "name": "ls", "args": {}}}]}]}) + "\n")
    assert ctxpack("validate", str(path)).out.splitlines()[0] == (
        f"{path}:1: contents[1]: tool call 'c-7' (ls) has no result in the transcript")


def test_responses_pair_with_calls_of_their_own_name_in_any_order() -> None:
    t = load(jsonl({"contents": [
        text("user", "go"), {"role": "model", "parts": [call("ls"), call("cat", p="a")]},
        {"role": "user", "parts": [answer("cat", "A"), answer("ls", "L")]}]}))
    calls = {c.id: c.name for m in t.messages for c in m.tool_calls}
    assert {calls[r.call_id]: r.text for m in t.messages for r in m.tool_results} == {
        "cat": "A", "ls": "L"}
    assert validate(t) == []


@pytest.mark.parametrize(("line", "problem"), [
    ('{"contents": [{"role": "user", "parts": [{"text": "a"}]}, 7]}', "contents[1] is a number"),
    ('{"contents": [{"role": 3, "parts": [{"text": "a"}]}]}', "'role' is a number"),
])
def test_a_broken_body_is_one_line_naming_its_line(line: str, problem: str,
                                                   tmp_path: Path) -> None:
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps({"contents": [text("user", "ok")]}) + "\n" + line + "\n")
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:2:", problem)


def test_compress_points_to_convert_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run = ctxpack("compress", str(LOG), "-o", str(out))
    assert_clean_error(run, 2, "compress cannot write gemini-api files",
                       f"convert {LOG} --to openai")
    assert not out.exists()


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_convert_writes_bodies_whose_calls_and_results_pair(to: str, tmp_path: Path) -> None:
    out = tmp_path / "bodies.jsonl"
    run = ctxpack("convert", str(LOG), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    bodies = records_of(out)
    assert len(bodies) == len(records_of(LOG))
    last = bodies[-1]["messages"]
    if to == "openai":
        calls = [c["id"] for m in last for c in m.get("tool_calls") or ()]
        results = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    else:
        blocks = [b for m in last if isinstance(m["content"], list) for b in m["content"]]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert bodies[-1]["system"].startswith("You are GreenRow")
    assert sorted(calls) == sorted(results) and len(calls) == 5
    assert not any("#" in c for c in calls)  # the reader's stand-in ids are not written
    assert "reasoning parts left out" in run.err


def test_convert_to_markdown_shows_the_calls_and_their_results(tmp_path: Path) -> None:
    out = tmp_path / "log.md"
    run = ctxpack("convert", str(LOG), "--to", "markdown", "-o", str(out))
    assert run.code == 0, run.err
    doc = out.read_text()
    assert "set_valve" in doc and "valve 4 did not acknowledge" in doc


# --- property: any log of bodies ------------------------------------------------------------

NAMES = ("ls", "cat", "grep")
words = st.text(max_size=12)
model_parts = st.lists(st.one_of(
    st.fixed_dictionaries({"text": words}),
    st.fixed_dictionaries({"text": words, "thought": st.just(True)}),
    st.builds(lambda n, a: call(n, arg=a), st.sampled_from(NAMES), words)), min_size=1,
    max_size=3)
user_parts = st.lists(st.one_of(
    st.fixed_dictionaries({"text": words}),
    st.builds(answer, st.sampled_from(NAMES), words)), min_size=1, max_size=3)
contents = st.lists(st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "parts": user_parts}),
    st.fixed_dictionaries({"role": st.just("model"), "parts": model_parts})),
    min_size=1, max_size=6)
bodies = st.lists(st.builds(
    lambda c, s: {"contents": c, **({"systemInstruction": {"parts": [{"text": s}]}}
                                    if s is not None else {})},
    contents, st.none() | words), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(bodies, st.booleans())
def test_any_log_round_trips_and_pairs_each_response_by_name(log: list[dict[str, Any]],
                                                              indent: bool) -> None:
    if indent:
        log = log[:1]
    data = (json.dumps(log[0], indent=2).encode() if indent else
            b"".join(json.dumps(b).encode() + b"\n" for b in log))
    t = load(io.BytesIO(data), "gemini-api")
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data
    assert t.outside == () and len(by_conversation(t)) == len(log)
    for body, messages in zip(log, by_conversation(t).values(), strict=True):
        parts = [p for m in messages for p in m.parts]
        given_parts = [p for c in body["contents"] for p in c["parts"]]
        assert sum(isinstance(p, ToolCall) for p in parts) == sum(
            "functionCall" in p for p in given_parts)
        assert sum(isinstance(p, Thinking) for p in parts) == sum(
            bool(p.get("thought")) for p in given_parts)
        # a response answers the oldest open call of its name, where there is one
        waiting: dict[str, list[int]] = {}
        expected: list[int | None] = []
        made = 0
        for p in given_parts:
            if "functionCall" in p:
                waiting.setdefault(p["functionCall"]["name"], []).append(made)
                made += 1
            elif "functionResponse" in p:
                queue = waiting.get(p["functionResponse"]["name"], [])
                expected.append(queue.pop(0) if queue else None)
        ids = [p.id for p in parts if isinstance(p, ToolCall)]
        assert [ids.index(p.call_id) if p.call_id is not None else None
                for p in parts if isinstance(p, ToolResult)] == expected


@settings(max_examples=40, deadline=None)
@given(bodies)
def test_any_log_dumped_in_snake_case_reads_as_written_in_camel_case(
        log: list[dict[str, Any]]) -> None:
    written = b"".join(json.dumps(b).encode() + b"\n" for b in log)
    dumped = b"".join(json.dumps(snake(b)).encode() + b"\n" for b in log)
    camel_case = load(io.BytesIO(written), "gemini-api")
    snake_case = load(io.BytesIO(dumped), "gemini-api")
    assert seen(snake_case) == seen(camel_case)
    out = io.BytesIO()
    write(snake_case, out)
    assert out.getvalue() == dumped

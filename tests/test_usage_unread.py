"""Recorded usage a reader cannot read is never dropped without a word, in any format:
validate names it at its line (exit 1), and stats lists the same problem under
`usage_unread`, from the one record both print; usage that can be read but cannot be true
(a cost no cost can be, a cache of no counts) is set aside and named. A count written as
a decimal is named as what it is, and values of the wrong kind beside the usage (a time
stamp, a session id, a call's arguments) are named where they are."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import SAMPLES
from .helpers import ctxpack
from .test_null_counts import (
    NULL,
    _every_command_runs,
    _gemini_cli,
    _jsonl,
    _last,
    _line_of,
    _one_call_set_aside,
    _usage,
    _write_jsonl,
)

OPENCODE = SAMPLES / "opencode" / "book-search.opencode.json"
OPENHANDS = SAMPLES / "openhands" / "env-flags.openhands.jsonl"
STREAM = SAMPLES / "todo-table.gemini-stream.jsonl"
EVENTS = SAMPLES / "export-timeout.anthropic-events.jsonl"
AIDER = SAMPLES / "aider" / "unit-conversions.aider.chat.history.md"


def _stats(path: Path) -> dict[str, Any]:
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return json.loads(run.out)["files"][0]


def _unread(path: Path, where: str, problem: str, tmp_path: Path) -> dict[str, Any]:
    """validate names `problem` at `where` (the file and line, `file:line`) and nothing
    else; stats lists that same problem as usage that cannot be read (none set aside);
    every command ends with a line. The stats of `path`."""
    checked = ctxpack("validate", str(path))
    named = [line for line in checked.out.splitlines() if "cannot be read" in line]
    assert checked.code == 1 and len(named) == 1 and named[0].startswith(f"{where}: "), \
        checked.out
    said = named[0][len(where) + 2:]
    assert problem in said, said
    found = _stats(path)
    assert [x["problem"] for x in found["usage_unread"]] == [said]
    assert found["usage_set_aside"] == []
    _every_command_runs(path, tmp_path)
    return found


@pytest.mark.parametrize("text", [None, 5])
def test_a_cline_request_whose_text_is_no_json_text_is_unread(text: Any, tmp_path: Path
                                                               ) -> None:
    task = tmp_path / "task"
    shutil.copytree(SAMPLES / "cline-task", task)
    ui = task / "ui_messages.json"
    honest = _usage(task)
    events = json.loads(ui.read_text())
    n = [k for k, e in enumerate(events) if e.get("say") == "api_req_started"][1]
    events[n]["text"] = text
    ui.write_text(json.dumps(events))
    found = _unread(task, f"{ui}:1", f"event {n}: recorded usage that cannot be read: the "
                    "text of this api_req_started event is no JSON object", tmp_path)
    assert found["usage"]["calls"] == honest["calls"] - 1
    assert found["usage_unread"][0]["file"] == str(ui)


def _opencode(tmp_path: Path, tokens: Any) -> tuple[Path, int, int, int]:
    """The OpenCode sample, its first step-finish's `tokens` given; the copy, the numbers
    of that message and part, and the line its `tokens` are on."""
    session = json.loads(OPENCODE.read_text())
    message, part = next((n, i) for n, m in enumerate(session["messages"])
                         for i, p in enumerate(m["parts"]) if p.get("type") == "step-finish")
    session["messages"][message]["parts"][part]["tokens"] = tokens
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session, indent=2))
    return path, message, part, _line_of(path, f'"tokens": {json.dumps(tokens)}')


def test_an_opencode_step_whose_tokens_are_no_object_is_unread(tmp_path: Path) -> None:
    honest = _stats(OPENCODE)
    path, message, part, line = _opencode(tmp_path, 5)
    found = _unread(path, f"{path}:{line}", f"messages[{message}].parts[{part}]: recorded "
                    "usage that cannot be read: 'tokens' is a number, not an object; left out",
                    tmp_path)
    # no call of the totals the context has no usage of: the two agree on the calls
    assert found["usage"]["calls"] == honest["usage"]["calls"] - 1
    assert found["usage"]["calls"] == found["context"]["calls"]
    assert found["usage"]["input_tokens"] < honest["usage"]["input_tokens"]


@pytest.mark.parametrize(("cache", "said"), [
    (None, f"tokens.cache {NULL}"), ("lots", "tokens.cache is a string, not an object of counts")])
def test_an_opencode_step_cache_of_no_counts_sets_its_call_aside(cache: Any, said: str,
                                                                 tmp_path: Path) -> None:
    honest = _usage(OPENCODE)
    session = json.loads(OPENCODE.read_text())
    finish = _last(session, lambda d: d.get("type") == "step-finish")
    finish["tokens"]["cache"] = cache
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session, indent=2))
    _one_call_set_aside(path, honest, f"recorded usage cannot be true: {said}", tmp_path)


@pytest.mark.parametrize(("usages", "said"), [
    ("x", "metrics.token_usages is a string, not an array"),
    (7, "metrics.token_usages is a number, not an array"),
    ([5], "metrics.token_usages[0] is a number, not an object")])
def test_openhands_token_usages_of_the_wrong_kind_are_unread(usages: Any, said: str,
                                                             tmp_path: Path) -> None:
    records = _jsonl(OPENHANDS)
    records[0]["metrics"]["token_usages"] = usages
    path = tmp_path / "output.jsonl"
    _write_jsonl(path, records)
    _unread(path, f"{path}:1", f"recorded usage that cannot be read: {said}; left out",
            tmp_path)


def test_an_openhands_action_it_does_not_write_is_read_by_its_text_and_named(
        tmp_path: Path) -> None:
    records = _jsonl(OPENHANDS)
    task = next(n for n, e in enumerate(records[0]["history"])
                if e.get("source") == "user" and e.get("action") == "message")
    records[0]["history"][task]["action"] = "hand_over"
    path = tmp_path / "output.jsonl"
    _write_jsonl(path, records)
    honest, read = _stats(OPENHANDS), _stats(path)
    # the person's task still counts, and still opens a round
    assert [read[k] for k in ("tokens", "rounds", "by_role")] == [
        honest[k] for k in ("tokens", "rounds", "by_role")]
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.splitlines() == [
        f"{path}:1: event {task}: action 'hand_over', which OpenHands does not write: read as "
        "user text (its 'args.content')"]
    # with no text, it is read past, and named so
    del records[0]["history"][task]["args"]["content"]
    _write_jsonl(path, records)
    assert _stats(path)["tokens"] < honest["tokens"]
    assert f"event {task}: action 'hand_over', which OpenHands does not write, and with no " \
        "'args.content' text: read past" in ctxpack("validate", str(path)).out


def test_a_gemini_stream_result_whose_stats_are_no_object_is_unread(tmp_path: Path) -> None:
    records = _jsonl(STREAM)
    result = _last(records, lambda d: d.get("type") == "result")
    result["stats"] = "str"
    path = tmp_path / "run.jsonl"
    _write_jsonl(path, records)
    line = _line_of(path, '"result"')
    found = _unread(path, f"{path}:{line}", "recorded usage that "
                    "cannot be read: the result's 'stats' is a string, not an object",
                    tmp_path)
    assert found["usage"] == {}


def test_gemini_cli_tokens_of_no_object_are_unread_in_validate_and_stats_alike(
        tmp_path: Path) -> None:
    honest = _usage(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    path = tmp_path / "run.gemini-cli.jsonl"
    records = _jsonl(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    reply = _last(records, lambda d: isinstance(d.get("tokens"), dict))
    reply["tokens"] = [1, 2]
    _write_jsonl(path, records)
    found = _unread(path, f"{path}:{_line_of(path, reply['id'])}", "recorded usage that "
                    "cannot be read: 'tokens' is an array, not an object; left out", tmp_path)
    assert found["usage"]["calls"] == honest["calls"] - 1
    # named once, as unreadable usage (not again as a field the CLI cannot read)
    assert ctxpack("validate", str(path)).out.count("'tokens'") == 1


@pytest.mark.parametrize(("value", "rule"), [
    (9412.0, "(a token count is written as a whole number, not a decimal)"),
    (9412.5, "(a token count is a whole number, zero or more)")])
def test_a_count_written_as_a_decimal_is_named_as_one(value: float, rule: str,
                                                      tmp_path: Path) -> None:
    honest = _usage(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    path, line = _gemini_cli(tmp_path, lambda tokens: tokens.update(input=value))
    _one_call_set_aside(path, honest, f"{path}:{line}: recorded usage cannot be true: "
                        f"tokens.input {value!r} {rule}", tmp_path)
    # the same words in a reader of another agent
    session = json.loads(OPENCODE.read_text())
    _last(session, lambda d: d.get("type") == "step-finish")["tokens"]["output"] = value
    other = tmp_path / "session.json"
    other.write_text(json.dumps(session))
    assert f"tokens.output {value!r} {rule}" in ctxpack("validate", str(other)).out


def test_an_aider_cost_it_does_not_print_sets_its_call_aside(tmp_path: Path) -> None:
    honest = _usage(AIDER)
    lines = AIDER.read_text().splitlines()
    at = min(n for n, text in enumerate(lines) if text.startswith("> Tokens:") and "Cost: $"
             in text)
    cost = float(lines[at].split("Cost: $")[1].split()[0])
    lines[at] = lines[at].split("Cost: $")[0] + "Cost: $NaN message, $1e999 session."
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("\n".join(lines) + "\n")
    _one_call_set_aside(path, honest, f"{path}:{at + 1}: recorded usage cannot be true: "
                        "'> Tokens:' Cost: $NaN (a cost is a number, zero or more)", tmp_path)
    # the other calls' costs stand; the one set aside had none that could be read
    assert _usage(path)["cost_usd"] == round(honest["cost_usd"] - cost, 6)


def test_a_cline_history_stamp_before_1970_is_named(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(SAMPLES / "cline-task", task)
    history = task / "api_conversation_history.json"
    messages = json.loads(history.read_text())
    messages[0]["ts"] = -1
    history.write_text(json.dumps(messages))
    checked = ctxpack("validate", str(task))
    assert checked.code == 1 and f"{history}:1: message 0: 'ts' is a number (-1), not a " \
        "time stamp (milliseconds since 1970, as Cline writes it): read past" in checked.out


def test_a_gemini_session_line_without_its_id_is_named(tmp_path: Path) -> None:
    records = _jsonl(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    assert "sessionId" in records[0] and "type" not in records[0]
    records[0]["sessionId"] = None
    path = tmp_path / "run.gemini-cli.jsonl"
    _write_jsonl(path, records)
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and checked.out.splitlines() == [
        f"{path}:1: 'sessionId' is null, not a string: the session has no id, and is not "
        "told from another in the file"]


def test_a_managed_agent_call_whose_input_is_no_object_is_named(tmp_path: Path) -> None:
    records = _jsonl(EVENTS)
    call = next(r for r in records if r.get("type") == "agent.tool_use")
    call["input"] = "a string"
    path = tmp_path / "run.jsonl"
    _write_jsonl(path, records)
    checked = ctxpack("validate", str(path))
    line = _line_of(path, '"a string"')
    assert checked.code == 1 and checked.out.splitlines() == [
        f"{path}:{line}: agent.tool_use event's 'input' is a string, "
        "not an object: the call's arguments read as written"]

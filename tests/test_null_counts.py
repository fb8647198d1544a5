"""A null token count is no count, in every format that records usage: validate names it
at its line (and its place, where the format has one), and no command fails on it. One
rule for every format: a null count of the prompt makes the prompt size unknown, so the
call is set aside (out of the bill, the usage totals and calibration); a null count of
the reply alone leaves the prompt size known, so the call is kept (billed, anchored on
and fitted), its reply's size unknown. So is a Gemini CLI reply whose `tokens` do not
add up named, and managed-agent usage by its own field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import CORPUS, SAMPLES
from .helpers import ctxpack

NULL = "null (a null is no count)"


def _last(records: list[Any], has: Callable[[Any], bool]) -> dict[str, Any]:
    """The last object in `records` (nested anywhere) for which `has` is true."""
    found: list[dict[str, Any]] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if has(value):
                found.append(value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(records)
    return found[-1]


def _jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path: Path, records: list[Any]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _line_of(path: Path, text: str) -> int:
    """The last line of `path` holding `text`."""
    return max(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _usage(path: Path) -> dict[str, Any]:
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0 and "Traceback" not in run.err, run.err
    return json.loads(run.out)["files"][0]["usage"]


def _one_call_set_aside(path: Path, honest: dict, problem: str, tmp_path: Path) -> str:
    """validate names `problem` (exit 1), the call leaves the usage `honest` counted (one
    set aside), and every command still ends with a line; what validate printed."""
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and problem in checked.out, checked.out
    usage = _usage(path)
    assert usage["calls"] == honest["calls"] - 1 and usage["calls_set_aside"] == 1
    _every_command_runs(path, tmp_path)
    return checked.out


def _one_call_kept(path: Path, source: Path, problem: str, tmp_path: Path) -> str:
    """validate names `problem` (exit 1), a reply's null count; the call is kept, as the
    `source` it was made from has it: in the usage totals (none set aside), in the bill,
    and in calibrate's fit; every command still ends with a line; what validate printed."""
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and problem in checked.out, checked.out
    assert "no output size" in problem and "the reply's size is unknown" in problem
    files = [json.loads(ctxpack("stats", "--json", str(p)).out)["files"][0]
             for p in (source, path)]
    honest, usage = files[0]["usage"], files[1]["usage"]
    assert usage["calls"] == honest["calls"] and "calls_set_aside" not in usage
    assert usage["input_tokens"] == honest["input_tokens"]
    assert files[1]["context"]["calls"] == files[0]["context"]["calls"] > 0
    fits = [json.loads(ctxpack("calibrate", "--json", str(p)).out) for p in (source, path)]
    assert [(f["calls"], f["recorded"], f["set_aside"]) for f in fits[1]] == \
        [(f["calls"], f["recorded"], f["set_aside"]) for f in fits[0]]
    _every_command_runs(path, tmp_path)
    return checked.out


def _every_command_runs(path: Path, tmp_path: Path) -> None:
    """stats, calibrate and compress (where the format is written) end with a line, not a
    traceback."""
    for args in (("stats", str(path)), ("calibrate", str(path)),
                 ("compress", str(path), "-o", str(tmp_path / "out"))):
        run = ctxpack(*args)
        # (on stderr: what stats shows of a file's messages may quote one)
        assert "Traceback" not in run.err, (args, run.err)
        assert run.code in (0, 1, 2), (args, run.code, run.err)


def _gemini_cli(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> tuple[Path, int]:
    """The Gemini CLI sample with its last reply's `tokens` changed; the copy and the
    reply's line."""
    path = tmp_path / "run.gemini-cli.jsonl"
    records = _jsonl(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    reply = _last(records, lambda d: isinstance(d.get("tokens"), dict))
    change(reply["tokens"])
    _write_jsonl(path, records)
    return path, _line_of(path, reply["id"])


def test_a_null_cline_request_count_is_named_in_its_ui_log(tmp_path: Path) -> None:
    task = tmp_path / "task"
    shutil.copytree(SAMPLES / "cline-task", task)
    ui = task / "ui_messages.json"
    honest = _usage(task)
    events = json.loads(ui.read_text())
    started = [n for n, e in enumerate(events) if e.get("say") == "api_req_started"]
    info = json.loads(events[started[-1]]["text"])
    info["tokensIn"] = None
    events[started[-1]]["text"] = json.dumps(info)
    ui.write_text(json.dumps(events))
    _one_call_set_aside(task, honest, f"{ui}:1: event {started[-1]}: recorded usage cannot "
                        f"be true: tokensIn {NULL}", tmp_path)


def _cline_request(tmp_path: Path, field: str) -> tuple[Path, str]:
    """The Cline sample task, its last request's `field` null; the task and its UI log
    place of that request, as validate names it."""
    task = tmp_path / "task"
    shutil.copytree(SAMPLES / "cline-task", task)
    ui = task / "ui_messages.json"
    events = json.loads(ui.read_text())
    started = [n for n, e in enumerate(events) if e.get("say") == "api_req_started"]
    info = json.loads(events[started[-1]]["text"])
    info[field] = None
    events[started[-1]]["text"] = json.dumps(info)
    ui.write_text(json.dumps(events))
    return task, f"{ui}:1: event {started[-1]}"


def test_a_null_cline_reply_count_keeps_the_call(tmp_path: Path) -> None:
    task, at = _cline_request(tmp_path, "tokensOut")
    _one_call_kept(task, SAMPLES / "cline-task", f"{at}: recorded usage with no output size: "
                   f"tokensOut {NULL}; the reply's size is unknown", tmp_path)


def _opencode_step(tmp_path: Path, field: str) -> tuple[Path, str]:
    """The OpenCode sample, its last step's `tokens.field` null; the copy and that step's
    place, as validate names it."""
    path = tmp_path / "session.json"
    session = json.loads((SAMPLES / "opencode" / "book-search.opencode.json").read_text())
    finish = _last(session, lambda d: d.get("type") == "step-finish")
    finish["tokens"][field] = None
    message = next(n for n, m in enumerate(session["messages"]) if finish in m["parts"])
    part = session["messages"][message]["parts"].index(finish)
    path.write_text(json.dumps(session, indent=2))
    return path, f": messages[{message}].parts[{part}]: recorded usage "


def _named_on_its_line(path: Path, said: str, field: str) -> None:
    line = int(said.split(f"{path}:")[1].split(":")[0])
    assert f'"{field}": null' in path.read_text().splitlines()[line - 1]


def test_a_null_opencode_prompt_count_is_named_at_its_path(tmp_path: Path) -> None:
    honest = _usage(SAMPLES / "opencode" / "book-search.opencode.json")
    path, at = _opencode_step(tmp_path, "input")
    said = _one_call_set_aside(path, honest, f"{at}cannot be true: tokens.input {NULL}",
                               tmp_path)
    _named_on_its_line(path, said, "input")


@pytest.mark.parametrize("field", ["output", "reasoning"])
def test_a_null_opencode_reply_count_keeps_the_step(field: str, tmp_path: Path) -> None:
    path, at = _opencode_step(tmp_path, field)
    said = _one_call_kept(path, SAMPLES / "opencode" / "book-search.opencode.json",
                          f"{at}with no output size: tokens.{field} {NULL}; the reply's "
                          "size is unknown", tmp_path)
    _named_on_its_line(path, said, field)


@pytest.mark.parametrize("field", ["input", "cached", "total"])
def test_a_null_gemini_cli_prompt_count_is_named(field: str, tmp_path: Path) -> None:
    honest = _usage(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    path, line = _gemini_cli(tmp_path, lambda tokens: tokens.update({field: None}))
    _one_call_set_aside(path, honest, f"{path}:{line}: recorded usage cannot be true: "
                        f"tokens.{field} {NULL}", tmp_path)


@pytest.mark.parametrize("field", ["output", "thoughts"])
def test_a_null_gemini_cli_reply_count_keeps_the_call(field: str, tmp_path: Path) -> None:
    path, line = _gemini_cli(tmp_path, lambda tokens: tokens.update({field: None}))
    _one_call_kept(path, SAMPLES / "plateau-fix.gemini-cli.jsonl", f"{path}:{line}: recorded "
                   f"usage with no output size: tokens.{field} {NULL}; the reply's size is "
                   "unknown", tmp_path)


def test_a_null_mini_swe_agent_reply_count_keeps_the_call(tmp_path: Path) -> None:
    source = SAMPLES / "bugfix.mini-swe-agent.traj.json"
    document = json.loads(source.read_text())
    usage = _last(document, lambda d: "completion_tokens" in d)
    usage["completion_tokens"] = None
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(document, indent=2))
    reply = len(document["messages"]) - 1 - next(
        n for n, m in enumerate(reversed(document["messages"])) if m.get("role") == "assistant")
    _one_call_kept(path, source, f": messages[{reply}]: recorded usage with no output size: "
                   f"completion_tokens {NULL}; the reply's size is unknown", tmp_path)


def test_gemini_thoughts_past_the_total_are_named(tmp_path: Path) -> None:
    path, line = _gemini_cli(tmp_path, lambda t: t.update(thoughts=t["total"] + 1_000))
    checked = ctxpack("validate", str(path))
    thoughts = json.loads(path.read_text().splitlines()[line - 1])["tokens"]["thoughts"]
    assert checked.code == 1 and (
        f"{path}:{line}: recorded usage cannot be true: tokens.thoughts {thoughts:,} (more "
        f"than the tokens.total") in checked.out


def test_a_gemini_total_that_is_not_its_parts_added_up_is_named(tmp_path: Path) -> None:
    honest = _usage(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    path, line = _gemini_cli(tmp_path, lambda t: t.update(total=t["total"] + 500))
    tokens = json.loads(path.read_text().splitlines()[line - 1])["tokens"]
    added = tokens["input"] + tokens["output"] + tokens["thoughts"] + tokens["tool"]
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and (
        f"{path}:{line}: recorded usage cannot be true: tokens.total {added + 500:,} (not "
        f"the {added:,} its tokens.input, output, thoughts and tool add up to)") in checked.out
    assert _usage(path)["calls"] == honest["calls"] - 1


def test_a_null_gemini_stream_total_sets_the_run_totals_aside(tmp_path: Path) -> None:
    path = tmp_path / "run.gemini-stream.jsonl"
    records = _jsonl(SAMPLES / "todo-table.gemini-stream.jsonl")
    _last(records, lambda d: d.get("type") == "result")["stats"]["input_tokens"] = None
    _write_jsonl(path, records)
    checked = ctxpack("validate", str(path))
    line = _line_of(path, '"type": "result"')
    assert checked.code == 1 and (
        f"{path}:{line}: recorded run totals cannot be true: stats.input_tokens {NULL}"
    ) in checked.out
    assert _usage(path) == {}
    _every_command_runs(path, tmp_path)


def _openhands(tmp_path: Path, field: str) -> tuple[Path, str]:
    """The OpenHands sample, its last usage entry's `field` null; the copy and the
    entry's path, as validate names it."""
    records = _jsonl(SAMPLES / "openhands" / "env-flags.openhands.jsonl")
    usages = records[0]["metrics"]["token_usages"]
    usages[-1][field] = None
    path = tmp_path / "output.jsonl"
    _write_jsonl(path, records)
    return path, f"metrics.token_usages[{len(usages) - 1}].{field} {NULL}"


def test_a_null_openhands_prompt_count_is_named_with_its_entry(tmp_path: Path) -> None:
    source = SAMPLES / "openhands" / "env-flags.openhands.jsonl"
    honest = _usage(source)
    prompt = _jsonl(source)[0]["metrics"]["token_usages"][-1]["prompt_tokens"]
    path, named = _openhands(tmp_path, "prompt_tokens")
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and f"{path}:1: recorded usage cannot be true: {named}" \
        in checked.out
    usage = _usage(path)
    assert usage["calls_set_aside"] == 1
    # (its prompt out of the totals)
    assert usage["input_tokens"] == honest["input_tokens"] - prompt
    _every_command_runs(path, tmp_path)


def test_a_null_openhands_reply_count_keeps_the_call(tmp_path: Path) -> None:
    path, named = _openhands(tmp_path, "completion_tokens")
    _one_call_kept(path, SAMPLES / "openhands" / "env-flags.openhands.jsonl",
                   f"{path}:1: recorded usage with no output size: {named}; the reply's size "
                   "is unknown", tmp_path)


def test_a_null_cache_count_beside_a_whole_openhands_prompt_is_none(tmp_path: Path) -> None:
    # (the prompt_tokens of a LiteLLM usage is the whole prompt, its cache counts parts an
    # SDK's dump writes as null where the provider reported none)
    source = SAMPLES / "openhands" / "env-flags.openhands.jsonl"
    records = _jsonl(source)
    for usage in records[0]["metrics"]["token_usages"]:
        usage.update(cache_read_tokens=None, cache_write_tokens=None)
    path = tmp_path / "output.jsonl"
    _write_jsonl(path, records)
    assert "null" not in ctxpack("validate", str(path)).out
    honest = json.loads(ctxpack("stats", "--json", str(source)).out)["files"][0]["context"]
    assert _usage(path)["calls"] == _usage(source)["calls"]
    assert json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]["context"][
        "tokens"] == honest["tokens"]


def _events(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> tuple[Path, int]:
    """The managed-agent sample, its last request's end event changed; the copy and the
    event's line."""
    records = _jsonl(SAMPLES / "export-timeout.anthropic-events.jsonl")
    end = _last(records, lambda d: d.get("type") == "span.model_request_end")
    change(end)
    path = tmp_path / "run.jsonl"
    _write_jsonl(path, records)
    return path, _line_of(path, "span.model_request_end")


def test_managed_agent_usage_is_named_by_its_own_field(tmp_path: Path) -> None:
    path, line = _events(tmp_path, lambda e: e["model_usage"].update(input_tokens=None))
    checked = ctxpack("validate", str(path))
    assert checked.code == 1 and (
        f"{path}:{line}: recorded usage with no prompt size: model_usage.input_tokens null "
        "(a null is no count); left out") in checked.out
    assert [x["line"] for x in json.loads(ctxpack("stats", "--json", str(path)).out)[
        "files"][0]["usage_unread"]] == [line]
    path, line = _events(tmp_path, lambda e: e.update(model_usage="lots"))
    assert (f"{path}:{line}: recorded usage that cannot be read: model_usage is a string, "
            "not an object; left out") in ctxpack("validate", str(path)).out
    path, line = _events(tmp_path, lambda e: e["model_usage"].update(input_tokens="9"))
    assert (f"{path}:{line}: recorded usage cannot be true: model_usage.input_tokens '9' "
            "(a token count is a whole number") in ctxpack("validate", str(path)).out
    _every_command_runs(path, tmp_path)


CAP = CORPUS / "opencode" / "Cap__opencode-session.json"


@pytest.mark.skipif(not CAP.exists(), reason="corpus not found beside the checkout")
def test_a_session_billed_more_after_it_resumed_is_not_split_by_its_first_calls() -> None:
    # restarted mid-session, the agent sends about 65,000 tokens more unlogged from then
    # on than the first calls show: the part in the file is the file's count at its
    # slope, not half as much again
    f = json.loads(ctxpack("stats", "--json", str(CAP)).out)["files"][0]
    bill = f["context"]
    assert bill["kind"] == "anchored"
    assert abs(bill["visible"] - f["tokens"]) < 0.02 * f["tokens"]
    assert bill["not_in_file"] > 80_000
    assert bill["visible"] + bill["not_in_file"] == bill["tokens"]


@pytest.mark.parametrize(("line", "said"), [
    ("> Tokens: null sent, 120 received.", "'> Tokens:' null sent (no count Aider prints)"),
    ("> Tokens: 120 received.", "'> Tokens:' no amount sent (Aider prints the prompt's")])
def test_an_aider_tokens_line_without_a_prompt_count_is_named(line: str, said: str,
                                                              tmp_path: Path) -> None:
    source = SAMPLES / "aider" / "unit-conversions.aider.chat.history.md"
    honest = _usage(source)
    lines = source.read_text().splitlines()
    at = max(n for n, text in enumerate(lines) if text.startswith("> Tokens:"))
    lines[at] = line + "  "
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("\n".join(lines) + "\n")
    _one_call_set_aside(path, honest, f"{path}:{at + 1}: recorded usage cannot be true: "
                        f"{said}", tmp_path)

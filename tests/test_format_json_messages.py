"""JSON documents of chat messages: SWE-agent .traj, mini-swe-agent .traj.json, run lists."""

from __future__ import annotations

import io
import json
import re

import pytest

from ctxpack import load, stats, validate, write
from ctxpack.errors import InputError

from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, ctxpack

DOCS = corpus_params("openai-chat", pattern="*.json") + corpus_params("swe-agent", pattern="*.traj")


@pytest.mark.corpus
@pytest.mark.parametrize("path", DOCS)
def test_corpus_documents_are_detected_and_written_back_exactly(path, tmp_path):
    t = load(path)
    assert t.format == "json-messages" and t.messages
    write(t, tmp_path / path.name)
    assert (tmp_path / path.name).read_bytes() == path.read_bytes()
    raw = json.loads(path.read_bytes())
    if isinstance(raw, list):  # tau-bench: one conversation per run
        assert len({m.conversation for m in t.messages}) == len(raw)
        assert len(t.messages) == sum(len(run["traj"]) for run in raw)
    else:
        listed = raw.get("history") or raw["messages"]
        assert len(t.messages) == sum(m.get("role") != "exit" for m in listed)


def test_sample_counts_usage_and_model(exact_tokens):
    s = stats(SAMPLES / "bugfix.mini-swe-agent.traj.json")
    assert (s.format, s.model, s.steps) == ("json-messages", "gpt-4.1-mini", 7)
    assert s.usage["calls"] == 7 and s.usage["last_input_tokens"] == 900 + 350 * 6
    assert s.by_tool["bash"].calls == 7


def test_bare_array_and_runs_list():
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"}]
    bare = json.dumps(msgs, indent=2).encode()
    t = load(io.BytesIO(bare))
    assert t.format == "json-messages" and len(t.messages) == 3 and not validate(t)
    runs = json.dumps([{"task_id": 1, "traj": msgs}, {"task_id": 2, "traj": msgs[:1]}]).encode()
    t = load(io.BytesIO(runs))
    assert [m.conversation for m in t.messages] == [0, 0, 0, 1]


def test_an_array_of_dataset_rows_counts_as_their_jsonl_and_comes_back(tmp_path):
    jsonl = SAMPLES / "evals.openai-conversations.jsonl"
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows, indent=1))
    t = load(path)
    assert t.format == "json-messages"
    assert stats(path).tokens == stats(jsonl).tokens
    assert [m.conversation for m in t.messages] == [m.conversation for m in load(jsonl).messages]
    small, back = tmp_path / "small.json", tmp_path / "back.json"
    run = ctxpack("compress", str(path), "--budget", "600", "-o", str(small), "-q")
    assert run.code == 0, run.err
    assert small.read_bytes() != path.read_bytes()
    assert ctxpack("restore", str(small), "-o", str(back)).code == 0
    assert back.read_bytes() == path.read_bytes()


def test_swe_agent_tool_call_ids_link_results():
    doc = {"history": [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {"role": "assistant", "content": "look", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "content": [{"type": "text", "text": "x"}], "tool_call_ids": ["c1"]}],
        "info": {"model_stats": {"tokens_sent": 1200, "tokens_received": 40, "api_calls": 1}}}
    t = load(io.BytesIO(json.dumps(doc, indent=1).encode()))
    assert t.messages[2].tool_results[0].call_id == "c1" and not validate(t)
    assert t.usage["input_tokens"] == 1200


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("swe-agent", pattern="*.traj"))
def test_swe_agent_outputs_are_named_by_the_command_that_made_them(path, exact_tokens):
    # SWE-agent writes its command in the reply (and its `action`) and sends the output as
    # the user's: the output is the tool of the command's first word, never unknown
    history = json.loads(path.read_bytes())["history"]
    commands = {m["action"].split()[0] for m in history
                if m.get("role") == "assistant" and (m.get("action") or "").strip()}
    by_tool = stats(path).by_tool
    assert by_tool and "(unknown tool)" not in by_tool
    assert set(by_tool) <= commands | {"bash"}  # (function calling names its tools itself)
    # each command is a call of its tool, whether the model wrote it as text or as a
    # function call, counted where it is written: the last (submit), which ended the run
    # and gave no output, too
    acted = [m for m in history if m.get("role") == "assistant"
             and (m.get("action") or "").strip()]
    assert sum(t.calls for t in by_tool.values()) == len(acted) == stats(path).steps
    assert by_tool["submit"].calls == 1


def test_a_swe_agent_output_shows_its_command_in_stats_and_show(tmp_path, exact_tokens):
    out = "Traceback (most recent call last):\n  boom\n" * 20
    doc = {"history": [
        {"role": "system", "content": "You are an autonomous programmer."},
        {"role": "user", "content": "We're currently solving the following issue: x\n"
                                    "(Open file: n/a)\n(Current directory: /repo)\nbash-$"},
        {"role": "assistant", "content": "Run it.\n```\npython run.py\n```",
         "action": "python run.py\n"},
        {"role": "user", "content": out + "(Open file: n/a)\n(Current directory: /repo)\n"
                                          "bash-$"},
        {"role": "assistant", "content": "Done.\n```\nsubmit\n```", "action": "submit"}]}
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc, indent=2))
    s = stats(path)
    assert list(s.by_tool) == ["python", "submit"] and s.by_tool["python"].result_tokens > 100
    assert (s.by_tool["submit"].calls, s.by_tool["submit"].tokens) == (1, 0)
    assert s.by_role["tool"] >= s.by_tool["python"].result_tokens
    shown = ctxpack("show", str(path))
    assert shown.code == 0 and "tool · python" in shown.out and "unknown tool" not in shown.out


def test_swe_agent_commands_written_as_text_are_the_calls_of_their_tools(tmp_path):
    # SWE-agent's commands are text actions, not calls the API carried: each is a call of
    # the tool its first word names (stats showed `calls 0`), counted where the reply
    # writes it, so the last, `submit`, which gets no output, is one too
    prompt = "(Open file: n/a)\n(Current directory: /repo)\nbash-$"

    def act(command: str) -> dict:
        return {"role": "assistant", "content": f"Next.\n```\n{command}\n```",
                "action": f"{command}\n"}

    def output(text: str) -> dict:
        return {"role": "user", "content": f"{text}\n{prompt}"}

    doc = {"history": [
        {"role": "system", "content": "You are an autonomous programmer."},
        {"role": "user", "content": f"We're currently solving the following issue: x\n{prompt}"},
        act("python run.py"), output("boom " * 30), act("ls -a"), output("run.py"),
        act("python run.py --fixed"), output("ok"), act("submit")]}
    path = tmp_path / "run.traj"
    path.write_text(json.dumps(doc, indent=2))
    run = ctxpack("stats", "--json", str(path))
    by_tool = json.loads(run.out)["files"][0]["by_tool"]
    assert {name: t["calls"] for name, t in by_tool.items()} == {"python": 2, "ls": 1,
                                                                  "submit": 1}
    assert all(t["call_tokens"] == 0 for t in by_tool.values())
    assert [name for name, t in by_tool.items() if not t["result_tokens"]] == ["submit"]
    # what show and convert make of the replies is as before: the command stays their text
    shown = ctxpack("show", str(path)).out
    assert "submit" in shown and "submit(" not in shown
    table = ctxpack("stats", str(path), env={"COLUMNS": "200"}).out
    assert re.search(r"│ python +│ +2 +│", table), table


def test_broken_document_names_the_line(tmp_path):
    path = tmp_path / "run.traj"
    path.write_text('{\n  "history": [\n    {"role": "user", "content": "hi"},\n    oops\n  ]\n}\n')
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:4:", "malformed JSON")
    with pytest.raises(InputError, match="truncated document"):
        load(io.BytesIO(b'[\n  {"role": "user", "content": "hi"}'))


def test_a_truncated_document_gives_no_hint_that_cannot_help(tmp_path):
    # a whole document cut short has no line --skip-invalid could skip; a JSONL file does
    doc = tmp_path / "run.json"
    doc.write_text('[\n  {"role": "user", "content": "hi"},\n  {"role": "assist')
    for args in ((), ("--skip-invalid",)):
        run = ctxpack("stats", *args, str(doc))
        assert_clean_error(run, 2, f"{doc}:", "truncated document")
        assert "--skip-invalid" not in run.err and "still be being written" in run.err
    lines = tmp_path / "run.jsonl"
    lines.write_text('{"role": "user", "content": "hi"}\n{"role": "assist')
    assert_clean_error(ctxpack("stats", str(lines)), 2, f"{lines}:2:", "--skip-invalid")


def test_a_document_with_no_messages_is_a_clean_error(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{\n  "name": "not a transcript"\n}\n')
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "json-messages")


def test_a_messages_value_of_another_type_beside_the_history_is_no_usage():
    doc = {"history": [{"role": "user", "content": "hi"}], "messages": 5}
    t = load(io.BytesIO(json.dumps(doc).encode()))
    assert t.format == "json-messages"
    assert [m.text for m in t.messages] == ["hi"]
    assert t.usage == {}


def test_messages_of_a_one_line_document_are_named_by_their_place(tmp_path):
    runs = [{"traj": [{"role": "user", "content": "book it"},
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"id": "c1", "type": "function",
                           "function": {"name": "book", "arguments": "{}"}}]},
                      {"role": "user", "content": "thanks"}]},
            {"traj": [{"role": "user", "content": "x " * 300},
                      {"role": "tool", "tool_call_id": "zz", "content": "ok"}]}]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs, indent=1))  # many lines: each item at its own
    t = load(path)
    assert [m.place for m in t.messages] == ["[0].traj[0]", "[0].traj[1]", "[0].traj[2]",
                                             "[1].traj[0]", "[1].traj[1]"]
    # each item opens on the line before its role (its `{`): show, stats and validate name
    # that line, and show and stats the place too
    lines = path.read_text().splitlines()
    call, result = (next(n for n, text in enumerate(lines) if f'"role": "{role}"' in text)
                    for role in ("assistant", "tool"))
    big = next(n for n, text in enumerate(lines) if '"x x ' in text) - 1
    run = ctxpack("stats", "--json", str(path))
    largest = json.loads(run.out)["files"][0]["largest"][0]
    assert (largest["line"], largest["place"]) == (big, f"line {big} [1].traj[0]")
    table = ctxpack("stats", str(path)).out
    assert f"line {big} [1].traj[0]" in table and "place" in table
    shown = ctxpack("show", "--no-pager", str(path)).out
    assert f"line {call} [0].traj[1]  assistant" in shown and "line 1  " not in shown
    checked = ctxpack("validate", str(path)).out.splitlines()
    assert f"{path}:{call}: [0].traj[1]: tool call 'c1' (book) has no result in the " \
        "transcript" in checked
    assert any(line.startswith(f"{path}:{result}: [1].traj[1]: tool result for call 'zz'")
               for line in checked)


def test_messages_of_a_jsonl_file_keep_their_lines(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n')
    t = load(path)
    assert [m.place for m in t.messages] == ["", ""] and [m.where for m in t.messages] == [
        "line 1", "line 2"]


ASK = {"role": "user", "content": "fix the test"}


@pytest.mark.parametrize(("message", "problem"), [
    ({"role": "assistant", "content": 5},
     "content is a number, not a string or an array of content parts"),
    ({"role": "user", "content": None}, "content is null (Chat Completions takes a message "
     "without content only from an assistant that makes tool calls)"),
    ({"role": "user", "content": [{"text": "see"}]}, "content[0] has no 'type'"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
     "content[0]: image_url part's image without 'url'"),
    ({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": 5}}]},
     "tool_calls[0].function's 'arguments' is a number, not a string"),
    ({"role": "robot", "content": "beep"}, "role 'robot' is not accepted by the openai API"),
])
@pytest.mark.parametrize("shape", ["array", "messages"])
def test_content_the_api_refuses_is_named_in_a_document_as_in_jsonl(tmp_path, message,
                                                                     problem, shape):
    # SWE-agent, mini-swe-agent and tau-bench send these messages to Chat Completions
    answered = [{"role": "tool", "tool_call_id": "c1", "content": "ok"}] \
        if "tool_calls" in message else []
    messages = [ASK, message, *answered]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps(messages if shape == "array" else {"messages": messages},
                               indent=2))
    assert load(path).format == "json-messages"
    # the second message is named at the line that opens it, the one before its role's
    at = [n for n, text in enumerate(path.read_text().splitlines())
          if text.strip().startswith('"role": ')][1]
    place = "[1]" if shape == "array" else "messages[1]"
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.strip() == f"{path}:{at}: {place}: {problem}", \
        run.out + run.err
    jsonl = tmp_path / "run.jsonl"  # the same messages one a line: the same problem
    jsonl.write_text("".join(json.dumps(m) + "\n" for m in messages))
    assert ctxpack("validate", str(jsonl)).out.strip() == f"{jsonl}:2: {problem}"


def test_an_exit_that_does_not_end_the_run_is_named_not_dropped(tmp_path):
    # mini-swe-agent's `exit` ends a run and is no model input; one in the middle of the
    # messages is no such end: it is read, and validate names its place and role
    messages = [{"role": "system", "content": "You fix bugs."},
                {"role": "user", "content": "Fix the parser."},
                {"role": "exit", "content": "stopped early"},
                {"role": "assistant", "content": "Fixed it."},
                {"role": "exit", "content": "diff --git a/p.py b/p.py"}]
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"messages": messages, "info": {}}, indent=1))
    run = ctxpack("validate", str(path))
    assert run.code == 1
    assert "messages[2]: role 'exit'" in run.out and "messages[4]" not in run.out
    assert [m.role for m in load(path).messages] == ["system", "user", "exit", "assistant"]
    # the run's last exit alone is passed over, as before
    path.write_text(json.dumps({"messages": messages[:2] + messages[3:], "info": {}}))
    assert ctxpack("validate", str(path)).code == 0


def test_a_request_body_saved_as_one_document_names_its_model(tmp_path):
    # what `convert --to openai` writes, saved under .json: read whole, as json-messages,
    # and counted as the model its body names, not as one assumed
    out = tmp_path / "body.json"
    run = ctxpack("convert", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--to", "openai",
                  "-o", str(out))
    assert run.code == 0, run.err
    named = json.loads(out.read_text())["model"]
    run = ctxpack("stats", "--json", str(out))
    assert run.code == 0, run.err
    (doc,) = json.loads(run.out)["files"]
    assert doc["format"] == "json-messages" and doc["model"] == named
    assert "assumed" not in doc["note"]

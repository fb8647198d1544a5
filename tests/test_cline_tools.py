"""Cline / Roo Code tool calls written as XML in the reply's text (`<read_file>`), and the
UI log's tool events: read as calls named by their tool, answered by the text results
after them, in stats' tool table, steps, show and convert, the count and the file
unchanged."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.breakdown import stats
from ctxpack.checks import validate
from ctxpack.convert import request_bodies
from ctxpack.formats.cline import call_arguments
from ctxpack.loader import load, write
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Text, ToolCall, group_rounds

from .compression.transcripts import billed, squeezed
from .conftest import SAMPLES, corpus_params
from .helpers import ctxpack
from .test_convert import assert_accepted

HISTORY = SAMPLES / "cline-task" / "api_conversation_history.json"
UI = SAMPLES / "cline-task" / "ui_messages.json"


def _as_text(message):
    """The message as read before calls were: a history's reply its text blocks as the
    file holds them, a UI log's call events each their text, a result its text."""
    if message.role == "assistant" and "content" in message.raw:
        texts = [b["text"] for b in message.raw["content"] if b.get("type") == "text"]
        return replace(message, parts=tuple(Text(t) for t in texts))
    return replace(message, parts=tuple(Text(p.arguments) if isinstance(p, ToolCall) else p
                                        for p in message.parts))


def test_the_samples_xml_calls_are_calls_answered_by_their_results():
    t = load(HISTORY)
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [c.name for c in calls] == ["read_file", "replace_in_file", "execute_command",
                                       "attempt_completion", "replace_in_file",
                                       "attempt_completion"]
    assert all(c.written and c.arguments.startswith(f"<{c.name}>") for c in calls)
    assert calls[0].arguments == "<read_file>\n<path>src/export.ts</path>\n</read_file>"
    # each result answers the call before it; the person's feedback on attempt_completion
    # is their message, not a result
    answered = [r.call_id for m in t.messages for r in m.tool_results]
    assert answered == [calls[i].id for i in (0, 1, 2, 4)]
    assert all(r.written for m in t.messages for r in m.tool_results)
    assert validate(t) == []  # the API saw text: nothing to pair


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])  # o200k_base and cl100k_base
def test_a_reply_with_a_written_call_counts_as_its_text(model, exact_tokens):
    for path in (HISTORY, UI):
        t = load(path)
        counter = TokenCounter(model)
        for m in t.messages:
            assert counter.message(m).total == counter.message(_as_text(m)).total, m.where


def test_stats_names_the_tools_and_counts_the_same(tmp_path):
    f = stats(HISTORY)
    assert {name: t.calls for name, t in f.by_tool.items()} == {
        "replace_in_file": 2, "read_file": 1, "execute_command": 1, "attempt_completion": 2}
    assert f.by_tool["read_file"].result_tokens > 0
    assert "(unknown tool)" not in f.by_tool
    assert f.steps == 6
    # the count is the file's text: the same as with the calls read as plain text
    counter = TokenCounter(f.model)
    whole = sum(counter.message(_as_text(m)).total for m in load(HISTORY).messages)
    assert f.tokens == whole + 3
    # every tool row token but the messages' framing is a named tool's result
    tool_messages = [m for m in load(HISTORY).messages if m.role == "tool"]
    results = sum(t.result_tokens for t in f.by_tool.values())
    assert 0 < f.by_role["tool"] - results <= 5 * len(tool_messages)


def test_the_file_is_written_back_byte_for_byte(tmp_path):
    for path in (HISTORY, UI):
        out = tmp_path / path.name
        write(load(path), out)
        assert out.read_bytes() == path.read_bytes()


def test_show_renders_the_call_and_names_the_result():
    run = ctxpack("show", "--full", str(HISTORY))
    assert run.code == 0, run.err
    assert "→ read_file" in run.out and "<path>src/export.ts</path>" in run.out
    assert "tool · read_file" in run.out and "tool · execute_command" in run.out


def _sent_calls(body, to):
    """The tool calls of a converted body, in order: (id, name, arguments as an object)."""
    if to == "openai":
        return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                for m in body["messages"] for c in m.get("tool_calls") or ()]
    return [(b["id"], b["name"], b["input"]) for m in body["messages"]
            if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]


def _sent_results(body, to):
    """The tool results of a converted body, in order: (the call's id, its text)."""
    if to == "openai":
        return [(m["tool_call_id"], m["content"]) for m in body["messages"]
                if m["role"] == "tool"]
    return [(b["tool_use_id"], b["content"]) for m in body["messages"]
            if isinstance(m["content"], list) for b in m["content"]
            if b["type"] == "tool_result"]


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_convert_makes_the_xml_calls_api_calls_answered_by_their_results(to, tmp_path):
    out = tmp_path / f"task.{to}.jsonl"
    run = ctxpack("convert", str(HISTORY.parent), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    (body,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert_accepted(body, to)
    calls = _sent_calls(body, to)
    # the calls a tool answered, each with the parameters its XML named
    assert [(name, args) for _, name, args in calls] == [
        ("read_file", {"path": "src/export.ts"}),
        ("replace_in_file", {"path": "src/export.ts", "diff": calls[1][2]["diff"]}),
        ("execute_command", {"command": "npm test -- export", "requires_approval": "false"}),
        ("replace_in_file", {"path": "test/export.test.ts", "diff": calls[3][2]["diff"]})]
    assert calls[1][2]["diff"].startswith("------- SEARCH\n") and \
        calls[1][2]["diff"].endswith("+++++++ REPLACE")
    # each answered by its result, as the text Cline sent
    results = _sent_results(body, to)
    assert [cid for cid, _ in results] == [cid for cid, _, _ in calls]
    assert results[0][1].startswith("[read_file for 'src/export.ts'] Result:\nimport {")
    assert results[2][1].startswith("[execute_command for 'npm test -- export'] Result:")
    # attempt_completion, which the person answered (or no one), stays the text it was
    # (an Anthropic body leaves out the last, the reply it ended on)
    replies = [m for m in body["messages"] if m["role"] == "assistant"]
    texts = ["".join(m["content"]) if isinstance(m["content"], str) else "".join(
        b.get("text", "") for b in m["content"]) for m in replies if m["content"]]
    assert sum(t.startswith("<attempt_completion>\n<result>") for t in texts) == \
        (2 if to == "openai" else 1)
    assert not any("<read_file>" in t or "<replace_in_file>" in t for t in texts)
    assert "4 tool calls the model wrote in its reply's text (Cline's XML) made tool calls " \
        "of the API" in run.err
    assert "2 tool calls the model wrote in its reply's text and no tool answered" in run.err
    assert ctxpack("validate", str(out)).code == 0


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_compress_of_a_converted_cline_task_masks_its_old_tool_outputs(to, tmp_path):
    """Converted, its results are tool messages: masking takes the old ones, as it does
    of any agent's, where as text they were each a user message and none was masked.
    compress rewrites Chat Completions bodies; Anthropic ones are converted from its output."""
    converted, small = tmp_path / "task.jsonl", tmp_path / "small.jsonl"
    run = ctxpack("convert", str(HISTORY.parent), "--to", "openai", "-o", str(converted))
    assert run.code == 0, run.err
    budget = billed(converted, squeezed(converted).budget)  # one token under all outputs
    run = ctxpack("compress", str(converted), "--no-summarize", "--budget", str(budget),
                  "--target", "1", "--keep-observations", "1", "--keep-output-tokens", "0",
                  "-o", str(small), "--report-json", "-")
    assert run.code == 0, run.err
    assert json.loads(run.out)["masked"] >= 2
    assert ctxpack("validate", str(small)).code == 0
    assert ctxpack("restore", str(small)).out == converted.read_text(encoding="utf-8")
    if to == "anthropic":
        run = ctxpack("convert", str(small), "--to", "anthropic", "-o", str(tmp_path / "a"))
        assert run.code == 0, run.err
        small = tmp_path / "a"
    (body,) = [json.loads(line) for line in small.read_text().splitlines()
               if '"messages"' in line]
    results = [text if isinstance(text, str) else text[0]["text"]
               for _, text in _sent_results(body, to)]
    assert results[0].startswith("[ctxpack: output of read_file(path=src/export.ts) masked")
    assert "masked" not in results[-1]  # the newest output is kept


def test_the_ui_logs_calls_convert_with_what_their_events_show():
    """The UI log keeps no XML: a call's arguments are the JSON its event shows, and a
    command event's text is the command line."""
    (body,) = request_bodies(load(UI), "openai", keep_last_reply=True)
    assert_accepted(body, "openai")
    events = {e["ts"]: e for e in json.loads(UI.read_text())}
    shown = [json.loads(e["text"]) for e in events.values() if e.get("say") == "tool"]
    calls = _sent_calls(body, "openai")
    assert [(name, args) for _, name, args in calls] == [
        ("read_file", shown[0]), ("replace_in_file", shown[1]),
        ("execute_command", {"command": "npm test -- export"}),
        ("replace_in_file", shown[2])]
    results = _sent_results(body, "openai")
    assert [cid for cid, _ in results] == [cid for cid, _, _ in calls]
    assert results[2][1].startswith("[execute_command for 'npm test -- export'] Result:")


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*.json"))
def test_a_corpus_cline_logs_calls_convert_to_api_calls_with_their_results(path):
    t = load(path)
    (body,) = request_bodies(t, "openai", keep_last_reply=True)
    assert_accepted(body, "openai")
    answered = {r.call_id for m in t.messages for r in m.tool_results}
    calls = _sent_calls(body, "openai")
    assert len(calls) == len([c for m in t.messages for c in m.tool_calls if c.id in answered])
    assert [cid for cid, _ in _sent_results(body, "openai")] == [cid for cid, _, _ in calls]
    assert {name for _, name, _ in calls} >= {"read_file", "replace_in_file",
                                              "execute_command"}
    commands = [args for _, name, args in calls if name == "execute_command"]
    assert commands and all(isinstance(a["command"], str) and a["command"] for a in commands)


def test_the_ui_logs_tool_events_are_calls_named_by_their_results():
    t = load(UI)
    named = [(c.name, c.written) for m in t.messages for c in m.tool_calls]
    # the calls the history holds, in its order: its completions too (the UI's
    # completion_result events), which the person answered with their feedback
    assert named == [(c.name, True) for m in load(HISTORY).messages for c in m.tool_calls]
    f = stats(UI)
    assert {n: (x.calls, x.result_tokens > 0) for n, x in f.by_tool.items()} == {
        "replace_in_file": (2, True), "read_file": (1, True), "execute_command": (1, True),
        "attempt_completion": (2, False)}


QUESTION = {"question": "Should empty cells become an empty field or a zero?",
            "options": ["empty field", "zero"]}


def question_log() -> list[dict]:
    """A UI log whose reply asks the person a question (ask: followup), whose answer
    comes back as the next request, then completes (say: completion_result, then the
    ask: completion_result that waits for the person's word)."""
    ts = 1_779_870_000_000
    answer = ("[ask_followup_question for 'Should empty cells become an empty field or a "
              "zero?'] Result:\n<answer>\nempty field\n</answer>\n\n<environment_details>\n"
              "# VSCode Open Tabs\nsrc/export.ts\n</environment_details>")
    return [
        {"ts": ts, "type": "say", "say": "task", "text": "Fix the CSV export of empty cells."},
        {"ts": ts + 1, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": "<task>\nFix the CSV export of empty cells.\n</task>",
             "tokensIn": 9, "tokensOut": 40, "cacheReads": 0, "cacheWrites": 9000})},
        {"ts": ts + 2, "type": "say", "say": "text", "text": "One thing first.",
         "partial": False},
        {"ts": ts + 3, "type": "ask", "ask": "followup", "text": json.dumps(QUESTION),
         "partial": True},
        {"ts": ts + 3, "type": "ask", "ask": "followup", "text": json.dumps(QUESTION)},
        {"ts": ts + 4, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": answer, "tokensIn": 12, "tokensOut": 30, "cacheReads": 9000,
             "cacheWrites": 80})},
        {"ts": ts + 5, "type": "say", "say": "completion_result",
         "text": "Empty cells are now written as empty fields."},
        {"ts": ts + 6, "type": "ask", "ask": "completion_result", "text": ""}]


def test_the_ui_logs_question_and_completion_are_calls_of_their_tools(tmp_path):
    # the question was dropped (its words uncounted), the completion read as prose
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(question_log(), indent=2))
    t = load(path)
    assert t.format == "cline-ui"
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [(c.name, c.written) for c in calls] == [("ask_followup_question", True),
                                                     ("attempt_completion", True)]
    assert calls[0].arguments == json.dumps(QUESTION)
    assert calls[1].arguments == "Empty cells are now written as empty fields."
    # the answer is the person's, not a tool's output
    answer = next(m for m in t.messages if "<answer>" in m.text)
    assert (answer.role, answer.human) == ("user", True)
    # each reply counts as the text it shows, the question's too
    counter = TokenCounter("gpt-4o")
    asking = next(m for m in t.messages if m.tool_calls)
    assert counter.message(asking).total == counter.message(_as_text(asking)).total
    assert counter.text(json.dumps(QUESTION)) < counter.message(asking).total
    f = stats(path)
    assert {n: x.calls for n, x in f.by_tool.items()} == {
        "ask_followup_question": 1, "attempt_completion": 1}
    run = ctxpack("show", "--full", str(path))
    assert run.code == 0, run.err
    assert "→ ask_followup_question" in run.out and "→ attempt_completion" in run.out
    out = tmp_path / "again.json"
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


def test_a_request_of_several_results_answers_each_call_in_order():
    ts = 1_779_870_000_000
    reads = [{"ts": ts + n, "type": "say", "say": "tool",
              "text": json.dumps({"tool": "readFile", "path": p})}
             for n, p in enumerate(["a.py", "b.py"], 1)]
    request = ("[read_file for 'a.py'] Result:\nA = 1\n\n\n[read_file for 'b.py'] Result:\n"
               "B = 2\n\n<environment_details>\nnone\n</environment_details>")
    events = [{"ts": ts, "type": "say", "say": "task", "text": "read a and b"},
              {"ts": ts, "type": "say", "say": "api_req_started",
               "text": json.dumps({"request": "<task>\nread a and b\n</task>"})},
              *reads,
              {"ts": ts + 9, "type": "say", "say": "api_req_started",
               "text": json.dumps({"request": request})}]
    data = json.dumps(events).encode()
    t = load(io.BytesIO(data))
    calls = t.messages[1].tool_calls
    results = t.messages[2].tool_results
    assert [c.name for c in calls] == ["read_file", "read_file"]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert [r.text for r in results] == [
        "[read_file for 'a.py'] Result:\nA = 1\n\n\n",
        "[read_file for 'b.py'] Result:\nB = 2\n\n<environment_details>\nnone\n"
        "</environment_details>"]
    assert "".join(r.text for r in results) == request


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*.json"))
def test_a_corpus_cline_logs_tool_row_is_in_its_tool_table(path):
    f = stats(path)
    t = load(path)
    assert f.by_tool and "(unknown tool)" not in f.by_tool
    assert {"replace_in_file", "execute_command", "read_file"} <= set(f.by_tool)
    tool_messages = [m for m in t.messages if m.role == "tool"]
    results = sum(x.result_tokens for x in f.by_tool.values())
    # every token of the tool row is a named tool's result, but each message's framing
    assert 0 < f.by_role["tool"] - results <= 5 * len(tool_messages)
    assert results > 0.99 * f.by_role["tool"]
    # each result follows its call in one step
    by_id = {r.call_id: i for i, m in enumerate(t.messages) for r in m.tool_results}
    calls = {c.id: i for i, m in enumerate(t.messages) for c in m.tool_calls}
    steps = {i: s for r in group_rounds(t.messages) for s in r.steps for i in s.results}
    for call_id, at in by_id.items():
        if call_id in calls:
            assert steps[at].action == calls[call_id]


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*xray*.json"))
def test_a_file_that_names_clines_tags_is_a_result_not_the_persons_message(path):
    # the write_to_file result holds a document about Cline's `<feedback>` tags
    t = load(path)
    result = next(m for m in t.messages if m.text.startswith("[write_to_file for "))
    assert result.role == "tool" and not result.human
    assert [c.name for c in t.messages[t.messages.index(result) - 1].tool_calls] == \
        ["write_to_file"]


# --- property --------------------------------------------------------------------------------

prose = st.text(max_size=40)
TOOLS = ["read_file", "execute_command", "replace_in_file", "list_files"]


@st.composite
def xml_histories(draw):
    """A Cline history whose replies call tools in XML on lines of their own, after some
    prose (or none), answered by `[tool for '...'] Result:` text, or by the person's
    feedback; with what each reply called."""
    history = [{"role": "user", "ts": 1,
                "content": [{"type": "text", "text": "<task>\n" + draw(prose) + "\n</task>"}]}]
    made = []
    for n in range(draw(st.integers(1, 5))):
        tool = draw(st.sampled_from(TOOLS))
        before = draw(prose)
        path = draw(prose)
        call = f"<{tool}>\n<path>{path}</path>\n</{tool}>"
        after = draw(st.sampled_from(["", "\n", "\n\nThen " + draw(prose)]))
        text = (before + "\n\n" if before else "") + call + after
        history.append({"role": "assistant", "ts": 2 * n + 2,
                        "content": [{"type": "text", "text": text}]})
        feedback = draw(st.booleans()) and draw(st.booleans())
        # never empty: Cline answers a tool that gave nothing "(tool did not return
        # anything)", as the API refuses an empty text block
        answer = "The user denied this operation.\n<feedback>\nno\n</feedback>" if feedback \
            else draw(prose.filter(lambda t: t and "<" not in t))
        history.append({"role": "user", "ts": 2 * n + 3, "content": [
            {"type": "text", "text": f"[{tool} for 'x'] Result:"},
            {"type": "text", "text": answer}]})
        made.append((tool, call, feedback, path))
    return history, made


@settings(max_examples=60, deadline=None)
@given(xml_histories())
def test_any_xml_cline_history_reads_each_call_with_its_result(case):
    history, made = case
    data = json.dumps(history, ensure_ascii=False).encode()
    out = io.BytesIO()
    t = load(io.BytesIO(data))
    write(t, out)
    assert out.getvalue() == data  # attribution only: the file as it was
    calls = [c for m in t.messages for c in m.tool_calls]
    assert [(c.name, c.arguments.rstrip("\n")) for c in calls] == \
        [(tool, call) for tool, call, _, _ in made]
    # a result answers its call, in the same step (the person's feedback is no result)
    steps = {i: s.action for r in t.rounds() for s in r.steps for i in s.results}
    where = {c.id: i for i, m in enumerate(t.messages) for c in m.tool_calls}
    answered = [(r.call_id, i) for i, m in enumerate(t.messages) for r in m.tool_results]
    assert [cid for cid, _ in answered] == [c.id for c, (_, _, fb, _) in zip(calls, made,
                                                                           strict=True) if not fb]
    assert all(steps[i] == where[cid] for cid, i in answered)
    # each reply counts as the text it is
    counter = TokenCounter("gpt-4o")
    for m in t.messages:
        assert counter.message(m).total == counter.message(_as_text(m)).total
    assert validate(t) == []
    # converted, a call a tool answered is a call of the API, with its path as Cline trims
    # it, answered by its result; one the person answered stays the text it was
    (body,) = request_bodies(t, "openai")
    assert_accepted(body, "openai")
    sent = _sent_calls(body, "openai")
    assert [(name, args) for _, name, args in sent] == [
        (tool, {"path": path.strip()}) for tool, _, fb, path in made if not fb]
    assert [cid for cid, _ in _sent_results(body, "openai")] == [cid for cid, _, _ in sent]
    replies = [m for m in body["messages"] if m["role"] == "assistant"]
    assert [(call in (m["content"] or ""), "tool_calls" in m)
            for m, (_, call, _, _) in zip(replies, made, strict=True)] == [
        (fb, not fb) for _, _, fb, _ in made]


def test_a_parameter_holding_its_own_closing_tag_converts_whole():
    """A file's text that names the tag (`</content>` in a note about Cline's XML) is
    the parameter's value, not its end; unknown tags inside are text too."""
    content = "Calls close with </content> and <path> on a line\n<b>bold</b>\n"
    reply = (f"Writing it.\n\n<write_to_file>\n<path>NOTES.md</path>\n<content>\n{content}"
             "</content>\n</write_to_file>")
    history = [
        {"role": "user", "ts": 1, "content": [{"type": "text", "text": "<task>\nnote\n</task>"}]},
        {"role": "assistant", "ts": 2, "content": [{"type": "text", "text": reply}]},
        {"role": "user", "ts": 3, "content": [
            {"type": "text", "text": "[write_to_file for 'NOTES.md'] Result:"},
            {"type": "text", "text": "The content was successfully saved to NOTES.md."}]}]
    t = load(io.BytesIO(json.dumps(history).encode()))
    for to in ("openai", "anthropic"):
        (body,) = request_bodies(t, to, keep_last_reply=True)
        assert [(name, args) for _, name, args in _sent_calls(body, to)] == [
            ("write_to_file", {"path": "NOTES.md", "content": content.strip()})]
        assert [text for _, text in _sent_results(body, to)] == [
            "[write_to_file for 'NOTES.md'] Result:\nThe content was successfully saved to "
            "NOTES.md."]


# the events Cline's UI shows a call of the model's by, and the tool each is of
UI_CALLS = {("say", "command"): "execute_command", ("ask", "command"): "execute_command",
            ("ask", "followup"): "ask_followup_question",
            ("say", "completion_result"): "attempt_completion",
            ("ask", "plan_mode_respond"): "plan_mode_respond",
            ("say", "browser_action"): "browser_action",
            ("ask", "browser_action_launch"): "browser_action", ("ask", "new_task"): "new_task",
            ("ask", "condense"): "condense", ("ask", "report_bug"): "report_bug"}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(UI_CALLS)), st.text(min_size=1, max_size=30),
                          st.booleans()), min_size=1, max_size=6))
def test_any_ui_logs_call_events_are_calls_of_their_tools(events):
    # a reply of call events (some with a streaming copy first), no request after it
    ts = 1_779_870_000_000
    log = [{"ts": ts, "type": "say", "say": "task", "text": "go"},
           {"ts": ts, "type": "say", "say": "api_req_started",
            "text": json.dumps({"request": "<task>\ngo\n</task>"})}]
    for n, ((kind, name), text, streamed) in enumerate(events, 1):
        event = {"ts": ts + n, "type": kind, kind: name, "text": text}
        log += [{**event, "partial": True}] if streamed else []
        log.append(event)
    log.append({"ts": ts + 99, "type": "ask", "ask": "completion_result", "text": ""})
    data = json.dumps(log, ensure_ascii=False).encode()
    t = load(io.BytesIO(data))
    calls = [c for m in t.messages for c in m.tool_calls]
    expected: list[tuple[str, str, bool]] = []
    for event, text, _ in events:
        if event[1] == "command" and expected and expected[-1][0] == "attempt_completion":
            # the command a completion carries, shown right after it: part of that call
            # written as the model writes a call of both parameters
            expected[-1] = ("attempt_completion",
                            f"<attempt_completion>\n<result>\n{expected[-1][1]}\n</result>\n"
                            f"<command>{text}</command>\n</attempt_completion>", True)
        else:
            expected.append((UI_CALLS[event], text, True))
    assert [(c.name, c.arguments, c.written) for c in calls] == expected
    counter = TokenCounter("gpt-4o")
    for m in t.messages:
        assert counter.message(m).total == counter.message(_as_text(m)).total
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


def test_the_persons_feedback_keeps_its_place_in_the_user_message():
    """Feedback on a completion, sent under the call's result head, is the person's
    message, read in the order the file has it (before the environment details)."""
    history = [
        {"role": "user", "ts": 1, "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}]},
        {"role": "assistant", "ts": 2, "content": [{"type": "text", "text":
            "<attempt_completion>\n<result>Fixed.</result>\n</attempt_completion>"}]},
        {"role": "user", "ts": 3, "content": [
            {"type": "text", "text": "[attempt_completion] Result:"},
            {"type": "text", "text": "<feedback>\nthe tests still fail\n</feedback>"},
            {"type": "text",
             "text": "<environment_details>\n# Time\nnow\n</environment_details>"}]}]
    data = json.dumps(history).encode()
    t = load(io.BytesIO(data))
    last = t.messages[-1]
    assert last.role == "user" and last.human
    assert [p.text.split("\n")[0] for p in last.parts if isinstance(p, Text)] == [
        "[attempt_completion] Result:", "<feedback>", "<environment_details>"]
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == data


# --- rounds kept by convert; a completion's command ------------------------------------------

def _rounds(path) -> list[int]:
    """The rounds `stats --json` finds in each file `path` gives."""
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    return [f["rounds"] for f in json.loads(run.out)["files"]]


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_a_converted_cline_task_keeps_its_rounds(to, tmp_path):
    """The environment details Cline sends after each tool's results are no turn of the
    person's: converted, they go into the result they came with, and the body holds the
    person's two turns (the task, the feedback on the completion) as the task did."""
    out = tmp_path / f"task.{to}.jsonl"
    run = ctxpack("convert", str(HISTORY.parent), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    assert _rounds(out) == _rounds(HISTORY.parent) == [2]
    assert "4 messages not the person's sent with tool results" in run.err
    assert ctxpack("validate", str(out)).code == 0
    (body,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert_accepted(body, to)
    sent = {json.dumps(b["text"]) for m in json.loads(HISTORY.read_text())
            for b in m["content"] if b["text"].startswith("<environment_details>")}
    for _, text in _sent_results(body, to):
        head, details = text.split("\n<environment_details>")
        assert head.startswith("[") and "] Result:" in head
        assert json.dumps("<environment_details>" + details) in sent
    # what is left as the user's is the person's words, each opening a round
    said = [m["content"] if isinstance(m["content"], str) else
            "".join(b.get("text", "") for b in m["content"])
            for m in body["messages"] if m["role"] == "user"]
    said = [s for s in said if s]  # (an Anthropic turn of tool results only)
    assert len(said) == 2
    assert said[0].startswith("<task>") and "<feedback>" in said[1]


def completion_log() -> list[dict]:
    """A UI log whose reply completes with a command to show the result (Cline's
    `attempt_completion` with `<command>`): the completion, then the command asked and
    its output, then the person's feedback, sent with the command's output as the
    completion's result."""
    ts = 1_779_870_000_000
    result = ("[attempt_completion] Result: Done\n\nCommand executed.\nOutput:\n3 passed\n\n"
              "The user has provided feedback on the results. Consider their input to "
              "continue the task, and then attempt completion again.\n<feedback>\nalso "
              "lint it\n</feedback>\n\n<environment_details>\nnone\n</environment_details>")
    return [
        {"ts": ts, "type": "say", "say": "task", "text": "Fix the CSV export."},
        {"ts": ts + 1, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": "<task>\nFix the CSV export.\n</task>", "tokensIn": 9,
             "tokensOut": 40, "cacheReads": 0, "cacheWrites": 9000})},
        {"ts": ts + 2, "type": "say", "say": "completion_result", "text": "Fixed.",
         "partial": True},
        {"ts": ts + 3, "type": "say", "say": "completion_result", "text": "Fixed."},
        {"ts": ts + 4, "type": "ask", "ask": "command", "text": "npm test"},
        {"ts": ts + 5, "type": "ask", "ask": "command_output", "text": "3 passed"},
        {"ts": ts + 6, "type": "ask", "ask": "completion_result", "text": ""},
        {"ts": ts + 7, "type": "say", "say": "user_feedback", "text": "also lint it"},
        {"ts": ts + 8, "type": "say", "say": "api_req_started", "text": json.dumps(
            {"request": result, "tokensIn": 12, "tokensOut": 30, "cacheReads": 9000,
             "cacheWrites": 80})},
        {"ts": ts + 9, "type": "say", "say": "command", "text": "npm run lint"}]


def test_a_completion_and_the_command_it_carries_are_one_call(tmp_path):
    """The command after a completion is that call's (its result is the command's output,
    under `[attempt_completion] Result:`); a command after a request is a call of its own."""
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(completion_log(), indent=2))
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    (f,) = json.loads(run.out)["files"]
    assert (f["format"], f["rounds"], f["steps"]) == ("cline-ui", 2, 2)
    assert {tool: row["calls"] for tool, row in f["by_tool"].items()} == {
        "attempt_completion": 1, "execute_command": 1}
    t = load(path)
    assert [[(c.name, c.arguments) for c in m.tool_calls] for m in t.messages
            if m.role == "assistant"] == [
        [("attempt_completion", "<attempt_completion>\n<result>\nFixed.\n</result>\n"
                                "<command>npm test</command>\n</attempt_completion>")],
        [("execute_command", "npm run lint")]]
    # as a call of the API, the completion's own arguments (they were the result and the
    # command joined, as a command: {"command": "Fixed.\nnpm test"})
    assert [json.loads(call_arguments(c)) for m in t.messages for c in m.tool_calls] == [
        {"result": "Fixed.", "command": "npm test"}, {"command": "npm run lint"}]
    run = ctxpack("show", "--full", str(path))
    assert run.code == 0, run.err
    assert "npm test" in run.out
    out = tmp_path / "again.json"
    write(t, out)
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*.json"))
def test_no_corpus_reply_calls_a_tool_after_its_completion(path):
    """attempt_completion ends a reply: a command shown after it is the command it
    carries, not another call (cline-xray's last but one runs the app it built)."""
    t = load(path)
    for m in t.messages:
        names = [c.name for c in m.tool_calls]
        assert "attempt_completion" not in names[:-1], names
    carried = [c for m in t.messages for c in m.tool_calls
               if c.name == "attempt_completion"
               and json.loads(call_arguments(c)).get("command", "").endswith("jira-viewer.exe")]
    assert len(carried) == ("xray" in path.name)

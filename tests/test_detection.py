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
from .helpers import ROOT, assert_clean_error, ctxpack

SAMPLES = ROOT / "samples"

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
    t = load(io.BytesIO(json.dumps(doc, indent=1).encode()))
    assert (t.format, t.unsure) == ("anthropic-array", "")
    assert [c.name for m in t.messages for c in m.tool_calls] == ["ls"]


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
    path = tmp_path / "items.json"
    path.write_text(json.dumps([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}]))
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:", "OpenAI Responses API")


def _documents() -> list:
    """The corpus files that are one JSON document (each read whole)."""
    out = []
    for p in _every(*READ):
        if p.values[0] is None:
            return [p]
        try:
            json.loads(p.values[0].read_bytes())
        except ValueError:
            continue
        out.append(p)
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("path", _documents())
def test_a_whole_document_written_on_one_line_is_read_as_the_pretty_one(
        path: Path, tmp_path: Path) -> None:
    one_line = tmp_path / path.name
    one_line.write_text(json.dumps(json.loads(path.read_bytes())))
    assert one_line.read_bytes().count(b"\n") == 0
    pretty, minified = stats(path), stats(one_line)
    assert minified.format == pretty.format == READ[path.relative_to(CORPUS).parts[0]]
    assert (minified.messages, minified.tokens, len(minified.rounds), minified.steps,
            minified.conversations, minified.by_role) == \
        (pretty.messages, pretty.tokens, len(pretty.rounds), pretty.steps,
         pretty.conversations, pretty.by_role)
    assert minified.outside == pretty.outside
    # sure unless the one line also fits a JSONL format as well (a .traj's `messages`)
    assert not minified.unsure or "one JSON object on one line" in minified.unsure


def test_a_one_line_document_that_also_fits_jsonl_says_which_it_was_read_as() -> None:
    doc = {"info": {"exit_status": "Submitted"},
           "messages": [{"role": "system", "content": "be brief"},
                        {"role": "user", "content": "fix it"},
                        {"role": "assistant", "content": "done"}]}
    t = load(io.BytesIO(json.dumps(doc).encode() + b"\n\n"))
    assert t.format == "json-messages" and len(t.messages) == 3
    assert "read as a whole json-messages document" in t.unsure
    assert "openai-conversations" in t.unsure
    # two lines are JSONL: each its own conversation, read as such
    two = load(io.BytesIO((json.dumps(doc) + "\n").encode() * 2))
    assert two.format == "openai-conversations" and len(two.messages) == 6


def test_a_one_line_gemini_session_is_sure_and_not_taken_for_chat_lines() -> None:
    doc = {"sessionId": "s1", "projectHash": "p", "startTime": "2025-01-01T00:00:00Z",
           "messages": [{"id": "a", "timestamp": "2025-01-01T00:00:01Z", "type": "user",
                         "content": "hello"},
                        {"id": "b", "timestamp": "2025-01-01T00:00:02Z", "type": "gemini",
                         "content": "hi there", "model": "gemini-2.5-pro"}]}
    t = load(io.BytesIO(json.dumps(doc).encode()))
    assert t.format == "gemini-cli" and t.unsure == ""
    assert [m.text for m in t.messages] == ["hello", "hi there"]
    assert t.messages[1].place == "messages[1]"


def _traj(steps: int) -> dict:
    messages = [{"role": "system", "content": "You are a careful agent."},
                {"role": "user", "content": "Find the bug in the parser."}]
    for i in range(steps):
        messages += [{"role": "assistant", "content": f"step {i}", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": f"cat f{i}.py"})}}]},
            {"role": "tool", "tool_call_id": f"c{i}",
             "content": "\n".join(f"line {j} of file {i}: value = {i * j}" for j in range(200))}]
    return {"info": {"model": "gpt-4o"}, "messages": messages}


def test_compress_keeps_a_one_line_document_on_one_line_and_restores_it(tmp_path: Path) -> None:
    src, out, back = tmp_path / "run.traj.json", tmp_path / "out.json", tmp_path / "back.json"
    src.write_text(json.dumps(_traj(12)))
    run = ctxpack("compress", str(src), "-o", str(out), "--budget", "6000")
    assert run.code == 0, run.err
    assert out.read_bytes().count(b"\n") == 0 and out.read_bytes() != src.read_bytes()
    assert load(out).format == "json-messages"
    assert ctxpack("restore", str(out), "-o", str(back)).code == 0
    assert back.read_bytes() == src.read_bytes()


def test_compress_refuses_a_one_line_gemini_session_as_it_does_the_pretty_one(
        tmp_path: Path) -> None:
    doc = {"sessionId": "s1", "projectHash": "p",
           "messages": [{"id": "a", "type": "user", "content": "hello " * 50},
                        {"id": "b", "type": "gemini", "content": "hi " * 50}]}
    for name, text in (("one.json", json.dumps(doc)), ("pretty.json", json.dumps(doc, indent=2))):
        path = tmp_path / name
        path.write_text(text)
        run = ctxpack("compress", str(path), "-o", str(tmp_path / f"out-{name}"))
        assert_clean_error(run, 2, "older single JSON document", "convert")
        assert not (tmp_path / f"out-{name}").exists()


def test_a_transcript_says_whether_it_was_read_as_one_document(tmp_path: Path) -> None:
    doc = {"sessionId": "s1", "projectHash": "p",
           "messages": [{"id": "a", "type": "user", "content": "hello"},
                        {"id": "b", "type": "gemini", "content": "hi"}]}
    for text in (json.dumps(doc), json.dumps(doc, indent=2)):
        t = load(io.BytesIO(text.encode()))
        assert (t.format, t.document, len(t.messages)) == ("gemini-cli", True, 2)
    lines = load(SAMPLES / "plateau-fix.gemini-cli.jsonl")
    assert (lines.format, lines.document) == ("gemini-cli", False)
    assert load(SAMPLES / "bugfix.mini-swe-agent.traj.json").document


def test_a_plain_json_array_of_messages_is_read_but_said_to_be_unsure(tmp_path: Path) -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(plain, indent=2))
    s = stats(path)
    assert s.format == "json-messages" and "plain {role, content}" in s.unsure
    assert s.to_dict()["format_unsure"] == s.unsure
    run = ctxpack("stats", str(path))
    assert run.code == 0 and "format unsure" in run.out.replace("\n", " ")
    # a mark of Chat Completions in any message makes it sure
    for marked in ([{"role": "system", "content": "be brief"}, *plain],
                   [*plain, {"role": "assistant", "content": None, "tool_calls": [
                       {"id": "c", "type": "function",
                        "function": {"name": "ls", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c", "content": "a.py"}]):
        t = load(io.BytesIO(json.dumps(marked, indent=1).encode()))
        assert t.format == "json-messages" and t.unsure == ""


def test_a_one_line_file_named_jsonl_is_read_as_jsonl(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"},
                                            {"role": "assistant", "content": "hello"}]}
    (tmp_path / "run.jsonl").write_text(json.dumps(body) + "\n")
    (tmp_path / "run.json").write_text(json.dumps(body) + "\n")
    lines, whole = load(tmp_path / "run.jsonl"), load(tmp_path / "run.json")
    assert (lines.format, lines.unsure) == ("openai-conversations", "")
    assert whole.format == "json-messages" and "openai-conversations" in whole.unsure
    assert [m.text for m in lines.messages] == [m.text for m in whole.messages]


@pytest.mark.parametrize("one_line", [False, True], ids=["pretty", "one line"])
def test_a_gemini_session_with_no_messages_is_still_gemini_cli(one_line: bool) -> None:
    # its sessionId and projectHash mark it; an empty `messages` list marks nothing
    doc = {"sessionId": "s1", "projectHash": "ab12", "startTime": "2025-06-01T10:00:00Z",
           "lastUpdated": "2025-06-01T10:00:00Z", "kind": "main", "messages": []}
    data = json.dumps(doc, indent=None if one_line else 2).encode()
    t = load(io.BytesIO(data))
    assert (t.format, len(t.messages), t.unsure) == ("gemini-cli", 0, "")


def test_a_one_line_document_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctxpack.loader as loader

    parsed: list[int] = []
    for name in ("parse_line", "parse_document"):
        real = getattr(loader, name)
        monkeypatch.setattr(loader, name, lambda data, *a, real=real: (
            parsed.append(len(data)), real(data, *a))[1])
    doc = {"sessionId": "s1", "projectHash": "ab12", "startTime": "2025-06-01T10:00:00Z",
           "lastUpdated": "2025-06-01T10:05:00Z", "messages": [
               {"id": "m1", "timestamp": "2025-06-01T10:00:00Z", "type": "user",
                "content": "list the files"},
               {"id": "m2", "timestamp": "2025-06-01T10:00:05Z", "type": "gemini",
                "content": "a.py and b.py"}]}
    t = load(io.BytesIO(json.dumps(doc).encode() + b"\n"))
    assert (t.format, len(t.messages), t.unsure) == ("gemini-cli", 2, "")
    assert len(parsed) == 1, parsed


@pytest.mark.parametrize(("name", "fits", "forced"), [
    ("coding-agent.claude-code.jsonl", "claude-code", "gemini-cli"),
    ("refactor.codex.jsonl", "codex", "gemini-cli"),
    ("refactor.codex.jsonl", "codex", "claude-code"),
    ("cline-task/api_conversation_history.json", "cline", "json-messages"),
    ("plateau-fix.gemini-cli.jsonl", "gemini-cli", "openai"),
])
def test_a_forced_format_that_a_line_does_not_fit_is_refused(name, fits, forced) -> None:
    # the reader would take what it could: empty messages, or none, with exit 0
    run = ctxpack("stats", "--format", forced, str(SAMPLES / name))
    assert_clean_error(run, 2, f"{name}:", f"not read as {forced}", f"looks like {fits} (")


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("anthropic-agent-events", pattern="*.jsonl"))
def test_managed_agent_events_forced_as_openai_chat_are_refused(path: Path) -> None:
    # its events fit Chat Completions loosely; their own mark says what they are
    run = ctxpack("stats", "--format", "openai", str(path))
    assert_clean_error(run, 2, f"{path.name}:", "looks like anthropic-events")


@pytest.mark.parametrize("path", sorted(
    p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".md")
    and p.name != "README.md" and not {"message", "part"} & set(p.parts)),  # storage's own
    ids=lambda p: str(p.relative_to(SAMPLES)))
def test_a_sample_forced_to_its_own_format_reads_as_detected(path: Path) -> None:
    found = load(path)
    forced = load(path, found.format)
    assert [m.text for m in forced.messages] == [m.text for m in found.messages]


def test_opencode_db_forced_on_a_text_file_says_it_is_not_a_database() -> None:
    run = ctxpack("stats", "--format", "opencode-db", str(SAMPLES / "refactor.codex.jsonl"))
    assert_clean_error(run, 2, "refactor.codex.jsonl", "not an SQLite database")


GEMINI_CONTENTS = [{"role": "user", "parts": [{"text": "hi"}]},
                   {"role": "model", "parts": [{"text": "yo"}]}]


def test_gemini_api_contents_under_messages_are_named_not_read_as_empty_messages() -> None:
    # under `messages` they were read as openai-conversations: two empty messages, surely
    data = json.dumps({"messages": GEMINI_CONTENTS}).encode()
    with pytest.raises(InputError) as info:
        load(io.BytesIO(data))
    assert "the Gemini API's contents" in info.value.problem
    # one true thing: ctxpack reads them, in a request body or as a bare array
    assert "does not read" not in info.value.problem
    assert "gemini-api" in info.value.problem and "gemini-checkpoint" in info.value.problem


# What agents keep beside their sessions, as each writes it (a few entries of each)
CODEX_HISTORY = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in [
    {"session_id": "0199a3f2-6c1e-7b40-9d2a-5e8f1c3b7a90", "ts": 1759312204,
     "text": "why does the retry test hang on CI?"},
    {"session_id": "0199a3f2-6c1e-7b40-9d2a-5e8f1c3b7a90", "ts": 1759312391,
     "text": "ok, patch it and run the suite"}])
CLAUDE_HISTORY = "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in [
    {"display": "add a --dry-run flag to the sync command", "pastedContents": {},
     "timestamp": 1761034872113, "project": "/home/dev/syncer",
     "sessionId": "5c3f2742-b736-4776-8848-dcaccba554d5"},
    {"display": "[Pasted text #1 +12 lines] why does this fail?",
     "pastedContents": {"1": {"id": 1, "type": "text", "content": "Traceback ..."}},
     "timestamp": 1761035020587, "project": "/home/dev/syncer",
     "sessionId": "5c3f2742-b736-4776-8848-dcaccba554d5"}])
GEMINI_LOGS = json.dumps([  # the CLI writes it indented by two
    {"sessionId": "8f0d4c2a-1b3e-4f5a-9c7d-2e6b8a0f1d3c", "messageId": 0,
     "type": "user", "message": "summarize src/parser.ts",
     "timestamp": "2026-02-11T08:14:03.512Z"},
    {"sessionId": "8f0d4c2a-1b3e-4f5a-9c7d-2e6b8a0f1d3c", "messageId": 1,
     "type": "user", "message": "/quit", "timestamp": "2026-02-11T08:16:40.027Z"}],
    indent=2)
CHATGPT_EXPORT = json.dumps([{
    "title": "Regex for ISO dates", "create_time": 1730000000.123, "update_time": 1730000090.5,
    "mapping": {
        "root": {"id": "root", "message": None, "parent": None, "children": ["m1"]},
        "m1": {"id": "m1", "parent": "root", "children": ["m2"], "message": {
            "id": "m1", "author": {"role": "user", "name": None, "metadata": {}},
            "create_time": 1730000001.0, "content": {"content_type": "text", "parts": [
                "A regex for 2024-01-31?"]}, "status": "finished_successfully",
            "weight": 1.0, "metadata": {}, "recipient": "all"}},
        "m2": {"id": "m2", "parent": "m1", "children": [], "message": {
            "id": "m2", "author": {"role": "assistant", "name": None, "metadata": {}},
            "create_time": 1730000009.0, "content": {"content_type": "text", "parts": [
                "`\\d{4}-\\d{2}-\\d{2}`"]}, "status": "finished_successfully",
            "weight": 1.0, "metadata": {"model_slug": "gpt-4o"}, "recipient": "all"}}},
    "current_node": "m2", "conversation_id": "6720f1a2-0b1c-8000-9d3e-4f5a6b7c8d9e",
    "default_model_slug": "gpt-4o"}])


# A chat as the Vercel AI SDK's `useChat` keeps it (v5 UIMessage: a tool part holds its call
# and result; a step's start is a part of its own)
UI_MESSAGES = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Oslo?"}]},
    {"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "reasoning", "text": "Look it up.", "state": "done"},
        {"type": "tool-getWeather", "toolCallId": "call_1", "state": "output-available",
         "input": {"city": "Oslo"}, "output": {"celsius": 4}},
        {"type": "text", "text": "4 °C in Oslo.", "state": "done"}]}]


# What a file looks like, for shapes ctxpack knows of: each line says one verdict, not
# "X, which ctxpack reads as Y, which ctxpack does not read"
@pytest.mark.parametrize(("name", "text", "said"), [
    ("history.jsonl", CODEX_HISTORY, "a Codex prompt history (~/.codex/history.jsonl: the "
     "prompts typed, each with its session's id), not a session, which ctxpack does not "
     "read: Codex's sessions are under ~/.codex/sessions/"),
    ("history.jsonl", CLAUDE_HISTORY, "a Claude Code prompt history (~/.claude/history.jsonl"
     ": the prompts typed, each with its project), not a session, which ctxpack does not "
     "read: Claude Code's sessions are under ~/.claude/projects/"),
    ("logs.json", GEMINI_LOGS, "a Gemini CLI prompt log (logs.json: the prompts typed, "
     "numbered in their session), not a session, which ctxpack does not read: the CLI's "
     "sessions are in chats/ beside it"),
    ("conversations.json", CHATGPT_EXPORT, "a ChatGPT data export (conversations.json: "
     "each conversation a tree of messages under `mapping`), which ctxpack does not read: "
     "as Chat Completions messages"),
    ("contents.json", json.dumps({"messages": GEMINI_CONTENTS}),
     "ctxpack reads them as a request body's `contents` (gemini-api)"),
    ("task_metadata.json", json.dumps({"files_in_context": [], "model_usage": []}),
     "a Cline task's task_metadata.json (the files in its context, the models used), which "
     "ctxpack does not read: it reads the task's api_conversation_history.json (cline)"),
    # one Content a line: no reader takes them so, the array they go in is read
    ("contents.jsonl", "".join(json.dumps(c) + "\n" for c in GEMINI_CONTENTS),
     "a Gemini API Content (role user/model, text and calls in untyped `parts`), one a "
     "line: ctxpack reads Contents as a JSON array (gemini-checkpoint)"),
    ("items.jsonl", json.dumps({"type": "function_call", "call_id": "c1", "name": "f",
                                "arguments": "{}"}) + "\n",
     "OpenAI Responses API items (typed items with `call_id`s, not chat messages), which "
     "ctxpack does not read"),
    ("reasoning.jsonl", json.dumps({"type": "reasoning", "id": "rs_1", "summary": [
        {"type": "summary_text", "text": "Checking the date."}]}) + "\n",
     "OpenAI Responses API items"),
    # AI SDK UI messages hold no Gemini contents: no `model` role, every part typed
    ("chat.json", json.dumps(UI_MESSAGES), "Vercel AI SDK UI messages (role user/assistant, "
     "the content in typed `parts`"),
    ("chat-request.json", json.dumps({"id": "c1", "messages": UI_MESSAGES,
                                      "trigger": "submit-message"}), "Vercel AI SDK UI"),
    ("oc.json", json.dumps([{"info": {"id": "m1", "role": "user"}, "parts": []}]),
     "which ctxpack does not read: it reads whole `opencode export` documents"),
    ("notes.md", "# Notes\n\nsome text\n",
     "Markdown, but no Aider chat history (the one Markdown ctxpack reads"),
    ("table.csv", "a,b,c\n1,2,3\n", "CSV, which ctxpack does not read"),
])
def test_each_known_shape_is_named_with_one_verdict(tmp_path, name, text, said) -> None:
    path = tmp_path / name
    path.write_text(text)
    run = ctxpack("stats", str(path))
    assert_clean_error(run, 2, said)
    line = run.err.split(" (ctxpack reads:")[0]  # the formats it reads follow, as a hint
    assert line.count("ctxpack does not read") + line.count("ctxpack reads") == 1, line


def test_gemini_api_contents_in_a_request_body_are_read_with_their_text() -> None:
    t = load(io.BytesIO(json.dumps({"contents": GEMINI_CONTENTS}).encode()))
    assert t.format == "gemini-api" and not t.unsure
    assert [(m.role, m.text) for m in t.messages] == [("user", "hi"), ("assistant", "yo")]


def test_a_bare_array_of_gemini_api_contents_is_read_with_its_text() -> None:
    t = load(io.BytesIO(json.dumps(GEMINI_CONTENTS).encode()))
    assert t.format == "gemini-checkpoint"
    assert [(m.role, m.text) for m in t.messages] == [("user", "hi"), ("assistant", "yo")]


SHAREGPT = {"conversations": [{"from": "human", "value": "What is 2+2?"},
                              {"from": "gpt", "value": "4."}]}
ALPACA = {"instruction": "Add the numbers.", "input": "2 and 2", "output": "4"}
PROMPT_COMPLETION = {"prompt": "2+2=", "completion": " 4"}
CHAT_UNDER_CONVERSATIONS = {"conversations": [{"role": "user", "content": "What is 2+2?"},
                                              {"role": "assistant", "content": "4."}]}
PREFERENCE = {"prompt": "What is 2+2?", "chosen": "4.", "rejected": "5."}
PREFERENCE_CHATS = {"chosen": CHAT_UNDER_CONVERSATIONS["conversations"],
                    "rejected": [{"role": "user", "content": "What is 2+2?"},
                                 {"role": "assistant", "content": "5."}]}
PREFERRED = ("looks like preference data (`chosen` and `rejected` replies, as DPO datasets "
             "hold them)")


@pytest.mark.parametrize(("record", "said"), [
    (SHAREGPT, "looks like ShareGPT conversations (`conversations` of `from`/`value` turns)"),
    (ALPACA, "looks like Alpaca instruction data (`instruction`, `input`, `output`)"),
    (PROMPT_COMPLETION, "looks like prompt/completion pairs (`prompt`, `completion`)"),
    (CHAT_UNDER_CONVERSATIONS,
     "looks like chat messages (`role`, `content`) under `conversations`"),
    (PREFERENCE, PREFERRED),
    (PREFERENCE_CHATS, PREFERRED),
], ids=["sharegpt", "alpaca", "prompt-completion", "chat-under-conversations", "preference",
        "preference-chats"])
@pytest.mark.parametrize("layout", ["object", "array", "jsonl"])
def test_training_data_is_named_and_pointed_to_chat_messages(tmp_path, record, said,
                                                             layout) -> None:
    """Datasets of no transcript format are named, with how to make them chat messages
    ctxpack reads, whether the file holds one, an array of them, or one a line."""
    second = json.loads(json.dumps(record))
    if layout == "object":
        path, text = tmp_path / "data.json", json.dumps(record, indent=2)
    elif layout == "array":
        path, text = tmp_path / "data.json", json.dumps([record, second])
    else:
        path, text = tmp_path / "data.jsonl", json.dumps(record) + "\n" + json.dumps(second)
    path.write_text(text + "\n")
    for command in (("stats",), ("validate",), ("convert", "--to", "openai")):
        run = ctxpack(*command, str(path))
        assert_clean_error(run, 2, f"{path}:1: this {said}, which ctxpack does not read",
                           "{\"messages\": [...]} a line", "openai-conversations")
        assert "fits no transcript format" not in run.err


def test_chat_messages_under_conversations_read_once_the_key_is_messages(tmp_path) -> None:
    """What the line says to do works: the same rows with the key renamed are read."""
    rows = [CHAT_UNDER_CONVERSATIONS, {"conversations": [{"role": "user", "content": "hi"}]}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = ctxpack("stats", str(path))
    assert_clean_error(run, 2, "with the key renamed `messages`")
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text("".join(json.dumps({"messages": r["conversations"]}) + "\n"
                               for r in rows))
    t = load(renamed)
    assert t.format == "openai-conversations"
    assert [(m.role, m.text) for m in t.messages] == [
        (d["role"], d["content"]) for r in rows for d in r["conversations"]]


GEMINI_RESPONSE = {"candidates": [{"content": {"role": "model", "parts": [{"text": "yo"}]},
                                   "finishReason": "STOP", "index": 0}],
                   "usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 1,
                                     "totalTokenCount": 3},
                   "modelVersion": "gemini-2.0-flash"}


@pytest.mark.parametrize("layout", ["object", "stream-chunks", "jsonl"])
def test_a_gemini_api_response_is_named_as_a_response_not_a_request(tmp_path,
                                                                    layout) -> None:
    if layout == "object":
        text = json.dumps(GEMINI_RESPONSE, indent=2)
    elif layout == "stream-chunks":  # streamGenerateContent without SSE: an array of them
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "y"}]}}]}
        text = json.dumps([first, GEMINI_RESPONSE], indent=2)
    else:
        text = json.dumps(GEMINI_RESPONSE) + "\n" + json.dumps(GEMINI_RESPONSE) + "\n"
    path = tmp_path / ("calls.jsonl" if layout == "jsonl" else "response.json")
    path.write_text(text)
    run = ctxpack("stats", str(path))
    assert_clean_error(run, 2, f"{path}:1: this looks like a Gemini API response",
                       "without the contents it was sent", "the request body (`contents`",
                       "gemini-api")
    assert "fits no transcript format" not in run.err


def test_a_gemini_api_response_read_with_its_request_as_the_line_says() -> None:
    line = {"request": {"contents": GEMINI_CONTENTS[:1]}, "response": GEMINI_RESPONSE}
    t = load(io.BytesIO(json.dumps(line).encode() + b"\n"))
    assert t.format == "gemini-api"
    assert [(m.role, m.text) for m in t.messages] == [("user", "hi"), ("assistant", "yo")]


STORAGE = SAMPLES / "opencode-storage" / "storage"


@pytest.mark.parametrize(("folder", "said"), [
    ("message", "one message of an OpenCode storage tree"),
    ("part", "one part of a message of an OpenCode storage tree"),
])
def test_one_file_of_an_opencode_storage_tree_points_to_its_storage_folder(folder,
                                                                           said) -> None:
    one = sorted((STORAGE / folder).glob("*/*.json"))[0]
    for command in (("stats",), ("show",), ("convert", "--to", "openai")):
        run = ctxpack(*command, str(one))
        assert_clean_error(run, 2, f"{one.name}:1: this looks like {said}",
                           "give it the `storage` folder")
    # the folder it names is read, as the session it holds
    tree = ctxpack("stats", "--json", str(STORAGE))
    assert tree.code == 0 and json.loads(tree.out)["files"][0]["format"] == \
        "opencode-storage"


@pytest.mark.parametrize("folder", ["message", "part"])
def test_every_record_file_of_a_storage_tree_is_named_as_one(folder) -> None:
    # a reasoning part was taken for Responses API items (it has no `call_id`)
    kinds = set()
    for one in sorted((STORAGE / folder).glob("*/*.json")):
        kinds.add(json.loads(one.read_text()).get("type"))
        with pytest.raises(InputError) as info:
            load(one)
        assert info.value.problem.startswith(
            f"this looks like one {'part of a ' if folder == 'part' else ''}message of an "
            "OpenCode storage tree"), (one.name, info.value.problem)
    assert folder == "message" or {"reasoning", "tool", "text"} <= kinds


def test_a_storage_reasoning_part_given_alone_points_to_its_storage_folder() -> None:
    one = next(p for p in sorted((STORAGE / "part").glob("*/*.json"))
               if json.loads(p.read_text())["type"] == "reasoning")
    run = ctxpack("stats", str(one))
    assert_clean_error(run, 2, f"{one.name}:1: this looks like one part of a message of an "
                       "OpenCode storage tree", "give it the `storage` folder")
    assert "Responses" not in run.err


def test_a_storage_message_without_its_id_field_is_named_as_well() -> None:
    one = json.loads(sorted((STORAGE / "message").glob("*/*.json"))[0].read_text())
    del one["id"]  # OpenCode takes the id from the file's name
    with pytest.raises(InputError) as info:
        load(io.BytesIO(json.dumps(one, indent=2).encode()))
    assert info.value.problem.startswith("this looks like one message of an OpenCode "
                                         "storage tree")


# --- a mark another log may carry: read, but said to be unsure ----------------------------

SESSION_LINE = {"sessionId": "s1", "projectHash": "ab" * 32,
                "startTime": "2026-03-03T09:00:05.000Z", "kind": "main"}
BARE = [{"id": "1", "type": "user", "content": "hello"},
        {"id": "2", "type": "gemini", "content": "hi there"}]


def _lines(*records: dict) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_gemini_messages_without_the_session_line_are_read_but_unsure(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_bytes(_lines(*BARE))
    t = load(path)
    assert (t.format, [m.text for m in t.messages]) == ("gemini-cli", ["hello", "hi there"])
    assert "no session line (sessionId, projectHash)" in t.unsure
    run = ctxpack("stats", str(path))
    assert run.code == 0 and "format unsure" in run.out.replace("\n", " ")
    # the line the CLI opens every recording with makes it sure
    assert load(io.BytesIO(_lines(SESSION_LINE, *BARE))).unsure == ""


def test_a_recording_cut_above_its_session_line_is_sure_by_a_reply_as_the_cli_writes_it(
        ) -> None:
    reply = {**BARE[1], "timestamp": "2026-03-03T09:00:06.000Z", "model": "gemini-2.5-pro",
             "tokens": {"input": 100, "output": 5, "cached": 0, "thoughts": 0, "tool": 0,
                        "total": 105}}
    t = load(io.BytesIO(_lines({**BARE[0], "timestamp": "2026-03-03T09:00:05.000Z"}, reply)))
    assert (t.format, t.unsure) == ("gemini-cli", "")
    # a stamp alone is what many a log writes
    assert load(io.BytesIO(_lines({**BARE[1], "timestamp": reply["timestamp"]}))).unsure


def test_notices_alone_without_a_session_line_are_no_transcript(tmp_path: Path) -> None:
    path = tmp_path / "server.jsonl"
    path.write_bytes(_lines({"id": "1", "type": "info", "content": "listening on :8080",
                             "timestamp": "2026-03-03T09:00:05.000Z"},
                            {"id": "2", "type": "warning", "content": "slow request"}))
    assert_clean_error(ctxpack("stats", str(path)), 2, str(path), "no transcript")


TS_ARRAY = [{"role": "user", "content": [{"type": "text", "text": "hi"}], "ts": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "ts": 2}]


@pytest.mark.parametrize(("mark", "sure"), [
    ({}, False),
    ({0: {"content": [{"type": "text", "text": "<task>\nhi\n</task>"}]}}, True),
    ({0: {"content": [{"type": "text", "text": "hi"}, {"type": "text", "text":
                       "<environment_details>\n# VSCode Visible Files\n</environment_details>"}]}},
     True),
    ({1: {"modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic"}}}, True),
    ({1: {"condenseParent": "c1"}}, True),
], ids=["ts alone", "task", "environment details", "modelInfo", "Roo's condense link"])
def test_anthropic_messages_with_ts_are_cline_surely_only_by_more_than_ts(
        tmp_path: Path, mark: dict, sure: bool) -> None:
    doc = [{**m, **mark.get(i, {})} for i, m in enumerate(TS_ARRAY)]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(doc))
    t = load(path)
    assert t.format == "cline" and len(t.messages) == 2
    assert (t.unsure == "") == sure, t.unsure
    if not sure:
        assert "by the `ts` on its messages alone" in t.unsure
        assert "format unsure" in ctxpack("stats", str(path)).out.replace("\n", " ")


def test_a_text_guessed_headless_with_no_message_is_refused_in_its_own_words(
        tmp_path: Path) -> None:
    # an Aider log cut above its opening line, holding only a /clear: no JSON to speak of
    path = tmp_path / "tail.md"
    path.write_text("#### /clear\n\n> Tokens: 10 sent, 2 received.\n")
    assert_clean_error(ctxpack("stats", str(path)), 2,
                       "no messages: none of the file's text is a message")
    assert ctxpack("stats", "--format", "aider", str(path)).code == 0  # read when told


# --- another agent's log, or one read whole: named or read, never taken for a look-alike ---

COPILOT = [{"type": "session.start", "data": {"sessionId": "s1", "version": 1},
            "id": "e1", "timestamp": "2026-03-01T10:00:00.000Z"},
           {"type": "user.message", "data": {"content": "list the files"}, "id": "e2",
            "timestamp": "2026-03-01T10:00:01.000Z", "parentId": "e1"},
           {"type": "assistant.message", "data": {"content": "a.py and b.py"}, "id": "e3",
            "timestamp": "2026-03-01T10:00:02.000Z", "parentId": "e2"}]


@pytest.mark.parametrize("flags", [[], ["--skip-invalid"], ["--format", "anthropic-events"]])
def test_another_agents_events_are_named_not_read_as_managed_agent_events(
        tmp_path: Path, flags: list[str]) -> None:
    # GitHub Copilot CLI's events share families (session.*, user.*) with managed-agent
    # ones: taken for them, the file was refused at its third line, or read as one message
    path = tmp_path / "events.jsonl"
    path.write_bytes(_lines(*COPILOT))
    run = ctxpack("stats", *flags, str(path))
    assert_clean_error(run, 2, f"{path}:1:", "looks like an events log of another agent")
    if not flags:
        assert "ctxpack reads: " in run.err and "anthropic-events" in run.err


def test_an_event_of_another_type_among_managed_agent_events_names_its_type(
        tmp_path: Path) -> None:
    lines = (SAMPLES / "export-timeout.anthropic-events.jsonl").read_bytes().splitlines(True)
    odd = {"id": "sevt_odd", "type": "assistant.message", "content": "hi",
           "processed_at": "2026-05-12T10:00:00Z"}
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"".join([*lines[:2], json.dumps(odd).encode() + b"\n", *lines[2:]]))
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:3:",
                       "not read as anthropic-events",
                       "its type 'assistant.message' is not a managed-agent event type")


QWEN = [{"uuid": "u1", "parentUuid": None, "sessionId": "s1", "type": "user",
         "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "parts": [
             {"text": "list files please"}]}},
        {"uuid": "u2", "parentUuid": "u1", "sessionId": "s1", "type": "assistant",
         "timestamp": "2026-01-01T00:00:01Z", "model": "qwen3-coder-plus",
         "message": {"role": "model", "parts": [
             {"text": "Sure."},
             {"functionCall": {"id": "c1", "name": "list_directory", "args": {"path": "."}}}]},
         "usageMetadata": {"promptTokenCount": 12000, "candidatesTokenCount": 20}}]


@pytest.mark.parametrize("flags", [[], ["--skip-invalid"], ["--format", "claude-code"]])
def test_a_gemini_style_chat_recording_is_named_not_read_as_claude_code(
        tmp_path: Path, flags: list[str]) -> None:
    # Qwen Code links its records as Claude Code does; read as Claude Code, the text in
    # `parts` was lost and the usage ignored, with no word of doubt
    path = tmp_path / "chat.jsonl"
    path.write_bytes(_lines(*QWEN))
    assert_clean_error(ctxpack("stats", *flags, str(path)), 2, f"{path}:1:",
                       "looks like a Gemini-style chat recording")


def test_a_gemini_style_message_after_a_record_claude_code_writes_too_is_named(
        tmp_path: Path) -> None:
    # a first record without a message fits Claude Code: its reader names the first
    # message it cannot read
    note = {"uuid": "u0", "parentUuid": None, "sessionId": "s1", "type": "system",
            "subtype": "ui_telemetry"}
    path = tmp_path / "chat.jsonl"
    path.write_bytes(_lines(note, *QWEN))
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:2:",
                       "looks like a Gemini-style chat recording")


@pytest.mark.parametrize("name", ["coding-agent.claude-code.jsonl", "refactor.codex.jsonl"])
def test_an_anthropic_body_pretty_printed_is_read_as_on_one_line(
        tmp_path: Path, name: str) -> None:
    one_line = tmp_path / "body.jsonl"
    assert ctxpack("convert", str(SAMPLES / name), "--to", "anthropic", "-o",
                   str(one_line)).code == 0
    body = json.loads(one_line.read_bytes())
    pretty = tmp_path / "body.json"
    pretty.write_text(json.dumps(body, indent=2) + "\n")  # as `jq .` prints it
    a, b = stats(one_line), stats(pretty)
    assert a.format == b.format == "anthropic-requests" and not b.unsure
    assert (b.messages, b.tokens, len(b.rounds), b.steps, b.by_role) == \
        (a.messages, a.tokens, len(a.rounds), a.steps, a.by_role)
    assert ctxpack("validate", str(pretty)).code == 0


def test_a_document_of_anthropic_messages_is_read_and_an_amp_thread_is_named(
        tmp_path: Path) -> None:
    calls = [{"role": "user", "content": "list the files"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01",
                                                "name": "ls", "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01",
                                           "content": "a.py b.py"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]}]
    path = tmp_path / "thread.json"
    path.write_text(json.dumps({"id": "T-1", "messages": calls}, indent=2))
    t = load(path)
    assert (t.format, t.unsure) == ("anthropic-requests", "")
    assert [c.name for m in t.messages for c in m.tool_calls] == ["ls"]
    assert [r.call_id for m in t.messages for r in m.tool_results] == ["toolu_01"]
    # a list of messages is no request body: no body's missing model to name
    assert ctxpack("validate", str(path)).code == 0
    # Amp links a result by `toolUseID`, its output under `run`: read as the API's, the
    # output would be lost
    calls[2]["content"] = [{"type": "tool_result", "toolUseID": "toolu_01",
                            "run": {"status": "done", "result": {"output": "a.py b.py"}}}]
    path.write_text(json.dumps({"id": "T-1", "messages": calls}, indent=2))
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:1:",
                       "looks like an Amp thread")


CLINE = SAMPLES / "cline-task"
HISTORY = "api_conversation_history.json"


def _task(folder: Path, drop: tuple[str, ...], ui: bool = True) -> Path:
    """The sample Cline task copied into `folder`, its history's messages without the
    fields `drop` (older Cline wrote no `ts`), with its UI log or not."""
    folder.mkdir(parents=True)
    history = json.loads((CLINE / HISTORY).read_bytes())
    (folder / HISTORY).write_text(json.dumps(
        [{k: v for k, v in m.items() if k not in drop} for m in history]))
    if ui:
        (folder / "ui_messages.json").write_bytes((CLINE / "ui_messages.json").read_bytes())
    return folder / HISTORY


@pytest.mark.parametrize("drop", [("ts",), ("ts", "modelInfo", "metrics")],
                         ids=["no ts", "no Cline field"])
def test_an_unstamped_cline_history_is_known_by_its_task_folder(
        tmp_path: Path, drop: tuple[str, ...]) -> None:
    # older Cline stamped no message: read as json-messages (gpt-4o, each result a round),
    # the usage of its ui_messages.json left out
    path = _task(tmp_path / "task", drop)
    sample = stats(CLINE / HISTORY)
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    got = json.loads(run.out)["files"][0]
    assert (got["format"], got["format_unsure"]) == ("cline", "")
    assert got["usage"] == sample.usage and got["usage"]["source"].endswith("ui_messages.json")
    assert (got["messages"], got["tokens"], got["rounds"], got["steps"], got["by_role"]) == \
        (sample.messages, sample.tokens, len(sample.rounds), sample.steps, sample.by_role)
    # where Cline keeps its tasks (tasks/<id>/), without the UI log, as well
    kept = _task(tmp_path / "tasks" / "1779870001000", drop, ui=False)
    assert load(kept).format == "cline"


def test_an_unstamped_history_away_from_its_task_is_read_only_by_its_own_marks(
        tmp_path: Path) -> None:
    bare = _task(tmp_path / "copy", ("ts", "modelInfo", "metrics"), ui=False)
    assert "plain {role, content}" in load(bare).unsure  # nothing says it is Cline's
    marked = _task(tmp_path / "marked", ("ts",), ui=False)  # its replies' modelInfo does
    assert (load(marked).format, load(marked).unsure) == ("cline", "")


@pytest.mark.parametrize(("message", "problem"), [
    ({"role": "system", "content": "be brief"}, "message 1: role 'system', where a task's "
     "history holds user and assistant messages only"),
    ("hello", "message 1: a string, not a message object"),
    ({"content": "hello"}, "message 1: no 'role'"),
])
def test_a_cline_history_names_the_message_it_cannot_read(
        tmp_path: Path, message: object, problem: str) -> None:
    # it was read as json-messages, surely, and validate said ok; --format cline refused
    # with no reason
    path = _task(tmp_path / "task", ())
    history = json.loads(path.read_bytes())
    path.write_text(json.dumps([history[0], message, *history[2:]], indent=1))
    line = 2 + len(json.dumps(history[0], indent=1).splitlines())  # where message 1 starts
    for flags in ([], ["--format", "cline"]):
        run = ctxpack("validate", *flags, str(path))
        assert_clean_error(run, 2, f"{path}:{line}:", "not read as cline", problem)


_SERVER_SEARCH = [{"type": "text", "text": "Let me search."},
                  {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                   "input": {"query": "Paris weather"}},
                  {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                   "content": []},
                  {"type": "text", "text": "It is sunny."}]


@pytest.mark.parametrize("pretty", [False, True], ids=["one line", "pretty"])
def test_a_body_whose_only_mark_is_a_server_tool_block_is_anthropics(
        tmp_path: Path, pretty: bool) -> None:
    body = {"model": "claude-sonnet-4-5", "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": _SERVER_SEARCH}]}
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body, indent=2 if pretty else None))
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    got = json.loads(run.out)["files"][0]
    assert (got["format"], got["format_unsure"]) == ("anthropic-requests", "")
    assert got["steps"] == 1  # the server tool's call, not text Chat Completions refuses
    check = ctxpack("validate", str(path))
    assert check.code == 0, check.out + check.err


@pytest.mark.parametrize("as_body", [False, True], ids=["message lines", "request body"])
def test_a_block_neither_api_takes_is_read_as_anthropics_and_said_unsure(
        tmp_path: Path, as_body: bool) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hello"},
                                             {"type": "widget", "name": "w"}]},
                {"role": "assistant", "content": "hi"}]
    path = tmp_path / ("body.json" if as_body else "chat.jsonl")
    path.write_text(json.dumps({"model": "some-model", "messages": messages}) if as_body
                    else "".join(json.dumps(m) + "\n" for m in messages))
    run = ctxpack("stats", str(path))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert ("[anthropic-requests]" if as_body else "[anthropic]") in said
    assert "format unsure: read as Anthropic messages by content blocks of type 'widget', " \
           "which Chat Completions does not take; the Messages API does not take them " \
           "either" in said
    check = ctxpack("validate", str(path))
    assert check.code == 1
    assert "is a block of type 'widget', which the Messages API does not take" in check.out
    assert "Chat Completions does not take" not in check.out  # not read as OpenAI chat


def test_an_unstamped_cline_history_away_from_its_task_says_it_may_be_clines(
        tmp_path: Path) -> None:
    bare = _task(tmp_path / "copy", ("ts", "modelInfo", "metrics"), ui=False)
    run = ctxpack("stats", str(bare))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert "[json-messages] (format unsure: plain {role, content} messages fit several " \
           "readers, and theirs hold what Cline sends" in said
    assert "it may be a Cline / Roo Code task's history without its `ts` stamps " \
           "(--format cline reads it so))" in said
    # as it says, forced, it reads as the task's history does
    forced = stats(bare, format="cline")
    assert (forced.format, forced.messages) == ("cline", stats(CLINE / HISTORY).messages)


def test_a_text_only_amp_thread_is_read_as_chat_messages_but_said_to_be_amps(
        tmp_path: Path) -> None:
    thread = {"v": 3, "id": "T-5f0c2e8a-1b7d-4c1e-9a4f-2d6e8b0c1a3f", "created": 1760000000000,
              "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                           {"role": "assistant",
                            "content": [{"type": "text", "text": "Hello! What next?"}]}]}
    path = tmp_path / "thread.json"
    path.write_text(json.dumps(thread, indent=2))
    run = ctxpack("stats", str(path))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert "[json-messages] (format unsure: read as chat messages, though its `T-` id is " \
           "how Amp names its threads: it may be an Amp thread, whose messages are " \
           "Anthropic's (-m names its Claude model))" in said
    # a thread of another id is plain chat messages, as sure as before
    thread["id"] = "conv-1"
    path.write_text(json.dumps(thread, indent=2))
    assert "unsure" not in ctxpack("stats", str(path)).out

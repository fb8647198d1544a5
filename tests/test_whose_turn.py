"""Whose turn a user message is: the person's words open a round, text an agent writes into
user messages on its own does not, in every reader, and so in what `convert` makes of a
file (its output, read back as the API's messages, has the rounds of its source)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from .conftest import SAMPLES, corpus_files
from .helpers import ctxpack
from .test_format_claude_code import calls, piece, said, user


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def rounds(*paths: Path) -> list[int]:
    run = ctxpack("stats", "--json", *map(str, paths))
    assert run.code == 0, run.err
    return [f["rounds"] for f in json.loads(run.out)["files"]]


def rounds_converted(path: Path, tmp_path: Path) -> list[int]:
    """The rounds of `path`, then of its openai and its anthropic conversion."""
    outs = []
    for to in ("openai", "anthropic"):
        out = tmp_path / f"{path.stem}.{to}.jsonl"
        run = ctxpack("convert", str(path), "--to", to, "-o", str(out))
        assert run.code == 0, run.err
        outs.append(out)
    return rounds(path, *outs)


NOTICE = ("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
          "</task-notification>\nRead the output file to retrieve the result: tasks/b1.output")
REMINDER = "<system-reminder>\nThe todo list is empty.\n</system-reminder>"
CODEX_NOTE = "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"
# a call of ls and its result, as Chat Completions messages
LISTED = [{"role": "assistant", "content": None, "tool_calls": [
              {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}]


def test_claude_code_notices_and_hook_feedback_are_no_rounds(tmp_path):
    # a background task's notice and a stop hook's feedback, neither after a tool result
    path = _write(tmp_path / "s.jsonl", [
        user("u1", None, "Run the tests in the background."),
        piece("a1", "u1", "m1", said("Started.")),
        user("n1", "a1", NOTICE),
        piece("a2", "n1", "m2", said("They passed.")),
        user("h1", "a2", "Stop hook feedback:\n[stop.sh]: Uncommitted changes detected."),
        piece("a3", "h1", "m3", said("Committed."))])
    assert rounds_converted(path, tmp_path) == [1, 1, 1]


def test_a_reminder_beside_a_tool_result_is_no_round(tmp_path):
    """Claude Code's API shape: a tool result and a reminder in one user message."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [calls("c1")]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "a.py"},
            said(REMINDER)]},
        {"role": "assistant", "content": [said("One file: a.py.")]}]}
    log = _write(tmp_path / "s.jsonl", [
        user("u1", None, "List the files."),
        piece("a1", "u1", "m1", calls("c1")),
        user("r1", "a1", [{"tool_use_id": "c1", "type": "tool_result", "content": "a.py"},
                          said(REMINDER)]),
        piece("a2", "r1", "m2", said("One file: a.py."))])
    assert rounds(_write(tmp_path / "body.json", [body]), log) == [1, 1]
    assert rounds_converted(log, tmp_path) == [1, 1, 1]


def test_the_persons_words_after_an_agents_note_stay_a_round(tmp_path):
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": f"{REMINDER}\nNow run the linter."},
        {"role": "assistant", "content": "Linted."},
        {"role": "user", "content": "[Request interrupted by user]\nStop, use ruff."},
        {"role": "assistant", "content": "Using ruff."}])
    assert rounds_converted(chat, tmp_path) == [3, 3, 3]


AGENTS, PERSONS = 1, 2  # the rounds of the chat below: a second message of either


@pytest.mark.parametrize(("then", "rounds"), [
    # text agents write into user messages on their own
    ("[TASK RESUMPTION] This task was interrupted 2 minutes ago.", AGENTS),
    ("[ERROR] You did not use a tool in your previous response! Please retry with a tool "
     "use.", AGENTS),
    ("[replace_in_file for 'src/app.ts'] Result:\nThe content was saved.", AGENTS),
    ("<environment_details>\n# Current Time\n5/1/2025\n</environment_details>", AGENTS),
    ("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>Use uv.</INSTRUCTIONS>", AGENTS),
    (CODEX_NOTE, AGENTS),
    ("<session_context>\nThe date is 5/1/2025.\n</session_context>", AGENTS),
    ("344\n\n(Open file: n/a)\n(Current directory: /repo)\nbash-$", AGENTS),
    # a message of nothing but a reminder block is the agent's, a pasted one too (Claude
    # Code writes them; a paste is told from them by nothing, in the file or converted);
    # with the person's words before or after it, the message is theirs
    (REMINDER, AGENTS),
    (f"Why does this show?\n{REMINDER}", PERSONS),
    (f"{REMINDER}\nWhy is the list empty?", PERSONS),
    # datasets and people wrap a prompt in a tag of one word: that is no agent's block
    ("<document>\nQ3 revenue rose 4%.\n</document>", PERSONS),
    ("<question>What is the capital of Peru?</question>", PERSONS),
    ("[ERROR] in my build: what does E0382 mean?", PERSONS),
    ("[foo] Result: what does this mean?", PERSONS),
    # the labels convert writes before a late system message are its own, as written
    ("[System]\nFrom now on, answer in French.", PERSONS),
    ("[developer]\nWhich role should my API key have?", PERSONS),
])
def test_a_second_user_message_opens_a_round_if_it_is_the_persons(tmp_path, then, rounds):
    # the rounds of a chat of two user messages, each answered, and of its openai and
    # anthropic conversion
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "<task>\nAdd a test.\n</task>"},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": then}, {"role": "assistant", "content": "Done."}])
    assert rounds_converted(chat, tmp_path) == [rounds] * 3


def titles(path: Path) -> list[str]:
    """The title `show` gives each round of `path` (on a line wide enough for all of it)."""
    run = ctxpack("show", "--no-pager", str(path), env={"COLUMNS": "400"})
    assert run.code == 0, run.err
    return [m.group(1) for m in re.finditer(r"^round \d+  (.+?)\s{2,}\d", run.out, re.M)]


def titles_converted(path: Path, tmp_path: Path) -> list[list[str]]:
    """The round titles of `path`, then of its openai and its anthropic conversion."""
    rounds_converted(path, tmp_path)
    return [titles(p) for p in (path, *(tmp_path / f"{path.stem}.{to}.jsonl"
                                       for to in ("openai", "anthropic")))]


def test_the_persons_turns_merged_into_one_anthropic_message_keep_their_rounds(tmp_path):
    # the Messages API takes no two user messages in a row: the person's words after a
    # tool result, or after a note the agent sent, go into one message with them
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "List the files."},
        *LISTED,
        {"role": "user", "content": "Delete b.py."},
        {"role": "assistant", "content": "Deleted."},
        {"role": "user", "content": CODEX_NOTE},
        {"role": "user", "content": "Now commit."},
        {"role": "assistant", "content": "Committed."}])
    assert rounds_converted(chat, tmp_path) == [3, 3, 3]
    asked = ["List the files.", "Delete b.py.", "Now commit."]
    assert titles_converted(chat, tmp_path) == [asked, asked, asked]
    body = json.loads((tmp_path / "chat.anthropic.jsonl").read_text())
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 2 + ["user"]


def _messages_of(body: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The messages of a one-body file, one a line and as one JSON array."""
    messages = json.loads(body.read_text())["messages"]
    array = tmp_path / "messages.json"
    array.write_text(json.dumps(messages, indent=1))
    return _write(tmp_path / "messages.jsonl", messages), array


def test_the_persons_messages_in_a_row_keep_their_rounds_in_every_anthropic_shape(tmp_path):
    # two messages of the person's with no reply between are one turn of the Messages API:
    # convert labels the second, and every reader of Anthropic messages (a request body,
    # one a line, an array) reads it back as its own round; as does a message opening
    # with a label an older convert wrote, which convert labels too
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "Fix the failing test."},
        {"role": "user", "content": "Also add one for empty input."},
        *LISTED,
        {"role": "user", "content": [{"type": "text", "text": "Use b.py."},
                                     {"type": "image_url", "image_url": {
                                         "url": "https://example.com/trace.png"}}]},
        {"role": "user", "content": [{"type": "image_url", "image_url": {
            "url": "https://example.com/second.png"}}]},
        {"role": "assistant", "content": "Fixed."},
        {"role": "user", "content": "[developer]\nWhich role should my key have?"},
        {"role": "user", "content": CODEX_NOTE},
        {"role": "user", "content": "And which region?"},
        {"role": "assistant", "content": "Admin."}])
    converted = tmp_path / "chat.anthropic.jsonl"
    run = ctxpack("convert", str(chat), "--to", "anthropic", "-o", str(converted))
    assert run.code == 0, run.err
    assert "3 messages of the person's opened with [the person's message]" in run.err
    shapes = [chat, converted, *_messages_of(converted, tmp_path)]
    # (the fourth round opens with an image, titled as show titles one)
    asked = ["Fix the failing test.", "Also add one for empty input.", "Use b.py.",
             "[developer]", "And which region?"]
    found = [titles(p) for p in shapes]
    assert [len(t) for t in found] == [6] * 4
    assert [t[:3] + t[4:] for t in found] == [asked] * 4
    body = json.loads(converted.read_text())
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert rounds(*shapes) == [6] * 4
    assert ctxpack("validate", str(converted)).code == 0


@pytest.mark.parametrize("stream", [False, True], ids=["messages", "stream-json"])
def test_a_file_opening_on_two_turns_of_the_persons_is_summarized_and_restored(
        tmp_path, stream):
    # the task and a second message of the person's, joined by alternation into the first
    # line (as convert labels the second): the summary joins that line (Messages API
    # lines) or follows it written again after the boundary (stream-json), the line
    # written once whole, and the file reads back with both rounds
    output = "\n".join(f"line {k}: all good" for k in range(400))
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        said("Fix the failing test."),
        said("[the person's message]\nAlso add one for empty input.")]}]
    for k in range(12):
        messages += [{"role": "assistant", "content": [calls(f"t{k}")]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                   "content": output}]}]
    messages.append({"role": "assistant", "content": [said("Both done.")]})
    path = _write(tmp_path / "run.jsonl", [
        {"type": m["role"], "message": m, "parent_tool_use_id": None, "session_id": "s"}
        if stream else m for m in messages])
    out, back = tmp_path / "out.jsonl", tmp_path / "back.jsonl"
    run = ctxpack("compress", str(path), "--budget", "8000", "-o", str(out),
                  "--report-json", "-")
    assert run.code == 0, run.err
    report = json.loads(run.out)
    assert report["summary"]["messages"] > 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    task = [r.get("message", r)["content"] for r in records
            if "Fix the failing test." in json.dumps(r)]
    assert [[b["text"].split("\n")[0] for b in content] for content in task] == [
        ["Fix the failing test.", "[the person's message]",
         *([] if stream else ["## Archived Session Summary"])]]
    assert ctxpack("validate", str(out)).code == 0
    stats = json.loads(ctxpack("stats", "--json", str(out)).out)["files"][0]
    assert stats["tokens"] == report["tokens_after"] < report["tokens_before"]
    assert titles(out) == ["Fix the failing test.", "Also add one for empty input."]
    assert ctxpack("restore", str(out), "-o", str(back)).code == 0
    assert back.read_bytes() == path.read_bytes()


def test_a_body_an_older_convert_wrote_keeps_its_labels_the_agents(tmp_path):
    # older versions labelled a late system or developer message, and a result answering no
    # call, `[system]`, `[developer]`, `[result of tool call ID]`: in a request body, where
    # convert wrote them, they are no turn of the person's; elsewhere a person may type them
    body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": "You are an agent.",
            "messages": [
                {"role": "user", "content": "Apply for the grant."},
                {"role": "assistant", "content": [said("Reading the form.")]},
                {"role": "user", "content": [
                    said("[developer]\nApproved command prefix saved: Get-Content"),
                    said("[result of tool call c9]\nform.pdf")]},
                {"role": "assistant", "content": [said("Filled in.")]},
                {"role": "user", "content": [said("[system]\nAnswer in French.")]},
                {"role": "assistant", "content": [said("Envoyé.")]},
                {"role": "user", "content": "Thanks."}]}
    path = _write(tmp_path / "old.jsonl", [body])
    assert titles(path) == ["before the person's first message", "Apply for the grant.",
                            "Thanks."]
    lines, _ = _messages_of(path, tmp_path)
    assert len(titles(lines)) == 4  # one a line, as a person may write them: theirs


def test_the_persons_words_after_an_older_label_are_a_round_of_theirs_titled_by_them(tmp_path):
    # an older convert sent a late system message as labelled user text, and the
    # alternation joined the person's next message to it: their words open a round of
    # their own, titled by them in show and stats alike (the label's round is the one
    # before)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "messages": [
        {"role": "user", "content": "Apply for the grant."},
        {"role": "assistant", "content": [said("Filled in.")]},
        {"role": "user", "content": [said("[system]\nAnswer in French."),
                                     said("Now write the cover letter.")]},
        {"role": "assistant", "content": [said("Voici la lettre.")]}]}
    path = _write(tmp_path / "old.jsonl", [body])
    asked = ["Apply for the grant.", "Now write the cover letter."]
    assert titles(path) == asked
    run = ctxpack("stats", "--json", str(path))
    found = json.loads(run.out)["files"][0]["round_tokens"]
    assert [r["title"] for r in found] == asked
    # the label is counted in the round it was sent in, not in the person's
    assert [r["messages"] for r in found] == [3, 2]


def test_roos_plain_message_after_a_condense_is_the_persons(tmp_path):
    # Roo Code condenses in place: the messages before its summary are archived, and the
    # person's next message, plain as the task was, opens the condensed context's round
    history = [
        {"role": "user", "content": [said("<task>\nPort the parser.\n</task>")], "ts": 1,
         "condenseParent": "c1"},
        {"role": "assistant", "content": [said("Ported the lexer.")], "ts": 2,
         "condenseParent": "c1"},
        {"role": "user", "content": [said("The parser is ported up to the lexer.")], "ts": 3,
         "isSummary": True, "condenseId": "c1"},
        {"role": "assistant", "content": [said("Porting the rest.")], "ts": 4},
        {"role": "user", "content": [said("Now port the printer too.")], "ts": 5},
        {"role": "assistant", "content": [said("Ported.")], "ts": 6}]
    task = tmp_path / "task"
    task.mkdir()
    (task / "api_conversation_history.json").write_text(json.dumps(history))
    assert titles(task) == ["before the person's first message", "Now port the printer too."]
    assert rounds(task) == [2]  # the summary's, the person's


IDE = ("<ide_opened_file>The user opened the file src/app.ts in the IDE. This may or may "
       "not be related to the current task.</ide_opened_file>")


@pytest.mark.parametrize(("records", "asked"), [
    # a round's title is the person's words, not the IDE's note before them
    ([user("u1", None, "Write the contract."), piece("a1", "u1", "m1", said("Written.")),
      user("u2", "a1", [said(IDE), said("Deploy it.")]),
      piece("a2", "u2", "m2", said("Deployed."))],
     ["Write the contract.", "Deploy it."]),
    # a log opening with the assistant: an Anthropic body must open on the user's turn,
    # and the line convert adds there is its own, no turn of the person's
    ([{"role": "assistant", "content": "How can I help?"},
      {"role": "user", "content": "Rename the module."},
      {"role": "assistant", "content": "Renamed."}],
     ["before the person's first message", "Rename the module."]),
], ids=["ide-note", "opens-with-assistant"])
def test_a_rounds_titles_are_the_persons_words_in_the_file_and_its_conversions(
        tmp_path, records, asked):
    path = _write(tmp_path / "log.jsonl", records)
    assert titles_converted(path, tmp_path) == [asked, asked, asked]


def test_a_cline_rounds_title_is_the_persons_words_inside_clines_wrapper(tmp_path):
    # Cline wraps the task, feedback on a completion, an answer to its question and the
    # words sent on resuming in tags and notes of its own: the titles were `<task>`,
    # `[attempt_completion] Result:` and `[TASK RESUMPTION] This task was…`
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "user", "content": "<task>\nAdd a test.\n</task>"},
        {"role": "assistant", "content": "Which file?"},
        {"role": "user", "content": "[ask_followup_question for 'Which file?'] Result:\n"
                                    "<answer>\ntest/parse.py\n</answer>"},
        {"role": "assistant", "content": "Added."},
        {"role": "user", "content": "[attempt_completion] Result:\nThe user has provided "
                                    "feedback on the results.\n<feedback>\nRun it too.\n"
                                    "</feedback>"},
        {"role": "assistant", "content": "It passes."},
        {"role": "user", "content": "[TASK RESUMPTION] This task was interrupted 2 minutes "
                                    "ago.\n\nNew instructions for task continuation:\n"
                                    "<user_message>\nNow commit.\n</user_message>"},
        {"role": "assistant", "content": "Committed."}])
    asked = ["Add a test.", "test/parse.py", "Run it too.", "Now commit."]
    assert titles_converted(chat, tmp_path) == [asked, asked, asked]
    task = SAMPLES / "cline-task"
    first, second = titles(task)
    assert first.startswith("The CSV export writes `undefined` for empty cells.")
    assert second == "Can you add a test for a grid with an unpainted cell?"
    doc = ctxpack("convert", str(task), "--to", "markdown")
    assert "## Round 2: Can you add a test for a grid with an unpainted cell?" in doc.out


def test_a_file_and_its_conversion_number_their_rounds_alike(tmp_path):
    # a compaction's summary before the person's first words is round 0 in every form
    sample = SAMPLES / "coding-agent.claude-code.jsonl"
    rounds_converted(sample, tmp_path)
    for path in (sample, *(tmp_path / f"{sample.stem}.{to}.jsonl"
                           for to in ("openai", "anthropic"))):
        run = ctxpack("show", "--no-pager", "--round", "0", str(path))
        assert run.code == 0, run.err
        assert re.search(r"^round 0  before the person's first message", run.out, re.M)
        assert "This session is being continued" in run.out
        numbers = [int(n) for n in re.findall(r"^round (\d+)  ", ctxpack(
            "show", "--no-pager", str(path)).out, re.M)]
        assert numbers == [0, 1], path


def _corpus(name: str) -> list[Any]:
    found = [pytest.param(p, id=p.name) for p in corpus_files(pattern=name)]
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="corpus not found"))]


@pytest.mark.corpus
@pytest.mark.parametrize("path", [
    *_corpus("posthog-impact-dashboard__claude-session.jsonl"),
    *_corpus("solsmile__claude-session.jsonl"),
    *_corpus("spotter__tool_heavy.jsonl"),
    *_corpus("raze__codex-session.jsonl"),
    *_corpus("personal_finance__gemini_session.json"),
    *_corpus("cline-xray__task_sample__ui_messages.json"),
    *_corpus("openhands__runtime_trajs_basic_gui_mode.json"),
    *_corpus("openhands__multi_swe_bench_example_output.jsonl")])
def test_corpus_files_convert_with_their_rounds(path, tmp_path):
    # each of the person's turns the Messages API merged with a result, a note or another
    # of theirs is read back as theirs
    source, openai, anthropic = titles_converted(path, tmp_path)
    assert openai == source
    assert persons_rounds(anthropic) == persons_rounds(source)


PREAMBLE = "before the person's first message"


def persons_rounds(found: list[str]) -> list[str]:
    """Round titles past the preamble: notes an agent sent alone before the person's first
    words join them in an Anthropic body, as in a message the agent sends so (Claude
    Code's first), and no reader tells the two apart."""
    return found[1:] if found[:1] == [PREAMBLE] else found


# each sample transcript: a file, or a folder read as one (a Cline task, OpenCode's storage)
_FOLDERS = ("cline-task", "opencode-storage")
_SAMPLE_PATHS = sorted([SAMPLES / "cline-task", SAMPLES / "opencode-storage" / "storage", *(
    p for p in SAMPLES.rglob("*") if p.suffix in (".json", ".jsonl", ".md")
    and p.name != "README.md" and p.relative_to(SAMPLES).parts[0] not in _FOLDERS)])


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in _SAMPLE_PATHS])
def test_samples_convert_to_anthropic_with_their_rounds(path, tmp_path):
    out = tmp_path / "converted.jsonl"
    run = ctxpack("convert", str(path), "--to", "anthropic", "-o", str(out))
    assert run.code == 0, run.err
    assert persons_rounds(titles(out)) == persons_rounds(titles(path))


@pytest.mark.corpus
@pytest.mark.parametrize("path", _corpus("swe-agent__gpt4__pydicom-1458.traj"))
def test_swe_agent_observations_are_no_rounds(path, tmp_path):
    # the preamble (system prompt, demonstration) and the one issue to solve: the
    # commands' output the agent sends back is no turn of the person's
    assert rounds_converted(path, tmp_path) == [2, 2, 2]


def by_role(path: Path) -> dict[str, int]:
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    return json.loads(run.out)["files"][0]["by_role"]


def test_swe_agent_observations_count_as_tool_output(tmp_path):
    # SWE-agent sends a command's output back as a user message, answering no call: it is
    # the tool's, in the file and in what convert makes of it, not the person's
    issue = ("We're currently solving the following issue within our repository.\nISSUE:\n"
             "TimeDelta rounds 345 ms down to 344.\n\n(Open file: n/a)\n"
             "(Current directory: /repo)\nbash-$")
    run = [{"role": "system", "content": "You are an autonomous programmer."},
           {"role": "user", "content": issue}]
    observed = [*run,
                {"role": "assistant", "content": "Reproduce it.\n```\npython repro.py\n```"},
                {"role": "user", "content": "344\n\n(Open file: n/a)\n"
                                            "(Current directory: /repo)\nbash-$"},
                {"role": "assistant", "content": "Fix the rounding.\n```\nsubmit\n```"}]
    alone = tmp_path / "issue.traj"
    alone.write_text(json.dumps({"history": run}))
    path = tmp_path / "run.traj"
    path.write_text(json.dumps({"history": observed}))
    out = tmp_path / "run.openai.jsonl"
    assert ctxpack("convert", str(path), "--to", "openai", "-o", str(out)).code == 0
    # the same messages in an Anthropic file, one a line: the file's shape says the same
    lines = _write(tmp_path / "run.anthropic.jsonl", [
        {"role": m["role"], "content": m["content"]} for m in observed[1:]])
    issue_only = _write(tmp_path / "issue.anthropic.jsonl", [
        {"role": "user", "content": issue}])
    for roles in (by_role(path), by_role(out)):
        assert roles["user"] == by_role(alone)["user"]  # the issue's only
        assert roles["tool"] > 0
    roles = by_role(lines)
    assert roles["user"] == by_role(issue_only)["user"] and roles["tool"] > 0


def test_a_late_system_message_written_as_user_text_is_no_round(tmp_path):
    # the Messages API takes system text only before the first turn: convert writes a
    # later one as user text, which reads back as no turn of the person's
    chat = _write(tmp_path / "chat.jsonl", [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Apply for the grant."},
        {"role": "assistant", "content": "Reading the form."},
        {"role": "developer", "content": "Approved command prefix saved: Get-Content"},
        {"role": "assistant", "content": "Done."}])
    assert rounds_converted(chat, tmp_path) == [2, 2, 2]  # the system prompt's, the person's

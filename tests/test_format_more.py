"""Aider, Cline / Roo Code, OpenCode and OpenHands: detection, lossless round trips, the
usage each file records, tool results counted as tool, and compress refusing cleanly."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack.breakdown import stats
from ctxpack.calibration import prompt_sizes
from ctxpack.checks import validate
from ctxpack.formats.aider import REASONING_TAG
from ctxpack.loader import load, write
from ctxpack.tokens import REPLY_PRIMING, TokenCounter
from ctxpack.transcript import Thinking, ToolCall

from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, ctxpack

CLINE = SAMPLES / "cline-task"
AIDER = SAMPLES / "aider" / "unit-conversions.aider.chat.history.md"
ARCHITECT = SAMPLES / "aider" / "architect-lint.aider.chat.history.md"
OPENCODE = SAMPLES / "opencode" / "book-search.opencode.json"
OPENHANDS = SAMPLES / "openhands" / "env-flags.openhands.jsonl"
SAMPLE_FORMATS = [(AIDER, "aider"), (ARCHITECT, "aider"),
                  (CLINE / "api_conversation_history.json", "cline"),
                  (CLINE / "ui_messages.json", "cline-ui"), (OPENCODE, "opencode"),
                  (OPENHANDS, "openhands")]
CORPUS_FORMATS = {"aider": "aider", "cline": "cline-ui", "opencode": "opencode",
                  "openhands": "openhands"}


def roundtrip(data: bytes) -> bytes:
    out = io.BytesIO()
    write(load(io.BytesIO(data)), out)
    return out.getvalue()


def stats_of(path) -> dict:
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    return json.loads(run.out)["files"][0]


@pytest.mark.parametrize(("path", "fmt"), SAMPLE_FORMATS, ids=lambda v: getattr(v, "name", v))
def test_samples_are_detected_round_trip_and_validate(path, fmt, tmp_path):
    t = load(path)
    assert t.format == fmt
    assert t.messages
    target = tmp_path / path.name
    write(t, target)
    assert target.read_bytes() == path.read_bytes()
    assert validate(t) == []  # the OpenHands run ends in `finish`, answered by no result


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(*CORPUS_FORMATS, pattern="*.*"))
def test_corpus_files_are_detected_and_round_trip(path, tmp_path):
    t = load(path)
    assert t.format == CORPUS_FORMATS[path.parent.name]
    target = tmp_path / path.name
    write(t, target)
    assert target.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("path", [OPENCODE, OPENHANDS, CLINE / "api_conversation_history.json",
                                  CLINE / "ui_messages.json"], ids=lambda p: p.name)
def test_tool_results_count_as_tool(path, exact_tokens):
    f = stats_of(path)
    assert f["by_role"]["tool"] > 0
    t = load(path)
    # the person typed little: no tool output is counted under user
    assert all(not m.tool_results for m in t.messages if m.role == "user")


def _opencode_recorded(doc: dict) -> tuple[int, int]:
    tokens = doc["info"]["tokens"]
    return (tokens["input"] + tokens["cache"]["read"] + tokens["cache"]["write"],
            tokens["output"])


@pytest.mark.corpus
@pytest.mark.parametrize("path", [*corpus_params("opencode", pattern="*.json"),
                                  pytest.param(OPENCODE, id="sample")])
def test_opencode_usage_matches_the_session_totals(path):
    doc = json.loads(path.read_bytes())
    usage = load(path).usage
    assert (usage["input_tokens"], usage["output_tokens"]) == _opencode_recorded(doc)
    assert usage["reasoning_tokens"] == doc["info"]["tokens"]["reasoning"]


@pytest.mark.corpus
@pytest.mark.parametrize("path", [*corpus_params("openhands", pattern="*.jsonl"),
                                  pytest.param(OPENHANDS, id="sample")])
def test_openhands_usage_matches_the_accumulated_usage(path):
    runs = [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    t = load(path)
    assert t.usage["input_tokens"] == sum(
        r["metrics"]["accumulated_token_usage"]["prompt_tokens"] for r in runs)
    assert t.usage["output_tokens"] == sum(
        r["metrics"]["accumulated_token_usage"]["completion_tokens"] for r in runs)
    assert {m.conversation for m in t.messages} == set(range(len(runs)))


def _cline_recorded(ui_path) -> tuple[int, int, float]:
    reqs = [json.loads(e["text"]) for e in json.loads(ui_path.read_bytes())
            if e.get("say") == "api_req_started"]
    return (sum(r["tokensIn"] + r["cacheReads"] + r["cacheWrites"] for r in reqs),
            sum(r["tokensOut"] for r in reqs), sum(r["cost"] for r in reqs))


@pytest.mark.corpus
@pytest.mark.parametrize("path", [*corpus_params("cline", pattern="*.json"),
                                  pytest.param(CLINE / "ui_messages.json", id="sample")])
def test_cline_ui_usage_matches_the_requests(path):
    usage = load(path).usage
    tokens_in, tokens_out, cost = _cline_recorded(path)
    assert (usage["input_tokens"], usage["output_tokens"]) == (tokens_in, tokens_out)
    assert usage["cost_usd"] == pytest.approx(cost, abs=1e-5)


def test_cline_history_reads_its_usage_from_the_sibling_ui_log(tmp_path):
    t = load(CLINE / "api_conversation_history.json")
    tokens_in, tokens_out, _ = _cline_recorded(CLINE / "ui_messages.json")
    assert (t.usage["input_tokens"], t.usage["output_tokens"]) == (tokens_in, tokens_out)
    alone = tmp_path / "api_conversation_history.json"
    alone.write_bytes((CLINE / "api_conversation_history.json").read_bytes())
    usage = load(alone).usage  # no ui_messages.json beside it: the messages' own metrics
    assert usage["source"].startswith("metrics of each assistant message")
    assert (usage["input_tokens"], usage["output_tokens"]) == (tokens_in, tokens_out)
    history = json.loads(alone.read_bytes())
    for m in history:
        m.pop("metrics", None)
    alone.write_text(json.dumps(history))
    assert load(alone).usage == {}  # nothing recorded anywhere


def test_cline_text_results_become_tool_results_and_feedback_is_human():
    t = load(CLINE / "api_conversation_history.json")
    tool = [m for m in t.messages if m.role == "tool"]
    assert len(tool) == 4 and all(m.text.startswith("[") for m in tool)
    humans = [m.text for m in t.messages if m.human]
    assert len(humans) == 2 and "<task>" in humans[0] and "<feedback>" in humans[1]


def test_roo_condensed_messages_are_archived_not_context():
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nport it\n</task>"}],
         "ts": 1},
        {"role": "assistant", "content": [{"type": "text", "text": "old reply"}], "ts": 2,
         "condenseParent": "c1"},
        {"role": "user", "content": [{"type": "text", "text": "old question"}], "ts": 3,
         "condenseParent": "c1"},
        {"role": "user", "content": [{"type": "text", "text": "summary of the work"}], "ts": 4,
         "isSummary": True, "condenseId": "c1"},
        {"role": "assistant", "content": [{"type": "text", "text": "next"}], "ts": 5,
         "condenseParent": "gone"},  # its summary is not in the file: still context
    ]
    data = json.dumps(history, indent=1).encode()
    t = load(io.BytesIO(data))
    assert t.format == "cline"
    assert [m.text for m in t.messages] == ["<task>\nport it\n</task>", "summary of the work",
                                            "next"]
    assert [m.text for m in t.outside] == ["old reply", "old question"]
    assert not t.messages[1].human
    assert roundtrip(data) == data


def test_aider_runs_clear_and_edit_blocks():
    t = load(AIDER)
    # the first run's messages before /clear are no longer context; /add, /run are Aider's
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant"]
    assert [m.conversation for m in t.messages] == [0, 0, 1, 1]
    assert len(t.outside) == 4
    edit = t.messages[1].text
    assert ">>>>>>> REPLACE" in edit and "Tokens:" not in edit
    assert t.model == "anthropic/claude-sonnet-4-5"


def test_aider_reasoning_is_outside_the_context_as_aider_strips_it():
    t = load(ARCHITECT)
    # the tagged reasoning of each reply: its own message, outside the context
    assert [type(p) for m in t.outside for p in m.parts] == [Thinking, Thinking]
    assert t.outside[0].text.startswith("The total sums `line.price` only.")
    assert all("thinking-content" not in m.text for m in (*t.messages, *t.sidechain))
    reply = t.messages[1]
    assert reply.text.startswith("Change `Cart.total()`") and reply.lines == (17,)
    doc = stats_of(ARCHITECT)
    assert "reasoning, which Aider does not send back" in doc["outside"]["why"]


def test_aider_editor_turns_are_a_sidechain_and_lint_errors_a_user_message():
    t = load(ARCHITECT)
    # the editor's prompt (a copy of the architect's answer), its edit, the lint errors
    # the person let Aider send, and the edit that fixes them
    assert [(m.role, m.human) for m in t.sidechain] == [
        ("user", False), ("assistant", False), ("user", False), ("assistant", False)]
    assert t.sidechain[0].text == t.messages[1].text
    lint = t.sidechain[2].text
    assert lint.startswith("# Fix any errors below, if possible.")
    assert "F821 undefined name 'Decimal'" in lint and not lint.endswith("[Yes]: y")
    # the person's prompts only; `Add file to the chat?` answered by "skip" is not one
    assert [m.text[:20] for m in t.messages if m.role == "user"] == [
        "`Cart.total()` ignor", "Is the discount appl", "Write a docstring fo"]


def test_aider_a_confirmation_aider_answers_itself_is_no_prompt(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text("# aider chat started at 2026-01-01 10:00:00\n\n#### explain a.py  \n\n"
                    "It prints.\n\n> a.py  \n\n#### Add file to the chat? (Y)es/(N)o/(A)ll/"
                    "(S)kip all/(D)on't ask again [Yes]: all  \n> Add file to the chat? "
                    "(Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: a  \n")
    assert [m.text for m in load(path).messages] == ["explain a.py", "It prints."]


# a reply with headings of Aider's prompt level, as Aider writes it: each line of a prompt
# ends with a Markdown line break (two spaces) and follows a blank line
HEADINGS = ("# aider chat started at 2026-01-01 10:00:00\n\n"
            "> Main model: gpt-4o with diff edit format  \n\n"
            "#### plan the refactor  \n\n"
            "Here is the plan:\n\n#### Step 1\n\nMove the parser.\n\n#### Step 2\n\n"
            "Test it.\n\n> Tokens: 1.2k sent, 40 received.  \n\n"
            "#### go on  \n\n#### Step 3\n\nDone.\n\n")


def test_aider_headings_in_a_reply_are_not_the_persons_prompts(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(HEADINGS)
    t = load(path)
    assert [(m.role, m.text.split("\n")[0]) for m in t.messages] == [
        ("user", "plan the refactor"), ("assistant", "Here is the plan:"),
        ("user", "go on"), ("assistant", "#### Step 3")]
    assert "#### Step 2\n\nTest it." in t.messages[1].text
    assert stats_of(path)["rounds"] == 2  # (was 5: each heading a prompt of its own)
    assert roundtrip(path.read_bytes()) == path.read_bytes()


def test_aider_headings_in_a_file_that_lost_its_trailing_spaces(tmp_path):
    """With no line break to tell them, a `####` line within reply text is the reply's, and
    so is one right after a prompt (Aider logs the reply next: a reply opening on a
    heading); one after Aider's own lines, the person's."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(re.sub(r" +\n", "\n", HEADINGS))
    assert [(m.role, m.text.split("\n")[0]) for m in load(path).messages] == [
        ("user", "plan the refactor"), ("assistant", "Here is the plan:"),
        ("user", "go on"), ("assistant", "#### Step 3")]
    kept = tmp_path / "kept.md"
    kept.write_text(HEADINGS)  # read as the file that keeps its breaks is
    assert stats_of(path)["round_tokens"] == stats_of(kept)["round_tokens"]
    # two blank lines after a reply, as Aider leaves them where no `>` line follows it,
    # and the next `####` line is a prompt
    path.write_text(HEADINGS.replace("\n\n> Tokens: 1.2k sent, 40 received.  \n", "\n\n"))
    assert [m.role for m in load(path).messages] == ["user", "assistant", "user", "assistant"]
    path.write_text(re.sub(r" +\n", "\n", path.read_text()))
    assert [m.text for m in load(path).messages if m.role == "user"] == [
        "plan the refactor", "go on"]


@pytest.mark.parametrize("breaks", ["  ", ""])
def test_aider_logs_the_prompt_an_ask_sends_again_and_it_is_one_prompt(tmp_path, breaks):
    # `/ask why?` runs a chat of its own with the question, and Aider logs the question
    # again as it sends it: one prompt of the person's, whose reply may open on a heading
    # (the person asking the same again later is another)
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(f"# aider chat started at 2026-01-01 10:00:00\n\n#### /ask Why does "
                    f"it fail?{breaks}\n\n#### Why does it fail?{breaks}\n\n#### Cause\n\n"
                    "A stale cache.\n\n> Tokens: 1.2k sent, 40 received.  \n\n"
                    f"#### /ask And the fix?{breaks}\n\n#### And the fix?{breaks}\n\n"
                    "Clear it.\n\n> Tokens: 1.3k sent, 5 received.  \n\n"
                    f"#### And the fix?{breaks}\n\nAs I said: clear it.\n")
    assert [(m.role, m.text.split("\n")[0]) for m in load(path).messages] == [
        ("user", "Why does it fail?"), ("assistant", "#### Cause"),
        ("user", "And the fix?"), ("assistant", "Clear it."),
        ("user", "And the fix?"), ("assistant", "As I said: clear it.")]
    assert stats_of(path)["rounds"] == 3


def test_aider_calls_are_the_chats_and_each_run_is_anchored_on_its_own():
    t = load(ARCHITECT)
    # the architect's and the last run's calls: the editor's are of another prompt
    assert [(c.billed, t.messages[c.prompt].conversation) for c in t.calls] == [
        (6100, 0), (6400, 0), (5200, 1)]
    assert all(t.messages[c.prompt].role == "assistant" for c in t.calls)
    s = stats(ARCHITECT, cache=False)
    assert s.conversations == 2 and s.largest_conversation is not None
    assert s.largest_conversation["number"] == 1
    c = s.context
    assert c is not None and c.kind == "anchored" and c.calls == 2
    assert 6400 <= c.tokens <= 6400 * 1.05


def test_aider_a_runs_prompts_are_counted_from_its_own_start():
    t = load(ARCHITECT)
    counter = TokenCounter("gpt-4o")
    sizes = prompt_sizes(t, t.calls, counter)
    second = [i for i, m in enumerate(t.messages) if m.conversation == 1]
    # the second run's call: its own messages before the reply, not the first run's too
    reply = t.calls[-1].prompt
    assert sizes[-1] == sum(counter.message(t.messages[i]).total for i in second
                            if i < reply) + REPLY_PRIMING


def _aider_recorded(text: str) -> tuple[int, int]:
    def value(s: str) -> int:
        return round(float(s[:-1]) * 1000) if s.endswith("k") else int(s)

    sent = received = 0
    for line in text.splitlines():
        if line.startswith("> Tokens: "):
            sent += value(re.search(r"([\d.]+k?) sent", line).group(1))
            received += value(re.search(r"([\d.]+k?) received", line).group(1))
    return sent, received


@pytest.mark.corpus
@pytest.mark.parametrize("path", [*corpus_params("aider", pattern="*.md"),
                                  pytest.param(AIDER, id="sample")])
def test_aider_usage_matches_the_tokens_lines(path):
    sent, received = _aider_recorded(path.read_text())
    usage = load(path).usage
    assert (usage.get("input_tokens", 0), usage.get("output_tokens", 0)) == (sent, received)


@pytest.mark.parametrize(("path", "fmt"), SAMPLE_FORMATS, ids=lambda v: getattr(v, "name", v))
def test_compress_says_it_cannot_write_these_formats(path, fmt, tmp_path):
    out = tmp_path / "out"
    run = ctxpack("compress", str(path), "-o", str(out))
    # (the file's own name in the command, where it printed `ctxpack convert FILE`)
    assert_clean_error(run, 2, f"compress cannot write {fmt} files",
                       f"`ctxpack convert {path} --to openai -o run.jsonl`")
    assert not out.exists()
    # the way the message gives works: convert, then compress, and restore undoes it
    converted, packed, back = tmp_path / "run.jsonl", tmp_path / "packed.jsonl", tmp_path / "b"
    assert ctxpack("convert", str(path), "--to", "openai", "-o", str(converted)).code == 0
    compressed = ctxpack("compress", str(converted), "-o", str(packed), "--budget", "600")
    assert compressed.code == 0, compressed.err
    assert ctxpack("restore", str(packed), "-o", str(back)).code == 0
    assert back.read_bytes() == converted.read_bytes()


def test_a_broken_document_names_file_and_line(tmp_path):
    bad = tmp_path / "session.json"
    bad.write_bytes(OPENCODE.read_bytes()[:2000])
    assert_clean_error(ctxpack("stats", str(bad)), 2, str(bad), "truncated")
    wrong = tmp_path / "export.json"
    doc = json.loads(OPENCODE.read_bytes())
    doc["messages"][1]["parts"] = "none"
    wrong.write_text(json.dumps(doc, indent=2))
    assert_clean_error(ctxpack("stats", str(wrong)), 2, str(wrong), "not read as opencode",
                       "'parts'")


# --- properties ---------------------------------------------------------------------------

texts = st.text(max_size=30)
tool_parts = st.fixed_dictionaries({
    "type": st.just("tool"), "tool": st.sampled_from(["bash", "read", "edit"]),
    "callID": st.uuids().map(lambda u: f"call_{u.hex[:12]}"),
    "state": st.one_of(
        st.fixed_dictionaries({"status": st.just("completed"), "input": st.dictionaries(
            texts, texts, max_size=2), "output": texts}),
        st.fixed_dictionaries({"status": st.just("error"), "input": st.just({}),
                               "error": texts}),
        st.fixed_dictionaries({"status": st.just("running"), "input": st.just({})}))})
assistant_parts = st.lists(st.one_of(
    tool_parts, st.fixed_dictionaries({"type": st.sampled_from(["text", "reasoning"]),
                                       "text": texts})), max_size=4)


@st.composite
def opencode_exports(draw):
    messages = []
    for n in range(draw(st.integers(0, 5))):
        role = "user" if n % 2 == 0 else "assistant"
        parts = ([{"type": "text", "text": draw(texts)}] if role == "user"
                 else draw(assistant_parts))
        messages.append({"info": {"id": f"msg_{n:04d}", "role": role}, "parts": parts})
    return {"info": {"id": "ses_prop"}, "messages": messages}


@settings(max_examples=80, deadline=None)
@given(opencode_exports(), st.sampled_from([None, 2]))
def test_any_opencode_export_round_trips_and_pairs_each_finished_call(doc, indent):
    data = json.dumps(doc, indent=indent, ensure_ascii=False).encode()
    assert roundtrip(data) == data
    t = load(io.BytesIO(data), format="opencode")
    finished = [p["callID"] for m in doc["messages"] for p in m["parts"]
                if p["type"] == "tool" and p["state"]["status"] != "running"]
    results = [r.call_id for m in t.messages for r in m.tool_results]
    assert results == finished
    assert all(m.role == "tool" for m in t.messages if m.tool_results)


lines = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"),
            max_size=30),
    st.sampled_from(["#### fix the bug", "#### fix the bug  ", "#### Step 1", "#### /clear",
                     "#### /ask why?", "> Tokens: 1.2k sent, "
                     "30 received.", ">>>>>>> REPLACE", "", "> Applied edit to a.py",
                     f"<{REASONING_TAG}>", f"</{REASONING_TAG}>", "> # Fix any errors below, "
                     "if possible.", "> Attempt to fix lint errors? (Y)es/(N)o [Yes]: y",
                     "#### Add file to the chat? (Y)es/(N)o [Yes]: all",
                     "> Main model: x with architect edit format"]))


@settings(max_examples=80, deadline=None)
@given(st.lists(lines, max_size=25), st.sampled_from(["\n", "\r\n"]))
def test_any_aider_log_round_trips_and_keeps_its_prompts(body, ending):
    text = ending.join(["# aider chat started at 2026-01-01 10:00:00", *body]) + ending
    data = text.encode()
    assert roundtrip(data) == data
    t = load(io.BytesIO(data))
    assert t.format == "aider"
    for m in (*t.messages, *t.outside, *t.sidechain):
        assert not m.text.startswith("> ") and m.text.strip()
        assert m.role in ("user", "assistant")
        # a reply may open on a heading; a prompt's `#### ` is Aider's, not the person's
        assert not m.text.startswith("####") or m.role == "assistant"
    # in a file that keeps the break Aider ends a prompt's lines with, a `####` line
    # without it after one with it is a heading of a reply, never the person's
    heading = body.index("#### Step 1") if "#### Step 1" in body else 0
    if "#### fix the bug  " in body[:heading]:
        assert not any("Step 1" in m.text for m in t.messages if m.role == "user")
    # a reasoning block Aider strips is never context (a reply cut off inside its
    # reasoning has no closing tag, and Aider sends it as it is)
    block = re.compile(f"<{REASONING_TAG}>.*</{REASONING_TAG}>", re.DOTALL)
    assert not any(block.search(m.text) for m in (*t.messages, *t.sidechain))


def test_what_cline_cut_to_fit_the_window_is_not_context(tmp_path):
    # Cline's inclusive deleted range names api_conversation_history indexes it stopped sending
    events = json.loads((CLINE / "ui_messages.json").read_bytes())
    events[-1]["conversationHistoryDeletedRange"] = [1, 4]
    (tmp_path / "ui_messages.json").write_text(json.dumps(events))
    history = json.loads((CLINE / "api_conversation_history.json").read_bytes())
    (tmp_path / "api_conversation_history.json").write_text(json.dumps(history))
    whole = load(CLINE / "api_conversation_history.json")
    cut = load(tmp_path / "api_conversation_history.json")
    gone = [m for m in whole.messages if history.index(m.raw) in range(1, 5)]
    # 2 replies; 2 user messages, each a tool result and the environment details beside it
    assert [m.role for m in gone] == ["assistant", "tool", "user"] * 2
    assert [m.text for m in cut.outside] == [m.text for m in gone]
    assert len(cut.messages) == len(whole.messages) - len(gone)
    assert cut.messages[0].human  # the task stays
    ui = load(tmp_path / "ui_messages.json")
    assert len(ui.messages) == len(load(CLINE / "ui_messages.json").messages) - 4


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*xray*ui_messages.json"))
def test_a_truncated_cline_task_counts_what_its_last_request_sent(path, exact_tokens):
    f = stats_of(path)
    recorded = f["usage"]["last_input_tokens"]
    # all but the system prompt and tool definitions (a few thousand tokens) is in the file
    assert 0 < recorded - f["tokens"] < 20_000, (recorded, f["tokens"])


# a result's text, not the person's reply Cline sends the same way (`<feedback>` and the
# like make a "Result:" block the person's message)
results = texts.filter(lambda t: not any(tag in t for tag in
                                         ("<task>", "<feedback>", "<answer>", "<user_message>")))


@st.composite
def cline_histories(draw):
    history = [{"role": "user", "ts": 1,
                "content": [{"type": "text", "text": "<task>\n" + draw(texts) + "\n</task>"}]}]
    for n in range(draw(st.integers(0, 6))):
        history.append({"role": "assistant", "ts": 2 * n + 2,
                        "content": [{"type": "text", "text": draw(texts)}]})
        tool = draw(st.sampled_from(["read_file", "search_files"]))
        blocks = [{"type": "text", "text": f"[{tool} for '{draw(results)}'] Result:"},
                  {"type": "text", "text": draw(results)}]
        if draw(st.booleans()):
            blocks.append({"type": "text", "text": "<environment_details>\nx\n"
                           "</environment_details>"})
        history.append({"role": "user", "ts": 2 * n + 3, "content": blocks})
    return history


@settings(max_examples=80, deadline=None)
@given(cline_histories())
def test_any_cline_history_round_trips_and_counts_each_result_as_tool(history):
    data = json.dumps(history, ensure_ascii=False).encode()
    assert roundtrip(data) == data
    t = load(io.BytesIO(data))
    assert t.format == "cline"
    tool = [m for m in t.messages if m.role == "tool"]
    assert len(tool) == (len(history) - 1) // 2
    assert all(" Result:" in m.text for m in tool)
    assert all("Result:" not in m.text for m in t.messages if m.role == "user")
    assert [m.human for m in t.messages].count(True) == 1


@st.composite
def openhands_runs(draw):
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": draw(texts)}}]
    calls = 0
    for _ in range(draw(st.integers(0, 5))):
        response = f"resp-{calls}"
        batch = [f"call_{calls + k}" for k in range(draw(st.integers(1, 3)))]
        calls += len(batch)
        for cid in batch:
            meta = {"function_name": "execute_bash", "tool_call_id": cid,
                    "model_response": {"id": response, "choices": [{"message": {
                        "content": draw(texts), "tool_calls": []}}]}}
            events.append({"id": len(events), "source": "agent", "action": "run",
                           "args": {"command": draw(texts)}, "tool_call_metadata": meta})
        for cid in draw(st.permutations(batch)):
            events.append({"id": len(events), "source": "agent", "observation": "run",
                           "content": draw(texts), "tool_call_metadata": {"tool_call_id": cid}})
    return events


@settings(max_examples=80, deadline=None)
@given(openhands_runs(), st.sampled_from([None, 2]))
def test_any_openhands_trajectory_round_trips_with_one_message_per_response(events, indent):
    data = json.dumps(events, indent=indent).encode()
    assert roundtrip(data) == data
    t = load(io.BytesIO(data))
    assert t.format == "openhands"
    responses = {e["tool_call_metadata"]["model_response"]["id"] for e in events
                 if "action" in e and "tool_call_metadata" in e}
    assert len([m for m in t.messages if m.role == "assistant"]) == len(responses)
    assert validate(t) == []  # every call answered, every result after its call


def test_opencode_context_starts_at_the_last_compaction():
    def message(n, role, parts, **info):
        return {"info": {"id": f"msg_{n}", "role": role, **info}, "parts": parts}

    doc = {"info": {"id": "ses_compact"}, "messages": [
        message(1, "user", [{"type": "text", "text": "build the parser"}]),
        message(2, "assistant", [{"type": "text", "text": "done, long story"}]),
        message(3, "user", [{"type": "compaction", "auto": True}]),
        message(4, "assistant", [{"type": "text", "text": "Summary: parser built"}],
                parentID="msg_3", summary=True, finish="stop"),
        message(5, "user", [{"type": "text", "text": "now the printer"}]),
    ]}
    data = json.dumps(doc, indent=2).encode()
    t = load(io.BytesIO(data))
    # the compaction's user message is sent as the question OpenCode asks in its place
    assert [m.text for m in t.messages] == [
        "What did we do so far?", "Summary: parser built", "now the printer"]
    assert [m.human for m in t.messages] == [False, False, True]
    assert [m.text for m in t.outside] == ["build the parser", "done, long story"]
    assert roundtrip(data) == data


ABORTED = {"name": "MessageAbortedError", "data": {"message": "Aborted"}}


def test_opencode_leaves_a_failed_reply_out_of_the_context_as_opencode_does(tmp_path):
    # OpenCode builds each prompt without an assistant message that failed, unless it was
    # aborted after writing more than reasoning (session/message-v2.ts, toModelMessages)
    doc = json.loads(OPENCODE.read_bytes())
    follow = doc["messages"][8]  # a reply to the person's second message

    def reply(k, error, *parts):
        info = {**follow["info"], "id": f"msg_failed{k}", "error": error}
        return {"info": info, "parts": [
            {"type": "step-start", "id": f"prt_failed{k}0", "messageID": info["id"]},
            *({**p, "id": f"prt_failed{k}{n}", "messageID": info["id"]}
              for n, p in enumerate(parts, 1))]}

    api = {"name": "APIError", "data": {"message": "overloaded", "isRetryable": True}}
    failed = [reply(1, api, {"type": "text", "text": "FAILED half a reply"}),
              reply(2, ABORTED, {"type": "reasoning", "text": "ABORTED only thinking",
                                 "time": {"start": 1, "end": 2}})]
    kept = reply(3, ABORTED, {"type": "text", "text": "ABORTED once it had said this"})
    path, sent = tmp_path / "failed.json", tmp_path / "sent.json"
    path.write_text(json.dumps({**doc, "messages": [
        *doc["messages"][:8], *failed, kept, *doc["messages"][8:]]}, indent=2))
    sent.write_text(json.dumps({**doc, "messages": [
        *doc["messages"][:8], kept, *doc["messages"][8:]]}, indent=2))
    got, expected = stats_of(path), stats_of(sent)
    assert (got["tokens"], got["by_role"], got["messages"]) == \
        (expected["tokens"], expected["by_role"], expected["messages"])
    assert (got["outside"]["messages"], got["outside"]["why"]) == \
        (2, "a reply that failed, which OpenCode does not send again")
    assert got["context"]["tokens"] == expected["context"]["tokens"]
    context = ctxpack("convert", str(path), "--to", "openai")
    assert context.code == 0, context.err
    assert "ABORTED once" in context.out and "FAILED" not in context.out \
        and "ABORTED only" not in context.out
    whole = ctxpack("convert", str(path), "--all", "--to", "markdown").out
    assert all(text in whole for text in ("FAILED half", "ABORTED only", "ABORTED once"))
    assert ctxpack("validate", str(path)).code == 0
    assert roundtrip(path.read_bytes()) == path.read_bytes()


@pytest.mark.parametrize("error", [None, ABORTED])
def test_an_opencode_summary_that_failed_completes_no_compaction(error):
    doc = {"info": {"id": "ses_compact"}, "messages": [
        {"info": {"id": "msg_1", "role": "user"},
         "parts": [{"type": "text", "text": "build the parser"}]},
        {"info": {"id": "msg_2", "role": "user"}, "parts": [{"type": "compaction"}]},
        {"info": {"id": "msg_3", "role": "assistant", "parentID": "msg_2", "summary": True,
                  "finish": "stop", "error": error},
         "parts": [{"type": "text", "text": "Summary: parser built"}]}]}
    t = load(io.BytesIO(json.dumps(doc).encode()))
    assert [m.text for m in t.messages][0] == \
        ("What did we do so far?" if error is None else "build the parser")


@pytest.mark.parametrize("finish", [None, "", "stop"])
def test_an_opencode_summary_completes_a_compaction_only_once_it_finished(tmp_path, finish):
    # OpenCode cuts the history at a compaction only when its summary has a `finish`
    # (session/message-v2.ts, filterCompacted): one still streaming, or cut off, does not
    summary = {"id": "msg_3", "role": "assistant", "parentID": "msg_2", "summary": True,
               "modelID": "gpt-4o"}
    doc = {"info": {"id": "ses_compact"}, "messages": [
        {"info": {"id": "msg_1", "role": "user"},
         "parts": [{"type": "text", "text": "build the parser " * 40}]},
        {"info": {"id": "msg_2", "role": "user"}, "parts": [{"type": "compaction"}]},
        {"info": summary if finish is None else {**summary, "finish": finish},
         "parts": [{"type": "text", "text": "Summary: parser built"}]},
        {"info": {"id": "msg_4", "role": "user"},
         "parts": [{"type": "text", "text": "now the printer"}]}]}
    path = tmp_path / "compacted.json"
    path.write_text(json.dumps(doc, indent=2))
    got = stats_of(path)
    done = finish == "stop"
    assert got["messages"] == (3 if done else 4)
    assert got["outside"]["messages"] == (1 if done else 0)
    show = ctxpack("convert", str(path), "--to", "openai")
    assert show.code == 0, show.err
    assert ("build the parser" in show.out) is not done


def opencode_message(n, role, parts, **info):
    """Message `n` of an OpenCode export: `parts` a text, or the parts themselves."""
    parts = [{"type": "text", "text": parts}] if isinstance(parts, str) else parts
    return {"info": {"id": f"msg_{n}", "role": role, **info}, "parts": parts}


ASKED = "What did we do so far?"  # what OpenCode sends for a compaction part


@pytest.mark.parametrize(("parent", "sent"), [
    ("msg_3", [ASKED, "Summary: parser built", "now the printer"]),
    # the older of two compactions: the history is cut at the one the summary answers
    ("msg_2", [ASKED, ASKED, "Summary: parser built", "now the printer"]),
    # a summary of no compaction (a message without the part, or no message) cuts nothing
    ("msg_1", ["build the parser", ASKED, ASKED, "Summary: parser built", "now the printer"]),
    ("msg_9", ["build the parser", ASKED, ASKED, "Summary: parser built", "now the printer"]),
])
def test_an_opencode_summary_completes_the_compaction_its_parent_id_names(parent, sent):
    # OpenCode links a summary to its compaction by the summary's parentID, not by their
    # order (session/message-v2.ts, filterCompacted)
    doc = {"info": {"id": "ses_compact"}, "messages": [
        opencode_message(1, "user", "build the parser"),
        opencode_message(2, "user", [{"type": "compaction", "auto": False}]),
        opencode_message(3, "user", [{"type": "compaction", "auto": True}]),
        opencode_message(4, "assistant", "Summary: parser built", parentID=parent,
                         summary=True, finish="stop"),
        opencode_message(5, "user", "now the printer")]}
    data = json.dumps(doc, indent=2).encode()
    t = load(io.BytesIO(data))
    assert [m.text for m in t.messages] == sent
    assert len(t.outside) == 5 - len(sent)
    assert roundtrip(data) == data


def tailed_compaction(tail) -> dict:
    """An export compacted once, keeping the turn from `tail` (`tail_start_id`) on; its
    tail's reply and the reply after the compaction each record one call."""
    def step(prompt):
        return {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {
            "input": prompt, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}}

    part = {"type": "compaction", "auto": True} | ({} if tail is None else {"tail_start_id": tail})
    model = {"modelID": "gpt-4o", "providerID": "openai"}
    return {"info": {"id": "ses_tail"}, "messages": [
        opencode_message(1, "user", "build the parser " * 40),
        opencode_message(2, "assistant", "parser built", parentID="msg_1", **model),
        opencode_message(3, "user", "now the printer"),
        opencode_message(4, "assistant", [{"type": "text", "text": "printer begun"},
                                          step(900)], parentID="msg_3", **model),
        opencode_message(5, "user", [part]),
        opencode_message(6, "assistant", "Summary: parser built", parentID="msg_5",
                         summary=True, finish="stop", **model),
        opencode_message(7, "user", "go on"),
        opencode_message(8, "assistant", [{"type": "text", "text": "printer done"},
                                          step(1200)], parentID="msg_7", **model)]}


@pytest.mark.parametrize(("tail", "sent"), [
    # the compaction and its summary first, then the turns kept, then what follows
    ("msg_3", [ASKED, "Summary: parser built", "now the printer", "printer begun", "go on",
               "printer done"]),
    (None, [ASKED, "Summary: parser built", "go on", "printer done"]),
    # a tail that starts at no message of the file: OpenCode sends the whole history
    ("msg_0", ["build the parser " * 40, "parser built", "now the printer", "printer begun",
               ASKED, "Summary: parser built", "go on", "printer done"]),
])
def test_opencode_sends_the_tail_a_compaction_keeps_after_its_summary(tmp_path, tail, sent):
    # newer OpenCode keeps the recent turns whole: the compaction part's tail_start_id
    # names the first message kept (session/message-v2.ts, filterCompacted)
    path = tmp_path / "tailed.json"
    path.write_text(json.dumps(tailed_compaction(tail), indent=2))
    t = load(path)
    assert [m.text for m in t.messages] == sent
    got = stats_of(path)
    assert (got["messages"], got["outside"]["messages"]) == (len(sent), 8 - len(sent))
    show = ctxpack("convert", str(path), "--to", "openai")
    assert show.code == 0, show.err
    assert [m["content"] for m in json.loads(show.out)["messages"]] == sent
    # the tail's reply was sent the history the compaction took out: no prompt of this
    # context, its call is of the usage totals only
    assert [c.prompt for c in t.calls] == \
        ([len(sent) - 1] if tail != "msg_0" else [3, len(sent) - 1])
    assert ctxpack("validate", str(path)).code == 0
    assert roundtrip(path.read_bytes()) == path.read_bytes()


def test_an_opencode_step_that_records_no_tokens_is_no_call(tmp_path):
    # a step-finish without `tokens` recorded no usage: not a call of size zero, which
    # would count one call too many and anchor the bill on a prompt of 0
    doc = json.loads(OPENCODE.read_bytes())
    steps = [p for m in doc["messages"] for p in m["parts"] if p["type"] == "step-finish"]
    before = steps[-2]["tokens"]
    for key in ("tokens", "cost"):
        steps[-1].pop(key)
    del doc["messages"][-1]["info"]["tokens"]
    path = tmp_path / "untokened.json"
    path.write_text(json.dumps(doc, indent=2))
    usage = stats_of(path)["usage"]
    assert usage["calls"] == len(steps) - 1
    assert usage["last_input_tokens"] == \
        before["input"] + before["cache"]["read"] + before["cache"]["write"]
    assert usage["input_tokens"] == sum(
        s["tokens"]["input"] + s["tokens"]["cache"]["read"] + s["tokens"]["cache"]["write"]
        for s in steps[:-1])
    run = ctxpack("calibrate", "--json", str(path))
    assert run.code == 0, run.err
    row = json.loads(run.out)[0]
    assert (row["calls"], row["recorded"]) == (len(steps) - 1, len(steps) - 1)


@pytest.mark.parametrize(("part", "sent"), [
    ({"type": "compaction", "auto": False}, "What did we do so far?"),
    ({"type": "subtask", "prompt": "Review the parser", "description": "review",
      "agent": "general"}, "The following tool was executed by the user"),
])
def test_opencode_counts_the_text_it_sends_for_a_compaction_or_subtask_part(
        tmp_path, part, sent):
    # OpenCode sends the model a text of its own in place of these parts: counted as that
    # text sent by OpenCode is (a user message that is not the person's), not left out
    def doc(parts):
        return {"info": {"id": "ses_parts"}, "messages": [
            {"info": {"id": "msg_1", "role": "user"},
             "parts": [{"type": "text", "text": "build the parser"}]},
            {"info": {"id": "msg_2", "role": "assistant"},
             "parts": [{"type": "text", "text": "built"}]},
            {"info": {"id": "msg_3", "role": "user"}, "parts": parts},
            {"info": {"id": "msg_4", "role": "assistant"},
             "parts": [{"type": "text", "text": "ok"}]}]}

    path, written = tmp_path / "parts.json", tmp_path / "written.json"
    path.write_text(json.dumps(doc([part])))
    written.write_text(json.dumps(doc([{"type": "text", "text": sent, "synthetic": True}])))
    got, expected = stats_of(path), stats_of(written)
    assert (got["tokens"], got["by_role"]) == (expected["tokens"], expected["by_role"])
    assert got["rounds"] == expected["rounds"] == 1
    assert ctxpack("validate", str(path)).code == 0


def test_an_opencode_message_of_no_parts_is_named_at_its_path(tmp_path):
    # OpenCode skips a message of no parts (an assistant's, aborted before it wrote any)
    doc = {"info": {"id": "ses_empty"}, "messages": [
        {"info": {"id": "msg_1", "role": "user"},
         "parts": [{"type": "text", "text": "build the parser"}]},
        {"info": {"id": "msg_2", "role": "assistant"}, "parts": []},
        {"info": {"id": "msg_3", "role": "user"}, "parts": [{"type": "text", "text": "go"}]},
        {"info": {"id": "msg_4", "role": "assistant"},
         "parts": [{"type": "text", "text": "built"}]}]}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(doc, indent=2))
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                if '"parts": []' in text)
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:{line}: messages[1] (assistant) has no parts: OpenCode sends nothing of it"]


def openhands_run(i, cid, usage=None):
    """An OpenHands `run` action (event i, call cid, the response's usage if given) and the
    observation it causes (event i + 1)."""
    response = {"id": f"r{cid}", "choices": [{"message": {"content": ""}}]}
    if usage is not None:
        response["usage"] = usage
    meta = {"function_name": "execute_bash", "tool_call_id": cid, "model_response": response}
    return [{"id": i, "source": "agent", "action": "run", "args": {"command": f"ls {i}"},
             "tool_call_metadata": meta},
            {"id": i + 1, "source": "agent", "observation": "run", "cause": i,
             "content": f"out {i}", "tool_call_metadata": {"tool_call_id": cid}}]


def test_openhands_condensation_forgets_the_events_it_names():
    run = openhands_run
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
              *run(1, "a"), *run(3, "b"),
              {"id": 5, "source": "agent", "action": "condensation",
               "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 2}},
              *run(6, "c")]
    t = load(io.BytesIO(json.dumps(events).encode()))
    assert [m.text for m in t.messages if m.role == "tool"] == ["out 3", "out 6"]
    assert [m.text for m in t.outside] == ['execute_bash({"command":"ls 1"})', "out 1"]
    assert validate(t) == []


def openhands_condensed(**summary) -> list[dict]:
    """An OpenHands trajectory whose condensation (event 5, of `summary` besides its range)
    forgets the first call and its output: a request, the call kept, and one after."""
    return [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
            *openhands_run(1, "a"), *openhands_run(3, "b"),
            {"id": 5, "source": "agent", "action": "condensation",
             "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 2, **summary}},
            *openhands_run(6, "c")]


def test_the_condensed_openhands_sample_reads_as_the_model_read_it():
    # samples/: a trajectory condensed after its failing test (no summary: the forgetting
    # condenser's), the events it forgot outside, the calls since anchoring the bill
    path = SAMPLES / "openhands" / "condensed.openhands.json"
    t = load(path)
    assert t.format == "openhands" and not t.unsure
    assert len(t.outside) == 3 and all(m.raw["id"] in range(4, 8) for m in t.outside)
    assert all(m.raw["id"] not in range(4, 8) for m in t.messages)
    assert len(t.calls) == 3 and all(c.billed > 0 for c in t.calls)
    run = ctxpack("validate", str(path))
    assert run.code == 0, run.out
    out = io.BytesIO()
    write(t, out)
    assert out.getvalue() == path.read_bytes()


def test_an_openhands_condensation_summary_is_read_at_its_offset(tmp_path):
    said = "USER_CONTEXT: list the files\nCOMPLETED: ls 1 found none"
    path, bare = tmp_path / "trajectory.json", tmp_path / "bare.json"
    path.write_text(json.dumps(openhands_condensed(summary=said, summary_offset=1), indent=2))
    bare.write_text(json.dumps(openhands_condensed(), indent=2))
    t = load(path)
    # OpenHands inserts it in the view as a user message, after the one event kept before
    assert [(m.role, m.human, m.text) for m in t.messages][:3] == [
        ("user", True, "go"), ("user", False, said),
        ("assistant", False, 'execute_bash({"command":"ls 3"})')]
    assert [m.text for m in t.messages[3:]] == ["out 3", 'execute_bash({"command":"ls 6"})',
                                                "out 6"]
    assert validate(t) == []
    counted = TokenCounter("gpt-4o").message(t.messages[1]).total
    assert stats_of(path)["by_role"]["user"] == stats_of(bare)["by_role"]["user"] + counted
    shown = ctxpack("show", "--no-pager", str(path)).out
    assert shown.index("go") < shown.index("COMPLETED: ls 1 found none") < shown.index("ls 3")
    # it is the condensation's, not a record of its own
    target = tmp_path / "written.json"
    write(t, target)
    assert target.read_bytes() == path.read_bytes()


def test_only_the_newest_openhands_summary_stands():
    events = openhands_condensed(summary="first", summary_offset=1)
    events += [{"id": 8, "source": "agent", "action": "condensation",
                "args": {"forgotten_event_ids": [3, 4], "summary": "second",
                         "summary_offset": 1}}, *openhands_run(9, "d")]
    t = load(io.BytesIO(json.dumps(events).encode()))
    assert [m.text for m in t.messages[:3]] == ["go", "second", 'execute_bash({"command":"ls 6"})']
    assert "first" in [m.text for m in t.outside]
    # a newer condensation with no summary leaves the one before it standing
    events.append({"id": 11, "source": "agent", "action": "condensation",
                   "args": {"forgotten_event_ids": [6, 7]}})
    t = load(io.BytesIO(json.dumps(events).encode()))
    assert [m.text for m in t.messages] == ["go", "second", 'execute_bash({"command":"ls 9"})',
                                            "out 9"]


@pytest.mark.parametrize(("summary", "problem", "texts"), [
    ({"summary": "gist", "summary_offset": "1"},
     "condensation's 'summary_offset' is a string, not a whole number: its summary is read "
     "past", ["go", "ls 3", "out 3"]),
    ({"summary": ["gist"], "summary_offset": 1},
     "condensation's 'summary' is an array, not a string: its summary is read past",
     ["go", "ls 3", "out 3"]),
    ({"summary": "gist", "summary_offset": 9},
     "condensation's 'summary_offset' 9 is outside the 3 events its view holds: read where "
     "OpenHands inserts it, as a Python list does", ["go", "ls 3", "out 3", "ls 6", "out 6",
                                                     "gist"])],
    ids=["offset-text", "summary-array", "offset-past"])
def test_an_openhands_summary_openhands_cannot_insert_is_named(summary, problem, texts,
                                                               tmp_path):
    path = tmp_path / "trajectory.json"
    text = json.dumps(openhands_condensed(**summary), indent=2)
    path.write_text(text)
    t = load(path)
    assert [m.text.removeprefix('execute_bash({"command":"').removesuffix('"})')
            for m in t.messages][:len(texts)] == texts
    line = text[:text.index('"id": 5')].count("\n") + 1
    run = ctxpack("validate", str(path))
    assert (run.code, run.out.splitlines()) == (1, [f"{path}:{line}: event 5: {problem}"])
    assert ctxpack("stats", str(path)).code == 0


def test_openhands_each_response_is_a_call_with_its_recorded_prompt():
    instance = json.loads(OPENHANDS.read_bytes())
    usages = instance["metrics"]["token_usages"]
    t = load(OPENHANDS)
    # one call per LLM response, at the assistant message made of it
    assert [c.billed for c in t.calls] == [u["prompt_tokens"] for u in usages]
    assert [t.messages[c.prompt].id for c in t.calls] == [u["response_id"] for u in usages]
    s = stats(OPENHANDS, cache=False)
    c = s.context
    last = usages[-1]["prompt_tokens"]
    assert c is not None and c.kind == "anchored" and c.calls == len(usages)
    assert last <= c.tokens <= last * 1.05


def test_openhands_a_trajectory_anchors_on_each_responses_own_usage(tmp_path):
    history = json.loads(OPENHANDS.read_bytes())["history"]
    trajectory = tmp_path / "trajectory.json"
    trajectory.write_text(json.dumps(history, indent=2))
    t = load(trajectory)
    prompts = {}
    for e in history:
        response = e.get("tool_call_metadata", {}).get("model_response")
        if response and "usage" in response:
            prompts.setdefault(response["id"], response["usage"]["prompt_tokens"])
    assert [c.billed for c in t.calls] == list(prompts.values())
    assert t.usage["input_tokens"] == sum(prompts.values())
    assert t.usage["last_input_tokens"] == list(prompts.values())[-1]


def test_openhands_a_file_edit_shows_the_model_what_the_aci_editor_does(tmp_path):
    instance = json.loads(OPENHANDS.read_bytes())
    edits = [e for e in instance["history"] if e.get("observation") == "edit"]
    assert edits
    for n, e in enumerate(edits):
        e["extras"]["formatted_output_and_error"] = f"The file {n} has been edited."
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps(instance) + "\n")
    results = {m.raw["id"]: m.text for m in load(path).messages if m.role == "tool"}
    # the diff in `content` is for people; the model reads the editor's own message
    assert [results[e["id"]] for e in edits] == [
        f"The file {n} has been edited." for n in range(len(edits))]
    assert all(results[e["id"]] == e["content"] for e in instance["history"]
               if e["id"] in results and e.get("observation") != "edit")


def test_openhands_calls_before_a_condensation_are_not_the_contexts():
    def run(i, cid):
        return openhands_run(i, cid, usage={"prompt_tokens": 1000 * i})

    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
              *run(1, "a"), *run(3, "b"),
              {"id": 5, "source": "agent", "action": "condensation",
               "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 2}},
              *run(6, "c"), *run(8, "d")]
    t = load(io.BytesIO(json.dumps(events).encode()))
    # the prompts of r3 held the events the condensation forgot: only r6 and r8 anchor
    assert [(c.billed, t.messages[c.prompt].id) for c in t.calls] == [(6000, "rc"),
                                                                       (8000, "rd")]


def test_each_message_of_a_pretty_printed_document_is_at_its_own_line(tmp_path):
    lines = OPENCODE.read_text().splitlines()
    t = load(OPENCODE)
    assert len({m.line for m in t.messages}) > 5
    for m in (*t.messages, *t.outside):
        assert f'"id": "{m.raw["id"]}"' in lines[m.line - 1]
    history = json.loads(OPENHANDS.read_bytes())["history"]
    trajectory = tmp_path / "trajectory.json"
    trajectory.write_text(json.dumps(history, indent=2))
    lines = trajectory.read_text().splitlines()
    for m in load(trajectory).messages:
        assert lines[m.line - 1].strip() == f'"id": {m.raw["id"]},'


def test_a_file_forced_to_be_aider_must_open_like_one(tmp_path):
    run = ctxpack("stats", "--format", "aider", str(OPENCODE))
    assert_clean_error(run, 2, str(OPENCODE), "an Aider chat history opens with")
    bad = tmp_path / ".aider.chat.history.md"
    bad.write_bytes(b"# aider chat started at 2026-01-01 10:00:00\n\n#### hi \xff there\n")
    assert_clean_error(ctxpack("stats", str(bad)), 2, f"{bad}:3", "not valid UTF-8")


def test_cline_native_tool_calls_take_text_results_in_order():
    history = [
        {"role": "user", "ts": 1, "content": [{"type": "text", "text": "<task>\nlist\n</task>"}]},
        {"role": "assistant", "ts": 2, "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {"path": "."}},
            {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "a"}}]},
        {"role": "user", "ts": 3, "content": [
            {"type": "text", "text": "[list_files for '.'] Result:"},
            {"type": "text", "text": "a"},
            {"type": "text", "text": "[read_file for 'a'] Result:"},
            {"type": "text", "text": "1"}]},
    ]
    t = load(io.BytesIO(json.dumps(history).encode()))
    results = t.messages[-1].tool_results
    assert [(r.call_id, r.text) for r in results] == [
        ("toolu_1", "[list_files for '.'] Result:\na"),
        ("toolu_2", "[read_file for 'a'] Result:\n1")]
    assert validate(t) == []


def test_opencode_sends_attached_images_and_not_a_text_files_part():
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAghmmDwAAAAB"
           "JRU5ErkJggg==")
    doc = {"info": {"id": "ses_files"}, "messages": [{"info": {"id": "msg_1", "role": "user"},
                                                      "parts": [
        {"type": "text", "text": "what is wrong in this screenshot?"},
        {"type": "file", "mime": "image/png", "filename": "shot.png",
         "url": f"data:image/png;base64,{png}"},
        {"type": "file", "mime": "text/plain", "filename": "notes.txt", "url": "file:///notes"},
        {"type": "text", "text": "Called the Read tool: notes", "synthetic": True}]}]}
    t = load(io.BytesIO(json.dumps(doc).encode()))
    (m,) = t.messages
    assert [p.kind for p in m.parts] == ["text", "image", "text"]
    assert m.parts[1].data == png and m.parts[1].media_type == "image/png"
    assert m.human


def test_an_openhands_observation_no_call_asked_for_is_a_user_message():
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
              {"id": 1, "source": "agent", "observation": "error",
               "content": "Parameter 'command' is missing."},
              {"id": 2, "source": "environment", "observation": "agent_state_changed",
               "content": "", "extras": {"agent_state": "running"}}]
    t = load(io.BytesIO(json.dumps(events).encode()))
    assert [(m.role, m.human, m.text) for m in t.messages] == [
        ("user", True, "hi"), ("user", False, "Parameter 'command' is missing.")]


def test_an_aider_log_of_many_runs_sets_no_last_call_against_them_all(tmp_path):
    assert "last_input_tokens" not in load(AIDER).usage  # two runs
    one = tmp_path / ".aider.chat.history.md"
    text = AIDER.read_text()
    one.write_text(text[:text.index("# aider chat started at 2026-04-03")])
    assert load(one).usage["last_input_tokens"] == 3300


def _summarizing_log(pairs: int, model: str | None = None) -> tuple[str, list[int]]:
    """An Aider log of `pairs` questions and answers whose `> Tokens:` lines record what
    Aider sends: about 2,000 tokens of system prompt and repository map, and the chat's
    history, which Aider summarizes (a summary and the newest half of its limit) each time
    it passes `max_chat_history_tokens` (1,024); the `sent` amounts as Aider prints them."""
    lines = ["# aider chat started at 2026-01-01 10:00:00", ""]
    if model:
        lines += [f"> Main model: {model} with diff edit format  ", ""]
    history, recorded = 0, []
    for i in range(pairs):
        question = f"why does step {i} of the import fail on the second run?"
        answer = f"Step {i} fails because " + "the cache is read before it is written " * 12
        history += 15  # (the question, roughly)
        sent = 2_000 + history
        recorded.append(round(sent / 100) * 100)
        lines += [f"#### {question}  ", "", answer.strip(), "",
                  f"> Tokens: {recorded[-1] / 1000:.1f}k sent, 110 received. "
                  "Cost: $0.01 message, $0.10 session.  ", ""]
        history += 110
        if history > 1_024:  # summarized: a summary and the newest 512
            history = 150 + 512
    return "\n".join(lines), recorded


@pytest.mark.parametrize("model", [None, "anthropic/claude-sonnet-4-5"])
def test_aider_that_summarized_its_chat_is_billed_on_its_recorded_calls(model, tmp_path):
    """Aider summarizes older messages and writes the summary nowhere: calls far below the
    count of the file's messages are the summarized chat, not usage made up, and the bill
    rests on the last of them, plus what came after it; validate finds nothing wrong."""
    text, recorded = _summarizing_log(60, model)
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(text)
    f = stats_of(path)
    c = f["context"]
    assert f["tokens"] > 2 * recorded[-1]  # the file holds far more than any prompt
    assert (c["kind"], c["calls"], c["passed_over"]) == ("anchored", 60, [])
    assert "Aider summarizes older messages" in c["summarized"]
    # the bill over the count is no slope of the model: the JSON states none
    assert c["slope"] is None and c["tokens"] / c["counted"] < 0.5
    t = load(path)
    counter = TokenCounter(t.model or "gpt-4o")
    after = counter.message(t.messages[-1]).total  # the last reply, after its call's prompt
    assert recorded[-1] + after <= c["tokens"] <= recorded[-1] + 1.3 * after
    assert (c["visible"], c["not_in_file"]) == (c["tokens"], 0)
    assert f["context_ratio"] == round(c["tokens"] / f["context_window"], 4)
    run = ctxpack("stats", "--top", "0", str(path))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert f"context as billed: {c['tokens']:,} of" in said
    assert "anchored on the last of 60 recorded calls" in said
    assert "the file holds more than was sent" in said and "Aider summarizes" in said
    assert "passed over" not in said and "as with no usage recorded" not in said
    check = ctxpack("validate", str(path))
    assert (check.code, check.out, check.err.strip()) == (0, "", f"{path}: aider, 120 messages: ok")
    # calibrate fits the calls made before Aider first summarized (the file was their
    # prompt): what the log's calls send besides the messages, about 2,000; the rest are
    # counted as made on no prompt the file holds, not as usage made up
    run = ctxpack("calibrate", "--json", str(path))
    assert run.code == 0, run.err
    [row] = json.loads(run.out)
    assert (row["left_out"], row["calls"] + row["no_prompt"]) == (0, 60)
    assert 4 <= row["calls"] < 30 and abs(row["overhead"] - 2_000) < 200


def test_aider_last_call_below_its_own_question_is_passed_over_not_summarized(tmp_path):
    """A summary replaces the older messages, never the person's newest turn: a last call
    recording less than that is made up, and passed over as any agent's."""
    text, recorded = _summarizing_log(60)
    head, _, tail = text.rpartition(f"{recorded[-1] / 1000:.1f}k sent")
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(f"{head}5 sent{tail}")
    c = stats_of(path)["context"]
    assert c["summarized"] == ""
    assert c["passed_over"][-1]["billed"] == 5 or c["below"] == 5


@pytest.mark.parametrize("path", [*corpus_params("aider", pattern="*.md"),
                                  pytest.param(AIDER, id="sample"),
                                  pytest.param(ARCHITECT, id="architect")])
def test_an_aider_log_whose_calls_hold_its_messages_is_not_called_summarized(path):
    # (their calls grow with the messages: the file is the prompt, as anchored on)
    c = stats_of(path)["context"]
    assert c["summarized"] == "" and c["slope"] > 0


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("observation", {"run": 1}, "event 1: 'observation' is an object, not a string"),
    ("action", ["run"], "event 1: 'action' is an array, not a string"),
    ("id", "1", "event 1: 'id' is a string, not a whole number")])
def test_an_openhands_event_field_of_the_wrong_type_names_its_line(field, value, problem,
                                                                   tmp_path):
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
              {"id": 1, "source": "agent", "observation": "run", "content": "ok"}]
    events[1][field] = value
    path = tmp_path / "trajectory.json"
    text = json.dumps(events, indent=2)
    path.write_text(text)
    # the line of the event's id; of the id before it when its own is not a number
    found = '"id": 0' if field == "id" else '"id": 1'
    line = text[:text.index(found)].count("\n") + 1
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:{line}:", problem)


def test_an_openhands_condensation_of_a_vast_range_forgets_only_what_is_in_it():
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
              {"id": 1, "source": "agent", "action": "message", "args": {"content": "yes"}},
              {"id": 2, "source": "agent", "action": "condensation",
               "args": {"forgotten_events_start_id": 1, "forgotten_events_end_id": 10**15}}]
    t = load(io.BytesIO(json.dumps(events).encode()))
    assert [m.text for m in t.messages] == ["hi"]
    assert [m.text for m in t.outside] == ["yes"]


@pytest.mark.parametrize("key", ["condenseId", "condenseParent", "truncationId",
                                 "truncationParent"])
def test_a_roo_link_of_the_wrong_type_is_named_not_a_crash(key, tmp_path):
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nport it\n</task>"}],
         "ts": 1},
        {"role": "user", "content": [{"type": "text", "text": "summary"}], "ts": 2,
         "isSummary": True, "isTruncationMarker": True, key: ["c1"]}]
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps(history))
    assert_clean_error(ctxpack("stats", str(path)), 2, str(path),
                       f"message 1: {key!r} is an array, not a string")


@pytest.mark.parametrize(("where", "problem"), [
    ("tool_calls", "event 1: 'tool_calls' is a number, not an array"),
    ("forgotten_event_ids", "event 1: 'forgotten_event_ids' is a number, not an array")])
def test_an_openhands_list_of_the_wrong_type_names_its_event(where, problem, tmp_path):
    if where == "tool_calls":
        response = {"id": "r1", "choices": [{"message": {"content": "", "tool_calls": 5}}]}
        event = {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"},
                 "tool_call_metadata": {"tool_call_id": "a", "function_name": "execute_bash",
                                        "model_response": response}}
    else:
        event = {"id": 1, "source": "agent", "action": "condensation",
                 "args": {"forgotten_event_ids": 5}}
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
              event]
    path = tmp_path / "trajectory.json"
    text = json.dumps(events, indent=2)
    path.write_text(text)
    line = text[:text.index('"id": 1')].count("\n") + 1
    assert_clean_error(ctxpack("stats", str(path)), 2, f"{path}:{line}:", problem)


def test_openhands_usage_of_the_wrong_type_is_no_usage():
    instance = json.loads(OPENHANDS.read_bytes().splitlines()[0])
    instance["metrics"]["token_usages"] = 7
    t = load(io.BytesIO(json.dumps(instance).encode()))
    assert t.format == "openhands" and t.messages
    # no metrics: each response's own usage is read instead, once per response
    prompts = {e["tool_call_metadata"]["model_response"]["id"]:
               e["tool_call_metadata"]["model_response"]["usage"]["prompt_tokens"]
               for e in instance["history"] if "tool_call_metadata" in e}
    assert t.usage["source"] == "each LLM response's usage"
    assert t.usage["input_tokens"] == sum(prompts.values())


def test_opencode_counts_past_what_a_float_holds_count_zero():
    doc = json.loads(OPENCODE.read_bytes())
    usage = load(OPENCODE).usage
    steps = [p for m in doc["messages"] for p in m.get("parts", ())
             if p.get("type") == "step-finish"]
    assert len(steps) >= 2
    input_, cost = steps[0]["tokens"]["input"], steps[0]["cost"]
    steps[0]["tokens"]["input"] = float("inf")
    steps[0]["cost"] = 10**400  # and the next step's cost a float: no overflow in the sum
    t = load(io.BytesIO(json.dumps(doc).encode()))
    # the step's call is set aside (its input no count), so none of its prompt is summed
    cache = steps[0]["tokens"].get("cache", {})
    prompt = input_ + cache.get("read", 0) + cache.get("write", 0)
    assert t.usage["input_tokens"] == usage["input_tokens"] - prompt
    assert t.usage["calls_set_aside"] == 1 and "tokens.input inf" in t.set_aside[0].problem
    assert t.usage["cost_usd"] == pytest.approx(usage["cost_usd"] - cost, abs=1e-6)


def test_aider_amounts_past_what_a_float_holds_count_zero(tmp_path):
    usage = load(AIDER).usage
    text = AIDER.read_text()
    assert "> Tokens: 3.4k sent" in text and "Cost: $0.01 message" in text
    path = tmp_path / AIDER.name
    path.write_text(text.replace("> Tokens: 3.4k sent", "> Tokens: " + "9" * 400 + " sent", 1)
                    .replace("Cost: $0.01 message", "Cost: $" + "9" * 400 + " message", 1))
    t = load(path)
    assert t.usage["input_tokens"] == usage["input_tokens"] - 3400
    assert t.usage["cost_usd"] == pytest.approx(usage["cost_usd"] - 0.01)


def test_a_cline_cost_past_what_a_float_holds_counts_zero(tmp_path):
    events = json.loads((CLINE / "ui_messages.json").read_bytes())
    first = next(e for e in events if e.get("say") == "api_req_started")
    info = json.loads(first["text"])
    cost, info["cost"] = info["cost"], 10**400  # the later costs are floats: no overflow
    first["text"] = json.dumps(info)
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(events))
    usage = load(CLINE / "ui_messages.json").usage
    assert load(path).usage["cost_usd"] == pytest.approx(usage["cost_usd"] - cost, abs=1e-6)


# --- why messages are outside the context ---------------------------------------------------

OUTSIDE_WHY = {
    "plateau-fix.gemini-cli.jsonl": ("tool results a user message repeats", "rewound"),
    "aider/unit-conversions.aider.chat.history.md": ("before a /clear or /reset",),
    "coding-agent.claude-code.jsonl": ("before a compaction or off the branch",),
}


@pytest.mark.parametrize("name", list(OUTSIDE_WHY))
def test_the_outside_line_says_why_for_the_format(name):
    doc = stats_of(SAMPLES / name)
    assert doc["outside"]["messages"] > 0
    for phrase in OUTSIDE_WHY[name]:
        assert phrase in doc["outside"]["why"]
    if "claude-code" not in name:
        assert "off the branch" not in doc["outside"]["why"]
    # show says the same where it says what it leaves out, and what shows it
    shown = " ".join(ctxpack("show", "--no-pager", str(SAMPLES / name)).out.split())
    assert f"outside the model's context ({doc['outside']['why']}; `ctxpack convert --all` " \
        "shows them)" in shown


def test_a_file_with_nothing_outside_gives_no_reason():
    doc = stats_of(SAMPLES / "support-chat.openai.jsonl")
    assert doc["outside"] == {"messages": 0, "tokens": 0, "why": ""}


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("aider", "gemini-cli-chat", pattern="*.*"))
def test_corpus_outside_reasons(path):
    doc = stats_of(path)
    if not doc["outside"]["messages"]:
        return
    if path.parent.name != "aider":
        assert "a user message repeats" in doc["outside"]["why"]
        return
    cleared = re.search(r"^#### /(clear|reset)\b", path.read_text(), re.MULTILINE)
    thought = any(isinstance(p, Thinking) for m in load(path).outside for p in m.parts)
    assert ("before a /clear" in doc["outside"]["why"]) == bool(cleared)
    assert ("reasoning, which Aider does not send back" in doc["outside"]["why"]) == thought


# --- cline-ui, properties -------------------------------------------------------------------

@st.composite
def cline_ui_logs(draw):
    """A Cline ui_messages.json: the task (`say: task`, or `say: text` as older Cline wrote
    it), then requests (the first the task, the rest a tool's result sent back), each
    answered by reasoning, text and tool events, some of them also as a streaming (partial)
    copy; with the requests' tokens in and out."""
    task = draw(texts)
    ts = 1_779_870_000_000
    events = [{"ts": ts, "type": "say", "say": draw(st.sampled_from(["task", "text"])),
               "text": task, "images": [], "conversationHistoryIndex": -1}]
    tokens_in, tokens_out = [], []
    for n in range(draw(st.integers(1, 5))):
        request = f"<task>\n{task}\n</task>" if n == 0 else \
            f"[read_file for 'f{n}.py'] Result:\n{draw(results)}"
        info = {"request": request, "tokensIn": draw(st.integers(0, 10**6)),
                "tokensOut": draw(st.integers(0, 9999)), "cost": draw(st.floats(0, 5))}
        tokens_in.append(info["tokensIn"])
        tokens_out.append(info["tokensOut"])
        events.append({"ts": ts + 10 * n, "type": "say", "say": "api_req_started",
                       "text": json.dumps(info), "conversationHistoryIndex": 2 * n - 1})
        for say in draw(st.lists(st.sampled_from(["reasoning", "text", "tool"]), max_size=3)):
            text = draw(texts) if say != "tool" else json.dumps({"tool": "readFile",
                                                                 "path": f"f{n}.py"})
            if draw(st.booleans()):
                events.append({"ts": ts + 10 * n + 1, "type": "say", "say": say,
                               "text": text[:3], "partial": True})
            events.append({"ts": ts + 10 * n + 2, "type": "say", "say": say, "text": text,
                           "partial": False, "conversationHistoryIndex": 2 * n})
    return events, tokens_in, tokens_out


@settings(max_examples=80, deadline=None)
@given(cline_ui_logs(), st.sampled_from([None, 2]))
def test_any_cline_ui_log_round_trips_and_reads_its_requests(log, indent):
    events, tokens_in, tokens_out = log
    data = json.dumps(events, indent=indent, ensure_ascii=False).encode()
    assert roundtrip(data) == data
    t = load(io.BytesIO(data))
    assert t.format == "cline-ui"
    requests = [m for m in t.messages if m.role in ("user", "tool")]
    assert len(requests) == len(tokens_in)
    assert [m.human for m in requests] == [True] + [False] * (len(requests) - 1)
    assert all(m.role == "tool" for m in requests[1:])
    # no streaming copy is read: each finished event's text is in one reply, once
    finished = [e["text"] for e in events[1:] if e.get("partial") is False and e["text"]]
    replies = [p.arguments if isinstance(p, ToolCall) else p.text
               for m in t.messages if m.role == "assistant" for p in m.parts]
    assert replies == finished
    # a tool event is a written call; the next request's result answers the reply's first
    # one and names it
    for m, after in zip(t.messages, t.messages[1:], strict=False):
        calls = m.tool_calls if m.role == "assistant" else []
        assert all(c.written for c in calls)
        if calls and after.role == "tool":
            assert calls[0].name == "read_file"
            assert [r.call_id for r in after.tool_results] == [calls[0].id]
            assert after.tool_results[0].text == json.loads(after.raw["text"])["request"]
    # the usage table leaves out the calls set aside (a first call outvoted by those after);
    # requests that all record nothing are no calls: no table
    aside = [dict(x.call.summed) for x in t.set_aside if x.call is not None]
    assert t.usage.get("output_tokens", 0) + sum(a.get("output_tokens", 0) for a in aside) \
        == sum(tokens_out)
    assert t.usage.get("input_tokens", 0) + sum(a.get("input_tokens", 0) for a in aside) == \
        sum(tokens_in)


def test_an_aider_log_cut_above_its_first_prompt_is_read_as_aider_but_unsure(tmp_path):
    body = ("> Model: gpt-4o with diff edit format\n\n#### explain a.py  \n\n"
            "It prints the sum.\n\n> Tokens: 1.2k sent, 40 received.\n\n")
    whole = load(io.BytesIO(f"# aider chat started at 2026-01-01 10:00:00\n\n{body}".encode()))
    path = tmp_path / "cut.md"
    path.write_text(body)
    cut = load(path)
    assert cut.format == "aider" and "'####' prompts" in cut.unsure and not whole.unsure
    assert [(m.role, m.text) for m in cut.messages] == \
        [(m.role, m.text) for m in whole.messages] and len(cut.messages) == 2
    assert cut.usage == whole.usage
    assert "format unsure" in ctxpack("stats", str(path)).out
    # Markdown with no such lines is still refused as Markdown
    path.write_text("# Notes\n\n#### a heading\n\nsome text\n")
    assert_clean_error(ctxpack("stats", str(path)), 2, "looks like Markdown")


def _cut_in_the_middle(text: str) -> str:
    """A piece of an Aider log from its second prompt to the next run's opening line:
    no `# aider chat started at` line in it."""
    lines = text.splitlines(keepends=True)
    prompts = [i for i, line in enumerate(lines) if line.startswith("#### ")]
    end = next((i for i in range(prompts[1], len(lines))
                if lines[i].startswith("# aider chat started at")), len(lines))
    cut = "".join(lines[prompts[1]:end])
    assert "# aider chat started at" not in cut and "> Tokens: " in cut
    return cut


def _read_every_way(path):
    """The cut log read as found, with --format aider and with --skip-invalid: the same
    Aider messages each time (it was refused forced, and read as 0 OpenAI messages
    when skipping)."""
    found = load(path)
    assert found.format == "aider" and found.messages
    for t in (load(path, "aider"), load(path, skip_invalid=True)):
        assert t.format == "aider" and not t.skipped
        assert [(m.role, m.text) for m in t.messages] == \
            [(m.role, m.text) for m in found.messages]
        assert t.usage == found.usage
    for flags in (["--format", "aider"], ["--skip-invalid"]):
        run = ctxpack("stats", *flags, str(path))
        assert run.code == 0, run.err
        assert "[aider]" in run.out and f"in {len(found.messages)} messages" in run.out


def test_a_cut_aider_log_is_read_as_aider_forced_or_skipping(tmp_path):
    text = (SAMPLES / "aider" / "unit-conversions.aider.chat.history.md").read_text()
    path = tmp_path / "cut.md"
    path.write_text(_cut_in_the_middle(text))
    _read_every_way(path)
    # forced on text that is no Aider log, it is still refused, as before
    path.write_text("# Notes\n\nsome text\n")
    assert_clean_error(ctxpack("stats", "--format", "aider", str(path)), 2,
                       "an Aider chat history opens with")


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("aider", pattern="luvatrix*.md"))
def test_a_cut_corpus_aider_log_is_read_as_aider_forced_or_skipping(tmp_path, path):
    cut = tmp_path / "cut.md"
    cut.write_text(_cut_in_the_middle(path.read_text()))
    _read_every_way(cut)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*.json"))
def test_a_cline_ui_log_opens_with_the_persons_task_read_once(path):
    t = load(path)
    assert t.messages[0].role == "user" and t.messages[0].human
    assert "<task>" in t.messages[0].text
    task = next(e["text"] for e in json.loads(path.read_bytes())
                if e.get("say") in ("task", "text"))
    assert not any(task in m.text for m in [*t.outside, *t.messages] if m.role == "assistant")


def test_a_broken_ui_log_beside_a_cline_history_is_named_not_called_absent(tmp_path):
    history = tmp_path / "api_conversation_history.json"
    history.write_bytes((CLINE / "api_conversation_history.json").read_bytes())
    ui = tmp_path / "ui_messages.json"
    ui.write_bytes((CLINE / "ui_messages.json").read_bytes()[:-40])  # cut short
    source = load(history).usage["source"]
    assert "no ui_messages.json beside" not in source
    assert "ui_messages.json beside the file is unreadable" in source
    assert f"{ui}:" in source  # where it breaks: FILE:LINE


@pytest.mark.parametrize("kind", ["text", "reasoning"])
def test_opencode_a_part_whose_text_is_no_string_is_named_not_dropped(tmp_path, kind):
    doc = json.loads((SAMPLES / "opencode" / "book-search.opencode.json").read_text())
    n, i = next((n, i) for n, m in enumerate(doc["messages"])
                for i, p in enumerate(m["parts"]) if p.get("type") == kind)
    doc["messages"][n]["parts"][i]["text"] = 5
    path = tmp_path / "bad.opencode.json"
    path.write_text(json.dumps(doc, indent=2))
    line = next(k for k, text in enumerate(path.read_text().splitlines(), 1)
                if f'"id": "{doc["messages"][n]["info"]["id"]}"' in text)
    for command in ("validate", "stats"):
        assert_clean_error(ctxpack(command, str(path)), 2, f"{path}:{line}:",
                           f"message {n} part {i} ({kind}): 'text' is a number")


def test_cline_a_request_event_of_broken_json_keeps_its_message_and_is_named(tmp_path):
    shutil.copytree(CLINE, tmp_path / "task")
    ui = tmp_path / "task" / "ui_messages.json"
    events = json.loads(ui.read_bytes())
    n = [i for i, e in enumerate(events) if e.get("say") == "api_req_started"][2]
    events[n]["text"] = '{"request": "broken'
    ui.write_text(json.dumps(events, indent=1))
    before, after = load(CLINE / "ui_messages.json"), load(ui)
    assert len(after.messages) == len(before.messages)
    assert any(m.text == '{"request": "broken' for m in after.messages)
    assert after.usage["calls"] == before.usage["calls"] - 1
    # unreadable, not unbelievable: named as such, at the line its event opens on (its
    # `{`, the line before its `ts`), not the log's first line
    line = [k for k, text in enumerate(ui.read_text().splitlines()) if '"ts"' in text][n]
    assert line > 10
    named = f"event {n}: recorded usage that cannot be read: the text of this " \
        "api_req_started event is no JSON object"
    assert [(p.line, p.message) for p in validate(after)] == [
        (line, f"{named}, so its request's usage is not counted")]
    history = load(tmp_path / "task" / "api_conversation_history.json")
    # of the task's history, named in the log it is in, at its own line
    assert [(p.file, p.line, p.message) for p in validate(history)] == [
        (str(ui), line, p.message) for p in validate(after)]
    run = ctxpack("validate", str(ui))
    assert run.code == 1 and f"{ui}:{line}: {named}" in run.out, run
    # stats lists it apart from the usage that cannot be true, by its line and event
    for path, where in ((ui, f"line {line} event {n}"),
                        (ui.with_name("api_conversation_history.json"),
                         f"ui_messages.json line {line} event {n}")):
        f = json.loads(ctxpack("stats", "--json", str(path)).out)["files"][0]
        assert f["usage_set_aside"] == []
        assert [(x["line"], x["place"], x.get("file")) for x in f["usage_unread"]] == [
            (line, f"line {line} event {n}", None if path == ui else str(ui))]
        table = " ".join(ctxpack("stats", str(path)).out.split())
        assert f"recorded usage that cannot be read, not counted (`ctxpack validate` says " \
            f"why): {where}" in table
        assert "cannot be true" not in table
    # the log on one line: its one line, and the event named
    ui.write_text(json.dumps(events))
    assert [(p.line, p.message) for p in validate(load(ui))] == [
        (1, f"{named}, so its request's usage is not counted")]


ASKED = {"id": 0, "source": "user", "action": "message", "message": "list it",
         "args": {"content": "list it"}}


@pytest.mark.parametrize(("event", "problem"), [
    ({"id": 1, "source": "user", "action": "message", "message": 5, "args": {}},
     "event 1: 'message' is a number, not a string"),
    ({"id": 1, "source": "user", "action": "run", "args": 5}, "event 1: 'args' is a number, "
     "not an object"),
    ({"id": 1, "source": "agent", "action": "run", "args": ["ls"],
      "tool_call_metadata": openhands_run(1, "a")[0]["tool_call_metadata"]},
     "event 1: 'args' is an array, not an object"),
    ({"id": 1, "source": "user", "observation": "run", "content": None, "extras": {}},
     "event 1: run observation's 'content' is null, not a string"),
    ({"id": 1, "source": "user", "observation": "run", "extras": {}},
     "event 1: run observation without 'content'"),
])
def test_openhands_events_of_the_wrong_shape_are_named_at_their_line(tmp_path, event,
                                                                     problem):
    # each was shown as JSON ("5") or dropped, and validate said ok
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([ASKED, event], indent=2))
    at = [n for n, text in enumerate(path.read_text().splitlines(), 1)
          if text.strip() == '"id": 1,'][0]
    assert_clean_error(ctxpack("validate", str(path)), 2, f"{path}:{at}:",
                       f"not read as openhands: {problem}")


@pytest.mark.parametrize(("content", "kind", "shown"), [
    ([{"type": "text", "text": "list the files"}], "an array", "list the files"),
    ({"text": "list the files"}, "an object", "list the files"),
    (5, "a number", "5")])
def test_openhands_message_content_that_is_no_string_is_named_and_shown_as_its_text(
        tmp_path, content, kind, shown):
    # it was shown and converted as JSON text, and validate said ok
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([{**ASKED, "args": {"content": content}}], indent=2))
    at = [n for n, text in enumerate(path.read_text().splitlines(), 1)
          if text.strip() == '"id": 0,'][0]
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:{at}: event 0: message action's 'args.content' is {kind}, not a string"], \
        run.out
    show = ctxpack("show", "--no-pager", str(path)).out
    assert f"\n    {shown}\n" in show and '"text"' not in show
    converted = json.loads(ctxpack("convert", str(path), "--to", "openai").out)
    assert converted["messages"] == [{"role": "user", "content": shown}]


def test_openhands_problems_name_their_event_as_its_errors_do(tmp_path):
    # validate gave the line alone, where an event of the wrong shape is named `event N`
    call = openhands_run(1, "a")[0]  # its observation left out: the call has no result
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([ASKED, call, {"id": 2, "source": "agent", "action": "message",
                                              "args": {"content": 5}}], indent=2))
    lines = path.read_text().splitlines()
    at = {n: lines.index(f'    "id": {n},') + 1 for n in (1, 2)}
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:{at[1]}: event 1: tool call 'a' (execute_bash) has no result in the transcript",
        f"{path}:{at[2]}: event 2: message action's 'args.content' is a number, not a string",
    ], run.out
    # show names each message so too, after its line
    assert f"line {at[1]} event 1  assistant" in ctxpack("show", "--no-pager", str(path)).out


def test_openhands_events_of_the_right_shape_validate(tmp_path):
    # the same events as OpenHands writes them: a command the user ran, its output
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([
        ASKED, {"id": 1, "source": "user", "action": "run", "args": {"command": "ls"}},
        {"id": 2, "source": "user", "observation": "run", "content": "a.py", "cause": 1},
        {"id": 3, "source": "agent", "observation": "agent_state_changed", "content": ""},
        *openhands_run(4, "a")], indent=2))
    run = ctxpack("validate", str(path))
    assert run.code == 0, run.out + run.err
    assert [m.text for m in load(path).messages][:2] == ["list it", "a.py"]


def _cline_task(tmp_path, edit) -> tuple[Path, list[dict]]:
    """The sample Cline task copied, its UI log's events changed by `edit` and written an
    event a line apart (so each event's problem has a line of its own); the log's path and
    its events as the sample has them."""
    shutil.copytree(CLINE, tmp_path / "task")
    ui = tmp_path / "task" / "ui_messages.json"
    events = json.loads(ui.read_bytes())
    ui.write_text(json.dumps(edit(json.loads(ui.read_bytes())), indent=1))
    return ui, events


def _requests(events: list[dict]) -> list[int]:
    return [n for n, e in enumerate(events) if e.get("say") == "api_req_started"]


def _prompt(event: dict) -> int:
    info = json.loads(event["text"])
    return info["tokensIn"] + info["cacheReads"] + info["cacheWrites"]


def test_cline_usage_of_events_naming_no_history_index_is_checked_all_the_same(tmp_path):
    def edit(events):
        for e in events:
            e.pop("conversationHistoryIndex", None)  # as some Cline versions write them
        info = json.loads(events[n]["text"])
        info["tokensIn"] = 12345678901234567890
        events[n]["text"] = json.dumps(info)
        return events

    n = _requests(json.loads((CLINE / "ui_messages.json").read_bytes()))[2]
    ui, events = _cline_task(tmp_path, edit)
    history = ui.with_name("api_conversation_history.json")
    line = [k for k, text in enumerate(ui.read_text().splitlines()) if '"ts"' in text][n]
    run = ctxpack("validate", str(history))
    assert run.code == 1
    assert f"{ui}:{line}: event {n}: recorded usage cannot be true: tokensIn " \
        "12,345,678,901,234," in run.out, run
    # set aside, as where the events name their place: not in the usage table
    usage, sample = stats_of(history)["usage"], load(CLINE / "api_conversation_history.json")
    assert usage["calls"] == sample.usage["calls"] - 1
    assert usage["input_tokens"] == sample.usage["input_tokens"] - _prompt(events[n])


def test_a_cline_request_cancelled_before_any_token_is_no_call(tmp_path):
    """Cline writes a request cancelled before the provider answered with every count 0
    (and `cancelReason`): it is no call, nor the last prompt, as the bill has it."""
    def edit(events):
        info = json.loads(events[last]["text"])
        info.update(tokensIn=0, tokensOut=0, cacheWrites=0, cacheReads=0, cost=0,
                    cancelReason="user_cancelled")
        events[last]["text"] = json.dumps(info)
        return events

    sample = json.loads((CLINE / "ui_messages.json").read_bytes())
    *_, before, last = _requests(sample)
    ui, events = _cline_task(tmp_path, edit)
    for path in (ui, ui.with_name("api_conversation_history.json")):
        f = stats_of(path)
        assert f["usage"]["calls"] == len(_requests(events)) - 1 == f["context"]["calls"]
        assert f["usage"]["last_input_tokens"] == _prompt(events[before])
        assert f["usage_set_aside"] == []


def test_a_cline_ui_log_on_one_line_places_its_usage_at_line_1(tmp_path):
    """A log of requests only (no reply to place their usage by), written on one line."""
    events = [{"ts": 1 + n, "type": "say", "say": "api_req_started",
               "text": json.dumps({"tokensIn": count, "tokensOut": 3, "cost": 0.01})}
              for n, count in enumerate((-5, 100))]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(events))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and f"{path}:1: event 0: recorded usage cannot be true: " \
        "tokensIn -5 (" in run.out, run
    assert [(x["line"], x["place"]) for x in stats_of(path)["usage_set_aside"]] == [
        (1, "event 0")]


@pytest.mark.parametrize("empty_at", [0, 1])
def test_an_openhands_instance_with_no_events_is_an_empty_conversation(tmp_path, empty_at):
    # a run that failed before its first event saves `"history": []`: the file was
    # refused whole ("not read as openhands") for that one instance
    ran = json.loads(OPENHANDS.read_text())
    failed = {"instance_id": "tidy__tidy-7", "instruction": "Fix the env parser.",
              "history": [], "metrics": {}, "error": "runtime failed to start"}
    records = [ran, ran]
    records[empty_at] = failed
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    run = ctxpack("stats", "--json", str(path))
    assert run.code == 0, run.err
    (f,) = json.loads(run.out)["files"]
    alone = json.loads(ctxpack("stats", "--json", str(OPENHANDS)).out)["files"][0]
    assert f["format"] == "openhands" and f["conversations"] == 2
    assert f["messages"] == alone["messages"] and f["tokens"] == alone["tokens"]
    # numbered as the file holds them: the empty one counts
    assert f["largest_conversation"]["line"] == 2 - empty_at
    assert f["largest_conversation"]["number"] == 2 - empty_at
    assert ctxpack("validate", str(path)).code == 0
    out = io.BytesIO()
    write(load(str(path)), out)
    assert out.getvalue() == path.read_bytes()


@pytest.mark.parametrize("error", [{"error": "runtime failed to start"}, {}],
                         ids=["failed", "empty"])
def test_an_openhands_output_whose_every_run_failed_is_read_as_such(tmp_path, error):
    # every instance ended before its first event (failed to start, or saved with no
    # error): still OpenHands' output, read as one that holds no model input (it was
    # refused as "no transcript of any format"), in as many conversations as instances
    # (they were reported as 0 conversations)
    failed = [{"instance_id": f"tidy__tidy-{n}", "instruction": "Fix the env parser.",
               "history": [], "metrics": {}, **error} for n in (7, 8)]
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in failed))
    run = ctxpack("stats", str(path))
    assert run.code == 0, run.err
    assert "[openhands]" in run.out and "0 tokens in 0 messages" in run.out
    assert "no model input in 2 conversations: every instance's 'history' is empty: each " \
        "run ended before its first event" in " ".join(run.out.split())
    (f,) = json.loads(ctxpack("stats", "--json", str(path)).out)["files"]
    assert f["format"] == "openhands" and f["tokens"] == 0 and not f["format_unsure"]
    assert f["conversations"] == 2 and f["largest_conversation"] is None
    assert f["context"]["tokens"] == 0  # (an empty conversation sends nothing)
    assert ctxpack("stats", "--max-ratio", "0.5", str(path)).code == 0
    assert_clean_error(ctxpack("convert", str(path), "--to", "openai"), 2,
                       "nothing to convert: every instance's 'history' is empty")
    assert ctxpack("validate", str(path)).code == 0
    out = io.BytesIO()
    write(load(str(path)), out)
    assert out.getvalue() == path.read_bytes()


def _opencode_export(user_parts=None, state=None, tokens=None) -> dict:
    """An `opencode export` of a question, a step that reads a file, and its answer."""
    said = {"info": {"id": "msg_2", "role": "assistant", "modelID": "claude-sonnet-4-5"},
            "parts": [{"type": "text", "text": "Reading it."},
                      {"type": "tool", "tool": "read", "callID": "c1",
                       "state": {"status": "completed", "input": {"path": "a.py"},
                                 "output": "print(1)", **(state or {})}},
                      {"type": "step-finish", "tokens": {"input": 900, "output": 9}}]}
    if tokens is not None:
        said["info"]["tokens"] = tokens
    return {"info": {"id": "ses_1a2b", "model": {"id": "claude-sonnet-4-5"}}, "messages": [
        {"info": {"id": "msg_1", "role": "user"},
         "parts": [{"type": "text", "text": "Find the bug."}] if user_parts is None
         else user_parts},
        said,
        {"info": {"id": "msg_3", "role": "assistant"},
         "parts": [{"type": "text", "text": "It prints 1."}]}]}


@pytest.mark.parametrize(("wrong", "problems"), [
    # a user message whose parts are all unreadable vanished, and validate said ok
    ({"user_parts": [None, 5, {"type": "text"}]},
     ["messages[0].parts[0] is null, not an object: left out",
      "messages[0].parts[1] is a number, not an object: left out",
      "messages[0].parts[2] (text) has no 'text': left out"]),
    # a part of a type OpenCode does not write, and a file it sends as it is (a PDF),
    # vanished without a word; so did a user message of no parts (OpenCode sends none)
    ({"user_parts": [{"type": "text", "text": "Find the bug."},
                     {"type": "mystery", "text": "what is this?"},
                     {"type": "file", "mime": "application/pdf", "filename": "spec.pdf",
                      "url": "data:application/pdf;base64,JVBERi0xLjQK"},
                     {"type": "file", "mime": "text/plain", "filename": "a.py",
                      "url": "file:///a.py"}]},
     ["messages[0].parts[1] is of type 'mystery', which OpenCode does not write (it writes "
      "agent, compaction, file, patch, reasoning, retry, snapshot, step-finish, step-start, "
      "subtask, text, tool): kept in the file, not read",
      "messages[0].parts[2] (file 'application/pdf'): a file OpenCode sends the model as it "
      "is, not an image: not counted"]),
    ({"user_parts": []}, ["messages[0] (user) has no parts: OpenCode sends nothing of it"]),
    ({"state": {"input": "notadict", "output": 5}},
     ["messages[1].parts[1] (tool): 'state.input' is a string, not an object",
      "messages[1].parts[1] (tool): completed, its 'state.output' is a number, not a "
      "string"]),
    ({"tokens": {"input": "x", "output": -1, "cache": "no"}},
     ["messages[1].info.tokens.input 'x' (a token count is a whole number, zero or more): "
      "not used (the step-finish parts' counts are)",
      "messages[1].info.tokens.output -1 (a token count is a whole number, zero or more): "
      "not used (the step-finish parts' counts are)",
      "messages[1].info.tokens.cache is a string, not an object of counts: not used (the "
      "step-finish parts' counts are)"]),
])
def test_what_an_opencode_export_holds_that_opencode_never_writes_is_named(
        tmp_path, wrong, problems):
    path = tmp_path / "session.json"
    path.write_text(json.dumps(_opencode_export(**wrong)))
    run = ctxpack("validate", str(path))
    assert run.code == 1, (run.out, run.err)
    assert [line.split(": ", 1)[1] for line in run.out.splitlines()] == problems
    # convert says so too (a body opened on the assistant's turn without a word)
    for to in ("openai", "markdown"):
        run = ctxpack("convert", str(path), "--to", to, "-o", str(tmp_path / f"out.{to}"))
        assert run.code == 0 and f"{path}: {len(problems)} record" in run.err and \
            "read past or guessed at (`ctxpack validate` names each)" in run.err, run.err
    path.write_text(json.dumps(_opencode_export(tokens={"input": 3, "output": 9})))
    assert ctxpack("validate", str(path)).code == 0
    assert "read past" not in ctxpack("convert", str(path), "--to", "openai").err


def test_an_opencode_part_kept_for_the_round_trip_and_named_at_its_own_line(tmp_path):
    # parts problems were placed at the line of their message's id: each is at its part's
    doc = _opencode_export(user_parts=[{"type": "text", "text": "Find the bug."},
                                       {"type": "mystery", "text": "what is this?"}, None],
                           state={"output": 5})
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc, indent=2))
    data = path.read_bytes()
    lines = path.read_text().splitlines()
    mystery = next(n for n, text in enumerate(lines, 1) if '"mystery"' in text) - 1
    null = next(n for n, text in enumerate(lines, 1) if text.strip() == "null")
    tool = next(n for n, text in enumerate(lines, 1) if '"type": "tool"' in text) - 1
    assert lines[mystery - 1].strip() == lines[tool - 1].strip() == "{"
    run = ctxpack("validate", str(path))
    assert run.code == 1 and [x.split(": ", 1)[0] for x in run.out.splitlines()] == [
        f"{path}:{mystery}", f"{path}:{null}", f"{path}:{tool}"], run.out
    t = load(path)
    assert [m.text for m in t.messages][:1] == ["Find the bug."]  # (not the mystery's text)
    assert roundtrip(data) == data


def test_an_opencode_message_count_is_named_at_its_own_line(tmp_path):
    # a message's own info.tokens (printed over many lines) was named at its id's line,
    # all its wrong counts in one problem: each is named by its path, at its line
    path = tmp_path / "session.json"
    path.write_text(json.dumps(_opencode_export(tokens={"input": -3, "output": 9,
                                                        "cache": {"read": "x"}}), indent=2))
    lines = path.read_text().splitlines()
    first, second = (next(n for n, text in enumerate(lines, 1) if text.strip().startswith(key))
                     for key in ('"input": -3', '"read": "x"'))
    run = ctxpack("validate", str(path))
    assert run.code == 1 and run.out.splitlines() == [
        f"{path}:{first}: messages[1].info.tokens.input -3 (a token count is a whole number, "
        "zero or more): not used (the step-finish parts' counts are)",
        f"{path}:{second}: messages[1].info.tokens.cache.read 'x' (a token count is a whole "
        "number, zero or more): not used (the step-finish parts' counts are)"]


def _shifted(events: list[dict]) -> list[dict]:
    """The log stamped 90 days later, as a task run since would be."""
    return [{**e, "ts": e["ts"] + 90 * 86_400_000} for e in events]


def _longer(events: list[dict]) -> list[dict]:
    """The log as of a task 30 messages further on: its events name later messages."""
    return [{**e, "conversationHistoryIndex": e["conversationHistoryIndex"] + 30}
            if "conversationHistoryIndex" in e else e for e in events]


def _retold(events: list[dict]) -> list[dict]:
    """The log holding its requests twice: twice the calls of the history's replies."""
    return events + events


@pytest.mark.parametrize(("edit", "why"), [
    (_shifted, "its events are from 2026-08-25 08:20 UTC to 2026-08-25 08:23 UTC, the "
               "history's messages from 2026-05-27 08:20 UTC to 2026-05-27 08:23 UTC"),
    (_longer, "its events name the history's message 40 (from 0), and the history holds 12"),
    (_retold, "12 requests of it record usage, and the history holds 6 replies")],
    ids=["stamped-apart", "naming-later-messages", "more-requests-than-replies"])
@pytest.mark.parametrize("metrics", [True, False], ids=["metrics", "no-metrics"])
def test_another_tasks_ui_log_beside_a_cline_history_is_named_and_not_read(
        tmp_path, edit, why, metrics):
    def other(events):
        events[-1]["conversationHistoryDeletedRange"] = [1, 4]  # its cut, not this task's
        return edit(events)

    ui, _ = _cline_task(tmp_path, other)
    history = ui.with_name("api_conversation_history.json")
    messages = json.loads(history.read_bytes())
    if not metrics:
        history.write_text(json.dumps([{k: v for k, v in m.items() if k != "metrics"}
                                       for m in messages]))
    named = f"the ui_messages.json beside the file is another task's ({why})"
    run = ctxpack("validate", str(history))
    assert run.code == 1
    assert run.out == f"{history}:1: {named}: its usage and its cut to fit the window are " \
        "not read\n"
    f = stats_of(history)
    whole = stats_of(CLINE / "api_conversation_history.json")
    assert f["outside"]["messages"] == 0 and f["messages"] == whole["messages"]
    if metrics:  # the history's own usage, as with no log beside it
        assert f["usage"]["source"] == f"metrics of each assistant message ({named})"
        assert f["usage"]["calls"] == sum(1 for m in messages if "metrics" in m)
        assert f["context"]["kind"] == "anchored"
    else:  # no usage read, and stats says why
        assert f["usage"] == {"source": f"none: {named}"}
        assert f["context"]["kind"] == "calibrated"
        assert f"│ source │ none: {named} │" in ctxpack("stats", str(history),
                                                    env={"COLUMNS": "400"}).out


@pytest.mark.parametrize("ahead", ["ui", "history"])
def test_a_task_copied_between_two_writes_reads_its_ui_log(tmp_path, ahead):
    # Cline writes the UI log and the history one after the other: a copy taken between
    # the two holds one more request in one file than in the other. Either is this task's
    # log: its usage is read, and the request whose message the history does not hold yet
    # is of the usage totals only, not billed as the prompt of what the history holds
    task = tmp_path / "task"
    shutil.copytree(CLINE, task)
    history, ui = task / "api_conversation_history.json", task / "ui_messages.json"
    messages, events = json.loads(history.read_bytes()), json.loads(ui.read_bytes())
    last = _requests(events)[-1]
    if ahead == "ui":  # the history has not had the last request's message written
        history.write_text(json.dumps(messages[:events[last]["conversationHistoryIndex"] + 1]))
    else:  # the UI log has not had the last request written
        ui.write_text(json.dumps(events[:last]))
    run = ctxpack("validate", str(history))
    assert run.code == 0 and "another task's" not in run.out, run.out
    f = stats_of(history)
    assert f["usage"]["source"] == "api_req_started events of the sibling ui_messages.json"
    assert f["usage"]["calls"] == len(_requests(events)) - (ahead == "history")
    assert f["context"]["kind"] == "anchored"
    # the requests whose prompts the history holds: all but the last, in either case
    assert f["context"]["calls"] == len(_requests(events)) - 1


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*xray*ui_messages.json"))
def test_a_real_tasks_ui_log_beside_the_sample_history_is_not_billed_as_its_own(
        tmp_path, path):
    shutil.copytree(CLINE, tmp_path / "task")
    shutil.copy(path, tmp_path / "task" / "ui_messages.json")
    history = tmp_path / "task" / "api_conversation_history.json"
    f = stats_of(history)
    assert "another task's" in f["usage"]["source"] and f["outside"]["messages"] == 0
    assert f["usage"]["calls"] == stats_of(CLINE / "api_conversation_history.json")[
        "usage"]["calls"]  # (the sample's metrics: one a reply)
    assert ctxpack("validate", str(history)).code == 1


def _say(ts: int, kind: str, text: str, type_: str = "say") -> dict:
    return {"ts": ts, "type": type_, type_: kind, "text": text}


@pytest.mark.parametrize("opening", [
    [_say(1, "task", "build it"), _say(2, "text", "hello I will build it now")],
    [_say(1, "text", "build it")]],  # older Cline: the task as text
    ids=["task-then-text", "text-as-task"])
def test_a_cline_ui_log_of_no_request_keeps_its_task_and_reply(tmp_path, opening):
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps([*opening, _say(3, "followup", "which folder?", "ask")]))
    t = load(path)
    assert [(m.role, m.human) for m in t.messages] == [("user", True), ("assistant", False)]
    assert t.messages[0].text == "build it" and t.outside == ()
    reply = t.messages[1]
    assert [p.text for p in reply.parts if not isinstance(p, ToolCall)] == [
        e["text"] for e in opening[1:]]
    assert [c.name for c in reply.tool_calls] == ["ask_followup_question"]
    assert ctxpack("validate", str(path)).code == 0
    f = stats_of(path)
    assert (f["messages"], f["outside"]["messages"]) == (2, 0)


def test_a_cline_ui_reply_shown_before_the_first_request_is_outside_and_named(tmp_path):
    request = {"request": "<task>\nbuild it\n</task>", "tokensIn": 900, "tokensOut": 20,
               "cost": 0.01}
    events = [_say(1, "task", "build it"), _say(2, "text", "hello I will build it now"),
              _say(3, "api_req_started", json.dumps(request)),
              _say(4, "followup", "which folder?", "ask")]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(events, indent=1))
    t = load(path)
    # the task once, as the request sent it; the early text in no context
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert [m.text for m in t.outside] == ["hello I will build it now"]
    line = path.read_text().splitlines().index(" {", 4) + 1  # where event 1 starts
    run = ctxpack("validate", str(path))
    assert run.code == 1
    assert run.out == f"{path}:{line}: event 1: a reply shown before the first request (no " \
        "request of the log asked for it): kept outside the context\n"
    f = stats_of(path)
    assert f["outside"] == {"messages": 1, "tokens": f["outside"]["tokens"],
                            "why": "shown before the first request"}
    assert f["outside"]["tokens"] > 0 and f["context"]["calls"] == 1


def test_calibrate_fits_the_calls_before_clines_cut_on_the_history_sent_then(tmp_path):
    # the requests before Cline's cut to fit the window were sent on the history as it was
    # then (nothing cut yet), which the log still holds: each is fitted on it
    def cut(events):
        events[-1]["conversationHistoryDeletedRange"] = [1, 4]
        return events

    ui, _ = _cline_task(tmp_path, cut)
    recorded = stats_of(ui)["usage"]["calls"]
    run = ctxpack("calibrate", "--json", str(ui))
    assert run.code == 0, run.err
    (fit,) = json.loads(run.out)
    assert (fit["calls"], fit["no_prompt"], fit["left_out"]) == (recorded, 0, 0)
    assert "not used" not in ctxpack("calibrate", str(ui)).out
    # as a task not cut has every call fitted
    (whole,) = json.loads(ctxpack("calibrate", "--json", str(CLINE / "ui_messages.json")).out)
    assert (whole["calls"], whole["no_prompt"]) == (recorded, 0)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("cline", pattern="*.json"))
def test_calibrate_accounts_for_every_call_a_cline_log_records(path):
    (fit,) = json.loads(ctxpack("calibrate", "--json", str(path)).out)
    assert fit["calls"] + fit["left_out"] + fit["no_prompt"] == \
        stats_of(path)["usage"]["calls"]


def test_a_cline_ui_log_stamped_just_after_its_history_is_still_the_tasks(tmp_path):
    # the two files are written as the task runs; stamps a few seconds apart (a clock, the
    # order of writes) are of one time, and the log's usage is read
    history = json.loads((CLINE / "api_conversation_history.json").read_bytes())
    span = history[-1]["ts"] - history[0]["ts"]
    ui, _ = _cline_task(tmp_path, lambda events: [{**e, "ts": e["ts"] + span + 30_000}
                                                  for e in events])
    path = ui.with_name("api_conversation_history.json")
    assert ctxpack("validate", str(path)).code == 0
    assert load(path).usage == load(CLINE / "api_conversation_history.json").usage


def test_a_cline_block_of_no_api_type_and_a_stamp_that_is_no_time_are_named(tmp_path):
    # a content block the Messages API does not take is left out (not counted, not
    # converted) and a `ts` that is text is read past: validate names each at the line its
    # message starts on, convert says it read past them, and nothing else changes
    history = json.loads((CLINE / "api_conversation_history.json").read_text())
    task = tmp_path / "task"
    task.mkdir()
    (task / "ui_messages.json").write_bytes((CLINE / "ui_messages.json").read_bytes())
    path = task / "api_conversation_history.json"
    path.write_text(json.dumps(history, indent=2))
    before = stats(path)
    plain = ctxpack("convert", str(path), "--to", "openai")
    history[1]["content"].insert(0, {"type": "banana", "x": 1})
    history[2]["ts"] = "yesterday"
    text = json.dumps(history, indent=2)
    path.write_text(text)
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line == "  {"]
    run = ctxpack("validate", str(path))
    assert run.code == 1
    assert run.out.splitlines()[:2] == [
        f"{path}:{starts[1]}: message 1: content[0] is a block of type 'banana', which the "
        "Messages API does not take: left out (not counted, not converted)",
        f"{path}:{starts[2]}: message 2: 'ts' is a string ('yesterday'), not a time stamp "
        "(milliseconds since 1970, as Cline writes it): read past"]
    assert stats(path).tokens == before.tokens
    converted = ctxpack("convert", str(path), "--to", "openai")
    assert converted.code == 0 and converted.out == plain.out
    assert f"{path}: 2 records read past or guessed at (`ctxpack validate` names each)" \
        in converted.err

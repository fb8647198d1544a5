"""convert: request bodies each API accepts (checked with validate, and for Anthropic the
alternation validate does not check), documents as show renders them, bad input."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxpack import load
from ctxpack.checks import validate
from ctxpack.convert import (
    BLANK_TURNS_LEFT_OUT,
    LAST_REPLY_LEFT_OUT,
    NO_RESULT,
    OPENS_WITH_ASSISTANT,
    REASONING_LEFT_OUT,
    Notes,
    request_bodies,
    whole_log,
)
from ctxpack.errors import InputError, UsageError
from ctxpack.loader import load_values
from ctxpack.render.charts import charts_of
from ctxpack.render.document import to_html, to_markdown
from ctxpack.tokens import TokenCounter
from ctxpack.view import build_view

from .conftest import SAMPLES, corpus_params
from .helpers import ROOT, assert_clean_error, ctxpack, said, unnamed_openhands
from .strategies import anthropic_chat, openai_chat

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
API_FORMATS = ("claude-code", "codex", "anthropic-messages", "openai-chat")


def _write(folder, records, name="t.jsonl"):
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def assert_accepted(body: dict[str, Any], to: str) -> None:
    """The body is one the provider takes: validate finds nothing, and for Anthropic the
    roles alternate from a user message, each tool_use is answered at the start of the
    very next message, no text block is blank, and `max_tokens` is given."""
    messages = body["messages"]
    assert messages
    problems = validate(load_values(messages, to))
    assert not problems, problems
    if to == "openai":
        assert all(m.get("content") or m.get("tool_calls") for m in messages
                   if m["role"] == "assistant")
        for call in (c for m in messages for c in m.get("tool_calls") or ()):
            if call["type"] == "function":  # arguments the API parses as a JSON object
                arguments = call["function"]["arguments"]
                assert not arguments.strip() or isinstance(json.loads(arguments), dict)
            else:
                assert call["type"] == "custom" and isinstance(call["custom"]["input"], str)
        return
    assert set(body) <= {"model", "max_tokens", "system", "messages"}
    assert body["max_tokens"] > 0  # the Messages API requires it
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:], strict=False))
    assert roles[-1] == "user"  # the newest Claude models take no request ending on a reply
    for m, after in zip(messages, [*messages[1:], None], strict=True):
        assert m["content"]
        assert all(b["text"].strip() for b in m["content"] if b["type"] == "text")
        uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
        if uses:
            assert after is not None
            head = [b["tool_use_id"] for b in after["content"][:len(uses)]]
            assert sorted(head) == sorted(uses)


def entries(markdown: str) -> int:
    """The messages of a Markdown document: headings at a line, at a place in a
    document on one line (`### messages[3] · tool`), or at a place in a line of many
    messages (`### line 2 history[5] · tool`), or at an event of a line (`### line 38
    event 3 · tool`)."""
    return len(re.findall(r"\n### (?:line [\d,]+(?: event \d+| \S+)?|\S+) · ", markdown))


def result_texts(records: list[dict[str, Any]], to: str) -> Counter[str]:
    t = load_values(records, to)
    return Counter(r.text for m in t.messages for r in m.tool_results)


@SETTINGS
@given(chat=openai_chat())
@example(chat=[{"role": "user", "content": " "}, {"role": "assistant", "content": "0"}])
@example(chat=[{"role": "user", "content": " "}, {"role": "assistant", "content": " "}])
def test_openai_chat_converts_to_both_apis(tmp_path_factory, chat):
    path = _write(tmp_path_factory.mktemp("c"), chat)
    source = load(path)
    for to in ("openai", "anthropic"):
        notes = Notes()
        if to == "anthropic" and _all_blank(chat):  # Anthropic takes no blank text
            with pytest.raises(InputError, match="anything but empty or blank text"):
                request_bodies(source, to, notes)
            continue
        [body] = request_bodies(source, to, notes)
        assert_accepted(body, to)
        # every result is there, word for word; nothing made up for a valid input
        assert result_texts(body["messages"], to) == result_texts(chat, "openai")
        allowed = {REASONING_LEFT_OUT}
        if to == "anthropic":
            allowed.add(LAST_REPLY_LEFT_OUT)
        if to == "anthropic" and any(_blank(m) for m in chat):
            allowed.add(BLANK_TURNS_LEFT_OUT)
        if to == "anthropic" and _opens_blank(chat):
            # Anthropic takes no blank text: the blank turn is left out, and a user turn
            # is said to be put before the assistant's
            allowed.add("user messages added before an opening assistant message")
        assert set(notes.counts) <= allowed


def _blank(m: dict[str, Any]) -> bool:
    """Whether a turn is blank text and nothing else."""
    return m["role"] not in ("system", "developer") and isinstance(m.get("content"), str) \
        and not m["content"].strip() and not m.get("tool_calls")


def _all_blank(chat: list[dict[str, Any]]) -> bool:
    """Whether every turn but the system prompt is blank text, with no tool call."""
    return all(m["role"] in ("system", "developer") or _blank(m) for m in chat)


def _opens_blank(chat: list[dict[str, Any]]) -> bool:
    """Whether the first message that is not a system prompt is a user's blank text."""
    first = next((m for m in chat if m["role"] not in ("system", "developer")), None)
    return first is not None and first["role"] == "user" and \
        isinstance(first.get("content"), str) and not first["content"].strip()


def test_empty_turns_are_left_out(tmp_path):
    records = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""},
               {"role": "user", "content": "   "}, {"role": "assistant", "content": "hello"}]
    source = load(_write(tmp_path, records))
    [openai] = request_bodies(source, "openai")
    assert_accepted(openai, "openai")
    assert [m["role"] for m in openai["messages"]] == ["user", "user", "assistant"]
    notes = Notes()
    [anthropic] = request_bodies(source, "anthropic", notes, keep_last_reply=True)
    assert notes.counts == {BLANK_TURNS_LEFT_OUT: 1}  # ("   " is said; "" holds no part)
    assert anthropic["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]


@SETTINGS
@given(chat=anthropic_chat())
def test_anthropic_chat_converts_to_both_apis(tmp_path_factory, chat):
    path = _write(tmp_path_factory.mktemp("c"), chat)
    source = load(path, "anthropic")  # text-only ones fit OpenAI's shape as well
    for to in ("openai", "anthropic"):
        if to == "anthropic" and not _said(chat):  # Anthropic takes no blank text
            with pytest.raises(InputError, match="anything but empty or blank text"):
                request_bodies(source, to)
            continue
        [body] = request_bodies(source, to)
        assert_accepted(body, to)
        assert result_texts(body["messages"], to) == result_texts(chat, "anthropic")


def _said(chat: list[dict[str, Any]]) -> bool:
    """Whether an Anthropic conversation holds a tool call or text that is not blank."""
    def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
        return m["content"] if isinstance(m["content"], list) else \
            [{"type": "text", "text": m["content"]}]
    return any(b["type"] in ("tool_use", "tool_result") or
               (b["type"] == "text" and b["text"].strip()) for m in chat for b in blocks(m))


def test_broken_pairs_are_mended_and_said(tmp_path):
    """A call with no result, a result with no call, a result before its call's turn
    ends: the output is still accepted, and what was done is counted."""
    records = [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "x y"}}]},
        {"role": "user", "content": "Meanwhile..."},
        {"role": "tool", "tool_call_id": "a", "content": "file.txt"},
        {"role": "tool", "tool_call_id": "zzz", "content": "stray output"},
    ]
    source = load(_write(tmp_path, records))
    for to in ("openai", "anthropic"):
        notes = Notes()
        [body] = request_bodies(source, to, notes)
        assert_accepted(body, to)
        text = json.dumps(body)
        assert NO_RESULT in text and "stray output" in text and "file.txt" in text
        assert notes.counts["tool calls without a result given one that says so"] == 1
        assert notes.counts["tool results that answer no open call kept as user text"] == 1
    [body] = request_bodies(source, "anthropic")
    assert body["system"] == "Be brief."
    opening, hello, look, calls, answers = body["messages"]
    assert opening["content"][0]["text"] == OPENS_WITH_ASSISTANT
    assert [b.get("tool_use_id") for b in answers["content"]] == ["a", "b", None, None]
    assert answers["content"][2]["text"] == "Meanwhile..."
    cat = calls["content"][-1]
    assert cat["name"] == "cat" and cat["input"] == {"input": "x y"}


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.json*")))
def test_samples_convert_and_validate_on_the_command_line(tmp_path, sample):
    for to in ("openai", "anthropic"):
        out = tmp_path / f"out.{to}.jsonl"
        run = ctxpack("convert", str(SAMPLES / sample), "--to", to, "-o", str(out))
        assert run.code == 0, run.err
        bodies = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(bodies) == len({m.conversation for m in load(SAMPLES / sample).messages})
        for body in bodies:
            assert_accepted(body, to)
    # the Chat Completions output is itself a file ctxpack reads and finds valid
    run = ctxpack("validate", str(tmp_path / "out.openai.jsonl"))
    assert run.code == 0, run.out + run.err


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params(pattern="*.json*"))
def test_corpus_converts_to_accepted_bodies(path):
    try:
        source = load(path)
    except InputError as exc:
        pytest.skip(f"no reader of this version takes it: {exc}")
    if path.parent.name in API_FORMATS:
        assert source.messages  # these are surely read
    converts_to_accepted_bodies(source)
    counter = TokenCounter("gpt-4o")
    view = build_view(source, counter, flagged=False)
    assert entries(to_markdown(view)) == len(source.messages)
    page = to_html(view, charts_of(source, counter, link=True))
    targets = set(re.findall(r'href="#(msg-\d+)"', page))
    assert all(f'id="{target}"' in page for target in targets)
    assert page.count('class="msg ') == len(source.messages)


def test_all_takes_the_whole_log():
    t = load(SAMPLES / "coding-agent.claude-code.jsonl")
    whole = whole_log(t)
    assert len(whole.messages) == len(t.messages) + len(t.outside) + len(t.sidechain)
    assert [m.line for m in whole.messages] == sorted(m.line for m in whole.messages)
    [body] = request_bodies(whole, "anthropic")
    assert_accepted(body, "anthropic")
    short = ctxpack("convert", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--to",
                    "markdown")
    long = ctxpack("convert", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--to",
                   "markdown", "--all")
    assert short.code == long.code == 0
    assert entries(long.out) == len(whole.messages)
    assert entries(short.out) == len(t.messages)
    assert "--all to include them" in short.out and "--all to include" not in long.out


def test_markdown_is_what_show_shows(exact_tokens):
    path = SAMPLES / "refactor.codex.jsonl"
    run = ctxpack("convert", str(path), "--to", "markdown")
    assert run.code == 0, run.err
    t = load(path)
    view = build_view(t, TokenCounter("gpt-5.1-codex"), flagged=False)
    labels = [item.label for r in view.rounds for e in r.entries for s in e.segments
              for item in s.body if not isinstance(item, str)]
    assert labels and all(label in run.out for label in labels)  # folded as show folds
    for r in view.rounds:
        assert f"## Round {r.number}: " in run.out
    assert entries(run.out) == len(t.messages)
    assert "\n# How you work" not in run.out  # a heading in a message stays inside it
    full = ctxpack("convert", str(path), "--to", "markdown", "--full")
    assert "tokens folded" not in full.out and len(full.out) > len(run.out)


def test_bad_input_is_one_line_and_no_output(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{not json\n')
    out = tmp_path / "out.html"
    run = ctxpack("convert", str(bad), "--to", "html", "-o", str(out))
    assert_clean_error(run, 2, "bad.jsonl:2")
    assert not out.exists()
    same = ctxpack("convert", str(SAMPLES / "support-chat.openai.jsonl"), "--to", "openai",
                   "-o", str(SAMPLES / "support-chat.openai.jsonl"))
    assert_clean_error(same, 2, "support-chat.openai.jsonl would be written over itself",
                       "name another file with -o")
    # convert has no --in-place to suggest
    assert "--in-place" not in same.err
    assert "--in-place" not in ctxpack("convert", "--help").out
    assert load(SAMPLES / "support-chat.openai.jsonl").messages  # untouched
    wrong = ctxpack("convert", str(SAMPLES / "support-chat.openai.jsonl"), "--to", "pdf")
    assert wrong.code == 2 and "pdf" in wrong.err and "Traceback" not in wrong.err


def test_ids_and_names_the_apis_refuse_are_replaced(tmp_path):
    long_id = "x" * 41
    records = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": long_id, "type": "function",
             "function": {"name": "mcp.fs read", "arguments": "{}"}},
            {"id": "ok.1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": long_id, "content": "first"},
        {"role": "tool", "tool_call_id": "ok.1", "content": "second"},
    ]
    source = load(_write(tmp_path, records))
    notes = Notes()
    [body] = request_bodies(source, "openai", notes)
    assert_accepted(body, "openai")
    calls = body["messages"][1]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["mcp_fs_read", "ls"]
    ids = [c["id"] for c in calls]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", i) for i in ids)
    # each result still follows its own call
    assert [(m["tool_call_id"], m["content"]) for m in body["messages"][2:]] == \
        [(ids[0], "first"), (ids[1], "second")]
    assert len(notes.counts) == 1


_IDS = st.sampled_from(["a", "b", "c", None, "x.y", ""])
_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.sampled_from(["", " ", "t"])}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": _IDS, "name": st.just("f"),
                           "input": st.sampled_from([{}, {"k": 1}, [], "s"])}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": _IDS,
                           "content": st.sampled_from(["r", "", [{"type": "text", "text": "r"}]])}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": st.just("hm")}),
)
_LOOSE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"])},
    optional={"content": st.none() | st.sampled_from(["", "hi"]) | st.lists(_BLOCK, max_size=3),
              "tool_call_id": _IDS,
              "tool_calls": st.lists(st.fixed_dictionaries({
                  "id": _IDS, "type": st.just("function"),
                  "function": st.fixed_dictionaries({"name": st.sampled_from(["g", "a b", ""]),
                                                     "arguments": st.sampled_from(["{}", "x"])})}),
                  max_size=2)})


@SETTINGS
@given(records=st.lists(_LOOSE, max_size=8), fmt=st.sampled_from(["openai", "anthropic"]))
def test_any_readable_mess_converts_to_accepted_bodies(tmp_path_factory, records, fmt):
    """Whatever order and pairing a file has, a file a reader takes converts to bodies the
    provider accepts, or is refused in one line when nothing in it is a turn."""
    path = _write(tmp_path_factory.mktemp("m"), records)
    try:
        source = load(path, fmt)
    except InputError:
        return
    converts_to_accepted_bodies(source)


def converts_to_accepted_bodies(source: Any) -> None:
    """Each API's bodies of `source` are accepted, or it is refused in one line where no
    message holds anything a body takes."""
    for to in ("openai", "anthropic"):
        try:
            bodies = request_bodies(source, to)
        except InputError as exc:
            assert "nothing to convert" in str(exc)
            continue
        for body in bodies:
            assert_accepted(body, to)


def test_convert_then_compress(exact_tokens, tmp_path):
    """convert's Chat Completions file is one compress takes, and restore gives it back."""
    converted, small = tmp_path / "run.jsonl", tmp_path / "small.jsonl"
    run = ctxpack("convert", str(SAMPLES / "refactor.codex.jsonl"), "--to", "openai",
                  "-o", str(converted))
    assert run.code == 0, run.err
    run = ctxpack("compress", str(converted), "--budget", "8000", "-o", str(small))
    assert run.code == 0, run.err
    assert ctxpack("validate", str(small)).code == 0
    assert load(small).format == "openai-conversations"
    back = ctxpack("restore", str(small))
    assert back.out == converted.read_text(encoding="utf-8")


def test_a_second_answer_is_text_and_unknown_apis_are_refused(tmp_path):
    records = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "first"},
        {"role": "tool", "tool_call_id": "a", "content": "again"},
    ]
    source = load(_write(tmp_path, records))
    notes = Notes()
    [body] = request_bodies(source, "openai", notes)
    assert_accepted(body, "openai")
    assert body["messages"][2] == {"role": "tool", "tool_call_id": "a", "content": "first"}
    assert body["messages"][3]["role"] == "user" and "again" in body["messages"][3]["content"]
    assert notes.counts == {"tool results that answer no open call kept as user text": 1}
    with pytest.raises(UsageError, match="markdown"):
        request_bodies(source, "markdown")


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_the_model_is_kept_where_the_body_has_a_place_for_it(tmp_path, to):
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(SAMPLES / "plateau-fix.gemini-cli.jsonl"), "--to", to,
                  "-o", str(out))
    assert run.code == 0, run.err
    [body] = [json.loads(line) for line in out.read_text().splitlines()]
    assert body["model"] == "gemini-2.5-pro"
    # what the body cannot hold is said: the usage the file recorded per reply
    assert "6 model calls' recorded usage left out" in " ".join(run.err.split())
    if to == "openai":  # a later reading finds the model, and so its window
        assert load(out).model == "gemini-2.5-pro"
        stats_run = ctxpack("stats", "--json", str(out))
        assert json.loads(stats_run.out)["files"][0]["context_window"] == 1_048_576


def test_a_model_given_is_named_and_an_assumed_one_is_said(tmp_path):
    source = SAMPLES / "support-chat.openai.jsonl"
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(source), "--to", "openai", "-o", str(out))
    assert run.code == 0 and "model gpt-4o assumed" in run.err
    assert json.loads(out.read_text().splitlines()[0])["model"] == "gpt-4o"
    named = tmp_path / "named.jsonl"
    run = ctxpack("convert", str(source), "--to", "openai", "-m", "gpt-4.1", "-o", str(named))
    assert run.code == 0 and "assumed" not in run.err
    assert json.loads(named.read_text().splitlines()[0])["model"] == "gpt-4.1"


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_a_body_names_the_model_stats_reports(tmp_path, to):
    # an Anthropic managed-agent log names no model; stats reads it as its format's
    # (claude, and so claude's window), and the bodies convert writes name the same one
    source = SAMPLES / "export-timeout.anthropic-events.jsonl"
    first = json.loads(ctxpack("stats", "--json", str(source)).out)["files"][0]
    assert first["model"] == "claude"
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(source), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    assert "no model named" not in run.err
    assert "model claude assumed" in " ".join(run.err.split())
    # but no API serves a model of that name: the note says so
    assert "claude names a family, which no API serves as a model: send them with -m " \
        "naming one" in " ".join(run.err.split())
    assert {json.loads(line)["model"] for line in out.read_text().splitlines()} == {"claude"}
    if to == "openai":  # a later reading finds the same model and window
        again = json.loads(ctxpack("stats", "--json", str(out)).out)["files"][0]
        assert (again["model"], again["context_window"]) == \
            (first["model"], first["context_window"])


def test_a_body_names_no_model_where_stats_names_none(tmp_path):
    # an OpenHands log that names no model: its format assumes none
    log = tmp_path / "run.openhands.jsonl"
    log.write_text(unnamed_openhands())
    assert json.loads(ctxpack("stats", "--json", str(log)).out)["files"][0]["model"] == \
        "(not named)"
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(log), "--to", "openai", "-o", str(out))
    assert run.code == 0 and "no model named" in run.err
    assert "model" not in json.loads(out.read_text().splitlines()[0])
    # the Messages API requires a model: validate of such an Anthropic body names it
    # (it said ok), and one that names it is fine
    anthropic = tmp_path / "out.anthropic.jsonl"
    assert ctxpack("convert", str(log), "--to", "anthropic", "-o", str(anthropic)).code == 0
    run = ctxpack("validate", str(anthropic))
    assert run.code == 1 and run.out.splitlines() == [
        f"{anthropic}:1: body without a 'model', which the Messages API requires "
        "(`ctxpack convert -m` names one)"], run.out
    named = tmp_path / "named.anthropic.jsonl"
    assert ctxpack("convert", str(log), "--to", "anthropic", "-m", "claude-sonnet-4-5", "-o",
                   str(named)).code == 0
    assert ctxpack("validate", str(named)).code == 0


@pytest.mark.parametrize("to", ["markdown", "html"])
def test_a_document_is_counted_for_the_model_asked_for(tmp_path, to):
    # the log names a model ctxpack does not know; --model names one it does, and the
    # document's header says that one, as show's does
    text = (SAMPLES / "aider" / "unit-conversions.aider.chat.history.md").read_text()
    log = tmp_path / ".aider.chat.history.md"
    log.write_text(text.replace("anthropic/claude-sonnet-4-5", "acme/house-model-7"))
    out = tmp_path / f"doc.{to}"
    run = ctxpack("convert", str(log), "--to", to, "-m", "gpt-4.1", "-o", str(out))
    assert run.code == 0, run.err
    header = "model gpt-4.1 (o200k_base, exact)"
    assert header in out.read_text()
    assert header in ctxpack("show", str(log), "-m", "gpt-4.1").out
    plain = tmp_path / f"plain.{to}"
    assert ctxpack("convert", str(log), "--to", to, "-o", str(plain)).code == 0
    assert "model acme/house-model-7 (o200k_base, approximate)" in plain.read_text()


def _commands_only(folder):
    """An Aider log of two runs in which the person typed only Aider's own commands."""
    log = folder / ".aider.chat.history.md"
    log.write_text("# aider chat started at 2026-03-01 09:00:00\n\n"
                   "> Main model: gpt-4o with diff edit format\n\n#### /add app.py  \n"
                   "> Added app.py to the chat  \n\n#### /tokens  \n\n"
                   "# aider chat started at 2026-03-01 09:05:00\n\n#### /exit  \n")
    return log


@pytest.mark.parametrize("to", ["openai", "markdown"])
def test_a_log_of_commands_only_is_said_and_nothing_written(tmp_path, to):
    log = _commands_only(tmp_path)
    out = tmp_path / "out"
    run = ctxpack("convert", str(log), "--to", to, "-o", str(out))
    assert_clean_error(run, 2, f"{log}: ", "nothing to convert", "only")
    assert not out.exists()
    # with others, the rest are written and the run says which one had nothing
    ok = tmp_path / "ok.aider.chat.history.md"
    ok.write_text((SAMPLES / "aider" / "unit-conversions.aider.chat.history.md").read_text())
    many = ctxpack("convert", str(log), str(ok), "--to", to, "--out-dir", str(tmp_path / "d"))
    assert many.code == 2 and "nothing to convert" in many.err
    assert [p.name for p in (tmp_path / "d").iterdir()] == \
        [f"ok.aider.chat.history{'.jsonl' if to == 'openai' else '.md'}"]


def test_stats_says_a_log_holds_no_model_input(tmp_path):
    run = ctxpack("stats", str(_commands_only(tmp_path)))
    assert run.code == 0, run.err
    assert "0 messages" in run.out
    assert "no model input" in " ".join(run.out.split())


def _info_only(tmp_path):
    doc = tmp_path / "session-info.json"
    doc.write_text(json.dumps({"sessionId": "s1", "projectHash": "p1", "messages": [
        {"id": "m1", "timestamp": "2026-03-01T09:00:00Z", "type": "info",
         "content": "Authenticated with a cached login"}]}))
    return doc


def _export_of_no_message(tmp_path):
    doc = tmp_path / "session.json"
    doc.write_text(json.dumps({"info": {"id": "ses_1", "title": "New session"},
                               "messages": []}))
    return doc


@pytest.mark.parametrize(("make", "why"), [
    (_commands_only, "the file holds only Aider's own lines (commands, notices)"),
    # each said Aider's words: "the agent's own lines (commands, notices)"
    (_info_only, "the recording holds no user or gemini message (its session's metadata "
                 "and notices only)"),
    (_export_of_no_message, "the session holds no message with text, a call or an image")])
def test_a_file_of_no_messages_prints_no_empty_role_table(tmp_path, make, why):
    path = make(tmp_path)
    for output in ("table", "markdown"):
        run = ctxpack("stats", "-f", output, str(path))
        assert run.code == 0, run.err
        assert f"no model input: {why}" in " ".join(run.out.split())
        assert "Tokens by role" not in run.out
    doc = json.loads(ctxpack("stats", "--json", str(path)).out)
    assert doc["files"][0]["messages"] == 0 and doc["files"][0]["by_role"] == {}
    # a file with messages still has its table
    assert "Tokens by role" in ctxpack("stats", str(SAMPLES / "support-chat.openai.jsonl")).out


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_params("aider", pattern="zen-mcp*.md"))
def test_the_corpus_log_of_commands_only(tmp_path, path):
    out = tmp_path / "out.jsonl"
    assert_clean_error(ctxpack("convert", str(path), "--to", "openai", "-o", str(out)), 2,
                       "nothing to convert")
    assert not out.exists()
    assert "no model input" in " ".join(ctxpack("stats", str(path)).out.split())


def test_a_log_cleared_at_its_end_points_to_all(tmp_path):
    log = tmp_path / ".aider.chat.history.md"
    log.write_text("# aider chat started at 2026-03-01 09:00:00\n\n#### what is 2+2?  \n\n"
                   "4.\n\n> Tokens: 1.1k sent, 2 received.\n\n#### /clear  \n")
    out = tmp_path / "out.md"
    run = ctxpack("convert", str(log), "--to", "markdown", "-o", str(out))
    assert_clean_error(run, 2, "nothing to convert", "outside the model's context",
                       "--all converts the whole log")
    assert not out.exists()
    run = ctxpack("convert", str(log), "--to", "markdown", "--all", "-o", str(out))
    assert run.code == 0, run.err
    assert "what is 2+2?" in out.read_text()


def _text_only(body):
    """The body without its system prompt and with only its text blocks: a shape a Chat
    Completions body with list content has too."""
    messages = [{"role": m["role"], "content": text} for m in body["messages"]
                if (text := [b for b in m["content"] if b["type"] == "text"])]
    return {k: v for k, v in body.items() if k != "system"} | {"messages": messages}


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.json*")))
def test_an_anthropic_body_of_text_only_reads_back_as_anthropic(sample, tmp_path):
    out = tmp_path / "anthropic.jsonl"
    run = ctxpack("convert", str(SAMPLES / sample), "--to", "anthropic", "-o", str(out))
    assert run.code == 0, run.err
    bodies = [_text_only(json.loads(line)) for line in out.read_text().splitlines()]
    assert all(b["max_tokens"] > 0 for b in bodies)  # the Messages API requires it
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    t = load(plain)
    assert t.format == "anthropic-requests", (t.format, t.unsure)
    claude = "claude" in str(t.model)
    assert bool(t.unsure) != claude, t.unsure  # sure by a Claude model, else says why
    run = ctxpack("stats", str(plain))
    assert run.code == 0 and "anthropic-requests" in run.out
    assert ("format unsure" in run.out) != claude
    # Chat Completions conversations of the same messages, with no max_tokens
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps({"messages": b["messages"]}) + "\n" for b in bodies))
    assert load(chat).format == "openai-conversations"


@pytest.mark.parametrize(("extra", "fmt", "unsure"), [
    ({"model": "claude-sonnet-4-5", "max_tokens": 1024}, "anthropic-requests", False),
    # what `convert --to openai` writes for a transcript that names a Claude model
    ({"model": "claude-sonnet-4-5"}, "openai-conversations", False),
    ({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 1024}, "anthropic-requests",
     False),
    ({"max_tokens": 1024}, "anthropic-requests", False),
    ({"model": "gpt-4o", "max_tokens": 1024}, "anthropic-requests", True),
    ({"model": "gpt-4o", "max_completion_tokens": 1024}, "openai-conversations", False),
    ({"model": "gpt-4o", "max_tokens": 1024, "seed": 7}, "openai-conversations", False),
    ({"model": "gpt-4o"}, "openai-conversations", False),
])
def test_what_tells_an_anthropic_body_from_a_chat_completions_one(tmp_path, extra, fmt, unsure):
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "4."}]}]
    path = tmp_path / "bodies.jsonl"
    path.write_text(json.dumps({**extra, "messages": messages}) + "\n")
    t = load(path)
    assert (t.format, bool(t.unsure)) == (fmt, unsure), t.unsure


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.json*")))
def test_convert_output_reads_back_as_the_api_it_is_for(sample, tmp_path):
    for to, fmt in (("anthropic", "anthropic-requests"), ("openai", "openai-conversations")):
        out = tmp_path / f"{to}.jsonl"
        run = ctxpack("convert", str(SAMPLES / sample), "--to", to, "-o", str(out))
        assert run.code == 0, run.err
        written = [json.loads(line) for line in out.read_text().splitlines()]
        t = load(out)
        assert t.format == fmt and not t.unsure, (t.format, t.unsure)
        # (a user message the alternation merged several turns into reads as those turns,
        # each after the first sent as blocks of the message before it: `joined`)
        sent = [m for m in t.messages if not m.joined]
        assert len(sent) == sum(len(b["messages"]) + ("system" in b) for b in written)
        for args in (("stats", "-m", "gpt-4o"), ("show", "--no-pager"), ("validate",)):
            run = ctxpack(*args, str(out))
            assert run.code == 0 and fmt in run.out + run.err, (args, run.err)
        # read back, the bodies are the messages they hold: converted again, the same
        assert request_bodies(t, to) == written
    # compress rewrites the transcript the bodies came from, not the bodies
    assert_clean_error(ctxpack("compress", str(tmp_path / "anthropic.jsonl"), "-o",
                               str(tmp_path / "small.jsonl")), 2, "request bodies", "convert")
    assert not (tmp_path / "small.jsonl").exists()


def test_a_freeform_call_becomes_a_custom_tool_call_and_reads_back(tmp_path):
    # Codex's apply_patch takes free text, not JSON: Chat Completions has custom tools'
    # calls for that, and the body reads back with the same calls, each answered
    source = SAMPLES / "refactor.codex.jsonl"
    out = tmp_path / "body.json"
    run = ctxpack("convert", str(source), "--to", "openai", "-o", str(out))
    assert run.code == 0, run.err
    body = json.loads(out.read_text())
    assert_accepted(body, "openai")
    calls = [c for m in body["messages"] for c in m.get("tool_calls") or ()]
    custom = [c for c in calls if c["type"] == "custom"]
    assert custom and {c["custom"]["name"] for c in custom} == {"apply_patch"}
    assert all(c["custom"]["input"].startswith("*** Begin Patch") for c in custom)
    back = load_values(body["messages"], "openai")
    assert [(c.id, c.name, c.arguments) for m in back.messages for c in m.tool_calls] == \
        [(c["id"], (c.get("custom") or c.get("function"))["name"],
          c["custom"]["input"] if c["type"] == "custom" else c["function"]["arguments"])
         for c in calls]


def test_the_reasoning_note_does_not_call_signed_thinking_unsigned(tmp_path):
    # the sample's thinking blocks carry Anthropic's signature
    path = ROOT / "samples" / "multi-round.anthropic.jsonl"
    assert b'"signature"' in path.read_bytes()
    run = ctxpack("convert", str(path), "--to", "anthropic", "-o", str(tmp_path / "a.jsonl"))
    assert run.code == 0, run.err
    assert "unsigned" not in run.err and "reasoning parts left out" in run.err
    assert "signature" in run.err


def test_an_anthropic_body_of_a_model_anthropic_does_not_serve_says_so(tmp_path):
    source = SAMPLES / "refactor.codex.jsonl"
    run = ctxpack("convert", str(source), "--to", "anthropic", "-o", str(tmp_path / "a.jsonl"))
    assert run.code == 0, run.err
    assert "the bodies name gpt-5.1-codex, which the Messages API does not serve" in run.err
    named = ctxpack("convert", str(source), "--to", "anthropic", "-m", "claude-opus-4-6",
                    "-o", str(tmp_path / "b.jsonl"))
    assert named.code == 0, named.err
    assert "does not serve" not in named.err
    assert json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])["model"] == \
        "claude-opus-4-6"


def test_an_anthropic_body_ends_on_the_users_turn(tmp_path):
    """Claude's newest models refuse a request that ends on the assistant's turn (no
    prefill): the log's last replies are left out of the body and counted; --all keeps
    them, and a Chat Completions body, which takes a last assistant message, keeps them."""
    log = _write(tmp_path, [
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4."},
        {"role": "assistant", "content": "Anything else?"}])
    out = tmp_path / "a.jsonl"
    run = ctxpack("convert", str(log), "--to", "anthropic", "-o", str(out))
    assert run.code == 0, run.err
    [body] = [json.loads(line) for line in out.read_text().splitlines()]
    assert_accepted(body, "anthropic")
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}]
    [line] = [x for x in run.err.splitlines() if "left out" in x]
    assert f"{log}: 2 {LAST_REPLY_LEFT_OUT}" in " ".join(line.split())
    kept = tmp_path / "kept.jsonl"
    run = ctxpack("convert", str(log), "--to", "anthropic", "--all", "-o", str(kept))
    assert run.code == 0 and "left out" not in run.err, run.err
    [whole] = [json.loads(line) for line in kept.read_text().splitlines()]
    assert whole["messages"][-1] == {"role": "assistant", "content": [
        {"type": "text", "text": "4."}, {"type": "text", "text": "Anything else?"}]}
    chat = tmp_path / "chat.jsonl"
    run = ctxpack("convert", str(log), "--to", "openai", "-o", str(chat))
    assert run.code == 0 and "left out" not in run.err, run.err
    [openai] = [json.loads(line) for line in chat.read_text().splitlines()]
    assert [m["content"] for m in openai["messages"]] == ["What is 2+2?", "4.", "Anything else?"]


def test_a_log_ending_on_a_result_or_a_call_has_no_reply_left_out(tmp_path):
    # a call's result (or the one convert gives a call the log never answered) is the
    # user's turn already: nothing is left out, and the call stays answered
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}
    for tail in ([call, {"role": "tool", "tool_call_id": "a", "content": "x.txt"}], [call]):
        notes = Notes()
        source = load(_write(tmp_path, [{"role": "user", "content": "Look."}, *tail]))
        [body] = request_bodies(source, "anthropic", notes)
        assert_accepted(body, "anthropic")
        assert LAST_REPLY_LEFT_OUT not in notes.counts
        assert body["messages"][-1]["content"][0]["tool_use_id"] == "a"


def test_a_note_of_one_thing_says_it_in_the_singular():
    # "1 assistant replies at the end left out", "1 user messages added"
    notes = Notes()
    notes.add(LAST_REPLY_LEFT_OUT)
    notes.add("model calls' recorded usage left out (a request body has no place for it)")
    notes.add("tool results that answer no open call kept as user text", 2)
    assert notes.lines() == [
        "1 assistant reply at the end left out, " + LAST_REPLY_LEFT_OUT.split(", ", 1)[1],
        "1 model call's recorded usage left out (a request body has no place for it)",
        "2 tool results that answer no open call kept as user text"]


def test_a_blank_turn_left_out_is_named_in_the_singular(tmp_path):
    log = _write(tmp_path, [{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": "   "},
                            {"role": "user", "content": "still there?"}])
    run = ctxpack("convert", str(log), "--to", "anthropic", "-m", "claude-opus-4-6", "-o",
                  str(tmp_path / "a.jsonl"))
    assert run.code == 0, run.err
    # the two messages of the person's, with no reply left between, are one turn: the
    # second is labelled, to read back as its own round
    assert said(run.err) == [f"warning: {log}: 1 turn of nothing but blank text left out (the "
                             "Messages API refuses it)",
                             f"warning: {log}: 1 message of the person's opened with [the "
                             "person's message], so that it reads back as a turn of its own: "
                             "joined by alternation to one of theirs before, or opening as "
                             "an older convert's labels did"]


def test_what_comes_with_tool_results_and_is_not_the_persons_keeps_the_rounds(tmp_path):
    """Text an agent sends after a tool's result (a reminder, the note of an interrupt) is
    no turn of the person's: converted, it goes into that result, so that neither API's
    reader takes it for one. The person's words after it stay theirs, a round of its own
    in both bodies (in Anthropic's, in the user message the result opens)."""
    from .test_format_claude_code import answer, calls, piece, said, user

    path = _write(tmp_path, [
        user("u1", None, "Fix the failing test."),
        piece("a1", "u1", "m1", calls("c1")),
        answer("r1", "a1", "c1", "1 failed"),
        user("s1", "r1", "<system-reminder>\nThe todo list is empty.\n</system-reminder>"),
        user("i1", "s1", "[Request interrupted by user]"),
        user("u2", "i1", "Run the linter first."),
        piece("a2", "u2", "m2", said("Linted."))])
    for to in ("openai", "anthropic"):
        out = tmp_path / f"out.{to}.jsonl"
        run = ctxpack("convert", str(path), "--to", to, "-o", str(out))
        assert run.code == 0, run.err
        assert "2 messages not the person's sent with tool results" in run.err
        run = ctxpack("stats", "--json", str(path), str(out))
        assert run.code == 0, run.err
        assert [f["rounds"] for f in json.loads(run.out)["files"]] == [2, 2]
        (body,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert_accepted(body, to)
        if to == "openai":
            assert [m["role"] for m in body["messages"]] == [
                "user", "assistant", "tool", "user", "assistant"]
            result, person = body["messages"][2]["content"], body["messages"][3]["content"]
        else:
            (result_block, person_block) = body["messages"][2]["content"]
            result, person = result_block["content"], person_block["text"]
        assert result == ("1 failed\n<system-reminder>\nThe todo list is empty.\n"
                          "</system-reminder>\n[Request interrupted by user]")
        assert person == "Run the linter first."


def test_calls_given_one_id_again_are_each_answered_by_their_own_result(tmp_path):
    """tau-bench's logs give a later call the id of an earlier one: each result answers
    the oldest call of its id not yet answered, so no call is left without one and no
    result becomes a user message (a round of the person's, read back)."""
    def call(name: str) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name,
                                                              "arguments": "{}"}}]}
    path = _write(tmp_path, [
        {"role": "user", "content": "Find me a flight."},
        call("search"), {"role": "tool", "tool_call_id": "call_1", "content": "none direct"},
        call("search_onestop"), {"role": "tool", "tool_call_id": "call_1", "content": "HAT057"},
        {"role": "assistant", "content": "HAT057 it is."}])
    for to in ("openai", "anthropic"):
        notes = Notes()
        [body] = request_bodies(load(path), to, notes)
        assert_accepted(body, to)
        assert set(notes.counts) <= {LAST_REPLY_LEFT_OUT}
        out = _write(tmp_path, [body], name=f"out.{to}.jsonl")
        run = ctxpack("stats", "--json", str(path), str(out))
        assert run.code == 0, run.err
        assert [f["rounds"] for f in json.loads(run.out)["files"]] == [1, 1]
        text = json.dumps(body)
        assert NO_RESULT not in text and "[result of tool call" not in text


def test_a_call_left_unanswered_keeps_no_result_a_later_call_of_its_id_has(tmp_path):
    # a call the log never answered, then a later call given the same id and answered:
    # the result is the later call's, and the earlier one gets the result that says it has
    # none (not the later one's, leaving the later one without)
    def call(name: str) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name,
                                                              "arguments": "{}"}}]}
    path = _write(tmp_path, [
        {"role": "user", "content": "Find me a flight."}, call("search"),
        {"role": "user", "content": "Still there?"}, call("search_onestop"),
        {"role": "tool", "tool_call_id": "call_1", "content": "HAT057"},
        {"role": "assistant", "content": "HAT057 it is."}])
    for to in ("openai", "anthropic"):
        out = tmp_path / f"out.{to}.jsonl"
        run = ctxpack("convert", str(path), "--to", to, "-o", str(out))
        assert run.code == 0, run.err
        body = json.loads(out.read_text())
        assert_accepted(body, to)
        if to == "openai":
            answers = {m["tool_call_id"]: m["content"] for m in body["messages"]
                       if m["role"] == "tool"}
            names = {c["id"]: c["function"]["name"] for m in body["messages"]
                     for c in m.get("tool_calls") or ()}
        else:
            answers = {b["tool_use_id"]: b["content"] for m in body["messages"]
                       for b in m["content"] if b["type"] == "tool_result"}
            names = {b["id"]: b["name"] for m in body["messages"] for b in m["content"]
                     if b["type"] == "tool_use"}
        by_name = {names[i]: text for i, text in answers.items()}
        assert by_name == {"search": NO_RESULT, "search_onestop": "HAT057"}


def test_validate_names_the_call_left_unanswered_where_a_later_call_takes_its_id(tmp_path):
    calls = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]}
        for name in ("first", "second")]
    doc = tmp_path / "run.traj.json"
    doc.write_text(json.dumps({"messages": [
        {"role": "user", "content": "go"}, calls[0], {"role": "user", "content": "hm?"},
        calls[1], {"role": "tool", "tool_call_id": "c1", "content": "done"},
        {"role": "assistant", "content": "ok"}]}))
    run = ctxpack("validate", str(doc))
    assert run.code == 1
    assert "messages[1]: tool call 'c1' (first) has no result before the call at" in run.out
    assert "(second)" not in run.out and "used twice" not in run.out


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_an_exit_before_the_runs_end_is_user_text_under_its_role_with_a_note(tmp_path, to):
    # mini-swe-agent's `exit` in the middle of a run is read (validate names it); convert
    # wrote it as the person's words, without a word
    path = tmp_path / "run.traj.json"
    path.write_text(json.dumps({"info": {}, "messages": [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix the parser."},
        {"role": "exit", "content": "stopped early"},
        {"role": "assistant", "content": "Fixed it."},
        {"role": "user", "content": "Thanks."}]}))
    run = ctxpack("convert", str(path), "--to", to)
    assert run.code == 0, run.err
    assert "1 message of a role no API knows (such as mini-swe-agent's exit before the run's " \
        "end) written as user text under its role" in " ".join(run.err.split())
    (body,) = [json.loads(line) for line in run.out.splitlines()]
    texts = [m["content"] if isinstance(m["content"], str) else
             "\n".join(b["text"] for b in m["content"]) for m in body["messages"]
             if m["role"] == "user"]
    assert "[exit]\nstopped early" in "\n".join(texts)
    assert all("exit" not in m["role"] for m in body["messages"])


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_a_role_no_api_knows_is_user_text_under_its_role_with_a_note(tmp_path, to):
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in (
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
        {"role": "wizard", "content": "zap"}, {"role": "assistant", "content": "done"})))
    run = ctxpack("convert", str(path), "--to", to)
    assert run.code == 0, run.err
    assert "1 message of a role no API knows" in run.err and "under its role" in run.err
    (body,) = [json.loads(line) for line in run.out.splitlines()]
    wizard = body["messages"][2]
    text = wizard["content"] if isinstance(wizard["content"], str) else \
        wizard["content"][0]["text"]
    assert wizard["role"] == "user" and text == "[wizard]\nzap"


@pytest.mark.parametrize("to", ["openai", "anthropic"])
def test_lone_surrogates_become_the_replacement_character_in_bodies(tmp_path, to):
    """A lone surrogate (JSON's `\\ud800` read alone) is no Unicode text: a body holding
    one, even escaped, is refused; convert writes U+FFFD for it and says how many."""
    src = tmp_path / "half.jsonl"
    src.write_text(json.dumps({"role": "user", "content": "left \ud800 right \udfff"}) + "\n"
                   + json.dumps({"role": "assistant", "content": "ok \ud801"}) + "\n")
    out = tmp_path / "out.jsonl"
    run = ctxpack("convert", str(src), "--to", to, "--all", "-o", str(out))
    assert run.code == 0, run.err
    assert "3 lone surrogates (halves of UTF-16 pairs" in run.err
    text = out.read_bytes().decode("utf-8")  # (strict: no surrogate in any form)
    assert "\\ud8" not in text.lower() and "\\udf" not in text.lower()
    assert "left \ufffd right \ufffd" in text and "ok \ufffd" in text
    assert ctxpack("validate", str(out)).code == 0


@pytest.mark.parametrize("to", ["markdown", "html"])
def test_lone_surrogates_become_the_replacement_character_in_documents(tmp_path, to):
    # as in the API bodies: U+FFFD where the text held half a pair, and said (not a silent ?)
    src = tmp_path / "half.jsonl"
    src.write_text(json.dumps({"role": "user", "content": "left \ud800 right \udfff"}) + "\n"
                   + json.dumps({"role": "assistant", "content": "ok \ud801"}) + "\n")
    out = tmp_path / f"out.{to}"
    run = ctxpack("convert", str(src), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    assert "3 lone surrogates (halves of UTF-16 pairs" in run.err
    text = out.read_bytes().decode("utf-8")
    assert "left \ufffd right \ufffd" in text and "ok \ufffd" in text


def test_lone_surrogates_of_a_message_split_in_turns_are_said_once(tmp_path):
    # a user message of a result and the person's words is two turns of one record: its
    # one half of a pair is written once as U+FFFD, and said once
    src = tmp_path / "split.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                           "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "out \ud800"},
            {"type": "text", "text": "now do the next thing please"}]},
        {"role": "assistant", "content": "ok"}]) + "\n")
    out = tmp_path / "out.md"
    run = ctxpack("convert", str(src), "--format", "anthropic", "--to", "markdown",
                  "-o", str(out))
    assert run.code == 0, run.err
    assert out.read_text().count("\ufffd") == 1
    assert "1 lone surrogate (half of a UTF-16 pair" in run.err


@pytest.mark.parametrize("to", ["markdown", "html"])
def test_a_document_of_a_file_whose_name_is_no_utf8(tmp_path, to):
    # the name's stray byte (a surrogate in the str Python gives for it) is no text either:
    # the document heads with U+FFFD for it, as for the bodies, not a crash on writing
    src = tmp_path / os.fsdecode(b"chat\xff.jsonl")
    shutil.copy(SAMPLES / "support-chat.openai.jsonl", src)
    out = tmp_path / f"out.{to}"
    run = ctxpack("convert", str(src), "--to", to, "-o", str(out))
    assert run.code == 0, run.err
    assert "chat\ufffd.jsonl" in out.read_bytes().decode("utf-8")

"""`ctxpack show`: the readable view (build_view), its Rich rendering, and the command."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from rich.console import Console

from ctxpack.errors import UsageError
from ctxpack.loader import load
from ctxpack.render.show import print_view
from ctxpack.tokens import TokenCounter
from ctxpack.transcript import Image, Message, Text, ToolCall, ToolResult, Transcript
from ctxpack.view import Fold, build_view, pretty_arguments, view_file

from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, ctxpack

OUTPUT = [f"output line {i:04d} of 500" for i in range(1, 501)]
OUTPUT[0] = "\x1b[31mRED\x1b[0m " + OUTPUT[0]  # a coloured tool output must not colour us
MESSAGES = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Please read src/app.py and fix the bug"},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "src/app.py", "limit": 500}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "\n".join(OUTPUT)},
    {"role": "assistant", "content": "Fixed it. Note: [bold]x[/bold] and [red]y[/red] stay."},
    {"role": "user", "content": "Now the second round: run the tests"},
    {"role": "assistant", "content": "All 42 tests pass."},
    {"role": "user", "content": "Thanks, that is all"},
]


def sample_params() -> list:
    files = sorted(SAMPLES.glob("*.jsonl"))
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no samples/*.jsonl yet"))]
    return [pytest.param(p, id=p.name) for p in files]


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "run.jsonl"
    p.write_text("".join(json.dumps(m) + "\n" for m in MESSAGES), encoding="utf-8")
    return p


@pytest.fixture
def counter():
    return TokenCounter("gpt-4o")


def show(*args: str, **kwargs) -> str:
    run = ctxpack("show", *args, **kwargs)
    assert run.code == 0, run.err
    return run.out


def rendered(view, **console) -> str:
    out = io.StringIO()
    print_view(Console(file=out, width=100, **console), view)
    return out.getvalue()


def folded_tokens(counter: TokenCounter, hidden: list[str]) -> int:
    return counter.text("\n".join(hidden))


# --- the command -------------------------------------------------------------------------


def test_plain_output_in_a_pipe_has_no_escape_codes(path):
    out = show(str(path), env={"NO_COLOR": ""})
    assert "\x1b" not in out
    assert "RED output line 0001 of 500" in out
    assert "round 1" in out and "read_file" in out


def test_a_long_tool_output_is_folded_with_the_exact_count(path, counter):
    out = show(str(path))
    hidden = OUTPUT[8:-4]
    marker = f"… {len(hidden)} lines, {folded_tokens(counter, hidden):,} tokens folded " \
             "(--full to show) …"
    assert marker in out
    assert "output line 0008 of 500" in out and "output line 0009 of 500" not in out
    assert "output line 0497 of 500" in out and "output line 0250 of 500" not in out


def test_full_shows_everything(path):
    out = show(str(path), "--full")
    assert "folded" not in out
    assert "output line 0250 of 500" in out and "output line 0500 of 500" in out


def test_round_shows_that_round_only(path):
    out = show(str(path), "--round", "2")
    assert "Now the second round" in out and "All 42 tests pass." in out
    assert "round 2" in out and "round 1" not in out and "round 3" not in out
    assert "Please read src/app.py" not in out and "Thanks, that is all" not in out


def test_round_out_of_range_is_a_clean_error(path):
    assert_clean_error(ctxpack("show", str(path), "--round", "99"), 2,
                       "--round 99", "rounds 0 to 3")


def test_grep_keeps_matching_messages_and_says_how_many(path):
    out = show(str(path), "--grep", "TESTS PASS")
    assert "All 42 tests pass." in out and "1 of 8 messages match" in out
    assert "Please read src/app.py" not in out and "Thanks, that is all" not in out
    assert "round 2" in out and "round 1" not in out


def test_bad_regex_is_a_clean_error(path):
    assert_clean_error(ctxpack("show", str(path), "--grep", "fix("), 2, "--grep 'fix('",
                       "regular expression")


def test_tool_call_arguments_are_shown_indented(path):
    out = show(str(path))
    assert '→ read_file' in out
    assert '  "path": "src/app.py",' in out and '  "limit": 500' in out
    assert "tool · read_file" in out


def test_rich_markup_in_a_message_prints_literally(path):
    out = show(str(path))
    assert "Note: [bold]x[/bold] and [red]y[/red] stay." in out


def test_stdin_and_no_pager(path):
    out = show("-", "--no-pager", input=path.read_bytes())
    assert "<stdin>" in out and "Thanks, that is all" in out


def test_unknown_file_is_a_clean_error(tmp_path):
    assert_clean_error(ctxpack("show", str(tmp_path / "missing.jsonl")), 2, "missing.jsonl")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_terminal_gets_colours_through_the_pager_with_less_r(path):
    pager = 'echo "LESS=$LESS"; sed "s/^/PAGED:/"'
    out = _on_a_terminal(["show", str(path)], {"PAGER": pager, "NO_COLOR": ""})
    assert "LESS=-FRX" in out
    assert "PAGED:" in out and "\x1b[" in out
    assert "[bold]x[/bold]" in out
    plain = _on_a_terminal(["show", "--no-pager", str(path)], {"NO_COLOR": "1"})
    assert "PAGED:" not in plain and "\x1b[36m" not in plain and "read_file" in plain


def _on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    main, child = os.openpty()
    full_env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color", **env}
    full_env.pop("LESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "ctxpack", *args], stdin=child,
                            stdout=child, stderr=child, env=full_env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("sample", sample_params())
def test_every_sample_renders(sample):
    out = show(str(sample))
    assert "round" in out and "tokens" in out and "\x1b" not in out


# --- the view ----------------------------------------------------------------------------


def test_view_counts_and_attributes_results(path, counter):
    view = build_view(load(str(path)), counter, flagged=False)
    h = view.header
    assert (h.messages, h.rounds, h.steps, h.format) == (8, 4, 3, "openai")
    assert [r.number for r in view.rounds] == [0, 1, 2, 3]
    entries = [e for r in view.rounds for e in r.entries]
    assert sum(e.tokens for e in entries) + 3 == h.tokens
    result = entries[3]
    assert (result.role, result.tool, result.line) == ("tool", "read_file", 4)
    assert entries[2].step == 1 and entries[4].step == 2 and entries[6].step == 1
    assert view.rounds[1].title == "Please read src/app.py and fix the bug"


def test_view_fold_marker_states_what_was_hidden(path, counter):
    view = build_view(load(str(path)), counter, flagged=False)
    body = view.rounds[1].entries[2].segments[0].body
    folds = [x for x in body if isinstance(x, Fold)]
    assert len(folds) == 1 and folds[0].lines == 488
    assert folds[0].tokens == folded_tokens(counter, OUTPUT[8:-4])
    assert folds[0].label.startswith("… 488 lines, ")
    assert [x for x in body if isinstance(x, str)][-1] == "output line 0500 of 500"
    assert body[0] == "RED output line 0001 of 500"  # escape sequences dropped


def test_view_full_has_no_folds(path, counter):
    view = build_view(load(str(path)), counter, flagged=False, full=True)
    bodies = [s.body for r in view.rounds for e in r.entries for s in e.segments]
    assert not any(isinstance(x, Fold) for b in bodies for x in b)
    assert sum(len(b) for b in bodies) >= 500


def test_view_grep_keeps_matching_lines_visible_inside_a_fold(path, counter):
    view = build_view(load(str(path)), counter, flagged=False, grep=r"line 0250")
    assert view.matches == 1
    body = view.rounds[0].entries[0].segments[0].body
    assert "output line 0250 of 500" in body
    assert "output line 0249 of 500" in body and "output line 0251 of 500" in body
    assert sum(x.lines for x in body if isinstance(x, Fold)) == 500 - 12 - 3


def test_view_round_errors_name_the_range(path, counter):
    with pytest.raises(UsageError, match="rounds 0 to 3"):
        build_view(load(str(path)), counter, flagged=False, round=7)
    with pytest.raises(UsageError, match="not a valid regular expression"):
        build_view(load(str(path)), counter, flagged=False, grep="[")


def test_view_cuts_a_very_long_line(counter):
    line = "x" * 5000
    t = Transcript("openai", "t.jsonl", messages=(
        Message("user", (Text("hi"),), lines=(1,), human=True),
        Message("assistant", (ToolCall("c1", "shell", '{"cmd": "cat big"}'),), lines=(2,)),
        Message("tool", (ToolResult("c1", (Text(line),)),), lines=(3,))))
    body = build_view(t, counter, flagged=False).rounds[0].entries[2].segments[0].body
    assert len(body[0]) == 400 and isinstance(body[1], Fold)
    assert body[1].chars == 4600 and body[1].tokens == counter.text("x" * 4600)
    assert "4,600 more characters" in body[1].label


def test_view_segments_of_every_kind(counter):
    t = Transcript("anthropic", "t.jsonl", messages=(
        Message("user", (Text("look"), Image("image/png", url="https://e.x/a.png")),
                lines=(1,), human=True),
        Message("assistant", (ToolCall("t1", "apply_patch", "*** Begin Patch\n+x\n"),),
                lines=(2,)),
        Message("user", (ToolResult("t1", (Text("boom"),), is_error=True),
                         ToolResult("t9", (Text("?"),))), lines=(3,))))
    entries = build_view(t, counter, flagged=False).rounds[0].entries
    image = entries[0].segments[1]
    assert image.kind == "image" and image.tokens > 0 and "https://e.x/a.png" in image.body[0]
    assert entries[1].segments[0].body == ("*** Begin Patch", "+x")
    bad, unknown = entries[2].segments
    assert bad.is_error and bad.tool == "apply_patch" and unknown.tool == "(unknown tool)"
    assert entries[2].tool == "apply_patch, (unknown tool)"
    text = rendered(build_view(t, counter, flagged=False))
    assert "← apply_patch · error  1 token\n      boom" in text
    assert "← (unknown tool)  1 token\n      ?" in text


def test_pretty_arguments():
    assert pretty_arguments('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty_arguments("{}") == ""
    assert pretty_arguments("ls -la") == "ls -la"
    assert pretty_arguments('{"s": "é"}') == '{\n  "s": "é"\n}'


def test_rendering_escapes_markup_and_colours_only_a_terminal(path, counter):
    view = build_view(load(str(path)), counter, flagged=False)
    plain = rendered(view)
    assert "\x1b" not in plain and "[bold]x[/bold]" in plain
    coloured = rendered(view, force_terminal=True, color_system="standard")
    assert "\x1b[" in coloured and "[bold]x[/bold]" in coloured


@pytest.mark.corpus
@pytest.mark.parametrize("corpus_file", corpus_params("anthropic-agent-events",
                                                      "anthropic-messages", "claude-code",
                                                      "codex"))
def test_every_corpus_file_renders(corpus_file):
    view = view_file(str(corpus_file))
    h = view.header
    assert sum(len(r.entries) for r in view.rounds) == h.messages
    assert len(view.rounds) == h.rounds
    text = rendered(view)
    assert text.startswith(str(corpus_file)[:60]) and "\x1b" not in text
    full = view_file(str(corpus_file), full=True, round=view.rounds[-1].number if view.rounds
                     else None)
    assert not any(isinstance(x, Fold) for r in full.rounds for e in r.entries
                   for s in e.segments for x in s.body)


def test_view_marks_where_each_conversation_starts(counter):
    t = Transcript("openai-conversations", "c.jsonl", messages=(
        Message("user", (Text("2+2?"),), lines=(1,), human=True, conversation=0),
        Message("assistant", (Text("4"),), lines=(1,), conversation=0),
        Message("system", (Text("Be brief."),), lines=(2,), conversation=1),
        Message("user", (Text("Capital?"),), lines=(2,), human=True, conversation=1)))
    view = build_view(t, counter, flagged=False)
    marks = [e.conversation for r in view.rounds for e in r.entries]
    assert marks == [1, None, 2, None]
    assert "conversation 2\nline 2  system" in rendered(view)


def test_grep_matches_are_highlighted_on_a_terminal(path, counter):
    view = build_view(load(str(path)), counter, flagged=False, grep="line 0250")
    coloured = rendered(view, force_terminal=True, color_system="standard")
    assert "output \x1b[7mline 0250\x1b[0m of 500" in coloured


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("command", ["stats", "show"])
def test_a_terminal_that_cannot_print_every_character_gets_the_rest(
        command: str, encoding: str) -> None:
    """`·`, `×` and box lines an encoding lacks come out as '?', not as an internal error."""
    path = SAMPLES / "coding-agent.claude-code.jsonl"
    run = ctxpack(command, str(path), env={"PYTHONIOENCODING": encoding})
    assert run.code == 0, run.err
    assert "Error" not in run.err and "4,246 tokens" in run.out.replace("~", "")
    assert "?" in run.out  # what the encoding lacks, replaced


@pytest.mark.parametrize("sample", ["coding-agent.claude-code.jsonl",
                                    "multi-round.anthropic.jsonl",
                                    "anthropic-array/late-orders.anthropic-array.json"])
def test_a_message_of_tool_results_only_is_shown_as_tool(sample, tmp_path):
    # results inside a user message were shown `user · Read`; stats counts them as tool
    path = SAMPLES / sample
    t = load(str(path))
    results = [m for m in t.messages if m.result_only]
    assert results and all(m.role == "user" for m in results)
    run = ctxpack("show", "--full", str(path), env={"COLUMNS": "100"})
    assert run.code == 0, run.err
    heads = [line for line in run.out.splitlines() if line.startswith(("line ", "["))]
    assert not [h for h in heads if "user · " in h], heads
    assert len([h for h in heads if "  tool · " in h]) >= len(results)
    out = tmp_path / "doc.md"
    assert ctxpack("convert", str(path), "--to", "markdown", "-o", str(out)).code == 0
    text = out.read_text()
    assert " · user · " not in text and " · tool · " in text


def test_what_show_leaves_out_says_how_to_see_it():
    """Messages outside the model's context are not shown; the line saying so names the
    command that shows them, and a round before the person's first message is named so."""
    run = ctxpack("show", "--no-pager", str(SAMPLES / "plateau-fix.gemini-cli.jsonl"))
    assert run.code == 0, run.err
    said = " ".join(run.out.split())
    assert "messages outside the model's context (" in said
    assert "`ctxpack convert --all` shows them" in said
    # (the Claude Code sample opens on user lines that are the agent's, not the person's)
    opened = ctxpack("convert", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--to",
                     "markdown")
    assert "## Round 0: before the person's first message" in opened.out

"""Files of one session joined end to end (`cat a.jsonl b.jsonl`): each session is read as
a conversation of its own, validate names where the second begins, compress refuses, and
the file is written back as read. A forked or resumed session's headers are one session."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ctxpack

from .conftest import SAMPLES
from .helpers import assert_clean_error
from .helpers import ctxpack as run_cli

CODEX = SAMPLES / "refactor.codex.jsonl"
GEMINI = SAMPLES / "plateau-fix.gemini-cli.jsonl"
CLAUDE = SAMPLES / "coding-agent.claude-code.jsonl", SAMPLES / "attachments.claude-code.jsonl"
CODEX_ID = "019bbbd8-350a-76ce-809a-d863a39df359"
GEMINI_ID = "5f0c2e8a-91b7-4d4e-b3a6-2c71e0d9a413"


def other_session(path: Path, ident: str) -> bytes:
    """The session of `path` under another id (as another run of the same task)."""
    return path.read_bytes().replace(ident.encode(), b"0000aaaa-another-session")


JOINED = {  # format -> (the first file's bytes, the second's)
    "codex": (CODEX.read_bytes(), other_session(CODEX, CODEX_ID)),
    "gemini-cli": (GEMINI.read_bytes(), other_session(GEMINI, GEMINI_ID)),
    "claude-code": (CLAUDE[0].read_bytes(), CLAUDE[1].read_bytes()),
}


def stats_of(path: Path) -> dict:
    run = run_cli("stats", str(path), "--json")
    assert run.code == 0, run.err
    return json.loads(run.out)["files"][0]


@pytest.mark.parametrize("format", sorted(JOINED))
def test_each_joined_session_is_a_conversation_of_its_own(tmp_path: Path, format: str) -> None:
    first, second = JOINED[format]
    parts = []
    for n, data in enumerate((first, second)):
        parts.append(tmp_path / f"part{n}.jsonl")
        parts[-1].write_bytes(data)
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(first + second)
    alone = [stats_of(p) for p in parts]
    both = stats_of(joined)
    assert both["format"] == format and both["conversations"] == 2
    assert both["messages"] == sum(s["messages"] for s in alone)
    assert both["outside"]["messages"] == sum(s["outside"]["messages"] for s in alone)
    assert both["usage"]["calls"] == sum(s["usage"]["calls"] for s in alone)
    assert both["rounds"] == sum(s["rounds"] for s in alone)
    largest = both["largest_conversation"]
    biggest = max(range(2), key=lambda n: alone[n]["context"]["tokens"])
    assert largest["number"] == biggest + 1
    assert largest["messages"] == alone[biggest]["messages"]
    # validate names the line the second session opens on, and only that is new
    second_line = first.count(b"\n") + 1
    checked = run_cli("validate", str(joined))
    assert checked.code == 1
    joins = [line for line in checked.out.splitlines() if "another session" in line]
    assert len(joins) == 1 and joins[0].startswith(f"{joined}:{second_line}: ")
    # the file is written back as it was read
    out = tmp_path / "written.jsonl"
    ctxpack.write(ctxpack.load(joined), out)
    assert out.read_bytes() == joined.read_bytes()
    # compress and rewind refuse, saying why and what to do, and write nothing
    for command in (["compress"], ["rewind", "--steps", "1"]):
        refused = run_cli(*command, str(joined), "-o", str(tmp_path / "small.jsonl"))
        assert_clean_error(refused, 2, f"{joined} joins 2 sessions, and ctxpack rewrites one "
                           "session at a time", "split it at the line")
        assert not (tmp_path / "small.jsonl").exists()


@pytest.mark.parametrize("order", ["older model first", "newer model first"])
def test_each_joined_session_is_counted_with_its_own_model(tmp_path: Path, order: str) -> None:
    # two runs of a task by models of other encodings and slopes (o200k and cl100k): the
    # file's totals are each session's, as counted alone, whichever comes last
    first = CODEX.read_bytes()
    older = other_session(CODEX, CODEX_ID).replace(b'"model":"gpt-5.1-codex"',
                                                   b'"model":"gpt-4-turbo"')
    sessions = [older, first] if order == "older model first" else [first, older]
    parts = []
    for n, data in enumerate(sessions):
        parts.append(tmp_path / f"part{n}.jsonl")
        parts[-1].write_bytes(data)
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(b"".join(sessions))
    alone = [stats_of(p) for p in parts]
    assert {s["encoding"] for s in alone} == {"o200k_base", "cl100k_base"}
    assert alone[0]["tokens"] != alone[1]["tokens"]
    both = stats_of(joined)
    assert both["conversations"] == 2
    assert both["tokens"] == sum(s["tokens"] for s in alone)
    assert both["by_role"] == {role: sum(s["by_role"].get(role, 0) for s in alone)
                               for role in both["by_role"]}
    largest = both["largest_conversation"]
    assert largest["tokens"] == alone[largest["number"] - 1]["tokens"]
    assert ctxpack.stats(joined).tokens == both["tokens"]


def unanswered(session: bytes, model: str) -> bytes:
    """The opening of the Codex session `session` up to its first reply, its
    `turn_context` naming `model`: no message of it names a model (only replies do)."""
    lines = []
    for line in session.splitlines(keepends=True):
        record = json.loads(line)
        payload = record.get("payload", {})
        if record["type"] == "response_item" and payload.get("role") not in ("user",
                                                                              "developer"):
            break
        if record["type"] == "turn_context":
            payload["model"] = model
            line = json.dumps(record).encode() + b"\n"
        lines.append(line)
    return b"".join(lines)


def test_a_codex_session_is_counted_with_the_model_its_turn_context_names(
        tmp_path: Path) -> None:
    # stats, compress and a loaded transcript count a session whose messages name no model
    # with the one its header names, alone and joined after another model's session
    opening = tmp_path / "opening.jsonl"
    opening.write_bytes(unanswered(other_session(CODEX, CODEX_ID), "gpt-4-turbo"))
    alone = stats_of(opening)
    assert (alone["model"], alone["encoding"]) == ("gpt-4-turbo", "cl100k_base")
    assert ctxpack.stats(ctxpack.load(opening)).tokens == alone["tokens"]
    report = tmp_path / "report.json"
    run = run_cli("compress", str(opening), "--dry-run", "--report-json", str(report))
    assert run.code == 0, run.err
    assert json.loads(report.read_text())["tokens_before"] == alone["context"]["visible"]
    full = tmp_path / "full.jsonl"
    full.write_bytes(CODEX.read_bytes())
    for sessions in ([full, opening], [opening, full]):
        joined = tmp_path / "joined.jsonl"
        joined.write_bytes(b"".join(p.read_bytes() for p in sessions))
        both = stats_of(joined)
        assert both["conversations"] == 2
        assert both["tokens"] == sum(stats_of(p)["tokens"] for p in sessions)
        assert ctxpack.stats(ctxpack.load(joined)).tokens == both["tokens"]


def test_a_file_of_one_session_is_unchanged_by_the_check(tmp_path: Path) -> None:
    # a session written twice under its own id (a resumed recording) stays one session
    path = tmp_path / "again.jsonl"
    path.write_bytes(GEMINI.read_bytes() * 2)
    s = stats_of(path)
    assert s["conversations"] == 1
    assert "another session" not in run_cli("validate", str(path)).out


def test_a_forked_codex_session_holds_its_parent_s_header_as_its_own(tmp_path: Path) -> None:
    # a forked rollout opens with its own header, then the parent's, then the parent's
    # history: one session, whose context goes on from the parent's
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-01-14T09:31:07.402Z", "type": kind,
                           "payload": payload}) + "\n"

    def said(role: str, text: str) -> str:
        kind = "output_text" if role == "assistant" else "input_text"
        return line("response_item", {"type": "message", "role": role,
                                      "content": [{"type": kind, "text": text}]})

    child = line("session_meta", {"id": "child", "forked_from_id": "parent",
                                  "base_instructions": {"text": "You are Codex."}})
    parent = line("session_meta", {"id": "parent",
                                   "base_instructions": {"text": "You are Codex."}})
    path = tmp_path / "fork.jsonl"
    path.write_text(child + parent + said("user", "Rename the module.") +
                    said("assistant", "Renamed.") + said("user", "Now the tests."))
    s = stats_of(path)
    assert s["conversations"] == 1 and s["messages"] == 4
    assert "another session" not in run_cli("validate", str(path)).out
    # a header linking to nothing before, after the parent's messages, starts a new one
    other = line("session_meta", {"id": "other", "base_instructions": {"text": "Be brief."}})
    joined = tmp_path / "joined.jsonl"
    joined.write_text(parent + said("user", "Hello.") + other + said("user", "Rename."))
    assert stats_of(joined)["conversations"] == 2


def test_a_joined_gemini_recording_converts_to_one_conversation_a_line(tmp_path: Path) -> None:
    first, second = JOINED["gemini-cli"]
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(first + second)
    run = run_cli("convert", str(joined), "--to", "openai")
    assert run.code == 0, run.err
    lines = [json.loads(x) for x in run.out.splitlines()]
    assert len(lines) == 2 and lines[0]["messages"] == lines[1]["messages"]


def test_a_header_written_after_the_first_message_is_that_sessions_own(tmp_path: Path) -> None:
    # messages before any header are no session of their own: the first header is theirs
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": kind,
                           "payload": payload}) + "\n"

    def said(text: str) -> dict:
        return {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]}

    path = tmp_path / "late.jsonl"
    path.write_text(line("response_item", said("Fix the build.")) +
                    line("session_meta", {"id": "s", "instructions": "Be brief."}) +
                    line("response_item", said("Then run the tests.")))
    assert stats_of(path)["conversations"] == 1
    checked = run_cli("validate", str(path))
    assert "session_meta" not in checked.out, checked.out
    run = run_cli("compress", str(path), "--dry-run")
    assert run.code == 0, run.err


ROUND_TOKENS = {"show": re.compile(r"^round \d+ .* ([\d,]+) tokens$", re.M),
                "markdown": re.compile(r"^\*\d+ messages? · \d+ steps? · ([\d,]+) tokens\*$",
                                       re.M)}
TOTAL = re.compile(r"~?([\d,]+) tokens in \d+ messages")


def figures(path: Path, how: str, *flags: str) -> tuple[int, list[int]]:
    """The total `show` (or `convert --to markdown`) gives `path` with `flags`, and each
    round's."""
    args = ("show", str(path)) if how == "show" else ("convert", str(path), "--to", "markdown")
    run = run_cli(*args, *flags)
    assert run.code == 0, run.err
    total = TOTAL.search(run.out)
    assert total is not None, run.out[:500]
    return (int(total.group(1).replace(",", "")),
            [int(n.replace(",", "")) for n in ROUND_TOKENS[how].findall(run.out)])


@pytest.mark.parametrize("how", ["show", "markdown"])
def test_show_and_convert_count_each_joined_session_with_its_own_model(
        tmp_path: Path, how: str) -> None:
    # a run of a task by a gpt model, then one by a claude model (another encoding, and a
    # slope): each session's rounds read as they do alone, the total as stats counts it
    first = CODEX.read_bytes()
    claude = other_session(CODEX, CODEX_ID).replace(b'"model":"gpt-5.1-codex"',
                                                    b'"model":"claude-sonnet-4-5"')
    parts = []
    for n, data in enumerate((first, claude)):
        parts.append(tmp_path / f"part{n}.jsonl")
        parts[-1].write_bytes(data)
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(first + claude)
    alone = [figures(p, how) for p in parts]
    assert alone[0][1] != alone[1][1]  # the models count the same text otherwise
    total, rounds = figures(joined, how)
    assert rounds == alone[0][1] + alone[1][1]
    both = stats_of(joined)
    assert total == both["tokens"] == sum(stats_of(p)["tokens"] for p in parts)
    largest = both["largest_conversation"]
    assert largest["tokens"] == alone[largest["number"] - 1][0]
    # a model asked for counts every session, as stats counts them with it
    given = [figures(p, how, "-m", "gpt-4o") for p in parts]
    total, rounds = figures(joined, how, "-m", "gpt-4o")
    assert rounds == given[0][1] + given[1][1] != alone[0][1] + alone[1][1]
    run = run_cli("stats", str(joined), "--json", "-m", "gpt-4o")
    assert total == json.loads(run.out)["files"][0]["tokens"]


def test_what_each_joined_session_notes_is_kept() -> None:
    # a reader's notes (what validate tells without calling the file wrong) are of the
    # file's lines: a session read after another keeps its own, as the first does
    from ctxpack.formats.base import Layout, Sessions
    from ctxpack.transcript import Message, Text

    class Reader:
        def __init__(self) -> None:
            self.lines: list[int] = []

        def feed(self, line: int, record: dict) -> list[Message]:
            self.lines.append(line)
            return [Message("user", (Text(record["text"]),), (line,), record)]

        def finish(self) -> tuple[list[Message], Layout]:
            return [], Layout(list(range(len(self.lines))),
                              notes=[(self.lines[-1], f"noted at {self.lines[-1]}", "")])

    sessions = Sessions(Reader, lambda r: (r["session"], set(), set()), "a record", "An agent")
    for line, record in enumerate([{"session": "a", "text": "one"},
                                   {"session": "a", "text": "two"},
                                   {"session": "b", "text": "three"}], 1):
        sessions.feed(line, record)
    _, layout = sessions.finish()
    assert layout.conversations == 2 and layout.context == [0, 1, 2]
    assert layout.notes == [(2, "noted at 2", ""), (3, "noted at 3", "")]

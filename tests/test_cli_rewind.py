"""`ctxpack rewind`: the newest steps out of a transcript, whole tool pairs only, archived so
that `ctxpack restore` brings the file back byte for byte."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack.archive import meta_of
from ctxpack.errors import UsageError
from ctxpack.rewinding import rewind_file
from ctxpack.undo import restore

from .compression.test_properties import transcripts
from .conftest import SAMPLES, corpus_params
from .helpers import assert_clean_error, assert_tool_pairs
from .helpers import ctxpack as run
from .strategies import anthropic_chat, openai_chat

LINE_FORMATS = ["coding-agent.claude-code.jsonl", "export-timeout.anthropic-events.jsonl",
                "multi-round.anthropic.jsonl", "plateau-fix.gemini-cli.jsonl",
                "refactor.codex.jsonl", "stream.anthropic.jsonl", "support-chat.openai.jsonl",
                "todo-table.gemini-stream.jsonl"]


def steps_of(path: Path) -> list[int]:
    """Where each step of the context starts (an index), read independently of rewind:
    at an assistant message after a message that is not one."""
    ms = ctxpack.load(path).messages
    return [i for i, m in enumerate(ms) if m.role == "assistant"
            and (i == 0 or ms[i - 1].role != "assistant")]


def test_rewind_says_one_message_and_one_step_in_the_singular(tmp_path: Path) -> None:
    source = tmp_path / "chat.jsonl"
    source.write_bytes(b'{"role": "user", "content": "Say hi."}\n'
                       b'{"role": "assistant", "content": "Hi."}\n')
    done = run("rewind", str(source), "--steps", "1", "-o", str(tmp_path / "out.jsonl"))
    assert done.code == 0, done.err
    assert ": 2 → 1 message (1 step out, line 2); " in done.err
    assert done.err.rstrip().endswith("brings it back")


@pytest.mark.parametrize("name", LINE_FORMATS)
def test_rewind_takes_the_newest_steps_out_and_restore_brings_them_back(
        tmp_path: Path, name: str) -> None:
    source = SAMPLES / name
    out = tmp_path / name
    done = run("rewind", str(source), "--steps", "2", "-o", str(out))
    assert done.code == 0, done.err
    assert "restore --only w-" in done.err
    before, after = ctxpack.load(source), ctxpack.load(out)
    kept = len(after.messages)
    assert kept == steps_of(source)[-2]  # from the second newest step on, all went
    assert [(m.role, m.parts) for m in after.messages] == \
        [(m.role, m.parts) for m in before.messages[:kept]]
    assert_tool_pairs(after.messages)
    assert restore(str(out)) == source.read_bytes()
    ids = [item[0] for item in ctxpack.undo.items(str(out))]
    assert restore(str(out), only=ids[-1]) == source.read_bytes()
    # what `restore --list` names it, and what older outputs hold: the kind is a format
    listed = run("restore", str(out), "--list")
    assert listed.out.splitlines()[-1].split("\t")[:2] == [ids[-1], "rewound"]


def test_to_and_rounds_keep_what_they_name(tmp_path: Path) -> None:
    source = SAMPLES / "support-chat.openai.jsonl"
    starts = steps_of(source)
    out = tmp_path / "to.jsonl"
    assert run("rewind", str(source), "--to", "3", "-o", str(out)).code == 0
    assert len(ctxpack.load(out).messages) == starts[3]
    assert run("rewind", str(source), "--rounds", "1", "-o", str(out)).code == 0
    messages = ctxpack.load(source).messages
    last_round = max(i for i, m in enumerate(messages) if m.human)
    assert len(ctxpack.load(out).messages) == last_round
    assert restore(str(out)) == source.read_bytes()


def test_in_place_keeps_a_backup_and_restores_in_place(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "refactor.codex.jsonl", path)
    old = path.stat().st_mtime - 60
    os.utime(path, (old, old))
    original = path.read_bytes()
    assert run("rewind", str(path), "--steps", "1", "--in-place").code == 0
    assert path.read_bytes() != original
    assert (tmp_path / "run.jsonl.bak").read_bytes() == original
    assert run("restore", str(path), "--in-place", "--force").code == 0
    assert path.read_bytes() == original


def test_the_archive_can_go_to_a_folder(tmp_path: Path) -> None:
    source = SAMPLES / "multi-round.anthropic.jsonl"
    out = tmp_path / "out.jsonl"
    folder = tmp_path / "originals"
    assert run("rewind", str(source), "-n", "1", "-o", str(out),
               "--archive-dir", str(folder)).code == 0
    assert any(p.is_file() for p in folder.rglob("*"))
    assert len(out.read_bytes()) < len(source.read_bytes())
    assert restore(str(out), archive_dir=str(folder)) == source.read_bytes()


@pytest.mark.parametrize(("args", "fragments"), [
    (["--steps", "999"], ["step(s), not 999"]),
    (["--steps", "1", "--rounds", "1"], ["one of --steps"]),
    ([], ["one of --steps"]),
    (["--to", "999"], ["nothing comes after step 999"]),
])
def test_what_cannot_be_rewound_is_one_line_and_no_output(
        tmp_path: Path, args: list[str], fragments: list[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert_clean_error(run("rewind", str(SAMPLES / "support-chat.openai.jsonl"), *args,
                           "-o", str(out)), 2, *fragments)
    assert not out.exists()


def test_a_format_whose_record_holds_the_conversation_says_how_instead(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert_clean_error(run("rewind", str(SAMPLES / "bugfix.mini-swe-agent.traj.json"),
                           "--steps", "1", "-o", str(out)), 2, "share a record", "convert")
    assert not out.exists()


def test_a_format_compress_cannot_write_is_refused_by_rewinds_name(tmp_path: Path) -> None:
    # it said "compress cannot write cline files" and pointed to compress
    out = tmp_path / "out.json"
    run_ = run("rewind", str(SAMPLES / "cline-task" / "api_conversation_history.json"),
               "--steps", "1", "-o", str(out))
    assert_clean_error(run_, 2, "rewind cannot write cline files", "ctxpack rewind run.jsonl")
    assert "compress" not in run_.err
    assert not out.exists()


def test_a_bad_line_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((SAMPLES / "support-chat.openai.jsonl").read_bytes() + b"{oops\n")
    out = tmp_path / "out.jsonl"
    assert_clean_error(run("rewind", str(bad), "--steps", "1", "-o", str(out)), 2,
                       "bad.jsonl:43")
    assert not out.exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=transcripts(), back=st.integers(1, 4))
def test_restore_of_rewind_is_the_input_and_pairs_stay_whole(tmp_path_factory: pytest.
                                                            TempPathFactory, data: bytes,
                                                            back: int) -> None:
    path = tmp_path_factory.mktemp("rewind") / "run.jsonl"
    path.write_bytes(data)
    try:
        done = rewind_file(str(path), steps=back)
    except UsageError as exc:  # fewer steps than that, or nothing would be left
        assert "step(s), not" in str(exc) or "nothing would be left" in str(exc)
        return
    out = done.data
    assert restore([out]) == data
    kept = [orjson.loads(line) for line in out.splitlines()]
    given_lines = [orjson.loads(line) for line in data.splitlines()]
    assert [{k: v for k, v in r.items() if k != "ctxpack"} for r in kept] == \
        given_lines[:len(kept)]
    out_path = path.with_name("out.jsonl")
    out_path.write_bytes(out)
    after = ctxpack.load(out_path)
    assert_tool_pairs(after.messages)
    assert done.steps == back and done.messages_after == len(after.messages)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat=openai_chat() | anthropic_chat(), back=st.integers(1, 3))
def test_rewind_in_either_api_restores_and_keeps_pairs(tmp_path_factory: pytest.TempPathFactory,
                                                       chat: list, back: int) -> None:
    data = b"".join(orjson.dumps(m) + b"\n" for m in chat)
    path = tmp_path_factory.mktemp("rewind") / "run.jsonl"
    path.write_bytes(data)
    try:
        done = rewind_file(str(path), steps=back)
    except UsageError as exc:
        assert "step(s), not" in str(exc) or "nothing would be left" in str(exc)
        return
    out = done.data
    assert restore([out]) == data
    out_path = path.with_name("out.jsonl")
    out_path.write_bytes(out)
    after, before = ctxpack.load(out_path), ctxpack.load(path)
    # (what is left may fit either API, as a lone plain user message does)
    assert after.format == before.format or after.unsure
    assert [m.parts for m in after.messages] == [m.parts for m in before.messages[:len(
        after.messages)]]
    assert_tool_pairs(after.messages)


def test_a_line_with_its_own_ctxpack_key_is_not_overwritten(tmp_path: Path) -> None:
    # the line that would hold the archive already has a key of that name: refused, as
    # writing the archive there would lose that value for good
    lines = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "one"},
             {"role": "user", "content": "again", "ctxpack": "a note of the user's"},
             {"role": "assistant", "content": "two"}]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    with pytest.raises(UsageError) as info:
        rewind_file(path, steps=1)
    assert f"{path}:3:" in str(info.value)


def bill_of(path: Path) -> dict:
    """What stats says of the context as billed."""
    return ctxpack.stats(path).to_dict()["context"]


def cut_before(path: Path, said: str | int, to: Path) -> Path:
    """The file `path` as it was before the lines a rewind took out (from the first, or
    as its message names them), as if the session had stopped there."""
    first = said if isinstance(said, int) else int(re.search(r"lines? (\d+)[–)]", said).group(1))
    to.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:first - 1]))
    return to


@pytest.mark.parametrize("name", ["coding-agent.claude-code.jsonl", "refactor.codex.jsonl"])
@pytest.mark.parametrize("steps", ["1", "3"])
def test_a_rewound_file_bills_as_the_session_stopped_there(
        tmp_path: Path, name: str, steps: str) -> None:
    """A rewind is no compaction: the calls before its point were made on the context it
    leaves, and still anchor the bill (it was read as compress's line, and the file billed
    as if it recorded no usage: 30,035 for the Claude Code sample, not about 30,500)."""
    source, out = SAMPLES / name, tmp_path / name
    done = run("rewind", str(source), "--steps", steps, "-o", str(out))
    assert done.code == 0, done.err
    whole, after = bill_of(source), bill_of(out)
    assert after == bill_of(cut_before(source, done.err, tmp_path / "cut.jsonl"))
    assert after["kind"] == whole["kind"] == "anchored"
    assert 0 < after["calls"] < whole["calls"]
    assert after["tokens"] > 0.9 * whole["tokens"]  # a few steps of a long session
    # and what reads the bill reads it so: compress acts at 0.12 of the window (the
    # sample's 15.3%), calibrate fits the calls kept
    compressed = tmp_path / "small.jsonl"
    assert run("compress", str(out), "--threshold", "0.12", "-q",
               "-o", str(compressed)).code == 0
    assert bill_of(compressed)["tokens"] < after["tokens"]
    fit = run("calibrate", str(out), "--json")
    assert fit.code == 0, fit.err
    # (each call kept, those made before the Claude Code sample's compaction too)
    (fitted,) = orjson.loads(fit.out)
    assert fitted["calls"] == fitted["recorded"] >= after["calls"]


@pytest.mark.parametrize("path", corpus_params("claude-code", "codex"))
def test_a_corpus_session_rewound_bills_as_it_stopped_there(tmp_path: Path,
                                                            path: Path) -> None:
    try:
        done = rewind_file(path, steps=1)
    except UsageError as exc:  # a file of one step, a line that cannot hold the archive
        pytest.skip(str(exc))
    out = tmp_path / "out.jsonl"
    out.write_bytes(done.data)
    assert bill_of(out) == bill_of(cut_before(path, done.lines[0], tmp_path / "cut.jsonl"))


COMPRESSED = [("support-chat.openai.jsonl", 3_000), ("coding-agent.claude-code.jsonl", 28_000),
              ("refactor.codex.jsonl", 12_000), ("multi-round.anthropic.jsonl", 3_000)]


@pytest.mark.parametrize(("name", "budget"), COMPRESSED)
def test_a_file_compress_wrote_rewinds_to_any_step_and_restores_byte_for_byte(
        tmp_path: Path, name: str, budget: int) -> None:
    """Where the last line kept is one compress wrote (the summary, a line whose output
    it replaced), the rewind's archive holds that line as it was: restore takes the
    rewind off, then the compress."""
    source = SAMPLES / name
    compressed = tmp_path / f"small-{name}"
    assert run("compress", str(source), "--budget", str(budget), "-q",
               "-o", str(compressed)).code == 0
    lines = compressed.read_bytes().splitlines(keepends=True)
    before = ctxpack.load(compressed).messages
    anchors = []
    for kept in range(len(steps_of(compressed))):
        out = tmp_path / f"to{kept}-{name}"
        done = run("rewind", str(compressed), "--to", str(kept), "-o", str(out))
        assert done.code == 0, done.err
        first = int(re.search(r"lines? (\d+)[–)]", done.err).group(1))
        anchors.append(meta_of(lines[first - 2]))  # the line before those taken out
        after = ctxpack.load(out)
        assert [m.parts for m in after.messages] == \
            [m.parts for m in before[:len(after.messages)]]
        assert_tool_pairs(after.messages)
        assert restore(str(out)) == source.read_bytes()  # both layers off
        ident = re.search(r"--only (w-[0-9a-f]+)", done.err).group(1)
        assert restore(str(out), only=ident) == compressed.read_bytes()  # the rewind's
        # billed as the compressed file stopped there: a line compress wrote stays its
        assert bill_of(out) == bill_of(cut_before(compressed, done.err, tmp_path / "cut"))
    if name == "support-chat.openai.jsonl":  # its summary is the last line kept once
        assert any(a is not None and a["kind"] == "archived_summary" for a in anchors)


def test_a_line_of_an_item_compress_wrote_on_several_lines_is_not_taken(
        tmp_path: Path) -> None:
    # the last line kept is the second of two lines written as one item: the item
    # would lose a line, so the rewind is refused, naming the line, and writes nothing
    from ctxpack.archive import Archiver

    ref = Archiver().pack(b'{"role": "user", "content": "long ago"}\n')
    head = {"id": "s-0123456789", "kind": "archived_summary", "version": 1, "lines": 2,
            "archive": ref}
    lines = [{"role": "system", "content": "be brief"},
             {"role": "user", "content": "## Archived Session Summary\nearlier", "ctxpack": head},
             {"role": "user", "content": "go on",
              "ctxpack": {"id": "s-0123456789", "kind": "part"}},
             {"role": "assistant", "content": "on it"}]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    assert restore(str(path)) != path.read_bytes()  # (an item restore takes)
    out = tmp_path / "out.jsonl"
    assert_clean_error(run("rewind", str(path), "--steps", "1", "-o", str(out)), 2,
                       "run.jsonl:3:", "one of the lines compress wrote as one item",
                       "s-0123456789")
    assert not out.exists()


def test_to_takes_a_round(tmp_path: Path) -> None:
    source = SAMPLES / "support-chat.openai.jsonl"
    messages = ctxpack.load(source).messages
    opened = [i for i, m in enumerate(messages) if m.human]
    assert len(opened) >= 3
    out, same = tmp_path / "round.jsonl", tmp_path / "rounds.jsonl"
    done = run("rewind", str(source), "--to", "round:2", "-o", str(out))
    assert done.code == 0, done.err
    assert len(ctxpack.load(out).messages) == opened[2]  # the first two rounds kept
    assert run("rewind", str(source), "--rounds", str(len(opened) - 2),
               "-o", str(same)).code == 0
    assert out.read_bytes().split(b'"rewound_at"')[0] == \
        same.read_bytes().split(b'"rewound_at"')[0]
    assert restore(str(out)) == source.read_bytes()
    assert run("rewind", str(source), "--to", "step:3", "-o", str(same)).code == 0
    assert len(ctxpack.load(same).messages) == steps_of(source)[3]
    for bad, fragment in (("round:x", "a step number or round:N"),
                          ("3 rounds", "a step number or round:N"),
                          (f"round:{len(opened)}", "nothing comes after round")):
        gone = tmp_path / "gone.jsonl"
        assert_clean_error(run("rewind", str(source), "--to", bad, "-o", str(gone)), 2,
                           fragment)
        assert not gone.exists()

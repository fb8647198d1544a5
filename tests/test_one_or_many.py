"""One input or many, the same run: a worker that dies fails only its own file, an
OpenCode storage session converted below --out-dir, and --skip-existing and --shard
with one transcript as with many."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from ctxpack.cli import batch

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack
from .test_format_opencode_storage import two_sessions


def dies_on_boom(job: batch.Job, args: object, alone: bool) -> batch.Outcome:
    """A task whose process dies on the file named boom (as one killed for its memory)."""
    if Path(job.source).name == "boom":
        os._exit(9)
    return batch.Outcome(job.source, job.dest, "written", tokens_before=len(job.source))


# the pool's own thread must not fail (its error would be printed) as the pool is ended
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_worker_that_dies_fails_only_the_file_it_was_on(tmp_path: Path) -> None:
    names = [f"f{i:02d}" for i in range(12)]
    names[3] = "boom"
    for name in names:
        (tmp_path / name).write_text(name)
    jobs = [batch.Job(str(tmp_path / n), str(tmp_path / "out" / n)) for n in names]
    outcomes = batch.run(jobs, dies_on_boom, None, 2)
    assert [o.source for o in outcomes] == [j.source for j in jobs]  # in the jobs' order
    assert [(Path(o.source).name, o.status, o.code) for o in outcomes
            if o.status != "written"] == [("boom", "failed", 2)]
    assert outcomes[3].problem == f"{jobs[3].source}: its worker process died"
    assert all(o.tokens_before == len(o.source) for o in outcomes if o.status == "written")


def test_convert_of_one_session_of_a_storage_folder_below_out_dir(tmp_path: Path) -> None:
    storage = two_sessions(tmp_path)
    out = tmp_path / "out"
    run = ctxpack("convert", str(storage), "--session", "ses_older", "--to", "openai",
                  "--out-dir", str(out), "--report-json", "-")
    assert run.code == 0, run.err
    [entry] = json.loads(run.out)["files"]
    assert (Path(entry["source"]).name, entry["status"]) == ("ses_older.json", "written")
    [made] = [p for p in out.rglob("*") if p.is_file()]
    assert json.loads(made.read_text())["messages"][-1]["content"] == "an older question"


@pytest.mark.parametrize("command", [
    ["compress", "--budget", "14000"], ["restore"], ["convert", "--to", "markdown"],
    ["rewind", "--steps", "1"]])
def test_one_transcript_skips_an_output_that_is_up_to_date_as_many_do(
        tmp_path: Path, command: list[str]) -> None:
    given = tmp_path / "refactor.codex.jsonl"
    given.write_bytes((SAMPLES / "refactor.codex.jsonl").read_bytes())
    old = time.time() - 60
    os.utime(given, (old, old))
    out = tmp_path / "out"
    assert ctxpack(*command, str(given), "-o", str(out)).code == 0
    made = out.stat().st_mtime_ns
    run = ctxpack(*command, str(given), "-o", str(out), "--skip-existing", "--report-json", "-")
    assert run.code == 0, run.err
    assert [(e["source"], e["dest"], e["status"]) for e in json.loads(run.out)["files"]] == \
        [(str(given), str(out), "skipped")]
    assert f"{out} is newer than {given}: skipped" in run.err
    assert out.stat().st_mtime_ns == made
    given.touch()  # newer than its output now: done again
    assert ctxpack(*command, str(given), "-o", str(out), "--skip-existing").code == 0
    assert out.stat().st_mtime_ns > made


@pytest.mark.parametrize("command", [["compress"], ["restore"], ["convert", "--to", "html"],
                                     ["rewind", "--steps", "1"]])
def test_one_transcript_has_no_shard_to_take(tmp_path: Path, command: list[str]) -> None:
    out = tmp_path / "out"
    run = ctxpack(*command, str(SAMPLES / "refactor.codex.jsonl"), "-o", str(out), "--shard",
                  "1/2")
    assert_clean_error(run, 2, "--shard takes a share of many inputs")
    assert not out.exists()


ONE_INPUT_COMMANDS = [["compress", "--budget", "14000"], ["restore"],
                      ["convert", "--to", "openai"], ["rewind", "--steps", "1"]]


def _cline_task(tmp_path: Path) -> Path:
    task = tmp_path / "1760000000000"
    task.mkdir()
    for f in (SAMPLES / "cline-task").iterdir():
        (task / f.name).write_bytes(f.read_bytes())
    return task


@pytest.mark.parametrize("command", ONE_INPUT_COMMANDS)
def test_a_folder_that_is_one_transcript_is_one_input_for_o(tmp_path: Path,
                                                           command: list[str]) -> None:
    """A Cline task folder is one transcript, its api_conversation_history.json: -o takes
    it as it takes that file (compress and rewind say why they write no Cline file)."""
    task = _cline_task(tmp_path)
    history = task / "api_conversation_history.json"
    by_folder, by_file = tmp_path / "by-folder", tmp_path / "by-file"
    run = ctxpack(*command, str(task), "-o", str(by_folder))
    again = ctxpack(*command, str(history), "-o", str(by_file))
    assert "takes one input" not in run.err
    assert (run.code, run.err.replace(str(history), "FILE")) == \
        (again.code, again.err.replace(str(history), "FILE"))
    assert by_folder.exists() == by_file.exists()
    if by_file.exists():
        assert by_folder.read_bytes() == by_file.read_bytes()
    if command[0] == "convert":
        assert run.code == 0 and by_folder.read_bytes()


def test_a_task_folder_is_read_as_its_transcript(tmp_path: Path) -> None:
    task = _cline_task(tmp_path)
    for args in (("stats",), ("validate",), ("show", "--no-pager"),
                 ("convert", "--to", "markdown")):
        run = ctxpack(*args, str(task))
        assert run.code == 0, (args, run.err)
        assert run.out == ctxpack(*args, str(task / "api_conversation_history.json")).out
    (task / "api_conversation_history.json").unlink()  # the UI log alone is read then
    run = ctxpack("stats", str(task))
    assert run.code == 0 and "cline-ui" in run.out, run.err


@pytest.mark.parametrize("command", ONE_INPUT_COMMANDS)
def test_o_with_a_folder_of_many_or_of_none_says_which(tmp_path: Path,
                                                       command: list[str]) -> None:
    many = tmp_path / "sessions"
    many.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        (many / name).write_bytes((SAMPLES / "support-chat.openai.jsonl").read_bytes())
    out = tmp_path / "out"
    assert_clean_error(ctxpack(*command, str(many), "-o", str(out)), 2,
                       f"-o takes one input, and {many} is a folder of 2 transcripts",
                       "--out-dir DIR")
    none = tmp_path / "notes"
    none.mkdir()
    (none / "readme.txt").write_text("no transcripts here\n")
    assert_clean_error(ctxpack(*command, str(none), "-o", str(out)), 2,
                       f"{none}: no *.jsonl files, Gemini CLI chats/ folders (session-*.json), "
                       "Cline tasks or OpenCode storage trees in this folder")
    assert_clean_error(ctxpack(*command, str(many / "a.jsonl"), str(many / "b.jsonl"), "-o",
                               str(out)), 2, "-o takes one input, and 2 are given")
    assert not out.exists()


def test_a_folder_of_one_file_without_a_destination_says_where_many_go(
        tmp_path: Path) -> None:
    # it said "more than one input needs --out-dir" of a folder holding one file
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((SAMPLES / "support-chat.openai.jsonl").read_bytes())
    run = ctxpack("compress", str(folder))
    assert_clean_error(run, 2, "many inputs (a folder, a pattern or more than one file)",
                       "--out-dir DIR")
    assert "more than one input" not in run.err
    assert sorted(p.name for p in folder.iterdir()) == ["a.jsonl"]


def test_a_folder_of_cline_tasks_gives_each_task(tmp_path: Path) -> None:
    # Cline keeps each task in tasks/<id>/: the folder gave "no *.jsonl files"
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    first = _cline_task(tasks)
    second = first.with_name("1790000000000")
    shutil.copytree(first, second)
    (second / "api_conversation_history.json").unlink()  # a task with its UI log only
    run = ctxpack("stats", "--format", "csv", str(tasks))
    assert run.code == 0, run.err
    paths = [row.split(",")[0] for row in run.out.splitlines()[1:]]
    assert paths == [str(first / "api_conversation_history.json"),
                     str(second / "ui_messages.json")]
    out = tmp_path / "md"
    run = ctxpack("convert", str(tasks), "--to", "markdown", "--out-dir", str(out))
    assert run.code == 0, run.err
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md")) == [
        f"{first.name}/api_conversation_history.md", f"{second.name}/ui_messages.md"]


def test_a_folder_gives_the_opencode_storage_tree_below_it(tmp_path: Path) -> None:
    # the folder above storage/ gave "no *.jsonl files" and a glob of its message files
    shutil.copytree(SAMPLES / "opencode-storage", tmp_path / "opencode")
    run = ctxpack("stats", "--format", "csv", str(tmp_path / "opencode"))
    assert run.code == 0, run.err
    (row,) = run.out.splitlines()[1:]
    assert ",opencode-storage," in row and "/storage/session/" in row


def test_the_library_reads_a_folder_that_is_one_transcript_as_the_cli_does() -> None:
    # ctxpack.load() and ctxpack.stats() of a Cline task or an OpenCode storage tree said
    # "is a directory", though every command read both
    from ctxpack import load, stats

    for folder, file in ((SAMPLES / "cline-task", "api_conversation_history.json"),
                         (SAMPLES / "opencode-storage" / "storage", "ses_")):
        t = load(str(folder))
        assert os.path.basename(t.path).startswith(file) and t.messages
        run = ctxpack("stats", "--json", str(folder))
        assert run.code == 0, run.err
        (f,) = json.loads(run.out)["files"]
        assert (f["path"], f["tokens"]) == (t.path, stats(str(folder)).tokens)


def test_a_gemini_cli_chats_folder_gives_its_recordings(tmp_path: Path) -> None:
    # stats and validate of ~/.gemini/tmp/<project>/chats said "no *.jsonl files", though
    # calibrate read the same folder
    chats = tmp_path / "chats"
    chats.mkdir()
    reply = {"id": "m2", "type": "gemini", "content": "Renamed.", "model": "gemini-2.5-pro",
             "tokens": {"input": 900, "output": 4, "cached": 0, "total": 904}}
    for name in ("session-2026-06-14T10-00-abc", "session-2026-06-15T09-30-def"):
        (chats / f"{name}.json").write_text(json.dumps({
            "sessionId": name[-3:], "projectHash": "f00", "messages": [
                {"id": "m1", "type": "user", "content": "Rename the helper."}, reply]}))
    (chats / "notes.json").write_text("{}")  # no recording: not taken
    run = ctxpack("stats", "--json", str(chats))
    assert run.code == 0, run.err
    files = json.loads(run.out)["files"]
    assert [(Path(f["path"]).name, f["format"], f["messages"]) for f in files] == [
        ("session-2026-06-14T10-00-abc.json", "gemini-cli", 2),
        ("session-2026-06-15T09-30-def.json", "gemini-cli", 2)]
    run = ctxpack("validate", str(chats))
    assert run.code == 0 and run.err.count(": ok") == 2, run.err


def test_a_folder_that_gives_nothing_names_the_json_files_ctxpack_reads(tmp_path: Path) -> None:
    # a Gemini CLI recording not named session-*.json (nor in chats/): the folder said it
    # held "no ... Gemini CLI chats", though it held one
    folder = tmp_path / "exports"
    (folder / "gemini").mkdir(parents=True)
    (folder / "gemini" / "finance.json").write_text(json.dumps({
        "sessionId": "s1", "projectHash": "f00", "messages": [
            {"id": "m1", "type": "user", "content": "Sum the March rows."}]}, indent=2))
    (folder / "book-search.json").write_bytes(
        (SAMPLES / "opencode" / "book-search.opencode.json").read_bytes())
    (folder / "settings.json").write_text('{"theme": "dark"}')  # read by no reader
    run = ctxpack("stats", str(folder))
    assert_clean_error(run, 2, f"{folder}: no *.jsonl files, Gemini CLI chats/ folders "
                       "(session-*.json), Cline tasks or OpenCode storage trees in this "
                       "folder; of the JSON files it holds, which a folder does not give, "
                       "ctxpack reads book-search.json (opencode), gemini/finance.json "
                       "(gemini-cli) (", f"'{folder}/**/*.json'")
    # the glob it gives reads them
    run = ctxpack("stats", "--json", str(folder / "**" / "*.json"))
    assert run.code == 2  # (settings.json is no transcript)
    assert [Path(f["path"]).name for f in json.loads(run.out)["files"]] == [
        "book-search.json", "finance.json"]


@pytest.mark.parametrize("command", ["stats", "validate"])
def test_json_of_many_inputs_lists_those_it_could_not_read(tmp_path: Path, command: str) -> None:
    # a gate reading the JSON alone must see every input it gave, the failed ones with why
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"role":"user","content":"x"}\n{bad\n')
    missing = tmp_path / "gone.jsonl"
    good = SAMPLES / "support-chat.openai.jsonl"
    run = ctxpack(command, str(good), str(bad), str(missing), "--json")
    assert run.code == 2
    doc = json.loads(run.out)
    assert [f["path"] for f in doc["files"]] == [str(good)]
    unread = {u["path"]: u for u in doc["unread"]}
    assert sorted(unread) == sorted([str(bad), str(missing)])
    assert unread[str(bad)]["line"] == 2
    assert unread[str(bad)]["problem"].startswith("malformed JSON")
    assert unread[str(missing)]["line"] is None
    assert unread[str(missing)]["problem"] == "no such file"
    assert all(path not in u["problem"] for path, u in unread.items())  # the path once


@pytest.mark.parametrize("command", ["stats", "validate"])
@pytest.mark.parametrize(("given", "line", "problem"), [
    ("", None, "the file is empty"), ("{bad\n", 1, "malformed JSON")])
def test_json_lists_stdin_it_could_not_read(command: str, given: str, line: int | None,
                                            problem: str) -> None:
    good = SAMPLES / "support-chat.openai.jsonl"
    run = ctxpack(command, str(good), "-", "--json", input=given)
    assert run.code == 2
    doc = json.loads(run.out)
    assert [f["path"] for f in doc["files"]] == [str(good)]
    (unread,) = doc["unread"]
    assert (unread["path"], unread["line"]) == ("<stdin>", line)
    assert unread["problem"].startswith(problem)

"""Many files in one compress or restore: mirrored below --out-dir, in parallel, a bad
file costing only itself, resumable, and shared out by --shard."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from ctxpack.breakdown import stats

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack

BUDGET = "14000"
PINNED = {"SOURCE_DATE_EPOCH": "1795000000"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of samples, one below a subfolder, and one file that cannot be read. (Not
    the samples whose agent sends more than the budget besides what the file holds: no
    compress fits them in it.)"""
    root = tmp_path / "in"
    (root / "sub").mkdir(parents=True)
    for sample in sorted(SAMPLES.glob("*.jsonl")):
        if (bill := stats(sample).context) is None or bill.not_in_file < int(BUDGET) // 2:
            shutil.copy(sample, root / sample.name)
    shutil.copy(SAMPLES / "support-chat.openai.jsonl", root / "sub" / "chat.jsonl")
    (root / "sub" / "bad.jsonl").write_bytes(b'{"role":"user","content":"x"}\n{bad\n')
    old = time.time() - 60
    for path in root.rglob("*.jsonl"):
        os.utime(path, (old, old))
    return root


def transcripts(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def test_a_folder_is_compressed_below_out_dir_and_restored_byte_for_byte(
        folder: Path, tmp_path: Path) -> None:
    out, back, report = tmp_path / "out", tmp_path / "back", tmp_path / "report.json"
    run = ctxpack("compress", str(folder), "--out-dir", str(out), "--budget", BUDGET,
                  "--report-json", str(report))
    assert run.code == 2, run.err  # the bad file failed; the others are done
    assert [line for line in run.err.splitlines() if line.startswith("error:")] == \
        [f"error: {folder / 'sub' / 'bad.jsonl'}:2: malformed JSON: Expecting property "
         "name enclosed in double quotes at column 2"]
    good = {k: v for k, v in transcripts(folder).items() if k != "sub/bad.jsonl"}
    assert sorted(transcripts(out)) == sorted(good)
    entries = {Path(e["source"]).relative_to(folder).as_posix(): e
               for e in json.loads(report.read_text())["files"]}
    assert entries["sub/bad.jsonl"]["status"] == "failed"
    assert entries["sub/bad.jsonl"]["code"] == 2
    assert entries["refactor.codex.jsonl"]["status"] == "written"
    assert entries["refactor.codex.jsonl"]["tokens_after"] <= int(BUDGET) \
        < entries["refactor.codex.jsonl"]["tokens_before"]
    run = ctxpack("restore", str(out), "--out-dir", str(back))
    assert run.code == 0, run.err
    assert transcripts(back) == good


def test_files_in_parallel_write_what_one_at_a_time_writes(folder: Path, tmp_path: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    made = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}"
        run = ctxpack("compress", str(folder), "--out-dir", str(out), "--budget", BUDGET,
                      "-j", jobs, "-q", env=PINNED)
        assert run.code == 0, run.err
        made.append(transcripts(out))
    assert made[0] == made[1] and len(made[0]) == len(transcripts(folder))


def test_a_second_run_skips_what_is_up_to_date(folder: Path, tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "r.json"
    assert ctxpack("restore", str(folder), "--out-dir", str(out), "-q").code == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.jsonl")}
    touched = folder / "refactor.codex.jsonl"
    touched.write_bytes(touched.read_bytes())  # newer than its output now
    run = ctxpack("restore", str(folder), "--out-dir", str(out), "--skip-existing", "-q",
                  "--report-json", str(report))
    statuses = {Path(e["source"]).name: e["status"]
                for e in json.loads(report.read_text())["files"]}
    assert run.code == 0, run.err
    assert statuses.pop("refactor.codex.jsonl") == "unchanged"  # restore: none to undo
    assert set(statuses.values()) == {"skipped"}
    after = {p: p.stat().st_mtime_ns for p in out.rglob("*.jsonl")}
    assert [p.name for p in after if after[p] != before[p]] == ["refactor.codex.jsonl"]


def test_shards_split_the_files_between_them_the_same_way_every_time(
        folder: Path, tmp_path: Path) -> None:
    shares = []
    for i in range(3):
        out = tmp_path / f"shard-{i}"
        ctxpack("restore", str(folder), "--out-dir", str(out), "--shard", f"{i}/3", "-q")
        shares.append(set(transcripts(out)) if out.exists() else set())
    everything = set(transcripts(folder))  # restore copies what has nothing to undo
    assert set.union(*shares) == everything
    assert sum(len(s) for s in shares) == len(everything)
    again = tmp_path / "again"
    ctxpack("restore", str(folder), "--out-dir", str(again), "--shard", "1/3", "-q")
    assert (set(transcripts(again)) if again.exists() else set()) == shares[1]


def test_many_inputs_need_somewhere_to_go(folder: Path, tmp_path: Path) -> None:
    a, b = str(folder / "refactor.codex.jsonl"), str(folder / "sub" / "chat.jsonl")
    assert_clean_error(ctxpack("compress", a, b), 2, "--out-dir")
    assert_clean_error(ctxpack("compress", a, b, "-o", str(tmp_path / "x")), 2,
                       "-o takes one input")
    assert_clean_error(ctxpack("restore", str(folder), "--shard", "3/3", "--out-dir",
                               str(tmp_path)), 2, "--shard '3/3'")
    clash = tmp_path / "clash"
    (clash / "sub").mkdir(parents=True)
    shutil.copy(a, clash / "chat.jsonl")
    assert_clean_error(ctxpack("restore", str(clash), str(folder / "sub"), "--out-dir",
                               str(tmp_path / "o")), 2, "would both be written to")


def test_a_dry_run_over_many_writes_nothing(folder: Path, tmp_path: Path) -> None:
    run = ctxpack("compress", str(folder), "--dry-run", "--budget", BUDGET,
                  "--report-json", "-")
    assert run.code == 2, run.err
    statuses = {Path(e["source"]).name: e["status"] for e in json.loads(run.out)["files"]}
    assert statuses.pop("bad.jsonl") == "failed"
    assert set(statuses.values()) <= {"planned"}
    assert not [p for p in folder.rglob("*") if ".bak" in p.name or p.name.startswith(".ctx")]


def test_many_files_in_place_each_keep_their_original(folder: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    before = transcripts(folder)
    run = ctxpack("compress", str(folder), "--in-place", "--budget", BUDGET, "-q")
    assert run.code == 0, run.err
    after = transcripts(folder)
    assert after["refactor.codex.jsonl"] != before["refactor.codex.jsonl"]
    for name, data in before.items():
        if after[name] != data:
            assert (folder / f"{name}.bak").read_bytes() == data


def test_what_every_file_would_warn_of_is_said_once(folder: Path, tmp_path: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    run = ctxpack("compress", str(folder), "--out-dir", str(tmp_path / "out"), "--budget",
                  BUDGET, "--target", BUDGET, "--no-archive", "-q")
    assert run.code == 0, run.err
    assert [line for line in run.err.splitlines() if "--no-archive" in line] == \
        ["warning: --no-archive: the replaced originals are not kept; restore cannot bring "
         "them back"]
    # a setting's own warning (a target not below the trigger, the budget) as well
    said = " ".join(run.err.split())
    assert said.count(f"warning: the target asked for ({int(BUDGET):,} billed tokens) is not "
                      f"below the trigger ({int(BUDGET):,})") == 1


def test_many_in_place_say_where_each_original_went(folder: Path, tmp_path: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    codex = folder / "refactor.codex.jsonl"
    Path(f"{codex}.bak").write_bytes(b"an earlier backup\n")
    report = tmp_path / "r.json"
    run = ctxpack("compress", str(folder), "--in-place", "--budget", BUDGET,
                  "--report-json", str(report))
    assert run.code == 0, run.err
    entries = {Path(e["source"]).name: e for e in json.loads(report.read_text())["files"]}
    assert entries["refactor.codex.jsonl"]["backup"] == f"{codex}.bak.1"
    assert "original kept as" in run.err  # in the table (folded to its width)
    assert Path(f"{codex}.bak").read_bytes() == b"an earlier backup\n"
    unchanged = [name for name, e in entries.items() if e["status"] == "unchanged"]
    assert unchanged and all(entries[n]["backup"] is None for n in unchanged)


def test_odd_requests_are_one_line_each(folder: Path, tmp_path: Path) -> None:
    assert_clean_error(ctxpack("compress", str(folder), "--in-place", "--out-dir",
                               str(tmp_path / "o")), 2, "--in-place and --out-dir")
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_clean_error(ctxpack("restore", str(folder), "--out-dir", str(afile)), 2,
                       "is a file, not a folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_clean_error(ctxpack("restore", str(empty), "--out-dir", str(tmp_path / "o")), 2,
                       "no *.jsonl files, Gemini CLI chats/ folders (session-*.json), Cline "
                       "tasks or OpenCode storage trees in this folder")
    # a folder of .json files is told how to name them (the Cline tasks below a folder
    # are taken: see test_one_or_many)
    (empty / "runs").mkdir()
    (empty / "runs" / "run-1.json").write_text("[]")
    run = ctxpack("stats", str(empty))
    assert_clean_error(run, 2, "no *.jsonl files, Gemini CLI chats/ folders (session-*.json), "
                       "Cline tasks or OpenCode storage trees in this folder")
    assert "a quoted glob such as" in run.err and "*.json'" in run.err
    # the glob names what the folder holds most (an Aider folder: its Markdown)
    (empty / "runs" / "run-1.json").unlink()
    for name in ("a.aider.chat.history.md", "b.aider.chat.history.md"):
        (empty / "runs" / name).write_text("# aider chat started at 2026-01-01 10:00:00\n")
    assert "*.md'" in ctxpack("stats", str(empty)).err


def test_stdin_is_one_input_only(folder: Path, tmp_path: Path) -> None:
    run = ctxpack("restore", "-", str(folder), "--out-dir", str(tmp_path / "o"), input=b"")
    assert_clean_error(run, 2, "- (stdin) cannot be one of many inputs")
    assert not (tmp_path / "o").exists()


def test_many_restored_in_place_come_back_as_they_were(folder: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    before = transcripts(folder)
    assert ctxpack("compress", str(folder), "--in-place", "--budget", BUDGET, "-q").code == 0
    for path in folder.rglob("*.bak*"):
        path.unlink()
    run = ctxpack("restore", str(folder), "--in-place", "--force", "-q")
    assert run.code == 0, run.err
    assert transcripts(folder) == before
    unchanged = [p for p in before if not (folder / f"{p}.bak").exists()]
    assert unchanged  # what compress left alone was left alone again: no backup made


def test_a_file_that_cannot_fit_is_named_in_its_error(folder: Path, tmp_path: Path) -> None:
    big = folder / "big.jsonl"
    shutil.copy(SAMPLES / "coding-agent.claude-code.jsonl", big)  # its agent sends ~26k more
    run = ctxpack("compress", str(folder), "--out-dir", str(tmp_path / "out"), "--budget",
                  BUDGET, "--report-json", str(tmp_path / "report.json"))
    assert run.code == 3, run.err
    assert any(line.startswith(f"error: {big}: cannot fit the budget")
               for line in run.err.splitlines()), run.err
    report = {f["source"]: f for f in json.loads((tmp_path / "report.json").read_text())["files"]}
    assert report[str(big)]["problem"].startswith(f"{big}: cannot fit")


def test_convert_writes_each_file_below_out_dir_as_its_target(folder: Path,
                                                             tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"
    run = ctxpack("convert", str(folder), "--to", "markdown", "--out-dir", str(out),
                  "--report-json", str(report))
    assert run.code == 2, run.err  # the bad file failed; the others are done
    assert [line for line in run.err.splitlines() if line.startswith("error:")] == \
        [f"error: {folder / 'sub' / 'bad.jsonl'}:2: malformed JSON: Expecting property "
         "name enclosed in double quotes at column 2"]
    good = [k for k in transcripts(folder) if k != "sub/bad.jsonl"]
    made = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert made == sorted(k.removesuffix(".jsonl") + ".md" for k in good)
    entries = {Path(e["source"]).relative_to(folder).as_posix(): e["status"]
               for e in json.loads(report.read_text())["files"]}
    assert entries.pop("sub/bad.jsonl") == "failed" and set(entries.values()) == {"written"}
    one = tmp_path / "one.md"  # each as the run of that one file writes it
    assert ctxpack("convert", str(folder / "sub" / "chat.jsonl"), "--to", "markdown", "-o",
                   str(one)).code == 0
    assert (out / "sub" / "chat.md").read_bytes() == one.read_bytes()


def test_convert_of_many_resumes_shards_and_never_writes_over_an_input(
        folder: Path, tmp_path: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    out = tmp_path / "out"
    assert ctxpack("convert", str(folder), "--to", "openai", "--out-dir", str(out), "-q",
                   "-j", "2").code == 0
    first = transcripts(out)
    assert sorted(first) == sorted(transcripts(folder))  # .jsonl to .jsonl: the same names
    run = ctxpack("convert", str(folder), "--to", "openai", "--out-dir", str(out),
                  "--skip-existing", "--report-json", "-")
    assert run.code == 0, run.err
    assert {e["status"] for e in json.loads(run.out)["files"]} == {"skipped"}
    shares = []
    for i in range(2):
        part = tmp_path / f"part-{i}"
        assert ctxpack("convert", str(folder), "--to", "openai", "--out-dir", str(part),
                       "--shard", f"{i}/2", "-q").code == 0
        shares.append(transcripts(part) if part.exists() else {})
    assert {**shares[0], **shares[1]} == first and not set(shares[0]) & set(shares[1])
    before = transcripts(folder)
    assert_clean_error(ctxpack("convert", str(folder), "--to", "openai", "--out-dir",
                               str(folder)), 2, "would be written over itself")
    assert transcripts(folder) == before
    assert_clean_error(ctxpack("convert", str(folder), "--to", "html", "-o",
                               str(tmp_path / "x.html")), 2, "-o takes one input")


def test_rewind_of_many_takes_steps_out_of_each_and_restore_brings_them_back(
        folder: Path, tmp_path: Path) -> None:
    out, back = tmp_path / "out", tmp_path / "back"
    run = ctxpack("rewind", str(folder), "--steps", "1", "--out-dir", str(out),
                  "--report-json", "-")
    assert run.code == 2, run.err  # the bad file (and any a rewind refuses) failed
    entries = {Path(e["source"]).relative_to(folder).as_posix(): e
               for e in json.loads(run.out)["files"]}
    assert entries["sub/bad.jsonl"]["status"] == "failed"
    written = [k for k, e in entries.items() if e["status"] == "written"]
    assert "refactor.codex.jsonl" in written and "sub/chat.jsonl" in written
    rewound = transcripts(out)
    assert sorted(rewound) == sorted(written)
    given = transcripts(folder)
    assert all(rewound[k] != given[k] for k in written)
    assert ctxpack("restore", str(out), "--out-dir", str(back), "-q").code == 0
    assert transcripts(back) == {k: given[k] for k in written}


def test_many_restored_that_were_never_compressed_warn_as_one_does(
        folder: Path, tmp_path: Path) -> None:
    (folder / "sub" / "bad.jsonl").unlink()
    chat = folder / "sub" / "chat.jsonl"
    one = ctxpack("restore", str(chat), "-o", str(tmp_path / "one.jsonl"))
    assert one.code == 0
    [warning] = [line for line in one.err.splitlines() if line.startswith("warning:")]
    assert warning == f"warning: {chat}: nothing to restore (no ctxpack items); writing it " \
        "unchanged"
    run = ctxpack("restore", str(folder), "--out-dir", str(tmp_path / "out"), "-q")
    assert run.code == 0, run.err
    warnings = [line for line in run.err.splitlines() if line.startswith("warning:")]
    assert warning in warnings and len(warnings) == len(transcripts(folder))


@pytest.mark.parametrize("command", [["compress", "--budget", BUDGET], ["restore"],
                                     ["rewind", "--steps", "1"]])
@pytest.mark.parametrize("many", [True, False])
def test_skip_existing_in_place_is_refused_not_a_run_that_skips_every_file(
        folder: Path, command: list[str], many: bool) -> None:
    """In place each output is its input, so --skip-existing would find every file "up to
    date" and do nothing (or, for one file, be dropped without a word)."""
    given = transcripts(folder)
    target = folder if many else folder / "refactor.codex.jsonl"
    run = ctxpack(*command, str(target), "--in-place", "--skip-existing", "--force")
    assert_clean_error(run, 2, "--skip-existing", "--in-place")
    assert transcripts(folder) == given
    assert not list(folder.rglob("*.bak*"))


def test_convert_never_names_an_output_as_a_hidden_agent_log(tmp_path: Path) -> None:
    # Aider's own log name, converted below --out-dir, must not come out hidden nor as a
    # file Aider would take for its history
    log = tmp_path / "project" / ".aider.chat.history.md"
    log.parent.mkdir()
    shutil.copy(SAMPLES / "aider" / "unit-conversions.aider.chat.history.md", log)
    out = tmp_path / "out"
    run = ctxpack("convert", str(log), "--to", "markdown", "--out-dir", str(out))
    assert run.code == 0, run.err
    assert [p.name for p in out.rglob("*") if p.is_file()] == ["aider.chat.history.md"]
    assert "1 file: 1 written" in run.err

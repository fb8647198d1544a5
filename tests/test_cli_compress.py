"""The compress and restore commands as a user runs them: files, pipes, flags, errors."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from .conftest import SAMPLES, SHARED
from .helpers import Run, assert_clean_error, ctxpack, records_of, said

CHAT = SAMPLES / "support-chat.openai.jsonl"


@functools.cache
def budget() -> str:
    """A budget that CHAT meets with a summary (about 3,700 tokens as tiktoken counts)."""
    from .compression.transcripts import fitted

    return str(fitted(CHAT) * 3 // 4)


def mask_all() -> list[str]:
    """Flags under which masking masks every output it may of CHAT (no summary)."""
    from .compression.transcripts import squeezed

    return ["--no-summarize", "--budget", str(squeezed(CHAT).budget), "--target", "1"]


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    shutil.copy(CHAT, path)
    old = time.time() - 60
    os.utime(path, (old, old))  # not "just modified": --in-place may replace it
    return path


def test_compress_to_file_then_restore_gives_the_input_back(chat: Path, tmp_path: Path) -> None:
    out, back = tmp_path / "out.jsonl", tmp_path / "back.jsonl"
    run = ctxpack("compress", str(chat), "--budget", budget(), "-o", str(out))
    assert run.code == 0, run.err
    assert run.out == ""
    assert "summarize" in run.err and "total" in run.err
    assert ctxpack("validate", str(out)).code == 0
    run = ctxpack("restore", str(out), "-o", str(back))
    assert run.code == 0, run.err
    assert back.read_bytes() == chat.read_bytes()


def test_a_new_output_file_gets_the_usual_mode(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    old = os.umask(0o022)
    try:
        assert ctxpack("compress", str(chat), "--budget", budget(), "-q", "-o", str(out)).code == 0
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o644
    chat.chmod(0o600)
    assert ctxpack("compress", str(chat), "--budget", budget(), "-q", "--in-place").code == 0
    assert chat.stat().st_mode & 0o777 == 0o600  # a file replaced keeps its own


def test_stdin_to_stdout_pipes(chat: Path) -> None:
    compressed = ctxpack("compress", "-", "--budget", budget(), "-q", input=chat.read_bytes())
    assert compressed.code == 0, compressed.err
    assert said(compressed.err) == []
    restored = ctxpack("restore", "-", input=compressed.out)
    assert restored.out.encode() == chat.read_bytes()


def test_in_place_keeps_a_backup_and_refuses_a_fresh_file(chat: Path) -> None:
    original = chat.read_bytes()
    run = ctxpack("compress", str(chat), "--in-place", "--budget", budget(), "-q")
    assert run.code == 0, run.err
    assert Path(f"{chat}.bak").read_bytes() == original
    assert said(run.err) == [f"the original is kept as {chat}.bak: whatever still writes to "
                             "the file it had open writes there"]
    compressed = chat.read_bytes()
    assert compressed != original
    # the file was just written: an agent could still be appending to it
    assert_clean_error(ctxpack("restore", str(chat), "--in-place"), 2, "--force")
    assert ctxpack("restore", str(chat), "--in-place", "--force").code == 0
    assert chat.read_bytes() == original
    # a second run keeps its own original beside the first, never over it
    assert Path(f"{chat}.bak").read_bytes() == original
    assert Path(f"{chat}.bak.1").read_bytes() == compressed


@pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="sees open files in /proc")
def test_in_place_refuses_a_file_another_process_writes(chat: Path) -> None:
    original = chat.read_bytes()
    with open(chat, "ab"):  # an agent that keeps its transcript open to append
        run = ctxpack("compress", str(chat), "--in-place", "--budget", budget())
        assert_clean_error(run, 2, f"{chat} is open for writing in ", f"(pid {os.getpid()})",
                           "--force")
        assert chat.read_bytes() == original
        assert ctxpack("compress", str(chat), "--in-place", "--budget", budget(), "-q",
                       "--force").code == 0
    old = time.time() - 60
    os.utime(chat, (old, old))
    with open(chat, "rb"):  # a reader is no writer
        run = ctxpack("restore", str(chat), "--in-place")
        assert run.code == 0, run.err
    assert chat.read_bytes() == original


def test_in_place_with_nothing_to_do_leaves_the_file_alone(tmp_path: Path) -> None:
    chat = tmp_path / "short.jsonl"
    chat.write_text('{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n')
    old = time.time() - 60
    os.utime(chat, (old, old))
    before = chat.stat()
    run = ctxpack("compress", str(chat), "--in-place", "-q")  # far under the default trigger
    assert run.code == 0, run.err
    after = chat.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not Path(f"{chat}.bak").exists()
    run = ctxpack("restore", str(chat), "--in-place")
    assert run.code == 0 and "left as it is" in run.err
    assert not Path(f"{chat}.bak").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_as_a_stream(chat: Path, tmp_path: Path) -> None:
    import subprocess

    def fed(*args: str) -> Run:
        pipe = tmp_path / "pipe"
        pipe.unlink(missing_ok=True)
        os.mkfifo(pipe)
        writer = subprocess.Popen(f"cat '{chat}' > '{pipe}'", shell=True)
        try:
            return ctxpack(*[str(pipe) if a == "PIPE" else a for a in args])
        finally:
            writer.wait(timeout=60)

    stats = fed("stats", "-f", "csv", "PIPE")
    assert stats.code == 0, stats.err
    assert stats.out.splitlines()[1].split(",")[6] == \
        ctxpack("stats", "-f", "csv", str(chat)).out.splitlines()[1].split(",")[6]
    out = tmp_path / "out.jsonl"
    assert fed("compress", "PIPE", "--budget", budget(), "-q", "-o", str(out)).code == 0
    assert ctxpack("restore", str(out)).out.encode() == chat.read_bytes()


def test_dry_run_writes_nothing_and_reports(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    report = tmp_path / "report.json"
    run = ctxpack("compress", str(chat), "--budget", budget(), "--dry-run", "-o", str(out),
                  "--report-json", str(report))
    assert run.code == 0, run.err
    assert not out.exists() and run.out == ""
    assert "dry run" in run.err
    data = json.loads(report.read_text())
    assert data["schema_version"] == 3
    assert [s["name"] for s in data["stages"]] == ["truncate", "mask", "summarize"]
    assert data["tokens_after"] <= int(budget()) < data["tokens_before"]
    assert data["summary"]["retention"]["identifiers"]["total"] > 0


def test_report_json_on_stdout_with_output_to_a_file(chat: Path, tmp_path: Path) -> None:
    run = ctxpack("compress", str(chat), "--budget", budget(), "-q", "-o",
                  str(tmp_path / "o.jsonl"), "--report-json", "-")
    assert json.loads(run.out)["changed"] is True


def test_strip_metadata_gives_api_ready_messages(chat: Path) -> None:
    run = ctxpack("compress", str(chat), "--budget", budget(), "--strip-metadata", "-q")
    assert run.code == 0, run.err
    messages = [json.loads(line) for line in run.out.splitlines()]
    assert all("ctxpack" not in m for m in messages)
    summary = next(str(m["content"]) for m in messages
                   if str(m.get("content")).startswith("## Archived Session Summary"))
    # nothing here can be restored, and nothing says it can
    assert "--strip-metadata" in run.err and "no archive" in run.err
    assert "their full text was not kept" in summary and "ctxpack restore" not in run.out
    masked = ctxpack("compress", str(chat), *mask_all(), "--keep-observations", "1",
                     "--strip-metadata", "-q")
    tools = [json.loads(line) for line in masked.out.splitlines() if '"tool"' in line]
    assert any("masked" in m["content"] and "not kept" in m["content"] for m in tools)
    assert "ctxpack restore" not in masked.out


def test_no_archive_warns_and_restore_then_fails_cleanly(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    run = ctxpack("compress", str(chat), "--budget", budget(), "--no-archive", "-q", "-o", str(out))
    assert run.code == 0 and "--no-archive" in run.err
    assert "ctxpack restore" not in out.read_text() and "not kept" in out.read_text()
    planned = json.loads(ctxpack("compress", str(chat), "--budget", budget(), "--dry-run", "-q",
                                 "--report-json", "-").out)
    tight = planned["tokens_after"] - planned["summary"]["tokens"] // 2  # less room for it
    squeezed = ctxpack("compress", str(chat), "--budget", str(tight), "--no-archive", "-q")
    assert "Condensed to fit" in squeezed.out and "archive has them" not in squeezed.out
    assert_clean_error(ctxpack("restore", str(out)), 2, "not archived")


def test_archive_dir_holds_the_originals(chat: Path, tmp_path: Path) -> None:
    out, store = tmp_path / "out.jsonl", tmp_path / "store"
    run = ctxpack("compress", str(chat), "--budget", budget(), "--archive-dir", str(store), "-q",
                  "-o", str(out))
    assert run.code == 0, run.err
    assert any(store.rglob("*"))
    assert "zlib+base64" not in out.read_text()
    assert ctxpack("restore", str(out)).out.encode() == chat.read_bytes()
    moved = tmp_path / "moved"
    store.rename(moved)
    assert_clean_error(ctxpack("restore", str(out)), 2, "--archive-dir")
    assert ctxpack("restore", str(out), "--archive-dir", str(moved)).code == 0


def test_a_relative_archive_dir_is_found_from_anywhere(chat: Path, tmp_path: Path) -> None:
    """Compress run in a project folder names its archive folder as given; restore run
    elsewhere looks for it beside the compressed file too."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    chat.rename(project / "chat.jsonl")
    run = ctxpack("compress", "chat.jsonl", "--budget", budget(), "--archive-dir", ".archive",
                  "-q", "-o", "small.jsonl", cwd=str(project))
    assert run.code == 0, run.err
    small = project / "small.jsonl"
    assert '"dir":".archive"' in small.read_text()
    original = (project / "chat.jsonl").read_bytes()
    assert ctxpack("restore", str(small), cwd=str(elsewhere)).out.encode() == original
    assert ctxpack("restore", "small.jsonl", cwd=str(project)).out.encode() == original
    piped = ctxpack("restore", "-", input=small.read_bytes(), cwd=str(elsewhere))
    assert_clean_error(piped, 2, "not found in .archive", "--archive-dir")
    (project / ".archive").rename(project / "moved")
    assert_clean_error(ctxpack("restore", str(small), cwd=str(elsewhere)), 2,
                       f"not found in .archive nor in {project / '.archive'}")


def test_restore_only_expands_one_item(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    ctxpack("compress", str(chat), *mask_all(), "--keep-observations", "1", "-q",
            "-o", str(out))
    listed = ctxpack("restore", str(out), "--list").out.splitlines()
    assert listed and all(line.split("\t")[1] == "observations" for line in listed)
    item = listed[0].split("\t")[0]
    one = ctxpack("restore", str(out), "--only", item)
    assert one.code == 0, one.err
    assert one.out.count('"ctxpack"') == out.read_text().count('"ctxpack"') - 1
    assert_clean_error(ctxpack("restore", str(out), "--only", "o-nothing"), 2, "o-nothing")


def test_settings_come_from_config_then_env_then_flags(chat: Path, tmp_path: Path) -> None:
    config = tmp_path / "ctxpack.yaml"
    config.write_text("compress:\n  budget: 3000\n  strategy: extractive\n")
    env = {"CTXPACK_CONFIG": str(config)}
    run = ctxpack("compress", str(chat), "--report-json", "-", "--dry-run", "-q", env=env)
    assert json.loads(run.out)["limit"] == 3000
    env["CTXPACK_BUDGET"] = "4000"
    run = ctxpack("compress", str(chat), "--report-json", "-", "--dry-run", "-q", env=env)
    assert json.loads(run.out)["limit"] == 4000
    run = ctxpack("compress", str(chat), "--budget", "3500", "--report-json", "-", "--dry-run",
                  "-q", env=env)
    assert json.loads(run.out)["limit"] == 3500


@pytest.mark.parametrize("text, fragment", [
    ("compress:\n  budgett: 3\n", "budgett"),
    ("compress:\n  budget: lots\n", "budget must be int"),
    ("compresss: {}\n", "compresss"),
    ("compress:\n  strategy: bogus\n", "strategy must be one of extractive"),
    ("compress:\n  keep_steps: -1\n", "keep_steps must be 0 or more, not -1"),
])
def test_bad_config_is_named(chat: Path, tmp_path: Path, text: str, fragment: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    run = ctxpack("compress", str(chat), "--config", str(config))
    assert_clean_error(run, 2, fragment, "bad.yaml")


@pytest.mark.parametrize("env, fragment", [
    ({"CTXPACK_STRATEGY": "bogus"}, "CTXPACK_STRATEGY: strategy must be one of"),
    ({"CTXPACK_THRESHOLD": "2"}, "CTXPACK_THRESHOLD: threshold must be above 0"),
    ({"CTXPACK_BUDGET": "lots"}, "CTXPACK_BUDGET"),
    ({"CTXPACK_CONFIG": "/no/such/ctxpack.yaml"}, "$CTXPACK_CONFIG"),
    ({"CTXPACK_KEEP_STEPS": "many"}, "CTXPACK_KEEP_STEPS: keep_steps must be int, not 'many'"),
])
def test_bad_environment_is_named(chat: Path, env: dict, fragment: str) -> None:
    assert_clean_error(ctxpack("compress", str(chat), env=env), 2, fragment)


def test_a_ctxpack_variable_of_someone_else_is_let_be(chat: Path) -> None:
    run = ctxpack("compress", str(chat), "--budget", budget(), "-q",
                  env={"CTXPACK_SHARED": str(SHARED)})
    assert run.code == 0, run.err
    assert said(run.err) == [] and '"ctxpack"' in run.out


@pytest.mark.parametrize("variable, meant", [("CTXPACK_BUDGT", "CTXPACK_BUDGET"),
                                             ("CTXPACK_budget", "CTXPACK_BUDGET")])
def test_a_misspelt_setting_is_warned_of_once(chat: Path, variable: str, meant: str) -> None:
    run = ctxpack("compress", str(chat), "--budget", budget(), "-q", env={variable: "9000"})
    assert run.code == 0, run.err
    assert said(run.err) == [
        f"warning: {variable} is not a ctxpack setting; did you mean {meant}?"]


@pytest.mark.parametrize("args, fragment", [
    (["--in-place", "-o", "x.jsonl"], "--in-place and --output"),
    (["--strategy", "poetic"], "strategy must be one of"),
    (["--threshold", "1.5"], "threshold"),
    (["--truncate-mode", "middle"], "truncate mode"),
    (["--model", "no-such-model"], "unknown model"),
    (["--budget", "100"], "cannot fit"),
])
def test_bad_flags_are_one_line_errors(chat: Path, args: list[str], fragment: str) -> None:
    run = ctxpack("compress", str(chat), *args)
    assert_clean_error(run, 3 if fragment == "cannot fit" else 2, fragment)


def test_output_is_never_half_written_on_failure(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("keep me\n")
    assert ctxpack("compress", str(chat), "--budget", "100", "-o", str(out)).code == 3
    assert out.read_text() == "keep me\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ctxpack-")]


def test_bad_input_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role":"user","content":"hi"}\n{"role": oops}\n')
    assert_clean_error(ctxpack("compress", str(bad)), 2, f"{bad}:2")


def test_damaged_archive_is_a_clean_error(chat: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    ctxpack("compress", str(chat), "--budget", budget(), "-q", "-o", str(out))
    rows = records_of(out)
    for row in rows:
        if row.get("ctxpack", {}).get("kind") == "archived_summary":
            row["ctxpack"]["archive"]["data"] = row["ctxpack"]["archive"]["data"][::-1]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert_clean_error(ctxpack("restore", str(out)), 2, "archive")


@pytest.mark.parametrize("data", [b"", b"\n\n"], ids=["empty", "blank lines"])
def test_an_empty_file_is_refused_and_nothing_is_written(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(data)
    run = ctxpack("compress", str(path), "--budget", "10", "-o", str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, str(path), "empty")
    assert not (tmp_path / "out.jsonl").exists()
    piped = ctxpack("compress", "-", "-q", input=data)
    assert_clean_error(piped, 2, "<stdin>", "empty")
    assert piped.out == ""


def _rewrite(path: Path, how: str) -> None:
    """What a writer may do to a transcript while compress works on it."""
    data = path.read_bytes()
    before = path.stat().st_mtime_ns
    if how == "appended":
        with path.open("ab") as f:
            f.write(b'{"role": "user", "content": "one more question"}\n')
        return
    if how == "same size":  # one byte changed mid-file, the time moved on
        middle = len(data) // 2
        data = data[:middle] + (b"X" if data[middle:middle + 1] != b"X" else b"Y") \
            + data[middle + 1:]
    elif how == "shorter":
        data = data[: len(data) // 2]
    else:  # "longer": the last line replaced by a longer one
        data = data[: data.rstrip(b"\n").rfind(b"\n") + 1] + \
            b'{"role": "user", "content": "' + b"a rewritten ending " * 20 + b'"}\n'
    with path.open("r+b") as f:  # the same file, not a new one renamed over it
        f.truncate(0)
        f.write(data)
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.mark.parametrize("how", ["same size", "shorter", "longer"])
def test_an_input_rewritten_while_it_is_compressed_is_refused(chat: Path, how: str) -> None:
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options
    from ctxpack.errors import InputError

    result = compress_file(chat, Options(budget=int(budget())))
    _rewrite(chat, how)
    with pytest.raises(InputError, match="changed while it was being compressed"):
        b"".join(result.chunks())


def test_lines_appended_while_compressing_are_left_for_next_time(chat: Path,
                                                                  tmp_path: Path) -> None:
    from ctxpack.compression import compress_file
    from ctxpack.compression.settings import Options

    original = chat.read_bytes()
    result = compress_file(chat, Options(budget=int(budget())))
    _rewrite(chat, "appended")
    out = tmp_path / "out.jsonl"
    out.write_bytes(result.data)  # the file as it was when compress opened it
    assert ctxpack("restore", str(out)).out.encode() == original


def test_the_command_writes_nothing_when_the_input_is_rewritten(chat: Path,
                                                                 tmp_path: Path) -> None:
    """The command as an agent's rewrite meets it: the output file is not made."""
    import subprocess
    import sys

    out = tmp_path / "out.jsonl"
    script = (
        "import importlib, sys\n"
        "from pathlib import Path\n"
        "from tests.test_cli_compress import _rewrite\n"
        "module = importlib.import_module('ctxpack.compression')\n"
        "real = module.compress_file\n"
        "def planned_then_rewritten(*args, **kwargs):\n"
        "    result = real(*args, **kwargs)\n"
        "    _rewrite(Path(sys.argv[2]), 'same size')\n"
        "    return result\n"
        "module.compress_file = planned_then_rewritten\n"
        "from ctxpack.cli import main\n"
        "sys.exit(main())\n")
    proc = subprocess.run([sys.executable, "-c", script, "compress", str(chat), "--budget",
                           budget(), "-q", "-o", str(out)], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 2, proc.stderr
    assert "changed while it was being compressed" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ctxpack-")]


def test_pin_keeps_matching_messages_verbatim_and_a_bad_regex_is_refused(chat: Path) -> None:
    from ctxpack import load as load_file

    archived = [m for m in load_file(chat).messages[2:8] if m.role == "assistant" and m.text]
    words = archived[0].text.split("\n")[0][:40]  # a message the summary archives
    run = ctxpack("compress", str(chat), "--budget", budget(), "--pin", re.escape(words),
                  "--strip-metadata", "-q")
    assert run.code == 0, run.err
    summary = next(str(m["content"]) for m in map(json.loads, run.out.splitlines())
                   if str(m.get("content")).startswith("## Archived Session Summary"))
    assert "### Pinned (verbatim)" in summary and words in summary
    assert_clean_error(ctxpack("compress", str(chat), "--pin", "(unclosed"), 2,
                       "pin must be a Python regex")


def test_a_config_list_of_pins_keeps_messages_matching_any_of_them(chat: Path,
                                                                  tmp_path: Path) -> None:
    from ctxpack import load as load_file
    from ctxpack.transcript import Text

    said = [t for m in load_file(chat).messages[2:8]
            for t in ("\n".join(p.text for p in m.parts if isinstance(p, Text)),) if t]
    first, second = (t.split("\n")[0][:40] for t in (said[0], said[-1]))
    assert first != second
    config = tmp_path / "pins.yaml"
    config.write_text("compress:\n  pin:\n"
                      + "".join(f"    - {json.dumps('(?i)' + re.escape(w))}\n"
                                for w in (first, second)))
    run = ctxpack("compress", str(chat), "--budget", budget(), "--config", str(config),
                  "--strip-metadata", "-q")
    assert run.code == 0, run.err
    summary = next(str(m["content"]) for m in map(json.loads, run.out.splitlines())
                   if str(m.get("content")).startswith("## Archived Session Summary"))
    pinned = summary.split("### Pinned (verbatim)", 1)[1]
    assert first in pinned and second in pinned
    # the flag repeated does as the list; given, it replaces the config's
    run = ctxpack("compress", str(chat), "--budget", budget(), "--pin", re.escape(first),
                  "--pin", re.escape(second), "--strip-metadata", "-q")
    assert run.code == 0, run.err
    summary = next(str(m["content"]) for m in map(json.loads, run.out.splitlines())
                   if str(m.get("content")).startswith("## Archived Session Summary"))
    pinned = summary.split("### Pinned (verbatim)", 1)[1]
    assert first in pinned and second in pinned
    assert_clean_error(ctxpack("compress", str(chat), "--pin", "ok", "--pin", "(unclosed"), 2,
                       "pin item 2 must be a Python regex")
    config.write_text('compress:\n  pin: ["fine", "(unclosed"]\n')
    assert_clean_error(ctxpack("compress", str(chat), "--config", str(config)), 2,
                       "pin item 2 must be a Python regex", "pins.yaml")


def test_focus_keeps_the_archived_facts_that_name_its_words(chat: Path) -> None:
    def summary(*flags: str) -> str:
        run = ctxpack("compress", str(chat), "--budget", budget(), "--strip-metadata", "-q",
                      "--max-summary-tokens", "300", *flags)  # condensed: facts dropped
        assert run.code == 0, run.err
        return next(str(m["content"]) for m in map(json.loads, run.out.splitlines())
                    if str(m.get("content")).startswith("## Archived Session Summary"))

    plain = summary()
    from ctxpack import load as load_file
    from ctxpack.compression.facts import extract

    archived = "\n".join(m.text for m in load_file(chat).messages[2:12])
    dropped = [p for p in extract(archived).paths + extract(archived).urls if p not in plain]
    assert dropped, "the condensed summary drops no fact: the test proves nothing"
    word = dropped[0].rstrip("/").rsplit("/", 1)[-1][:20]
    focused = summary("--focus", word)
    assert f"### Focus\nWhat matters next: {word}" in focused and dropped[0] in focused


def test_a_target_the_part_not_in_the_file_puts_out_of_reach_is_said(tmp_path: Path) -> None:
    # the Claude Code sample's calls record 26k tokens the file does not hold: a budget of
    # 28,000 aims at 17,500, which no compression of the file reaches
    run = tmp_path / "run.jsonl"
    shutil.copy(SAMPLES / "coding-agent.claude-code.jsonl", run)
    out = tmp_path / "small.jsonl"
    result = ctxpack("compress", str(run), "--budget", "28000", "-o", str(out),
                     "--report-json", str(tmp_path / "r.json"))
    assert result.code == 0, result.err  # a missed target is no failure: it did what it could
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["billed"]["tokens_after"] > report["target"] == 17_500
    unlogged = report["billed"]["not_in_file"]
    assert unlogged > report["target"]
    (warning,) = [w for w in report["warnings"] if w.startswith("target ")]
    assert warning.startswith(f"target 17,500 billed tokens not reached: {unlogged:,} are not "
                              "in the file")
    assert f"the output {report['billed']['tokens_after']:,}" in warning
    assert f"warning: {warning}" in " ".join(result.err.split())
    assert out.is_file()


@pytest.mark.parametrize("asked", [300_000, 10**20])  # (the most digits a setting takes)
def test_a_budget_above_the_window_is_said_once_and_the_window_used(tmp_path: Path,
                                                                    asked: int) -> None:
    from ctxpack.models import TABLE

    window = TABLE.find("claude-opus-4-6").context_window  # (the sample's model)
    out = tmp_path / "out.jsonl"
    run = ctxpack("compress", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--budget",
                  str(asked), "-o", str(out), "--report-json", str(tmp_path / "r.json"))
    assert run.code == 0, run.err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["limit"] == report["trigger"] == window
    (warning,) = [w for w in report["warnings"] if "window" in w]
    assert f"({asked:,} tokens)" in warning and f"{window:,}-token window" in warning
    assert " ".join(run.err.split()).count(f"warning: {warning}") == 1
    # at the window itself there is nothing to say
    run = ctxpack("compress", str(SAMPLES / "coding-agent.claude-code.jsonl"), "--budget",
                  str(window), "-o", str(out), "--report-json", "-", "-q")
    assert not [w for w in json.loads(run.out)["warnings"] if "window" in w]
    # a run over many files says it once for all of them
    (tmp_path / "in").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        shutil.copy(SAMPLES / "coding-agent.claude-code.jsonl", tmp_path / "in" / name)
    run = ctxpack("compress", str(tmp_path / "in"), "--out-dir", str(tmp_path / "out"),
                  "--budget", str(asked), "-q")
    assert run.code == 0, run.err
    assert " ".join(run.err.split()).count(f"warning: {warning}") == 1


def test_the_report_says_one_of_a_thing_in_the_singular(tmp_path: Path) -> None:
    from .compression.transcripts import agent_run

    path = tmp_path / "run.jsonl"
    path.write_bytes(agent_run(1))  # one output of 15 lines
    run = ctxpack("compress", str(path), "--max-lines", "10", "-o", str(tmp_path / "o.jsonl"))
    assert run.code == 0, run.err
    assert "; 1 output truncated, 0 masked;" in run.err
    assert "1 outputs" not in run.err and "of 15 lines" in (tmp_path / "o.jsonl").read_text()


def test_a_reached_target_or_a_file_that_holds_all_its_prompt_warns_of_none(
        tmp_path: Path) -> None:
    # the chat's count is exact and the file holds all of it: the default target is a soft aim
    result = ctxpack("compress", str(CHAT), "--budget", budget(), "-o",
                     str(tmp_path / "out.jsonl"), "--report-json", str(tmp_path / "r.json"))
    assert result.code == 0, result.err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"] is not None
    assert not [w for w in report["warnings"] if "target" in w]


def test_a_context_under_its_trigger_has_its_huge_outputs_cut_and_no_more(
        tmp_path: Path) -> None:
    """Truncation runs whatever the size, masking and the summary only over the trigger
    (`--budget`): a context at its budget keeps every message however far over the target
    truncating leaves it; one token more and compress goes down to the target."""
    from .compression.transcripts import agent_run, tokens

    path = tmp_path / "run.jsonl"
    path.write_bytes(agent_run(16))  # 16 outputs of 15 lines
    at = tokens(path)

    def report(budget: int) -> dict:
        run = ctxpack("compress", str(path), "--max-lines", "10", "--budget", str(budget),
                      "--target", "2000", "--report-json", "-", "-q", "-o",
                      str(tmp_path / "out.jsonl"))
        assert run.code == 0, run.err
        return json.loads(run.out)

    under = report(at)
    assert [(s["name"], s["items"]) for s in under["stages"]] == [("truncate", 16), ("mask", 0)]
    assert under["stages"][1]["note"] == "under the trigger: nothing masked"
    assert under["summary"] is None and under["messages_after"] == under["messages_before"]
    assert under["tokens_after"] > 2000  # over the target, which only an act goes down to
    over = report(at - 1)
    assert [s["name"] for s in over["stages"]] == ["truncate", "mask", "summarize"]
    # the context as read was over: masking acts though truncating took it under
    assert over["stages"][0]["tokens_after"] < at - 1 and over["stages"][1]["items"] > 0
    assert over["tokens_after"] <= 2000


def test_a_target_above_the_budget_aims_at_the_budget(tmp_path: Path) -> None:
    """A target above the limit (the budget, else the window) is no aim compress may stop
    at: it aims at the limit, says so once, and the command, the config and the library
    agree (the same sample with no target at all fits its budget too)."""
    import ctxpack as library

    sample = SAMPLES / "refactor.codex.jsonl"

    def report(*args: str, env: dict | None = None) -> dict:
        run = ctxpack("compress", str(sample), *args, "-o", str(tmp_path / "o.jsonl"),
                      "--report-json", "-", "-q", env=env)
        assert run.code == 0, run.err
        return json.loads(run.out)

    flags = report("--budget", "20000", "--target", "50000")
    assert flags["limit"] == flags["target"] == 20_000
    assert flags["summary"] is not None and flags["billed"]["tokens_after"] <= 20_000
    (said_once,) = [w for w in flags["warnings"] if "target" in w]
    assert said_once.startswith("the target asked for (50,000 billed tokens) is above the "
                                "budget: compress aims at the budget (20,000) instead")
    config = tmp_path / "ctxpack.yaml"
    config.write_text("compress:\n  budget: 20000\n  target: 50000\n")
    assert report(env={"CTXPACK_CONFIG": str(config)})["billed"] == flags["billed"]
    _, made = library.compress(sample, budget=20_000, target=50_000)
    assert made.target == 20_000 and made.billed == flags["billed"]
    assert made.warnings == flags["warnings"]
    # without a budget the window is the limit
    window = report("--target", "10000000")
    assert window["target"] == window["limit"] == window["context_window"]
    assert any(f"above the {window['context_window']:,}-token window" in w
               for w in window["warnings"])

"""Files written whole or not at all, and originals kept beside them, never written over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxpack.atomic import PREFIX, replace_keeping, write_atomic
from ctxpack.errors import UsageError

fcntl = pytest.importorskip("fcntl", reason="advisory locks are POSIX")


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(PREFIX))


def test_a_write_is_complete_or_absent(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    write_atomic(str(out), [b"a\n", b"b\n"])
    assert out.read_bytes() == b"a\nb\n"

    def broken():
        yield b"c\n"
        raise OSError(28, "No space left on device")

    with pytest.raises(UsageError, match=r"out\.jsonl: cannot write it: No space left"):
        write_atomic(str(out), broken())
    assert out.read_bytes() == b"a\nb\n"
    assert leftovers(tmp_path) == []


def test_a_failed_check_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"old\n")

    def changed() -> None:
        raise UsageError("it changed")

    with pytest.raises(UsageError, match="it changed"):
        replace_keeping(str(out), [b"new\n"], changed)
    assert out.read_bytes() == b"old\n"
    assert leftovers(tmp_path) == [] and not Path(f"{out}.bak").exists()


def test_a_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"nowhere/out\.jsonl: cannot write it: No such file"):
        write_atomic(str(tmp_path / "nowhere" / "out.jsonl"), [b"x"])


def test_backups_are_never_written_over(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\n")
    assert replace_keeping(str(path), [b"second\n"]) == f"{path}.bak"
    assert replace_keeping(str(path), [b"third\n"]) == f"{path}.bak.1"
    assert path.read_bytes() == b"third\n"
    assert Path(f"{path}.bak").read_bytes() == b"first\n"
    assert Path(f"{path}.bak.1").read_bytes() == b"second\n"


def test_a_backup_name_that_is_a_link_is_left_alone(tmp_path: Path) -> None:
    path, victim = tmp_path / "t.jsonl", tmp_path / "precious.txt"
    path.write_bytes(b"original\n")
    victim.write_bytes(b"keep me\n")
    Path(f"{path}.bak").symlink_to(victim)
    assert replace_keeping(str(path), [b"new\n"]) == f"{path}.bak.1"
    assert victim.read_bytes() == b"keep me\n"
    assert Path(f"{path}.bak.1").read_bytes() == b"original\n"


def test_what_a_writer_appends_after_the_swap_lands_in_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"line 1\n")
    with open(path, "ab") as agent:  # an agent that keeps its transcript open
        backup = replace_keeping(str(path), [b"compressed\n"])
        agent.write(b"line 2\n")
    assert Path(backup).read_bytes() == b"line 1\nline 2\n"
    assert path.read_bytes() == b"compressed\n"


def test_a_killed_writer_leaves_nothing_after_the_next_write(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "from ctxpack.atomic import write_atomic\n"
              "def chunks():\n"
              "    yield b'half'\n"
              "    print('writing', flush=True)\n"
              "    time.sleep(60)\n"
              "    yield b'never'\n"
              "write_atomic(sys.argv[1], chunks())\n")
    writer = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "out.jsonl")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        seen = leftovers(tmp_path)  # none where files can be unnamed, else its own one
        assert len(seen) <= 1
        for name in seen:
            old = time.time() - 3600
            os.utime(tmp_path / name, (old, old))
        write_atomic(str(tmp_path / "other.jsonl"), [b"x"])
        assert leftovers(tmp_path) == seen  # its writer lives and holds it
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        if writer.stdout is not None:
            writer.stdout.close()
    write_atomic(str(tmp_path / "other.jsonl"), [b"y"])
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "out.jsonl").exists()


def test_only_old_unlocked_files_of_ours_are_swept(tmp_path: Path) -> None:
    old = time.time() - 3600
    names = {"stale": f"{PREFIX}{'a' * 16}.tmp", "fresh": f"{PREFIX}{'b' * 16}.tmp",
             "locked": f"{PREFIX}{'c' * 16}.tmp", "theirs": f"{PREFIX}notours.tmp"}
    for key, name in names.items():
        (tmp_path / name).write_bytes(b"x")
        if key != "fresh":
            os.utime(tmp_path / name, (old, old))
    with open(tmp_path / names["locked"], "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        write_atomic(str(tmp_path / "out.jsonl"), [b"x"])
    assert leftovers(tmp_path) == sorted(n for k, n in names.items() if k != "stale")


def test_a_device_or_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    write_atomic(str(fifo), [b"through ", b"the pipe\n"])
    assert reader.communicate(timeout=30)[0] == b"through the pipe\n"
    assert fifo.is_fifo() and leftovers(tmp_path) == []
    with pytest.raises(UsageError, match="not a regular file"):
        replace_keeping(str(fifo), [b"x"])

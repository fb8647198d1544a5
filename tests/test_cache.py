"""The persistent token cache: same counts, nothing re-tokenized, never a crash.

Every test points CTXPACK_CACHE_DIR at its own tmp_path, so none touches the
real user cache.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ctxpack import cache
from ctxpack.breakdown import stats

from .helpers import ctxpack


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(where))
    monkeypatch.setenv("CTXPACK_WORKERS", "1")
    return where


def _line(role: str, text: str) -> str:
    return json.dumps({"role": role, "content": text}) + "\n"


def _write(path: Path, start: int, n: int) -> None:
    """n messages with texts no other call writes (numbered from `start`)."""
    with open(path, "a", encoding="utf-8") as out:
        for i in range(start, start + n):
            role = "user" if i % 2 else "assistant"
            out.write(_line(role, f"message {i}: " + "the file was read again. " * (i % 40)))


@pytest.fixture
def chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    _write(path, 0, 60)
    return path


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("CTXPACK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "ctxpack"
    monkeypatch.setenv("CTXPACK_CACHE_DIR", str(tmp_path / "mine"))
    assert cache.cache_dir() == tmp_path / "mine"


def test_second_run_tokenizes_nothing(exact_tokens, cache_dir, chat):
    first = stats(chat, "gpt-4o")
    second = stats(chat, "gpt-4o")
    assert first.counting["tokenized"] > 0
    assert first.counting["stored_new"] == first.counting["tokenized"]
    assert second.counting["tokenized"] == 0 and second.counting["stored_new"] == 0
    assert second.counting["stored_hits"] == first.counting["tokenized"]
    assert second.to_dict() == first.to_dict() == stats(chat, "gpt-4o", cache=False).to_dict()
    assert (cache_dir / cache.FILENAME).is_file()


def test_an_appended_file_costs_only_its_new_text(exact_tokens, cache_dir, chat):
    stats(chat, "gpt-4o")
    _write(chat, 60, 25)
    grown = stats(chat, "gpt-4o")
    assert grown.counting["tokenized"] == 25  # the new contents; roles were stored already
    assert grown.to_dict() == stats(chat, "gpt-4o", cache=False).to_dict()


def test_other_encodings_do_not_share_counts(exact_tokens, cache_dir, chat):
    stats(chat, "gpt-4o")
    other = stats(chat, "gpt-4")
    assert other.counting["stored_hits"] == 0 and other.counting["tokenized"] > 0


@pytest.mark.parametrize("damage", ["garbage", "directory", "truncated"])
def test_a_broken_database_is_bypassed(exact_tokens, cache_dir, chat, damage):
    expected = stats(chat, "gpt-4o", cache=False).to_dict()
    db = cache_dir / cache.FILENAME
    if damage == "garbage":
        cache_dir.mkdir(parents=True)
        db.write_bytes(b"this is not a database\n" * 100)
    elif damage == "directory":
        db.mkdir(parents=True)
    else:
        stats(chat, "gpt-4o")
        db.write_bytes(db.read_bytes()[:2000])
    result = stats(chat, "gpt-4o")
    assert result.to_dict() == expected
    assert result.counting["store_problem"]
    run = ctxpack("stats", "--json", "--model", "gpt-4o", str(chat),
                  env={"CTXPACK_CACHE_DIR": str(cache_dir)})
    assert run.code == 0 and "Traceback" not in run.err, run.err
    assert json.loads(run.out)["files"][0]["tokens"] == expected["tokens"]


def test_a_locked_database_is_read_but_not_waited_on(exact_tokens, cache_dir, chat):
    stats(chat, "gpt-4o")
    _write(chat, 60, 5)
    holder = sqlite3.connect(cache_dir / cache.FILENAME, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process mid-write
    try:
        result = stats(chat, "gpt-4o")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.counting["stored_hits"] > 0 and result.counting["stored_new"] == 0
    assert result.to_dict() == stats(chat, "gpt-4o", cache=False).to_dict()


def test_no_cache_leaves_no_database(exact_tokens, cache_dir, chat):
    stats(chat, "gpt-4o", cache=False)
    run = ctxpack("stats", "--json", "--no-cache", str(chat),
                  env={"CTXPACK_CACHE_DIR": str(cache_dir)})
    assert run.code == 0, run.err
    assert not cache_dir.exists()


def test_estimates_are_never_stored(cache_dir, chat, monkeypatch):
    from ctxpack import tokens

    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_failures", {"o200k_base": "ConnectionError: offline"})
    result = stats(chat, "gpt-4o")
    assert not result.exact and result.counting["stored_new"] == 0


def test_two_processes_at_once(exact_tokens, cache_dir, chat):
    _write(chat, 60, 400)
    script = ("import json, sys; from ctxpack.breakdown import stats; "
              "print(json.dumps(stats(sys.argv[1], 'gpt-4o').to_dict()))")
    env_keys = {"CTXPACK_CACHE_DIR": str(cache_dir)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(chat)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**_env(), **env_keys})
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outs]
    docs = [json.loads(out) for out, _ in outs]
    assert docs[0] == docs[1] == stats(chat, "gpt-4o", cache=False).to_dict()
    db = sqlite3.connect(cache_dir / cache.FILENAME)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT count(*) FROM counts").fetchone()[0] >= 460


def _env() -> dict[str, str]:
    import os

    root = str(Path(__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def test_a_planted_count_is_counted_again_and_replaced(cache_dir, chat):
    """Rows written by hand or another program (a negative count, text, a float) must not
    make a CI gate pass: they are ignored, the text is counted, and the row replaced."""
    truth = stats(chat, "gpt-4o", cache=False).tokens
    stats(chat, "gpt-4o")  # fills the cache
    db = sqlite3.connect(cache_dir / cache.FILENAME)
    rows = db.execute("SELECT digest FROM counts").fetchall()
    assert len(rows) > 3
    for (digest,), bad in zip(rows, (-1_000_000, "many", 2.5, None), strict=False):
        if bad is None:
            continue
        db.execute("UPDATE counts SET tokens = ? WHERE digest = ?", (bad, digest))
    db.commit()
    db.close()
    assert stats(chat, "gpt-4o").tokens == truth
    run = ctxpack("stats", str(chat), "--max-tokens", "100", "--model", "gpt-4o",
                  env={"CTXPACK_CACHE_DIR": str(cache_dir)})
    assert run.code == 1, run.err  # the gate still sees the transcript's real size
    db = sqlite3.connect(cache_dir / cache.FILENAME)
    counts = [n for (n,) in db.execute("SELECT tokens FROM counts")]
    assert all(type(n) is int and n >= 0 for n in counts)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_the_caches_are_private_to_their_user(cache_dir, chat, tmp_path):
    from ctxpack.compression.summarizers._stepcache import FILENAME, StepCache

    cache_dir.mkdir(mode=0o755)  # made earlier, more open than it should be
    stats(chat, "gpt-4o")
    StepCache().close()
    assert cache_dir.stat().st_mode & 0o777 == 0o700
    for name in (cache.FILENAME, FILENAME):
        assert (cache_dir / name).stat().st_mode & 0o777 == 0o600, name


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a folder another user's needs root")
def test_a_cache_folder_of_another_user_is_not_used(cache_dir, chat):
    from ctxpack.compression.summarizers._stepcache import StepCache

    cache_dir.mkdir()
    os.chown(cache_dir, 4242, 4242)
    result = stats(chat, "gpt-4o")
    assert result.counting["stored_new"] == 0 and "another user" in \
        result.counting["store_problem"]
    assert not (cache_dir / cache.FILENAME).exists()
    steps = StepCache()
    steps.put({"k": "* Step 1: planted"})
    assert steps.get(["k"]) == {}


def test_without_a_home_directory_nothing_is_kept(chat, monkeypatch, tmp_path):
    """No shared folder in /tmp to fall back on, where another user could plant counts."""
    import tempfile

    monkeypatch.delenv("CTXPACK_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: (_ for _ in ()).throw(
        RuntimeError("Could not determine home directory."))))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cache.cache_dir() is None
    result = stats(chat, "gpt-4o")
    assert result.tokens == stats(chat, "gpt-4o", cache=False).tokens
    assert result.counting["stored_new"] == 0 and "no home directory" in \
        result.counting["store_problem"]
    assert list(tmp_path.iterdir()) == [chat]


def test_a_planted_step_line_that_is_no_text_is_asked_for_again(cache_dir):
    from ctxpack.compression.summarizers._stepcache import FILENAME, StepCache

    steps = StepCache()
    steps.put({"a": "* Step 1: ran make", "b": "* Step 2: ran tests"})
    steps.close()
    db = sqlite3.connect(cache_dir / FILENAME)
    db.execute("UPDATE lines SET line = ? WHERE key = 'b'", (b"\x00binary",))
    db.commit()
    db.close()
    assert StepCache().get(["a", "b"]) == {"a": "* Step 1: ran make"}


def test_a_held_store_is_opened_once_and_written_when_the_block_ends(cache_dir: Path) -> None:
    with cache.held():
        first = cache.open_store("o200k_base/v1")
        first.put([(b"a" * 32, 7)])
        first.close()  # the block's to close: still usable, nothing written yet
        second = cache.open_store("o200k_base/v1")
        assert second._store is first._store  # type: ignore[attr-defined]
        assert second.get([b"a" * 32]) == {}
    again = cache.open_store("o200k_base/v1")
    assert again.get([b"a" * 32]) == {b"a" * 32: 7}
    again.close()

"""OpenCode's storage/ folder tree and opencode.db: detection, the same messages, counts
and usage as the export of the same session, write and compress refusing the tree, the
database round tripping, and bad trees and databases."""

from __future__ import annotations

import io
import json
import os
import runpy
import shutil
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given, settings

import ctxpack as api
from ctxpack.checks import validate
from ctxpack.formats.opencode_storage import session_file
from ctxpack.loader import load, write

from .conftest import SAMPLES
from .helpers import assert_clean_error, ctxpack
from .test_format_more import opencode_exports

EXPORT = SAMPLES / "opencode" / "book-search.opencode.json"
TREE = SAMPLES / "opencode-storage" / "storage"
(INFO,) = sorted((TREE / "session").glob("*/ses_*.json"))


def split(export: dict, storage) -> str:
    """Write `export` as OpenCode's storage tree under `storage`; the info file's path."""
    info = export["info"]
    ses = storage / "session" / str(info["projectID"]) / f"{info['id']}.json"
    ses.parent.mkdir(parents=True, exist_ok=True)
    ses.write_text(json.dumps(info, indent=2))
    (storage / "message" / info["id"]).mkdir(parents=True)
    for m in export["messages"]:
        msg = m["info"]["id"]
        (storage / "message" / info["id"] / f"{msg}.json").write_text(json.dumps(m["info"]))
        (storage / "part" / msg).mkdir(parents=True)
        for k, p in enumerate(m["parts"]):
            name = p.get("id") or f"prt_{k:04d}"
            (storage / "part" / msg / f"{name}.json").write_text(json.dumps(p))
    return str(ses)


def _same(a, b) -> None:
    assert [(m.role, m.text, m.id) for m in a.messages] == [(m.role, m.text, m.id)
                                                          for m in b.messages]
    assert (a.usage, a.calls, a.model) == (b.usage, b.calls, b.model)


def test_the_sample_tree_reads_as_its_export():
    tree, export = load(INFO), load(EXPORT)
    assert (tree.format, export.format) == ("opencode-storage", "opencode")
    _same(tree, export)
    assert validate(tree) == []


def test_stats_of_the_tree_and_the_export_agree():
    runs = [ctxpack("stats", "--json", str(p)) for p in (INFO, EXPORT)]
    assert [r.code for r in runs] == [0, 0], [r.err for r in runs]
    tree, export = (json.loads(r.out)["files"][0] for r in runs)
    assert tree["format"] == "opencode-storage"
    for key in ("tokens", "messages", "by_role", "usage"):
        assert tree[key] == export[key], key


def files_below(folder) -> dict[str, bytes]:
    """Every file below `folder`, by its path there, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_write_gives_the_session_s_files_into_a_folder_byte_for_byte(tmp_path):
    # the info file alone is not the session: it is written as the tree of its files
    t = api.load(TREE)
    out = tmp_path / "copy"
    api.write(t, out)
    assert files_below(out) == files_below(TREE)
    _same(api.load(out), t)
    # a tree of two sessions: only the one loaded is written, all its files
    storage = two_sessions(tmp_path / "two")
    (info,) = (storage / "session").glob("*/ses_older.json")
    older = api.load(info)
    api.write(older, tmp_path / "older")
    written = files_below(tmp_path / "older")
    assert written == {name: data for name, data in files_below(storage).items()
                       if name in written}
    assert any("ses_older" in name for name in written)
    assert not any(INFO.stem in name for name in written)
    _same(api.load(tmp_path / "older"), older)


def test_write_and_compress_refuse_the_tree_as_one_file_and_write_nothing(tmp_path):
    out = tmp_path / INFO.name
    out.write_text("kept")
    t = api.load(INFO)
    assert len(t.messages) > 1
    for dest in (out, io.BytesIO(), "-"):
        with pytest.raises(api.UsageError, match="cannot write opencode-storage as one "
                           "file: its messages and parts are files of their own") as caught:
            api.write(t, dest)
        assert str(INFO) in str(caught.value) and "give a folder" in str(caught.value)
    assert out.read_text() == "kept"
    run = ctxpack("compress", str(INFO), "-o", str(tmp_path / "packed.json"))
    assert_clean_error(run, 2, "compress cannot write opencode-storage files",
                       "ctxpack convert")
    assert not (tmp_path / "packed.json").exists()


def test_messages_are_taken_in_time_order_not_listing_order(tmp_path):
    export = json.loads(EXPORT.read_bytes())
    # ids that sort against time: the order must come from `time.created`
    for n, m in enumerate(export["messages"]):
        m["info"]["id"] = f"msg_{len(export['messages']) - n:03d}"
        for p in m["parts"]:
            p["messageID"] = m["info"]["id"]
    info = split(export, tmp_path / "storage")
    assert [m.id for m in load(info).messages] == [m.id for m in load(
        _written(export, tmp_path / "export.json")).messages]


def _written(doc: dict, path):
    path.write_text(json.dumps(doc))
    return path


def test_a_message_with_no_part_folder_is_an_empty_message_as_in_an_export(tmp_path):
    # OpenCode writes no parts for a reply aborted or failed before its first one
    export = json.loads(EXPORT.read_bytes())
    aborted = next(m for m in export["messages"] if m["info"]["role"] == "assistant")
    aborted["info"]["error"] = {"name": "MessageAbortedError", "data": {"message": "aborted"}}
    info = split(export, tmp_path / "storage")
    shutil.rmtree(tmp_path / "storage" / "part" / aborted["info"]["id"])
    aborted["parts"] = []
    tree, whole = load(info), load(_written(export, tmp_path / "export.json"))
    _same(tree, whole)
    assert ctxpack("stats", str(info)).code == 0


def test_a_broken_part_file_names_itself(tmp_path):
    storage = tmp_path / "storage"
    shutil.copytree(TREE, storage)
    info = next((storage / "session").glob("*/ses_*.json"))
    part = sorted((storage / "part").rglob("*.json"))[5]
    part.write_bytes(part.read_bytes()[:40])
    assert_clean_error(ctxpack("stats", str(info)), 2, f"{part}:", "truncated")


def test_an_info_file_outside_a_storage_tree_says_where_it_belongs(tmp_path):
    lone = tmp_path / INFO.name
    shutil.copy(INFO, lone)
    assert_clean_error(ctxpack("stats", str(lone)), 2, str(lone),
                       "storage/session/<projectID>/<sessionID>.json")
    (tmp_path / "x" / "session" / "prj").mkdir(parents=True)
    kept = tmp_path / "x" / "session" / "prj" / INFO.name
    shutil.copy(INFO, kept)
    assert_clean_error(ctxpack("stats", str(kept)), 2, str(kept), "no folder of its messages")


OLDER = {"info": {"id": "ses_older", "projectID": "prj_older", "title": "old",
                  "time": {"created": 1, "updated": 2}},
         "messages": [{"info": {"id": "msg_older", "role": "user", "time": {"created": 1}},
                       "parts": [{"id": "prt_older", "type": "text",
                                  "text": "an older question"}]}]}


def two_sessions(tmp_path):
    """The sample tree with an older session of one question beside its own."""
    storage = tmp_path / "storage"
    shutil.copytree(TREE, storage)
    split(OLDER, storage)
    return storage


def test_a_storage_folder_is_each_of_its_sessions(tmp_path):
    storage = two_sessions(tmp_path)
    for folder in (storage, storage / "session"):
        run = ctxpack("stats", "--json", str(folder))
        assert run.code == 0, run.err
        files = json.loads(run.out)["files"]
        assert [(f["format"], f["path"].rsplit("/", 1)[-1]) for f in files] == [
            ("opencode-storage", INFO.name), ("opencode-storage", "ses_older.json")]
        assert files[1]["messages"] == 1
        assert files[0]["tokens"] == json.loads(ctxpack(
            "stats", "--json", str(EXPORT)).out)["files"][0]["tokens"]
    checked = ctxpack("validate", str(storage))
    assert checked.code == 0 and checked.err.count(": opencode-storage,") == 2, checked.err


def test_session_picks_one_session_of_a_storage_folder(tmp_path):
    storage = two_sessions(tmp_path)
    run = ctxpack("stats", "--json", "--session", "ses_older", str(storage))
    assert run.code == 0, run.err
    (older,) = json.loads(run.out)["files"]
    assert older["path"].endswith("ses_older.json") and older["messages"] == 1
    # one-file commands read the folder's newest session, or the one asked for
    newest = ctxpack("show", "--no-pager", str(storage))
    assert newest.code == 0 and "an older question" not in newest.out, newest.err
    assert INFO.name in newest.out.replace("\n", "")  # a long path wraps where it must
    older_shown = ctxpack("show", "--no-pager", "--session", "ses_older", str(storage))
    assert older_shown.code == 0 and "an older question" in older_shown.out
    out = tmp_path / "older.jsonl"
    made = ctxpack("convert", str(storage / "session"), "--session", "ses_older",
                   "--to", "openai", "-o", str(out))
    assert made.code == 0, made.err
    assert json.loads(out.read_text())["messages"][-1]["content"] == "an older question"


def test_the_library_picks_a_session_of_a_storage_folder_as_the_command_line_does(
        tmp_path):
    storage = two_sessions(tmp_path)
    for folder in (storage, storage / "session", str(storage)):
        older = api.load(folder, session="ses_older")
        assert older.path.endswith("ses_older.json")
        assert [m.text for m in older.messages] == ["an older question"]
        assert api.stats(folder, session="ses_older").tokens == api.stats(older).tokens
        assert api.load(folder).path == str(INFO).replace(str(TREE), str(storage))
        with pytest.raises(api.InputError, match="no session ses_nowhere in this OpenCode "
                                                 "storage folder, which holds 2"):
            api.load(folder, session="ses_nowhere")
    shown = ctxpack("stats", "--json", "--session", "ses_older", str(storage))
    assert json.loads(shown.out)["files"][0]["tokens"] == api.stats(
        storage, session="ses_older").tokens


def test_an_unknown_session_of_a_storage_folder_lists_them(tmp_path):
    storage = two_sessions(tmp_path)
    for command in ("stats", "show"):
        run = ctxpack(command, "--session", "ses_nowhere", str(storage))
        assert_clean_error(run, 2, str(storage), "no session ses_nowhere in this OpenCode "
                           "storage folder, which holds 2:", "'Trailing space breaks book "
                           "search' (updated 2026-06-09 11:11 UTC, 9 OpenCode messages); "
                           "ses_older 'old' (updated 1970-01-01 00:00 UTC, 1 OpenCode "
                           "message)")


def many_sessions(storage, count: int, newest: int, messages: int = 4) -> None:
    """`count` sessions of `messages` message files each; session `newest` was updated
    last though created early, and its id and message count mark it in no other way."""
    for n in range(count):
        ident = f"ses_{n:04d}"
        updated = 10**12 if n == newest else 1000 * n + 1
        info = {"id": ident, "projectID": f"prj_{n % 3}", "title": f"session {n}",
                "time": {"created": 1000 * n, "updated": updated}}
        (storage / "session" / info["projectID"]).mkdir(parents=True, exist_ok=True)
        (storage / "session" / info["projectID"] / f"{ident}.json").write_text(
            json.dumps(info))
        (storage / "message" / ident).mkdir(parents=True)
        for k in range(messages + (n == count - 1)):
            (storage / "message" / ident / f"msg_{n:04d}_{k}.json").write_text(
                json.dumps({"role": "user", "time": {"created": 1000 * n + k}}))
    (storage / "part").mkdir(exist_ok=True)


def test_the_newest_session_is_found_from_the_info_files_alone(tmp_path, monkeypatch):
    storage = tmp_path / "storage"
    many_sessions(storage, 300, newest=17)
    listed: list[str] = []
    for name in ("listdir", "scandir"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda path=".", real=real: (
            listed.append(os.fspath(path)), real(path))[1])
    for folder in (storage, storage / "session"):
        picked = session_file(str(folder))
        assert picked is not None and picked.endswith(os.path.join("prj_2", "ses_0017.json"))
    assert listed, "the session folders are listed"
    # picking among 300 sessions reads none of their 1,201 message files
    assert not [p for p in listed if os.path.join("storage", "message") in p]


def test_an_info_file_is_not_read_as_another_session():
    run = ctxpack("stats", "--session", "ses_older", str(INFO))
    assert_clean_error(run, 2, str(INFO), "not ses_older", "give the storage folder")


@settings(max_examples=25, deadline=None)
@given(opencode_exports())
def test_any_export_split_into_a_tree_reads_the_same(tmp_path_factory, doc):
    doc["info"].setdefault("projectID", "prj")
    doc["info"].setdefault("time", {"created": 1})
    base = tmp_path_factory.mktemp("tree")
    _same(load(split(doc, base / "storage")), load(_written(doc, base / "export.json")))


# --- opencode.db ---------------------------------------------------------------------------

MAKE_DB = SAMPLES / "opencode-storage" / "make_opencode_db.py"


def make_db(export: dict, path) -> str:
    runpy.run_path(str(MAKE_DB))["build"](export, path)
    return str(path)


def test_the_db_reads_as_the_export_and_round_trips(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    t = load(db)
    assert t.format == "opencode-db"
    _same(t, load(EXPORT))
    write(t, tmp_path / "copy.db")
    assert (tmp_path / "copy.db").read_bytes() == (tmp_path / "opencode.db").read_bytes()


def test_the_db_script_writes_a_file_stats_reads_like_the_export(tmp_path):
    db = tmp_path / "opencode.db"
    made = subprocess.run([sys.executable, str(MAKE_DB), str(db)], capture_output=True)
    assert made.returncode == 0, made.stderr
    runs = [ctxpack("stats", "--json", str(p)) for p in (db, EXPORT)]
    assert [r.code for r in runs] == [0, 0], [r.err for r in runs]
    tree, export = (json.loads(r.out)["files"][0] for r in runs)
    assert tree["format"] == "opencode-db"
    for key in ("tokens", "messages", "by_role", "usage"):
        assert tree[key] == export[key], key


def test_the_db_script_takes_help_and_never_writes_over_a_file(tmp_path):
    # `--help` wrote a database named "--help"
    made = subprocess.run([sys.executable, str(MAKE_DB), "--help"], capture_output=True,
                          cwd=tmp_path, text=True)
    assert made.returncode == 0 and "OUT.db" in made.stdout, made.stderr
    assert list(tmp_path.iterdir()) == []
    there = tmp_path / "opencode.db"
    there.write_bytes(b"kept")
    for args in ([str(there)], []):
        made = subprocess.run([sys.executable, str(MAKE_DB), *args], capture_output=True,
                              cwd=tmp_path, text=True)
        assert made.returncode == 2 and "Traceback" not in made.stderr, made.stderr
    assert "opencode.db exists" in subprocess.run(
        [sys.executable, str(MAKE_DB), str(there)], capture_output=True, text=True).stderr
    assert there.read_bytes() == b"kept"


def add_older(db: str, ident: str = "ses_older", updated: int = 2,
              text: str = "an older question") -> None:
    """Add a session of one question, updated at `updated` (before the sample's)."""
    con = sqlite3.connect(db)
    con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, "
                "time_created, time_updated) SELECT ?, project_id, '', '', ?, '', 1, ? "
                "FROM session LIMIT 1", (ident, f"title of {ident}", updated))
    con.execute("INSERT INTO message VALUES (?, ?, 1, 1, ?)",
                (f"msg_{ident}", ident, json.dumps({"role": "user", "time": {"created": 1}})))
    con.execute("INSERT INTO part VALUES (?, ?, ?, 1, 1, ?)",
                (f"prt_{ident}", f"msg_{ident}", ident,
                 json.dumps({"type": "text", "text": text})))
    con.commit()
    con.close()


def test_the_newest_session_of_the_db_is_read(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    add_older(db)
    texts = [m.text for m in load(db).messages]
    assert "an older question" not in texts
    assert texts == [m.text for m in load(EXPORT).messages]


def test_session_picks_another_session_of_the_db(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    add_older(db)
    assert [m.text for m in load(db, session="ses_older").messages] == ["an older question"]
    newest = json.loads(EXPORT.read_bytes())["info"]["id"]
    _same(load(db, session=newest), load(EXPORT))
    run = ctxpack("stats", "--json", "--session", "ses_older", db)
    assert run.code == 0, run.err
    (older,) = json.loads(run.out)["files"]
    assert (older["format"], older["messages"]) == ("opencode-db", 1)
    shown = ctxpack("show", "--no-pager", "--session", "ses_older", db)
    assert shown.code == 0 and "an older question" in shown.out, shown.err
    checked = ctxpack("validate", "--session", "ses_older", db)
    assert checked.code == 0 and "opencode-db, 1 message: ok" in checked.err, checked.err
    out = tmp_path / "older.md"
    made = ctxpack("convert", db, "--session", "ses_older", "--to", "markdown", "-o", str(out))
    assert made.code == 0, made.err
    doc = out.read_text()
    assert "an older question" in doc and "book" not in doc.lower()


def test_an_unknown_session_lists_the_newest_there_are(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    for n in range(6):  # older than the sample's session, ses_old5 the newest of them
        add_older(db, f"ses_old{n}", updated=1_000 * (n + 1))
    for command in ("stats", "show", "validate"):
        run = ctxpack(command, "--session", "ses_nowhere", db)
        assert_clean_error(run, 2, db, "no session ses_nowhere in this opencode.db, which "
                           "holds 7:", "(updated 2026-06-09 11:11 UTC, 9 OpenCode messages)",
                           "ses_old5 'title of ses_old5' (updated 1970-01-01 00:00 UTC, "
                           "1 OpenCode message)", "and 2 older")
        assert "ses_old0" not in run.err and "ses_old1" not in run.err
    run = ctxpack("convert", db, "--session", "ses_nowhere", "--to", "openai", "-o",
                  str(tmp_path / "out.jsonl"))
    assert_clean_error(run, 2, "no session ses_nowhere")
    assert not (tmp_path / "out.jsonl").exists()


def test_session_of_a_file_of_one_session_is_refused():
    run = ctxpack("stats", "--session", "ses_x", str(EXPORT))
    assert_clean_error(run, 2, str(EXPORT), "this opencode file holds one",
                       "--session is for OpenCode's opencode.db or storage folder")


def test_compress_refuses_the_db_and_writes_nothing(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    before = (tmp_path / "opencode.db").read_bytes()
    run = ctxpack("compress", db, "-o", str(tmp_path / "packed.jsonl"))
    assert_clean_error(run, 2, "compress cannot write opencode-db files", "ctxpack convert")
    assert not (tmp_path / "packed.jsonl").exists()
    assert (tmp_path / "opencode.db").read_bytes() == before


def test_a_db_without_opencode_tables_is_one_clear_line(tmp_path):
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE session (id TEXT)")
    con.commit()
    con.close()
    assert_clean_error(ctxpack("stats", str(other)), 2, str(other),
                       "without OpenCode's message, part tables")


def test_a_part_row_that_is_not_json_is_named(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    con = sqlite3.connect(db)
    (part,) = con.execute("SELECT id FROM part ORDER BY id LIMIT 1").fetchone()
    con.execute("UPDATE part SET data = '{\"type\": ' WHERE id = ?", (part,))
    con.commit()
    con.close()
    assert_clean_error(ctxpack("stats", db), 2, db, f"part {part} has 'data' that is not JSON")


@settings(max_examples=20, deadline=None)
@given(opencode_exports())
def test_any_export_put_in_a_db_reads_the_same(tmp_path_factory, doc):
    doc["info"].update(projectID="prj", time={"created": 1})
    for n, m in enumerate(doc["messages"]):
        m["info"]["time"] = {"created": 10 + n}
        for k, p in enumerate(m["parts"]):
            p["id"] = f"prt_{n:03d}_{k:03d}"
    base = tmp_path_factory.mktemp("db")
    _same(load(make_db(doc, base / "opencode.db")), load(_written(doc, base / "export.json")))


def test_a_field_error_in_a_message_file_names_that_file(tmp_path):
    # it was reported at the session's info file, line 1
    storage = tmp_path / "storage"
    shutil.copytree(TREE, storage)
    info = next((storage / "session").glob("*/ses_*.json"))
    msg = sorted((storage / "message").rglob("msg_*.json"))[3]
    value = json.loads(msg.read_bytes())
    value["role"] = 5
    msg.write_text(json.dumps(value, indent=2))
    for command in ("stats", "validate", "show"):
        run = ctxpack(command, str(info))
        assert_clean_error(run, 2, f"{msg}:1: ", f"message {msg.stem}: 'role' is a number")
        assert str(info) not in run.err


def test_a_field_error_in_a_message_row_names_the_message(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "o3.db")
    con = sqlite3.connect(db)
    (msg, data) = con.execute("SELECT id, data FROM message ORDER BY id LIMIT 1 OFFSET 2"
                              ).fetchone()
    con.execute("UPDATE message SET data = ? WHERE id = ?",
                (json.dumps({**json.loads(data), "role": 5}), msg))
    con.commit()
    con.close()
    run = ctxpack("stats", db)
    assert_clean_error(run, 2, f"{db}: ", f"message {msg}: 'role' is a number")
    assert f"{db}:1:" not in run.err


def test_a_part_file_whose_text_is_no_string_is_named_not_dropped(tmp_path):
    export = json.loads(EXPORT.read_text())
    n, i = next((n, i) for n, m in enumerate(export["messages"])
                for i, p in enumerate(m["parts"]) if p.get("type") == "text")
    export["messages"][n]["parts"][i]["text"] = 5
    info = split(export, tmp_path / "storage")
    assert_clean_error(ctxpack("validate", info), 2, "not read as opencode-storage",
                       f"message {n} part {i} (text): 'text' is a number, not a string")

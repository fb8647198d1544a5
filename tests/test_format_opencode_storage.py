"""OpenCode's storage/ folder tree and opencode.db: detection, the same messages, counts
and usage as the export of the same session, a lossless round trip, compress refusing,
and bad trees and databases."""

from __future__ import annotations

import json
import runpy
import shutil
import sqlite3
import subprocess
import sys

from hypothesis import given, settings

from ctxpack.checks import validate
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
    ses.parent.mkdir(parents=True)
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


def test_the_info_file_round_trips_and_compress_refuses(tmp_path):
    out = tmp_path / INFO.name
    write(load(INFO), out)
    assert out.read_bytes() == INFO.read_bytes()
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


def test_a_missing_part_folder_is_one_clear_line(tmp_path):
    storage = tmp_path / "storage"
    shutil.copytree(TREE, storage)
    info = next((storage / "session").glob("*/ses_*.json"))
    gone = sorted((storage / "part").iterdir())[2]
    shutil.rmtree(gone)
    run = ctxpack("stats", str(info))
    assert_clean_error(run, 2, str(info), "not read as opencode-storage",
                       f"{gone.name} has no folder of parts")


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


def test_the_newest_session_of_the_db_is_read(tmp_path):
    db = make_db(json.loads(EXPORT.read_bytes()), tmp_path / "opencode.db")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO session (id, project_id, slug, directory, title, version, "
                "time_created, time_updated) SELECT 'ses_older', project_id, '', '', 'old', "
                "'', 1, 2 FROM session")
    con.execute("INSERT INTO message VALUES ('msg_old', 'ses_older', 1, 1, ?)",
                (json.dumps({"role": "user", "time": {"created": 1}}),))
    con.execute("INSERT INTO part VALUES ('prt_old', 'msg_old', 'ses_older', 1, 1, ?)",
                (json.dumps({"type": "text", "text": "an older question"}),))
    con.commit()
    con.close()
    texts = [m.text for m in load(db).messages]
    assert "an older question" not in texts
    assert texts == [m.text for m in load(EXPORT).messages]


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

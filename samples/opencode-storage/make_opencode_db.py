"""Write `opencode.db`: the session of `../opencode/book-search.opencode.json` as current
OpenCode keeps it in SQLite (the session, message and part tables of its drizzle schema,
`data` columns holding each record as JSON without its ids). Run it with an output path:

    python samples/opencode-storage/make_opencode_db.py opencode.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

EXPORT = Path(__file__).resolve().parent.parent / "opencode" / "book-search.opencode.json"

SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, sandboxes TEXT NOT NULL);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id)
    ON DELETE CASCADE, workspace_id TEXT, parent_id TEXT, slug TEXT NOT NULL,
    directory TEXT NOT NULL, path TEXT, title TEXT NOT NULL, version TEXT NOT NULL,
    share_url TEXT, summary_additions INTEGER, summary_deletions INTEGER,
    summary_files INTEGER, summary_diffs TEXT, cost REAL NOT NULL DEFAULT 0,
    tokens_input INTEGER NOT NULL DEFAULT 0, tokens_output INTEGER NOT NULL DEFAULT 0,
    tokens_reasoning INTEGER NOT NULL DEFAULT 0, tokens_cache_read INTEGER NOT NULL DEFAULT 0,
    tokens_cache_write INTEGER NOT NULL DEFAULT 0, revert TEXT, permission TEXT, agent TEXT,
    model TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id)
    ON DELETE CASCADE, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL,
    data TEXT NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id)
    ON DELETE CASCADE, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
    time_updated INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
"""


def build(export: dict, out: Path) -> None:
    """Write the sessions of `export` (an `opencode export` document) to a new database."""
    info = export["info"]
    created, updated = info["time"]["created"], info["time"].get("updated", info["time"]["created"])
    db = sqlite3.connect(out)
    try:
        db.executescript(SCHEMA)
        db.execute("INSERT INTO project VALUES (?, ?, 'git', NULL, ?, ?, '[]')",
                   (info["projectID"], info.get("directory", "/"), created, updated))
        db.execute("INSERT INTO session (id, project_id, slug, directory, title, version, "
                   "agent, model, time_created, time_updated) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (info["id"], info["projectID"], info.get("slug", ""),
                    info.get("directory", ""), info.get("title", ""), info.get("version", ""),
                    info.get("agent"), json.dumps(info.get("model")), created, updated))
        for m in export["messages"]:
            msg = m["info"]
            when = msg.get("time", {}).get("created", created)
            data = {k: v for k, v in msg.items() if k not in ("id", "sessionID")}
            db.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                       (msg["id"], info["id"], when, when, json.dumps(data)))
            for p in m["parts"]:
                data = {k: v for k, v in p.items() if k not in ("id", "sessionID", "messageID")}
                db.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                           (p["id"], msg["id"], info["id"], when, when, json.dumps(data)))
        db.commit()
    finally:
        db.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Write the sample OpenCode session (book-search) as an opencode.db.")
    parser.add_argument("out", metavar="OUT.db", type=Path,
                        help="the database to write (a new file)")
    out = parser.parse_args(argv).out
    if out.exists():  # its tables are made anew: a database there would be half rewritten
        parser.error(f"{out} exists: name a new file")
    build(json.loads(EXPORT.read_bytes()), out)


if __name__ == "__main__":
    main()

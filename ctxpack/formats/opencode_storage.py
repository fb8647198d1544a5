"""An OpenCode session kept in its `storage/` folder tree or in its SQLite `opencode.db`.

OpenCode (before its SQLite database) kept each session under its data folder's
`storage/` as separate files. The layout, as OpenCode's own migration to SQLite reads it
(`packages/opencode/src/storage/json-migration.ts` in sst/opencode, which derives every id
from the file paths):

    storage/session/<projectID>/<sessionID>.json   the session info (`ses_` id, title, ...)
    storage/message/<sessionID>/<messageID>.json   a message's info (role, tokens, ...)
    storage/part/<messageID>/<partID>.json         one part of that message

A message file is the `info` and a part file one of the `parts` that `opencode export`
writes for the same session, so the session is put together as that export and read by
the export reader (formats/opencode.py): the same messages, counts and `step-finish`
usage. Messages are taken in the order the database keeps them (`message` table index
on `time_created, id` in `packages/opencode/src/session/session.sql.ts`), parts in the
order of their ids (`part_message_id_id_idx`); both ids grow with time.

The file a user points ctxpack at is the session's info file, or the tree's folder
(`storage/`, or its `session/` folder), which stands for the info files of its sessions
(`session_files`). One stream cannot hold the tree: `write` writes the session's files
into a folder, as a storage/ tree of that one session (`files`); compress refuses it,
since OpenCode would not read a rewritten tree.

Current OpenCode keeps the same records in SQLite (`opencode.db` in its data folder),
in the tables of `session.sql.ts`: `session` (one row a session: `id`, `project_id`,
`title`, `version`, `time_created`, `time_updated`, ...), `message` (`id`, `session_id`,
`time_created`, `data`: the info as JSON without `id` and `sessionID`) and `part` (`id`,
`message_id`, `session_id`, `data`: the part as JSON without `id`, `sessionID` and
`messageID`) — the migration above fills them so from the tree. Given a database,
ctxpack reads its most recently updated session, or the one a reader's `session` names
(`--session ID`), opening the file read-only; compress refuses it too.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonl import json_kind, parse_document
from ..transcript import Message
from .base import NOT_WRITTEN, Layout, RecordError, day
from .opencode import OpenCodeReader


def looks_like_session_info(value: Any) -> bool:
    """A session info file: a `ses_` id, its project and times, and no messages."""
    return (isinstance(value, dict) and isinstance(value.get("id"), str)
            and value["id"].startswith("ses_")
            and isinstance(value.get("projectID"), str) and isinstance(value.get("time"), dict)
            and "messages" not in value)


def _bytes(path: str) -> bytes:
    """The bytes of one file of the tree; a file that cannot be read names itself."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise InputError(path, None, f"cannot read this OpenCode storage file: "
                         f"{exc.strerror or exc}") from None


def _read(path: str) -> Any:
    """One record file of the tree; a file that cannot be read names itself."""
    value = parse_document(_bytes(path), path, 1)
    if not isinstance(value, dict):
        raise InputError(path, 1, f"an OpenCode storage record is an object, not "
                         f"{json_kind(value)}")
    return value


def _records(folder: str) -> list[dict[str, Any]]:
    """The record files of one folder of the tree, each with the id its file name gives."""
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    return [{**_read(os.path.join(folder, n)), "id": n[:-len(".json")]} for n in names]


def _time(info: dict[str, Any], key: str) -> int:
    """The info's `time.<key>` in ms (0 when it has none)."""
    when = info.get("time")
    value = when.get(key) if isinstance(when, dict) else None
    return value if isinstance(value, int) else 0


def _updated(info: dict[str, Any]) -> int:
    """When a session was last updated (else created), the time OpenCode lists them by."""
    return _time(info, "updated") or _time(info, "created")


TREE = ("session", "message", "part")  # the folders side by side in storage/
SHOWN = 5  # sessions an unknown id's message lists, the newest first


def no_such_session(ident: str, where: str, sessions: list[tuple[str, str, int, int]]
                    ) -> str:
    """Why `ident` is none of the `sessions` (id, title, updated in ms, messages): the
    sessions there are, the newest first. Their messages are OpenCode's records, a reply
    with its tool calls and results one, so the count is named as OpenCode's: stats
    counts the tool results as messages of their own."""
    if not sessions:
        return f"no session {ident} in {where}, which holds none"
    newest = sorted(sessions, key=lambda s: (s[2], s[0]), reverse=True)
    shown = "; ".join(f"{i} {title!r} (updated {day(updated)}, {n} OpenCode message"
                      f"{'' if n == 1 else 's'})" for i, title, updated, n in newest[:SHOWN])
    more = f" and {len(newest) - SHOWN} older" if len(newest) > SHOWN else ""
    return (f"no session {ident} in {where}, which holds {len(newest)}: "
            f"{shown}{more}")


def storage_of(folder: str) -> str | None:
    """The storage/ tree `folder` is (or whose session/ folder it is), or None: a tree
    has the session, message and part folders side by side."""
    folder = os.path.abspath(folder)
    tree = os.path.dirname(folder) if os.path.basename(folder) == "session" else folder
    return tree if all(os.path.isdir(os.path.join(tree, sub)) for sub in TREE) else None


def session_files(folder: str, session: str | None = None) -> list[str] | None:
    """The info files of the sessions of the storage tree `folder` stands for (only
    `session`'s, when given; an unknown id is refused with the sessions there are), or
    None when it is no storage tree."""
    tree = storage_of(folder)
    if tree is None:
        return None
    base = os.path.join(folder, "session") if os.path.abspath(folder) == tree else folder
    found = sorted(str(p) for p in Path(base).glob("*/ses_*.json") if p.is_file())
    if session is None:
        return found
    picked = [f for f in found if _ident(f) == session]
    if picked:
        return picked
    raise InputError(folder, None, no_such_session(session, "this OpenCode storage folder",
                                                   _tree_sessions(tree, found)))


def session_file(folder: str, session: str | None = None) -> str | None:
    """The info file of one session of the storage tree `folder` stands for: `session`'s,
    else the most recently updated one (as OpenCode lists them); None when it is no
    storage tree or holds no session. Only the info files are read, not the messages."""
    found = session_files(folder, session)
    if not found:
        return None
    return max(found, key=lambda path: (_updated(_read(path)), _ident(path)))


def _ident(info_file: str) -> str:
    return os.path.basename(info_file)[:-len(".json")]


def _tree_sessions(tree: str, infos: list[str]) -> list[tuple[str, str, int, int]]:
    """Each session's id, title, update time and messages (OpenCode's files of them)."""
    out = []
    for path in infos:
        info, ident = _read(path), _ident(path)
        messages = os.path.join(tree, "message", ident)
        count = len([n for n in os.listdir(messages) if n.endswith(".json")]) \
            if os.path.isdir(messages) else 0
        out.append((ident, str(info.get("title", "")), _updated(info), count))
    return out


def export_of(path: str, session: dict[str, Any]) -> dict[str, Any]:
    """The `opencode export` document of the session whose info file is `path`."""
    project = os.path.dirname(os.path.abspath(path))
    if os.path.basename(os.path.dirname(project)) != "session":
        raise RecordError("an OpenCode session info file is read where OpenCode keeps it, "
                          "storage/session/<projectID>/<sessionID>.json")
    storage = os.path.dirname(os.path.dirname(project))
    ident = os.path.basename(path)[:-len(".json")] if path.endswith(".json") else session["id"]
    messages_dir = os.path.join(storage, "message", ident)
    if not os.path.isdir(messages_dir):
        raise RecordError(f"no folder of its messages: {messages_dir} is missing")
    infos = sorted(_records(messages_dir), key=lambda m: (_time(m, "created"), m["id"]))
    messages = []
    for info in infos:
        # a reply aborted or failed before its first part has no folder of parts: an
        # empty message, as `opencode export` writes it (`"parts": []`)
        parts_dir = os.path.join(storage, "part", info["id"])
        parts = _records(parts_dir) if os.path.isdir(parts_dir) else []
        messages.append({"info": {**info, "sessionID": ident},
                         "parts": [{**p, "sessionID": ident, "messageID": info["id"]}
                                   for p in parts]})
    return {"info": {**session, "id": ident}, "messages": messages}


def tree_files(info: str) -> list[tuple[str, bytes]]:
    """The files of the session whose info file is `info`, each by its path below the
    storage/ folder, with its bytes as they are: the info file, then each message's file
    and its parts' files (every file of the session `export_of` reads)."""
    storage = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(info))))
    out = [(os.path.relpath(os.path.abspath(info), storage), _bytes(info))]

    def listed(folder: str) -> list[str]:
        where = os.path.join(storage, folder)
        names = sorted(n for n in os.listdir(where) if n.endswith(".json")) \
            if os.path.isdir(where) else []
        return [os.path.join(folder, n) for n in names]

    for message in listed(os.path.join("message", _ident(info))):
        parts = listed(os.path.join("part", os.path.basename(message)[:-len(".json")]))
        out += [(name, _bytes(os.path.join(storage, name))) for name in (message, *parts)]
    return out


def placed(messages: list[Message], place: str) -> list[Message]:
    """Each message at `place` of its OpenCode message id (`{}`): the messages of a tree
    or a database share no line a person could find them by, but each has its own file
    or row. A file is named by its name in the session's `message/<sessionID>/` folder:
    with the folder's path, `show`'s header would have no room for the role."""
    return [replace(m, place=place.format(m.raw["id"])) for m in messages]


class OpenCodeStorageReader:
    def __init__(self) -> None:
        self.path = ""
        self.export = OpenCodeReader()
        self.session: str | None = None  # the session to read (else the file's own)

    @property
    def model(self) -> str | None:
        return self.export.model

    def located(self, path: str, data: bytes, first: int) -> None:
        """Told the info file's path: the session's messages and parts are beside it."""
        self.path = path

    def feed(self, line: int, record: Any) -> list[Message]:
        if not looks_like_session_info(record):
            raise RecordError("not an OpenCode session info file: no 'ses_' id with its "
                              "'projectID' and 'time'")
        export = export_of(self.path, record)
        if self.session is not None and export["info"]["id"] != self.session:
            raise RecordError(f"this info file is session {export['info']['id']}, not "
                              f"{self.session}: give the storage folder to pick one of its "
                              "sessions")
        return placed(self._messages(line, export), "{}.json")

    def _messages(self, line: int, export: dict[str, Any]) -> list[Message]:
        """The export's messages; a field error in one names where it is kept."""
        try:
            return self.export.feed(line, export)
        except RecordError as exc:
            exc = self.export.items.placed(exc)
            if exc.at[:1] != ("messages",) or len(exc.at) != 2:
                raise exc from None
            n = exc.at[1]
            ident = str(export["messages"][n]["info"]["id"])
            problem = re.sub(rf"^message {n}\b", lambda _: f"message {ident}", str(exc))
            raise self._error(export["info"]["id"], ident, problem) from None

    def _error(self, session: str, message: str, problem: str) -> InputError:
        """A problem of a message, at its own file: storage/message/<session>/<id>.json."""
        storage = os.path.dirname(os.path.dirname(os.path.dirname(self.path)))
        return InputError(os.path.join(storage, "message", session, f"{message}.json"), 1,
                          f"not read as opencode-storage: {problem}")

    def finish(self) -> tuple[list[Message], Layout]:
        return self.export.finish()


class OpenCodeStorageFormat:
    name = "opencode-storage"
    description = ("an OpenCode session in its storage/ folder tree (give the storage/ "
                   "folder, or storage/session/<projectID>/<sessionID>.json)")
    records_usage = "OpenCode"  # (see formats.usage_recorders)
    document = True  # the info file is one JSON value
    why_not_written = NOT_WRITTEN
    # the session is many files: its records (the info file) are not all it holds, so it
    # is written as the files it is, into a folder (`files`)
    spread = "its messages and parts are files of their own beside the info file"

    def files(self, transcript: Any) -> list[tuple[str, bytes]]:
        """The session's files, by their paths below a storage/ folder, as read."""
        found = tree_files(transcript.path)
        if found[0][1] != b"".join(r.raw for r in transcript.records):
            raise InputError(transcript.path, None, "changed since it was loaded: load it "
                             "again to write it")
        return found

    def sniff(self, record: Any) -> int:
        return 3 if looks_like_session_info(record) else 0  # the `ses_` id is its mark

    def reader(self) -> OpenCodeStorageReader:
        return OpenCodeStorageReader()


SQLITE_MAGIC = b"SQLite format 3\x00"
TABLES = ("session", "message", "part")


def _json(text: Any, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise RecordError(f"{what} has 'data' that is not JSON") from None
    if not isinstance(value, dict):
        raise RecordError(f"{what} has 'data' that is {json_kind(value)}, not an object")
    return value


def export_from_db(db: sqlite3.Connection, session: str | None = None) -> dict[str, Any]:
    """The `opencode export` document of the database's session `session` (LookupError
    naming the sessions there are if it holds none of that id), else of its most recently
    updated one."""
    have = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in TABLES if t not in have]
    if missing:
        raise RecordError(f"a SQLite database without OpenCode's {', '.join(missing)} "
                          f"table{'s' if len(missing) > 1 else ''}: not an opencode.db")
    columns = "SELECT id, project_id, title, version, time_created, time_updated FROM session "
    if session is None:
        row = db.execute(columns + "ORDER BY time_updated DESC, id DESC LIMIT 1").fetchone()
        if row is None:
            raise RecordError("an opencode.db that holds no session")
    else:
        row = db.execute(columns + "WHERE id = ?", (session,)).fetchone()
        if row is None:
            raise LookupError(no_such_session(session, "this opencode.db", list(db.execute(
                "SELECT s.id, s.title, s.time_updated, (SELECT count(*) FROM message m "
                "WHERE m.session_id = s.id) FROM session s"))))
    ident, project, title, version, created, updated = row
    messages: dict[str, dict[str, Any]] = {}
    for msg, data in db.execute("SELECT id, data FROM message WHERE session_id = ? "
                                "ORDER BY time_created, id", (ident,)):
        info = {**_json(data, f"message {msg}"), "id": msg, "sessionID": ident}
        messages[msg] = {"info": info, "parts": []}
    for part, msg, data in db.execute("SELECT id, message_id, data FROM part WHERE "
                                      "session_id = ? ORDER BY message_id, id", (ident,)):
        if msg not in messages:
            raise RecordError(f"part {part} belongs to message {msg}, which the session "
                              "does not hold")
        messages[msg]["parts"].append({**_json(data, f"part {part}"), "id": part,
                                       "sessionID": ident, "messageID": msg})
    info = {"id": ident, "projectID": project, "title": title, "version": version,
            "time": {"created": created, "updated": updated}}
    return {"info": info, "messages": list(messages.values())}


class OpenCodeDbReader(OpenCodeStorageReader):
    def feed(self, line: int, record: Any) -> list[Message]:
        if not os.path.isfile(self.path):
            raise RecordError("an opencode.db is read from a file, not a stream")
        try:
            db = sqlite3.connect(f"{Path(self.path).resolve().as_uri()}?mode=ro", uri=True)
            try:
                export = export_from_db(db, self.session)
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise RecordError(f"cannot read this SQLite database: {exc}") from None
        except LookupError as exc:  # no session of the id asked for
            raise InputError(self.path, None, str(exc)) from None
        return placed(self._messages(line, export), "message {}")

    def _error(self, session: str, message: str, problem: str) -> InputError:
        """A problem of a message, at the database (its row has no line): the message's
        id names it."""
        return InputError(self.path, None, f"not read as opencode-db: {problem}")


class OpenCodeDbFormat:
    name = "opencode-db"
    description = ("OpenCode's SQLite opencode.db (its most recently updated session, "
                   "or --session ID)")
    records_usage = "OpenCode"  # (see formats.usage_recorders)
    magic = SQLITE_MAGIC  # a binary file: read by its reader from the path
    document = True
    why_not_written = NOT_WRITTEN

    def sniff(self, record: Any) -> int:
        return 0  # no JSON record is a database

    def reader(self) -> OpenCodeDbReader:
        return OpenCodeDbReader()

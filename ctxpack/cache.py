"""The persistent token cache: counts kept across runs in one SQLite file.

Rows are keyed by (encoding, content digest), so a repeated `stats` pays only for
text it has not seen. The file lives in the user cache dir (`CTXPACK_CACHE_DIR`
moves it), private to the user; without a home directory there is none. A cache that
cannot be opened, read or written is dropped silently, and a row that holds no count
is counted again: it only ever makes counting faster, never makes it fail or lie.

Every text is stored, short ones too: a lookup (~2 us) costs about what tokenizing
30 characters does, and a run whose texts are all stored never loads the tokenizer
(~0.45 s for o200k_base).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

FILENAME = "tokens.sqlite"
SCHEMA_VERSION = 1
_CHUNK = 500  # keys per `IN (...)` lookup, well under SQLite's variable limit
_WRITE_BATCH = 20_000  # rows per write transaction
_BUSY_MS = 1000  # wait this long for another process's write; then skip writing this run
_MOST_TOKENS = 1 << 40  # more than any text a machine holds has tokens

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    encoding TEXT NOT NULL,
    digest BLOB NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (encoding, digest)
) WITHOUT ROWID
"""


def cache_dir() -> Path | None:
    """$CTXPACK_CACHE_DIR, else the platform's user cache dir plus `ctxpack`; None without
    a home directory (a folder shared with other users would let them plant counts)."""
    if os.environ.get("CTXPACK_CACHE_DIR"):
        return Path(os.environ["CTXPACK_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "ctxpack"
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "ctxpack" / "Cache"
    try:
        return Path.home() / ".cache" / "ctxpack"
    except RuntimeError:  # no home directory (some CI users): nothing is kept
        return None


def private_file(path: Path) -> Path:
    """`path`, in a folder only this user can enter (0700, made so if it is this user's)
    and readable by this user only (0600): what the caches hold tells what the
    transcripts said. OSError when the folder or the file is another user's."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix":
        _own(folder, 0o700)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        _own(path, 0o600)
    return path


def _own(path: Path, mode: int) -> None:
    info = path.stat()
    if info.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user")
    if info.st_mode & 0o777 != mode:
        os.chmod(path, mode)


class Store:
    """Token counts of one encoding on disk; every failure turns the store off, quietly."""

    def __init__(self, path: Path | None, encoding: str) -> None:
        self.path = path  # None: there is no place for it (no home directory)
        self.encoding = encoding
        self.problem = ""  # why the store stopped working, if it did
        self.found = 0
        self.written = 0
        self.read_only = False
        self._pending: list[tuple[bytes, int]] = []
        self._db: sqlite3.Connection | None = None
        if path is None:
            self.problem = "no token cache: no user cache folder (no home directory)"
            return
        try:
            self._db = self._open(path)
        except (sqlite3.Error, OSError) as exc:
            self._fail(exc)

    def _open(self, path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(private_file(path), timeout=_BUSY_MS / 1000,
                             isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                db.execute(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; a crash loses no rows
            db.execute("SELECT 1 FROM counts LIMIT 1").fetchall()
        except BaseException:
            db.close()
            raise
        return db

    def _fail(self, exc: BaseException) -> None:
        self.problem = f"token cache {self.path} not used: {type(exc).__name__}: {exc}"
        self._pending = []
        self._disconnect()

    @property
    def usable(self) -> bool:
        return self._db is not None

    def get(self, digests: list[bytes]) -> dict[bytes, int]:
        """Stored counts for those digests (the ones found)."""
        found: dict[bytes, int] = {}
        if self._db is None or not digests:
            return found
        query = "SELECT digest, tokens FROM counts WHERE encoding = ? AND digest IN ({})"
        try:
            for i in range(0, len(digests), _CHUNK):
                chunk = digests[i : i + _CHUNK]
                sql = query.format(",".join("?" * len(chunk)))
                # a count that is not a count (written by hand, or by another program) is
                # left out: the text is counted again, and the row replaced
                found.update((d, n) for d, n in self._db.execute(sql, (self.encoding, *chunk))
                             if type(n) is int and 0 <= n <= _MOST_TOKENS)
        except sqlite3.Error as exc:
            self._fail(exc)
        self.found += len(found)
        return found

    def put(self, rows: Iterable[tuple[bytes, int]]) -> None:
        """Queue counts for storing; they are written in batches (and at `close`)."""
        if self._db is not None and not self.read_only:
            self._pending.extend(rows)
            if len(self._pending) >= _WRITE_BATCH:
                self.flush()

    def flush(self) -> None:
        """Write the queued counts in one transaction; if the database stays busy, drop them."""
        rows, self._pending = self._pending, []
        if self._db is None or self.read_only or not rows:
            return
        before = self._db.total_changes
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT OR REPLACE INTO counts (encoding, digest, tokens) VALUES (?, ?, ?)",
                    [(self.encoding, d, n) for d, n in rows])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.OperationalError as exc:
            # busy past the timeout (another process holds the write lock) or read-only:
            # reading still pays; these rows wait for a later run
            self.read_only = True
            self.problem = f"token cache {self.path} not written: {exc}"
        except sqlite3.Error as exc:
            self._fail(exc)
        else:
            self.written += self._db.total_changes - before

    def close(self) -> None:
        """Write what is queued and close; the store is unusable afterwards."""
        self.flush()
        self._disconnect()

    def _disconnect(self) -> None:
        close_quietly(self._db)
        self._db = None


def close_quietly(db: sqlite3.Connection | None) -> None:
    """Close `db` if open; a cache that fails to close has nothing more to lose."""
    if db is not None:
        try:
            db.close()
        except sqlite3.Error:
            pass


def open_store(encoding: str, path: Path | None = None) -> Store:
    """The store for `encoding` (a tokens.COUNT_VERSION-qualified name) at the default place;
    inside `held()`, the one store of that encoding the block keeps open."""
    folder = cache_dir()
    where = path or (folder / FILENAME if folder else None)
    if _held is None:
        return Store(where, encoding)
    store = _held.get((where, encoding))
    if store is None:
        store = _held[(where, encoding)] = Store(where, encoding)
    return _Kept(store)  # type: ignore[return-value]


_held: dict[tuple[Path | None, str], Store] | None = None


@contextmanager
def held() -> Iterator[None]:
    """Keep each store opened in the block open until the block ends: a run that counts
    many small transcripts one after another (the rows of a dataset) then opens and
    closes the file once, not once each (closing it costs a checkpoint of the log)."""
    global _held
    if _held is not None:
        yield
        return
    _held = {}
    try:
        yield
    finally:
        stores, _held = _held, None
        for store in stores.values():
            store.close()


class _Kept:
    """A held store as its users see it: theirs to read and write, not to close."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def close(self) -> None:
        """Closed when the `held` block ends; what was queued waits for a full batch."""

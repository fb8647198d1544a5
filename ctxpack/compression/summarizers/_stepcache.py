"""Per-step summary lines kept across runs, so a growing transcript pays only for its
new steps.

A line is stored under the sha256 of what produced it: the prompt's version, the
model, the endpoint and the step's text as sent (redacted, unless redaction was
off). It sits beside the token cache (`ctxpack.cache.cache_dir`, readable by its
owner only, and none without a home directory); a store that cannot be opened, read
or written is dropped silently.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

from ...cache import cache_dir, close_quietly, private_file

FILENAME = "step-summaries.sqlite"
_SCHEMA = "CREATE TABLE IF NOT EXISTS lines (key TEXT PRIMARY KEY, line TEXT NOT NULL)"


def key(*parts: str) -> str:
    """The store key of a step: a digest of everything its line depends on."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class StepCache:
    """Step lines by key; `enabled=False` gives a store that never finds or keeps any."""

    def __init__(self, enabled: bool = True, path: Path | None = None) -> None:
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        if not enabled:
            return
        folder = cache_dir()
        path = path or (folder / FILENAME if folder else None)
        if path is None:
            return
        try:
            db = sqlite3.connect(private_file(path), timeout=1, isolation_level=None,
                                 check_same_thread=False)
            db.execute(_SCHEMA)
            self._db = db
        except (sqlite3.Error, OSError):
            self._db = None

    def get(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                sql = f"SELECT key, line FROM lines WHERE key IN ({','.join('?' * len(chunk))})"
                try:
                    if self._db is not None:  # a line is text, or it is asked for again
                        found.update((k, line) for k, line in self._db.execute(sql, chunk)
                                     if isinstance(line, str) and line.strip())
                except sqlite3.Error:
                    self._drop()
        return found

    def put(self, rows: dict[str, str]) -> None:
        """Keep `rows`; safe from several threads (lines are kept as they come)."""
        with self._lock:
            try:
                if self._db is not None:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO lines (key, line) VALUES (?, ?)", rows.items())
            except sqlite3.Error:
                self._drop()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        close_quietly(self._db)
        self._db = None

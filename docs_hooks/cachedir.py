"""The cache folder (``.cache/docs_hooks``) stays the size of what the builds use.

Every entry is keyed by the text it was made from, so each edit of the code,
the tests, a formula or the specification adds entries, and the ones for the
old text are never read again. Each read of an entry marks it as used (its
modification time); after a full build, entries no build has used for
``MAX_AGE_DAYS`` days are deleted. A deleted entry is only made again, should
it be needed: nothing is lost.

Some entries are files of their own. The many small ones (each rendered
formula, each recording, each source file's part of the code index) live
together in a ``Store`` per kind, one SQLite file: a first build then writes a
few files instead of hundreds, which on some file systems costs more than
making the entries. A store's rows are pruned the same way, by when they were
last read.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from .errors import TraceError

MAX_AGE_DAYS = 30
_STRAY_TEMP_AGE = 24 * 3600  # a half-written temporary file of a build that was killed
STORE_SUFFIX = ".sqlite3"
_JOURNALS = ("-journal", "-wal", "-shm")  # SQLite's own files beside a store: never pruned by age
_USED_EVERY = 86400  # a row's "last read" is moved on at most once a day: reads stay reads
_CHUNK = 500  # keys per query (SQLite limits the parameters of one statement)


def store_file(cache_dir: Path | None, kind: str) -> Path | None:
    """The file of the ``kind`` store (``katex``, ``recordings``, ``index``) in ``cache_dir``; None without one."""
    return Path(cache_dir) / f"{kind}{STORE_SUFFIX}" if cache_dir is not None else None


def used(path: Path) -> None:
    """Mark a cache entry as read just now."""
    try:
        os.utime(path)
    except OSError:
        pass  # read-only or gone: it is only a mark


class Store:
    """Entries (key -> bytes) in one SQLite file, safe to share between threads and between builds."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._db = self._open()
            except sqlite3.DatabaseError as exc:
                if "not a database" not in str(exc) and "malformed" not in str(exc):
                    raise self._error(exc) from None
                self.path.unlink()  # damaged: only a cache, so it is made again
                self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL, "
                       "used REAL NOT NULL)")
        except BaseException:
            db.close()
            raise
        return db

    def _error(self, exc: Exception) -> TraceError:
        return TraceError(f"the cache file {self.path} cannot be used ({exc}); delete it and build again "
                          "(it only holds what builds can make again)")

    def get_many(self, keys: list[str], now: float | None = None) -> dict[str, bytes]:
        """The stored values of ``keys`` (missing keys are left out); each one found is marked as read."""
        now = time.time() if now is None else now
        found: dict[str, bytes] = {}
        with self._lock:
            try:
                db = self._connect()
                for i in range(0, len(keys), _CHUNK):
                    chunk = keys[i:i + _CHUNK]
                    marks = ",".join("?" * len(chunk))
                    found.update(db.execute(f"SELECT key, value FROM entries WHERE key IN ({marks})", chunk))
                    try:
                        db.execute(f"UPDATE entries SET used = ? WHERE used < ? AND key IN ({marks})",
                                   [now, now - _USED_EVERY, *chunk])
                    except sqlite3.OperationalError:
                        pass  # read-only: it is only a mark, as for files (see used)
            except sqlite3.DatabaseError as exc:
                raise self._error(exc) from None
        return found

    def put_many(self, items: dict[str, bytes], now: float | None = None) -> None:
        """Store ``items`` (key -> value) in one transaction."""
        if not items:
            return
        now = time.time() if now is None else now
        with self._lock:
            try:
                db = self._connect()
                with db:
                    db.execute("BEGIN")
                    db.executemany("INSERT OR REPLACE INTO entries (key, value, used) VALUES (?, ?, ?)",
                                   [(k, v, now) for k, v in items.items()])
            except sqlite3.DatabaseError as exc:
                raise self._error(exc) from None

    def prune(self, before: float) -> int:
        """Delete the rows last read before ``before``; how many."""
        with self._lock:
            try:
                db = self._connect()
                with db:
                    db.execute("BEGIN")
                    return db.execute("DELETE FROM entries WHERE used < ?", (before,)).rowcount
            except sqlite3.DatabaseError as exc:
                raise self._error(exc) from None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def prune(cache_dir: Path | None, max_age_days: float = MAX_AGE_DAYS, now: float | None = None) -> int:
    """Delete the entries of ``cache_dir`` unused for ``max_age_days``; how many were deleted."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        return 0
    now = time.time() if now is None else now
    removed = 0
    for folder, _, names in os.walk(cache_dir):
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(_JOURNALS):
                continue  # SQLite's: removing one while a build writes could damage its store
            if name.endswith(STORE_SUFFIX):
                store = Store(Path(path))
                try:
                    removed += store.prune(now - max_age_days * 86400)
                finally:
                    store.close()
                continue
            try:
                age = now - os.stat(path).st_mtime
                stray = name.startswith(".") and name.endswith(".tmp") and age > _STRAY_TEMP_AGE
                if stray or age > max_age_days * 86400:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue  # another build removed or replaced it meanwhile
    return removed

"""The cache folder (``.cache/docs_hooks``) stays the size of what the builds use.

Every entry is keyed by the text it was made from, so each edit of the code,
the tests, a formula or the specification adds entries, and the ones for the
old text are never read again. Each read of an entry marks it as used (its
modification time); after a full build, entries no build has used for
``MAX_AGE_DAYS`` days are deleted, at most once a day (``prune_if_due``: pruning
reads every store through). A deleted entry is only made again, should it be
needed: nothing is lost.

Some entries are files of their own. The many small ones (each rendered
formula, each recording, each source file's part of the code index, each
parsed page, each rendered page, each file highlighted for its source page,
what parsing a file found for the runs' dependencies) live together in a
``Store`` per kind, one SQLite file: a first
build then writes a few files instead of hundreds, which on some file systems
costs more than making the entries. A store's rows are pruned the same way, by when they were
last read.

Nothing read from the folder is trusted: it may be cut short, overwritten by
another program, or restored from another machine. Every entry, a row or a file,
is written sealed (``seal``: a digest of its key and its bytes before them) and
read back only when the seal matches (``unseal``); any other value is a miss, so
what reads an entry only ever sees bytes a build wrote for that key. The readers
then check the form of what they decode, and decode data only (JSON, text,
numbers, raw array bytes), never code or pickles.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

from docs_hooks.base.atomic import atomic_write

MAX_AGE_DAYS = 30
_STRAY_TEMP_AGE = 24 * 3600  # a half-written temporary file of a build that was killed
STORE_SUFFIX = ".sqlite3"
_JOURNALS = ("-journal", "-wal", "-shm")  # SQLite's own files beside a store: never pruned by age
_USED_EVERY = 86400  # a row's "last read" is moved on at most once a day: reads stay reads
PRUNED = ".pruned"  # the file in the cache folder whose modification time is that of the last prune
_PRUNE_EVERY = 86400
_CHUNK = 500  # keys per query (SQLite limits the parameters of one statement)
_SEAL_BYTES = 33  # a seal: 32 hex digits and a newline
# A row's "last read" that is not a number (the file was written by something else) counts as never read.
_NOT_A_TIME = "typeof(used) NOT IN ('integer', 'real')"

# MkDocs shows the records of the loggers under its own; the command line shows none of these notes.
log = logging.getLogger("mkdocs.plugins.docs_hooks")


def store_file(cache_dir: Path | None, kind: str) -> Path | None:
    """The file of the ``kind`` store (``katex``, ``recordings``, ``index``, ``pages``, ``rendered``, ``listings``,
    ``residue``, ``fences``, ...) in ``cache_dir``; None without one."""
    return Path(cache_dir) / f"{kind}{STORE_SUFFIX}" if cache_dir is not None else None


def _seal_of(key: str, data: bytes) -> bytes:
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16)
    digest.update(b"\0")
    digest.update(data)
    return digest.hexdigest().encode("ascii") + b"\n"


def seal(key: str, data: bytes) -> bytes:
    """``data`` as an entry of the cache under ``key`` holds it: a line with a digest of both, then ``data``
    (an entry of text stays text)."""
    return _seal_of(key, data) + data


def unseal(key: str, raw) -> bytes | None:
    """What ``seal(key, data)`` sealed: ``data``; None for anything else (damaged, of another key, not bytes)."""
    if type(raw) is not bytes or len(raw) < _SEAL_BYTES:
        return None
    data = raw[_SEAL_BYTES:]
    return data if hmac.compare_digest(raw[:_SEAL_BYTES], _seal_of(key, data)) else None


def write_entry(path: Path, data: bytes) -> None:
    """Write a cache entry that is a file of its own, sealed under its file name (see ``read_entry``)."""
    atomic_write(path, seal(Path(path).name, data))


def read_entry(path: Path) -> bytes | None:
    """The bytes ``write_entry`` wrote to ``path``, marked as read; None when it is missing or damaged
    (a damaged file is removed: it is made again)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    data = unseal(path.name, raw)
    if data is None:
        try:
            path.unlink()
        except OSError:
            pass  # read-only, or another build replaced it meanwhile: it is a miss all the same
        return None
    used(path)
    return data


def used(path: Path) -> None:
    """Mark a cache entry as read just now."""
    try:
        os.utime(path)
    except OSError:
        pass  # read-only or gone: it is only a mark


def _shown(path: Path) -> str:
    """A file as a note names it: from the working folder when it is under it."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (OSError, ValueError):
        return str(path)


def _damaged(exc: BaseException) -> bool:
    """Whether SQLite found the file damaged (cut short, overwritten), as opposed to unreachable."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))


class Store:
    """Entries (key -> bytes) in one SQLite file, safe to share between threads and between builds.

    Each value is kept sealed (``seal``): a row whose value does not match its
    key's seal, whatever SQLite type it holds, is a miss.

    A store only saves work, so none of its troubles stops a build. A damaged
    file is deleted and made again (its entries are misses). A file that cannot
    be written (a cache restored read-only) is still read, but keeps nothing new
    and is not pruned; one that cannot be read at all gives misses. Either is
    noted once, naming the file.
    """

    def __init__(self, path: Path, pruning: bool = False):
        self.path = Path(path)
        # prune's: a file it cannot write, the build's own store of it has named already ("is not pruned")
        self._pruning = pruning
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._writable = True
        self._readable = True

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL, used REAL NOT NULL)"
            )
        return self._db

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _run(self, work, default, writes: bool):
        """``work(connection)``; on a damaged file, once more on a new one; ``default`` when it cannot be done."""
        if not self._readable or (writes and not self._writable):
            return default
        for attempt in (1, 2):
            try:
                return work(self._connect())
            except (sqlite3.Error, OSError) as exc:
                if attempt == 1 and _damaged(exc) and self._remove(exc):
                    continue
                self._cannot(exc, writes)
                return default

    def _tell(self, message: str) -> None:
        """A note naming the file (each happens once per store: it stops using the file, or makes it anew)."""
        log.info(f"{_shown(self.path)}: {message}")

    def _remove(self, exc: BaseException) -> bool:
        """Delete a damaged file (it only holds what builds can make again); whether that was done."""
        self._close()
        try:
            for suffix in ("", *_JOURNALS):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        except OSError:
            return False
        self._tell(f"the cache file was damaged ({exc}); it is made again")
        return True

    def _cannot(self, exc: BaseException, writes: bool) -> None:
        if writes:
            self._writable = False
            if not self._pruning:
                self._tell(
                    f"cannot write to this cache file ({exc}); what it holds is read, but it keeps "
                    "nothing new and is not pruned. Make it writable to keep the work of later builds"
                )
        else:
            self._readable = False
            self._close()
            self._tell(
                f"cannot use this cache file ({exc}); everything it would hold is made anew. Delete it to cache again"
            )

    def get_many(self, keys: list[str], now: float | None = None, mark: bool = True) -> dict[str, bytes]:
        """The stored values of ``keys`` (missing and damaged ones are left out); each one found is marked as
        read, unless ``mark`` is False (then the reader marks them itself, with ``mark_read``, in one go)."""
        return {key: data for key, (_, data) in self.get_sealed(keys, now, mark).items()}

    def get_sealed(
        self, keys: list[str], now: float | None = None, mark: bool = True
    ) -> dict[str, tuple[bytes, bytes]]:
        """The same as ``get_many``, each value with its seal (see ``seals``): one read of each row, for a reader
        that keeps what it read by seal."""

        def read(db) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i : i + _CHUNK]
                found.update(
                    db.execute(f"SELECT key, value FROM entries WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                )
            return found

        with self._lock:
            found = self._run(read, {}, writes=False)
        if found and mark:
            self.mark_read(list(found), now)
        opened = {key: (raw, unseal(key, raw)) for key, raw in found.items()}
        return {key: (raw[:_SEAL_BYTES], data) for key, (raw, data) in opened.items() if data is not None}

    def seals(self, keys: list[str]) -> dict[str, bytes]:
        """The seal of each of ``keys`` that has a row (see ``seal``), without reading its value: equal seals, the
        same bytes. Nothing is marked as read."""

        def read(db) -> dict[str, bytes]:
            found: dict[str, bytes] = {}
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i : i + _CHUNK]
                found.update(
                    db.execute(
                        f"SELECT key, substr(value, 1, {_SEAL_BYTES}) FROM entries "
                        f"WHERE key IN ({','.join('?' * len(chunk))})",
                        chunk,
                    )
                )
            return found

        with self._lock:
            found = self._run(read, {}, writes=False)
        return {key: s for key, s in found.items() if type(s) is bytes and len(s) == _SEAL_BYTES}

    def mark_read(self, keys: list[str], now: float | None = None) -> None:
        """Mark the rows of ``keys`` as read now (at most once a day: see ``_USED_EVERY``)."""
        if not keys:
            return
        now = time.time() if now is None else now

        def mark(db) -> None:
            for i in range(0, len(keys), _CHUNK):
                chunk = keys[i : i + _CHUNK]
                db.execute(
                    f"UPDATE entries SET used = ? WHERE ({_NOT_A_TIME} OR used < ?) "
                    f"AND key IN ({','.join('?' * len(chunk))})",
                    [now, now - _USED_EVERY, *chunk],
                )

        with self._lock:
            self._run(mark, None, writes=True)

    def put_many(self, items: dict[str, bytes], now: float | None = None, versions: int | None = None) -> None:
        """Store ``items`` (key -> value) in one transaction.

        With ``versions``, a key of the form ``group:rest`` is one version of its group (one rendering of a page,
        say): of each group written to, only the ``versions`` rows written last are kept, the older ones deleted
        in the same transaction. An author's rebuilds then replace what they make, where each edit would
        otherwise add its own rows until the month of ``prune`` is over."""
        if not items:
            return
        now = time.time() if now is None else now
        groups = sorted({key.split(":", 1)[0] for key in items if ":" in key}) if versions is not None else []

        def write(db) -> None:
            with db:
                db.execute("BEGIN")
                db.executemany(
                    "INSERT OR REPLACE INTO entries (key, value, used) VALUES (?, ?, ?)",
                    [(k, seal(k, v), now) for k, v in items.items()],
                )
                for group in groups:  # a row written again has a new rowid: the last written have the highest
                    low, high = f"{group}:", f"{group};"
                    db.execute(
                        "DELETE FROM entries WHERE key >= ? AND key < ? AND rowid NOT IN "
                        "(SELECT rowid FROM entries WHERE key >= ? AND key < ? ORDER BY rowid DESC LIMIT ?)",
                        (low, high, low, high, versions),
                    )

        with self._lock:
            self._run(write, None, writes=True)

    def prune(self, before: float) -> int:
        """Delete the rows last read before ``before`` (or never, as far as the row says); how many."""

        def delete(db) -> int:
            with db:
                db.execute("BEGIN")
                return db.execute(f"DELETE FROM entries WHERE {_NOT_A_TIME} OR used < ?", (before,)).rowcount

        with self._lock:
            return self._run(delete, 0, writes=True)

    def close(self) -> None:
        with self._lock:
            self._close()


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
                store = Store(Path(path), pruning=True)
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


def prune_if_due(cache_dir: Path | None, now: float | None = None) -> int:
    """``prune``, when the cache folder was last pruned a day ago or more (or never); how many were deleted."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        return 0
    now = time.time() if now is None else now
    stamp = Path(cache_dir) / PRUNED
    try:
        if now - stamp.stat().st_mtime < _PRUNE_EVERY:
            return 0
    except OSError:
        pass  # never pruned, or the stamp went: prune now
    removed = prune(cache_dir, now=now)
    try:
        stamp.touch()
        os.utime(stamp, (now, now))
    except OSError:
        pass  # a folder that cannot be written is pruned again by the next build, and keeps nothing new anyway
    return removed

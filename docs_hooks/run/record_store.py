"""The recordings store: what an entry of it holds, how the recorder's pending recordings are written to it, and
how it is kept within its bound.

Every recording of the project is one entry of one ``cachedir.Store``, under its key (see
``request.recording_key``): what it depended on and the recording, packed as data (``recording.pack``). An entry
is used only when it reads back in the form written here (``stored_form``); anything else is a miss, recorded
again. ``record.Recorder`` reads and writes it, each entry it reads through a ``ReadBack``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from docs_hooks.base.cachedir import Store
from docs_hooks.base.lasttwo import LastTwo
from docs_hooks.run.recording import Call, Recording, pack, unpack

#: A recording larger than this (packed) is not stored: it is recorded again when needed.
MAX_STORED_BYTES = 32 * 1024 * 1024

#: The recordings store keeps at most this many bytes of recordings: the least recently read go first.
MAX_STORE_BYTES = 256 * 1024 * 1024

#: The recordings store is vacuumed when more than this share of its file is free pages.
VACUUM_SHARE = 0.5


def vacuum(path: Path) -> None:
    """Keep the store within MAX_STORE_BYTES (the least recently read recordings go), and give the file's
    free pages back (after rows were deleted, here or by the cache's pruning) when they are most of it."""
    if not path.is_file():
        return
    try:
        db = sqlite3.connect(path, timeout=1, isolation_level=None)
        try:
            total = db.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM entries").fetchone()[0]
            if total > MAX_STORE_BYTES:
                kept, drop = 0, []
                for key, size in db.execute("SELECT key, LENGTH(value) FROM entries ORDER BY used DESC").fetchall():
                    kept += size
                    if kept > MAX_STORE_BYTES:
                        drop.append((key,))
                with db:
                    db.execute("BEGIN")
                    db.executemany("DELETE FROM entries WHERE key = ?", drop)
            else:
                drop = []
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            if drop or (pages and free / pages > VACUUM_SHARE):
                db.execute("VACUUM")
        finally:
            db.close()
    except sqlite3.Error:
        pass  # busy (another build) or damaged (the next read makes it again): only a saving of space


class ReadBack:
    """Entries of the recordings store as read back and unpacked, by key and seal (``Store.seals``): an entry whose
    row is as it was when it was read is not read or unpacked again. A serve session keeps one for all its builds,
    so that the build made after a code edit unpacks only the recordings that changed (bench/README.md, "read
    back once"); a build of its own has its own.

    What it hands out is shared by the builds that read it, as one build's pages share it: nothing changes it
    (``dependencies.moved_by`` makes a new recording). It keeps what the current build and the one before it read.
    """

    def __init__(self) -> None:
        self._kept: LastTwo[str, tuple[bytes, Any]] = LastTwo()  # key -> (seal, unpacked)

    def new_build(self) -> None:
        """A new build starts: what the build before the last did not read again goes."""
        self._kept.new_build()

    def read(self, store: Store, keys: list[str]) -> dict[str, Any]:
        """The unpacked entries of ``keys`` that ``store`` holds (each marked as read); a damaged one is left out.

        Only the rows of entries it has unpacked before have their seals read first; every other row is read
        once, with its seal (a build of its own, or a session's first, reads no seal twice)."""
        kept = {key: known for key in keys if (known := self._kept.peek(key)) is not None}
        found: dict[str, Any] = {}
        if kept:
            for key, seal in store.seals(list(kept)).items():
                if kept[key][0] == seal:
                    found[key] = kept[key][1]
                    self._kept.keep(key, kept[key])
        if found:
            store.mark_read(list(found))
        for key, (seal, raw) in store.get_sealed([key for key in keys if key not in found]).items():
            try:
                value = unpack(raw)
            except ValueError:
                continue  # damaged, or written by another version of this code: recorded again
            found[key] = value
            self._kept.keep(key, (seal, value))  # a row written again since has another seal: read again then
        return found


def stored_form(recording: object) -> bool:
    """Whether an entry holds a recording as ``write_recordings`` stores it: a Recording of Calls (what it
    depends on is checked by ``Dependencies.moved``)."""
    if type(recording) is not Recording or type(recording.request) is not str or type(recording.calls) is not list:
        return False
    if type(recording.files) is not list or not all(type(f) is str for f in recording.files):
        return False
    return all(
        type(c) is Call
        and type(c.function) is str
        and type(c.caller) in (str, type(None))
        and type(c.caller_line) is int
        and type(c.args) is dict
        and type(c.locals) is dict
        for c in recording.calls
    )


def write_recordings(store: Store | None, pending: dict[str, tuple[dict, Recording]]) -> None:
    """Write ``pending`` (key -> (dependencies, recording)) to ``store`` in one transaction, and empty it.

    A recording larger than MAX_STORED_BYTES is left out (it is recorded again when needed).
    """
    if store is None or not pending:
        return
    items = dict(pending)
    for key in items:
        pending.pop(key, None)
    packed = {key: pack({"depends": deps, "recording": rec}) for key, (deps, rec) in items.items()}
    store.put_many({key: raw for key, raw in packed.items() if len(raw) <= MAX_STORED_BYTES})

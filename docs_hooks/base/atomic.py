"""Writing a file so that a reader never sees half of it and a failed write loses nothing."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_NEW_FILE_MODE = 0o644  # a file that did not exist yet: readable by all, written by its owner


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``.

    Every writer gets a name of its own, so two builds may store the same file at
    once. The result keeps the permissions of the file it replaces (a lock made
    read-only for the group stays so); a new file gets ordinary ones (mkstemp
    makes files private). The folder is made when it is missing: a cold build
    writes hundreds of cache entries into a few folders, so it is not asked for
    on every write.
    """
    path = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = _NEW_FILE_MODE
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

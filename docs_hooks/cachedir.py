"""The cache folder (``.cache/docs_hooks``) stays the size of what the builds use.

Every entry is keyed by the text it was made from, so each edit of the code,
the tests, a formula or the specification adds entries, and the ones for the
old text are never read again. Each read of an entry marks it as used (its
modification time); after a full build, entries no build has used for
``MAX_AGE_DAYS`` days are deleted. A deleted entry is only made again, should
it be needed: nothing is lost.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

MAX_AGE_DAYS = 30
_STRAY_TEMP_AGE = 24 * 3600  # a half-written temporary file of a build that was killed


def used(path: Path) -> None:
    """Mark a cache entry as read just now."""
    try:
        os.utime(path)
    except OSError:
        pass  # read-only or gone: it is only a mark


def prune(cache_dir: Path | None, max_age_days: float = MAX_AGE_DAYS, now: float | None = None) -> int:
    """Delete the entries of ``cache_dir`` unused for ``max_age_days``; how many were deleted."""
    if cache_dir is None or not Path(cache_dir).is_dir():
        return 0
    now = time.time() if now is None else now
    removed = 0
    for folder, _, names in os.walk(cache_dir):
        for name in names:
            path = os.path.join(folder, name)
            try:
                age = now - os.stat(path).st_mtime
                stray = name.startswith(".") and name.endswith(".tmp") and age > _STRAY_TEMP_AGE
                if stray or age > max_age_days * 86400:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue  # another build removed or replaced it meanwhile
    return removed

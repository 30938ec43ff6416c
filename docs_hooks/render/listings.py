"""Each file of the code highlighted once per text, for its source page, and kept in a store of the cache folder.

Highlighting a whole file with Pygments (``sources.highlighted_lines``) is most
of what rendering its source page costs, and it depends on the file's text
alone (and on Pygments). The page itself is made again whenever what cites the
file, or where the pages are, changes (see ``core.kept``); its highlighted lines
are not. ``python -m docs_hooks record`` highlights the files the pages cite, so
that the first build after the test run finds them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.settings import installed_version
from docs_hooks.render.sources import highlighted_lines

FORMAT = 1  # the form of a stored entry, and how the lines are highlighted; a change makes every entry a miss


class Listings:
    """Files highlighted, by their text (none kept without a cache folder)."""

    def __init__(self, cache_dir: Path | None):
        path = store_file(cache_dir, "listings")
        self.store = Store(path) if path is not None else None
        self.made = 0  # files highlighted by this object (the others were read back)

    def lines(self, text: str) -> list[str]:
        """The file's lines as HTML, highlighted: read back when a build highlighted the same text before."""
        if self.store is None:
            self.made += 1
            return highlighted_lines(text)
        key = hashlib.sha256(f"{FORMAT}\0{installed_version('pygments')}\0{text}".encode()).hexdigest()
        raw = self.store.get_many([key]).get(key)
        found = _load(raw, text.count("\n") + 1) if raw is not None else None
        if found is not None:
            return found
        lines = highlighted_lines(text)
        self.made += 1
        self.store.put_many({key: json.dumps(lines).encode()})
        return lines

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def _load(raw: bytes, count: int) -> list[str] | None:
    """The lines stored; None for anything but one string per line of the file (then it is highlighted again)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(data, list) and len(data) == count and all(isinstance(line, str) for line in data):
        return data
    return None

"""A page's code references, resolved one at a time: each to one statement span, recorded for the lock.

Every block kind resolves its references through the page's ``References``, so
every reference of a page ends up in one of two lists: ``uses`` (it resolved;
the lock compares what it points at with what was reviewed) or ``unresolved``
(it did not; its problem, naming the page and line, is in ``problems``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve.anchors import Resolved, parse_ref, resolve
from docs_hooks.resolve.codeindex import CodeIndex
from docs_hooks.resolve.lock import LockEntry


@dataclass
class References:
    index: CodeIndex
    page: str
    problems: list[TraceError] = field(default_factory=list)
    uses: list[LockEntry] = field(default_factory=list)  # every reference that resolved, for the lock
    unresolved: dict[tuple[str, str], int] = field(default_factory=dict)  # (page, key) -> line
    files: set[str] = field(default_factory=set)  # the files of the code the references point into (repo paths)

    def resolve(self, text: str, line: int, where: str, scope: list[str] | None = None) -> Resolved | None:
        """Resolve one reference (``scope``: the functions of the entry it sits in, tried first); record it
        for the lock, or record its problem and return None."""
        key = f"{where} | {text.strip()}"
        try:
            resolved = resolve(self.index, parse_ref(text), scope)
        except TraceError as err:
            self.problems.append(TraceError(f"reference '{text.strip()}': {err.message}", self.page, line))
            self.unresolved[(self.page, key)] = line
            return None
        locked = resolved.locked
        self.uses.append(LockEntry(self.page, key, locked.text, locked.digest, line))
        self.files.add(resolved.function.repo_path)
        return resolved

    def lock(self, entry: LockEntry, repo_path: str | None = None) -> None:
        """Record a reference a block resolved itself (an entry's function, an example's shown expression), and
        the file it points into."""
        self.uses.append(entry)
        if repo_path is not None:
            self.cite(repo_path)

    def cite(self, repo_path: str) -> None:
        """Record that the page shows a file of the code (a block's test, say): it gets a source page."""
        self.files.add(repo_path)

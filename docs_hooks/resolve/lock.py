"""The review lock: what each reference pointed at when a person last reviewed the page.

``docs/trace.lock`` is JSON, sorted, one entry per reference, so that a diff of
it reads as a list of reviewed changes. An entry keeps the code's text (shown in
messages) and a hash of its tokens (compared), so code that only moves, or whose
comments or spacing change, still passes; code whose tokens change does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.errors import TraceError


@dataclass(frozen=True)
class LockEntry:
    page: str
    key: str  # where on the page and what: "equation ln-mean | ops.layer_norm_forward: mu = ..."
    code: str  # the referenced code as written, lines joined
    digest: str  # hash of its tokens
    line: int = 0  # line of the reference on the page (not stored; for messages)


RELOCK = "python -m docs_hooks relock"
_CONFLICT_MARKERS = ("<<<<<<<", "|||||||", "=======", ">>>>>>>")  # what git writes into a file it could not merge


def read_lock(path: Path, name: str | None = None) -> dict[tuple[str, str], LockEntry]:
    """The lock's entries by (page, key). ``name`` is how messages call the file.

    A lock git could not merge, or one that is not a lock, is an error: its
    entries are what reviewers approved, so it is never guessed at or replaced.
    """
    name = name or str(path)
    text = lock_text(path, name)
    return parse_lock(text, name) if text is not None else {}


def lock_text(path: Path, name: str) -> str | None:
    """The lock's text; None when there is none (no page was locked yet)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(
            f"cannot read the review lock ({exc}); restore it from git, then run '{RELOCK}'", name
        ) from None


def parse_lock(text: str, name: str) -> dict[tuple[str, str], LockEntry]:
    """The entries of a lock's ``text`` (see ``read_lock``)."""
    conflict = conflict_line(text)
    if conflict is not None:
        raise TraceError(
            "the review lock has an unresolved merge conflict (git's marker is on this line); "
            f"take one side of the conflict, then run '{RELOCK}' again",
            name,
            conflict,
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(
            f"the review lock is not valid JSON ({exc.msg}); restore it from git, then run '{RELOCK}'",
            name,
            exc.lineno,
        ) from None
    out: dict[tuple[str, str], LockEntry] = {}
    try:
        for page, entries in data["pages"].items():
            for key, value in entries.items():
                out[(page, key)] = LockEntry(page, key, str(value["code"]), str(value["hash"]))
    except (TypeError, KeyError, AttributeError) as exc:
        raise TraceError(
            f"the review lock is not a lock of this version (missing or wrong {exc}); "
            f"restore it from git, then run '{RELOCK}'",
            name,
        ) from None
    return out


def by_page(locked: dict[tuple[str, str], LockEntry]) -> dict[str, dict[tuple[str, str], LockEntry]]:
    """The lock's entries, page by page: ``compare`` of one page's references needs that page's entries only
    (and a site of many pages would otherwise go through the whole lock for each)."""
    out: dict[str, dict[tuple[str, str], LockEntry]] = {}
    for k, entry in locked.items():
        out.setdefault(k[0], {})[k] = entry
    return out


def conflict_line(text: str) -> int | None:
    """The line of the first conflict marker git left in ``text`` (its first '<<<<<<<' when it has one)."""
    marked = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.startswith(_CONFLICT_MARKERS)]
    if not marked:
        return None
    return next((n for n, line in marked if line.startswith("<<<<<<<")), marked[0][0])


def write_lock(path: Path, entries: list[LockEntry]) -> None:
    """Write the lock atomically: a failed write leaves the old lock whole."""
    pages: dict[str, dict[str, dict]] = {}
    for e in sorted(entries, key=lambda e: (e.page, e.key)):
        pages.setdefault(e.page, {})[e.key] = {"code": e.code, "hash": e.digest}
    text = json.dumps({"version": 1, "pages": pages}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    atomic_write(path, text)


def _changed_lines(old: str, new: str) -> tuple[str, str]:
    """Only the lines that differ, so a change inside a long function reads at a glance."""
    import difflib

    if "\n" not in old and "\n" not in new:
        return old, new
    diff = list(difflib.ndiff(old.splitlines(), new.splitlines()))
    removed = [d[2:] for d in diff if d.startswith("- ")]
    added = [d[2:] for d in diff if d.startswith("+ ")]
    return "\n".join(removed), "\n".join(added)


def compare(
    locked: dict[tuple[str, str], LockEntry],
    current: list[LockEntry],
    lock_name: str,
    unresolved: dict[tuple[str, str], int] | None = None,
    pages: set[str] | None = None,
) -> list[TraceError]:
    """Problems between the lock and what the pages reference now.

    ``unresolved`` maps (page, key) of references that no longer resolve to their
    line; their locked code is quoted so the author sees what went away.
    ``pages``: when given, only lock entries of these pages are compared.
    """
    problems: list[TraceError] = []
    seen = set()
    for e in current:
        k = (e.page, e.key)
        seen.add(k)
        old = locked.get(k)
        if old is None:
            problems.append(
                TraceError(
                    f"{e.key}: not reviewed yet ({e.code.splitlines()[0] if e.code else ''}); "
                    f"review the page, then run '{RELOCK}' to record it in {lock_name}",
                    e.page,
                    e.line,
                )
            )
        elif old.digest != e.digest:
            before, after = _changed_lines(old.code, e.code)
            problems.append(
                TraceError(
                    f"{e.key}: changed since reviewed. Old text: {before!r}. New text: {after!r}. "
                    f"Review the page against the new code, then run '{RELOCK}'",
                    e.page,
                    e.line,
                )
            )
    for k, line in (unresolved or {}).items():
        seen.add(k)
        old = locked.get(k)
        if old is not None:
            problems.append(
                TraceError(
                    f"{k[1]}: the reviewed code is gone. It was: {old.code!r}. "
                    f"Point the reference at the code that replaced it, then run '{RELOCK}'",
                    k[0],
                    line,
                )
            )
    for k in sorted(locked):
        if k not in seen and (pages is None or k[0] in pages):
            problems.append(
                TraceError(
                    f"{k[1]}: {lock_name} records this reference but the page no longer makes it; "
                    f"run '{RELOCK}' to drop it",
                    k[0],
                )
            )
    return problems

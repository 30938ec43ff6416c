"""The commands that stop after resolving: ``check``, ``relock`` and ``impact``.

Each makes a static build (``make_build(static=True)``): it reads the pages and
resolves every reference against the code index, and starts no process but git.
They print what they found, in the page's terms, and return the exit code.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from io import BytesIO
from pathlib import Path

from docs_hooks.base.errors import TraceError
from docs_hooks.core.site import SiteResult, check_site, expand_site, index_for, make_build
from docs_hooks.resolve.lock import read_lock, write_lock


def check(settings) -> int:
    problems = check_site(settings)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"docs_hooks check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("docs_hooks check: every reference resolves and matches the review lock")
    return 0


def references(settings, index=None) -> SiteResult:
    """Every page's references and problems, resolved by a static builder: nothing runs, nothing renders.

    ``index`` is the code index to resolve against (the base revision's, for impact); default: the project's."""
    return expand_site(settings, make_build(settings, static=True, index=index))


def relock(settings) -> int:
    lock_name = settings.rel(settings.lock_path)
    try:
        # Read first: a lock git could not merge, or one that is not a lock, holds reviews that
        # recording the pages over it would throw away unseen.
        before = read_lock(settings.lock_path, lock_name)
    except TraceError as err:
        print(err, file=sys.stderr)
        print(f"relock: {lock_name} was not changed.", file=sys.stderr)
        return 1
    result = references(settings)
    if result.problems:
        for p in result.problems:
            print(p, file=sys.stderr)
        print(
            f"relock: {len(result.problems)} problem(s) in the pages; the lock was not changed. "
            "Fix them, then run relock again.",
            file=sys.stderr,
        )
        return 1
    uses = {(u.page, u.key): u for u in result.uses}
    write_lock(settings.lock_path, list(uses.values()))
    changed = sum(1 for k, u in uses.items() if k not in before or before[k].digest != u.digest)
    dropped = sum(1 for k in before if k not in uses)
    print(f"relock: {len(uses)} reference(s) recorded in {lock_name} ({changed} new or changed, {dropped} dropped)")
    return 0


def impact(settings, rev: str, fail_on_change: bool = False) -> int:
    """Resolve today's pages against the code at REV and now; list what differs.

    The exit code is 0 whatever the list holds, so that a CI step can post the list without failing; with
    ``fail_on_change`` it is 1 when the list is not empty, for a step that should stop there."""
    import tarfile  # here, not above: only impact reads an archive

    roots = [settings.rel(settings.source_root), settings.rel(settings.tests_root)]
    if rev.startswith("-"):
        raise TraceError(
            f"'{rev}' is not a revision (it starts with '-'); name a branch, tag or commit, e.g. origin/main"
        )
    # A root folder that did not exist yet at REV (tests added since) holds nothing there: left out of the
    # archive, which would refuse a path it does not have.
    present = [r for r in dict.fromkeys(roots) if r == "." or _exists_at(settings.project_root, rev, r)]
    try:
        # After --end-of-options nothing is an option; git archive then takes the paths with no "--" (some
        # versions of git, 2.39 among them, read a "--" there as a path).
        archive = subprocess.run(
            ["git", "archive", "--format=tar", "--end-of-options", rev, *(present or ["."])],
            cwd=settings.project_root,
            capture_output=True,
            check=True,
        ).stdout
    except subprocess.CalledProcessError as exc:
        raise TraceError(f"cannot read revision '{rev}': {exc.stderr.decode().strip()}") from None
    now = references(settings)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old = references(settings, index_for(settings, Path(tmp)))
    lines, pages = [], set()
    for page, expanded in now.pages.items():
        before = {u.key: u for u in old.pages[page].uses}
        found = []
        for u in expanded.uses:
            b = before.get(u.key)
            if b is None:
                found.append(f"- `{page}`: {u.key}: new since {rev}")
            elif b.digest != u.digest:
                found.append(f"- `{page}`: {u.key}: code changed since {rev}")
        for key in sorted(set(before) - {u.key for u in expanded.uses}):
            found.append(f"- `{page}`: {key}: no longer resolves")
        if found:
            lines.extend(found)
            pages.add(page)
    if not lines:
        print(f"No page references code that changed since {rev}.")
        return 0
    print(f"Pages whose referenced code changed since {rev}:\n")
    print("\n".join(lines))
    if not fail_on_change:
        return 0
    print(
        f"docs_hooks impact: {len(lines)} reference(s) on {len(pages)} page(s) changed since {rev} (--fail-on-change)",
        file=sys.stderr,
    )
    return 1


def _exists_at(root: Path, rev: str, path: str) -> bool:
    """Whether ``path`` (from the repository's root) exists at revision ``rev``."""
    found = subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=root, capture_output=True)
    return found.returncode == 0

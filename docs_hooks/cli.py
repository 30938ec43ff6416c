"""Command line: ``python -m docs_hooks init | check | relock | impact REV | results``.

init    set a project up: mkdocs.yml, [tool.docs_hooks], a starter page and the first lock
check   exit 1 on any unresolved, ambiguous, changed or literal reference (what CI runs)
relock  record what every reference points at now, after a person reviewed the pages
impact  list the pages and equations whose referenced code changed since REV
results record a training run's history (with the source it ran) for the site
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from io import BytesIO
from pathlib import Path

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.project import check_site, expand_site, index_for, make_builder
from docs_hooks.resolve.lock import read_lock, write_lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m docs_hooks", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=".", help="project root holding pyproject.toml (default: .)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="set this project up for a traced site (run in its root)")
    sub.add_parser("check", help="fail on any stale or broken reference")
    sub.add_parser("relock", help="record the reviewed state of every reference")
    imp = sub.add_parser("impact", help="pages whose referenced code changed since REV")
    imp.add_argument("rev", help="git revision to compare with, e.g. origin/main")
    res = sub.add_parser("results", help="record a training run's history for the site")
    res.add_argument("history", help="the history JSON the training wrote")
    res.add_argument("out", help="where the site reads it, e.g. docs/data/training-run.json")
    res.add_argument(
        "--command", dest="command_line", required=True, help="the command that made the run, shown on the page"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "init":
            from docs_hooks.init import init_project  # here, not above: importing it costs every other command ~0.03 s

            return init_project(Path(args.root))
        settings = load_settings(Path(args.root))
        if args.command == "check":
            return _check(settings)
        if args.command == "relock":
            return _relock(settings)
        if args.command == "results":
            return _results(settings, Path(args.history), Path(args.out), args.command_line)
        return _impact(settings, args.rev)
    except TraceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _check(settings) -> int:
    problems = check_site(settings)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"docs_hooks check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("docs_hooks check: every reference resolves and matches the review lock")
    return 0


def _references(settings, index=None):
    """Every page's references and problems, resolved by a static builder: nothing runs, nothing renders.

    ``index`` is the code index to resolve against (the base revision's, for impact); default: the project's."""
    return expand_site(settings, make_builder(settings, static=True, index=index), finish=False)


def _relock(settings) -> int:
    lock_name = settings.rel(settings.lock_path)
    try:
        # Read first: a lock git could not merge, or one that is not a lock, holds reviews that
        # recording the pages over it would throw away unseen.
        before = read_lock(settings.lock_path, lock_name)
    except TraceError as err:
        print(err, file=sys.stderr)
        print(f"relock: {lock_name} was not changed.", file=sys.stderr)
        return 1
    result = _references(settings)
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


def _results(settings, history: Path, out: Path, command: str) -> int:
    from docs_hooks.kinds.results import stamp

    index = index_for(settings)
    data = stamp(history, out, command, index.file_digests, settings.rel(settings.source_root) + "/")
    print(f"results: {len(data['history']['step'])} steps recorded in {out} for the source as it is now")
    return 0


def _impact(settings, rev: str) -> int:
    """Resolve today's pages against the code at REV and now; list what differs."""
    import tarfile  # here, not above: only impact reads an archive, and importing tarfile takes about 0.005 s

    roots = [settings.rel(settings.source_root), settings.rel(settings.tests_root)]
    if rev.startswith("-"):
        raise TraceError(
            f"'{rev}' is not a revision (it starts with '-'); name a branch, tag or commit, e.g. origin/main"
        )
    try:
        # After --end-of-options nothing is an option; git archive then takes the paths with no "--" (some
        # versions of git, 2.39 among them, read a "--" there as a path).
        archive = subprocess.run(
            ["git", "archive", "--format=tar", "--end-of-options", rev, *roots],
            cwd=settings.project_root,
            capture_output=True,
            check=True,
        ).stdout
    except subprocess.CalledProcessError as exc:
        raise TraceError(f"cannot read revision '{rev}': {exc.stderr.decode().strip()}") from None
    now = _references(settings)
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        old = _references(settings, index_for(settings, Path(tmp)))
    lines = []
    for page, expanded in now.pages.items():
        before = {u.key: u for u in old.pages[page].uses}
        for u in expanded.uses:
            b = before.get(u.key)
            if b is None:
                lines.append(f"- `{page}`: {u.key}: new since {rev}")
            elif b.digest != u.digest:
                lines.append(f"- `{page}`: {u.key}: code changed since {rev}")
        for key in sorted(set(before) - {u.key for u in expanded.uses}):
            lines.append(f"- `{page}`: {key}: no longer resolves")
    if not lines:
        print(f"No page references code that changed since {rev}.")
    else:
        print(f"Pages whose referenced code changed since {rev}:\n")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

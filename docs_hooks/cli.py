"""Command line: ``python -m docs_hooks init | check | relock | impact REV | record | results | pages``.

init    set a project up: mkdocs.yml, [tool.docs_hooks], a starter page and the first lock
check   exit 1 on any unresolved, ambiguous, changed or literal reference (what CI runs)
relock  record what every reference points at now, after a person reviewed the pages
impact  list the pages and equations whose referenced code changed since REV (--fail-on-change: exit 1 then)
record  make what the pages need of the run stage (the recordings of the tests and helpers they show, their
        formulas, the specification, the cited files highlighted) and store it for the next build
results record a training run's history (with the source it ran) for the site
pages   write the source pages, stylesheets and scripts into the docs folder, for a builder
        without plugins (Zensical): the MkDocs plugin makes them itself
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core import review
from docs_hooks.core.site import index_for


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
    imp.add_argument(
        "--fail-on-change", action="store_true", help="exit 1 when some page's referenced code changed (default: 0)"
    )
    sub.add_parser(
        "record",
        help="make the recordings, formulas, specification, highlighted files and code listings the pages need, for the next build",
    )
    res = sub.add_parser("results", help="record a training run's history for the site")
    res.add_argument("history", help="the history JSON the training wrote")
    res.add_argument("out", help="where the site reads it, e.g. docs/data/training-run.json")
    res.add_argument(
        "--command", dest="command_line", required=True, help="the command that made the run, shown on the page"
    )
    pages = sub.add_parser("pages", help="write the source pages and assets into the docs folder (for Zensical)")
    pages.add_argument("--out", help="folder to write them into, inside the docs folder (default: the docs folder)")
    args = parser.parse_args(argv)
    try:
        if args.command == "init":
            from docs_hooks.init import init_project  # here, not above: every other command would import it too

            return init_project(Path(args.root))
        settings = load_settings(Path(args.root))
        if args.command == "check":
            return review.check(settings)
        if args.command == "relock":
            return review.relock(settings)
        if args.command == "record":
            return _record(settings)
        if args.command == "results":
            return _results(settings, Path(args.history), Path(args.out), args.command_line)
        if args.command == "pages":
            from docs_hooks.pages import write_pages  # here: only this command renders the spec and the assets

            return write_pages(settings, Path(args.out) if args.out else None)
        return review.impact(settings, args.rev, args.fail_on_change)
    except TraceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _record(settings) -> int:
    from docs_hooks.core.recordings import record_site
    from docs_hooks.fences import highlight_ahead
    from docs_hooks.run.children import watch_parent

    watch_parent()  # started by a test run (pytest_linemap): end with it
    done = record_site(settings)
    # as the site's MkDocs build will: its first build after this highlights none of them
    highlighted, kept, why_not = highlight_ahead(settings.project_root, settings.cache_dir, done.fences)
    for err in done.failed:
        print(f"error: {err}", file=sys.stderr)
    print(
        f"docs_hooks record: {done.needed} recording(s) the pages need, {done.made} made, "
        f"{done.needed - done.made} stored already; {done.formulas} formula(s) rendered; "
        f"{done.listings} source file(s) highlighted; "
        f"{highlighted} fenced code block(s) of the pages highlighted, {kept} kept already"
        + (f" ({why_not})" if why_not else "")
        + ("; the specification compiled" if done.spec else "")
        + f"; {len(done.failed)} problem(s)"
    )
    return 1 if done.failed else 0


def _results(settings, history: Path, out: Path, command: str) -> int:
    from docs_hooks.kinds.results import source_prefix, stamp

    index = index_for(settings)
    data = stamp(history, out, command, index.file_digests, source_prefix(settings))
    print(f"results: {len(data['history']['step'])} steps recorded in {out} for the source as it is now")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

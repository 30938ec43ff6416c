"""One build's worth of work over a whole site: index once, expand every page, compare with the lock.

Used by the MkDocs adapter and by the command line alike.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from docs_hooks.base.cachedir import store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.base.gcpause import freeze, paused, unfreeze
from docs_hooks.base.settings import DEFAULT_EXCLUDE, Settings, is_test_file, walk_files
from docs_hooks.expand import Builder, Expanded
from docs_hooks.read.blocks import parse_pages
from docs_hooks.resolve.codeindex import CodeIndex, Root, build_index
from docs_hooks.resolve.lock import LockEntry, compare, read_lock
from docs_hooks.run.workers import recorder_path


def index_for(settings: Settings, project_root: Path | None = None) -> CodeIndex:
    """The code index of the source and tests roots (optionally of a copy of the tree)."""
    root = project_root or settings.project_root
    src = root / settings.source_root.relative_to(settings.project_root)
    tests = root / settings.tests_root.relative_to(settings.project_root)
    roots = [Root(src, src, False)]
    if tests.is_dir():
        roots.append(Root(tests, root, True))
    # A copy of the tree (impact's old revision) lives in a temporary folder: nothing to keep for it.
    cache = store_file(settings.cache_dir, "index") if project_root is None else None
    return build_index(roots, root, cache, settings.exclude)


def fingerprint(settings: Settings) -> str:
    """A digest of everything a builder is made from: the code, the tests, the helpers, the spec.

    Equal fingerprints mean a builder made earlier (and its caches of expanded
    pages) is still right, which is what makes ``mkdocs serve`` rebuilds cheap.
    """
    import hashlib

    h = hashlib.sha256()
    code = [settings.source_root, settings.tests_root]  # walked as the index walks them: excludes left out
    helpers = [p.parent for p in (settings.model_run, settings.spec_source) if p is not None]
    files: dict[Path, None] = {}
    for folder in dict.fromkeys([*code, *helpers]):
        if folder.is_dir():
            patterns = settings.exclude if folder in code else DEFAULT_EXCLUDE
            files.update(dict.fromkeys(walk_files(folder, settings.project_root, patterns)))
    for file in sorted(files):
        h.update(str(file).encode() + b"\0" + file.read_bytes() + b"\0")
    h.update(repr(sorted(vars(settings).items(), key=lambda kv: kv[0])).encode())
    return h.hexdigest()


def make_builder(
    settings: Settings, coverage: bool = True, static: bool = False, index: CodeIndex | None = None
) -> Builder:
    """The one factory of builders: the build, ``check``, ``relock`` and ``impact`` all make theirs here.

    A full builder (the build) indexes the code, then starts the slow work in the
    background: the coverage run (unless ``coverage`` is false), the recordings
    and KaTeX each in a child process of its own, so that they overlap with each
    other and with the rest of the build instead of running in turn.

    A ``static`` builder (``check``, ``relock``, ``impact``) stops after resolving:
    it reads the pages and resolves every reference against the index, and starts
    no process. ``index`` is the code index to resolve against (``impact`` passes
    the base revision's); by default the project's own.
    """
    with paused():
        builder = _make_builder(settings, coverage and not static, static, index)
        # What the builder holds lives through the build: out of collections until expand_site ends, or the
        # adapter's next build starts (see gcpause), and frozen before the collector runs again.
        freeze()
    return builder


def _make_builder(settings: Settings, coverage: bool, static: bool, index: CodeIndex | None) -> Builder:
    pages = {}
    for file in build_order(settings):
        try:
            pages[settings.rel(file)] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # the page's own read reports it
    parsed = parse_pages(pages, store_file(settings.cache_dir, "pages"))  # needs no index: read first
    evidence = any(block.kind not in PLAIN_BLOCKS for page in parsed.values() for block in page.blocks)
    spare = _early_recorder(settings, parsed.values()) if coverage and evidence else None
    math = None if static else _early_katex(settings)
    try:
        builder = Builder(settings, index if index is not None else index_for(settings), math)
    except BaseException:
        if spare is not None:
            from docs_hooks.run.record import stop_child

            stop_child(*spare)
        if math is not None:
            math.close()
        raise
    builder.static = static
    for rel, text in pages.items():
        builder.remember_parse(rel, text, parsed[rel])
    if spare is not None:
        builder.workers.make_recorder(spare)  # which uses it, or stops it with itself
    if coverage:  # check reads no HTML and never waits for it: it makes its builder without
        builder.workers.start_coverage()
    if not static:
        builder.prefetch(pages)
    if settings.spec_source is not None:
        from docs_hooks.run.spec import compile_spec, labels_without_compiling

        cache = settings.cache_dir / "spec" if settings.cache_dir else None
        if static:  # resolving needs the labels only: no Typst run
            builder.spec = labels_without_compiling(settings.spec_source, cache)
        else:  # Typst runs in a child process of its own, meanwhile the coverage run and the prefetch go on
            builder.spec = compile_spec(settings.spec_source, cache_dir=cache, timeout=settings.test_timeout)
    return builder


# Blocks that (mostly) show the code and the pages only: a page with nothing else needs no recording
# process started early. Only an optimisation: an inventory of parameters records on first use all the same.
PLAIN_BLOCKS = frozenset({"entry", "equation", "excerpt", "inventory"})


# Speed device (bench/bench_docs.py --devices, cold build of this site, machine loaded): without the early
# recorder and KaTeX the build took 1.27x as long.
def _early_recorder(settings: Settings, pages=()):
    """A recording child started before the code is indexed, importing meanwhile the source's modules
    and the test modules the ``pages`` (parsed) name.

    Only when some page shows recorded evidence and the cache holds no
    recording at all (a first build, or after ``make clean``): then the build
    will record, and Python with the project's imports takes a good part of a
    second to start. Otherwise most recordings are cached, and a child started
    for nothing would only take a core from the build; one starts on the first
    miss instead. ``check`` never starts one early.
    """
    if settings.cache_dir is not None and store_file(settings.cache_dir, "recordings").is_file():
        return None
    if not settings.source_root.is_dir():
        return None
    modules = sorted(
        p.stem
        for p in settings.source_root.glob("*.py")
        if p.stem not in ("__init__", "setup") and not is_test_file(p) and not settings.is_excluded(p)
    )
    from docs_hooks.run.record import start_child  # imported by a build that records, not by check

    return start_child(settings.project_root, recorder_path(settings), modules + _test_modules(settings, pages))


def _test_modules(settings: Settings, pages) -> list[str]:
    """The modules of the tests that the pages' blocks name (``test:``), in the order the pages name them."""
    from docs_hooks.run.record import test_request

    found: dict[str, None] = {}
    for page in pages:
        for block in page.blocks:
            test = block.data.get("test")
            if isinstance(test, str):
                try:
                    found[test_request(test, settings.project_root).module] = None
                except TraceError:
                    continue  # the page reports it where it is written
    return list(found)


def _early_katex(settings: Settings):
    """A KaTeX renderer whose process starts now, loading KaTeX while the code is indexed, or None.

    Only when the cache holds no rendered formula (a first build): then the
    pages' formulas all go to KaTeX, the first of them soon after the index.
    """
    if settings.cache_dir is not None and store_file(settings.cache_dir, "katex").is_file():
        return None
    from docs_hooks.run.math import MathRenderer

    math = MathRenderer(settings.project_root, settings.cache_dir, timeout=settings.test_timeout)
    math.start()
    return math


def build_order(settings: Settings) -> list[Path]:
    """The pages in the order MkDocs builds them: folder by folder, each folder's index page first."""

    def key(file: Path):
        rel = file.relative_to(settings.docs_dir)
        return (rel.parent.parts, rel.name not in ("index.md", "README.md"), rel.name)

    return sorted(settings.pages(), key=key)


@dataclass
class SiteResult:
    pages: dict[str, Expanded] = field(default_factory=dict)
    problems: list[TraceError] = field(default_factory=list)

    @property
    def uses(self) -> list[LockEntry]:
        return [u for e in self.pages.values() for u in e.uses]


def expand_site(settings: Settings, builder: Builder | None = None, finish: bool = True) -> SiteResult:
    """Every page expanded. With ``finish`` (the default) the Markdown is complete: what is made late
    (site-wide tables, what waits for the coverage run) is filled in; a static builder has none."""
    builder = builder or make_builder(settings)
    result = SiteResult()
    freeze()  # the index and the parsed pages live through the build: see gcpause
    try:
        for file in settings.pages():
            rel = settings.rel(file)
            expanded = builder.expand(rel, file.read_text(encoding="utf-8"))
            result.pages[rel] = expanded
            result.problems.extend(expanded.problems)
        builder.await_background()  # a bug in the background work is raised here, not lost
        for rel, expanded in result.pages.items() if finish else ():
            markdown, problems = builder.finish(rel, expanded.markdown)
            result.pages[rel] = dataclasses.replace(expanded, markdown=markdown, problems=expanded.problems + problems)
            result.problems.extend(problems)
    finally:
        unfreeze()
    return result


def check_site(settings: Settings, builder: Builder | None = None) -> list[TraceError]:
    """Every problem of the pages' references, plus the lock comparison: what ``check`` reports.

    It stops after resolving (a static builder): it runs nothing, so it reads no
    recording, renders no formula and does not wait for the coverage run."""
    builder = builder or make_builder(settings, static=True)
    result = expand_site(settings, builder, finish=not builder.static)  # a static builder makes nothing late
    locked = read_lock(settings.lock_path, settings.rel(settings.lock_path))
    unresolved = {k: v for e in result.pages.values() for k, v in e.unresolved.items()}
    return result.problems + compare(locked, result.uses, settings.rel(settings.lock_path), unresolved)

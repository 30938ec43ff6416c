"""What the run stage makes for a site's pages, made ahead of a build and stored where the build looks for it.

``python -m docs_hooks record`` runs it, and so does the project's own test run
beside its tests when its line map plugin is on (``docs_hooks.pytest_linemap``):
the first build after ``make test`` then finds the worked examples, the shapes and
the model run recorded, the formulas rendered, the specification compiled, the
files the pages cite highlighted for their source pages and (for a site MkDocs
builds) the fenced code of the pages (the listings the generator writes, and the
author's own) highlighted as its Markdown highlights them
(``fences.highlight_ahead``), as it finds the line map, and runs none of them.

It resolves the pages (nothing renders: no page, no coverage run) and asks the
run stage for what the plans need, in rounds, as a build does
(``site.record_rounds``). Everything is stored under the keys a build reads (a
recording by what it depended on, a formula by its TeX, the specification by its
sources, a highlighted file by its text), so a build uses it only while that is
as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.core.page import page_listings, page_needs
from docs_hooks.core.session import as_markdown_reads, without_front_matter
from docs_hooks.core.site import make_build, record_rounds, site_pages
from docs_hooks.read.blocks import authored_fences
from docs_hooks.read.formulas import page_formulas
from docs_hooks.run.results import Formula


@dataclass
class Recorded:
    """What ``record_site`` did: how many recordings the pages need, how many it made (the rest were stored
    already), how many formulas they show, and each problem it met (a recording that failed names its test or
    helper; KaTeX or Typst that could not run)."""

    needed: int = 0
    made: int = 0
    formulas: int = 0
    listings: int = 0  # the files that get a source page, highlighted (or read back)
    # the fenced code of the pages, for a front end to highlight ahead: the code listings they write (an entry's
    # functions, an excerpt's lines) and the fences written in them
    fences: list[str] = field(default_factory=list)
    spec: bool = False  # whether a specification was compiled (or read back)
    failed: list[TraceError] = field(default_factory=list)


def record_site(settings: Settings) -> Recorded:
    """Every recording the site's pages need, their formulas and the specification, read back or made, and
    stored for the next build. A build made by the one factory (``make_build``), without its coverage run; a
    specification Typst cannot compile stops it there, as it stops a build."""
    try:
        build = make_build(settings, coverage=False)
    except TraceError as err:  # the specification's compile: named at its .typ line
        return Recorded(failed=[err])
    results, workers = build.results, build.workers
    assert results is not None and workers is not None  # a build that is not static has both
    try:
        # Each page as a front end hands it over (Python-Markdown's whitespace, no front matter): the build then
        # reads back what parsing it found, as well as what it needs.
        pages = {page: as_markdown_reads(without_front_matter(text)) for page, text in site_pages(settings).items()}
        plans = {page: build.plan(page, text) for page, text in pages.items()}
        done = record_rounds(results, list(plans.values()))
        out = Recorded(len(done), workers.recorder.made, spec=results.spec is not None)
        out.failed += [e for e in done.values() if isinstance(e, TraceError)]
        # The formulas apart from record_rounds: its prefetch would start the coverage run too.
        formulas = [
            need
            for page, plan in plans.items()
            for need in page_needs(plan, done, page_formulas(build.plans.parse(page, pages[page])))
            if isinstance(need, Formula)
        ]
        if formulas and workers.math.available():
            results.formulas(list(dict.fromkeys(formulas)))
            out.formulas = len(set(formulas))
        problem = results.math_problem()
        if problem is not None:
            out.failed.append(problem)
        listings = [f for plan in plans.values() for f in page_listings(plan, build.links)]
        out.fences = list(dict.fromkeys(listings + [f for text in pages.values() for f in authored_fences(text)]))
        for repo_path in build.source_files(pages):  # what each source page shows: the file, highlighted
            results.source_lines((settings.project_root / repo_path).read_text(encoding="utf-8"))
            out.listings += 1
        workers.wait()  # the recordings are in the store now
        return out
    finally:
        build.close()

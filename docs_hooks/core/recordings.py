"""Every recording a site's pages need, made ahead of a build and stored where the build looks for them.

``python -m docs_hooks record`` runs it, and so does the project's own test run
beside its tests when its line map plugin is on (``docs_hooks.pytest_linemap``):
the first build after ``make test`` then finds the worked examples, the shapes and
the model run recorded, as it finds the line map, and runs none of them.

It resolves the pages (nothing renders: no formula, no specification compile, no
coverage run) and asks the recorder for what the plans need, in rounds, as a
build does (``site.record_rounds``). The recordings are stored under the same
keys as a build's, by what each depended on, so a build uses one only while that
code is as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.core.site import Build, index_for, record_rounds, site_pages
from docs_hooks.kinds.base import Project
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.run.workers import Workers


@dataclass
class Recorded:
    """What ``record_site`` did: how many recordings the pages need, how many it made (the rest were stored
    already), and each one that failed (its message names the test or helper)."""

    needed: int = 0
    made: int = 0
    failed: list[TraceError] = field(default_factory=list)


def record_site(settings: Settings) -> Recorded:
    """Every recording the site's pages need, read back or made, and stored for the next build."""
    index = index_for(settings)
    spec = None
    if settings.spec_source is not None:  # the labels only (a plan names them): no Typst run
        from docs_hooks.read.spec import labels_without_compiling

        spec = labels_without_compiling(
            settings.spec_source, settings.cache_dir / "spec" if settings.cache_dir else None
        )
    workers = Workers(settings, index)
    build = Build(Project(settings, index, CallGraph(index, None), spec), workers, static=False)
    try:
        plans = [build.plan(page, text) for page, text in site_pages(settings).items()]
        assert build.results is not None  # a build with workers has results
        done = record_rounds(build.results, plans)
        workers.wait()  # the recordings are in the store now
        recorder = workers.recorder
        return Recorded(len(done), recorder.made, [e for e in done.values() if isinstance(e, TraceError)])
    finally:
        build.close()

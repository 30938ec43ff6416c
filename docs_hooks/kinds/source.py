"""The ``trace-source`` block: a file of the code as a page of the site (its source page).

Every line reference on the site (``ops.py:42``) links to the line on its file's
source page, so the site needs no repository host to show the code it cites.
The front ends make one page per file of the index holding just this block
(the MkDocs plugin as generated pages, ``python -m docs_hooks pages`` as files
for builders without plugins); see ``render.sources``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Rendered, Scope
from docs_hooks.read.blocks import Block, within_root
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import sources
from docs_hooks.render.links import Links
from docs_hooks.resolve.codeindex import did_you_mean
from docs_hooks.run.results import Need, Results


@dataclass(frozen=True)
class SourcePlan:
    page: str
    repo_path: str
    text: str  # the file as it is now
    repo_link: str  # its permanent link on the repository host, or ""
    reads_site = True  # it lists what every page cites of the file


class SourceKind:
    name = "source"
    spec = BLOCK_KINDS["source"]

    def resolve(self, block: Block, scope: Scope) -> SourcePlan:
        project = scope.project
        try:
            repo_path = within_root(block.data["file"], "field 'file' of block 'trace-source'")
        except TraceError as err:
            raise err.at(scope.page, block.field_line("file")) from None
        if repo_path not in project.index.file_digests:
            raise TraceError(
                f"'{repo_path}' is not a file of the code index{did_you_mean(repo_path, project.index.file_digests)}; "
                "name a Python file of the source or tests roots, from the project root",
                scope.page,
                block.field_line("file"),
            )
        text = (project.settings.project_root / repo_path).read_text(encoding="utf-8")
        return SourcePlan(scope.page, repo_path, text, project.settings.github_url(repo_path))

    def needs(self, plan: SourcePlan, done: Mapping) -> list[Need]:
        return []

    def render(self, plan: SourcePlan, results: Results, links: Links) -> Rendered:
        html = sources.render_page(
            plan.repo_path,
            plan.text,
            _cited(plan, results),
            links.page_url(plan.page),
            links.page_url,
            plan.repo_link,
            results.source_lines(plan.text),
        )
        return Rendered(html)

    def inputs(self, plan: SourcePlan, results: Results, links: Links) -> str:
        """The file, its link, what cites it and where those pages are: all its page is made from."""
        cited = _cited(plan, results)
        urls = {page: links.page_url(page) for page in sorted({c.page for c in cited} | {plan.page})}
        return repr((plan.repo_path, plan.text, plan.repo_link, cited, urls))


def _cited(plan: SourcePlan, results: Results) -> list[sources.Citation]:
    cited = results.derived(("citations by file", results.site.version), _by_file, results)
    return cited.get(plan.repo_path, [])


def _by_file(results: Results) -> dict[str, list[sources.Citation]]:
    """What the entries and equations of every page cite, grouped by file, once per build."""
    out: dict[str, list[sources.Citation]] = {}
    for citation in sources.citations(results.site.pages):
        out.setdefault(citation.repo_path, []).append(citation)
    return out

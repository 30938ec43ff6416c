"""The pages of one build, read and resolved: each page's text parsed into blocks, then resolved into a plan.

The read and resolve stages of a build (see ``site.Build``), kept apart from what
runs and renders: a page is parsed once for each text of it (read back from the
cache folder when an earlier build parsed the same text, see
``blocks.parse_pages``) and planned once for each text of it; its entries join
the site's (``SiteEntries``), which the site-wide tables and the source pages
read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.base.cachedir import store_file
from docs_hooks.base.settings import Settings
from docs_hooks.core.page import PagePlan, plan_page
from docs_hooks.kinds.base import AnyKind, Project
from docs_hooks.read.blocks import Page, page_title, parse_pages
from docs_hooks.resolve.codeindex import CodeIndex
from docs_hooks.resolve.entries import SiteEntries


class ParsedPages:
    """Each page parsed, from the last two texts of it parsed: its file's, and the text a front end hands over,
    which may differ (no front matter, Python-Markdown's line ends). A parse depends on the text and the page's
    path only, and nothing changes a parsed page, so a process that stays across builds (``mkdocs serve``) hands
    each build the same (``site.AcrossBuilds``): a page whose texts did not change is neither parsed again nor
    read back from the cache folder."""

    TEXTS_KEPT = 2

    def __init__(self) -> None:
        self._by_page: dict[str, list[tuple[str, Page]]] = {}  # page -> (text, parsed), the last parsed first

    def get(self, page: str, text: str) -> Page | None:
        return next((parsed for known, parsed in self._by_page.get(page, ()) if known == text), None)

    def put(self, page: str, text: str, parsed: Page) -> None:
        others = [(known, p) for known, p in self._by_page.get(page, ()) if known != text]
        self._by_page[page] = [(text, parsed), *others][: self.TEXTS_KEPT]


@dataclass
class EarlierPlans:
    """The plans earlier builds of this process resolved, with what resolving them read of the code (see
    ``kept.TracedPages``): ``reuse(page, made_from)`` gives the page's plan when it was made from ``made_from``
    (a digest of its text and what it is made from besides the code) and every read of it gets the same answer
    from this build, else None; ``keep(page, made_from, plan)`` keeps a plan resolved now."""

    made_from: str  # what every page's plan is made from besides its text and the code: the settings, the other files
    reuse: Callable[[str, str], PagePlan | None]
    keep: Callable[[str, str, PagePlan], None]


class SitePlans:
    """Every page parsed and planned so far, and the entries of the site's pages (``site``). With ``earlier``
    (a build that keeps traces), a page whose resolving read the same of the code as in an earlier build is
    that build's plan, not resolved again."""

    def __init__(
        self,
        project: Project,
        kinds: dict[str, AnyKind],
        order: Callable[[Settings], list[Path]],
        parsed: ParsedPages | None = None,
    ):
        self.project = project
        self.earlier: EarlierPlans | None = None  # set by a build that keeps traces, once it can ask their reads
        self.settings = project.settings
        self.kinds = kinds
        self.order = order  # the pages of the docs folder, in the order the front end builds them
        self.site = SiteEntries()
        self._parsed = parsed if parsed is not None else ParsedPages()  # this build's, or a serve's (all its builds)
        self._plans: dict[str, tuple[str, PagePlan]] = {}  # page -> (its text, its plan)
        self._site_read = False  # whether every page of the docs folder has been resolved

    def parse_files(self) -> None:
        """Every page of the docs folder parsed from its file's text (see ``parse_all``)."""
        pages = {}
        for file in self.order(self.settings):
            try:
                pages[self.settings.rel(file)] = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # the page's own read reports it
        self.parse_all(pages)

    def parse_all(self, pages: dict[str, str]) -> None:
        """The pages whose text is new parsed in one batch, read back from the cache folder when an earlier
        build parsed the same text (see blocks.parse_pages)."""
        new = {page: text for page, text in pages.items() if self._parsed.get(page, text) is None}
        if new:
            for page, parsed in parse_pages(new, store_file(self.settings.cache_dir, "pages")).items():
                self._parsed.put(page, new[page], parsed)

    def parse(self, page: str, text: str) -> Page:
        """The page split into Markdown and blocks, parsed once for each text of it."""
        found = self._parsed.get(page, text)
        if found is None:
            self.parse_all({page: text})
            found = self._parsed.get(page, text)
        assert found is not None
        return found

    def plan(self, page: str, text: str) -> PagePlan:
        """The page resolved (once for each text of it); its entries join the site's."""
        known = self._plans.get(page)
        if known is None or known[0] != text:
            reads, earlier = self.project.reads, self.earlier
            if reads is None:
                plan = plan_page(self.parse(page, text), self.project, self.kinds)
            else:  # what resolving read of the code, kept with the plan (see base.reads and kept.TracedPages)
                made_from = _digest(earlier.made_from, page, text) if earlier is not None else ""
                found = earlier.reuse(page, made_from) if earlier is not None else None
                if found is not None:
                    plan = found
                else:
                    parsed = self.parse(page, text)
                    with reads.tracing() as trace:
                        plan = plan_page(parsed, self.project, self.kinds)
                    plan.read = trace
                    if earlier is not None:
                        earlier.keep(page, made_from, plan)
            known = self._plans[page] = (text, plan)
            self.site.set(page, plan.entries, page_title(text, page))
        return known[1]

    def planned(self, page: str) -> tuple[str, PagePlan] | None:
        """The page's last plan and the text it was made from; None when the page was not planned."""
        return self._plans.get(page)

    def plan_all(self, pages: dict[str, str]) -> None:
        """Every page resolved now, in order (a front end's pages: after this the site is read again)."""
        self.parse_all(pages)
        for page, text in pages.items():
            self.plan(page, text)
        self._site_read = False

    def site_entries(self) -> SiteEntries:
        """Every page's entries: after ``plan_all``, the pages it resolved; else every page of the docs folder,
        read from its file (once: a front end that hands over every page calls plan_all each build)."""
        if self._site_read:
            return self.site
        order, unread = {}, {}
        for i, file in enumerate(self.order(self.settings)):
            rel = self.settings.rel(file)
            order[rel] = i
            if rel not in self._plans:
                try:
                    unread[rel] = file.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue  # the page's own read reports it
        self.parse_all(unread)
        for rel, text in unread.items():
            self.plan(rel, text)
        self.site.pages = dict(sorted(self.site.pages.items(), key=lambda kv: order.get(kv[0], len(order))))
        self._site_read = True
        return self.site

    def source_files(self, pages: dict[str, str] | None = None) -> list[str]:
        """The files of the code that get a source page (see ``source_files``). ``pages``: the site's pages (path
        -> text as the front end hands it over), resolved now if they were not; default: every page of the docs
        folder."""
        if pages is None:
            plans = [self._plans[page][1] for page in self.site_entries().pages]
        else:
            self.parse_all(pages)  # in one batch: a text the front end hands over may differ from its file's
            plans = [self.plan(page, text) for page, text in pages.items()]
        return source_files(self.settings, self.project.index, plans)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def source_files(settings: Settings, index: CodeIndex, plans: list[PagePlan]) -> list[str]:
    """The files of the code that get a source page: with ``source_pages = "all"`` every file of the index;
    else (``"cited"``) those the pages' ``plans`` cite: an entry's functions, a reference, an example's test and
    shown code, and what the settings name for the site-wide tables. A link to any other file goes to the
    repository (see ``Links.source_url``)."""
    if settings.source_pages == "all":
        return sorted(index.file_digests)
    cited = set(_named_by_settings(settings, index))
    for plan in plans:
        cited |= plan.refs.files
        cited.update(fn.repo_path for entry in plan.entries for fn in entry.functions)
    return sorted(cited & index.file_digests.keys())


def _named_by_settings(s: Settings, index: CodeIndex) -> list[str]:
    """The files of what the settings name for the site-wide tables to show (the config, its module, the
    parameters' creator, the decay rule, the central differences): the inventories cite their lines."""
    where: dict[str, str] = {}  # a module, function or class -> its file
    for fn in index.functions.values():
        where.setdefault(fn.module, fn.repo_path)
        where[fn.name] = fn.repo_path
    for name, (repo_path, _, _) in index.classes.items():
        where.setdefault(name.rsplit(".", 1)[0], repo_path)
        where[name] = repo_path
    named = (s.model_config, s.config_module, s.init_params, s.decay_rule, s.numerical_grad)
    return [where[n] for n in named if n is not None and n in where]

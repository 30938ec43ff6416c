"""Where the rendered pages point: a span of code, a page of the site, a test, the specification.

Part of the render stage. The URLs of the site's pages are known only to the
front end (MkDocs decides them); it hands them over with ``place``.
Without them, MkDocs' directory URLs are assumed (the command line). A builder
that makes the URLs itself from links between files (Zensical) gets links from
the page's file to the files they point at (``between_files``).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping
from types import MappingProxyType

from docs_hooks.base.settings import Settings
from docs_hooks.render import html as R
from docs_hooks.render import sources
from docs_hooks.resolve.codeindex import CodeIndex, Function


class Links:
    trace_token = "Links"  # what a digest of a read's answer takes it for (base.reads): its state is in a page's key

    def __init__(self, settings: Settings, index: CodeIndex):
        self.settings = settings
        self.index = index
        self._page_urls: dict[str, str] = {}  # page path -> its URL inside the site
        self._source_pages: dict[str, str] = {}  # source file (repo path) -> the URL of its page
        self._placed = False  # whether the front end said which files have a source page (else: every file)
        self._between_files = False
        self._state: str | None = None  # the digest of the three, made when first asked for after a change

    def place(self, page_urls: Mapping[str, str], source_pages: Mapping[str, str]) -> None:
        """Where the front end put the site's pages (path -> URL inside the site) and the source pages (repo
        path -> URL), as a whole: what it put before is forgotten."""
        self._page_urls, self._source_pages, self._state = dict(page_urls), dict(source_pages), None
        self._placed = True

    @property
    def page_urls(self) -> Mapping[str, str]:
        return MappingProxyType(self._page_urls)

    @property
    def source_pages(self) -> Mapping[str, str]:
        return MappingProxyType(self._source_pages)

    @property
    def between_files(self) -> bool:
        """Whether links are written from the page's file to the files they point at (``layer-norm.md``,
        ``source/src/ops.py.md``), for a builder that makes the URLs itself from links relative to the page's
        file (Zensical does, in generated HTML too); else to the URLs MkDocs gives the pages (``layer-norm/``)."""
        return self._between_files

    @between_files.setter
    def between_files(self, value: bool) -> None:
        if value != self._between_files:
            self._between_files, self._state = value, None

    def state(self) -> str:
        """Where the front end put the pages, digested: every page's links are made from it (a kept page is
        kept for the same state only). Made once per change, not once per page that asks."""
        if self._state is None:
            placed = (self._between_files, sorted(self._page_urls.items()), sorted(self._source_pages.items()))
            self._state = hashlib.sha256(repr(placed).encode()).hexdigest()
        return self._state

    def url(self, fn: Function, start: int | None = None, end: int | None = None) -> str:
        """The permanent link to a span of code on the repository host; without ``repo_url``, the span on
        its source page in this site (see docs_hooks.sources)."""
        return self.settings.github_url(fn.repo_path, start, end) or sources.target(fn.repo_path, start, end)

    def line_link(self, fn: Function, start: int, end: int) -> str:
        """``ops.py:42`` linked to that line on its source page in this site."""
        return R.link(
            R.code(R.span_label(fn.display_path, start, end)), sources.target(fn.repo_path, start, end), fn.name
        )

    def code_links(self, fn: Function, start: int, end: int) -> str:
        """Where a listing's code lives: its source page in this site, and with ``repo_url`` the repository."""
        links = R.link("Source", sources.target(fn.repo_path, start, end))
        github = self.settings.github_url(fn.repo_path, start, end)
        return links + (" " + R.link("GitHub", github) if github else "")

    def function_link(self, fn: Function) -> str:
        return R.link(R.code(fn.name), self.url(fn, fn.start, fn.end))

    def test_names(self, names: list[str]) -> str:
        """Tests by their file (linked once) and their names: a long list, light to send and to read."""
        by_file: dict[str, list] = {}
        for name in names:
            fn = self.index.functions[name]
            by_file.setdefault(fn.display_path, []).append(fn)
        groups = []
        for path, fns in by_file.items():
            label = R.link(R.code(path), self.settings.github_url(fns[0].repo_path))
            groups.append(f"{label}: " + ", ".join(R.code(f.name[len(f.module) + 1 :]) for f in fns))
        return "<br>".join(groups)

    def only_sources(self, files: list[str]) -> None:
        """The files that have a source page, for a front end that places none (``between_files``): a link to
        any other goes to the repository (see ``source_url``)."""
        self._source_pages, self._state, self._placed = {f: sources.page_uri(f) for f in files}, None, True

    def source_url(self, repo_path: str) -> str | None:
        """Where a file's source page is: its URL as the front end made it, else MkDocs' directory URL (or its
        file, when links go between files). A file the front end made no page for (``source_pages = "cited"``):
        its permanent link on the repository host, or None without ``repo_url`` (the link then goes)."""
        if self._placed and repo_path not in self._source_pages:
            return self.settings.github_url(repo_path) or None
        if self.between_files:
            return sources.page_uri(repo_path)
        return self._source_pages.get(repo_path) or f"{sources.PREFIX}/{repo_path}/"

    def source_links(self, page: str, html: str) -> str:
        """``html`` of ``page`` with its links to source pages made relative to the page (see sources)."""
        return self.source_links_at(self.page_url(page), html)

    def source_links_at(self, url: str, html: str) -> str:
        """The same for a page whose URL (``page_url``) is known already: each piece of a page reuses it."""
        return sources.relative_links(html, url, self.source_url)

    def page_url(self, page: str) -> str:
        """Where a page is inside the site: its URL from the front end, else MkDocs' directory URL (or its file
        in the docs folder, when links go between files)."""
        rel = sources.relative_path(page, self.settings.rel(self.settings.docs_dir))
        if self.between_files:
            return rel
        if page in self._page_urls:
            return self._page_urls[page]
        if rel == "index.md" or rel.endswith("/index.md"):
            return rel[: -len("index.md")]
        return rel[: -len(".md")] + "/"

    def relative_url(self, page: str, target: str) -> str:
        """A link from ``page`` to a path of the site, as the browser resolves it."""
        here = self.page_url(page)
        base = here if here.endswith("/") or not here else posixpath.dirname(here)
        rel = sources.relative_path(target or ".", base or ".")
        return rel + "/" if target.endswith("/") and not rel.endswith("/") else rel

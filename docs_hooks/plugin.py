"""The MkDocs plugin: ``plugins: [search, docs_hooks]`` in mkdocs.yml (MkDocs 1.6 and ProperDocs).

It only wires MkDocs' events to the core (``core.session``), keeping one site's
state on the plugin object (MkDocs keeps the object across the rebuilds of
``mkdocs serve``):

- on_config: read ``[tool.docs_hooks]``, make the build when the code changed,
  add the Python-Markdown extension that expands the pages (``docs_hooks.extension``),
  link the plugin's own CSS and JavaScript;
- on_files: ship those assets, KaTeX's stylesheet and fonts, the compiled
  specification and a source page for each file of the code; keep the review
  lock and the helpers the build runs out of the site; resolve every page, so
  the site-wide tables read them all and the run stage starts on them at once;
  in a dirty build (``mkdocs serve --dirty``), tell MkDocs which pages to build
  again (``DirtyPages``);
- on_page_markdown: tell the extension which page MkDocs converts next;
- on_page_content: in a dirty build, note what the page came out as;
- on_env: give the theme's Jinja environment the templates compiled by the
  builds before (``plugin_templates.CompiledTemplates``): MkDocs makes a new
  environment for every build of ``mkdocs serve``, which would compile them all again;
- on_nav / on_env / on_page_context: under Material for MkDocs, render the site
  navigation of the source pages once per build for every source page at the same
  depth (``SourcePages``, with ``plugin_material.SourceNav``);
- Material's search plugin reads each page without the spans of the generated
  HTML, the same text with far fewer tags (``render.search``): the plugin wraps
  the search plugin's on_page_context and puts the page back after it
  (``plugin_search.SearchReading``); in a build with many pages to read, a process of its own reads them
  as MkDocs converts them (on_page_content), and the search plugin's on_post_build waits for it;
- on_post_build: wait for the background work; in a strict build, fail on any
  problem the generator met, whatever the log level;
- on_serve / on_shutdown: watch the code; end the build's processes when serving stops.

Problems go to the ``mkdocs.plugins.docs_hooks`` logger as warnings, so
``mkdocs build --strict`` fails on them; under ``-q`` MkDocs drops warnings
before it counts them, so the plugin counts them itself and aborts a strict
build at its end, printing each. A problem that stops the build (unreadable
settings, a source file that does not parse) is a ``PluginError``: MkDocs prints
its message, starting with the file and line, and no traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from markdown import Markdown
from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import Abort, PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files, InclusionLevel

from docs_hooks.base import gcpause
from docs_hooks.base.cachedir import MAX_AGE_DAYS, prune_if_due
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings, is_virtualenv
from docs_hooks.core.session import Session, widget_kernels, without_front_matter
from docs_hooks.core.shipped import SITE_ASSETS, asset_paths, scripts, stylesheets
from docs_hooks.core.site import Build
from docs_hooks.extension import TraceExtension
from docs_hooks.fences import EXTENSION, Fences
from docs_hooks.pages import written_by_pages
from docs_hooks.plugin_material import SOURCE_TEMPLATE, SourceNav, material_navigation
from docs_hooks.plugin_search import SearchReading
from docs_hooks.plugin_templates import CompiledTemplates
from docs_hooks.render import sources

log = logging.getLogger("mkdocs.plugins.docs_hooks")

# Seconds after a build of mkdocs serve before the build it replaced is collected (Session.settle): by then the
# browser has reloaded the page, and the author reads it.
SETTLE_AFTER = 1.0
TEMPLATES = Path(__file__).parent / "templates"  # added to the theme's folders under Material for MkDocs


class PluginConfig(base.Config):
    root = c.Optional(c.Dir(exists=True))
    """Folder holding the pyproject.toml whose ``[tool.docs_hooks]`` configures the plugin; default: the folder of mkdocs.yml."""

    assets = c.Type(bool, default=True)
    """Link the plugin's stylesheet, scripts and KaTeX's stylesheet into every page (turn off only to bring your own)."""


class TracePlugin(BasePlugin[PluginConfig]):
    """Traced documentation of NumPy code: trace blocks in the pages become tables, listings and examples."""

    def __init__(self) -> None:
        self._session: Session | None = None
        self.current: tuple[str, int] | None = None  # the page MkDocs converts now: (path, lines of front matter)
        self.sources = SourcePages()  # the source pages this plugin adds, and their navigation under Material
        self.problems: list[str] = []  # what this build reported, for a strict build under -q
        # ``mkdocs serve --dirty`` (or ``build --dirty``): MkDocs builds only the pages that changed
        self._dirty: DirtyPages | None = None
        self.serving = False  # ``mkdocs serve``: the process stays for the next build
        self._search: SearchReading | None = None  # how Material's search plugin reads the pages
        self._fences: Fences | None = None  # fenced code highlighted once per text (see fences)
        self.templates = CompiledTemplates()  # the theme's templates, compiled once while the process stays

    @property
    def session(self) -> Session:
        """The site's session: made by the first on_config."""
        if self._session is None:
            raise PluginError("docs_hooks: the plugin was used before MkDocs loaded its configuration (on_config)")
        return self._session

    @session.setter
    def session(self, session: Session) -> None:
        self._session = session

    # ------------------------------------------------------------------ set-up

    def on_startup(self, *, command, dirty):
        """Defining this event makes MkDocs keep the plugin object across the rebuilds of ``mkdocs serve``."""
        self._dirty = DirtyPages() if dirty else None
        self.serving = command == "serve"

    def on_config(self, config):
        root = Path(self.config.root or Path(config.config_file_path).parent)
        if self._session is None or self._session.root != root:
            self._session = Session(root, self._warn)
            self._session.settles = self.serving
        self.problems = []
        kernels = widget_kernels(Path(config.docs_dir), config.extra_javascript)
        try:
            # While serving, a rebuild after a page edit keeps the build (its index and the pages it resolved)
            # when no code, test, helper or spec file changed; any change makes a new one, and the old one's
            # processes are ended.
            self.session.refresh(kernels).write_kept_when_done()  # on_post_build awaits the build
        except TraceError as err:
            raise PluginError(str(err)) from None
        # A site that also builds with Zensical names the extension itself: the plugin adds its own instance,
        # which knows the page MkDocs converts, in its place.
        config.markdown_extensions[:] = [e for e in config.markdown_extensions if e != EXTENSION]
        config.mdx_configs.pop(EXTENSION, None)
        cache_dir = self.session.settings.cache_dir
        self._fences = _for_cache(self._fences, cache_dir, Fences)
        config.markdown_extensions.append(TraceExtension(self.session, self._page_of, self._fences))
        self._search = _for_cache(self._search, cache_dir, SearchReading)
        self._search.wrap(config)
        if config.theme.name == "material" and str(TEMPLATES) not in config.theme.dirs:
            config.theme.dirs.append(str(TEMPLATES))  # last: a template of the site's own comes first
        if self.config.assets:
            _link_assets(config)
        return config

    def on_files(self, files, *, config):
        session = self.session
        settings, build = session.settings, session.build
        katex = build.workers.math.assets(f"{SITE_ASSETS}/katex")
        _leave_out(files, _made_by_plugin(settings, build.project.index.file_digests, katex), _kept_out(settings))
        tab = config.mdx_configs.get("tab_length", 4)
        docs = {self._rel(f): f for f in files.documentation_pages()}
        page_urls = {rel: f.url for rel, f in docs.items()}
        # as the extension is handed each: the front matter left out, so that a page resolved here is not
        # resolved again when it is converted
        read = {rel: without_front_matter(Path(f.abs_src_path).read_text(encoding="utf-8")) for rel, f in docs.items()}
        pages = {rel: session.as_read(text, tab) for rel, text in read.items()}
        try:
            cited = build.source_files(pages)  # resolves the pages now: the source pages are made from them
        except TraceError as err:
            raise PluginError(str(err)) from None
        source_pages = {}
        for repo_path, page in self.sources.add(files, config, cited).items():
            source_pages[repo_path] = page.url
            rel = self._rel(page)
            page_urls[rel] = page.url
            pages[rel] = session.as_read(without_front_matter(page.content_string), tab)
        if build.results.spec is not None and settings.spec_pdf:
            files.append(File.generated(config, settings.spec_pdf, content=build.results.spec.pdf))
        if self.config.assets:
            for src_uri, path in asset_paths(build.workers.math.assets(f"{SITE_ASSETS}/katex")):
                files.append(File.generated(config, src_uri, abs_src_path=str(path)))
        build.links.place(page_urls, source_pages)
        try:
            session.plan_site(pages)
            if self._dirty is not None:
                self._dirty.mark(files, pages, build, session, self._rel, self.sources.uris)
        except TraceError as err:
            raise PluginError(str(err)) from None
        return files

    def on_page_content(self, html, *, page, config, files):
        """What the page came out as, for a dirty build (``DirtyPages``) and Material's search (``ahead``)."""
        if self._dirty is not None:
            self._dirty.built(self._rel(page.file), self.session)
        if self._search is not None:
            self._search.ahead(page, html)
        return html

    def _rel(self, f: File) -> str:
        """A page's path as the generator names it: from the project root (a generated one: its docs path)."""
        settings = self.session.settings
        if f.abs_src_path:
            return settings.rel(Path(f.abs_src_path))
        return settings.rel(settings.docs_dir / f.src_uri)

    # ------------------------------------------------------------------ pages

    def on_page_markdown(self, markdown, *, page, config, files):
        """Which page MkDocs converts next, and how many lines of front matter it left out of it."""
        source = page.file.content_string if page.file.abs_src_path is None else None
        if source is None:
            source = Path(page.file.abs_src_path).read_text(encoding="utf-8")
        offset = source[: len(source) - len(markdown)].count("\n") if source.endswith(markdown) else 0
        self.current = (self._rel(page.file), offset)
        return markdown

    def _page_of(self, md: Markdown) -> tuple[str, int] | None:
        return self.current

    def on_nav(self, nav, *, config, files):
        self.sources.navigation(nav, material=config.theme.name == "material")
        if self._dirty is not None:
            self._dirty.navigation(nav, files)
        return nav

    def on_env(self, env, *, config, files):
        """The build's templates come compiled from the builds before it (``CompiledTemplates``); the source
        pages get the template that renders their navigation once (``SourceNav``), where the templates it is
        made from are Material's own."""
        self.templates.attach(env)
        self.sources.templates(env, files)
        return env

    def on_page_context(self, context, *, page, config, nav):
        self.sources.context(context, page)
        return context

    def on_post_build(self, *, config):
        if self._dirty is not None:
            self._dirty.done()  # every page MkDocs converted is written
        self.session.build.await_background()  # a bug in the background work is raised here, not lost
        if self._search is not None:
            self._search.settle()  # when the search plugin's on_post_build came first, it settled already
            self._search.flush()
        if self._fences is not None:
            self._fences.flush()
        # The build's objects stay frozen: after `mkdocs build` the process ends, and handing them back
        # now would only make the collector walk all of them once more on the way out. `mkdocs serve`
        # hands them back when its next build starts (on_config).
        removed = prune_if_due(self.session.settings.cache_dir)  # entries no build has used for a month
        if removed:
            log.info(f"docs_hooks: removed {removed} cache entries unused for {MAX_AGE_DAYS} days")
        nav = self.sources.nav
        if nav is not None and nav.pages:
            log.debug(f"docs_hooks: the site navigation of {nav.pages} source pages rendered {nav.renders} time(s)")
        if self.serving:
            self.session.build.warm_up()
            self.session.settle_later(SETTLE_AFTER)
        if config.strict and self.problems and not log.isEnabledFor(logging.WARNING):
            # MkDocs counts only the warnings it prints: under -q it counts none, so a strict build would pass.
            listed = "\n".join(self.problems)
            raise Abort(f"Aborted with {len(self.problems)} docs_hooks problem(s) in strict mode:\n{listed}")

    def on_build_error(self, *, error):
        gcpause.unfreeze()
        if self._search is not None:
            self._search.abandon()
        if self._dirty is not None:
            self._dirty.failed()

    # ------------------------------------------------------------------ serve

    def on_serve(self, server, *, config, builder):
        for path in _watched(self.session.settings):
            server.watch(str(path))
        return server

    def on_shutdown(self):
        if self._session is not None:
            self._session.close()
        if self._search is not None:
            self._search.close()
        if self._fences is not None:
            self._fences.close()

    # ------------------------------------------------------------------ helpers

    def _warn(self, problem: TraceError) -> None:
        """A problem as a warning of MkDocs' logger (``mkdocs build --strict`` fails on it), counted."""
        self.problems.append(str(problem))
        if self._dirty is not None and self.current is not None:
            self._dirty.problems.add(self.current[0])
        log.warning(str(problem))


def _leave_out(files: Files, made: set[str], kept_out: Callable[[Path], bool]) -> None:
    """Take out of ``files`` what is not a page of the site: what the plugin makes itself (``made``: a copy
    'python -m docs_hooks pages' wrote may be older), the lock and the helpers the build runs (``kept_out``)."""
    for f in list(files):
        if f.src_uri in made or (f.abs_src_path and kept_out(Path(f.abs_src_path))):
            files.remove(f)


def _for_cache(kept, cache_dir: Path | None, make: Callable):
    """``kept`` when it keeps its work in ``cache_dir``; else a new one, ``make(cache_dir)``, the old one closed
    (the settings moved the cache folder between two builds of one serve)."""
    if kept is not None and kept.cache_dir == cache_dir:
        return kept
    if kept is not None:
        kept.close()
    return make(cache_dir)


def _link_assets(config) -> None:
    """Link the plugin's stylesheets and scripts into every page, each once."""
    for sheet in stylesheets():
        if sheet not in config.extra_css:
            config.extra_css.append(sheet)
    for script in scripts():
        if script not in [str(s) for s in config.extra_javascript]:
            config.extra_javascript.append(script)


def _made_by_plugin(settings: Settings, code: Iterable[str], katex: list[tuple[str, Path]]) -> set[str]:
    """The src_uri of each file the plugin makes itself: the source pages of the ``code`` files, KaTeX's assets,
    the specification, and the pages ``python -m docs_hooks pages`` writes."""
    made = {sources.page_uri(p) for p in code}
    made.update(uri for uri, _ in asset_paths(katex))
    if settings.spec_pdf:
        made.add(settings.spec_pdf)
    made.update(written_by_pages(settings.docs_dir))
    return made


def _kept_out(s: Settings) -> Callable[[Path], bool]:
    """Whether a file of the docs folder is the build's, not the reader's: the lock, the helpers it runs
    (their folder, when it is not the docs folder itself)."""
    lock = s.lock_path.resolve()
    helper = s.model_run.resolve().parent if s.model_run is not None else None
    if helper == s.docs_dir.resolve():
        helper = None

    def kept_out(path: Path) -> bool:
        path = path.resolve()
        return path == lock or (helper is not None and path != helper and path.is_relative_to(helper))

    return kept_out


def _watched(s: Settings) -> list[Path]:
    """What ``mkdocs serve`` watches: the code, the tests, the lock, the helpers' folder, the specification's;
    where the code lies beside everything, each file and folder of the project but the site, the cache and a
    virtual environment."""
    watched = [s.source_root, s.tests_root, s.lock_path]
    if s.model_run is not None:
        watched.append(s.model_run.parent)
    if s.spec_source is not None:
        watched.append(s.spec_source.parent)
    out = []
    for path in dict.fromkeys(watched):
        if path.resolve() == s.project_root:  # code beside everything: not the site, the cache, the venv
            for child in sorted(path.iterdir()):
                if not s.is_excluded(child) and not (child.is_dir() and is_virtualenv(child)):
                    out.append(child)
        elif path.exists():
            out.append(path)
    return out


class DirtyPages:
    """Which pages a dirty build (``mkdocs serve --dirty``) builds. MkDocs builds those whose file is newer than
    their HTML; the plugin adds every page that showed a problem in the last build, and every page whose
    expansion is made from something that changed since (the code it shows, what it cites) and that comes out
    different now: such a page is expanded in on_files to tell (``Session.comes_out_as``), and MkDocs converts
    it later from that expansion. It leaves out a page whose inputs did not change, or that comes out as it
    did (MkDocs takes a page it was handed as text, a source page, for changed).

    Every page shows the site's navigation: when it changed (a page added to it, taken out or moved, a title set
    in it), every page is built again (``navigation``), where MkDocs alone would leave the others with the old one.

    What a build found is taken for the next one only once it is done (``done``); after a build that failed
    (``failed``) every page is built again, since some were converted and not written."""

    def __init__(self) -> None:
        self.nav: str | None = None  # the navigation of the last build that was done (``navigation``)
        self._nav: str | None = None  # this build's
        self.keys: dict[str, str | None] = {}  # each page's expansion key in the last build that was done
        self.outputs: dict[str, str | None] = {}  # what each page came out as when it was last built and written
        self.texts: dict[str, str] = {}  # this build's pages: path -> text as the extension is handed it
        self.problems: set[str] = set()  # the pages that showed a problem in this build
        self._keys: dict[str, str | None] = {}  # this build's, until it is done
        self._outputs: dict[str, str | None] = {}

    def mark(
        self,
        files: Files,
        pages: dict[str, str],
        build: Build,
        session: Session,
        rel: Callable[[File], str],
        generated: set[str],
    ) -> None:
        """Mark each page of ``files`` as one MkDocs builds or leaves (``generated``: the source pages' src_uri)."""
        self.texts = pages
        keys = self._keys = {}
        self._outputs = {}
        shown, self.problems = self.problems, set()  # the last build's; this build's are gathered anew
        for f in files.documentation_pages():
            page = rel(f)
            key = keys[page] = build.expansion_key(page)
            text_given = f.src_uri in generated
            if key is None or page in shown or not Path(f.abs_dest_path).is_file():
                f.is_modified = _always  # type: ignore[method-assign]
            elif key == self.keys.get(page):
                if text_given:
                    f.is_modified = _never  # type: ignore[method-assign]
            elif (text_given or not f.is_modified()) and self.outputs.get(page) is not None:
                same = session.comes_out_as(page, pages[page]) == self.outputs[page]
                f.is_modified = _never if same else _always  # type: ignore[method-assign]
            else:
                f.is_modified = _always  # type: ignore[method-assign]

    def navigation(self, nav, files: Files) -> None:
        """Build every page when the site's navigation is not the last build's: its sections, links and pages in
        order, with the titles it sets (MkDocs hands it over after ``mark``, before it converts a page)."""
        self._nav = _navigation(nav.items)
        if self._nav != self.nav:
            for f in files.documentation_pages():
                f.is_modified = _always  # type: ignore[method-assign]

    def built(self, page: str, session: Session) -> None:
        """Note what a page MkDocs has just converted came out as."""
        if page in self.texts:
            self._outputs[page] = session.comes_out_as(page, self.texts[page])

    def done(self) -> None:
        """The build is done, every page it converted written: the next one starts from what it found (and from
        the problems it showed)."""
        self.keys, self.nav = self._keys, self._nav
        self.outputs.update(self._outputs)
        self._keys, self._outputs = {}, {}

    def failed(self) -> None:
        """The build stopped: the next one builds every page."""
        self.keys, self.outputs, self._keys, self._outputs = {}, {}, {}, {}
        self.nav = self._nav = None
        self.problems = set()


def _navigation(items) -> str:
    """The site's navigation as plain text: each item's kind, the title the navigation gives it (a page's own
    title is read later, from the page), its address, and its children."""
    return repr(
        [
            (
                type(item).__name__,
                item.title,
                getattr(item, "url", None),
                _navigation(item.children) if getattr(item, "children", None) else None,
            )
            for item in items
        ]
    )


class SourcePages:
    """The source pages the plugin adds, one for each file of the code the pages cite (reached by links, not
    listed in the nav), and, under Material, their site navigation rendered once per depth (``SourceNav``)."""

    def __init__(self) -> None:
        self.uris: set[str] = set()  # src_uri of each source page this build adds
        self.nav: SourceNav | None = None  # this build's navigation of the source pages, under Material

    def add(self, files: Files, config, cited: Iterable[str]) -> dict[str, File]:
        """Add a source page to ``files`` for each repo path of ``cited``; returns them by repo path."""
        self.uris = set()
        added = {}
        for repo_path in cited:
            page = File.generated(
                config,
                sources.page_uri(repo_path),
                content=sources.page_markdown(repo_path),
                inclusion=InclusionLevel.NOT_IN_NAV,
            )  # reached by links, not listed in the nav
            files.append(page)
            self.uris.add(page.src_uri)
            added[repo_path] = page
        return added

    def navigation(self, nav, material: bool) -> None:
        """A new build's navigation: rendered once for the source pages under Material (``SourceNav``)."""
        self.nav = SourceNav(nav) if material else None

    def templates(self, env, files: Files) -> None:
        """Give the source pages the template that renders their navigation once, where the templates it is
        made from are Material's own."""
        if self.nav is not None and not material_navigation(env):
            self.nav = None
        if self.nav is not None:
            for f in files.documentation_pages():
                if f.src_uri in self.uris and f.page is not None and "template" not in f.page.meta:
                    f.page.meta["template"] = SOURCE_TEMPLATE

    def context(self, context, page) -> None:
        """Hand a source page's template the navigation rendered for its depth."""
        if self.nav is not None and page.meta.get("template") == SOURCE_TEMPLATE:
            context["docs_hooks_site_nav"] = self.nav.for_page(page, context["base_url"])


def _always() -> bool:
    return True


def _never() -> bool:
    return False

"""What the MkDocs plugin does only under Material for MkDocs: the site navigation of the source pages,
rendered once per depth (``SourceNav``, where the templates it is made from are Material's own:
``material_navigation``), and how Material's search plugin reads the pages (``SearchReading``: without the
spans of the generated HTML, and not again when a page is read as it was in an earlier build).

``plugin.TracePlugin`` makes both from its events; neither knows the plugin.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from mkdocs.exceptions import PluginError

from docs_hooks.base.settings import installed_version
from docs_hooks.render import search, sources

SOURCE_TEMPLATE = "docs_hooks/source.html"  # a source page's template, in the plugin's templates (see SourceNav)
# The templates Material renders a page's site navigation from (its site_nav block, in base.html); SourceNav is
# used only when all of them are Material's own.
NAVIGATION_TEMPLATES = (
    "base.html",
    "partials/nav.html",
    "partials/nav-item.html",
    "partials/logo.html",
    "partials/source.html",
    "partials/toc.html",
    "partials/toc-item.html",
)


class SourceNav:
    """The site navigation Material renders into every source page (in sidebars the page hides, shown in the
    drawer of a small screen), rendered once per build for all the source pages at one depth.

    A source page is in no section of the navigation, so the navigation marks none of its items as the
    page's. Between two source pages it differs only in what depends on where the page is: the links'
    relative paths, which are the same for two pages at the same depth (``base_url``) while no page of the
    navigation lies in the source pages' folder; the page's ``hide`` list; and its table of contents as
    Material's partials/toc.html shows it, which is a first heading's subheadings when that heading is the
    page's title (level 1): none on a source page. Those make the key. The plugin uses this only where every
    template the navigation is made from is Material's own (``material_navigation``)."""

    def __init__(self, nav) -> None:
        self._made: dict[tuple, str] = {}
        self._shared = not any(url.startswith(f"{sources.PREFIX}/") for url in _nav_urls(nav.items))
        self.pages = 0  # source pages that asked for their navigation in this build
        self.renders = 0  # and how many times it was rendered for them

    def for_page(self, page, base_url: str) -> Callable[[Callable[[], str]], str]:
        """What the page's template calls with the theme's own rendering of its navigation block."""
        toc = list(page.toc)
        shown = toc[0].children if toc and toc[0].level == 1 else toc  # what partials/toc.html lists
        key = (base_url if self._shared else page.url, repr(page.meta.get("hide")), repr(_toc(shown)))
        self.pages += 1

        def site_nav(render: Callable[[], str]) -> str:
            made = self._made.get(key)
            if made is None:
                made = self._made[key] = render()
                self.renders += 1
            return made

        return site_nav


def material_navigation(env) -> bool:
    """Whether every template Material renders the site navigation from is its own: not overridden by the
    theme's ``custom_dir`` (a main.html there may extend Material's, but not replace its site_nav block)."""
    import material  # type: ignore[import-untyped]
    from jinja2 import TemplateNotFound

    home = Path(material.__file__).resolve().parent / "templates"
    try:
        for name in NAVIGATION_TEMPLATES:
            _, filename, _ = env.loader.get_source(env, name)
            if filename is None or home not in Path(filename).resolve().parents:
                return False
        source, filename, _ = env.loader.get_source(env, "main.html")
    except TemplateNotFound:
        return False
    return filename is not None and (home in Path(filename).resolve().parents or "site_nav" not in source)


def _nav_urls(items) -> list[str]:
    """The URL of every page and link of the navigation, in its sections too."""
    urls = []
    for item in items:
        if getattr(item, "url", None) is not None:
            urls.append(item.url)
        urls.extend(_nav_urls(getattr(item, "children", None) or []))
    return urls


class SearchReading:
    """How Material's search plugin (version 9, whose reading of a page ``render.search`` follows) reads the
    pages: its on_page_context handler, wrapped. A page it read in an earlier build, with the same HTML and
    the same everything else it reads of a page, is not read again: the entries it made of it then go into
    its index as they were (``search.IndexedPages``). Any other page is handed over without its spans
    (``search.without_spans``), and put back once read; or as it is, when its spans cannot be taken out
    exactly, or it is one the search plugin leaves out of its index. A page the search plugin rewrote (it takes out attributes such as ``data-search-exclude``) is
    read again by every build."""

    def __init__(self, cache_dir: Path | None):
        self.cache_dir = cache_dir
        self.indexed = search.IndexedPages(cache_dir)

    def wrap(self, config) -> None:
        handlers = config.plugins.events.get("page_context", [])
        for i, handler in enumerate(handlers):
            search_plugin = getattr(handler, "__self__", None)
            # A search plugin turned off (its own `enabled: false`) reads no page: nothing to hand it.
            if search_plugin is not None and _is_material_search(search_plugin) and search_plugin.config.enabled:
                handlers[i] = self._reading(handler, search_plugin)

    def _reading(self, handler, search_plugin):
        version = installed_version("mkdocs-material")
        # The entries are what the search plugin makes of the page as it is; the release of docs_hooks that
        # took its spans out is named too, so that a later release does not keep a wrong reading.
        settings = [("docs-hooks", installed_version("docs-hooks"))]
        settings += sorted((k, repr(v)) for k, v in search_plugin.config.items())
        # It segments Chinese text when jieba is installed (its module's `jieba` is then not None).
        segments = getattr(sys.modules[type(search_plugin).__module__], "jieba", None) is not None
        settings.append(("jieba installed", repr(segments)))

        def on_page_context(context, *, page, config, nav):
            full = page.content
            if not full:
                return handler(context, page=page, config=config, nav=nav)
            meta = page.meta
            reads = (version, settings, page.url, repr(page.title), *map(repr, map(meta.get, _META)), _toc(page.toc))
            key = search.entries_key(full, reads)
            entries = search_plugin.search_index.entries
            found = self.indexed.get(key)
            if found is not None:  # it made these of the page below, and changed nothing else
                entries.extend(found)
                return None  # what its handler returns
            listed = meta.get("search") or {}
            # A page the search plugin leaves out of the index (a source page): it reads none of it, so the page
            # is handed as it is.
            light = None if isinstance(listed, dict) and listed.get("exclude") else search.without_spans(full)
            handed = full if light is None else light
            before = len(entries)
            page.content = handed
            try:
                result = handler(context, page=page, config=config, nav=nav)
            finally:
                read = page.content
                if light is not None:
                    page.content = full
            if light is not None and read != light:  # it rewrites more of a page than render.search knows of
                raise PluginError(
                    f"docs_hooks: {page.file.src_uri}: Material's search plugin (mkdocs-material {version}) changed "
                    "the page docs_hooks handed it without its spans, which docs_hooks cannot carry over to the "
                    "page; install another mkdocs-material 9 release, and report this with the version"
                )
            if result is None and read == handed:  # it only read the page
                self.indexed.add(key, entries[before:])
            return result

        return on_page_context

    def flush(self) -> None:
        """Keep what the search plugin made of the pages of this build."""
        self.indexed.flush()

    def close(self) -> None:
        self.indexed.close()


_META = ("title", "search", "tags")  # what Material's search plugin reads of a page's front matter


def _toc(toc) -> list:
    """A page's table of contents as plain data: the search plugin takes a section's link from it."""
    return [(item.id, item.url, item.title, item.level, _toc(item.children)) for item in toc]


def _is_material_search(plugin: object) -> bool:
    """Whether ``plugin`` is Material's search plugin of mkdocs-material 9, whose reading of a page
    ``render.search`` follows."""
    kind = type(plugin)
    named = (kind.__module__, kind.__name__) == ("material.plugins.search.plugin", "SearchPlugin")
    return named and installed_version("mkdocs-material").startswith("9.")

"""What the MkDocs plugin does only under Material for MkDocs: the site navigation of the source pages,
rendered once per depth (``SourceNav``, where the templates it is made from are Material's own:
``material_navigation``). How Material's search plugin reads the pages is ``plugin_search``.

``plugin.TracePlugin`` makes it from its events; it does not know the plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from docs_hooks.render import sources
from docs_hooks.search_reader import toc_items

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
        key = (base_url if self._shared else page.url, repr(page.meta.get("hide")), repr(toc_items(shown)))
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

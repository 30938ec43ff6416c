"""What the MkDocs plugin does only under Material for MkDocs (docs_hooks.plugin_material): the source pages'
navigation rendered once per depth, only where the templates it is made from are Material's own; and how
Material's search plugin reads the pages, not again when a page is as an earlier build read it, nothing when
the search plugin is turned off."""

from __future__ import annotations

import json
import re
from pathlib import Path

from docs_hooks.plugin_material import SourceNav, material_navigation

from .conftest import run_cli
from .test_search import MKDOCS_YML, PAGE, build


class _Item:
    def __init__(self, url: str | None, children: list | None = None, level: int = 1):
        self.url, self.children, self.level, self.title, self.id = url, children or [], level, url, url


class _Page:
    def __init__(self, url: str, toc: list):
        self.url, self.toc, self.meta = url, toc, {"hide": ["navigation", "toc"]}


def test_source_nav_renders_once_per_depth_and_table_of_contents_and_per_page_when_a_nav_page_is_among_them():
    nav = type("Nav", (), {"items": [_Item("index.html"), _Item(None, [_Item("ops/"), _Item("https://x.org/")])]})()
    shared = SourceNav(nav)
    made = []
    calls = [
        shared.for_page(_Page(url, toc), base)(lambda url=url: made.append(url) or f"nav of {url}")
        for url, toc, base in [
            ("source/src/a.py/", [_Item("#a")], "../../.."),  # its title: not listed by partials/toc.html
            ("source/src/b.py/", [_Item("#b")], "../../.."),
            ("source/src/pkg/c.py/", [_Item("#c")], "../../../.."),  # deeper
            ("source/src/d.py/", [_Item("#d", [_Item("#d-1", level=2)])], "../../.."),  # a subheading
        ]
    ]
    assert made == ["source/src/a.py/", "source/src/pkg/c.py/", "source/src/d.py/"]
    assert calls[1] == "nav of source/src/a.py/"
    assert (shared.pages, shared.renders) == (4, 3)

    nav.items.append(_Item("source/notes/"))  # a page of the navigation in the source pages' folder
    apart = SourceNav(nav)
    for url in ("source/src/a.py/", "source/src/b.py/"):
        apart.for_page(_Page(url, []), "../../..")(lambda: "nav")
    assert apart.renders == 2


def test_source_nav_is_used_only_where_the_templates_of_the_navigation_are_materials_own(tmp_path):
    import jinja2
    import material

    material_dir = str(Path(material.__file__).parent / "templates")

    def env(overrides: dict[str, str]):
        custom = tmp_path / f"custom{len(list(tmp_path.iterdir()))}"
        for name, text in overrides.items():
            (custom / name).parent.mkdir(parents=True, exist_ok=True)
            (custom / name).write_text(text)
        custom.mkdir(exist_ok=True)
        return jinja2.Environment(loader=jinja2.FileSystemLoader([str(custom), material_dir]))

    assert material_navigation(env({}))
    assert material_navigation(env({"main.html": '{% extends "base.html" %}{% block content %}x{% endblock %}'}))
    assert not material_navigation(env({"main.html": '{% extends "base.html" %}{% block site_nav %}{% endblock %}'}))
    assert not material_navigation(env({"partials/nav-item.html": "mine"}))
    assert not material_navigation(env({"base.html": "mine"}))
    assert not material_navigation(jinja2.Environment(loader=jinja2.FileSystemLoader([str(tmp_path)])))


TITLED = """\
---
title: {title}
tags: [{tag}]
---

## A section

Text and code:

```python
y = f(x)
```
"""


def test_a_page_the_search_plugin_read_in_an_earlier_build_is_not_read_again_and_indexed_the_same(make_project):
    root = make_project(
        {
            "mkdocs.yml": MKDOCS_YML,
            "docs/page.md": PAGE,
            "docs/titled.md": TITLED.format(title="One", tag="first"),
            "docs/prose.md": "# Prose\n\nJust text.\n",
            # The search plugin takes a valued data-search-... attribute out of the page: read by every build.
            "docs/rewritten.md": '# Rewritten\n\n<p data-search-exclude="yes">Hidden</p>\n',
        }
    )
    assert run_cli(root, "relock") == 0
    first, said = build(root, "on")
    assert re.search(r"lightened [1-9]\d* of", said), said

    again, said = build(root, "again")

    assert "lightened 0 of 1" in said, said  # every page's entries were found but the rewritten one's
    assert "data-search-exclude" not in (again / "rewritten/index.html").read_text(encoding="utf-8")
    for page in sorted(first.rglob("*.html")) + [first / "search/search_index.json"]:
        assert (again / page.relative_to(first)).read_bytes() == page.read_bytes(), page

    # The page's HTML stays the same, but the title and the tags its section is indexed with change.
    for title, tag in (("Two", "first"), ("Two", "second")):
        (root / "docs/titled.md").write_text(TITLED.format(title=title, tag=tag), encoding="utf-8")
        (kept, said), (off, _) = build(root, "kept"), build(root, "off")
        # That page's entries are made again from its parts kept (its HTML is the same), none of them read;
        # the rewritten one is handed whole, as every build hands it.
        assert "lightened 0 of 1" in said, said
        index = (kept / "search/search_index.json").read_bytes()
        assert index == (off / "search/search_index.json").read_bytes()
        titled = [d for d in json.loads(index)["docs"] if d["location"].startswith("titled/")]
        assert titled[0]["title"] == title and {d["location"]: d["tags"] for d in titled} == {
            "titled/": [tag],
            "titled/#a-section": [tag],
        }, titled


def test_a_search_plugin_turned_off_is_handed_nothing(make_project):
    config = MKDOCS_YML.replace("  - search\n", "  - search:\n      enabled: false\n")
    root = make_project({"mkdocs.yml": config, "docs/page.md": PAGE, "docs/prose.md": "# Prose\n"})
    assert run_cli(root, "relock") == 0

    site, said = build(root, "on")

    assert "lightened 0 of 0" in said, said
    assert not (site / "search/search_index.json").exists()

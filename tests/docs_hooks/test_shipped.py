"""Tests of docs_hooks.core.shipped: what a traced site ships besides its pages, and what every page links.

What users rely on: every stylesheet and script a page links (``stylesheets()``, ``scripts()``, which the
MkDocs plugin adds to ``extra_css`` and ``extra_javascript`` and ``python -m docs_hooks pages`` prints) is a
file the site ships (``asset_paths``, which the plugin adds to the site's files and ``pages`` writes into the
docs folder), under ``assets/docs_hooks/``; the generator's own files exist in the package; with KaTeX
installed its stylesheet and every font that stylesheet loads ship too, at the paths the stylesheet expects.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import docs_hooks
from docs_hooks.core import shipped
from docs_hooks.core.shipped import SITE_ASSETS, asset_paths, scripts, stylesheets
from docs_hooks.run.math import MathRenderer

from .conftest import REPO

PACKAGE_ASSETS = Path(docs_hooks.__file__).resolve().parent / "assets"  # as the wheel packs it: assets/*
KATEX_DIST = REPO / "node_modules" / "katex" / "dist"


@pytest.fixture(scope="module")
def katex_assets() -> list[tuple[str, Path]]:
    """KaTeX's stylesheet and fonts as the build ships them (this repository's node_modules, see make setup)."""
    if not (KATEX_DIST / "katex.min.css").is_file():
        pytest.fail("KaTeX is not installed: run 'make setup' (npm ci)")
    return MathRenderer(REPO).assets(f"{SITE_ASSETS}/katex")


def test_every_stylesheet_and_script_of_the_generator_is_a_file_of_the_package():
    own = stylesheets()[1:] + scripts()

    assert own  # the site's look and its widgets come from these
    for uri in own:
        assert uri.startswith(f"{SITE_ASSETS}/")
        assert (PACKAGE_ASSETS / uri.removeprefix(f"{SITE_ASSETS}/")).is_file(), uri
    assert {u.rsplit("/", 1)[1] for u in stylesheets()[1:]} == {p.name for p in PACKAGE_ASSETS.glob("*.css")}
    assert {u.rsplit("/", 1)[1] for u in scripts()} == {p.name for p in PACKAGE_ASSETS.glob("*.js")}
    assert shipped.ASSETS == PACKAGE_ASSETS


def test_katexs_stylesheet_is_linked_first_so_that_the_generators_own_rules_come_after_it():
    sheets = stylesheets()

    assert sheets[0] == f"{SITE_ASSETS}/katex/katex.min.css"
    assert "trace.css" in {s.rsplit("/", 1)[1] for s in sheets[1:]}
    assert len(set(sheets)) == len(sheets)
    assert all(s.endswith(".css") for s in sheets) and all(s.endswith(".js") for s in scripts())


def test_without_katex_the_site_ships_the_generators_own_files_each_at_its_name():
    paths = asset_paths([])

    assert paths == [
        (f"{SITE_ASSETS}/{p.name}", p) for p in sorted(PACKAGE_ASSETS.iterdir()) if p.suffix in (".css", ".js")
    ]
    assert all(path.is_file() for _, path in paths)
    assert {uri for uri, _ in paths} == set(stylesheets()[1:] + scripts())


def test_the_math_assets_come_after_the_generators_own_as_given():
    math = [(f"{SITE_ASSETS}/katex/katex.min.css", Path("/x/katex.min.css")), ("elsewhere/f.woff2", Path("/x/f"))]

    paths = asset_paths(math)

    assert paths[-2:] == math
    assert paths[:-2] == asset_paths([])


def test_with_katex_its_stylesheet_and_fonts_ship_from_its_dist_folder(katex_assets):
    paths = dict(asset_paths(katex_assets))

    assert paths[f"{SITE_ASSETS}/katex/katex.min.css"] == KATEX_DIST / "katex.min.css"
    fonts = {uri: path for uri, path in paths.items() if uri.startswith(f"{SITE_ASSETS}/katex/fonts/")}
    assert {path.name for path in fonts.values()} == {f.name for f in (KATEX_DIST / "fonts").iterdir()}
    assert all(uri == f"{SITE_ASSETS}/katex/fonts/{path.name}" for uri, path in fonts.items())
    assert all(path.is_file() for path in paths.values())
    assert len(paths) == len(asset_paths(katex_assets))  # no two files at one site path


def test_with_katex_every_stylesheet_and_script_a_page_links_is_shipped(katex_assets):
    shipped_uris = {uri for uri, _ in asset_paths(katex_assets)}

    assert set(stylesheets()) | set(scripts()) <= shipped_uris


def test_every_font_katexs_stylesheet_loads_is_shipped_beside_it(katex_assets):
    paths = dict(asset_paths(katex_assets))
    css = paths[f"{SITE_ASSETS}/katex/katex.min.css"].read_text(encoding="utf-8")
    loaded = set(re.findall(r"url\(([^)]+)\)", css))

    assert loaded and all(u.startswith("fonts/") for u in loaded)
    missing = sorted(u for u in loaded if f"{SITE_ASSETS}/katex/{u}" not in paths)
    assert missing == []

"""Tests of docs_hooks.extension: the Python-Markdown extension expands a page inside Python-Markdown, its HTML kept
in the htmlStash; under Zensical, which runs extensions but no plugins, this very site builds through it.

The Zensical build runs on a copy of the project (its docs folder gets what ``python -m docs_hooks pages``
writes), with the cache the tests' own builds left, so it records nothing again.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import markdown
import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.session import Session
from docs_hooks.extension import TraceExtension

from .conftest import FWD_ENTRY, REPO

MEAN = "mu = X.mean(axis=-1, keepdims=True)"
PAGE = (
    FWD_ENTRY + f"\n```trace-equation\nid: mean\ntitle: Mean\ntex: \\mu = x\ncode: {MEAN}\n```\n\nProse $x_i$ here.\n"
)


def converted(root: Path, text: str, page_of) -> tuple[str, markdown.Markdown]:
    session = Session(root)
    session.refresh()
    try:
        md = markdown.Markdown(extensions=["attr_list", "md_in_html", TraceExtension(session, page_of)])
        return md.convert(text), md
    finally:
        session.close()


def test_a_page_is_expanded_inside_python_markdown_and_its_html_kept_in_the_html_stash(make_project):
    root = make_project({"docs/page.md": PAGE})

    out, md = converted(root, PAGE, lambda md: ("docs/page.md", 0))

    assert "Computed at" in out and '<span class="katex">' in out
    assert "wzxhzdk" not in out  # every placeholder put back
    stashed = [str(h) for h in md.htmlStash.rawHtmlBlocks]
    assert any('<div class="trace-math">' in h for h in stashed)  # the HTML Markdown never read
    assert any(h.startswith('<span class="katex">') for h in stashed)  # a formula inside a line


def test_without_a_front_end_that_names_the_page_the_extension_says_how_to_use_it(make_project):
    root = make_project({"docs/page.md": PAGE})

    with pytest.raises(TraceError, match="cannot tell which page it is converting: use it through the MkDocs"):
        converted(root, PAGE, lambda md: None)


def test_named_in_mkdocs_yml_under_mkdocs_the_plugin_puts_its_own_in_its_place(make_project):
    """The site's mkdocs.yml names the extension for Zensical; MkDocs, with the plugin, expands each page once."""
    from .conftest import run_cli
    from .test_cli import MKDOCS_YML, mkdocs_build

    config = MKDOCS_YML.replace("  - pymdownx.highlight\n", "  - pymdownx.highlight\n  - docs_hooks.extension\n")
    root = make_project({"mkdocs.yml": config, "docs/page.md": PAGE})
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    built = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert built.count("Computed at") == 1


# ----------------------------------------------------------------------------- this site, built by Zensical

COPY = ["src", "tests", "docs", "spec", "mkdocs.yml", "pyproject.toml", "package.json"]


@pytest.fixture(scope="module")
def zensical_site(tmp_path_factory) -> Path:
    """This site built by Zensical 0.0.73 from a copy of the project: ``pages``, then ``zensical build``."""
    if shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir():
        pytest.fail("the site's math needs node and KaTeX: run 'make setup' (npm ci)")
    copy = tmp_path_factory.mktemp("zensical") / "project"
    copy.mkdir()
    for name in COPY:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__", "site"))
        else:
            shutil.copy2(src, copy / name)
    (copy / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
    if (REPO / ".cache").is_dir():
        shutil.copytree(REPO / ".cache", copy / ".cache")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for cmd in (["-m", "docs_hooks", "pages"], ["-m", "zensical", "build", "--clean"]):
        done = subprocess.run([sys.executable, *cmd], cwd=copy, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    return copy


def page_html(site: Path, name: str) -> str:
    return (site / "site" / name / "index.html").read_text(encoding="utf-8")


def test_zensical_builds_the_layer_norm_page_with_katex_math(zensical_site):
    built = page_html(zensical_site, "layer-norm")

    assert built.count('<span class="katex">') > 20
    assert '<div class="trace-math"><span class="katex-display">' in built
    assert "Trace error" not in built


def test_zensical_links_each_computed_at_line_to_the_true_line_of_the_code(zensical_site):
    built = page_html(zensical_site, "layer-norm")
    source = (zensical_site / "src" / "ops.py").read_text(encoding="utf-8").splitlines()
    [true_line] = [n for n, line in enumerate(source, 1) if MEAN in line]

    computed = re.search(r"<h4[^>]*id=\"eq-ln-mean\".*?Computed at (<a .*?</a>)", built, re.S).group(1)

    assert f'href="../source/src/ops.py/#L{true_line}"' in computed
    assert f"<code>ops.py:{true_line}</code>" in computed
    ops_page = (zensical_site / "site" / "source" / "src" / "ops.py" / "index.html").read_text(encoding="utf-8")
    assert f'id="L{true_line}"' in ops_page  # the line the link points at is on the source page


def test_zensical_shows_the_worked_example_with_the_numbers_recorded_from_its_test(zensical_site):
    built = page_html(zensical_site, "layer-norm")
    table = re.search(r'<table class="trace-table trace-example-steps">.*?</table>', built, re.S).group(0)
    rows = [
        tuple(html.unescape(c) for c in r)
        for r in re.findall(r"<td>(.*?)</td><td><code>(.*?)</code></td><td><code>(.*?)</code>", table)
    ]

    # tests/test_ops.py::test_layer_norm_worked_example passes x = [[1, 2, 3, 6]]: mean 3, variance 3.5
    assert rows[:2] == [("Mean", "mu", "[[3.0000]]"), ("Variance", "var", "[[3.5000]]")]
    assert rows[2] == ("Inverse standard deviation", "s", "[[0.5345]]")


def test_zensical_builds_the_traceability_matrix_with_a_row_per_equation(zensical_site):
    built = page_html(zensical_site, "traceability")

    matrix = re.search(r'<table class="trace-table trace-matrix">.*?</table>', built, re.S).group(0)
    rows = re.findall(r"<tr><td><a href=\"([^\"]+)\"", matrix)
    assert len(rows) > 50
    assert "../layer-norm/#eq-ln-mean" in rows  # a row links to its equation on its page

    settings = load_settings(zensical_site)
    assert (zensical_site / "site" / settings.spec_pdf).is_file()  # the specification the rows cite

"""Tests of docs_hooks.kinds.source: the ``trace-source`` block, a file of the code as a page of the site.

What users rely on: the block names a file of the code index, and anything else is refused with a message at
the page's line that suggests the closest file; its page shows the file as it is now, links to it on the
repository host, and beside each cited line the entries and equations of every page of the site that cite it,
linked to where they are; ``inputs()``, under which a source page is kept across builds, changes exactly when
the page would: when the file's text, or what cites it and where, changes, and not when anything else does.
How the lines and the citations are laid out is render.sources' (test_sources.py); when a kept page is rendered
again is core.kept's (test_kept.py).
"""

from __future__ import annotations

import html
import re

import pytest

from docs_hooks.base.settings import load_settings
from docs_hooks.core.page import BlockPart
from docs_hooks.core.site import make_build
from docs_hooks.kinds.source import SourceKind, SourcePlan

from .conftest import BASE_FILES, BWD_ENTRY, FWD_ENTRY, OPS, REPO, build_site, write_tree

SOURCE = "```trace-source\nfile: {file}\n```\n"
SHIFT = (
    "```trace-equation\nid: shift\ntitle: Gradient of the shift\ntex: d\\beta = \\sum_t dY_t\n"
    "code: dbeta = dY.sum(axis=0)\n```\n"
)
PAGES = {
    "docs/page.md": "# Forward\n\n" + FWD_ENTRY,
    "docs/guide/backward.md": "# Backward\n\n" + BWD_ENTRY + "\n" + SHIFT,
    "docs/ops-source.md": "# ops.py\n\n" + SOURCE.format(file="src/ops.py"),
    "docs/model-source.md": SOURCE.format(file="src/model.py"),
}


def write_project(root, files):
    """The tiny project with ``files`` (pages) added, KaTeX borrowed from this repository."""
    write_tree(root, {**BASE_FILES, **files})
    if (REPO / "node_modules").is_dir() and not (root / "node_modules").exists():
        (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
    return root


def cites_by_line(html: str) -> dict[int, str]:
    """Line number -> the links beside it on a source page ('' when nothing cites it), one table row at a time."""
    rows = re.findall(r'<tr id="L(\d+)"[^>]*>(.*?)</tr>', html)
    return {int(n): "".join(re.findall(r'<td class="trace-src-cites">(.*?)</td>', row)) for n, row in rows}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site of PAGES, built once: every page expanded."""
    return build_site(write_project(tmp_path_factory.mktemp("source") / "proj", PAGES))


# ----------------------------------------------------------------------------- what the block accepts


@pytest.mark.parametrize(
    ("file", "message"),
    [
        (
            "src/opz.py",
            "docs/bad.md:4: 'src/opz.py' is not a file of the code index; did you mean 'src/ops.py' or "
            "'src/model.py' or 'tests/test_ops.py'?; name a Python file of the source or tests roots, from the "
            "project root",
        ),
        (
            "pyproject.toml",  # a file of the project, but not of the code
            "docs/bad.md:4: 'pyproject.toml' is not a file of the code index; name a Python file of the source or "
            "tests roots, from the project root",
        ),
    ],
)
def test_a_file_that_is_not_in_the_code_index_is_refused_at_the_line_of_the_field(make_project, file, message):
    root = make_project({"docs/bad.md": "# Bad\n\n" + SOURCE.format(file=file)})  # 'file:' on line 4

    result = build_site(root)

    assert [str(p) for p in result.problems] == [message]
    assert "trace-src-table" not in result.pages["docs/bad.md"].markdown


@pytest.mark.parametrize("file", ["../src/ops.py", "/etc/passwd"])
def test_a_file_outside_the_project_root_is_refused_and_nothing_is_read(make_project, file):
    root = make_project({"docs/bad.md": "# Bad\n\n" + SOURCE.format(file=file)})

    result = build_site(root)

    [problem] = result.problems
    assert problem.path == "docs/bad.md"
    assert problem.message == (
        f"field 'file' of block 'trace-source': '{file}' is outside the project root; a page names only the "
        "project's files: write the path from the project root, with no leading '/' and no '..' above it"
    )
    assert "trace-src-table" not in result.pages["docs/bad.md"].markdown


def test_the_plan_holds_the_file_as_it_is_now_and_its_link_on_the_repository_host(make_project):
    root = make_project({"docs/ops-source.md": SOURCE.format(file="src/ops.py")})
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    try:
        plan = build.plan("docs/ops-source.md", SOURCE.format(file="src/ops.py"))
    finally:
        build.close()

    [part] = [p for p in plan.parts if isinstance(p, BlockPart)]
    assert isinstance(part.kind, SourceKind)
    assert part.plan == SourcePlan(
        "docs/ops-source.md", "src/ops.py", OPS, "https://example.com/repo/blob/abc123/src/ops.py"
    )
    assert plan.reads_site  # it shows what other pages cite
    assert plan.refs.uses == []  # a source page reviews nothing: nothing of it goes into the lock


# ----------------------------------------------------------------------------- the page


def test_a_source_page_shows_every_line_of_the_file_and_links_to_the_repository_host(site):
    markdown = site.pages["docs/ops-source.md"].markdown

    assert site.problems == []
    assert markdown.startswith(
        '# ops.py\n\n<p><a href="https://example.com/repo/blob/abc123/src/ops.py">On the repository host</a></p>\n'
    )
    rows = re.findall(r'<tr id="L(\d+)"[^>]*>.*?<td class="trace-src-code"><code>(.*?)</code></td>', markdown)
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1))
    assert [html.unescape(re.sub(r"<[^>]+>", "", code)) for _, code in rows] == OPS.split("\n")  # the file, as is


def test_a_source_page_lists_the_entries_and_equations_of_every_page_that_cite_the_file(site):
    markdown = site.pages["docs/ops-source.md"].markdown
    cites = {line: links for line, links in cites_by_line(markdown).items() if links}

    assert cites == {
        6: '<a href="../page/#layer-norm-forward">Layer norm forward</a>',  # an entry: its function's first line
        18: '<a href="../guide/backward/#layer-norm-backward">Layer norm backward</a>',
        22: '<a href="../guide/backward/#eq-shift">Gradient of the shift</a>',  # an equation: its statement
    }
    assert "<p>3 entries and equations cite lines of this file; each cited line lists them.</p>" in markdown


def test_a_file_that_nothing_cites_says_so(site):
    markdown = site.pages["docs/model-source.md"].markdown

    assert "<p>No entry or equation cites this file.</p>" in markdown
    assert not any(cites_by_line(markdown).values())


# ----------------------------------------------------------------------------- what the page is made from


def source_inputs(tmp_path, pages: dict[str, str], ops: str = OPS, model: str | None = None) -> str:
    """``inputs()`` of the source page of src/ops.py, in a fresh build of the tiny project with ``pages``."""
    files = {**PAGES, **pages, "src/ops.py": ops}
    if model is not None:
        files["src/model.py"] = model
    root = write_project(tmp_path / f"proj{len(list(tmp_path.iterdir()))}", files)
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    try:
        plan = build.plan("docs/ops-source.md", files["docs/ops-source.md"])
        build.site_entries()  # every other page, read from its file
        [part] = [p for p in plan.parts if isinstance(p, BlockPart)]
        return part.kind.inputs(part.plan, build.results, build.links)
    finally:
        build.close()


@pytest.fixture(scope="module")
def base_inputs(tmp_path_factory):
    return source_inputs(tmp_path_factory.mktemp("inputs"), {})


def test_the_inputs_are_the_same_in_another_build_of_the_same_project(tmp_path, base_inputs):
    assert source_inputs(tmp_path, {}) == base_inputs


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"ops": OPS + "\n# a comment at the end\n"}, id="the file's text"),
        pytest.param(
            {"pages": {"docs/page.md": PAGES["docs/page.md"].replace("Layer norm forward", "The forward pass")}},
            id="a citing entry's title",
        ),
        pytest.param(
            {"pages": {"docs/guide/backward.md": PAGES["docs/guide/backward.md"].replace("id: shift", "id: dbeta")}},
            id="a citing equation's anchor",
        ),
        pytest.param(
            {"pages": {"docs/more.md": "# More\n\n" + FWD_ENTRY.replace("Layer norm forward", "Again")}},
            id="a new page that cites the file",
        ),
        pytest.param({"pages": {"docs/page.md": "# Forward\n\nNo entry now.\n"}}, id="a page that no longer cites it"),
        pytest.param(
            {"ops": OPS.replace("\n\ndef layer_norm_forward", "\n\nEPS = 1e-5\n\n\ndef layer_norm_forward")},
            id="the cited lines moving",
        ),
    ],
)
def test_the_inputs_change_when_the_file_or_what_cites_it_changes(tmp_path, base_inputs, change):
    assert source_inputs(tmp_path, change.get("pages", {}), change.get("ops", OPS)) != base_inputs


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"model": BASE_FILES["src/model.py"] + "\n\ndef more():\n    return 1\n"}, id="another file"),
        pytest.param(
            {"pages": {"docs/page.md": "# Forward\n\nA paragraph above the entry.\n\n" + FWD_ENTRY}},
            id="prose of a citing page",
        ),
        pytest.param(
            {
                "pages": {
                    "docs/other.md": "# Other\n\n```trace-entry\ntitle: Build\nfunction: model.build\n"
                    "status: implemented\n```\n"
                }
            },
            id="a new page that cites another file",
        ),
        pytest.param({"pages": {"docs/index.md": "# Home\n\nProse only.\n"}}, id="a new page that cites nothing"),
    ],
)
def test_the_inputs_do_not_change_when_anything_else_does(tmp_path, base_inputs, change):
    assert source_inputs(tmp_path, change.get("pages", {}), model=change.get("model")) == base_inputs


def test_a_file_outside_the_project_root_is_refused_at_the_line_of_the_field(make_project):
    root = make_project({"docs/bad.md": "# Bad\n\n" + SOURCE.format(file="../src/ops.py")})

    [problem] = build_site(root).problems

    assert (problem.path, problem.line) == ("docs/bad.md", 4)

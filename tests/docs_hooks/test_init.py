"""``python -m docs_hooks init`` (docs_hooks.init): from a project with no site to a strict build.

Each test writes a tiny project of its own, runs init through the command line,
and where it says the site builds, builds it with MkDocs in a child process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_hooks.init import add_plugin

from .conftest import run_cli, write_tree
from .test_cli import mkdocs_build

CORE = '''\
"""Scaling and shifting."""

import numpy as np


def _helper(x):
    return x


def scale(x, k=2.0):
    """Multiply by k."""
    y = np.asarray(x) * k
    return y


def shift(x):
    """Add one."""
    out = np.asarray(x) + 1
    return out
'''

TEST_CORE = """\
from {module} import shift


def test_shift_adds_one():
    assert shift(1) == 2
"""

PYPROJECT = '[project]\nname = "tiny"\nversion = "0.1"\n'

LAYOUTS = {
    "src": {
        "pyproject.toml": PYPROJECT,
        "src/tinypkg/__init__.py": "",
        "src/tinypkg/core.py": CORE,
        "tests/test_core.py": TEST_CORE.format(module="tinypkg.core"),
    },
    "package": {
        "pyproject.toml": PYPROJECT,
        "tinypkg/__init__.py": "",
        "tinypkg/core.py": CORE,
        "tinypkg/extra.py": "def twice(x):\n    return 2 * x\n",
        "tests/test_core.py": TEST_CORE.format(module="tinypkg.core"),
        "setup.py": "from setuptools import setup\n\nsetup()\n",
    },
    "root": {
        "pyproject.toml": PYPROJECT,
        "core.py": CORE,
        "test_core.py": TEST_CORE.format(module="core"),
    },
}

# What init writes into pyproject.toml for each layout, and the function its starter page explains.
SECTIONS = {
    "src": ('source_root = "src"\ntests_root = "tests"\ndocs_dir = "docs"\n', "tinypkg.core.shift"),
    # the folder above the package: modules are tinypkg.core, as the tests import them, so a test calls shift
    "package": ('source_root = "."\ntests_root = "tests"\ndocs_dir = "docs"\n', "tinypkg.core.shift"),
    "root": ('source_root = "."\ntests_root = "."\ndocs_dir = "docs"\n', "core.shift"),
}


def init(root: Path, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run_cli(root, "init")
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the project except what builds make again (the cache, the built site)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not {".cache", "site"} & set(p.relative_to(root).parts)
    }


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_init_then_a_strict_build_passes_in_each_layout(tmp_path, capsys, layout):
    root = write_tree(tmp_path / layout, LAYOUTS[layout])

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    section, function = SECTIONS[layout]
    assert (root / "pyproject.toml").read_text() == PYPROJECT + "\n[tool.docs_hooks]\n" + section
    assert "init: mkdocs.yml: wrote a minimal one (Material theme, plugins: search and docs_hooks)\n" in out
    assert "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n" in out
    assert out.endswith(
        "Next:\n"
        "  mkdocs serve                 the site at http://127.0.0.1:8000/, rebuilt on every edit\n"
        "  mkdocs build --strict        the site in site/, failing on any warning\n"
        "  python -m docs_hooks check   what CI runs: fails on a broken reference or code changed "
        "since reviewed\n"
        "After writing a page, or reviewing one against changed code: python -m docs_hooks relock\n"
    )
    assert "make " not in out + err
    page = (root / "docs/index.md").read_text()
    if function is not None:  # the first public function a test calls, not the untested one above it
        assert f"function: {function}\nstatus: implemented\n" in page
        assert f"code: '{function}: out = np.asarray(x) + 1'\n" in page

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/index.html").read_text(encoding="utf-8")
    status = "implemented" if "status: implemented" in page else "illustrative"
    assert f'<span class="trace-badge trace-badge--{status}"' in html
    assert 'id="{}-implementation"'.format(page.split("\nid: ")[1].split("\n")[0]) in html


def test_without_material_init_writes_mkdocs_own_theme_and_the_site_builds_with_it(tmp_path, capsys, monkeypatch):
    """The package does not need Material for MkDocs: a project without it gets a mkdocs.yml that builds."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "material" else real(name, *a))
    root = write_tree(tmp_path / "p", LAYOUTS["src"])

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert "theme:\n  name: mkdocs\n" in (root / "mkdocs.yml").read_text()
    assert (
        "init: mkdocs.yml: wrote a minimal one (MkDocs' own theme, plugins: search and docs_hooks); for "
        "Material for MkDocs, pip install mkdocs-material and set theme: name: material\n"
    ) in out
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trace-badge" in (root / "site/index.html").read_text(encoding="utf-8")


def test_the_starter_page_of_the_src_layout(tmp_path, capsys):
    root = write_tree(tmp_path / "p", LAYOUTS["src"])

    code, out, _ = init(root, capsys)

    assert code == 0
    assert (root / "docs/index.md").read_text() == (
        "# tiny\n\n"
        "A first traced entry, written by `python -m docs_hooks init`. The build fills in the listing of "
        "`tinypkg.core.shift` with its real line numbers, where it is called and which tests run it. "
        "Its status is implemented: a test calls it.\n\n"
        "```trace-entry\nid: shift\ntitle: tinypkg.core.shift\nfunction: tinypkg.core.shift\nstatus: implemented\n```\n"
        "\nIts first statement, as the code has it now:\n\n"
        "```trace-excerpt\ncode: 'tinypkg.core.shift: out = np.asarray(x) + 1'\n```\n"
    )
    assert (
        "init: docs/index.md: a starter page with an entry for tinypkg.core.shift (implemented: called by "
        "test_core.test_shift_adds_one) and an excerpt of its first statement\n"
    ) in out
    assert (root / "mkdocs.yml").read_text().startswith("site_name: tiny\ndocs_dir: docs\n\ntheme:\n  name: material\n")


def test_with_no_test_calling_any_function_the_first_public_one_is_illustrative(tmp_path, capsys):
    files = {k: v for k, v in LAYOUTS["src"].items() if not k.startswith("tests/")}
    root = write_tree(tmp_path / "p", files)

    code, out, _ = init(root, capsys)

    assert code == 0
    page = (root / "docs/index.md").read_text()
    assert "function: tinypkg.core.scale\nstatus: illustrative\n" in page  # _helper comes first, but is private
    assert "code: 'tinypkg.core.scale: y = np.asarray(x) * k'\n" in page
    assert (
        "init: docs/index.md: a starter page with an entry for tinypkg.core.scale (illustrative: no test calls it)"
        in out
    )
    assert (root / "pyproject.toml").read_text().endswith('source_root = "src"\ndocs_dir = "docs"\n')  # no tests_root


USER_MKDOCS = """\
# The site of tiny
site_name: Tiny docs
theme:
  name: material
  features: [navigation.tabs]   # kept as written

plugins:
  - search:
      lang: en
  # more plugins later
  - tags

markdown_extensions:
  - pymdownx.emoji:
      emoji_generator: !!python/name:material.extensions.emoji.to_svg
nav:
  - Home: index.md
"""


def test_an_existing_mkdocs_yml_gets_one_plugin_line_and_nothing_else(tmp_path, capsys):
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "mkdocs.yml": USER_MKDOCS})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (root / "mkdocs.yml").read_text() == USER_MKDOCS.replace("  - tags\n", "  - tags\n  - docs_hooks\n")
    assert "init: mkdocs.yml: added docs_hooks to plugins:, the rest of the file as it was\n" in out
    assert (
        "init: mkdocs.yml: the generated pages also use these Markdown extensions, which it does not name: "
        "attr_list, md_in_html, admonition, tables, toc, pymdownx.superfences, pymdownx.highlight; "
        "add them under markdown_extensions:\n"
    ) in out


def test_an_existing_mkdocs_yml_with_no_plugins_list_keeps_search(tmp_path, capsys):
    text = "site_name: Tiny\ntheme:\n  name: material\nmarkdown_extensions:\n  - attr_list\n  - md_in_html\n"
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "mkdocs.yml": text})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (root / "mkdocs.yml").read_text() == text + "plugins:\n  - search\n  - docs_hooks\n"
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "before, after",
    [
        ("plugins:\n- search\nnav:\n- index.md\n", "plugins:\n- search\n- docs_hooks\nnav:\n- index.md\n"),
        ("plugins:\n    search: {}\n\n# end\n", "plugins:\n    search: {}\n    docs_hooks: {}\n\n# end\n"),
        ("plugins:\n  - search\r\n", "plugins:\n  - search\r\n  - docs_hooks\r\n"),
        ("plugins:\n\nsite_name: x", "plugins:\n  - search\n  - docs_hooks\n\nsite_name: x"),
        ("site_name: x", "site_name: x\nplugins:\n  - search\n  - docs_hooks\n"),
        ("plugins:\n  - search\n  - docs_hooks:\n      root: .\n", None),
    ],
)
def test_add_plugin_edits_the_text_in_each_block_form(before, after):
    assert add_plugin(before) == after


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "site_name: x\nplugins: [search]\n",
            "error: mkdocs.yml:2: plugins: is written on one line ('plugins: [search]'); write it as one plugin a line, "
            "or add docs_hooks to it by hand\n",
        ),
        (
            "site_name: {{ name }}\nplugins:\n  - search\n",
            "error: mkdocs.yml:1: the file looks like a template ('site_name: {{ name }}'); "
            "add '- docs_hooks' under plugins: by hand\n",
        ),
        (
            "INHERIT: ../base.yml\nsite_name: x\n",
            "error: mkdocs.yml:1: inherits its settings from '../base.yml' (INHERIT) and has no plugins: of its own; "
            "add '- docs_hooks' to the plugins: of the file that lists them\n",
        ),
        (
            "INHERIT: base.yml\nplugins:\n  - search\n",
            "error: mkdocs.yml:1: INHERIT names 'base.yml', which does not exist; fix INHERIT, then run init again\n",
        ),
        (
            "site_name: x\nplugins:\n  - search\n  bad: [\n",
            "error: mkdocs.yml:4: cannot read it as YAML (expected <block end>, but found '?'); fix it, then run init again\n",
        ),
    ],
)
def test_a_mkdocs_yml_it_cannot_edit_safely_is_refused_and_nothing_is_written(tmp_path, capsys, text, message):
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "mkdocs.yml": text})
    before = snapshot(root)

    code, out, err = init(root, capsys)

    assert code == 2
    assert err == message
    assert out == ""
    assert snapshot(root) == before


def test_a_mkdocs_yml_that_inherits_but_lists_plugins_of_its_own_gets_the_line_and_builds(tmp_path, capsys):
    # MkDocs replaces the inherited plugins list with the file's own, so the plugin goes in the file's; the
    # docs folder and the Markdown extensions are read through INHERIT, as MkDocs reads them.
    base = "site_name: Tiny\ndocs_dir: pages\ntheme:\n  name: material\nplugins:\n  - search\nmarkdown_extensions:\n"
    base += "".join(f"  - {e}\n" for e in ("attr_list", "md_in_html", "admonition", "tables", "toc"))
    text = "INHERIT: config/base.yml\nplugins:\n  - search\nmarkdown_extensions:\n  - attr_list\n"
    text += "  - md_in_html\n  - admonition\n  - tables\n  - toc\n  - pymdownx.superfences\n  - pymdownx.highlight\n"
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "config/base.yml": base, "mkdocs.yml": text})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (root / "mkdocs.yml").read_text() == text.replace("  - search\n", "  - search\n  - docs_hooks\n")
    assert "init: mkdocs.yml: added docs_hooks to plugins:, the rest of the file as it was\n" in out
    assert "Markdown extensions" not in out
    assert 'docs_dir = "pages"\n' in (root / "pyproject.toml").read_text()
    assert (root / "pages/index.md").is_file()
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_existing_tool_docs_hooks_section_is_not_touched(tmp_path, capsys):
    pyproject = PYPROJECT + '\n[tool.docs_hooks]\nsource_root = "src"\nrepo_url = "https://example.com/tiny"\n'
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "pyproject.toml": pyproject})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (root / "pyproject.toml").read_text() == pyproject
    assert (
        "init: pyproject.toml: [tool.docs_hooks] exists and was left as it is; init would have written:\n"
        "    [tool.docs_hooks]\n"
        '    source_root = "src"\n'
        '    tests_root = "tests"\n'
        '    docs_dir = "docs"\n'
    ) in out
    assert "function: tinypkg.core.shift\n" in (root / "docs/index.md").read_text()  # read with the project's settings


def test_an_unreadable_pyproject_is_named_at_its_line(tmp_path, capsys):
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "pyproject.toml": "[project]\nname = \n"})

    code, out, err = init(root, capsys)

    assert code == 2
    assert err == (
        "error: pyproject.toml:2: cannot read it as TOML (Invalid value (at line 2, column 8)); "
        "fix it, then run init again\n"
    )
    assert not (root / "mkdocs.yml").exists()


def test_running_init_twice_changes_nothing_the_second_time(tmp_path, capsys):
    root = write_tree(tmp_path / "p", LAYOUTS["src"])
    assert init(root, capsys)[0] == 0
    first = snapshot(root)

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert snapshot(root) == first
    assert out.startswith(
        "init: mkdocs.yml: kept as it is; it names docs_hooks under plugins: already\n"
        "init: pyproject.toml: [tool.docs_hooks] exists and was left as it is\n"
        "init: docs/index.md: kept as it is\n"
        "init: docs/trace.lock: kept as it is\n"
        "Next:\n"
    )


def test_the_docs_folder_named_in_mkdocs_yml_is_the_one_written_to_the_settings(tmp_path, capsys):
    text = "site_name: Tiny\ndocs_dir: pages\nplugins:\n  - search\n"
    helpers = {f"pages/examples/helper_{n}.py": "def f():\n    pass\n" for n in range(3)}  # the site's, not the code
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], **helpers, "mkdocs.yml": text})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (
        (root / "pyproject.toml")
        .read_text()
        .endswith('source_root = "src"\ntests_root = "tests"\ndocs_dir = "pages"\nlock_path = "pages/trace.lock"\n')
    )
    assert (root / "pages/index.md").is_file() and (root / "pages/trace.lock").is_file()
    assert not (root / "docs").exists()


def test_a_package_at_the_top_is_named_from_the_project_root_and_the_other_code_folders_are_left_out(tmp_path, capsys):
    files = {
        **LAYOUTS["package"],
        "tinypkg/deep/__init__.py": "from .layers import *  # noqa: F403\n",
        "tinypkg/deep/layers.py": '__all__ = ["half"]\n\n\ndef half(x):\n    out = x / 2\n    return out\n',
        "tests/test_deep.py": "def test_half():\n    from tinypkg.deep import half\n\n    assert half(2) == 1\n",
        "examples/demo.py": "from tinypkg.core import shift\n\n\ndef main():\n    shift(1)\n",
    }
    root = write_tree(tmp_path / "p", files)

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (
        (root / "pyproject.toml")
        .read_text()
        .endswith(
            '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\ndocs_dir = "docs"\nexclude = ["examples"]\n'
        )
    )
    assert (
        "init: docs/index.md: a starter page with an entry for tinypkg.core.shift (implemented: called by "
        "test_core.test_shift_adds_one) and an excerpt of its first statement\n"
    ) in out
    assert run_cli(root, "check") == 0
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr


SPHINX = {
    "docs/conf.py": 'project = "tiny"\nextensions = ["sphinx.ext.autodoc"]\n',
    "docs/index.rst": "Tiny\n====\n\n.. toctree::\n\n   api\n",
    "docs/api.rst": "API\n===\n\n.. automodule:: tinypkg.core\n",
    "docs/guide/usage.rst": "Usage\n=====\n",
    "docs/Makefile": "html:\n\tsphinx-build . _build\n",
    "docs/README.md": "The docs are built with Sphinx: make html.\n",
}


def test_next_to_sphinx_sources_the_site_goes_in_a_folder_of_its_own_and_builds_strictly(tmp_path, capsys):
    root = write_tree(tmp_path / "p", {**LAYOUTS["package"], **SPHINX})
    sphinx = {k: v for k, v in snapshot(root).items() if k.startswith("docs/")}

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (
        "init: docs/: holds the Sphinx sources (conf.py, 3 .rst files, Makefile) of another site, kept as they "
        "are; the traced site's pages go in traced-docs/ (MkDocs would copy those files into the site)\n"
    ) in out
    assert (
        (root / "pyproject.toml")
        .read_text()
        .endswith(
            '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\ndocs_dir = "traced-docs"\n'
            'lock_path = "traced-docs/trace.lock"\nexclude = ["docs"]\n'
        )
    )
    assert "docs_dir: traced-docs\n" in (root / "mkdocs.yml").read_text()
    assert "function: tinypkg.core.shift\nstatus: implemented\n" in (root / "traced-docs/index.md").read_text()
    assert {k: v for k, v in snapshot(root).items() if k.startswith("docs/")} == sphinx
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr
    built = {p.relative_to(root / "site").as_posix() for p in (root / "site").rglob("*") if p.is_file()}
    assert not [p for p in built if p.endswith((".rst", "conf.py", "Makefile", "README.md"))]
    assert "index.html" in built


def test_next_to_sphinx_sources_and_a_folder_of_that_name_init_stops_and_says_what_to_set(tmp_path, capsys):
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], **SPHINX, "traced-docs/notes.md": "# Notes\n"})
    before = snapshot(root)

    code, out, err = init(root, capsys)

    assert code == 2
    assert err == (
        "error: docs/ holds the Sphinx sources (conf.py, 3 .rst files, Makefile) of another site, and traced-docs/ "
        "exists too; set docs_dir in [tool.docs_hooks] to a new folder for the traced site, then run init again\n"
    )
    assert out == ""
    assert snapshot(root) == before


def test_a_docs_folder_whose_home_page_is_a_readme_gets_no_index_page(tmp_path, capsys):
    root = write_tree(tmp_path / "p", {**LAYOUTS["src"], "docs/README.md": "# Tiny\n\nThe docs.\n"})

    code, out, err = init(root, capsys)

    assert code == 0, out + err
    assert (
        "init: docs/README.md: kept as it is, the site's home page; no starter page written "
        "(MkDocs would drop one of README.md and index.md)\n"
    ) in out
    assert not (root / "docs/index.md").exists()
    result = mkdocs_build(root)
    assert result.returncode == 0, result.stdout + result.stderr

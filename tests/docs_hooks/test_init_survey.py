"""What ``python -m docs_hooks init`` finds in a project (docs_hooks.init_survey): where the code, the tests and
the docs are, what its mkdocs.yml sets, and which function a starter page explains.

Each test writes a tiny project of its own (the layouts of test_init.py) and asks one question of it; what init
then writes is tested in test_init.py, through the command line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.init_survey import (
    Layout,
    detect_layout,
    effective_config,
    first_statement,
    foreign_docs,
    is_test_file,
    pick_function,
    plugin_names,
    python_files,
    read_yaml,
)

from .conftest import write_tree
from .test_init import LAYOUTS, TEST_CORE

# ----------------------------------------------------------------------------- where the code, tests and docs are


@pytest.mark.parametrize(
    ("layout", "found"),
    [
        ("src", Layout("src", "tests", "docs", ["src/tinypkg/__init__.py", "src/tinypkg/core.py"])),
        # a package at the top: modules are named from the project root; setup.py is tooling, not code
        (
            "package",
            Layout(".", "tests", "docs", ["tinypkg/__init__.py", "tinypkg/core.py", "tinypkg/extra.py"]),
        ),
        ("root", Layout(".", ".", "docs", ["core.py"])),
    ],
)
def test_each_layout_is_found_where_its_code_and_tests_are(tmp_path, layout, found):
    root = write_tree(tmp_path / layout, LAYOUTS[layout])

    assert detect_layout(root) == found


def test_the_other_code_folders_beside_a_package_are_left_out_of_the_index(tmp_path):
    files = {**LAYOUTS["package"], "examples/demo.py": "def main():\n    pass\n", "docs/conf.py": "project = 'x'\n"}
    root = write_tree(tmp_path / "p", files)

    found = detect_layout(root, "traced-docs", ("docs",))

    assert (found.source_root, found.exclude) == (".", ["examples", "docs"])


def test_test_files_are_named_as_pytest_names_them_or_sit_in_a_tests_folder():
    assert [is_test_file(Path(p)) for p in ("pkg/test_ops.py", "pkg/ops_test.py", "conftest.py", "tests/util.py")] == [
        True
    ] * 4
    assert [is_test_file(Path(p)) for p in ("pkg/testing.py", "pkg/ops.py", "contest.py")] == [False] * 3


def test_python_files_leave_out_environments_built_output_hidden_folders_and_the_docs(tmp_path):
    root = write_tree(
        tmp_path / "p",
        {
            "src/ops.py": "",
            "src/.hidden/x.py": "",
            "node_modules/pkg/x.py": "",
            "build/lib/ops.py": "",
            "myenv/pyvenv.cfg": "home = /usr\n",
            "myenv/lib/x.py": "",
            "docs/examples/helper.py": "",
            "old/ops.py": "",
            "tests/test_ops.py": "",
        },
    )

    assert python_files(root, "docs", ("old",)) == [Path("src/ops.py"), Path("tests/test_ops.py")]


def test_another_generators_sources_are_named_and_a_markdown_folder_holds_none(tmp_path):
    root = write_tree(
        tmp_path / "p",
        {
            "docs/source/conf.py": "",
            "docs/source/index.rst": "",
            "docs/_build/old.rst": "",
            "pages/index.md": "# Home\n",
        },
    )

    assert foreign_docs(root / "docs") == "Sphinx sources (source/conf.py, 1 .rst file)"
    assert foreign_docs(root / "pages") is None
    assert foreign_docs(root / "missing") is None


# ----------------------------------------------------------------------------- what its mkdocs.yml sets


def test_plugin_names_are_read_from_either_form_of_plugins():
    assert plugin_names(["search", {"docs_hooks": {}}, {}]) == ["search", "docs_hooks", "{}"]
    assert plugin_names({"search": None, "docs_hooks": {}}) == ["search", "docs_hooks"]
    assert plugin_names(None) == []


def test_a_mkdocs_yml_is_read_with_its_tags_as_plain_data_and_its_line_when_it_does_not_parse():
    node, data = read_yaml("site_name: !ENV [NAME, Tiny]\nmarkdown_extensions:\n  - toc\n", "mkdocs.yml")

    assert data == {"site_name": ("!tag", "ENV", ("NAME", "Tiny")), "markdown_extensions": ["toc"]}
    assert node.start_mark.line == 0
    with pytest.raises(TraceError) as info:
        read_yaml("site_name: Tiny\nplugins: [search\n", "mkdocs.yml")
    assert str(info.value).startswith("mkdocs.yml:3: cannot read it as YAML (")
    assert str(info.value).endswith("); fix it, then run init again")


def test_the_settings_of_a_mkdocs_yml_are_merged_over_those_it_inherits(tmp_path):
    root = write_tree(
        tmp_path / "p",
        {
            "base.yml": "theme:\n  name: material\n  features: [a]\ndocs_dir: pages\nmarkdown_extensions: [toc]\n",
            "mkdocs.yml": "INHERIT: base.yml\ntheme:\n  palette: slate\nmarkdown_extensions: [tables]\n",
        },
    )
    mkdocs = root / "mkdocs.yml"

    assert effective_config(mkdocs.read_text(), mkdocs) == {
        "theme": {"name": "material", "features": ["a"], "palette": "slate"},  # a mapping merged key by key
        "docs_dir": "pages",
        "markdown_extensions": ["tables"],  # any other value replaced
    }


def test_an_inherit_that_names_no_file_is_an_error_at_its_line(tmp_path):
    mkdocs = write_tree(tmp_path / "p", {"mkdocs.yml": "site_name: Tiny\nINHERIT: nope.yml\n"}) / "mkdocs.yml"

    with pytest.raises(TraceError) as info:
        effective_config(mkdocs.read_text(), mkdocs)

    assert str(info.value) == (
        "mkdocs.yml:2: INHERIT names 'nope.yml', which does not exist; fix INHERIT, then run init again"
    )


# ----------------------------------------------------------------------------- the function a starter page explains


def root_project(tmp_path: Path, tests: str) -> tuple:
    """(code index, source files) of the root layout with ``tests`` as its test file."""
    files = {**LAYOUTS["root"], "test_core.py": tests}
    files["pyproject.toml"] += '\n[tool.docs_hooks]\nsource_root = "."\ntests_root = "."\n'
    settings = load_settings(write_tree(tmp_path / "p", files))
    return index_for(settings, settings.project_root), ["core.py"]


def test_the_starter_page_explains_the_first_public_function_a_test_calls(tmp_path):
    index, source = root_project(tmp_path, TEST_CORE.format(module="core"))

    fn, tests = pick_function(index, source)

    assert (fn.name, tests) == ("core.shift", ["test_core.test_shift_adds_one"])
    assert first_statement(index, fn) == "core.shift: out = np.asarray(x) + 1"


def test_with_no_test_calling_any_the_first_public_function_is_picked(tmp_path):
    index, source = root_project(tmp_path, "def test_nothing():\n    assert True\n")

    fn, tests = pick_function(index, source)

    assert (fn.name, tests) == ("core.scale", [])  # _helper comes first, but is private
    assert pick_function(index, []) is None

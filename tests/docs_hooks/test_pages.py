"""Tests of docs_hooks.pages: ``python -m docs_hooks pages``, what the MkDocs plugin adds to a site, as files.

What users rely on, building with a builder that runs no plugin (Zensical): the command writes into the docs
folder, or a folder inside it (``--out``), a source page for every file of the code the pages cite, the generator's
stylesheets and scripts and KaTeX's stylesheet and fonts, and the compiled specification; it prints what
changed and the ``extra_css`` / ``extra_javascript`` lines mkdocs.yml needs; a file is rewritten only when its
bytes change, and what an earlier run wrote that is no longer wanted (the source page of a file that left the
code) is removed, and nothing else; ``written_by_pages`` reads back, from the lists the runs left, what they
wrote, so that the plugin can leave those copies out. A site built from these files by Zensical is tested in
test_extension.py.
"""

from __future__ import annotations

import json

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.shipped import SITE_ASSETS, asset_paths, scripts, stylesheets
from docs_hooks.core.site import make_build
from docs_hooks.pages import MANIFEST, write_pages, written_by_pages
from docs_hooks.render import sources
from docs_hooks.run.math import MathRenderer

from .conftest import PYPROJECT

SPEC = "= Normalisation\n\n$ mu_t = 1/d sum_i X_(t i) $ <eq:ln-mean>\n"
WITH_SPEC = PYPROJECT + 'spec_source = "spec/model.typ"\nspec_pdf = "spec/model.pdf"\nsource_pages = "all"\n'
USER_PAGE = "# Layer norm\n\nProse about [[ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)]].\n"


@pytest.fixture
def project(make_project):
    """A project with a page and a specification, and its settings."""
    root = make_project({"pyproject.toml": WITH_SPEC, "spec/model.typ": SPEC, "docs/page.md": USER_PAGE})
    return root, load_settings(root)


def expected_files(settings) -> dict[str, bytes | None]:
    """What a run should write, path in the folder -> bytes (None for the PDF, checked apart)."""
    files: dict[str, bytes | None] = {
        sources.page_uri(p): sources.page_markdown(p).encode() for p in make_build(settings, static=True).source_files()
    }
    math = MathRenderer(settings.project_root).assets(f"{SITE_ASSETS}/katex")
    files.update({uri: path.read_bytes() for uri, path in asset_paths(math)})
    files[settings.spec_pdf] = None
    return files


def run_pages(settings, capsys, out=None) -> list[str]:
    capsys.readouterr()
    assert write_pages(settings, out) == 0
    return capsys.readouterr().out.splitlines()


def written_files(folder) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_pages_writes_every_source_page_every_asset_and_the_specification(project, capsys):
    root, settings = project
    wanted = expected_files(settings)

    run_pages(settings, capsys)

    docs = root / "docs"
    assert written_files(docs) == set(wanted) | {MANIFEST, "page.md"}
    assert {uri for uri in wanted if uri.startswith("source/")} == {
        "source/src/model.py.md",
        "source/src/ops.py.md",
        "source/tests/__init__.py.md",
        "source/tests/test_model.py.md",
        "source/tests/test_ops.py.md",
    }  # every file of the index, those without functions too
    for uri, data in wanted.items():
        if data is not None:
            assert (docs / uri).read_bytes() == data, uri
    assert (docs / "spec/model.pdf").read_bytes().startswith(b"%PDF")
    assert (docs / "page.md").read_text() == USER_PAGE  # the author's own page is left as it is


def test_pages_prints_what_it_wrote_and_the_lines_mkdocs_yml_needs(project, capsys):
    _, settings = project
    count = len(expected_files(settings))

    lines = run_pages(settings, capsys)

    assert lines == [
        f"pages: {count} file(s) in docs/ ({count} written, 0 unchanged, 0 removed)",
        "The site's mkdocs.yml names them (the MkDocs plugin adds them itself):",
        "extra_css:",
        *[f"  - {s}" for s in stylesheets()],
        "extra_javascript:",
        *[f"  - {s}" for s in scripts()],
    ]


def test_a_second_run_writes_nothing_and_a_file_changed_by_hand_is_written_again(project, capsys):
    root, settings = project
    run_pages(settings, capsys)
    docs = root / "docs"
    inodes = {rel: (docs / rel).stat().st_ino for rel in written_files(docs) if rel != MANIFEST}
    count = len(inodes) - 1  # the author's page is not one of them

    assert (
        run_pages(settings, capsys)[0] == f"pages: {count} file(s) in docs/ (0 written, {count} unchanged, 0 removed)"
    )
    assert {rel: (docs / rel).stat().st_ino for rel in inodes} == inodes  # not even replaced by equal bytes

    (docs / "assets/docs_hooks/trace.css").write_text("/* edited */\n")
    assert (
        run_pages(settings, capsys)[0]
        == f"pages: {count} file(s) in docs/ (1 written, {count - 1} unchanged, 0 removed)"
    )
    assert (docs / "assets/docs_hooks/trace.css").read_bytes() == (
        dict(asset_paths([]))[f"{SITE_ASSETS}/trace.css"].read_bytes()
    )


def test_the_source_page_of_a_file_that_left_the_code_is_removed_and_nothing_else(project, capsys):
    root, settings = project
    docs = root / "docs"
    run_pages(settings, capsys)
    (docs / "notes.md").write_text("# Notes\n")  # the author's, written after the run
    count = len(expected_files(settings))

    (root / "src/model.py").unlink()
    (root / "tests/test_model.py").unlink()
    lines = run_pages(settings, capsys)

    assert lines[0] == f"pages: {count - 2} file(s) in docs/ (0 written, {count - 2} unchanged, 2 removed)"
    assert not (docs / "source/src/model.py.md").exists() and not (docs / "source/tests/test_model.py.md").exists()
    assert (docs / "source/src/ops.py.md").is_file()
    assert (docs / "page.md").read_text() == USER_PAGE and (docs / "notes.md").is_file()
    assert "source/src/model.py.md" not in json.loads((docs / MANIFEST).read_text())


def test_out_writes_into_a_folder_inside_the_docs_folder_and_the_printed_lines_name_it(project, capsys):
    root, settings = project

    lines = run_pages(settings, capsys, root / "docs/generated")

    assert lines[0].startswith("pages: ") and " file(s) in docs/generated/ (" in lines[0]
    assert (root / "docs/generated/source/src/ops.py.md").read_text() == sources.page_markdown("src/ops.py")
    assert not (root / "docs/source").exists()
    assert f"  - generated/{SITE_ASSETS}/katex/katex.min.css" in lines
    assert f"  - generated/{scripts()[0]}" in lines


@pytest.mark.parametrize("out", ["elsewhere", "."])
def test_out_outside_the_docs_folder_is_refused_and_nothing_is_written(project, out):
    root, settings = project

    with pytest.raises(TraceError) as caught:
        write_pages(settings, root / out)

    assert str(caught.value) == (
        f"--out {root / out}: the builder reads only the docs folder (docs); name a folder inside it"
    )
    assert written_files(root / "docs") == {"page.md"}
    assert not (root / out / "source").exists()


def test_written_by_pages_names_what_every_run_wrote_inside_the_docs_folder(project, capsys):
    root, settings = project
    docs = root / "docs"
    run_pages(settings, capsys)
    run_pages(settings, capsys, docs / "generated")

    found = written_by_pages(docs)

    top = set(json.loads((docs / MANIFEST).read_text()))
    inner = {f"generated/{n}" for n in json.loads((docs / "generated" / MANIFEST).read_text())}
    assert found == top | inner | {MANIFEST}
    assert "generated/source/src/ops.py.md" in found and "source/src/ops.py.md" in found
    assert "page.md" not in found  # the author's page is never taken for a copy


def test_written_by_pages_skips_a_damaged_list_and_what_is_not_a_path(tmp_path):
    docs = tmp_path / "docs"
    (docs / "a").mkdir(parents=True)
    (docs / "b").mkdir()
    (docs / "a" / MANIFEST).write_text('["x.md", 3, null, "y/z.md"]')
    (docs / "b" / MANIFEST).write_text('["never.md", ')  # cut short

    assert written_by_pages(docs) == {"a/x.md", "a/y/z.md", MANIFEST}
    assert written_by_pages(tmp_path / "empty") == {MANIFEST}


def test_a_list_of_what_was_written_holding_other_things_than_paths_is_ignored_not_a_crash(project, capsys):
    """The list is the command's own file, but a person or a merge may have edited it: entries that are no
    path inside the folder (a number, null, '../x', an absolute path) are never deleted and never crash."""
    root, settings = project
    outside = root / "outside.txt"
    outside.write_text("keep me")
    listed = [1, None, "../outside.txt", str(outside), "source/src/gone.py.md"]
    (root / "docs" / MANIFEST).write_text(json.dumps(listed))
    (root / "docs/source/src").mkdir(parents=True, exist_ok=True)
    (root / "docs/source/src/gone.py.md").write_text("a source page of a file that left the code")

    run_pages(settings, capsys)

    assert (root / "docs/source/src/ops.py.md").is_file()
    assert outside.read_text() == "keep me"
    assert not (root / "docs/source/src/gone.py.md").exists()  # listed, inside the folder, no longer wanted
    assert all(isinstance(n, str) for n in json.loads((root / "docs" / MANIFEST).read_text()))
    assert "source/src/ops.py.md" in written_by_pages(root / "docs")


def test_written_by_pages_reads_a_list_that_is_not_a_list_as_empty(tmp_path):
    (tmp_path / MANIFEST).write_text('{"source/a.md": 1}')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / MANIFEST).write_text("3")

    assert written_by_pages(tmp_path) == {MANIFEST}


def test_by_default_only_the_files_the_pages_cite_get_a_source_page_and_one_no_longer_cited_goes(make_project, capsys):
    root = make_project({"docs/page.md": USER_PAGE})
    settings = load_settings(root)
    docs = root / "docs"

    run_pages(settings, capsys)
    assert {p for p in written_files(docs) if p.startswith("source/")} == {"source/src/ops.py.md"}

    (docs / "page.md").write_text("# Layer norm\n\nSee [[model.build: return Block(]].\n")
    lines = run_pages(settings, capsys)

    assert {p for p in written_files(docs) if p.startswith("source/")} == {"source/src/model.py.md"}
    assert lines[0].endswith(" unchanged, 1 removed)") and "(1 written, " in lines[0]  # model.py.md in, ops.py.md out

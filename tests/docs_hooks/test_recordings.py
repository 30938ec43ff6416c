"""docs_hooks.core.recordings (``python -m docs_hooks record``): every recording the pages need, made ahead of a
build and stored under the keys the build reads; a build after it runs none of them."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.recordings import record_site
from docs_hooks.core.session import Session, as_markdown_reads, without_front_matter
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.read import blocks
from docs_hooks.run.math import MathRenderer

from .conftest import PYPROJECT, run_cli

EXAMPLE = """\
```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: illustrative
```

```trace-example
test: {test}
title: One matrix
show:
  - {{label: Mean, code: mu}}
```
"""

EXAMPLE_PAGE = "# Layer norm\n\nEach row has its mean $\\mu$ taken out.\n\n" + EXAMPLE.format(
    test="tests/test_ops.py::test_rows_have_zero_mean"
)

FAILING_TEST = """\
from ops import layer_norm_forward


def test_breaks():
    raise ValueError("the input is not a matrix")
"""

FAILING_PAGE = "# Broken\n\n" + EXAMPLE.format(test="tests/test_broken.py::test_breaks")


def test_the_recordings_made_ahead_are_the_ones_a_build_then_reads_back_without_running(make_project):
    root = make_project({"docs/page.md": EXAMPLE_PAGE})
    settings = load_settings(root)

    first = record_site(settings)
    again = record_site(settings)

    assert (first.needed, first.made, first.formulas, first.spec, first.failed) == (1, 1, 1, False, [])
    assert (again.needed, again.made, again.failed) == (1, 0, [])  # stored: read back
    build = make_build(settings, coverage=False)
    try:
        result = expand_site(settings, build)
        assert build.workers is not None and build.workers.recorder.made == 0  # the build ran nothing
    finally:
        build.close()
    assert result.problems == []
    assert "Mean" in result.pages["docs/page.md"].markdown


SYMBOLS = """
```trace-symbols
rows:
  - {symbol: '\\mu', meaning: "The row's mean", code: none}
  - {symbol: '$\\sigma^2$', meaning: "Its variance", code: none}
```
"""


def test_a_front_end_s_first_build_after_record_parses_no_page_and_sends_no_formula_to_katex(make_project, monkeypatch):
    # the page as MkDocs hands it over (front matter left out, whitespace normalised), and a symbol written
    # without dollars (TeX all the same): record keyed what it found by what the build reads
    text = "---\ntitle: Layer norm\n---\n\n" + EXAMPLE_PAGE + SYMBOLS
    root = make_project({"docs/page.md": text})
    assert record_site(load_settings(root)).failed == []
    parsed: list[str] = []
    asked: list[dict] = []
    parse_page, ask = blocks.parse_page, MathRenderer._ask
    monkeypatch.setattr(blocks, "parse_page", lambda text, path: parsed.append(path) or parse_page(text, path))
    monkeypatch.setattr(MathRenderer, "_ask", lambda self, payload: asked.extend(payload) or ask(self, payload))

    session = Session(root)
    try:
        session.refresh()
        session.plan_site()
        expanded = session.expand("docs/page.md", as_markdown_reads(without_front_matter(text)))
    finally:
        session.close()

    assert ["not reviewed yet" in str(p) for p in expanded.problems] == [True]  # no lock in this project
    assert (parsed, asked) == ([], [])
    assert expanded.markdown.count('class="katex"') == 3  # the prose's mu, both symbols


def test_the_files_the_pages_cite_are_highlighted_ahead_and_a_source_page_reads_them_back(make_project):
    source_page = "```trace-source\nfile: src/ops.py\n```\n"
    root = make_project({"docs/page.md": EXAMPLE_PAGE, "docs/ops-source.md": source_page})
    settings = load_settings(root)

    done = record_site(settings)

    build = make_build(settings, coverage=False)
    try:
        cited = build.source_files()
        result = expand_site(settings, build)
        assert build.listings is not None and build.listings.made == 0  # every file read back
    finally:
        build.close()
    assert "src/ops.py" in cited and done.listings == len(cited)
    assert result.problems == []
    assert '<span class="nf">layer_norm_forward</span>' in result.pages["docs/ops-source.md"].markdown
    (root / "src/ops.py").write_text((root / "src/ops.py").read_text() + "\n# a comment\n")
    build = make_build(settings, coverage=False)
    try:
        expand_site(settings, build)
        assert build.listings is not None and build.listings.made == 1  # a new text: highlighted again
    finally:
        build.close()


def test_an_edit_to_the_recorded_function_makes_that_recording_again(make_project):
    root = make_project({"docs/page.md": EXAMPLE_PAGE})
    settings = load_settings(root)
    record_site(settings)
    ops = root / "src" / "ops.py"
    ops.write_text(ops.read_text().replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(-1, keepdims=True)"))

    assert record_site(settings).made == 1


def test_the_command_names_a_recording_that_failed_and_exits_1(make_project, capsys):
    root = make_project(
        {"docs/page.md": EXAMPLE_PAGE, "docs/broken.md": FAILING_PAGE, "tests/test_broken.py": FAILING_TEST}
    )

    code = run_cli(root, "record")

    out, err = capsys.readouterr()
    assert code == 1
    assert out == (
        "docs_hooks record: 2 recording(s) the pages need, 2 made, 0 stored already; 1 formula(s) rendered; "
        "3 source file(s) highlighted; 0 fenced code block(s) of the pages highlighted, 0 kept already; 1 problem(s)\n"
    )  # both pages list the same function; a project without mkdocs.yml has none highlighted ahead
    assert "tests/test_broken.py::test_breaks" in err and "ValueError: the input is not a matrix" in err


def test_the_specification_is_compiled_ahead_too_and_a_typst_error_is_named(make_project):
    from docs_hooks.read.spec import read_cache, source_key

    root = make_project(
        {
            "pyproject.toml": PYPROJECT + 'spec_source = "spec/model.typ"\nspec_pdf = "spec/model.pdf"\n',
            "spec/model.typ": "= Normalisation\n\n$ mu_t = 1/d sum_i X_(t i) $ <eq:ln-mean>\n",
            "docs/page.md": EXAMPLE_PAGE,
        }
    )
    settings = load_settings(root)

    done = record_site(settings)

    assert done.spec and done.failed == []
    source = (root / "spec/model.typ").resolve()
    cache = settings.cache_dir / "spec"
    assert read_cache(cache, source, source_key(source, source.parent, [cache])) is not None  # what a build reads
    (root / "spec/model.typ").write_text("#let broken = (\n", encoding="utf-8")
    broken = record_site(settings)
    assert not broken.spec and len(broken.failed) == 1
    assert str(broken.failed[0].path).endswith("spec/model.typ") and broken.failed[0].line == 1

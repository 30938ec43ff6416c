"""What makes `mkdocs serve` rebuilds cheap: the builder is kept while the code is unchanged."""

from docs_hooks.project import fingerprint, make_builder
from docs_hooks.settings import load_settings


def test_the_fingerprint_ignores_pages_and_follows_code_and_tests(make_project):
    root = make_project({"docs/page.md": "See [[ops.layer_norm_forward]].\n"})
    settings = load_settings(root)
    first = fingerprint(settings)

    (root / "docs/page.md").write_text("A prose edit. See [[ops.layer_norm_forward]].\n")
    assert fingerprint(settings) == first

    (root / "tests/test_ops.py").write_text((root / "tests/test_ops.py").read_text() + "\n# a comment\n")
    second = fingerprint(settings)
    assert second != first

    (root / "src/ops.py").write_text((root / "src/ops.py").read_text() + "\n")
    assert fingerprint(settings) != second


def test_an_unchanged_page_is_expanded_once_and_a_site_wide_table_follows_the_other_pages(make_project):
    root = make_project({
        "docs/page.md": "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n",
        "docs/pages.md": "```trace-inventory\nof: pages\n```\n",
    })
    builder = make_builder(load_settings(root))
    page, table = (root / "docs/page.md").read_text(), (root / "docs/pages.md").read_text()

    assert builder.expand("docs/page.md", page) is builder.expand("docs/page.md", page)
    first = builder.expand("docs/pages.md", table)
    assert builder.expand("docs/pages.md", table) is first  # the table is a placeholder until the page is finished
    assert "Forward" not in first.markdown
    html, problems = builder.finish("docs/pages.md", first.markdown)
    assert problems == [] and "Forward" in html

    builder.expand("docs/page.md", page.replace("Forward", "The forward pass"))  # an edit while serving
    html, problems = builder.finish("docs/pages.md", first.markdown)
    assert problems == [] and "The forward pass" in html and "Forward" not in html


def test_a_site_wide_table_that_fails_is_an_error_box_reported_at_its_block_by_the_build_and_by_check(
        make_project):
    from docs_hooks.errors import TraceError
    from docs_hooks.project import check_site, expand_site

    root = make_project({"docs/pages.md": "# Pages\n\n```trace-inventory\nof: pages\n```\n"})
    settings = load_settings(root)

    def broken(builder, page):
        raise TraceError("no table today")

    def with_broken_kind():
        builder = make_builder(settings, coverage=False)
        builder.inventory_kinds["pages"] = lambda ctx, block: ctx.builder.site_table(
            lambda: broken(ctx.builder, ctx.page), ("broken", ctx.page), block.line)
        return builder

    site = expand_site(settings, with_broken_kind())
    assert [str(p) for p in site.problems] == ["docs/pages.md:3: no table today"]
    assert "no table today" in site.pages["docs/pages.md"].markdown and "trace-late" not in site.pages[
        "docs/pages.md"].markdown
    assert "docs/pages.md:3: no table today" in [str(p) for p in check_site(settings, with_broken_kind())]


def test_a_site_wide_table_is_filled_before_the_search_index_reads_the_page(make_project, tmp_path):
    import json

    from .conftest import run_cli
    from .test_cli import MKDOCS_YML, mkdocs_build

    root = make_project({
        "mkdocs.yml": MKDOCS_YML.replace("  - Layer norm: page.md\n", "  - Layer norm: page.md\n  - Left out: left.md\n"),
        "docs/page.md": "# Layer norm\n\n```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\n"
                        "status: implemented\n```\n",
        "docs/left.md": "# Left out\n\n```trace-inventory\nof: undocumented\n```\n",
    })
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/left/index.html").read_text(encoding="utf-8")
    assert "trace-late" not in html and "layer_norm_backward" in html  # a function no page documents
    index = json.loads((root / "site/search/search_index.json").read_text(encoding="utf-8"))
    assert any("layer_norm_backward" in doc["text"] for doc in index["docs"] if doc["location"].startswith("left/"))

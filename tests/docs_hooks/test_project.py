"""Tests of docs_hooks.project: the fingerprint that keeps the builder of `mkdocs serve` while the code is
unchanged, and a site-wide table that fails, reported by the build and by check."""

from docs_hooks.base.settings import load_settings
from docs_hooks.project import fingerprint, make_builder


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


def test_a_site_wide_table_that_fails_is_an_error_box_reported_at_its_block_by_the_build_and_by_check(make_project):
    from docs_hooks.base.errors import TraceError
    from docs_hooks.project import check_site, expand_site

    root = make_project({"docs/pages.md": "# Pages\n\n```trace-inventory\nof: pages\n```\n"})
    settings = load_settings(root)

    def broken(builder, page):
        raise TraceError("no table today")

    def with_broken_kind():
        builder = make_builder(settings, coverage=False)
        builder.inventory_kinds["pages"] = lambda ctx, block: ctx.builder.late.site_table(
            lambda: broken(ctx.builder, ctx.page), ("broken", ctx.page), block.line
        )
        return builder

    site = expand_site(settings, with_broken_kind())
    assert [str(p) for p in site.problems] == ["docs/pages.md:3: no table today"]
    assert (
        "no table today" in site.pages["docs/pages.md"].markdown
        and "trace-late" not in site.pages["docs/pages.md"].markdown
    )
    assert "docs/pages.md:3: no table today" in [str(p) for p in check_site(settings, with_broken_kind())]

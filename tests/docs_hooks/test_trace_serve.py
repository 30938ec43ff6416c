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


def test_an_unchanged_page_is_expanded_once_but_a_site_wide_table_every_time(make_project):
    root = make_project({
        "docs/page.md": "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n",
        "docs/pages.md": "```trace-inventory\nof: pages\n```\n",
    })
    builder = make_builder(load_settings(root))
    page, table = (root / "docs/page.md").read_text(), (root / "docs/pages.md").read_text()

    assert builder.expand("docs/page.md", page) is builder.expand("docs/page.md", page)
    first = builder.expand("docs/pages.md", table)
    assert builder.expand("docs/pages.md", table) is not first
    assert "Forward" in first.markdown

"""Tests of docs_hooks.core.planned: a page parsed and planned once for each text of it, the site's entries
(from the pages handed over, else from the docs folder's files), and which files get a source page."""

from docs_hooks.base.settings import load_settings
from docs_hooks.core import planned
from docs_hooks.core.planned import SitePlans
from docs_hooks.core.site import build_order, make_build
from docs_hooks.kinds import KINDS

ENTRY = "```trace-entry\ntitle: {title}\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n"


def plans_of(root) -> SitePlans:
    """The read and resolve stages of a fresh build of the project at ``root`` (nothing runs)."""
    return SitePlans(make_build(load_settings(root), static=True).project, KINDS, build_order)


def test_a_page_is_planned_once_for_each_text_and_its_entries_join_the_site(make_project):
    root = make_project({"docs/page.md": ENTRY.format(title="Forward")})
    plans = plans_of(root)
    text = (root / "docs/page.md").read_text()

    first = plans.plan("docs/page.md", text)
    assert plans.plan("docs/page.md", text) is first
    assert plans.planned("docs/page.md") == (text, first)
    assert [e.title for e in plans.site.all()] == ["Forward"]
    version = plans.site.version

    edited = text.replace("Forward", "The forward pass")
    again = plans.plan("docs/page.md", edited)
    assert again is not first and plans.planned("docs/page.md") == (edited, again)
    assert [e.title for e in plans.site.all()] == ["The forward pass"]
    assert plans.site.version > version
    assert plans.planned("docs/other.md") is None


def test_the_site_s_entries_are_read_from_the_files_of_the_pages_not_handed_over_in_build_order(make_project):
    root = make_project(
        {
            "docs/index.md": "# Home\n",
            "docs/b.md": ENTRY.format(title="B"),
            "docs/a.md": ENTRY.format(title="A"),
        }
    )
    plans = plans_of(root)
    plans.plan_all({"docs/b.md": (root / "docs/b.md").read_text()})  # as a front end hands one page over
    assert list(plans.site.pages) == ["docs/b.md"]

    site = plans.site_entries()
    assert list(site.pages) == ["docs/index.md", "docs/a.md", "docs/b.md"]  # index first, then by name
    assert [e.title for e in site.all()] == ["A", "B"]


def test_a_text_parsed_before_is_not_parsed_again_and_new_texts_are_parsed_in_one_batch(make_project, monkeypatch):
    root = make_project({"docs/page.md": ENTRY.format(title="Forward")})
    text = (root / "docs/page.md").read_text()
    parsed: list[list[str]] = []
    real = planned.parse_pages

    def counting(pages, store):
        parsed.append(sorted(pages))
        return real(pages, store)

    plans = plans_of(root)
    monkeypatch.setattr(planned, "parse_pages", counting)
    page = plans.parse("docs/page.md", text)
    assert plans.parse("docs/page.md", text) is page
    plans.parse_all({"docs/page.md": text, "docs/new.md": "# New\n"})
    assert parsed == [["docs/page.md"], ["docs/new.md"]]  # only what was new to it
    plans.parse_all({"docs/page.md": text.replace("Forward", "Back"), "docs/other.md": "# Other\n"})
    assert parsed[-1] == ["docs/other.md", "docs/page.md"]  # an edited text is new
    assert [s.kind for s in plans.parse("docs/new.md", "# New\n").segments if hasattr(s, "kind")] == []

    # The pages a front end hands over for their source files: the new texts in one batch, then each planned.
    handed = {f"docs/p{n}.md": ENTRY.format(title=f"P{n}") for n in range(3)}
    plans.source_files(handed)
    assert parsed[-1] == sorted(handed) and len(parsed) == 4


def test_the_source_files_are_those_the_pages_cite_with_a_repo_url_and_every_file_without_one(make_project):
    from .conftest import PYPROJECT
    from .test_recordings import EXAMPLE_PAGE  # an entry of ops.layer_norm_forward, an example of tests/test_ops.py

    cited = make_project({"docs/page.md": EXAMPLE_PAGE}, root=None)
    settings = load_settings(cited)
    assert settings.source_pages == "cited"
    assert make_build(settings, static=True).source_files() == ["src/ops.py", "tests/test_ops.py"]

    bare = make_project(
        {
            "docs/page.md": EXAMPLE_PAGE,
            "pyproject.toml": PYPROJECT.replace('repo_url = "https://example.com/repo"\n', ""),
        },
        root=cited.parent / "bare",
    )
    every = ["src/model.py", "src/ops.py", "tests/__init__.py", "tests/test_model.py", "tests/test_ops.py"]
    assert make_build(load_settings(bare), static=True).source_files() == every

    (cited / "pyproject.toml").write_text(PYPROJECT + 'source_pages = "all"\n', encoding="utf-8")
    assert make_build(load_settings(cited), static=True).source_files() == every


def test_a_serve_s_build_after_a_code_edit_parses_only_the_pages_whose_text_changed(make_project, monkeypatch):
    """A serve's builds share the pages parsed (``planned.ParsedPages``): a page whose texts did not change is not
    parsed again, nor read back from the cache folder, so a code edit parses none; a page edited beside it is
    parsed, alone."""
    from docs_hooks.core.session import Session

    from .test_session import TWO_ENTRIES, expand_all, relocked

    root = relocked(make_project, TWO_ENTRIES)
    parsed: list[list[str]] = []
    real = planned.parse_pages

    def counting(pages, store):
        parsed.append(sorted(pages))
        return real(pages, store)

    monkeypatch.setattr(planned, "parse_pages", counting)
    serve = Session(root)
    serve.settles = True
    try:
        first = expand_all(serve)
        assert {page for batch in parsed for page in batch} == set(TWO_ENTRIES)
        ops = root / "src/ops.py"
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        parsed.clear()
        assert expand_all(serve) == first
        assert parsed == []

        edited = {**TWO_ENTRIES, "docs/fwd.md": TWO_ENTRIES["docs/fwd.md"] + "\nMore prose.\n"}
        (root / "docs/fwd.md").write_text(edited["docs/fwd.md"], encoding="utf-8")
        ops.write_text(ops.read_text() + "\n\ndef appended_too():\n    return 2\n")
        parsed.clear()
        again = expand_all(serve, edited)
        assert parsed and all(batch == ["docs/fwd.md"] for batch in parsed)  # its file's text, and the text handed over
        assert again["docs/bwd.md"] == first["docs/bwd.md"] and "More prose." in again["docs/fwd.md"]
    finally:
        serve.close()

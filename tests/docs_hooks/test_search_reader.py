"""search_reader: Material's search plugin reading a page on its own, in this process or in one of its own."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from material.plugins.search.plugin import SearchIndex

from docs_hooks.base.cachedir import Store
from docs_hooks.base.settings import installed_version
from docs_hooks.render.search import heading_parts, part_key
from docs_hooks.run import children
from docs_hooks.search_reader import (
    PageReading,
    Sections,
    TocItem,
    index_sections,
    page_data,
    page_from,
    plain,
    read_entries,
    reader_release,
    receive,
    send,
    toc_items,
)

from .test_search import fragments

SETTINGS = {"lang": ["en"], "separator": r"[\s\-]+", "pipeline": ["stemmer"], "fields": {}}

HTML = (
    '<h1 id="norm">Norm</h1><p>The mean <span class="katex"><span class="mord">x</span></span> of '
    '<code><span class="n">x</span></code>.</p><h2 id="back">Backward</h2><p>Then <em>this</em>.</p>'
)
TOC = (TocItem("norm", "#norm", "Norm", 1, (TocItem("back", "#back", "Backward", 2),)),)
PAGE = PageReading(HTML, TOC, "norm/", "Norm", {"tags": ["maths"], "search": {"boost": 2}})


def material_reads(page: PageReading) -> list[dict]:
    """What Material's own SearchIndex makes of the page as it is, spans and all."""
    index = SearchIndex(**SETTINGS)
    index.add_entry_from_context(page)
    return index.entries


def test_a_page_read_without_its_spans_makes_the_entries_material_makes_of_it_whole():
    made = read_entries(SETTINGS, PAGE)
    assert made == material_reads(PAGE)
    assert [e["location"] for e in made] == ["norm/", "norm/#back"]  # the page, then its section, by the toc
    assert made[0]["tags"] == ["maths"] and made[0]["boost"] == 2
    assert "The mean x of" in made[0]["text"]
    assert PAGE.content == HTML  # the page handed over is left as it was


def test_a_page_the_search_plugin_leaves_out_makes_no_entry():
    assert read_entries(SETTINGS, PageReading(HTML, TOC, "s/", "S", {"search": {"exclude": True}})) == []


def test_the_table_of_contents_becomes_plain_data_children_and_all():
    item = SimpleNamespace(id="a", url="#a", title="A", level=1, children=[])
    toc = [SimpleNamespace(id="t", url="#t", title="T", level=1, children=[item])]
    assert toc_items(toc) == (TocItem("t", "#t", "T", 1, (TocItem("a", "#a", "A", 1),)),)


def test_only_what_json_gives_back_as_it_was_is_plain_enough_for_the_pipe():
    assert plain({"tags": ["a", 1, 2.5, True, None], "search": {"boost": 2}})
    for value in ({"tags": [date(2024, 1, 1)]}, {"boost": (1, 2)}, {"boost": float("nan")}, {1: "a"}):
        assert not plain(value), value


def test_messages_go_through_a_pipe_as_they_were_and_a_cut_one_is_the_end():
    stream = io.BytesIO()
    send(stream, [1, SETTINGS, page_data(PAGE)])
    send(stream, "second")
    whole = stream.getvalue()
    stream.seek(0)
    number, settings, page = receive(stream)
    assert (number, settings, page_from(page)) == (1, SETTINGS, PAGE)
    assert receive(stream) == "second"
    with pytest.raises(EOFError):
        receive(stream)
    cut = io.BytesIO(whole[:-3])
    assert receive(cut)[0] == 1
    with pytest.raises(EOFError):
        receive(cut)


def test_the_process_answers_each_page_in_turn_says_what_went_wrong_and_ends_when_its_input_does():
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = children.start(
        [sys.executable, "-m", "docs_hooks.search_reader"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    try:
        # The search plugin stops on this nesting (it ends the outer exclusion inside the inner one).
        broken = PageReading(
            "<code data-search-exclude><span data-search-exclude><code></code></span></code>", (), "b/", "B"
        )
        for message in ([7, SETTINGS, page_data(PAGE)], [8, SETTINGS, page_data(broken)]):
            send(proc.stdin, message)
        number, version, made, problem, parts = receive(proc.stdout)
        assert [number, version, made, problem] == [7, installed_version("mkdocs-material"), material_reads(PAGE), None]
        # the page's parts, read a part at a time, go with the answer, for the build to keep
        assert sorted(parts) == sorted(part_key(i > 0, p, reader_release()) for i, p in enumerate(heading_parts(HTML)))
        number, _, made, problem, parts = receive(proc.stdout)
        assert (number, made, parts) == (8, None, {}) and problem.startswith("ValueError"), problem
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""  # nothing but the answers on the answers' pipe
    finally:
        if proc.poll() is None:
            children.kill_group(proc)
        children.release(proc)


# ------------------------------------------------------------------ a page read a part at a time


def part_by_part(sections: Sections, page: PageReading) -> list[dict]:
    """The entries of the page read a part at a time (``Sections``), as the plugin adds them to the index."""
    index = SearchIndex(**SETTINGS)
    index_sections(index, sections.of(page.content), page)
    return index.entries


class Counting(Sections):
    """Sections that counts the parts it reads (and the rests it reads as one)."""

    def __init__(self, store):
        super().__init__(store, "9.test")
        self.read = 0

    def of(self, html):
        from docs_hooks import search_reader

        real = search_reader._read

        def counted(text, after):
            self.read += 1
            return real(text, after)

        search_reader._read = counted
        try:
            return super().of(html)
        finally:
            search_reader._read = real


SECTION = st.builds(
    '\n<h{0} id="s{1}">{2}</h{0}>\n{3}'.format,
    st.sampled_from([1, 2, 3]),
    st.integers(0, 9),
    st.sampled_from(["Norm", "<span>Mean</span>", "", "A <code>x</code>"]),
    fragments(),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    head=st.sampled_from(["", "<p>intro</p>", '<h1 id="top">Title</h1>', "<div>\n"]),
    body=st.lists(SECTION, min_size=1, max_size=4),
    edit=st.integers(0, 3),
)
def test_any_page_read_a_part_at_a_time_makes_the_entries_material_makes_of_it_whole_fresh_or_kept(
    tmp_path_factory, head, body, edit
):
    html = head + "".join(body) + ("</div>" if head == "<div>\n" else "")
    page = PageReading(html, TOC, "p/", "P", {})
    store = Store(tmp_path_factory.mktemp("parts") / "search.sqlite")
    sections = Sections(store, "9.test")
    try:
        whole = material_reads(page)
    except ValueError:  # Material's parser stops on this page: so does the reading by parts
        with pytest.raises(ValueError):
            sections.of(html)
        return
    assert part_by_part(sections, page) == whole
    store.put_many(sections.take())  # as the build writes them, with the pages' entries
    assert part_by_part(Sections(store, "9.test"), page) == whole  # from the parts kept
    # one part edited: the others are read back, the page's entries still Material's
    parts = heading_parts(html)
    parts[edit % len(parts)] += "<p>edited</p>"
    edited = PageReading("".join(parts), TOC, "p/", "P", {})
    assert part_by_part(Sections(store, "9.test"), edited) == material_reads(edited)
    store.close()


PARTS = '<p>Intro <span class="m">x</span>.</p>\n<h2 id="a">A</h2>\n<p>First.</p>\n<h2 id="b">B</h2>\n<p>Second.</p>'


def test_after_an_edit_only_the_part_that_changed_is_read_again_and_a_part_is_kept_where_it_was_at_rest(tmp_path):
    store = Store(tmp_path / "search.sqlite")
    first = Counting(store)
    assert part_by_part(first, PageReading(PARTS, (), "p/", "P")) == material_reads(PageReading(PARTS, (), "p/", "P"))
    assert first.read == 3
    store.put_many(first.take())

    edited = PageReading(PARTS.replace("Second.", "Second, edited."), (), "p/", "P")
    again = Counting(store)
    last = heading_parts(edited.content)[-1]
    assert again.unread(edited.content) == len(last)  # what it will read: the edited part
    assert part_by_part(again, edited) == material_reads(edited)
    assert again.read == 1
    assert again.unread(edited.content) == 0  # read now: this Sections has it until it is taken

    # Another release of the search plugin reads every part anew: its parser may read them otherwise.
    assert Sections(store, "9.other").unread(edited.content) == len(edited.content)


def test_a_heading_inside_an_open_element_reads_the_rest_of_the_page_as_one_and_keeps_none_of_it(tmp_path):
    # The div the second part opens is open where the third starts: that part cannot be read from the start
    # of a section, so the rest of the page is read as one.
    html = (
        '<p>Intro</p>\n<h2 id="a">A</h2>\n<div>\n<h2 id="b">B</h2>\n<p>In the div.</p></div>\n'
        '<h2 id="c">C</h2>\n<p>After.</p>'
    )
    assert len(heading_parts(html)) == 4
    store = Store(tmp_path / "search.sqlite")
    sections = Counting(store)
    page = PageReading(html, (), "p/", "P")
    assert part_by_part(sections, page) == material_reads(page)
    assert sections.read == 3  # the first part, at rest; the second, not; then the rest as one
    store.put_many(sections.take())  # as the build writes them, with the pages' entries
    again = Counting(store)
    assert part_by_part(again, page) == material_reads(page)
    assert again.read == 2  # the first part is kept; the second and the rest are not


def test_a_part_kept_in_another_form_is_read_again(tmp_path):
    store = Store(tmp_path / "search.sqlite")
    sections = Sections(store, "9.test")
    page = PageReading(PARTS, (), "p/", "P")
    part_by_part(sections, page)
    keys = list(sections._fresh)
    store.put_many(sections.take())  # as the build writes them, with the pages' entries
    assert len(store.get_many(keys)) == 3
    wrong = [b'[true, [["x", "a title not in pieces", [], false]]]', b"[true]", b"[1, []]", b'{"a": 1, "b": 2}']
    for damaged in wrong:
        store.put_many({key: damaged for key in keys})
        fresh = Counting(store)
        assert part_by_part(fresh, page) == material_reads(page)
        assert fresh.read == 3, damaged


def test_a_part_that_would_reach_the_sections_before_it_is_refused_and_the_page_is_read_whole(tmp_path):
    from docs_hooks import search_reader

    # No heading at its start: its text would go into the section before it, which a part cannot see.
    with pytest.raises(ValueError, match="reached the section before it"):
        search_reader._read("<p>no heading</p>", after=True)

    class Refusing(Sections):
        def of(self, html):
            raise ValueError("a part of the page reached the section before it")

    assert read_entries(SETTINGS, PAGE, Refusing(None, "9.test")) == material_reads(PAGE)
    assert read_entries(SETTINGS, PAGE, Sections(None, "9.test")) == material_reads(PAGE)

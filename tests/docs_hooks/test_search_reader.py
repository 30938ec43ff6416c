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
from material.plugins.search.plugin import SearchIndex

from docs_hooks.base.settings import installed_version
from docs_hooks.run import children
from docs_hooks.search_reader import (
    PageReading,
    TocItem,
    page_data,
    page_from,
    plain,
    read_entries,
    receive,
    send,
    toc_items,
)

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
        assert receive(proc.stdout) == [7, installed_version("mkdocs-material"), material_reads(PAGE), None]
        number, _, made, problem = receive(proc.stdout)
        assert (number, made) == (8, None) and problem.startswith("ValueError"), problem
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""  # nothing but the answers on the answers' pipe
    finally:
        if proc.poll() is None:
            children.kill_group(proc)
        children.release(proc)

"""Tests of docs_hooks.render.listings: each file highlighted once per text, kept in the cache folder."""

import sqlite3

from docs_hooks.base.cachedir import store_file
from docs_hooks.render.listings import Listings
from docs_hooks.render.sources import highlighted_lines

CODE = "def f(x):\n    return x + 1  # one more\n"


def test_a_text_highlighted_once_is_read_back_by_a_later_build_and_a_new_text_is_highlighted(tmp_path):
    first = Listings(tmp_path)
    lines = first.lines(CODE)
    first.close()
    assert lines == highlighted_lines(CODE) and first.made == 1

    later = Listings(tmp_path)
    try:
        assert later.lines(CODE) == lines and later.made == 0
        assert later.lines(CODE + "\n") == highlighted_lines(CODE + "\n") and later.made == 1
    finally:
        later.close()


def test_without_a_cache_folder_every_file_is_highlighted(tmp_path):
    listings = Listings(None)

    assert listings.lines(CODE) == highlighted_lines(CODE)
    assert listings.lines(CODE) == highlighted_lines(CODE)
    assert listings.made == 2


def test_an_entry_that_is_not_one_line_per_line_of_the_file_is_highlighted_again(tmp_path):
    Listings(tmp_path).lines(CODE)
    with sqlite3.connect(store_file(tmp_path, "listings")) as db:
        # A row whose seal is right but whose lines are not the file's: what a bug of an older build could leave.
        (key, value), *_ = db.execute("SELECT key, value FROM entries").fetchall()
    assert key and value
    listings = Listings(tmp_path)
    store = listings.store
    assert store is not None
    store.put_many({key: b'["only one line"]'})

    assert listings.lines(CODE) == highlighted_lines(CODE) and listings.made == 1
    listings.close()

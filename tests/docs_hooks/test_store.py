"""One SQLite file holds many small cache entries: read, written, shared, pruned and made again."""

from __future__ import annotations

import shutil
import threading

import pytest

from docs_hooks.cachedir import MAX_AGE_DAYS, Store, prune
from docs_hooks.errors import TraceError
from docs_hooks.math import MathRenderer

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]
DAY = 86400


def test_what_is_put_is_got_back_and_missing_keys_are_left_out(tmp_path):
    store = Store(tmp_path / "cache" / "s.sqlite3")  # the folder is made on first use
    store.put_many({"a": b"first", "b": b"second"})
    assert store.get_many(["a", "b", "nope"]) == {"a": b"first", "b": b"second"}
    store.put_many({"a": b"again"})
    assert store.get_many(["a"]) == {"a": b"again"}
    assert store.get_many([]) == {}


def test_many_keys_at_once(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    items = {f"k{i}": str(i).encode() for i in range(1234)}  # more than one query's worth
    store.put_many(items)
    assert store.get_many(list(items)) == items


def test_two_builds_share_one_store(tmp_path):
    one, two = Store(tmp_path / "s.sqlite3"), Store(tmp_path / "s.sqlite3")
    one.put_many({"a": b"from one"})
    two.put_many({"b": b"from two"})
    assert one.get_many(["a", "b"]) == two.get_many(["a", "b"]) == {"a": b"from one", "b": b"from two"}


def test_threads_share_one_store(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    errors = []

    def work(n):
        try:
            for i in range(50):
                store.put_many({f"{n}-{i}": b"x"})
                assert store.get_many([f"{n}-{i}"]) == {f"{n}-{i}": b"x"}
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.get_many([f"{n}-{i}" for n in range(4) for i in range(50)])) == 200


def test_rows_not_read_for_a_month_are_pruned_and_a_read_keeps_a_row(tmp_path):
    now = 1_000_000_000.0
    old = now - (MAX_AGE_DAYS + 1) * DAY
    store = Store(tmp_path / "cache" / "s.sqlite3")
    store.put_many({"read again": b"1", "forgotten": b"2"}, now=old)
    store.get_many(["read again"], now=now)  # a build reads it today
    store.close()

    assert prune(tmp_path / "cache", now=now) == 1  # the store's rows count as entries
    assert Store(tmp_path / "cache" / "s.sqlite3").get_many(["read again", "forgotten"]) == {"read again": b"1"}
    assert (tmp_path / "cache" / "s.sqlite3").exists()  # the file itself is never pruned by its age


def test_a_store_that_cannot_be_written_is_still_read(tmp_path):
    """A read-only cache (restored by CI, say): marking entries as read is skipped, as for files."""
    store = Store(tmp_path / "s.sqlite3")
    store.put_many({"a": b"kept"}, now=1.0)
    store._connect().execute("PRAGMA query_only = ON")  # every write now fails
    assert store.get_many(["a"]) == {"a": b"kept"}
    with pytest.raises(TraceError, match="delete it and build again"):
        store.put_many({"b": b"new"})


def test_a_damaged_store_is_made_again(tmp_path):
    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"this is not a database, it was cut short or overwritten" * 20)
    store = Store(path)
    assert store.get_many(["a"]) == {}
    store.put_many({"a": b"new"})
    assert store.get_many(["a"]) == {"a": b"new"}


def test_a_store_that_cannot_be_opened_names_its_file_and_what_to_do(tmp_path):
    path = tmp_path / "s.sqlite3"
    path.mkdir()  # a folder where the file should be
    with pytest.raises(TraceError) as info:
        Store(path).get_many(["a"])
    assert str(path) in str(info.value) and "delete it and build again" in str(info.value)


def test_a_rendered_formula_is_read_back_by_the_next_build_without_katex(tmp_path):
    if shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir():
        pytest.skip("KaTeX is not installed here: run npm ci")
    formula = ("\\mu = \\frac{1}{d}\\sum_j x_j", True)
    first = MathRenderer(REPO, tmp_path / "cache")
    [(html, error)] = first.render_many([formula])
    first.close()
    assert error is None and "katex" in html

    second = MathRenderer(REPO, tmp_path / "cache")
    second.node = None  # this build could not render anything
    assert second.render_many([formula]) == [(html, None)]
    assert list((tmp_path / "cache").iterdir()) == [tmp_path / "cache" / "katex.sqlite3"]  # one file


def test_a_first_build_starts_katex_before_indexing_and_a_later_one_does_not(make_project):
    if shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir():
        pytest.skip("KaTeX is not installed here: run npm ci")
    from docs_hooks.project import make_builder
    from docs_hooks.settings import load_settings

    root = make_project({"docs/page.md": "# Page\n\nThe mean $\\mu$.\n"})
    if not (root / "node_modules").exists():
        (root / "node_modules").symlink_to(REPO / "node_modules")
    first = make_builder(load_settings(root), coverage=False)
    assert first.math._proc is not None  # running before any page asked for a formula
    first.expand("docs/page.md", (root / "docs/page.md").read_text())
    first.await_background()
    first.math.close()
    assert (root / ".cache/docs_hooks/katex.sqlite3").is_file()

    later = make_builder(load_settings(root), coverage=False)
    assert later.math._proc is None  # formulas are cached: KaTeX starts only if one is missing

"""The cache folder keeps what builds use and drops what no build has used for a month; one SQLite file
holds many small entries: read, written, shared, pruned and made again."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from docs_hooks.base.cachedir import MAX_AGE_DAYS, Store, prune, used
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.run.math import MathRenderer

MONTH_AND_A_DAY = (MAX_AGE_DAYS + 1) * 86400


def backdate(folder, seconds):
    then = time.time() - seconds
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, (then, then))


def test_entries_a_build_reads_are_kept_and_the_others_are_pruned(make_project):
    root = make_project()
    settings = load_settings(root)
    cache = settings.cache_dir
    stale = cache / "coverage" / "of-code-that-no-longer-exists.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}", encoding="utf-8")
    kept = cache / "coverage" / "of-the-code-as-it-is.json"
    kept.write_text("{}", encoding="utf-8")
    stray = cache / ".entry.pickle.1234.tmp"  # left by a build that was killed mid-write
    stray.write_bytes(b"half")
    backdate(cache, MONTH_AND_A_DAY)
    used(kept)  # a build reads it today

    index_for(settings)  # writes the index's store: its rows were just made
    removed = prune(cache)

    assert removed == 2
    assert not stale.exists() and not stray.exists()
    assert kept.exists()
    assert index_for(settings).functions  # the store kept every row


def test_nothing_is_pruned_within_the_month_and_a_missing_folder_is_fine(make_project, tmp_path):
    settings = load_settings(make_project())
    index_for(settings)
    backdate(settings.cache_dir, (MAX_AGE_DAYS - 1) * 86400)

    assert prune(settings.cache_dir) == 0
    assert prune(tmp_path / "no-such-cache") == 0
    assert prune(None) == 0


def test_a_mkdocs_build_prunes_what_no_build_used_for_a_month(make_project):
    from .test_cli import MKDOCS_YML, SITE_PAGE, mkdocs_build

    root = make_project(
        {"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")}
    )
    stale = root / ".cache/docs_hooks/recordings/0123456789abcdef01234567.pickle"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"a recording of code that no longer exists")
    backdate(stale.parent, MONTH_AND_A_DAY)

    result = mkdocs_build(root)

    assert not stale.exists(), result.stdout + result.stderr
    assert "removed 1 cache entries unused for 30 days" in result.stderr
    assert (root / ".cache/docs_hooks/index.sqlite3").is_file()  # this build's entries stay


def test_a_read_only_cache_is_read_not_pruned_and_named_once(make_project, monkeypatch, caplog):
    import sqlite3

    caplog.set_level("INFO", logger="mkdocs.plugins.docs_hooks")
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    connect = sqlite3.connect  # from now on every store opens read-only (as root, file modes would not stop writes)
    monkeypatch.setattr(sqlite3, "connect", lambda path, **kw: connect(f"file:{path}?mode=ro", uri=True, **kw))

    again = index_for(settings)
    removed = prune(settings.cache_dir, now=time.time() + MONTH_AND_A_DAY)  # every row is a month old by then

    assert removed == 0
    assert set(again.functions) == set(first.functions)
    monkeypatch.undo()
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM entries").fetchone()[0] == len(first.file_digests)
    assert caplog.messages == [
        f"{store}: cannot write to this cache file (attempt to write a readonly database); what it holds is read, "
        "but it keeps nothing new and is not pruned. Make it writable to keep the work of later builds"
    ]


def test_a_mkdocs_build_with_a_damaged_index_store_makes_it_again_and_says_so(make_project):
    from .conftest import run_cli
    from .test_cli import MKDOCS_YML, SITE_PAGE, mkdocs_build

    root = make_project(
        {"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")}
    )
    store = root / ".cache/docs_hooks/index.sqlite3"
    assert run_cli(root, "relock") == 0  # indexes the code into the store
    data = store.read_bytes()
    store.write_bytes(data[:4096] + b"\xff" * (len(data) - 4096))  # all but its first page overwritten

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stderr
    assert result.stderr.count(".cache/docs_hooks/index.sqlite3") == 1, result.stderr
    assert (
        "INFO    -  .cache/docs_hooks/index.sqlite3: the cache file was damaged (database disk image is "
        "malformed); it is made again\n"
    ) in result.stderr
    assert index_for(load_settings(root)).functions  # made again, whole


# ------------------------------------------------------------------ one store: a SQLite file of entries

REPO = Path(__file__).resolve().parents[2]
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


@pytest.fixture
def notes(caplog):
    """The notes a build shows about its cache (through MkDocs' logger)."""
    caplog.set_level(logging.INFO, logger="mkdocs.plugins.docs_hooks")
    return caplog


@pytest.fixture
def read_only(monkeypatch):
    """Call it, and every store opened from then on can be read but not written, as a cache restored read-only.

    (Taking the write permission away would not do: tests may run as root, who writes anyway.)
    """
    connect = sqlite3.connect

    def from_now_on() -> None:
        monkeypatch.setattr(sqlite3, "connect", lambda path, **kw: connect(f"file:{path}?mode=ro", uri=True, **kw))

    return from_now_on


def damage(path: Path) -> None:
    """Overwrite all of a store but its first page, as a write cut short or another program might."""
    data = path.read_bytes()
    assert len(data) > 4096
    path.write_bytes(data[:4096] + b"\xff" * (len(data) - 4096))


def test_a_store_that_cannot_be_written_is_read_and_not_pruned_and_the_build_says_so_once(tmp_path, read_only, notes):
    now = 1_000_000_000.0
    path = tmp_path / "cache" / "s.sqlite3"
    Store(path).put_many({"a": b"kept"}, now=now - 40 * DAY)
    read_only()

    store = Store(path)
    assert store.get_many(["a"], now=now) == {"a": b"kept"}  # read; marking it as read fails
    store.put_many({"b": b"new"})
    store.close()
    assert prune(tmp_path / "cache", now=now) == 0  # a month old, but the store cannot be changed

    assert notes.messages == [
        f"{path}: cannot write to this cache file (attempt to write a readonly database); what it holds is read, "
        "but it keeps nothing new and is not pruned. Make it writable to keep the work of later builds"
    ]  # once, by the build's store: prune leaves a store it cannot change alone
    assert Store(path).get_many(["a", "b"], now=now) == {"a": b"kept"}


def test_a_store_damaged_inside_is_made_again_and_says_so(tmp_path, notes):
    path = tmp_path / "s.sqlite3"
    Store(path).put_many({f"k{i}": b"x" * 100 for i in range(200)})  # several pages
    damage(path)

    store = Store(path)
    assert store.get_many(["k1"]) == {}  # a miss, not an error
    store.put_many({"k1": b"new"})
    assert store.get_many(["k1"]) == {"k1": b"new"}
    assert notes.messages == [
        f"{path}: the cache file was damaged (database disk image is malformed); it is made again"
    ]


def test_pruning_a_damaged_store_makes_it_again(tmp_path, notes):
    path = tmp_path / "cache" / "s.sqlite3"
    Store(path).put_many({f"k{i}": b"x" * 100 for i in range(200)}, now=1.0)
    damage(path)

    assert prune(tmp_path / "cache") == 0

    assert Store(path).get_many(["k1"]) == {}
    assert notes.messages == [
        f"{path}: the cache file was damaged (database disk image is malformed); it is made again"
    ]


def test_a_file_that_is_not_a_database_is_made_again(tmp_path, notes):
    path = tmp_path / "s.sqlite3"
    path.write_bytes(b"this is not a database, it was cut short or overwritten" * 20)
    store = Store(path)
    assert store.get_many(["a"]) == {}
    store.put_many({"a": b"new"})
    assert store.get_many(["a"]) == {"a": b"new"}
    assert notes.messages == [f"{path}: the cache file was damaged (file is not a database); it is made again"]


def test_a_value_that_is_not_bytes_is_a_miss(tmp_path):
    path = tmp_path / "s.sqlite3"
    Store(path).put_many({"a": b"fine"})
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO entries (key, value, used) VALUES ('b', 'text, not bytes', 0)")

    assert Store(path).get_many(["a", "b"]) == {"a": b"fine"}


def test_a_store_that_cannot_be_opened_gives_misses_and_names_its_file(tmp_path, notes):
    path = tmp_path / "s.sqlite3"
    path.mkdir()  # a folder where the file should be
    store = Store(path)

    assert store.get_many(["a"]) == {}
    store.put_many({"a": b"new"})  # nothing is kept, and nothing fails
    assert store.get_many(["a"]) == {}
    assert store.prune(2e9) == 0
    assert notes.messages == [
        f"{path}: cannot use this cache file (unable to open database file); everything "
        "it would hold is made anew. Delete it to cache again"
    ]


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
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import make_build

    root = make_project({"docs/page.md": "# Page\n\nThe mean $\\mu$.\n"})
    if not (root / "node_modules").exists():
        (root / "node_modules").symlink_to(REPO / "node_modules")
    first = make_build(load_settings(root), coverage=False)
    assert first.workers.math._proc is not None  # running before any page asked for a formula
    first.expand("docs/page.md", (root / "docs/page.md").read_text())
    first.await_background()
    first.workers.math.close()
    assert (root / ".cache/docs_hooks/katex.sqlite3").is_file()

    later = make_build(load_settings(root), coverage=False)
    assert later.workers.math._proc is None  # formulas are cached: KaTeX starts only if one is missing

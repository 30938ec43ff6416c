"""The cache folder keeps what builds use and drops what no build has used for a month; one SQLite file
holds many small entries: read, written, shared, pruned and made again."""

from __future__ import annotations

import json
import logging
import marshal
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from docs_hooks.base.cachedir import (
    MAX_AGE_DAYS,
    PRUNED,
    Store,
    prune,
    prune_if_due,
    read_entry,
    seal,
    unseal,
    used,
    write_entry,
)
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.run.math import MathRenderer

from .conftest import run_cli, write_tree

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


def test_a_folder_is_pruned_at_most_once_a_day(make_project):
    settings = load_settings(make_project())
    cache = settings.cache_dir
    stale = cache / "coverage" / "of-code-that-no-longer-exists.json"
    stale.parent.mkdir(parents=True)
    now = time.time()

    def an_old_entry():
        stale.write_text("{}", encoding="utf-8")
        os.utime(stale, (now - MONTH_AND_A_DAY, now - MONTH_AND_A_DAY))

    an_old_entry()
    assert prune_if_due(cache, now=now) == 1  # never pruned: now
    an_old_entry()
    assert prune_if_due(cache, now=now + 3600) == 0 and stale.exists()  # pruned an hour ago
    assert prune_if_due(cache, now=now + 86400) == 1 and not stale.exists()  # a day later
    assert prune_if_due(None) == 0


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
    # With its seal, as seals() reads it alone: equal seals, equal bytes.
    sealed = store.get_sealed(["a", "b", "nope"])
    assert sealed == {"a": (store.seals(["a"])["a"], b"again"), "b": (store.seals(["b"])["b"], b"second")}
    assert sealed["a"][0] != sealed["b"][0]


def test_many_keys_at_once(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    items = {f"k{i}": str(i).encode() for i in range(1234)}  # more than one query's worth
    store.put_many(items)
    assert store.get_many(list(items)) == items


def test_with_versions_each_group_keeps_the_rows_written_last_and_a_row_written_again_counts_as_new(tmp_path):
    store = Store(tmp_path / "s.sqlite3")
    store.put_many({"other:1": b"o1", "plain": b"p"}, versions=2)
    for n in range(1, 5):
        store.put_many({f"page:{n}": str(n).encode()}, versions=2)
    found = store.get_many([f"page:{n}" for n in range(1, 5)])
    assert found == {"page:3": b"3", "page:4": b"4"}
    store.put_many({"page:3": b"3 again"}, versions=2)  # now the newest: page:4 is the older of the two kept
    store.put_many({"page:5": b"5", "pagex:1": b"x"}, versions=2)
    assert store.get_many(["page:3", "page:4", "page:5"]) == {"page:3": b"3 again", "page:5": b"5"}
    # other groups, a group whose name extends this one's, and keys of no group are left alone
    assert store.get_many(["other:1", "plain", "pagex:1"]) == {"other:1": b"o1", "plain": b"p", "pagex:1": b"x"}
    store.put_many({f"many:{n}": b"v" for n in range(5)}, versions=3)  # more than that in one write: 3 stay
    assert len(store.get_many([f"many:{n}" for n in range(5)])) == 3
    store.put_many({f"all:{n}": b"v" for n in range(4)})  # without versions nothing is deleted
    assert len(store.get_many([f"all:{n}" for n in range(4)])) == 4


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
    assert list(Store(path).get_sealed(["a", "b"])) == ["a"]


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


def test_katex_starts_when_a_page_needs_a_formula_and_a_later_build_with_it_cached_starts_none(make_project):
    if shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir():
        pytest.skip("KaTeX is not installed here: run npm ci")
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import make_build

    root = make_project({"docs/page.md": "# Page\n\nThe mean $\\mu$.\n"})
    if not (root / "node_modules").exists():
        (root / "node_modules").symlink_to(REPO / "node_modules")
    text = (root / "docs/page.md").read_text()
    first = make_build(load_settings(root), coverage=False)
    assert first.workers.math._proc is None  # no page has asked for a formula yet
    first.expand("docs/page.md", text)
    first.await_background()
    assert first.workers.math._proc is not None  # the page's formula went to KaTeX
    first.workers.math.close()
    assert (root / ".cache/docs_hooks/katex.sqlite3").is_file()
    for kept in (root / ".cache/docs_hooks").glob("rendered.sqlite3*"):  # the page itself is not read back
        kept.unlink()

    later = make_build(load_settings(root), coverage=False)
    assert "katex" in "".join(p if isinstance(p, str) else p.html for p in later.expand("docs/page.md", text).parts)
    assert later.workers.math._proc is None  # the formula was read back: KaTeX never started


# ------------------------------------------------------------------ any value in any column is a miss
#
# What a cache holds may have been cut short, overwritten or restored from elsewhere. The tests below write
# values of every SQLite type into every column of a store (the columns read from SQLite, so a new one is
# covered too) and check what a reader then gets: the bytes that were stored for that key, or nothing.

SQLITE_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),  # NaN among them: SQLite keeps it as NULL
    st.text(max_size=40),
    st.binary(max_size=40),
)
ROWS = {f"key-{i}": f"value {i}".encode() * (i + 1) for i in range(3)}


def columns(db: sqlite3.Connection, table: str = "entries") -> list[str]:
    return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]


def overwrite(db: sqlite3.Connection, rowid: int, column: str, value) -> bool:
    """Write ``value`` into one cell, as another program might; whether SQLite took it (it refuses a NULL in a
    NOT NULL column and a key written twice)."""
    try:
        with db:
            db.execute(f'UPDATE entries SET "{column}" = ? WHERE rowid = ?', (value, rowid))
    except sqlite3.IntegrityError:
        return False
    return True


DAMAGE = ["keep", "any value", "sealed", "one byte changed", "cut short"]


def draw_damage(data, current, key: str, payloads: list[bytes] | None, label: str):
    """What one cell (or file) holding ``current`` is overwritten with; None to keep it. With ``payloads``, some
    are bytes (some of them payloads) sealed as the build seals them under ``key``, so that they reach the
    reader's own checks."""
    how = data.draw(st.sampled_from(DAMAGE if payloads is not None else DAMAGE[:2] + DAMAGE[3:]), label=label)
    if how == "keep":
        return None
    if how == "sealed":
        return seal(key, data.draw(st.binary(max_size=40) | st.sampled_from(payloads), label="sealed"))
    if how == "any value" or type(current) not in (bytes, str) or not current:
        return data.draw(SQLITE_VALUES, label="value")
    at = data.draw(st.integers(0, len(current) - 1), label="at")
    if how == "cut short" or type(current) is str:
        return current[:at]
    flip = data.draw(st.integers(1, 255), label="xor")
    return current[:at] + bytes([current[at] ^ flip]) + current[at + 1 :]


def store_columns() -> list[str]:
    """The columns of a store's table, read from a store the Store made."""
    folder = Path(tempfile.mkdtemp())
    try:
        store = Store(folder / "s.sqlite3")
        store.put_many({"k": b"v"})
        store.close()
        with closing(sqlite3.connect(folder / "s.sqlite3")) as db:
            return columns(db)
    finally:
        shutil.rmtree(folder)


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.data())
def test_a_value_of_any_type_in_any_column_of_a_store_is_a_miss_and_is_made_again(data):
    now = 1_000_000_000.0
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "s.sqlite3"
        Store(path).put_many(ROWS, now=now - 2 * DAY)
        with closing(sqlite3.connect(path)) as db:
            names = columns(db)
            before = db.execute(f"SELECT rowid, {', '.join(names)} FROM entries ORDER BY rowid").fetchall()
            for rowid, *cells in before:
                key = cells[names.index("key")]
                for column, current in zip(names, cells):
                    value = draw_damage(data, current, key, None, f"{key} {column}")
                    if value is not None:
                        overwrite(db, rowid, column, value)
            after = db.execute("SELECT key, value FROM entries").fetchall()
        intact = {key for key, value in after if type(key) is str and value == seal(key, ROWS.get(key, b""))}

        store = Store(path)
        got = store.get_many(list(ROWS), now=now)
        assert got == {key: ROWS[key] for key in intact}  # never other bytes, never an error
        store.put_many({key: data for key, data in ROWS.items() if key not in got}, now=now)
        assert store.get_many(list(ROWS), now=now) == ROWS  # made again
        store.close()
        with closing(sqlite3.connect(path)) as db:
            times = dict(db.execute("SELECT key, used FROM entries"))
        assert all(type(times[key]) is float for key in ROWS)  # each read marked as a time again
        prune(folder, now=now)  # whatever the other rows hold
        assert Store(path).get_many(list(ROWS), now=now) == ROWS
    finally:
        shutil.rmtree(folder)


def test_a_sealed_entry_reads_back_only_under_its_own_key_and_bytes():
    sealed = seal("a", b"data")
    assert unseal("a", sealed) == b"data"
    assert unseal("b", sealed) is None  # moved to another key
    assert unseal("a", sealed[:-1]) is None  # cut short
    assert unseal("a", sealed[:-1] + b"D") is None  # one byte changed
    assert unseal("a", sealed.decode()) is None  # not bytes
    assert unseal("a", b"data") is None  # never sealed
    assert sealed.endswith(b"\ndata")  # an entry of text stays text


def test_a_damaged_entry_file_is_a_miss_and_is_removed(tmp_path):
    path = tmp_path / "coverage" / "entry.json"
    write_entry(path, b'{"a": 1}')
    assert read_entry(path) == b'{"a": 1}'
    path.write_bytes(path.read_bytes()[:-2])
    assert read_entry(path) is None
    assert not path.exists()  # made again by whoever needs it
    assert read_entry(tmp_path / "missing.json") is None


# ------------------------------------------------------------------ a build over a damaged cache
#
# A tiny project that has an entry of every kind the cache holds: the code index, a parsed page, two
# formulas, a recorded example, the coverage run's line map and the compiled specification. It is built
# once; then, for each kind, Hypothesis damages its entries and the project is built again with `mkdocs
# build --strict` in a child process whose audit hook watches for code run from the cache (an unpickled
# global; marshal, compile or exec of what was written into the cache; a command carrying it). The
# payloads among the damage would show if they ran: each writes a file. Each damaged entry must be made
# again as it was, and the page must come out as it did. Two kinds are tested at a time, each in a copy of
# the project of its own, their builds side by side (a build keeps one core busy).

FUZZ_FILES = {
    "pyproject.toml": """\
[project]
name = "tiny"
version = "0.0.0"

[tool.docs_hooks]
repo_url = "https://example.com/repo"
ref = "abc123"
coverage_tests = ["tests"]
spec_source = "spec/model.typ"
spec_pdf = "spec/model.pdf"
""",
    "src/ops.py": "def double(x):\n    y = x * 2\n    return y\n",
    "tests/test_ops.py": (
        "import numpy as np\n\nfrom ops import double\n\n\ndef test_double():\n"
        "    x = np.arange(3.0)\n    assert double(x).sum() == 6.0\n"
    ),
    "spec/model.typ": (
        '#set heading(numbering: "1.1")\n#set math.equation(numbering: "(1)")\n= Doubling\n$ y = 2 x $ <eq:double>\n'
    ),
    "mkdocs.yml": "site_name: Tiny\ntheme:\n  name: mkdocs\nplugins:\n  - docs_hooks\nmarkdown_extensions:\n"
    "  - pymdownx.superfences\n",
    "docs/index.md": """\
# Doubling

```trace-entry
title: Doubling
function: ops.double
status: implemented
spec: [eq:double]
```

```trace-equation
id: double
title: Twice the input
tex: y = 2 x
code: y = x * 2
```

```trace-example
test: tests/test_ops.py::test_double
title: A worked example
show:
  - label: Input
    code: x
  - label: Output
    code: y
```

The mean $\\mu = \\frac{1}{d}\\sum_j x_j$ is doubled at [[ops.double: y = x * 2]].
""",
}

# The audit hook of the build's process: argv is the payloads' marker, the file to report to, then the
# arguments of what runs under it.
AUDIT_HOOK = """\
import sys

marker, report = sys.argv[1], sys.argv[2]
sys.argv = ["mkdocs", *sys.argv[3:]]


def holds_marker(value) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return marker.encode() in bytes(value)
    if isinstance(value, str):
        return marker in value
    if hasattr(value, "co_consts"):
        return any(holds_marker(c) for c in value.co_consts) or holds_marker(value.co_filename)
    if isinstance(value, (tuple, list)):
        return any(holds_marker(v) for v in value)
    return False


def hook(event, args):
    ran = event == "pickle.find_class" or (
        event in ("marshal.loads", "compile", "exec", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn")
        and holds_marker(args)
    )
    if ran:
        with open(report, "a", encoding="utf-8") as out:
            out.write(f"{event}: {args!r:.200}\\n")


sys.addaudithook(hook)
"""
AUDITED_BUILD = AUDIT_HOOK + "from mkdocs.__main__ import cli\n\ncli()\n"


def audited_build(root: Path, marker: str, report: Path) -> subprocess.Popen:
    """The build of ``root`` under the audit hook, started (``finished`` waits for it)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": "0", "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        [sys.executable, "-c", AUDITED_BUILD, marker, str(report), "build", "--strict", "-f", "mkdocs.yml"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(build: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = build.communicate(timeout=300)
    return subprocess.CompletedProcess(build.args, build.returncode, out, err)


STORES = ("index", "pages", "katex", "recordings", "rendered", "listings", "residue", "fences")
FILES = ("coverage", "spec")


def store_contents(path: Path) -> dict:
    """key -> (the bytes stored for it, whether its last read is a time), for the rows whose value is whole."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT key, value, used FROM entries").fetchall()
    whole = {key: unseal(key, value) for key, value, _ in rows if type(key) is str}
    return {key: (whole[key], type(used) is float) for key, _, used in rows if whole.get(key) is not None}


def file_contents(folder: Path) -> dict:
    return {p.name: unseal(p.name, p.read_bytes()) for p in sorted(folder.iterdir())}


class Payloads:
    """Entries that would run code if a reader unpickled, unmarshalled or executed them: each writes ``ran``."""

    def __init__(self, ran: Path):
        self.marker = f"docs-hooks-payload-{os.getpid()}"
        source = f"open({str(ran)!r}, 'w').write({self.marker!r})"

        class Runs:
            def __reduce__(self):
                return exec, (source,)

        self.all = [
            pickle.dumps(Runs()),
            marshal.dumps(compile(source, self.marker, "exec")),
            source.encode(),
            # Near what a reader takes, but not it: a page's segment without its line, an index of other sources.
            json.dumps({"segments": [["markdown", source]], "problems": [], "digest": source}).encode(),
            json.dumps({"schema": 1, "key": source, "refs": [], "warnings": [source], "unnumbered": []}).encode(),
        ]


@pytest.mark.parametrize(
    "how, event",
    [
        ("import pickle; pickle.loads(payloads[0])", "pickle.find_class"),
        ("import marshal; exec(marshal.loads(payloads[1]))", "marshal.loads"),
        ("exec(payloads[2].decode())", "compile"),
    ],
)
def test_the_audit_hook_of_the_damaged_builds_sees_a_payload_that_runs(tmp_path, how, event):
    payloads = Payloads(tmp_path / "payload-ran")
    hexed = tmp_path / "payloads.json"  # in hex, so that reading them compiles nothing that holds the marker
    hexed.write_text(json.dumps([p.hex() for p in payloads.all]), encoding="utf-8")
    code = AUDIT_HOOK + f"import json\npayloads = [bytes.fromhex(h) for h in json.load(open({str(hexed)!r}))]\n{how}\n"

    done = subprocess.run(
        [sys.executable, "-c", code, payloads.marker, str(tmp_path / "audit.txt")], capture_output=True, text=True
    )

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "payload-ran").read_text() == payloads.marker  # the payload ran
    assert [line.split(":")[0] for line in (tmp_path / "audit.txt").read_text().splitlines()][0] == event


@dataclass
class Fuzzed:
    """A copy of the tiny project after its first build."""

    root: Path
    built: Path  # its cache as the first build left it
    page: str  # the page as built
    payloads: Payloads


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory) -> list[Fuzzed]:
    """Two copies of the tiny project, each built once (side by side)."""
    if shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir():
        pytest.fail("KaTeX is not installed here: run npm ci (make setup)")
    roots = [write_tree(tmp_path_factory.mktemp("fuzz") / "proj", FUZZ_FILES) for _ in range(2)]
    started = []
    for root in roots:
        (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
        assert run_cli(root, "relock") == 0
        payloads = Payloads(root / "payload-ran")
        started.append((root, payloads, audited_build(root, payloads.marker, root / "audit.txt")))
    copies = []
    for root, payloads, build in started:
        first = finished(build)
        assert first.returncode == 0, first.stderr
        cache = root / ".cache" / "docs_hooks"
        entries = sorted(p.name for p in cache.iterdir() if p.name != PRUNED)  # that file holds nothing: its time
        assert entries == sorted([*(f"{s}.sqlite3" for s in STORES), *FILES])
        built = tmp_path_factory.mktemp("fuzz") / "built"
        shutil.copytree(cache, built)
        copies.append(Fuzzed(root, built, (root / "site" / "index.html").read_text(encoding="utf-8"), payloads))
    return copies


KINDS = STORES + FILES


@pytest.mark.parametrize("kinds", [KINDS[i : i + 2] for i in range(0, len(KINDS), 2)], ids="+".join)
def test_a_build_over_any_damage_to_a_cache_entry_succeeds_runs_none_of_it_and_makes_it_again(fuzzed, kinds):
    # Not shrunk: each attempt is a build. A failure shows every damage it wrote.
    @settings(
        max_examples=8,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(data=st.data())
    def build_over_damage(data):
        started = [(kind, copy, *damage_and_build(kind, copy, data)) for kind, copy in zip(kinds, fuzzed)]
        ended = [(kind, copy, damaged, finished(build)) for kind, copy, damaged, build in started]  # both, first
        for kind, copy, damaged, result in ended:
            cache = copy.root / ".cache" / "docs_hooks"
            why = f"{kind}: {damaged}"
            assert result.returncode == 0 and "Traceback" not in result.stderr, f"{why}\n{result.stderr}"
            assert not (copy.root / "audit.txt").exists(), (copy.root / "audit.txt").read_text()
            assert not (copy.root / "payload-ran").exists()
            assert (copy.root / "site" / "index.html").read_text(encoding="utf-8") == copy.page, why
            if kind in STORES:
                stored = f"{kind}.sqlite3"
                before, after = store_contents(copy.built / stored), store_contents(cache / stored)
                assert {key: after.get(key) for key in before} == before, why
            else:
                assert_files_made_again(copy.built / kind, cache / kind, copy.root)

    def damage_and_build(kind: str, copy: Fuzzed, data) -> tuple[list, subprocess.Popen]:
        cache = copy.root / ".cache" / "docs_hooks"
        shutil.rmtree(cache)
        shutil.copytree(copy.built, cache)
        if kind != "rendered":  # the pages the first build rendered would be read back: the damage never read
            (cache / "rendered.sqlite3").unlink()
        payloads = copy.payloads.all
        if kind in STORES:
            damaged = damage_store(cache / f"{kind}.sqlite3", data, payloads)
        else:
            damaged = damage_files(cache / kind, data, payloads)
        return damaged, audited_build(copy.root, copy.payloads.marker, copy.root / "audit.txt")

    def damage_store(path: Path, data, payloads: list[bytes]) -> list:
        done = []
        with closing(sqlite3.connect(path)) as db:
            names = columns(db)
            for rowid, *cells in db.execute(f"SELECT rowid, {', '.join(names)} FROM entries ORDER BY rowid").fetchall():
                key = cells[names.index("key")]
                for column, current in zip(names, cells):
                    value = draw_damage(data, current, key, payloads, f"{key[:8]} {column}")
                    if value is not None and overwrite(db, rowid, column, value):
                        done.append((key[:8], column, value))
        return done

    def damage_files(folder: Path, data, payloads: list[bytes]) -> list:
        done = []
        for path in sorted(folder.iterdir()):
            value = draw_damage(data, path.read_bytes(), path.name, payloads, path.name)
            if value is not None:
                path.write_bytes(value if type(value) is bytes else str(value).encode())
                done.append((path.name, value))
        return done

    build_over_damage()


def assert_files_made_again(built: Path, folder: Path, root: Path) -> None:
    before, after = file_contents(built), file_contents(folder)
    assert set(after) == set(before)
    for name, data in before.items():
        if name.endswith(".pdf"):  # Typst writes a new document id each time: a PDF, the one the site ships
            assert after[name].startswith(b"%PDF") and after[name] == (root / "site/spec/model.pdf").read_bytes()
        else:
            assert after[name] == data, name

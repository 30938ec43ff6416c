"""The cache folder keeps what builds use and drops what no build has used for a month."""

from __future__ import annotations

import os
import time

from docs_hooks.cachedir import MAX_AGE_DAYS, prune, used
from docs_hooks.project import index_for
from docs_hooks.settings import load_settings

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

    root = make_project({"mkdocs.yml": MKDOCS_YML,
                         "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")})
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

    root = make_project({"mkdocs.yml": MKDOCS_YML,
                         "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")})
    store = root / ".cache/docs_hooks/index.sqlite3"
    assert run_cli(root, "relock") == 0  # indexes the code into the store
    data = store.read_bytes()
    store.write_bytes(data[:4096] + b"\xff" * (len(data) - 4096))  # all but its first page overwritten

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stderr
    assert result.stderr.count(".cache/docs_hooks/index.sqlite3") == 1, result.stderr
    assert ("INFO    -  .cache/docs_hooks/index.sqlite3: the cache file was damaged (database disk image is "
            "malformed); it is made again\n") in result.stderr
    assert index_for(load_settings(root)).functions  # made again, whole

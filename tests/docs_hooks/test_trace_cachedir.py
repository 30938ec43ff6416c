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
    from .test_trace_cli import MKDOCS_YML, SITE_PAGE, mkdocs_build

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

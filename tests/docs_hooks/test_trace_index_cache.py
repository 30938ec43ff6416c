"""The code index keeps what each file contributes in the cache folder, keyed by the file's text."""

from __future__ import annotations

import json
import pickle
import sqlite3

import pytest

from docs_hooks import codeindex
from docs_hooks.errors import TraceError
from docs_hooks.project import index_for
from docs_hooks.settings import load_settings


def summary(index):
    """Everything the index answers, as plain values (for comparing two indexes)."""
    return (
        {n: (f.repo_path, f.start, f.end, f.params, [s.tokens for s in f.statements], f.local_names)
         for n, f in index.functions.items()},
        sorted((c.caller, c.callee, c.line) for c in index.calls),
        sorted((r.reader, r.base, r.attr, r.line) for r in index.attribute_reads),
        dict(index.classes),
        dict(index.file_digests),
    )


@pytest.fixture
def counted(monkeypatch):
    """How many files were parsed (not read back from the cache)."""
    parsed = []
    original = codeindex._index_file

    def spy(text, digest, file, root, project_root):
        parsed.append(file.name)
        return original(text, digest, file, root, project_root)

    monkeypatch.setattr(codeindex, "_index_file", spy)
    return parsed


def test_an_unchanged_file_is_read_back_and_gives_the_same_index(make_project, counted):
    settings = load_settings(make_project())
    first = index_for(settings)
    n_files = len(counted)
    assert n_files >= 3

    again = index_for(settings)

    assert len(counted) == n_files  # nothing parsed the second time
    assert summary(again) == summary(first)
    assert again.calls_to("ops.layer_norm_forward")  # calls are resolved across cached files too


def test_an_edited_file_is_parsed_again_and_the_index_shows_the_edit(make_project, counted):
    root = make_project()
    settings = load_settings(root)
    index_for(settings)
    counted.clear()
    ops = root / "src/ops.py"
    ops.write_text(ops.read_text(encoding="utf-8") + "\n\ndef added(x):\n    return x + 1\n", encoding="utf-8")

    index = index_for(settings)

    assert counted == ["ops.py"]
    assert "ops.added" in index.functions


def rows(store) -> list[bytes]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT value FROM entries")]


def set_rows(store, value) -> None:
    with sqlite3.connect(store) as db:
        db.execute("UPDATE entries SET value = ?", (value,))


@pytest.mark.parametrize("damaged", [
    b"not json",
    b'{"digest": "x"}',  # JSON, but not an entry
    b"[" * 100_000,  # nested deeper than a reader can follow
    "text, not bytes",
])
def test_a_damaged_cache_entry_is_indexed_again(make_project, counted, damaged):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    set_rows(store, damaged)
    counted.clear()

    again = index_for(settings)

    assert len(counted) >= 3
    assert summary(again) == summary(first)
    assert all(json.loads(v)["digest"] for v in rows(store))  # rewritten whole, as JSON


def test_an_entry_whose_lines_do_not_fit_the_file_is_indexed_again(make_project, counted):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    with sqlite3.connect(store) as db:
        for key, value in list(db.execute("SELECT key, value FROM entries")):
            entry = json.loads(value)
            for statement in entry["statements"]:
                statement[1] += 1000  # past the end of the file
            db.execute("UPDATE entries SET value = ? WHERE key = ?", (json.dumps(entry).encode(), key))
    counted.clear()

    again = index_for(settings)

    assert len(counted) >= 3
    assert summary(again) == summary(first)


def _wrong(entry: dict, where: str) -> bool:
    """Put a value of the wrong type (or out of range) at ``where`` in an entry; whether the entry has that place."""
    fn = entry["functions"][0] if entry["functions"] else None
    if where == "tokens" and entry["statements"]:
        entry["statements"][0][2] = 5
    elif where == "is_test" and fn is not None:
        fn["is_test"] = 1  # an int, not a bool
    elif where == "param" and fn is not None:
        fn["params"].append(3)
    elif where == "read line" and entry["reads"]:
        entry["reads"][0][4] = True  # a bool, not an int
    elif where == "call statement" and entry["pending"]:
        entry["pending"][0][4] = -1  # before the first statement
    elif where == "short row" and entry["pending"]:
        entry["pending"][0].pop()
    else:
        return False
    return True


@pytest.mark.parametrize("where", ["tokens", "is_test", "param", "read line", "call statement", "short row"])
def test_an_entry_with_a_value_of_the_wrong_type_is_indexed_again(make_project, counted, where):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    changed = 0
    with sqlite3.connect(store) as db:
        for key, value in list(db.execute("SELECT key, value FROM entries")):
            entry = json.loads(value)
            if _wrong(entry, where):
                changed += 1
                db.execute("UPDATE entries SET value = ? WHERE key = ?", (json.dumps(entry).encode(), key))
    assert changed >= 1
    counted.clear()

    again = index_for(settings)

    assert len(counted) == changed  # those entries, and only those, were indexed again
    assert summary(again) == summary(first)


class WritesAFile:
    """A pickle that, when read with pickle.loads, creates ``path``: what a tampered cache could hold."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def test_a_pickle_in_the_cache_is_a_miss_and_never_runs(make_project, counted, tmp_path):
    armed = tmp_path / "written-by-pickle-loads"
    pickle.loads(pickle.dumps(WritesAFile(armed))).close()
    assert armed.exists()  # the payload works: reading it with pickle runs it
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    target = tmp_path / "written-by-the-cache"
    set_rows(store, pickle.dumps(WritesAFile(target)))
    counted.clear()

    again = index_for(settings)

    assert not target.exists()
    assert len(counted) >= 3  # every file was indexed again
    assert summary(again) == summary(first)
    assert all(json.loads(v)["digest"] for v in rows(store))


def test_a_file_that_is_not_utf8_is_an_error_naming_it(make_project):
    root = make_project()
    (root / "src/latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))

    with pytest.raises(TraceError, match=r"^src/latin.py:1: cannot read: not UTF-8 .*save the file as UTF-8"):
        index_for(load_settings(root))


def test_a_build_keeps_its_objects_out_of_garbage_collection_and_hands_them_back_at_its_end(make_project):
    import gc

    from docs_hooks.project import expand_site, make_builder

    gc.unfreeze()
    settings = load_settings(make_project())
    builder = make_builder(settings)
    assert gc.isenabled()  # paused only while the builder was made
    assert gc.get_freeze_count() > 0  # the index and the parsed pages are skipped by collections

    expand_site(settings, builder)

    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_the_mkdocs_plugin_keeps_a_build_frozen_until_the_next_build_of_the_process(make_project, monkeypatch):
    """After `mkdocs build` the process ends: unfreezing then would only make the collector walk everything."""
    import gc
    from types import SimpleNamespace

    from docs_hooks import gcpause
    from docs_hooks.plugin import TracePlugin

    gc.unfreeze()
    plugin = TracePlugin()
    plugin.load_config({})
    root = make_project()
    config = SimpleNamespace(config_file_path=str(root / "mkdocs.yml"), docs_dir=str(root / "docs"), extra_css=[],
                             extra_javascript=[])
    plugin.on_config(config)
    plugin.on_post_build(config=config)
    frozen = gc.get_freeze_count()
    assert frozen > 0  # still frozen after the build

    calls = []
    monkeypatch.setattr(gcpause, "unfreeze", lambda: calls.append("unfreeze") or gc.unfreeze())
    monkeypatch.setattr(gcpause, "freeze", lambda: calls.append("freeze") or gc.freeze())
    (root / "src/ops.py").write_text((root / "src/ops.py").read_text() + "\n")  # a new builder is made
    plugin.on_config(config)  # the next build of a serve process
    assert calls[0] == "unfreeze" and calls[-1] == "freeze"

    plugin.on_build_error(error=RuntimeError("a failed build"))
    plugin.on_shutdown()
    assert gc.get_freeze_count() == 0 and gc.isenabled()

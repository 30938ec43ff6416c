"""docs_hooks.resolve.indexstore: what the cache folder keeps of each file's part of the code index, keyed by the
file's text: read back when the file is unchanged, made again when it changed or the entry is damaged, of an
earlier form, or anything but the data it writes (a pickle never runs)."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve import indexing
from docs_hooks.resolve.codeindex import FileIndex, Root
from docs_hooks.resolve.indexstore import decode_part, encode_part
from docs_hooks.resolve.readfile import index_file

from .conftest import BASE_FILES, mutated, store_rows, stored_rows, write_tree

# What each file contributes is kept in the cache folder, keyed by the file's text.


def summary(index):
    """Everything the index answers, as plain values (for comparing two indexes)."""
    return (
        {
            n: (f.repo_path, f.start, f.end, f.params, [s.tokens for s in f.statements], f.local_names)
            for n, f in index.functions.items()
        },
        sorted((c.caller, c.callee, c.line, c.via, c.written) for c in index.calls),
        sorted((u.caller, u.method, u.written, u.line) for u in index.unresolved),
        sorted((r.reader, r.base, r.attr, r.line) for r in index.attribute_reads),
        dict(index.classes),
        dict(index.file_digests),
    )


@pytest.fixture
def counted(monkeypatch):
    """How many files were parsed (not read back from the cache)."""
    parsed = []
    original = indexing.index_file

    def spy(text, digest, file, *rest):
        parsed.append(file.name)
        return original(text, digest, file, *rest)

    monkeypatch.setattr(indexing, "index_file", spy)
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
    return list(stored_rows(store).values())


def set_rows(store, value) -> None:
    store_rows(store, dict.fromkeys(stored_rows(store), value))


@pytest.mark.parametrize(
    "damaged",
    [
        b"not json",
        b'{"digest": "x"}',  # JSON, but not an entry
        b"[" * 100_000,  # nested deeper than a reader can follow
        "text, not bytes",
    ],
)
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
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        for statement in entry["statements"]:
            statement[1] += 1000  # past the end of the file
        store_rows(store, {key: json.dumps(entry).encode()})
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
        entry["pending"][0][3] = -1  # before the first statement
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
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        if _wrong(entry, where):
            changed += 1
            store_rows(store, {key: json.dumps(entry).encode()})
    assert changed >= 1
    counted.clear()

    again = index_for(settings)

    assert len(counted) == changed  # those entries, and only those, were indexed again
    assert summary(again) == summary(first)


def test_an_entry_of_the_earlier_form_is_indexed_again(make_project, counted):
    """Entries are keyed by the code that reads them, so an earlier version's are never looked up; one found
    under a current key all the same (its import tables, its calls by dotted name) is a miss too."""
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    earlier = {}
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        for new in ("module", "names", "stars", "exports", "scopes", "attrs"):
            del entry[new]
        entry["tables"] = [{}]
        entry["pending"] = [["f", "m", ["g"], 1, 0, 0, None, 0] for _ in entry["pending"]]
        earlier[key] = json.dumps(entry).encode()  # sealed as the build seals an entry: only its form is wrong
    store_rows(store, earlier)
    counted.clear()

    again = index_for(settings)

    assert len(counted) == len(again.file_digests)
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


@pytest.fixture(scope="module")
def indexed_file(tmp_path_factory):
    """(an entry of the cache as the build writes it for one file, the file, its text)."""
    root = write_tree(tmp_path_factory.mktemp("entry"), BASE_FILES)
    file = root / "src/model.py"
    text = file.read_text(encoding="utf-8")
    part = index_file(text, "digest", file, Root(root / "src", root / "src", False), root, "model")
    return json.loads(encode_part(part)), file, text


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_entry_of_nearly_the_right_form_is_a_file_index_or_a_miss_never_an_error(indexed_file, data):
    entry, file, text = indexed_file
    raw = data.draw(st.binary() | st.just(json.dumps(mutated(data, entry)).encode()), label="entry")

    part = decode_part(raw, file, text)

    assert part is None or type(part) is FileIndex

"""docs_hooks.run.record_store: the recordings store reads back only what it wrote, as data (a row that would run
code, or data in another form, is recorded again), leaves out what is too large, and keeps within its bound."""

import pytest

from docs_hooks.base.cachedir import Store
from docs_hooks.run import record_store
from docs_hooks.run.record_store import ReadBack, stored_form, write_recordings
from docs_hooks.run.recording import Call, Recording, pack, unpack

from .conftest import expand_page, make_recorder, store_rows, stored_rows
from .test_record import NOISY, misbehaving, problems


def test_cache_rows_are_read_as_data_so_a_row_that_would_run_code_is_a_miss(make_project, tmp_path):
    import pickle

    root = misbehaving(make_project, "test_rows_have_zero_mean")
    first = expand_page(root)
    assert problems(first) == []
    store = root / ".cache/docs_hooks/recordings.sqlite3"
    marker = tmp_path / "ran"

    class Writes:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    store_rows(store, dict.fromkeys(stored_rows(store), pickle.dumps(Writes())))  # sealed: the reader must refuse it

    again = expand_page(root, rendered=False)

    assert not marker.exists()
    assert problems(again) == [] and again.markdown == first.markdown  # recorded again
    values = list(stored_rows(store).values())
    assert values and all(unpack(v)["recording"].request for v in values)  # rewritten as data


def _not_the_stored_form(stored: dict, how: str) -> dict:
    """An entry that reads back as data, but not as what the build stores."""
    depends, rec = stored["depends"], stored["recording"]
    if how == "a digest that is a number":
        return {"depends": {**depends, "functions": dict.fromkeys(depends["functions"], [5, 1])}, "recording": rec}
    if how == "a file named by a tuple":
        return {"depends": {**depends, "files": {("src", "ops.py"): "x"}}, "recording": rec}
    if how == "not a recording":
        return {"depends": depends, "recording": "a recording"}
    if how == "calls that are not calls":
        return {"depends": depends, "recording": Recording(rec.request, [1, "two"], rec.files, rec.result)}
    call = rec.calls[0]
    return {
        "depends": depends,
        "recording": Recording(rec.request, [Call(call.function, None, "3", call.args, [], None)], rec.files),
    }


@pytest.mark.parametrize(
    "how",
    [
        "a digest that is a number",
        "a file named by a tuple",
        "not a recording",
        "calls that are not calls",
        "a call of the wrong types",
    ],
)
def test_a_stored_entry_that_is_data_but_not_a_recording_is_recorded_again(make_project, how):
    root = misbehaving(make_project, "test_rows_have_zero_mean")
    first = expand_page(root)
    store = root / ".cache/docs_hooks/recordings.sqlite3"
    rows = stored_rows(store)
    store_rows(store, {key: pack(_not_the_stored_form(unpack(value), how)) for key, value in rows.items()})

    again = expand_page(root, rendered=False)

    assert problems(again) == [] and again.markdown == first.markdown  # recorded again
    assert recorded(stored_rows(store)) == recorded(rows)  # and stored as it was


def recorded(rows: dict) -> dict:
    """What the recordings store holds, as plain values: each recording's request and the functions it saw."""
    return {key: (rec.request, [c.function for c in rec.calls]) for key, rec in recordings(rows).items()}


def recordings(rows: dict) -> dict:
    return {key: unpack(value)["recording"] for key, value in rows.items()}


def test_the_recordings_store_keeps_within_its_bound_and_gives_back_the_space_of_deleted_rows(tmp_path, monkeypatch):
    import time

    cache = tmp_path / "cache"
    store_path = cache / "recordings.sqlite3"
    rec = make_recorder(tmp_path, "noisy", NOISY, cache=cache)
    rec.store.put_many({"old": b"o" * 3_000_000}, now=1.0)
    rec.store.put_many({"mid": b"m" * 3_000_000}, now=2.0)
    rec.store.put_many({"new": b"n" * 3_000_000}, now=3.0)
    monkeypatch.setattr(record_store, "MAX_STORE_BYTES", 7_000_000)
    rec.close()

    assert store_path.stat().st_size < 7_000_000  # the least recently read went, and its space with it
    again = make_recorder(tmp_path, "noisy", NOISY, cache=cache)
    assert sorted(again.store.get_many(["old", "mid", "new"])) == ["mid", "new"]
    again.store.prune(before=time.time() + 10)  # as the cache's pruning deletes rows no build used for a while
    again.close()
    assert store_path.stat().st_size < 100_000


def test_the_stored_form_is_a_recording_of_calls_of_plain_types():
    call = Call("ops.f", None, 3, {"x": 1}, {"y": 2}, 2)

    assert stored_form(Recording("tests/t.py::test_f", [call], ["src/ops.py"]))
    assert not stored_form({"request": "tests/t.py::test_f"})
    assert not stored_form(Recording("tests/t.py::test_f", [call], [("src", "ops.py")]))
    assert not stored_form(Recording("tests/t.py::test_f", [Call("ops.f", 5, 3, {}, {}, None)], []))
    assert not stored_form(Recording("tests/t.py::test_f", [Call("ops.f", None, 3, {}, [], None)], []))


def test_pending_recordings_are_written_in_one_go_and_one_too_large_is_left_out(tmp_path, monkeypatch):
    store = Store(tmp_path / "recordings.sqlite3")
    small, large = Recording("small", [], [], 1), Recording("large", [], [], "x" * 1000)
    pending = {"a": ({"functions": {}}, small), "b": ({}, large)}
    monkeypatch.setattr(record_store, "MAX_STORED_BYTES", 500)

    write_recordings(store, pending)

    assert pending == {}  # emptied: each is written once
    rows = store.get_many(["a", "b"])
    assert list(rows) == ["a"] and unpack(rows["a"]) == {"depends": {"functions": {}}, "recording": small}
    write_recordings(None, {"c": ({}, small)})  # no store (no cache folder): nothing to write
    store.close()


def test_an_entry_read_back_is_unpacked_once_while_its_row_is_as_it_was(tmp_path, monkeypatch):
    store = Store(tmp_path / "recordings.sqlite3")
    first = {"depends": {}, "recording": Recording("a", [], [], 1)}
    store.put_many({"a": pack(first), "b": pack({"depends": {}, "recording": Recording("b")}), "bad": b"not packed"})
    fetched: list[list[str]] = []
    sealed: list[list[str]] = []  # the keys whose seals alone were read
    real, real_seals = Store.get_sealed, Store.seals
    monkeypatch.setattr(Store, "get_sealed", lambda self, keys, **kw: fetched.append(sorted(keys)) or real(self, keys))
    monkeypatch.setattr(Store, "seals", lambda self, keys: sealed.append(sorted(keys)) or real_seals(self, keys))
    read_back = ReadBack()

    one = read_back.read(store, ["a", "b", "bad", "missing"])
    assert sorted(one) == ["a", "b"] and one["a"] == first  # a damaged row and a missing one are left out
    assert sealed == []  # nothing unpacked before: each row read once, with its seal
    read_back.new_build()  # a serve session's next build: the same rows are not read or unpacked again
    two = read_back.read(store, ["a", "b"])
    assert two["a"] is one["a"] and two["b"] is one["b"]
    assert fetched == [["a", "b", "bad", "missing"], []] and sealed == [["a", "b"]]

    changed = {"depends": {}, "recording": Recording("a", [], [], 2)}
    store.put_many({"a": pack(changed)})  # recorded again: another seal
    assert read_back.read(store, ["a"])["a"] == changed and fetched[-1] == ["a"]
    read_back.new_build()
    read_back.new_build()  # a build that read nothing (a prose edit) does not count: b is kept
    assert read_back.read(store, ["b"])["b"] is one["b"]
    for _ in range(2):
        read_back.new_build()
        read_back.read(store, ["a"])
    read_back.new_build()  # two builds that read the store but not b: it is read from the store again
    assert read_back.read(store, ["b"])["b"] is not one["b"] and fetched[-1] == ["b"]
    store.close()

"""docs_hooks.run.coverage_map: the line map (which tests ran each line, and the calls each made) as it is read,
written and kept. (The run that measures it: test_coverage_run.py; the map carried over to edited code:
test_carried.py.)"""

from __future__ import annotations

import json
import time

import pytest

from docs_hooks.base.cachedir import write_entry
from docs_hooks.run.coverage_map import (
    LAST_MAP,
    MAPS_KEPT,
    CoverageMap,
    MapOf,
    map_text,
    read_cached_map,
    read_map,
    write_map,
)

MAP = CoverageMap(
    {"src/ops.py": {3: ["tests/test_ops.py::test_a"], 4: ["tests/test_ops.py::test_a", "tests/test_ops.py::test_b"]}},
    {"tests/test_ops.py::test_b": [[None, "ops.clip", 4, ""], ["ops.clip", "ops.scale", 5, "ops.Layer.__call__"]]},
)


def test_the_tests_running_any_line_of_a_span_each_once_in_order():
    assert MAP.tests_running("src/ops.py", 3, 4) == ["tests/test_ops.py::test_a", "tests/test_ops.py::test_b"]
    assert MAP.tests_running("src/ops.py", 5, 9) == []
    assert MAP.tests_running("src/other.py", 1, 100) == []


def test_a_map_read_back_is_the_map_written():
    again = read_map(map_text(MAP))
    assert (again.lines, again.calls) == (MAP.lines, MAP.calls)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"lines": {}}',  # no calls
        '{"lines": {"a.py": {"3": "test_a"}}, "calls": {}}',  # tests not a list
        '{"lines": {}, "calls": {"t": [["f", "g", "4", ""]]}}',  # a line that is no number
        '{"lines": {}, "calls": {"t": [[1, "g", 4, ""]]}}',  # a caller that is no name
        "[" * 100_000,  # nested past the parser's depth
    ],
)
def test_anything_but_a_map_is_refused(text):
    with pytest.raises(ValueError):
        read_map(text)


def test_a_map_is_kept_under_the_code_it_was_measured_on(tmp_path):
    of = MapOf(tmp_path, {"src/ops.py": "d1"}, ["tests"], {})
    assert read_cached_map(of) is None
    write_map(of, map_text(MAP))

    assert read_cached_map(of).lines == MAP.lines
    assert read_cached_map(MapOf(tmp_path, {"src/ops.py": "d2"}, ["tests"], {})) is None  # the code changed
    assert read_cached_map(MapOf(tmp_path, {"src/ops.py": "d1"}, ["tests", "-k", "a"], {})) is None  # other tests


def test_the_folder_keeps_the_maps_read_or_written_last_and_the_last_one_measured(tmp_path):
    def of(n: int) -> MapOf:
        return MapOf(tmp_path, {"src/ops.py": f"d{n}"}, ["tests"], {})

    def write(n: int) -> None:
        time.sleep(0.02)  # the folder orders its maps by their times of change
        write_map(of(n), map_text(MAP))

    def maps() -> list[int]:
        names = {of(n).path.name: n for n in range(MAPS_KEPT + 4)}
        return sorted(names[p.name] for p in (tmp_path / "coverage").glob("*.json") if p.name != LAST_MAP)

    for n in range(MAPS_KEPT + 2):  # an author's code edits, each a new code
        write(n)
    assert maps() == list(range(2, MAPS_KEPT + 2))  # the two written first are gone
    # the record of the last map measured names an old one: it is spared, and a map read counts as new
    depends = {"files": {}, "modules": {}, "functions": {}}
    last = {"map": of(2).path.name, "args": ["tests"], "modules": {}, "depends": depends}
    write_entry(tmp_path / "coverage" / LAST_MAP, json.dumps(last).encode("utf-8"))
    time.sleep(0.02)
    assert read_cached_map(of(3)) is not None
    write(MAPS_KEPT + 2)
    write(MAPS_KEPT + 3)
    assert maps() == [2, 3, MAPS_KEPT + 1, MAPS_KEPT + 2, MAPS_KEPT + 3]  # 4 went, the older of those not read

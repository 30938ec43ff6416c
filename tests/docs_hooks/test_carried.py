"""A line map carried over to code that changed only where no test ran: the same map the coverage run would
measure on that code, or none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from docs_hooks.base.cachedir import read_entry
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.run import coverage_map
from docs_hooks.run.coverage_map import CoverageMap, MapOf, index_modules, read_cached_map
from docs_hooks.run.coverage_run import Measurement

CALC = """\
LIMIT = 5


def clip(x):
    if x > LIMIT:
        return LIMIT
    return x


def double_clip(x):
    y = clip(x)
    return clip(y * 2)


def untested(x):
    return -x
"""

CALC_TESTS = """\
from calc import clip, double_clip


def test_clip():
    assert clip(9) == 5


def test_double_clip():
    assert double_clip(2) == 4
"""


def calc_project(make_project) -> Path:
    return make_project(
        {
            "src/calc.py": CALC,
            "tests/test_calc.py": CALC_TESTS,
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
            'coverage_tests = ["tests/test_calc.py"]\n',
        }
    )


def measured(root: Path, cache: Path) -> CoverageMap:
    """The map a build's coverage run gives (it writes the map, and what it depended on, to ``cache``)."""
    settings = load_settings(root)
    index = index_for(settings)
    modules = index_modules(index)
    run = Measurement(
        root, settings.source_root, settings.coverage_tests, index.file_digests, cache, 120, modules, index.functions
    )
    return run.result()


def carried(root: Path, cache: Path) -> CoverageMap | None:
    """The map of the code as it is now that ``cache`` gives without a run: measured on it, or carried over."""
    settings = load_settings(root)
    index = index_for(settings)
    return read_cached_map(
        MapOf(cache, index.file_digests, settings.coverage_tests, index_modules(index), index.functions, root)
    )


def same(a: CoverageMap, b: CoverageMap) -> bool:
    return a.lines == b.lines and a.calls == b.calls


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text + "\n\ndef added(x):\n    return x + 1\n",
        lambda text: text.replace("    return -x\n", "    return -2 * x  # nothing ran it\n"),
        lambda text: text.replace("def clip(x):", "def first(x):\n    return x\n\n\ndef clip(x):"),  # moves
        # comments in tested functions, and where a blank line was: the tests run the same lines
        lambda text: text.replace("return clip(y * 2)\n", "return clip(y * 2)  # twice\n").replace(
            "LIMIT = 5\n\n", "LIMIT = 5\n# the functions\n"
        ),
    ],
    ids=["appended", "untested edited", "inserted above", "commented"],
)
def test_a_map_carried_over_an_edit_where_no_test_ran_is_the_map_a_run_measures(make_project, tmp_path, edit):
    root = calc_project(make_project)
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(edit(CALC), encoding="utf-8")

    found = carried(root, tmp_path / "cache")

    assert found is not None
    assert same(found, measured(root, tmp_path / "fresh"))
    assert found.tests_running("src/calc.py", *lines_of(root, "double_clip")) == ["tests.test_calc.test_double_clip"]
    line = edit(CALC).splitlines().index("    y = clip(x)") + 1
    assert ["calc.double_clip", "calc.clip", line, ""] in found.calls["tests.test_calc.test_double_clip"]
    again = carried(root, tmp_path / "cache")  # and cached under this code
    assert again is not None and same(again, found)


def test_a_map_carried_over_with_no_line_moved_is_stored_as_the_text_it_was_read_from(
    make_project, tmp_path, monkeypatch
):
    root = calc_project(make_project)
    cache = tmp_path / "cache"
    measured(root, cache)
    last = json.loads(read_entry(cache / "coverage" / "last.json") or b"")
    stored = read_entry(cache / "coverage" / last["map"])
    (root / "src/calc.py").write_text(CALC + "\n\ndef added(x):\n    return x + 1\n", encoding="utf-8")
    written_out = []  # maps written out as text again (a map whose lines moved is)
    monkeypatch.setattr(coverage_map, "map_text", lambda found: written_out.append(found) or "")

    found = carried(root, cache)

    assert found is not None and same(found, measured(root, tmp_path / "fresh"))
    assert written_out == []
    maps = [f for f in (cache / "coverage").glob("*.json") if f.name not in ("last.json", last["map"])]
    assert [read_entry(f) for f in maps] == [stored]  # the map of this code


def test_a_serve_reads_the_last_map_once_for_all_the_code_edits_that_carry_it_over(make_project, tmp_path, monkeypatch):
    root = calc_project(make_project)
    cache = tmp_path / "cache"
    measured(root, cache)
    read: list[int] = []  # the maps read from their text
    real = coverage_map.read_map
    monkeypatch.setattr(coverage_map, "read_map", lambda text: read.append(len(text)) or real(text))
    maps, found = coverage_map.MapsRead(), []
    for n in range(3):  # three edits that no test's lines reach, each a new build of the same process
        (root / "src/calc.py").write_text(CALC + f"\n\ndef added_{n}(x):\n    return x + {n}\n", encoding="utf-8")
        settings = load_settings(root)
        index = index_for(settings)
        modules = index_modules(index)
        of = MapOf(cache, index.file_digests, settings.coverage_tests, modules, index.functions, root, maps=maps)
        found.append(read_cached_map(of))

    assert len(read) == 1
    assert found[0] is not None and all(f is found[0] for f in found)
    assert found[0].evidence() is found[2].evidence()  # what the call graph reads of it, made once too
    assert same(found[2], measured(root, tmp_path / "fresh"))


FMT = """\
from calc import clip


def shown(x):
    # the clipped value, as text
    return str(clip(x))


def unshown(x):
    return repr(x)
"""

FMT_TESTS = """\
from fmt import shown


def test_shown():
    assert shown(9) == "5"
"""


@pytest.mark.parametrize(
    "path, edit, again",
    [
        ("src/fmt.py", lambda text: text + "\n\ndef added(x):\n    return x\n", []),
        ("src/fmt.py", lambda text: text.replace("return repr(x)", "return ascii(x)"), []),
        ("src/fmt.py", lambda text: text.replace("return str(clip(x))", "return str(clip(x)) + ''"), ["test_shown"]),
        ("src/calc.py", lambda text: text.replace("return clip(y * 2)", "return clip(2 * y)"), ["test_double_clip"]),
        (
            "src/calc.py",
            lambda text: text.replace("    return x\n", "    return x + 0\n"),  # clip: every test calls it
            ["test_clip", "test_double_clip", "test_shown"],
        ),
    ],
    ids=["appended", "untested edited", "tested edited", "another module's tested edited", "a shared callee edited"],
)
def test_of_two_modules_only_the_tests_that_ran_an_edited_function_are_measured_again(
    make_project, tmp_path, path, edit, again
):
    root = calc_project(make_project)
    (root / "src/fmt.py").write_text(FMT, encoding="utf-8")
    (root / "tests/test_fmt.py").write_text(FMT_TESTS, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        (root / "pyproject.toml").read_text(encoding="utf-8").replace('"tests/test_calc.py"', '"tests"'),
        encoding="utf-8",
    )
    measured(root, tmp_path / "cache")
    file = root / path
    file.write_text(edit(file.read_text(encoding="utf-8")), encoding="utf-8")

    if again:
        run = measurement(root, tmp_path / "cache")
        found = run.result()
        test_file = {"test_shown": "tests/test_fmt.py"}
        assert run.run_args == [f"{test_file.get(t, 'tests/test_calc.py')}::{t}" for t in again]
    else:  # carried over whole: nothing measured
        carried_over = carried(root, tmp_path / "cache")
        assert carried_over is not None
        found = carried_over
    assert same(found, measured(root, tmp_path / "fresh"))


def test_a_module_that_gains_its_first_function_keeps_the_map_of_the_others(make_project, tmp_path):
    root = calc_project(make_project)
    (root / "src/consts.py").write_text("SCALE = 1\n", encoding="utf-8")
    measured(root, tmp_path / "cache")
    (root / "src/consts.py").write_text("SCALE = 1\n\n\ndef consts_scale():\n    return SCALE\n", encoding="utf-8")

    found = carried(root, tmp_path / "cache")

    assert found is not None and same(found, measured(root, tmp_path / "fresh"))


def test_a_constant_of_a_module_whose_functions_no_test_ran_is_measured_again(make_project, tmp_path):
    root = calc_project(make_project)
    (root / "src/consts.py").write_text("FACTOR = 2\n\n\ndef unused():\n    return 0\n", encoding="utf-8")
    calc = CALC.replace("LIMIT = 5", "from consts import FACTOR\n\nLIMIT = 5").replace("y * 2", "y * FACTOR")
    (root / "src/calc.py").write_text(calc, encoding="utf-8")
    measured(root, tmp_path / "cache")
    (root / "src/consts.py").write_text("FACTOR = 3\n\n\ndef unused():\n    return 0\n", encoding="utf-8")

    assert carried(root, tmp_path / "cache") is None


def lines_of(root: Path, name: str) -> tuple[int, int]:
    index = index_for(load_settings(root))
    fn = index.functions[f"calc.{name}"]
    return fn.start, fn.end


@pytest.mark.parametrize(
    "path, edit",
    [
        ("src/calc.py", lambda text: text.replace("return clip(y * 2)", "return clip(y * 3)")),  # a tested function
        ("src/calc.py", lambda text: text.replace("LIMIT = 5", "LIMIT = 7")),  # the module's own lines
        ("src/calc.py", lambda text: text + "\n\ndef added(x):\n    return x\n\n\nALIAS = added\n"),
        ("tests/test_calc.py", lambda text: text + "\n\ndef test_untested():\n    assert untested(1) == -1\n"),
        ("tests/test_calc.py", lambda text: text.replace("assert clip(9) == 5", "assert clip(8) == 5")),
        ("tests/test_calc.py", lambda text: text.replace("def test_clip():\n    assert clip(9) == 5\n", "")),
        ("tests/conftest.py", lambda text: "import calc\n\ncalc.LIMIT = 3\n"),  # a new file
    ],
    ids=[
        "tested function",
        "module constant",
        "named by the module",
        "a test added",
        "a test edited",
        "a test removed",
        "a conftest added",
    ],
)
def test_an_edit_that_can_change_what_the_tests_run_is_measured_again(make_project, tmp_path, path, edit):
    root = calc_project(make_project)
    measured(root, tmp_path / "cache")
    file = root / path
    file.write_text(edit(file.read_text(encoding="utf-8") if file.exists() else ""), encoding="utf-8")

    assert carried(root, tmp_path / "cache") is None


def test_comments_edited_in_a_file_of_tests_carry_over(make_project, tmp_path):
    root = calc_project(make_project)
    measured(root, tmp_path / "cache")
    tests = root / "tests/test_calc.py"
    text = tests.read_text(encoding="utf-8")
    commented = text.replace("assert clip(9) == 5", "assert clip(9) == 5  # the limit")
    tests.write_text(commented.replace("\n\ndef test_clip", "\n# clipping\ndef test_clip"), encoding="utf-8")

    found = carried(root, tmp_path / "cache")

    assert found is not None and same(found, measured(root, tmp_path / "fresh"))


FIXTURE_TESTS = """\
import pytest

from calc import clip, double_clip


@pytest.fixture
def limit():
    return clip(9)  # what clipping gives


def test_limit(limit):
    assert limit == 5
"""


def test_a_fixture_edited_in_a_file_of_tests_is_measured_again_and_its_comment_carries_over(make_project, tmp_path):
    root = calc_project(make_project)
    tests = root / "tests/test_calc.py"
    tests.write_text(FIXTURE_TESTS, encoding="utf-8")
    measured(root, tmp_path / "cache")

    tests.write_text(FIXTURE_TESTS.replace("# what clipping gives", "# five"), encoding="utf-8")
    found = carried(root, tmp_path / "cache")
    assert found is not None and same(found, measured(root, tmp_path / "fresh"))

    tests.write_text(FIXTURE_TESTS.replace("return clip(9)", "return double_clip(9)"), encoding="utf-8")
    assert carried(root, tmp_path / "cache") is None  # pytest calls the fixture: test_limit now runs double_clip


def test_a_damaged_record_of_the_last_map_is_measured_again(make_project, tmp_path):
    root = calc_project(make_project)
    cache = tmp_path / "cache"
    measured(root, cache)
    (root / "src/calc.py").write_text(CALC + "\n\ndef added(x):\n    return x\n", encoding="utf-8")
    last = cache / "coverage" / "last.json"
    last.write_bytes(last.read_bytes()[:-40])

    assert carried(root, cache) is None
    assert not last.exists()  # removed: the next run writes it again


def measurement(root: Path, cache: Path) -> Measurement:
    settings = load_settings(root)
    index = index_for(settings)
    return Measurement(
        root,
        settings.source_root,
        settings.coverage_tests,
        index.file_digests,
        cache,
        120,
        index_modules(index),
        index.functions,
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace("return clip(y * 2)", "return clip(2 * y)"),
        lambda text: text.replace("def clip(x):", "def first(x):\n    return x\n\n\ndef clip(x):").replace(
            "return clip(y * 2)", "z = y * 2\n    return clip(z)"
        ),  # a line more in it, and a function above clip: the lines test_clip ran move
    ],
    ids=["edited", "edited and moved"],
)
def test_an_edit_to_a_tested_function_measures_only_the_tests_that_ran_it(make_project, tmp_path, edit):
    root = calc_project(make_project)
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(edit(CALC), encoding="utf-8")

    run = measurement(root, tmp_path / "cache")
    found = run.result()

    assert run.run_args == ["tests/test_calc.py::test_double_clip"]  # test_clip ran no line of double_clip
    assert same(found, measured(root, tmp_path / "fresh"))
    again = carried(root, tmp_path / "cache")  # cached under this code, and the last map for the next edit
    assert again is not None and same(again, found)


def test_a_docstring_edited_in_a_tested_function_carries_over_but_one_with_a_doctests_example_is_measured_again(
    make_project, tmp_path
):
    root = calc_project(make_project)
    # the docstring and the first statement on one line: no line moves
    documented = CALC.replace("    y = clip(x)\n", '    "Twice the clip."; y = clip(x)\n')
    (root / "src/calc.py").write_text(documented, encoding="utf-8")
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(documented.replace("Twice the clip.", "Clip, twice."), encoding="utf-8")

    found = carried(root, tmp_path / "cache")
    assert found is not None and same(found, measured(root, tmp_path / "fresh"))

    # pytest --doctest-modules would run it: the tests that ran the function are measured again
    (root / "src/calc.py").write_text(documented.replace("Twice the clip.", ">>> double_clip(2)"), encoding="utf-8")
    run = measurement(root, tmp_path / "cache")
    found = run.result()
    assert run.run_args == ["tests/test_calc.py::test_double_clip"]
    assert same(found, measured(root, tmp_path / "fresh2"))


CLASS_TESTS = """\
import pytest

from calc import clip, double_clip


class TestCalc:
    @pytest.mark.parametrize("x, y", [(9, 5), (1, 1)])
    def test_clip(self, x, y):
        assert clip(x) == y

    def test_double_clip(self):
        assert double_clip(2) == 4


def test_negative():
    assert clip(-3) == -3
"""


def test_the_tests_measured_again_are_named_as_pytest_names_them_every_parametrization_included(make_project, tmp_path):
    root = calc_project(make_project)
    (root / "tests/test_calc.py").write_text(CLASS_TESTS, encoding="utf-8")
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(
        CALC.replace("        return LIMIT", "        return LIMIT + 0"), encoding="utf-8"
    )

    run = measurement(root, tmp_path / "cache")
    found = run.result()

    assert sorted(run.run_args) == [
        "tests/test_calc.py::TestCalc::test_clip",
        "tests/test_calc.py::TestCalc::test_double_clip",
        "tests/test_calc.py::test_negative",
    ]
    assert same(found, measured(root, tmp_path / "fresh"))


def test_more_tests_to_measure_again_than_a_command_line_holds_are_all_measured_again(
    make_project, tmp_path, monkeypatch
):
    from docs_hooks.run import coverage_map

    root = calc_project(make_project)
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(
        CALC.replace("        return LIMIT", "        return LIMIT + 0"), encoding="utf-8"
    )
    monkeypatch.setattr(coverage_map, "MAX_NODE_IDS", 1)  # both tests ran clip

    run = measurement(root, tmp_path / "cache")

    assert run.run_args == ["tests/test_calc.py"]
    assert same(run.result(), measured(root, tmp_path / "fresh"))


def test_tests_selected_otherwise_than_by_paths_are_all_measured_again(make_project, tmp_path):
    root = calc_project(make_project)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8").replace('["tests/test_calc.py"]', '["tests/test_calc.py", "-k", "clip"]'),
        encoding="utf-8",
    )
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(CALC.replace("return clip(y * 2)", "return clip(2 * y)"), encoding="utf-8")

    run = measurement(root, tmp_path / "cache")

    assert run.run_args == ["tests/test_calc.py", "-k", "clip"]
    assert same(run.result(), measured(root, tmp_path / "fresh"))


def test_tests_that_fail_when_measured_alone_are_measured_with_all_the_others(make_project, tmp_path):
    root = calc_project(make_project)
    (root / "tests/test_calc.py").write_text(
        "import calc\n\n\ndef test_sets():\n    calc.STATE = calc.clip(1)\n\n\n"
        "def test_needs_the_state_the_test_before_left():\n    assert calc.STATE == 1 and calc.double_clip(2) == 4\n",
        encoding="utf-8",
    )
    measured(root, tmp_path / "cache")
    (root / "src/calc.py").write_text(CALC.replace("return clip(y * 2)", "return clip(2 * y)"), encoding="utf-8")

    run = measurement(root, tmp_path / "cache")
    assert run.run_args == ["tests/test_calc.py::test_needs_the_state_the_test_before_left"]
    found = run.result()

    assert run.run_args == ["tests/test_calc.py"]  # alone it failed: every test was measured
    assert same(found, measured(root, tmp_path / "fresh"))

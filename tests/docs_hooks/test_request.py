"""docs_hooks.run.request: what a recording is asked for (a test by its pytest id, named as pytest imports it),
and what its key in the recordings store is made of: the request, and what records it."""

import subprocess
import sys
from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.run import request
from docs_hooks.run.recording import Made
from docs_hooks.run.request import RECORDER_FILES, Request, recording_key, recording_shape
from docs_hooks.run.request import test_request as request_of_test  # by another name: pytest would collect it

from .conftest import expand_page, stored_rows
from .test_record import data_project, problems


def test_a_test_id_names_a_class_and_its_method_and_the_module_as_pytest_imports_it(tmp_path):
    (tmp_path / "test_layers.py").write_text("", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_ops.py").write_text("", encoding="utf-8")

    assert request_of_test("test_layers.py::TestLayerNorm::test_forward", tmp_path) == Request(
        "test_layers.py::TestLayerNorm::test_forward", "test_layers", "TestLayerNorm.test_forward"
    )
    # tests/ is no package: pytest's default import mode imports the file from its own folder
    assert request_of_test("tests/test_ops.py::test_forward", tmp_path).module == "test_ops"
    (tmp_path / "tests" / "__init__.py").write_text("", encoding="utf-8")
    assert request_of_test("tests/test_ops.py::test_forward", tmp_path).module == "tests.test_ops"
    with pytest.raises(TraceError) as err:
        request_of_test("test_layers.py::TestLayerNorm::", tmp_path)
    assert str(err.value) == (
        "'test_layers.py::TestLayerNorm::' is not a test id; write it as "
        "tests/test_file.py::test_name or tests/test_file.py::TestClass::test_name"
    )


def test_a_recording_made_by_other_recording_code_is_made_again(make_project, monkeypatch):
    """What records is part of every recording's key: the recording child's code, Python and NumPy. A cache
    kept across an upgrade of the generator (CI restores one) never shows what the old recorder saw."""
    root = data_project(make_project)
    store = root / ".cache/docs_hooks/recordings.sqlite3"
    first = expand_page(root)
    assert problems(first) == []
    before = set(stored_rows(store))

    monkeypatch.setattr(request, "recorder_environment", lambda: "a recorder that records otherwise")
    again = expand_page(root, rendered=False)

    assert problems(again) == [] and again.markdown == first.markdown
    after = set(stored_rows(store))
    assert before < after and len(after) == 2 * len(before)  # each recorded again, under a key of its own


def test_a_recording_key_changes_with_any_part_of_the_request_and_with_the_recorders_shape(tmp_path):
    shape = recording_shape(tmp_path, [tmp_path / "src"])
    base = Request("t", "mod", "f", (1,))
    others = [
        Request("u", "mod", "f", (1,)),
        Request("t", "mod", "f", (2,)),
        Request("t", "mod", "f", (Made("mod", "make"),)),
        Request("t", "mod", "f", (1,), target_only=True),
    ]

    keys = {recording_key(shape, r) for r in [base, *others]}

    assert len(keys) == 5 and all(len(k) == 24 for k in keys)
    assert recording_key(shape, base) == recording_key(shape, Request("t", "mod", "f", (1,)))
    assert recording_key(recording_shape(tmp_path, [tmp_path / "lib"]), base) != recording_key(shape, base)


def test_what_records_names_every_module_of_the_generator_the_recording_child_loads():
    """A change to any of them makes every recording again (see recorder_environment)."""
    code = (
        "import sys, docs_hooks.run.record_child; "
        "print(' '.join(m for m in sys.modules if m.startswith('docs_hooks.run.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.rpartition(".")[2] + ".py" for name in out.stdout.split()}

    assert "record_child.py" in loaded and "record_trace.py" in loaded
    assert loaded - {"children.py"} <= set(RECORDER_FILES)  # children.py starts and ends processes: it records nothing
    here = Path(request.__file__).parent
    assert all((here / name).is_file() for name in RECORDER_FILES)


def test_the_recorder_environment_changes_with_the_files_that_record(monkeypatch):
    before = request.recorder_environment()
    monkeypatch.setattr(request, "RECORDER_FILES", tuple(f for f in RECORDER_FILES if f != "record_trace.py"))

    assert request.recorder_environment() != before and len(before) == 24

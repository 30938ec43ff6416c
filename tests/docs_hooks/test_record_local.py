"""docs_hooks.run.record_local: what the recording child counts as the project's: code under the folders it imports
the project from, but not what it had loaded before (the generator) nor an installed package; the project's
objects as Opaque values; and, of the files the code opened, the project's data alone."""

import importlib.util
import os
import sys
from dataclasses import dataclass

import numpy as np
import pytest

from docs_hooks.run.record_local import Opened, is_local_module, is_local_path, note_baseline, project_object, set_roots
from docs_hooks.run.recording import Opaque


@pytest.fixture
def root(tmp_path):
    """``tmp_path`` as the project's own code, for the test."""
    set_roots([str(tmp_path)])
    yield tmp_path
    set_roots([])


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_code_under_the_roots_is_the_projects_and_code_from_a_string_or_an_installed_package_is_not(root):
    assert is_local_path(str(root / "ops.py"))
    assert not is_local_path("<string>") and not is_local_path(np.__file__)
    set_roots([str(root / "src")])  # the same file, asked again under other roots
    assert not is_local_path(str(root / "ops.py"))


def test_a_module_loaded_before_the_project_is_not_the_projects_even_under_its_roots(root, monkeypatch):
    (root / "layers_a.py").write_text("class Dense:\n    pass\n", encoding="utf-8")
    (root / "layers_b.py").write_text("class Dense:\n    pass\n", encoding="utf-8")
    for name in ("layers_a", "layers_b"):
        monkeypatch.delitem(sys.modules, name, raising=False)
        load(root / f"{name}.py", name)

    note_baseline({"layers_b"})

    assert is_local_module("layers_a") and not is_local_module("layers_b") and not is_local_module("os")


def test_an_object_of_the_projects_class_is_opaque_with_its_fields_and_others_are_left_alone(root, monkeypatch):
    (root / "shapes_mod.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Shape:\n    rows: int\n    cols: int\n",
        encoding="utf-8",
    )
    monkeypatch.delitem(sys.modules, "shapes_mod", raising=False)
    module = load(root / "shapes_mod.py", "shapes_mod")

    @dataclass
    class Elsewhere:  # a class of this test file, which is no file of the project
        rows: int

    assert project_object(module.Shape(2, 3)) == Opaque(
        "shapes_mod.Shape", "Shape(rows=2, cols=3)", {"rows": 2, "cols": 3}
    )
    assert project_object(module.Shape).type == "shapes_mod.Shape"
    assert project_object(Elsewhere(1)) is None and project_object(np.zeros(2)) is None


def test_of_the_files_opened_only_the_projects_are_taken_its_code_opened_as_a_file_too_and_each_once(tmp_path):
    for name in ("x.json", "src/ops.py", "src/__pycache__/ops.pyc"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    opened = Opened()
    opened.paths = {
        str(tmp_path / name) for name in ("x.json", "src/ops.py", "src/__pycache__/ops.pyc", "gone.txt")
    } | {os.path.abspath(np.__file__)}

    assert opened.take(str(tmp_path)) == ["src/ops.py", "x.json"]  # the code read as text: open(__file__)
    assert opened.take(str(tmp_path)) == []  # taken: what the next request opens starts afresh

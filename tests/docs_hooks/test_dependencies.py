"""docs_hooks.run.dependencies: what a recording depends on, checked against the code as it is now: code that
only moved keeps the recording (its lines moved with it), an edit to code it ran or to a file it read does
not, and a function appended that nothing ran or names changes nothing. (The recorder that uses it, on real
runs: test_record.py.)"""

from __future__ import annotations

from pathlib import Path

from docs_hooks.resolve.codeindex import Root
from docs_hooks.resolve.indexing import build_index
from docs_hooks.run.dependencies import Dependencies, moved_by
from docs_hooks.run.recording import Call, Recording

OPS = """\
import numpy as np


def scale(x, k):
    return x * k


def double(x):
    return scale(x, 2)
"""


def dependencies(root: Path) -> Dependencies:
    """As a build makes them: from the index of the code as it is now."""
    index = build_index([Root(root / "src", root / "src", False)], root)
    return Dependencies(root, index.functions, index.file_digests, {str(root / "src/ops.py"): "ops"})


def recording() -> Recording:
    """``double`` ran, and called ``scale`` from its line 9; the run read data/k.txt."""
    return Recording(
        "tests/test_ops.py::test_double",
        calls=[Call("ops.scale", "ops.double", 9, {"x": 1.0, "k": 2}, {}, 2.0)],
        files=["src/ops.py"],
        reached=["ops.double", "ops.scale"],
        seen=[["ops.double", "ops.scale", 9, None]],
        opened=["data/k.txt"],
    )


def project(tmp_path: Path, ops: str = OPS, data: str = "2\n") -> Path:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "src/ops.py").write_text(ops, encoding="utf-8")
    (tmp_path / "data/k.txt").write_text(data, encoding="utf-8")
    return tmp_path


def test_unchanged_code_keeps_the_recording_as_it_was(tmp_path):
    root = project(tmp_path)
    deps = dependencies(root).of(recording())

    assert dependencies(root).moved(deps) == {}


def test_code_that_moved_keeps_the_recording_its_lines_moved_with_it(tmp_path):
    root = project(tmp_path)
    deps = dependencies(root).of(recording())
    # a function above them that nothing ran or names: the rest of the module is as it was
    project(root, OPS.replace("import numpy as np\n", "import numpy as np\n\n\ndef above():\n    return 0\n"))

    shifts = dependencies(root).moved(deps)

    assert shifts == {"ops.double": 4, "ops.scale": 4}
    read = recording()
    rec = moved_by(read, shifts)
    assert (rec.calls[0].caller_line, rec.seen[0][2]) == (13, 13)
    assert (read.calls[0].caller_line, read.seen[0][2]) == (9, 9)  # as read: moved again by the next build
    assert moved_by(read, shifts).calls[0].caller_line == 13


def test_a_line_of_the_module_outside_its_functions_is_a_change(tmp_path):
    root = project(tmp_path)
    deps = dependencies(root).of(recording())
    project(root, OPS.replace("import numpy as np\n", "import numpy as np\n\nK = 2\n"))

    assert dependencies(root).moved(deps) is None


def test_an_edit_to_a_function_that_ran_or_to_a_file_the_run_read_is_a_change(tmp_path):
    root = project(tmp_path)
    deps = dependencies(root).of(recording())

    project(root, OPS.replace("return x * k", "return k * x"))
    assert dependencies(root).moved(deps) is None

    project(root, data="3\n")
    assert dependencies(root).moved(deps) is None


def test_a_function_appended_that_nothing_ran_or_names_is_no_change_and_one_that_is_named_is(tmp_path):
    root = project(tmp_path)
    deps = dependencies(root).of(recording())

    project(root, OPS + "\n\ndef unused(y):\n    return y\n")
    assert dependencies(root).moved(deps) == {}

    project(root, OPS + "\n\ndef scale_twice(y):\n    return y\n\n\nscale = scale_twice\n")  # shadows what ran
    assert dependencies(root).moved(deps) is None


def after_edit(tmp_path: Path, before: str, after: str, rec: Recording | None = None) -> dict[str, int] | None:
    """What ``Dependencies.moved`` says of a recording made with ``src/ops.py`` as ``before``, once it is ``after``."""
    root = project(tmp_path, before)
    deps = dependencies(root).of(rec or recording())
    project(root, after)
    return dependencies(root).moved(deps)


def test_a_comment_edited_in_a_function_that_ran_or_outside_it_is_no_change(tmp_path):
    commented = OPS.replace("return x * k", "return x * k  # k times x")
    assert after_edit(tmp_path, OPS, commented.replace("import numpy as np", "import numpy as np  # arrays")) == {}
    # a comment on a line of its own between the module's functions, where a blank line was
    assert after_edit(tmp_path, OPS, OPS.replace("\n\ndef scale", "\n# the ops\ndef scale")) == {}


def test_a_comment_on_a_line_of_its_own_inside_a_function_that_ran_is_a_change_its_lines_below_moved(tmp_path):
    assert after_edit(tmp_path, OPS, OPS.replace("def double(x):\n", "def double(x):\n    # twice\n")) is None


def test_a_hash_inside_a_string_of_a_function_that_ran_is_code(tmp_path):
    ops = OPS.replace("return x * k", 'return x * k if "#a" else 0')
    assert after_edit(tmp_path, ops, ops.replace('"#a"', '"#b"')) is None


def test_comments_count_for_a_run_that_may_read_source_lines_or_that_opened_a_file_of_the_code(tmp_path):
    reads = OPS.replace("import numpy as np\n", "import inspect\n\nimport numpy as np\n")
    # inspect.getsource(scale) would read the comment
    assert after_edit(tmp_path, reads, reads.replace("return x * k", "return x * k  # k times x")) is None

    opened_itself = recording()
    opened_itself.opened = ["src/ops.py"]
    assert after_edit(tmp_path, OPS, OPS.replace("return x * k", "return x * k  # k times x"), opened_itself) is None


def test_a_docstring_edited_is_no_change_unless_the_run_may_read_docstrings(tmp_path):
    documented = OPS.replace("def scale(x, k):\n", 'def scale(x, k):\n    """x times k."""\n')
    assert after_edit(tmp_path, documented, documented.replace("x times k.", "x, k times.")) == {}
    # a line more: the lines below it moved inside the function
    longer = documented.replace('"""x times k."""', '"""x times k,\n    elementwise."""')
    assert after_edit(tmp_path, documented, longer) is None

    reads = documented + "\n\nHELP = scale.__doc__\n"
    assert after_edit(tmp_path, reads, reads.replace("x times k.", "x, k times.")) is None

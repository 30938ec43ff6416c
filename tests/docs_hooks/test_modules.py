"""Tests of docs_hooks.resolve.modules: the code parsed once per text of each file, across the builds of a serve."""

from docs_hooks.core.session import Session
from docs_hooks.resolve.modules import Modules

from .conftest import FWD_ENTRY

CODE = "def f(x):\n    y = x + 1\n    return y\n\n\ndef g(a):\n    if (n := len(a)) > 2:\n        a = a[:n]\n    return a\n"


def test_a_file_is_parsed_again_only_when_its_text_changed(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(CODE)
    modules = Modules()

    first = modules.read(path)
    assert modules.read(path) is first
    assert [d.name for d in first.definitions()] == ["f", "g"]
    assert first.assignments(1, 3, ("x",)) is first.assignments(1, 3, ("x",))  # found once
    assert [a.start for a in first.assignments(1, 3, ("x",)).of("y")] == [2]
    assert [a.start for a in first.assignments(6, 9, ("a",)).of("n")] == [7]  # an assignment expression too
    assert first.assignments(20, 22, ()) is None  # no function there

    path.write_text(CODE.replace("y = x + 1", "y = x + 2"))
    second = modules.read(path)
    assert second is not first
    assert "x + 2" in second.assignments(1, 3, ("x",)).of("y")[0].text


def test_a_new_build_after_a_code_edit_reads_again_only_the_file_that_changed(make_project):
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    session = Session(root)
    try:
        first = session.refresh()
        ops, model = root / "src/ops.py", root / "src/model.py"
        kept, edited = first.project.tree(ops), first.project.tree(model)
        model.write_text(model.read_text() + "\n\ndef appended():\n    return 1\n")
        second = session.refresh()

        assert second is not first
        assert second.project.tree(ops) is kept
        assert second.project.tree(model) is not edited
        assert "appended" in [node.name for node in second.project.tree(model).body if hasattr(node, "name")]
    finally:
        session.close()

"""docs_hooks.run.fromtext: the runs import the project's code as its text is now, never from a bytecode cache that
Python would take for it (an edit within the same second that kept the file's size)."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

from docs_hooks.run.request import Request

from .test_record import two_recorder

OLD, NEW = "VALUE = 2.0\n", "VALUE = 4.0\n"


def stale_cache(module: Path, old: str, new: str) -> None:
    """``module`` holding ``new``, beside a bytecode cache of ``old`` that Python's own import takes for it: the
    text's size and time of change are the ones the cache recorded (an edit saved within the same second)."""
    assert len(old.encode()) == len(new.encode())
    module.write_text(old, encoding="utf-8")
    py_compile.compile(str(module), doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    st = module.stat()
    module.write_text(new, encoding="utf-8")
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))


# Imports ``mod`` from the folder argv[1], after compile_from_text(argv[3:]) when argv[2] is "hooked"; prints what
# it holds and the loader that loaded it.
IMPORT = """
import sys
folder, hooked, roots = sys.argv[1], sys.argv[2] == "hooked", sys.argv[3:]
sys.path.insert(0, folder)
if hooked:
    from docs_hooks.run.fromtext import compile_from_text
    compile_from_text(roots)
import mod
print(mod.VALUE, type(mod.__loader__).__name__)
"""


def imported(folder: Path, hooked: bool, roots: list[Path] | None = None) -> str:
    """What ``IMPORT`` prints, in a fresh Python process that writes bytecode caches as Python does by default."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    args = [str(folder), "hooked" if hooked else "plain", *(str(r) for r in roots or [folder])]
    result = subprocess.run(
        [sys.executable, "-c", IMPORT, *args], capture_output=True, text=True, env=env, check=True, cwd=folder
    )
    return result.stdout.strip()


def test_an_edit_that_kept_the_size_within_the_second_is_imported_as_it_is_now(tmp_path):
    stale_cache(tmp_path / "mod.py", OLD, NEW)

    assert imported(tmp_path, hooked=False) == "2.0 SourceFileLoader"  # Python's own import: the text before
    assert imported(tmp_path, hooked=True) == "4.0 FromText"


def test_the_projects_code_leaves_no_bytecode_cache_and_installed_code_is_imported_as_python_imports_it(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "mod.py").write_text(NEW, encoding="utf-8")
    installed = project / ".venv" / "lib" / "python3.11" / "site-packages"  # an environment inside the project
    installed.mkdir(parents=True)
    (installed / "mod.py").write_text(OLD, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mod.py").write_text(OLD, encoding="utf-8")

    assert imported(project / "src", hooked=True, roots=[project]) == "4.0 FromText"
    assert not (project / "src" / "__pycache__").exists()
    assert imported(installed, hooked=True, roots=[project]) == "2.0 SourceFileLoader"
    assert imported(elsewhere, hooked=True, roots=[project]) == "2.0 SourceFileLoader"
    assert (elsewhere / "__pycache__").is_dir()  # caches are written in these processes: none was for the project's


READS = '''\
VALUE = 2.0


def value():
    """What the page shows."""
    return VALUE
'''


TEST_READS = """\
def test_value():
    return 2.0
"""


def test_a_recording_made_again_after_such_an_edit_shows_the_value_the_code_has_now(make_project, tmp_path):
    """A module named by its dotted name (found on ``sys.path``) and a test file named by its path."""
    root = make_project({"src/reads.py": READS, "tests/test_reads.py": TEST_READS})
    requests = [Request("value", "reads", "value"), Request("test", "tests/test_reads.py", "test_value")]

    def recorded() -> list:
        rec = two_recorder(root, tmp_path / "cache")
        try:
            out = rec.record(requests)
            return [out[request].result for request in requests]
        finally:
            rec.close()

    assert recorded() == [2.0, 2.0]
    stale_cache(root / "src/reads.py", READS, READS.replace("2.0", "4.0"))
    stale_cache(root / "tests/test_reads.py", TEST_READS, TEST_READS.replace("2.0", "4.0"))
    assert recorded() == [4.0, 4.0]

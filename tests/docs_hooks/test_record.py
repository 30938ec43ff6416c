"""The build's side of recording: a large batch is shared with helper processes, recordings are stored and read
back by the code they touched, and a test that exits is one clear error. (The child process and the conversation
with it: test_record_process.py; the recordings store: test_record_store.py; requests and their keys:
test_request.py.)"""

import re

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.run import record, record_process
from docs_hooks.run.request import Request
from docs_hooks.run.request import test_request as request_of_test  # by another name: pytest would collect it
from docs_hooks.run.workers import recorder_path

from .conftest import BASE_FILES, expand_page, make_recorder, page

# ------------------------------------------------------- helper processes, the store, callers that wait


NOISY = """
import os


def shout(n):
    print("a test that prints", n)  # must not break the messages between the build and its child
    return n * 2


def pid():
    return os.getpid()


def nap(n):
    import time

    time.sleep(0.05)
    return n * 2, os.getpid()


def die():
    os._exit(3)
"""


def gone(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_large_batch_is_shared_with_a_helper_process_per_spare_core_and_answered_in_its_order(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    rec.cores = 2
    n = 2 * record.PER_CHILD
    naps = [Request(f"nap {i}", "noisy", "nap", (i,)) for i in range(n)]
    try:
        out = rec.record(naps)
        later = rec.record([Request("pid", "noisy", "pid")])  # a small batch: the child alone
    finally:
        rec.close()

    assert [out[r].result[0] for r in naps] == [2 * i for i in range(n)]
    assert [c.function for r in naps for c in out[r].calls] == ["noisy.nap"] * n
    pids = {out[r].result[1] for r in naps}
    child = later[Request("pid", "noisy", "pid")].result
    assert len(pids) == 2 and child in pids  # the child and one helper took a share each
    assert rec.helpers == 1 and rec.child.runs == 1
    assert all(gone(pid) for pid in pids - {child})  # a helper ends when no request is left


def test_no_helper_starts_while_the_builds_other_runs_take_the_spare_cores(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    rec.cores = 2
    taken = [1]  # the coverage run, say, until the first few requests are recorded
    rec.busy = lambda: taken[0]
    n = 4 * record.PER_CHILD
    naps = [Request(f"nap {i}", "noisy", "nap", (i,)) for i in range(n)]
    run = record_process.RecordingChild.run

    def counting(self, requests):
        out = run(self, requests)
        if sum(1 for v in values if v) >= record.PER_CHILD:
            taken[0] = 0  # that run is over: a core is free
        values.append(out)
        return out

    values: list = []
    record_process.RecordingChild.run = counting
    try:
        out = rec.record(naps)
    finally:
        record_process.RecordingChild.run = run
        rec.close()
    order = [out[r].result[1] for r in naps]
    assert [out[r].result[0] for r in naps] == [2 * i for i in range(n)]
    assert len(set(order[: record.PER_CHILD])) == 1  # the first requests: the child alone
    assert len(set(order)) == 2 and rec.helpers == 1  # then a helper too


def test_a_request_that_ends_its_process_in_a_shared_batch_is_an_error_for_it_alone(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    rec.cores = 2
    n = 2 * record.PER_CHILD
    requests = [Request(f"nap {i}", "noisy", "nap", (i,)) for i in range(n)]
    requests[3] = Request("die", "noisy", "die")
    try:
        out = rec.record_each(requests)
    finally:
        rec.close()

    assert isinstance(out[requests[3]], TraceError)
    assert "die ended the recording process before it returned" in str(out[requests[3]])
    assert [out[r].result[0] for r in requests if r.name != "die"] == [2 * i for i in range(n) if i != 3]
    assert rec.helpers == 1


def test_one_core_records_a_large_batch_in_the_child_alone(tmp_path):
    rec = make_recorder(tmp_path, "noisy", NOISY)
    rec.cores = 1
    naps = [Request(f"nap {i}", "noisy", "nap", (i,)) for i in range(2 * record.PER_CHILD)]
    try:
        out = rec.record(naps)
    finally:
        rec.close()

    assert len({out[r].result[1] for r in naps}) == 1 and rec.helpers == 0 and rec.child.runs == 1


def test_recordings_are_kept_in_one_store_and_read_back_until_a_file_they_touched_changes(tmp_path):
    cache = tmp_path / "cache"

    def recorder(digest):
        return make_recorder(tmp_path, "noisy", NOISY, digest=digest, cache=cache)

    request = Request("shout 5", "noisy", "shout", (5,))
    first = recorder("one")
    try:
        assert first.record([request])[request].result == 10
    finally:
        first.close()
    assert sorted(p.name for p in cache.iterdir()) == ["recordings.sqlite3"]

    again = recorder("one")
    assert again.record([request])[request].result == 10 and again.child.runs == 0  # read back: nothing ran

    (tmp_path / "src/noisy.py").write_text("FACTOR = 2\n" + NOISY, encoding="utf-8")
    edited = recorder("two")  # the file the recording touched has changed
    try:
        assert edited.record([request])[request].result == 10 and edited.child.runs == 1
    finally:
        edited.close()


SLEEPY = """
import time


def nap(seconds):
    time.sleep(seconds)
    return seconds
"""


def test_a_caller_waiting_for_another_callers_batch_goes_on_when_that_batch_is_in(tmp_path):
    """Not after the next batch the other caller (the prefetch) sends: that one may be long."""
    import threading
    import time

    rec = make_recorder(tmp_path, "sleepy", SLEEPY)
    first, long = Request("first", "sleepy", "nap", (0.5,)), Request("long", "sleepy", "nap", (3.0,))
    rec.record([Request("warm up", "sleepy", "nap", (0.0,))])  # the child is up before the clock starts
    done = {}

    def prefetch():
        rec.record([first])
        rec.record([long])
        done["long"] = time.monotonic()

    def page():
        time.sleep(0.2)  # asks while the prefetch's first batch runs
        assert rec.record([first])[first].result == 0.5
        done["page"] = time.monotonic()

    threads = [threading.Thread(target=prefetch), threading.Thread(target=page)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        rec.close()
    assert done["long"] - done["page"] > 2.0  # the page went on about 3 s before the long batch ended
    assert rec.child.runs == 1


def test_recordings_reach_the_store_even_when_the_recorder_is_never_flushed_or_closed(tmp_path):
    import gc

    def recorder():
        return make_recorder(tmp_path, "noisy", NOISY, digest="one", cache=tmp_path / "c")

    request = Request("shout 9", "noisy", "shout", (9,))
    first = recorder()
    assert first.record([request])[request].result == 18
    del first  # a caller that forgot: its recordings are written when it goes
    gc.collect()

    again = recorder()
    try:
        assert again.record([request])[request].result == 18 and again.child.runs == 0
    finally:
        again.close()


# ----------------------------------------------------------------------- tests that misbehave


MISBEHAVING = (
    BASE_FILES["tests/test_ops.py"]
    + """

def test_hangs():
    import subprocess, time
    layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))
    subprocess.Popen(["sleep", "10000"])  # a process of its own, stopped with it
    time.sleep(10000)


def test_exits_3():
    import sys
    layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))
    print("about to exit")
    sys.exit(3)


def test_leaves():
    import os
    layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))
    print("about to leave", flush=True)
    os._exit(0)


def test_big():
    X = np.linspace(-1.0, 1.0, 10_000_000).reshape(10_000, 1000)
    layer_norm_forward(X, np.ones(1000), np.zeros(1000))
"""
)

EXAMPLE = """
```trace-example
test: tests/test_ops.py::{test}
title: {title}
show:
  - label: mu
    code: mu
```
"""


def example_page(*tests: str) -> str:
    head = page("""
        # Page

        ```trace-entry
        title: The entry
        function: ops.layer_norm_forward
        status: implemented
        ```
        """)
    return head + "".join(EXAMPLE.format(test=t, title=t) for t in tests)


def misbehaving(make_project, *tests: str, timeout: float | None = None):
    pyproject = BASE_FILES["pyproject.toml"] + (f"test_timeout = {timeout}\n" if timeout else "")
    return make_project(
        {"tests/test_ops.py": MISBEHAVING, "docs/page.md": example_page(*tests), "pyproject.toml": pyproject}
    )


def problems(result) -> list[str]:
    return [str(p) for p in result.problems if "not reviewed yet" not in str(p)]


def test_a_test_that_calls_sys_exit_is_named_at_its_example_with_its_code_and_output(make_project):
    root = misbehaving(make_project, "test_exits_3")

    (message,) = problems(expand_page(root))

    lines = message.splitlines()
    assert lines[0] == (
        "docs/page.md:10: example 'test_exits_3': tests/test_ops.py::test_exits_3 called sys.exit(3) while "
        "recording, so it never returned; a test that a page records must return normally: remove the exit "
        "(or show another test). Where it exited:"
    )
    assert lines[-4:] == ["    sys.exit(3)", "SystemExit: 3", "Last lines of its output:", "about to exit"]


def test_a_shown_local_of_ten_million_numbers_is_recorded_as_its_summary_and_a_widget_is_refused(make_project):
    root = misbehaving(make_project, "test_big")
    (root / "docs/page.md").write_text(
        (root / "docs/page.md").read_text().replace("title: test_big\n", "title: test_big\nwidget: true\n")
    )

    result = expand_page(root)

    assert problems(result) == [
        "docs/page.md:12: example 'test_big': widget: input 'X' of ops.layer_norm_forward holds 10000000 numbers, "
        "more than the 10000 a widget recomputes in the browser; remove 'widget: true' or record a test with "
        "smaller inputs"
    ]
    assert "trace-example-data" not in result.markdown  # no widget data
    assert (root / ".cache/docs_hooks/recordings.sqlite3").stat().st_size < 2_000_000


def test_a_damaged_recordings_file_is_a_note_naming_it_not_an_error_at_an_example(make_project, caplog):

    root = misbehaving(make_project, "test_rows_have_zero_mean")
    first = expand_page(root)
    store = root / ".cache/docs_hooks/recordings.sqlite3"
    store.write_bytes(store.read_bytes()[:4096] + b"\xff" * 8192)  # the header, then garbage

    with caplog.at_level("INFO", logger="mkdocs.plugins.docs_hooks"):
        again = expand_page(root, rendered=False)

    assert problems(again) == [] and again.markdown == first.markdown
    notes = [r.getMessage() for r in caplog.records if r.levelname != "DEBUG"]
    assert len(notes) == 1 and notes[0].endswith(  # the file as seen from the working directory
        ".cache/docs_hooks/recordings.sqlite3: the cache file was damaged (database disk image is malformed); "
        "it is made again"
    )
    assert expand_page(root, rendered=False).markdown == first.markdown  # and the next build reads the new file


# ----------------------------------------------------------------------------- test ids


HELPED = """\
import numpy as np
from helpers import rows

from ops import layer_norm_forward


def test_rows_have_zero_mean():
    Y, _ = layer_norm_forward(rows(), np.ones(4), np.zeros(4))
    assert np.allclose(Y.mean(axis=-1), 0.0)
"""


def test_a_test_of_a_tests_folder_that_is_no_package_is_recorded_as_pytest_imports_it(make_project):
    root = make_project(
        {
            "tests/test_ops.py": HELPED,  # imports a helper beside it, as pytest's default import mode allows
            "tests/helpers.py": "import numpy as np\n\n\ndef rows():\n    return np.arange(8.0).reshape(2, 4)\n",
            "docs/page.md": example_page("test_rows_have_zero_mean"),
        }
    )
    (root / "tests/__init__.py").unlink()
    settings = load_settings(root)

    result = expand_site(settings, make_build(settings, coverage=False)).pages["docs/page.md"]

    assert problems(result) == []
    assert "test_ops.test_rows_have_zero_mean" in make_build(settings, static=True).project.index.functions
    assert recorder_path(settings) == [settings.source_root, settings.project_root, root / "tests"]
    assert "1.5" in result.markdown and "5.5" in result.markdown  # mu of each row, as recorded


# ----------------------------------------------------------------------------- what a recording depends on

DATA_NORM = """\
import json
from pathlib import Path

import numpy as np

from helpers import scale


def standardize(x):
    mu = x.mean(axis=-1, keepdims=True)
    y = (x - mu) * scale()
    return y


def other(x):
    return x + 1
"""

DATA_TESTS = """\
import json
from pathlib import Path

import numpy as np

from norm import standardize


def test_standardize_worked_example():
    x = np.array(json.loads((Path(__file__).parent / "x.json").read_text()), dtype=float)
    y = standardize(x)
    assert y.shape == x.shape
"""

DATA_PAGE = page("""
    # Standardize

    ```trace-entry
    title: Standardize
    function: norm.standardize
    status: implemented
    ```

    ```trace-example
    test: tests/test_norm.py::test_standardize_worked_example
    title: One row
    show:
      - {label: Input, code: x}
      - {label: Mean, code: mu}
      - {label: Output, code: y}
    ```
""")


def data_project(make_project, **files):
    return make_project(
        {
            "src/norm.py": DATA_NORM,
            "helpers.py": "def scale():\n    return 1.0\n",  # a helper module outside the source root
            "tests/test_norm.py": DATA_TESTS,
            "tests/x.json": "[[10, 20, 30, 60]]",
            "docs/page.md": DATA_PAGE,
            **files,
        }
    )


def example_values(markdown: str) -> dict[str, str]:
    """What an example shows: each name in the code with its value, as a reader sees them."""
    import html

    cells = [
        html.unescape(re.sub(r"<[^>]+>", "", v)).strip() for v in re.findall(r"<td><code>(.*?)</code></td>", markdown)
    ]
    return dict(zip(cells[0::2], cells[1::2]))


def recordings_made(monkeypatch) -> list[str]:
    """The names of the requests the recording child runs from now on (a stored recording is not run)."""
    made: list[str] = []
    run = record_process.RecordingChild.run

    def counting(self, requests):
        made.extend(r.name for r in requests)
        return run(self, requests)

    monkeypatch.setattr(record_process.RecordingChild, "run", counting)
    return made


def test_an_edited_data_file_that_a_recorded_test_reads_reaches_the_page_on_the_next_build(make_project, monkeypatch):
    root = data_project(make_project)
    made = recordings_made(monkeypatch)
    before = expand_page(root)
    assert problems(before) == []
    shown = example_values(before.markdown)
    assert (shown["x"], shown["mu"]) == ("[[10.0000, 20.0000, 30.0000, 60.0000]]", "[[30.0000]]")

    (root / "tests/x.json").write_text("[[11, 21, 31, 61]]", encoding="utf-8")
    after = expand_page(root)

    assert problems(after) == []
    shown = example_values(after.markdown)
    assert (shown["x"], shown["mu"]) == ("[[11.0000, 21.0000, 31.0000, 61.0000]]", "[[31.0000]]")
    assert made == ["tests/test_norm.py::test_standardize_worked_example"] * 2  # recorded again, once


def test_an_edited_helper_module_outside_the_source_root_reaches_the_page_on_the_next_build(make_project):
    root = data_project(make_project)
    before = expand_page(root)
    assert problems(before) == []
    assert example_values(before.markdown)["y"] == "[[-20.0000, -10.0000, 0.0000, 30.0000]]"

    (root / "helpers.py").write_text("def scale():\n    return 3.0\n", encoding="utf-8")
    after = expand_page(root)

    assert problems(after) == []
    assert example_values(after.markdown)["y"] == "[[-60.0000, -30.0000, 0.0000, 90.0000]]"


CORE = """\
def standardize(x):
    mu = sum(x) / len(x)
    return [v - mu for v in x]
"""

CORE_TEST = """\
from mypkg.core import standardize


def test_standardize_worked_example():
    assert standardize([1.0, 2.0, 6.0]) == [-2.0, -1.0, 3.0]
"""


def core_page(function: str) -> str:
    return page(f"""
        # Standardize

        ```trace-entry
        title: Standardize
        function: {function}
        status: illustrative
        ```

        ```trace-example
        test: tests/test_core.py::test_standardize_worked_example
        title: Three numbers
        show:
          - {{label: Mean, code: mu}}
        ```
    """)


def test_a_page_and_its_recording_keep_their_module_names_when_source_root_changes(make_project):
    """Modules are named as Python imports them, whatever source_root is; a recording made before the change is
    read back only while what it was keyed by (the module map among it) still holds."""
    pyproject = '[tool.docs_hooks]\nsource_root = "{}"\nexclude = ["src"]\n'
    root = make_project(
        {
            "mypkg/__init__.py": "",
            "mypkg/core.py": CORE,
            "tests/test_core.py": CORE_TEST,
            "pyproject.toml": pyproject.format("."),
            "docs/page.md": core_page("mypkg.core.standardize"),
        }
    )
    before = expand_page(root)
    assert problems(before) == [] and example_values(before.markdown) == {"mu": "3"}

    (root / "pyproject.toml").write_text(pyproject.format("mypkg"), encoding="utf-8")
    after = expand_page(root)

    assert problems(after) == []  # not: "never called core.standardize; it called: mypkg.core.standardize"
    assert example_values(after.markdown) == {"mu": "3"}


TWO = """\
SCALE = 2.0


class Doubler:
    def __init__(self):
        self.factor = SCALE


DOUBLER = Doubler()


def double(x):
    return x * DOUBLER.factor


def quadruple(x):
    return double(double(x))


def triple(x):
    return x * 3
"""


def two_recorder(root, cache, prefix: str = ""):
    """A recorder of the project at ``root`` as a build makes it: the index's module map (each name after
    ``prefix``) and functions."""
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import index_for
    from docs_hooks.run.workers import recorder_path

    settings = load_settings(root)
    index = index_for(settings)
    modules = {str(f.file): prefix + f.module for f in index.functions.values()}
    return record.Recorder(root, recorder_path(settings), modules, index.file_digests, cache, functions=index.functions)


def test_an_edit_to_one_function_records_again_only_what_ran_it_and_code_that_moved_keeps_its_recordings(
    make_project, tmp_path, monkeypatch
):
    root = make_project({"src/two.py": TWO})
    cache = tmp_path / "cache"
    made = recordings_made(monkeypatch)
    requests = [Request("quadruple", "two", "quadruple", (5.0,)), Request("triple", "two", "triple", (5.0,))]

    def build(expected: list[str]) -> dict:
        made.clear()
        rec = two_recorder(root, cache)
        try:
            out = rec.record(requests)
        finally:
            rec.close()
        assert made == expected
        return {req.name: out[req] for req in requests}

    first = build(["quadruple", "triple"])
    assert first["quadruple"].result == 20.0 and first["triple"].result == 15.0
    line = first["quadruple"].first("two.double").caller_line
    assert (root / "src/two.py").read_text().splitlines()[line - 1] == "    return double(double(x))"
    assert build([])["quadruple"].result == 20.0  # nothing changed: nothing runs
    commented = TWO.replace("    return double(double(x))\n", "    return double(double(x))  # twice, twice\n")
    commented = commented.replace("SCALE = 2.0\n\n\n", "SCALE = 2.0\n\n# the doubling functions\n")
    (root / "src/two.py").write_text(commented, encoding="utf-8")
    assert build([])["quadruple"].result == 20.0  # comments, where a blank line was and after code: Python runs none
    documented = commented.replace("def triple(x):\n", 'def triple(x):\n    """Three times x."""\n')
    (root / "src/two.py").write_text(documented, encoding="utf-8")
    assert build(["triple"])["triple"].result == 15.0  # a line more in triple: its lines moved inside it
    (root / "src/two.py").write_text(documented.replace("Three times x.", "x, three times."), encoding="utf-8")
    assert build([])["triple"].result == 15.0  # a docstring edited: nothing reads it

    text = TWO.replace("    return x * 3\n", "    return x * 3.0  # now a float\n")
    (root / "src/two.py").write_text(text, encoding="utf-8")
    assert build(["triple"])["triple"].result == 15.0  # quadruple did not run triple's code
    (root / "src/more.py").write_text("def more():\n    return 1\n", encoding="utf-8")
    assert build([])["triple"].result == 15.0  # a new module, which neither loaded

    (root / "src/two.py").write_text("\n\n\n" + text, encoding="utf-8")  # every function moves down 3 lines
    moved = build([])["quadruple"]  # read back, its lines moved with the code
    assert moved.first("two.double").caller_line == line + 3
    assert [c[2] for c in moved.seen if c[:2] == ["two.quadruple", "two.double"]] == [line + 3]

    (root / "src/two.py").write_text(text.replace("SCALE = 2.0", "SCALE = 4.0"), encoding="utf-8")
    again = build(["quadruple", "triple"])  # a module's own lines shape whatever loaded it
    assert again["quadruple"].result == 80.0

    (root / "src/two.py").write_text(
        text.replace("SCALE = 2.0", "SCALE = 4.0").replace("self.factor = SCALE", "self.factor = SCALE + 1"),
        encoding="utf-8",
    )
    # Doubler.__init__ ran when the module was imported, for every recording made from it
    assert build(["quadruple", "triple"])["quadruple"].result == 125.0


OWN_DOC = '''\
def own_doc():
    """One."""
    return own_doc.__doc__
'''

OWN_SOURCE = """\
def own_comments():
    with open(__file__, encoding="utf-8") as f:
        return f.read().count("#")  # one
"""

SOURCE_READING = """\
import inspect


def getsource_comments():
    return inspect.getsource(getsource_comments).count("#")  # one
"""


def test_a_run_that_reads_the_codes_source_or_docstrings_is_recorded_again_when_they_change(
    make_project, tmp_path, monkeypatch
):
    root = make_project({"src/own.py": OWN_SOURCE, "src/reading.py": SOURCE_READING, "src/doc.py": OWN_DOC})
    made = recordings_made(monkeypatch)
    requests = [
        Request("own_comments", "own", "own_comments"),  # first: the child has not loaded reading.py yet
        Request("getsource_comments", "reading", "getsource_comments"),
        Request("own_doc", "doc", "own_doc"),
    ]

    def build(expected: list[str]) -> dict:
        made.clear()
        rec = two_recorder(root, tmp_path / "cache")
        try:
            out = rec.record(requests)
        finally:
            rec.close()
        assert made == expected
        return {req.name: out[req].result for req in requests}

    # each counts a '#' of its own count("#") too
    assert build(["own_comments", "getsource_comments", "own_doc"]) == {
        "own_comments": 2,
        "getsource_comments": 2,
        "own_doc": "One.",
    }
    (root / "src/own.py").write_text(OWN_SOURCE.replace("  # one", "  # one # two"), encoding="utf-8")
    assert build(["own_comments"]) == {"own_comments": 3, "getsource_comments": 2, "own_doc": "One."}
    (root / "src/doc.py").write_text(OWN_DOC.replace("One.", "Two."), encoding="utf-8")
    assert build(["own_doc"]) == {"own_comments": 3, "getsource_comments": 2, "own_doc": "Two."}
    (root / "src/reading.py").write_text(SOURCE_READING.replace("  # one", "  # one # two"), encoding="utf-8")
    assert build(["getsource_comments"]) == {"own_comments": 3, "getsource_comments": 3, "own_doc": "Two."}


def test_a_function_no_recording_ran_and_nothing_names_records_nothing_again_added_or_edited(
    make_project, tmp_path, monkeypatch
):
    root = make_project({"src/two.py": TWO})
    cache = tmp_path / "cache"
    made = recordings_made(monkeypatch)
    requests = [Request("quadruple", "two", "quadruple", (5.0,)), Request("triple", "two", "triple", (5.0,))]

    def build(text: str, expected: list[str]) -> dict:
        (root / "src/two.py").write_text(text, encoding="utf-8")
        made.clear()
        rec = two_recorder(root, cache)
        try:
            out = rec.record(requests)
        finally:
            rec.close()
        assert made == expected, text
        return {req.name: out[req].result for req in requests}

    assert build(TWO, ["quadruple", "triple"]) == {"quadruple": 20.0, "triple": 15.0}
    appended = TWO + "\n\ndef halve(x: float, by: int = 2) -> float:\n    return x / by\n"
    assert build(appended, []) == {"quadruple": 20.0, "triple": 15.0}
    assert build(appended.replace("by: int = 2", "by: int = 4"), []) == {"quadruple": 20.0, "triple": 15.0}
    assert build(appended.replace("def halve", "\n\ndef halve"), []) == {"quadruple": 20.0, "triple": 15.0}
    above = TWO.replace("def double(x):", "def halve(x):\n    return x / 2\n\n\ndef double(x):")
    assert build(above, []) == {"quadruple": 20.0, "triple": 15.0}  # the functions below it moved: read back

    # What can change a run: a function that shadows one (both ran it, or its name is written in the module),
    shadowing = TWO + "\n\ndef double(x):\n    return x * 10\n"
    assert build(shadowing, ["quadruple", "triple"]) == {"quadruple": 500.0, "triple": 15.0}
    for text in (
        TWO + "\n\ndef halve(x):\n    return x / 2\n\n\nHALF = halve\n",  # one the module names
        TWO + "\n\ndef halve(x, rng=print('made')):\n    return x / 2\n",  # a default that calls
        TWO + "\n\n@staticmethod\ndef halve(x):\n    return x / 2\n",  # a decorator
        TWO.replace("SCALE = 2.0", "import sys\nSCALE = 2.0\nNAMES = sys.modules[__name__]"),  # a namespace read
    ):
        build(text, ["quadruple", "triple"])
    listed = TWO.replace("SCALE = 2.0", "import sys\nSCALE = 2.0\nNAMES = sys.modules[__name__]")
    build(listed + "\n\ndef halve(x):\n    return x / 2\n", ["quadruple", "triple"])
    test = "from two import triple\n\n\ndef test_triple():\n    assert triple(1) == getattr(triple, 'halve', 3)\n"
    (root / "tests/test_two.py").write_text(test, encoding="utf-8")
    requests.append(Request("test_triple", "tests.test_two", "test_triple"))
    build(TWO, ["quadruple", "triple", "test_triple"])
    # a string in another file the run loaded names it: getattr(module, "halve") would find it
    build(TWO + "\n\ndef halve(x):\n    return x / 2\n", ["test_triple"])


def test_a_module_of_constants_that_gains_its_first_function_records_nothing_again(make_project, tmp_path, monkeypatch):
    root = make_project(
        {"src/adder.py": "from consts import OFFSET\n\n\ndef add(x):\n    return x + OFFSET\n", "src/consts.py": ""}
    )
    cache = tmp_path / "cache"
    made = recordings_made(monkeypatch)
    request = Request("add", "adder", "add", (1,))

    def build(consts: str, expected: list[str]):
        (root / "src/consts.py").write_text(consts, encoding="utf-8")
        made.clear()
        rec = two_recorder(root, cache)
        try:
            result = rec.record([request])[request].result
        finally:
            rec.close()
        assert made == expected, consts
        return result

    assert build("OFFSET = 1\n", ["add"]) == 2
    assert build("OFFSET = 1\n\n\ndef helper():\n    return 0\n", []) == 2
    assert build("OFFSET = 2\n\n\ndef helper():\n    return 0\n", ["add"]) == 3  # its own lines count


def test_a_recording_depends_on_the_functions_it_ran_not_on_those_an_earlier_request_of_its_child_ran(
    make_project, tmp_path
):
    root = make_project(
        {
            "src/first.py": "def one():\n    return 1\n",
            "src/second.py": "def two():\n    return 2\n",
            "tests/test_both.py": "from first import one\nfrom second import two\n\n\n"
            "def test_one():\n    assert one() == 1\n\n\ndef test_two():\n    assert two() == 2\n",
        }
    )
    rec = two_recorder(root, tmp_path / "cache")
    requests = [request_of_test(f"tests/test_both.py::test_{n}", root) for n in ("one", "two")]
    try:
        out = rec.record(requests)  # one batch, one child: the second request runs after the first
    finally:
        rec.close()
    assert sorted(out[requests[0]].reached) == ["first.one", "tests.test_both.test_one"]
    assert sorted(out[requests[1]].reached) == ["second.two", "tests.test_both.test_two"]


def test_a_recording_made_with_other_module_names_is_made_again(make_project, tmp_path, monkeypatch):
    root = make_project({"src/two.py": TWO})
    cache = tmp_path / "cache"
    made = recordings_made(monkeypatch)
    request = Request("quadruple", "two", "quadruple", (5.0,))

    def build(prefix: str):
        rec = two_recorder(root, cache, prefix)
        try:
            return rec.record([request])[request]
        finally:
            rec.close()

    assert build("").first("two.double").caller == "two.quadruple"
    assert build("").first("two.double").caller == "two.quadruple" and made == ["quadruple"]
    # what source_root = "." would name it: the stored recording's names are not the index's any more
    assert build("src.").first("src.two.double").caller == "src.two.quadruple"
    assert made == ["quadruple", "quadruple"]


def test_a_data_file_a_test_module_reads_when_it_is_imported_reaches_every_example_of_it_on_the_next_build(
    make_project,
):
    at_import = (
        DATA_TESTS.replace(
            "def test_standardize_worked_example():\n"
            '    x = np.array(json.loads((Path(__file__).parent / "x.json").read_text()), dtype=float)\n',
            'ROWS = json.loads((Path(__file__).parent / "x.json").read_text())\n\n\n'
            "def test_standardize_worked_example():\n"
            "    x = np.array(ROWS, dtype=float)\n",
        )
        + "\n\ndef test_twice_worked_example():\n    standardize(np.array(ROWS, dtype=float) * 2)\n"
    )
    # The second example's test runs in the same process, after the module was imported for the first.
    second = DATA_PAGE.split("```trace-example")[1].replace(
        "test_standardize_worked_example", "test_twice_worked_example"
    )
    root = data_project(
        make_project,
        **{
            "tests/test_norm.py": at_import,
            "docs/page.md": DATA_PAGE + "\n```trace-example" + second.replace("One row", "Twice"),
        },
    )
    before = expand_page(root)
    assert problems(before) == []
    assert re.findall(r"<code>(\[\[\d+\.\d+\]\])</code>", before.markdown) == ["[[30.0000]]", "[[60.0000]]"]

    (root / "tests/x.json").write_text("[[11, 21, 31, 61]]", encoding="utf-8")
    after = expand_page(root)

    assert problems(after) == []
    assert re.findall(r"<code>(\[\[\d+\.\d+\]\])</code>", after.markdown) == ["[[31.0000]]", "[[62.0000]]"]

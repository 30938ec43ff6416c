"""What a recording is asked for, and what besides that request shapes its key in the recordings store.

A ``Request`` names what to run: a test (``tests/test_ops.py::test_layer_norm_worked_example``, made by
``test_request``) or a function of a helper module with arguments. The block kinds make them in their plans;
the recorder (``record.py``) answers them. A recording is stored under its request and its shape
(``recording_shape``): where the child imports from, the form of the stored data, and what records it
(``recorder_environment``: the recording code of this generator, Python, NumPy). A recorder that records
otherwise makes every recording again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.base.errors import TraceError
from docs_hooks.run.recording import Made

#: The form of a stored recording and of its dependencies: part of every key, so that a recording stored by an
#: earlier form of this code is never read (its rows go when the cache is pruned).
RECORDING_FORMAT = 2

#: The files of this folder that record, besides the code recorded: the modules the recording child loads, and
#: the build's side that asks, keeps and reads back what it recorded.
RECORDER_FILES = (
    "record_child.py",
    "recording.py",
    "observed.py",
    "record.py",
    "dependencies.py",
    "central.py",
    "record_local.py",
    "record_trace.py",
    "request.py",
    "record_process.py",
    "record_store.py",
    "fromtext.py",
)


@dataclass(frozen=True)
class Request:
    """What to run. ``name`` is how pages and messages refer to it."""

    name: str
    module: str  # dotted module to import, or the path of a .py file
    function: str  # attribute path inside it
    args: tuple = ()  # may hold Made values: arguments made in the child
    args_from: str | None = None  # a function of the same module that returns the arguments
    over: Made | None = None  # a mapping made in the child: call function(key, value, *args) for each item
    # Record only the call of ``function`` itself (arguments, locals on return, result); what it calls runs
    # untraced. For a worked example that shows the test's own locals: see record_trace.TargetOnly.
    target_only: bool = False


def test_request(node_id: str, project_root: Path) -> Request:
    """A request for a test by its pytest id: ``tests/test_x.py::test_name``, ``test_x.py::TestCase::test_name``.

    The module is named as pytest imports the file, as the code index names it
    (see ``settings.ModuleNames``): ``tests.test_x`` when ``tests/`` is a package,
    ``test_x`` when it is not (the recorder then imports it from its folder, as
    pytest does: see ``workers.recorder_path``). A method of a test class is run
    on an instance of its class (see ``record_child._test_target``).
    """
    path, sep, func = node_id.partition("::")
    if not sep or not path.endswith(".py") or not func or not all(p.isidentifier() for p in func.split("::")):
        raise TraceError(
            f"'{node_id}' is not a test id; write it as tests/test_file.py::test_name "
            "or tests/test_file.py::TestClass::test_name"
        )
    from docs_hooks.read.blocks import within_root  # a page names only files of the project

    file = project_root / within_root(path, f"the test file of '{node_id}'")
    if not file.exists():
        raise TraceError(f"test file '{path}' does not exist (from '{node_id}')")
    from docs_hooks.base.settings import ModuleNames

    module = ModuleNames(project_root).of_test(file)
    return Request(node_id, module, func.replace("::", "."))


def recorder_environment() -> str:
    """A digest of what records, besides the code recorded: the recording child's modules, Python, NumPy."""
    from importlib import metadata

    h = hashlib.sha256(sys.version.encode())
    try:
        h.update(metadata.version("numpy").encode())
    except metadata.PackageNotFoundError:
        h.update(b"no numpy")
    here = Path(__file__).resolve().parent
    for name in RECORDER_FILES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()[:24]


def recording_shape(project_root: Path, sys_path: list[Path]) -> str:
    """What shapes every recording besides its request and what it depended on: where the child imports from,
    the form of the stored data, and what records it."""
    return json.dumps([RECORDING_FORMAT, str(project_root), [str(p) for p in sys_path], recorder_environment()])


def recording_key(shape: str, req: Request) -> str:
    """The key of ``req``'s recording in the store, for a recorder of ``shape`` (see ``recording_shape``)."""
    return hashlib.sha256(f"{shape}\0{req!r}".encode()).hexdigest()[:24]

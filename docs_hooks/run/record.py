"""Run real code under a recorder and keep what it saw: every call's inputs, locals and result.

A request names what to run: a test (``tests/test_ops.py::test_layer_norm_worked_example``)
or a function of a helper module with arguments. Requests run in a child
process (so that edited code is always the code that runs, and nothing a test
does leaks into the build); one child serves every request of a build, and a
large batch (a cold build's) is shared with a helper process per spare core.

Each recording is cached under its request and what shapes every recording (the
import path, the form of the stored data: ``Recorder._key``), with the list of
what it depended on (``Dependencies``): the text of each function of the code
index whose code ran, the name of each module it loaded and its text outside
its functions' bodies, and the bytes of every other file it loaded or read. A
stored recording is used only while all of those are as they were, so an edit to
one function re-runs only the recordings that ran it; code that only moved keeps
its recordings, their line numbers moved with it.

This module is the build's side: ``Recorder`` answers requests from the store
or through its ``RecordingChild``, which starts the child process and holds the
conversation with it. What runs in the child is ``record_child.py``; what a
recording is, and the form it crosses in and is stored in, is ``recording.py``.

What crosses between the build and the child, and what the cache holds, is
data that cannot run code when read (see ``recording.pack``): no pickle. Each
request has a time limit (the ``test_timeout`` setting); a request that runs
longer, or that ends the child, is an error for that request alone, and the
requests after it go to a new child.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT
from docs_hooks.run import children, residue
from docs_hooks.run.dependencies import Dependencies, moved_by
from docs_hooks.run.record_child import REPLIES_ENV
from docs_hooks.run.recording import Call, Made, Recording, pack, unpack
from docs_hooks.run.turns import Turns

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function

# A recording child and the file its stderr goes to (see start_child).
Child = tuple[subprocess.Popen[bytes], IO[bytes]]

#: The form of a stored recording and of its dependencies: part of every key, so that a recording stored by an
#: earlier form of this code is never read (its rows go when the cache is pruned).
RECORDING_FORMAT = 2


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
    # untraced. For a worked example that shows the test's own locals: see record_child._TargetOnly.
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


DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT  # seconds a request may take unless told (the test_timeout setting)


def recorder_environment() -> str:
    """A digest of what records, besides the code recorded: the recording child's modules, Python, NumPy."""
    from importlib import metadata

    h = hashlib.sha256(sys.version.encode())
    try:
        h.update(metadata.version("numpy").encode())
    except metadata.PackageNotFoundError:
        h.update(b"no numpy")
    here = Path(__file__).resolve().parent
    for name in ("record_child.py", "recording.py", "observed.py", "record.py", "dependencies.py", "central.py"):
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()[:24]


class Recorder:
    """Answers requests from the store, or runs them in its child process and stores what they recorded."""

    def __init__(
        self,
        project_root: Path,
        sys_path: list[Path],
        modules: dict[str, str],
        file_digests: dict[str, str],
        cache_dir: Path | None,
        timeout: float = DEFAULT_TIMEOUT,
        functions: Mapping[str, Function] | None = None,
        texts: residue.Texts | None = None,
        cores: int | None = None,
        busy: Callable[[], int] = lambda: 0,
    ) -> None:
        self.project_root = project_root
        self.file_digests = file_digests  # repo path -> digest of its current text
        # The functions of the code index: a recording depends on those whose code ran, and on the names of
        # the modules it loaded (see Dependencies).
        self.dependencies = Dependencies(project_root, functions or {}, file_digests, modules, texts)
        # What shapes every recording besides its request and what it depended on: where the child imports
        # from, the form of the stored data, and what records it (this generator's recording code, Python,
        # NumPy): a recorder that records otherwise makes every recording again.
        self._shape = json.dumps(
            [RECORDING_FORMAT, str(project_root), [str(p) for p in sys_path], recorder_environment()]
        )
        # Every recording of the project in one store (see cachedir.Store), keyed by its request.
        store = store_file(cache_dir, "recordings")
        self.store = Store(store) if store is not None else None
        self._memo: dict[Request, Recording | TraceError] = {}  # a request that failed: its error
        self._turns = Turns()  # one conversation with the child at a time
        # Recorded, not yet in the store: key -> (what it depended on, recording). Written while
        # the child runs the next batch, by flush(), and at the latest when this recorder goes (or the
        # process ends), so a caller that never flushes loses nothing.
        self._unstored: dict[str, tuple[dict, Recording]] = {}
        self._unstored_finalizer = weakref.finalize(self, _write_recordings, self.store, self._unstored)
        self.child = RecordingChild(
            project_root,
            sys_path,
            modules,
            timeout,
            while_running=functools.partial(_write_recordings, self.store, self._unstored),
        )
        # A large batch is shared with helper processes, one per spare core (see _run).
        self._helper = functools.partial(RecordingChild, project_root, sys_path, modules, timeout)
        self.cores = cores if cores is not None else usable_cores()
        self.busy = busy  # how many cores the build's other runs take now (see _run)
        self.helpers = 0  # how many helper processes were started (for tests)
        self.made = 0  # how many requests were run (not read back from the store)

    def _key(self, req: Request) -> str:
        return hashlib.sha256(f"{self._shape}\0{req!r}".encode()).hexdigest()[:24]

    def _cached(self, requests: list[Request]) -> dict[Request, Recording]:
        """The stored recordings of ``requests`` that are still true: nothing they depended on has changed."""
        if self.store is None or not requests:
            return {}
        keys = {self._key(req): req for req in requests}
        found = {}
        rows = self.store.get_many(list(keys))  # a damaged store is made again by the store itself: misses
        for key, raw in rows.items():
            try:
                stored = unpack(raw)
                deps, recording = stored["depends"], stored["recording"]
                if not isinstance(deps, dict) or not _stored_form(recording):
                    continue
                shifts = self.dependencies.moved(deps)
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # damaged, or written by another version of this code: recorded again
            if shifts is None:
                continue  # something it depended on has changed
            found[keys[key]] = moved_by(recording, shifts)
        return found

    def recordings(self) -> list[Recording]:
        """Every recording this recorder has answered with so far (recorded or read back)."""
        return [rec for rec in self._memo.values() if isinstance(rec, Recording)]

    def flush(self) -> None:
        """Write what was recorded since the last write to the store (the build calls it when its pages are done)."""
        _write_recordings(self.store, self._unstored)

    def record(self, requests: list[Request]) -> dict[Request, Recording]:
        """Recordings for ``requests``; raises TraceError for one that failed."""
        out = self.record_each(requests)
        for value in out.values():
            if isinstance(value, TraceError):
                raise value
        return cast(dict[Request, Recording], out)  # no value is an error: the first would have been raised

    def record_each(self, requests: list[Request]) -> dict[Request, Recording | TraceError]:
        """Recordings for ``requests``, all in one child process; a request that failed maps to its error.

        One conversation with the child at a time (the prefetch runs in threads). A
        caller whose requests are in another caller's batch waits for that batch
        only: it is woken as soon as the recordings are in, not after whatever
        batch the other caller sends next.
        """
        memo = self._memo
        with self._turns.turn(lambda: all(req in memo for req in requests)) as recorded:
            if recorded:  # already (by the prefetch, say)
                return {req: memo[req] for req in requests}
            return self._record_each(requests)

    def _record_each(self, requests: list[Request]) -> dict[Request, Recording | TraceError]:
        missing = [req for req in dict.fromkeys(requests) if req not in self._memo]
        self._memo.update(self._cached(missing))
        todo = [req for req in missing if req not in self._memo]
        if todo:
            self.made += len(todo)
            for req, value in zip(todo, self._run(todo)):
                self._memo[req] = value
            self._turns.landed()  # a page waiting for these goes on
            if self.store is not None:
                for req in todo:
                    rec = self._memo[req]
                    if not isinstance(rec, TraceError):
                        self._unstored[self._key(req)] = (self.dependencies.of(rec), rec)
        return {req: self._memo[req] for req in requests}

    def _run(self, todo: list[Request]) -> list[Recording | TraceError]:
        """``todo`` through the child; a large batch (a cold build's) also through helper processes
        (bench/README.md, "recording children").

        A helper starts once a core is free (``busy`` tells how many the build's other runs take: the coverage
        run, while it runs) and while at least ``PER_CHILD`` requests are left, so that it pays for starting
        Python and importing the project for enough of them. Each process takes the next request when it is done
        with one, so a slow test holds up its own process only. A helper ends when no request is left.
        """
        most = min(self.cores, MAX_CHILDREN)
        if most < 2 or len(todo) < 2 * PER_CHILD:
            return self.child.run(todo)
        left = collections.deque(range(len(todo)))
        values: list[Recording | TraceError | None] = [None] * len(todo)
        lock = threading.Lock()
        over = threading.Event()
        helpers = [0]  # started so far
        failed: list[BaseException] = []

        def serve(child: RecordingChild) -> None:
            while True:
                with lock:
                    if not left or failed:
                        return
                    i = left.popleft()
                values[i] = child.run([todo[i]])[0]

        def helper() -> None:
            try:
                while True:
                    with lock:
                        if len(left) < PER_CHILD or failed:
                            return
                        if 1 + helpers[0] + self.busy() < self.cores:  # a core is free
                            helpers[0] += 1
                            self.helpers += 1
                            break
                    if over.wait(HELPER_WAIT):
                        return
                child = self._helper()
                try:
                    serve(child)
                finally:
                    child.close()
            except BaseException as exc:  # a bug of this module: raised again in the caller's thread
                failed.append(exc)

        threads = [threading.Thread(target=helper, daemon=True) for _ in range(most - 1)]
        for thread in threads:
            thread.start()
        try:
            serve(self.child)
        finally:
            over.set()
            for thread in threads:
                thread.join()
        if failed:
            raise failed[0]
        assert all(v is not None for v in values)  # every request was taken, and each taker was joined
        return cast(list[Recording | TraceError], values)

    def close(self) -> None:
        """Store what is not stored yet, and stop the child process (it also stops when this process exits)."""
        self.flush()
        self.child.close()
        if self.store is not None:
            self.store.close()
            _vacuum(self.store.path)


class RecordingChild:
    """The recording child process and the conversation with it: a batch of requests goes in, one message a
    request comes out, each request held to its time limit.

    The process starts on the first batch and serves every batch after it, until a request stops it (its time
    limit, an exit): the requests after that go to a new process.
    """

    def __init__(
        self,
        project_root: Path,
        sys_path: list[Path],
        modules: dict[str, str],
        timeout: float,
        while_running: Callable[[], None] = lambda: None,
    ) -> None:
        self.project_root = project_root
        self.sys_path = [str(p) for p in sys_path]
        self.modules = modules  # absolute filename -> module name
        self.timeout = timeout  # seconds each request may take (the test_timeout setting)
        self.while_running = while_running  # called once a batch is sent, while the child runs it
        self.runs = 0  # how many child processes were started (for tests)
        self.proc: subprocess.Popen[bytes] | None = None  # the process serving requests now, if any
        self._stderr: IO[bytes] | None = None
        self._unread = b""  # what the child sent after the last whole message
        self._finalizer: weakref.finalize | None = None

    def run(self, requests: list[Request]) -> list[Recording | TraceError]:
        """The requests through the child: a Recording (or the TraceError) per request, in their order.

        Each request has ``timeout`` seconds from its start. One that runs longer
        is stopped by killing the child with whatever it started, and one that
        ends the child (``os._exit``, a crash) is reported with the child's exit
        code and last lines of output; the requests after it go to a new child.
        """
        out: list[Recording | TraceError] = []
        while len(out) < len(requests):
            out.extend(self._run_batch(requests[len(out) :]))
        return out

    def close(self) -> None:
        """Stop the child process (if one is running) with whatever it started, and forget it: the next batch
        starts a new one."""
        if self._finalizer is not None:
            self._finalizer()
        self.proc = None
        self._unread = b""

    def _start(self) -> subprocess.Popen[bytes]:
        """The child process that serves the requests (started on the first batch)."""
        if self.proc is not None and self.proc.poll() is None:
            return self.proc
        self.runs += 1
        self._unread = b""
        self.proc, self._stderr = start_child(self.project_root)
        self._finalizer = weakref.finalize(self, stop_child, self.proc, self._stderr)
        return self.proc

    def _run_batch(self, requests: list[Request]) -> list[Recording | TraceError]:
        """What the child answers for ``requests``, up to and including the first that stops it."""
        payload = pack(
            {
                "sys_path": self.sys_path,
                "project_root": str(self.project_root),
                "modules": self.modules,
                "requests": [
                    {
                        "kind": "call",
                        "name": r.name,
                        "module": r.module,
                        "function": r.function,
                        "args": list(r.args),
                        "args_from": r.args_from,
                        "over": r.over,
                        "target_only": r.target_only,
                        "project_root": str(self.project_root),
                    }
                    for r in requests
                ],
            }
        )
        proc = self._start()
        out: list[Recording | TraceError] = []
        # Until the child says it has started the first request, it may be starting Python and importing the
        # project: that may take longer than a small limit meant for one test, on a busy machine.
        deadline = time.monotonic() + max(self.timeout, DEFAULT_TIMEOUT)
        try:
            sent = self._send(proc, len(payload).to_bytes(8, "little") + payload, deadline)
        except OSError:
            sent = True  # it has ended: read below what it said, and how it ended
        if sent:
            self.while_running()  # the last batch's recordings go to the store while the child runs this one
        printed = None
        while len(out) < len(requests):
            try:
                if not sent:
                    raise TimeoutError
                message = self._message(proc, deadline)
            except TimeoutError:
                children.kill_group(proc)
                self.close()
                req = requests[len(out)]
                out.append(
                    TraceError(
                        f"{req.name} did not finish within test_timeout = {self.timeout:g} s, so it was stopped "
                        f"(with every process it started); make it finish sooner, or raise test_timeout in "
                        f"[tool.docs_hooks]"
                    )
                )
                return out
            if message is None:  # the child has ended
                out.append(self._ended(proc, requests[len(out)], printed or 0))
                return out
            if "start" in message:
                deadline = time.monotonic() + self.timeout
                printed = message.get("printed")
            elif "error" in message:
                tail = self._printed(printed) if message.get("exited") and printed is not None else ""
                out.append(TraceError(message["error"] + (f"\nLast lines of its output:\n{tail}" if tail else "")))
            else:
                reply = Path(message["path"])
                try:
                    out.append(unpack(reply.read_bytes()))
                except (OSError, ValueError) as exc:  # removed or cut short under it (a full disk, say)
                    out.append(
                        TraceError(
                            f"the recording of {requests[len(out)].name} could not be read back ({exc}); build again"
                        )
                    )
                finally:
                    reply.unlink(missing_ok=True)
        return out

    @staticmethod
    def _send(proc: subprocess.Popen[bytes], data: bytes, deadline: float) -> bool:
        """Write ``data`` to the child's input; False when it has not read it all by ``deadline`` (stuck
        importing the project, say)."""
        assert proc.stdin is not None  # start_child gives the child a pipe for its input
        fd = proc.stdin.fileno()
        view = memoryview(data)
        os.set_blocking(fd, False)
        try:
            while view:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    return False
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    continue
        finally:
            os.set_blocking(fd, True)
        return True

    def _message(self, proc: subprocess.Popen[bytes], deadline: float) -> dict | None:
        """The child's next message (a JSON line); None when it has ended; TimeoutError after ``deadline``."""
        assert proc.stdout is not None  # start_child gives the child a pipe for its output
        fd = proc.stdout.fileno()
        while b"\n" not in self._unread:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._unread += chunk
        line, _, self._unread = self._unread.partition(b"\n")
        return json.loads(line)

    def _printed(self, since: int) -> str:
        """The last lines the child printed after ``since`` (read without moving the file's offset, which the
        child writes at)."""
        if self._stderr is None:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        text = os.pread(fd, size - since, since).decode(errors="replace")
        return "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])

    def _ended(self, proc: subprocess.Popen[bytes], req: Request, printed: int) -> TraceError:
        """The error for ``req``, which the child was running (or about to run) when it ended."""
        try:
            code = proc.wait(timeout=5)  # it is exiting: let it finish writing its output
        except subprocess.TimeoutExpired:
            children.kill_group(proc)
            code = proc.returncode
        tail = self._printed(printed)
        self.close()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return TraceError(
            f"{req.name} ended the recording process before it returned: the process {how} (os._exit, or a "
            f"crash); a test that a page records must return normally: remove the exit (or show another test). "
            + (f"Last lines of its output:\n{tail}" if tail else "It printed nothing.")
        )


#: A helper process starts only while at least this many requests of a batch are left, and a batch of fewer than
#: twice as many is not shared.
PER_CHILD = 8

#: At most this many processes record one batch (the child and its helpers).
MAX_CHILDREN = 4

#: Seconds between two looks of a waiting helper for a free core.
HELPER_WAIT = 0.05

#: How many lines of a child's output an error shows.
OUTPUT_LINES = 15

#: A recording larger than this (packed) is not stored: it is recorded again when needed.
MAX_STORED_BYTES = 32 * 1024 * 1024

#: The recordings store keeps at most this many bytes of recordings: the least recently read go first.
MAX_STORE_BYTES = 256 * 1024 * 1024

#: The recordings store is vacuumed when more than this share of its file is free pages.
VACUUM_SHARE = 0.5


def _vacuum(path: Path) -> None:
    """Keep the store within MAX_STORE_BYTES (the least recently read recordings go), and give the file's
    free pages back (after rows were deleted, here or by the cache's pruning) when they are most of it."""
    if not path.is_file():
        return
    try:
        db = sqlite3.connect(path, timeout=1, isolation_level=None)
        try:
            total = db.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM entries").fetchone()[0]
            if total > MAX_STORE_BYTES:
                kept, drop = 0, []
                for key, size in db.execute("SELECT key, LENGTH(value) FROM entries ORDER BY used DESC").fetchall():
                    kept += size
                    if kept > MAX_STORE_BYTES:
                        drop.append((key,))
                with db:
                    db.execute("BEGIN")
                    db.executemany("DELETE FROM entries WHERE key = ?", drop)
            else:
                drop = []
            free = db.execute("PRAGMA freelist_count").fetchone()[0]
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            if drop or (pages and free / pages > VACUUM_SHARE):
                db.execute("VACUUM")
        finally:
            db.close()
    except sqlite3.Error:
        pass  # busy (another build) or damaged (the next read makes it again): only a saving of space


def _stored_form(recording: object) -> bool:
    """Whether an entry holds a recording as ``_write_recordings`` stores it: a Recording of Calls (what it
    depends on is checked by ``Dependencies.moved``)."""
    if type(recording) is not Recording or type(recording.request) is not str or type(recording.calls) is not list:
        return False
    if type(recording.files) is not list or not all(type(f) is str for f in recording.files):
        return False
    return all(
        type(c) is Call
        and type(c.function) is str
        and type(c.caller) in (str, type(None))
        and type(c.caller_line) is int
        and type(c.args) is dict
        and type(c.locals) is dict
        for c in recording.calls
    )


def _write_recordings(store: Store | None, pending: dict[str, tuple[dict, Recording]]) -> None:
    """Write ``pending`` (key -> (dependencies, recording)) to ``store`` in one transaction, and empty it.

    A recording larger than MAX_STORED_BYTES is left out (it is recorded again when needed).
    """
    if store is None or not pending:
        return
    items = dict(pending)
    for key in items:
        pending.pop(key, None)
    packed = {key: pack({"depends": deps, "recording": rec}) for key, (deps, rec) in items.items()}
    store.put_many({key: raw for key, raw in packed.items() if len(raw) <= MAX_STORED_BYTES})


def usable_cores() -> int:
    """How many cores this process may run on (its affinity, where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def start_child(project_root: Path) -> Child:
    """A recording child process, and the file its stderr goes to."""
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (the child writes it; stop_child closes it)
    # The child's replies go to a folder the build makes and removes (see stop_child): a child that is
    # killed leaves none behind.
    env[REPLIES_ENV] = replies = tempfile.mkdtemp(prefix="docs-hooks-replies-")
    try:
        proc = children.start(
            [sys.executable, "-c", "from docs_hooks.run.record_child import child_main; child_main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=project_root,
            env=env,
        )
    except BaseException:
        shutil.rmtree(replies, ignore_errors=True)
        raise
    # Popen declares no such attribute: the folder goes on the instance, where stop_child (and a test) finds it.
    vars(proc)["replies"] = replies
    return proc, stderr


def stop_child(proc: subprocess.Popen[bytes], stderr: IO[bytes] | None) -> None:
    """Close the child's input (it exits at the end of its input), then make sure it has gone, with what it started."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=5)
    except Exception:
        pass
    children.kill_group(proc)
    replies = getattr(proc, "replies", None)
    if replies:
        shutil.rmtree(replies, ignore_errors=True)
    for f in (proc.stdout, stderr):
        try:
            if f is not None:
                f.close()
        except Exception:
            pass

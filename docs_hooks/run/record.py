"""Run real code under a recorder and keep what it saw: every call's inputs, locals and result.

A request (``request.Request``) names what to run: a test (``tests/test_ops.py::test_layer_norm_worked_example``)
or a function of a helper module with arguments. Requests run in a child
process (so that edited code is always the code that runs, and nothing a test
does leaks into the build); one child serves every request of a build, and a
large batch (a cold build's) is shared with a helper process per spare core.

Each recording is cached under its request and what shapes every recording (the
import path, the form of the stored data: ``request.recording_key``), with the list of
what it depended on (``Dependencies``): the text of each function of the code
index whose code ran, the name of each module it loaded and its text outside
its functions' bodies, and the bytes of every other file it loaded or read. A
stored recording is used only while all of those are as they were, so an edit to
one function re-runs only the recordings that ran it; code that only moved keeps
its recordings, their line numbers moved with it.

This module is the build's side: ``Recorder`` answers requests from the store
(``record_store.py``) or through its ``RecordingChild`` (``record_process.py``),
which starts the child process and holds the conversation with it. What runs in
the child is ``record_child.py``; what a recording is, and the form it crosses in
and is stored in, is ``recording.py``.

What crosses between the build and the child, and what the cache holds, is
data that cannot run code when read (see ``recording.pack``): no pickle. Each
request has a time limit (the ``test_timeout`` setting); a request that runs
longer, or that ends the child, is an error for that request alone, and the
requests after it go to a new child.
"""

from __future__ import annotations

import collections
import functools
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.run import residue
from docs_hooks.run.dependencies import Dependencies, moved_by
from docs_hooks.run.record_process import DEFAULT_TIMEOUT, RecordingChild
from docs_hooks.run.record_store import ReadBack, stored_form, vacuum, write_recordings
from docs_hooks.run.recording import Recording
from docs_hooks.run.request import Request, recording_key, recording_shape
from docs_hooks.run.turns import Turns

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function


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
        read_back: ReadBack | None = None,
    ) -> None:
        self.project_root = project_root
        self.file_digests = file_digests  # repo path -> digest of its current text
        # The functions of the code index: a recording depends on those whose code ran, and on the names of
        # the modules it loaded (see Dependencies).
        self.dependencies = Dependencies(project_root, functions or {}, file_digests, modules, texts)
        # What shapes every recording besides its request and what it depended on: where the child imports
        # from, the form of the stored data, and what records it (this generator's recording code, Python,
        # NumPy): a recorder that records otherwise makes every recording again.
        self._shape = recording_shape(project_root, sys_path)
        # Every recording of the project in one store (see cachedir.Store), keyed by its request.
        store = store_file(cache_dir, "recordings")
        self.store = Store(store) if store is not None else None
        # The entries read from it, unpacked: a serve session's, kept across its builds, or this build's own.
        self.read_back = read_back if read_back is not None else ReadBack()
        self.read_back.new_build()
        self._memo: dict[Request, Recording | TraceError] = {}  # a request that failed: its error
        self._turns = Turns()  # one conversation with the child at a time
        # Recorded, not yet in the store: key -> (what it depended on, recording). Written while
        # the child runs the next batch, by flush(), and at the latest when this recorder goes (or the
        # process ends), so a caller that never flushes loses nothing.
        self._unstored: dict[str, tuple[dict, Recording]] = {}
        self._unstored_finalizer = weakref.finalize(self, write_recordings, self.store, self._unstored)
        self.child = RecordingChild(
            project_root,
            sys_path,
            modules,
            timeout,
            while_running=functools.partial(write_recordings, self.store, self._unstored),
        )
        # A large batch is shared with helper processes, one per spare core (see _run).
        self._helper = functools.partial(RecordingChild, project_root, sys_path, modules, timeout)
        self.cores = cores if cores is not None else usable_cores()
        self.busy = busy  # how many cores the build's other runs take now (see _run)
        self.helpers = 0  # how many helper processes were started (for tests)
        self.made = 0  # how many requests were run (not read back from the store)

    def _key(self, req: Request) -> str:
        return recording_key(self._shape, req)

    def _cached(self, requests: list[Request]) -> dict[Request, Recording]:
        """The stored recordings of ``requests`` that are still true: nothing they depended on has changed."""
        if self.store is None or not requests:
            return {}
        keys = {self._key(req): req for req in requests}
        found = {}
        entries = self.read_back.read(self.store, list(keys))  # a damaged store is made again by the store: misses
        for key, stored in entries.items():
            try:
                deps, recording = stored["depends"], stored["recording"]
                if not isinstance(deps, dict) or not stored_form(recording):
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
        write_recordings(self.store, self._unstored)

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
            vacuum(self.store.path)


#: A helper process starts only while at least this many requests of a batch are left, and a batch of fewer than
#: twice as many is not shared.
PER_CHILD = 8

#: At most this many processes record one batch (the child and its helpers).
MAX_CHILDREN = 4

#: Seconds between two looks of a waiting helper for a free core.
HELPER_WAIT = 0.05


def usable_cores() -> int:
    """How many cores this process may run on (its affinity, where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1

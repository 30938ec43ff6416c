"""The recording child process as the build holds it: started, sent a batch of requests, its answers read back,
each request held to its time limit, and stopped with whatever it started.

``RecordingChild`` holds the conversation: a batch goes in on the child's input (its length, then ``pack``'s
bytes), one JSON line a message comes out (a request started, its reply file, or its error), and a request that
runs longer than ``test_timeout``, or that ends the process, is an error for that request alone; the requests
after it go to a new process. What runs in the process is ``record_child.py``; ``record.Recorder`` decides what
to send it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT
from docs_hooks.run import children
from docs_hooks.run.record_child import REPLIES_ENV
from docs_hooks.run.recording import Recording, pack, unpack
from docs_hooks.run.request import Request

# A recording child and the file its stderr goes to (see start_child).
Child = tuple[subprocess.Popen[bytes], IO[bytes]]

DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT  # seconds a request may take unless told (the test_timeout setting)

#: How many lines of a child's output an error shows.
OUTPUT_LINES = 15


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

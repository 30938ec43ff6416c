"""Child processes that end with the build, however the build ends.

Every process the build starts to run the project's code (the recorder, the
coverage run, the specification's compile) is started by ``start`` here:

- in a session (and process group) of its own, so that ``kill_group`` ends it
  together with whatever it started in turn (a test that starts a server, say);
- holding the read end of a pipe, the lifeline, whose write end only the build
  holds. ``watch_parent`` (called first thing in the child) forks a watchdog
  that waits on it: when the build exits, even by ``kill -9``, the pipe
  closes and the watchdog kills the child's whole group. On Linux the child
  also asks the kernel for SIGKILL when the build dies (``PR_SET_PDEATHSIG``);
  it is only asked for when the child was started by the build's main thread,
  since the kernel sends it when the starting *thread* ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

LIFELINE_ENV = "DOCS_HOOKS_LIFELINE"  # "<fd>" or "<fd>:pdeathsig"


def start(args: list[str], **popen) -> subprocess.Popen:
    """``subprocess.Popen(args, **popen)`` in a new session, with a lifeline to this process."""
    env = dict(popen.pop("env", None) or os.environ)
    read, write = os.pipe()
    try:
        main = threading.current_thread() is threading.main_thread()
        env[LIFELINE_ENV] = f"{read}:pdeathsig" if main else str(read)
        proc = subprocess.Popen(args, env=env, pass_fds=(read,), start_new_session=os.name == "posix", **popen)
    except BaseException:
        os.close(write)
        raise
    finally:
        os.close(read)
    setattr(proc, "_docs_hooks_lifeline", write)  # noqa: B010 - closed by kill_group / release, or at exit
    return proc


def release(proc: subprocess.Popen) -> None:
    """Close this side of ``proc``'s lifeline (once it has ended)."""
    fd = getattr(proc, "_docs_hooks_lifeline", None)
    if fd is not None:
        setattr(proc, "_docs_hooks_lifeline", None)  # noqa: B010 - an attribute of ours on the Popen
        try:
            os.close(fd)
        except OSError:
            pass


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc`` and every process of its group (what it started), and reap it."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    release(proc)


def watch_parent() -> None:  # pragma: no cover - runs in the child process
    """In the child: end this process group when the build that started it ends.

    A watchdog, forked here before anything else runs, waits on the lifeline
    and kills the group when it closes: a process of its own, so it acts even
    when the child's code never lets go of the interpreter, and after the
    kernel has killed the child itself (``PR_SET_PDEATHSIG``).
    """
    spec = os.environ.pop(LIFELINE_ENV, "")
    if not spec:
        return
    fd_text, _, mode = spec.partition(":")
    fd = int(fd_text)
    if not hasattr(os, "fork") or os.getpgid(0) != os.getpid():
        return  # not the leader of a group of its own: nothing to end safely
    if os.fork() == 0:  # the watchdog: holds nothing but the lifeline (the build sees the child's pipes close)
        os.closerange(0, fd)
        os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536)
        try:
            while os.read(fd, 1):
                pass
        except OSError:
            pass
        _end_group()
    os.close(fd)
    if mode == "pdeathsig" and sys.platform.startswith("linux"):
        _pdeathsig()
    if os.getppid() == 1:  # the build is gone already
        _end_group()


def _pdeathsig() -> None:  # pragma: no cover - runs in the child process
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # the lifeline alone ends the child


def _end_group() -> None:  # pragma: no cover - runs in the child process (or its watchdog)
    try:
        os.killpg(0, signal.SIGKILL)  # the child leads this group (see watch_parent): it and what it started
    except OSError:
        pass
    os._exit(1)

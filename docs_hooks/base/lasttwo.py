"""What a process that stays across builds (``mkdocs serve``) keeps of its last two builds (``LastTwo``)."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class LastTwo(Generic[K, V]):
    """Values by key, kept while the current build or the one before it used them: a value the build before
    used, and the current one used again, stays; one that neither used goes at the next ``new_build``. A build
    that used none (a prose edit reads no recording) does not count: what the build before it used stays for
    the next. Safe to share between the threads of a build."""

    def __init__(self) -> None:
        self._now: dict[K, V] = {}  # used by the current build
        self._before: dict[K, V] = {}  # used by the build before it
        self._lock = threading.Lock()

    def new_build(self) -> None:
        """A new build starts: what the build before the last did not use goes (unless the last used nothing)."""
        with self._lock:
            if self._now:
                self._before, self._now = self._now, {}

    def peek(self, key: K) -> V | None:
        """The value of ``key``, not counted as used (the caller checks it first, then ``keep``\\ s it)."""
        with self._lock:
            found = self._now.get(key)
            return found if found is not None else self._before.get(key)

    def get(self, key: K) -> V | None:
        """The value of ``key``, counted as used by the current build; None when neither build kept one."""
        with self._lock:
            found = self._now.get(key)
            if found is None:
                found = self._before.get(key)
                if found is not None:
                    self._now[key] = found
            return found

    def keep(self, key: K, value: V) -> None:
        """``value`` under ``key``, used by the current build."""
        with self._lock:
            self._now[key] = value

"""One caller at a time talks to a child process; the others wait for what they need, not for their turn.

The recorder and the KaTeX renderer each serve two threads: the prefetch,
which sends one batch after another in the order of the pages, and the build's
own thread, which needs one page's results. With a plain lock the build's
thread could wait for the batch it needs and then for the next one too, since
the prefetch takes the lock back first. Here a waiting caller is woken as soon
as a batch's results are in, and goes on when they are what it needs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Turns:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._busy = False  # a caller is talking to the child

    @contextmanager
    def turn(self, ready: Callable[[], bool]) -> Iterator[bool]:
        """Yields True when ``ready()`` holds (nothing to do), else False with this caller's turn to talk."""
        with self._changed:
            while not (done := ready()) and self._busy:
                self._changed.wait()
            if not done:
                self._busy = True  # this caller's turn
        if done:
            yield True
            return
        try:
            yield False
        finally:
            with self._changed:
                self._busy = False
                self._changed.notify_all()

    def landed(self) -> None:
        """Results are in: callers waiting for them go on (the turn itself is not over)."""
        with self._changed:
            self._changed.notify_all()

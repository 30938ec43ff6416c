"""The one error type the generator raises for bad input.

Every message starts with ``path:line:`` of the page (or source) that holds the
problem, so that editors and CI annotate the right place, and ends by saying
what to do.
"""

from __future__ import annotations


class TraceError(Exception):
    """A problem in a page, a reference or the code it points at."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"

    def at(self, path: str, line: int | None) -> TraceError:
        """The same error, placed at ``path:line`` when it has no place yet."""
        if self.path is not None:
            return self
        return TraceError(self.message, path, line)

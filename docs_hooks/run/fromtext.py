"""The project's code compiled from its text when a run imports it, never read from a bytecode cache.

Python takes a cached ``__pycache__/*.pyc`` for the text it was compiled from
when the text's size and its time of change, to the second, are the ones the
cache recorded. A file saved twice within one second, its size kept
(``2.0`` made ``4.0``), with an import between the saves (a build under
``mkdocs serve``), would then run as it was before the second save, and a page
would show a value the code no longer has. The processes that run the project's
code for the pages (the recording child, the coverage run) import every file
under the project's own folders with ``FromText``, which compiles the text it
reads, each time, and writes no cache. Installed packages (NumPy, pytest, a
virtual environment inside the project) are imported as Python imports them.

What compiling costs a run is in bench/README.md ("What compiling the code from
its text costs").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from importlib.abc import PathEntryFinder
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    ExtensionFileLoader,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)

from docs_hooks.run.observed import project_files


class FromText(SourceFileLoader):
    """A loader of a Python file that compiles its text at each import, and reads and writes no bytecode cache."""

    def path_stats(self, path: str) -> dict:
        # Without the text's stats, SourceLoader.get_code neither reads a cache nor writes one.
        raise OSError("the project's code is compiled from its text")


def compile_from_text(roots: Iterable[str]) -> Callable[[str], PathEntryFinder]:
    """Have every module of a folder under ``roots`` (not an installed package's) imported with ``FromText``,
    from now on in this process; returns the path hook it put first on ``sys.path_hooks``."""
    is_project = project_files(roots)
    finder = FileFinder.path_hook(
        (ExtensionFileLoader, EXTENSION_SUFFIXES),
        (FromText, SOURCE_SUFFIXES),
        (SourcelessFileLoader, BYTECODE_SUFFIXES),
    )

    def hook(path: str) -> PathEntryFinder:
        folder = os.path.abspath(path or os.getcwd())
        if not is_project(os.path.join(folder, "*")) or not os.path.isdir(folder):  # a file of the folder
            raise ImportError("not a folder of the project's own code")  # the next hook finds it
        return finder(folder)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()  # a folder met before now gets the hook too
    return hook

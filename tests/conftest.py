"""Make the flat modules in src/ importable (``import ops``) however pytest is configured.

The pytest configuration may already put ``src`` on the path (pythonpath =
["src", "."]); inserting it again only when missing keeps this harmless.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT / "src", ROOT):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


# The longest test files, longest first, as a `make test` on two cores timed them (from about 30 s to about 170 s
# each). A worker that starts a long file late keeps the run going after the other worker is done, so they go
# first, and the many short files fill the end. This list orders the files and nothing else: one missing from it,
# or in a stale place, makes the run slower and its results the same. The browser files build this repository's
# site, which needs the line map the model's tests write, so they come after three long files that do not build
# it: with two or three workers, the model's tests are done before a worker reaches them.
LONGEST_FIRST = [
    "docs_hooks/test_plugin.py",
    "docs_hooks/test_cachedir.py",
    "docs_hooks/test_example.py",
    "browser/test_site.py",
    "docs_hooks/test_carried.py",
    "browser/test_phone.py",
    "docs_hooks/test_coverage_run.py",
    "docs_hooks/test_record.py",
    "docs_hooks/test_pytest_linemap.py",
    "browser/test_matrix.py",
    "browser/test_widgets.py",
    "docs_hooks/test_check_example.py",
]


def pytest_collection_modifyitems(session, config, items):
    """The model's tests first, then the longest files (LONGEST_FIRST), then the rest in their own order. The
    model's tests are those the line map is measured by (docs_hooks.pytest_linemap writes it once they have
    passed); the browser tests and the generator's tests that build this repository's site then find it instead of
    running those tests again. ``make test`` runs the tests with pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``: the workers take the files in this order."""
    tests = ROOT / "tests"
    longest = {name: rank for rank, name in enumerate(LONGEST_FIRST)}

    def order(item) -> tuple[int, int]:
        path = Path(str(item.path))
        if path.parent == tests:
            return (0, 0)
        rank = longest.get(path.relative_to(tests).as_posix()) if path.is_relative_to(tests) else None
        return (1, rank) if rank is not None else (2, 0)

    items.sort(key=order)

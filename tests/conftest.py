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


def pytest_collection_modifyitems(session, config, items):
    """The model's tests first, the browser tests last. The model's tests are those the line map is measured
    by (docs_hooks.pytest_linemap writes it once they have passed), and the browser tests build the site,
    which then finds it instead of running those tests again; so do the generator's tests that build this
    repository's site. ``make test`` runs the tests with pytest-xdist, ``--dist loadfile
    --no-loadscope-reorder``: the workers take the files in this order."""
    tests = ROOT / "tests"

    def order(item) -> int:
        folder = Path(str(item.path)).parent
        return 0 if folder == tests else 2 if folder == tests / "browser" else 1

    items.sort(key=order)

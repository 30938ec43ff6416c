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
    """The browser tests last: they build the site, which then finds the line map the model's tests wrote
    (docs_hooks.pytest_linemap) instead of running those tests again."""
    browser = ROOT / "tests" / "browser"
    items.sort(key=lambda item: browser in Path(str(item.path)).parents)

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

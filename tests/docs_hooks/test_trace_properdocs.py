"""The site builds with ProperDocs, the maintained fork of MkDocs, as well as with MkDocs.

ProperDocs redirects ``mkdocs.*`` imports to itself, so Material and our hooks
module run unchanged. This test installs nothing: it is skipped unless the
environment has ProperDocs (``pip install properdocs``, best in a separate
virtual environment, since Material still depends on MkDocs).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("properdocs") is None,
                    reason="properdocs is not installed; pip install properdocs (in a separate venv) to run this test")
def test_the_site_builds_with_properdocs(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "properdocs", "build", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"properdocs build failed (exit {proc.returncode}):\n{log[-6000:]}"
    assert "Traceback" not in log, log[-6000:]
    page = (site / "layer-norm" / "index.html").read_text(encoding="utf-8")
    # what the generator and the theme add: expanded blocks, KaTeX math, badges, the widget script
    for marker in ('class="katex', 'class="trace-badge', 'class="trace-table', "assets/docs_hooks/trace-widgets.js",
                   "assets/docs_hooks/katex/katex.min.css", 'class="md-header'):
        assert marker in page, f"{marker} is missing from the LayerNorm page built by properdocs"
    assert "Trace error" not in page
    assert (site / "assets" / "docs_hooks" / "katex" / "katex.min.css").is_file()
    assert (site / "search" / "search_index.json").is_file()

"""The whole site, built from the repository's own mkdocs.yml: no single module is under test here.

Reproducible: the same sources build the same site, byte for byte. Two builds
of the real site into two temporary folders, compared file by file. Only what
must differ between two builds may differ, and nothing does today:

- ``sitemap.xml`` carries each page's build date, and ``sitemap.xml.gz`` the
  build time in its gzip header. MkDocs takes both from SOURCE_DATE_EPOCH when it
  is set; this test sets it, so they must be equal too. Without it they would be
  the only exceptions (``ALLOWED_TO_DIFFER``).

The output folder's own path must not leak into the pages (they are compared as
bytes, so it would show). The second build reuses the evidence the first one
cached (.cache/), so a difference between a fresh recording and a cached one
shows here as well.

ProperDocs: the site builds with ProperDocs, the maintained fork of MkDocs, as
well as with MkDocs. ProperDocs redirects ``mkdocs.*`` imports to itself, so
Material and our hooks module run unchanged. That test installs nothing: it is
skipped unless the environment has ProperDocs (``pip install properdocs``, best
in a separate virtual environment, since Material still depends on MkDocs).
"""

from __future__ import annotations

import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ALLOWED_TO_DIFFER: set[str] = set()  # with SOURCE_DATE_EPOCH set; else {"sitemap.xml", "sitemap.xml.gz"}
SOURCE_DATE_EPOCH = "1700000000"


def build(dest: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-f", str(REPO / "mkdocs.yml"), "-d", str(dest)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, f"mkdocs build failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-6000:]}"


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir(),
    reason="the site's math needs node and KaTeX: run 'make setup' (npm ci)",
)
def test_two_builds_of_the_site_are_identical(tmp_path):
    a, b = tmp_path / "first" / "site", tmp_path / "second" / "site"
    build(a)
    build(b)
    only_a, only_b = files(a) - files(b), files(b) - files(a)
    assert not only_a and not only_b, f"only in the first build: {sorted(only_a)}; only in the second: {sorted(only_b)}"
    differ = [
        f for f in sorted(files(a)) if f not in ALLOWED_TO_DIFFER and not filecmp.cmp(a / f, b / f, shallow=False)
    ]
    details = []
    for f in differ[:5]:
        if f.endswith((".html", ".json", ".xml", ".css", ".js")):
            x, y = (a / f).read_text(encoding="utf-8"), (b / f).read_text(encoding="utf-8")
            i = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            details.append(
                f"{f}: first difference at character {i}:\n  {x[max(0, i - 80) : i + 120]!r}\n  {y[max(0, i - 80) : i + 120]!r}"
            )
        else:
            details.append(f"{f}: binary files differ")
    assert not differ, f"{len(differ)} file(s) differ between two builds of the same sources:\n" + "\n".join(details)
    leaked = [
        f
        for f in sorted(files(a))
        if f.endswith((".html", ".json", ".xml")) and str(tmp_path) in (a / f).read_text(encoding="utf-8")
    ]
    assert not leaked, f"the build folder's path appears in {leaked}"


@pytest.mark.skipif(
    importlib.util.find_spec("properdocs") is None,
    reason="properdocs is not installed; pip install properdocs (in a separate venv) to run this test",
)
def test_the_site_builds_with_properdocs(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "properdocs", "build", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"properdocs build failed (exit {proc.returncode}):\n{log[-6000:]}"
    assert "Traceback" not in log, log[-6000:]
    page = (site / "layer-norm" / "index.html").read_text(encoding="utf-8")
    # what the generator and the theme add: expanded blocks, KaTeX math, badges, the widget script
    for marker in (
        'class="katex',
        'class="trace-badge',
        'class="trace-table',
        "assets/docs_hooks/trace-widgets.js",
        "assets/docs_hooks/katex/katex.min.css",
        'class="md-header',
    ):
        assert marker in page, f"{marker} is missing from the LayerNorm page built by properdocs"
    assert "Trace error" not in page
    assert (site / "assets" / "docs_hooks" / "katex" / "katex.min.css").is_file()
    assert (site / "search" / "search_index.json").is_file()

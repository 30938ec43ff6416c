"""What a traced site ships besides its pages: the generator's stylesheets and scripts, and KaTeX's
stylesheet and fonts, under ``assets/docs_hooks/`` of the site.

The MkDocs plugin adds them to the site itself; for other builders
``python -m docs_hooks pages`` writes them into the docs folder.
"""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"  # the generator's own stylesheets and scripts
SITE_ASSETS = "assets/docs_hooks"  # where they go in the site


def asset_paths(math_assets: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """(site path, file) of everything a traced site ships: the generator's stylesheets and scripts, and
    KaTeX's stylesheet and fonts (``math_assets``, see run.math.MathRenderer.assets)."""
    own = [(f"{SITE_ASSETS}/{a.name}", a) for a in sorted(ASSETS.iterdir()) if a.suffix in (".css", ".js")]
    return own + math_assets


def stylesheets() -> list[str]:
    """The stylesheets every page links (KaTeX's first)."""
    return [f"{SITE_ASSETS}/katex/katex.min.css"] + [f"{SITE_ASSETS}/{s.name}" for s in sorted(ASSETS.glob("*.css"))]


def scripts() -> list[str]:
    """The scripts every page loads."""
    return [f"{SITE_ASSETS}/{s.name}" for s in sorted(ASSETS.glob("*.js"))]

"""``python -m docs_hooks pages``: what the MkDocs plugin adds to a site, written as files for other builders.

Zensical runs Python-Markdown extensions but no plugin, so nothing adds pages
or files to its site. This command writes into the docs folder (or a folder
inside it, ``--out``) what the plugin would have added:

- a source page for every file of the code the pages cite, or every file of the
  code index with ``source_pages = "all"`` (``source/src/ops.py.md``, a
  ``trace-source`` block the extension expands when the builder converts it);
- the generator's stylesheets and scripts, and KaTeX's stylesheet and fonts
  (``assets/docs_hooks/``), which the site's ``extra_css`` and ``extra_javascript``
  must name (the command prints them);
- the compiled specification, at ``spec_pdf``.

A file is rewritten only when its bytes change (a builder that caches pages
by their text then converts nothing again), and a source page of a file that
left the code (or that the pages no longer cite) is removed: the folder it wrote keeps a list of what it wrote
(``.docs_hooks-pages``). Under MkDocs the plugin makes the same files itself and
leaves these copies out.
"""

from __future__ import annotations

import json
from pathlib import Path

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.core.shipped import SITE_ASSETS, asset_paths, scripts, stylesheets
from docs_hooks.core.site import make_build
from docs_hooks.render import sources

MANIFEST = ".docs_hooks-pages"


def write_pages(settings: Settings, out: Path | None = None) -> int:
    """Write the files (see the module's doc); print what changed and the lines mkdocs.yml needs. Exit code."""
    docs = settings.docs_dir.resolve()
    folder = (out if out is not None else docs).resolve()
    if folder != docs and docs not in folder.parents:
        raise TraceError(
            f"--out {out}: the builder reads only the docs folder ({settings.rel(docs)}); name a folder inside it"
        )
    prefix = folder.relative_to(docs).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    wanted: dict[str, bytes] = {}
    for repo_path in make_build(settings, static=True).source_files():  # as the extension reads them
        wanted[sources.page_uri(repo_path)] = sources.page_markdown(repo_path).encode("utf-8")
    from docs_hooks.run.math import MathRenderer

    math = MathRenderer(settings.project_root, settings.cache_dir, timeout=settings.test_timeout)
    for uri, path in asset_paths(math.assets(f"{SITE_ASSETS}/katex")):
        wanted[uri] = path.read_bytes()
    if settings.spec_source is not None and settings.spec_pdf:
        from docs_hooks.run.spec import compile_spec

        cache = settings.cache_dir / "spec" if settings.cache_dir else None
        wanted[settings.spec_pdf] = compile_spec(
            settings.spec_source, cache_dir=cache, timeout=settings.test_timeout
        ).pdf
    written, removed = _write(folder, wanted)
    where = settings.rel(folder)
    print(
        f"pages: {len(wanted)} file(s) in {where}/ ({written} written, {len(wanted) - written} unchanged, "
        f"{removed} removed)"
    )
    print("The site's mkdocs.yml names them (the MkDocs plugin adds them itself):")
    print("extra_css:\n" + "".join(f"  - {prefix}{s}\n" for s in stylesheets()), end="")
    print("extra_javascript:\n" + "".join(f"  - {prefix}{s}\n" for s in scripts()), end="")
    return 0


def written_by_pages(docs: Path) -> set[str]:
    """What ``pages`` wrote into the docs folder ``docs`` (paths inside it), by the lists it left there."""
    found: set[str] = set()
    for manifest in docs.rglob(MANIFEST):
        base = manifest.parent.relative_to(docs).as_posix()
        try:
            names = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        names = names if isinstance(names, list) else []  # a list edited or damaged by hand: nothing listed
        found.update(f"{base}/{n}" if base != "." else str(n) for n in names if isinstance(n, str))
    found.add(MANIFEST)
    return found


def _write(folder: Path, wanted: dict[str, bytes]) -> tuple[int, int]:
    """Write each file whose bytes differ; remove what an earlier run wrote that is no longer wanted."""
    manifest = folder / MANIFEST
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        listed = []
    # Only what this command could have written: paths inside the folder. Anything else in a list that was
    # edited or damaged is ignored, never deleted.
    before = {
        rel
        for rel in (listed if isinstance(listed, list) else [])
        if isinstance(rel, str) and rel and not Path(rel).is_absolute() and ".." not in Path(rel).parts
    }
    written = 0
    for rel, data in wanted.items():
        path = folder / rel
        try:
            if path.read_bytes() == data:
                continue
        except OSError:
            pass
        atomic_write(path, data)
        written += 1
    removed = 0
    for rel in sorted(before - set(wanted)):
        path = folder / rel
        if path.is_file():
            path.unlink()
            removed += 1
    atomic_write(manifest, json.dumps(sorted(wanted), indent=1) + "\n")
    return written, removed

"""MkDocs adapter: the one module mkdocs.yml names under ``hooks:``.

It only wires MkDocs events to the core: build the code index once per build,
expand each page's trace blocks (handing Markdown placeholders for the HTML the
generator made, which on_page_content puts back), fill in the site-wide tables
once every page is expanded (on_page_context) and what waited for the coverage
run (on_post_page, or on_post_build for a page written before the run ended),
report problems through MkDocs' logger (so ``mkdocs build --strict``
fails on them), and watch the code during ``serve``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.plugins import event_priority

from docs_hooks import gcpause
from docs_hooks.atomic import atomic_write
from docs_hooks.cachedir import MAX_AGE_DAYS, prune
from docs_hooks.errors import TraceError
from docs_hooks.lock import compare, read_lock
from docs_hooks.project import fingerprint, make_builder
from docs_hooks.settings import load_settings
from docs_hooks.stash import unstash

log = logging.getLogger("mkdocs.plugins.docs_hooks")

_state: dict = {}


def on_config(config, **kwargs):
    # What an earlier build of this process froze (mkdocs serve) goes back to the collector now.
    gcpause.unfreeze()
    settings = load_settings(Path(config.config_file_path).parent)
    # While serving, a rebuild after a page edit keeps the builder (its index and the pages it
    # expanded) when no code, test, helper or spec file changed; any change makes a new one.
    stamp = fingerprint(settings)
    if _state.get("fingerprint") != stamp:
        _state["builder"] = make_builder(settings)
        _state["builder"].keep_html_out = True  # see on_page_content
        _state["fingerprint"] = stamp
    _state["settings"] = settings
    _state["unfinished"] = {}  # page -> its HTML file, written before the coverage run ended (on_post_page)
    try:
        _state["locked"] = read_lock(settings.lock_path, settings.rel(settings.lock_path))
    except TraceError as err:  # a lock that cannot be read (a merge conflict, say): its message, no traceback
        from mkdocs.exceptions import PluginError

        raise PluginError(str(err)) from None
    gcpause.freeze()  # the index and the parsed pages live through the build: see gcpause
    return config


def on_files(files, config, **kwargs):
    """Ship the compiled specification with the site, so every page can link into it."""
    from mkdocs.structure.files import File

    settings, builder = _state["settings"], _state["builder"]
    for f in files.documentation_pages():
        builder.page_urls[settings.rel(Path(f.abs_src_path))] = f.url
    if builder.spec is not None and settings.spec_pdf:
        files.append(File.generated(config, settings.spec_pdf, content=builder.spec.pdf))
    # KaTeX's stylesheet and fonts: the math is HTML already, these make it look right offline.
    for src_uri, path in builder.math.assets("assets/katex"):
        files.append(File.generated(config, src_uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    settings, builder = _state["settings"], _state["builder"]
    source_path = Path(page.file.abs_src_path)
    rel = settings.rel(source_path)
    # MkDocs hands over the page without its front matter; keep line numbers true to the file.
    source = source_path.read_text(encoding="utf-8")
    offset = source[: len(source) - len(markdown)].count("\n") if source.endswith(markdown) else 0
    result = builder.expand(rel, "\n" * offset + markdown)
    problems = result.problems + compare(
        _state["locked"], result.uses, settings.rel(settings.lock_path), result.unresolved, pages={rel}
    )
    _warn(problems)
    page.docs_hooks_html = result.stash  # what the Markdown holds placeholders for: see on_page_content
    return result.stashed


def on_page_content(html, page, config, files, **kwargs):
    """Put back the generated HTML that was kept out of the Markdown parser (see docs_hooks.stash)."""
    stash = getattr(page, "docs_hooks_html", None)
    return unstash(html, stash) if stash else html


@event_priority(100)  # before the search plugin reads the page
def on_page_context(context, page, config, nav, **kwargs):
    """Fill in the site-wide tables: every page has been expanded by now, and the search index reads them."""
    settings, builder = _state["settings"], _state["builder"]
    page.content, problems = builder.fill_site_tables(settings.rel(Path(page.file.abs_src_path)), page.content)
    _warn(problems)
    return context


def on_post_page(output, page, config, **kwargs):
    """Fill in what waited for the coverage run: the tests ran while MkDocs rendered the pages.

    While the run is still going, the page is written with its placeholders and
    filled in on_post_build instead: MkDocs goes on with the other pages meanwhile.
    """
    settings, builder = _state["settings"], _state["builder"]
    rel = settings.rel(Path(page.file.abs_src_path))
    if not builder.can_finish(output):
        _state["unfinished"][rel] = Path(page.file.abs_dest_path)
        return output
    return _finish(builder, rel, output)


def _finish(builder, rel: str, html: str) -> str:
    html, problems = builder.finish(rel, html)
    _warn(problems)
    return html


def _warn(problems) -> None:
    """Each problem as a warning of MkDocs' logger: ``mkdocs build --strict`` fails on it."""
    for problem in problems:
        log.warning(str(problem))


def on_post_build(config, **kwargs):
    builder = _state["builder"]
    builder.await_background()  # a bug in the background work is raised here, not lost
    unfinished, _state["unfinished"] = _state["unfinished"], {}
    for rel, dest in unfinished.items():
        written = dest.read_text(encoding="utf-8")
        html = _finish(builder, rel, written)
        if html == written:  # its placeholders are gone: a plugin changed the page after this hook
            from mkdocs.exceptions import PluginError

            raise PluginError(
                f"{rel}: its HTML file {dest} no longer holds the placeholders docs_hooks left in it while the "
                "coverage run was going; another plugin's on_post_page removed them (by removing HTML "
                "comments, say). Turn that off in the plugin, or build again: with the run's result cached, "
                "docs_hooks fills the page before the other plugins see it")
        atomic_write(dest, html)
    # The build's objects stay frozen: after `mkdocs build` the process ends, and handing them back
    # now would only make the collector walk all of them once more on the way out. `mkdocs serve`
    # hands them back when its next build starts (on_config).
    removed = prune(_state["settings"].cache_dir)  # entries no build has used for a month
    if removed:
        log.info(f"docs_hooks: removed {removed} cache entries unused for {MAX_AGE_DAYS} days")


def on_build_error(error, **kwargs):
    gcpause.unfreeze()


def on_serve(server, config, builder, **kwargs):
    settings = _state["settings"]
    for folder in (settings.source_root, settings.tests_root, settings.lock_path):
        if folder.exists():
            server.watch(str(folder))
    return server

"""The MkDocs plugin: ``plugins: [search, docs_hooks]`` in mkdocs.yml.

It only wires MkDocs events to the core, keeping one build's state on the
plugin object (MkDocs keeps the object across the rebuilds of ``mkdocs serve``):

- on_config: read ``[tool.docs_hooks]``, make the builder (the code index, and
  the workers it starts) when the code changed, link the plugin's own CSS and
  JavaScript;
- on_files: ship those assets, KaTeX's stylesheet and fonts and the compiled
  specification; keep the review lock and the helpers the build runs out of the site;
- on_page_markdown: expand the page's trace blocks (the generated HTML stays out
  of the Markdown parser as placeholders, put back in on_page_content);
- on_env: gather, once per build, what the entries cite in each file (for its source page);
- on_page_context: fill in what is made late (the site-wide tables, what waited
  for the coverage run, the source pages): every page has been expanded by then,
  and neither the search index nor the theme has read the page yet;
- on_serve / on_shutdown: watch the code; end the workers when serving stops.

Problems go to the ``mkdocs.plugins.docs_hooks`` logger as warnings, so
``mkdocs build --strict`` fails on them; a problem that stops the build
(unreadable settings, a source file that does not parse) is a ``PluginError``:
MkDocs prints its message, starting with the file and line, and no traceback.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, InclusionLevel

from docs_hooks.base import gcpause
from docs_hooks.base.cachedir import MAX_AGE_DAYS, prune
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import is_virtualenv, load_settings
from docs_hooks.project import fingerprint, make_builder
from docs_hooks.render import sources
from docs_hooks.render.stash import unstash
from docs_hooks.resolve.lock import compare, read_lock

log = logging.getLogger("mkdocs.plugins.docs_hooks")

ASSETS = Path(__file__).with_name("assets")  # the plugin's own stylesheet and scripts
SITE_ASSETS = "assets/docs_hooks"  # where they go in the site
SOURCE_PLACEHOLDER = "<!--docs-hooks-source-page-->"  # a source page's body, until every page is expanded


KERNEL = re.compile(r"""\bregister\(\s*["']([\w.]+)["']""")  # a browser kernel, as trace-widgets.js takes it


def widget_kernels(docs_dir: Path, scripts) -> set[str]:
    """The functions the site's own scripts (mkdocs.yml's extra_javascript) register a browser kernel for."""
    names: set[str] = set()
    for script in scripts:
        path = docs_dir / str(script)
        if path.suffix in (".js", ".mjs") and path.is_file():
            names.update(KERNEL.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


class PluginConfig(base.Config):
    root = c.Optional(c.Dir(exists=True))
    """Folder holding the pyproject.toml whose ``[tool.docs_hooks]`` configures the plugin; default: the folder of mkdocs.yml."""

    assets = c.Type(bool, default=True)
    """Link the plugin's stylesheet, scripts and KaTeX's stylesheet into every page (turn off only to bring your own)."""


class TracePlugin(BasePlugin[PluginConfig]):
    """Traced documentation of NumPy code: trace blocks in the pages become tables, listings and examples."""

    def __init__(self):
        self.settings = None
        self.builder = None
        self.fingerprint: str | None = None
        self.locked: dict = {}
        self.source_files: dict[str, str] = {}  # src_uri of each source page this plugin adds -> its file's repo path
        self.cited: dict[str, list] = {}  # repo path -> the spans of it the entries cite (see on_env)

    # ------------------------------------------------------------------ set-up

    def on_startup(self, *, command, dirty):
        """Defining this event makes MkDocs keep the plugin object across the rebuilds of ``mkdocs serve``."""

    def on_config(self, config):
        gcpause.unfreeze()  # what an earlier build of this process froze goes back to the collector now
        root = Path(self.config.root or Path(config.config_file_path).parent)
        try:
            settings = load_settings(root)
            # While serving, a rebuild after a page edit keeps the builder (its index and the pages it
            # expanded) when no code, test, helper or spec file changed; any change makes a new one,
            # and the old one's workers are ended.
            stamp = fingerprint(settings)
            if self.fingerprint != stamp:
                self._close_builder()
                self.builder = make_builder(settings)
                self.builder.keep_html_out = True  # see on_page_content
                self.fingerprint = stamp
            self.settings = settings
            self.locked = read_lock(settings.lock_path, settings.rel(settings.lock_path))
        except TraceError as err:
            raise PluginError(str(err)) from None
        self.builder.widget_kernels = widget_kernels(Path(config.docs_dir), config.extra_javascript)
        if self.config.assets:
            config.extra_css.append(f"{SITE_ASSETS}/katex/katex.min.css")
            for sheet in sorted(ASSETS.glob("*.css")):
                config.extra_css.append(f"{SITE_ASSETS}/{sheet.name}")
            for script in sorted(ASSETS.glob("*.js")):
                config.extra_javascript.append(f"{SITE_ASSETS}/{script.name}")
        gcpause.freeze()  # the index and the parsed pages live through the build: see gcpause
        return config

    def on_files(self, files, *, config):
        settings, builder = self.settings, self.builder
        for f in list(files):
            if f.abs_src_path and self._kept_out(Path(f.abs_src_path)):
                files.remove(f)
        for f in files.documentation_pages():
            builder.links.page_urls[settings.rel(Path(f.abs_src_path))] = f.url
        self.source_files = {}
        for repo_path in sorted(builder.index.file_digests):  # every indexed file, with functions or not
            page = File.generated(
                config,
                sources.page_uri(repo_path),
                content=sources.page_markdown(repo_path, SOURCE_PLACEHOLDER),
                inclusion=InclusionLevel.NOT_IN_NAV,
            )  # reached by links, not listed in the nav
            files.append(page)
            self.source_files[page.src_uri] = repo_path
            builder.links.source_pages[repo_path] = page.url
        if builder.spec is not None and settings.spec_pdf:
            files.append(File.generated(config, settings.spec_pdf, content=builder.spec.pdf))
        if self.config.assets:
            for asset in sorted(ASSETS.iterdir()):
                if asset.suffix in (".css", ".js"):
                    files.append(File.generated(config, f"{SITE_ASSETS}/{asset.name}", abs_src_path=str(asset)))
            for src_uri, path in builder.workers.math.assets(f"{SITE_ASSETS}/katex"):
                files.append(File.generated(config, src_uri, abs_src_path=str(path)))
        return files

    def _kept_out(self, path: Path) -> bool:
        """Whether a file of the docs folder is the build's, not the reader's: the lock, the helpers it runs."""
        s = self.settings
        path = path.resolve()
        if path == s.lock_path.resolve():
            return True
        helper = s.model_run.resolve().parent if s.model_run is not None else None
        return helper is not None and helper != s.docs_dir.resolve() and helper in path.parents

    # ------------------------------------------------------------------ pages

    def on_page_markdown(self, markdown, *, page, config, files):
        if page.file.src_uri in self.source_files:
            return markdown  # a source page: filled in on_page_context
        settings, builder = self.settings, self.builder
        source_path = Path(page.file.abs_src_path)
        rel = settings.rel(source_path)
        # MkDocs hands over the page without its front matter; keep line numbers true to the file.
        source = source_path.read_text(encoding="utf-8")
        offset = source[: len(source) - len(markdown)].count("\n") if source.endswith(markdown) else 0
        try:
            result = builder.expand(rel, "\n" * offset + markdown)
        except TraceError as err:
            raise PluginError(str(err)) from None
        lock_name = settings.rel(settings.lock_path)
        self._warn(result.problems + compare(self.locked, result.uses, lock_name, result.unresolved, pages={rel}))
        page.docs_hooks_html = result.stash  # what the Markdown holds placeholders for: see on_page_content
        return result.stashed

    def on_page_content(self, html, *, page, config, files):
        """Put back the generated HTML that was kept out of the Markdown parser (see docs_hooks.stash)."""
        stash = getattr(page, "docs_hooks_html", None)
        return unstash(html, stash) if stash else html

    def on_env(self, env, *, config, files):
        """Every page has been expanded: which entries and equations cite each file, once per build
        (each source page shows its own)."""
        self.cited = {}
        for citation in sources.citations(self.builder.site_entries()):
            self.cited.setdefault(citation.repo_path, []).append(citation)
        return env

    @event_priority(100)  # before the search plugin reads the page
    def on_page_context(self, context, *, page, config, nav):
        """Fill in what is made late, and the source pages.

        MkDocs converts every page's Markdown before it renders the first template,
        so by now every page has been expanded (the site-wide tables read them all)
        and the coverage run has had all that time to end; waiting for it here, if it
        has not, is the last wait of the build.
        """
        repo_path = self.source_files.get(page.file.src_uri)
        if repo_path is not None:
            page.content = page.content.replace(SOURCE_PLACEHOLDER, self.source_page(repo_path, page.url))
            return context
        rel = self.settings.rel(Path(page.file.abs_src_path))
        page.content, problems = self.builder.finish(rel, page.content)
        self._warn(problems)
        return context

    def on_post_build(self, *, config):
        self.builder.await_background()  # a bug in the background work is raised here, not lost
        # The build's objects stay frozen: after `mkdocs build` the process ends, and handing them back
        # now would only make the collector walk all of them once more on the way out. `mkdocs serve`
        # hands them back when its next build starts (on_config).
        removed = prune(self.settings.cache_dir)  # entries no build has used for a month
        if removed:
            log.info(f"docs_hooks: removed {removed} cache entries unused for {MAX_AGE_DAYS} days")

    def on_build_error(self, *, error):
        gcpause.unfreeze()

    # ------------------------------------------------------------------ serve

    def on_serve(self, server, *, config, builder):
        s = self.settings
        watched = [s.source_root, s.tests_root, s.lock_path]
        if s.model_run is not None:
            watched.append(s.model_run.parent)
        if s.spec_source is not None:
            watched.append(s.spec_source.parent)
        for path in dict.fromkeys(watched):
            if path.resolve() == s.project_root:  # code beside everything: not the site, the cache, the venv
                for child in sorted(path.iterdir()):
                    if not s.is_excluded(child) and not (child.is_dir() and is_virtualenv(child)):
                        server.watch(str(child))
            elif path.exists():
                server.watch(str(path))
        return server

    def on_shutdown(self):
        self._close_builder()

    # ------------------------------------------------------------------ helpers

    def _close_builder(self) -> None:
        """End the workers of the build before (the recorder, KaTeX, the coverage run) and let it go."""
        if self.builder is not None:
            self.builder.close()
            self.builder = None
            self.fingerprint = None

    def source_page(self, repo_path: str, url: str) -> str:
        """The body of a file's source page: its lines, and the entries and equations citing each."""
        builder, s = self.builder, self.settings
        text = (s.project_root / repo_path).read_text(encoding="utf-8")
        return sources.render_page(
            repo_path, text, self.cited.get(repo_path, []), url, builder.links.page_url, s.github_url(repo_path)
        )

    @staticmethod
    def _warn(problems) -> None:
        """Each problem as a warning of MkDocs' logger: ``mkdocs build --strict`` fails on it."""
        for problem in problems:
            log.warning(str(problem))

"""The Python-Markdown extension: a page's trace blocks expanded inside Python-Markdown, for any builder.

    markdown_extensions:
      - docs_hooks.extension          # options: root (the folder of pyproject.toml)

A preprocessor, after Python-Markdown has normalised the page's whitespace and
before fenced code is read (priority 28: between 30 and 25), hands the page to
the core and writes the result back: Markdown text, with every piece of HTML the
generator made replaced by a placeholder of Python-Markdown's own ``htmlStash``,
which puts the HTML back, as it is, when the page is converted. So the HTML is
never read as Markdown, under every builder, and nothing rewrites the HTML files
a builder wrote.

The MkDocs plugin (``docs_hooks.plugin``) adds this extension itself and tells it
which page is being converted. A builder without plugin events (Zensical) names
it under ``markdown_extensions``; the extension then learns the page from the
builder's rendering context, and keeps the site's build in ``SESSIONS``: Zensical
makes a new Markdown instance, and a new extension, for every page, in one
process that lives across the rebuilds of ``zensical serve``. Its source pages,
stylesheets and scripts are files ``python -m docs_hooks pages`` writes into the
docs folder first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

from docs_hooks.base.errors import TraceError
from docs_hooks.core.session import Session, widget_kernels, without_front_matter
from docs_hooks.fences import Fences
from docs_hooks.render import segments

log = logging.getLogger("docs_hooks")

PRIORITY = 28  # after normalize_whitespace (30: it drops the placeholders' marker characters), before fences (25)


class TraceExtension(Extension):
    """Expands trace blocks. ``page_of(md)`` says which page is being converted: (its path from the project
    root, the lines of front matter the builder left out); ``session`` is the site's core; ``fences``, where
    fenced code is highlighted once per text (see fences)."""

    def __init__(
        self,
        session: Session | None = None,
        page_of: Callable[[Markdown], tuple[str, int] | None] | None = None,
        fences: Fences | None = None,
        **kwargs: Any,
    ):
        self.config = {
            "root": [
                "",
                "folder holding the pyproject.toml whose [tool.docs_hooks] configures the site; "
                "default: the builder's project folder (Zensical: the folder of mkdocs.yml)",
            ],
        }
        super().__init__(**kwargs)
        self.session = session
        self.page_of = page_of
        self.fences = fences

    def extendMarkdown(self, md: Markdown) -> None:
        md.registerExtension(self)
        md.preprocessors.register(TracePreprocessor(md, self), "docs_hooks", PRIORITY)


class TracePreprocessor(Preprocessor):
    def __init__(self, md: Markdown, extension: TraceExtension):
        super().__init__(md)
        self.extension = extension

    def run(self, lines: list[str]) -> list[str]:
        ext = self.extension
        fences = ext.fences
        if ext.session is not None:
            session, place = ext.session, ext.page_of(self.md) if ext.page_of else None
        else:  # a builder that names the extension itself (Zensical): the page from its rendering context
            session, place, fences = SESSIONS.for_page(self.md, ext.getConfig("root"))
        if place is None:
            raise TraceError(
                "docs_hooks.extension cannot tell which page it is converting: use it through the MkDocs plugin "
                "(plugins: [docs_hooks]) or under Zensical"
            )
        page, offset = place
        if fences is not None:
            fences.attach(self.md)
        expanded = session.expand(page, "\n" * offset + "\n".join(lines))
        text = segments.stashed(expanded.parts, self.md.htmlStash.store)
        out = text.split("\n")
        out = out[offset:] if out[:offset] == [""] * offset else out
        # The page ends with a blank line, as Python-Markdown leaves it: a placeholder on the last line is then a
        # paragraph of its own, which Python-Markdown replaces with its block of HTML.
        while out[-2:] != ["", ""]:
            out.append("")
        return out


class Sessions:
    """The sessions of the sites being built in this process, one per project root (see the module's doc).

    A session replaces its build when the code changes (``Session.refresh``), so
    this holds one build per site, the newest.
    """

    def __init__(self) -> None:
        self._sessions: dict[Path, Session] = {}
        self._planned: dict[Path, str | None] = {}
        # Each site's fences highlighted once per text (see fences), written as they are made: Zensical does
        # not tell when a build is done.
        self._fences: dict[Path, Fences] = {}

    def for_page(self, md: Markdown, root: str) -> tuple[Session, tuple[str, int] | None, Fences]:
        context = _rendering_context(md)
        if context is None:
            raise TraceError(
                "docs_hooks.extension found no rendering context: under MkDocs, name the plugin "
                "(plugins: [docs_hooks]) instead of the extension"
            )
        config = context.config
        project = Path(root or config.get("root_dir") or ".").resolve()
        session = self._sessions.get(project)
        if session is None:
            session = self._sessions[project] = Session(project, _log_problem)
        build = session.refresh(_kernels(config), new_pass=False)  # Zensical: once for every page
        if self._planned.get(project) != session.fingerprint:  # a new build: every page resolved first
            session.plan_site()
            build.links.only_sources(build.source_files())  # the files 'python -m docs_hooks pages' wrote a page of
            self._planned[project] = session.fingerprint
        docs = Path(str(config.get("docs_dir") or "docs"))
        docs = docs if docs.is_absolute() else project / docs
        path = docs / context.page.path
        build.links.between_files = True  # Zensical makes each link's URL from the page's file
        cache_dir = session.settings.cache_dir
        fences = self._fences.get(project)
        if fences is None or fences.cache_dir != cache_dir:
            if fences is not None:
                fences.close()
            fences = self._fences[project] = Fences(cache_dir, batched=False)
        return session, (session.settings.rel(path), _front_matter_lines(path)), fences

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        for fences in self._fences.values():
            fences.close()
        self._sessions.clear()
        self._fences.clear()


SESSIONS = Sessions()


def _rendering_context(md: Markdown):
    """Zensical's rendering context of the page (its path, URL and the site's configuration), or None."""
    for processor in md.preprocessors:
        if getattr(processor, "name", "") == "rendering_context" and hasattr(processor, "page"):
            return processor
    return None


def _kernels(config: dict) -> frozenset[str]:
    docs = Path(config.get("root_dir") or ".") / (config.get("docs_dir") or "docs")
    scripts = [s if isinstance(s, str) else s.get("path", "") for s in config.get("extra_javascript") or []]
    return frozenset(widget_kernels(docs, scripts))


def _front_matter_lines(path: Path) -> int:
    """How many lines of the file the builder left out before the page it hands over (its front matter)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return 0
    kept = without_front_matter(text)
    return len(kept) - len(kept.lstrip("\n")) if kept is not text else 0


def _log_problem(problem: TraceError) -> None:
    log.warning(str(problem))


def makeExtension(**kwargs: Any) -> TraceExtension:  # noqa: N802 - the name Python-Markdown looks for
    return TraceExtension(**kwargs)

"""Fenced code highlighted once per text: what SuperFences makes of a fence, kept across builds (``Fences``).

Every listing the generator writes (an entry's code, an excerpt) is a fence of
the page's Markdown, highlighted by the site's own ``pymdownx.superfences`` and
``pymdownx.highlight`` so that it looks like the site's other code. Pygments is
most of what converting such a page costs, and MkDocs converts every page on
every build, kept or not. What a fence comes out as depends on its text, its
options, the site's highlight settings and the versions of Pygments and
pymdown-extensions, and on one more thing: how many fences the page highlighted
before it (``code_block_count``), which numbers the ids of its lines
(``__codelineno-3-12``). So a fence is highlighted once with that number set to
``SENTINEL``, the number is taken out of the HTML it made (the template), and
each later fence of the same key gets the template with the page's number put
back: the same HTML, to the byte, as SuperFences makes it
(``tests/docs_hooks/test_fences.py`` converts pages both ways).

A fence is left to SuperFences when the template could not be exact: a title
(SuperFences may keep it in the page's HTML stash), a site that highlights
without Pygments, or a fence whose text, options or settings hold the sentinel's
digits. Only the formatter of SuperFences' default fences is wrapped, on each
Markdown instance the extension runs in (``attach``); nothing global changes.

The templates live in a store of the cache folder (``fences``), sealed like
every entry; a process that stays (``mkdocs serve``) also keeps those of its
last build in memory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from markdown import Markdown

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.settings import installed_version

FORMAT = 2  # the form of a stored template; a change makes every one a miss
# What a stored template starts with: any other value under its key (damaged, or written by something else) is a
# miss, not HTML put on a page.
_MARK = f"docs_hooks fence template {FORMAT}\n"
EXTENSION = "docs_hooks.extension"  # the generator's Python-Markdown extension, as mkdocs.yml names it
SENTINEL = 7391046285  # the number a fence is highlighted with once, to find where the page's number goes
_DIGITS = str(SENTINEL)
_PLACE = "\x00"  # where the page's number goes in a template (HTML holds no NUL)


class Fences:
    """The templates of highlighted fences, by key (none stored without a cache folder).

    ``batched``: the templates a build made are written, and those it read marked as read, by ``flush`` (a front
    end that tells when a build is done); otherwise each as it is made or read."""

    def __init__(self, cache_dir: Path | None, batched: bool = True):
        self.cache_dir = cache_dir
        path = store_file(cache_dir, "fences")
        self.store = Store(path) if path is not None else None
        self.batched = batched
        self._known: dict[str, str] = {}  # key -> template, found or made by this process
        self._used: set[str] = set()  # the keys of the build under way
        self._read: list[str] = []  # the keys read from the store since the last flush, marked as read then
        self._fresh: dict[str, bytes] = {}  # made since the last flush, to be written
        self.made = 0  # fences highlighted by Pygments through this object
        self.reused = 0  # fences given a template
        self._versions: tuple[str, str] | None = None

    def versions(self) -> tuple[str, str]:
        """The versions of Pygments and pymdown-extensions, which highlight the fences."""
        if self._versions is None:
            self._versions = (installed_version("pygments"), installed_version("pymdown-extensions"))
        return self._versions

    def attach(self, md: Markdown) -> bool:
        """Wrap the formatter of ``md``'s SuperFences default fences, when the site uses SuperFences (once per
        Markdown instance); whether it did."""
        try:
            from pymdownx.superfences import SuperFencesBlockPreprocessor, SuperFencesCodeExtension
        except ImportError:
            return False
        for ext in md.registeredExtensions:
            if isinstance(ext, SuperFencesCodeExtension) and ext.superfences:
                default = ext.superfences[0]
                formatter = default.get("formatter")
                fenced = getattr(formatter, "__self__", None)
                if default.get("name") == "superfences" and isinstance(fenced, SuperFencesBlockPreprocessor):
                    default["formatter"] = _Formatter(self, fenced, formatter)
                    return True
                return False
        return False

    def template(self, key: str) -> str | None:
        template = self._known.get(key)
        if template is None and self.store is not None:
            raw = self.store.get_many([key], mark=not self.batched).get(key)
            template = _loaded(raw)
            if template is not None:
                self._known[key] = template
                if self.batched:
                    self._read.append(key)
        if template is not None:
            self._used.add(key)
        return template

    def keep(self, key: str, template: str) -> None:
        self._known[key] = template
        self._used.add(key)
        if self.store is not None:
            data = (_MARK + template).encode("utf-8", "surrogatepass")
            if self.batched:
                self._fresh[key] = data
            else:
                self.store.put_many({key: data})

    def flush(self) -> None:
        """Write what this build made; keep in memory only the templates it used."""
        if self.store is not None:
            self.store.put_many(self._fresh)
            self.store.mark_read(self._read)
        self._fresh, self._read = {}, []
        if self.batched:
            self._known = {key: self._known[key] for key in self._used if key in self._known}
            self._used = set()

    def close(self) -> None:
        self.flush()
        if self.store is not None:
            self.store.close()


def highlight_ahead(project_root: Path, cache_dir: Path | None, fences: list[str]) -> tuple[int, int, str | None]:
    """Highlight ``fences`` (each a fenced code block of Markdown) as the site's MkDocs build highlights them, and
    keep the templates in the cache folder, where that build finds them: ``python -m docs_hooks record`` does it
    for the code listings the pages write (``core.page.page_listings``) and the fences written in them
    (``read.blocks.authored_fences``), so that the first build after the tests highlights none of them.

    How many it highlighted, how many were kept already, and why it did nothing when MkDocs could not read
    ``mkdocs.yml`` (a site built by another front end, a theme or plugin not installed: the build then highlights
    them itself). Nothing without a cache folder or an ``mkdocs.yml``, or for a site that does not highlight with
    SuperFences."""
    config_file = next((project_root / n for n in ("mkdocs.yml", "mkdocs.yaml") if (project_root / n).is_file()), None)
    if cache_dir is None or config_file is None or not fences:
        return 0, 0, None
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    with _notes_of("mkdocs") as notes:  # what MkDocs says of the configuration: its build shows it
        try:
            config = load_config(config_file=str(config_file))
        except (MkDocsException, OSError) as exc:
            why = notes[0] if notes else exc.format_message() if isinstance(exc, MkDocsException) else str(exc)
            return 0, 0, f"{config_file.name}: MkDocs could not read it ({why}); the build highlights them"
    # As MkDocs makes each page's Markdown, but for the generator's own extension (its plugin adds one of its own).
    names = [name for name in config.markdown_extensions if name != EXTENSION]
    md = Markdown(extensions=names, extension_configs={k: v for k, v in config.mdx_configs.items() if k != EXTENSION})
    kept = Fences(cache_dir)
    try:
        if kept.attach(md):
            md.convert("\n\n".join(fences))
    finally:
        kept.close()
    return kept.made, kept.reused, None


@contextmanager
def _notes_of(name: str) -> Iterator[list[str]]:
    """The messages (warnings and worse) of the logger ``name`` while the block runs, kept rather than shown."""
    import logging

    logger = logging.getLogger(name)
    notes: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append(record.getMessage())

    keep = Keep(logging.WARNING)
    propagate = logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        yield notes
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate


def _loaded(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.startswith(_MARK) or _DIGITS in text:
        return None
    return text[len(_MARK) :]


class _Formatter:
    """SuperFences' formatter of its default fences (``SuperFencesBlockPreprocessor.highlight``), through the
    templates of ``fences``."""

    def __init__(self, fences: Fences, fenced: Any, highlight: Any):
        self.fences = fences
        self.fenced = fenced  # the Markdown instance's SuperFences preprocessor
        self.highlight = highlight  # its own formatter
        self.settings: tuple | None = None  # what a fence's HTML depends on besides the fence (``_settings``)

    def __call__(self, src="", language="", options=None, md=None, **kwargs):
        fenced = self.fenced
        options = options or {}
        if self.settings is None:
            fenced.get_hl_settings()  # what the fence is highlighted with (read once per Markdown instance)
            self.settings = _settings(fenced, self.fences.versions()) or ()
        what = repr(
            (src, language, sorted(options.items()), sorted(kwargs.items(), key=lambda kv: kv[0]), self.settings)
        )
        if not self.settings or "title" in options or "title_mode" in options or _DIGITS in what:
            return self.highlight(src=src, language=language, options=options, md=md, **kwargs)
        key = hashlib.sha256(f"{FORMAT}\0{what}".encode("utf-8", "surrogatepass")).hexdigest()
        counter = fenced.highlight_ext  # holds the page's count of highlighted fences
        template = self.fences.template(key)
        if template is None:
            count = counter.pygments_code_block
            counter.pygments_code_block = SENTINEL - 1  # SuperFences counts this fence first
            try:
                html = self.highlight(src=src, language=language, options=options, md=md, **kwargs)
            finally:
                counter.pygments_code_block = count + 1
            self.fences.made += 1
            if _PLACE in html:  # a NUL of its own: the page's number put in, nothing kept
                return html.replace(_DIGITS, str(counter.pygments_code_block))
            template = html.replace(_DIGITS, _PLACE)
            self.fences.keep(key, template)
        else:
            self.fences.reused += 1
            counter.pygments_code_block += 1
        return template.replace(_PLACE, str(counter.pygments_code_block))


# What SuperFences highlights a default fence with, besides the fence itself: its own settings, the site's
# highlight settings as its preprocessor read them (get_hl_settings), and the versions of the code that highlights.
_READ = (
    "css_class",
    "guess_lang",
    "pygments_style",
    "use_pygments",
    "noclasses",
    "linenums",
    "linenums_style",
    "linenums_special",
    "linenums_class",
    "extend_pygments_lang",
    "language_prefix",
    "code_attr_on_pre",
    "auto_title",
    "auto_title_map",
    "line_spans",
    "line_anchors",
    "anchor_linenums",
    "pygments_lang_class",
    "stripnl",
    "default_lang",
    "title_mode",
    "attr_list",
)


def _settings(fenced: Any, versions: tuple[str, str]) -> tuple | None:
    """What the fence's HTML depends on besides the fence; None when it cannot be kept: highlighting without
    Pygments, a title made for every fence, or a setting this module does not know how SuperFences reads."""
    try:
        values = tuple((name, getattr(fenced, name)) for name in _READ)
        highlighter = fenced.highlighter
        configs = sorted(fenced.highlight_ext.getConfigs().items())
        own = sorted((k, v) for k, v in fenced.config.items() if k != "custom_fences")
    except AttributeError:
        return None
    if not fenced.use_pygments or fenced.auto_title:
        return None
    return (versions, f"{highlighter.__module__}.{highlighter.__qualname__}", values, configs, own)

"""A site as a front end keeps it: one build at a time, replaced when the code changes, and each page's problems.

Every front end does the same with the core: read the settings, keep a build
while the code it was made from is unchanged (``mkdocs serve`` and ``zensical
serve`` rebuild the site in the same process after each edit), resolve every page
before the first is rendered, expand each page and compare its references with
the review lock, and end the build's processes when it is replaced or the
front end stops. ``Session`` is that, once, for all of them.

A problem of a page is reported (``report``) and also shown on the page: a
problem with no error box of its own (a broken reference in an equation, code
changed since it was reviewed) gets one at the top of the page, so an author
sees it in the browser as well as in the terminal.
"""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from docs_hooks.base import gcpause
from docs_hooks.base.errors import TraceError
from docs_hooks.base.lasttwo import LastTwo
from docs_hooks.base.settings import Settings, load_settings
from docs_hooks.core.digests import fingerprint
from docs_hooks.core.kept import TracedPages, digest
from docs_hooks.core.site import AcrossBuilds, Build, Expanded, Shown, build_order, make_build
from docs_hooks.render import html as R
from docs_hooks.render.segments import Html, Piece
from docs_hooks.resolve.lock import by_page, compare, lock_text, parse_lock

# Front matter as MkDocs and Zensical read it: the page they hand over starts after it.
FRONT_MATTER = re.compile(r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.DOTALL)


KERNEL = re.compile(r"""\bregister\(\s*["']([\w.]+)["']""")  # a browser kernel, as trace-widgets.js takes it


def widget_kernels(docs_dir: Path, scripts) -> frozenset[str]:
    """The functions the site's own scripts (its extra_javascript, paths in the docs folder) register a
    browser kernel for."""
    names: set[str] = set()
    for script in scripts:
        path = docs_dir / str(script)
        if path.suffix in (".js", ".mjs") and path.is_file():
            names.update(KERNEL.findall(path.read_text(encoding="utf-8", errors="replace")))
    return frozenset(names)


def as_markdown_reads(text: str, tab_length: int = 4) -> str:
    """``text`` as Python-Markdown hands it to its preprocessors after normalising it (line ends, tabs, lines
    of spaces, two blank lines at the end): a page resolved before it is converted is then the same text."""
    text = text.replace("\x02", "").replace("\x03", "")
    text = text.replace("\r\n", "\n").replace("\r", "\n") + "\n\n"
    return re.sub(r"(?<=\n) +\n", "\n", text.expandtabs(tab_length))


def without_front_matter(text: str) -> str:
    """The page as a builder hands it over (its front matter left out), with as many empty lines in its place,
    so that line numbers stay those of the file."""
    m = FRONT_MATTER.match(text)
    if m is None:
        return text
    rest = text[m.end() :].lstrip("\n")
    return "\n" * text[: len(text) - len(rest)].count("\n") + rest


class Session:
    """The core as one front end uses it, across pages and rebuilds."""

    def __init__(self, root: Path, report: Callable[[TraceError], None] | None = None):
        self.root = root
        self.report = report or (lambda problem: None)
        self._settings: Settings | None = None
        self._build: Build | None = None
        self.fingerprint: str | None = None
        self.locked: dict[str, dict] = {}  # the review lock's entries, page by page (``lock.by_page``)
        self._lock_text: tuple[str | None] | None = None  # the text they were read from (None: no lock)
        self._reads: LastTwo[tuple[str, int], str] = LastTwo()  # each page's text as Markdown reads it (as_read)
        self._shown = Shown()  # which page shows each problem of the build, in this pass of the front end
        self.widget_kernels: frozenset[str] | None = None
        # What every build of this session reads once per text, file or recording (see ``AcrossBuilds``), and
        # each page's last rendering with what it read of the code, for the builds after a code edit (handed to
        # them only when the process waits for the author's edits: ``settles``).
        self.across = AcrossBuilds(traces=TracedPages())
        # A front end whose process waits for the author after each build (``mkdocs serve``) sets this, and
        # calls ``settle_later``: a replaced build is then collected while the author reads, not in the rebuild.
        self.settles = False
        self._uncollected = False  # a replaced build is left for settle() to collect
        self._collecting = threading.Lock()  # refresh() and settle() hand the frozen objects back in turn
        self._settler: threading.Timer | None = None
        self._refreshes = 0  # a settle_later() that fires after a later refresh() leaves that one's build be

    @property
    def settings(self) -> Settings:
        """The settings as the last ``refresh`` read them."""
        if self._settings is None:
            raise TraceError("docs_hooks: the site's settings were not read yet; a front end calls refresh() first")
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self._settings = settings

    @property
    def traces(self) -> TracedPages:
        """Each page's last rendering with what it read of the code (see ``AcrossBuilds``)."""
        assert self.across.traces is not None
        return self.across.traces

    @property
    def build(self) -> Build:
        """The current build (see ``refresh``)."""
        if self._build is None:
            raise TraceError("docs_hooks: no build was made yet; a front end calls refresh() first")
        return self._build

    def refresh(self, widget_kernels: frozenset[str] | None = None, *, new_pass: bool = True) -> Build:
        """The settings read again; a new build when the code, the settings or the site's scripts changed
        (the old one's processes ended), else the one before, with the pages it expanded. ``new_pass``: the front
        end takes the site's pages anew from here (MkDocs: each build); one that refreshes for every page it
        converts (the extension under Zensical) says False, and a problem of the build then stays with the
        page that showed it while the build lasts (see ``Shown``)."""
        with self._collecting:
            self._refreshes += 1
            if self._build is not None:
                # First: what the warm-up renders in the background would take turns with all of this rebuild.
                self._build.warming.stop()
            gcpause.unfreeze()  # what an earlier build of this process froze goes back to the collector now
            settings = load_settings(self.root)
            stamp = fingerprint(settings) + repr(sorted(widget_kernels or ()))
            made = False  # a new build
            if self._build is None or self.fingerprint != stamp:
                made = True
                replaced = self._build is not None
                self.close()
                # The old build's objects were frozen with it: collect them, or they stay for good. With
                # ``settles`` that waits for settle(), unless an earlier build still waits for it too.
                if self._uncollected or (replaced and not self.settles):
                    gc.collect()
                    self._uncollected = False
                elif replaced:
                    self._uncollected = True
                across = self.across if self.settles else replace(self.across, traces=None)
                self._build = make_build(settings, widget_kernels=widget_kernels, across=across)
                self.fingerprint = stamp
            if new_pass or made:
                self._shown = Shown()  # the front end takes the pages anew
            self._settings = settings
            self.widget_kernels = widget_kernels
            self._read_lock(settings)
            self._reads.new_build()
            self.traces.digests.new_build()
            gcpause.freeze()  # the index and the parsed pages live through the build: see gcpause
        return self._build

    def as_read(self, text: str, tab_length: int = 4) -> str:
        """``as_markdown_reads(text, tab_length)``, worked out once for each text a rebuild hands over again."""
        key = (text, tab_length)
        found = self._reads.get(key)
        if found is None:
            found = as_markdown_reads(text, tab_length)
            self._reads.keep(key, found)
        return found

    def _read_lock(self, settings: Settings) -> None:
        """The review lock's entries, read again only when its text changed (each rebuild of serve asks)."""
        name = settings.rel(settings.lock_path)
        text = lock_text(settings.lock_path, name)
        if self._lock_text is None or text != self._lock_text[0]:
            self.locked = by_page(parse_lock(text, name)) if text is not None else {}
            self._lock_text = (text,)

    def settle(self, after: int | None = None) -> None:
        """Collect what a replaced build left (see ``settles``); nothing when no build was replaced since, or,
        with ``after``, when a refresh came after that many (its rebuild may be under way)."""
        with self._collecting:
            if not self._uncollected or (after is not None and after != self._refreshes):
                return
            gcpause.unfreeze()
            gc.collect()
            gcpause.freeze()
            self._uncollected = False

    def settle_later(self, delay: float) -> None:
        """``settle`` in ``delay`` seconds, in a thread of its own (a front end calls it when a build is done:
        the browser has reloaded the page by then)."""
        if self._settler is not None:
            self._settler.cancel()
        self._settler = threading.Timer(delay, self.settle, args=(self._refreshes,))
        self._settler.daemon = True
        self._settler.start()

    def plan_site(self, pages: dict[str, str] | None = None) -> None:
        """Resolve every page of the site now (``pages``: path -> text as the builder will hand it over;
        by default every page of the docs folder), and start what they need in the background."""
        if pages is None:
            pages = {}
            for file in build_order(self.settings):
                try:
                    text = file.read_text(encoding="utf-8")
                    pages[self.settings.rel(file)] = as_markdown_reads(without_front_matter(text))
                except (OSError, UnicodeDecodeError):
                    continue  # the page's own read reports it
        self.build.plan_site(pages)

    def expand(self, page: str, text: str) -> Expanded:
        """The page through the stages, the problems it shows (its own, against the review lock, and a problem of
        the build it is the first to meet in this pass: see ``Shown``) reported, and each one that has no error box
        on the page given one at its top."""
        expanded = self.build.expand(page, text)
        problems = self._shown.on(page, expanded.problems + self._against_lock(page, expanded))
        for problem in problems:
            self.report(problem)
        boxed = expanded.markdown
        loose = [p for p in problems if R.esc(str(p)) not in boxed]
        if not loose:  # the build's own expansion, unless the page shows fewer problems than it met
            return expanded if problems == expanded.problems else replace(expanded, problems=problems)
        boxes: list[Piece] = [Html("".join(R.error_box(str(p)) for p in loose).rstrip("\n"), block=True), "\n\n"]
        return Expanded(
            _after_title(expanded.parts, boxes), problems, expanded.uses, expanded.unresolved, expanded.entries
        )

    def comes_out_as(self, page: str, text: str) -> str | None:
        """A digest of what the page comes out as in this build (``kept.digest`` of its expansion), nothing
        reported; None when it meets a problem (its own, one of the build, or against the review lock): which
        problems it shows is decided when the front end takes it (see ``Shown``). A front end that rebuilds
        only the pages that changed (MkDocs' dirty build) compares it with the last build's, to leave alone a
        page whose inputs changed but which comes out the same."""
        expanded = self.build.expand(page, text)
        if expanded.problems or self._against_lock(page, expanded):
            return None
        return digest(expanded.parts)

    def _against_lock(self, page: str, expanded: Expanded) -> list[TraceError]:
        """The page's references compared with the review lock (``lock.compare``)."""
        s = self.settings
        locked = self.locked.get(page, {})
        return compare(locked, expanded.uses, s.rel(s.lock_path), expanded.unresolved, {page})

    def close(self) -> None:
        """End the processes of the current build (the recorder, KaTeX, the coverage run) and let it go."""
        if self._settler is not None:
            self._settler.cancel()
            self._settler = None
        if self._build is not None:
            self._build.close()
            self._build = None
            self.fingerprint = None


def _after_title(parts: list[Piece], boxes: list[Piece]) -> list[Piece]:
    """``boxes`` put below the page's title (a first line '# ...'), else at its top (after the empty lines that
    stand for its front matter)."""
    if not parts or not isinstance(parts[0], str):
        return [*boxes, *parts]
    text = parts[0]
    lead = len(text) - len(text.lstrip("\n"))
    first, _, rest = text[lead:].partition("\n")
    if first.startswith("# "):
        return [text[: lead + len(first) + 1] + "\n", *boxes, rest, *parts[1:]]
    return [text[:lead], *boxes, text[lead:], *parts[1:]]

"""How Material's search plugin reads the pages under the MkDocs plugin (``SearchReading``): without the spans
of the generated HTML, not again when a page is read as it was in an earlier build, and, in a build that
has many pages to read, in a process beside the build (``SearchProcess``, running ``search_reader``).

Material's search plugin reads each page in its on_page_context, after the template's context is made:
MkDocs gets there only once every page of the site is converted, so reading them there adds its whole time
to the build's. The plugin hands each page that the store of earlier readings does not have to the
process as soon as MkDocs has converted it (its on_page_content); the search plugin's on_page_context then
finds it read, or being read, when the page is still the same (the same key), and its on_post_build waits
for what is still being read before it writes the index. The index comes out the same, entry for entry, as
when the search plugin reads every page itself (``tests/docs_hooks/test_plugin_search.py``).

``plugin.TracePlugin`` makes a ``SearchReading`` and calls it from its events; it does not know the plugin.
"""

from __future__ import annotations

import itertools
import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from mkdocs.exceptions import PluginError

from docs_hooks.base.settings import installed_version
from docs_hooks.render import search
from docs_hooks.run import children
from docs_hooks.search_reader import (
    PageReading,
    Sections,
    index_sections,
    page_data,
    plain,
    read_entries,
    reader_release,
    receive,
    send,
    toc_items,
)

# Bytes of HTML the store of earlier readings does not have (pages, then the parts of a page not kept), in one
# build, from which the pages go to a process of their own: below it (a rebuild after an edit) starting one
# costs more than it saves (bench/README.md, "search-process").
PROCESS_FROM = 256 * 1024
WAIT = 300.0  # seconds the build waits for the process's reading of one page before it reads the page itself
_META = ("title", "search", "tags")  # what Material's search plugin reads of a page's front matter


class SearchReading:
    """How Material's search plugin (version 9, whose reading of a page ``render.search`` follows) reads the
    pages: its on_page_context and on_post_build handlers, wrapped.

    A page it read in an earlier build, with the same HTML and the same everything else it reads of a page,
    is not read again: the entries it made of it then go into its index as they were
    (``search.IndexedPages``). Any other page is read a part at a time, each part without its spans, and
    only the parts not read before are read (``Sections``): after a prose edit, the part that changed. A page
    the search plugin rewrites (it takes out attributes such as ``data-search-exclude``), or whose index is
    not Material's own, is handed to it whole, without its spans (``search.without_spans``) and put back once
    read, or as it is when its spans cannot be taken out exactly; one it leaves out of its index, as it is.
    In a build with much to read, the pages go to a process beside it as MkDocs converts them
    (``ReadAside``)."""

    def __init__(self, cache_dir: Path | None, process_from: int | None = None):
        self.cache_dir = cache_dir
        self.indexed = search.IndexedPages(cache_dir)
        # A page read in the build is read a part at a time, the parts kept (with the pages' entries)
        self.sections = Sections(self.indexed.store, reader_release())
        self.aside = ReadAside(PROCESS_FROM if process_from is None else process_from)
        self._plugin = None  # Material's search plugin, when it reads the pages
        self._settings: list = []  # what the key of a page's entries names of the search plugin and its release
        self._found: dict[str, list[dict]] = {}  # the entries of pages the store had when MkDocs converted them
        # the search plugin's settings as the process is handed them, worked out once a build; None when a
        # page cannot go to the process (see ``_handed_settings``)
        self._handed: dict | None = None
        self._handed_known = False
        self._converted: set[str] = set()  # the URLs of the pages MkDocs converted in this build

    @property
    def read_aside(self) -> int:
        """Pages of this build read by the process."""
        return self.aside.read

    def wrap(self, config) -> None:
        self.aside.new_build()
        self._found = {}
        self._converted = set()
        self._handed, self._handed_known = None, False
        self._plugin = None
        handlers = config.plugins.events.get("page_context", [])
        for i, handler in enumerate(handlers):
            search_plugin = getattr(handler, "__self__", None)
            # A search plugin turned off (its own `enabled: false`) reads no page: nothing to hand it.
            if search_plugin is not None and _is_material_search(search_plugin) and search_plugin.config.enabled:
                self._plugin = search_plugin
                self._settings = _settings(search_plugin)
                handlers[i] = self._reading(handler, search_plugin)
        ends = config.plugins.events.get("post_build", [])
        for i, handler in enumerate(ends):
            if self._plugin is not None and getattr(handler, "__self__", None) is self._plugin:
                ends[i] = self._settling(handler)

    def _key(self, page, html: str) -> str:
        meta = page.meta
        reads = (*self._settings, page.url, repr(page.title), *map(repr, map(meta.get, _META)), toc_items(page.toc))
        return search.entries_key(html, reads)

    def ahead(self, page, html: str) -> None:
        """MkDocs has converted ``page`` to ``html``: queue it for the process when the store does not have it
        (``ReadAside``)."""
        self._converted.add(page.url)
        if self._plugin is None or not html:
            return
        listed = page.meta.get("search") or {}
        if (isinstance(listed, dict) and listed.get("exclude")) or search.rewritten(html):
            return  # the search plugin reads none of it, or rewrites it: it is read in the build
        key = self._key(page, html)
        if key in self.aside or key in self._found:
            return
        found = self.indexed.get(key)
        if found is not None:  # the search plugin's on_page_context takes it from here: one lookup a page
            self._found[key] = found
            return
        unread = self.sections.unread(html)
        if not unread:
            return  # read in the build from the parts kept
        meta = _meta(page)
        settings = self._handed_settings()
        if settings is None or not plain(meta):
            return  # read in the build
        self.aside.queue(key, PageReading(html, toc_items(page.toc), page.url, page.title, meta), unread, settings)

    def _handed_settings(self) -> dict | None:
        """The settings of the search plugin's index, once a build (it makes its index in its on_config); None
        when it segments Chinese text (with dictionaries its on_config loaded, which a process of its own would
        not have), or JSON would not give them back as they were."""
        if not self._handed_known and self._plugin is not None:
            settings = dict(self._plugin.search_index.config)
            self._handed = None if _segments(self._plugin) or not plain(settings) else settings
            self._handed_known = True
        return self._handed

    def _reading(self, handler, search_plugin):
        version = installed_version("mkdocs-material")

        def on_page_context(context, *, page, config, nav):
            full = page.content
            if not full:
                return handler(context, page=page, config=config, nav=nav)
            key = self._key(page, full)
            entries = search_plugin.search_index.entries
            found = self._found.pop(key, None)
            if found is None:
                found = self.indexed.get(key)
            if found is not None:  # it made these of the page below, and changed nothing else
                entries.extend(found)
                return None  # what its handler returns
            if self.aside.place(key, len(entries)):  # the page as the process has it: its entries go here
                return None
            listed = page.meta.get("search") or {}
            # A page the search plugin leaves out of the index (a source page): it reads none of it, so the page
            # is handed as it is.
            left_out = isinstance(listed, dict) and listed.get("exclude")
            if not left_out and self._by_parts(page, full, key, search_plugin.search_index):
                return None  # what its handler returns
            light = None if left_out else search.without_spans(full)
            handed = full if light is None else light
            before = len(entries)
            page.content = handed
            try:
                result = handler(context, page=page, config=config, nav=nav)
            finally:
                read = page.content
                if light is not None:
                    page.content = full
            if light is not None and read != light:  # it rewrites more of a page than render.search knows of
                raise PluginError(
                    f"docs_hooks: {page.file.src_uri}: Material's search plugin (mkdocs-material {version}) changed "
                    "the page docs_hooks handed it without its spans, which docs_hooks cannot carry over to the "
                    "page; install another mkdocs-material 9 release, and report this with the version"
                )
            if result is None and read == handed:  # it only read the page
                self.indexed.add(key, entries[before:])
            return result

        return on_page_context

    def _by_parts(self, page, html: str, key: str, index) -> bool:
        """Add the page's entries to Material's search ``index`` from its parts (``Sections``: those not kept are
        read), as its handler would from the whole page; False, adding nothing, for a page to hand it whole: one
        it rewrites, an index not Material's own, a part that cannot be read alone (or that Material's parser
        stops on: its own reading of the page meets that too)."""
        if search.rewritten(html) or not _stock_index(index):
            return False
        try:
            sections = self.sections.of(html)
        except ValueError:
            return False
        before = len(index.entries)
        index_sections(index, sections, page)
        self.indexed.add(key, index.entries[before:])
        return True

    def _settling(self, handler):
        def on_post_build(*, config):
            self.settle()
            self._merge_dirty()
            return handler(config=config)

        return on_post_build

    def _merge_dirty(self) -> None:
        """Under a dirty build, the index of the last build with each page this build converted in place of its
        old entries. The search plugin merges them itself, but only for one page a build (the one its first new
        entry names, and every page when that is the home page, whose address starts every other): a dirty
        build after a code edit converts several, and their old entries would stay beside the new."""
        plugin = self._plugin
        last = getattr(plugin, "search_index_prev", None)
        if plugin is None or not getattr(plugin, "is_dirty", False) or last is None:
            return
        kept = [e for e in last.entries if str(e.get("location", "")).split("#", 1)[0] not in self._converted]
        plugin.search_index.entries = kept + plugin.search_index.entries
        plugin.search_index_prev = None  # merged: the search plugin writes the index as it is now

    def settle(self) -> None:
        """Put the entries the process made into the search plugin's index (``ReadAside.settle``), then keep
        them, with the parts read."""
        if self._plugin is not None:
            settings = self._handed_settings() or dict(self._plugin.search_index.config)
            for key, made in self.aside.settle(self._plugin.search_index.entries, settings, self.sections):
                self.indexed.add(key, made)
        else:
            self.aside.abandon(wait=False)
        self.flush()

    def abandon(self) -> None:
        """The build failed: end the process, and forget what it was reading."""
        self._found = {}
        self.aside.abandon()

    def flush(self) -> None:
        """Keep what the search plugin made of the pages of this build, and the parts of them it read."""
        self.indexed.flush(self.sections.take())

    def close(self) -> None:
        self.abandon()
        self.indexed.close()


class ReadAside:
    """The pages of one build read by a process beside it (``SearchProcess``). Each page the store of earlier
    readings does not have is queued as MkDocs converts it; once ``process_from`` bytes are queued (of the
    parts of a page not kept), the queued pages and each one after are handed to the process. The search
    plugin's on_page_context finds such a page read, or being read, when it is still the same (the same key):
    its place in the index is noted (``place``), and its on_post_build waits for what is still being read
    (``settle``) before it writes the index."""

    def __init__(self, process_from: int):
        self.process_from = process_from
        self._process: SearchProcess | None = None
        self._queued: list[tuple[str, PageReading]] = []  # to read, not yet handed to the process
        self._queued_bytes = 0
        self._handed: dict[str, tuple[PageReading, Future]] = {}  # the pages handed to the process, by key
        # the pages the search plugin found read by the process: (where their entries go, key, page, answer)
        self._placed: list[tuple[int, str, PageReading, Future]] = []
        self.read = 0  # pages of this build read by the process

    def new_build(self) -> None:
        self._queued, self._queued_bytes, self._handed, self._placed = [], 0, {}, []
        self.read = 0

    def __contains__(self, key: str) -> bool:
        return key in self._handed

    def queue(self, key: str, reading: PageReading, unread: int, settings: dict) -> None:
        """Queue the page (``unread``: the bytes of it the build would read), handing the queue to the process once
        it holds enough."""
        self._queued.append((key, reading))
        self._queued_bytes += unread
        if self._process is None and self._queued_bytes < self.process_from:
            return
        if self._process is None:
            self._process = SearchProcess()
        for queued_key, queued in self._queued:
            self._handed[queued_key] = (queued, self._process.submit(settings, queued))
        self._queued = []

    def place(self, key: str, place: int) -> bool:
        """Whether the process reads the page of ``key``; if it does, its entries go at ``place`` of the index."""
        handed = self._handed.pop(key, None)
        if handed is None:
            return False
        self._placed.append((place, key, *handed))
        return True

    def settle(self, entries: list[dict], settings: dict, sections: Sections) -> list[tuple[str, list[dict]]]:
        """Put the entries the process made into ``entries`` (the search plugin's index), each page's at its
        place; a page the process could not read is read here, a part at a time (``sections``, which also keeps
        the parts the process read). Then end the process. Each page's key and entries, for the store."""
        placed, self._placed = self._placed, []
        process, self._process = self._process, None
        made_of: list[tuple[str, list[dict]]] = []
        if not placed:
            if process is not None:
                process.close(wait=False)
            return made_of
        version = installed_version("mkdocs-material")
        try:
            # from the last: the places of those before it stay where they were
            for place, key, reading, answer in reversed(placed):
                read = process.entries(answer, version) if process is not None else None
                if read is None:
                    made = read_entries(settings, reading, sections)
                else:
                    made, parts = read
                    sections.keep(parts)
                    self.read += 1
                entries[place:place] = made
                made_of.append((key, made))
        finally:
            self._handed = {}
            if process is not None:
                process.close(wait=False)
        return made_of

    def abandon(self, wait: bool = True) -> None:
        """End the process, and forget what it was reading."""
        self._queued, self._handed, self._placed = [], {}, []
        process, self._process = self._process, None
        if process is not None:
            process.close(wait=wait)


class SearchProcess:
    """``python -m docs_hooks.search_reader``, started with a lifeline (``run.children``): it reads the pages
    it is handed as Material's search plugin does, one after the other, while the build goes on.

    A thread writes the pages to it, so that the build never waits for a full pipe; another reads its
    answers into the futures ``submit`` returned."""

    def __init__(self) -> None:
        env = dict(os.environ)
        here = str(Path(__file__).resolve().parents[1])  # the folder docs_hooks is imported from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
        self._proc = children.start(
            [sys.executable, "-m", "docs_hooks.search_reader"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._numbers = itertools.count()
        self._answers: dict[int, Future] = {}
        self._ended = False  # its answers' pipe closed: no more answers come
        self._lock = threading.Lock()
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._write, self._read)]
        for thread in self._threads:
            thread.start()

    def submit(self, settings: dict, page: PageReading) -> Future:
        """The answer to come: ``(its mkdocs-material version, entries or None, what went wrong or None, the
        parts of the page it read, by key)``."""
        answer: Future = Future()
        number = next(self._numbers)
        with self._lock:
            if self._ended:  # nothing will read an answer of it: the build reads the page itself
                answer.set_result((None, None, "the process ended", {}))
                return answer
            self._answers[number] = answer
        self._outbox.put((number, settings, page))
        return answer

    def entries(self, answer: Future, version: str) -> tuple[list[dict], dict[str, bytes]] | None:
        """The entries of an answer and the parts of the page it read (``search_reader.Sections``), or None when
        the process did not make them with this version of Material (the build then reads the page itself)."""
        try:
            made_by, made, problem, parts = answer.result(timeout=WAIT)
        except FutureTimeout:
            self.close()
            return None
        if problem is not None or made_by != version:
            return None
        return made, parts

    def _write(self) -> None:
        stream = self._proc.stdin
        assert stream is not None
        try:
            while (message := self._outbox.get()) is not None:
                number, settings, page = message
                send(stream, [number, settings, page_data(page)])
        except OSError:  # it ended: the reader answers what is left
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass

    def _read(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        try:
            while True:
                number, version, made, problem, parts = receive(stream)
                kept = {k: v.encode("utf-8", "surrogatepass") for k, v in parts.items() if isinstance(v, str)}
                with self._lock:
                    answer = self._answers.pop(number, None)
                if answer is not None:
                    answer.set_result((version, made, problem, kept))
        except Exception:  # noqa: BLE001 - it ended or wrote what is no answer: the build reads what is left
            pass
        finally:
            with self._lock:
                left, self._answers = list(self._answers.values()), {}
                self._ended = True
            for answer in left:
                answer.set_result((None, None, "the process ended", {}))

    def close(self, wait: bool = True) -> None:
        """Let it finish what it was handed and end; kill it if it does not. Without ``wait``, a thread waits
        for that while the build goes on (it has every answer it asked for)."""
        self._outbox.put(None)
        if wait:
            self._end()
        else:
            threading.Thread(target=self._end, daemon=True).start()

    def _end(self) -> None:
        try:
            self._proc.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            children.kill_group(self._proc)
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        children.release(self._proc)


def _settings(search_plugin) -> list:
    # The entries are what the search plugin makes of the page as it is; the release of docs_hooks that
    # took its spans out is named too, so that a later release does not keep a wrong reading.
    settings = [installed_version("mkdocs-material"), ("docs-hooks", installed_version("docs-hooks"))]
    settings += sorted((k, repr(v)) for k, v in search_plugin.config.items())
    settings.append(("jieba installed", repr(_segments(search_plugin))))
    return settings


def _segments(search_plugin) -> bool:
    """Whether the search plugin segments Chinese text: when jieba is installed (its module's ``jieba`` is then
    not None), with dictionaries its on_config loaded, which a process of its own would not have."""
    return getattr(sys.modules[type(search_plugin).__module__], "jieba", None) is not None


def _meta(page) -> dict:
    """What the search plugin reads of a page's front matter."""
    return {k: page.meta[k] for k in _META if k in page.meta}


def _stock_index(index) -> bool:
    """Whether the search plugin's index (made in its on_config) is Material's own ``SearchIndex``, whose reading
    of a page ``search_reader.Sections`` does a part at a time."""
    kind = type(index)
    return (kind.__module__, kind.__name__) == ("material.plugins.search.plugin", "SearchIndex")


def _is_material_search(plugin: object) -> bool:
    """Whether ``plugin`` is Material's search plugin of mkdocs-material 9, whose reading of a page
    ``render.search`` follows."""
    kind = type(plugin)
    named = (kind.__module__, kind.__name__) == ("material.plugins.search.plugin", "SearchPlugin")
    return named and installed_version("mkdocs-material").startswith("9.")

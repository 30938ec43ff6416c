"""Material's search plugin reading a page, on its own: what ``plugin_search`` runs in a process beside the
build (``python -m docs_hooks.search_reader``), and in the build itself when that process cannot.

A page is handed over as plain data (``PageReading``: its HTML, and what else the search plugin reads of a
page); ``read_entries`` makes of it the entries Material's search plugin makes in its on_page_context, by
the same code: Material's own ``SearchIndex``, built from the search plugin's settings, reading the page
without its spans (``render.search.without_spans``) as the build hands it over. The search plugin's
on_page_context also takes the ``data-search-...`` attributes out of the page; a page that has any is
never handed here (``plugin_search``).

The process reads requests from its standard input and writes answers to the pipe that was its standard
output (its own standard output goes to standard error, so that nothing a library prints there can be
taken for an answer). Each message is JSON, after its length as 8 bytes (``send`` and ``receive``): plain
data both ways, so a page whose front matter JSON does not give back as it was is read in the build
(``plain``).
"""

from __future__ import annotations

import json
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import IO, Any

from docs_hooks.base.cachedir import Store
from docs_hooks.render.search import heading_parts, part_key, without_spans

_LENGTH = struct.Struct(">Q")


@dataclass(frozen=True)
class TocItem:
    """An entry of a page's table of contents, as the search plugin reads it (it takes a section's link
    from the entry whose id is the section's)."""

    id: str
    url: str
    title: str
    level: int
    children: tuple[TocItem, ...] = ()


@dataclass
class PageReading:
    """What Material's search plugin reads of a page: its HTML, table of contents, URL, title, and front
    matter (the ``meta`` keys it reads: title, search, tags)."""

    content: str
    toc: tuple[TocItem, ...]
    url: str
    title: str | None
    meta: dict = field(default_factory=dict)


def plain(value: object) -> bool:
    """Whether JSON gives ``value`` back as it was (what may go through the pipe)."""
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


def page_data(page: PageReading) -> dict:
    """The page as plain data for the pipe (``page_from`` makes it again)."""
    return {
        "content": page.content,
        "toc": _toc_data(page.toc),
        "url": page.url,
        "title": page.title,
        "meta": page.meta,
    }


def page_from(data: dict) -> PageReading:
    return PageReading(data["content"], _toc_from(data["toc"]), data["url"], data["title"], data["meta"])


def _toc_data(toc: tuple[TocItem, ...]) -> list:
    return [[t.id, t.url, t.title, t.level, _toc_data(t.children)] for t in toc]


def _toc_from(data: list) -> tuple[TocItem, ...]:
    return tuple(TocItem(i, url, title, level, _toc_from(children)) for i, url, title, level, children in data)


def toc_items(toc) -> tuple[TocItem, ...]:
    """MkDocs' table of contents of a page as plain data."""
    return tuple(TocItem(t.id, t.url, t.title, t.level, toc_items(t.children)) for t in toc)


def read_entries(settings: dict, page: PageReading, sections: Sections | None = None) -> list[dict]:
    """The entries Material's search plugin, with these settings (its ``SearchIndex``'s), makes of the page;
    with ``sections``, read a part at a time, the parts it did not have kept in it."""
    from material.plugins.search.plugin import SearchIndex  # type: ignore[import-untyped]

    if sections is not None:
        index = SearchIndex(**settings)
        if (page.meta.get("search") or {}).get("exclude"):  # as its add_entry_from_context does
            return index.entries
        try:
            index_sections(index, sections.of(page.content), page)
            return index.entries
        except ValueError:  # Material's parser stops on a part: the page is read whole, which meets it if it must
            pass
    light = without_spans(page.content)
    handed = page if light is None else PageReading(light, page.toc, page.url, page.title, page.meta)
    index = SearchIndex(**settings)
    index.add_entry_from_context(handed)
    return index.entries


@dataclass(frozen=True)
class SectionRead:
    """What Material's search plugin keeps of one section of a page once it has read it: the id of its heading
    (None for the page's first), its title and text as the pieces it collected, and whether the heading is
    marked to be left out."""

    id: str | None
    title: tuple[str, ...]
    text: tuple[str, ...]
    excluded: bool


class Sections:
    """The sections Material's search plugin divides a page into, read a part at a time (``heading_parts``)
    and kept by the part's HTML in the cache folder (``store``: the store of ``render.search.IndexedPages``):
    after a prose edit, only the parts that changed are read again.

    A part is read on its own, by Material's own parser, from the state the parser is in at the start of any
    section: no element open, none left out, and the sections before it (a stand-in for them, which nothing
    of the part may reach). That is the parser's state at the part's start when, reading the page from the
    start, it has closed every element the parts before opened and holds no text back; so a part is used at
    another place of a page only when its reading ended that way. When a part's reading does not, the rest of
    the page is read as one, as it is (spans and all), and not kept. Each part is read without its spans
    (``without_spans``), as the whole page would be."""

    def __init__(self, store: Store | None, reader: str):
        self.store = store
        self.reader = reader  # the search plugin's release: its parser reads the parts
        self._fresh: dict[str, bytes] = {}  # read since the last ``take``

    def of(self, html: str) -> list[SectionRead]:
        """The page's sections, in order, excluded ones too. Raises what Material's parser raises (it stops on
        some nestings, and then reads the page no other way either)."""
        parts = heading_parts(html)
        keys = [part_key(i > 0, part, self.reader) for i, part in enumerate(parts)]
        kept = self._get(keys)
        out: list[SectionRead] = []
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            key = keys[i] if bool(out) == (i > 0) else part_key(bool(out), part, self.reader)
            known = kept.get(key) if key == keys[i] else self._get([key]).get(key)
            if known is not None and (known[0] or last):
                out.extend(known[1])
                continue
            light = without_spans(part)
            at_rest, made = _read(light if light is not None else part, after=bool(out))
            if at_rest or last:
                self._fresh[key] = _dumped(at_rest, made)
                out.extend(made)
                continue
            out.extend(_read("".join(parts[i:]), after=bool(out))[1])  # read as one, as it is
            break
        return out

    def take(self) -> dict[str, bytes]:
        """The parts read since the last ``take``, by key, as kept: the build writes them with the pages' entries
        (``IndexedPages.flush``), a process hands them to the build."""
        fresh, self._fresh = self._fresh, {}
        return fresh

    def keep(self, parts: dict[str, bytes]) -> None:
        """Parts another ``Sections`` read (``take``), taken with this one's."""
        self._fresh.update(parts)

    def unread(self, html: str) -> int:
        """How many bytes of the page ``of`` would read, its other parts kept (as far as the parts' places before
        them tell; a page whose reading does not end at rest reads more)."""
        parts = heading_parts(html)
        keys = [part_key(i > 0, part, self.reader) for i, part in enumerate(parts)]
        kept = self._get(keys)
        return sum(len(part) for part, key in zip(parts, keys) if key not in kept)

    def _get(self, keys: list[str]) -> dict[str, tuple[bool, tuple[SectionRead, ...]]]:
        found = {key: self._fresh[key] for key in keys if key in self._fresh}
        rest = [key for key in keys if key not in found]
        if self.store is not None and rest:
            found.update(self.store.get_many(rest))
        return {key: read for key, raw in found.items() if (read := _loaded(raw)) is not None}


def reader_release() -> str:
    """What reads a page's parts, by release: Material's parser, and docs_hooks taking the spans out."""
    from docs_hooks.base.settings import installed_version

    return f"mkdocs-material {installed_version('mkdocs-material')}, docs-hooks {installed_version('docs-hooks')}"


def _dumped(at_rest: bool, sections: tuple[SectionRead, ...]) -> bytes:
    rows = [[s.id, list(s.title), list(s.text), s.excluded] for s in sections]
    return json.dumps([at_rest, rows], ensure_ascii=False).encode("utf-8", "surrogatepass")


def _loaded(raw: bytes) -> tuple[bool, tuple[SectionRead, ...]] | None:
    """What ``_dumped`` kept; None for anything else (the part is read again)."""
    try:
        at_rest, rows = json.loads(raw.decode("utf-8", "surrogatepass"))
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    if not isinstance(at_rest, bool) or not isinstance(rows, list) or not all(map(_a_section, rows)):
        return None
    return at_rest, tuple(SectionRead(i, tuple(title), tuple(text), excluded) for i, title, text, excluded in rows)


def _a_section(row: object) -> bool:
    """Whether ``row`` is a section as ``_dumped`` writes it: [id or None, [title...], [text...], excluded]."""
    if not isinstance(row, list) or len(row) != 4:
        return False
    section_id, title, text, excluded = row
    return (
        (section_id is None or isinstance(section_id, str))
        and isinstance(title, list)
        and isinstance(text, list)
        and all(isinstance(p, str) for p in (*title, *text))
        and isinstance(excluded, bool)
    )


def _read(html: str, after: bool) -> tuple[bool, tuple[SectionRead, ...]]:
    """Material's parser's sections of ``html`` read from the start of a section (``after`` sections before
    it), and whether it was at rest before its end was read: no element open or left out, no text held back."""
    from material.plugins.search.plugin import Element, Parser, Section

    parser = Parser()
    rest = set(parser.skip)
    stand_in = Section(Element("hx"))
    if after:
        parser.data.append(stand_in)
        parser.section = stand_in
    parser.feed(html)
    at_rest = not parser.context and not parser.rawdata and parser.skip == rest
    parser.close()
    if stand_in.title or stand_in.text:
        raise ValueError("a part of the page reached the section before it")  # heading_parts cut it wrongly
    return at_rest, tuple(
        SectionRead(s.id, tuple(s.title), tuple(s.text), s.is_excluded()) for s in parser.data[1 if after else 0 :]
    )


def index_sections(index, sections: list[SectionRead], page) -> None:
    """Add ``sections`` of ``page`` to Material's search index ``index`` as its on_page_context does once it
    has read them (its ``create_entry_for_section``, for each section not left out)."""
    from material.plugins.search.plugin import Element, Section

    for read in sections:
        if read.excluded:
            continue
        section = Section(Element("h"))
        section.id, section.title, section.text = read.id, list(read.title), list(read.text)
        index.create_entry_for_section(section, page.toc, page.url, page)


def send(stream: IO[bytes], message: object) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """The next message; EOFError when the other side has closed the pipe."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    (size,) = _LENGTH.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return json.loads(data.decode("utf-8", "surrogatepass"))


def main() -> None:  # pragma: no cover - runs in the child process (tests/docs_hooks/test_plugin_search.py)
    from docs_hooks.base.settings import installed_version
    from docs_hooks.run import children

    children.watch_parent()
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a library prints goes to standard error, not into the answers
    version = installed_version("mkdocs-material")
    sections = Sections(None, reader_release())  # the parts it reads go to the build with each page's answer
    requests = sys.stdin.buffer
    while True:
        try:
            number, settings, page = receive(requests)
        except (EOFError, ValueError):
            return
        try:
            made = read_entries(settings, page_from(page), sections)
            parts = {key: raw.decode("utf-8", "surrogatepass") for key, raw in sections.take().items()}
            send(answers, [number, version, made, None, parts])
        except Exception as exc:  # noqa: BLE001 - the build reads such a page itself, and meets it there
            sections.take()
            send(answers, [number, version, None, f"{type(exc).__name__}: {exc}", {}])


if __name__ == "__main__":
    main()

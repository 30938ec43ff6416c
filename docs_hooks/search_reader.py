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

from docs_hooks.render.search import without_spans

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


def read_entries(settings: dict, page: PageReading) -> list[dict]:
    """The entries Material's search plugin, with these settings (its ``SearchIndex``'s), makes of the page."""
    from material.plugins.search.plugin import SearchIndex  # type: ignore[import-untyped]

    light = without_spans(page.content)
    handed = page if light is None else PageReading(light, page.toc, page.url, page.title, page.meta)
    index = SearchIndex(**settings)
    index.add_entry_from_context(handed)
    return index.entries


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
    requests = sys.stdin.buffer
    while True:
        try:
            number, settings, page = receive(requests)
        except (EOFError, ValueError):
            return
        try:
            send(answers, [number, version, read_entries(settings, page_from(page)), None])
        except Exception as exc:  # noqa: BLE001 - the build reads such a page itself, and meets it there
            send(answers, [number, version, None, f"{type(exc).__name__}: {exc}"])


if __name__ == "__main__":
    main()

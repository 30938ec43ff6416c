"""A page's HTML as a search index reads it: the same text, without its ``<span>`` tags.

Material's search plugin reads every page's HTML with ``html.parser`` and does
work for each tag that grows with how deeply the tag is nested. Most of the tags
of a generated page are ``<span>``: KaTeX writes a dozen levels of them for a
formula, Pygments one per token of a listing. The index keeps none of them: it
keeps the text, a few tags (``p``, ``code``, ``pre``, lists, ``sub``, ``sup``)
and the sections the headings start, and leaves out what is marked
``data-search-exclude``. So the plugin (``docs_hooks.plugin``) hands the search
plugin each page as ``without_spans`` makes it, and puts the page back as it was
once the search plugin has read it. The search index comes out the same, to the
byte (``tests/docs_hooks/test_search.py`` builds sites both ways), because:

- the page is read tag by tag first, and taken as it is (None) unless every
  element it opens it also closes, in order: then the search plugin's stack of
  open elements is this one's, less the spans, and no end tag it matches or
  passes over changes;
- a span is neither kept nor a heading, and no heading is inside one; text a
  removed span split stays split where it matters: the search plugin collapses
  a run of text that is only whitespace to one space, so where a removed tag
  borders such a run a ``<wbr>`` (void: the search plugin passes over it) keeps
  the run apart;
- a span marked ``data-search-exclude`` (KaTeX's MathML, which the search
  plugin skips) goes with its content; a page where such a span holds another
  span is taken as it is (the search plugin ends an exclusion at the first end
  tag of the element's name), and so is one where what it holds ends an element
  of the name of an excluded one around it, or has an attribute the search
  plugin rewrites (``data-search-...="..."``);
- a page whose first tag is a span is taken as it is: that tag starts the index's
  first section.

What the search plugin made of a page is kept (``IndexedPages``, a store of the
cache folder), by the page's HTML and everything else it reads of the page and of
its own settings (``entries_key``): a later build, or a rebuild of ``mkdocs
serve``, adds those entries to the index instead of having the page read again.
A page that changed is read a part at a time (``heading_parts``), each part's
sections kept in the same store by its HTML (``part_key``), so that after a prose
edit only the part that changed is read again (``search_reader.Sections``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from docs_hooks.base.cachedir import Store, store_file

_ATTRS = r"""(?:[\s/](?:[^>"']++|"[^"]*+"|'[^']*+')*+)?"""  # a tag's attributes, quoted values and all
_TOKEN = re.compile(
    rf"""<(?:
      (?P<endspan>/span\s*>)
    | (?P<end>/(?P<endname>[a-zA-Z][-.a-zA-Z0-9:_]*)\s*>)
    | (?P<span>span(?P<spanattrs>{_ATTRS})>)
    | (?P<raw>(?P<rawname>script|style)\b[^>]*>.*?</(?P=rawname)\s*>)      # text the parser does not read
    | (?P<open>(?P<start>[a-zA-Z][^\t\n\r\f />\x00]*){_ATTRS}>)
    | (?P<skip>!--.*?-->|![^>]*>|\?[^>]*>)                                  # comment, declaration
    | (?P<stray>)
    )""",
    re.VERBOSE | re.DOTALL | re.IGNORECASE,
)
_ATTRIBUTE = re.compile(r"""[\s/]*([^\s/>=][^\s/=>]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>"']+))?""")
_REWRITTEN = re.compile(r"data-search-\w+=")  # an attribute the search plugin takes out of the page
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# The tags the search plugin takes for void (Material's list): it opens no element for them.
VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_WBR = "<wbr>"


# A heading with an id, at the start of a line: where the search plugin may start a section of the index.
_HEADING_START = re.compile(r'\n<h[1-6] id="[^"<>]*"[\s/>]')


def heading_parts(html: str) -> list[str]:
    """``html`` cut before each heading that starts a line with an id (``<h2 id="...">``, as Python-Markdown
    writes a section's heading): the parts the search plugin's sections may be read from one at a time
    (``search_reader.Sections``, which reads a part alone only when the search plugin has closed every
    element before it). Joined, the parts are ``html``."""
    cuts = [m.start() + 1 for m in _HEADING_START.finditer(html)]
    return [html[a:b] for a, b in zip([0, *cuts], [*cuts, len(html)]) if b > a]


def rewritten(html: str) -> bool:
    """Whether the search plugin takes attributes out of the page (``data-search-...="..."``)."""
    return _REWRITTEN.search(html) is not None


def without_spans(html: str) -> str | None:
    """``html`` with its ``<span>`` tags taken out (an excluded span with its content), as the module's doc
    says; None when that cannot be done exactly, or there is no span to take out."""
    if "<span" not in html or _REWRITTEN.search(html):
        return None
    out: list[str] = []
    pos = 0  # where the text not yet copied starts
    names: list[str] = []  # the open elements, a removed span as ""
    spans = 0  # removed spans open
    cut = -1  # the depth at which an excluded span opened (what it holds is left out), or -1
    first = True  # before the page's first tag
    pre = 0  # open <pre> elements: in one, the search plugin keeps every run of text as it is, split or not
    # The open elements (not spans) the search plugin leaves out with what they hold: (depth, name). It ends
    # such an exclusion at the first end tag of that name, even one inside an excluded span's content.
    excluding: list[tuple[int, str]] = []
    push, pop = names.append, names.pop
    for m in _TOKEN.finditer(html):
        kind = m.lastgroup
        if kind == "open":  # the commonest first
            name = m.group("start").lower()
            if name in VOID:
                continue
            first = False
            if html[m.end() - 2] == "/":
                continue  # <path/>: opened and closed
            if spans and name in _HEADINGS:
                return None
            tag = m.group("open")
            if ("data-search-exclude" in tag or "linenodiv" in tag) and _excluded(tag[1 + len(name) :]):
                excluding.append((len(names), name))
            push(name)
            if name == "pre":
                pre += 1
        elif kind == "end":
            name = m.group("endname").lower()
            if not names or names[-1] != name:
                return None
            if cut >= 0 and any(depth < cut and shut == name for depth, shut in excluding):
                return None  # it would end an exclusion outside the span left out
            pop()
            if name == "pre":
                pre -= 1
            if excluding and excluding[-1][0] == len(names):
                excluding.pop()
        elif kind == "span":
            start, end = m.span()
            if html[end - 2] == "/":
                continue  # <span/>: opened and closed
            if first or cut >= 0:
                return None  # the first tag starts the index's first section; a span in an excluded one
            out.append(html[pos:start])
            attrs = m.group("spanattrs")
            if ("data-search-exclude" in attrs or "linenodiv" in attrs) and _excluded(attrs):
                if not pre and _whitespace_before(html, start):
                    out.append(_WBR)
                cut = len(names)
            elif not pre and (
                (html[start - 1].isspace() and _whitespace_before(html, start))
                or (html[end : end + 1].isspace() and _whitespace_after(html, end))
            ):
                out.append(_WBR)
            push("")
            spans += 1
            pos = end
        elif kind == "endspan":
            if not names or names[-1]:
                return None
            pop()
            spans -= 1
            start, end = m.span()
            after = not pre and html[end : end + 1].isspace() and _whitespace_after(html, end)
            if cut < 0:
                out.append(html[pos:start])
                if after or (not pre and html[start - 1].isspace() and _whitespace_before(html, start)):
                    out.append(_WBR)
            elif len(names) == cut:
                cut = -1
                if after:
                    out.append(_WBR)
            pos = end
        elif kind == "raw":
            first = False
        elif kind == "stray":
            return None
    if names or not out:
        return None
    out.append(html[pos:])
    return "".join(out)


def _excluded(attrs: str) -> bool:
    """Whether a tag with these attributes is one the search plugin leaves out with what it holds: one
    marked ``data-search-exclude``, or of class ``linenodiv`` (Pygments' line numbers)."""
    if "data-search-exclude" not in attrs and "linenodiv" not in attrs:
        return False
    for name, value in _ATTRIBUTE.findall(attrs):
        name = name.lower()
        if name == "data-search-exclude" or (name == "class" and value.strip("\"'") == "linenodiv"):
            return True
    return False


def _whitespace_before(html: str, start: int) -> bool:
    """Whether the text that ends at ``start`` (back to the tag before it) is whitespace only, and not empty."""
    if not html[start - 1 : start].isspace():
        return False  # the common case, cheaply
    return html[html.rfind(">", 0, start) + 1 : start].isspace()


def _whitespace_after(html: str, end: int) -> bool:
    """Whether the text that starts at ``end`` (up to the next tag) is whitespace only, and not empty."""
    if not html[end : end + 1].isspace():
        return False  # the common case, cheaply
    stop = html.find("<", end)
    return html[end : stop if stop >= 0 else len(html)].isspace()


# ---------------------------------------------------------------------------- what the search plugin made

FORMAT = 1  # the form of a stored page's entries; a change makes every stored one a miss


def entries_key(html: str, reads: object) -> str:
    """The key of the entries the search plugin made of a page: a digest of its HTML and of everything else
    it read of the page and of itself (``reads``: plain data, by its repr)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{FORMAT}\0{reads!r}\0".encode("utf-8", "surrogatepass"))
    h.update(html.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def part_key(after: bool, html: str, reader: str) -> str:
    """The key of the sections the search plugin made of a part of a page (``heading_parts``), read ``after``
    sections before it or as the page's start, by ``reader`` (its release; see ``search_reader.Sections``)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{FORMAT}\0part\0{after}\0{reader}\0".encode("utf-8", "surrogatepass"))
    h.update(html.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _loaded(raw: bytes) -> list[dict] | None:
    """The entries ``IndexedPages.add`` kept; None for anything else (then the page is read again)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, list) or not all(isinstance(e, dict) and _an_entry(e) for e in data):
        return None
    return data


def _an_entry(entry: dict) -> bool:
    """Whether ``entry`` has the form of an entry of Material's search index: a page's or a section's
    location, title and text (then its tags and boost, when the page's front matter sets them)."""
    return all(isinstance(k, str) for k in entry) and all(isinstance(entry.get(k), str) for k in _TEXTS)


_TEXTS = ("location", "title", "text")


class IndexedPages:
    """The search plugin's entries of the pages of earlier builds, by ``entries_key`` (a store of the cache
    folder; none without one). An entry is kept only when JSON gives it back as it was: the index is
    written as JSON, so what is read back is what the search plugin would write."""

    def __init__(self, cache_dir: Path | None):
        path = store_file(cache_dir, "search")
        self.store = Store(path) if path is not None else None
        self._fresh: dict[str, bytes] = {}

    def get(self, key: str) -> list[dict] | None:
        if self.store is None:
            return None
        raw = self.store.get_many([key]).get(key)
        return _loaded(raw) if raw is not None else None

    def add(self, key: str, entries: list[dict]) -> None:
        """Keep ``entries`` (written by ``flush``)."""
        if self.store is None:
            return
        try:
            raw = json.dumps(entries, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):  # a value of the page's front matter that JSON does not hold
            return
        if json.loads(raw) == entries:
            self._fresh[key] = raw

    def flush(self, rows: dict[str, bytes] | None = None) -> None:
        """Write the entries kept since the last flush, and ``rows`` of the same store with them (the parts of
        pages ``search_reader.Sections`` read), in one transaction."""
        fresh = {**self._fresh, **(rows or {})}
        if self.store is not None and fresh:
            self.store.put_many(fresh)
        self._fresh = {}

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

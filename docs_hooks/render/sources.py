"""Source pages: each module of the documented code as a page of the site, with line anchors.

Every line reference on the site (``ops.py:42``) links to the line on its
module's source page, so the site needs no repository host to show the code it
cites. A source page shows the module highlighted, one anchor per line
(``#L42``), and beside each line that an entry or an equation cites, links back
to those entries and equations: a reader of the code sees which documentation
depends on a line before changing it.

Links are written page-independently while a page is rendered, as
``docs-hooks-source:src/ops.py#L42-L47``, and made relative to the page that
holds them when the page is done (``relative_links``): the same generated HTML
then serves every page that shows it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from docs_hooks.render import html as R

PREFIX = "source"  # the site folder of the source pages
SCHEME = "docs-hooks-source:"
_LINK = re.compile(r'(?P<space> ?)href="docs-hooks-source:(?P<path>[^"#]+)(?P<anchor>#[^"]*)?"')


@dataclass(frozen=True)
class Citation:
    """One span of a source file that the documentation cites, and where."""

    repo_path: str
    start: int
    end: int
    page: str  # the citing page (docs path)
    anchor: str  # the entry's or equation's anchor on that page
    label: str  # what is shown: the entry's or equation's title


def target(repo_path: str, start: int | None = None, end: int | None = None) -> str:
    """The page-independent link to a span of a source file (see ``relative_links``)."""
    anchor = "" if start is None else f"#L{start}" if end is None or end == start else f"#L{start}-L{end}"
    return f"{SCHEME}{repo_path}{anchor}"


def page_uri(repo_path: str) -> str:
    """The source page of ``repo_path`` as a file of the site's docs (``source/src/ops.py.md``)."""
    return f"{PREFIX}/{repo_path}.md"


def relative_path(path: str, start: str) -> str:
    """``posixpath.relpath(path, start)``, without reading the working directory when both are paths inside
    the site (neither absolute nor above it): the same answer, made for every link of every page."""
    p, s = posixpath.normpath(path), posixpath.normpath(start)
    if not path or not start or p.startswith(("/", "..")) or s.startswith(("/", "..")):
        return posixpath.relpath(path, start)
    ps = p.split("/") if p != "." else []
    ss = s.split("/") if s != "." else []
    same = 0
    for a, b in zip(ps, ss):
        if a != b:
            break
        same += 1
    parts = [".."] * (len(ss) - same) + ps[same:]
    return "/".join(parts) if parts else "."


def relative_links(html: str, here_url: str, url_of: Callable[[str], str | None]) -> str:
    """``html`` with every source link made relative to the page at ``here_url`` (a site URL such as
    ``layer-norm/``). ``url_of(repo_path)`` is the URL of the file's source page; an address on another host
    (``https://...``: the file on the repository host), kept whole with its lines; or None when there is
    nowhere to link (the link's ``href`` then goes, its text stays)."""
    if SCHEME not in html:
        return html
    base = here_url if here_url.endswith("/") or not here_url else posixpath.dirname(here_url)

    def swap(m: re.Match) -> str:
        url = url_of(m.group("path"))
        if url is None:
            return ""
        if "://" in url:
            return f'{m.group("space")}href="{R.esc(url)}{m.group("anchor") or ""}"'
        anchor = (m.group("anchor") or "").split("-L")[0]  # a span links to its first line
        rel = relative_path(url, base or ".")
        rel = rel + "/" if url.endswith("/") and not rel.endswith("/") else rel
        return f'{m.group("space")}href="{R.esc(rel)}{anchor}"'

    return _LINK.sub(swap, html)


def citations(entries: dict[str, list]) -> list[Citation]:
    """Every span the entries cite: each entry's functions and each equation's statements."""
    found = []
    for page, page_entries in entries.items():
        for entry in page_entries:
            for fn in entry.functions:
                found.append(Citation(fn.repo_path, fn.start, fn.end, page, entry.id, entry.title))
            for eq in entry.equations:
                for r in eq.resolved:
                    found.append(Citation(r.function.repo_path, r.start, r.end, page, f"eq-{eq.id}", eq.title))
    return found


def highlighted_lines(text: str) -> list[str]:
    """The file's lines as HTML, highlighted by Pygments (which closes its spans at each line's end)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    html = highlight(text, PythonLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
    lines = html.split("\n")
    count = len(text.split("\n"))
    return (lines + [""] * count)[:count]


def render_page(
    repo_path: str,
    text: str,
    cited: list[Citation],
    here_url: str,
    url_of_page: Callable[[str], str],
    repo_link: str = "",
    highlighted: Sequence[str] | None = None,
) -> str:
    """The body of a source page: the module's lines with anchors, and beside each cited line its citations.

    ``url_of_page(page)`` is the site URL of a docs page; ``repo_link`` the file's
    permanent link on the repository host, when there is one; ``highlighted`` the
    file's lines as ``highlighted_lines`` makes them (by default, made now).
    """
    by_line: dict[int, list[Citation]] = {}
    for c in cited:
        lines: Sequence[int]
        if c.start == c.end or c.end - c.start < 3:  # a statement: every line of it
            lines = range(c.start, c.end + 1)
        else:  # a whole function: its first line
            lines = [c.start]
        for n in lines:
            by_line.setdefault(n, []).append(c)
    base = here_url if here_url.endswith("/") else posixpath.dirname(here_url)
    rows = []
    for n, code in enumerate(highlighted if highlighted is not None else highlighted_lines(text), 1):
        links = []
        for c in sorted(set(by_line.get(n, ())), key=lambda c: (c.page, c.anchor)):
            rel = relative_path(url_of_page(c.page), base or ".")
            to = rel if rel.endswith(".md") else rel + "/"  # a page's file, or its directory URL
            links.append(f'<a href="{R.esc(to)}#{R.esc(c.anchor)}">{R.esc(c.label)}</a>')
        cites = f'<td class="trace-src-cites">{", ".join(links)}</td>' if links else "<td></td>"
        cls = ' class="trace-src-cited"' if links else ""
        rows.append(
            f'<tr id="L{n}"{cls}>'
            f'<td class="trace-src-n"><a href="#L{n}">{n}</a></td>'
            f'<td class="trace-src-code"><code>{code}</code></td>{cites}</tr>'
        )
    head = f"<p>{R.link('On the repository host', repo_link) if repo_link else ''}</p>\n" if repo_link else ""
    cited_count = len({(c.page, c.anchor) for c in cited})
    summary = (
        f"<p>{cited_count} entr{'y' if cited_count == 1 else 'ies'} and equation"
        f"{'' if cited_count == 1 else 's'} cite lines of this file; each cited line lists them.</p>\n"
        if cited_count
        else "<p>No entry or equation cites this file.</p>\n"
    )
    return (
        head
        + summary
        + '<div class="trace-src highlight"><table class="trace-src-table"><tbody>'
        + "".join(rows)
        + "</tbody></table></div>\n"
    )


def page_markdown(repo_path: str) -> str:
    """The Markdown of a source page: its title and a ``trace-source`` block that shows the file."""
    name = Path(repo_path).name
    # The code needs the width: the page hides the site's navigation and table of contents (Material's hide).
    return (
        f"---\ntitle: {name}\nhide:\n  - navigation\n  - toc\nsearch:\n  exclude: true\n---\n\n"
        f"# `{R.esc(repo_path)}`\n\n"
        f"```trace-source\nfile: {repo_path}\n```\n"
    )

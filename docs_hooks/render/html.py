"""Data to Markdown and HTML. Pure functions: the same data always gives the same text.

Tables are written as HTML so that code holding ``|``, ``<``, ``&``, backticks
or ``*`` shows exactly as written; code listings are fenced blocks long enough
that no run of backticks inside them can close them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

STATUS_LABELS = {
    "implemented": "Implemented",
    "derived": "Derived from implementation",
    "illustrative": "Illustrative",
}


def esc(text: str) -> str:
    """Text for an HTML element or attribute, on one line."""
    return html.escape(str(text), quote=True).replace("\n", "<br>")


def code(text: str) -> str:
    return f"<code>{esc(text)}</code>"


def link(label_html: str, url: str, title: str = "") -> str:
    if not url:
        return label_html
    t = f' title="{esc(title)}"' if title else ""
    return f'<a href="{esc(url)}"{t}>{label_html}</a>'


def table(
    headers: list[str], rows: Sequence[list[str] | str], cls: str = "trace-table", searchable: bool = True
) -> str:
    """An HTML table. Headers are plain text; cells are HTML already escaped; a row given as
    a string is HTML of its own (a whole ``<tr>``, or a placeholder for one).

    ``searchable=False`` keeps the table out of the site's search index (Material
    skips an element marked ``data-search-exclude``): generated lists of names,
    lines and numbers that would only swell the index and crowd the results.
    """
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        row if isinstance(row, str) else "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows
    )
    exclude = "" if searchable else " data-search-exclude"
    return (
        f'<div class="trace-table-wrap"{exclude}><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def fold(summary_html: str, body_html: str) -> str:
    """A long list folded: the summary shows, the body opens on a click (no script needed)."""
    return f'<details class="trace-fold"><summary>{summary_html}</summary>{body_html}</details>'


def count_words(n: int, noun: str) -> str:
    """'1 test', '3 tests'."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def badge(status: str, evidence: str = "") -> str:
    label = STATUS_LABELS[status]
    t = f' title="{esc(evidence)}"' if evidence else ""
    return f'<span class="trace-badge trace-badge--{status}"{t}>{esc(label)}</span>'


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def listing(lines: list[str], first_line: int, head_html: str = "", highlight: list[int] | None = None) -> str:
    """A Python listing with its real line numbers (Markdown, for pymdownx.superfences).

    Blank lines at either end are left out (Pygments would drop them and shift
    every number after them); the first number follows.
    """
    lines = list(lines)
    while lines and not lines[0].strip():
        lines.pop(0)
        first_line += 1
    while lines and not lines[-1].strip():
        lines.pop()
    body = "\n".join(lines)
    fence = fence_for(body)
    options = f'linenums="{first_line}"'
    if highlight:
        rel = sorted({n - first_line + 1 for n in highlight if first_line <= n < first_line + len(lines)})
        if rel:
            options += ' hl_lines="' + " ".join(str(n) for n in rel) + '"'
    out = []
    if head_html:
        out.append(f'<div class="trace-listing-head">{head_html}</div>\n')
    out.append(f"{fence} python {options}\n{body}\n{fence}\n")
    return "\n".join(out)


def span_label(display_path: str, start: int, end: int) -> str:
    return f"{display_path}:{start}" if start == end else f"{display_path}:{start}-{end}"


def lines_words(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def heading(level: int, text: str, anchor: str) -> str:
    # Material and attr_list give every heading a permalink.
    return f"{'#' * level} {text} {{#{anchor}}}\n"


def error_box(message: str) -> str:
    return f'<div class="admonition failure trace-error"><p class="admonition-title">Trace error</p><p>{esc(message)}</p></div>\n'


def error_text(message: str) -> str:
    """A problem shown inline, inside a table cell."""
    return f'<code class="trace-error">{esc(message)}</code>'

"""Site-wide traceability: every equation against its code, tests and spec, and what no page covers.

Built from the entries of every page (the Builder expands each page once per
build), so these tables always agree with the pages themselves. Both
directions are checked: every equation has code, and every function and
specification equation is either documented or listed here as not covered.

The matrix has one short row per equation; the names of the tests behind its
two counts are folded in the row (``<details>``), and docs_hooks/assets/trace-matrix.js
adds a filter box and sortable columns. The lists of what no equation or page
covers are folded by module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.read.spec import SpecIndex
from docs_hooks.render import html as R
from docs_hooks.render import sections
from docs_hooks.render.links import Links
from docs_hooks.resolve.anchors import Resolved
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.codeindex import CodeIndex, Function
from docs_hooks.resolve.entries import EntryData, EquationData, SiteEntries, role_words


@dataclass
class Site:
    """What the site-wide tables are made from: every page's entries, the code and its call graph, the links,
    the specification, and the tests that ran each line (``tests_running``; None when line coverage is not
    set up; it raises the coverage run's TraceError when that run failed)."""

    entries: SiteEntries
    index: CodeIndex
    graph: CallGraph
    links: Links
    spec: SpecIndex | None
    spec_pdf: str
    tests_running: Callable[[list[Resolved]], list[str]] | None

    def pdf_reference(self, page: str, labels: list[str]) -> str:
        return sections.spec_refs(self.spec, self.links, self.spec_pdf, page, labels)


@dataclass
class MatrixRow:
    """One equation of the site, with what its row shows before the coverage run is needed."""

    page: str  # the page file, from the project root
    page_title: str
    entry: EntryData
    eq: EquationData
    functions: list[Function]  # the functions its lines are in (the entry's when it has none)
    direct: list[str]  # tests that call one of them


def matrix_rows(site: Site) -> list[MatrixRow]:
    """Every equation of every page, in page order."""
    rows = []
    for page, entries in site.entries.pages.items():
        title = site.entries.titles.get(page, page)
        for entry in entries:
            for eq in entry.equations:
                functions = list({r.function.name: r.function for r in eq.resolved}.values()) or entry.functions
                rows.append(MatrixRow(page, title, entry, eq, functions, site.graph.tested_by(functions)))
    return rows


def _page_link(site: Site, here: str, page: str, anchor: str, label_html: str, title: str = "") -> str:
    url = site.links.page_url(page)
    return R.link(label_html, f"{site.links.relative_url(here, url)}#{anchor}", title)


def _short(site: Site, test: str) -> str:
    """A test's name inside its module: ``test_x``, or ``TestCase.test_x`` for a method."""
    fn = site.index.functions.get(test)
    return (
        test[len(fn.module) + 1 :] if fn is not None and test.startswith(fn.module + ".") else test.rsplit(".", 1)[-1]
    )


def _names(site: Site, tests: list[str]) -> str:
    """Short names in one line of text: the list a row folds can be long, and the page lists one per equation."""
    return R.esc(", ".join(_short(site, t) for t in tests))


# (header, width in % at desktop size, how the script sorts it)
COLUMNS = [  # (header, width in % of the table, how it sorts); at 1280 px a status badge fits its column
    ("Equation", 20, "text"),
    ("Page", 12, "text"),
    ("Status", 13, "text"),
    ("Role", 9, "text"),
    ("Code", 16, "text"),
    ("Direct tests", 7, "number"),
    ("", 11, "number"),  # its header depends on the coverage settings (see matrix)
    ("Specification", 12, "text"),
]


def matrix(site: Site, here: str) -> str:
    """Equations x code x tests x spec, one row per equation.

    The names of the tests behind each row's count are folded in the row. Many
    equations share one list (every line of a short function runs in the same
    tests), so each distinct list is written once, after the table, in a
    ``<template>``; trace-matrix.js puts it into a row's ``<details>`` when the
    row is opened, and searches it when the table is filtered.
    """
    covered = site.tests_running is not None
    rows = matrix_rows(site)
    statics = [(tuple(row.direct), *site.graph.reached_shown(row.functions)) for row in rows]
    lists = _TestLists(site, rows, statics)
    body = []
    for i, row in enumerate(rows):
        eq, entry = row.eq, row.entry
        code = (
            "<br>".join(
                R.code(fn.short_name)
                + " "
                + ", ".join(site.links.line_link(r.function, r.start, r.end) for r in eq.resolved if r.function is fn)
                for fn in row.functions
                if any(r.function is fn for r in eq.resolved)
            )
            or "no code"
        )
        cells = [
            f"<td>{_page_link(site, here, row.page, f'eq-{eq.id}', R.esc(eq.title))}</td>",
            f"<td>{_page_link(site, here, row.page, entry.id, R.esc(row.page_title), entry.title)}</td>",
            f"<td>{R.badge(entry.status)}</td>",
            f"<td>{R.esc(role_words(eq))}</td>",
            f"<td>{code}</td>",
            f'<td data-sort="{len(row.direct)}">{len(row.direct)}</td>',
            lists.cell(i),
        ]
        if site.spec is not None:  # no specification configured: no column for it
            cells.append(f"<td>{site.pdf_reference(here, entry.spec)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    columns = COLUMNS if site.spec is not None else [c for c in COLUMNS if c[0] != "Specification"]
    heads = [h or ("Tests that run its lines" if covered else "Tests that reach it") for h, _, _ in columns]
    cols = "".join(f'<col style="width:{w}%">' for _, w, _ in columns)
    head = "".join(f'<th data-sort-type="{kind}">{R.esc(h)}</th>' for h, (_, _, kind) in zip(heads, columns))
    templates = lists.templates()
    return (
        f'<div class="trace-table-wrap trace-matrix-wrap" data-search-exclude>'
        f'<table class="trace-table trace-matrix"><colgroup>{cols}</colgroup>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{templates}</div>\n"
    )


class _TestLists:
    """The tests cell of every row of one matrix, and the distinct lists of names they fold, made once."""

    def __init__(self, site: Site, rows: list[MatrixRow], statics: list[tuple]):
        self.site, self.rows, self.statics = site, rows, statics
        self._made: tuple[list[str], dict[str, int]] | None = None

    def _make(self) -> tuple[list[str], dict[str, int]]:
        if self._made is None:
            cells: list[str] = []
            lists: dict[str, int] = {}
            try:
                made = [_tests_of(self.site, row, static) for row, static in zip(self.rows, self.statics)]
            except TraceError as err:  # the coverage run failed: every row says so (the entries report it)
                self._made = ([_error_cells(err.message)] * len(self.rows), {})
                return self._made
            for count, body in made:
                if body is None:
                    cells.append(f'<td data-sort="{count}">{count}</td>')
                    continue
                n = lists.setdefault(body, len(lists))
                shown = f"{count}+" if body.endswith(", and more</p>") else str(count)
                cells.append(
                    f'<td data-sort="{count}"><details class="trace-fold" data-tests="{n}">'
                    f"<summary>{shown}</summary></details></td>"
                )
            self._made = (cells, lists)
        return self._made

    def cell(self, i: int) -> str:
        return self._make()[0][i]

    def templates(self) -> str:
        return "".join(f'<template data-tests="{n}">{body}</template>' for body, n in self._make()[1].items())


def _tests_of(site: Site, row: MatrixRow, static: tuple) -> tuple[int, str | None]:
    """How many tests ran the equation's lines (line coverage), else reach it through the call graph; and
    their names, each once, those that also call its function first (None when there are none)."""
    direct, reached, more = static
    measured = site.tests_running is not None
    tests = site.tests_running(row.eq.resolved) if site.tests_running is not None else list(direct) + reached
    if not tests and not direct:
        return 0, None
    fns = R.code(", ".join(f.short_name for f in row.functions))
    calling = [t for t in tests if t in direct]
    others = [t for t in tests if t not in direct]
    idle = [t for t in direct if t not in tests]
    verb = "run its lines" if measured else "reach it"
    parts = []
    if calling:
        parts.append(f"Call {fns} and {verb}: {_names(site, calling)}")
    if idle:
        parts.append(f"Call {fns} but do not run these lines: {_names(site, idle)}")
    if others:
        parts.append(
            f"{verb.capitalize()} through other functions: {_names(site, others)}"
            + (", and more" if more and not measured else "")
        )
    return len(tests), "".join(f'<p class="trace-matrix-tests">{p}</p>' for p in parts)


def _error_cells(message: str) -> str:
    return f'<td data-sort="0">{R.error_text(message)}</td>'


def documented_functions(entries: dict[str, list[EntryData]]) -> dict[str, list[tuple[str, EntryData]]]:
    out: dict[str, list[tuple[str, EntryData]]] = {}
    for page, page_entries in entries.items():
        for entry in page_entries:
            for fn in entry.functions:
                out.setdefault(fn.name, []).append((page, entry))
    return out


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _grouped(groups: dict[str, list[list[str]]], headers: list[str], what: str, extra: dict[str, str]) -> str:
    """One folded table per module: its summary names the module, how many functions, and ``extra``."""
    out = []
    for path, rows in groups.items():
        summary = f"{R.code(path)}: {R.count_words(len(rows), 'function')}{extra.get(path, '')}"
        out.append(R.fold(summary, R.table(headers, rows, searchable=False)))
    return (
        f'<div class="trace-groups" data-search-exclude data-trace-groups="{R.esc(what)}">'
        + "\n".join(out)
        + "</div>\n"
    )


def uncovered_lines(site: Site, here: str) -> str:
    """Statements of documented functions that no equation references, folded by module."""
    entries = site.entries.pages
    covered: dict[str, set[int]] = {}
    for page_entries in entries.values():
        for entry in page_entries:
            for eq in entry.equations:
                for r in eq.resolved:
                    covered.setdefault(r.function.name, set()).update(range(r.start, r.end + 1))
    groups: dict[str, list[list[str]]] = {}
    counts: dict[str, int] = {}
    for name, uses in sorted(documented_functions(entries).items()):
        fn = site.index.functions[name]
        if fn.is_test or all(entry.status == "illustrative" for _, entry in uses):
            continue
        left = [
            st for st in fn.statements if not any(n in covered.get(name, set()) for n in range(st.start, st.end + 1))
        ]
        if not left:
            continue
        lines = [n for st in left for n in range(st.start, st.end + 1) if fn.source_lines[n - fn.start].strip()]
        spans = ", ".join(site.links.line_link(fn, a, b) for a, b in _ranges(lines))
        kinds = ", ".join(dict.fromkeys(st.kind for st in left))
        page, entry = uses[0]
        groups.setdefault(fn.display_path, []).append(
            [_page_link(site, here, page, entry.id, R.code(name)), spans, R.esc(kinds)]
        )
        counts[fn.display_path] = counts.get(fn.display_path, 0) + len(lines)
    if not groups:
        return "<p>Every statement of every documented function is referenced by an equation.</p>\n"
    extra = {path: f", {R.count_words(n, 'line')}" for path, n in counts.items()}
    return _grouped(groups, ["Function", "Lines no equation references", "What those lines do"], "uncovered", extra)


def undocumented_functions(site: Site, here: str) -> str:
    """Functions of the source root that no entry documents, folded by module."""
    documented = documented_functions(site.entries.pages)
    missing: list[Function] = [
        fn for name, fn in sorted(site.index.functions.items()) if not fn.is_test and name not in documented
    ]
    if not missing:
        return "<p>Every function of the source is documented on some page.</p>\n"
    groups: dict[str, list[list[str]]] = {}
    for fn in missing:
        groups.setdefault(fn.display_path, []).append(
            [
                site.links.function_link(fn),
                site.links.line_link(fn, fn.start, fn.end),
                R.esc((fn.docstring or "").strip().splitlines()[0] if fn.docstring else ""),
            ]
        )
    return _grouped(groups, ["Function", "Lines", "What its docstring says"], "undocumented", {})


def uncited_spec(site: Site, here: str) -> str:
    """Equations of the specification that no entry cites."""
    if site.spec is None:
        return "<p>No specification is configured.</p>\n"
    cited = {label for e in site.entries.all() for label in e.spec}
    missing = [label for label in site.spec.labels() if label not in cited]
    if not missing:
        return "<p>Every equation of the specification is cited by some page.</p>\n"
    rows = [[R.code(label), site.pdf_reference(here, [label])] for label in missing]
    return R.table(["Label", "Where in the specification"], rows, searchable=False) + "\n"


def pages_table(site: Site, here: str) -> str:
    """Every page with its entries and their status."""
    rows = []
    for page, entries in site.entries.pages.items():
        for entry in entries:
            rows.append(
                [
                    _page_link(site, here, page, entry.id, R.esc(entry.title)),
                    R.badge(entry.status, sections.status_evidence(entry, site.graph)),
                    ", ".join(site.links.function_link(f) for f in entry.functions),
                    str(len(entry.equations)),
                ]
            )
    return R.table(["Entry", "Status", "Functions", "Equations"], rows, searchable=False) + "\n"


TABLES = {
    "matrix": matrix,
    "uncovered": uncovered_lines,
    "undocumented": undocumented_functions,
    "spec": uncited_spec,
    "pages": pages_table,
}

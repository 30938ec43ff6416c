"""Site-wide traceability: every equation against its code, tests and spec, and what no page covers.

Built from the entries of every page (the Builder expands each page once per
build), so these tables always agree with the pages themselves. Both
directions are checked: every equation has code, and every function and
specification equation is either documented or listed here as not covered.
"""

from __future__ import annotations

from . import render as R
from .codeindex import Function
from .expand import Builder, EntryData, role_words


def _page_link(builder: Builder, here: str, page: str, anchor: str, label_html: str) -> str:
    url = builder.page_url(page)
    return f'<a href="{R.esc(builder.relative_url(here, url))}#{R.esc(anchor)}">{label_html}</a>'


def matrix(builder: Builder, here: str) -> str:
    """Equations x code x tests x spec, one row per referenced statement."""
    rows = []
    for page, entries in builder.site_entries().items():
        for entry in entries:
            static = (builder.tested_by(entry.functions), *builder.reached_shown(entry.functions))
            spec = builder.spec_refs(here, entry.spec)
            for eq in entry.equations:
                # The tests that ran the equation's own lines, where coverage was measured.
                tests_html = builder.defer(
                    lambda eq=eq, static=static: _tests_cell(builder, eq, static), R.error_text,
                    ("matrix cell", tuple((r.function.name, r.start, r.end) for r in eq.resolved), tuple(static[0]),
                     tuple(static[1]), static[2]))
                code = "<br>".join(
                    f"{builder.line_link(r.function, r.start, r.end)} {R.code(r.function.short_name)}"
                    for r in eq.resolved
                ) or "unresolved"
                rows.append([
                    _page_link(builder, here, page, f"eq-{eq.id}", R.esc(eq.title)),
                    R.badge(entry.status),
                    role_words(eq),
                    code,
                    tests_html,
                    spec,
                ])
    tests_head = "Tests that run its lines" if builder.settings.coverage_tests else "Tests"
    return R.table(["Equation", "Status", "Role", "Code", tests_head, "Specification"], rows, searchable=False) + "\n"


def _tests_cell(builder: Builder, eq, static: tuple) -> str:
    """The tests that ran the equation's own lines, where coverage is measured; else those that reach it."""
    more = False
    if builder.coverage is not None:
        tests = builder.tests_running(eq.resolved)
    else:
        direct, reached, more = static
        tests = direct + reached
    return (", ".join(R.code(t.rsplit(".", 1)[-1]) for t in tests) or "none") + (", and more" if more else "")


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


def uncovered_lines(builder: Builder, here: str) -> str:
    """Statements of documented functions that no equation references."""
    entries = builder.site_entries()
    covered: dict[str, set[int]] = {}
    for page_entries in entries.values():
        for entry in page_entries:
            for eq in entry.equations:
                for r in eq.resolved:
                    covered.setdefault(r.function.name, set()).update(range(r.start, r.end + 1))
    rows = []
    for name, uses in sorted(documented_functions(entries).items()):
        fn = builder.index.functions[name]
        if fn.is_test or all(entry.status == "illustrative" for _, entry in uses):
            continue
        left = [st for st in fn.statements
                if not any(n in covered.get(name, set()) for n in range(st.start, st.end + 1))]
        if not left:
            continue
        lines = [n for st in left for n in range(st.start, st.end + 1) if fn.source_lines[n - fn.start].strip()]
        spans = ", ".join(builder.line_link(fn, a, b) for a, b in _ranges(lines))
        kinds = ", ".join(dict.fromkeys(st.kind for st in left))
        page, entry = uses[0]
        rows.append([_page_link(builder, here, page, entry.id, R.code(name)), spans, R.esc(kinds)])
    if not rows:
        return "<p>Every statement of every documented function is referenced by an equation.</p>\n"
    return R.table(["Function", "Lines no equation references", "What those lines do"], rows, searchable=False) + "\n"


def undocumented_functions(builder: Builder, here: str) -> str:
    """Functions of the source root that no entry documents."""
    documented = documented_functions(builder.site_entries())
    missing: list[Function] = [
        fn for name, fn in sorted(builder.index.functions.items())
        if not fn.is_test and name not in documented
    ]
    if not missing:
        return "<p>Every function of the source is documented on some page.</p>\n"
    rows = [[builder.function_link(fn), builder.line_link(fn, fn.start, fn.end),
             R.esc((fn.docstring or "").strip().splitlines()[0] if fn.docstring else "")] for fn in missing]
    return R.table(["Function", "Lines", "What its docstring says"], rows, searchable=False) + "\n"


def uncited_spec(builder: Builder, here: str) -> str:
    """Equations of the specification that no entry cites."""
    if builder.spec is None:
        return "<p>No specification is configured.</p>\n"
    cited = {label for entries in builder.site_entries().values() for e in entries for label in e.spec}
    missing = [label for label in builder.spec.labels() if label not in cited]
    if not missing:
        return "<p>Every equation of the specification is cited by some page.</p>\n"
    rows = [[R.code(label), builder.spec_refs(here, [label])] for label in missing]
    return R.table(["Label", "Where in the specification"], rows, searchable=False) + "\n"


def pages_table(builder: Builder, here: str) -> str:
    """Every page with its entries and their status."""
    rows = []
    for page, entries in builder.site_entries().items():
        for entry in entries:
            rows.append([
                _page_link(builder, here, page, entry.id, R.esc(entry.title)),
                R.badge(entry.status, builder.status_evidence(entry)),
                ", ".join(builder.function_link(f) for f in entry.functions),
                str(len(entry.equations)),
            ])
    return R.table(["Entry", "Status", "Functions", "Equations"], rows, searchable=False) + "\n"


TABLES = {
    "matrix": matrix,
    "uncovered": uncovered_lines,
    "undocumented": undocumented_functions,
    "spec": uncited_spec,
    "pages": pages_table,
}


def site_table_block(table):
    """The trace-inventory handler of one site-wide ``table``: a placeholder the build fills once every page is read."""
    def handler(ctx, block) -> str:
        return ctx.builder.site_table(lambda: table(ctx.builder, ctx.page), (block.data["of"], ctx.page, block.line),
                                      block.line)
    return handler

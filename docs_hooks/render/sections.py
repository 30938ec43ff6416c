"""The sections the build writes for each entry: its header, the equation headings, and below the
entry its implementation, the code-and-math table, where it is used and where it is implemented.

Part of the render stage: pure functions of an entry (resolved data, see
``entries``), the call graph, the links and the specification. The one part
that needs the run stage's line coverage comes in as ready HTML
(``coverage_row``), made by the caller when the coverage run has ended.
"""

from __future__ import annotations

from docs_hooks.render import html as R
from docs_hooks.render import sources
from docs_hooks.render.links import Links
from docs_hooks.resolve.callgraph import SEEN_AT_RUN_TIME, CallGraph
from docs_hooks.resolve.entries import EntryData, EquationData, role_words
from docs_hooks.resolve.roles import ROLES

COVERAGE_ROW = "Tests that run these equations' lines (line coverage)"


def status_evidence(entry: EntryData, graph: CallGraph) -> str:
    """What backs the entry's status badge, in words (its tooltip)."""
    names = ", ".join(f.name for f in entry.functions)
    if entry.status == "implemented":
        return f"{names}; exercised by {len(graph.tested_by(entry.functions))} test(s)"
    if entry.status == "derived":
        return f"worked out from {names}; not run by the model"
    return "illustrative: explains, computes nothing in the model"


def entry_header(entry: EntryData, graph: CallGraph) -> str:
    return (
        R.heading(2, R.esc(entry.title), entry.id) + "\n" + R.badge(entry.status, status_evidence(entry, graph)) + "\n"
    )


def equation_parts(eq: EquationData, links: Links) -> tuple[str, str]:
    """An equation's numbered heading, and what follows its formula: the lines it is computed at, derived
    from or contrasted with. The formula itself, shown as a block, goes between the two."""
    refs = ", ".join(links.line_link(r.function, r.start, r.end) for r in eq.resolved)
    head = R.heading(4, f"({eq.number}) {R.esc(eq.title)}", f"eq-{eq.id}")
    tail = "\n"
    if refs:
        words = {
            "computes": f"Computed at {refs}",
            "derived": f"Derived from {refs}",
            "contrast": f"Contrast, not in the code. What the code does instead: {refs}",
        }[eq.role]
        tail += f'<p class="trace-eq-code">{words}</p>\n'
    return head, tail


def eq_link(eq: EquationData) -> str:
    return f'<a href="#eq-{R.esc(eq.id)}">{R.esc(eq.title)}</a>'


def computes_rows(entry: EntryData, roles: tuple[str, ...] = ROLES) -> list[tuple]:
    """(equation, reference, first line, last line, code) for each statement the entry's equations name, in
    those roles: a statement over several lines is one row (``ops.py:48-51``); a reference to a whole function,
    a row for each statement of it."""
    rows = []
    for eq in entry.equations:
        if eq.role not in roles:
            continue
        for r in eq.resolved:
            for statement in [r.statement] if r.statement is not None else r.function.statements:
                rows.append((eq, r, statement.start, statement.end, statement_text(statement.lines)))
    return rows


def statement_text(lines) -> str:
    """A statement as the tables show it: its lines as written, without their indentation or blank lines."""
    return "\n".join(line.strip() for line in lines if line.strip())


def implementation(entry: EntryData, links: Links) -> str:
    out = [R.heading(3, "Actual implementation", f"{entry.id}-implementation")]
    if entry.status == "derived":
        names = ", ".join(links.function_link(f) for f in entry.functions)
        out.append(f"<p>The code has no function for these steps. They are worked out from {names}.</p>\n")
        return "\n".join(out)
    out += implementation_listings(entry, links)
    return "\n".join(out)


def implementation_listings(entry: EntryData, links: Links) -> list[str]:
    """The listing of each of the entry's functions, a fence of the page's Markdown (a derivation has none)."""
    if entry.status == "derived":
        return []
    out = []
    for fn in entry.functions:
        # the name inside its module (the file says which module): Dense.forward_pass in .../layers.py
        head = f"{R.code(fn.display_path)} {R.code(fn.name[len(fn.module) + 1 :])} {links.code_links(fn, fn.start, fn.end)}"
        out.append(R.listing(list(fn.source_lines), fn.start, head))
    return out


def connection(entry: EntryData, links: Links, graph: CallGraph) -> str:
    """Each equation's lines; then, for code the model runs, every call site and test call.

    A derivation (status ``derived``) is not run: its table holds only the
    lines it explains; their functions' own entries list who calls them.
    """
    rows = []
    for eq, r, start, end, text in computes_rows(entry):
        rows.append([eq_link(eq), role_words(eq), links.line_link(r.function, start, end), R.code(text)])
    for role, site in graph.call_rows(entry.functions) if entry.status != "derived" else []:
        fn = graph.index.functions[site.caller]
        st = site.statement
        rows.append([R.esc(entry.title), role, links.line_link(fn, st.start, st.end), R.code(statement_text(st.lines))])
    return (
        R.heading(3, "Code and math connection", f"{entry.id}-code-and-math")
        + "\n"
        + R.table(["Equation", "Role", "Lines", "Code"], rows)
        + "\n"
    )


def used(entry: EntryData, links: Links, graph: CallGraph, pdf: str | None, coverage_row: str | None) -> str:
    """The facts table: source, specification (``pdf``: its reference, None when none is configured),
    callers, tests, tests that reach it, and ``coverage_row`` (None when line coverage is not set up)."""
    out = [R.heading(3, "Where is it used?", f"{entry.id}-used")]
    if entry.note:
        out.append(f"<p>{R.esc(entry.note)}</p>\n")
    src = "<br>".join(
        f"{R.link(R.esc(f'{fn.display_path}, {R.lines_words(fn.start, fn.end)}'), links.url(fn, fn.start, fn.end))}, "
        f"{R.code(fn.short_name)}"
        for fn in entry.functions
    )
    functions = graph.index.functions
    seen = set(graph.callers_seen_only_at_run_time(entry.functions) + graph.tested_only_at_run_time(entry.functions))

    def names(found: list[str]) -> str:
        return ", ".join(
            links.function_link(functions[n]) + (f" ({SEEN_AT_RUN_TIME})" if n in seen else "") for n in found
        )

    called = names(graph.callers(entry.functions)) or "nothing in the source"
    tested = names(graph.tested_by(entry.functions)) or "no test calls it directly"
    shown, more = graph.reached_shown(entry.functions)
    rows: list[list[str] | str] = [["Source", src]]
    if pdf is not None:
        rows.append(["PDF reference", pdf])
    rows += [["Called by", called], ["Tested by", tested]]
    unknown = graph.unobserved(graph.unresolved_calls(entry.functions))
    if unknown:
        rows.append([UNKNOWN_ROW, unknown_calls(unknown, links, graph)])
    if shown:
        count = f"more than {len(shown)} tests" if more else R.count_words(len(shown), "test")
        rows.append(
            [
                "Reached by tests through other functions",
                R.fold(count, links.test_names(shown) + (", and more" if more else "")),
            ]
        )
    if coverage_row is not None:
        rows.append(coverage_row)
    rows.append(["Status", R.badge(entry.status, status_evidence(entry, graph))])
    out.append(R.table(["", ""], rows, "trace-table trace-facts", searchable=False))
    if seen:
        out.append(
            f'<p class="trace-facts-note">A caller or test marked "{SEEN_AT_RUN_TIME}" calls it in no way the '
            "code index could follow; the build saw the call while the tests or the model run ran.</p>"
        )
    if coverage_row:  # a row of the tests measured running these lines (none ran them: no row, no note)
        out.append(
            '<p class="trace-facts-note">"Tested by" and "Reached by" follow the calls written in the '
            "code; the tests that run these equations' lines were measured: each was seen executing "
            "at least one of them.</p>"
        )
    elif shown:
        out.append(
            '<p class="trace-facts-note">"Tested by" lists the tests that call it; "Reached by", those '
            "that call it only through other functions.</p>"
        )
    return "\n".join(out) + "\n"


UNKNOWN_ROW = "Calls it may be reached by, not followed"


def unknown_calls(sites, links: Links, graph: CallGraph) -> str:
    """The calls the code index could not resolve that may reach an entry's functions and that no run executed:
    counted, with their places, so that "Called by" and "Tested by" are not read as complete."""
    functions = graph.index.functions
    listed = ", ".join(
        f"{links.line_link(functions[s.caller], s.line, s.line)} {R.code(s.written)}" for s in sites if s.caller
    )
    count = R.count_words(len(sites), "call")
    return R.fold(
        f"{count} the code index could not resolve, and no run executed",
        f"{listed}: what they call is known neither from the code nor from a run, so the lists above may "
        "miss callers or tests",
    )


def coverage_row(ran: list[str], links: Links) -> str:
    """The facts row of the tests that ran the entry's lines (``ran``), folded; nothing when none did."""
    if not ran:
        return ""
    return f"<tr><td>{COVERAGE_ROW}</td><td>{R.fold(R.count_words(len(ran), 'test'), links.test_names(ran))}</td></tr>"


def coverage_row_error(message: str) -> str:
    """The facts row when the coverage run failed: its message, in place of the tests."""
    return f"<tr><td>{COVERAGE_ROW}</td><td>{R.error_text(message)}</td></tr>"


def spec_refs(spec, links: Links, pdf_path: str, page: str, labels: list[str]) -> str:
    """'Section 4.3, Eq. 30, 31, p. 7', linked to the PDF (``pdf_path`` in the site) at that page."""
    from docs_hooks.read.spec import NOT_STATED, format_refs

    if not labels or spec is None:
        return NOT_STATED
    refs = spec.lookup_all(labels)
    pdf_url = links.relative_url(page, pdf_path)
    pages = sorted({r.page for r in refs})
    return R.link(R.esc(format_refs(refs)), f"{pdf_url}#page={pages[0]}", "the specification, " + ", ".join(labels))


def implemented_in(entry: EntryData, links: Links, github: bool) -> str:
    """The lines that compute each equation (role ``computes`` only), with a GitHub column when ``github``."""
    rows = []
    for eq, r, start, end, _text in computes_rows(entry, ("computes",)):
        fn = r.function
        span, words = (str(start), f"line {start}") if start == end else (f"{start}-{end}", f"lines {start}-{end}")
        rows.append(
            [
                eq_link(eq),
                role_words(eq),
                R.code(fn.display_path),
                R.code(fn.short_name),
                R.link(span, sources.target(fn.repo_path, start, end), f"{fn.display_path}, {words}"),
            ]
            + ([R.link(R.esc(f"GitHub: {fn.display_path}, {words}"), links.url(fn, start, end))] if github else [])
        )
    head = R.heading(3, "Implemented in", f"{entry.id}-implemented-in") + "\n"
    if not rows and entry.equations:
        return head + (
            "<p>No line of the code computes these equations: they are derived from the lines "
            "named above, or contrasted with them.</p>\n"
        )
    return (
        head + R.table(["Equation", "Role", "File", "Function", "Lines"] + (["GitHub"] if github else []), rows) + "\n"
    )

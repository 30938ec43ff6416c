"""The resolve stage for entries and equations: a page's ``trace-entry`` and ``trace-equation`` blocks
as plain data, each code reference resolved to one statement span of the code index.

Nothing here makes HTML or runs code. ``expand`` calls these as it walks a page;
the generated sections (``sections``) and the site-wide tables (``matrix``)
read the data they return.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from docs_hooks.base.errors import TraceError
from docs_hooks.read.blocks import Block, Markdown, Page, prose_lines, slug
from docs_hooks.read.spec import SpecIndex
from docs_hooks.resolve.anchors import Resolved
from docs_hooks.resolve.callgraph import CallGraph
from docs_hooks.resolve.codeindex import CodeIndex, Function
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.resolve.roles import DEFAULT_ROLE, ROLE_WORDS, computes_problem, symbol_names

CLOSES_ENTRY = re.compile(r"^#{1,2}\s")  # a heading of level 1 or 2 ends the entry above it


@dataclass
class EquationData:
    id: str
    number: int
    title: str
    tex: str
    resolved: list[Resolved]
    line: int
    role: str = DEFAULT_ROLE  # what its lines are to it: "computes", "derived" or "contrast" (see roles)


def role_words(eq: EquationData) -> str:
    """The equation's role in the words the tables show: 'Computes it', 'Derived from', 'Contrast, not in the code'."""
    return ROLE_WORDS[eq.role]


@dataclass
class EntryData:
    """One entry of a page: what the generated sections and the site-wide tables need."""

    page: str
    id: str
    title: str
    status: str
    functions: list[Function]
    spec: list[str]
    line: int
    note: str = ""
    equations: list[EquationData] = field(default_factory=list)


@dataclass
class SiteEntries:
    """The entries of every page of the site, in build order, with each page's title: what the site-wide
    tables and the source pages read (every page is resolved before any is rendered)."""

    pages: dict[str, list[EntryData]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    version: int = 0  # moved on whenever what the site-wide tables read changes: a page's entries, or its title

    def set(self, page: str, entries: list[EntryData], title: str) -> None:
        """The entries and title of ``page``, as resolved now. A page with no entries changes no table."""
        before = (self.pages.get(page) or [], self.titles.get(page) if self.pages.get(page) else None)
        self.pages[page] = entries
        self.titles[page] = title
        if before != (entries, title if entries else None):
            self.version += 1

    def all(self) -> list[EntryData]:
        return [e for entries in self.pages.values() for e in entries]

    def digest(self) -> str:
        """A digest of what the site-wide tables read: each page's title and entries, the functions and
        statements they cite (by name and lines)."""
        import hashlib

        def fn(f: Function) -> tuple:
            return (f.name, f.repo_path, f.start, f.end)

        shown = [
            (
                page,
                self.titles.get(page),
                [
                    (
                        e.id,
                        e.title,
                        e.status,
                        [fn(f) for f in e.functions],
                        e.spec,
                        e.line,
                        e.note,
                        [
                            (q.id, q.number, q.title, q.role, [(fn(r.function), r.start, r.end) for r in q.resolved])
                            for q in e.equations
                        ],
                    )
                    for e in entries
                ],
            )
            for page, entries in self.pages.items()
        ]
        return hashlib.sha256(repr(shown).encode("utf-8", "surrogatepass")).hexdigest()


def read_entry(block: Block, page: str, index: CodeIndex, spec: SpecIndex | None, uses: list[LockEntry]) -> EntryData:
    """A ``trace-entry`` block as an entry: its functions found in the index, its spec labels looked up
    (``spec`` is a SpecIndex, or None when none is configured); each function goes into ``uses`` for the lock."""
    d = block.data
    functions = []
    for name in d["function"]:
        try:
            functions.append(index.function(name))
        except TraceError as err:
            raise TraceError(f"entry '{d['title']}': {err.message}") from None
    entry = EntryData(
        page=page,
        id=d.get("id") or slug(d["title"]),
        title=d["title"],
        status=d["status"],
        functions=functions,
        spec=list(d.get("spec", [])),
        line=block.line,
        note=d.get("note", ""),
    )
    if entry.spec:
        if spec is None:
            raise TraceError(
                f"entry '{entry.title}' cites {', '.join(entry.spec)}, "
                "but no specification is configured; set spec_source in [tool.docs_hooks]"
            )
        for label in entry.spec:
            spec.lookup(label)  # an unknown label fails here, at the entry's line
    for fn in functions:
        uses.append(LockEntry(page, f"entry {entry.id} | {fn.name}", fn.whole.text, fn.whole.digest, block.line))
    return entry


def read_equation(
    block: Block,
    entry: EntryData | None,
    # resolve(text, line, where); not Callable[[str, int, str], ...]: mypy infers no type for the lambda
    # core.page passes, whose fourth parameter is a default
    resolve: Callable[..., Resolved | None],
    seen_ids: dict[str, int],
    symbols: Callable[[], dict[str, list[str]] | None],
) -> EquationData:
    """A ``trace-equation`` block as the next equation of ``entry``, its references resolved by
    ``resolve(text, line, where)`` (None for one that failed: its problem is recorded there).

    ``seen_ids`` holds the page's equation ids so far (id -> line); ``symbols()`` gives the
    entry's trace-symbols names, which a computing equation's left-hand side must be one of.
    """
    if entry is None:
        raise TraceError("trace-equation outside an entry; put a trace-entry block above it")
    d = block.data
    if d["id"] in seen_ids:
        raise TraceError(
            f"equation id '{d['id']}' is already used on this page (line {seen_ids[d['id']]}); "
            "give each equation its own id",
            entry.page,
            block.field_line("id"),
        )
    seen_ids[d["id"]] = block.field_line("id")
    line = block.field_line("code")
    resolved = [r for r in (resolve(text, line, f"equation {d['id']}") for text in d["code"]) if r is not None]
    number = len(seen_ids)  # equations are numbered through the page
    eq = EquationData(d["id"], number, d["title"], d["tex"], resolved, block.line, d.get("role", DEFAULT_ROLE))
    entry.equations.append(eq)
    if eq.role == "computes" and len(resolved) == len(d["code"]):
        problem = computes_problem(eq.id, eq.tex, symbols(), [(r.label, "\n".join(r.lines)) for r in resolved])
        if problem:
            raise TraceError(problem, entry.page, block.line)
    return eq


def status_problem(entry: EntryData, graph: CallGraph) -> TraceError | None:
    """What an entry's status claims, against the call graph: an implemented function some test calls."""
    if entry.status == "implemented" and not graph.tested_by(entry.functions):
        return TraceError(
            f"entry '{entry.title}' is marked implemented, but no test calls "
            f"{', '.join(f.name for f in entry.functions)}; add a test or change its status",
            entry.page,
            entry.line,
        )
    return None


def entry_symbols(parsed: Page, entry: EntryData, block: Block) -> dict[str, list[str]] | None:
    """Symbol -> code names from the trace-symbols tables of the entry ``block`` sits in; None when it has none."""
    rows: list = []
    inside = False
    for seg in parsed.segments:
        if isinstance(seg, Markdown):
            lines = seg.text.split("\n")
            if inside and any(CLOSES_ENTRY.match(line) for _, line in prose_lines(lines)):
                if seg.line > block.line:
                    break
                inside = False
            continue
        if seg.kind == "entry":
            if seg.line > block.line:
                break
            inside = seg.line == entry.line
        elif inside and seg.kind == "symbols" and isinstance(seg.data.get("rows"), list):
            rows.extend(seg.data["rows"])
    return symbol_names(rows) if rows else None


def split_at_headings(seg: Markdown) -> list[tuple[str, int, bool]]:
    """Split Markdown before each heading of level 1 or 2 (outside code fences): (text, first line, starts a heading).

    A heading of level 1 or 2 closes the entry above it."""
    chunks: list[tuple[str, int, bool]] = []
    current: list[str] = []
    start, starts_heading = seg.line, False
    lines = seg.text.split("\n")
    headings = {i for i, line in prose_lines(lines) if CLOSES_ENTRY.match(line)}
    for i, line in enumerate(lines):
        if i in headings:
            if current:
                chunks.append(("\n".join(current), start, starts_heading))
            current, start, starts_heading = [], seg.line + i, True
        current.append(line)
    if current:
        chunks.append(("\n".join(current), start, starts_heading))
    return chunks

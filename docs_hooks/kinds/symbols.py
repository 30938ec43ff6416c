"""``trace-symbols``: what each symbol of an entry is in the code, and the shape the model run gave it.

Each row names a local of the entry's function (or of the block's ``function:``),
several locals ``a, b``, an expression copied from the function, or ``none``
when the code does not name the symbol. Resolving checks everything that needs
no run: each name is a local, each expression is in the code, and the value a
row means is one the recording holds (on entry, on return, or after the
statement named by ``after``). Rendering reads the model run (``kinds.modelrun``):
shapes written in the config's symbols, ``(T, d)``, and with its numbers, ``(16, 32)``.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Project, Rendered, Scope, byte_lines, source_segment
from docs_hooks.kinds.modelrun import Desc, Evidence, ModelRun, block_functions, model_requests, model_run, requests_of
from docs_hooks.read.blocks import Block
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.read.formulas import symbol_math
from docs_hooks.render import html as R
from docs_hooks.render.links import Links
from docs_hooks.resolve.assignments import (
    ENTRY,
    RETURN,
    Assignments,
    after_statement,
    bound_twice,
    changed_later,
    read_paths,
    unseen,
)
from docs_hooks.resolve.codeindex import Function, did_you_mean, normalise_tokens
from docs_hooks.run.request import Request
from docs_hooks.run.results import Results

ROW_KEYS = ("symbol", "meaning", "code", "shape", "after")
NAMES = re.compile(r"^\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*$")


@dataclass(frozen=True)
class SymbolRow:
    symbol: str
    meaning: str
    code: str  # as written; "none" when the code does not name it
    # what its shape is taken from: ("names", ((function, name, which), ...)), ("expression", (function, expr,
    # ((name, which), ...))), ("scalar", None) or ("none", None): not recorded. ``which`` is the recording of the
    # call that holds the value the row means: ENTRY (the arguments) or RETURN (the locals), see
    # resolve.assignments
    shape: tuple[str, Any]
    # where the row's value is taken, when the name alone does not say: ("after", function, start, end) of the
    # statement it follows, ("entry",) for an argument the function reassigns later; else None
    note: tuple | None = None


@dataclass(frozen=True)
class SymbolsPlan:
    functions: tuple[Function, ...]
    rows: tuple[SymbolRow, ...]
    requests: dict
    project: Project

    @property
    def reads_the_run(self) -> bool:
        return any(row.shape[0] in ("names", "expression") for row in self.rows)


class SymbolsKind:
    name = "symbols"
    spec = BLOCK_KINDS["symbols"]

    def resolve(self, block: Block, scope: Scope) -> SymbolsPlan:
        functions = block_functions(block, scope, "trace-symbols")
        seen = {fn.name: scope.project.assignments(fn) for fn in functions}
        rows = []
        for number, row in enumerate(block.data["rows"], 1):
            unknown = [k for k in row if k not in ROW_KEYS]
            if unknown:
                raise TraceError(
                    f"row {number} of trace-symbols has the unknown key '{unknown[0]}'"
                    f"{did_you_mean(str(unknown[0]), ROW_KEYS)}; a row has: {', '.join(ROW_KEYS)}"
                )
            for key in ("symbol", "meaning", "code"):
                if key not in row or row[key] is None or str(row[key]).strip() == "":
                    hint = (
                        " (a local name of the function, or 'none' when the code does not name it)"
                        if key == "code"
                        else ""
                    )
                    raise TraceError(f"row {number} of trace-symbols has no '{key}'{hint}")
            symbol, meaning, code = str(row["symbol"]), str(row["meaning"]), str(row["code"]).strip()
            note: tuple | None = None  # as SymbolRow.note
            after = str(row["after"]).strip() if row.get("after") is not None else None
            if after is not None and not NAMES.match(code):
                raise TraceError(
                    f"row {number} of trace-symbols ({symbol}) has 'after', which shows a local as it is after a "
                    f"statement, but '{code}' is no local name; write the name in 'code'"
                )
            if code.lower() == "none":
                spec = str(row["shape"]).strip() if row.get("shape") is not None else None
                if spec is None:
                    shape: tuple[str, Any] = ("none", None)
                elif spec.lower() == "scalar":
                    shape = ("scalar", None)
                else:
                    shape = ("expression", _expression_in(functions, spec, symbol, seen))
            else:
                if row.get("shape") is not None:
                    raise TraceError(
                        f"row {number} of trace-symbols ({symbol}) has both code and shape; the shape of a named "
                        "value is recorded, so remove 'shape'"
                    )
                if NAMES.match(code):
                    names = [n.strip() for n in code.split(",")]
                    statement = None
                    if after is not None:
                        fn = _owner(functions, names[0], symbol)
                        try:
                            found = after_statement(
                                scope.refs, fn.name, after, block.field_line("rows"), f"symbols {symbol}"
                            )
                        except TraceError as err:
                            raise TraceError(f"symbol '{symbol}': after: {err.message}") from None
                        statement = (fn, found.start, found.end)
                        note = ("after", *statement)
                    named = tuple(_named(functions, n, symbol, statement, seen) for n in names)
                    if statement is None and any(_reassigned(seen, fn, n, which) for fn, n, which in named):
                        note = ("entry",)
                    shape = ("names", named)
                else:
                    shape = ("expression", _expression_in(functions, code, symbol, seen))
            rows.append(SymbolRow(symbol, meaning, code, shape, note))
        return SymbolsPlan(tuple(functions), tuple(rows), model_requests(scope.project.settings), scope.project)

    def needs(self, plan: SymbolsPlan, done: Mapping) -> list[Request]:
        return requests_of(plan.requests) if plan.reads_the_run else []

    def render(self, plan: SymbolsPlan, results: Results, links: Links) -> Rendered:
        # the model run is made once per build (model_run), and asked for only by the rows that read it
        ev = Evidence(plan.project, results, links, plan.requests)
        rows = []
        for row in plan.rows:
            kind, what = row.shape
            if kind == "none":
                shape_html = "not recorded"
            elif kind == "scalar":
                shape_html = "scalar"
            elif kind == "expression":
                run = model_run(ev)
                fn, expr, reads = what
                shape_html = _shape_html([_evaluate(run, fn, expr, row.symbol, reads)])
            else:
                run = model_run(ev)
                shape_html = _shape_html([_local_desc(run, fn, name, which) for fn, name, which in what])
            code_html = "not named in the code" if row.code.lower() == "none" else R.code(row.code)
            if row.note is not None and row.note[0] == "after":
                code_html += " after " + links.line_link(*row.note[1:])
            elif row.note is not None:
                code_html += ", on entry"
            rows.append([symbol_math(row.symbol), R.esc(row.meaning), code_html, shape_html])
        if plan.reads_the_run and all(model_run(ev).first_calls(fn.name) is None for fn in plan.functions):
            # Nothing to show in a Shape column: say why once, instead of on every row.
            names = " or ".join(R.code(fn.name) for fn in plan.functions)
            note = (
                f'<p class="trace-note">The model run does not call {names}, so no shape is recorded '
                "for these symbols; the worked example shows their values.</p>"
            )
            table = R.table(["Symbol", "Meaning", "In code"], [r[:3] for r in rows], "trace-table trace-symbols")
            return Rendered(table + "\n" + note + "\n")
        return Rendered(R.table(["Symbol", "Meaning", "In code", "Shape"], rows, "trace-table trace-symbols") + "\n")


def _owner(functions: list[Function], name: str, symbol: str) -> Function:
    for fn in functions:
        if name in fn.local_names:
            return fn
    where = " or ".join(f.name for f in functions)
    locals_ = sorted({n for f in functions for n in f.local_names})
    raise TraceError(
        f"symbol '{symbol}': '{name}' is not a local name of {where}{did_you_mean(name, locals_)}; "
        f"its locals are: {', '.join(locals_)}. Write the name the code uses, or 'none' when the code does not name it"
    )


def _named(
    functions: list[Function], name: str, symbol: str, statement: tuple | None, seen: dict
) -> tuple[Function, str, str]:
    """A row's name, its function and the recording that holds the value the row means: an argument on entry,
    a name bound once on return, a name shown after a ``statement`` (function, start, end) as it leaves it."""
    fn = _owner(functions, name, symbol)
    found: Assignments | None = seen.get(fn.name)
    if found is None:
        return fn, name, RETURN
    if statement is not None:
        if statement[0] is not fn:
            raise TraceError(f"symbol '{symbol}': '{name}' is a local of {fn.name}, not of {statement[0].name}")
        which = found.after([name], statement[1])
        if isinstance(which, tuple):
            raise TraceError(f"symbol '{symbol}': " + changed_later(*which, statement[1], fn.display_path, found))
        return fn, name, which[name]
    bare = found.bare(name)
    if isinstance(bare, tuple):
        raise TraceError(f"symbol '{symbol}': " + bound_twice(name, bare, fn.display_path, found))
    return fn, name, bare


def _reassigned(seen: dict, fn: Function, name: str, which: str) -> bool:
    """Whether a name shown on entry is one the function changes later (the page then says "on entry")."""
    found = seen.get(fn.name)
    return which == ENTRY and found is not None and bool(found.of(name))


def _local_desc(run: ModelRun, fn: Function, name: str, which: str = RETURN) -> Desc | None:
    """The shape of ``name`` in the model run's first call of ``fn``: on entry (``which`` is ENTRY: an argument)
    or on return."""
    calls = run.first_calls(fn.name)
    if calls is None:
        return None
    real, probe = (c.args if which == ENTRY else c.locals for c in calls)
    if name not in real or name not in probe:
        return None  # assigned on a path the run did not take
    return run.dims.describe(real[name], probe[name])


def _expression_in(
    functions: list[Function], text: str, symbol: str, seen: dict | None = None
) -> tuple[Function, str, tuple[tuple[str, str], ...]]:
    """The full expression of the code that ``text`` stands for, its function, and for each local it reads the
    recording that holds what its line read (refused where neither does).

    ``text`` is an expression of the function's source (``(dXhat * Xhat).mean(axis=-1)``), or its
    tail starting with a dot (``.mean(axis=-1, keepdims=True)``): then the first expression of the
    source that ends with it.
    """
    want = normalise_tokens(text)
    suffix = text.strip().startswith(".")
    for fn in functions:
        src = textwrap.dedent("\n".join(fn.source_lines))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        found = []
        src_lines = byte_lines(src)
        for node in ast.walk(tree):
            if not isinstance(node, ast.expr):
                continue
            seg = source_segment(src_lines, node)
            if not seg:
                continue
            have = normalise_tokens(seg)
            postfix = isinstance(node, (ast.Call, ast.Attribute, ast.Subscript))  # `x.mean(...)`, not `a - x.mean(...)`
            if have == want or (suffix and postfix and have.endswith(want)):
                stored = isinstance(getattr(node, "ctx", None), ast.Store)  # a target: what the statement left
                found.append((node.lineno, node.col_offset, seg, stored))
        if found:
            line, _, seg, stored = sorted(found)[0]
            return fn, seg, _reads(fn, seg, fn.start + line - 1, stored, symbol, (seen or {}).get(fn.name))
    where = " or ".join(f.name for f in functions)
    raise TraceError(
        f"symbol '{symbol}': '{text.strip()}' is neither a local name nor an expression in the code of {where}; "
        "write a local name, an expression copied from the function, or 'none'"
    )


def _reads(
    fn: Function, expr: str, line: int, stored: bool, symbol: str, found: Assignments | None
) -> tuple[tuple[str, str], ...]:
    """For each local ``expr`` reads at ``line``, the recording that holds what it read there; for an
    expression the statement assigns (``stored``: ``self.m[k]`` in ``self.m[k] = ...``), what it left."""
    paths = [p for p in read_paths(ast.parse(expr.strip(), mode="eval")) if p.split(".")[0] in fn.local_names]
    if found is None or not paths:
        return ()
    which = found.after(paths, line) if stored else found.read_at(paths, line)
    if isinstance(which, tuple):
        start = found.start_of(line)
        why = (
            changed_later(*which, start, fn.display_path, found)
            if stored
            else unseen(*which, start, expr, fn.display_path, found)
        )
        raise TraceError(f"symbol '{symbol}': {why}")
    return tuple(which.items())


def _evaluate(run: ModelRun, fn: Function, expr: str, symbol: str, reads=()) -> Desc | None:
    import numpy as np

    calls = run.first_calls(fn.name)
    if calls is None:
        return None
    values = []
    for call in calls:
        names = {"np": np, "numpy": np}
        names.update(call.locals)
        names.update({n: call.args[n] for n, which in reads if which == ENTRY and n in call.args})
        try:
            values.append(eval(compile(expr, "<symbol>", "eval"), names))  # code copied from the function itself
        except Exception as exc:
            raise TraceError(
                f"symbol '{symbol}': cannot evaluate '{expr}' on the recorded locals of {fn.name}: "
                f"{type(exc).__name__}: {exc}; use an expression of the function's locals and numpy"
            ) from None
    return run.dims.describe(values[0], values[1])


def _shape_html(found: list[Desc | None]) -> str:
    descs = [d for d in found if d is not None]
    if len(descs) < len(found):
        return "not reached by the model run"
    if all(d.kind == "scalar" for d in descs):
        return "scalar"
    symbolic = " and ".join(d.symbolic() for d in descs)
    concrete = " and ".join(d.concrete() for d in descs)
    if symbolic == concrete:
        return R.code(symbolic)
    return f"{R.code(symbolic)} {R.code(concrete)}"

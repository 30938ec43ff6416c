"""``trace-symbols`` and ``trace-shapes``: what each symbol of an entry is in the code and the shape the model
run gave it, and the shapes at every call site of a function.

Both read the model run (``kinds.modelrun``): shapes written in the config's
symbols, ``(T, d)``, and with the config's numbers, ``(16, 32)``. Resolving checks
everything that needs no run: each row's name is a local of the entry's function
(or an expression copied from it), each call site and label exists.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Project, Rendered, Scope, byte_lines, last_line, source_segment
from docs_hooks.kinds.modelrun import Desc, Evidence, ModelRun, model_requests, model_run, requests_of
from docs_hooks.read.blocks import BLOCK_KINDS, Block
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
from docs_hooks.run.recording import Call, Recording
from docs_hooks.run.request import Request
from docs_hooks.run.results import Results

# ----------------------------------------------------------------------------- trace-symbols

ROW_KEYS = ("symbol", "meaning", "code", "shape", "after")
NAMES = re.compile(r"^\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*$")


def _functions(block: Block, scope: Scope, what: str) -> list[Function]:
    names = block.data.get("function")
    if names:
        return [scope.function(n) for n in names]
    if scope.entry is None:
        raise TraceError(
            f"{what} outside an entry; put it below a trace-entry block, or name the function with function:"
        )
    return list(scope.entry.functions)


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
        functions = _functions(block, scope, "trace-symbols")
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


# ----------------------------------------------------------------------------- trace-shapes


@dataclass(frozen=True)
class ShapesPlan:
    caption: str
    functions: tuple[Function, ...]
    labels: dict  # (caller, statement start) -> label
    requests: dict
    project: Project  # its code index: a call through __call__ is shown with the call it goes through


class ShapesKind:
    name = "shapes"
    spec = BLOCK_KINDS["shapes"]

    def resolve(self, block: Block, scope: Scope) -> ShapesPlan:
        functions = _functions(block, scope, "trace-shapes")
        labels = _labels(block, scope)
        return ShapesPlan(
            block.data.get("caption") or "",
            tuple(functions),
            labels,
            model_requests(scope.project.settings),
            scope.project,
        )

    def needs(self, plan: ShapesPlan, done: Mapping) -> list[Request]:
        return requests_of(plan.requests)

    def render(self, plan: ShapesPlan, results: Results, links: Links) -> Rendered:
        """The shapes at every call site of the functions in the code, as written or seen at run time."""
        index = plan.project.index
        found = []
        for fn in plan.functions:
            for site in results.graph.sites_to(fn.name):
                caller = index.functions[site.caller]
                if not caller.is_test:
                    found.append((caller.repo_path, site.statement.start, site.line, fn, site, caller))
        names = ", ".join(f.name for f in plan.functions)
        if not found:
            raise TraceError(
                f"nothing in the source calls {names}, and no run saw a call of it, so there are no call sites "
                "to show; remove the trace-shapes block"
            )
        starts = {(caller.name, site.statement.start) for *_, site, caller in found}
        for key, text in plan.labels.items():
            if key not in starts:
                raise TraceError(
                    f"the label '{text}' names a statement of {key[0]} that calls none of {names}; "
                    "point its ref at a call site"
                )
        ev = Evidence(plan.project, results, links, plan.requests)
        run = model_run(ev)
        out = [f"<p>{R.esc(plan.caption)}</p>"] if plan.caption else []
        for *_, fn, site, caller in sorted(found, key=lambda s: s[:3]):
            data = site_shapes(index, run, fn, site, caller, _calls_by_line(ev, caller))
            label = plan.labels.get((caller.name, site.statement.start))
            out.append(_render_site(links, run, data, fn, label))
        return Rendered("\n".join(out) + "\n")


def _labels(block: Block, scope: Scope) -> dict[tuple[str, int], str]:
    out = {}
    for number, item in enumerate(block.data.get("names") or [], 1):
        if set(item) - {"ref", "label"} or "ref" not in item or "label" not in item:
            raise TraceError(
                f"item {number} of 'names' in trace-shapes must have exactly ref (module.function: statement text) "
                "and label"
            )
        resolved = scope.resolve(str(item["ref"]), block.field_line("names"), f"shapes label {item['label']}")
        if resolved is None:
            continue  # the problem is recorded with the page's
        start = resolved.statement.start if resolved.statement else resolved.function.start
        out[(resolved.function.name, start)] = str(item["label"])
    return out


@dataclass
class SiteShapes:
    caller: Function
    start: int
    end: int
    line: int
    reached: bool
    values: list[tuple[str, str, Desc]]  # (name in the caller, "input" / "output", shape)


def _calls_by_line(ev: Evidence, fn: Function) -> dict[int, list[tuple[ast.stmt, ast.Call]]]:
    """Every call in the module of ``fn``, by its line, with each statement that holds it (once per build)."""

    def calls() -> dict[int, list[tuple[ast.stmt, ast.Call]]]:
        found: dict[int, list[tuple[ast.stmt, ast.Call]]] = {}
        for node in ast.walk(ev.tree(fn.file)):
            if isinstance(node, ast.stmt):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        found.setdefault(sub.lineno, []).append((node, sub))
        return found

    return ev.once(f"calls by line of {fn.file}", calls)


def site_shapes(
    index, run: ModelRun, callee: Function, site, caller: Function, calls: dict[int, list[tuple[ast.stmt, ast.Call]]]
) -> SiteShapes:
    """The inputs and outputs of one call site, with their recorded shapes (``calls``: every call of the
    caller's module by its line, see ``_calls_by_line``).

    Every argument the recording holds is an input, named by the expression
    written at the call site (``x``, ``self.W``, ``params["w"]``, ``cfg.eps``). The
    result is an output: each name it is assigned or unpacked to (``out, cache``),
    an attribute or item it is stored in (``self.cache``), or, returned or used
    inside an expression, the call itself (``self.down(…)``). A call of an
    instance (``self.norm(X)`` reaching ``LayerNorm.forward`` through
    ``__call__``) shows what the call itself was given and returned: the
    recorded call of the ``__call__`` it goes through.
    """
    through = index.functions.get(site.via) if getattr(site, "via", "") else None
    if through is not None:
        callee, short = through, site.written
    else:
        short = callee.short_name if callee.short_name != "__init__" else callee.name.split(".")[-2]
    call, stmt = None, None
    for node, sub in calls.get(site.line, ()):  # the innermost statement wins
        if _func_name(sub.func) == short:
            if stmt is None or (last_line(node) - node.lineno) <= (last_line(stmt) - stmt.lineno):
                call, stmt = sub, node
    recorded = _recorded_call(run, callee, caller, site)
    data = SiteShapes(caller, site.statement.start, site.statement.end, site.line, recorded is not None, [])
    if call is None or recorded is None:
        return data
    real, probe = recorded
    written = _Written(caller)
    for text, param in _arguments(call, callee, written):
        if param in real.args and param in probe.args:
            data.values.append((text, "input", run.dims.describe(real.args[param], probe.args[param])))
    if real.result is None:
        return data  # the function returns nothing
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is call:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            _unpack(target, real.result, probe.result, run, data, written)
    else:  # returned, or used inside an expression: the call stands for its result
        head = written(call.func)
        name = f"{head}(…)" if call.args or call.keywords else f"{head}()"
        data.values.append((name, "output", run.dims.describe(real.result, probe.result)))
    return data


class _Written:
    """The code of an expression as the caller's source has it, on one line (``params["w"]``, not the
    ``params['w']`` that ``ast.unparse`` would make of it)."""

    def __init__(self, caller: Function):
        self.start = caller.start
        self.lines = [line.encode() for line in caller.source_lines]  # ast columns count UTF-8 bytes

    def __call__(self, node: ast.expr) -> str:
        first, last = node.lineno - self.start, last_line(node) - self.start
        if not (0 <= first <= last < len(self.lines)):
            return ast.unparse(node)
        if first == last:
            text = self.lines[first][node.col_offset : node.end_col_offset]
        else:
            chunk = [self.lines[first][node.col_offset :], *self.lines[first + 1 : last]]
            text = b"\n".join([*chunk, self.lines[last][: node.end_col_offset]])
        return re.sub(r"\s*\n\s*", " ", text.decode())


def _positional(fn: Function) -> list[str]:
    """The parameters of ``fn`` an argument can fill by its place (``self`` or ``cls`` of a method left
    out), from its own ``def``: not its keyword-only ones."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(fn.source_lines)))
        node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        names = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    except (SyntaxError, StopIteration):
        names = list(fn.params)
    method = fn.short_name == "__init__" or "." in fn.name[len(fn.module) + 1 :]
    return names[1:] if method and names and names[0] in ("self", "cls") else names


def _arguments(call: ast.Call, callee: Function, written: _Written):
    """(the expression as written, the parameter it fills) for each argument of ``call`` whose parameter
    is known: not those after a ``*xs`` spread or beyond the named parameters (gathered by ``*args``),
    nor ``**kw`` spreads."""
    positional = _positional(callee)
    for arg, param in zip(call.args, positional):
        if isinstance(arg, ast.Starred):
            break
        yield written(arg), param
    for kw in call.keywords:
        if kw.arg is not None:
            yield written(kw.value), kw.arg


def _func_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _unpack(target: ast.expr, real: Any, probe: Any, run: ModelRun, data: SiteShapes, written: _Written) -> None:
    """The value assigned to ``target``: a name, or unpacked into a tuple or list of targets (one of them
    starred) when the recorded value has as many items; else the whole value, named by the target as written."""
    if isinstance(target, (ast.Tuple, ast.List)):
        starred = [(i, e) for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        n = len(target.elts)
        if isinstance(real, (tuple, list)) and isinstance(probe, (tuple, list)) and len(real) == len(probe):
            if not starred and len(real) == n:
                for elt, r, p in zip(target.elts, real, probe):
                    _unpack(elt, r, p, run, data, written)
                return
            if len(starred) == 1 and len(real) >= n - 1:
                at, star = starred[0]
                after = n - at - 1
                for elt, r, p in zip(target.elts[:at], real, probe):
                    _unpack(elt, r, p, run, data, written)
                rest = slice(at, len(real) - after)
                _unpack(star.value, list(real[rest]), list(probe[rest]), run, data, written)
                tail = target.elts[at + 1 :]
                for elt, r, p in zip(tail, real[len(real) - after :], probe[len(probe) - after :]):
                    _unpack(elt, r, p, run, data, written)
                return
    data.values.append((written(target), "output", run.dims.describe(real, probe)))


def _recorded_call(run: ModelRun, callee: Function, caller: Function, site):
    def pick(rec: Recording) -> Call | None:
        calls = [
            c
            for c in rec.calls_of(callee.name)
            if c.caller == caller.name and site.statement.start <= c.caller_line <= site.statement.end
        ]
        found = [c for c in calls if c.caller_line == site.line] or calls
        return found[0] if found else None

    real, probe = pick(run.real), pick(run.probe)
    return None if real is None or probe is None else (real, probe)


def _render_site(links: Links, run: ModelRun, data: SiteShapes, callee: Function, label: str | None) -> str:
    link = links.line_link(data.caller, data.start, data.end)
    if label:
        head = f'<p class="trace-shapes-site"><strong>{R.esc(label)}</strong> {link} in {R.code(data.caller.name)}</p>'
    else:
        head = f'<p class="trace-shapes-site"><strong>{R.code(data.caller.name)}</strong> {link}</p>'
    if not data.reached:
        return head + (
            f"\n<p>The model run ({R.code('run(config())')} in {R.code(run.helper)}) never reaches this call "
            "of " + R.code(callee.name) + ", so no shapes were recorded here.</p>"
        )
    if not data.values:
        return head + "\n<p>This call passes no argument and returns nothing.</p>"
    rows = [
        [
            R.code(name),
            role,
            R.code(d.symbolic()) if d.kind != "scalar" else "scalar",
            R.code(d.concrete()) if d.kind != "scalar" else "scalar",
        ]
        for name, role, d in data.values
    ]
    keys: list[str] = []
    for _, _, d in data.values:
        for k in d.symbol_keys():
            if k not in keys:
                keys.append(k)
    legend = run.dims.legend(keys)
    out = head + "\n" + R.table(["Name", "Role", "Shape", "With config"], rows, "trace-table trace-shapes")
    if legend:
        out += f'\n<p class="trace-shapes-legend">{R.esc(legend)}</p>'
    return out

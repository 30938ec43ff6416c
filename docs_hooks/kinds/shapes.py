"""``trace-shapes``: the shapes at every call site of a function, from the model run.

At each call of the entry's function (or of the block's ``function:``) in the
code, the arguments as written there and what the result is assigned to, each
with its recorded shape, written in the config's symbols, ``(T, d)``, and with
the config's numbers, ``(16, 32)`` (``kinds.modelrun``). Resolving checks what
needs no run: each label's ``ref`` resolves to a statement of the code.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Project, Rendered, Scope, last_line
from docs_hooks.kinds.modelrun import Desc, Evidence, ModelRun, block_functions, model_requests, model_run, requests_of
from docs_hooks.read.blocks import Block
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import html as R
from docs_hooks.render.links import Links
from docs_hooks.resolve.codeindex import Function
from docs_hooks.run.recording import Call, Recording
from docs_hooks.run.request import Request
from docs_hooks.run.results import Results


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
        functions = block_functions(block, scope, "trace-shapes")
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
    return ev.once(f"calls by line of {fn.file}", _calls_by_line_of, ev, fn.file)


def _calls_by_line_of(ev: Evidence, path: Path) -> dict[int, list[tuple[ast.stmt, ast.Call]]]:
    return calls_by_line(ev.tree(path))


def calls_by_line(tree: ast.AST) -> dict[int, list[tuple[ast.stmt, ast.Call]]]:
    """Every call in ``tree``, by its line, with each statement that holds it: the statements in the order
    ``ast.walk`` meets them, and each one's calls in the order a walk of the statement meets them (which is the
    order of the walk of the whole tree). One walk of the tree, then each call's enclosing statements."""
    parent: dict[ast.AST, ast.AST] = {}
    statements: list[ast.stmt] = []
    held: dict[ast.stmt, list[ast.Call]] = {}  # each statement's calls
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
        if isinstance(node, ast.stmt):
            statements.append(node)
        elif isinstance(node, ast.Call):
            up: ast.AST | None = parent.get(node)
            while up is not None:
                if isinstance(up, ast.stmt):
                    held.setdefault(up, []).append(node)
                up = parent.get(up)
    found: dict[int, list[tuple[ast.stmt, ast.Call]]] = {}
    for stmt in statements:
        for call in held.get(stmt, ()):
            found.setdefault(call.lineno, []).append((stmt, call))
    return found


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

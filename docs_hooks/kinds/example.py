"""Tiny worked examples recorded from a real test run, and central-difference tables.

A ``trace-example`` block names a test. The build runs that test under the
recorder (in a child process), takes the first call of the entry's function and
shows the values it saw: locals by name, or expressions copied from the
function's statements, evaluated on the recorded locals. Nothing numeric is
typed into the page:

- ``check`` is an arithmetic line the author writes symbolically; the build
  fills in the recorded numbers and verifies that the line holds.
- ``gradcheck`` names the forward of a backward entry; the build measures the
  gradients with the project's own central-difference function (the
  ``numerical_grad`` setting, run in the child process) and compares them with
  what the backward returned: ``dX`` is the gradient of the forward's ``X``,
  and a returned dictionary holds gradients of the entries, by key, of the
  forward's dictionary argument that has all those keys (``params``).
- ``widget`` adds the recorded inputs and outputs as JSON for a browser widget.

Resolving checks what needs no run (the test and the function exist, each shown
expression is a statement of the function); ``collect`` reads the recording into
plain data, and ``render_example`` is a pure function of it.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import json
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, SupportsFloat

if TYPE_CHECKING:  # numpy is imported in the functions that use it: `check` uses none (bench/README.md, "check")
    import numpy as np

from collections.abc import Callable, Mapping

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Rendered, Scope
from docs_hooks.read.blocks import BLOCK_KINDS, Block, slug
from docs_hooks.render import html as R
from docs_hooks.render.links import Links
from docs_hooks.resolve.assignments import (
    ENTRY,
    RETURN,
    Assignments,
    after_statement,
    bound_twice,
    changed_later,
    function_node,
    read_paths,
    unseen,
)
from docs_hooks.resolve.codeindex import Function, Statement, normalise_tokens, tokens_contain
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.run.record import Request, test_request
from docs_hooks.run.recording import Call, Capped, Opaque, Recording
from docs_hooks.run.results import Need, Results

GAP_LIMIT = 1e-6  # the largest central-difference gap a correct backward may show
CHECK_RTOL = 1e-6  # relative tolerance of a check line
CHECK_ATOL = 1e-12  # absolute tolerance of a check line, for entries that are 0
SHOW_KEYS = ("label", "code", "name", "after")
CENTRAL_DIFFERENCES = "central_differences"  # the function of this module run in the child


# ============================================================================ data


@dataclass
class Row:
    label: str
    code: str
    value: Any
    name: str | None = None  # what ``check`` calls it
    statement: Statement | None = None  # where the expression occurs (None for a plain local)
    where: str = ""  # HTML after the code, when the name alone does not say which value: "after ops.py:42"


@dataclass
class CheckLine:
    lhs: str  # as written, e.g. ``dX[0, 0]``
    filled: str  # the right-hand side with each leaf replaced by its rounded value
    lhs_value: float
    rhs_value: float


@dataclass
class GradRow:
    name: str  # the backward's output name, e.g. ``dX``
    input: str  # the forward's parameter it is the gradient of, e.g. ``X``
    backward: np.ndarray
    numeric: np.ndarray
    gap: float


@dataclass
class GradCheck:
    forward: str  # dotted name
    backward: str
    numerical_grad: str
    numerical_grad_url: str
    call_args: str  # how numerical_grad was called, e.g. ``h=1e-05``
    rows: list[GradRow]


@dataclass
class Example:
    title: str
    caption: str
    test: str  # the node id
    test_name: str  # short name, e.g. ``test_layer_norm_worked_example``
    test_url: str
    function: str
    rows: list[Row]
    check: CheckLine | None = None
    gradcheck: GradCheck | None = None
    widget: dict | None = None  # the recorded inputs and outputs


# ============================================================================ the kind


@dataclass(frozen=True)
class ShowPlan:
    """One show row, resolved: what it reads, and from which recording of the call (see resolve.assignments)."""

    label: str
    code: str
    name: str | None  # what ``check`` calls it
    reads: tuple[tuple[str, str], ...]  # (name, ENTRY or RETURN) for each local it reads
    tree: ast.Expression | None = None  # the expression to evaluate on them; None: the value of its one name
    statement: Statement | None = None  # where the expression is computed, or the statement it is shown after
    when: str = ""  # "after" (shown after ``statement``), "entry" (an argument the function changes later), or ""


@dataclass(frozen=True)
class ExamplePlan:
    """What an example names, resolved: the function shown, its test and the request that records it, and
    for a gradient check the forward and the project's central-difference function."""

    page: str
    block: Block
    function: Function
    test: Function
    request: Request
    forward: Function | None = None  # gradcheck: the forward of this backward
    numerical_grad: Function | None = None
    rows: tuple[ShowPlan, ...] = ()
    seen: Assignments | None = None  # where the function assigns its names: which recording holds each
    returned: Any = None  # gradcheck: the names the backward returns (nested as written), None when not names

    def fail(self, message: str, field_name: str | None = None) -> TraceError:
        """The example's error, at that field's line."""
        line = self.block.field_line(field_name) if field_name else self.block.line
        return TraceError(f"example '{self.block.data['title']}': {message}", self.page, line)


class ExampleKind:
    name = "example"
    spec = BLOCK_KINDS["example"]

    def resolve(self, block: Block, scope: Scope) -> ExamplePlan:
        """The test and the function exist, each shown expression is one statement of the function (locked
        like any other reference), a gradient check names functions that exist; nothing runs."""
        d = block.data
        plan = ExamplePlan(scope.page, block, None, None, None)  # type: ignore[arg-type]  # for its fail()
        fail = plan.fail
        if scope.entry is None:
            raise fail("trace-example outside an entry; put a trace-entry block above it")
        index = scope.project.index
        try:
            fn = index.function(d["function"]) if "function" in d else scope.entry.functions[0]
        except TraceError as err:
            raise fail(err.message, "function") from None
        try:
            req = test_request(d["test"], scope.project.settings.project_root)
        except TraceError as err:
            raise fail(err.message, "test") from None
        test_fn = _test_function(index, req, fail)
        scope.refs.cite(test_fn.repo_path)  # the example links its test
        seen = scope.project.assignments(fn)
        rows = tuple(_show_plan(i, item, fn, seen, scope, plan) for i, item in enumerate(d["show"]))
        forward = ng = returned = None
        if "gradcheck" in d:
            forward, ng = _gradcheck_functions(scope, d["gradcheck"], lambda m: fail(m, "gradcheck"))
            returned = _returned_names(scope.project.tree(fn.file), fn)
        kernels = scope.project.widget_kernels
        if d.get("widget") and kernels is not None and fn.name not in kernels:
            scope.refs.problems.append(
                fail(
                    f"widget: no browser kernel registers {fn.name}, so its inputs cannot be edited on the page; add "
                    f"one to a script listed in mkdocs.yml's extra_javascript (see trace-widgets.js: "
                    f"register(\"{fn.name}\", ...)), or remove 'widget: true'",
                    "widget",
                )
            )
        request = _example_request(req, fn.name, d)
        return ExamplePlan(scope.page, block, fn, test_fn, request, forward, ng, rows, seen, returned)

    def needs(self, plan: ExamplePlan, done: Mapping[Request, Recording | TraceError]) -> list[Need]:
        """The test's recording; once it is in, the central differences of a gradient check."""
        rec = done.get(plan.request)
        if plan.forward is None or not isinstance(rec, Recording):
            return [plan.request]
        try:
            *_, central = _central_plan(plan, rec.first(plan.function.name), rec, TraceError)
        except TraceError:
            return [plan.request]  # the page reports it where it is written
        return [plan.request, central]

    def render(self, plan: ExamplePlan, results: Results, links: Links) -> Rendered:
        ex, problems = collect(plan, results, links)
        return Rendered(render_example(ex), tuple(problems))


def collect(plan: ExamplePlan, results: Results, links: Links) -> tuple[Example, list[TraceError]]:
    """Read the test's recorded call and compute everything the example shows; the problems that leave it
    shown (a widget that cannot be offered)."""
    d = plan.block.data
    fn, req, test_fn, fail = plan.function, plan.request, plan.test, plan.fail
    try:
        rec = results.recording(req)
        call = rec.first(fn.name)
    except TraceError as err:
        raise fail(err.message, "test") from None

    where = f"the first call of {fn.name} in {req.name}"
    rows = [_show_row(row, fn, call, where, fail) for row in plan.rows]
    for row, shown in zip(plan.rows, rows):
        statement = row.statement
        if row.when == "after" and statement is not None:  # an "after" row always has the statement it follows
            shown.where = " after " + links.line_link(fn, statement.start, statement.end)
        elif row.when == "entry":
            shown.where = ", on entry"
    ex = Example(
        title=d["title"],
        caption=d.get("caption", ""),
        test=req.name,
        test_name=test_fn.short_name,
        test_url=links.url(test_fn, test_fn.start, test_fn.end),
        function=fn.name,
        rows=rows,
    )
    problems = []
    if "check" in d:
        ex.check = _check_line(d["check"], call, rows, where, lambda m: fail(m, "check"), fn, plan.seen)
    if plan.forward is not None:
        ex.gradcheck = _gradcheck(plan, call, rec, results, links, lambda m: fail(m, "gradcheck"))
    too_large = {k: n for k, n in ((k, _entries(v)) for k, v in call.args.items()) if n > WIDGET_MAX_ENTRIES}
    if d.get("widget") and too_large:  # the example is shown, as recorded, without the widget
        name, n = next(iter(too_large.items()))
        problems.append(
            fail(
                f"widget: input '{name}' of {fn.name} holds {n} numbers, more than the "
                f"{WIDGET_MAX_ENTRIES} a widget recomputes in the browser; remove 'widget: true' "
                f"or record a test with smaller inputs",
                "widget",
            )
        )
    elif d.get("widget"):
        ex.widget = {
            "test": req.name,
            "function": fn.name,
            "inputs": dict(call.args),
            "outputs": call.result,
            # what the browser recomputes: each shown row (in table order) and the check line
            "rows": [{"code": r.code, "name": r.name, "value": r.value} for r in rows],
            "check": d.get("check"),
        }
    return ex, problems


def _lock_entry(page: str, block: Block, fn: Function, code: str, statement: Statement) -> LockEntry:
    """A shown expression points at a statement: it is locked like any other reference."""
    key = f"example {block.data['title']} | {fn.name}: {code}"
    return LockEntry(page, key, statement.text, statement.digest, block.field_line("show"))


#: The most numbers a widget's inputs may hold (trace-widgets.js refuses more, with the same limit).
WIDGET_MAX_ENTRIES = 10_000


def _entries(value: Any) -> int:
    """How many numbers a recorded value holds (a summary of a large one counts its full size)."""

    import numpy as np

    if isinstance(value, (np.ndarray, Capped)):
        return int(value.size)
    if isinstance(value, (list, tuple)):
        return sum(_entries(v) for v in value)
    if isinstance(value, dict):
        return sum(_entries(v) for v in value.values())
    return 1


def _test_name(req: Request) -> str:
    """The index's name of the test a request runs."""
    return f"{req.module}.{req.function.replace('::', '.')}"


def _example_request(req: Request, shown: str | None, data: dict) -> Request:
    """The request an example records: the test's own call only, when that is all the example shows.

    An example whose function is the test itself (its rows are the test's locals)
    and that has no central differences (which need the calls inside) needs no
    call below the test recorded; the test then runs untraced, at full speed.
    The prefetch and the page ask for the same request, so the page finds it recorded.
    """
    return replace(req, target_only=shown == _test_name(req) and "gradcheck" not in data)


def _test_function(index, req: Request, fail) -> Function:
    name = _test_name(req)
    fn = index.functions.get(name)
    if fn is None or not fn.is_test:
        path = req.name.partition("::")[0]
        wanted = req.function.replace(".", "::")
        tests = [
            f.name[len(req.module) + 1 :].replace(".", "::")
            for f in index.functions.values()
            if f.module == req.module and index.runs_as_test(f)
        ]
        close = difflib.get_close_matches(wanted, tests, n=3, cutoff=0.7)
        hint = ("; did you mean " + " or ".join(f"'{path}::{c}'" for c in close) + "?") if close else ""
        raise fail(f"no test '{wanted}' in {path}{hint}", "test")
    return fn


# ============================================================================ show rows


def _show_plan(i: int, item: dict, fn: Function, seen: Assignments | None, scope: Scope, plan) -> ShowPlan:
    """A show row's fields checked, its expression found in the function (and locked), and for each name it
    reads the recording that holds the value its line saw; refused where neither does."""
    fail = plan.fail
    unknown = [k for k in item if k not in SHOW_KEYS]
    if unknown:
        raise fail(f"show row {i + 1} has unknown key '{unknown[0]}'; a row has: label, code, name, after", "show")
    if not item.get("label") or not item.get("code"):
        raise fail(f"show row {i + 1} needs both 'label' and 'code'", "show")
    label, code = str(item["label"]), str(item["code"]).strip()
    name = item.get("name")
    if name is not None:
        name = str(name)
        if not name.isidentifier():
            raise fail(f"show row '{label}': name '{name}' is not a Python name", "show")
        if name in fn.local_names:
            raise fail(f"show row '{label}': name '{name}' is already a local of {fn.name}; choose another", "show")
    row_fail = lambda m: fail(f"show row '{label}': {m}", "show")  # noqa: E731
    is_name = code.isidentifier() and code in fn.local_names

    if item.get("after") is not None:
        if not is_name:
            raise row_fail(
                f"'after' shows a local of {fn.name} as it is after a statement, but '{code}' is none; "
                "write a local name in 'code'"
            )
        try:
            follows = after_statement(
                scope.refs,
                fn.name,
                str(item["after"]).strip(),
                plan.block.field_line("show"),
                f"example {plan.block.data['title']}",
            )
        except TraceError as err:
            raise row_fail(f"after: {err.message}") from None
        reads = _reads_after([code], follows.start, fn, seen, row_fail)
        return ShowPlan(label, code, name, reads, None, follows, "after")
    if is_name:
        if seen is None:
            return ShowPlan(label, code, name, ((code, RETURN),))
        bare = seen.bare(code)
        if isinstance(bare, tuple):
            raise row_fail(bound_twice(code, bare, fn.display_path, seen))
        changed = bare == ENTRY and bool(seen.of(code))
        return ShowPlan(label, code, name, ((code, bare),), when="entry" if changed else "")

    parsed = _parse_show_code(code)
    statement = _statement_with(fn, code, exact=isinstance(parsed, str)) if parsed is not None else None
    if parsed is None or statement is None:
        raise row_fail(
            f"'{code}' is neither a local of {fn.name} nor an expression in it "
            f"({fn.display_path}:{fn.start}-{fn.end}){_closest_statement(fn, code) or '.'} "
            "Copy the code from the function."
        )
    if isinstance(parsed, ast.Expression) and not _is_subexpression(scope.project.tree(fn.file), fn, parsed):
        raise row_fail(
            f"'{code}' occurs in {fn.display_path}:{statement.start} as text, but the code does not compute it "
            "as one value there (operator precedence groups it differently); copy a whole sub-expression"
        )
    scope.refs.lock(_lock_entry(scope.page, plan.block, fn, code, statement), fn.repo_path)
    if isinstance(parsed, str):  # ``target = expr``: the value the statement leaves in its target
        return ShowPlan(label, code, name, _reads_after([parsed], statement.start, fn, seen, row_fail), None, statement)
    # a module's name (np) is no local: it is read as recorded, and the render stage says if it is not
    paths = [p for p in read_paths(parsed) if p.split(".")[0] in fn.local_names]
    if seen is None:
        return ShowPlan(label, code, name, tuple({p.split(".")[0]: RETURN for p in paths}.items()), parsed, statement)
    which = seen.read_at(paths, statement.start)
    if isinstance(which, tuple):
        raise row_fail(unseen(*which, statement.start, code, fn.display_path, seen))
    return ShowPlan(label, code, name, tuple(which.items()), parsed, statement)


def _reads_after(
    paths: list[str], line: int, fn: Function, seen: Assignments | None, row_fail: Callable[[str], TraceError]
) -> tuple[tuple[str, str], ...]:
    """For the name of each of ``paths``, the recording that holds its value right after the statement at
    ``line``; refused when the function changes it again later. Without assignments: its value on return."""
    if seen is None:
        return tuple(dict.fromkeys(paths, RETURN).items())
    which = seen.after(paths, line)
    if isinstance(which, tuple):
        raise row_fail(changed_later(*which, line, fn.display_path, seen))
    return tuple(which.items())


def _show_row(row: ShowPlan, fn: Function, call: Call, where: str, fail) -> Row:
    """A row's value: its name, or its expression on the names it reads, each from the recording (arguments on
    entry, locals on return) that holds what the row's line saw."""
    row_fail = lambda m: fail(f"show row '{row.label}': {m}", "show")  # noqa: E731
    values = {}
    for n, which in row.reads:
        source = call.args if which == ENTRY else call.locals
        if n not in source:
            raise row_fail(_not_recorded(n, call, where))
        values[n] = source[n]
    if row.tree is None:
        [(n, _)] = row.reads
        return Row(row.label, row.code, values[n], row.name, row.statement)
    for n in _names(row.tree):
        if n not in values and n not in call.locals and n != "np":
            raise row_fail(_not_recorded(n, call, where))
    try:
        value = _eval(row.tree, {**call.locals, **values})
    except Exception as exc:
        raise row_fail(f"'{row.code}' raised {type(exc).__name__}: {exc} on the recorded values") from None
    return Row(row.label, row.code, value, row.name, row.statement)


def _not_recorded(name: str, call: Call, where: str) -> str:
    return (
        f"'{name}' was not recorded in {where}; recorded names: {', '.join(call.locals)}. "
        "Show a name the function assigns on the path the test takes."
    )


def _parse_show_code(code: str) -> ast.Expression | str | None:
    """An expression's tree, the name an assignment ``name = expr`` assigns, or None for other code."""
    try:
        return ast.parse(code, mode="eval")
    except SyntaxError:
        pass
    try:
        module = ast.parse(code, mode="exec")
    except SyntaxError:
        return None
    if len(module.body) == 1 and isinstance(module.body[0], ast.Assign):
        targets = module.body[0].targets
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            return targets[0].id
    return None


def _statement_with(fn: Function, code: str, exact: bool = False) -> Statement | None:
    """The statement that holds ``code``: equal to it, or (unless ``exact``) holding it as whole tokens."""
    needle = normalise_tokens(code)
    found = [s for s in fn.statements if s.tokens == needle]
    if not exact:
        found = found or [s for s in fn.statements if tokens_contain(s.tokens, needle)]
    return found[0] if found else None


def _is_subexpression(module: ast.Module, fn: Function, tree: ast.AST) -> bool:
    """Whether the function (of ``module``) computes ``tree`` as one node (``X - mu`` is not one in
    ``X - mu * s``)."""
    node = function_node(module, fn.start, fn.end)
    if node is None:
        return True
    expr = tree.body if isinstance(tree, ast.Expression) else tree
    wanted = ast.dump(expr)
    # Only a node of the same type can dump the same (``_loaded`` keeps a node's type).
    return any(
        ast.dump(_loaded(n)) == wanted for n in ast.walk(node) if isinstance(n, ast.expr) and type(n) is type(expr)
    )


def _loaded(node: ast.expr) -> ast.expr:
    """``node`` as it would read in an expression (targets of assignments have a Store context)."""
    if isinstance(getattr(node, "ctx", None), ast.Load) or not hasattr(node, "ctx"):
        return node
    return ast.parse(ast.unparse(node), mode="eval").body


def _closest_statement(fn: Function, code: str) -> str:
    candidates = {s.text.splitlines()[0]: s for s in fn.statements}
    close = difflib.get_close_matches(code, list(candidates), n=1, cutoff=0.4)
    if not close:
        return ""
    return f"; did you mean '{close[0]}' ({fn.display_path}:{candidates[close[0]].start})?"


def _names(tree: ast.AST, loads_only: bool = True) -> list[str]:
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (not loads_only or isinstance(node.ctx, ast.Load)) and node.id not in out:
            out.append(node.id)
    return out


def _namespace(values: dict[str, Any]) -> dict[str, Any]:
    """Copies, so that an expression cannot change what later rows read."""

    import numpy as np

    ns = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
    ns.setdefault("np", np)
    return ns


def _eval(tree: ast.expr | ast.Expression, values: dict[str, Any]) -> Any:
    expression = ast.Expression(tree) if isinstance(tree, ast.expr) else tree
    ast.fix_missing_locations(expression)
    return eval(compile(expression, "<trace-example>", "eval"), {"__builtins__": __builtins__}, _namespace(values))


# ============================================================================ check line

_PREC = {ast.Add: 10, ast.Sub: 10, ast.Mult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11, ast.Pow: 13}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "×", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_UNARY = {ast.USub: "-", ast.UAdd: "+"}


def _check_line(
    text: str,
    call: Call,
    rows: list[Row],
    where: str,
    fail,
    fn: Function | None = None,
    seen: Assignments | None = None,
) -> CheckLine:
    """The check line filled in: a show row's ``name``, and a name a show row shows, as that row shows it; any
    other name of the function as a bare name of a show row would be (an argument on entry)."""
    import numpy as np

    try:
        module = ast.parse(text.strip(), mode="exec")
    except SyntaxError as exc:
        raise fail(f"check '{text}' is not Python: {exc.msg}") from None
    stmt = module.body[0] if len(module.body) == 1 else None
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        raise fail(f"check '{text}' must be one line 'lhs = rhs', e.g. 'dX[0, 0] = s[0, 0] * dXhat[0, 0]'")
    lhs, rhs = stmt.targets[0], stmt.value
    named = {r.name: r.value for r in rows if r.name}
    values = dict(call.locals)
    for n in _names(stmt, loads_only=False):
        if n in named or n == "np":
            continue
        showing = [r for r in rows if r.code == n and not r.name]  # a row with a name is read by that name
        if len(showing) > 1:
            raise fail(
                f"check uses '{n}', which {len(showing)} show rows show ({', '.join(repr(r.label) for r in showing)}); "
                "give the one you mean a 'name' and use that name"
            )
        if showing:
            values[n] = showing[0].value
            continue
        which = RETURN
        if seen is not None and fn is not None and n in fn.local_names:
            bare = seen.bare(n)
            if isinstance(bare, tuple):
                lines = [f"{fn.display_path}:{a.start}" for a in bare]
                raise fail(
                    f"check uses '{n}', which {fn.name} binds at {', '.join(lines[:-1])} and again at {lines[-1]}, "
                    f"so the recording holds only its value on return; show the value you mean in a row, "
                    f"code: {n} with 'after' (the statement it follows)"
                )
            which = bare
        if which == ENTRY and n in call.args:
            values[n] = call.args[n]
        if n not in values:
            known = ", ".join([*call.locals, *named])
            raise fail(
                f"check uses '{n}', which is neither recorded in {where} nor the name of a show row; "
                f"known names: {known}"
            )
    values.update(named)

    def number(node: ast.expr) -> float:
        code = ast.unparse(node)
        try:
            value = _eval(_as_load(node), values)
        except Exception as exc:
            raise fail(f"check: '{code}' cannot be evaluated: {type(exc).__name__}: {exc}") from None
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "biuf":
            shape = f"an array of shape {arr.shape}" if arr.ndim else type(value).__name__
            raise fail(f"check: '{code}' is {shape}, not one number; index one entry, e.g. {code}[0, 0]")
        return float(arr)

    leaves: dict[str, float] = {}

    def rewrite(node: ast.expr) -> tuple[ast.expr, str, int]:
        """(the tree with leaves as float64 names, its filled-in text, its precedence)."""
        if isinstance(node, ast.BinOp) and type(node.op) in _PREC:
            prec = _PREC[type(node.op)]
            left, ltext, lprec = rewrite(node.left)
            right, rtext, rprec = rewrite(node.right)
            right_assoc = isinstance(node.op, ast.Pow)
            if lprec < prec or (right_assoc and lprec == prec):
                ltext = f"({ltext})"
            if rprec < prec or (not right_assoc and rprec == prec):
                rtext = f"({rtext})"
            return ast.BinOp(left, node.op, right), f"{ltext} {_SYMBOL[type(node.op)]} {rtext}", prec
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            operand, otext, oprec = rewrite(node.operand)
            if oprec < 12:
                otext = f"({otext})"
            return ast.UnaryOp(node.op, operand), f"{_UNARY[type(node.op)]}{otext}", 12
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node, ast.unparse(node), 14
        value = number(node)
        name = f"__leaf{len(leaves)}"
        leaves[name] = np.float64(value)
        shown = format_scalar(value)
        return ast.Name(name, ast.Load()), (f"({shown})" if shown.startswith("-") else shown), 14

    tree, filled, _ = rewrite(rhs)
    rhs_value = float(_eval(tree, leaves))
    lhs_value = number(lhs)
    lhs_text = ast.unparse(lhs)
    if not np.isclose(rhs_value, lhs_value, rtol=CHECK_RTOL, atol=CHECK_ATOL):
        raise fail(
            f"check '{text.strip()}' does not hold for the recorded values: the right-hand side gives "
            f"{rhs_value:.10g}, but {lhs_text} is {lhs_value:.10g}. Fix the formula, or the code it describes."
        )
    return CheckLine(lhs_text, filled, lhs_value, rhs_value)


def _as_load(node: ast.expr) -> ast.expr:
    """A copy of an expression with every Store context turned into Load (an assignment's target)."""
    return ast.parse(ast.unparse(node), mode="eval").body


# ============================================================================ gradient check


def _gradcheck(plan: ExamplePlan, bwd_call: Call, rec, results: Results, links: Links, fail) -> GradCheck:
    fwd, ng, wanted, central = _central_plan(plan, bwd_call, rec, fail)
    try:
        crec = results.recording(central)
    except TraceError as err:
        raise fail(f"gradcheck: {err.message}") from None
    return _gradcheck_rows(links, fwd, ng, plan.function, wanted, crec, fail)


def _gradcheck_functions(scope: Scope, forward_name: str, fail) -> tuple[Function, Function]:
    """The forward a gradient check names, and the project's central-difference function."""
    s = scope.project.settings
    if not s.numerical_grad:
        raise fail(
            "gradcheck needs the setting numerical_grad in [tool.docs_hooks]: "
            "the dotted name of the project's numerical_grad(f, x)"
        )
    try:
        return scope.function(forward_name), scope.function(s.numerical_grad)
    except TraceError as err:
        raise fail(f"gradcheck: {err.message}") from None


def _central_plan(plan: ExamplePlan, bwd_call: Call, rec, fail):
    """What to nudge and the request that runs the central differences: (forward, numerical_grad, wanted, request)."""

    import numpy as np

    fwd, ng, bwd, req = plan.forward, plan.numerical_grad, plan.function, plan.request
    if fwd is None or ng is None:  # resolve sets both for an example with a gradcheck, the only one asked here
        raise fail("gradcheck: the example names no forward to check the backward against")
    try:
        fwd_call = rec.first(fwd.name)
    except TraceError as err:
        raise fail(f"gradcheck: {err.message}") from None

    outputs = plan.returned
    if outputs is None:
        raise fail(
            f"gradcheck: {bwd.name} must end with one 'return' of names, e.g. 'return dX, dgamma, dbeta'"
            " (tuples of names may nest)"
        )
    # A method's instance is not an argument here: a layer's backward(self, dY) takes the gradient first.
    bwd_params = bwd.params[1:] if bwd.params[:1] in (("self",), ("cls",)) else bwd.params
    if not bwd_params:
        raise fail(f"gradcheck: {bwd.name} takes no arguments; its first argument must be the gradient on the output")
    dY = np.asarray(bwd_call.args.get(bwd_params[0]))
    wanted: dict = {}  # what to nudge -> (what the backward calls its gradient, the gradient)
    for name, value in _flatten(outputs, bwd_call.result, fail, bwd.name):
        if isinstance(value, dict):  # gradients by name, of the entries of a dictionary the forward takes
            param = _dict_param(fwd_call.args, value)
            if param is None:
                raise fail(
                    f"gradcheck: {bwd.name} returns '{name}', a dictionary of gradients, but no argument of "
                    f"{fwd.name} in {req.name} is a dictionary with all its keys"
                )
            for key, grad in value.items():
                wanted[(param, key)] = (f"{name}[{key!r}]", np.asarray(grad))
            continue
        param = name[1:] if name.startswith("d") else None
        if param not in fwd.params:
            raise fail(
                f"gradcheck: {bwd.name} returns '{name}', which is not d<parameter> of {fwd.name} "
                f"(its parameters: {', '.join(fwd.params)})"
            )
        wanted[param] = (name, np.asarray(value))
    floats = [n for n, v in fwd_call.args.items() if _is_float_array(v)]
    for target, (name, _) in wanted.items():
        value = fwd_call.args[target[0]][target[1]] if isinstance(target, tuple) else fwd_call.args.get(target)
        if not _is_float_array(value):
            raise fail(
                f"gradcheck: {bwd.name} returns '{name}', but {_label(target)} of {fwd.name} was not a float "
                f"array in {req.name}; central differences need a float array"
            )
    missing = [n for n in floats if n not in wanted]
    if missing:
        raise fail(
            f"gradcheck: {bwd.name} returns no gradient for the float input(s) {', '.join(missing)} of "
            f"{fwd.name}; return d{missing[0]} as well"
        )

    try:
        inputs = tuple((k, _encode(v)) for k, v in fwd_call.args.items())
    except TypeError as exc:
        raise fail(f"gradcheck: {exc}") from None
    central = Request(
        name=f"central differences of {fwd.name} from {req.name}",
        module=__name__,
        function=CENTRAL_DIFFERENCES,
        args=(
            f"{ng.module}:{ng.name[len(ng.module) + 1 :]}",
            f"{fwd.module}:{fwd.name[len(fwd.module) + 1 :]}",
            inputs,
            _encode(dY),
            tuple(wanted),
        ),
    )
    return fwd, ng, wanted, central


def _gradcheck_rows(links: Links, fwd: Function, ng: Function, bwd: Function, wanted: dict, crec, fail) -> GradCheck:
    import numpy as np

    numeric = crec.result
    rows = []
    for param, (name, analytic) in wanted.items():
        approx = np.asarray(numeric[param])
        if analytic.shape != approx.shape:
            raise fail(
                f"gradcheck: {name} from {bwd.name} has shape {analytic.shape}, but {_label(param)} has {approx.shape}"
            )
        gap = float(np.max(np.abs(analytic - approx))) if analytic.size else 0.0
        if not gap <= GAP_LIMIT:
            raise fail(
                f"gradcheck: {name} from {bwd.name} differs from the central differences of {fwd.name} "
                f"by {gap:.2g} (more than {GAP_LIMIT:g}): backward {format_value(analytic)}, "
                f"central differences {format_value(approx)}. The backward does not match the forward."
            )
        rows.append(GradRow(name, _label(param), analytic, approx, gap))
    ng_calls = crec.calls_of(ng.name)
    extra = ""
    if ng_calls:
        extra = ", ".join(f"{k}={format_value(v)}" for k, v in list(ng_calls[0].args.items())[2:])
    return GradCheck(fwd.name, bwd.name, ng.name, links.url(ng, ng.start, ng.end), extra, rows)


def _is_float_array(value) -> bool:
    import numpy as np

    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _label(target) -> str:
    """``X``, or ``params['b0.ln1_g']`` for an entry of a dictionary argument."""
    return f"{target[0]}[{target[1]!r}]" if isinstance(target, tuple) else target


def _dict_param(args: dict, grads: dict) -> str | None:
    """The forward's dictionary argument that holds every key of ``grads``."""
    for name, value in args.items():
        if isinstance(value, dict) and grads and all(key in value for key in grads):
            return name
    return None


def _returned_names(module: ast.Module, fn: Function):
    """The names the function (of ``module``) returns, nested as written; None unless it has one ``return``
    of names."""
    node = function_node(module, fn.start, fn.end)
    if node is None:
        return None
    returns = [n for n in _own_nodes(node) if isinstance(n, ast.Return)]
    if len(returns) != 1 or returns[0].value is None:
        return None
    return _names_of(returns[0].value)


def _names_of(node: ast.AST):
    """The names a return is made of, keeping nested tuples: ``dX, (dW, db)`` -> ['dX', ['dW', 'db']]."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Tuple):
        items = [_names_of(e) for e in node.elts]
        return None if any(i is None for i in items) else items
    return None


def _flatten(names, values, fail, fn_name: str) -> list[tuple[str, object]]:
    """Pair each returned name with its value, through nested tuples."""
    if isinstance(names, str):
        return [(names, values)]
    if not isinstance(values, (tuple, list)) or len(values) != len(names):
        count = len(values) if isinstance(values, (tuple, list)) else 1
        raise fail(f"gradcheck: {fn_name} returned {count} value(s), but its return names {len(names)}")
    return [pair for n, v in zip(names, values) for pair in _flatten(n, v, fail, fn_name)]


def _own_nodes(fn_node: ast.AST):
    """The nodes of a function, not of functions or classes defined inside it."""
    stack = list(ast.iter_child_nodes(fn_node))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def _encode(value: Any):
    """A hashable, exact stand-in for a recorded argument (requests are hashed and cached by repr)."""

    import numpy as np

    if isinstance(value, np.ndarray):
        return ("__ndarray__", value.dtype.str, value.shape, tuple(value.ravel().tolist()))
    if isinstance(value, np.generic):
        return ("__scalar__", value.dtype.str, value.item())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return ("__tuple__", tuple(_encode(v) for v in value))
    if isinstance(value, dict):
        return ("__dict__", tuple((k, _encode(v)) for k, v in value.items()))
    if isinstance(value, Opaque) and value.fields:  # a config object of the project: made again in the child
        return ("__object__", value.type, tuple((k, _encode(v)) for k, v in value.fields.items()))
    raise TypeError(f"cannot pass a recorded {type(value).__name__} to the central-difference run")


def _decode(value: Any):
    import numpy as np

    if isinstance(value, tuple) and value and value[0] == "__ndarray__":
        _, dtype, shape, flat = value
        return np.array(flat, dtype=np.dtype(dtype)).reshape(shape)
    if isinstance(value, tuple) and value and value[0] == "__scalar__":
        return np.dtype(value[1]).type(value[2])
    if isinstance(value, tuple) and value and value[0] == "__tuple__":
        return tuple(_decode(v) for v in value[1])
    if isinstance(value, tuple) and value and value[0] == "__dict__":
        return {k: _decode(v) for k, v in value[1]}
    if isinstance(value, tuple) and value and value[0] == "__object__":
        return _make_object(value[1], {k: _decode(v) for k, v in value[2]})
    return value


def _make_object(dotted: str, fields: dict) -> object:
    """An object of the project's class ``dotted`` with these fields (a dataclass through its constructor)."""
    import dataclasses

    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            found = getattr(found, part)
        break
    else:
        raise ImportError(f"cannot import the class {dotted}")
    if not isinstance(found, type):
        raise TypeError(f"{dotted} is not a class")
    cls: type[object] = found
    if dataclasses.is_dataclass(cls):
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        obj: object = cls(**{k: v for k, v in fields.items() if k in init})
        for k, v in fields.items():
            if k not in init:
                object.__setattr__(obj, k, v)
        return obj
    obj = cls.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _load(spec: str):
    module, _, qual = spec.partition(":")
    target = importlib.import_module(module)
    for part in qual.split("."):
        target = getattr(target, part)
    return target


def central_differences(numerical_grad: str, forward: str, inputs: tuple, dY, wrt: tuple) -> dict:
    """Runs in the recorder's child: the project's numerical_grad of sum(forward(**inputs)[0] * dY).

    ``numerical_grad(f, x)`` nudges ``x`` in place and calls ``f()``, so ``f`` reads the
    very array that is being nudged.
    """

    import numpy as np

    ng = _load(numerical_grad)
    fwd = _load(forward)
    args = {k: _decode(v) for k, v in inputs}
    weights = _decode(dY)

    def f():
        out = fwd(**args)
        out = out[0] if isinstance(out, tuple) else out
        return float(np.sum(out * weights))

    # an entry of a dictionary argument is nudged in its dictionary, where the forward reads it
    return {name: ng(f, args[name[0]][name[1]] if isinstance(name, tuple) else args[name]) for name in wrt}


# ============================================================================ formatting


def format_scalar(x: SupportsFloat) -> str:
    """A number rounded to 4 places, trailing zeros dropped: 1, 0.75, -1.069; tiny ones as 1e-05."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    r = round(x, 4) + 0.0
    if r == 0 and x != 0:
        return f"{x:.4g}"
    return f"{r:.4f}".rstrip("0").rstrip(".")


def format_value(value: Any) -> str:
    """Arrays with 4 decimals (``[[1.0000, 0.0000]]``), numbers plainly, tuples item by item."""

    import numpy as np

    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return format_value(value.item())
        if value.dtype.kind == "f":
            rounded = np.round(value.astype(np.float64), 4) + 0.0  # + 0.0 turns -0.0 into 0.0
            return np.array2string(
                rounded,
                separator=", ",
                max_line_width=10**6,
                threshold=1000,
                formatter={"float_kind": lambda v: f"{v:.4f}"},
            )
        return np.array2string(value, separator=", ", max_line_width=10**6, threshold=1000)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_scalar(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def format_gap(gap: float) -> str:
    return "0" if gap == 0 else f"{gap:.1e}"


def jsonable(value: Any) -> Any:
    """Recorded values as JSON data: arrays keep their shape and dtype."""

    import numpy as np

    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": value.dtype.name, "values": jsonable(value.tolist())}
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)


# ============================================================================ rendering


def _inline(text: str) -> str:
    """Authored prose for an HTML block: escaped, with `code` spans kept."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show it as written
        return R.esc(text)
    return "".join(R.code(p) if i % 2 else R.esc(p) for i, p in enumerate(parts))


def _head(title: str, evidence: str, backed_by: str = "Recorded") -> str:
    """An example's title, and a badge saying what backs its numbers (not the entry's status: that has its own)."""
    return (
        f'<p class="trace-example-head"><strong class="trace-example-title">{R.esc(title)}</strong> '
        f'<span class="trace-badge trace-badge--recorded" title="{R.esc(evidence)}">{R.esc(backed_by)}</span></p>'
    )


def _value_table(name: str, value: Any) -> list[str]:
    """One recorded input as an HTML table of its values (items of a tuple one by one)."""

    import numpy as np

    if isinstance(value, tuple):
        return [t for i, v in enumerate(value) for t in _value_table(f"{name}[{i}]", v)]
    arr = value if isinstance(value, np.ndarray) else None
    caption = f"<caption>{R.code(name)}{', shape ' + R.esc(str(arr.shape)) if arr is not None else ''}</caption>"
    if arr is None or arr.ndim == 0:
        cell = f'<td data-name="{R.esc(name)}">{R.esc(format_value(value))}</td>'
        return [
            f'<table class="trace-table trace-example-input">{caption}<tbody><tr><th>{R.esc(name)}</th>{cell}</tr></tbody></table>'
        ]
    grid = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(-1, arr.shape[-1])
    head = "<thead><tr><th></th>" + "".join(f"<th>{j}</th>" for j in range(grid.shape[1])) + "</tr></thead>"
    body = []
    for i, row in enumerate(grid):
        label = R.esc(name) if arr.ndim == 1 else str(i)
        cells = "".join(
            f'<td data-name="{R.esc(name)}" data-index="{f"{i},{j}" if arr.ndim > 1 else j}">{R.esc(format_value(np.asarray(v)))}</td>'
            for j, v in enumerate(row)
        )
        body.append(f"<tr><th>{label}</th>{cells}</tr>")
    return [f'<table class="trace-table trace-example-input">{caption}{head}<tbody>{"".join(body)}</tbody></table>']


def render_example(ex: Example) -> str:
    """The example as HTML lines with no blank line inside (one raw HTML block for Markdown)."""
    source = f"Recorded while {R.link(R.code(ex.test_name), ex.test_url, ex.test)} runs."
    if ex.caption:
        source += " " + _inline(ex.caption)
    out = [
        f'<div class="trace-example" id="example-{slug(ex.title)}">',
        _head(ex.title, f"every number recorded from {ex.test}: the first call of {ex.function}"),
        f'<p class="trace-example-source">{source}</p>',
    ]
    if ex.widget is not None:
        out.append('<div class="trace-example-inputs">')
        for name, value in ex.widget["inputs"].items():
            out.extend(_value_table(name, value))
        out.append("</div>")
        data = json.dumps(jsonable(ex.widget), separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        out.append(f'<script type="application/json" class="trace-example-data">{data}</script>')
    rows = [[R.esc(r.label), R.code(r.code) + r.where, R.code(format_value(r.value))] for r in ex.rows]
    out.append(R.table(["Step", "Code", "Value"], rows, "trace-table trace-example-steps", searchable=False))
    if ex.check is not None:
        c = ex.check
        lead = "One entry" if "[" in c.lhs else "Check"
        out.append(
            f'<p class="trace-example-check">{lead}: {R.code(c.lhs)} = '
            f"{R.esc(c.filled)} = {R.esc(format_scalar(c.lhs_value))}</p>"
        )
    out.append("</div>")
    text = "\n".join(out) + "\n"
    if ex.gradcheck is not None:
        text += "\n" + render_gradcheck(ex, ex.gradcheck)
    return text


def render_gradcheck(ex: Example, g: GradCheck) -> str:
    ng = R.link(R.code(g.numerical_grad), g.numerical_grad_url, g.numerical_grad)
    called = f" (called with {R.esc(g.call_args)})" if g.call_args else ""
    text = (
        f"Central differences from {ng}{called}, run at build time, of "
        f"{R.code('(Y * dY).sum()')}, where {R.code('Y')} is the first output of {R.code(g.forward)} and "
        f"{R.code('dY')} is the first argument {R.code(g.backward)} received in {R.code(ex.test_name)}: "
        f"its gradient on {R.code('Y')} is exactly {R.code('dY')}. A gap above {R.esc(f'{GAP_LIMIT:g}')} fails the build."
    )
    rows = [
        [R.code(r.name), R.code(format_value(r.backward)), R.code(format_value(r.numeric)), R.code(format_gap(r.gap))]
        for r in g.rows
    ]
    return (
        "\n".join(
            [
                f'<div class="trace-example trace-gradcheck" id="gradcheck-{slug(ex.title)}">',
                _head(
                    "Checking the whole backward numerically",
                    f"computed at build time: {g.numerical_grad} against {g.backward}",
                    "Computed",
                ),
                f'<p class="trace-example-source">{text}</p>',
                R.table(
                    ["Gradient", "From the backward formula", "From central differences", "Largest gap"],
                    rows,
                    "trace-table trace-gradcheck-table",
                    searchable=False,
                ),
                "</div>",
            ]
        )
        + "\n"
    )


__all__ = [
    "ExampleKind",
    "collect",
    "render_example",
    "format_value",
    "format_scalar",
    "central_differences",
]

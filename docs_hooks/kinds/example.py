"""Tiny worked examples recorded from a real test run, and central-difference tables.

A ``trace-example`` block names a test. The build runs that test under the
recorder (in a child process), takes the first call of the entry's function and
shows the values it saw: locals by name, or expressions copied from the
function's statements, evaluated on the recorded locals. Nothing numeric is
typed into the page:

- ``check`` is an arithmetic line the author writes symbolically; the build
  fills in the recorded numbers and verifies that the line holds
  (``kinds.checkline``).
- ``gradcheck`` names the forward of a backward entry; the build measures the
  gradients with the project's own central-difference function (the
  ``numerical_grad`` setting, run in the child process) and compares them with
  what the backward returned (``kinds.gradcheck``).
- ``widget`` adds the recorded inputs and outputs as JSON for a browser widget.

Resolving checks what needs no run (the test and the function exist, each shown
expression is a statement of the function); ``collect`` reads the recording into
plain data, and ``render_example`` is a pure function of it.
"""

from __future__ import annotations

import ast
import difflib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Rendered, Scope
from docs_hooks.kinds.checkline import CheckLine, check_line, evaluate, names_in
from docs_hooks.kinds.gradcheck import (
    GAP_LIMIT,
    GradCheck,
    GradPlan,
    central_request,
    check_gradients,
    resolve_gradcheck,
)
from docs_hooks.read.blocks import Block, slug
from docs_hooks.read.blockspec import BLOCK_KINDS
from docs_hooks.render import html as R
from docs_hooks.render.links import Links
from docs_hooks.render.numbers import format_gap, format_scalar, format_value, jsonable
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
from docs_hooks.resolve.codeindex import Function, Statement, normalise_tokens, tokens_contain
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.run.recording import Call, Capped, Recording
from docs_hooks.run.request import Request, test_request
from docs_hooks.run.results import Need, Results

SHOW_KEYS = ("label", "code", "name", "after")


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
    its gradient check, if it has one."""

    page: str
    block: Block
    function: Function
    test: Function
    request: Request
    rows: tuple[ShowPlan, ...] = ()
    seen: Assignments | None = None  # where the function assigns its names: which recording holds each
    gradcheck: GradPlan | None = None

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
        request = _example_request(req, fn.name, d)
        grad = None
        if "gradcheck" in d:
            grad = resolve_gradcheck(scope, d["gradcheck"], fn, request, lambda m: fail(m, "gradcheck"))
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
        return ExamplePlan(scope.page, block, fn, test_fn, request, rows, seen, grad)

    def needs(self, plan: ExamplePlan, done: Mapping[Request, Recording | TraceError]) -> list[Need]:
        """The test's recording; once it is in, the central differences of a gradient check."""
        rec = done.get(plan.request)
        if plan.gradcheck is None or not isinstance(rec, Recording):
            return [plan.request]
        try:
            _, central = central_request(plan.gradcheck, rec.first(plan.function.name), rec, TraceError)
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
        ex.check = check_line(d["check"], call, rows, where, lambda m: fail(m, "check"), fn, plan.seen)
    if plan.gradcheck is not None:
        ex.gradcheck = check_gradients(plan.gradcheck, call, rec, results, links, lambda m: fail(m, "gradcheck"))
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
    if isinstance(parsed, ast.Expression) and not _is_subexpression(scope.project.definition(fn), parsed):
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
    for n in names_in(row.tree):
        if n not in values and n not in call.locals and n != "np":
            raise row_fail(_not_recorded(n, call, where))
    try:
        value = evaluate(row.tree, {**call.locals, **values})
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


def _is_subexpression(node: ast.FunctionDef | ast.AsyncFunctionDef | None, tree: ast.AST) -> bool:
    """Whether the function (its ``def``, ``node``) computes ``tree`` as one node (``X - mu`` is not one in
    ``X - mu * s``)."""
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


__all__ = ["ExampleKind", "collect", "render_example"]

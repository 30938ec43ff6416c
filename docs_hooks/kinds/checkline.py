"""Arithmetic on recorded values: an expression of a function evaluated on what a recording holds, and a
worked example's ``check`` line, filled in with the recorded numbers and verified.

A check line is ``lhs = rhs``, written symbolically by the author. Each leaf of the
right-hand side is replaced by its recorded value, rounded as the page shows it,
the grouping of the formula kept; the line holds when both sides agree within
``CHECK_RTOL`` and ``CHECK_ATOL``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from docs_hooks.base.errors import TraceError
from docs_hooks.render.numbers import format_scalar
from docs_hooks.resolve.assignments import ENTRY, RETURN, Assignments
from docs_hooks.resolve.codeindex import Function
from docs_hooks.run.recording import Call

CHECK_RTOL = 1e-6  # relative tolerance of a check line
CHECK_ATOL = 1e-12  # absolute tolerance of a check line, for entries that are 0


@dataclass
class CheckLine:
    lhs: str  # as written, e.g. ``dX[0, 0]``
    filled: str  # the right-hand side with each leaf replaced by its rounded value
    lhs_value: float
    rhs_value: float


class ShownRow(Protocol):
    """A row of a worked example as a check line reads it: what it shows, and the name ``check`` calls it."""

    label: str
    code: str
    name: str | None
    value: Any


def names_in(tree: ast.AST, loads_only: bool = True) -> list[str]:
    """The names an expression reads (``loads_only``), or every name it holds, each once, in order."""
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


def evaluate(tree: ast.expr | ast.Expression, values: dict[str, Any]) -> Any:
    """An expression evaluated on recorded values (copies of them), with NumPy as ``np``."""
    expression = ast.Expression(tree) if isinstance(tree, ast.expr) else tree
    ast.fix_missing_locations(expression)
    return eval(compile(expression, "<trace-example>", "eval"), {"__builtins__": __builtins__}, _namespace(values))


_PREC = {ast.Add: 10, ast.Sub: 10, ast.Mult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11, ast.Pow: 13}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "×", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_UNARY = {ast.USub: "-", ast.UAdd: "+"}


def check_line(
    text: str,
    call: Call,
    rows: Sequence[ShownRow],
    where: str,
    fail: Callable[[str], TraceError],
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
    for n in names_in(stmt, loads_only=False):
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
            value = evaluate(_as_load(node), values)
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
    rhs_value = float(evaluate(tree, leaves))
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

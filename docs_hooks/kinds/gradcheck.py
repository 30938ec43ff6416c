"""A worked example's gradient check: the gradients a hand-written backward returned, in the recorded call,
against central differences of its forward, measured at build time with the project's own central-difference
function (the ``numerical_grad`` setting), run in the recorder's child (``run.central``).

``dX`` is the gradient of the forward's ``X``, and a returned dictionary holds
gradients of the entries, by key, of the forward's dictionary argument that has
all those keys (``params``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported in the functions that use it
    import numpy as np

import docs_hooks.run.central as child_side
from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Scope
from docs_hooks.render.links import Links
from docs_hooks.render.numbers import format_value
from docs_hooks.resolve.codeindex import Function
from docs_hooks.run.central import encode
from docs_hooks.run.recording import Call, Recording
from docs_hooks.run.request import Request
from docs_hooks.run.results import Results

GAP_LIMIT = 1e-6  # the largest central-difference gap a correct backward may show


@dataclass(frozen=True)
class GradPlan:
    """A gradient check resolved: the backward shown, the forward it is checked against, the project's
    central-difference function, the names the backward returns (nested as written; None unless its one
    ``return`` is of names), and the request that records the test."""

    backward: Function
    forward: Function
    numerical_grad: Function
    returned: Any
    request: Request


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


def check_gradients(plan: GradPlan, bwd_call: Call, rec: Recording, results: Results, links: Links, fail) -> GradCheck:
    """The backward's gradients in the recorded call against the central differences of the forward."""
    wanted, central = central_request(plan, bwd_call, rec, fail)
    try:
        crec = results.recording(central)
    except TraceError as err:
        raise fail(f"gradcheck: {err.message}") from None
    return _gradcheck_rows(links, plan.forward, plan.numerical_grad, plan.backward, wanted, crec, fail)


def resolve_gradcheck(scope: Scope, forward_name: str, backward: Function, request: Request, fail) -> GradPlan:
    """The forward a gradient check names and the project's central-difference function (both must exist),
    and the names the backward returns; nothing runs."""
    s = scope.project.settings
    if not s.numerical_grad:
        raise fail(
            "gradcheck needs the setting numerical_grad in [tool.docs_hooks]: "
            "the dotted name of the project's numerical_grad(f, x)"
        )
    try:
        forward, ng = scope.function(forward_name), scope.function(s.numerical_grad)
    except TraceError as err:
        raise fail(f"gradcheck: {err.message}") from None
    return GradPlan(backward, forward, ng, returned_names(scope.project.definition(backward)), request)


def central_request(plan: GradPlan, bwd_call: Call, rec: Recording, fail) -> tuple[dict, Request]:
    """What to nudge (each input of the forward -> what the backward calls its gradient, and that gradient) and
    the request that runs the central differences in the recorder's child."""

    import numpy as np

    fwd, ng, bwd, req = plan.forward, plan.numerical_grad, plan.backward, plan.request
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
        inputs = tuple((k, encode(v)) for k, v in fwd_call.args.items())
    except TypeError as exc:
        raise fail(f"gradcheck: {exc}") from None
    central = Request(
        name=f"central differences of {fwd.name} from {req.name}",
        module=child_side.__name__,
        function=child_side.CENTRAL_DIFFERENCES,
        args=(
            f"{ng.module}:{ng.name[len(ng.module) + 1 :]}",
            f"{fwd.module}:{fwd.name[len(fwd.module) + 1 :]}",
            inputs,
            encode(dY),
            tuple(wanted),
        ),
    )
    return wanted, central


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


def returned_names(node: ast.FunctionDef | ast.AsyncFunctionDef | None):
    """The names the function (its ``def``, ``node``) returns, nested as written; None unless it has one
    ``return`` of names."""
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

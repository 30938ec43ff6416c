"""The parameters of a class-based project: the arrays its layer objects hold.

A class-based project holds its parameters on layer objects (``self.W = ...`` in
``__init__`` or ``initialize``, or a ``params()`` dict). Without ``init_params``,
the inventory of a layer's method shows the array attributes of every instance of
that class the model run made (found in the recordings: each object the run
handled, with its fields, see ``run.recording.Opaque``), each with the statement
that creates it, its initialisation (read as ``kinds.params`` reads it) and
whether the optimizer's rule (setting ``decay_rule``) decays it, asked in the
child with an array of its shape.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import Project
from docs_hooks.kinds.modelrun import Evidence, def_node, method_of, model_run
from docs_hooks.kinds.params import Param, Params, check_init, decay_words, init_kind, setting_function, symbolic_size
from docs_hooks.resolve.codeindex import Function, Statement
from docs_hooks.run.recording import Made, Opaque
from docs_hooks.run.request import Request

#: The methods that create a layer's parameters: ``self.W = ...`` there makes W one (a value, not a constant).
CREATING_METHODS = ("__init__", "build", "initialize")
CLASS_DECAYS = "decays of the layers' parameters"


@dataclass(frozen=True)
class Attribute:
    """A parameter of a layer class: the attribute that holds it, and the statement that creates it."""

    name: str  # as the table names it: the attribute, or the key of params()
    attr: str
    function: Function
    statement: Statement
    value: ast.expr


def layer_attributes(project: Project, cls: str) -> list[Attribute]:
    """The attributes a ``cls`` object's parameters may be in: each ``self.X = value`` of its creating methods
    (the last one of them that assigns X), or the entries of the dict its ``params()`` returns."""
    index = project.index
    found: dict[str, Attribute] = {}
    for method in CREATING_METHODS:
        fn = method_of(index, cls, method)
        if fn is None:
            continue
        for node in ast.walk(def_node(project, fn)):
            if not isinstance(node, ast.Assign) or isinstance(node.value, ast.Constant):
                continue
            for target in node.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    stmt = next((s for s in fn.statements if s.start == node.lineno), None)
                    if stmt is not None:
                        found[target.attr] = Attribute(target.attr, target.attr, fn, stmt, node.value)
    params = method_of(index, cls, "params")
    if params is None:
        return list(found.values())
    keyed = []
    for node in ast.walk(def_node(project, params)):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                attr = value.attr if isinstance(value, ast.Attribute) else None
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and attr in found:
                    keyed.append(replace(found[attr], name=key.value))
    if not keyed:
        raise TraceError(
            f"{params.name} ({params.display_path}:{params.start}) should return a dict of the parameters, "
            '"name": self.attribute for each, so that the table can name each and find the line that creates it'
        )
    return keyed


def instances(rec, cls: str) -> list[tuple[str, list[Opaque]]]:
    """Every ``cls`` object a recording holds, each once, named by where the run kept it (``Net.layers[0]``),
    else by the call that made it (``made in run, line 17``), else by a call it was passed to; with every
    snapshot of it the recording took, in the order the run met them: first those taken as a call began or
    returned, then those kept inside other objects (the recorder copies an object's fields at those moments,
    but what the object holds in turn may be as the run left it). An object is told apart by its repr (a
    default repr holds its address)."""
    HELD, MADE, PASSED = 0, 1, 2  # how well a name says where the object is, best first
    found: dict[tuple, tuple[tuple[int, int, str], list[tuple[bool, Opaque]]]] = {}

    def visit(value, label: str, rank: int, depth: int) -> None:
        if depth > 8:
            return
        if isinstance(value, Opaque):
            if value.type == cls:
                key = (value.type, value.text)
                name, seen = found.get(key, (None, []))
                mine = (rank, len(label), label)
                found[key] = (mine if name is None or mine < name else name, [*seen, (rank == HELD, value)])
            short = value.type.rsplit(".", 1)[-1]
            for k, v in value.fields.items():
                visit(v, f"{short}.{k}", HELD, depth + 1)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                visit(v, f"{label}[{i}]", rank, depth + 1)
        elif isinstance(value, dict):
            for k, v in value.items():
                visit(v, f"{label}[{k!r}]", rank, depth + 1)

    for call in rec.calls:
        short = ".".join(call.function.rsplit(".", 2)[-2:])
        for kind, values in (("argument", call.args), ("local", call.locals)):
            for k, v in values.items():
                if k == "self" and isinstance(v, Opaque) and call.function == f"{v.type}.__init__":
                    maker = call.caller.rsplit(".", 1)[-1] if call.caller else "the model run helper"
                    where = f"made in {maker}, line {call.caller_line}"
                    visit(v, where, MADE, 0)
                else:
                    visit(v, f"{k} of {short}" if kind == "argument" else f"{k} in {short}", PASSED, 0)
        visit(call.result, f"what {short} returned", PASSED, 0)
    visit(rec.result, "what run() returned", PASSED, 0)
    return [(name[2], [v for _, v in sorted(seen, key=lambda s: s[0])]) for name, seen in found.values()]


def _first_array(snapshots: list[Opaque], attr: str):
    """The attribute's first array value among the snapshots of one object: the parameter as it was made, as
    near as the recording tells (a training step in the run changes it later, not its shape)."""
    import numpy as np

    for snap in snapshots:
        value = snap.fields.get(attr)
        if isinstance(value, np.ndarray):
            return value
    return None


def _layer_arrays(rec, cls: str, attrs: list[Attribute]) -> list[tuple[str, Attribute, Any]]:
    """(holder, attribute, array) for each parameter the run's ``cls`` objects hold."""
    out = []
    for holder, snapshots in instances(rec, cls):
        for a in attrs:
            value = _first_array(snapshots, a.attr)
            if value is not None:
                out.append((holder, a, value))
    return out


def class_decay_request(project: Project, cls: str, rec) -> Request | TraceError | None:
    """The optimizer's rule asked of each parameter the run's ``cls`` objects hold (with an array of its shape
    and type); None without a rule."""
    s = project.settings
    if not s.decay_rule:
        return None
    try:
        rule_module, rule = setting_function(project.index, s.decay_rule, "decay_rule")
        arrays = _layer_arrays(rec, cls, layer_attributes(project, cls))
    except TraceError as err:
        return err
    made = tuple(
        (f"{holder}.{a.name}", Made("numpy", "zeros", (tuple(int(d) for d in v.shape), v.dtype.str)))
        for holder, a, v in arrays
    )
    return Request(
        f"{s.decay_rule}(name, array) for each parameter of the {cls} objects",
        rule_module,
        rule,
        over=Made("builtins", "dict", (made,)),
    )


def class_parameters(ev: Evidence, cls: str) -> Params:
    return ev.once(f"params of {cls}", _class_parameters, ev, cls)


def _class_parameters(ev: Evidence, cls: str) -> Params:
    run = model_run(ev)
    attrs = layer_attributes(ev.project, cls)
    real = _layer_arrays(run.real, cls, attrs)
    probe = {(holder, a.name): v for holder, a, v in _layer_arrays(run.probe, cls, attrs)}
    if not real:
        if not instances(run.real, cls):
            what = f"made no {cls} object"
        else:
            kept = ", ".join(a.attr for a in attrs) or "an attribute its __init__ or initialize sets"
            what = f"made {cls} objects, but none holds an array in {kept}"
        raise TraceError(
            f"the model run ({run.helper}) {what}; trace-params shows the arrays a layer's __init__ or initialize "
            "keeps on it (self.W = ...), for each layer of that class the run makes"
        )
    decays = None
    request = class_decay_request(ev.project, cls, run.real)  # None without the decay_rule setting
    if isinstance(request, TraceError):
        raise request
    if request is not None:
        decays = ev.results.recording(request).result
    out = Params(rule=ev.settings.decay_rule or "")
    for holder, a, value in real:
        twin = probe.get((holder, a.name))
        if twin is None:
            raise TraceError(
                f"the probe run holds no {holder}.{a.attr}; run(cfg) in {run.helper} must make the same layers "
                "whatever the sizes"
            )
        desc = run.dims.describe(value, twin)
        init = init_kind(ev, a.function, a.value, run.dims.real)
        check_init(init, a.name, [value], a.function, a.statement, f"{holder} held")
        name = f"{holder}.{a.name}"
        param = Param(
            a.name,
            [name],
            None,
            desc,
            int(value.size),
            symbolic_size(desc),
            a.function,
            a.statement,
            init,
            decay_words(decays, [name]),
            holder,
        )
        out.params.append(param)
        out.total += param.total
    return out

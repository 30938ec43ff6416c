"""The parameter inventory: every parameter of the model, read from the code and from running it.

``init_params(cfg, rng)`` (setting ``init_params``) runs in the child for the real
and the probe config. Each parameter gets its name pattern (the per-layer index
collapsed: ``b{l}.ln1_g``), the statement that creates it (found in init_params
and its callees by the string constants of its target), its symbolic and
concrete shape, its scalar count, its initialisation read from that statement
(ones, zeros, normal with the std it reads from the config) and checked against
the values, and whether weight decay applies, decided by calling the optimizer's
own rule (setting ``decay_rule``) on it in the child.

A class-based project holds its parameters on layer objects (``self.W = ...`` in
``__init__`` or ``initialize``, or a ``params()`` dict). Without ``init_params``,
the inventory of a layer's method shows the array attributes of every instance of
that class the model run made (found in the recordings: each object the run
handled, with its fields, see ``run.recording.Opaque``).

Shown by ``trace-params`` and ``trace-inventory of: parameters``
(``kinds.inventory``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported in the functions that use it: `check` uses none (bench/README.md, "check")
    import numpy as np


from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.base import Project
from docs_hooks.kinds.modelrun import (
    Desc,
    Evidence,
    config_made,
    def_node,
    fmt_value,
    method_of,
    model_run,
)
from docs_hooks.read.blocks import Block
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import CodeIndex, Function, Statement, did_you_mean
from docs_hooks.run.recording import Made, Opaque
from docs_hooks.run.request import Request

PARAMS = "params"
PROBE_PARAMS = "probe params"
DECAYS = "decays"


# ----------------------------------------------------------------------------- requests


def _setting(value: str | None, setting: str) -> str:
    """A setting's value, or the TraceError saying it is not set."""
    if not value:
        raise TraceError(f"setting {setting} is not set; add it to [tool.docs_hooks] in pyproject.toml")
    return value


def _split(index, dotted: str | None, setting: str) -> tuple[str, str]:
    dotted = _setting(dotted, setting)
    try:
        fn = index.function(dotted)
    except TraceError as err:
        raise TraceError(f"setting {setting}: {err.message}") from None
    return fn.module, fn.name[len(fn.module) + 1 :]


def inventory_requests(s: Settings, index: CodeIndex) -> dict[str, Request | TraceError]:
    """The requests of the parameter inventory: init_params for the real and the probe config, and the
    optimizer's weight-decay rule on each parameter."""
    out: dict[str, Request | TraceError] = {}
    try:
        module, function = _split(index, s.init_params, "init_params")
        rng = Made("numpy.random", "default_rng", (0,))
        real = Made(module, function, (config_made(s), rng))
        out[PARAMS] = Request(f"{s.init_params}(config(), default_rng(0))", module, function, (config_made(s), rng))
        out[PROBE_PARAMS] = Request(
            f"{s.init_params}(probe(config()), default_rng(0))", module, function, (config_made(s, probe=True), rng)
        )
    except TraceError as err:
        out[PARAMS] = out[PROBE_PARAMS] = out[DECAYS] = err
        return out
    if not s.decay_rule:
        return out  # no rule: the weight decay column says so
    try:
        rule_module, rule = _split(index, s.decay_rule, "decay_rule")
        out[DECAYS] = Request(f"{s.decay_rule}(name, array) for each parameter", rule_module, rule, over=real)
    except TraceError as err:
        out[DECAYS] = err
    return out


NO_RULE = "the project names no rule"  # the weight decay column without the decay_rule setting


def _stmt_link(ev: Evidence, fn: Function, stmt: Statement) -> str:
    return ev.links.line_link(fn, stmt.start, stmt.end)


# ----------------------------------------------------------------------------- parameters


@dataclass
class Init:
    kind: str  # "ones", "zeros", "normal", "code"
    text: str  # as shown
    std_field: str | None = None
    mean: float | None = None
    std: float | None = None


@dataclass
class Param:
    pattern: str
    names: list[str]
    index_field: str | None  # the config field the per-layer index runs over
    desc: Desc
    size: int  # scalars of one
    symbolic_size: str
    function: Function
    statement: Statement
    init: Init
    decay: str  # "yes", "no", a list of exceptions, or NO_RULE
    holder: str = ""  # the object of the model run that holds it (class-based layers), e.g. Net.layers[0]

    @property
    def total(self) -> int:
        return self.size * len(self.names)


@dataclass
class Params:
    params: list[Param] = field(default_factory=list)
    total: int = 0
    per_block: int = 0
    blocks: int = 0
    index_field: str | None = None
    rule: str = ""


def parameters(ev: Evidence) -> Params:
    return ev.once("params", lambda: _parameters(ev))


_RUN = re.compile(r"\d+")


def _parameters(ev: Evidence) -> Params:
    import numpy as np

    s = ev.settings
    run = model_run(ev)
    real: dict = ev.recording(PARAMS).result
    probe: dict = ev.recording(PROBE_PARAMS).result
    for what, value in (("config", real), ("probe config", probe)):
        if not isinstance(value, dict) or not all(isinstance(v, np.ndarray) for v in value.values()):
            raise TraceError(
                f"{s.init_params} must return a dict of named arrays; for the {what} it returned {type(value).__name__}"
            )
    decays = ev.recording(DECAYS).result if DECAYS in ev.requests else None
    init_fn = ev.index.function(_setting(s.init_params, "init_params"))  # set: the recordings above called it
    creators = _creators(ev, init_fn)
    placeholder_names = _placeholders(ev, creators)

    groups: dict[str, list[str]] = {}
    index_of: dict[str, tuple[str, str | None]] = {}
    for name in real:
        pattern, key = _pattern(name, real, probe, run.dims, placeholder_names)
        groups.setdefault(pattern, []).append(name)
        index_of[pattern] = (name, key)
    out = Params(rule=s.decay_rule or "")
    blocks_field = None
    for pattern, names in groups.items():
        key = index_of[pattern][1]
        first = names[0]
        twin = _twin(first, pattern, probe)
        desc = run.dims.describe(real[first], probe[twin])
        fn, stmt, value_node = _creating_statement(ev, creators, pattern, first)
        init = _init_kind(ev, fn, value_node, run.dims.real)
        _check_init(init, pattern, [real[n] for n in names], fn, stmt)
        decay = _decay_words(decays, names)
        param = Param(pattern, names, key, desc, int(real[first].size), _symbolic_size(desc), fn, stmt, init, decay)
        out.params.append(param)
        out.total += param.total
        if key:
            blocks_field = key
            out.per_block += param.size
    out.index_field = blocks_field
    out.blocks = run.dims.real.get(blocks_field, 0) if blocks_field else 0
    if out.total != sum(int(v.size) for v in real.values()):  # pragma: no cover - a bug of this module
        raise TraceError("the parameter inventory does not add up to the parameters init_params returned")
    return out


def _decay_words(decays: dict | None, names: list[str]) -> str:
    """What the optimizer's rule said of these parameters: yes, no, the answer for each, or that there is no rule."""
    if decays is None:
        return NO_RULE
    answers = {bool(decays[n]) for n in names}
    if len(answers) == 1:
        return "yes" if answers == {True} else "no"
    return "mixed: " + ", ".join(f"{n}: {'yes' if decays[n] else 'no'}" for n in names)


def _creators(ev: Evidence, init_fn: Function) -> list[Function]:
    """init_params and every source function it calls, directly or not."""
    out, todo = [init_fn], [init_fn.name]
    while todo:
        name = todo.pop()
        for site in ev.index.calls:
            if site.caller == name and site.callee in ev.index.functions:
                callee = ev.index.functions[site.callee]
                if not callee.is_test and callee not in out:
                    out.append(callee)
                    todo.append(callee.name)
    return out


def _placeholders(ev: Evidence, creators: list[Function]) -> list[tuple[str, str, str]]:
    """(text before, variable, text after) of every f-string in the creators, e.g. ('b', 'l', '.')."""
    out = []
    for fn in creators:
        for node in ast.walk(def_node(ev.project, fn)):
            if isinstance(node, ast.JoinedStr):
                parts = node.values
                for i, part in enumerate(parts):
                    if isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name):
                        prev = parts[i - 1] if i > 0 else None
                        next_ = parts[i + 1] if i + 1 < len(parts) else None
                        before = prev.value if isinstance(prev, ast.Constant) else ""
                        after = next_.value if isinstance(next_, ast.Constant) else ""
                        out.append((str(before), part.value.id, str(after)))
    return out


def _pattern(name: str, real: dict, probe: dict, dims, placeholders) -> tuple[str, str | None]:
    """``b0.ln1_g`` -> ``b{l}.ln1_g`` when its digits run over a config field (n_layers) in both runs."""
    for m in _RUN.finditer(name):
        before, after = name[: m.start()], name[m.end() :]
        values_real = {int(mm.group(0)) for n in real for mm in [_match_at(n, before, after)] if mm}
        values_probe = {int(mm.group(0)) for n in probe for mm in [_match_at(n, before, after)] if mm}
        for key, (r, p) in dims.candidates.items():
            if "*" in key or "/" in key or r is None or p is None or r == p:
                continue
            if values_real == set(range(r)) and values_probe == set(range(p)):
                var = next(
                    (v for b, v, a in placeholders if before.endswith(b) and after.startswith(a) and (b or a)), "i"
                )
                return f"{before}{{{var}}}{after}", key
    return name, None


def _match_at(name: str, before: str, after: str):
    if name.startswith(before) and name.endswith(after) and len(name) > len(before) + len(after):
        return re.fullmatch(r"\d+", name[len(before) : len(name) - len(after)])
    return None


def _twin(name: str, pattern: str, probe: dict) -> str:
    if name in probe:
        return name
    raise TraceError(
        f"the probe config's parameters have no '{name}' (pattern {pattern}); init_params must create "
        "the same parameters whatever the sizes"
    )


def _symbolic_size(desc: Desc) -> str:
    if desc.kind != "array":
        return "1"
    counts: dict[str, int] = {}
    for d in desc.dims:
        label = d.symbol or str(d.value)
        counts[label] = counts.get(label, 0) + 1
    sup = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    return "·".join(k if n == 1 else k + str(n).translate(sup) for k, n in counts.items())


def _suffix(pattern: str) -> str:
    """What the code's string constant says: the name after its last placeholder (``ln1_g``)."""
    tail = pattern.rsplit("}", 1)[-1]
    return tail.lstrip(".:/_-") or pattern


def _constants(node: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            out.add(sub.value)
    return out


Assigned = tuple[Function, ast.Assign | ast.AnnAssign, ast.expr, set[str]]


def _subscript_assignments(ev: Evidence, creators: list[Function]) -> list[Assigned]:
    """Every assignment of the creators to a subscript (``params["w"] = ...``, in a tuple too): the function,
    the statement, the value it assigns there and the strings the subscript's key holds; found once per build."""

    def find() -> list[Assigned]:
        out: list[Assigned] = []
        for fn in creators:
            for node in ast.walk(def_node(ev.project, fn)):
                if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    many = isinstance(target, (ast.Tuple, ast.List))
                    elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
                    values = node.value.elts if many and isinstance(node.value, (ast.Tuple, ast.List)) else None
                    for i, elt in enumerate(elts):
                        if isinstance(elt, ast.Subscript):
                            value = values[i] if values is not None and i < len(values) else node.value
                            out.append((fn, node, value, _constants(elt.slice)))
        return out

    return ev.once("assignments to a subscript in " + ", ".join(f.name for f in creators), find)


def _creating_statement(ev: Evidence, creators: list[Function], pattern: str, name: str):
    """The statement of init_params (or a callee) that creates ``pattern``, and the value it assigns to it."""
    suffix = _suffix(pattern)
    found = [
        (fn, node, value) for fn, node, value, keys in _subscript_assignments(ev, creators) if {suffix, name} & keys
    ]
    if not found:
        names = ", ".join(f.name for f in creators)
        raise TraceError(
            f"parameter {pattern}: no statement of {names} assigns to a key that mentions '{suffix}'; "
            'create each parameter with its name written in the code, e.g. params["' + suffix + '"] = ...'
        )
    if len({(f.name, n.lineno) for f, n, _ in found}) > 1:
        where = ", ".join(f"{f.display_path}:{n.lineno}" for f, n, _ in found)
        raise TraceError(
            f"parameter {pattern}: more than one statement assigns to '{suffix}' ({where}); "
            "the inventory cannot tell which creates it"
        )
    fn, node, value = found[0]
    stmt = next((s for s in fn.statements if s.start == node.lineno), None)
    if stmt is None:  # pragma: no cover - every simple statement is indexed
        raise TraceError(f"parameter {pattern}: the statement at {fn.display_path}:{node.lineno} is not in the index")
    return fn, stmt, value


def _call_name(node: ast.expr) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _resolve_name(ev: Evidence, fn: Function, name: str) -> ast.expr | None:
    """What a local name was assigned from in ``fn`` (``std`` -> ``cfg.init_std``), pairing tuples."""
    for node in ast.walk(def_node(ev.project, fn)):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    return node.value
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    for t, v in zip(target.elts, node.value.elts):
                        if isinstance(t, ast.Name) and t.id == name:
                            return v
    return None


def _init_kind(ev: Evidence, fn: Function, value: ast.expr, config: dict) -> Init:
    name = _call_name(value)
    if name in ("ones", "ones_like"):
        return Init("ones", "ones")
    if name in ("zeros", "zeros_like"):
        return Init("zeros", "zeros")
    if name == "normal" and isinstance(value, ast.Call):
        args = {i: a for i, a in enumerate(value.args)}
        kws = {k.arg: k.value for k in value.keywords if k.arg}
        loc, scale = kws.get("loc", args.get(0)), kws.get("scale", args.get(1))
        mean = _number(ev, fn, loc, config) if loc is not None else (0.0, None)
        std = _number(ev, fn, scale, config) if scale is not None else (1.0, None)
        if mean is not None and std is not None:
            std_text = f"{std[1]} = {fmt_value(std[0])}" if std[1] else fmt_value(std[0])
            return Init("normal", f"normal, mean {fmt_value(mean[0])}, std {std_text}", std[1], mean[0], std[0])
    return Init("code", ast.unparse(value))


def _number(ev: Evidence, fn: Function, node: ast.expr, config: dict) -> tuple[float, str | None] | None:
    """A number the code gives: a literal, or a config field read directly or through a local."""
    for _ in range(5):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value), None
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))
        ):
            return -float(node.operand.value), None
        if isinstance(node, ast.Attribute) and node.attr in config and isinstance(config[node.attr], (int, float)):
            return float(config[node.attr]), node.attr
        if isinstance(node, ast.Name):
            value = _resolve_name(ev, fn, node.id)
            if value is None:
                return None
            node = value
            continue
        return None
    return None


def _check_init(
    init: Init,
    pattern: str,
    arrays: list[np.ndarray],
    fn: Function,
    stmt: Statement,
    source: str = "init_params returned",
) -> None:
    """The values ``source`` (what gave them) agree with the initialisation the statement reads as."""
    import numpy as np

    where = f"{fn.display_path}:{stmt.start}"
    values = np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(0)
    if init.kind == "ones" and not np.all(values == 1):
        raise TraceError(f"parameter {pattern}: {where} creates it with ones, but {source} other values")
    if init.kind == "zeros" and not np.all(values == 0):
        raise TraceError(f"parameter {pattern}: {where} creates it with zeros, but {source} other values")
    if init.kind == "normal" and values.size >= 100 and init.std and init.mean is not None:
        sd, mu = float(values.std()), float(values.mean())
        if not (0.7 * init.std <= sd <= 1.3 * init.std) or abs(mu - init.mean) > 6 * init.std / np.sqrt(values.size):
            raise TraceError(
                f"parameter {pattern}: {where} reads as {init.text}, but the values {source} have "
                f"mean {mu:.3g} and std {sd:.3g}; check which config field the statement reads"
            )


# ----------------------------------------------------------------------------- parameters: rendering


def _param_rows(ev: Evidence, params: list[Param], roles: dict[str, str] | None) -> list[list[str]]:
    rows = []
    for p in params:
        name = R.code(p.pattern) + "<br>" + _stmt_link(ev, p.function, p.statement)
        if p.index_field:
            count = (
                f"{R.code(p.symbolic_size)} {p.size} per block, × {R.esc(p.index_field)} = {len(p.names)}: {p.total}"
            )
        else:
            count = f"{R.code(p.symbolic_size)} {p.size}"
        symbolic = p.desc.symbolic() if p.desc.kind != "scalar" else "scalar"
        concrete = p.desc.concrete() if p.desc.kind != "scalar" else "scalar"
        row = [name, R.code(symbolic), R.code(concrete), count, R.esc(p.init.text), R.esc(p.decay)]
        if any(q.holder for q in params):
            row.insert(1, R.code(p.holder))
        if roles is not None:
            row.append(R.esc(roles.get(p.pattern, "")))
        rows.append(row)
    return rows


def param_table(ev: Evidence, params: list[Param], roles, dims, rule: str) -> str:
    headers = [
        "Name",
        "Shape",
        "With config",
        "Scalars",
        "Initialisation",
        f"Weight decay ({rule})" if rule else "Weight decay",
    ]
    if any(p.holder for p in params):
        headers.insert(1, "Held by")
    if roles is not None:
        headers.append("Role")
    keys: list[str] = []
    for p in params:
        for k in p.desc.symbol_keys():
            if k not in keys:
                keys.append(k)
    legend = dims.legend(keys)
    out = R.table(headers, _param_rows(ev, params, roles), "trace-table trace-params")
    if legend:
        out += f'\n<p class="trace-shapes-legend">{R.esc(legend)}</p>'
    return out + "\n"


def choose_params(inv: Params, block: Block) -> tuple[list[Param], dict[str, str] | None]:
    """The parameters a trace-params block shows (each name that contains one of its ``match`` texts) and
    the role it gives each, checked against the recorded inventory."""
    chosen: list[Param] = []
    unmatched: list[str] = []
    for text in block.data["match"]:
        hits = [p for p in inv.params if text in p.pattern]
        if not hits:
            unmatched.append(text)
        chosen.extend(p for p in hits if p not in chosen)
    if unmatched:
        names = [p.pattern for p in inv.params]
        raise TraceError(
            f"no parameter name contains '{unmatched[0]}'{did_you_mean(unmatched[0], names)}; "
            f"the parameters are: {', '.join(names)}"
        )
    roles: dict[str, str] | None = None
    if block.data.get("roles") is not None:
        roles = {}
        for key, text in block.data["roles"].items():
            patterns = [p.pattern for p in chosen if p.pattern == key] or [
                p.pattern for p in chosen if str(key) in p.pattern
            ]
            if not patterns:
                raise TraceError(
                    f"role '{key}' matches none of the parameters shown ({', '.join(p.pattern for p in chosen)}); "
                    "key roles by a name pattern from the table"
                )
            for h in patterns:
                roles[h] = str(text)
    return chosen, roles


def parameters_table(ev: Evidence) -> str:
    """Every parameter of the model, with the totals of one block and of the whole model."""
    inv = parameters(ev)
    out = param_table(ev, inv.params, None, model_run(ev).dims, inv.rule)
    parts = []
    if inv.index_field:
        parts.append(f"One block: {inv.per_block:,} scalars; {inv.index_field} = {inv.blocks} blocks.")
    parts.append(f"The whole model: {inv.total:,} scalars in {sum(len(p.names) for p in inv.params)} arrays.")
    return out + f'<p class="trace-params-total">{R.esc(" ".join(parts))}</p>\n'


# ----------------------------------------------------------------------------- parameters on layer objects

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
        rule_module, rule = _split(project.index, s.decay_rule, "decay_rule")
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
    return ev.once(f"params of {cls}", lambda: _class_parameters(ev, cls))


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
        init = _init_kind(ev, a.function, a.value, run.dims.real)
        _check_init(init, a.name, [value], a.function, a.statement, f"{holder} held")
        name = f"{holder}.{a.name}"
        param = Param(
            a.name,
            [name],
            None,
            desc,
            int(value.size),
            _symbolic_size(desc),
            a.function,
            a.statement,
            init,
            _decay_words(decays, [name]),
            holder,
        )
        out.params.append(param)
        out.total += param.total
    return out

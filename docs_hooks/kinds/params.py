"""The parameter inventory: every parameter of the model, read from the code and from running it.

``init_params(cfg, rng)`` (setting ``init_params``) runs in the child for the real
and the probe config. Each parameter gets its name pattern (the per-layer index
collapsed: ``b{l}.ln1_g``), the statement that creates it (found in init_params
and its callees by the string constants of its target), its symbolic and
concrete shape, its scalar count, its initialisation read from that statement
(ones, zeros, normal with the std it reads from the config) and checked against
the values, and whether weight decay applies, decided by calling the optimizer's
own rule (setting ``decay_rule``) on it in the child.

A class-based project holds its parameters on layer objects: ``kinds.layerparams``
reads them into the same ``Params``, with the initialisation and weight decay read
here. ``kinds.paramtable`` shows either as ``trace-params`` and ``trace-inventory
of: parameters`` do (``kinds.inventory``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported in the functions that use it: `check` uses none (bench/README.md, "check")
    import numpy as np


from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.modelrun import Desc, Evidence, config_made, def_node, fmt_value, model_run
from docs_hooks.resolve.codeindex import CodeIndex, Function, Statement
from docs_hooks.run.recording import Made
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


def setting_function(index, dotted: str | None, setting: str) -> tuple[str, str]:
    """The module and the name in it of the function a setting names (``decay_rule``), or the TraceError
    saying the setting is not set or names no function of the code."""
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
        module, function = setting_function(index, s.init_params, "init_params")
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
        rule_module, rule = setting_function(index, s.decay_rule, "decay_rule")
        out[DECAYS] = Request(f"{s.decay_rule}(name, array) for each parameter", rule_module, rule, over=real)
    except TraceError as err:
        out[DECAYS] = err
    return out


NO_RULE = "the project names no rule"  # the weight decay column without the decay_rule setting


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
    return ev.once("params", _parameters, ev)


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
        init = init_kind(ev, fn, value_node, run.dims.real)
        check_init(init, pattern, [real[n] for n in names], fn, stmt)
        decay = decay_words(decays, names)
        param = Param(pattern, names, key, desc, int(real[first].size), symbolic_size(desc), fn, stmt, init, decay)
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


def decay_words(decays: dict | None, names: list[str]) -> str:
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


def symbolic_size(desc: Desc) -> str:
    """A parameter's scalar count in symbols: ``d·F``, ``d²``, ``1`` for a scalar."""
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
    return ev.once(
        "assignments to a subscript in " + ", ".join(f.name for f in creators),
        _find_subscript_assignments,
        ev,
        creators,
    )


def _find_subscript_assignments(ev: Evidence, creators: list[Function]) -> list[Assigned]:
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


def init_kind(ev: Evidence, fn: Function, value: ast.expr, config: dict) -> Init:
    """How ``value`` (what a statement of ``fn`` assigns to a parameter) initialises it: ones, zeros, normal with
    the mean and std it reads (literals or config fields), else its code."""
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


def check_init(
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

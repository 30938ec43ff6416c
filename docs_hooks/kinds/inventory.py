"""Inventories read from the code and from running it: every parameter and every config value.

Parameters: ``init_params(cfg, rng)`` (setting ``init_params``) runs in the child
for the real and the probe config. Each parameter gets its name pattern (the
per-layer index collapsed: ``b{l}.ln1_g``), the statement that creates it (found
in init_params and its callees by the string constants of its target), its
symbolic and concrete shape, its scalar count, its initialisation read from
that statement (ones, zeros, normal with the std it reads from the config) and
checked against the values, and whether weight decay applies, decided by
calling the optimizer's own rule (setting ``decay_rule``) on it in the child.

Config values: every field of the model config (setting ``model_config``) and
of the config module (setting ``config_module``) with its default and the line
that defines it, who sets it (calls that construct the model config), the value
in effect (the config ``config()`` of the model run helper returns; for the
config module's classes, the first object of that class ``config()`` made or
passed on while it ran) and every function that reads it. A field that nothing
reads is flagged.

A class-based project holds its parameters on layer objects (``self.W = ...`` in
``__init__`` or ``initialize``, or a ``params()`` dict) and its hyperparameters in
constructor arguments. Without ``init_params``, ``trace-params`` in an entry of a
layer's method shows the array attributes of every instance of that class the
model run made (found in the recordings: each object the run handled, with its
fields, see ``run.recording.Opaque``); without ``model_config`` and
``config_module``, ``trace-config`` there shows the constructor's arguments: the
signature's defaults, the calls that pass them, the values the run passed and
who reads the attribute each is kept in.

Blocks: ``trace-params``, ``trace-config`` and ``trace-inventory`` (``of:
parameters``, ``of: config``, and the site-wide tables of ``render.matrix``:
``of: matrix``, ``uncovered``, ``undocumented``, ``spec``, ``pages``). Each reads
the model run's recordings through ``kinds.modelrun.Evidence``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported in the functions that use it: `check` uses none (bench/README.md, "check")
    import numpy as np

from collections.abc import Mapping

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.base import Project, Rendered, Scope, byte_lines, source_segment
from docs_hooks.kinds.modelrun import CONFIG, RUN, Desc, Evidence, config_made, model_requests, model_run, requests_of
from docs_hooks.read.blocks import BLOCK_KINDS, Block
from docs_hooks.render import html as R
from docs_hooks.render import matrix, sources
from docs_hooks.render.links import Links
from docs_hooks.render.matrix import Site
from docs_hooks.resolve.codeindex import CodeIndex, Function, Statement, did_you_mean
from docs_hooks.resolve.values import mro
from docs_hooks.run.record import Request
from docs_hooks.run.recording import Made, Opaque
from docs_hooks.run.results import COVERAGE, Need, Results

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


# ----------------------------------------------------------------------------- source helpers


def _def_node(project: Project, fn: Function) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The ``def`` of ``fn`` in its module, as the build parsed it once."""
    node = project.definition(fn)
    if node is not None:
        return node
    raise TraceError(f"cannot find the definition of {fn.name} in {fn.display_path}")


def _display(ev: Evidence, repo_path: str) -> str:
    for fn in ev.index.functions.values():
        if fn.repo_path == repo_path:
            return fn.display_path
    s = ev.settings
    try:
        return (s.project_root / repo_path).relative_to(s.source_root).as_posix()
    except ValueError:
        return repo_path


def _line_link(ev: Evidence, repo_path: str, start: int, end: int | None = None, title: str = "") -> str:
    end = end or start
    label = R.code(R.span_label(_display(ev, repo_path), start, end))
    return R.link(label, sources.target(repo_path, start, end), title)  # to the line on its source page


def _stmt_link(ev: Evidence, fn: Function, stmt: Statement) -> str:
    return ev.links.line_link(fn, stmt.start, stmt.end)


def _comment(line: str) -> str:
    """The ``# comment`` of one source line, without the hash."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return ""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, str):
        return repr(value)
    return str(value)


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
        for node in ast.walk(_def_node(ev.project, fn)):
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
            for node in ast.walk(_def_node(ev.project, fn)):
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
    for node in ast.walk(_def_node(ev.project, fn)):
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
            std_text = f"{std[1]} = {_fmt(std[0])}" if std[1] else _fmt(std[0])
            return Init("normal", f"normal, mean {_fmt(mean[0])}, std {std_text}", std[1], mean[0], std[0])
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


def _param_table(ev: Evidence, params: list[Param], roles, dims, rule: str) -> str:
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
    out = _param_table(ev, inv.params, None, model_run(ev).dims, inv.rule)
    parts = []
    if inv.index_field:
        parts.append(f"One block: {inv.per_block:,} scalars; {inv.index_field} = {inv.blocks} blocks.")
    parts.append(f"The whole model: {inv.total:,} scalars in {sum(len(p.names) for p in inv.params)} arrays.")
    return out + f'<p class="trace-params-total">{R.esc(" ".join(parts))}</p>\n'


# ----------------------------------------------------------------------------- parameters on layer objects

#: The methods that create a layer's parameters: ``self.W = ...`` there makes W one (a value, not a constant).
CREATING_METHODS = ("__init__", "build", "initialize")
CLASS_DECAYS = "decays of the layers' parameters"


def entry_class(scope: Scope) -> str | None:
    """The class whose method the block's entry documents (a key of the index's classes), if any."""
    if scope.entry is None:
        return None
    for fn in scope.entry.functions:
        owner = fn.name.rsplit(".", 1)[0]
        if owner in scope.project.index.classes:
            return owner
    return None


def _lineage(index: CodeIndex, cls: str) -> list[str]:
    """``cls`` and its bases in the project, in the order Python looks a method up."""
    return [c for c in mro(index.bases, cls) if c in index.classes]


def _method(index: CodeIndex, cls: str, name: str) -> Function | None:
    """The method ``name`` a ``cls`` object runs: its own, else the nearest base's."""
    for owner in _lineage(index, cls):
        fn = index.functions.get(f"{owner}.{name}")
        if fn is not None:
            return fn
    return None


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
        fn = _method(index, cls, method)
        if fn is None:
            continue
        for node in ast.walk(_def_node(project, fn)):
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
    params = _method(index, cls, "params")
    if params is None:
        return list(found.values())
    keyed = []
    for node in ast.walk(_def_node(project, params)):
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


# ----------------------------------------------------------------------------- config values


@dataclass
class ConfigField:
    owner: str  # dotted class (or module) name, e.g. transformer.ModelConfig
    name: str
    default: str | None  # source text, None when required
    meaning: str  # the comment on its line
    repo_path: str
    line: int
    in_effect: Any = None
    has_effect: bool = False
    set_by: list[str] = field(default_factory=list)  # HTML
    readers: list[tuple[Function, int]] = field(default_factory=list)
    in_effect_html: str | None = None  # several values, each with the call that passed it (constructor arguments)


@dataclass
class ConfigInventory:
    groups: list[tuple[str, str, list[ConfigField]]] = field(default_factory=list)  # (owner, HTML link, fields)

    def lookup(self, name: str) -> list[ConfigField]:
        return [f for _, _, fields in self.groups for f in fields if f.name == name]

    def names(self) -> list[str]:
        return [f.name for _, _, fields in self.groups for f in fields]


def config_inventory(ev: Evidence) -> ConfigInventory:
    return ev.once("config", lambda: _config_inventory(ev))


def _class_fields(
    dotted: str, node: ast.ClassDef, repo_path: str, lines: list[str], encoded: list[bytes]
) -> list[ConfigField]:
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if "ClassVar" in ast.unparse(stmt.annotation):
                continue
            default = source_segment(encoded, stmt.value) if stmt.value is not None else None
            out.append(
                ConfigField(dotted, stmt.target.id, default, _comment(lines[stmt.lineno - 1]), repo_path, stmt.lineno)
            )
    return out


def _module_path(ev: Evidence, module: str) -> Path:
    base = ev.settings.source_root / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise TraceError(
        f"setting config_module names '{module}', but there is no {ev.settings.rel(base.with_suffix('.py'))}; "
        "fix config_module in [tool.docs_hooks]"
    )


def _instance_fields(ev: Evidence, dotted: str) -> dict:
    """The fields of the first ``dotted`` object the model run helper's ``config()`` made or passed on.

    ``config()`` builds the run's config the way training does (for this
    project, from the training settings of a run with no flags), so a settings
    object it handled holds the values in effect. Empty when it handled none.
    """
    try:
        rec = ev.recording(CONFIG)
    except TraceError:
        return {}
    for call in rec.calls:
        for value in [call.result, *call.args.values(), *call.locals.values()]:
            if isinstance(value, Opaque) and value.type == dotted:
                return dict(value.fields)
    return {}


def _config_inventory(ev: Evidence) -> ConfigInventory:
    s = ev.settings
    index = ev.index
    inv = ConfigInventory()
    methods: dict[str, set[str]] = {}
    classes: list[tuple[str, str, list[ConfigField]]] = []

    if s.model_config and s.model_config not in index.classes:
        classes.append(_dict_config(ev, s.model_config))
    elif s.model_config:
        repo_path, start, end = index.classes[s.model_config]
        path = s.project_root / repo_path
        text = path.read_text(encoding="utf-8")
        lines, encoded = text.splitlines(), byte_lines(text)
        short = s.model_config.rsplit(".", 1)[-1]
        node = next(
            (
                n
                for n in ast.walk(ev.tree(path))
                if isinstance(n, ast.ClassDef) and n.name == short and start <= n.lineno <= end
            ),
            None,
        )
        if node is None:  # pragma: no cover - the index found it there
            raise TraceError(f"cannot find class {short} in {repo_path}")
        start = node.lineno
        fields = _class_fields(s.model_config, node, repo_path, lines, encoded)
        in_effect = ev.recording(CONFIG).result
        values = in_effect.fields if hasattr(in_effect, "fields") else dict(in_effect)
        for f in fields:
            if f.name in values:
                f.in_effect, f.has_effect = values[f.name], True
        _setters(ev, s.model_config, fields)
        classes.append((s.model_config, _line_link(ev, repo_path, start, start, s.model_config), fields))

    if s.config_module:
        path = _module_path(ev, s.config_module)
        repo_path = s.rel(path)
        text = path.read_text(encoding="utf-8")
        lines, encoded = text.splitlines(), byte_lines(text)
        loose = []
        for node in ev.tree(path).body:
            if isinstance(node, ast.ClassDef):
                dotted = f"{s.config_module}.{node.name}"
                fields = _class_fields(dotted, node, repo_path, lines, encoded)
                if fields:
                    values = _instance_fields(ev, dotted)
                    for f in fields:
                        if f.name in values:
                            f.in_effect, f.has_effect = values[f.name], True
                    _setters(ev, dotted, fields)
                    classes.append((dotted, _line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and not t.id.startswith("_") and node.value is not None:
                        loose.append(
                            ConfigField(
                                s.config_module,
                                t.id,
                                source_segment(encoded, node.value),
                                _comment(lines[node.lineno - 1]),
                                repo_path,
                                node.lineno,
                            )
                        )
        if loose:
            _imported_readers(ev, s.config_module, loose)
            classes.append((s.config_module, R.code(_display(ev, repo_path)), loose))

    for owner, _, fields in classes:
        methods[owner] = {f.name for f in fields} | {
            n.rsplit(".", 1)[-1] for n in index.functions if n.startswith(owner + ".")
        }
    assigned = _classify_bases(ev, methods, s.config_module)
    for owner, _, fields in classes:
        by_name = {f.name: f for f in fields}
        for read in index.attribute_reads:
            fn = index.functions.get(read.reader)
            if fn is None or fn.is_test or read.attr not in by_name:
                continue
            if owner in assigned.get((read.reader, read.base), ()):
                by_name[read.attr].readers.append((fn, read.line))
    for _, _, fields in classes:
        for f in fields:
            unique = {(fn.name, line): (fn, line) for fn, line in f.readers}
            f.readers = sorted(unique.values(), key=lambda r: (r[0].repo_path, r[1], r[0].name))
    inv.groups = classes
    return inv


LOADED_CONFIG = "loaded config"  # the request that calls a model_config loader (a function returning a dict)


def config_requests(s: Settings, index: CodeIndex) -> dict[str, Request | TraceError]:
    """When ``model_config`` names a function (one that loads the config from YAML or JSON): one call of it."""
    name = s.model_config
    fn = index.functions.get(name) if name else None
    if fn is None:
        return {}
    return {LOADED_CONFIG: Request(f"{fn.name}()", fn.module, fn.name[len(fn.module) + 1 :])}


def _module_and_name(ev: Evidence, dotted: str) -> tuple[Path, str] | None:
    """The source file of module ``a.b`` and the name ``c`` for ``a.b.c``, when that file exists."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        base = ev.settings.source_root / Path(*parts[:i])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, ".".join(parts[i:])
    return None


def _dict_config(ev: Evidence, dotted: str) -> tuple[str, str, list[ConfigField]]:
    """The fields of a config kept in a dict: a module-level dict literal, or what a loader function returns."""
    s = ev.settings
    fn = ev.index.functions.get(dotted)
    if fn is not None:
        return _loaded_config(ev, fn)
    found = _module_and_name(ev, dotted)
    node = None
    if found is not None:
        path, name = found
        for stmt in ev.tree(path).body:
            targets = (
                stmt.targets
                if isinstance(stmt, ast.Assign)
                else [stmt.target]
                if isinstance(stmt, ast.AnnAssign)
                else []
            )
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(stmt.value, ast.Dict):
                node = stmt
    if node is None:
        raise TraceError(
            f"setting model_config names '{dotted}', which is not a class, a function or a module-level "
            f"dict of the source{did_you_mean(dotted, [*ev.index.classes, *ev.index.functions])}; "
            "fix model_config in [tool.docs_hooks]"
        )
    repo_path = s.rel(path)
    text = path.read_text(encoding="utf-8")
    lines, encoded = text.splitlines(), byte_lines(text)
    fields = []
    for key, value in zip(node.value.keys, node.value.values):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            fields.append(
                ConfigField(
                    dotted,
                    key.value,
                    source_segment(encoded, value),
                    _comment(lines[key.lineno - 1]),
                    repo_path,
                    key.lineno,
                )
            )
    values = _recorded_config(ev)
    for f in fields:
        if f.name in values:
            f.in_effect, f.has_effect = values[f.name], True
        f.set_by.append(f"the literal {R.code(dotted)}")
    _dict_readers(ev, fields)
    return dotted, _line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields


def _recorded_config(ev: Evidence) -> dict:
    """The config the model run helper's ``config()`` returned, as a dict; empty when there is no model run."""
    if ev.settings.model_run is None:
        return {}
    value = ev.recording(CONFIG).result
    return dict(value.fields) if isinstance(value, Opaque) else dict(value) if isinstance(value, dict) else {}


_DATA_FILE = re.compile(r".+\.(ya?ml|json)$")


def _loaded_config(ev: Evidence, fn: Function) -> tuple[str, str, list[ConfigField]]:
    """The fields of the dict ``fn()`` returns (it reads YAML or JSON): each defined on its line of the data file
    the function names, when it names one, else by the function."""
    s = ev.settings
    value = ev.recording(LOADED_CONFIG).result
    if not isinstance(value, dict):
        raise TraceError(
            f"setting model_config names {fn.name}, which returned {type(value).__name__}, not a dict; "
            "name a function that returns the config as a dict"
        )
    data = None
    for node in ast.walk(_def_node(ev.project, fn)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DATA_FILE.fullmatch(node.value):
            for base in (fn.file.parent, s.project_root):
                if (base / node.value).is_file():
                    data = (base / node.value).resolve()
                    break
    text = data.read_text(encoding="utf-8").splitlines() if data else []
    fields = []
    for key, val in value.items():
        line = next(
            (i for i, l in enumerate(text, 1) if re.match(rf"""\s*["']?{re.escape(str(key))}["']?\s*:""", l)), None
        )
        where = (s.rel(data), line) if data and line else (fn.repo_path, fn.start)  # a line is one of data's
        meaning = text[line - 1].partition(" #")[2].strip() if line else ""  # a YAML comment on the key's line
        field_ = ConfigField(fn.name, str(key), _fmt(val), meaning, where[0], where[1], val, True)
        field_.set_by.append(f"{R.code(fn.name + '()')} {ev.links.line_link(fn, fn.start, fn.end)} loads it")
        fields.append(field_)
    _dict_readers(ev, fields)
    head = _line_link(ev, s.rel(data), 1, 1, fn.name) if data else ev.links.line_link(fn, fn.start, fn.start)
    return fn.name, head, fields


def _dict_readers(ev: Evidence, fields: list[ConfigField]) -> None:
    """Who reads each key of a dict config: ``cfg["lr"]`` or ``cfg.get("lr")`` in the source, where every key the
    function reads through that name is a key of the config (a dict of other keys is another dict)."""
    by_name = {f.name: f for f in fields}
    for fn in sorted(ev.index.functions.values(), key=lambda f: (f.repo_path, f.start)):
        if fn.is_test:
            continue
        reads: dict[str, list[tuple[str, int]]] = {}
        for node in ast.walk(_def_node(ev.project, fn)):
            if not isinstance(node, ast.expr):
                continue
            key, base = None, None
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant)
            ):
                key, base = node.slice.value, node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key, base = node.args[0].value, node.func.value
            if isinstance(key, str) and isinstance(base, (ast.Name, ast.Attribute)):
                reads.setdefault(ast.unparse(base), []).append((key, node.lineno))
        for keys in reads.values():
            if all(k in by_name for k, _ in keys):
                for k, line in keys:
                    by_name[k].readers.append((fn, line))


def _imported_readers(ev: Evidence, module: str, fields: list[ConfigField]) -> None:
    """Who reads a module constant imported by name (``from config import LR``, then ``LR``)."""
    by_name = {f.name: f for f in fields}
    for fn in ev.index.functions.values():
        if fn.is_test:
            continue
        imported = {}
        for node in ev.tree(fn.file).body:
            if isinstance(node, ast.ImportFrom) and node.module == module and not node.level:
                imported.update({a.asname or a.name: a.name for a in node.names if a.name in by_name})
        if not imported:
            continue
        for node in ast.walk(_def_node(ev.project, fn)):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in imported:
                by_name[imported[node.id]].readers.append((fn, node.lineno))


def _classify_bases(ev, attrs_of: dict[str, set[str]], config_module: str | None) -> dict[tuple[str, str], list[str]]:
    """Which config class each (function, name) reads through: ``cfg`` in block_forward -> ModelConfig.

    A name is taken to hold a class when every attribute the function reads through
    it belongs to that class; when several classes fit, the reads through the same
    name in every function decide; when still several fit, all of them are kept
    (a reader is never dropped). ``self`` in a config class's methods is that class;
    the config module's own name reads its module-level values.
    """
    index = ev.index
    groups: dict[tuple[str, str], set[str]] = {}
    by_base: dict[str, set[str]] = {}
    for read in index.attribute_reads:
        fn = index.functions.get(read.reader)
        if fn is None or fn.is_test:
            continue
        groups.setdefault((read.reader, read.base), set()).add(read.attr)
        by_base.setdefault(read.base, set()).add(read.attr)
    out: dict[tuple[str, str], list[str]] = {}
    module_short = config_module.rsplit(".", 1)[-1] if config_module else None
    for (reader, base), attrs in groups.items():
        if base in ("self", "cls"):
            owner = reader.rsplit(".", 1)[0]
            out[(reader, base)] = [owner] if owner in attrs_of else []
            continue
        if config_module and base == module_short and config_module in attrs_of:
            out[(reader, base)] = [config_module]
            continue
        fits = [o for o, names in attrs_of.items() if attrs <= names and o != config_module]
        if len(fits) > 1:
            narrowed = [o for o in fits if by_base[base] <= attrs_of[o]]
            fits = narrowed if len(narrowed) == 1 else fits
        out[(reader, base)] = fits
    return out


def _calls_of_the_code(ev: Evidence) -> list[tuple[Function, ast.Call]]:
    """Every call in the functions of the code (not the tests'), file by file, found once per build."""

    def find() -> list[tuple[Function, ast.Call]]:
        functions = sorted(ev.index.functions.values(), key=lambda f: (f.repo_path, f.start))
        return [
            (fn, node)
            for fn in functions
            if not fn.is_test
            for node in ast.walk(_def_node(ev.project, fn))
            if isinstance(node, ast.Call)
        ]

    return ev.once("calls of the code", find)


def _setters(ev: Evidence, dotted: str, fields: list[ConfigField]) -> None:
    """Who sets each field: every call that constructs the class (``ModelConfig(...)``, ``ModelConfig.from_dict(...)``)."""
    index = ev.index
    short = dotted.rsplit(".", 1)[-1]
    own = {n.rsplit(".", 1)[-1] for n in index.functions if n.startswith(dotted + ".")}
    by_name = {f.name: f for f in fields}
    for fn, node in _calls_of_the_code(ev):
        if fn.name.startswith(dotted + "."):
            continue
        func = node.func
        direct = (isinstance(func, ast.Name) and func.id == short) or (
            isinstance(func, ast.Attribute) and func.attr == short
        )
        via = (
            isinstance(func, ast.Attribute)
            and func.attr in own
            and func.attr not in by_name
            and (
                (isinstance(func.value, ast.Name) and func.value.id == short)
                or (isinstance(func.value, ast.Attribute) and func.value.attr == short)
            )
        )
        if not (direct or via):
            continue
        stmt = next(
            (s for s in sorted(fn.statements, key=lambda s: s.end - s.start) if s.start <= node.lineno <= s.end),
            None,
        )
        link = (
            ev.links.line_link(fn, stmt.start, stmt.end) if stmt else ev.links.line_link(fn, node.lineno, node.lineno)
        )
        who = f"{R.code(fn.name)} {link}"
        if via:
            what = R.code(ast.unparse(node))
            for f in fields:
                f.set_by.append(f"{who}: every key present in {what}")
            continue
        passed: set[str] = set()
        spread = False  # a ``**kwargs``: which fields it passes is not known here
        for kw in node.keywords:
            if kw.arg is None:
                spread = True
                for f in fields:
                    f.set_by.append(f"{who}: from {R.code('**' + ast.unparse(kw.value))} when it holds the key")
                break
            if kw.arg in by_name:
                passed.add(kw.arg)
                by_name[kw.arg].set_by.append(f"{who} passes {R.code(f'{kw.arg}={ast.unparse(kw.value)}')}")
        if spread:
            continue
        for i, arg in enumerate(node.args):
            if i < len(fields):
                passed.add(fields[i].name)
                fields[i].set_by.append(f"{who} passes {R.code(ast.unparse(arg))} (argument {i + 1})")
        for f in fields:
            if f.name not in passed:
                f.set_by.append(f"{who} does not pass it: the default applies")


def _field_rows(ev: Evidence, fields: list[ConfigField], show_owner: bool) -> list[list[str]]:
    rows = []
    for f in fields:
        name = R.code(f"{f.owner.rsplit('.', 1)[-1]}.{f.name}" if show_owner else f.name)
        if f.meaning:
            name += f"<br>{R.esc(f.meaning)}"
        defined = _line_link(ev, f.repo_path, f.line, f.line, f"{f.owner}.{f.name}")
        default = R.code(f.default) if f.default is not None else "none: every caller must pass it"
        set_by = "<br>".join(f.set_by) or "nothing in the source constructs it: the default applies"
        effect = f.in_effect_html or (R.code(_fmt(f.in_effect)) if f.has_effect else "not recorded")
        if f.readers:
            by_fn: dict[str, list[tuple[Function, int]]] = {}
            for fn, line in f.readers:
                by_fn.setdefault(fn.name, []).append((fn, line))
            read = "<br>".join(
                f"{R.code(name)} " + ", ".join(ev.links.line_link(fn, line, line) for fn, line in reads)
                for name, reads in by_fn.items()
            )
        else:
            read = '<strong class="trace-unread">nothing reads it; editing it changes nothing</strong>'
        rows.append([name, defined, default, set_by, effect, read])
    return rows


CONFIG_HEADERS = ["Field", "Defined at", "Default", "Set by", "In effect", "Read by"]


NO_CONFIG = (
    "no config to show: set model_config (a dataclass or a dict) or config_module in [tool.docs_hooks], or put "
    "trace-config in an entry of a layer class's method to show its constructor's arguments"
)


def _some_config(ev: Evidence) -> ConfigInventory:
    inv = config_inventory(ev)
    if not any(fields for _, _, fields in inv.groups):
        raise TraceError(NO_CONFIG)
    return inv


def config_fields_table(ev: Evidence, names: list[str], inv: ConfigInventory | None = None) -> str:
    """The config fields a trace-config block names (every field when it names none), of ``inv`` (by default the
    project's config inventory)."""
    inv = inv if inv is not None else _some_config(ev)
    if not names:
        return _config_tables(ev, inv)
    chosen: list[ConfigField] = []
    for name in names:
        hits = inv.lookup(name)
        if not hits:
            raise TraceError(
                f"no config field '{name}'{did_you_mean(name, inv.names())}; "
                f"the fields are: {', '.join(dict.fromkeys(inv.names()))}"
            )
        chosen.extend(hits)
    return R.table(CONFIG_HEADERS, _field_rows(ev, chosen, True), "trace-table trace-config") + "\n"


def _config_tables(ev: Evidence, inv: ConfigInventory) -> str:
    out = []
    for owner, link, fields in inv.groups:
        out.append(f'<p class="trace-config-owner">{R.code(owner)} {link}</p>')
        out.append(R.table(CONFIG_HEADERS, _field_rows(ev, fields, False), "trace-table trace-config"))
    return "\n".join(out) + "\n"


def config_table(ev: Evidence) -> str:
    return _config_tables(ev, _some_config(ev))


# ----------------------------------------------------------------------------- constructor arguments


def constructor_config(ev: Evidence, cls: str) -> ConfigInventory:
    return ev.once(f"config of {cls}", lambda: _constructor_config(ev, cls))


def _constructor_config(ev: Evidence, cls: str) -> ConfigInventory:
    """A layer class's hyperparameters: its constructor's arguments, their defaults, the calls that pass them, the
    values the model run passed, and who reads the attribute each is kept in."""
    init = _method(ev.index, cls, "__init__")
    if init is None:
        raise TraceError(f"{cls} defines no __init__, so its objects take no arguments for trace-config to show")
    node = _def_node(ev.project, init)
    text = init.file.read_text(encoding="utf-8")
    lines, encoded = text.splitlines(), byte_lines(text)
    args = node.args
    positional = [*args.posonlyargs, *args.args][1:]  # not self
    defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    defaults.update({a: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    fields = []
    for a in [*positional, *args.kwonlyargs]:
        own_line = a.lineno != node.lineno  # a signature over several lines: a comment on the argument's line
        default = source_segment(encoded, defaults[a]) if a in defaults else None
        meaning = _comment(lines[a.lineno - 1]) if own_line else ""
        fields.append(ConfigField(cls, a.arg, default, meaning, init.repo_path, a.lineno))
    _setters(ev, cls, fields)
    _passed_in_the_run(ev, cls, init, fields)
    _constructor_readers(ev, cls, init, node, fields)
    link = _line_link(ev, init.repo_path, node.lineno, node.lineno, init.name)
    return ConfigInventory([(cls, link, fields)])


def _passed_in_the_run(ev: Evidence, cls: str, init: Function, fields: list[ConfigField]) -> None:
    """Each argument's value in the model run's constructions of ``cls``: one value, or each with its call."""
    try:
        rec = ev.recording(RUN)
    except TraceError:
        return  # no model run: "not recorded"
    calls = [
        c for c in rec.calls_of(init.name) if isinstance(c.args.get("self"), Opaque) and c.args["self"].type == cls
    ]
    for f in fields:
        passed = [(c, c.args[f.name]) for c in calls if f.name in c.args]
        if not passed:
            continue
        f.in_effect, f.has_effect = passed[0][1], True
        shown = [_argument_text(v) for _, v in passed]
        if len(set(shown)) > 1:
            parts = []
            for (c, _), text in zip(passed, shown):
                caller = ev.index.functions.get(c.caller or "")
                if caller is not None:
                    where = f" at {ev.links.line_link(caller, c.caller_line, c.caller_line)}"
                else:  # a call no function of the index made: the helper's own
                    where = f" in the model run helper, line {c.caller_line}"
                parts.append(f"{R.code(text)}{where}")
            f.in_effect_html = "<br>".join(parts)
        else:
            f.in_effect_html = R.code(shown[0])


def _argument_text(value: Any) -> str:
    """A recorded argument as the table shows it: an object of the project by its class."""
    if isinstance(value, Opaque):
        return value.type.rsplit(".", 1)[-1] + (" object" if value.fields else "")
    return _fmt(value)


def _constructor_readers(ev: Evidence, cls: str, init: Function, node: ast.AST, fields: list[ConfigField]) -> None:
    """Who reads each argument: the constructor itself where it uses it, and every method of the class (or of a
    base) that reads the attribute the constructor keeps it in (``self.n_units = n_units``)."""
    by_name = {f.name: f for f in fields}
    kept: dict[str, set[str]] = {}  # attribute -> the arguments kept in it
    keeping: set[tuple[str, int]] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Name) and sub.value.id in by_name:
            for target in sub.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    kept.setdefault(target.attr, set()).add(sub.value.id)
                    keeping.add((sub.value.id, sub.lineno))
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in by_name:
            if (sub.id, sub.lineno) not in keeping:
                by_name[sub.id].readers.append((init, sub.lineno))
    owners = _lineage(ev.index, cls)
    for read in ev.index.attribute_reads:
        if read.base != "self" or read.attr not in kept or read.reader == init.name:
            continue
        fn = ev.index.functions.get(read.reader)
        if fn is not None and fn.name.rsplit(".", 1)[0] in owners:
            for name in kept[read.attr]:
                by_name[name].readers.append((fn, read.line))
    for f in fields:
        unique = {(fn.name, line): (fn, line) for fn, line in f.readers}
        f.readers = sorted(unique.values(), key=lambda r: (r[0].repo_path, r[1], r[0].name))


# ----------------------------------------------------------------------------- the kinds


def parameter_requests(project: Project) -> dict[str, Request | TraceError]:
    """What the parameter inventory records: the model run's config and init_params, with the decay rule."""
    return {**model_requests(project.settings), **inventory_requests(project.settings, project.index)}


def config_requests_of(project: Project) -> dict[str, Request | TraceError]:
    """What the config inventory records: the model run's config, and a loader function's dict."""
    return {**model_requests(project.settings), **config_requests(project.settings, project.index)}


@dataclass(frozen=True)
class InventoryPlan:
    """A block that shows an inventory: which, the requests it reads, and what of the block it needs."""

    of: str  # "params", "config", or a trace-inventory table ("parameters", "matrix", ...)
    page: str
    block: Block
    project: Project
    requests: dict
    owner: str | None = None  # a class-based project: the layer class whose objects hold what is shown

    @property
    def reads_site(self) -> bool:
        """A site-wide table reads every page's entries."""
        return self.of in matrix.TABLES

    def evidence(self, results: Results, links: Links) -> Evidence:
        return Evidence(self.project, results, links, self.requests)


NO_PARAMS = (
    "trace-params shows the parameters init_params(cfg, rng) creates (set init_params in [tool.docs_hooks]), or, "
    "in an entry of a layer class's method, the arrays that class's objects hold in the model run"
)


class ParamsKind:
    name = "params"
    spec = BLOCK_KINDS["params"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        if scope.project.settings.init_params:
            return InventoryPlan("params", scope.page, block, scope.project, parameter_requests(scope.project))
        owner = entry_class(scope)
        if owner is None:
            raise TraceError(NO_PARAMS)
        requests = model_requests(scope.project.settings)
        return InventoryPlan("params", scope.page, block, scope.project, requests, owner)

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Need]:
        return requests_of(plan.requests) + _class_decay_needs(plan, done, [plan.owner] if plan.owner else [])

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        ev = plan.evidence(results, links)
        inv = class_parameters(ev, plan.owner) if plan.owner else parameters(ev)
        chosen, roles = choose_params(inv, plan.block)
        return Rendered(_param_table(ev, chosen, roles, model_run(ev).dims, inv.rule))


def _class_decay_needs(plan: InventoryPlan, done: Mapping, classes: list[str]) -> list[Need]:
    """The decay rule's requests of the layer classes, once the model run they read is recorded."""
    run = plan.requests.get(RUN)
    rec = done.get(run) if isinstance(run, Request) else None
    if rec is None or isinstance(rec, TraceError):
        return []
    out: list[Need] = []
    for cls in classes:
        request = class_decay_request(plan.project, cls, rec)
        if isinstance(request, Request):
            out.append(request)
    return out


class ConfigKind:
    name = "config"
    spec = BLOCK_KINDS["config"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        s = scope.project.settings
        owner = None if s.model_config or s.config_module else entry_class(scope)
        return InventoryPlan("config", scope.page, block, scope.project, config_requests_of(scope.project), owner)

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Request]:
        return requests_of(plan.requests)

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        ev = plan.evidence(results, links)
        names = plan.block.data.get("fields") or []
        if plan.owner is not None:
            return Rendered(config_fields_table(ev, names, constructor_config(ev, plan.owner)))
        return Rendered(config_fields_table(ev, names))


def _site(plan: InventoryPlan, results: Results, links: Links) -> Site:
    s = plan.project.settings
    tests_running = results.tests_running if s.coverage_tests else None
    return Site(
        results.site,
        plan.project.index,
        results.graph,  # the calls the runs saw too, as the entry pages show them
        links,
        results.spec,
        s.spec_pdf or "spec.pdf",
        tests_running,
    )


# trace-inventory of: ... -> (what it records, how it is made)
TABLES = {
    "parameters": (parameter_requests, lambda plan, results, links: parameters_table(plan.evidence(results, links))),
    "config": (config_requests_of, lambda plan, results, links: config_table(plan.evidence(results, links))),
    **{
        name: (
            lambda project: {},
            lambda plan, results, links, table=table: table(_site(plan, results, links), plan.page),
        )
        for name, table in matrix.TABLES.items()
    },
}


class InventoryKind:
    name = "inventory"
    spec = BLOCK_KINDS["inventory"]

    def resolve(self, block: Block, scope: Scope) -> InventoryPlan:
        of = block.data["of"]
        if of not in TABLES:
            raise TraceError(
                f"trace-inventory of: {of} has no generator in this build; available: {', '.join(sorted(TABLES))}"
            )
        return InventoryPlan(of, scope.page, block, scope.project, TABLES[of][0](scope.project))

    def needs(self, plan: InventoryPlan, done: Mapping) -> list[Need]:
        needs: list[Need] = list(requests_of(plan.requests))
        if plan.of == "matrix" and plan.project.settings.coverage_tests:
            needs.append(COVERAGE)
        return needs

    def render(self, plan: InventoryPlan, results: Results, links: Links) -> Rendered:
        return Rendered(TABLES[plan.of][1](plan, results, links))

"""The model run: every shape the real forward and backward pass saw, written in the config's symbols.

Two runs of the helper named by the ``model_run`` setting are recorded, once per
build and in one child process: ``run(config())`` gives the concrete sizes,
``run(probe(config()))`` the same computation with every size field set to a
distinct prime. A dimension is named by the one config field (or product or
quotient named in the ``symbols`` setting) whose probe value it equals, and
shown with the symbol the settings give it (``seq_len -> T``): ``(T, d)``
``(16, 32)``. Two fields that happen to be equal in the real config are told
apart this way; a probe that gives two fields the same value is an error.

Blocks: ``trace-symbols`` (what each symbol means, its name in code and its
recorded shape) and ``trace-shapes`` (the shapes at every call site of the
entry's function). ``inventory`` registers its own requests here so that the
whole build's evidence is recorded in one child process.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from docs_hooks.base.errors import TraceError

# numpy is imported in the functions that use it: `check` uses none, and importing numpy takes ~0.07 s
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import Function, did_you_mean, normalise_tokens
from docs_hooks.run.record import Request
from docs_hooks.run.recording import Made, Opaque, Recording

# ----------------------------------------------------------------------------- per-build state

RUN = "run"  # keys of the requests this module registers
PROBE_RUN = "probe run"
CONFIG = "config"
PROBE_CONFIG = "probe config"

RequestMaker = Callable[[Any], dict[str, "Request | TraceError"]]


def state(builder) -> dict:
    """This build's cache for the evidence modules: ``builder.run_state``, dropped with the builder."""
    return builder.run_state


def once(builder, key: str, compute):
    """``compute()`` once per build; a TraceError it raised is raised again on every later use."""
    st = state(builder)
    if key not in st:
        try:
            st[key] = compute()
        except TraceError as err:
            st[key] = err
    value = st[key]
    if isinstance(value, TraceError):
        raise TraceError(value.message)
    return value


def recordings(builder) -> dict[str, Recording | TraceError]:
    """Every registered request, recorded once per build, all in one child process."""
    st = state(builder)
    with st["lock"]:  # the prefetch may be recording them right now: wait for it, not twice
        return _recordings(builder, st)


def _recordings(builder, st: dict) -> dict[str, Recording | TraceError]:
    if st["recordings"] is None:
        wanted: dict[str, Request | TraceError] = {}
        for maker in st["makers"]:
            try:
                wanted.update(maker(builder))
            except TraceError as err:
                wanted[f"requests of {getattr(maker, '__name__', 'a maker')}"] = err
        requests = [r for r in wanted.values() if isinstance(r, Request)]
        try:
            done = builder.workers.recorder.record_each(requests) if requests else {}
        except TraceError as err:  # the child process itself failed: every request failed with it
            done = {r: err for r in requests}
        st["recordings"] = {key: (done[r] if isinstance(r, Request) else r) for key, r in wanted.items()}
    return st["recordings"]


def recording(builder, key: str) -> Recording:
    value = recordings(builder).get(key)
    if value is None:
        raise TraceError(f"no recording '{key}' was requested in this build")
    if isinstance(value, TraceError):
        raise TraceError(value.message)
    return value


def model_run_path(settings) -> str:
    """The ``model_run`` helper as a request names it (path from the project root), or a TraceError."""
    if settings.model_run is None:
        raise TraceError(
            "no model run: set model_run in [tool.docs_hooks] of pyproject.toml to a helper module "
            "with config(), probe(cfg) and run(cfg)"
        )
    if not settings.model_run.is_file():
        raise TraceError(
            f"the model run helper '{settings.rel(settings.model_run)}' (setting model_run) does not exist; "
            "create it with config(), probe(cfg) and run(cfg)"
        )
    return settings.rel(settings.model_run)


def config_made(settings, probe: bool = False) -> Made:
    """``config()`` of the model run helper, or ``probe(config())``, made in the child."""
    path = model_run_path(settings)
    cfg = Made(path, "config")
    return Made(path, "probe", (cfg,)) if probe else cfg


def model_requests(builder) -> dict[str, Request | TraceError]:
    try:
        path = model_run_path(builder.settings)
    except TraceError as err:
        return {RUN: err, PROBE_RUN: err, CONFIG: err, PROBE_CONFIG: err}
    real, probe = config_made(builder.settings), config_made(builder.settings, probe=True)
    return {
        RUN: Request(f"{path}: run(config())", path, "run", (real,)),
        PROBE_RUN: Request(f"{path}: run(probe(config()))", path, "run", (probe,)),
        CONFIG: Request(f"{path}: config()", path, "config"),
        PROBE_CONFIG: Request(f"{path}: probe(config())", path, "probe", (real,)),
    }


# ----------------------------------------------------------------------------- symbolic dimensions


@dataclass(frozen=True)
class Dim:
    value: int  # in the real run
    key: str | None  # config field or 'a*b' / 'a/b' it equals, None when nothing explains it
    symbol: str | None


@dataclass(frozen=True)
class Desc:
    """What a recorded value is, in both runs: an array, a scalar, a tuple of those, or other."""

    kind: str  # "array", "scalar", "tuple", "other"
    dims: tuple[Dim, ...] = ()
    items: tuple[Desc, ...] = ()
    text: str = ""

    def symbolic(self) -> str:
        if self.kind == "array":
            inner = ", ".join(d.symbol if d.symbol else str(d.value) for d in self.dims)
            return f"({inner},)" if len(self.dims) == 1 else f"({inner})"
        if self.kind == "tuple":
            return _tuple_text([i.symbolic() for i in self.items])
        return self.text

    def concrete(self) -> str:
        if self.kind == "array":
            inner = ", ".join(str(d.value) for d in self.dims)
            return f"({inner},)" if len(self.dims) == 1 else f"({inner})"
        if self.kind == "tuple":
            return _tuple_text([i.concrete() for i in self.items])
        return self.text

    def symbol_keys(self) -> list[str]:
        out: list[str] = []
        for d in self.dims:
            if d.key and d.key not in out:
                out.append(d.key)
        for item in self.items:
            for k in item.symbol_keys():
                if k not in out:
                    out.append(k)
        return out


def _tuple_text(parts: list[str]) -> str:
    return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def _config_fields(value: Any, what: str) -> dict[str, Any]:
    if isinstance(value, Opaque):
        return dict(value.fields)
    if isinstance(value, dict):
        return dict(value)
    raise TraceError(f"{what} returned {type(value).__name__} {value!r}, not a config object")


def _is_int(v: Any) -> bool:
    import numpy as np

    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class Dims:
    """Names dimensions after config fields, using the probe config to tell them apart."""

    def __init__(self, real: dict[str, Any], probe: dict[str, Any], symbols: dict[str, str], helper: str):
        self.real, self.probe, self.helper = real, probe, helper
        self.candidates: dict[str, tuple[int, int]] = {}  # key -> (real value, probe value)
        self.symbols: dict[str, str] = {}
        ints = [k for k, v in probe.items() if _is_int(v) and _is_int(real.get(k))]
        for key in ints:
            self.candidates[key] = (int(real[key]), int(probe[key]))
        for key, symbol in symbols.items():
            self.symbols[key] = str(symbol)
            m = re.fullmatch(r"\s*(\w+)\s*([*/])\s*(\w+)\s*", key)
            names = [m.group(1), m.group(3)] if m else [key.strip()]
            for name in names:
                if name not in ints:
                    raise TraceError(
                        f"setting symbols names '{key}', but '{name}' is not a whole-number field of the model "
                        f"config{did_you_mean(name, ints)} (fields: {', '.join(ints)}); fix [tool.docs_hooks.symbols]"
                    )
            if m:
                a, op, b = names[0], m.group(2), names[1]
                self.candidates[key] = (_combine(real[a], op, real[b]), _combine(probe[a], op, probe[b]))
        # The probe must separate every candidate: no two may share a value.
        seen: dict[int, str] = {}
        for key, (_, p) in self.candidates.items():
            if p is None or p < 2:
                continue
            if p in seen:
                raise TraceError(
                    f"the probe config cannot tell {seen[p]} from {key}: probe() in {helper} gives both the value {p}. "
                    "Give every size field its own prime (or a product of primes where the model needs one, "
                    "e.g. a width divisible by a head count), so that each dimension names one field"
                )
            seen[p] = key

    def dim(self, real: int, probe: int) -> Dim:
        for key, (r, p) in self.candidates.items():
            if p is not None and p >= 2 and p == probe:
                if r != real:
                    raise TraceError(
                        f"a dimension is {key} in the probe run ({probe}) but {real} in the real run, where {key} = {r}; "
                        f"run(cfg) in {self.helper} must do the same computation whatever the sizes"
                    )
                return Dim(real, key, self.symbols.get(key, key))
        return Dim(real, None, None)

    def describe(self, real: Any, probe: Any) -> Desc:
        """The shape of a value recorded in the real run, named with the probe run's twin."""

        import numpy as np

        if isinstance(real, np.ndarray) and real.ndim > 0:
            if not isinstance(probe, np.ndarray) or probe.ndim != real.ndim:
                raise TraceError(
                    f"the real run recorded an array of shape {real.shape} where the probe run recorded "
                    f"{_short(probe)}; run(cfg) in {self.helper} must do the same computation whatever the sizes"
                )
            return Desc("array", tuple(self.dim(int(r), int(p)) for r, p in zip(real.shape, probe.shape)))
        if isinstance(real, (int, float, complex, np.number, np.bool_, bool)) or (
            isinstance(real, np.ndarray) and real.ndim == 0
        ):
            return Desc("scalar", text="scalar")
        if isinstance(real, (tuple, list)) and isinstance(probe, (tuple, list)) and len(real) == len(probe):
            return Desc("tuple", items=tuple(self.describe(r, p) for r, p in zip(real, probe)))
        if real is None:
            return Desc("other", text="None")
        if isinstance(real, Opaque):
            return Desc("other", text=real.type.rsplit(".", 1)[-1])
        if isinstance(real, dict):
            return Desc("other", text=f"dict of {len(real)}")
        return Desc("other", text=type(real).__name__)

    def legend(self, keys: list[str]) -> str:
        """``T = seq_len = 16. d = emb_dim = 32.`` for the keys used."""
        parts = []
        for key in keys:
            symbol = self.symbols.get(key, key)
            value = self.candidates[key][0]
            parts.append(f"{symbol} = {key} = {value}" if symbol != key else f"{key} = {value}")
        return ". ".join(parts) + ("." if parts else "")


def _combine(a: Any, op: str, b: Any) -> int | None:
    a, b = int(a), int(b)
    if op == "*":
        return a * b
    return a // b if b and a % b == 0 else None


def _short(value: Any) -> str:
    import numpy as np

    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return f"{type(value).__name__} {value!r}"[:80]


@dataclass
class ModelRun:
    real: Recording
    probe: Recording
    dims: Dims
    helper: str  # path of the helper, for messages
    files: dict = field(default_factory=dict)  # path -> {line: [(statement, call)]}, for call sites

    def first_calls(self, name: str):
        real, probe = self.real.calls_of(name), self.probe.calls_of(name)
        if not real or not probe:
            return None
        return real[0], probe[0]


def model_run(builder) -> ModelRun:
    """The model run of this build: both recordings and the symbol namer (computed once per build)."""

    def compute() -> ModelRun:
        helper = model_run_path(builder.settings)
        real_cfg = _config_fields(recording(builder, CONFIG).result, f"config() in {helper}")
        probe_cfg = _config_fields(recording(builder, PROBE_CONFIG).result, f"probe(cfg) in {helper}")
        dims = Dims(real_cfg, probe_cfg, builder.settings.symbols, helper)
        return ModelRun(recording(builder, RUN), recording(builder, PROBE_RUN), dims, helper)

    return once(builder, "model_run", compute)


# ----------------------------------------------------------------------------- trace-symbols

ROW_KEYS = ("symbol", "meaning", "code", "shape")
NAMES = re.compile(r"^\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*$")


def _functions(ctx, block, what: str) -> list[Function]:
    names = block.data.get("function")
    if names:
        return [ctx.builder.index.function(n) for n in names]
    if ctx.entry is None:
        raise TraceError(
            f"{what} outside an entry; put it below a trace-entry block, or name the function with function:"
        )
    return list(ctx.entry.functions)


def _math(ctx, symbol: str, line: int) -> str:
    """The symbol's TeX, handed to the build's math renderer as it is (not HTML-escaped)."""
    tex = symbol.strip()
    if len(tex) > 1 and tex.startswith("$") and tex.endswith("$"):
        tex = tex[1:-1].strip()
    placeholder = getattr(ctx, "math_placeholder", None)
    if placeholder is None:  # a core without build-time math: leave $...$ to the page's renderer
        return R.esc(f"${tex}$")
    return placeholder(tex, False, line)


def symbols_block(ctx, block) -> str:
    b = ctx.builder
    functions = _functions(ctx, block, "trace-symbols")
    rows = []
    run: ModelRun | None = None
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
                    " (a local name of the function, or 'none' when the code does not name it)" if key == "code" else ""
                )
                raise TraceError(f"row {number} of trace-symbols has no '{key}'{hint}")
        symbol, meaning, code = str(row["symbol"]), str(row["meaning"]), str(row["code"]).strip()
        if code.lower() == "none":
            code_html = "not named in the code"
            spec = str(row["shape"]).strip() if row.get("shape") is not None else None
            if spec is None:
                shape_html = "not recorded"
            elif spec.lower() == "scalar":
                shape_html = "scalar"
            else:
                fn, expr = _expression_in(functions, spec, symbol)
                run = run or model_run(b)
                shape_html = _shape_html([_evaluate(run, fn, expr, symbol)])
        else:
            if row.get("shape") is not None:
                raise TraceError(
                    f"row {number} of trace-symbols ({symbol}) has both code and shape; the shape of a named "
                    "value is recorded, so remove 'shape'"
                )
            run = run or model_run(b)
            code_html = R.code(code)
            if NAMES.match(code):
                descs = []
                for name in [n.strip() for n in code.split(",")]:
                    fn = _owner(functions, name, symbol)
                    descs.append(_local_desc(run, fn, name))
            else:
                fn, expr = _expression_in(functions, code, symbol)
                descs = [_evaluate(run, fn, expr, symbol)]
            shape_html = _shape_html(descs)
        rows.append([_math(ctx, symbol, block.field_line("rows")), R.esc(meaning), code_html, shape_html])
    if run is not None and all(run.first_calls(fn.name) is None for fn in functions):
        # Nothing to show in a Shape column: say why once, instead of on every row.
        names = " or ".join(R.code(fn.name) for fn in functions)
        note = (
            f'<p class="trace-note">The model run does not call {names}, so no shape is recorded '
            "for these symbols; the worked example shows their values.</p>"
        )
        return (
            R.table(["Symbol", "Meaning", "In code"], [r[:3] for r in rows], "trace-table trace-symbols")
            + "\n"
            + note
            + "\n"
        )
    return R.table(["Symbol", "Meaning", "In code", "Shape"], rows, "trace-table trace-symbols") + "\n"


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


def _local_desc(run: ModelRun, fn: Function, name: str) -> Desc | None:
    calls = run.first_calls(fn.name)
    if calls is None:
        return None
    real, probe = calls
    if name not in real.locals or name not in probe.locals:
        return None  # assigned on a path the run did not take
    return run.dims.describe(real.locals[name], probe.locals[name])


def _expression_in(functions: list[Function], text: str, symbol: str) -> tuple[Function, str]:
    """The full expression of the code that ``text`` stands for, and its function.

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
        src_lines = [line.encode() for line in src.split("\n")]  # ast columns count UTF-8 bytes
        for node in ast.walk(tree):
            if not isinstance(node, ast.expr):
                continue
            seg = _source_of(src_lines, node)
            if not seg:
                continue
            have = normalise_tokens(seg)
            postfix = isinstance(node, (ast.Call, ast.Attribute, ast.Subscript))  # `x.mean(...)`, not `a - x.mean(...)`
            if have == want or (suffix and postfix and have.endswith(want)):
                found.append((node.lineno, node.col_offset, seg))
        if found:
            return fn, sorted(found)[0][2]
    where = " or ".join(f.name for f in functions)
    raise TraceError(
        f"symbol '{symbol}': '{text.strip()}' is neither a local name nor an expression in the code of {where}; "
        "write a local name, an expression copied from the function, or 'none'"
    )


def _source_of(lines: list[bytes], node: ast.expr) -> str:
    """``ast.get_source_segment`` on source already split into lines (it would split it per node)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset : node.end_col_offset].decode()
    chunk = [lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    return b"\n".join(chunk).decode()


def _evaluate(run: ModelRun, fn: Function, expr: str, symbol: str) -> Desc | None:
    import numpy as np

    calls = run.first_calls(fn.name)
    if calls is None:
        return None
    values = []
    for call in calls:
        names = {"np": np, "numpy": np}
        names.update(call.locals)
        try:
            values.append(eval(compile(expr, "<symbol>", "eval"), names))  # code copied from the function itself
        except Exception as exc:
            raise TraceError(
                f"symbol '{symbol}': cannot evaluate '{expr}' on the recorded locals of {fn.name}: "
                f"{type(exc).__name__}: {exc}; use an expression of the function's locals and numpy"
            ) from None
    return run.dims.describe(values[0], values[1])


def _shape_html(descs: list[Desc | None]) -> str:
    if any(d is None for d in descs):
        return "not reached by the model run"
    if all(d.kind == "scalar" for d in descs):
        return "scalar"
    symbolic = " and ".join(d.symbolic() for d in descs)
    concrete = " and ".join(d.concrete() for d in descs)
    if symbolic == concrete:
        return R.code(symbolic)
    return f"{R.code(symbolic)} {R.code(concrete)}"


# ----------------------------------------------------------------------------- trace-shapes


@dataclass
class SiteShapes:
    caller: Function
    start: int
    end: int
    line: int
    reached: bool
    values: list[tuple[str, str, Desc]]  # (name in the caller, "input" / "output", shape)


def shapes_block(ctx, block) -> str:
    b = ctx.builder
    functions = _functions(ctx, block, "trace-shapes")
    run = model_run(b)
    labels = _labels(ctx, block)
    out = []
    if block.data.get("caption"):
        out.append(f"<p>{R.esc(block.data['caption'])}</p>")
    sites = []
    for fn in functions:
        for site in b.index.calls_to(fn.name):
            caller = b.index.functions[site.caller]
            if caller.is_test:
                continue
            sites.append((caller.repo_path, site.statement.start, site.line, fn, site, caller))
    if not sites:
        raise TraceError(
            f"nothing in the source calls {', '.join(f.name for f in functions)}, so there are no call sites to show; "
            "remove the trace-shapes block"
        )
    used_labels = set()
    for _, _, _, fn, site, caller in sorted(sites, key=lambda s: s[:3]):
        data = site_shapes(b, run, fn, site, caller)
        label = labels.get((caller.name, site.statement.start))
        if label is not None:
            used_labels.add((caller.name, site.statement.start))
        out.append(_render_site(b, run, data, fn, label))
    for key, text in labels.items():
        if key not in used_labels:
            raise TraceError(
                f"the label '{text}' names a statement of {key[0]} that calls none of "
                f"{', '.join(f.name for f in functions)}; point its ref at a call site"
            )
    return "\n".join(out) + "\n"


def _labels(ctx, block) -> dict[tuple[str, int], str]:
    out = {}
    for number, item in enumerate(block.data.get("names") or [], 1):
        if set(item) - {"ref", "label"} or "ref" not in item or "label" not in item:
            raise TraceError(
                f"item {number} of 'names' in trace-shapes must have exactly ref (module.function: statement text) and label"
            )
        resolved = ctx.resolve(str(item["ref"]), block.field_line("names"), f"shapes label {item['label']}")
        if resolved is None:
            continue  # the problem is recorded by ctx.resolve
        start = resolved.statement.start if resolved.statement else resolved.function.start
        out[(resolved.function.name, start)] = str(item["label"])
    return out


def _calls_by_line(run: ModelRun, fn: Function) -> dict[int, list[tuple[ast.stmt, ast.Call]]]:
    """Every call in the module of ``fn``, by its line, with each statement that holds it (parsed once)."""
    found = run.files.get(fn.file)
    if found is None:
        found = run.files[fn.file] = {}
        for node in ast.walk(ast.parse(fn.file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.stmt):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        found.setdefault(sub.lineno, []).append((node, sub))
    return found


def site_shapes(builder, run: ModelRun, callee: Function, site, caller: Function) -> SiteShapes:
    """The inputs and outputs named at one call site, with their recorded shapes.

    A call of an instance (``self.norm(X)`` reaching ``LayerNorm.forward`` through
    ``__call__``) shows what the call itself was given and returned: the recorded
    call of the ``__call__`` it goes through.
    """
    through = builder.index.functions.get(site.via) if getattr(site, "via", "") else None
    if through is not None:
        callee, short = through, site.written
    else:
        short = callee.short_name if callee.short_name != "__init__" else callee.name.split(".")[-2]
    call, stmt = None, None
    for node, sub in _calls_by_line(run, caller).get(site.line, ()):  # the innermost statement wins
        if _func_name(sub.func) == short:
            if stmt is None or (node.end_lineno - node.lineno) <= (stmt.end_lineno - stmt.lineno):
                call, stmt = sub, node
    recorded = _recorded_call(run, callee, caller, site)
    data = SiteShapes(caller, site.statement.start, site.statement.end, site.line, recorded is not None, [])
    if call is None or recorded is None:
        return data
    real, probe = recorded
    positional = [p for p in callee.params]
    if callee.short_name == "__init__" or (
        positional and positional[0] in ("self", "cls") and "." in callee.name[len(callee.module) + 1 :]
    ):
        positional = positional[1:]
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if isinstance(arg, ast.Name) and i < len(positional):
            param = positional[i]
            if param in real.args and param in probe.args:
                data.values.append((arg.id, "input", run.dims.describe(real.args[param], probe.args[param])))
    for kw in call.keywords:
        if kw.arg and isinstance(kw.value, ast.Name) and kw.arg in real.args and kw.arg in probe.args:
            data.values.append((kw.value.id, "input", run.dims.describe(real.args[kw.arg], probe.args[kw.arg])))
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is call:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            _unpack(target, real.result, probe.result, run, data)
    return data


def _func_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _unpack(target: ast.expr, real: Any, probe: Any, run: ModelRun, data: SiteShapes) -> None:
    if isinstance(target, ast.Name):
        data.values.append((target.id, "output", run.dims.describe(real, probe)))
    elif isinstance(target, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return
        if (
            isinstance(real, (tuple, list))
            and isinstance(probe, (tuple, list))
            and len(real) == len(target.elts) == len(probe)
        ):
            for elt, r, p in zip(target.elts, real, probe):
                _unpack(elt, r, p, run, data)


def _recorded_call(run: ModelRun, callee: Function, caller: Function, site):
    def pick(rec: Recording):
        calls = [
            c
            for c in rec.calls_of(callee.name)
            if c.caller == caller.name and site.statement.start <= c.caller_line <= site.statement.end
        ]
        exact = [c for c in calls if c.caller_line == site.line]
        return (exact or calls or [None])[0]

    real, probe = pick(run.real), pick(run.probe)
    return None if real is None or probe is None else (real, probe)


def _render_site(b, run: ModelRun, data: SiteShapes, callee: Function, label: str | None) -> str:
    link = b.links.line_link(data.caller, data.start, data.end)
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
        return head + "\n<p>This call names no input or output with a plain name.</p>"
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


# ----------------------------------------------------------------------------- attach


def prefetch_model_run(builder, parsed: dict) -> None:
    """Record the model run early when some page shows what it saw (see Builder.prefetch)."""
    plain = {"entry", "equation", "excerpt", "example"}
    if any(block.kind not in plain for page in parsed.values() for block in page.blocks):
        recordings(builder)


def shapes_references(ctx, block) -> None:
    """The code references of a trace-shapes block (its labels' refs), resolved without running anything."""
    _labels(ctx, block)


__all__ = [
    "model_requests",
    "prefetch_model_run",
    "shapes_references",
    "model_run",
    "recordings",
    "Dims",
    "Desc",
    "ModelRun",
    "config_made",
]

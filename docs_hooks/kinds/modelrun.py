"""The model run: one real forward and backward pass, recorded, and its dimensions named after the config.

Two runs of the helper named by the ``model_run`` setting are recorded, once per
build and in one child process: ``run(config())`` gives the concrete sizes,
``run(probe(config()))`` the same computation with every size field set to a
distinct prime. A dimension is named by the one config field (or product or
quotient named in the ``symbols`` setting) whose probe value it equals, and
shown with the symbol the settings give it (``seq_len -> T``): ``(T, d)``
``(16, 32)``. Two fields that happen to be equal in the real config are told
apart this way; a probe that gives two fields the same value is an error.

Not a block kind: what the kinds that show the model run share (``trace-symbols``,
``trace-shapes``, ``trace-params``, ``trace-config``, ``trace-inventory``). Their
render reads it through ``Evidence``: the project, the run's results and the
links, the three things a kind's render is given. The inventories (``kinds.params``,
``kinds.config``) share the helpers at the end: a link to a line, a definition, a
layer class's methods; ``trace-symbols`` and ``trace-shapes`` the functions a block shows.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.base import Project, Scope
from docs_hooks.read.blocks import Block
from docs_hooks.render import html as R
from docs_hooks.render import sources
from docs_hooks.render.links import Links
from docs_hooks.resolve.codeindex import CodeIndex, Function, did_you_mean
from docs_hooks.resolve.hierarchy import mro
from docs_hooks.run.recording import Call, Made, Opaque, Recording
from docs_hooks.run.request import Request
from docs_hooks.run.results import Results

T = TypeVar("T")

RUN = "run"  # the model run's requests, by key
PROBE_RUN = "probe run"
CONFIG = "config"
PROBE_CONFIG = "probe config"

Requests = dict[str, "Request | TraceError"]


def model_run_path(settings: Settings) -> str:
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


def config_made(settings: Settings, probe: bool = False) -> Made:
    """``config()`` of the model run helper, or ``probe(config())``, made in the child."""
    path = model_run_path(settings)
    cfg = Made(path, "config")
    return Made(path, "probe", (cfg,)) if probe else cfg


def model_requests(settings: Settings) -> Requests:
    """The model run's four requests (or the reason there are none, for each)."""
    try:
        path = model_run_path(settings)
    except TraceError as err:
        return {RUN: err, PROBE_RUN: err, CONFIG: err, PROBE_CONFIG: err}
    real, probe = config_made(settings), config_made(settings, probe=True)
    return {
        RUN: Request(f"{path}: run(config())", path, "run", (real,)),
        PROBE_RUN: Request(f"{path}: run(probe(config()))", path, "run", (probe,)),
        CONFIG: Request(f"{path}: config()", path, "config"),
        PROBE_CONFIG: Request(f"{path}: probe(config())", path, "probe", (real,)),
    }


def requests_of(requests: Requests) -> list[Request]:
    """The requests that can be made (the others are errors, reported where they are shown)."""
    return [r for r in requests.values() if isinstance(r, Request)]


@dataclass
class Evidence:
    """What the render of a kind that reads recordings gets to work with: the project (the code index and the
    settings), the run's results and the links. ``requests`` are the recordings it may ask for, by key."""

    project: Project
    results: Results
    links: Links
    requests: Requests = field(default_factory=dict)

    @property
    def settings(self) -> Settings:
        return self.project.settings

    @property
    def index(self) -> CodeIndex:
        return self.project.index

    def recording(self, key: str) -> Recording:
        """The recording of the request ``key``; the TraceError that kept it from being made, or its failure."""
        request = self.requests.get(key)
        if request is None:
            raise TraceError(f"no recording '{key}' was requested in this build")
        if isinstance(request, TraceError):
            raise TraceError(request.message)
        return self.results.recording(request)

    def once(self, key: str, compute: Callable[..., T], *args: Any) -> T:
        """``compute(*args)`` once per build (see Results.derived: a module's function, and arguments that a later
        build can give again with its own objects)."""
        return self.results.derived(key, compute, *args)

    def tree(self, path: Path):
        return self.project.tree(path)


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

    trace_vars: ClassVar[bool] = True  # its attributes are all it holds (base.reads)

    def __init__(self, real: dict[str, Any], probe: dict[str, Any], symbols: dict[str, str], helper: str) -> None:
        self.real, self.probe, self.helper = real, probe, helper
        # key -> (real value, probe value); None where a quotient 'a/b' is no whole number
        self.candidates: dict[str, tuple[int | None, int | None]] = {}
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

    def first_calls(self, name: str) -> tuple[Call, Call] | None:
        real, probe = self.real.calls_of(name), self.probe.calls_of(name)
        if not real or not probe:
            return None
        return real[0], probe[0]


def model_run(ev: Evidence) -> ModelRun:
    """The model run of this build: both recordings and the symbol namer (computed once per build)."""
    return ev.once("model_run", _model_run, ev)


def _model_run(ev: Evidence) -> ModelRun:
    helper = model_run_path(ev.settings)
    real_cfg = _config_fields(ev.recording(CONFIG).result, f"config() in {helper}")
    probe_cfg = _config_fields(ev.recording(PROBE_CONFIG).result, f"probe(cfg) in {helper}")
    dims = Dims(real_cfg, probe_cfg, ev.settings.symbols, helper)
    return ModelRun(ev.recording(RUN), ev.recording(PROBE_RUN), dims, helper)


# ----------------------------------------------------------------------------- what the inventories share


def def_node(project: Project, fn: Function) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The ``def`` of ``fn`` in its module, as the build parsed it once."""
    node = project.definition(fn)
    if node is not None:
        return node
    raise TraceError(f"cannot find the definition of {fn.name} in {fn.display_path}")


def display_path_of(ev: Evidence, repo_path: str) -> str:
    """How the pages name a file of the project: as its functions are named (from the code root), else as it is.
    A fact of its own for each file, made once per build (see base.reads): a function added to another file, or
    the first one added to this file, leaves a page that names it as it was."""
    return ev.once(f"display path of {repo_path}", _display_path, ev, repo_path)


def _display_path(ev: Evidence, repo_path: str) -> str:
    for fn in ev.index.functions.values():
        if fn.repo_path == repo_path:
            return fn.display_path
    s = ev.settings
    try:
        return (s.project_root / repo_path).relative_to(s.source_root).as_posix()
    except ValueError:
        return repo_path


def source_line_link(ev: Evidence, repo_path: str, start: int, end: int | None = None, title: str = "") -> str:
    """A link to lines of a file on its source page, labelled with the file and the lines."""
    end = end or start
    label = R.code(R.span_label(display_path_of(ev, repo_path), start, end))
    return R.link(label, sources.target(repo_path, start, end), title)  # to the line on its source page


def line_comment(line: str) -> str:
    """The ``# comment`` of one source line, without the hash."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return ""


def fmt_value(value: Any) -> str:
    """A value of the code as a table shows it: a float in its shortest form, a string quoted."""
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, str):
        return repr(value)
    return str(value)


def block_functions(block: Block, scope: Scope, what: str) -> list[Function]:
    """The functions a block shows (``trace-symbols``, ``trace-shapes``): those its ``function:`` names, else its
    entry's (``what`` names the block in the message when it has neither)."""
    names = block.data.get("function")
    if names:
        return [scope.function(n) for n in names]
    if scope.entry is None:
        raise TraceError(
            f"{what} outside an entry; put it below a trace-entry block, or name the function with function:"
        )
    return list(scope.entry.functions)


def entry_class(scope: Scope) -> str | None:
    """The class whose method the block's entry documents (a key of the index's classes), if any."""
    if scope.entry is None:
        return None
    for fn in scope.entry.functions:
        owner = fn.name.rsplit(".", 1)[0]
        if owner in scope.project.index.classes:
            return owner
    return None


def lineage(index: CodeIndex, cls: str) -> list[str]:
    """``cls`` and its bases in the project, in the order Python looks a method up."""
    return [c for c in mro(index.bases, cls) if c in index.classes]


def method_of(index: CodeIndex, cls: str, name: str) -> Function | None:
    """The method ``name`` a ``cls`` object runs: its own, else the nearest base's."""
    for owner in lineage(index, cls):
        fn = index.functions.get(f"{owner}.{name}")
        if fn is not None:
            return fn
    return None

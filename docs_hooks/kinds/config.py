"""The config inventory: every config value, read from the code and from running it.

Every field of the model config (setting ``model_config``) and of the config
module (setting ``config_module``) with its default and the line that defines it,
who sets it (calls that construct the model config), the value in effect (the
config ``config()`` of the model run helper returns; for the config module's
classes, the first object of that class ``config()`` made or passed on while it
ran) and every function that reads it. A field that nothing reads is flagged.

A class-based project keeps its hyperparameters in constructor arguments: without
``model_config`` and ``config_module``, the inventory of a layer's method shows
the constructor's arguments: the signature's defaults, the calls that pass them,
the values the run passed and who reads the attribute each is kept in.

Shown by ``trace-config`` and ``trace-inventory of: config`` (``kinds.inventory``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import Settings
from docs_hooks.kinds.base import byte_lines, source_segment
from docs_hooks.kinds.modelrun import (
    CONFIG,
    RUN,
    Evidence,
    def_node,
    display_path_of,
    fmt_value,
    line_comment,
    lineage,
    method_of,
    source_line_link,
)
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import CodeIndex, Function, did_you_mean
from docs_hooks.run.recording import Opaque
from docs_hooks.run.request import Request

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
                ConfigField(
                    dotted, stmt.target.id, default, line_comment(lines[stmt.lineno - 1]), repo_path, stmt.lineno
                )
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
        classes.append((s.model_config, source_line_link(ev, repo_path, start, start, s.model_config), fields))

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
                    classes.append((dotted, source_line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and not t.id.startswith("_") and node.value is not None:
                        loose.append(
                            ConfigField(
                                s.config_module,
                                t.id,
                                source_segment(encoded, node.value),
                                line_comment(lines[node.lineno - 1]),
                                repo_path,
                                node.lineno,
                            )
                        )
        if loose:
            _imported_readers(ev, s.config_module, loose)
            classes.append((s.config_module, R.code(display_path_of(ev, repo_path)), loose))

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
                    line_comment(lines[key.lineno - 1]),
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
    return dotted, source_line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields


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
    for node in ast.walk(def_node(ev.project, fn)):
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
        field_ = ConfigField(fn.name, str(key), fmt_value(val), meaning, where[0], where[1], val, True)
        field_.set_by.append(f"{R.code(fn.name + '()')} {ev.links.line_link(fn, fn.start, fn.end)} loads it")
        fields.append(field_)
    _dict_readers(ev, fields)
    head = source_line_link(ev, s.rel(data), 1, 1, fn.name) if data else ev.links.line_link(fn, fn.start, fn.start)
    return fn.name, head, fields


def _dict_readers(ev: Evidence, fields: list[ConfigField]) -> None:
    """Who reads each key of a dict config: ``cfg["lr"]`` or ``cfg.get("lr")`` in the source, where every key the
    function reads through that name is a key of the config (a dict of other keys is another dict)."""
    by_name = {f.name: f for f in fields}
    for fn in sorted(ev.index.functions.values(), key=lambda f: (f.repo_path, f.start)):
        if fn.is_test:
            continue
        reads: dict[str, list[tuple[str, int]]] = {}
        for node in ast.walk(def_node(ev.project, fn)):
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
        for node in ast.walk(def_node(ev.project, fn)):
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
            for node in ast.walk(def_node(ev.project, fn))
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
        defined = source_line_link(ev, f.repo_path, f.line, f.line, f"{f.owner}.{f.name}")
        default = R.code(f.default) if f.default is not None else "none: every caller must pass it"
        set_by = "<br>".join(f.set_by) or "nothing in the source constructs it: the default applies"
        effect = f.in_effect_html or (R.code(fmt_value(f.in_effect)) if f.has_effect else "not recorded")
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
    init = method_of(ev.index, cls, "__init__")
    if init is None:
        raise TraceError(f"{cls} defines no __init__, so its objects take no arguments for trace-config to show")
    node = def_node(ev.project, init)
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
        meaning = line_comment(lines[a.lineno - 1]) if own_line else ""
        fields.append(ConfigField(cls, a.arg, default, meaning, init.repo_path, a.lineno))
    _setters(ev, cls, fields)
    _passed_in_the_run(ev, cls, init, fields)
    _constructor_readers(ev, cls, init, node, fields)
    link = source_line_link(ev, init.repo_path, node.lineno, node.lineno, init.name)
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
    return fmt_value(value)


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
    owners = lineage(ev.index, cls)
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

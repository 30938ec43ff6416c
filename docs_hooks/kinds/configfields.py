"""Where each field of the project's config is defined, and the value it held in the run.

The config takes one of four shapes, each read into ``ConfigField`` rows: a
dataclass (setting ``model_config``), a config module's classes and constants
(setting ``config_module``), a dict (``model_config`` naming a module-level dict
literal, or a function that loads it from YAML or JSON), and, in a class-based
project, a layer constructor's arguments. Each field gets the line that defines
it, its default as written, the comment on that line and the value in effect:
the config ``config()`` of the model run helper returns; for the config module's
classes, the first object of that class ``config()`` made or passed on while it
ran; for a constructor, the values the model run passed.

Who sets and who reads each field is ``kinds.configreaders``; ``kinds.config``
puts the two together.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docs_hooks.base.errors import TraceError
from docs_hooks.kinds.base import byte_lines, source_segment
from docs_hooks.kinds.modelrun import (
    CONFIG,
    RUN,
    Evidence,
    def_node,
    display_path_of,
    fmt_value,
    line_comment,
    method_of,
    source_line_link,
)
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import Function, did_you_mean
from docs_hooks.run.recording import Opaque


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


Group = tuple[str, str, list[ConfigField]]  # one table of the inventory: (owner, HTML link, fields)


@dataclass
class ConfigInventory:
    groups: list[Group] = field(default_factory=list)

    def lookup(self, name: str) -> list[ConfigField]:
        return [f for _, _, fields in self.groups for f in fields if f.name == name]

    def names(self) -> list[str]:
        return [f.name for _, _, fields in self.groups for f in fields]


LOADED_CONFIG = "loaded config"  # the request that calls a model_config loader (a function returning a dict)


# ----------------------------------------------------------------------------- dataclasses and config modules


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


def dataclass_config(ev: Evidence, dotted: str) -> Group:
    """The fields of the dataclass ``model_config`` names, each with the value of the config ``config()`` returns."""
    s = ev.settings
    repo_path, start, end = ev.index.classes[dotted]
    path = s.project_root / repo_path
    text = ev.project.text(path)
    lines, encoded = text.splitlines(), byte_lines(text)
    short = dotted.rsplit(".", 1)[-1]
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
    fields = _class_fields(dotted, node, repo_path, lines, encoded)
    in_effect = ev.recording(CONFIG).result
    values = in_effect.fields if hasattr(in_effect, "fields") else dict(in_effect)
    for f in fields:
        if f.name in values:
            f.in_effect, f.has_effect = values[f.name], True
    return dotted, source_line_link(ev, repo_path, start, start, dotted), fields


def module_config(ev: Evidence, module: str) -> list[Group]:
    """The fields of the config module: those of each class it defines, with the values of the first object of that
    class ``config()`` handled, then its public constants, as a last group owned by the module itself."""
    s = ev.settings
    path = _module_path(ev, module)
    repo_path = s.rel(path)
    text = ev.project.text(path)
    lines, encoded = text.splitlines(), byte_lines(text)
    groups: list[Group] = []
    loose = []
    for node in ev.tree(path).body:
        if isinstance(node, ast.ClassDef):
            dotted = f"{module}.{node.name}"
            fields = _class_fields(dotted, node, repo_path, lines, encoded)
            if fields:
                values = _instance_fields(ev, dotted)
                for f in fields:
                    if f.name in values:
                        f.in_effect, f.has_effect = values[f.name], True
                groups.append((dotted, source_line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and not t.id.startswith("_") and node.value is not None:
                    loose.append(
                        ConfigField(
                            module,
                            t.id,
                            source_segment(encoded, node.value),
                            line_comment(lines[node.lineno - 1]),
                            repo_path,
                            node.lineno,
                        )
                    )
    if loose:
        groups.append((module, R.code(display_path_of(ev, repo_path)), loose))
    return groups


# ----------------------------------------------------------------------------- dicts


def _module_and_name(ev: Evidence, dotted: str) -> tuple[Path, str] | None:
    """The source file of module ``a.b`` and the name ``c`` for ``a.b.c``, when that file exists."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        base = ev.settings.source_root / Path(*parts[:i])
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return path, ".".join(parts[i:])
    return None


def dict_config(ev: Evidence, dotted: str) -> Group:
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
    text = ev.project.text(path)
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
    return dotted, source_line_link(ev, repo_path, node.lineno, node.lineno, dotted), fields


def _recorded_config(ev: Evidence) -> dict:
    """The config the model run helper's ``config()`` returned, as a dict; empty when there is no model run."""
    if ev.settings.model_run is None:
        return {}
    value = ev.recording(CONFIG).result
    return dict(value.fields) if isinstance(value, Opaque) else dict(value) if isinstance(value, dict) else {}


_DATA_FILE = re.compile(r".+\.(ya?ml|json)$")


def _loaded_config(ev: Evidence, fn: Function) -> Group:
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
    text = ev.project.text(data).splitlines() if data else []
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
    head = source_line_link(ev, s.rel(data), 1, 1, fn.name) if data else ev.links.line_link(fn, fn.start, fn.start)
    return fn.name, head, fields


# ----------------------------------------------------------------------------- constructor arguments


def constructor_fields(
    ev: Evidence, cls: str
) -> tuple[Function, ast.FunctionDef | ast.AsyncFunctionDef, list[ConfigField]]:
    """A layer class's hyperparameters: the arguments of the constructor its objects run (``self`` left out), each
    with its default and, in a signature over several lines, the comment on its line; with that ``__init__`` and its
    ``def``."""
    init = method_of(ev.index, cls, "__init__")
    if init is None:
        raise TraceError(f"{cls} defines no __init__, so its objects take no arguments for trace-config to show")
    node = def_node(ev.project, init)
    text = ev.project.text(init.file)
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
    return init, node, fields


def passed_in_the_run(ev: Evidence, cls: str, init: Function, fields: list[ConfigField]) -> None:
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

"""Who sets and who reads each field of the project's config, found in the code without running it.

Set by: every call of the code that constructs a config class (``ModelConfig(...)``,
``ModelConfig.from_dict(...)``, a layer class's constructor), with what it passes.
Read by: every function of the code (not the tests') that reads a field, as an
attribute through a name that holds its class (``cfg.width``: which class a name
holds is told by the attributes read through it), as a key of a dict config
(``cfg["lr"]``, ``cfg.get("lr")``), as a module constant imported by name, or, for
a constructor's arguments, in the constructor itself and in every method that
reads the attribute an argument is kept in. The fields are those
``kinds.configfields`` reads.
"""

from __future__ import annotations

import ast

from docs_hooks.kinds.configfields import ConfigField, Group
from docs_hooks.kinds.modelrun import Evidence, def_node, lineage
from docs_hooks.render import html as R
from docs_hooks.resolve.codeindex import Function

# ----------------------------------------------------------------------------- set by


def _calls_of_the_code(ev: Evidence) -> list[tuple[Function, ast.Call]]:
    """Every call in the functions of the code (not the tests'), file by file, found once per build."""
    return ev.once("calls of the code", _find_calls_of_the_code, ev)


def _find_calls_of_the_code(ev: Evidence) -> list[tuple[Function, ast.Call]]:
    functions = sorted(ev.index.functions.values(), key=lambda f: (f.repo_path, f.start))
    return [
        (fn, node)
        for fn in functions
        if not fn.is_test
        for node in ast.walk(def_node(ev.project, fn))
        if isinstance(node, ast.Call)
    ]


def setters(ev: Evidence, dotted: str, fields: list[ConfigField]) -> None:
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


# ----------------------------------------------------------------------------- read by


def attribute_readers(ev: Evidence, groups: list[Group], config_module: str | None) -> None:
    """Who reads each field of ``groups`` as an attribute: through a name that holds its owner (see
    ``_classify_bases``), through ``self`` in the owner's methods, or through the config module's own name."""
    index = ev.index
    methods: dict[str, set[str]] = {}
    for owner, _, fields in groups:
        methods[owner] = {f.name for f in fields} | {
            n.rsplit(".", 1)[-1] for n in index.functions if n.startswith(owner + ".")
        }
    assigned = _classify_bases(ev, methods, config_module)
    for owner, _, fields in groups:
        by_name = {f.name: f for f in fields}
        for read in index.attribute_reads:
            fn = index.functions.get(read.reader)
            if fn is None or fn.is_test or read.attr not in by_name:
                continue
            if owner in assigned.get((read.reader, read.base), ()):
                by_name[read.attr].readers.append((fn, read.line))


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


def dict_readers(ev: Evidence, fields: list[ConfigField]) -> None:
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


def imported_readers(ev: Evidence, module: str, fields: list[ConfigField]) -> None:
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


def constructor_readers(ev: Evidence, cls: str, init: Function, node: ast.AST, fields: list[ConfigField]) -> None:
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


def order_readers(fields: list[ConfigField]) -> None:
    """Each field's readers once each, in the order of their files and lines."""
    for f in fields:
        unique = {(fn.name, line): (fn, line) for fn, line in f.readers}
        f.readers = sorted(unique.values(), key=lambda r: (r[0].repo_path, r[1], r[0].name))

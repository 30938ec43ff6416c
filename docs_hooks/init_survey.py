"""What ``python -m docs_hooks init`` finds in a project before it writes anything: where the code, the tests
and the docs are, what its mkdocs.yml sets, and which function a starter page can explain.

Read only: the project's files are walked and its mkdocs.yml read (through
``INHERIT``, as MkDocs merges it), with any YAML tag read as plain data; nothing is
written here. What init writes from these findings is ``docs_hooks.init``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve.anchors import parse_ref, resolve
from docs_hooks.resolve.codeindex import CodeIndex, Function

# Folders that hold no code of the project: installed packages, built sites, caches.
SKIPPED_DIRS = {"node_modules", "site", "build", "dist", "__pycache__", "venv", "env"}
# Files at the top of a project that are tooling, not the code a site explains.
TOOLING_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "manage.py"}


# ----------------------------------------------------------------------------- where the code, tests and docs are


@dataclass
class Layout:
    """Where the code, the tests and the pages are, as found on disk."""

    source_root: str  # "src", a folder of modules, or "." (the code at the top, or a package there)
    tests_root: str | None  # None: no test files found
    docs_dir: str
    source_files: list[str] = field(default_factory=list)  # non-test .py files of the code, from the project root
    exclude: list[str] = field(default_factory=list)  # folders under the source root that hold no code explained


def is_test_file(rel: Path) -> bool:
    """A test module by pytest's default names, or any file under a ``tests``/``test`` folder."""
    name = rel.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in ("tests", "test") for part in rel.parts[:-1])


def python_files(root: Path, docs_dir: str, skipped: tuple[str, ...] = ()) -> list[Path]:
    """Every ``.py`` file of the project (relative paths), leaving out hidden folders, virtual
    environments, built output, the docs folder (whose helpers are the site's, not the code's) and
    the ``skipped`` folders."""
    found: list[Path] = []
    docs = {Path(docs_dir), *map(Path, skipped)}
    for folder, dirs, files in os.walk(root):
        here = Path(folder).relative_to(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in SKIPPED_DIRS
            and here / d not in docs
            and not (Path(folder, d) / "pyvenv.cfg").exists()
        )
        found.extend(here / f for f in sorted(files) if f.endswith(".py"))
    return found


def detect_layout(root: Path, docs_dir: str = "docs", skipped: tuple[str, ...] = ()) -> Layout:
    """Where the code and tests are. The code is the top folder with the most non-test files; when that
    folder is a package, the source root is the project root above it (modules are named from there, as
    the project imports them), and the other top folders holding code are left out of the index."""
    files = python_files(root, docs_dir, skipped)
    tests = [f for f in files if is_test_file(f) and f.name != "conftest.py"]
    source = [f for f in files if not is_test_file(f) and not (len(f.parts) == 1 and f.name in TOOLING_FILES)]
    counts: dict[str, int] = {}
    for f in source:
        top = f.parts[0] if len(f.parts) > 1 else "."
        counts[top] = counts.get(top, 0) + 1
    # The most files wins; on a tie, src/ first, then the top of the project, then by name.
    top = min(counts, key=lambda k: (-counts[k], k != "src", k != ".", k)) if counts else "."
    tests_root = None
    if tests:
        common = Path(os.path.commonpath([str(f.parent) for f in tests]))
        tests_root = common.as_posix() if common.parts else "."
    inside = [f.as_posix() for f in source if top == "." or f.parts[0] == top]
    if top != "." and (root / top / "__init__.py").is_file():
        others = sorted(k for k in counts if k not in (".", top))
        return Layout(".", tests_root, docs_dir, inside, [*others, *skipped])
    return Layout(top, tests_root, docs_dir, inside, list(skipped) if top == "." else [])


def foreign_docs(folder: Path) -> str | None:
    """What another documentation generator keeps in ``folder``, in words; None when it holds none of it.
    Sphinx's sources: a ``conf.py`` (in the folder or its ``source/``) or ``.rst`` files."""
    if not folder.is_dir():
        return None
    conf = [c for c in (folder / "conf.py", folder / "source" / "conf.py") if c.is_file()]
    rst = [p for p in folder.rglob("*.rst") if not {"_build", "build"} & set(p.relative_to(folder).parts)]
    if not conf and not rst:
        return None
    parts = [c.relative_to(folder).as_posix() for c in conf]
    if rst:
        parts.append(f"{len(rst)} .rst file{'s' if len(rst) != 1 else ''}")
    if (folder / "Makefile").is_file():
        parts.append("Makefile")
    return f"Sphinx sources ({', '.join(parts)})"


# ----------------------------------------------------------------------------- what its mkdocs.yml sets


class TolerantLoader(yaml.SafeLoader):
    """A safe loader that reads any tag (``!ENV``, ``!!python/name:``) as plain data instead of failing."""


def _tagged(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = tuple(loader.construct_sequence(node, deep=True))
    else:
        value = tuple(sorted(loader.construct_mapping(node, deep=True).items(), key=repr))
    return ("!tag", suffix, value)


TolerantLoader.add_multi_constructor("!", _tagged)
TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", _tagged)


def read_yaml(text: str, name: str):
    """(composed node, loaded data) of a YAML file; an error at its line when it does not parse."""
    try:
        node = yaml.compose(text, Loader=TolerantLoader)
        data = yaml.load(text, Loader=TolerantLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TraceError(
            f"cannot read it as YAML ({problem}); fix it, then run init again",
            name,
            mark.line + 1 if mark is not None else None,
        ) from None
    return node, data


def plugin_names(plugins) -> list[str]:
    """The plugin names of a ``plugins:`` value, in either of the forms MkDocs reads (list or mapping)."""
    if isinstance(plugins, dict):
        return [str(k) for k in plugins]
    if isinstance(plugins, list):
        return [str(next(iter(p))) if isinstance(p, dict) and p else str(p) for p in plugins]
    return []


def effective_config(text: str, path: Path) -> dict:
    """The settings MkDocs reads from the mkdocs.yml at ``path``: its own, over those of the files it
    inherits from (``INHERIT``), merged as MkDocs merges them (mappings key by key, any other value replaced)."""
    import mergedeep  # type: ignore[import-untyped]  # MkDocs' own dependency, which it merges INHERIT with

    root = Path(path).parent
    name = os.path.relpath(path, root)
    _, data = read_yaml(text, name)
    data = dict(data) if isinstance(data, dict) else {}
    seen = {Path(path).resolve()}
    while isinstance(data.get("INHERIT"), str):
        parent_name = data.pop("INHERIT")
        parent = (Path(path).parent / parent_name).resolve()
        if parent in seen or not parent.is_file():
            why = "which inherits from it in turn" if parent in seen else "which does not exist"
            line = next((n for n, t in enumerate(text.splitlines(), 1) if re.match(r"INHERIT\s*:", t)), None)
            raise TraceError(f"INHERIT names {parent_name!r}, {why}; fix INHERIT, then run init again", name, line)
        seen.add(parent)
        path, text = parent, parent.read_text(encoding="utf-8")
        name = os.path.relpath(parent, root)
        _, above = read_yaml(text, name)
        data = mergedeep.merge({}, above if isinstance(above, dict) else {}, data)
    return data


# ----------------------------------------------------------------------------- the function a starter page explains


def public(fn: Function) -> bool:
    """A module-level function whose module path and name have no leading underscore."""
    if fn.name != f"{fn.module}.{fn.short_name}":
        return False  # a method
    return not any(part.startswith("_") for part in fn.name.split("."))


def tests_calling(index: CodeIndex, fn: Function) -> list[str]:
    """The tests that call ``fn`` directly: what the build counts as evidence for 'implemented'."""
    out = []
    for site in index.calls_to(fn.name):
        caller = index.functions[site.caller]
        if caller.is_test and caller.short_name.startswith("test") and caller.name not in out:
            out.append(caller.name)
    return out


def pick_function(index: CodeIndex, source_files: list[str]) -> tuple[Function, list[str]] | None:
    """The first public function some test calls, else the first public function; with its tests."""
    files = set(source_files)
    candidates = sorted(
        (fn for fn in index.functions.values() if fn.repo_path in files and public(fn)),
        key=lambda fn: (fn.repo_path, fn.start),
    )
    for fn in candidates:
        tests = tests_calling(index, fn)
        if tests:
            return fn, tests
    return (candidates[0], []) if candidates else None


def first_statement(index: CodeIndex, fn: Function) -> str | None:
    """A reference to the function's first statement that resolves to it alone (its first line if enough)."""
    for stmt in fn.statements:
        first = stmt.text.splitlines()[0]
        for text in dict.fromkeys([first, stmt.text]):
            try:
                found = resolve(index, parse_ref(f"{fn.name}: {text}"))
            except TraceError:
                continue
            if found.statement == stmt:
                return f"{fn.name}: {text}"
    return None

"""Building the code index (``codeindex``) from a project's files: which files, under which module names,
each file's part read back from the cache folder or read now (``readfile``), then every call resolved once
every module is known (``values``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from docs_hooks.base.cachedir import Store
from docs_hooks.base.errors import TraceError
from docs_hooks.resolve import bindings, codeindex, indexstore, readfile, values
from docs_hooks.resolve.bindings import Path as ValuePath
from docs_hooks.resolve.codeindex import CallSite, CodeIndex, FileIndex, Root, UnresolvedCall
from docs_hooks.resolve.indexstore import decode_part, encode_part
from docs_hooks.resolve.readfile import index_file
from docs_hooks.resolve.values import ModuleBindings, Values


def build_index(
    roots: list[Root],
    project_root: Path,
    cache: Path | None = None,
    exclude: Iterable[str] = (),
    indexed: IndexedFiles | None = None,
) -> CodeIndex:
    """The index of every function under ``roots`` (with the garbage collector paused: see gcpause).

    ``exclude`` holds glob patterns of what to leave out (see ``settings.excluded``).
    A file under two roots is indexed once, by the deeper root (by the code's when
    both are the same folder); a test file (``test_*.py``, ``*_test.py``,
    ``conftest.py``) is a test wherever it is, shown by its path from the project root.
    Modules are named as Python imports them (see ``settings.ModuleNames``).

    With ``cache`` (the file of a cachedir.Store), what each file contributes is
    kept there under a key made from its text, its place, its module name and the
    code that reads it, so an unchanged file is read back instead of parsed again.
    A process that makes one index after another (a serve) hands each the same
    ``indexed``: a file unchanged since the last is then not even read back.
    """
    from docs_hooks.base.gcpause import paused

    with paused():
        return _build_index(roots, project_root, cache, tuple(exclude), indexed)


class IndexedFiles:
    """Each file's part of the last index, by its key (see ``_file_indexes``), for the next index of the same
    process: a file unchanged since is neither read back from the cache nor parsed again, and its functions are
    the same objects, whose digests a page's trace made once (``base.reads.Digests``). Nothing changes a part once
    it is made. Only the last index's parts are kept: a file edited or removed since goes with it."""

    def __init__(self) -> None:
        self._parts: dict[str, FileIndex] = {}

    def get(self, key: str) -> FileIndex | None:
        return self._parts.get(key)

    def keep(self, parts: dict[str, FileIndex]) -> None:
        """The parts of the index just made, by their keys, in place of the last."""
        self._parts = parts


# The cache's entries are keyed by the code that reads a file, so an entry written by another version is
# never read back (a change of the form they are written in changes these files too).
_READERS = (bindings.__file__, codeindex.__file__, readfile.__file__, indexstore.__file__, __file__)
_SELF_DIGEST = hashlib.sha256(b"".join(Path(f).read_bytes() for f in _READERS if f)).hexdigest()


def code_files(roots: list[Root], project_root: Path, exclude: Sequence[str] = ()) -> list[tuple[Path, Root]]:
    """Every Python file under ``roots`` once, with the root it belongs to (see build_index)."""
    from docs_hooks.base.settings import DEFAULT_EXCLUDE, is_test_file, walk_files

    owner: dict[Path, Root] = {}
    tests = Root(project_root, project_root, True)
    for root in roots:
        if not root.path.is_dir():
            raise TraceError(f"code root '{root.path}' does not exist; check the docs_hooks settings")
        for file in walk_files(root.path, project_root, exclude or DEFAULT_EXCLUDE, ".py"):
            if is_test_file(file):
                owner[file] = tests
                continue
            other = owner.get(file)
            if other is None or (len(root.path.parts), not root.is_tests) > (len(other.path.parts), not other.is_tests):
                owner[file] = root
    return sorted(owner.items())


def module_names(files: list[tuple[Path, Root]], project_root: Path) -> list[str]:
    """Each file's module name, as Python imports it (see settings.ModuleNames).

    Two files Python would import under one name (``src/util.py`` and a helper
    ``tests/util.py``, both ``util``; two ``test_x.py`` in folders that are no
    packages, which pytest cannot import together either) must not share a
    name in the index: the one of the tests, else the later one, is then named
    by its path from the project root.
    """
    from docs_hooks.base.settings import ModuleNames, dotted_name, is_test_file

    names = ModuleNames(project_root)
    out = []
    for file, root in files:
        if is_test_file(file):
            out.append(names.of_test(file))
        elif root.is_tests:
            out.append(names.of_helper(file, root.path))
        else:
            out.append(names.of_code(file, root.names_from))
    first: dict[str, int] = {}
    for i, name in enumerate(out):
        j = first.setdefault(name, i)
        if j != i:
            renamed = i if files[i][1].is_tests or not files[j][1].is_tests else j
            out[renamed] = dotted_name(files[renamed][0], project_root)
            if renamed == j:
                first[name] = i
    return out


def _build_index(
    roots: list[Root],
    project_root: Path,
    cache: Path | None,
    exclude: Sequence[str] = (),
    indexed: IndexedFiles | None = None,
) -> CodeIndex:
    index = CodeIndex()
    pending_calls: list[tuple] = []
    files = code_files(roots, project_root, exclude)
    for file, part in zip([f for f, _ in files], _file_indexes(files, project_root, cache, indexed)):
        index.file_digests[file.relative_to(project_root).as_posix()] = part.digest
        for fn in part.functions:
            index.functions[fn.name] = fn
        index.classes.update(part.classes)
        index.bases.update(part.bases)
        index.attribute_reads.extend(part.attribute_reads)
        index.modules[part.module] = ModuleBindings(part.names, part.stars, part.exports)
        index.scopes.update(part.scopes)
        for cls, table in part.attrs.items():
            index.attrs[cls] = table
        pending_calls.extend(part.pending)
    _resolve_calls(index, pending_calls)
    return index


def _resolve_calls(index: CodeIndex, pending_calls: list[tuple]) -> None:
    """Each call's targets, once every module is known (see values): the functions it calls, and the
    calls it may make that the reading could not follow (``index.unresolved``).

    Twice for the calls the first answer leaves open: a parameter may hold what the calls of its
    function pass it (``net.add(Dense(4))`` puts a Dense in ``add``'s ``layer``, then in the list
    ``self.layers``, whose loop calls ``layer.forward_pass``), and that is known once the first answer
    has resolved those calls."""
    found = Values(index)
    # Bases as written, through imports and re-exports, to the class they name.
    index.bases = {cls: [found.class_named(b) or b for b in bases] for cls, bases in index.bases.items()}
    for caller, path, *_ in pending_calls:
        if len(path) == 2 and index.scopes.get(caller, {}).get(path[0]) == [("*self",)]:
            name = path[1][1:]
            if name not in index.on_self.setdefault(caller, []):
                index.on_self[caller].append(name)
    answers = [found.of(caller, path) for caller, path, *_ in pending_calls]
    flows = _argument_flows(index, found, pending_calls, answers)
    if flows:
        found = Values(index, flows)
        answers = [
            found.of(call[0], call[1]) if values.UNKNOWN in targets else targets
            for call, targets in zip(pending_calls, answers)
        ]
    methods = _method_names(index, found)

    def add(site: CallSite) -> None:
        index.calls.append(site)
        index._calls_to.setdefault(site.callee, []).append(site)

    for (caller, path, line, stmt, _), targets in zip(pending_calls, answers):
        if targets == _OUTSIDE or not targets:
            continue  # numpy, a builtin, a literal's method: no call of the project
        done: set[str] = set()
        for kind, *rest in sorted(targets):
            if kind == "f" or kind == "c":
                callee = _constructed(index, rest[0]) if kind == "c" else rest[0]
                if callee not in done:
                    done.add(callee)
                    add(CallSite(caller, callee, stmt, line))
            elif kind == "o":
                call = found.hierarchy.method_of(rest[0], "__call__")
                if call is None or call in done:
                    continue
                done.add(call)
                add(CallSite(caller, call, stmt, line))
                for name in index.on_self.get(call, ()):  # dispatched on the instance's own class
                    reached = found.hierarchy.method_of(rest[0], name)
                    if reached is not None and reached != call and reached not in done:
                        done.add(reached)
                        add(CallSite(caller, reached, stmt, line, via=call, written=_last_name(path)))
        if values.UNKNOWN in targets:
            for method in _names_called(found, caller, path):
                if method in methods and not _dispatched(index, found, caller, path, method):
                    site = UnresolvedCall(caller, method, bindings.written(path), stmt, line)
                    index.unresolved.append(site)
                    index._unresolved_by_method.setdefault(method, []).append(site)


def _constructed(index: CodeIndex, cls: str) -> str:
    """What calling a class calls: its own constructor, else the class itself (a dataclass, say)."""
    return cls + ".__init__" if cls + ".__init__" in index.functions else cls


def _argument_flows(
    index: CodeIndex, found: Values, pending_calls: list[tuple], answers: list[frozenset]
) -> dict[str, dict[str, list[tuple[str, ValuePath]]]]:
    """What the resolved calls pass to the parameters the reading could not tell:
    function -> parameter -> [(caller, path of the argument)]."""
    flows: dict[str, dict[str, list[tuple[str, ValuePath]]]] = {}
    for (caller, path, _, _, arguments), targets in zip(pending_calls, answers):
        if not arguments:
            continue
        for kind, *rest in targets:
            callee: str | None
            if kind == "c":
                callee = _constructed(index, rest[0])
            elif kind == "o":
                callee = found.hierarchy.method_of(rest[0], "__call__")
            elif kind == "f":
                callee = rest[0]
            else:
                continue
            fn = index.functions.get(callee) if callee is not None else None
            if callee is None or fn is None:
                continue
            table = index.scopes.get(callee, {})
            bound = bool(fn.params) and table.get(fn.params[0]) == [("*self",)]
            if bound and kind == "f" and len(path) > 1:  # Class.method(obj, ...) passes self itself
                bound = not all(v[0] == "c" for v in found.of(caller, path[:-1]))
            for key, paths in arguments:
                place = key + bound if type(key) is int else None
                param = fn.params[place] if place is not None and place < len(fn.params) else key
                if (
                    type(param) is str
                    and param in fn.params
                    and values.UNKNOWN_PATH in table.get(param, [values.UNKNOWN_PATH])
                ):
                    flows.setdefault(callee, {}).setdefault(param, []).extend((caller, p) for p in paths)
    return flows


_OUTSIDE = frozenset([values.EXTERNAL])


def _method_names(index: CodeIndex, found: Values) -> set[str]:
    """The names of the methods of the project's own classes (not the tests'): what an unresolved call
    must call to be counted as one that may reach the project's code."""
    out = set()
    for name, fn in index.functions.items():
        if not fn.is_test and found.hierarchy.owner(name) is not None:
            out.add(fn.short_name)
    return out


def _names_called(found: Values, caller: str, path: tuple) -> list[str]:
    """The method names an unresolved call may call: ``m`` in ``x.m(...)`` when ``x`` may be anything;
    ``__call__`` when what is called may be any object (``fn(X)``, ``self.activation(X)`` where the
    attribute holds what the reading cannot tell)."""
    if len(path) < 2 or not path[-1].startswith("."):
        return ["__call__"]
    receiver = found.of(caller, path[:-1])
    out = [path[-1][1:]] if values.UNKNOWN in receiver else []
    if any(v != values.UNKNOWN and values.UNKNOWN in found.attribute(v, path[-1][1:]) for v in receiver):
        out.append("__call__")
    return out


def _dispatched(index: CodeIndex, found: Values, caller: str, path: tuple, method: str) -> bool:
    """Whether an unresolved ``self.method(...)`` is a method its subclasses define: the calls of their
    instances reach it (see ``on_self``), so it is resolved where the instance is called."""
    if len(path) != 2 or index.scopes.get(caller, {}).get(path[0]) != [("*self",)]:
        return False
    owner = found.hierarchy.owner(caller)
    return owner is not None and any(
        found.hierarchy.method_of(sub, method) for sub in found.hierarchy.subclasses(owner)
    )


def _last_name(path: tuple) -> str:
    """The last name a path is written with: ``norm`` in ``self.norm``."""
    for op in reversed(path):
        if op.startswith("."):
            return op[1:]
        if op not in (bindings.CALL, bindings.ELEMENT):
            return op
    return ""


def _file_indexes(
    files: list[tuple[Path, Root]], project_root: Path, cache: Path | None, indexed: IndexedFiles | None = None
) -> list[FileIndex]:
    """Each file's part of the index: the last index's (``indexed``), else from the cache when its text was
    indexed before, else parsed now."""
    datas = [file.read_bytes() for file, _ in files]
    digests = [hashlib.sha256(data).hexdigest() for data in datas]
    modules = module_names(files, project_root)
    keys = []
    # Each folder is resolved once rather than once per file (bench/README.md, "check").
    resolved = {folder: folder.resolve() for folder in {project_root, *(root.names_from for _, root in files)}}
    for (file, root), digest, module in zip(files, digests, modules):
        place = f"{file.resolve()}\0{resolved[root.names_from]}\0{root.is_tests}\0{resolved[project_root]}\0{module}"
        keys.append(hashlib.sha256(f"{_SELF_DIGEST}\0{digest}\0{place}".encode()).hexdigest())
    kept = {key: part for key in keys if indexed is not None and (part := indexed.get(key)) is not None}
    store = Store(cache) if cache is not None and len(kept) < len(keys) else None
    try:
        stored = store.get_many([k for k in keys if k not in kept]) if store is not None else {}
        parts, made = [], {}
        for (file, root), data, digest, key, module in zip(files, datas, digests, keys, modules):
            if key in kept:
                parts.append(kept[key])
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise TraceError(
                    f"cannot read: not UTF-8 ({exc.reason}); save the file as UTF-8",
                    file.relative_to(project_root).as_posix(),
                    1,
                ) from None
            part = decode_part(stored[key], file, text) if key in stored else None  # None: damaged, so indexed again
            if part is None or part.digest != digest:
                part = index_file(text, digest, file, root, project_root, module)
                made[key] = encode_part(part)
            parts.append(part)
        if store is not None:
            store.put_many(made)
    finally:
        if store is not None:
            store.close()
    if indexed is not None:
        indexed.keep(dict(zip(keys, parts)))
    return parts

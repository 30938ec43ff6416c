"""A file's part of the code index as the cache folder keeps it (``indexing`` reads and writes the entries).

A file's part of the index is stored as JSON: data only, so reading an entry cannot run code,
whoever wrote it. Statements are written once and referred to by their place in a list, as the
objects themselves are shared in memory; functions too, where a row names one. The
lines of code are not stored: the entry's key is made from the file's text, so they are taken
from the file as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import le
from pathlib import Path
from typing import TypeVar

from docs_hooks.resolve.codeindex import AttributeRead, FileIndex, Function, Statement


def encode_part(part: FileIndex) -> bytes:
    statements: dict[int, int] = {}  # id of a Statement -> its place in the list
    statement_list: list[list] = []
    places = {f.name: i for i, f in enumerate(part.functions)}  # functions by their place in the list

    def stmt(s: Statement | None) -> int | None:
        if s is None:
            return None
        if id(s) not in statements:
            statements[id(s)] = len(statement_list)
            statement_list.append([s.start, s.end, s.tokens, s.kind])
        return statements[id(s)]

    functions = [
        {
            "name": f.name,
            "module": f.module,
            "display_path": f.display_path,
            "repo_path": f.repo_path,
            "start": f.start,
            "end": f.end,
            "is_test": f.is_test,
            "statements": [stmt(s) for s in f.statements],
            "header": stmt(f.header),
            "whole": stmt(f.whole),
            "params": list(f.params),
            "local_names": sorted(f.local_names),
            "docstring": f.docstring,
        }
        for f in part.functions
    ]
    data = {
        "digest": part.digest,
        "functions": functions,
        "classes": {name: list(where) for name, where in part.classes.items()},
        "bases": {name: list(bases) for name, bases in part.bases.items()},
        "reads": [[r.reader, r.base, r.attr, stmt(r.statement), r.line] for r in part.attribute_reads],
        # A binding with nothing bound is a row with the empty path: the name is bound, to nothing of the project.
        "module": part.module,
        "names": [[key, list(p)] for key, paths in part.names.items() for p in paths or [()]],
        "stars": part.stars,
        "exports": part.exports,
        "scopes": [
            [places[fn], key, list(p)]
            for fn, table in part.scopes.items()
            for key, paths in table.items()
            for p in paths or [()]
        ],
        "attrs": [
            [cls, attr, places.get(fn, -1), list(p)]  # -1: bound in the class's own body
            for cls, table in part.attrs.items()
            for attr, entries in table.items()
            for fn, p in entries or [("", ())]
        ],
        "pending": [
            [places[caller], list(path), line, stmt(s), [[key, [list(p) for p in paths]] for key, paths in arguments]]
            for caller, path, line, s, arguments in part.pending
        ],
        "statements": statement_list,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_T = TypeVar("_T")


class _Damaged(Exception):
    """A cache entry that is not what encode_part writes."""


# Types are checked a column at a time (``set(map(type, ...))`` runs in C), which reads the cached index back
# faster than checking value by value (bench/README.md, "check").
def _only(values: Iterable[object], *kinds: type) -> None:
    """Every one of ``values`` is exactly of one of ``kinds`` (JSON makes no subclasses; a bool is no int)."""
    if not set(map(type, values)) <= set(kinds):
        raise _Damaged(kinds[0].__name__)


def _typed(value: object, kind: type[_T], name: str) -> _T:
    if type(value) is not kind:
        raise _Damaged(name)
    return value


def _columns(rows: object, width: int, name: str) -> list[tuple]:
    """A list of rows of ``width`` items as ``width`` columns."""
    rows = _typed(rows, list, name)
    _only(rows, list)
    columns = list(zip(*rows, strict=True)) if rows else [()] * width
    if len(columns) != width:
        raise _Damaged(name)
    return columns


def decode_part(raw: bytes, file: Path, text: str) -> FileIndex | None:
    """The FileIndex an entry of ``file`` (whose text is ``text``) holds; None when it is damaged: made again."""
    lines = text.splitlines()

    def spans(starts: Sequence[int], ends: Sequence[int]) -> list[tuple[str, ...]]:
        _only(starts, int)
        _only(ends, int)
        if min(starts, default=1) < 1 or max(ends, default=0) > len(lines) or not all(map(le, starts, ends)):
            raise _Damaged("span")
        return [tuple(lines[a - 1 : b]) for a, b in zip(starts, ends)]

    def indexes(column: Sequence[int]) -> None:
        """``column`` holds places in a list (the statements', the functions')."""
        _only(column, int)
        if min(column, default=0) < 0:
            raise _Damaged("place")

    def paths(column: Sequence[list[str]]) -> list[tuple[str, ...]]:
        """``column`` holds paths (see bindings): lists of strings, the empty one for "bound to nothing"."""
        _only(column, list)
        _only(chain.from_iterable(column), str)
        return [tuple(p) for p in column]

    def bound(keys: Sequence[str], column: Sequence[list[str]]) -> dict[str, list[tuple[str, ...]]]:
        _only(keys, str)
        table: dict[str, list[tuple[str, ...]]] = {}
        for key, path in zip(keys, paths(column)):
            bucket = table.setdefault(key, [])
            if path:
                bucket.append(path)
        return table

    try:
        data = _typed(json.loads(raw), dict, "entry")
        starts, ends, tokens, kinds = _columns(data["statements"], 4, "statements")
        _only(tokens, str)
        _only(kinds, str)
        statements = list(map(Statement, starts, ends, spans(starts, ends), tokens, kinds))

        part = FileIndex(_typed(data["digest"], str, "digest"))
        functions = _typed(data["functions"], list, "functions")
        _only(functions, dict)
        (
            f_names,
            f_modules,
            f_shown,
            f_repo,
            f_starts,
            f_ends,
            f_tests,
            f_stmts,
            f_headers,
            f_wholes,
            f_params,
            f_locals,
            f_docs,
        ) = (
            [f[key] for f in functions]
            for key in (
                "name",
                "module",
                "display_path",
                "repo_path",
                "start",
                "end",
                "is_test",
                "statements",
                "header",
                "whole",
                "params",
                "local_names",
                "docstring",
            )
        )
        for texts in (f_names, f_modules, f_shown, f_repo):
            _only(texts, str)
        _only(f_tests, bool)
        _only(f_docs, str, type(None))
        _only(f_wholes, int)  # every function has its whole statement
        indexes([i for i in (*f_headers, *f_wholes) if i is not None])
        for lists in (f_stmts, f_params, f_locals):
            _only(lists, list)
        indexes(list(chain.from_iterable(f_stmts)))
        _only(chain.from_iterable((*f_params, *f_locals)), str)
        for name, module, shown, repo, start, end, source, is_test, stmts, header, whole, params, local, doc in zip(
            f_names,
            f_modules,
            f_shown,
            f_repo,
            f_starts,
            f_ends,
            spans(f_starts, f_ends),
            f_tests,
            f_stmts,
            f_headers,
            f_wholes,
            f_params,
            f_locals,
            f_docs,
        ):
            part.functions.append(
                Function(
                    name=name,
                    module=module,
                    file=file,
                    display_path=shown,
                    repo_path=repo,
                    start=start,
                    end=end,
                    is_test=is_test,
                    source_lines=source,
                    statements=[statements[i] for i in stmts],
                    header=None if header is None else statements[header],
                    whole=statements[whole],
                    params=tuple(params),
                    local_names=frozenset(local),
                    docstring=doc,
                )
            )

        classes = _typed(data["classes"], dict, "classes")
        _only(classes, str)
        names, starts, ends = _columns(list(classes.values()), 3, "classes")
        _only(names, str)
        _only(starts, int)
        _only(ends, int)
        part.classes = dict(zip(classes, zip(names, starts, ends)))
        bases = _typed(data["bases"], dict, "bases")
        _only(bases, str)
        _only(bases.values(), list)
        _only(chain.from_iterable(bases.values()), str)
        part.bases = {name: list(values) for name, values in bases.items()}

        readers, read_bases, attrs, places, read_lines = _columns(data["reads"], 5, "reads")
        for column in (readers, read_bases, attrs):
            _only(column, str)
        indexes(places)
        _only(read_lines, int)
        part.attribute_reads = [
            AttributeRead(reader, base, attr, statements[i], line)
            for reader, base, attr, i, line in zip(readers, read_bases, attrs, places, read_lines)
        ]

        part.module = _typed(data["module"], str, "module")
        part.names = bound(*_columns(data["names"], 2, "names"))
        part.stars = _typed(data["stars"], list, "stars")
        _only(part.stars, str)
        part.exports = data["exports"]
        if part.exports is not None:
            _only(_typed(part.exports, list, "exports"), str)
        fns = part.functions
        owners, keys, column = _columns(data["scopes"], 3, "scopes")
        indexes(owners)
        for owner, key, path in zip(owners, keys, paths(column)):
            bucket = part.scopes.setdefault(fns[owner].name, {}).setdefault(_typed(key, str, "scope"), [])
            if path:
                bucket.append(path)
        owning, attrs, owners, column = _columns(data["attrs"], 4, "attrs")
        _only(owning, str)
        _only(attrs, str)
        _only(owners, int)
        for cls, attr, owner, path in zip(owning, attrs, owners, paths(column)):
            bound_by = part.attrs.setdefault(cls, {}).setdefault(attr, [])
            if path:
                bound_by.append((fns[owner].name if owner >= 0 else "", path))

        callers, column, call_lines, places, arguments = _columns(data["pending"], 5, "pending")
        indexes(callers)
        callees = paths(column)
        if not all(callees):
            raise _Damaged("call")
        _only(call_lines, int)
        indexes(places)
        _only(arguments, list)
        keys, given = _columns(list(chain.from_iterable(arguments)), 2, "arguments")
        _only(keys, int, str)
        _only(given, list)
        passed = paths(list(chain.from_iterable(given)))
        if not all(passed):
            raise _Damaged("argument")
        rows, taken = [], iter(passed)
        for row in arguments:
            rows.append(tuple((key, tuple(next(taken) for _ in ps)) for key, ps in row))
        part.pending = [
            (fns[caller].name, callee, line, statements[i], row)
            for caller, callee, line, i, row in zip(callers, callees, call_lines, places, rows)
        ]
        return part
    except (_Damaged, ValueError, KeyError, IndexError, TypeError, RecursionError):
        return None

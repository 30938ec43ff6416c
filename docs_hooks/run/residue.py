"""What of a module's text a run can depend on, besides the functions whose code ran.

A run (a recording, the coverage run) depends on the functions whose code ran and on the rest of each module it
loaded: imports, constants, classes, each ``def`` line. A function that did not run and that nothing can reach
by its name is left out of that rest as a whole, its ``def`` line too: appending such a function to a module, or
editing one, changes nothing a run saw. A function is left out only when all of this holds:

- it is defined at the module's top level, without decorators;
- its defaults and annotations are names, attributes, constants and subscripts of them (evaluating the ``def``
  runs no code);
- its name is written nowhere else in the files the run loaded: no call or reference to it, no string naming it
  (``getattr(ops, "name")``, ``__all__``), no other binding of that name (it shadows nothing);
- no file the run loaded walks a namespace (``globals()``, ``vars(module)``, ``dir(module)``, a module's
  ``__dict__``, ``inspect.getmembers``, ``sys.modules``) or looks a name made at run time up in a module it
  imports (``getattr(ops, name)``): a registry filled that way would see a new function.

What this cannot see: a name made at run time looked up in a module the code holds otherwise than by an import
(``m = importlib.import_module(...)``, then ``getattr(m, name, None)``), where the old run took the fallback.

Every other change of a module outside the bodies of the functions that ran counts, but for its comments:
Python runs no comment, and a run's dependencies are read without them (``without_comments``), each line kept
where it is; and so are docstrings, each read as an empty string on the lines it holds, but for one that holds
a doctest's example (``>>>``), which pytest may run. Both count for a run
that may read them: one that opened a file of the code itself (``open(__file__)``: the file's bytes count, see
``record_local.Opened``), one whose files name a module of Python's that reads source lines (``SOURCE_READERS``:
``inspect``, ``traceback``), and, for docstrings, one whose files name ``__doc__``, ``pydoc`` or ``doctest``
(``DOC_READERS``). What this cannot see: a library that reads the source or the docstrings of the project's code
for a value the run keeps.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import sys
import tokenize
from collections import Counter
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from docs_hooks.base.cachedir import Store, store_file

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Calls that list a namespace when given a module (or, at the top level, the module's own).
_LISTING = {"vars", "dir", "getmembers"}

#: Calls that look a name up in a namespace: given a module and a name made at run time, they may find a new one.
_LOOKUP = {"getattr", "hasattr"}

#: The names code that lists or searches a namespace is written with (see ``_lists_namespaces``).
_TRIGGERS = {"globals", "modules", "__dict__", *_LISTING, *_LOOKUP}

#: The modules of Python's own that read a module's source lines, comments and all (``inspect.getsource``, a
#: traceback's text): a run whose files name one may depend on a comment.
SOURCE_READERS = {"inspect", "linecache", "traceback", "tokenize"}

#: What code that reads docstrings is written with: a run whose files name one may depend on a docstring.
DOC_READERS = {"__doc__", "pydoc", "doctest"}

#: What starts an example of a doctest (``doctest.DocTestParser``): a docstring that holds one is code to pytest's
#: ``--doctest-modules``, and counts.
_EXAMPLE = ">>>"

#: How much of a module's text a run may depend on (``ModuleText.read_as``, ``Dependencies.reading``): all of it;
#: all but its comments; its code, neither comments nor docstrings.
ALL, NO_COMMENTS, CODE = "all", "no comments", "code"


@dataclass(frozen=True)
class Prose:
    """Where a module's text is never run: its comments (the line and column each starts at) and its docstrings
    (first line, the column they start at, last line, the column after them); lines from 1, columns in
    characters."""

    comments: tuple[tuple[int, int], ...] = ()
    docstrings: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True)
class Unreachable:
    """A top-level function that may be left out when it did not run: its name and lines (first to last)."""

    name: str
    start: int
    end: int


class ModuleText:
    """One file as a run's dependencies read it: its lines and words, and, parsed when first asked, its
    candidates (top-level functions whose ``def`` only binds their name), whether it lists namespaces, and where
    its comments and docstrings are (``prose``). ``found``: those three as found before for the same text (see
    ``Texts``), so that it is not parsed."""

    def __init__(self, text: str, found: tuple[list[Unreachable], bool, Prose] | None = None) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.words = Counter(_WORD.findall(text))  # identifier -> how often it is written (code, strings)
        if found is not None:  # what the cached properties below would find
            self.__dict__["candidates"], self.__dict__["lists_namespaces"], self.__dict__["prose"] = found

    @classmethod
    def of(cls, text: str) -> ModuleText:
        return cls(text)

    @cached_property
    def prose(self) -> Prose:
        """Where its comments and docstrings are; none where its lines are not Python's lines (see ``_comments``)."""
        comments = _comments(self.lines)
        if comments is None:
            return Prose()
        return Prose(tuple(comments), tuple(_docstrings(self.tree, self.lines)) if self.tree is not None else ())

    def read_as(self, reading: str) -> list[str]:
        """Its lines as a run that ``reading`` (``ALL``, ``NO_COMMENTS``, ``CODE``) depends on them, each where it
        is: comments cut off, docstrings read as ``""``."""
        if reading == ALL:
            return self.lines
        if reading == NO_COMMENTS:
            return self._no_comments
        return self._code

    @cached_property
    def _no_comments(self) -> list[str]:
        return _cut(self.lines, self.prose.comments)

    @cached_property
    def _code(self) -> list[str]:
        out = list(self._no_comments)
        for first, start, last, end in self.prose.docstrings:
            if _EXAMPLE in "\n".join(self.lines[first - 1 : last]):
                continue  # a doctest's example: pytest may run it
            out[first - 1] = out[first - 1][:start] + '""' + (out[first - 1][end:] if first == last else "")
            for n in range(first + 1, last + 1):
                out[n - 1] = out[n - 1][end:] if n == last else ""
        return out

    def reading(self) -> str:
        """How much of a module's text a run that loaded this file may read (``ALL``: it names a module that reads
        source lines; ``NO_COMMENTS``: it names a reader of docstrings; ``CODE``)."""
        if any(self.words[w] for w in SOURCE_READERS):
            return ALL
        return NO_COMMENTS if any(self.words[w] for w in DOC_READERS) else CODE

    @cached_property
    def tree(self) -> ast.Module | None:
        try:
            return ast.parse(self.text)
        except (SyntaxError, ValueError):
            return None

    @cached_property
    def candidates(self) -> list[Unreachable]:
        if self.tree is None:
            return []
        postponed = any(
            isinstance(node, ast.ImportFrom)
            and node.module == "__future__"
            and any(a.name == "annotations" for a in node.names)
            for node in self.tree.body
        )
        return [
            Unreachable(node.name, node.lineno, node.end_lineno or node.lineno)
            for node in self.tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _inert(node, postponed)
        ]

    @cached_property
    def named_elsewhere(self) -> set[str]:
        """The candidates whose name the module writes outside them."""
        out = set()
        for fn in self.candidates:
            own = _WORD.findall("\n".join(self.lines[fn.start - 1 : fn.end])).count(fn.name)
            if self.words[fn.name] > own:
                out.add(fn.name)
        return out

    @cached_property
    def lists_namespaces(self) -> bool:
        if not any(self.words[w] for w in _TRIGGERS):
            return False  # none of the names such code is written with: no need to parse it
        return self.tree is None or _lists_namespaces(self.tree)  # one Python cannot parse: nothing left out


class Texts:
    """The files runs depend on, each read as a ``ModuleText`` once per text: made for one build, or kept by a
    serve session for all of its builds (a file the author did not edit is not parsed again). One entry per
    file: a new text replaces the old.

    With a cache folder (``keep_in``), what parsing a text finds (its candidates, whether it lists namespaces,
    where its comments and docstrings are) is kept in its ``residue`` store by the text's digest: a build in a
    new process that reads recordings back (the first after ``make test``) parses none of the files an earlier
    one did."""

    def __init__(self) -> None:
        self._known: dict[Path, ModuleText] = {}
        self._store: Store | None = None

    def keep_in(self, cache_dir: Path | None) -> None:
        """Keep what is found of each text in ``cache_dir`` too (nothing kept without one)."""
        path = store_file(cache_dir, "residue")
        if self._store is not None and self._store.path == path:
            return
        self.close()
        self._store = Store(path) if path is not None else None

    def get(self, path: Path) -> ModuleText | None:
        """The file as it is now; None when it cannot be read as text."""
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        known = self._known.get(path)
        if known is None or known.text != text:
            known = self._known[path] = self._read(text)
        return known

    def _read(self, text: str) -> ModuleText:
        """``text`` as a ModuleText, with what an earlier build found of it when the store holds it."""
        store = self._store
        if store is None:
            return ModuleText(text)
        python = sys.version_info[:2]  # what parses depends on the Python that parses it
        key = hashlib.sha256(f"{FOUND_FORMAT}\0{python}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
        raw = store.get_many([key]).get(key)
        found = _load_found(raw) if raw is not None else None
        if found is not None:
            return ModuleText(text, found)
        module = ModuleText(text)
        candidates = [[fn.name, fn.start, fn.end] for fn in module.candidates]
        prose = module.prose
        kept = [candidates, module.lists_namespaces, prose.comments, prose.docstrings]
        store.put_many({key: json.dumps(kept).encode()})
        return module

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


FOUND_FORMAT = 2  # the form of what the store keeps of a text, and how it is found; a change makes all a miss


def _load_found(raw: bytes) -> tuple[list[Unreachable], bool, Prose] | None:
    """What the store kept of a text; None for anything but [[[name, start, end], ...], lists namespaces,
    [[line, column], ...] of its comments, [[first, column, last, column], ...] of its docstrings]."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not (
        isinstance(data, list)
        and len(data) == 4
        and isinstance(data[0], list)
        and isinstance(data[1], bool)
        and all(_ints(item, 2) for item in _items(data[2]))
        and all(_ints(item, 4) for item in _items(data[3]))
    ):
        return None
    candidates = []
    for item in data[0]:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], str)
            and all(type(n) is int for n in item[1:])
        ):
            return None
        candidates.append(Unreachable(item[0], item[1], item[2]))
    prose = Prose(tuple((a, b) for a, b in data[2]), tuple((a, b, c, d) for a, b, c, d in data[3]))
    return candidates, data[1], prose


def _items(value: object) -> list:
    return value if isinstance(value, list) else [None]


def _ints(item: object, n: int) -> bool:
    return isinstance(item, list) and len(item) == n and all(type(x) is int and x >= 0 for x in item)


def left_out(module: ModuleText, ran: Set[str], loaded: Iterable[ModuleText]) -> list[Unreachable]:
    """The functions of ``module`` left out of what a run depends on: candidates whose name is not in ``ran``
    (the short names of its functions that ran) and is written nowhere else in ``module`` or the other files
    ``loaded``."""
    others = [m for m in loaded if m is not module]
    found = [
        fn
        for fn in module.candidates
        if fn.name not in ran and fn.name not in module.named_elsewhere and not any(m.words[fn.name] for m in others)
    ]
    if found and (module.lists_namespaces or any(m.lists_namespaces for m in others)):
        return []
    return found


def digest(module: ModuleText, skipped: Iterable[range], reading: str = CODE) -> str:
    """A digest of ``module``'s non-blank lines outside the ``skipped`` line ranges (1-based), read as a run that
    ``reading`` (``ModuleText.read_as``) depends on them."""
    skip: set[int] = set()
    for lines in skipped:
        skip.update(lines)
    rest = [line for n, line in enumerate(module.read_as(reading), 1) if n not in skip and line.strip()]
    return hashlib.sha256("\n".join(rest).encode()).hexdigest()[:24]


#: Characters ``str.splitlines`` ends a line at and Python's tokenizer does not: lines split at one of them are not
#: the tokenizer's.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")

#: An encoding declaration (PEP 263): a comment in a file's first two lines that changes how Python reads the file.
_ENCODING = re.compile(r"coding[:=]")


def without_comments(lines: Sequence[str], first: int = 1) -> list[str]:
    """``lines`` (of a file, the first of them its line ``first``) with each comment cut off and the space before
    it, every line kept where it is: a comment is never run, so a run does not depend on it. An encoding
    declaration (a comment naming a coding in the file's first two lines) is kept; lines the tokenizer cannot
    read as they are split (not Python, a form feed inside a line) are returned whole."""
    return _cut(lines, _comments(lines, first) or ())


def _comments(lines: Sequence[str], first: int = 1) -> list[tuple[int, int]] | None:
    """Where each comment of ``lines`` starts (see ``without_comments``); None where the tokenizer cannot read them
    as they are split."""
    if any(_OTHER_BREAKS.search(line) for line in lines):
        return None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return [
        tok.start
        for tok in tokens
        if tok.type == tokenize.COMMENT and not (tok.start[0] + first - 1 <= 2 and _ENCODING.search(tok.string))
    ]


def _cut(lines: Sequence[str], comments: Iterable[tuple[int, int]]) -> list[str]:
    out = list(lines)
    for row, col in comments:
        out[row - 1] = out[row - 1][:col].rstrip()
    return out


def _docstrings(tree: ast.Module, lines: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """Where the docstrings of the module, its classes and its functions are (see ``Prose``)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) or not node.body:
            continue
        doc = node.body[0]
        if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)):
            continue
        value = doc.value
        last = value.end_lineno or value.lineno
        # ast's columns count UTF-8 bytes
        start = len(lines[value.lineno - 1].encode()[: value.col_offset].decode("utf-8", "replace"))
        end = len(lines[last - 1].encode()[: value.end_col_offset].decode("utf-8", "replace"))
        out.append((value.lineno, start, last, end))
    return sorted(out)


def _inert(node: ast.FunctionDef | ast.AsyncFunctionDef, postponed: bool) -> bool:
    """Whether running this ``def`` statement only binds its name: no decorator, defaults and annotations that
    call nothing."""
    if node.decorator_list:
        return False
    args = node.args
    evaluated: list[ast.expr | None] = [*args.defaults, *args.kw_defaults]
    if not postponed:
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        evaluated += [a.annotation for a in every if a is not None] + [node.returns]
    return all(e is None or _plain(e) for e in evaluated)


def _plain(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant | ast.Name):
        return True
    if isinstance(e, ast.Attribute):
        return _plain(e.value)
    if isinstance(e, ast.Subscript):
        return _plain(e.value) and _plain(e.slice)
    if isinstance(e, ast.Tuple | ast.List):
        return all(_plain(x) for x in e.elts)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):  # int | None
        return _plain(e.left) and _plain(e.right)
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
        return _plain(e.operand)
    return False


def _lists_namespaces(tree: ast.Module) -> bool:
    """Whether the code can list a namespace a new function would appear in: ``globals()``, ``vars()`` or
    ``dir()`` at the top level, ``sys.modules``, or ``vars``, ``dir``, ``inspect.getmembers`` or ``__dict__`` of
    a name the file imports (a module), or ``getattr`` or ``hasattr`` of such a name and a name made at run
    time."""
    imported: set[str] = set()
    read: list[ast.expr] = []  # what is listed, or has a made name looked up in it
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imported.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.Attribute):
            if node.attr == "__dict__":
                read.append(node.value)
            elif node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
                return True
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if called == "globals":
                return True
            made_name = called in _LOOKUP and len(node.args) >= 2 and not isinstance(node.args[1], ast.Constant)
            if made_name or (called in _LISTING and node.args):
                read.append(node.args[0])
    if any(isinstance(e, ast.Name) and e.id in imported for e in read):
        return True
    for stmt in tree.body:  # vars() or dir() at the top level: the module's own names
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and not node.args and getattr(node.func, "id", None) in {"vars", "dir"}:
                    return True
    return False

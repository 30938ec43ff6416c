"""The blocks an author can write: each kind's fields, and a block's YAML body read and checked against them.

``BLOCK_KINDS`` is the one table of kinds and fields (each kind's ``spec`` in
``kinds`` is its row). ``read_fields`` turns the body of one ``trace-<kind>``
block into its checked fields, with the page line of each; an unknown kind or
field, a missing field, a value of the wrong type, YAML that does not parse, a
key written twice and YAML anchors and aliases are errors that carry the page
and line. Splitting a page into its blocks is ``read.blocks``.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from docs_hooks.base.errors import TraceError

if TYPE_CHECKING:
    import yaml


@dataclass(frozen=True)
class FieldSpec:
    kind: str  # "str", "list", "enum", "bool", "list-of-maps", "map"
    required: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class BlockSpec:
    fields: dict[str, FieldSpec]
    help: str = ""


# The set of blocks an author can write. Kept small and regular.
BLOCK_KINDS: dict[str, BlockSpec] = {
    "entry": BlockSpec(
        {
            "title": FieldSpec("str", True, help="heading of the entry"),
            "function": FieldSpec("list", True, help="dotted name(s) of the function(s) the entry explains"),
            "status": FieldSpec("enum", True, ("implemented", "derived", "illustrative")),
            "id": FieldSpec("str", help="anchor of the entry; default: from the title"),
            "spec": FieldSpec("list", help="labels of the specification's equations"),
            "note": FieldSpec("str", help="one line shown under the 'Where is it used?' heading"),
        },
        "starts an entry: a function (or a derivation from functions) with its equations",
    ),
    "equation": BlockSpec(
        {
            "id": FieldSpec("str", True, help="anchor, unique on the page"),
            "title": FieldSpec("str", True),
            "tex": FieldSpec("str", True, help="the equation in TeX"),
            "code": FieldSpec(
                "list", True, help="statement text(s) in the entry's functions, or 'module.function: text'"
            ),
            "role": FieldSpec(
                "enum",
                False,
                ("computes", "derived", "contrast"),
                help="what the code lines are to the equation: 'computes' (the default: they compute its "
                "left-hand side), 'derived' (it is worked out from them) or 'contrast' (the code does "
                "something else there)",
            ),
        },
        "a numbered equation tied to the statements that compute it, or that it is derived from or contrasted with",
    ),
    "excerpt": BlockSpec(
        {
            "code": FieldSpec("list", True, help="'module.function: statement text' of each line to show"),
            "context": FieldSpec("str", help="lines of context around each statement, e.g. '1'"),
        },
        "live lines of code, with their real line numbers and a link",
    ),
    "symbols": BlockSpec(
        {
            "rows": FieldSpec(
                "list-of-maps",
                True,
                help="each: symbol, meaning, code (a local name, names 'a, b', "
                "an expression of the function, or 'none'); with 'none', optional shape ('scalar' or an expression); "
                "with a name, optional after (the statement after which it is shown)",
            ),
            "function": FieldSpec("list", help="function whose locals the names are; default: the entry's"),
        },
        "what each symbol means, its name in code and its recorded shape",
    ),
    "example": BlockSpec(
        {
            "test": FieldSpec("str", True, help="the test whose run is shown: tests/test_x.py::test_name"),
            "title": FieldSpec("str", True),
            "function": FieldSpec("str", help="the function whose locals are shown; default: the entry's first"),
            "show": FieldSpec(
                "list-of-maps",
                True,
                help="each: label, code (a local or an expression in the function), optional name for check, "
                "optional after (the statement after which a local is shown)",
            ),
            "caption": FieldSpec("str"),
            "check": FieldSpec("str", help="an arithmetic line 'lhs = rhs' to fill from recorded values and verify"),
            "gradcheck": FieldSpec(
                "str", help="dotted name of the forward: adds the central-difference table for a backward"
            ),
            "widget": FieldSpec("bool", help="make the inputs editable in the browser"),
        },
        "a tiny worked example recorded from a real test run",
    ),
    "shapes": BlockSpec(
        {
            "names": FieldSpec("list-of-maps", help="override the labels of call sites: each ref and label"),
            "caption": FieldSpec("str"),
            "function": FieldSpec("list", help="function(s) whose call sites are shown; default: the entry's"),
        },
        "the shapes at every call site of the entry's function, from a real run",
    ),
    "params": BlockSpec(
        {
            "match": FieldSpec("list", True, help="parameter name patterns owned by this page, e.g. 'ln1_'"),
            "roles": FieldSpec("map", help="name pattern -> role text"),
        },
        "the parameters this op owns, from init_params",
    ),
    "config": BlockSpec(
        {"fields": FieldSpec("list", help="config fields to show; default: all")},
        "config values: default, who sets them, who reads them",
    ),
    "inventory": BlockSpec(
        {
            "of": FieldSpec(
                "enum", True, ("parameters", "config", "matrix", "uncovered", "undocumented", "spec", "pages")
            )
        },
        "a site-wide table",
    ),
    "results": BlockSpec(
        {
            "file": FieldSpec(
                "str",
                True,
                help="the stamped training run, from the project root ('python -m docs_hooks results' writes it)",
            ),
            "show": FieldSpec(
                "enum",
                False,
                ("run", "clipping"),
                help="'run' (the default): loss curve, evaluations, samples; 'clipping': how often the "
                "gradient was clipped, by stretch of steps",
            ),
        },
        "training results from a real, cached run",
    ),
    "source": BlockSpec(
        {"file": FieldSpec("str", True, help="the source file shown, from the project root, e.g. src/ops.py")},
        "a file of the code, line by line with an anchor each, and what cites each line (the source pages)",
    ),
}


@functools.cache
def _line_loader():
    """A YAML loader (libyaml's, where installed) that remembers the line of each top-level key.

    Made on first use: a ``check`` that reads every page back from the cache
    imports no YAML reader (bench/README.md, "check")."""
    import yaml

    class _LineLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass

    _LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    return _LineLoader


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    # loader: a _LineLoader, to which _load_yaml gives its place
    import yaml

    kind, path, first_line = loader.place  # set by _load_yaml: the block, its page, the page line of its body
    seen: dict[tuple[str, str], int] = {}
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = _line_of(key.start_mark)
        if (key.tag, key.value) in seen:
            raise TraceError(
                f"block 'trace-{kind}' has the key '{key.value}' twice in one mapping (first on line "
                f"{first_line + seen[(key.tag, key.value)]}); keep one of them",
                path,
                first_line + line,
            )
        seen[(key.tag, key.value)] = line
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__lines__"] = {k.value: _line_of(k.start_mark) for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    return mapping


class _Mark(Protocol):
    """Where a YAML node or event starts (PyYAML's and libyaml's marks)."""

    line: int


def _line_of(mark: _Mark | None) -> int:
    """The line (from 0) a YAML node or event starts on: the parser marks every one; else the body's first."""
    return mark.line if mark is not None else 0


def _load_yaml(kind: str, body: str, path: str, first_line: int) -> Any:
    """The block's body as Python data; ``first_line`` is the page line of its first line.

    YAML anchors (``&name``) and aliases (``*name``) are refused before anything
    is built from them: an alias repeats a value where it is written, so a few
    hundred bytes of them stand for more values than memory holds, and a block
    is short enough to write its values out. A key written twice in a mapping
    is an error too, rather than the last one silently winning.
    """
    import yaml

    # An anchor is written with '&', an alias with '*': a body with neither (most of them) needs no scan for
    # them (bench/README.md, "check").
    events = yaml.parse(body, Loader=_line_loader()) if "&" in body or "*" in body else ()
    for event in events:
        anchor = getattr(event, "anchor", None)
        if isinstance(event, yaml.AliasEvent):
            written = f"the alias '*{anchor}'"
        elif anchor is not None:
            written = f"the anchor '&{anchor}'"
        else:
            continue
        raise TraceError(
            f"block 'trace-{kind}' uses {written}; YAML anchors and aliases are not accepted: "
            "write the value out in full",
            path,
            first_line + _line_of(event.start_mark),
        )
    loader = _line_loader()(body)
    loader.place = (kind, path, first_line)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != "__lines__"}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value


def read_fields(kind: str, body: str, path: str, fence_line: int) -> dict:
    """The fields of a ``trace-<kind>`` block whose fence is at page line ``fence_line``, checked against its
    kind; under ``__lines__``, the page line of each field."""
    import yaml

    spec = BLOCK_KINDS.get(kind)
    if spec is None:
        close = difflib.get_close_matches(kind, list(BLOCK_KINDS), n=1)
        hint = f"did you mean 'trace-{close[0]}'? " if close else ""
        known = ", ".join(f"trace-{k}" for k in BLOCK_KINDS)
        raise TraceError(f"unknown block 'trace-{kind}'; {hint}Known blocks: {known}.", path, fence_line)
    try:
        data = _load_yaml(kind, body, path, fence_line + 1) if body.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = fence_line + 1 + (mark.line if mark is not None else 0)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TraceError(
            f"block 'trace-{kind}' is not valid YAML: {problem}. "
            "Quote values that contain ': ' or start with '-', '{', '[' or '*'.",
            path,
            line,
        ) from None
    if not isinstance(data, dict):
        raise TraceError(f"block 'trace-{kind}' must be a YAML mapping of field: value", path, fence_line + 1)
    key_lines = {k: fence_line + 1 + v for k, v in data.pop("__lines__", {}).items()}
    data = _strip_lines(data)
    checked: dict = {}
    for name, value in data.items():
        fspec = spec.fields.get(name)
        if fspec is None:
            close = difflib.get_close_matches(str(name), list(spec.fields), n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise TraceError(
                f"unknown field '{name}' in block 'trace-{kind}'; {hint}"
                f"Fields of trace-{kind}: {', '.join(spec.fields)}.",
                path,
                key_lines.get(name, fence_line),
            )
        checked[name] = _check_type(kind, name, fspec, value, path, key_lines.get(name, fence_line))
    for name, fspec in spec.fields.items():
        if fspec.required and name not in checked:
            raise TraceError(
                f"block 'trace-{kind}' is missing the field '{name}'"
                + (f" ({fspec.help})" if fspec.help else "")
                + ".",
                path,
                fence_line,
            )
    checked["__lines__"] = key_lines
    return checked


def _check_type(kind: str, name: str, spec: FieldSpec, value: Any, path: str, line: int) -> Any:
    """``value`` as the field ``name`` of a block of ``kind`` holds it (a text, a list of texts, ...); a TraceError at
    ``line`` when it is not of the field's type."""

    def bad(expected: str) -> TraceError:
        return TraceError(
            f"field '{name}' of block 'trace-{kind}' must be {expected}, not {type(value).__name__} {value!r}",
            path,
            line,
        )

    if spec.kind == "str":
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise bad("text")
        return str(value)
    if spec.kind == "list":
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in items):
            raise bad("a text or a list of texts")
        return [str(v) for v in items]
    if spec.kind == "enum":
        if value not in spec.choices:
            raise bad("one of " + ", ".join(spec.choices))
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if spec.kind == "map":
        if not isinstance(value, dict):
            raise bad("a mapping")
        return value
    if spec.kind == "list-of-maps":
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise bad("a list of mappings")
        return value
    raise AssertionError(spec.kind)


def valid_fields(kind: object, fields: object) -> bool:
    """Whether ``fields`` are what read_fields makes of a block of ``kind``: its fields checked, their lines."""
    if type(kind) is not str or type(fields) is not dict:
        return False
    spec = BLOCK_KINDS.get(kind)
    if spec is None:
        return False
    lines = fields.get("__lines__")
    if type(lines) is not dict or not all(type(k) is str and type(v) is int for k, v in lines.items()):
        return False
    names = set(fields) - {"__lines__"}
    if not names <= set(spec.fields) or any(f.required and n not in names for n, f in spec.fields.items()):
        return False
    try:
        return all(_check_type(kind, name, spec.fields[name], fields[name], "", 0) == fields[name] for name in names)
    except TraceError:
        return False

"""The specification as the pages cite it: its equation labels, and where each sits once compiled.

Pages cite equations of the specification PDF by label (``eq:ln-mean``). Resolving
a page needs only to know which labels exist: ``labels_without_compiling`` reads
them from the compile's cache when it holds one for these sources, else from the
``<label>`` marks written in the ``.typ`` files, and runs nothing. Compiling, which
gives each label its section, number and page, is the run stage's (``run/spec.py``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from docs_hooks.base.cachedir import read_entry
from docs_hooks.base.errors import TraceError

__all__ = ["SpecRef", "SpecIndex", "labels_without_compiling", "format_refs", "NOT_STATED"]

#: What :func:`format_refs` says when a page cites no equation.
NOT_STATED = "Not stated in the PDF"

#: Bump when the extraction or the cache layout changes, so that old cache entries are not read back.
SCHEMA = 1

#: Only the fonts embedded in the typst package are used, so the PDF (and its
#: page breaks) do not depend on the fonts installed on the machine.
IGNORE_SYSTEM_FONTS = True

#: Files below the specification's folder that can change the document.
SOURCE_SUFFIXES = frozenset(
    {
        ".typ",
        ".bib",
        ".yml",
        ".yaml",
        ".json",
        ".toml",
        ".csv",
        ".xml",
        ".txt",
        ".cbor",
        ".wasm",
        ".svg",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".pdf",
        ".otf",
        ".ttf",
        ".otc",
        ".ttc",
    }
)
SKIP_DIRS = frozenset({"__pycache__", "node_modules"})


def typst_version() -> str:
    """The installed typst package's version ("absent" without one): part of the compile's cache key."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("typst")
    except PackageNotFoundError:
        return "absent"


@dataclass(frozen=True)
class SpecRef:
    """Where one labelled equation sits in the compiled specification."""

    label: str
    section: str  # e.g. "4.3"; "" for an equation before the first numbered heading
    equation: int
    page: int


@dataclass(frozen=True)
class SpecIndex:
    """The labelled equations of one compiled specification."""

    source: Path
    refs: dict[str, SpecRef]  # by label, in document order
    pdf: bytes = field(repr=False)
    key: str = ""  # hash of the sources the index was built from
    from_cache: bool = False
    warnings: tuple[str, ...] = ()
    # labels found on equations that carry no number (numbering: none)
    unnumbered: frozenset[str] = frozenset()

    def labels(self) -> list[str]:
        """All equation labels, in document order."""
        return list(self.refs)

    def __contains__(self, label: object) -> bool:
        return label in self.refs

    def lookup(self, label: str) -> SpecRef:
        """The reference for ``label``; a :class:`TraceError` if the spec lacks it.

        The error has no place yet: the caller puts it at the page and line
        that cite the label with ``TraceError.at``.
        """
        ref = self.refs.get(label)
        if ref is not None:
            return ref
        raise TraceError(self._unknown_label_message(label))

    def lookup_all(self, labels: Iterable[str]) -> list[SpecRef]:
        """:meth:`lookup` for each label, in the given order."""
        return [self.lookup(label) for label in labels]

    def _unknown_label_message(self, label: str) -> str:
        source = display_path(self.source)
        if label in self.unnumbered:
            return (
                f"spec label '{label}' is on an equation without a number in {source}, "
                f"so it has no equation number to cite; number that equation "
                f"(math.equation numbering) or cite another label"
            )
        message = f"unknown spec label '{label}': no numbered equation in {source} carries it"
        candidates = self.labels()
        close = difflib.get_close_matches(label, candidates, n=3, cutoff=0.6)
        if close:
            quoted = ", ".join(f"'{c}'" for c in close)
            message += f"; did you mean {quoted}?"
        elif candidates:
            message += f" (it has {len(candidates)} labels, e.g. '{candidates[0]}')"
        else:
            message += " (it has no labelled equations)"
        message += f" Cite a label that exists, or add <{label}> after the equation in {source}."
        return message

    # -- cache (de)serialisation --------------------------------------------

    def _to_json(self) -> str:
        return json.dumps(
            {
                "schema": SCHEMA,
                "key": self.key,
                "refs": [ref.__dict__ for ref in self.refs.values()],
                "warnings": list(self.warnings),
                "unnumbered": sorted(self.unnumbered),
            },
            indent=1,
        )

    @classmethod
    def _from_json(cls, text: str, source: Path, pdf: bytes) -> SpecIndex:
        """The index ``_to_json`` wrote; ValueError when ``text`` is not one (damaged, or another schema)."""
        data = json.loads(text)
        if type(data) is not dict or data.get("schema") != SCHEMA:
            raise ValueError("not a cached index of this schema")
        refs = {}
        for item in _list_of(data.get("refs"), dict):
            ref = SpecRef(
                label=_typed(item.get("label"), str),
                section=_typed(item.get("section"), str),
                equation=_typed(item.get("equation"), int),
                page=_typed(item.get("page"), int),
            )
            refs[ref.label] = ref
        return cls(
            source=source,
            refs=refs,
            pdf=pdf,
            key=_typed(data.get("key"), str),
            from_cache=True,
            warnings=tuple(_list_of(data.get("warnings"), str)),
            unnumbered=frozenset(_list_of(data.get("unnumbered"), str)),
        )


def _typed(value, kind: type):
    """``value`` when it is exactly of ``kind`` (JSON makes no subclasses; a bool is no int); else ValueError."""
    if type(value) is not kind:
        raise ValueError(f"a cached index holds {type(value).__name__} where {kind.__name__} belongs")
    return value


def _list_of(values, kind: type) -> list:
    return [_typed(v, kind) for v in _typed(values, list)]


_TYPST_LABEL = re.compile(r"<([A-Za-z_][\w:.-]*)>")


def labels_without_compiling(source: Path, cache_dir: Path | None = None) -> SpecIndex:
    """The specification's labels with no Typst run, for ``check``: the compiled index when the cache holds
    one for these sources, else every ``<label>`` written in them (numbers and pages unknown, so good for
    telling a known label from an unknown one, not for showing where it is)."""
    source = Path(source).resolve()
    if not source.is_file():
        raise TraceError(
            "specification source not found; create it or fix the path to it in the configuration",
            display_path(source),
        )
    if cache_dir is not None:
        cached = read_cache(Path(cache_dir), source, source_key(source, source.parent, [Path(cache_dir)]))
        if cached is not None:
            return cached
    labels: dict[str, SpecRef] = {}
    for typ in sorted(source.parent.rglob("*.typ")):
        if SKIP_DIRS.isdisjoint(typ.parts):
            for label in _TYPST_LABEL.findall(typ.read_text(encoding="utf-8", errors="replace")):
                labels.setdefault(label, SpecRef(label, "", 0, 0))
    return SpecIndex(source, labels, b"")


def format_refs(refs: Iterable[SpecRef]) -> str:
    """Cite equations as "Section 4.3, Eq. 30, 31, p. 7".

    Equations are put in document order (duplicates dropped) and grouped by
    section and page; groups are joined with "; ", and a section that runs
    over a page break is named once ("Section 4.3, Eq. 30, p. 4; Eq. 31,
    p. 5").  An empty list gives :data:`NOT_STATED`.
    """
    unique = {ref.label: ref for ref in refs}
    ordered = sorted(unique.values(), key=lambda r: (r.equation, r.page, r.label))
    if not ordered:
        return NOT_STATED
    groups: list[tuple[str, int, list[int]]] = []
    for ref in ordered:
        if groups and groups[-1][0] == ref.section and groups[-1][1] == ref.page:
            if ref.equation not in groups[-1][2]:
                groups[-1][2].append(ref.equation)
        else:
            groups.append((ref.section, ref.page, [ref.equation]))
    parts = []
    previous_section = None
    for section, page, equations in groups:
        eqs = ", ".join(str(n) for n in equations)
        # A section that runs over a page break is named once.
        head = f"Section {section}, " if section and section != previous_section else ""
        parts.append(f"{head}Eq. {eqs}, p. {page}")
        previous_section = section
    return "; ".join(parts)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def source_key(source: Path, root: Path, excluded: list[Path]) -> str:
    """A hash of every file below ``root`` that Typst could read."""
    skip = [Path(p).resolve() for p in excluded]
    digest = hashlib.sha256()
    for part in (
        f"schema={SCHEMA}",
        f"typst={typst_version()}",
        f"ignore_system_fonts={IGNORE_SYSTEM_FONTS}",
        f"main={source.relative_to(root).as_posix()}",
    ):
        digest.update(part.encode() + b"\0")
    for path in source_files(root, skip):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        data = path.read_bytes()
        digest.update(str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def source_files(root: Path, skip: list[Path]) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS and (here / d).resolve() not in skip
        )
        for name in sorted(filenames):
            path = here / name
            if name.startswith(".") or path.suffix.lower() not in SOURCE_SUFFIXES:
                continue
            if path.resolve() in skip:
                continue
            files.append(path)
    return files


def cache_paths(cache_dir: Path, source: Path, key: str) -> tuple[Path, Path]:
    stem = f"{source.stem}-{key[:24]}"
    return cache_dir / f"{stem}.json", cache_dir / f"{stem}.pdf"


def read_cache(cache_dir: Path, source: Path, key: str) -> SpecIndex | None:
    """The cached index and PDF of the sources whose digest is ``key``; None when missing or damaged."""
    json_path, pdf_path = cache_paths(Path(cache_dir), source, key)
    text, pdf = read_entry(json_path), read_entry(pdf_path)
    if text is None or pdf is None or not pdf.startswith(b"%PDF-"):
        return None
    try:
        index = SpecIndex._from_json(text.decode("utf-8"), source, pdf)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return index if index.key == key else None

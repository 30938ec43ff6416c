"""Compile the Typst specification and read its equation numbers back.

The documentation cites equations of the specification PDF by label
(``eq:ln-mean``).  This module compiles the ``.typ`` source with the ``typst``
package and asks the compiled document, for every labelled display equation,
which section it is in, which number it got and on which page it landed.  The
numbers therefore always match the PDF; nothing is counted in Python.

The answer is cached in ``cache_dir`` under a hash of every file Typst could
read (all ``.typ`` files and assets below the source's folder), so an unchanged
specification is compiled once.

Plain Python and ``typst`` only: this module does not import MkDocs.
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
from types import SimpleNamespace

import typst

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.cachedir import read_entry, write_entry
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT

__all__ = ["SpecRef", "SpecIndex", "compile_spec", "format_refs", "NOT_STATED"]

#: What :func:`format_refs` says when a page cites no equation.
NOT_STATED = "Not stated in the PDF"

#: Bump when the extraction below or the cache layout changes, so that old
#: cache entries are not read back.
_SCHEMA = 1

#: Only the fonts embedded in the typst package are used, so the PDF (and its
#: page breaks) do not depend on the fonts installed on the machine.
_IGNORE_SYSTEM_FONTS = True

#: Seconds the compile may take unless told (the test_timeout setting).
DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT

#: Files below the specification's folder that can change the document.
_SOURCE_SUFFIXES = frozenset(
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
_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})

# Evaluated by Typst against the compiled document: one dictionary per
# labelled display equation, in document order.  ``section`` is the heading
# counter at the equation formatted with the heading's own numbering pattern,
# ``equation`` the equation counter there and ``page`` the physical page
# (1-based, the one a PDF viewer opens with ``#page=N``).
_INDEX_EXPR = """
query(math.equation.where(block: true)).filter(e => e.has("label")).map(e => {
  let loc = e.location()
  let nums = counter(heading).at(loc)
  let heads = query(selector(heading).before(loc)).filter(h => h.numbering != none)
  let section = if heads.len() == 0 or nums.all(n => n == 0) {
    ""
  } else if type(heads.last().numbering) == str {
    numbering(heads.last().numbering, ..nums)
  } else {
    nums.map(str).join(".")
  }
  (
    label: str(e.label),
    numbered: e.numbering != none,
    section: section,
    equation: counter(math.equation).at(loc).first(),
    page: loc.page(),
  )
})
"""

_DIAGNOSTIC_PLACE = re.compile(r"┌─\s*(?P<path>.+?):(?P<line>\d+):(?P<col>\d+)")


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
        source = _display_path(self.source)
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
                "schema": _SCHEMA,
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
        if type(data) is not dict or data.get("schema") != _SCHEMA:
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


# ---------------------------------------------------------------- compiling --


def compile_spec(
    source: Path,
    pdf_out: Path | None = None,
    cache_dir: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> SpecIndex:
    """Compile ``source`` to PDF and index its labelled equations.

    ``pdf_out``, if given, receives the PDF (rewritten only when its bytes
    change).  ``cache_dir``, if given, keeps the index and the PDF under a
    hash of all spec sources; an unchanged spec is then not recompiled.
    Typst problems raise :class:`TraceError` placed at the offending
    ``.typ`` file and line. Typst runs in a child process, stopped after
    ``timeout`` seconds (the test_timeout setting).
    """
    source = Path(source).resolve()
    if not source.is_file():
        raise TraceError(
            "specification source not found; create it or fix the path to it in the configuration",
            _display_path(source),
        )
    root = source.parent
    excluded = [p for p in (pdf_out, cache_dir) if p is not None]
    key = _source_key(source, root, excluded)

    index = _read_cache(cache_dir, source, key) if cache_dir is not None else None
    if index is None:
        index = _compile(source, root, key, timeout)
        if cache_dir is not None:
            _write_cache(Path(cache_dir), source, index)

    if pdf_out is not None:
        _write_if_changed(Path(pdf_out), index.pdf)
    return index


_TYPST_LABEL = re.compile(r"<([A-Za-z_][\w:.-]*)>")


def labels_without_compiling(source: Path, cache_dir: Path | None = None) -> SpecIndex:
    """The specification's labels with no Typst run, for ``check``: the compiled index when the cache holds
    one for these sources, else every ``<label>`` written in them (numbers and pages unknown, so good for
    telling a known label from an unknown one, not for showing where it is)."""
    source = Path(source).resolve()
    if not source.is_file():
        raise TraceError(
            "specification source not found; create it or fix the path to it in the configuration",
            _display_path(source),
        )
    if cache_dir is not None:
        cached = _read_cache(Path(cache_dir), source, _source_key(source, source.parent, [Path(cache_dir)]))
        if cached is not None:
            return cached
    labels: dict[str, SpecRef] = {}
    for typ in sorted(source.parent.rglob("*.typ")):
        if _SKIP_DIRS.isdisjoint(typ.parts):
            for label in _TYPST_LABEL.findall(typ.read_text(encoding="utf-8", errors="replace")):
                labels.setdefault(label, SpecRef(label, "", 0, 0))
    return SpecIndex(source, labels, b"")


def _compile(source: Path, root: Path, key: str, timeout: float = DEFAULT_TIMEOUT) -> SpecIndex:
    pdf, warnings, raw = _compile_in_child(source, root, timeout)
    refs: dict[str, SpecRef] = {}
    unnumbered: set[str] = set()
    for item in json.loads(raw):
        label = str(item["label"])
        if not item["numbered"]:
            unnumbered.add(label)
            continue
        ref = SpecRef(
            label=label,
            section=str(item["section"]).strip().rstrip(".").strip(),
            equation=int(item["equation"]),
            page=int(item["page"]),
        )
        if label in refs:
            first = refs[label]
            raise TraceError(
                f"spec label '{label}' is on two equations (Eq. {first.equation} on p. "
                f"{first.page} and Eq. {ref.equation} on p. {ref.page}), so a citation "
                f"of it is ambiguous; rename one of them",
                _display_path(source),
            )
        refs[label] = ref

    return SpecIndex(
        source=source,
        refs=refs,
        pdf=bytes(pdf),
        key=key,
        from_cache=False,
        warnings=tuple(warnings),
        unnumbered=frozenset(unnumbered - set(refs)),
    )


def _compile_in_child(source: Path, root: Path, timeout: float) -> tuple[bytes, list[str], str]:
    """Typst's PDF, its warnings (formatted) and the index of labels, from a child process stopped (with
    whatever it started) after ``timeout`` seconds; a Typst error raises its TraceError."""
    import subprocess
    import sys
    import tempfile

    from docs_hooks.run import children

    with tempfile.TemporaryDirectory(prefix="docs-hooks-spec-") as tmp:
        pdf_file = Path(tmp) / "spec.pdf"
        proc = children.start(
            [
                sys.executable,
                "-c",
                "from docs_hooks.run.spec import _child_main; _child_main()",
                str(source),
                str(root),
                str(pdf_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            children.kill_group(proc)
            proc.communicate()
            raise TraceError(
                f"Typst did not finish compiling the specification within test_timeout = {timeout:g} s, so it "
                "was stopped; look for a loop that does not end in the Typst source, or raise test_timeout in "
                "[tool.docs_hooks]",
                _display_path(source),
            ) from None
        finally:
            children.release(proc)
        try:
            answer = json.loads(out)
        except ValueError:
            tail = "\n".join(err.decode(errors="replace").rstrip().splitlines()[-15:])
            how = (
                f"was killed by signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exited with code {proc.returncode}"
            )
            raise TraceError(
                f"Typst could not compile the specification: the compiling process {how}; check the file and "
                f"its includes" + (f". Last lines of its output:\n{tail}" if tail else ""),
                _display_path(source),
            ) from None
        if "typst_error" in answer:
            raise _typst_error(SimpleNamespace(**answer["typst_error"]), source, root)
        if "runtime_error" in answer:  # e.g. a file the compiler cannot open
            raise TraceError(
                f"Typst could not compile the specification: {answer['runtime_error']}; check the file and its "
                "includes",
                _display_path(source),
            )
        return pdf_file.read_bytes(), list(answer["warnings"]), answer["index"]


def _child_main() -> None:  # pragma: no cover - runs in the compiling process
    """Compile (arguments: source, root, where the PDF goes); print JSON: the index and the warnings, or
    the error."""
    import sys

    from docs_hooks.run import children

    children.watch_parent()
    source, root, pdf_file = sys.argv[1:4]
    try:
        compiler = typst.Compiler(source, root=root, ignore_system_fonts=_IGNORE_SYSTEM_FONTS)
        pdf, warnings = compiler.compile_with_warnings(format="pdf")
        raw = compiler.eval(_INDEX_EXPR, format="json")
    except typst.TypstError as exc:
        answer = {
            "typst_error": {
                "message": str(getattr(exc, "message", "") or exc),
                "diagnostic": str(getattr(exc, "diagnostic", "") or ""),
                "hints": [str(h) for h in (getattr(exc, "hints", None) or [])],
            }
        }
    except RuntimeError as exc:
        answer = {"runtime_error": str(exc)}
    else:
        Path(pdf_file).write_bytes(bytes(pdf))
        answer = {
            "index": raw if isinstance(raw, str) else bytes(raw).decode(),
            "warnings": [_format_warning(w, Path(root)) for w in warnings],
        }
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


def _typst_error(exc: typst.TypstError, source: Path, root: Path) -> TraceError:
    message = str(getattr(exc, "message", "") or exc)
    diagnostic = str(getattr(exc, "diagnostic", "") or "")
    hints = [str(h) for h in (getattr(exc, "hints", None) or [])]
    path, line = _diagnostic_place(diagnostic, root)
    # First line: what went wrong and what to do (what CI annotations show);
    # then Typst's own diagnostic with the source excerpt.
    text = f"Typst could not compile the specification: {message}"
    if hints:
        text += " (hint: " + "; ".join(hints) + ")"
    text += "; fix the Typst source there and build again."
    if diagnostic.strip():
        text += "\n" + diagnostic.rstrip()
    return TraceError(text, path or _display_path(source), line)


def _diagnostic_place(diagnostic: str, root: Path) -> tuple[str | None, int | None]:
    """The first ``file:line`` of a Typst diagnostic, as a displayable path."""
    match = _DIAGNOSTIC_PLACE.search(diagnostic)
    if match is None:
        return None, None
    rel = match.group("path").strip()
    path = Path(rel)
    if not path.is_absolute() and not rel.startswith("@"):
        # Typst names a file relative to the working directory; the source's folder is the fallback.
        from_cwd = Path.cwd() / rel
        path = from_cwd if from_cwd.is_file() else root / rel
    return _display_path(path), int(match.group("line"))


def _format_warning(warning: object, root: Path) -> str:
    message = str(getattr(warning, "message", "") or warning)
    path, line = _diagnostic_place(str(getattr(warning, "diagnostic", "") or ""), root)
    if path is None:
        return message
    return f"{path}:{line}: {message}" if line is not None else f"{path}: {message}"


def _display_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


# -------------------------------------------------------------------- cache --


def _source_key(source: Path, root: Path, excluded: list[Path]) -> str:
    """A hash of every file below ``root`` that Typst could read."""
    skip = [Path(p).resolve() for p in excluded]
    digest = hashlib.sha256()
    for part in (
        f"schema={_SCHEMA}",
        f"typst={getattr(typst, '__version__', '?')}",
        f"ignore_system_fonts={_IGNORE_SYSTEM_FONTS}",
        f"main={source.relative_to(root).as_posix()}",
    ):
        digest.update(part.encode() + b"\0")
    for path in _source_files(root, skip):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        data = path.read_bytes()
        digest.update(str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def _source_files(root: Path, skip: list[Path]) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS and (here / d).resolve() not in skip
        )
        for name in sorted(filenames):
            path = here / name
            if name.startswith(".") or path.suffix.lower() not in _SOURCE_SUFFIXES:
                continue
            if path.resolve() in skip:
                continue
            files.append(path)
    return files


def _cache_paths(cache_dir: Path, source: Path, key: str) -> tuple[Path, Path]:
    stem = f"{source.stem}-{key[:24]}"
    return cache_dir / f"{stem}.json", cache_dir / f"{stem}.pdf"


def _read_cache(cache_dir: Path, source: Path, key: str) -> SpecIndex | None:
    """The cached index and PDF of the sources whose digest is ``key``; None when missing or damaged."""
    json_path, pdf_path = _cache_paths(Path(cache_dir), source, key)
    text, pdf = read_entry(json_path), read_entry(pdf_path)
    if text is None or pdf is None or not pdf.startswith(b"%PDF-"):
        return None
    try:
        index = SpecIndex._from_json(text.decode("utf-8"), source, pdf)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return index if index.key == key else None


def _write_cache(cache_dir: Path, source: Path, index: SpecIndex) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    json_path, pdf_path = _cache_paths(cache_dir, source, index.key)
    # PDF first: an index without its PDF is never read back as a hit.
    write_entry(pdf_path, index.pdf)
    write_entry(json_path, index._to_json().encode("utf-8"))
    for old in cache_dir.glob(f"{source.stem}-*"):
        if old not in (json_path, pdf_path) and old.suffix in (".json", ".pdf"):
            try:
                old.unlink()
            except OSError:
                pass


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, data)


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

"""Compile the Typst specification and read its equation numbers back.

This module compiles the ``.typ`` source with the ``typst`` package (the
``spec`` extra: ``pip install 'docs-hooks[spec]'``) in a child process, and asks
the compiled document, for every labelled display equation, which section it is
in, which number it got and on which page it landed. The numbers therefore
always match the PDF; nothing is counted in Python.

The answer is cached in ``cache_dir`` under a hash of every file Typst could
read (all ``.typ`` files and assets below the source's folder), so an unchanged
specification is compiled once (see ``read/spec.py``, which reads that cache).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.cachedir import write_entry
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import DEFAULT_TEST_TIMEOUT
from docs_hooks.read.spec import (
    IGNORE_SYSTEM_FONTS,
    SpecIndex,
    SpecRef,
    cache_paths,
    display_path,
    read_cache,
    source_key,
)

__all__ = ["compile_spec"]

#: Seconds the compile may take unless told (the test_timeout setting).
DEFAULT_TIMEOUT = DEFAULT_TEST_TIMEOUT

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
            display_path(source),
        )
    root = source.parent
    if importlib.util.find_spec("typst") is None:
        raise TraceError(
            "compiling the specification needs the typst package, which is not installed; install it with "
            "pip install 'docs-hooks[spec]' (or pip install typst), or remove spec_source from [tool.docs_hooks]",
            display_path(source),
        )
    excluded = [p for p in (pdf_out, cache_dir) if p is not None]
    key = source_key(source, root, excluded)

    index = read_cache(cache_dir, source, key) if cache_dir is not None else None
    if index is None:
        index = _compile(source, root, key, timeout)
        if cache_dir is not None:
            _write_cache(Path(cache_dir), source, index)

    if pdf_out is not None:
        _write_if_changed(Path(pdf_out), index.pdf)
    return index


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
                display_path(source),
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
                display_path(source),
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
                display_path(source),
            ) from None
        if "typst_error" in answer:
            raise _typst_error(SimpleNamespace(**answer["typst_error"]), source, root)
        if "runtime_error" in answer:  # e.g. a file the compiler cannot open
            raise TraceError(
                f"Typst could not compile the specification: {answer['runtime_error']}; check the file and its "
                "includes",
                display_path(source),
            )
        return pdf_file.read_bytes(), list(answer["warnings"]), answer["index"]


def _child_main() -> None:  # pragma: no cover - runs in the compiling process
    """Compile (arguments: source, root, where the PDF goes); print JSON: the index and the warnings, or
    the error."""
    import sys

    import typst

    from docs_hooks.run import children

    children.watch_parent()
    source, root, pdf_file = sys.argv[1:4]
    answer: dict[str, object]
    try:
        compiler = typst.Compiler(source, root=root, ignore_system_fonts=IGNORE_SYSTEM_FONTS)
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
        # With no output file, a PDF comes back as its bytes (a list of them is one image per page).
        Path(pdf_file).write_bytes(bytes(cast(bytes, pdf)))
        answer = {
            "index": raw if isinstance(raw, str) else bytes(raw).decode(),
            "warnings": [_format_warning(w, Path(root)) for w in warnings],
        }
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


def _typst_error(exc: object, source: Path, root: Path) -> TraceError:
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
    return TraceError(text, path or display_path(source), line)


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
    return display_path(path), int(match.group("line"))


def _format_warning(warning: object, root: Path) -> str:
    message = str(getattr(warning, "message", "") or warning)
    path, line = _diagnostic_place(str(getattr(warning, "diagnostic", "") or ""), root)
    if path is None:
        return message
    return f"{path}:{line}: {message}" if line is not None else f"{path}: {message}"


def _write_cache(cache_dir: Path, source: Path, index: SpecIndex) -> None:
    cache_dir.mkdir(parents=True, exist_ok=True)
    json_path, pdf_path = cache_paths(cache_dir, source, index.key)
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

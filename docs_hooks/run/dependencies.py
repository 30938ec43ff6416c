"""What a recording depends on, and whether it still holds: digests of the code as it is now (see
``Dependencies``), so that an edit to one function re-runs only the recordings that ran it, and code that only
moved keeps its recordings, their line numbers moved with it (``moved_by``). The line map a coverage run left
is carried over by the same test (``carried``)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from docs_hooks.run import residue
from docs_hooks.run.recording import Recording

if TYPE_CHECKING:
    from docs_hooks.resolve.codeindex import Function


class Dependencies:
    """What a recording depends on, and whether it is still as it was: digests of the code as it is now, each
    computed once for the build on first use.

    - a function of the code index whose code ran: its text (``Function.source_lines``) without its comments and
      docstrings (``residue``), each line kept where it is, and where it starts;
    - a module the run had loaded that holds functions of the index: its text outside those functions' bodies
      (imports, constants, classes' own lines, each ``def`` line), blank lines, comments and docstrings left out,
      less the top-level functions that did not run and that nothing the run loaded names (``residue``): a
      function appended to a module, or one that no recording reaches edited, re-records nothing;
    - any other file the run loaded or read (a helper module, a data file): its bytes;
    - the name of each module it loaded, as the index names it (``source_root`` decides): the functions a
      recording saw are named so.

    A function whose text is the same but starts elsewhere (lines inserted above it) is still valid: its
    recorded lines are moved by as much (see ``moved``).
    """

    def __init__(
        self,
        project_root: Path,
        functions: Mapping[str, Function],
        file_digests: dict[str, str],
        modules: dict[str, str] | None = None,
        texts: residue.Texts | None = None,
    ) -> None:
        self.project_root = project_root
        self.functions = functions
        self.texts = texts or residue.Texts()  # the files as read and parsed, kept by a serve session
        self.file_digests = file_digests  # repo path -> digest of its text, from the index
        # repo path -> module name, from the module map (absolute file -> module name)
        self.names = {Path(os.path.relpath(f, project_root)).as_posix(): m for f, m in (modules or {}).items()}
        self._by_file: dict[str, list[Function]] | None = None
        self._function: dict[tuple[str, str], str] = {}  # (function, how it is read: ``reading``) -> digest
        self._reading: dict[frozenset[str], str] = {}  # the files a run loaded -> how it may read the code
        self._module: dict[tuple, str | None] = {}  # (repo path, functions left out) -> digest
        self._dropped: dict[tuple, tuple[residue.Unreachable, ...]] = {}  # (path, ran, loaded) -> left out
        self._texts: dict[str, residue.ModuleText | None] = {}
        self._file: dict[str, str | None] = {}

    def of(self, rec: Recording) -> dict:
        """The dependencies of ``rec`` as they are now (stored with it)."""
        loaded = sorted(set(rec.files))
        functions = {}
        for name in rec.reached:
            fn = self.functions.get(name)
            if fn is not None:
                functions[name] = [self.function(name, loaded), fn.start]
        return {
            "functions": functions,
            "modules": {f: self.module(f, functions, loaded) for f in loaded},
            "files": {f: self.file(f) for f in sorted(set(rec.opened))},
            "names": {f: self.names.get(f) for f in loaded},
        }

    def moved(self, deps: dict) -> dict[str, int] | None:
        """None when something ``deps`` names has changed, else how far each function that moved has moved."""
        shifts = {}
        loaded = list(deps["modules"])
        for name, (digest, start) in deps["functions"].items():
            fn = self.functions.get(name)
            if fn is None or self.function(name, loaded) != digest:
                return None
            if fn.start != start:
                shifts[name] = fn.start - start
        if any(self.module(f, deps["functions"], loaded) != d for f, d in deps["modules"].items()):
            return None
        if any(self.file(f) != d for f, d in deps["files"].items()):
            return None
        if any(name is not None and self.names.get(f) != name for f, name in deps["names"].items()):
            return None  # a module now named otherwise: the recording names its functions the old way
        # (a module named now that was not, one that gained its first function, had no function to name)
        return shifts

    def function(self, name: str, loaded: Iterable[str]) -> str:
        """A digest of the function's text as a run that loaded the files ``loaded`` depends on it (``reading``):
        without its comments and docstrings, unless a file of ``loaded`` may read them."""
        reading = self.reading(loaded)
        if (name, reading) not in self._function:
            fn = self.functions[name]
            lines: Sequence[str] = fn.source_lines
            if reading != residue.ALL:
                module = self._text(fn.repo_path)  # its module read so once, not each function
                if module is not None and tuple(module.lines[fn.start - 1 : fn.end]) == tuple(lines):
                    lines = module.read_as(reading)[fn.start - 1 : fn.end]
                else:  # not the file as it is now: its comments only, found in its own lines
                    lines = residue.without_comments(lines, fn.start)
            self._function[name, reading] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:24]
        return self._function[name, reading]

    def reading(self, loaded: Iterable[str]) -> str:
        """How much of the code's text a run that loaded the files ``loaded`` may read (``residue.ALL``,
        ``NO_COMMENTS``, ``CODE``: ``ModuleText.reading``); a file that cannot be read now may read anything."""
        files = frozenset(loaded)
        if files not in self._reading:
            found = {m.reading() if m is not None else residue.ALL for m in (self._text(f) for f in files)}
            self._reading[files] = next((r for r in (residue.ALL, residue.NO_COMMENTS) if r in found), residue.CODE)
        return self._reading[files]

    def module(self, repo_path: str, ran: Iterable[str] = (), loaded: Iterable[str] = ()) -> str | None:
        """A module of the index: its text outside the bodies of its functions, less its top-level functions
        that did not run and that nothing in the ``loaded`` files names (see ``residue``). Any other file (a
        helper outside the code roots, whose functions the index does not know ran or not): its whole text.
        ``ran``: the functions of the index whose code ran."""
        if repo_path not in self.file_digests:
            return self.file(repo_path)
        mine = self.functions_in(repo_path)
        module = self._text(repo_path)
        if module is None:
            return None
        names = frozenset(fn.name.rsplit(".", 1)[-1] for fn in mine if fn.name in ran)
        asked = (repo_path, names, frozenset(loaded))
        if asked not in self._dropped:
            others = [self._text(f) for f in asked[2] if f != repo_path]
            if any(m is None for m in others):
                self._dropped[asked] = ()  # a loaded file that cannot be read now: nothing is left out
            else:
                # only functions the index knows: of one it does not, it cannot know whether it ran
                starts = {fn.start for fn in mine}
                found = residue.left_out(module, names, [m for m in others if m is not None])
                self._dropped[asked] = tuple(fn for fn in found if fn.start in starts)
        dropped = self._dropped[asked]
        reading = self.reading(asked[2])
        key = (repo_path, dropped, reading)
        if key not in self._module:
            bodies = [range((fn.header.end if fn.header is not None else fn.start) + 1, fn.end + 1) for fn in mine]
            skipped = bodies + [range(fn.start, fn.end + 1) for fn in dropped]
            self._module[key] = residue.digest(module, skipped, reading)
        return self._module[key]

    def functions_in(self, repo_path: str) -> list[Function]:
        """The functions of the index in one file."""
        if self._by_file is None:
            self._by_file = {}
            for fn in self.functions.values():
                self._by_file.setdefault(fn.repo_path, []).append(fn)
        return self._by_file.get(repo_path, [])

    def _text(self, repo_path: str) -> residue.ModuleText | None:
        if repo_path not in self._texts:
            self._texts[repo_path] = self.texts.get(self.project_root / repo_path)
        return self._texts[repo_path]

    def file(self, repo_path: str) -> str | None:
        """Digest of a file's bytes: from the index, else read now (helpers outside the code roots, data)."""
        if repo_path not in self._file:
            known = self.file_digests.get(repo_path)
            if known is None:
                try:
                    known = hashlib.sha256((self.project_root / repo_path).read_bytes()).hexdigest()
                except OSError:
                    known = None
            self._file[repo_path] = known
        return self._file[repo_path]


def moved_by(rec: Recording, shifts: dict[str, int]) -> Recording:
    """``rec`` with the lines of calls made by functions that moved (``shifts``: name -> lines) moved with them: a
    new recording, ``rec`` left as it was read (a serve session hands it to its next build too: see
    ``record_store.ReadBack``)."""
    if not shifts:
        return rec
    calls = [
        replace(call, caller_line=call.caller_line + shifts.get(call.caller, 0)) if call.caller is not None else call
        for call in rec.calls
    ]
    seen = [[c[0], c[1], c[2] + shifts.get(c[0], 0), c[3]] for c in rec.seen]
    return replace(rec, calls=calls, seen=seen)

"""What a build is made from, digested: equal digests, the same build (``fingerprint``), or the same pages
(``project_digest``, see kept)."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path

from docs_hooks.base.settings import DEFAULT_EXCLUDE, Settings, walk_files


def fingerprint(settings: Settings) -> str:
    """A digest of everything a build is made from: the code, the tests, the helpers, the spec, the settings.

    Equal fingerprints mean a build made earlier (and the pages it resolved) is
    still right, which is what makes ``mkdocs serve`` rebuilds after a page edit cheap.
    """
    return code_digest(settings) + settings_digest(settings)


def settings_digest(settings: Settings) -> str:
    return hashlib.sha256(
        repr(sorted((k, v) for k, v in vars(settings).items() if not k.startswith("_"))).encode()
    ).hexdigest()


# A file bigger than this is known by its size and time of change, not read: a project may keep large data.
WHOLE_FILE_BYTES = 1 << 20


def project_digest(settings: Settings) -> str:
    """A digest of every file of the project but its pages: the code, the tests, and whatever else a run or a
    block may read (a helper module, a data file, a recorded training run); what a page that shows the code is
    made from besides its own text (see kept). Hidden folders, virtual environments and what
    ``DEFAULT_EXCLUDE`` names are left out."""
    return project_digests(settings)[0]


def project_digests(settings: Settings, indexed: Collection[str] = ()) -> tuple[str, str]:
    """``project_digest``, and the same digest of every file but those of ``indexed`` (repo paths: the files of
    the code index, whose reads a page's trace notes, see ``base.reads``), in one pass over the files."""
    h, others = hashlib.sha256(), hashlib.sha256()
    root, docs = settings.project_root, settings.docs_dir
    for file in walk_files(root, root, DEFAULT_EXCLUDE):
        if file.suffix == ".md" and docs in file.parents:
            continue  # a page: its own text is in its key, and what others show of it in the site's digest
        try:
            stat = file.stat()
            body = (
                file.read_bytes() if stat.st_size <= WHOLE_FILE_BYTES else f"{stat.st_size} {stat.st_mtime_ns}".encode()
            )
        except OSError:
            continue
        named = str(file.relative_to(root)).encode() + b"\0" + body + b"\0"
        h.update(named)
        if file.relative_to(root).as_posix() not in indexed:
            others.update(named)
    return h.hexdigest(), others.hexdigest()


def code_digest(settings: Settings) -> str:
    """A digest of every file of the code, the tests, the helpers and the spec, as the index walks them."""
    h = hashlib.sha256()
    code = [settings.source_root, settings.tests_root]  # walked as the index walks them: excludes left out
    helpers = [p.parent for p in (settings.model_run, settings.spec_source) if p is not None]
    files: dict[Path, None] = {}
    for folder in dict.fromkeys([*code, *helpers]):
        if folder.is_dir():
            patterns = settings.exclude if folder in code else DEFAULT_EXCLUDE
            files.update(dict.fromkeys(walk_files(folder, settings.project_root, patterns)))
    for file in sorted(files):
        h.update(str(file).encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()

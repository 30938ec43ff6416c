"""Settings: where the code, tests, pages and lock are, and where the code is published.

Read from ``[tool.docs_hooks]`` in ``pyproject.toml``. Nothing else in the
generator names a file of the project it documents.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
import tomllib
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from docs_hooks.base.errors import TraceError

KNOWN_KEYS = {
    "source_root": "folder of the code the site explains; a module in no package is named by its path inside it; "
    "default: src, else .",
    "tests_root": "folder of the tests, named as pytest imports them; default: tests, else .",
    "exclude": "glob patterns of folders and files the code index leaves out, added to the defaults",
    "docs_dir": "folder of the site's Markdown pages",
    "lock_path": "the review lock, committed",
    "repo_url": "repository web address, for permanent links",
    "ref": "commit or branch for links; default: the current commit, else 'main'",
    "cache_dir": "folder for recorded evidence, reused between builds",
    "spec_source": "Typst source of the specification the pages cite",
    "spec_pdf": "where the compiled specification goes inside docs_dir",
    "model_config": "dotted name of the model's config: a dataclass, a module-level dict, or a function that "
    "returns it as a dict (read from YAML or JSON)",
    "config_module": "module that holds the training hyperparameters (dataclasses or module constants)",
    "model_run": "helper module (path) with config(), probe(cfg) and run(cfg): one real forward and backward",
    "init_params": "dotted name of the function that creates the parameters: init_params(cfg, rng)",
    "decay_rule": "dotted name of the optimizer's rule: decays(name, array) -> bool",
    "numerical_grad": "dotted name of the central-difference function: numerical_grad(f, x)",
    "coverage_tests": "pytest arguments of the tests whose line coverage shows which test runs which line; "
    "default: the tests root, when it holds tests; [] for none",
    "symbols": "table: config field (or product 'a*b', quotient 'a/b') -> symbol shown in shapes",
    "source_pages": "which files of the code get a source page: 'cited' (those the pages cite; a link to any other "
    "goes to repo_url) or 'all'; default: cited with repo_url, else all",
    "test_timeout": "seconds each recorded test, the model run, the coverage run and the spec compile may take",
}

DEFAULT_TEST_TIMEOUT = 120.0
SOURCE_PAGES = ("cited", "all")  # the values of the source_pages setting


@dataclass
class Settings:
    project_root: Path
    source_root: Path
    tests_root: Path
    docs_dir: Path
    lock_path: Path
    repo_url: str = ""
    ref: str = ""
    cache_dir: Path | None = None
    spec_source: Path | None = None
    spec_pdf: str | None = None
    model_config: str | None = None
    config_module: str | None = None
    model_run: Path | None = None
    init_params: str | None = None
    decay_rule: str | None = None
    numerical_grad: str | None = None
    symbols: dict = field(default_factory=dict)
    coverage_tests: list = field(default_factory=list)
    test_timeout: float = DEFAULT_TEST_TIMEOUT
    source_pages: str = "all"  # or "cited" (see SOURCE_PAGES); load_settings: "cited" with a repo_url
    extra: dict = field(default_factory=dict)
    exclude: list = field(default_factory=list)  # glob patterns, the defaults included (see exclude_patterns)
    # What ``rel`` worked out so far (resolving a path asks the file system): not a setting, left out of repr
    _rel: dict = field(default_factory=dict, repr=False, compare=False)
    _root: Path | None = field(default=None, repr=False, compare=False)

    def rel(self, path: Path) -> str:
        """A path as shown in messages: relative to the project root."""
        key = str(path)
        known = self._rel.get(key) if Path(path).is_absolute() else None
        if known is None:
            if self._root is None:
                self._root = self.project_root.resolve()
            try:
                known = Path(path).resolve().relative_to(self._root).as_posix()
            except ValueError:
                known = key
            self._rel[key] = known
        return known

    def is_excluded(self, path: Path) -> bool:
        """Whether the code index leaves ``path`` (a file or folder of the project) out: see ``excluded``."""
        return excluded(path, self.project_root, self.exclude)

    def pages(self) -> list[Path]:
        """Every Markdown page of the site (hidden folders inside the docs folder left out)."""
        docs = self.docs_dir
        return sorted(
            p for p in docs.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(docs).parts)
        )

    def github_url(self, repo_path: str, start: int | None = None, end: int | None = None) -> str:
        if not self.repo_url:
            return ""
        url = f"{self.repo_url.rstrip('/')}/blob/{self.ref}/{repo_path}"
        if start is not None:
            url += f"#L{start}" if end is None or end == start else f"#L{start}-L{end}"
        return url


# Folders no project's code lives in: left out of the code index whatever the settings say.
DEFAULT_EXCLUDE = (".*", "venv", "node_modules", "site", "build", "dist", "*.egg-info", "__pycache__")
# pytest's default names of test files, and its conftest.py: tests wherever they are, never the code documented.
TEST_FILES = ("test_*.py", "*_test.py", "conftest.py")


def is_test_file(path: Path) -> bool:
    return any(fnmatch.fnmatchcase(Path(path).name, pattern) for pattern in TEST_FILES)


def excluded(path: Path, project_root: Path, patterns) -> bool:
    """Whether ``path`` lies in what ``patterns`` leave out.

    A pattern without ``/`` matches any one folder or file name on the way
    (``node_modules``, ``*.egg-info``); one with ``/`` matches the path from the
    project root, or a folder it starts with (``docs/examples``). A folder that
    holds ``pyvenv.cfg`` is a virtual environment, whatever its name.
    """
    try:
        rel = Path(path).relative_to(project_root)
    except ValueError:
        try:
            rel = Path(path).resolve().relative_to(Path(project_root).resolve())
        except ValueError:
            return False
    parts = rel.parts
    for i, part in enumerate(parts):
        prefix = "/".join(parts[: i + 1])
        for pattern in patterns:
            pattern = pattern.strip("/")
            if fnmatch.fnmatchcase(prefix if "/" in pattern else part, pattern):
                return True
    return False


def is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def installed_version(package: str) -> str:
    """The version of an installed distribution, or "none"."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def walk_files(folder: Path, project_root: Path, patterns, suffix: str = "") -> list[Path]:
    """The files under ``folder`` (ending in ``suffix``), sorted, leaving out what ``patterns`` exclude and
    virtual environments; an excluded folder is not entered."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not excluded(here / d, project_root, patterns) and not is_virtualenv(here / d)
        )
        out.extend(here / f for f in filenames if f.endswith(suffix) and not excluded(here / f, project_root, patterns))
    return sorted(out)


def has_tests(folder: Path, project_root: Path, patterns) -> bool:
    """Whether ``folder`` holds a test file (by pytest's default names), leaving out what ``patterns`` exclude and
    virtual environments; the walk stops at the first one."""
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = [
            d for d in dirnames if not excluded(here / d, project_root, patterns) and not is_virtualenv(here / d)
        ]
        if any(f.endswith(".py") and f != "conftest.py" and is_test_file(here / f) for f in filenames):
            return True
    return False


IMPORT_MODES = ("prepend", "append", "importlib")


def pytest_import_mode(project_root: Path) -> str:
    """pytest's ``--import-mode`` as the project's pytest configuration sets it in ``addopts``; else pytest's
    default, ``prepend``.

    The configuration is looked for where pytest looks first, in the project's root: ``pytest.ini``,
    ``.pytest.ini``, ``pyproject.toml`` (``[tool.pytest.ini_options]`` or ``[tool.pytest]``), ``tox.ini``
    (``[pytest]``), ``setup.cfg`` (``[tool:pytest]``); the first that configures pytest is the one it reads.
    """
    import configparser
    import shlex

    root = Path(project_root)
    candidates = [
        (name, section, (root / name).read_text(encoding="utf-8"))
        for name, section in (
            ("pytest.ini", "pytest"),
            (".pytest.ini", "pytest"),
            ("pyproject.toml", None),
            ("tox.ini", "pytest"),
            ("setup.cfg", "tool:pytest"),
        )
        if (root / name).is_file()
    ]
    if not any("--import-mode" in text for _, _, text in candidates):
        return "prepend"  # whichever file pytest reads, none sets it (and nothing needs parsing)
    for name, section, text in candidates:
        if section is None:
            try:
                tool = tomllib.loads(text).get("tool", {})
            except tomllib.TOMLDecodeError as exc:
                raise TraceError(f"cannot read pyproject.toml: {exc}", "pyproject.toml") from None
            pytest_table = tool.get("pytest")
            if not isinstance(pytest_table, dict):
                continue
            options = pytest_table.get("ini_options", pytest_table)
            addopts = options.get("addopts", "") if isinstance(options, dict) else ""
        else:
            parser = configparser.ConfigParser(interpolation=None)
            try:
                parser.read_string(text, name)
            except configparser.Error as exc:
                raise TraceError(
                    f"cannot read it as pytest reads it ({str(exc).splitlines()[0]}); fix it", name
                ) from None
            if not parser.has_section(section):
                if name.endswith("pytest.ini"):
                    return "prepend"  # pytest takes a pytest.ini even when it is empty
                continue
            addopts = parser.get(section, "addopts", fallback="")
        return _import_mode_in(addopts if isinstance(addopts, list) else shlex.split(str(addopts)))
    return "prepend"


def _import_mode_in(args: list) -> str:
    mode = "prepend"
    for i, arg in enumerate(args):
        arg = str(arg)
        if arg.startswith("--import-mode="):
            mode = arg.split("=", 1)[1]
        elif arg == "--import-mode" and i + 1 < len(args):
            mode = str(args[i + 1])
    return mode if mode in IMPORT_MODES else "prepend"


class ModuleNames:
    """The dotted names Python imports a project's files by, as the code index, the coverage map and the
    recorder all name them.

    A file in a package (its folder holds ``__init__.py``) is named from the folder above its top package:
    ``pkg/deep_learning/layers.py`` is ``pkg.deep_learning.layers`` wherever the source root is, and
    ``src/mypkg/ops.py`` is ``mypkg.ops``. A file in no package is named from the folder it is imported
    from: for the code, the source root (``src/ops.py`` is ``ops``); for a test file, what pytest's import
    mode does with it: its own folder with ``prepend`` and ``append`` (``tests/test_ops.py`` without
    ``tests/__init__.py`` is ``test_ops``), the project root with ``importlib`` (``tests.test_ops``).
    A ``conftest.py`` in no package is named from the project root: pytest loads each one apart, and
    several folders may have one.
    """

    def __init__(self, project_root: Path, import_mode: str | None = None):
        self.project_root = Path(project_root)
        self._mode = import_mode
        self._bases: dict[Path, Path | None] = {}

    @property
    def import_mode(self) -> str:
        """pytest's import mode, read from the project's configuration when a name first depends on it."""
        if self._mode is None:
            self._mode = pytest_import_mode(self.project_root)
        return self._mode

    def package_base(self, folder: Path) -> Path | None:
        """The folder above the top package that ``folder`` is part of; None when ``folder`` is no package.
        The walk up stops at the project root: the project's own folder is never taken for a package."""
        folder = Path(folder)
        if folder in self._bases:
            return self._bases[folder]
        base = None
        if folder != self.project_root and folder.parent != folder and (folder / "__init__.py").is_file():
            above = self.package_base(folder.parent)
            base = above if above is not None else folder.parent
        self._bases[folder] = base
        return base

    def of_code(self, file: Path, names_from: Path) -> str:
        """A module of the code (or a helper of the tests): by its package, else from ``names_from``."""
        base = self.package_base(Path(file).parent)
        return dotted_name(file, names_from if base is None else base)

    def of_test(self, file: Path) -> str:
        """A test file (or ``conftest.py``) as pytest imports it."""
        file = Path(file)
        base = self.package_base(file.parent)
        if base is None:
            base = file.parent if self.import_mode != "importlib" and file.name != "conftest.py" else self.project_root
        return dotted_name(file, base)

    def of_helper(self, file: Path, tests_root: Path) -> str:
        """A file of the tests root that is not a test file (``tests/helpers.py``): importable by the tests
        from the tests root (pytest puts the tests' folders on ``sys.path``), or with ``importlib`` from the
        project root."""
        return self.of_code(file, tests_root if self.import_mode != "importlib" else self.project_root)

    def test_bases(self, files) -> list[Path]:
        """The folders pytest puts on ``sys.path`` to import these test files: their own folders, for the
        ones in no package (``prepend``, ``append``)."""
        if self.import_mode == "importlib":
            return []
        found = {Path(f).parent: None for f in files if self.package_base(Path(f).parent) is None}
        return list(found)


def dotted_name(file: Path, base: Path) -> str:
    """``base/a/b.py`` as ``a.b`` (``base/a/__init__.py`` as ``a``)."""
    parts = list(Path(file).relative_to(base).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def current_ref(root: Path, fallback: str = "main") -> str:
    """The commit the site is built from, or ``fallback`` outside a git work tree.

    Read from the repository's own files (``HEAD``, the branch it names, ``packed-refs``; a worktree's
    ``.git`` file and ``commondir``), which every rebuild of ``mkdocs serve`` does; ``git rev-parse HEAD``
    when they say something this does not read (another ref storage, an unborn branch, ``GIT_DIR`` set)."""
    if "GIT_DIR" not in os.environ:
        found = _head_from_files(Path(root).resolve())
        if found is not None:
            return found or fallback  # "": no repository above the root
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip() or fallback
    except (OSError, subprocess.SubprocessError):
        return fallback


def _head_from_files(root: Path) -> str | None:
    """The commit HEAD names, read from the files of the repository that holds ``root``; "" when no folder
    from ``root`` up has a ``.git``; None when the files do not tell (then git does)."""
    for folder in (root, *root.parents):
        dot = folder / ".git"
        try:
            if dot.is_dir():
                return _commit_of_head(dot)
            if dot.is_file():  # a worktree or a submodule: "gitdir: <its git folder>"
                text = dot.read_text(encoding="utf-8").strip()
                return _commit_of_head(folder / text[len("gitdir:") :].strip()) if text.startswith("gitdir:") else None
        except (OSError, UnicodeDecodeError):
            return None
    return ""


def _commit_of_head(git_dir: Path) -> str | None:
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if _is_commit(head):  # a detached HEAD
        return head
    if not head.startswith("ref: refs/"):
        return None
    ref = head[len("ref: ") :]
    common = git_dir
    if (git_dir / "commondir").is_file():  # a worktree's: its branches are the main repository's
        common = git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()
    for base in dict.fromkeys([git_dir, common]):
        if (base / ref).is_file():
            commit = (base / ref).read_text(encoding="utf-8").strip()
            return commit if _is_commit(commit) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit if _is_commit(commit) else None
    return None


def _is_commit(text: str) -> bool:
    """Whether ``text`` is a commit's full hexadecimal name (SHA-1 or SHA-256)."""
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def load_settings(project_root: Path, overrides: dict | None = None) -> Settings:
    """Settings from ``pyproject.toml`` in ``project_root``, then ``overrides`` on top."""
    project_root = Path(project_root).resolve()
    pyproject = project_root / "pyproject.toml"
    raw: dict = {}
    if pyproject.exists():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise TraceError(f"cannot read pyproject.toml: {exc}", "pyproject.toml") from None
        raw = dict(data.get("tool", {}).get("docs_hooks", {}))
    raw.update(overrides or {})
    unknown = sorted(set(raw) - set(KNOWN_KEYS))
    if unknown:
        raise TraceError(
            f"unknown setting {', '.join(repr(k) for k in unknown)} in [tool.docs_hooks]; "
            f"known settings: {', '.join(sorted(KNOWN_KEYS))}",
            "pyproject.toml",
        )

    _validate(raw)

    def path(key: str, default: str | None) -> Path | None:
        value = raw.get(key, default)
        return None if value is None else (project_root / value)

    def required(key: str, default: str) -> Path:
        return project_root / raw.get(key, default)

    def folder(key: str, usual: str) -> Path:
        """A code root: the setting, else the usual folder when the project has one, else the project root."""
        if key in raw:
            return project_root / raw[key]
        return project_root / usual if (project_root / usual).is_dir() else project_root

    docs_dir = required("docs_dir", "docs")
    docs_rel = Path(os.path.relpath(docs_dir, project_root)).as_posix()
    exclude = [*DEFAULT_EXCLUDE, *([docs_rel] if docs_rel not in (".", "") else []), *raw.get("exclude", [])]
    tests_root = folder("tests_root", "tests")

    def default_coverage(root: Path) -> list[str]:
        """All the tests: the tests root, when it holds a test file; none without one."""
        if not has_tests(root, project_root, exclude):
            return []
        rel = Path(os.path.relpath(root, project_root)).as_posix()
        return [rel if rel != "" else "."]

    return Settings(
        project_root=project_root,
        source_root=folder("source_root", "src"),
        tests_root=tests_root,
        docs_dir=docs_dir,
        lock_path=required("lock_path", "docs/trace.lock"),
        repo_url=raw.get("repo_url", ""),
        ref=raw.get("ref") or current_ref(project_root),
        cache_dir=path("cache_dir", ".cache/docs_hooks"),
        spec_source=path("spec_source", None),
        spec_pdf=raw.get("spec_pdf"),
        model_config=raw.get("model_config"),
        config_module=raw.get("config_module"),
        model_run=path("model_run", None),
        init_params=raw.get("init_params"),
        decay_rule=raw.get("decay_rule"),
        numerical_grad=raw.get("numerical_grad"),
        symbols=dict(raw.get("symbols", {})),
        coverage_tests=list(raw["coverage_tests"]) if "coverage_tests" in raw else default_coverage(tests_root),
        test_timeout=_timeout(raw.get("test_timeout", DEFAULT_TEST_TIMEOUT)),
        source_pages=raw.get("source_pages", "cited" if raw.get("repo_url") else "all"),
        exclude=exclude,
    )


_PATHS = ("source_root", "tests_root", "docs_dir", "lock_path", "cache_dir", "spec_source", "spec_pdf", "model_run")
_NAMES = ("repo_url", "ref", "model_config", "config_module", "init_params", "decay_rule", "numerical_grad")


def _validate(raw: dict) -> None:
    """Each setting of the right type, else one error naming it and saying what it must be."""

    def fail(key: str, what: str) -> TraceError:
        value = raw[key]
        shown = (
            repr(value) if isinstance(value, str) else (str(value).lower() if isinstance(value, bool) else str(value))
        )
        return TraceError(f"[tool.docs_hooks] {key}: must be {what}, not {shown}", "pyproject.toml")

    for key in _PATHS:
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise fail(key, "a path (a string, relative to the project root)")
    for key in _NAMES:
        if key in raw and not isinstance(raw[key], str):
            raise fail(key, "a string")
    for key, what in (("exclude", "a list of glob patterns"), ("coverage_tests", "a list of pytest arguments")):
        if key in raw and (not isinstance(raw[key], list) or not all(isinstance(v, str) for v in raw[key])):
            raise fail(key, what)
    if "source_pages" in raw and raw["source_pages"] not in SOURCE_PAGES:
        raise fail("source_pages", " or ".join(repr(v) for v in SOURCE_PAGES))
    if "symbols" in raw:
        symbols = raw["symbols"]
        if not isinstance(symbols, dict) or not all(isinstance(v, str) for v in symbols.values()):
            raise fail("symbols", 'a table of config field = "symbol" ([tool.docs_hooks.symbols])')


def _timeout(value) -> float:
    """The ``test_timeout`` setting: a positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise TraceError(
            f"test_timeout in [tool.docs_hooks] must be a positive number of seconds, not {value!r}; "
            f"write, say, test_timeout = {DEFAULT_TEST_TIMEOUT:g}",
            "pyproject.toml",
        )
    return float(value)

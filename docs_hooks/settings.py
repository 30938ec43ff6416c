"""Settings: where the code, tests, pages and lock are, and where the code is published.

Read from ``[tool.docs_hooks]`` in ``pyproject.toml``. Nothing else in the
generator names a file of the project it documents.
"""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import TraceError

KNOWN_KEYS = {
    "source_root": "folder of the code the site explains; module names are paths inside it",
    "tests_root": "folder of the tests; their names are paths from the project root",
    "docs_dir": "folder of the site's Markdown pages",
    "lock_path": "the review lock, committed",
    "repo_url": "repository web address, for permanent links",
    "ref": "commit or branch for links; default: the current commit, else 'main'",
    "cache_dir": "folder for recorded evidence, reused between builds",
    "spec_source": "Typst source of the specification the pages cite",
    "spec_pdf": "where the compiled specification goes inside docs_dir",
    "model_config": "dotted name of the model's config dataclass",
    "config_module": "module that holds the training hyperparameters",
    "model_run": "helper module (path) with config(), probe(cfg) and run(cfg): one real forward and backward",
    "init_params": "dotted name of the function that creates the parameters: init_params(cfg, rng)",
    "decay_rule": "dotted name of the optimizer's rule: decays(name, array) -> bool",
    "numerical_grad": "dotted name of the central-difference function: numerical_grad(f, x)",
    "coverage_tests": "pytest arguments of the tests whose line coverage shows which test runs which line",
    "symbols": "table: config field (or product 'a*b', quotient 'a/b') -> symbol shown in shapes",
    "test_timeout": "seconds each recorded test, the model run, the coverage run and the spec compile may take",
}

DEFAULT_TEST_TIMEOUT = 120.0


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
    extra: dict = field(default_factory=dict)

    def rel(self, path: Path) -> str:
        """A path as shown in messages: relative to the project root."""
        try:
            return Path(path).resolve().relative_to(self.project_root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def pages(self) -> list[Path]:
        """Every Markdown page of the site (hidden folders inside the docs folder left out)."""
        docs = self.docs_dir
        return sorted(p for p in docs.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(docs).parts))

    def github_url(self, repo_path: str, start: int | None = None, end: int | None = None) -> str:
        if not self.repo_url:
            return ""
        url = f"{self.repo_url.rstrip('/')}/blob/{self.ref}/{repo_path}"
        if start is not None:
            url += f"#L{start}" if end is None or end == start else f"#L{start}-L{end}"
        return url


def current_ref(root: Path, fallback: str = "main") -> str:
    """The commit the site is built from, or ``fallback`` outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip() or fallback
    except (OSError, subprocess.SubprocessError):
        return fallback


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

    def path(key: str, default: str | None) -> Path | None:
        value = raw.get(key, default)
        return None if value is None else (project_root / value)

    return Settings(
        project_root=project_root,
        source_root=path("source_root", "src"),
        tests_root=path("tests_root", "tests"),
        docs_dir=path("docs_dir", "docs"),
        lock_path=path("lock_path", "docs/trace.lock"),
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
        coverage_tests=list(raw.get("coverage_tests", [])),
        test_timeout=_timeout(raw.get("test_timeout", DEFAULT_TEST_TIMEOUT)),
    )


def _timeout(value) -> float:
    """The ``test_timeout`` setting: a positive number of seconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise TraceError(
            f"test_timeout in [tool.docs_hooks] must be a positive number of seconds, not {value!r}; "
            f"write, say, test_timeout = {DEFAULT_TEST_TIMEOUT:g}",
            "pyproject.toml",
        )
    return float(value)

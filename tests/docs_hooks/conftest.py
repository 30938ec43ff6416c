"""Shared fixtures for the docs_hooks tests: tiny throwaway projects written into ``tmp_path``.

``make_project(files)`` writes a small code base (a layer norm, a model that calls
it, tests that call it) plus whatever pages a test adds, and returns the project
root. Every file is a plain string here, so a test reads as: this tree, this
page, this exact message.

The page snippets and helpers the tests of several modules share (``FWD_ENTRY``,
``MEAN_PAGE``, ``page_problems``, ``connection_rows`` ...) live here too.
"""

from __future__ import annotations

import html
import re
import sqlite3
import textwrap
from pathlib import Path

import pytest
from hypothesis import strategies as st

from docs_hooks import cli
from docs_hooks.base.cachedir import seal, unseal
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, make_build
from docs_hooks.run.record import Recorder

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[project]
name = "tiny"
version = "0.0.0"

[tool.docs_hooks]
repo_url = "https://example.com/repo"
ref = "abc123"
# The tests of these projects are read and recorded, not measured: a test that measures sets coverage_tests.
coverage_tests = []
"""

# Line numbers matter to the tests (layer_norm_forward is lines 6-15, mu is line 8,
# var lines 9-12, the for header line 23, dX lines 25-26): edit with care.
OPS = '''\
"""Tiny layer norm, forward and backward."""

import numpy as np


def layer_norm_forward(X, gamma, beta, epsilon=1e-5):
    """Normalise each row of X, then scale and shift."""
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(
        axis=-1,
        keepdims=True,
    )
    s = 1.0 / np.sqrt(var + epsilon)  # inverse standard deviation
    Xhat = (X - mu) * s
    return gamma * Xhat + beta, (Xhat, s)


def layer_norm_backward(dY, cache, gamma):
    Xhat, s = cache
    dXhat = dY * gamma
    dgamma = (dY * Xhat).sum(axis=0)
    dbeta = dY.sum(axis=0)
    for row in range(dY.shape[0]):
        dXhat[row] = dXhat[row] - dXhat[row].mean()
    dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
              - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))
    return dX, dgamma, dbeta
'''

MODEL = '''\
"""A model that uses the ops, in both import styles."""

import ops
from ops import layer_norm_forward


class Config:
    def __init__(self, d=4, eps=1e-5):
        self.d = d
        self.eps = eps


class Block:
    def __init__(self, cfg):
        self.cfg = cfg

    def norm(self, X, gamma, beta):
        return layer_norm_forward(X, gamma, beta, self.cfg.eps)  # pre-norm

    def forward(self, X, gamma, beta):
        Y, _ = self.norm(X, gamma, beta)
        return Y


def build(d):
    cfg = Config(
        d=d,
        eps=1e-5,
    )
    return Block(cfg)


def backward_all(dY, cache, gamma):
    grads = ops.layer_norm_backward(
        dY, cache, gamma,
    )  # through the module name
    return grads
'''

TESTS_OPS = """\
import numpy as np

from ops import layer_norm_backward, layer_norm_forward


def test_rows_have_zero_mean():
    X = np.arange(8.0).reshape(2, 4)
    Y, _ = layer_norm_forward(X, np.ones(4), np.zeros(4))  # the worked example
    assert np.allclose(Y.mean(axis=-1), 0.0)


def test_backward_returns_three_gradients():
    _, cache = layer_norm_forward(np.eye(4), np.ones(4), np.zeros(4))
    grads = layer_norm_backward(np.ones((4, 4)), cache, np.ones(4))
    assert len(grads) == 3
"""

TESTS_MODEL = """\
import numpy as np

import model


def test_backward_through_model():
    cache = (np.eye(4), np.ones((4, 1)))  # of the form layer_norm_forward returns: (Xhat, s)
    grads = model.backward_all(np.ones((4, 4)), cache, np.ones(4))
    assert grads is not None
"""

BASE_FILES = {
    "pyproject.toml": PYPROJECT,
    "src/ops.py": OPS,
    "src/model.py": MODEL,
    "tests/__init__.py": "",
    "tests/test_ops.py": TESTS_OPS,
    "tests/test_model.py": TESTS_MODEL,
}


def page(text: str) -> str:
    """A page body written indented in a test, dedented, with a final newline."""
    return textwrap.dedent(text).lstrip("\n")


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def make_project(tmp_path):
    """Write the base tree plus ``files`` (relative path -> text) and return its root."""

    def make(files: dict[str, str] | None = None, root: Path | None = None) -> Path:
        root = root or tmp_path / "proj"
        write_tree(root, {**BASE_FILES, **(files or {})})
        # Equations are rendered by KaTeX at build time, from the project's node_modules:
        # borrow this repository's (installed by `make setup`).
        katex = REPO / "node_modules"
        if katex.is_dir() and not (root / "node_modules").exists():
            (root / "node_modules").symlink_to(katex, target_is_directory=True)
        return root

    return make


def run_cli(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), *args])


@pytest.fixture
def check(capsys):
    """Run ``check`` and return (exit code, stderr lines, stdout)."""

    def run(root: Path) -> tuple[int, list[str], str]:
        capsys.readouterr()
        code = run_cli(root, "check")
        out, err = capsys.readouterr()
        return code, err.splitlines(), out

    return run


@pytest.fixture
def relock(capsys):
    """Run ``relock``; assert it succeeded unless told otherwise; return (code, stdout, stderr)."""

    def run(root: Path, expect: int = 0) -> tuple[int, str, str]:
        capsys.readouterr()
        code = run_cli(root, "relock")
        out, err = capsys.readouterr()
        assert code == expect, f"relock exited {code}, expected {expect}\nstdout:\n{out}\nstderr:\n{err}"
        return code, out, err

    return run


def expand_page(root: Path, rel: str = "docs/page.md", rendered: bool = True):
    """The Expanded result of one page of the project at ``root``; with ``rendered=False`` the pages an earlier
    build rendered are forgotten first (see core.kept), so that the run's own caches are what is read."""
    settings = load_settings(root)
    if not rendered:
        (root / ".cache/docs_hooks/rendered.sqlite3").unlink(missing_ok=True)
    return expand_site(settings, make_build(settings)).pages[rel]


def build_site(root: Path):
    """Every page of the project at ``root`` expanded by one build without the coverage run (then closed)."""
    settings = load_settings(root)
    build = make_build(settings, coverage=False)
    try:
        return expand_site(settings, build)
    finally:
        build.close()


def make_recorder(tmp_path: Path, name: str, text: str, digest: str | None = None, cache: Path | None = None):
    """A recorder for a project with one module, ``src/<name>.py`` holding ``text`` (written on the first call)."""
    module = tmp_path / "src" / f"{name}.py"
    if not module.exists():
        module.parent.mkdir(exist_ok=True)
        module.write_text(text, encoding="utf-8")
    digests = {f"src/{name}.py": digest} if digest is not None else {}
    return Recorder(tmp_path, [tmp_path / "src"], {str(module): name}, digests, cache)


# Pages and helpers shared by the tests of several modules.

FWD_ENTRY = """\
```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: implemented
```
"""


BWD_ENTRY = """\
```trace-entry
title: Layer norm backward
function: ops.layer_norm_backward
status: implemented
```
"""


def page_problems(root) -> list[str]:
    """The problems of docs/page.md itself (not the lock comparison)."""
    return [str(p) for p in expand_page(root).problems]


def connection_rows(markdown: str, section: str = "Code and math connection") -> list[str]:
    """The rows of a generated table, as 'cell | cell | ...' with tags removed (a line break as a newline)."""
    start = markdown.index(f"### {section}")
    table = markdown[start : markdown.index("</table>", start)]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        cells = re.findall(r"<td>(.*?)</td>", row)
        rows.append(" | ".join(html.unescape(re.sub(r"<[^>]+>", "", c.replace("<br>", "\n"))) for c in cells))
    return rows


LOCK = "docs/trace.lock"


def stored_rows(store: Path) -> dict[str, bytes | None]:
    """Every row of a cache store (a cachedir.Store file): key -> the bytes a build stored, None for a damaged row."""
    with sqlite3.connect(store) as db:
        rows = dict(db.execute("SELECT key, value FROM entries"))
    db.close()
    return {key: unseal(key, value) for key, value in rows.items()}


# Any JSON value, for the readers of cache entries: what a damaged or foreign entry may hold once parsed.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def mutated(data, value):
    """``value`` (a JSON tree, an entry as the build wrote it) with one node, drawn by Hypothesis, replaced by
    any JSON value: an entry of nearly the right form, which is what a reader's checks must catch."""
    if type(value) in (list, dict) and value and data.draw(st.integers(0, 4), label="descend") > 0:
        place = data.draw(st.sampled_from(range(len(value)) if type(value) is list else sorted(value)), label="at")
        copy = list(value) if type(value) is list else dict(value)
        copy[place] = mutated(data, value[place])
        return copy
    return data.draw(JSON, label="with")


def store_rows(store: Path, values: dict[str, bytes | str]) -> None:
    """Overwrite rows of a cache store: bytes sealed as a build seals them (so what is tested is the reader's own
    check of the entry), anything else as it is."""
    with sqlite3.connect(store) as db:
        for key, value in values.items():
            db.execute(
                "UPDATE entries SET value = ? WHERE key = ?", (seal(key, value) if type(value) is bytes else value, key)
            )
    db.close()


MEAN_PAGE = FWD_ENTRY + "\nThe mean is [[ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)]].\n"


__all__ = [
    "REPO",
    "OPS",
    "MODEL",
    "BASE_FILES",
    "page",
    "write_tree",
    "run_cli",
    "expand_page",
    "build_site",
    "make_recorder",
    "FWD_ENTRY",
    "BWD_ENTRY",
    "LOCK",
    "MEAN_PAGE",
    "stored_rows",
    "store_rows",
    "JSON",
    "mutated",
    "page_problems",
    "connection_rows",
]

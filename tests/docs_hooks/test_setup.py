"""setup.py: the docs-hooks wheel carries KaTeX. Built from a fresh clone as the guide installs it (``pip install .``
in the clone), it fetches KaTeX with ``npm ci`` first; without npm it says what to install.

A fresh clone is ``git clone`` of this repository into a temporary folder: its last commit, with no
node_modules/. Installing takes what the package index and the npm registry give (a few seconds each here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import REPO


def fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, capture_output=True, timeout=120)
    assert not (clone / "node_modules").exists()
    return clone


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, "PIP_NO_INPUT": "1", **env}
    )


def test_pip_install_in_a_fresh_clone_fetches_katex_with_npm_and_the_generator_it_installs_renders_math(tmp_path):
    clone = fresh_clone(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"

    installed = run([str(python), "-m", "pip", "install", "-v", "."], clone)

    log = installed.stdout + installed.stderr
    assert installed.returncode == 0, log[-3000:]
    assert "is absent from the `packages` configuration" not in log  # every folder of the package is packaged
    assert (clone / "node_modules" / "katex" / "dist" / "katex.min.js").is_file()  # npm ci ran
    pinned = json.loads((clone / "package-lock.json").read_text())["packages"]["node_modules/katex"]["version"]
    probe = (
        "import sys, tempfile\n"
        "from pathlib import Path\n"
        "from docs_hooks.run.math import MathRenderer, katex_dist, katex_version\n"
        "dist = katex_dist(Path(tempfile.mkdtemp()))\n"
        "renderer = MathRenderer(Path(tempfile.mkdtemp()))\n"
        "[(html, error)] = renderer.render_many([('x^2', False)])\n"
        "renderer.close()\n"
        "print(dist.relative_to(sys.prefix), katex_version(dist), html[:20], error, sep='\\t')\n"
    )
    used = run([str(python), "-c", probe], tmp_path)
    assert used.returncode == 0, used.stderr
    assert used.stdout.rstrip("\n").split("\t") == [
        f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages/docs_hooks/_katex",
        pinned,
        '<span class="katex">',
        "None",
    ]  # the wheel's own KaTeX, the version package-lock.json pins, rendering


def test_building_the_wheel_from_a_fresh_clone_without_npm_says_what_to_install(tmp_path):
    clone = fresh_clone(tmp_path)
    no_tools = tmp_path / "bin"  # a PATH with neither npm nor node on it
    no_tools.mkdir()

    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "wheel"), "."],
        clone,
        PATH=str(no_tools),
    )

    assert built.returncode != 0
    lines = [line.strip() for line in (built.stdout + built.stderr).splitlines()]
    assert (
        "building the docs-hooks wheel needs npm, to fetch the KaTeX it carries (pinned in package-lock.json), "
        "and npm is not on the PATH: install Node.js with npm (version 18 or later), then build again"
    ) in lines
    assert not (tmp_path / "wheel").exists() or not list((tmp_path / "wheel").iterdir())

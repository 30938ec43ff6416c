"""Build step of the docs-hooks wheel: it carries KaTeX, so a user needs no npm step of their own.

KaTeX comes from the npm registry, pinned in package-lock.json. Building the wheel
copies its script, stylesheet, fonts and licence into the package as
``docs_hooks/_katex/``; the build renders math with it (see docs_hooks/run/math.py).
When node_modules/ does not hold KaTeX yet (a fresh clone), the build runs
``npm ci`` first, so building the wheel needs npm (Node.js); the wheel it makes
needs only ``node``. Everything else is declared in pyproject.toml.
"""

import json
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
KATEX = ROOT / "node_modules" / "katex"
NPM_LINES = 20  # how much of npm's output a failed install shows


def fetch_katex() -> None:
    """Install the npm packages package-lock.json pins (KaTeX) into node_modules/, with ``npm ci``."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "building the docs-hooks wheel needs npm, to fetch the KaTeX it carries (pinned in package-lock.json), "
            "and npm is not on the PATH: install Node.js with npm (version 18 or later), then build again"
        )
    if not (ROOT / "package-lock.json").is_file():
        raise SystemExit(
            f"KaTeX is not in node_modules/ and there is no package-lock.json in {ROOT} to fetch it with: "
            "build the docs-hooks wheel from a clone of its repository"
        )
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=ROOT, capture_output=True, text=True, encoding="utf-8"
    )
    if done.returncode != 0 or not (KATEX / "dist" / "katex.min.js").is_file():
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-NPM_LINES:])
        raise SystemExit(
            f"'npm ci' in {ROOT} did not install KaTeX (exit code {done.returncode}), which the docs-hooks wheel "
            f"carries; run it there to see why (it needs the npm registry, or npm's cache). npm said:\n{said}"
        )


class BuildWithKatex(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads KaTeX from node_modules/ where it is
            return
        if not (KATEX / "dist" / "katex.min.js").is_file():
            fetch_katex()
        dest = Path(self.build_lib) / "docs_hooks" / "_katex"
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "fonts").mkdir(parents=True)
        for name in ("katex.min.js", "katex.min.css"):
            shutil.copy2(KATEX / "dist" / name, dest / name)
        for font in (KATEX / "dist" / "fonts").iterdir():
            shutil.copy2(font, dest / "fonts" / font.name)
        shutil.copy2(KATEX / "LICENSE", dest / "LICENSE")
        version = json.loads((KATEX / "package.json").read_text(encoding="utf-8"))["version"]
        (dest / "VERSION").write_text(version + "\n", encoding="utf-8")


setup(cmdclass={"build_py": BuildWithKatex})

"""Build step of the docs-hooks wheel: it carries KaTeX, so a user needs no npm step of their own.

KaTeX comes from the npm registry, pinned in package-lock.json (``npm ci`` installs
it into node_modules/). Building the wheel copies its script, stylesheet, fonts and
licence into the package as ``docs_hooks/_katex/``; the build renders math with it
(see docs_hooks/math.py). Everything else is declared in pyproject.toml.
"""

import json
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KATEX = Path(__file__).resolve().parent / "node_modules" / "katex"


class BuildWithKatex(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads KaTeX from node_modules/ where it is
            return
        if not (KATEX / "dist" / "katex.min.js").is_file():
            raise SystemExit(
                "KaTeX is not in node_modules/: run 'npm ci' in this folder before building the "
                "docs-hooks wheel (it carries KaTeX, pinned in package-lock.json)"
            )
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

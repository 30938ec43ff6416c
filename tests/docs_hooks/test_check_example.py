"""examples/check_example.sh: the generator's wheel, installed in a fresh virtual environment, documents the
second example project (examples/layers); moved code passes check and changed code fails it.

It builds a wheel, makes a virtual environment and builds a site: the slowest test of the suite (a minute or
more; the first run on a machine also fetches the wheels the install needs, and keeps them in .cache/).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .conftest import REPO


def test_the_example_project_builds_and_checks_with_the_installed_wheel():
    done = subprocess.run(
        ["bash", str(REPO / "examples" / "check_example.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    steps = [
        re.sub(r"docs_hooks-[^ ]+\.whl", "docs_hooks-VERSION.whl", line)
        for line in done.stdout.splitlines()
        if line.startswith("check_example: ")
    ]
    assert steps == [
        "check_example: building the wheel",
        "check_example: installing docs_hooks-VERSION.whl in a fresh virtual environment",
        "check_example: mkdocs build --strict",
        "check_example: python -m docs_hooks check",
        "check_example: moving code: lines inserted above LayerNorm.forward; check must pass",
        "check_example: changing a referenced statement; check must fail with 'changed since reviewed'",
        "check_example: passed",
    ]
    assert (
        "docs/layer-norm.md:21: equation ln-mean | mu = X.mean(axis=-1, keepdims=True): changed since reviewed."
        in done.stdout
    )

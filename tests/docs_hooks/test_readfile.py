"""docs_hooks.resolve.readfile: what one file adds to the index: each function's statements (a compound
statement by its header, the docstring none), its parameters and locals, and the calls in it as written; a
file that does not parse is an error naming its line, and Python's warnings about someone's code stay quiet."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

from docs_hooks.resolve.codeindex import Root
from docs_hooks.resolve.readfile import header_end, index_file

from .conftest import OPS, run_cli
from .test_cli import MKDOCS_YML, SITE_PAGE

CODE = '''\
def step(params, grads, lr=0.1, *rest, **options):
    """Update in place."""
    for name in params:
        if (
            name in grads
        ):
            params[name] -= lr * grads[name]
    total = helper(params); other = norm(
        grads
    )
    return total
'''


def test_a_function_s_statements_keep_compound_headers_apart_and_leave_the_docstring_out(tmp_path):
    file = tmp_path / "opt.py"
    file.write_text(CODE, encoding="utf-8")
    part = index_file(CODE, "d", file, Root(tmp_path, tmp_path, False), tmp_path, "opt")

    (fn,) = part.functions
    assert (fn.name, fn.start, fn.end, fn.params) == ("opt.step", 1, 11, ("params", "grads", "lr"))
    assert fn.local_names == {"params", "grads", "lr", "rest", "options", "name", "total", "other"}
    assert [(s.start, s.end, s.kind) for s in fn.statements] == [
        (3, 3, "loops"),
        (4, 6, "branches"),  # a header over three lines is one statement
        (7, 7, "assigns"),
        (8, 8, "assigns"),  # two statements on one line stay apart
        (8, 10, "assigns"),
        (11, 11, "returns"),
    ]
    assert [s.tokens for s in fn.statements if s.start == 8] == ["total = helper ( params )", "other = norm ( grads )"]
    assert (fn.header.start, fn.header.end) == (1, 1)
    assert sorted((p[0], p[1], p[2]) for p in part.pending) == [
        ("opt.step", ("helper",), 8),  # the callee as written, resolved once every module is known
        ("opt.step", ("norm",), 8),
    ]


def test_a_compound_header_ends_at_its_colon_also_when_its_brackets_close_on_a_line_of_their_own():
    text = (
        "if (a and\n        b):\n    pass\n"  # 1-3
        "with open(x) as f, \\\n        open(y) as g:\n    pass\n"  # 4-6
        "def f(\n    a,\n):\n    pass\n"  # 7-10
        "while (\n    a\n)  :  # why\n    # a comment\n    pass\n"  # 11-15
        "if (x): y = (\n    1\n)\n"  # 16-18: the body on the header's line
    )
    lines = text.splitlines()
    assert [header_end(node, lines) for node in ast.parse(text).body] == [2, 5, 9, 13, 16]


def test_syntax_error_in_the_source_names_file_and_line(make_project, check):
    root = make_project({"src/broken.py": "def f(:\n    pass\n", "docs/page.md": "# Nothing\n"})

    code, err, _ = check(root)

    assert code == 2
    assert err == ["error: src/broken.py:1: cannot parse: invalid syntax; fix the syntax error"]


def test_a_cold_build_of_code_with_invalid_escape_sequences_prints_no_warning_about_them(make_project):
    """Python warns of ``"\\d"`` in a docstring when it compiles the file, in 3.11 as a DeprecationWarning
    (shown here with PYTHONWARNINGS=default), from 3.12 as a SyntaxWarning: the index parses the file twice
    (ast, griffe), so each one was printed twice, and a code base printed hundreds of them."""
    ops = OPS.replace("Normalise each row of X,", "Normalise each row of X (\\d is not an escape),")
    assert "\\d" in ops
    root = make_project(
        {
            "src/ops.py": ops,
            "mkdocs.yml": MKDOCS_YML,
            "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)"),
        }
    )
    assert run_cli(root, "relock") == 0
    shutil.rmtree(root / ".cache")  # a cold build: every file parsed

    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(root / "site")],
        cwd=root,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONWARNINGS": "default"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "escape sequence" not in result.stdout + result.stderr

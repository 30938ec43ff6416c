"""Tests of docs_hooks.kinds.example: the ``trace-example`` block.

Each test writes a tiny project (its own ``pyproject.toml``, ``src/ops.py``,
``src/gradcheck.py``, a test module and a page) into ``tmp_path``, expands the
page with only the example handler attached, and asserts the numbers or the
exact message a user sees. The expected numbers are computed here, with NumPy,
independently of the recorder.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import Build, make_build
from docs_hooks.kinds import example as examples
from docs_hooks.render.numbers import format_value

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[project]
name = "tiny"
version = "0.0.0"

[tool.docs_hooks]
repo_url = "https://example.com/repo"
ref = "abc123"
numerical_grad = "gradcheck.numerical_grad"
# Two of the tests fail on purpose (an example recorded from a failing test): a line map cannot be measured.
coverage_tests = []
"""

OPS = '''\
"""Tiny layer norm with a right and a wrong backward, and two small helpers."""

import numpy as np


def layer_norm_forward(X, gamma, beta, epsilon=1e-5):
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    s = 1.0 / np.sqrt(var + epsilon)
    Xhat = (X - mu) * s
    return gamma * Xhat + beta, (Xhat, s)


def layer_norm_backward(dY, cache, gamma):
    Xhat, s = cache
    dXhat = dY * gamma
    dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
              - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))
    dgamma = (dY * Xhat).sum(axis=0)
    dbeta = dY.sum(axis=0)
    return dX, dgamma, dbeta


def layer_norm_backward_wrong(dY, cache, gamma):
    Xhat, s = cache
    dXhat = dY * gamma
    dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True))  # forgets the path through the variance
    dgamma = (dY * Xhat).sum(axis=0)
    dbeta = dY.sum(axis=0)
    return dX, dgamma, dbeta


def clip_rows(X, limit):
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit}")
    norms = np.sqrt((X ** 2).sum(axis=-1, keepdims=True))
    if (norms > limit).any():
        scale = limit / norms
        X = X * scale
    return X


def centre(X):
    Xc = X.copy()
    mean = Xc.mean(axis=-1, keepdims=True)
    Xc -= mean
    return Xc


def scale_backward(dY, W, l1=0.0):
    dW = dY.T @ dY
    if l1:
        dW = dW + l1 * np.sign(W)
    total = 0.0
    for row in dY:
        total += row.sum()
    if l1:
        kind = "with a penalty"
    else:
        kind = "plain"
    dY = dY @ W.T
    dY = dY * 2.0
    return dY, dW, total, kind


class Scale:
    def __init__(self, W):
        self.W = W

    def forward(self, X):
        return X @ self.W

    def step(self, lr):
        self.W = self.W - lr
'''

GRADCHECK = """\
import numpy as np


def numerical_grad(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + h
        f_plus = f()
        x[index] = saved - h
        f_minus = f()
        x[index] = saved
        grad[index] = (f_plus - f_minus) / (2.0 * h)
    return grad
"""

TESTS = """\
import numpy as np

from ops import centre, clip_rows, layer_norm_backward, layer_norm_backward_wrong, layer_norm_forward

X = np.array([[1.0, 2.0, 3.0, 6.0]])
GAMMA = np.array([1.0, 1.0, 1.0, 2.0])
BETA = np.array([0.0, 0.0, 0.0, 1.0])
DY = np.array([[1.0, 0.0, 0.0, 1.0]])


def test_worked_example():
    y, cache = layer_norm_forward(X.copy(), GAMMA.copy(), BETA.copy())
    dx, dgamma, dbeta = layer_norm_backward(DY.copy(), cache, GAMMA.copy())
    assert abs(dx.sum()) < 1e-12


def test_wrong_backward():
    y, cache = layer_norm_forward(X.copy(), GAMMA.copy(), BETA.copy())
    layer_norm_backward_wrong(DY.copy(), cache, GAMMA.copy())


def test_short_rows_are_not_clipped():
    assert np.array_equal(clip_rows(X, 100.0), X)


def test_centre():
    assert abs(centre(X).mean()) < 1e-12


def test_raises():
    clip_rows(X, -1.0)


def test_fails():
    y, _ = layer_norm_forward(X, GAMMA, BETA)
    assert y.sum() == 123.0


def test_scale_backward():
    from ops import scale_backward

    scale_backward(np.array([[1.0, -1.0], [0.5, 2.0]]), np.array([[1.0, 0.0], [2.0, 1.0]]), l1=0.5)


def test_scale_forward_then_a_step():
    from ops import Scale

    layer = Scale(np.array([[1.0, 2.0], [3.0, 4.0]]))
    layer.forward(np.array([[1.0, 1.0]]))
    layer.step(0.5)  # changes the weights the forward used
"""

BASE = {
    "pyproject.toml": PYPROJECT,
    "src/ops.py": OPS,
    "src/gradcheck.py": GRADCHECK,
    "tests/__init__.py": "",
    "tests/test_ops.py": TESTS,
}

# The fixture's row, computed here without the recorder.
X = np.array([[1.0, 2.0, 3.0, 6.0]])
GAMMA = np.array([1.0, 1.0, 1.0, 2.0])
BETA = np.array([0.0, 0.0, 0.0, 1.0])
DY = np.array([[1.0, 0.0, 0.0, 1.0]])
MU = X.mean(axis=-1, keepdims=True)
S = 1.0 / np.sqrt(((X - MU) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
XHAT = (X - MU) * S
DXHAT = DY * GAMMA
M1 = DXHAT.sum(axis=-1, keepdims=True) / 4
M2 = (DXHAT * XHAT).sum(axis=-1, keepdims=True) / 4
DX = S * (DXHAT - M1 - XHAT * M2)
DGAMMA = (DY * XHAT).sum(axis=0)
DBETA = DY.sum(axis=0)


def write_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    for rel, text in {**BASE, **(extra or {})}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """One tiny project for the whole module: its recordings are cached under .cache/ after the first run."""
    return write_project(tmp_path_factory.mktemp("examples") / "proj")


def builder_for(root: Path, **overrides) -> Build:
    settings = load_settings(root)
    for key, value in overrides.items():
        setattr(settings, key, value)
    return make_build(settings, coverage=False)


def page(example: str, function: str = "ops.layer_norm_backward") -> str:
    """A page: one entry for ``function``, then the example block (its YAML indented by the caller)."""
    head = f"# Page\n\n```trace-entry\ntitle: The entry\nfunction: {function}\nstatus: implemented\n```\n\n"
    return head + "```trace-example\n" + textwrap.dedent(example).strip("\n") + "\n```\n"


def expand(root: Path, text: str, **overrides):
    return builder_for(root, **overrides).expand("docs/page.md", text)


def messages(result) -> list[str]:
    return [str(p) for p in result.problems]


BACKWARD_EXAMPLE = """\
test: tests/test_ops.py::test_worked_example
title: A worked backward
caption: dY is chosen by hand, not computed from a loss.
show:
  - label: Gradient on the output
    code: dY
  - label: Cache
    code: Xhat
  - label: Cache
    code: s
  - label: Gradient on the normalised row
    code: dXhat = dY * gamma
  - label: First mean
    code: dXhat.mean(axis=-1, keepdims=True)
    name: m1
  - label: Second mean
    code: (dXhat * Xhat).mean(axis=-1, keepdims=True)
    name: m2
  - label: Gradient on the input
    code: dX
  - label: Gradient on the scale
    code: dgamma = (dY * Xhat).sum(axis=0)
  - label: Gradient on the shift
    code: dbeta = dY.sum(axis=0)
"""

CHECK = 'check: "dX[0, 0] = s[0, 0] * (dXhat[0, 0] - m1[0, 0] - Xhat[0, 0] * m2[0, 0])"\n'


def steps(markdown: str) -> list[tuple[str, str, str]]:
    """The (Step, Code, Value) rows of the rendered table, unescaped."""
    table = re.search(r'<table class="trace-table trace-example-steps">.*?</table>', markdown).group(0)
    rows = re.findall(r"<tr><td>(.*?)</td><td><code>(.*?)</code></td><td><code>(.*?)</code></td></tr>", table)
    return [tuple(html.unescape(c) for c in row) for row in rows]


# ----------------------------------------------------------------- values --


def test_worked_example_shows_the_recorded_values(project):
    result = expand(project, page(BACKWARD_EXAMPLE))
    assert messages(result) == []
    rows = steps(result.markdown)
    assert [r[:2] for r in rows] == [
        ("Gradient on the output", "dY"),
        ("Cache", "Xhat"),
        ("Cache", "s"),
        ("Gradient on the normalised row", "dXhat = dY * gamma"),
        ("First mean", "dXhat.mean(axis=-1, keepdims=True)"),
        ("Second mean", "(dXhat * Xhat).mean(axis=-1, keepdims=True)"),
        ("Gradient on the input", "dX"),
        ("Gradient on the scale", "dgamma = (dY * Xhat).sum(axis=0)"),
        ("Gradient on the shift", "dbeta = dY.sum(axis=0)"),
    ]
    # The numbers as the reference page shows them ...
    assert [r[2] for r in rows] == [
        "[[1.0000, 0.0000, 0.0000, 1.0000]]",
        "[[-1.0690, -0.5345, 0.0000, 1.6036]]",
        "[[0.5345]]",
        "[[1.0000, 0.0000, 0.0000, 2.0000]]",
        "[[0.7500]]",
        "[[0.5345]]",
        "[[0.4391, -0.2482, -0.4009, 0.2100]]",
        "[-1.0690, 0.0000, 0.0000, 1.6036]",
        "[1.0000, 0.0000, 0.0000, 1.0000]",
    ]
    # ... and the same numbers computed here, unrounded, from NumPy alone.
    independent = [DY, XHAT, S, DXHAT, M1, M2, DX, DGAMMA, DBETA]
    for shown, expected in zip(rows, independent):
        assert shown[2] == np.array2string(
            np.round(expected, 4) + 0.0, separator=", ", formatter={"float_kind": lambda v: f"{v:.4f}"}
        ), shown


def test_the_data_behind_the_table_is_the_recorded_call(project):
    from docs_hooks.core.page import BlockPart

    builder = builder_for(project)
    plan = builder.plan("docs/page.md", page(BACKWARD_EXAMPLE))
    [part] = [p for p in plan.parts if isinstance(p, BlockPart)]
    data, problems = examples.collect(part.plan, builder.results, builder.links)
    assert problems == []
    for row, expected in zip(data.rows, [DY, XHAT, S, DXHAT, M1, M2, DX, DGAMMA, DBETA]):
        np.testing.assert_allclose(row.value, expected, rtol=1e-12, atol=1e-15, err_msg=row.label)
    assert data.test == "tests/test_ops.py::test_worked_example"
    assert data.function == "ops.layer_norm_backward"
    # every expression row is locked to the statement it comes from
    keys = [u.key for u in plan.refs.uses if u.key.startswith("example")]
    assert keys == [
        "example A worked backward | ops.layer_norm_backward: dXhat = dY * gamma",
        "example A worked backward | ops.layer_norm_backward: dXhat.mean(axis=-1, keepdims=True)",
        "example A worked backward | ops.layer_norm_backward: (dXhat * Xhat).mean(axis=-1, keepdims=True)",
        "example A worked backward | ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0)",
        "example A worked backward | ops.layer_norm_backward: dbeta = dY.sum(axis=0)",
    ]


def test_heading_badge_says_what_backs_the_numbers_and_the_source_of_them(project):
    md = expand(project, page(BACKWARD_EXAMPLE)).markdown
    assert (
        '<p class="trace-example-head"><strong class="trace-example-title">A worked backward</strong> '
        '<span class="trace-badge trace-badge--recorded" title="every number recorded from '
        'tests/test_ops.py::test_worked_example: the first call of ops.layer_norm_backward">'
        "Recorded</span></p>"
    ) in md
    assert (
        '<p class="trace-example-source">Recorded while '
        '<a href="https://example.com/repo/blob/abc123/tests/test_ops.py#L11-L14" '
        'title="tests/test_ops.py::test_worked_example"><code>test_worked_example</code></a> runs. '
        "dY is chosen by hand, not computed from a loss.</p>"
    ) in md
    # one raw HTML block: no blank line inside it
    block = md[md.index('<div class="trace-example"') :]
    assert "\n\n" not in block[: block.index("</div>")]


def test_a_forward_example_shows_scalars_plainly(project):
    example = """\
    test: tests/test_ops.py::test_worked_example
    title: One row through LayerNorm
    show:
      - label: Mean
        code: mu
      - label: Variance
        code: var
      - label: epsilon
        code: epsilon
      - label: Under the square root
        code: var + epsilon
    """
    result = expand(project, page(example, "ops.layer_norm_forward"))
    assert messages(result) == []
    assert [r[2] for r in steps(result.markdown)] == ["[[3.0000]]", "[[3.5000]]", "1e-05", "[[3.5000]]"]


# ----------------------------------------------------------------- show rows --


def test_expression_not_in_the_function_is_an_error(project):
    example = """\
    test: tests/test_ops.py::test_worked_example
    title: Bad row
    show:
      - label: A mean the code never takes
        code: dY.mean(axis=0)
    """
    result = expand(project, page(example))
    assert messages(result) == [
        "docs/page.md:12: example 'Bad row': show row 'A mean the code never takes': 'dY.mean(axis=0)' is "
        "neither a local of ops.layer_norm_backward nor an expression in it (ops.py:14-21); did you mean "
        "'dbeta = dY.sum(axis=0)' (ops.py:20)? Copy the code from the function."
    ]
    assert '<div class="admonition failure trace-error">' in result.markdown


def test_text_that_is_not_one_subexpression_is_an_error(project):
    example = """\
    test: tests/test_ops.py::test_worked_example
    title: Bad grouping
    show:
      - label: Not what the code computes
        code: dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat
    """
    assert messages(expand(project, page(example))) == [
        "docs/page.md:12: example 'Bad grouping': show row 'Not what the code computes': "
        "'dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat' occurs in ops.py:17 as text, but the code does not "
        "compute it as one value there (operator precedence groups it differently); copy a whole sub-expression"
    ]


def test_name_that_was_not_recorded_lists_the_recorded_names(project):
    example = """\
    test: tests/test_ops.py::test_short_rows_are_not_clipped
    title: Clipping
    show:
      - label: Scale
        code: scale
    """
    assert messages(expand(project, page(example, "ops.clip_rows"))) == [
        "docs/page.md:12: example 'Clipping': show row 'Scale': 'scale' was not recorded in the first call of "
        "ops.clip_rows in tests/test_ops.py::test_short_rows_are_not_clipped; recorded names: X, limit, norms. "
        "Show a name the function assigns on the path the test takes."
    ]


def test_expression_reading_an_unrecorded_name_lists_the_recorded_names(project):
    example = """\
    test: tests/test_ops.py::test_short_rows_are_not_clipped
    title: Clipping
    show:
      - label: Scaled
        code: X * scale
    """
    assert messages(expand(project, page(example, "ops.clip_rows"))) == [
        "docs/page.md:12: example 'Clipping': show row 'Scaled': 'scale' was not recorded in the first call of "
        "ops.clip_rows in tests/test_ops.py::test_short_rows_are_not_clipped; recorded names: X, limit, norms. "
        "Show a name the function assigns on the path the test takes."
    ]


def test_value_changed_after_its_line_is_an_error(project):
    example = """\
    test: tests/test_ops.py::test_centre
    title: Centre
    show:
      - label: Mean
        code: Xc.mean(axis=-1, keepdims=True)
    """
    assert messages(expand(project, page(example, "ops.centre"))) == [
        "docs/page.md:12: example 'Centre': show row 'Mean': 'Xc' is changed at ops.py:46, after ops.py:45 where "
        "'Xc.mean(axis=-1, keepdims=True)' is computed, so the recorded value (at return) is not what that line "
        "saw; show a local that is not changed afterwards"
    ]


# ------------------------------------------------- which value a row shows --

# scale_backward's argument and weights, as test_scale_backward passes them
DY_IN = np.array([[1.0, -1.0], [0.5, 2.0]])
W_IN = np.array([[1.0, 0.0], [2.0, 1.0]])


def fmt(value) -> str:
    """A value as a row of the table shows it (an array's rows on lines of their own)."""
    return format_value(np.asarray(value, dtype=float)).replace("\n", "<br>")


def scale_page(*rows: str, check: str = "") -> str:
    body = "test: tests/test_ops.py::test_scale_backward\ntitle: Scale\nshow:\n" + "".join(f"  - {r}\n" for r in rows)
    return page(body + (f"check: {check!r}\n" if check else ""), "ops.scale_backward")


def ops_line(text: str) -> int:
    return [i for i, line in enumerate(OPS.splitlines(), 1) if line.strip() == text][0]


def test_an_argument_the_function_reassigns_is_shown_as_the_test_passed_it(project):
    result = expand(project, scale_page("{label: Upstream gradient, code: dY}"))
    assert messages(result) == []
    assert (
        f"<tr><td>Upstream gradient</td><td><code>dY</code>, on entry</td><td><code>{fmt(DY_IN)}</code></td></tr>"
    ) in result.markdown
    assert fmt(DY_IN) == "[[1.0000, -1.0000],<br> [0.5000, 2.0000]]"  # the test's literal, not what is returned


def test_after_a_statement_followed_by_a_change_is_refused(project):
    line = ops_line("dY = dY @ W.T")
    result = expand(project, scale_page('{label: Through the weights, code: dY, after: "dY = dY @ W.T"}'))
    assert messages(result) == [
        f"docs/page.md:12: example 'Scale': show row 'Through the weights': 'dY' is changed at ops.py:{line + 1}, "
        f"after ops.py:{line}, so its recorded value (on return) is not its value after ops.py:{line}; show it "
        f'after the last statement that changes it, after: "dY = dY * 2.0" (ops.py:{line + 1}), or an expression '
        f"that reads it at ops.py:{line}"
    ]


def test_after_shows_a_name_as_the_statement_it_names_left_it_with_a_link_to_that_line(project):
    line = ops_line("dY = dY * 2.0")
    result = expand(project, scale_page("{label: Doubled, code: dY, after: 'dY = dY * 2.0'}"))
    assert messages(result) == []
    link = f'<a href="../source/src/ops.py/#L{line}" title="ops.scale_backward"><code>ops.py:{line}</code></a>'
    assert (
        f"<tr><td>Doubled</td><td><code>dY</code> after {link}</td><td><code>{fmt(DY_IN @ W_IN.T * 2.0)}</code></td></tr>"
    ) in result.markdown
    keys = [
        u.key
        for u in builder_for(project)
        .plan("docs/page.md", scale_page("{label: D, code: dY, after: 'dY = dY * 2.0'}"))
        .refs.uses
    ]
    assert "example Scale | ops.scale_backward: dY = dY * 2.0" in keys  # locked like any reference


def test_an_expression_reads_an_argument_as_its_line_saw_it(project):
    """``dY @ W.T`` is computed by the statement that reassigns dY: it read the dY the test passed."""
    result = expand(project, scale_page("{label: Through the weights, code: dY @ W.T}"))
    assert messages(result) == []
    assert steps(result.markdown) == [("Through the weights", "dY @ W.T", fmt(DY_IN @ W_IN.T))]


def test_a_name_bound_by_two_statements_is_refused_with_both_lines_and_what_to_write(project):
    first, second = ops_line("dW = dY.T @ dY"), ops_line("dW = dW + l1 * np.sign(W)")
    result = expand(project, scale_page("{label: Weight gradient, code: dW}"))
    assert messages(result) == [
        f"docs/page.md:12: example 'Scale': show row 'Weight gradient': 'dW' is bound at ops.py:{first} and again "
        f"at ops.py:{second}, and the recording holds only its value on return; say which value you mean with "
        f'the statement it follows, e.g. after: "dW = dW + l1 * np.sign(W)" (ops.py:{second}) for the value on '
        "return (a value bound again later is not recorded)"
    ]
    fixed = expand(project, scale_page("{label: Weight gradient, code: dW, after: 'dW = dW + l1 * np.sign(W)'}"))
    assert messages(fixed) == []
    assert f"<code>{fmt(DY_IN.T @ DY_IN + 0.5 * np.sign(W_IN))}</code>" in fixed.markdown


def test_a_name_built_up_in_place_or_bound_in_the_two_branches_of_an_if_is_shown_on_return(project):
    result = expand(project, scale_page("{label: Sum, code: total}", "{label: Kind, code: kind}"))
    assert messages(result) == []
    assert steps(result.markdown) == [("Sum", "total", "2.5"), ("Kind", "kind", "'with a penalty'")]


def test_a_check_line_reads_an_argument_on_entry_and_a_shown_name_as_its_row_shows_it(project):
    check = "dY[0, 0] = (dY_in[0, 0] * W[0, 0] + dY_in[0, 1] * W[0, 1]) * 2.0"  # dY: the unnamed row's
    result = expand(
        project,
        scale_page(
            "{label: Given, code: dY, name: dY_in}", "{label: Returned, code: dY, after: 'dY = dY * 2.0'}", check=check
        ),
    )
    assert messages(result) == []
    assert "One entry: <code>dY[0, 0]</code> = (1 × 1 + (-1) × 0) × 2.0 = 2</p>" in result.markdown
    bare = expand(project, scale_page("{label: Given, code: dY}", check="dY[0, 1] = dY[0, 1] * 1.0"))
    assert messages(bare) == []
    assert "One entry: <code>dY[0, 1]</code> = (-1) × 1.0 = -1</p>" in bare.markdown  # on entry: the test's -1
    twice = expand(project, scale_page("{label: Given, code: l1}", check="l1 = dW[0, 0] * 1.0"))
    first, second = ops_line("dW = dY.T @ dY"), ops_line("dW = dW + l1 * np.sign(W)")
    assert messages(twice) == [
        f"docs/page.md:14: example 'Scale': check uses 'dW', which ops.scale_backward binds at ops.py:{first} and "
        f"again at ops.py:{second}, so the recording holds only its value on return; show the value you mean in a "
        "row, code: dW with 'after' (the statement it follows)"
    ]


def test_after_needs_a_name_and_a_statement_of_the_function(project):
    result = expand(project, scale_page("{label: Bad, code: dY @ W.T, after: 'dY = dY * 2.0'}"))
    assert messages(result) == [
        "docs/page.md:12: example 'Scale': show row 'Bad': 'after' shows a local of ops.scale_backward as it is "
        "after a statement, but 'dY @ W.T' is none; write a local name in 'code'"
    ]
    first, second = ops_line("dY = dY @ W.T"), ops_line("dY = dY * 2.0")
    assert messages(expand(project, scale_page("{label: Bad, code: dY, after: 'dY = dY * 3.0'}"))) == [
        "docs/page.md:12: example 'Scale': show row 'Bad': after: no statement of ops.scale_backward (ops.py:50-63) "
        f"matches 'dY = dY * 3.0'; did you mean 'dY = dY * 2.0' (ops.py:{second}) or 'dY = dY @ W.T' "
        f"(ops.py:{first})? Copy the statement's text from the code."
    ]


def test_an_objects_fields_are_shown_as_they_were_when_the_function_ran(project):
    """The test steps the weights after the forward: the example shows those the forward used."""
    body = "test: tests/test_ops.py::test_scale_forward_then_a_step\ntitle: Forward\nshow:\n"
    body += "  - {label: Weights, code: self.W}\n  - {label: Output, code: X @ self.W}\n"
    result = expand(project, page(body, "ops.Scale.forward"))
    assert messages(result) == []
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert steps(result.markdown) == [
        ("Weights", "self.W", fmt(W)),
        ("Output", "X @ self.W", fmt(np.array([[1.0, 1.0]]) @ W)),
    ]


# ----------------------------------------------------------------- check line --


def test_check_line_is_filled_from_the_recorded_values(project):
    result = expand(project, page(BACKWARD_EXAMPLE + CHECK))
    assert messages(result) == []
    assert (
        '<p class="trace-example-check">One entry: <code>dX[0, 0]</code> = '
        "0.5345 × (1 - 0.75 - (-1.069) × 0.5345) = 0.4391</p>"
    ) in result.markdown
    # the same line from NumPy alone
    filled = f"{S[0, 0]:.4f} × ({DXHAT[0, 0]:g} - {M1[0, 0]:g} - ({XHAT[0, 0]:.3f}) × {M2[0, 0]:.4f}) = {DX[0, 0]:.4f}"
    assert filled in result.markdown


def test_wrong_check_line_fails_with_both_numbers(project):
    wrong = 'check: "dX[0, 0] = s[0, 0] * (dXhat[0, 0] - m1[0, 0] + Xhat[0, 0] * m2[0, 0])"\n'
    result = expand(project, page(BACKWARD_EXAMPLE + wrong))
    rhs = S[0, 0] * (DXHAT[0, 0] - M1[0, 0] + XHAT[0, 0] * M2[0, 0])
    assert f"{rhs:.10g}" == "-0.1718096802"
    assert f"{DX[0, 0]:.10g}" == "0.4390705404"
    assert messages(result) == [
        "docs/page.md:34: example 'A worked backward': check 'dX[0, 0] = s[0, 0] * (dXhat[0, 0] - m1[0, 0] + "
        "Xhat[0, 0] * m2[0, 0])' does not hold for the recorded values: the right-hand side gives -0.1718096802, "
        "but dX[0, 0] is 0.4390705404. Fix the formula, or the code it describes."
    ]


def test_check_leaf_must_be_one_number(project):
    result = expand(project, page(BACKWARD_EXAMPLE + 'check: "dX[0, 0] = s * dXhat[0, 0]"\n'))
    assert messages(result) == [
        "docs/page.md:34: example 'A worked backward': check: 's' is an array of shape (1, 1), not one number; "
        "index one entry, e.g. s[0, 0]"
    ]


def test_check_with_an_unknown_name(project):
    result = expand(project, page(BACKWARD_EXAMPLE + 'check: "dX[0, 0] = m3[0, 0]"\n'))
    assert messages(result) == [
        "docs/page.md:34: example 'A worked backward': check uses 'm3', which is neither recorded in the first "
        "call of ops.layer_norm_backward in tests/test_ops.py::test_worked_example nor the name of a show row; "
        "known names: dY, cache, gamma, Xhat, s, dXhat, dX, dgamma, dbeta, m1, m2"
    ]


# ----------------------------------------------------------------- gradient check --


def test_gradcheck_table_for_a_correct_backward(project):
    result = expand(project, page(BACKWARD_EXAMPLE + "gradcheck: ops.layer_norm_forward\n"))
    assert messages(result) == []
    md = result.markdown
    table = re.search(r'<table class="trace-table trace-gradcheck-table">.*?</table>', md).group(0)
    assert (
        "<th>Gradient</th><th>From the backward formula</th><th>From central differences</th><th>Largest gap</th>"
        in table
    )
    rows = re.findall(
        r"<tr><td><code>(.*?)</code></td><td><code>(.*?)</code></td>"
        r"<td><code>(.*?)</code></td><td><code>(.*?)</code></td></tr>",
        table,
    )
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("dX", "[[0.4391, -0.2482, -0.4009, 0.2100]]", "[[0.4391, -0.2482, -0.4009, 0.2100]]"),
        ("dgamma", "[-1.0690, 0.0000, 0.0000, 1.6036]", "[-1.0690, 0.0000, 0.0000, 1.6036]"),
        ("dbeta", "[1.0000, 0.0000, 0.0000, 1.0000]", "[1.0000, 0.0000, 0.0000, 1.0000]"),
    ]
    for name, _, _, gap in rows:
        assert re.fullmatch(r"\d\.\de-\d\d|0", gap), gap
        assert float(gap) < 1e-8, (name, gap)
    assert (
        'Central differences from <a href="https://example.com/repo/blob/abc123/src/gradcheck.py#L4-L14" '
        'title="gradcheck.numerical_grad"><code>gradcheck.numerical_grad</code></a> (called with h=1e-05)'
    ) in md
    assert "Checking the whole backward numerically" in md


def test_gradcheck_calls_the_projects_numerical_grad(tmp_path):
    # A numerical_grad that lies: the table must come from it, not from a reimplementation.
    lying = GRADCHECK.replace("return grad", "return grad + 1.0")
    root = write_project(tmp_path / "proj", {"src/gradcheck.py": lying})
    result = expand(root, page(BACKWARD_EXAMPLE + "gradcheck: ops.layer_norm_forward\n"))
    assert [m.split(": backward")[0] for m in messages(result)] == [
        "docs/page.md:34: example 'A worked backward': gradcheck: dX from ops.layer_norm_backward differs from "
        "the central differences of ops.layer_norm_forward by 1 (more than 1e-06)"
    ]


def test_gradcheck_fails_for_a_wrong_backward(project):
    example = """\
    test: tests/test_ops.py::test_wrong_backward
    title: A wrong backward
    function: ops.layer_norm_backward_wrong
    show:
      - label: Gradient on the input
        code: dX
    gradcheck: ops.layer_norm_forward
    """
    result = expand(project, page(example))
    wrong = S * (DXHAT - M1)
    gap = np.max(np.abs(wrong - DX))
    assert f"{gap:.2g}" == "0.46"
    assert messages(result) == [
        "docs/page.md:16: example 'A wrong backward': gradcheck: dX from ops.layer_norm_backward_wrong differs "
        "from the central differences of ops.layer_norm_forward by 0.46 (more than 1e-06): "
        "backward [[0.1336, -0.4009, -0.4009, 0.6682]], "
        "central differences [[0.4391, -0.2482, -0.4009, 0.2100]]. The backward does not match the forward."
    ]


def test_gradcheck_needs_the_numerical_grad_setting(project):
    result = expand(project, page(BACKWARD_EXAMPLE + "gradcheck: ops.layer_norm_forward\n"), numerical_grad=None)
    assert messages(result) == [
        "docs/page.md:34: example 'A worked backward': gradcheck needs the setting numerical_grad in "
        "[tool.docs_hooks]: the dotted name of the project's numerical_grad(f, x)"
    ]


def test_gradcheck_of_an_unknown_forward(project):
    result = expand(project, page(BACKWARD_EXAMPLE + "gradcheck: ops.layer_norm_froward\n"))
    assert messages(result) == [
        "docs/page.md:34: example 'A worked backward': gradcheck: no function 'ops.layer_norm_froward' in the "
        "code index; did you mean 'ops.layer_norm_forward' or 'ops.layer_norm_backward' or "
        "'ops.layer_norm_backward_wrong'? Use the dotted name: module, then class if any, then function."
    ]


# ----------------------------------------------------------------- widget --


def test_widget_data_and_input_tables(project):
    result = expand(project, page(BACKWARD_EXAMPLE + "widget: true\n"))
    assert messages(result) == []
    md = result.markdown
    raw = re.search(r'<script type="application/json" class="trace-example-data">(.*?)</script>', md).group(1)
    data = json.loads(raw)
    assert data["test"] == "tests/test_ops.py::test_worked_example"
    assert data["function"] == "ops.layer_norm_backward"
    assert list(data["inputs"]) == ["dY", "cache", "gamma"]
    assert data["inputs"]["dY"] == {"shape": [1, 4], "dtype": "float64", "values": DY.tolist()}
    np.testing.assert_allclose(data["inputs"]["cache"][0]["values"], XHAT, rtol=1e-15)
    np.testing.assert_allclose(data["outputs"][0]["values"], DX, rtol=1e-12)
    # what the browser recomputes (docs_hooks/assets/trace-widgets.js): each shown row in table order, the check line
    assert [(r["code"], r["name"]) for r in data["rows"]][3:6] == [
        ("dXhat = dY * gamma", None),
        ("dXhat.mean(axis=-1, keepdims=True)", "m1"),
        ("(dXhat * Xhat).mean(axis=-1, keepdims=True)", "m2"),
    ]
    np.testing.assert_allclose(data["rows"][6]["value"]["values"], DX, rtol=1e-12)
    assert data["check"] is None
    assert (
        '<table class="trace-table trace-example-input"><caption><code>gamma</code>, shape (4,)</caption>'
        "<thead><tr><th></th><th>0</th><th>1</th><th>2</th><th>3</th></tr></thead><tbody><tr><th>gamma</th>"
        '<td data-name="gamma" data-index="0">1</td><td data-name="gamma" data-index="1">1</td>'
        '<td data-name="gamma" data-index="2">1</td><td data-name="gamma" data-index="3">2</td>'
        "</tr></tbody></table>"
    ) in md
    assert (
        "<caption><code>cache[1]</code>, shape (1, 1)</caption><thead><tr><th></th><th>0</th></tr></thead>"
        '<tbody><tr><th>0</th><td data-name="cache[1]" data-index="0,0">0.5345</td></tr></tbody>'
    ) in md
    assert expand(project, page(BACKWARD_EXAMPLE + "widget: true\n")).markdown == md  # deterministic


def test_examples_module_does_not_import_mkdocs():
    import subprocess
    import sys

    code = "import sys, docs_hooks.kinds.example; print(sorted(m for m in sys.modules if m.startswith('mkdocs')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------- failures --


def test_a_raising_test_fails_with_its_name_and_traceback(project):
    example = """\
    test: tests/test_ops.py::test_raises
    title: Raises
    function: ops.clip_rows
    show:
      - label: X
        code: X
    """
    (message,) = messages(expand(project, page(example, "ops.clip_rows")))
    lines = message.splitlines()
    assert lines[0] == "docs/page.md:10: example 'Raises': tests/test_ops.py::test_raises raised while recording:"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: limit must be positive, got -1.0"


def test_a_failing_test_fails_with_its_assertion(project):
    example = """\
    test: tests/test_ops.py::test_fails
    title: Fails
    show:
      - label: mu
        code: mu
    """
    (message,) = messages(expand(project, page(example, "ops.layer_norm_forward")))
    lines = message.splitlines()
    assert lines[0] == "docs/page.md:10: example 'Fails': tests/test_ops.py::test_fails raised while recording:"
    assert "    assert y.sum() == 123.0" in lines
    assert lines[-1] == "AssertionError"


def test_function_the_test_never_calls(project):
    example = """\
    test: tests/test_ops.py::test_worked_example
    title: Never
    show:
      - label: X
        code: X
    """
    assert messages(expand(project, page(example, "ops.clip_rows"))) == [
        "docs/page.md:10: example 'Never': tests/test_ops.py::test_worked_example never called ops.clip_rows; "
        "it called: ops.layer_norm_backward, ops.layer_norm_forward, tests.test_ops.test_worked_example"
    ]


def test_unknown_function_and_unknown_test(project):
    example = """\
    test: tests/test_ops.py::test_worked_exampel
    title: Typos
    function: ops.layer_norm_bakward
    show:
      - label: X
        code: X
    """
    assert messages(expand(project, page(example))) == [
        "docs/page.md:12: example 'Typos': no function 'ops.layer_norm_bakward' in the code index; did you mean "
        "'ops.layer_norm_backward' or 'ops.layer_norm_forward' or 'ops.layer_norm_backward_wrong'? "
        "Use the dotted name: module, then class if any, then function."
    ]
    assert messages(expand(project, page(example.replace("    function: ops.layer_norm_bakward\n", "")))) == [
        "docs/page.md:10: example 'Typos': no test 'test_worked_exampel' in tests/test_ops.py; "
        "did you mean 'tests/test_ops.py::test_worked_example'?"
    ]


@pytest.mark.parametrize(
    "test",
    [
        "/etc/test_passwd.py::test_x",
        "../outside/test_ops.py::test_worked_example",
        "tests/../../test_ops.py::test_worked_example",
    ],
)
def test_a_test_file_outside_the_project_root_is_refused_at_its_line(project, test):
    example = f"""\
    test: {test}
    title: Outside
    show:
      - label: X
        code: X
    """
    (project.parent / "outside").mkdir(exist_ok=True)
    (project.parent / "outside" / "test_ops.py").write_text(TESTS, encoding="utf-8")  # there, but not the project's

    assert messages(expand(project, page(example))) == [
        f"docs/page.md:10: example 'Outside': the test file of '{test}': '{test.partition('::')[0]}' is outside the "
        "project root; a page names only the project's files: write the path from the project root, with no "
        "leading '/' and no '..' above it"
    ]


def test_example_outside_an_entry(project):
    text = "# Page\n\n```trace-example\n" + BACKWARD_EXAMPLE + "```\n"
    assert messages(expand(project, text)) == [
        "docs/page.md:3: example 'A worked backward': trace-example outside an entry; put a trace-entry block above it"
    ]


def test_gradcheck_is_a_dotted_name_not_a_flag(project):
    assert messages(expand(project, page(BACKWARD_EXAMPLE + "gradcheck: true\n"))) == [
        "docs/page.md:34: field 'gradcheck' of block 'trace-example' must be text, not bool True"
    ]


# ----------------------------------------------------------------- the real project --


REAL_TEST = REPO / "tests" / "test_ops.py"


@pytest.mark.skipif(
    not REAL_TEST.exists() or "def test_layer_norm_worked_example" not in REAL_TEST.read_text(encoding="utf-8"),
    reason="tests/test_ops.py::test_layer_norm_worked_example is not written yet",
)
def test_the_real_layer_norm_backward_example(tmp_path):
    example = BACKWARD_EXAMPLE.replace(
        "tests/test_ops.py::test_worked_example", "tests/test_ops.py::test_layer_norm_worked_example"
    )
    result = expand(REPO, page(example + CHECK + "gradcheck: ops.layer_norm_forward\n"), cache_dir=tmp_path)
    assert messages(result) == []
    assert [r[2] for r in steps(result.markdown)] == [
        "[[1.0000, 0.0000, 0.0000, 1.0000]]",
        "[[-1.0690, -0.5345, 0.0000, 1.6036]]",
        "[[0.5345]]",
        "[[1.0000, 0.0000, 0.0000, 2.0000]]",
        "[[0.7500]]",
        "[[0.5345]]",
        "[[0.4391, -0.2482, -0.4009, 0.2100]]",
        "[-1.0690, 0.0000, 0.0000, 1.6036]",
        "[1.0000, 0.0000, 0.0000, 1.0000]",
    ]
    assert "0.5345 × (1 - 0.75 - (-1.069) × 0.5345) = 0.4391" in result.markdown


SCALE_OPS = """\
import numpy as np


def scale_forward(X, W, b):
    Y = X * W + b
    return Y, X


def scale_backward(dY, cache, W):
    X = cache
    dX = dY * W
    dW = (dY * X).sum(axis=0)
    db = dY.sum(axis=0)
    return dX, (dW, db)
"""

SCALE_TEST = """\
import numpy as np
from scale import scale_backward, scale_forward


def test_scale():
    X = np.array([[1., 2.], [3., 4.]])
    W = np.array([0.5, -1.])
    b = np.array([0.1, 0.2])
    Y, cache = scale_forward(X, W, b)
    dX, (dW, db) = scale_backward(np.array([[1., 0.], [0., 1.]]), cache, W)
"""


def test_gradcheck_follows_a_nested_tuple_of_returned_gradients(tmp_path):
    """A backward may return its parameter gradients as a tuple inside the tuple: dX, (dW, db)."""
    root = write_project(tmp_path / "proj", {"src/scale.py": SCALE_OPS, "tests/test_scale.py": SCALE_TEST})
    example = """\
    test: tests/test_scale.py::test_scale
    title: Nested
    show:
      - label: Gradient on the input
        code: dX
    gradcheck: scale.scale_forward
    """
    result = expand(root, page(example, function="scale.scale_backward"))
    assert messages(result) == []
    table = re.search(r'<table class="trace-table trace-gradcheck-table">.*?</table>', result.markdown).group(0)
    names = re.findall(r"<tr><td><code>(\w+)</code></td>", table)
    assert names == ["dX", "dW", "db"]
    gaps = [float(g) for g in re.findall(r"<td><code>([0-9.e-]+)</code></td></tr>", table)]
    assert len(gaps) == 3 and max(gaps) < 1e-8


# ----------------------------------------------------------------------------- prefetch


TWO_EXAMPLES = """\
# Page

```trace-entry
title: The entry
function: ops.layer_norm_backward
status: implemented
```

The mean is $\\mu = \\frac{1}{d}\\sum_j x_j$.

```trace-example
title: First
test: tests/test_ops.py::test_worked_example
show:
  - {label: Gradient on the input, code: dX}
```

```trace-example
title: Second
test: tests/test_ops.py::test_wrong_backward
function: ops.layer_norm_backward_wrong
show:
  - {label: Gradient on the input, code: dX}
```

```trace-example
title: Broken
test: tests/test_ops.py
show:
  - {label: Gradient on the input, code: dX}
```
"""


def test_prefetch_records_every_examples_test_in_one_batch_before_the_page_is_expanded(tmp_path):
    root = write_project(tmp_path / "proj")
    builder = builder_for(root)
    builder.workers.math.project_root = REPO  # the project's node_modules, for the formula in the prose
    batches = []
    run_child = builder.workers.recorder.child.run
    builder.workers.recorder.child.run = lambda requests: (
        batches.append([r.name for r in requests]) or run_child(requests)
    )

    builder.plan_site({"docs/page.md": TWO_EXAMPLES})
    builder.await_background()
    assert batches == [["tests/test_ops.py::test_worked_example", "tests/test_ops.py::test_wrong_backward"]]

    result = builder.expand("docs/page.md", TWO_EXAMPLES)
    assert batches == [["tests/test_ops.py::test_worked_example", "tests/test_ops.py::test_wrong_backward"]]
    # the malformed test id was skipped by the prefetch and is reported where it is written
    assert [str(p) for p in result.problems] == [
        "docs/page.md:28: example 'Broken': 'tests/test_ops.py' is not a test id; write it as "
        "tests/test_file.py::test_name or tests/test_file.py::TestClass::test_name"
    ]
    assert builder.workers.recorder.child.runs == 1
    builder.workers.recorder.close()


def test_prefetch_renders_the_prose_formulas_in_the_background(tmp_path):
    root = write_project(tmp_path / "proj")
    builder = builder_for(root)
    builder.workers.math.project_root = REPO  # the project's node_modules
    if not builder.workers.math.available():
        pytest.skip("KaTeX is not installed here: run npm ci")
    builder.plan_site({"docs/page.md": TWO_EXAMPLES})
    builder.await_background()

    assert ("\\mu = \\frac{1}{d}\\sum_j x_j", False) in builder.workers.math.cache


def test_a_bug_in_the_background_work_is_raised_in_the_build_not_swallowed(tmp_path, monkeypatch):
    from docs_hooks.kinds.example import ExampleKind

    root = write_project(tmp_path / "proj")
    builder = builder_for(root)

    def broken(self, plan, done):
        raise KeyError("a bug in what a kind needs")

    monkeypatch.setattr(ExampleKind, "needs", broken)
    builder.plan_site({"docs/page.md": TWO_EXAMPLES})
    with pytest.raises(KeyError, match="a bug in what a kind needs"):  # at the latest when the build ends
        builder.expand("docs/index.md", "# Page\n")
        builder.await_background()


def test_a_table_of_every_page_reads_the_other_pages_without_running_their_examples(tmp_path):
    root = write_project(tmp_path / "proj")
    (root / "docs").mkdir()
    home = "# Home\n\n```trace-inventory\nof: pages\n```\n"
    (root / "docs/index.md").write_text(home, encoding="utf-8")
    (root / "docs/page.md").write_text(TWO_EXAMPLES, encoding="utf-8")
    builder = builder_for(root)

    result = builder.expand("docs/index.md", home)  # as if MkDocs had left out docs/page.md

    assert result.problems == []
    assert "The entry" in result.markdown  # the other page's entry is listed ...
    assert builder.workers.recorder.child.runs == 0  # ... and none of its examples ran for it


def test_a_recording_already_made_is_answered_without_waiting_for_the_recorder(tmp_path):
    import threading

    root = write_project(tmp_path / "proj")
    builder = builder_for(root)
    req = examples.test_request("tests/test_ops.py::test_worked_example", root)
    builder.workers.recorder.record([req])
    answered = []
    builder.workers.recorder._busy = True  # the prefetch is busy with a long batch
    thread = threading.Thread(target=lambda: answered.append(builder.workers.recorder.record([req])))
    thread.start()
    thread.join(timeout=10)
    answered_while_busy = list(answered)
    builder.workers.recorder._busy = False
    thread.join()
    builder.workers.recorder.close()

    assert answered_while_busy and answered_while_busy[0][req].calls_of("ops.layer_norm_forward")


# ----------------------------------------------------------------------------- gradients in a dictionary

AFFINE = """\
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Cfg:
    k: float = 2.0


def affine_forward(X, params, cfg):
    Y = X * params["g"] + cfg.k * params["b"]
    return Y, (X,)


def affine_backward(dY, cache, params, cfg):
    (X,) = cache
    grads = {"g": (dY * X).sum(axis=0), "b": cfg.k * dY.sum(axis=0)}
    dX = dY * params["g"]
    return dX, grads


def affine_backward_wrong(dY, cache, params, cfg):
    (X,) = cache
    grads = {"g": (dY * X).sum(axis=0), "b": dY.sum(axis=0)}  # forgets the factor k
    dX = dY * params["g"]
    return dX, grads
"""

AFFINE_TESTS = """\
import numpy as np

from affine import Cfg, affine_backward, affine_backward_wrong, affine_forward

X = np.array([[1.0, -2.0], [0.5, 3.0]])
DY = np.array([[1.0, 0.5], [-1.0, 2.0]])


def test_affine():
    params = {"g": np.array([2.0, -1.0]), "b": np.array([0.5, 0.25]), "unused": np.ones(3)}
    Y, cache = affine_forward(X, params, Cfg(k=3.0))
    affine_backward(DY, cache, params, Cfg(k=3.0))


def test_affine_wrong():
    params = {"g": np.array([2.0, -1.0]), "b": np.array([0.5, 0.25])}
    Y, cache = affine_forward(X, params, Cfg(k=3.0))
    affine_backward_wrong(DY, cache, params, Cfg(k=3.0))
"""


def affine_gradcheck(tmp_path, test: str, backward: str):
    """The expanded page of one gradcheck example of an affine backward, on the affine project."""
    root = write_project(tmp_path / "proj", {"src/affine.py": AFFINE, "tests/test_affine.py": AFFINE_TESTS})
    return expand(
        root,
        page(
            f"""
        test: tests/test_affine.py::{test}
        title: Affine
        show:
          - {{label: Gradient on the input, code: dX}}
        gradcheck: affine.affine_forward
        """,
            function=f"affine.{backward}",
        ),
    )


def test_gradcheck_of_gradients_returned_in_a_dictionary_nudges_the_entries_of_the_forwards_dictionary(tmp_path):
    result = affine_gradcheck(tmp_path, "test_affine", "affine_backward")

    assert messages(result) == []
    rows = re.findall(
        r"<tr><td><code>(.*?)</code></td><td><code>(.*?)</code></td><td><code>(.*?)</code></td>",
        result.markdown.split("trace-gradcheck-table", 1)[1],
    )
    # dX, then the dictionary's entries by key; 'unused' has no gradient and is not nudged
    assert [html.unescape(r[0]) for r in rows] == ["dX", "grads['g']", "grads['b']"]
    k, dy, x = 3.0, np.array([[1.0, 0.5], [-1.0, 2.0]]), np.array([[1.0, -2.0], [0.5, 3.0]])
    assert rows[2][1] == rows[2][2] == format_value(k * dy.sum(axis=0))  # the config was made again: k = 3
    assert rows[1][1] == rows[1][2] == format_value((dy * x).sum(axis=0))


def test_gradcheck_of_a_dictionary_finds_a_wrong_entry(tmp_path):
    result = affine_gradcheck(tmp_path, "test_affine_wrong", "affine_backward_wrong")

    [message] = messages(result)
    assert message.startswith(
        "docs/page.md:14: example 'Affine': gradcheck: grads['b'] from affine.affine_backward_wrong differs from the "
        "central differences of affine.affine_forward by 5 (more than 1e-06): backward [0.0000, 2.5000], "
        "central differences [0.0000, 7.5000]"
    )


def test_an_example_of_the_test_itself_records_only_the_test_and_the_prefetch_asks_for_the_same(tmp_path):
    """Its rows are the test's own locals: nothing the test calls is traced, and the page finds it recorded."""
    root = write_project(tmp_path / "proj")
    text = page("""\
        test: tests/test_ops.py::test_worked_example
        function: tests.test_ops.test_worked_example
        title: The test's own values
        show:
          - {label: Gradient on the input, code: dx}
        """)
    builder = builder_for(root)
    batches = []
    run_child = builder.workers.recorder.child.run
    builder.workers.recorder.child.run = lambda requests: batches.append(list(requests)) or run_child(requests)

    builder.plan_site({"docs/page.md": text})
    builder.await_background()
    result = builder.expand("docs/page.md", text)
    builder.workers.recorder.close()

    assert messages(result) == []
    [[request]] = batches  # one batch, from the prefetch; the page asked for the very same request
    assert request.target_only
    [recording] = builder.workers.recorder._memo.values()
    assert [c.function for c in recording.calls] == ["tests.test_ops.test_worked_example"]
    assert "Gradient on the input" in result.markdown


def test_an_example_with_central_differences_or_of_another_function_records_every_call():
    from docs_hooks.kinds.example import _example_request
    from docs_hooks.run.request import Request

    req = Request("tests/test_ops.py::test_worked_example", "tests.test_ops", "test_worked_example")
    assert _example_request(req, "tests.test_ops.test_worked_example", {}).target_only
    assert not _example_request(req, "ops.layer_norm_backward", {}).target_only
    assert not _example_request(req, "tests.test_ops.test_worked_example", {"gradcheck": "ops.f"}).target_only
    assert not _example_request(req, None, {}).target_only


# ----------------------------------------------------------------- other layouts and test shapes --


LAYERS = """\
import numpy as np


class Layer:
    def __call__(self, X):
        return self.forward(X)


class LayerNorm(Layer):
    def __init__(self, d, eps=1e-5):
        self.gamma = np.ones(d)
        self.eps = eps

    def forward(self, X):
        mu = X.mean(axis=-1, keepdims=True)
        s = 1.0 / np.sqrt(((X - mu) ** 2).mean(axis=-1, keepdims=True) + self.eps)
        Xhat = (X - mu) * s
        self.Xhat, self.s = Xhat, s
        return self.gamma * Xhat

    def backward(self, dY):
        Xhat, s = self.Xhat, self.s
        dXhat = dY * self.gamma
        dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))
        return dX
"""

UNITTEST_TESTS = """\
import unittest

import numpy as np

from layers import LayerNorm


class TestLayerNorm(unittest.TestCase):
    def setUp(self):
        self.norm = LayerNorm(4)

    def test_worked_example(self):
        X = np.array([[1.0, 2.0, 3.0, 6.0]])
        Y = self.norm(X)
        dX = self.norm.backward(np.array([[1.0, 0.0, 0.0, 1.0]]))
        self.assertEqual(dX.shape, X.shape)


class TestPytestStyle:
    def test_worked_example(self):
        norm = LayerNorm(4)
        norm.forward(np.array([[1.0, 2.0, 3.0, 6.0]]))
"""

FLAT = {
    "pyproject.toml": PYPROJECT + 'source_root = "."\ntests_root = "."\n',
    "layers.py": LAYERS,
    "gradcheck.py": GRADCHECK,
    "test_layers.py": UNITTEST_TESTS,
}

LAYER_EXAMPLE = """\
test: test_layers.py::TestLayerNorm::test_worked_example
title: One row through the layer
show:
  - {label: Mean, code: mu}
  - {label: Normalised row, code: Xhat}
"""


def test_a_worked_example_from_a_testcase_method_with_tests_beside_the_code(tmp_path):
    root = write_project(tmp_path / "proj", FLAT)
    result = expand(root, page(LAYER_EXAMPLE, "layers.LayerNorm.forward"))

    assert messages(result) == []
    assert [r[1:] for r in steps(result.markdown)] == [
        ("mu", "[[3.0000]]"),
        ("Xhat", "[[-1.0690, -0.5345, 0.0000, 1.6036]]"),
    ]
    np.testing.assert_allclose(XHAT, [[-1.0690, -0.5345, 0.0, 1.6036]], atol=1e-4)
    assert 'Recorded while <a href="https://example.com/repo/blob/abc123/test_layers.py#L12-L16"' in result.markdown


def test_a_worked_example_from_a_pytest_class_method(tmp_path):
    root = write_project(tmp_path / "proj", FLAT)
    example = LAYER_EXAMPLE.replace("TestLayerNorm::", "TestPytestStyle::")
    result = expand(root, page(example, "layers.LayerNorm.forward"))

    assert messages(result) == []
    assert [r[1:] for r in steps(result.markdown)][0] == ("mu", "[[3.0000]]")


def test_an_unknown_test_method_suggests_the_methods_of_the_file(tmp_path):
    root = write_project(tmp_path / "proj", FLAT)
    example = LAYER_EXAMPLE.replace("TestLayerNorm::test_worked_example", "TestLayerNorm::test_worked")
    result = expand(root, page(example, "layers.LayerNorm.forward"))

    assert messages(result) == [
        "docs/page.md:10: example 'One row through the layer': no test 'TestLayerNorm::test_worked' in "
        "test_layers.py; did you mean 'test_layers.py::TestLayerNorm::test_worked_example'?"
    ]


def test_gradcheck_of_a_layers_backward_nudges_the_input_of_its_forward(tmp_path):
    root = write_project(tmp_path / "proj", FLAT)
    example = """\
    test: test_layers.py::TestLayerNorm::test_worked_example
    title: A worked backward
    show:
      - {label: Gradient on the input, code: dX}
    gradcheck: layers.LayerNorm.forward
    """
    result = expand(root, page(example, "layers.LayerNorm.backward"))

    assert messages(result) == []
    table = re.search(r'<table class="trace-table trace-gradcheck-table">.*?</table>', result.markdown).group(0)
    rows = re.findall(r"<tr><td><code>(.*?)</code></td><td><code>(.*?)</code></td><td><code>(.*?)</code></td>", table)
    expected = S * (DY - DY.mean() - XHAT * (DY * XHAT).mean())  # gamma is 1 here
    shown = np.array2string(np.round(expected, 4) + 0.0, separator=", ", formatter={"float_kind": lambda v: f"{v:.4f}"})
    assert rows == [("dX", shown, shown)]


def test_a_function_with_a_starred_target_is_searched_for_a_subexpression_without_error():
    import ast

    from docs_hooks.kinds.example import _is_subexpression

    node = ast.parse("def f(x):\n    a, *rest = x\n    return a + 1 * 2\n").body[0]
    assert isinstance(node, ast.FunctionDef)

    assert _is_subexpression(node, ast.parse("1 * 2", mode="eval"))
    # Text of the function that it does not compute as one value: every node is looked at, '*rest' too.
    assert not _is_subexpression(node, ast.parse("a + 1", mode="eval"))

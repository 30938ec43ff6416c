"""A page of editable examples for every kernel in docs/assets/kernels.js.

The site's own pages show the worked examples their authors chose. This page
makes sure every browser kernel is exercised through the real widget (inputs,
rows, check line) whatever the pages hold: the generator expands the blocks
below against this repository, exactly as a page would, and the example HTML is
served at ``_widget-fixture/`` beside the built site, with the site's own
stylesheet and script. Each example names the project's worked-example test.
"""

from __future__ import annotations

import json
from pathlib import Path

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build

REPO = Path(__file__).resolve().parents[2]
URL = "_widget-fixture/"

# (function, test, show rows as (label, code[, name]), check line or None)
EXAMPLES = [
    (
        "ops.layer_norm_forward",
        "test_layer_norm_worked_example",
        [
            ("Mean", "mu"),
            ("Squares", "(X - mu) ** 2"),
            ("Variance", "var"),
            ("Under the root", "var + epsilon"),
            ("s", "s"),
            ("Xhat", "Xhat"),
            ("Output", "gamma * Xhat + beta"),
        ],
        "Xhat[0, 3] = (X[0, 3] - mu[0, 0]) * s[0, 0]",
    ),
    (
        "ops.layer_norm_backward",
        "test_layer_norm_worked_example",
        [
            ("Gradient on the output", "dY"),
            ("Cache", "Xhat"),
            ("Cache", "s"),
            ("dXhat", "dXhat = dY * gamma"),
            ("First mean", "dXhat.mean(axis=-1, keepdims=True)", "m1"),
            ("Second mean", "(dXhat * Xhat).mean(axis=-1, keepdims=True)", "m2"),
            ("dX", "dX"),
            ("dgamma", "dgamma = (dY * Xhat).sum(axis=0)"),
            ("dbeta", "dbeta = dY.sum(axis=0)"),
        ],
        "dX[0, 0] = s[0, 0] * (dXhat[0, 0] - m1[0, 0] - Xhat[0, 0] * m2[0, 0])",
    ),
    ("ops.linear_forward", "test_linear_worked_example", [("X W", "X @ W"), ("Y", "Y")], None),
    (
        "ops.linear_backward",
        "test_linear_worked_example",
        [("dX", "dX"), ("dW", "dW"), ("X.T dY", "X.T @ dY"), ("db", "db")],
        None,
    ),
    (
        "ops.gelu_forward",
        "test_gelu_worked_example",
        [("u", "u"), ("t", "t"), ("Half of X", "0.5 * X"), ("Y", "Y")],
        "Y[0, 2] = 0.5 * X[0, 2] * (1 + t[0, 2])",
    ),
    ("ops.gelu_backward", "test_gelu_worked_example", [("du/dX", "du_dX"), ("dY/dX", "dY_dX"), ("dX", "dX")], None),
    (
        "ops.softmax_forward",
        "test_softmax_worked_example",
        [("Shifted", "Z"), ("Exponentials", "E"), ("Row sums", "E.sum(axis=-1, keepdims=True)"), ("P", "P")],
        None,
    ),
    (
        "ops.softmax_backward",
        "test_softmax_worked_example",
        [("Row sums", "(dP * P).sum(axis=-1, keepdims=True)"), ("dX", "dX")],
        None,
    ),
    (
        "ops.cross_entropy_forward",
        "test_cross_entropy_worked_example",
        [
            ("T", "T"),
            ("Shifted", "Z"),
            ("log P", "log_P"),
            ("Picked", "log_P[np.arange(T), targets]"),
            ("Loss", "loss"),
            ("P", "P"),
        ],
        None,
    ),
    (
        "ops.cross_entropy_backward",
        "test_cross_entropy_worked_example",
        [("T", "T"), ("One-hot", "onehot"), ("P - onehot", "P - onehot"), ("dlogits", "dlogits")],
        None,
    ),
]


def page_text() -> str:
    out = ["# Widget fixture\n"]
    for i, (function, test, rows, check) in enumerate(EXAMPLES):
        out.append(f"```trace-entry\nid: fx-{i}\ntitle: {function}\nfunction: {function}\nstatus: illustrative\n```\n")
        body = [f"test: tests/test_ops.py::{test}", f"title: {function} example", "widget: true", "show:"]
        for row in rows:
            body.append(f"  - label: {row[0]}")
            body.append(f"    code: {json.dumps(row[1])}")  # a JSON string is a YAML string
            if len(row) > 2:
                body.append(f"    name: {row[2]}")
        if check:
            body.append(f"check: {json.dumps(check)}")
        out.append("```trace-example\n" + "\n".join(body) + "\n```\n")
    return "\n".join(out)


def example_html() -> str:
    """The expanded page's example blocks (raw HTML: one block each, no blank line inside)."""
    settings = load_settings(REPO)
    build = make_build(settings, coverage=False)
    try:
        result = build.expand("docs/_widget-fixture.md", page_text())
    finally:
        build.close()
    if result.problems:
        raise AssertionError("the widget fixture page does not expand:\n" + "\n".join(map(str, result.problems)))
    blocks = [
        chunk for chunk in result.markdown.split("\n\n") if chunk.lstrip().startswith('<div class="trace-example"')
    ]
    assert len(blocks) == len(EXAMPLES), f"expected {len(EXAMPLES)} example blocks, found {len(blocks)}"
    return "\n".join(blocks)


def write(site_root: Path) -> Path:
    """Write the fixture page into a built site; it links the site's CSS and script like a page does."""
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Widget fixture</title>
<link rel="stylesheet" href="../assets/docs_hooks/trace.css">
</head><body><article class="md-content md-typeset">
{example_html()}
</article>
<script src="../assets/kernels.js"></script>
<script src="../assets/docs_hooks/trace-widgets.js"></script>
</body></html>
"""
    path = site_root / URL / "index.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path

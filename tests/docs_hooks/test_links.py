"""Tests of docs_hooks.links: where the rendered pages point (source pages, GitHub, other pages of the
site, tests).
"""

from __future__ import annotations

from .conftest import expand_page


def test_inline_reference_renders_as_a_permanent_link(make_project):
    root = make_project({"docs/page.md": "Built by [[model.build: cfg = Config(]] here.\n"})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == (
        'Built by <a href="../source/src/model.py/#L26" title="model.build">'
        "<code>model.py:26-29</code></a> here.\n"
    )

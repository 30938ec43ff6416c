"""Tests of docs_hooks.expand: the Builder walks a page through the stages, once per text of the page.
"""

from __future__ import annotations

from .conftest import page, page_problems


def test_a_broken_entry_is_reported_once(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forwrd
        status: implemented
        ```

        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    messages = page_problems(root)

    assert not [m for m in messages if "outside an entry" in m], messages

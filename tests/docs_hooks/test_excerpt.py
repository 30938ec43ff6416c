"""Tests of docs_hooks.kinds.excerpt: the trace-excerpt block shows the referenced statements with their
real line numbers, and says what is wrong with its fields.
"""

from __future__ import annotations

from .conftest import expand_page, page, page_problems


def test_excerpt_shows_the_statement_with_real_numbers_and_a_link(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        ```trace-excerpt
        code:
          - "ops.layer_norm_forward: var = ((X - mu) ** 2).mean("
          - "model.build: cfg = Config("
        context: 1
        ```
        """)
        }
    )

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == (
        '<div class="trace-listing-head"><code>ops.py</code> <code>layer_norm_forward</code> '
        '<a href="../source/src/ops.py/#L9">Source</a> '
        '<a href="https://example.com/repo/blob/abc123/src/ops.py#L9-L12">GitHub</a></div>\n\n'
        '``` python linenums="8" hl_lines="2 3 4 5"\n'
        "    mu = X.mean(axis=-1, keepdims=True)\n"
        "    var = ((X - mu) ** 2).mean(\n"
        "        axis=-1,\n"
        "        keepdims=True,\n"
        "    )\n"
        "    s = 1.0 / np.sqrt(var + epsilon)  # inverse standard deviation\n"
        "```\n"
        "\n"
        '<div class="trace-listing-head"><code>model.py</code> <code>build</code> '
        '<a href="../source/src/model.py/#L26">Source</a> '
        '<a href="https://example.com/repo/blob/abc123/src/model.py#L26-L29">GitHub</a></div>\n\n'
        '``` python linenums="25" hl_lines="2 3 4 5"\n'
        "def build(d):\n"
        "    cfg = Config(\n"
        "        d=d,\n"
        "        eps=1e-5,\n"
        "    )\n"
        "    return Block(cfg)\n"
        "```\n"
        "\n"
    )


def test_excerpt_context_must_be_a_number(make_project):
    root = make_project(
        {"docs/page.md": "# T\n\n```trace-excerpt\ncode: 'ops.layer_norm_forward: mu = X'\ncontext: one\n```\n"}
    )

    assert page_problems(root) == [
        "docs/page.md:3: field 'context' of trace-excerpt must be a whole number of lines, 0 or more, not 'one'"
    ]


def test_negative_excerpt_context_is_an_error(make_project):
    root = make_project(
        {"docs/page.md": "```trace-excerpt\ncode: 'ops.layer_norm_forward: mu = X'\ncontext: -1\n```\n"}
    )

    messages = page_problems(root)

    assert len(messages) == 1 and "context" in messages[0]

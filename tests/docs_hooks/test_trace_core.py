"""The traceability core: every kind of broken reference, and the review lock.

Each test writes a tiny project (see conftest.py: ``src/ops.py`` holds a layer
norm, lines 6-15 forward and 18-27 backward), a page, and asserts the exact
message the author sees, page and line included.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from docs_hooks.anchors import parse_ref, resolve
from docs_hooks.blocks import BLOCK_KINDS
from docs_hooks.errors import TraceError
from docs_hooks.project import index_for
from docs_hooks.settings import KNOWN_KEYS, load_settings

from .conftest import OPS, expand_page, page

FWD_ENTRY = """\
```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: implemented
```
"""

BWD_ENTRY = """\
```trace-entry
title: Layer norm backward
function: ops.layer_norm_backward
status: implemented
```
"""

LOCK = "docs/trace.lock"


def page_problems(root) -> list[str]:
    """The problems of docs/page.md itself (not the lock comparison)."""
    return [str(p) for p in expand_page(root).problems]


# ------------------------------------------------------------------ error kinds


def test_missing_function_names_the_entry_and_suggests_close_names(make_project):
    root = make_project({"docs/page.md": page("""
        # Layer norm

        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forwrd
        status: implemented
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:3: entry 'Layer norm forward': no function 'ops.layer_norm_forwrd' in the code index; "
        "did you mean 'ops.layer_norm_forward' or 'ops.layer_norm_backward'? "
        "Use the dotted name: module, then class if any, then function."
    ]


def test_missing_function_in_an_inline_reference(make_project):
    root = make_project({"docs/page.md": "See [[model.biuld: cfg = Config(]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'model.biuld: cfg = Config(': no function 'model.biuld' in the code index; "
        "did you mean 'model.build' or 'model.backward_all' or 'model.Block.forward'? Use the dotted name: module, then class if any, then function."
    ]


def test_missing_statement_names_the_function_span_and_the_closest_candidate(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\nThe mean is [[ops.layer_norm_forward: mu = X.sum()]].\n"})

    assert page_problems(root) == [
        "docs/page.md:7: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; "
        "did you mean 'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code."
    ]


def test_missing_statement_in_an_equation_points_at_its_code_field(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-var
        title: Variance of a row
        tex: \\sigma^2 = \\frac{1}{d} \\sum_i (X_i - \\mu)^2
        code: var = X.var(axis=-1)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:11: reference 'var = X.var(axis=-1)': no statement of ops.layer_norm_forward (ops.py:6-15) "
        "matches 'var = X.var(axis=-1)'; did you mean 'var = ((X - mu) ** 2).mean(' (ops.py:9)? "
        "Copy the statement's text from the code."
    ]


def test_ambiguous_statement_names_every_line_that_matches(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\nSee [[ops.layer_norm_forward: keepdims=True]].\n"})

    assert page_problems(root) == [
        "docs/page.md:7: reference 'ops.layer_norm_forward: keepdims=True': 'keepdims=True' matches 2 statements "
        "of ops.layer_norm_forward (ops.py:8, ops.py:9); quote more of the statement so that exactly one matches."
    ]


def test_a_statement_text_equal_to_one_statement_wins_over_longer_ones(make_project):
    # `b = a` is all of line 2 and a part of line 3: the whole statement wins.
    root = make_project({
        "src/extra.py": "def f(a):\n    b = a\n    c = b = a\n    return c\n",
        "docs/page.md": "See [[extra.f: b = a]].\n",
    })

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "<code>extra.py:2</code>" in expanded.markdown


def test_bare_statement_outside_an_entry_asks_for_the_function(make_project):
    root = make_project({"docs/page.md": "See [[mu = X.mean(axis=-1, keepdims=True)]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'mu = X.mean(axis=-1, keepdims=True)': names no function, "
        "and no entry is open; write 'module.function: mu = X.mean(axis=-1, keepdims=True)'"
    ]


def test_reference_with_only_a_comment_after_the_colon(make_project):
    root = make_project({"docs/page.md": "See [[ops.layer_norm_forward: # the mean]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'ops.layer_norm_forward: # the mean': "
        "has no code after the ':'; write a statement from the function"
    ]


def test_literal_line_reference_in_prose(make_project):
    root = make_project({"docs/page.md": page("""
        # Layer norm

        The mean is computed at `ops.py:43`, the variance in src/ops.py:9-12.
        Tests are named like tests/test_ops.py::test_rows_have_zero_mean, which is fine.
        """)})

    assert page_problems(root) == [
        "docs/page.md:3: literal line reference 'ops.py:43'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]].",
        "docs/page.md:3: literal line reference 'src/ops.py:9-12'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]].",
    ]


def test_unknown_block_suggests_the_close_kind(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equasion
        id: ln-mean
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:7: unknown block 'trace-equasion'; did you mean 'trace-equation'? Known blocks: "
        + ", ".join(f"trace-{kind}" for kind in BLOCK_KINDS) + "."
    ]
    assert {"entry", "equation", "excerpt"} <= set(BLOCK_KINDS)


def test_unknown_field_is_reported_on_its_own_line(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        cod: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:11: unknown field 'cod' in block 'trace-equation'; did you mean 'code'? "
        "Fields of trace-equation: id, title, tex, code, role."
    ]


def test_missing_field_is_reported_at_the_fence(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:7: block 'trace-equation' is missing the field 'tex' (the equation in TeX)."
    ]


def test_malformed_yaml_points_at_the_bad_line_inside_the_block(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        code: ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:11: block 'trace-equation' is not valid YAML: mapping values are not allowed in this context. "
        "Quote values that contain ': ' or start with '-', '{', '[' or '*'."
    ]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("status: [implemented]",
         "docs/page.md:4: field 'status' of block 'trace-entry' must be one of implemented, derived, "
         "illustrative, not list ['implemented']"),
        ("status: done",
         "docs/page.md:4: field 'status' of block 'trace-entry' must be one of implemented, derived, "
         "illustrative, not str 'done'"),
        ("status: implemented\nspec: {eq: 1}",
         "docs/page.md:5: field 'spec' of block 'trace-entry' must be a text or a list of texts, "
         "not dict {'eq': 1}"),
        ("status: implemented\nnote: [a, [b]]",
         "docs/page.md:5: field 'note' of block 'trace-entry' must be text, not list ['a', ['b']]"),
    ],
)
def test_wrong_field_type_names_field_expected_and_found(make_project, field, message):
    root = make_project({"docs/page.md": FWD_ENTRY.replace("status: implemented", field)})

    assert page_problems(root) == [message]


def test_equation_outside_an_entry(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:1: trace-equation outside an entry; put a trace-entry block above it"
    ]


def test_implemented_entry_without_a_test_is_an_error(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-entry
        title: Build the model
        function: model.build
        status: implemented
        ```
        """)})

    assert page_problems(root) == [
        "docs/page.md:1: entry 'Build the model' is marked implemented, but no test calls model.build; "
        "add a test or change its status"
    ]


def test_unclosed_block_is_reported(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY.rstrip("`\n") + "\n"})

    assert page_problems(root) == [
        "docs/page.md:1: block 'trace-entry' is never closed; end it with ```"
    ]


def test_check_prints_each_problem_and_a_count_and_exits_1(make_project, check):
    root = make_project({"docs/page.md": "# Layer norm\n\nThe mean: [[ops.layer_norm_forward: mu = X.sum()]].\n"})

    code, err, out = check(root)

    assert (code, out) == (1, "")
    assert err == [
        "docs/page.md:3: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; "
        "did you mean 'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code.",
        "docs_hooks check: 1 problem(s)",
    ]


def test_unknown_setting_is_named(make_project, check):
    root = make_project({"pyproject.toml": '[tool.docs_hooks]\nrepo = "https://example.com/repo"\n'})

    code, err, _ = check(root)

    assert code == 2
    assert err == [
        "error: pyproject.toml: unknown setting 'repo' in [tool.docs_hooks]; known settings: "
        + ", ".join(sorted(KNOWN_KEYS))
    ]
    assert "repo_url" in KNOWN_KEYS


def test_syntax_error_in_the_source_names_file_and_line(make_project, check):
    root = make_project({"src/broken.py": "def f(:\n    pass\n", "docs/page.md": "# Nothing\n"})

    code, err, _ = check(root)

    assert code == 2
    assert err == ["error: src/broken.py:1: cannot parse: invalid syntax; fix the syntax error"]


def test_excerpt_context_must_be_a_number(make_project):
    root = make_project({"docs/page.md": "# T\n\n```trace-excerpt\ncode: 'ops.layer_norm_forward: mu = X'\ncontext: one\n```\n"})

    assert page_problems(root) == ["docs/page.md:3: field 'context' of trace-excerpt must be a whole number of lines, 0 or more, not 'one'"]


# ------------------------------------------------------------------ statement spans and matching


def resolved_label(root, ref: str, scope: list[str] | None = None) -> str:
    """The ``file.py:A-B`` label a reference resolves to, straight from the core."""
    settings = load_settings(root)
    return resolve(index_for(settings), parse_ref(ref), scope).label


@pytest.mark.parametrize(
    ("ref", "label"),
    [
        # one line
        ("ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)", "ops.py:8"),
        # a statement over several lines, quoted by its first line or whole
        ("ops.layer_norm_forward: var = ((X - mu) ** 2).mean(", "ops.py:9-12"),
        ("ops.layer_norm_forward: var = ((X - mu) ** 2).mean(axis=-1, keepdims=True,)", "ops.py:9-12"),
        ("ops.layer_norm_backward: - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))", "ops.py:25-26"),
        # a compound statement's header is a statement of its own, its body another
        ("ops.layer_norm_backward: for row in range(dY.shape[0]):", "ops.py:23"),
        ("ops.layer_norm_backward: for row in range(dY.shape[0])", "ops.py:23"),
        ("ops.layer_norm_backward: dXhat[row] = dXhat[row] - dXhat[row].mean()", "ops.py:24"),
        # comments and spacing do not matter
        ("ops.layer_norm_forward: s=1.0/np.sqrt( var+epsilon )", "ops.py:13"),
        ("ops.layer_norm_forward: s = 1.0 / np.sqrt(var + epsilon)  # another comment", "ops.py:13"),
        # a leading part of a statement
        ("model.build: cfg = Config(", "model.py:26-29"),
        ("ops.layer_norm_forward: return gamma * Xhat", "ops.py:15"),
        # a method, by module.Class.method
        ("model.Block.norm: return layer_norm_forward(", "model.py:18"),
        # the whole function
        ("ops.layer_norm_backward", "ops.py:18-27"),
        # a test function, by its dotted name from the project root
        ("tests.test_ops.test_rows_have_zero_mean: Y, _ = layer_norm_forward(", "tests/test_ops.py:8"),
    ],
)
def test_reference_resolves_to_its_statement_span(make_project, ref, label):
    assert resolved_label(make_project(), ref) == label


def test_inline_reference_renders_as_a_permanent_link(make_project):
    root = make_project({"docs/page.md": "Built by [[model.build: cfg = Config(]] here.\n"})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == (
        'Built by <a href="../source/src/model.py/#L26" title="model.build">'
        "<code>model.py:26-29</code></a> here.\n"
    )


def test_the_docstring_is_not_a_statement(make_project):
    with pytest.raises(TraceError) as caught:
        resolved_label(make_project(), 'ops.layer_norm_forward: """Normalise each row of X, then scale and shift."""')

    assert str(caught.value) == (
        "no statement of ops.layer_norm_forward (ops.py:6-15) matches "
        "'\"\"\"Normalise each row of X, then scale and shift.\"\"\"'. Copy the statement's text from the code."
    )


def test_bare_statement_inside_an_entry_is_looked_up_in_its_functions(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-entry
        title: Layer norm
        function: [ops.layer_norm_forward, ops.layer_norm_backward]
        status: implemented
        ```

        Forward [[Xhat = (X - mu) * s]], backward [[dgamma = (dY * Xhat).sum(axis=0)]].
        """)})

    expanded = expand_page(root)

    assert [str(p) for p in expanded.problems] == []
    assert "<code>ops.py:14</code>" in expanded.markdown
    assert "<code>ops.py:21</code>" in expanded.markdown


def test_inline_code_and_code_fences_are_left_alone(make_project):
    text = page("""
        Write `[[ops.layer_norm_forward: mu = X.sum()]]` to reference a statement.

        ````markdown
        See [[ops.nowhere: x]].
        ````
        """)
    root = make_project({"docs/page.md": text})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert expanded.markdown == text


# ------------------------------------------------------------------ call sites


def connection_rows(markdown: str, section: str = "Code and math connection") -> list[str]:
    """The rows of a generated table, as 'cell | cell | ...' with tags removed."""
    start = markdown.index(f"### {section}")
    table = markdown[start : markdown.index("</table>", start)]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table)[1:]:
        cells = re.findall(r"<td>(.*?)</td>", row)
        rows.append(" | ".join(html.unescape(re.sub(r"<[^>]+>", "", c)) for c in cells))
    return rows


def test_calls_and_tests_rows_for_both_import_styles(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + BWD_ENTRY})

    markdown = expand_page(root).markdown
    fwd, bwd = markdown.split("## Layer norm backward")

    # `from ops import layer_norm_forward`, called inside a method; comments kept
    assert connection_rows(fwd) == [
        "Layer norm forward | Calls it | model.py:18 | "
        "return layer_norm_forward(X, gamma, beta, self.cfg.eps)  # pre-norm",
        "Layer norm forward | Tests it | tests/test_ops.py:8 | "
        "Y, _ = layer_norm_forward(X, np.ones(4), np.zeros(4))  # the worked example",
        "Layer norm forward | Tests it | tests/test_ops.py:13 | "
        "_, cache = layer_norm_forward(np.eye(4), np.ones(4), np.zeros(4))",
    ]
    # `import ops` then `ops.layer_norm_backward(...)` over three lines: the whole statement,
    # its trailing comment on the last line
    assert connection_rows(bwd) == [
        "Layer norm backward | Calls it | model.py:34 | grads = ops.layer_norm_backward(",
        "Layer norm backward | Calls it | model.py:35 | dY, cache, gamma,",
        "Layer norm backward | Calls it | model.py:36 | )  # through the module name",
        "Layer norm backward | Tests it | tests/test_ops.py:14 | "
        "grads = layer_norm_backward(np.ones((4, 4)), cache, np.ones(4))",
    ]


def test_where_is_it_used_lists_callers_direct_tests_and_tests_through_others(make_project):
    root = make_project({"docs/page.md": BWD_ENTRY})

    assert connection_rows(expand_page(root).markdown, "Where is it used?") == [
        "Source | ops.py, lines 18-27, layer_norm_backward",
        "Called by | model.backward_all",
        "Tested by | tests.test_ops.test_backward_returns_three_gradients",
        # folded: the count shows, the names (by test file) open on a click
        "Reached by tests through other functions | 1 testtests/test_model.py: test_backward_through_model",
        "Status | Implemented",
    ]


def test_reached_tests_are_folded_under_their_count_and_the_direct_tests_stay_visible(make_project):
    root = make_project({"docs/page.md": BWD_ENTRY})

    markdown = expand_page(root).markdown

    assert ('<tr><td>Tested by</td><td><a href="https://example.com/repo/blob/abc123/tests/test_ops.py#L12-L15">'
            "<code>tests.test_ops.test_backward_returns_three_gradients</code></a></td></tr>") in markdown
    assert ('<tr><td>Reached by tests through other functions</td><td><details class="trace-fold">'
            "<summary>1 test</summary>"
            '<a href="https://example.com/repo/blob/abc123/tests/test_model.py"><code>tests/test_model.py</code></a>: '
            "<code>test_backward_through_model</code></details></td></tr>") in markdown
    assert ('<p class="trace-facts-note">"Tested by" lists the tests that call it; "Reached by", those that call '
            "it only through other functions.</p>") in markdown


def test_a_derivation_connects_only_the_lines_it_explains(make_project):
    derivation = page("""
        ```trace-entry
        title: Deriving the gradient
        function: ops.layer_norm_backward
        status: derived
        ```

        ```trace-equation
        id: d-dx
        title: The gradient on the input
        tex: dX = s\\,(d\\hat{X} - \\overline{d\\hat{X}})
        code: dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)
        ```
        """)
    root = make_project({"docs/page.md": derivation})

    expanded = expand_page(root)

    assert expanded.problems == []
    # no "Calls it" or "Tests it" rows: the backward's own entry lists those
    assert connection_rows(expanded.markdown) == [
        "The gradient on the input | Computes it | ops.py:25 | dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True)",
        "The gradient on the input | Computes it | ops.py:26 | - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))",
    ]


def test_method_called_through_self_is_a_call_site(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-entry
        title: Norm of a block
        function: model.Block.norm
        status: illustrative
        ```
        """)})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert connection_rows(expanded.markdown) == [
        "Norm of a block | Calls it | model.py:21 | Y, _ = self.norm(X, gamma, beta)",
    ]
    assert connection_rows(expanded.markdown, "Where is it used?")[1:3] == [  # no spec configured: no PDF row
        "Called by | model.Block.forward",
        "Tested by | no test calls it directly",
    ]


def test_class_called_like_a_function_is_a_call_of_its_constructor(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-entry
        title: Config
        function: model.Config.__init__
        status: illustrative
        ```
        """)})

    assert connection_rows(expand_page(root).markdown) == [
        "Config | Calls it | model.py:26 | cfg = Config(",
        "Config | Calls it | model.py:27 | d=d,",
        "Config | Calls it | model.py:28 | eps=1e-5,",
        "Config | Calls it | model.py:29 | )",
    ]


# ------------------------------------------------------------------ moved is fine, changed is not

MEAN_PAGE = FWD_ENTRY + "\nThe mean is [[ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)]].\n"


def test_relock_then_check_passes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})

    _, out, _ = relock(root)
    code, err, out_check = check(root)

    assert out == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"
    assert (code, err) == (0, [])
    assert out_check == "docs_hooks check: every reference resolves and matches the review lock\n"
    lock = json.loads((root / LOCK).read_text())
    assert lock["version"] == 1
    entries = lock["pages"]["docs/page.md"]
    assert {k: v["code"] for k, v in entries.items()} == {
        "entry layer-norm-forward | ops.layer_norm_forward": "\n".join(
            line.strip() for line in OPS.split("\n\n\n")[1].splitlines()),
        "inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)": "mu = X.mean(axis=-1, keepdims=True)",
    }


def test_check_without_a_lock_lists_what_is_not_reviewed(make_project, check):
    root = make_project({"docs/page.md": MEAN_PAGE})

    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: not reviewed yet "
        "(def layer_norm_forward(X, gamma, beta, epsilon=1e-5):); review the page, then run 'python -m docs_hooks relock' "
        "to record it in docs/trace.lock",
        "docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): not reviewed yet "
        "(mu = X.mean(axis=-1, keepdims=True)); review the page, then run 'python -m docs_hooks relock' to record it in "
        "docs/trace.lock",
        "docs_hooks check: 2 problem(s)",
    ]


def test_code_that_moves_shows_new_numbers_and_still_passes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)
    before = expand_page(root).markdown
    assert '<a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward">' \
           "<code>ops.py:8</code></a>" in before

    moved = OPS.replace("\n\ndef layer_norm_forward", "\n\ndef helper():\n    return 1\n\n\ndef layer_norm_forward")
    (root / "src/ops.py").write_text(moved)
    after = expand_page(root).markdown

    assert '<a href="../source/src/ops.py/#L12" title="ops.layer_norm_forward">' \
           "<code>ops.py:12</code></a>" in after
    assert "<code>ops.py:8</code>" not in after
    assert "#L10-L19" in after  # the listing's GitHub link follows too
    assert '``` python linenums="10"' in after
    assert check(root)[:2] == (0, [])


def test_comment_and_spacing_changes_are_not_changes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    edited = OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis = -1,keepdims=True)  # the mean")
    (root / "src/ops.py").write_text(edited)

    assert check(root)[:2] == (0, [])


def test_changed_statement_fails_until_relock(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    edited = OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) * 1.0")
    (root / "src/ops.py").write_text(edited)
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: changed since reviewed. "
        "Old text: 'mu = X.mean(axis=-1, keepdims=True)'. New text: 'mu = X.mean(axis=-1, keepdims=True) * 1.0'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): changed since "
        "reviewed. Old text: 'mu = X.mean(axis=-1, keepdims=True)'. "
        "New text: 'mu = X.mean(axis=-1, keepdims=True) * 1.0'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 2 problem(s)",
    ]

    _, out, _ = relock(root)
    assert out == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"
    assert check(root)[:2] == (0, [])


def test_changed_signature_is_a_change_of_the_entry(make_project, relock, check):
    root = make_project({"docs/page.md": FWD_ENTRY})
    relock(root)

    (root / "src/ops.py").write_text(OPS.replace("epsilon=1e-5):", "epsilon=1e-6):"))
    code, err, _ = check(root)

    assert code == 1
    assert err[0] == (
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: changed since reviewed. "
        "Old text: 'def layer_norm_forward(X, gamma, beta, epsilon=1e-5):'. "
        "New text: 'def layer_norm_forward(X, gamma, beta, epsilon=1e-6):'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'"
    )


def test_removed_statement_fails_and_quotes_the_reviewed_text(make_project, relock, check):
    root = make_project({"docs/page.md": BWD_ENTRY + "\nThe shift: [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]].\n"})
    relock(root)

    (root / "src/ops.py").write_text(OPS.replace("    dbeta = dY.sum(axis=0)\n", ""))
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:7: reference 'ops.layer_norm_backward: dbeta = dY.sum(axis=0)': no statement of "
        "ops.layer_norm_backward (ops.py:18-26) matches 'dbeta = dY.sum(axis=0)'; did you mean "
        "'dgamma = (dY * Xhat).sum(axis=0)' (ops.py:21) or 'dXhat = dY * gamma' (ops.py:20)? "
        "Copy the statement's text from the code.",
        "docs/page.md:1: entry layer-norm-backward | ops.layer_norm_backward: changed since reviewed. "
        "Old text: 'dbeta = dY.sum(axis=0)'. New text: ''. Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/page.md:7: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): the reviewed code is gone. "
        "It was: 'dbeta = dY.sum(axis=0)'. Point the reference at the code that replaced it, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 3 problem(s)",
    ]


def test_removed_function_fails(make_project, relock, check):
    root = make_project({"docs/page.md": "See [[model.backward_all: grads = ops.layer_norm_backward(]].\n"})
    relock(root)

    (root / "src/model.py").write_text((root / "src/model.py").read_text().split("\n\ndef backward_all")[0] + "\n")
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: reference 'model.backward_all: grads = ops.layer_norm_backward(': no function "
        "'model.backward_all' in the code index; did you mean 'model.Block.forward' or "
        "'model.build' or 'model.Block.norm'? Use the dotted name: module, then class if any, then function.",
        "docs/page.md:1: inline | model.backward_all: grads = ops.layer_norm_backward(: the reviewed code is gone. "
        "It was: 'grads = ops.layer_norm_backward(\\ndY, cache, gamma,\\n)  # through the module name'. "
        "Point the reference at the code that replaced it, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 2 problem(s)",
    ]


def test_reference_dropped_from_the_page_is_reported_until_relock(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    (root / "docs/page.md").write_text(FWD_ENTRY)
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): docs/trace.lock "
        "records this reference but the page no longer makes it; run 'python -m docs_hooks relock' to drop it",
        "docs_hooks check: 1 problem(s)",
    ]
    _, out, _ = relock(root)
    assert out == "relock: 1 reference(s) recorded in docs/trace.lock (0 new or changed, 1 dropped)\n"
    assert check(root)[:2] == (0, [])


# ------------------------------------------------------------------ relock refuses, lock corruption


def test_relock_refuses_a_page_with_a_problem_and_keeps_the_lock_byte_for_byte(make_project, relock):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)
    before = (root / LOCK).read_bytes()

    (root / "docs/page.md").write_text(MEAN_PAGE + "\nAnd [[ops.layer_norm_forward: keepdims=True]].\n")
    (root / "src/ops.py").write_text(OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) + 0"))
    _, out, err = relock(root, expect=1)

    assert out == ""
    assert err.splitlines() == [
        "docs/page.md:9: reference 'ops.layer_norm_forward: keepdims=True': 'keepdims=True' matches 2 statements "
        "of ops.layer_norm_forward (ops.py:8, ops.py:9); quote more of the statement so that exactly one matches.",
        "relock: 1 problem(s) in the pages; the lock was not changed. Fix them, then run relock again.",
    ]
    assert (root / LOCK).read_bytes() == before
    assert sorted(p.name for p in (root / "docs").iterdir()) == ["page.md", "trace.lock"]  # no temp file left


def test_corrupt_lock_is_named_in_the_error(make_project, check):
    root = make_project({"docs/page.md": MEAN_PAGE, LOCK: '{"version": 1, "pages": {\n'})

    code, err, _ = check(root)

    assert code == 2
    assert err == [
        f"error: {LOCK}:2: the review lock is not valid JSON (Expecting property name enclosed in double "
        "quotes); restore it from git, then run 'python -m docs_hooks relock'"
    ]


@pytest.mark.parametrize("text", ["[]\n", '{"version": 1, "pages": {"docs/page.md": {"inline | x": {"code": "x"}}}}\n'])
def test_lock_with_the_wrong_shape_is_named_in_the_error(make_project, check, text):
    root = make_project({"docs/page.md": MEAN_PAGE, LOCK: text})

    code, err, _ = check(root)

    assert code == 2
    assert len(err) == 1 and err[0].startswith("error: ") and "trace.lock" in err[0]


# ------------------------------------------------------------------ excerpts


def test_excerpt_shows_the_statement_with_real_numbers_and_a_link(make_project):
    root = make_project({"docs/page.md": page("""
        ```trace-excerpt
        code:
          - "ops.layer_norm_forward: var = ((X - mu) ** 2).mean("
          - "model.build: cfg = Config("
        context: 1
        ```
        """)})

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


# ------------------------------------------------------------------ bugs found and fixed


@pytest.mark.parametrize(("ref", "label"), [("extra.total: t += x", "extra.py:3"), ("extra.total: b = 2", "extra.py:4")])
def test_reference_into_a_line_holding_two_statements(make_project, ref, label):
    root = make_project({"src/extra.py": "def total(xs):\n    t = 0\n    for x in xs: t += x\n    a = 1; b = 2\n    return t\n"})

    assert resolved_label(root, ref) == label


def test_inline_reference_to_a_statement_with_indexing(make_project):
    root = make_project({"docs/page.md": "Loop [[ops.layer_norm_backward: for row in range(dY.shape[0]):]].\n"})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "<code>ops.py:23</code>" in expanded.markdown


def test_check_works_in_a_project_under_a_dotted_folder(make_project, tmp_path, check):
    root = make_project({"docs/page.md": "See [[ops.nowhere]].\n"}, root=tmp_path / ".work" / "proj")

    assert check(root)[0] == 1


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


def test_duplicate_equation_id_is_an_error(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        ```trace-equation
        id: ln-mean
        title: Normalised row
        tex: \\hat{x}
        code: Xhat = (X - mu) * s
        ```
        """)})

    messages = page_problems(root)

    assert len(messages) == 1 and messages[0].startswith("docs/page.md:15: ") and "ln-mean" in messages[0]


def test_literal_line_reference_in_a_block_field(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY.replace("status: implemented", "status: implemented\nnote: see ops.py:8")})

    assert page_problems(root) == [
        "docs/page.md:5: literal line reference 'ops.py:8'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]]."
    ]


def test_negative_excerpt_context_is_an_error(make_project):
    root = make_project({"docs/page.md": "```trace-excerpt\ncode: 'ops.layer_norm_forward: mu = X'\ncontext: -1\n```\n"})

    messages = page_problems(root)

    assert len(messages) == 1 and "context" in messages[0]


def test_call_through_an_import_inside_the_function_is_a_call_site(make_project):
    root = make_project({"src/user.py": "def b(X):\n    from ops import layer_norm_backward\n    return layer_norm_backward(X, None, 1)\n"})

    callers = [(s.caller, s.line) for s in index_for(load_settings(root)).calls_to("ops.layer_norm_backward")]

    assert ("user.b", 3) in callers


def test_tests_in_a_nested_tests_root_are_named_from_the_project_root(make_project):
    root = make_project({
        "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\ntests_root = "tests/unit"\n',
        "tests/unit/test_x.py": "from ops import layer_norm_forward\n\n\ndef test_x():\n    layer_norm_forward(1, 1, 0)\n",
    })

    tests = {f.name: f.display_path for f in index_for(load_settings(root)).functions.values() if f.is_test}

    assert tests == {"tests.unit.test_x.test_x": "tests/unit/test_x.py"}


def test_inline_math_that_does_not_close_on_its_line_is_an_error(make_project):
    root = make_project({"docs/page.md": "The mean $\\mu =\n\\frac{1}{d}$ of a row.\n"})

    assert page_problems(root) == [
        "docs/page.md:1: a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
        "(escape a literal dollar as \\$)",
        "docs/page.md:2: a '$' that opens no formula closed on this line; write inline math as $...$ on one line "
        "(escape a literal dollar as \\$)",
    ]


def test_method_called_through_an_instance_is_a_call_site(make_project):
    root = make_project({"src/opt.py": (
        "class Stepper:\n"
        "    def __init__(self, lr):\n"
        "        self.lr = lr\n"
        "\n"
        "    def step(self, x):\n"
        "        return x - self.lr\n"
        "\n"
        "\n"
        "def train(x):\n"
        "    stepper = Stepper(0.1)\n"
        "    return stepper.step(x)  # one update\n"
    )})

    index = index_for(load_settings(root))

    assert [(s.caller, s.line, s.statement.text) for s in index.calls_to("opt.Stepper.step")] == [
        ("opt.train", 11, "return stepper.step(x)  # one update")
    ]
    assert [(s.caller, s.line) for s in index.calls_to("opt.Stepper.__init__")] == [("opt.train", 10)]


def test_the_def_line_can_be_referenced_for_a_default_value(make_project):
    assert resolved_label(make_project(), "ops.layer_norm_forward: def layer_norm_forward(X, gamma, beta, epsilon=1e-5):") == "ops.py:6"


def test_a_formula_katex_cannot_render_fails_with_page_and_line(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        tex: \\frac{1}{d
        code: mu = X.mean(axis=-1, keepdims=True)
        ```

        Inline math that is fine, $\\mu_t$, and some that is not, $\\sqrt{$.
        """)})

    messages = page_problems(root)

    assert len(messages) == 2
    assert messages[0].startswith("docs/page.md:10: KaTeX cannot render '\\\\frac{1}{d': ")
    assert messages[1].startswith("docs/page.md:14: KaTeX cannot render '\\\\sqrt{': ")
    assert all(m.endswith("; fix the TeX") for m in messages)


def test_math_is_rendered_to_html_at_build_time(make_project):
    root = make_project({"docs/page.md": "The mean $\\mu_t$ of a row.\n"})

    markdown = expand_page(root).markdown

    assert '<span class="katex">' in markdown and "$" not in markdown


# ------------------------------------------------------------------ equation roles

DERIVATION_ENTRY = """\
```trace-entry
title: Deriving the backward formula
function: [ops.layer_norm_forward, ops.layer_norm_backward]
status: derived
```

```trace-symbols
rows:
  - {symbol: '\\mu', meaning: Mean of each row, code: mu}
  - {symbol: '\\delta_{ij}', meaning: "1 when i equals j, otherwise 0", code: none, shape: scalar}
```
"""

LN_STEP2 = """\
```trace-equation
id: ln-step2
title: "Step 2: the derivative of the mean"
tex: \\frac{\\partial \\mu_t}{\\partial X_{tj}} = \\frac{1}{d}
code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
```
"""


def role_problems(root) -> list[str]:
    """The page's problems about equation roles (a trace-symbols table has others in a project without a model run)."""
    return [m for m in page_problems(root) if "role:" in m]


def test_a_derivation_step_shown_as_computed_by_the_line_it_explains_fails(make_project):
    root = make_project({"docs/page.md": DERIVATION_ENTRY + "\n" + LN_STEP2})

    assert role_problems(root) == [
        "docs/page.md:13: equation 'ln-step2' is shown as computed by its code (role: computes, the default), but its "
        "left-hand side \\frac{\\partial \\mu_t}{\\partial X_{tj}} is an expression (a derivative, a sum, a function "
        "applied), not a symbol of this entry's trace-symbols table, so no statement can assign it; add a row naming "
        "it in the code to trace-symbols, or declare 'role: derived' if the equation is worked out from these lines, "
        "or 'role: contrast' if the code does something else there; or point 'code:' at the statement that assigns it"
    ]


def test_a_derivation_step_declared_derived_passes_and_says_so(make_project):
    root = make_project({"docs/page.md": DERIVATION_ENTRY + "\n" + LN_STEP2.replace("id: ln-step2\n", "id: ln-step2\nrole: derived\n")})

    result = expand_page(root)

    assert not [str(p) for p in result.problems if "role:" in str(p)]
    assert '<p class="trace-eq-code">Derived from <a href="../source/src/ops.py/#L8"' in result.markdown
    assert "Computed at" not in result.markdown
    assert (result.markdown.count('<td><a href="#eq-ln-step2">Step 2: the derivative of the mean</a></td>'
                                  "<td>Derived from</td>") == 1)
    implemented_in = result.markdown.split("{#deriving-the-backward-formula-implemented-in}", 1)[1]
    assert "eq-ln-step2" not in implemented_in  # a derivation implements nothing


def test_a_computes_equation_whose_symbol_the_line_does_not_assign_names_both(make_project):
    root = make_project({"docs/page.md": DERIVATION_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of one row
        tex: \\mu_t = \\frac{1}{d} \\sum_i X_{ti}
        code: "ops.layer_norm_forward: s = 1.0 / np.sqrt(var + epsilon)"
        ```
        """)})

    assert role_problems(root) == [
        "docs/page.md:13: equation 'ln-mean' is shown as computed by its code (role: computes, the default), but its "
        "left-hand side \\mu_t is mu in the code, and ops.py:13 's = 1.0 / np.sqrt(var + epsilon)' assigns or returns "
        "s; declare 'role: derived' if the equation is worked out from these lines, or 'role: contrast' if the code "
        "does something else there; or point 'code:' at the statement that assigns it"
    ]


def test_a_computes_equation_at_the_line_that_assigns_its_symbol_passes(make_project):
    root = make_project({"docs/page.md": DERIVATION_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of one row
        tex: \\mu_t = \\frac{1}{d} \\sum_i X_{ti}
        code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
        ```

        ```trace-equation
        id: ln-contrast
        title: "Not the code: the unbiased variance"
        role: contrast
        tex: \\tilde{\\sigma}^2 = \\frac{1}{d - 1} \\sum_i (X_i - \\mu)^2
        code: "ops.layer_norm_forward: var = ((X - mu) ** 2).mean("
        ```
        """)})

    result = expand_page(root)

    assert not [str(p) for p in result.problems if "role:" in str(p)]
    assert '<p class="trace-eq-code">Contrast, not in the code. What the code does instead: <a ' in result.markdown
    assert "<td>Contrast, not in the code</td>" in result.markdown
    implemented_in = result.markdown.split("{#deriving-the-backward-formula-implemented-in}", 1)[1]
    assert "eq-ln-mean" in implemented_in and "eq-ln-contrast" not in implemented_in


def test_an_unknown_role_is_named_with_the_choices(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY + "\n" + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        role: explains
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)})

    messages = page_problems(root)

    assert len(messages) == 1 and messages[0].startswith("docs/page.md:10: ") and "computes, derived, contrast" in messages[0], messages

"""docs_hooks.resolve.codeindex: the index's lookups (a function by name, with close names suggested; which
functions a test runner runs) and how code is compared (as tokens)."""

from __future__ import annotations

from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.codeindex import did_you_mean, normalise_tokens, tokens_contain

from .conftest import page, page_problems
from .test_indexing import flat_project


def test_code_compares_as_tokens_without_comments_layout_or_a_trailing_comma():
    assert normalise_tokens("y = f(a,\n      b,)  # note") == "y = f ( a , b )"
    assert normalise_tokens('s = r"a  b" + 1.5e-3') == 's = r"a  b" + 1.5e-3'
    assert normalise_tokens("cfg = ModelConfig(") == "cfg = ModelConfig ("  # incomplete code counts up to its end
    assert normalise_tokens("x **= 2; y //= 3") == "x **= 2 ; y //= 3"


def test_a_needle_is_found_as_whole_tokens_only():
    hay = normalise_tokens("mu = X.mean(axis=-1)")
    assert tokens_contain(hay, normalise_tokens("X.mean(axis=-1)"))
    assert not tokens_contain(hay, normalise_tokens("mea"))
    assert not tokens_contain(hay, "")


def test_close_names_are_suggested_and_nothing_when_none_is_close():
    names = ["ops.layer_norm_forward", "ops.layer_norm_backward", "train.step"]
    assert did_you_mean("ops.layer_norm_forwad", names) == (
        "; did you mean 'ops.layer_norm_forward' or 'ops.layer_norm_backward'?"
    )
    assert did_you_mean("zzz", names) == ""


def test_a_test_method_of_a_test_class_or_a_testcase_runs_as_a_test_and_a_helper_does_not(tmp_path):
    index = index_for(load_settings(flat_project(tmp_path / "proj")))
    runs = {name: index.runs_as_test(fn) for name, fn in index.functions.items() if fn.is_test}

    assert runs == {
        "test_layers.TestLayerNorm.setUp": False,
        "test_layers.TestLayerNorm.test_forward": True,  # a unittest.TestCase
        "test_layers.TestLayerNorm.helper": False,
        "test_layers.TestPytestStyle.test_backward": True,  # a Test* class
        "test_layers.Helpers.test_not_collected": False,  # neither
        "test_layers.test_function": True,
    }


def test_missing_function_names_the_entry_and_suggests_close_names(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        # Layer norm

        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forwrd
        status: implemented
        ```
        """)
        }
    )

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

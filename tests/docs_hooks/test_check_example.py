"""examples/check_example.sh: the generator's wheel, installed in a fresh virtual environment, documents the example
projects. examples/layers (flat modules, tests beside the code): moved code passes check and changed code fails
it. examples/nnpkg (a package that imports itself by its full name, layers called through a list, an activation
through a dict and a module-level instance, a relatively imported base with ``__call__``, a star re-export, tests/
without ``__init__.py``, a backward that reassigns its argument): its built pages show the evidence each of
those patterns leaves.

The script builds a wheel, makes a virtual environment and builds both sites: the slowest test of the suite (a
minute or more; the first run on a machine also fetches the wheels the install needs, and keeps them in .cache/).
It runs once for the module; every test reads the pages it built (kept with CHECK_EXAMPLE_SITES).
"""

from __future__ import annotations

import ast
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import REPO

NNPKG = REPO / "examples" / "nnpkg"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The script's run, and the folder it kept the built sites in (``<example>/site``)."""
    sites = tmp_path_factory.mktemp("example-sites")
    done = subprocess.run(
        ["bash", str(REPO / "examples" / "check_example.sh")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable, "CHECK_EXAMPLE_SITES": str(sites)},
    )
    return done, sites


def page(built, example: str, name: str) -> str:
    """The HTML of one built page (``dense`` for dense.md), after the script passed."""
    done, sites = built
    assert done.returncode == 0, done.stdout + done.stderr
    return (sites / example / "site" / name / "index.html").read_text(encoding="utf-8")


def text(fragment: str) -> str:
    """HTML as its text: tags dropped, entities read, spaces joined."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def entry(markdown_html: str, entry_id: str) -> str:
    """The part of a page that one entry holds: from its heading to the next entry's."""
    start = markdown_html.index(f'id="{entry_id}"')
    following = [m.start() for m in re.finditer(r'<h2 id="', markdown_html) if m.start() > start]
    return markdown_html[start : following[0] if following else len(markdown_html)]


def facts(part: str) -> dict[str, str]:
    """The "Where is it used?" table of one entry: row name -> the row's text."""
    table = re.search(r'<table class="trace-table trace-facts">(.*?)</table>', part, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", table, re.S)
    return {text(name): text(value) for name, value in rows}


def names(cell: str) -> list[str]:
    """The comma-separated names of a facts cell, without the "(seen at run time)" marks."""
    return [n.replace("(seen at run time)", "").strip() for n in cell.split(", ")]


def steps(part: str) -> dict[str, tuple[str, str]]:
    """A worked example's table: label -> (code cell, value), as text."""
    table = re.search(r'<table class="trace-table trace-example-steps">(.*?)</table>', part, re.S).group(1)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", table, re.S)
    return {text(label): (text(code), text(value)) for label, code, value in rows}


def literal(test_file: str, test: str, name: str):
    """The value a test assigns to ``name`` with ``np.array(<literal>)``, read from the test's source."""
    tree = ast.parse((NNPKG / "tests" / test_file).read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == test)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return np.array(ast.literal_eval(node.value.args[0]))
    raise AssertionError(f"{test} assigns no {name}")


def shown(value: np.ndarray) -> str:
    """An array as a worked example shows it: 4 decimals."""
    rows = ", ".join("[" + ", ".join(f"{v:.4f}" for v in row) + "]" for row in np.atleast_2d(value))
    return f"[{rows}]"


# ----------------------------------------------------------------------------- the script


def test_both_example_projects_build_and_check_with_the_installed_wheel(built):
    done, _ = built
    assert done.returncode == 0, done.stdout + done.stderr
    steps_seen = [
        re.sub(r"docs_hooks-[^ ]+\.whl", "docs_hooks-VERSION.whl", line)
        for line in done.stdout.splitlines()
        if line.startswith("check_example: ")
    ]
    assert steps_seen == [
        "check_example: building the wheel",
        "check_example: installing docs_hooks-VERSION.whl in a fresh virtual environment",
        "check_example: mkdocs build --strict",
        "check_example: python -m docs_hooks check",
        "check_example: moving code: lines inserted above LayerNorm.forward; check must pass",
        "check_example: changing a referenced statement; check must fail with 'changed since reviewed'",
        "check_example: nnpkg: mkdocs build --strict",
        "check_example: nnpkg: python -m docs_hooks check",
        "check_example: passed",
    ]


def test_examples_layers_still_fails_check_when_a_reviewed_statement_changes(built):
    done, _ = built
    assert (
        "docs/layer-norm.md:21: equation ln-mean | mu = X.mean(axis=-1, keepdims=True): changed since reviewed."
        in done.stdout
    )
    assert "Recorded while" in page(built, "layers", "layer-norm")


# ----------------------------------------------------------------------------- nnpkg: what its patterns leave


def test_a_layer_called_through_the_networks_list_is_called_by_its_loop(built):
    dense = page(built, "nnpkg", "dense")
    forward, backward = facts(entry(dense, "dense-forward")), facts(entry(dense, "dense-backward"))
    assert "nnpkg.deep_learning.network.NeuralNetwork._forward_pass" in names(forward["Called by"])
    assert "nnpkg.deep_learning.network.NeuralNetwork._backward_pass" in names(backward["Called by"])
    # the call site, with its line: the loop over self.layers
    assert "Calls it nnpkg/deep_learning/network.py:47 X = layer.forward_pass(X, training)" in text(
        entry(dense, "dense-forward")
    )


def test_an_activation_from_a_dict_a_module_level_instance_and_an_attribute_are_called_and_tested(built):
    sigmoid = facts(entry(page(built, "nnpkg", "activations"), "sigmoid"))
    callers = names(sigmoid["Called by"])
    # Activation("sigmoid") looks the class up in a dict and keeps the instance in self.activation_func
    assert "nnpkg.deep_learning.layers.Activation.forward_pass" in callers
    # the module-level instance `sigmoid`, called by name and kept in an attribute (self.log_func)
    assert "nnpkg.deep_learning.network.NeuralNetwork.predict_proba" in callers
    assert "nnpkg.deep_learning.loss_functions.SigmoidCrossEntropy.loss" in callers
    assert names(sigmoid["Tested by"])[0] == "test_activations.test_sigmoid_worked_example"  # sigmoid(x) in the test
    relu = facts(entry(page(built, "nnpkg", "activations"), "relu"))
    assert "test_activations.test_relu_worked_example" in names(relu["Tested by"])  # relu = ReLU(); relu(x)


def test_a_layer_a_helper_makes_is_tested_by_the_tests_that_use_it(built):
    forward = facts(entry(page(built, "nnpkg", "batch-norm"), "bn-forward"))
    # bn = make_bn(...); bn.forward_pass(X)
    assert names(forward["Tested by"]) == [
        "test_layers.test_batch_normalization_normalizes_each_feature",
        "test_layers.test_batch_normalization_backward_matches_central_differences",
        "test_layers.test_batch_normalization_backward_worked_example",
    ]


def test_calling_a_layer_through_call_inherited_from_a_relatively_imported_base_is_a_test_of_its_forward(built):
    l1 = facts(entry(page(built, "nnpkg", "dense"), "l1"))
    # penalty = reg(W): L1 is a Module (from .module import Module), whose __call__ runs forward
    assert "test_layers.test_l1_penalty_worked_example" in names(l1["Tested by"])


def test_a_name_a_test_imports_inside_itself_from_a_star_re_export_is_followed(built):
    l1 = facts(entry(page(built, "nnpkg", "dense"), "l1"))
    # from nnpkg.deep_learning import L1, inside the test: deep_learning/__init__.py has `from .layers import *`
    assert "test_layers.test_l1_gradient_worked_example" in names(l1["Tested by"])


def test_tests_without_init_are_named_as_pytest_imports_them_and_their_lines_are_measured(built):
    dense = page(built, "nnpkg", "dense")
    coverage = facts(entry(dense, "dense-forward"))["Tests that run these equations' lines (line coverage)"]
    assert coverage.startswith("7 tests tests/test_layers.py : ")
    assert "test_dense_forward_worked_example" in coverage  # the example's own test ran the example's lines
    assert "tests.test_layers" not in dense  # named as pytest imports tests/ without __init__.py: test_layers
    matrix = text(page(built, "nnpkg", "traceability"))
    assert "Call forward_pass and run its lines: test_dense_backward_matches_central_differences, " in matrix
    for example_test in (
        "test_dense_forward_worked_example",
        "test_sigmoid_worked_example",
        "test_batch_normalization_backward_worked_example",
    ):
        idle = re.findall(r"do not run these lines: ([^.]*?)(?: Run its lines| Call |$)", matrix)
        assert not any(example_test in group for group in idle), (example_test, idle)


def test_a_backward_that_reassigns_its_argument_shows_the_gradient_the_test_passed(built):
    dense = steps(entry(page(built, "nnpkg", "dense"), "dense-backward"))
    passed = literal("test_layers.py", "test_dense_backward_worked_example", "grad_out")
    assert dense["Gradient on the output"] == ("accum_grad , on entry", shown(passed))
    W = np.array([[0.5, -1.0], [0.25, 0.0], [-0.5, 1.0]])  # small_dense's weights, as the test sets them
    code, value = dense["Gradient on the input"]
    assert code == "accum_grad after nnpkg/deep_learning/layers.py:105" and value == shown(passed @ W.T)

    bn = steps(entry(page(built, "nnpkg", "batch-norm"), "bn-backward"))
    passed = literal("test_layers.py", "test_batch_normalization_backward_worked_example", "accum_grad")
    assert bn["Upstream gradient"] == ("accum_grad , on entry", shown(passed))  # [[0.1, -0.2, 0.3], ...]
    assert bn["Gradient on the input"][0] == "accum_grad after nnpkg/deep_learning/layers.py:179-188"
    assert bn["Gradient on the input"][1] != shown(passed)


def test_a_layer_classs_parameters_and_hyperparameters_come_from_the_objects_of_the_model_run(built):
    dense = page(built, "nnpkg", "dense")
    params = re.search(r'<table class="trace-table trace-params">(.*?)</table>', dense, re.S).group(1)
    rows = [text(r) for r in re.findall(r"<tr>(.*?)</tr>", params, re.S)[1:]]
    assert [r.split(" nnpkg/")[0] for r in rows] == ["W", "W", "w0", "w0"]
    assert [re.search(r"NeuralNetwork\.layers\[\d\] \([^)]*\) \([^)]*\)", r).group(0) for r in rows] == [
        "NeuralNetwork.layers[0] (D, H) (3, 8)",
        "NeuralNetwork.layers[3] (H, K) (8, 1)",
        "NeuralNetwork.layers[0] (1, H) (1, 8)",
        "NeuralNetwork.layers[3] (1, K) (1, 1)",
    ]
    config = re.search(r'<table class="trace-table trace-config">(.*?)</table>', dense, re.S).group(1)
    n_units = text(re.findall(r"<tr>(.*?)</tr>", config, re.S)[1])
    assert "passes n_hidden (argument 1)" in n_units and "8 at nnpkg/deep_learning/network.py:65" in n_units
    assert "1 at nnpkg/deep_learning/network.py:68" in n_units

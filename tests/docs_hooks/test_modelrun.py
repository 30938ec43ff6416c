"""Tests of docs_hooks.kinds.modelrun: the model run, recorded, and its dimensions named after the config.

What users rely on: the ``model_run`` setting names a helper with ``config()``, ``probe(cfg)`` and ``run(cfg)``;
``model_requests`` asks the recorder for ``run(config())``, ``run(probe(config()))``, ``config()`` and
``probe(config())`` of that helper (or says, for each, why there is no model run); a dimension is named by the
one config field, or product or quotient named in the ``symbols`` setting, whose probe value it equals, and
shown with its symbol, so that two fields equal in the real config are told apart; a probe that cannot tell
two of them apart, a symbol naming no whole-number field, and a run that does not do the same computation
whatever the sizes are errors that say what to fix. ``Evidence`` is what a kind's render reads the recordings
through; ``model_run`` makes both recordings and the namer once per build.

The kinds that show the model run (trace-symbols, trace-shapes, ...) are tested in test_symbols.py,
test_shapes.py, test_params.py, test_config.py and test_inventory.py; the helpers the inventories share here, through them.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build
from docs_hooks.kinds.modelrun import (
    CONFIG,
    PROBE_CONFIG,
    PROBE_RUN,
    RUN,
    Desc,
    Dim,
    Dims,
    Evidence,
    block_functions,
    config_made,
    model_requests,
    model_run,
    model_run_path,
    requests_of,
)
from docs_hooks.read.blocks import Block
from docs_hooks.run.recording import Made, Opaque
from docs_hooks.run.request import Request

from .conftest import BASE_FILES, PYPROJECT, write_tree

HELPER_PATH = "docs/examples/model_run.py"

# conftest's tiny model (model.Config(d, eps); model.Block(cfg).forward(X, gamma, beta) calls the layer norm)
HELPER = """\
import numpy as np

import model


def config():
    return model.Config(d=4)


def probe(cfg):
    return model.Config(d=7, eps=cfg.eps)


def run(cfg):
    X = np.ones((3, cfg.d))
    return model.Block(cfg).forward(X, np.ones(cfg.d), np.zeros(cfg.d))
"""

WITH_HELPER = PYPROJECT + f'model_run = "{HELPER_PATH}"\n\n[tool.docs_hooks.symbols]\nd = "D"\n'


def settings_of(root, pyproject: str = WITH_HELPER, helper: str | None = HELPER):
    files = {**BASE_FILES, "pyproject.toml": pyproject}
    if helper is not None:
        files[HELPER_PATH] = helper
    return load_settings(write_tree(root, files))


# ----------------------------------------------------------------------------- the requests


def test_the_helper_is_named_by_its_path_from_the_project_root(tmp_path):
    assert model_run_path(settings_of(tmp_path)) == HELPER_PATH


def test_the_four_requests_call_the_helpers_functions_on_configs_made_in_the_child(tmp_path):
    real = Made(HELPER_PATH, "config")
    probe = Made(HELPER_PATH, "probe", (real,))

    requests = model_requests(settings_of(tmp_path))

    assert requests == {
        RUN: Request(f"{HELPER_PATH}: run(config())", HELPER_PATH, "run", (real,)),
        PROBE_RUN: Request(f"{HELPER_PATH}: run(probe(config()))", HELPER_PATH, "run", (probe,)),
        CONFIG: Request(f"{HELPER_PATH}: config()", HELPER_PATH, "config"),
        PROBE_CONFIG: Request(f"{HELPER_PATH}: probe(config())", HELPER_PATH, "probe", (real,)),
    }
    assert requests_of(requests) == list(requests.values())
    assert (config_made(settings_of(tmp_path)), config_made(settings_of(tmp_path), probe=True)) == (real, probe)


@pytest.mark.parametrize(
    ("pyproject", "helper", "message"),
    [
        (
            PYPROJECT,
            HELPER,
            "no model run: set model_run in [tool.docs_hooks] of pyproject.toml to a helper module with config(), "
            "probe(cfg) and run(cfg)",
        ),
        (
            WITH_HELPER,
            None,
            f"the model run helper '{HELPER_PATH}' (setting model_run) does not exist; create it with config(), "
            "probe(cfg) and run(cfg)",
        ),
    ],
    ids=["no setting", "no helper"],
)
def test_without_a_helper_every_request_is_the_reason_and_none_can_be_made(tmp_path, pyproject, helper, message):
    settings = settings_of(tmp_path, pyproject, helper)

    requests = model_requests(settings)

    assert sorted(requests) == sorted([RUN, PROBE_RUN, CONFIG, PROBE_CONFIG])
    assert all(isinstance(r, TraceError) and r.message == message for r in requests.values())
    assert requests_of(requests) == []
    with pytest.raises(TraceError) as caught:
        model_run_path(settings)
    assert caught.value.message == message


# ----------------------------------------------------------------------------- the run, recorded


@pytest.fixture(scope="module")
def evidence(tmp_path_factory):
    """Evidence of one build of the tiny project with the helper, for the model run's requests."""
    settings = settings_of(tmp_path_factory.mktemp("modelrun") / "proj")
    build = make_build(settings, coverage=False)
    try:
        yield Evidence(build.project, build.results, build.links, model_requests(settings))
    finally:
        build.close()


def test_the_run_request_records_the_helpers_run_on_the_real_config(evidence):
    real = evidence.recording(RUN)

    assert real.request == f"{HELPER_PATH}: run(config())"
    assert {"ops.layer_norm_forward", "model.Block.forward"} <= {c.function for c in real.calls}
    assert real.first("ops.layer_norm_forward").args["X"].shape == (3, 4)
    assert {"src/ops.py", "src/model.py", HELPER_PATH} <= set(real.files)  # what the run read, for the cache


def test_the_probe_run_records_the_same_run_on_the_probe_config(evidence):
    probe = evidence.recording(PROBE_RUN)

    assert probe.first("ops.layer_norm_forward").args["X"].shape == (3, 7)
    assert [c.function for c in probe.calls] == [c.function for c in evidence.recording(RUN).calls]


def test_the_config_requests_record_both_configs_fields(evidence):
    real, probe = evidence.recording(CONFIG).result, evidence.recording(PROBE_CONFIG).result

    assert isinstance(real, Opaque) and real.type == "model.Config"
    assert (real.fields, probe.fields) == ({"d": 4, "eps": 1e-5}, {"d": 7, "eps": 1e-5})


def test_the_model_run_names_each_dimension_after_the_field_whose_probe_value_it_has(evidence):
    run = model_run(evidence)

    assert run.helper == HELPER_PATH
    assert run.dims.candidates == {"d": (4, 7)}  # eps is no whole number: no dimension is named after it
    real, probe = run.first_calls("ops.layer_norm_forward")
    shape = run.dims.describe(real.args["X"], probe.args["X"])
    assert (shape.symbolic(), shape.concrete()) == ("(3, D)", "(3, 4)")  # 3 is the same in both runs: no field
    assert run.dims.legend(shape.symbol_keys()) == "D = d = 4."
    assert run.first_calls("ops.layer_norm_backward") is None  # the run never calls it


def test_the_model_run_is_made_once_per_build(evidence):
    assert model_run(evidence) is model_run(evidence)
    made = []
    assert evidence.once("a fact of this test", lambda: made.append(1) or len(made)) == 1
    assert evidence.once("a fact of this test", lambda: made.append(1) or len(made)) == 1
    assert made == [1]


def test_a_recording_that_was_not_requested_or_could_not_be_is_an_error_saying_so(evidence):
    reason = TraceError("no model run: set model_run ...")
    asking = Evidence(evidence.project, evidence.results, evidence.links, {RUN: reason})

    with pytest.raises(TraceError, match="^no recording 'inventory' was requested in this build$"):
        asking.recording("inventory")
    with pytest.raises(TraceError, match=r"^no model run: set model_run \.\.\.$"):
        asking.recording(RUN)
    assert (asking.settings, asking.index) == (evidence.project.settings, evidence.project.index)


def test_a_config_that_is_not_a_config_object_is_an_error_naming_the_helper(tmp_path):
    settings = settings_of(tmp_path, helper=HELPER.replace("    return model.Config(d=4)", "    return 3"))
    build = make_build(settings, coverage=False)
    try:
        ev = Evidence(build.project, build.results, build.links, model_requests(settings))
        with pytest.raises(TraceError) as caught:
            model_run(ev)
    finally:
        build.close()

    assert caught.value.message == f"config() in {HELPER_PATH} returned int 3, not a config object"


# ----------------------------------------------------------------------------- naming dimensions (moved here from test_shapes.py)


def dims(real=None, probe=None, symbols=None) -> Dims:
    real = real or {"seq_len": 4, "width": 4, "hidden": 6, "heads": 2, "eps": 1e-5}
    probe = probe or {"seq_len": 5, "width": 21, "hidden": 11, "heads": 3, "eps": 1e-5}
    symbols = symbols if symbols is not None else {"seq_len": "T", "width": "d", "hidden": "F", "width/heads": "d_h"}
    return Dims(real, probe, symbols, "docs/examples/model_run.py")


def test_equal_real_values_are_told_apart_by_the_probe():
    d = dims()
    # seq_len == width == 4 in the real config: the probe run says which axis is which.
    rows_first = d.describe(np.zeros((4, 4)), np.zeros((5, 21)))
    cols_first = d.describe(np.zeros((4, 4)), np.zeros((21, 5)))
    assert (rows_first.symbolic(), rows_first.concrete()) == ("(T, d)", "(4, 4)")
    assert (cols_first.symbolic(), cols_first.concrete()) == ("(d, T)", "(4, 4)")
    assert d.legend(rows_first.symbol_keys()) == "T = seq_len = 4. d = width = 4."


def test_quotients_fields_without_symbols_and_unexplained_dimensions():
    d = dims()
    heads = d.describe(np.zeros((4, 2, 2)), np.zeros((5, 3, 7)))
    assert heads.symbolic() == "(T, heads, d_h)"  # heads has no symbol: its field name is shown
    assert heads.concrete() == "(4, 2, 2)"
    assert d.legend(heads.symbol_keys()) == "T = seq_len = 4. heads = 2. d_h = width/heads = 2."
    kept = d.describe(np.zeros((4, 1)), np.zeros((5, 1)))
    assert kept.symbolic() == "(T, 1)"  # a keepdims axis: nothing explains it, it stays a number
    assert d.describe(np.float64(1.5), np.float64(2.5)).symbolic() == "scalar"
    both = d.describe((np.zeros((4, 4)), np.zeros((4, 1))), (np.zeros((5, 21)), np.zeros((5, 1))))
    assert both.symbolic() == "((T, d), (T, 1))"


def test_a_probe_that_cannot_separate_two_fields_is_an_error_naming_both():
    with pytest.raises(TraceError) as caught:
        dims(probe={"seq_len": 7, "width": 7, "hidden": 11, "heads": 1, "eps": 1e-5}, symbols={})
    assert str(caught.value) == (
        "the probe config cannot tell seq_len from width: probe() in docs/examples/model_run.py gives both the "
        "value 7. Give every size field its own prime (or a product of primes where the model needs one, e.g. a "
        "width divisible by a head count), so that each dimension names one field"
    )


def test_a_quotient_equal_to_a_field_in_the_probe_is_caught():
    with pytest.raises(TraceError) as caught:
        dims(probe={"seq_len": 5, "width": 21, "hidden": 7, "heads": 3, "eps": 1e-5})
    assert "cannot tell hidden from width/heads" in str(caught.value)


def test_a_symbol_setting_naming_no_field_is_an_error():
    with pytest.raises(TraceError) as caught:
        dims(symbols={"width/head": "d_h"})
    assert str(caught.value) == (
        "setting symbols names 'width/head', but 'head' is not a whole-number field of the model config; "
        "did you mean 'heads'? (fields: seq_len, width, hidden, heads); fix [tool.docs_hooks.symbols]"
    )


def test_a_dimension_with_a_fields_probe_value_but_another_real_value_is_an_error():
    d = dims()

    with pytest.raises(TraceError) as caught:
        d.describe(np.zeros((3, 4)), np.zeros((5, 21)))  # seq_len in the probe run, but 3 where seq_len = 4

    assert str(caught.value) == (
        "a dimension is seq_len in the probe run (5) but 3 in the real run, where seq_len = 4; run(cfg) in "
        "docs/examples/model_run.py must do the same computation whatever the sizes"
    )


@pytest.mark.parametrize(
    ("probe", "recorded"),
    [(np.zeros((5, 21, 1)), "an array of shape (5, 21, 1)"), (None, "NoneType None")],
)
def test_an_array_the_probe_run_recorded_otherwise_is_an_error(probe, recorded):
    with pytest.raises(TraceError) as caught:
        dims().describe(np.zeros((4, 4)), probe)

    assert str(caught.value) == (
        f"the real run recorded an array of shape (4, 4) where the probe run recorded {recorded}; run(cfg) in "
        "docs/examples/model_run.py must do the same computation whatever the sizes"
    )


def test_a_product_named_in_the_symbols_names_a_dimension():
    d = dims(symbols={"seq_len": "T", "seq_len*hidden": "TF"})

    flat = d.describe(np.zeros(24), np.zeros(55))  # 4 * 6 in the real run, 5 * 11 in the probe run

    assert (flat.symbolic(), flat.concrete()) == ("(TF,)", "(24,)")
    assert d.legend(flat.symbol_keys()) == "TF = seq_len*hidden = 24."


def test_a_quotient_that_is_no_whole_number_in_the_probe_names_nothing():
    d = dims(probe={"seq_len": 5, "width": 22, "hidden": 11, "heads": 3, "eps": 1e-5})  # 22 / 3

    assert d.candidates["width/heads"] == (2, None)
    assert d.describe(np.zeros((4, 2)), np.zeros((5, 7))).symbolic() == "(T, 2)"


def test_only_whole_number_fields_name_dimensions_numpy_integers_included():
    d = Dims(
        {"n": np.int64(4), "flag": True, "scale": 2.0, "name": "x"},
        {"n": np.int64(7), "flag": True, "scale": 3.0, "name": "y"},
        {},
        "helper.py",
    )

    assert d.candidates == {"n": (4, 7)}
    assert d.describe(np.zeros((4, 1)), np.zeros((7, 1))).symbolic() == "(n, 1)"
    with pytest.raises(TraceError, match="^setting symbols names 'scale', but 'scale' is not a whole-number field"):
        Dims({"n": 4, "scale": 2.0}, {"n": 7, "scale": 3.0}, {"scale": "s"}, "helper.py")


def test_values_that_are_not_arrays_are_described_by_what_they_are():
    d = dims()

    assert d.describe(None, None).symbolic() == "None"
    assert d.describe({"a": 1, "b": 2}, {"a": 1, "b": 2}).symbolic() == "dict of 2"
    assert d.describe(Opaque("model.Config", "Config()"), Opaque("model.Config", "Config()")).symbolic() == "Config"
    assert d.describe([1, 2], [1, 2, 3]).symbolic() == "list"  # not the same length in both runs: no items
    assert d.describe(np.array(2.0), np.array(3.0)).symbolic() == "scalar"  # an array with no axis


def test_a_shape_is_written_as_python_writes_tuples():
    dim = Dim(4, "width", "d")
    one = Desc("array", (dim,))

    assert (one.symbolic(), one.concrete()) == ("(d,)", "(4,)")
    assert Desc("tuple", items=(one,)).symbolic() == "((d,),)"
    assert Desc("tuple", items=(one, one)).symbol_keys() == ["width"]  # each key once
    assert dims().legend([]) == ""


# ----------------------------------------------------------------------------- the functions a block shows


def test_a_block_shows_the_functions_it_names_else_its_entrys():
    scope = SimpleNamespace(entry=SimpleNamespace(functions=("the entry's",)), function=lambda name: f"found {name}")
    named = Block("shapes", {"function": ["model.a", "model.b"]}, 3, 5, 4)

    assert block_functions(named, scope, "trace-shapes") == ["found model.a", "found model.b"]
    assert block_functions(Block("shapes", {}, 3, 5, 4), scope, "trace-shapes") == ["the entry's"]


def test_a_block_above_every_entry_that_names_no_function_is_an_error_saying_what_to_write():
    with pytest.raises(TraceError) as err:
        block_functions(Block("symbols", {}, 1, 3, 2), SimpleNamespace(entry=None), "trace-symbols")
    assert str(err.value) == (
        "trace-symbols outside an entry; put it below a trace-entry block, or name the function with function:"
    )

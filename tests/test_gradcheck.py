"""The whole model's gradients against central differences, tensor by tensor.

A small model (two blocks, two heads) with every parameter set to random,
non-trivial values, in float64: each parameter tensor's gradient from
loss_and_grads must match the numerical gradient of the loss. The key biases
are the one exception, tested on their own: their gradient is exactly zero.
"""

import numpy as np
import pytest

from gradcheck import numerical_grad, rel_error
from ops import cross_entropy_forward
from transformer import ModelConfig, forward, init_params, loss_and_grads

TOL = 1e-7  # a correct gradient agrees to about 1e-9 here


def small_model():
    """A tiny config, params moved away from their init (so no gain is exactly 1, no bias exactly 0), and data."""
    cfg = ModelConfig(vocab_size=7, seq_len=6, emb_dim=8, n_heads=2, n_layers=2, ff_dim=12, init_std=0.5)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    for value in params.values():
        value += rng.normal(0.0, 0.3, value.shape)
    ids = np.array([1, 4, 4, 0, 6])  # T = 5 < seq_len: the last row of pos_emb is unused
    targets = np.array([4, 4, 0, 6, 2])
    return cfg, params, ids, targets


def loss_only(ids, targets, params, cfg):
    logits, _ = forward(ids, params, cfg)
    loss, _ = cross_entropy_forward(logits, targets)
    return loss


def text_table(rows):
    """Rows of texts as a 2-D array of strings, each column padded to its widest entry, for a page to show."""
    widths = [max(len(row[j]) for row in rows) for j in range(len(rows[0]))]
    return np.array([[cell.ljust(width) for cell, width in zip(row, widths)] for row in rows])


def test_every_tensor_passes():
    """Every tensor by rel_error, except the key biases; the largest gap of every tensor, key biases included.

    The table of gaps is what the backpropagation page shows, from this test's own run.
    """
    cfg, params, ids, targets = small_model()
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    rows = [("tensor", "largest |gradient|", "largest gap", "rel_error")]
    gaps = {}
    failures = []
    checked = 0
    for name, value in params.items():
        numerical = numerical_grad(lambda: loss_only(ids, targets, params, cfg), value)
        err = rel_error(grads[name], numerical)
        gaps[name] = float(np.abs(grads[name] - numerical).max())
        rows.append((name, f"{float(np.abs(grads[name]).max()):.2g}", f"{gaps[name]:.1e}", f"{err:.1e}"))
        if name.endswith("attn_bk"):
            continue  # exactly zero, see test_key_bias_gradient_is_zero
        checked += 1
        if not err < TOL:
            failures.append(f"{name}: mine {grads[name]} numerical {numerical} rel err {err:.2e}")
    table = text_table(rows)
    largest_gradient = max(float(np.abs(g).max()) for g in grads.values())
    largest_gap = max(gaps.values())
    n_tensors = len(gaps)
    assert not failures, "\n".join(failures)
    assert checked == len(params) - cfg.n_layers
    assert n_tensors == len(params)
    assert largest_gap < 1e-8 * largest_gradient  # the rounding level of central differences, not a mistake


def test_gradcheck_does_not_change_the_parameters():
    cfg, params, ids, targets = small_model()
    before = {name: value.copy() for name, value in params.items()}
    numerical_grad(lambda: loss_only(ids, targets, params, cfg), params["b0.attn_wq"])
    for name, value in params.items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)


def test_key_bias_gradient_is_zero():
    """The key bias bk cannot change the loss, so its gradient is zero.

    It adds q_t . bk to every score in row t of the attention scores: the same
    constant for every key that query t looks at. Softmax ignores a constant
    added to a row, so the attention weights, the output and the loss do not
    depend on bk. In the backward pass this shows up as every row of dS summing
    to zero, which makes dbk = sum over keys of dK vanish up to rounding.
    """
    cfg, params, ids, targets = small_model()
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    largest = max(np.abs(g).max() for name, g in grads.items() if not name.endswith("attn_bk"))
    for l in range(cfg.n_layers):
        dbk = grads[f"b{l}.attn_bk"]
        assert np.abs(dbk).max() <= 1e-12 * largest, f"b{l}.attn_bk: mine {dbk}, expected 0"
        params[f"b{l}.attn_bk"] += 3.0  # a large move of bk leaves the loss unchanged
    assert loss_only(ids, targets, params, cfg) == pytest.approx(loss, rel=1e-12)


def test_numerical_grad_of_a_known_function():
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    grad = numerical_grad(lambda: (x**3).sum(), x)
    np.testing.assert_allclose(grad, 3 * x**2, rtol=1e-8)  # d/dx x^3 = 3 x^2
    np.testing.assert_array_equal(x, [[1.0, -2.0], [0.5, 3.0]])  # restored


def test_numerical_grad_refuses_float32():
    x = np.ones(3, dtype=np.float32)
    with pytest.raises(ValueError, match="needs a float64 array, got float32"):
        numerical_grad(lambda: float(x.sum()), x)


def test_rel_error():
    assert rel_error(np.array([1.0, 0.0]), np.array([1.0, 0.0])) == 0.0
    assert rel_error(np.zeros(3), np.zeros(3)) == 0.0
    # |[1, 0] - [0, 1]| / max(1, 1, delta) = sqrt(2)
    assert rel_error(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(np.sqrt(2))
    # |[3, 4] - [3, 4.5]| / max(5, 5.41, delta) = 0.5 / sqrt(29.25)
    assert rel_error(np.array([3.0, 4.0]), np.array([3.0, 4.5])) == pytest.approx(0.5 / np.sqrt(29.25))
    # both essentially zero: the absolute difference over the floor delta = 1e-8
    assert rel_error(np.array([1e-17]), np.array([3e-12])) == pytest.approx(3e-4, rel=1e-4)

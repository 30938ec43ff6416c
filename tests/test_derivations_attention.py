"""Numerical checks of what the attention and block pages work through.

Each test runs the real code and compares its results with central
differences or with a fact the page derives. The site shows these tests'
locals, and the locals of the model functions they call, recorded while the
tests run.
"""

import numpy as np

from gradcheck import numerical_grad
from ops import attention_backward, attention_forward, linear_forward, softmax_backward, split_heads
from transformer import ModelConfig, block_backward, block_forward, init_block_params


def random_attention(seed):
    """Three positions, width 4, two heads of width 2; every weight and bias random, none zero."""
    rng = np.random.default_rng(seed)
    T, d, n_heads = 3, 4, 2
    X = rng.normal(size=(T, d))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, d)) for _ in range(4))
    bq, bk, bv, bo = (rng.normal(size=d) for _ in range(4))
    dY = rng.normal(size=(T, d))  # the gradient of the scalar (Y * dY).sum() on Y
    return X, (Wq, bq, Wk, bk, Wv, bv, Wo, bo), n_heads, dY


def test_attention_backward_matches_central_differences_with_two_heads():
    """Every gradient attention_backward returns, against central differences of (Y * dY).sum()."""
    X, weights, n_heads, dY = random_attention(11)
    Wq, bq, Wk, bk, Wv, bv, Wo, bo = weights
    Y, cache = attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)
    dX, grads = attention_backward(dY, cache, Wq, Wk, Wv, Wo)
    f = lambda: (attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)[0] * dY).sum()
    numeric_dX = numerical_grad(f, X)
    gap_dX = np.abs(dX - numeric_dX).max()
    names = ["dWq", "dbq", "dWk", "dbk", "dWv", "dbv", "dWo", "dbo"]
    gaps = [float(np.abs(g - numerical_grad(f, w)).max()) for g, w in zip(grads, weights)]
    assert gap_dX < 1e-8, f"dX: mine {dX}, numerical {numeric_dX}"
    for name, gap in zip(names, gaps):
        assert gap < 1e-8, f"{name}: largest gap {gap:.2e}"


def test_key_bias_gets_no_gradient():
    """bk adds q_t . b / sqrt(d_h) to every score in row t of a head; softmax ignores it."""
    X, weights, n_heads, dY = random_attention(7)
    Wq, bq, Wk, bk, Wv, bv, Wo, bo = weights
    d = X.shape[1]
    hd = d // n_heads
    Y, cache = attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)
    dX, (dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo) = attention_backward(dY, cache, Wq, Wk, Wv, Wo)

    # Forward: what bk adds to the scores of each head, with the same queries
    Qh = split_heads(linear_forward(X, Wq, bq)[0], n_heads)  # (H, T, hd)
    Kh = split_heads(linear_forward(X, Wk, bk)[0], n_heads)  # (H, T, hd), with the key bias
    Kh0 = split_heads(linear_forward(X, Wk, np.zeros(d))[0], n_heads)  # (H, T, hd), without it
    shift = (Qh @ Kh.transpose(0, 2, 1) - Qh @ Kh0.transpose(0, 2, 1)) / np.sqrt(hd)  # (H, T, T)
    bkh = split_heads(bk[None, :], n_heads)  # (H, 1, hd), the part of bk in each head's columns
    row_constant = (Qh * bkh).sum(axis=-1) / np.sqrt(hd)  # (H, T): q_t . b / sqrt(hd)
    Y_moved, _ = attention_forward(X, Wq, bq, Wk, bk + 3.0, Wv, bv, Wo, bo, n_heads)
    output_change = np.abs(Y_moved - Y).max()

    # Backward: each row of the softmax gradient sums to zero, so the rows of dK cancel
    Q, K, V, P, future, scale = cache[3]  # the cache of the heads, from the real forward
    dOh = split_heads(dY @ Wo.T, n_heads)  # (H, T, hd), what the heads receive
    dS = softmax_backward(dOh @ V.transpose(0, 2, 1), P)  # (H, T, T)
    dS_row_sums = dS.sum(axis=-1)  # (H, T)
    numeric_dbk = numerical_grad(
        lambda: (attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)[0] * dY).sum(), bk
    )

    largest_row_sum = np.abs(dS_row_sums).max()
    largest_dbk = np.abs(dbk).max()
    largest_numeric_dbk = np.abs(numeric_dbk).max()
    largest_other = max(np.abs(g).max() for g in (dX, dWq, dbq, dWk, dWv, dbv, dWo, dbo))

    np.testing.assert_allclose(shift, np.broadcast_to(row_constant[:, :, None], shift.shape), atol=1e-12)
    assert output_change < 1e-12
    assert largest_row_sum < 1e-12
    assert largest_dbk <= 1e-12 * largest_other, f"dbk: mine {dbk}, expected 0"
    assert largest_numeric_dbk < 1e-8
    assert np.abs(dbq).min() > 1e-3  # the query bias is not redundant: its gradient is not 0


def tiny_block():
    """One block of width 4 with two heads, its parameters moved away from their init, and an input."""
    cfg = ModelConfig(vocab_size=5, seq_len=3, emb_dim=4, n_heads=2, n_layers=1, ff_dim=8, init_std=0.5)
    rng = np.random.default_rng(3)
    params = init_block_params(cfg, rng, 0)
    for value in params.values():
        value += rng.normal(0.0, 0.3, value.shape)  # no gain exactly 1, no bias exactly 0
    X = rng.normal(size=(cfg.seq_len, cfg.emb_dim))  # (T, d)
    dX2 = rng.normal(size=(cfg.seq_len, cfg.emb_dim))  # the gradient of the scalar (X2 * dX2).sum() on X2
    return cfg, params, X, dX2


def test_block_residual_gradients_add():
    """dX = dX2 + dX1_branch + dX_branch, and it equals the central differences of (X2 * dX2).sum()."""
    cfg, params, X, dX2 = tiny_block()
    X2, cache = block_forward(X, params, 0, cfg)
    dX, grads = block_backward(dX2, cache, params, 0, cfg)
    f = lambda: (block_forward(X, params, 0, cfg)[0] * dX2).sum()
    numeric_dX = numerical_grad(f, X)
    gap_dX = np.abs(dX - numeric_dX).max()
    assert gap_dX < 1e-8, f"dX: mine {dX}, numerical {numeric_dX}"


def test_block_parameter_gradients_match_central_differences():
    """Every parameter gradient of one block, against central differences of (X2 * dX2).sum()."""
    cfg, params, X, dX2 = tiny_block()
    X2, cache = block_forward(X, params, 0, cfg)
    dX, grads = block_backward(dX2, cache, params, 0, cfg)
    assert list(grads) == list(params)
    f = lambda: (block_forward(X, params, 0, cfg)[0] * dX2).sum()
    for name, value in params.items():
        gap = np.abs(grads[name] - numerical_grad(f, value)).max()
        assert gap < 1e-8, f"{name}: largest gap {gap:.2e}"


def test_init_block_params_names_shapes_and_values():
    """Block l's parameters: named b{l}.<name>, matrices random, biases 0, LayerNorm gains 1."""
    cfg = ModelConfig(vocab_size=5, seq_len=3, emb_dim=4, n_heads=2, n_layers=2, ff_dim=8)
    block = init_block_params(cfg, np.random.default_rng(0), 1)
    prefixes = sorted({name.split(".", 1)[0] + "." for name in block})
    short = {name.split(".", 1)[1]: value for name, value in block.items()}  # the names without the prefix
    starts_at_one = [name for name, value in short.items() if np.all(value == 1.0)]
    starts_at_zero = [name for name, value in short.items() if not value.any()]
    random = [name for name in short if name not in starts_at_one + starts_at_zero]
    n_scalars = sum(value.size for value in block.values())
    assert prefixes == ["b1."]
    assert starts_at_one == ["ln1_g", "ln2_g"]
    assert random == ["attn_wq", "attn_wk", "attn_wv", "attn_wo", "ff_w1", "ff_w2"]
    assert all(short[name].std() > 0 for name in random)
    d, f = cfg.emb_dim, cfg.ff_dim
    assert [short[name].shape for name in random] == [(d, d)] * 4 + [(d, f), (f, d)]
    assert n_scalars == 2 * 2 * d + 4 * (d * d + d) + (d * f + f) + (f * d + d)

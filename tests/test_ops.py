"""Tests of every operation in ops.py.

Two kinds. A worked example per operation: small hand-picked inputs, and the
expected outputs and gradients written out here, worked by hand (the comments
show the arithmetic), never produced by calling the code under test. And a
central-difference check of every backward pass in float64, which names each
gradient that disagrees ("dW: mine ... numerical ... rel err ...").
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck import numerical_grad, rel_error
from ops import (
    attention_backward,
    attention_forward,
    causal_attention_backward,
    causal_attention_forward,
    cross_entropy_backward,
    cross_entropy_forward,
    embedding_backward,
    embedding_forward,
    gelu_backward,
    gelu_forward,
    layer_norm_backward,
    layer_norm_forward,
    linear_backward,
    linear_forward,
    merge_heads,
    softmax_backward,
    softmax_forward,
    split_heads,
)

TOL = 1e-7  # central differences in float64 agree to ~1e-9; a wrong derivation is off by far more


def check_grads(f, inputs, mine):
    """Compare each analytic gradient mine[name] with central differences of f() w.r.t. inputs[name]."""
    failures = []
    for name, x in inputs.items():
        numerical = numerical_grad(f, x)
        err = rel_error(mine[name], numerical)
        if not err < TOL:
            failures.append(f"{name}: mine {mine[name]} numerical {numerical} rel err {err:.2e}")
    assert not failures, "\n".join(failures)


def test_a_wrong_gradient_is_reported_by_name():
    rng = np.random.default_rng(8)
    X, W, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    dOut = rng.normal(size=(2, 2))
    Y, cache = linear_forward(X, W, b)
    dX, dW, db = linear_backward(dOut, cache, W)
    f = lambda: (linear_forward(X, W, b)[0] * dOut).sum()
    with pytest.raises(AssertionError, match=r"(?s)dW: mine .* numerical .* rel err"):
        check_grads(f, {"dX": X, "dW": W}, {"dX": dX, "dW": dW * 1.001})


# --------------------------------------------------------------------------- embedding


def test_embedding_worked_example():
    tok_emb = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])  # V = 3 tokens, d = 2
    pos_emb = np.array([[10.0, 0.0], [0.0, 10.0], [20.0, 20.0], [30.0, 30.0]])  # seq_len = 4
    ids = np.array([2, 0, 2])  # token 2 twice, token 1 never, position 3 unused
    X, cache = embedding_forward(ids, tok_emb, pos_emb)
    # row t = tok_emb[ids[t]] + pos_emb[t]: [2,2]+[10,0], [1,0]+[0,10], [2,2]+[20,20]
    np.testing.assert_allclose(X, [[12.0, 2.0], [1.0, 10.0], [22.0, 22.0]])
    dX = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    dtok_emb, dpos_emb = embedding_backward(dX, cache, tok_emb, pos_emb)
    # token 2 collects rows 0 and 2: [1+5, 2+6]; token 0 row 1; token 1 nothing
    np.testing.assert_allclose(dtok_emb, [[3.0, 4.0], [0.0, 0.0], [6.0, 8.0]])
    np.testing.assert_allclose(dpos_emb, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [0.0, 0.0]])


def test_embedding_backward_matches_central_differences():
    rng = np.random.default_rng(0)
    tok_emb, pos_emb = rng.normal(size=(5, 3)), rng.normal(size=(6, 3))
    ids = np.array([1, 3, 1, 4])
    dOut = rng.normal(size=(4, 3))
    X, cache = embedding_forward(ids, tok_emb, pos_emb)
    dtok_emb, dpos_emb = embedding_backward(dOut, cache, tok_emb, pos_emb)
    f = lambda: (embedding_forward(ids, tok_emb, pos_emb)[0] * dOut).sum()
    check_grads(f, {"dtok_emb": tok_emb, "dpos_emb": pos_emb}, {"dtok_emb": dtok_emb, "dpos_emb": dpos_emb})


# --------------------------------------------------------------------------- linear


def test_linear_worked_example():
    X = np.array([[1.0, 2.0]])
    W = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])  # (d_in, d_out) = (2, 3)
    b = np.array([0.5, 0.0, 0.0])
    Y, cache = linear_forward(X, W, b)
    # [1*1 + 2*0, 1*0 + 2*1, 1*2 + 2*(-1)] + b = [1, 2, 0] + [0.5, 0, 0]
    np.testing.assert_allclose(Y, [[1.5, 2.0, 0.0]])
    dY = np.array([[1.0, 0.0, 1.0]])
    dX, dW, db = linear_backward(dY, cache, W)
    # dX = dY W^T = [1*1 + 1*2, 1*0 + 1*(-1)]; dW = X^T dY (outer product); db = dY
    np.testing.assert_allclose(dX, [[3.0, -1.0]])
    np.testing.assert_allclose(dW, [[1.0, 0.0, 1.0], [2.0, 0.0, 2.0]])
    np.testing.assert_allclose(db, [1.0, 0.0, 1.0])


def test_linear_backward_matches_central_differences():
    rng = np.random.default_rng(1)
    X, W, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    dOut = rng.normal(size=(4, 5))
    Y, cache = linear_forward(X, W, b)
    dX, dW, db = linear_backward(dOut, cache, W)
    f = lambda: (linear_forward(X, W, b)[0] * dOut).sum()
    check_grads(f, {"dX": X, "dW": W, "db": b}, {"dX": dX, "dW": dW, "db": db})


# --------------------------------------------------------------------------- layer norm


def test_layer_norm_worked_example():
    x = np.array([[1.0, 2.0, 3.0, 6.0]])
    gamma = np.array([1.0, 1.0, 1.0, 2.0])
    beta = np.array([0.0, 0.0, 0.0, 1.0])
    y, cache = layer_norm_forward(x, gamma, beta)
    # mean 3; deviations [-2, -1, 0, 3]; var = (4 + 1 + 0 + 9) / 4 = 3.5; s = 1/sqrt(3.5) = 0.5345
    Xhat, s = cache
    np.testing.assert_allclose(s, [[0.5345]], atol=1e-4)
    np.testing.assert_allclose(Xhat, [[-1.069, -0.5345, 0.0, 1.6036]], atol=1e-4)
    # y = gamma * Xhat + beta: the last entry is 2 * 1.6036 + 1
    np.testing.assert_allclose(y, [[-1.069, -0.5345, 0.0, 4.2071]], atol=1e-4)
    dx, dgamma, dbeta = layer_norm_backward(np.array([[1.0, 0.0, 0.0, 1.0]]), cache, gamma)
    # dXhat = dY * gamma = [1, 0, 0, 2]; mean(dXhat) = 0.75; mean(dXhat * Xhat) = (-1.069 + 3.2071) / 4 = 0.5345
    # dx = s * (dXhat - 0.75 - Xhat * 0.5345) = 0.5345 * [0.8214, -0.4643, -0.75, 0.3929]
    np.testing.assert_allclose(dx, [[0.4391, -0.2482, -0.4009, 0.2100]], atol=1e-4)
    np.testing.assert_allclose(dgamma, [-1.069, 0.0, 0.0, 1.6036], atol=1e-4)  # dY * Xhat
    np.testing.assert_allclose(dbeta, [1.0, 0.0, 0.0, 1.0])  # dY


def test_layer_norm_backward_matches_central_differences():
    rng = np.random.default_rng(2)
    X, gamma, beta = rng.normal(size=(3, 5)), rng.normal(size=5), rng.normal(size=5)
    dOut = rng.normal(size=(3, 5))
    Y, cache = layer_norm_forward(X, gamma, beta)
    dX, dgamma, dbeta = layer_norm_backward(dOut, cache, gamma)
    f = lambda: (layer_norm_forward(X, gamma, beta)[0] * dOut).sum()
    check_grads(f, {"dX": X, "dgamma": gamma, "dbeta": beta}, {"dX": dX, "dgamma": dgamma, "dbeta": dbeta})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=8), st.floats(-1e3, 1e3))
def test_layer_norm_ignores_a_shift_of_the_row(row, shift):
    X = np.array([row])
    d = X.shape[1]
    Y, _ = layer_norm_forward(X, np.ones(d), np.zeros(d))
    Y_shifted, _ = layer_norm_forward(X + shift, np.ones(d), np.zeros(d))
    np.testing.assert_allclose(Y_shifted, Y, atol=1e-6)


# --------------------------------------------------------------------------- GELU


def test_gelu_worked_example():
    X = np.array([[-1.0, 0.0, 1.0, 2.0]])
    Y, cache = gelu_forward(X)
    # x = 1: u = sqrt(2/pi) * (1 + 0.044715) = 0.833562, t = tanh(u) = 0.682384, y = 0.5 * (1 + t) = 0.841192
    # x = -1: t = -0.682384, y = -0.5 * (1 - 0.682384) = -0.158808
    # x = 2: u = sqrt(2/pi) * (2 + 0.35772) = 1.881188, t = 0.954598, y = 1 + t = 1.954598
    np.testing.assert_allclose(Y, [[-0.158808, 0.0, 0.841192, 1.954598]], atol=1e-6)
    dY = np.ones((1, 4))
    dX = gelu_backward(dY, cache)
    # dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2); at 0 it is 0.5
    # x = 1: 0.841192 + 0.5 * 0.534352 * 0.797885 * 1.134145 = 1.082964
    np.testing.assert_allclose(dX, [[-0.082964, 0.5, 1.082964, 1.086099]], atol=1e-6)


def test_gelu_constants_are_those_of_the_tanh_approximation():
    """GELU_C and GELU_A against the published tanh approximation of GELU (Hendrycks and Gimpel, 2016)."""
    import ops

    c_G, a_G = ops.GELU_C, ops.GELU_A
    assert c_G == pytest.approx(np.sqrt(2.0 / np.pi), rel=1e-15)
    assert a_G == 0.044715


def test_gelu_backward_matches_central_differences():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 4)) * 2
    dOut = rng.normal(size=(3, 4))
    Y, cache = gelu_forward(X)
    dX = gelu_backward(dOut, cache)
    check_grads(lambda: (gelu_forward(X)[0] * dOut).sum(), {"dX": X}, {"dX": dX})


# --------------------------------------------------------------------------- softmax


def test_softmax_worked_example():
    X = np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]])  # the second row would overflow without the max shift
    P, cache = softmax_forward(X)
    # row 0: [e^0, e^ln3] / (1 + 3) = [1/4, 3/4]; row 1: equal scores, [1/2, 1/2]
    np.testing.assert_allclose(P, [[0.25, 0.75], [0.5, 0.5]])
    dP = np.array([[1.0, 0.0], [2.0, 0.0]])
    dX = softmax_backward(dP, cache)
    # row 0: sum(dP * P) = 0.25, dX = P * (dP - 0.25) = [0.25 * 0.75, 0.75 * (-0.25)]
    # row 1: sum(dP * P) = 1, dX = [0.5 * (2 - 1), 0.5 * (0 - 1)]
    np.testing.assert_allclose(dX, [[0.1875, -0.1875], [0.5, -0.5]])


def test_softmax_backward_matches_central_differences():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2, 3, 4))
    dOut = rng.normal(size=(2, 3, 4))
    P, cache = softmax_forward(X)
    dX = softmax_backward(dOut, cache)
    check_grads(lambda: (softmax_forward(X)[0] * dOut).sum(), {"dX": X}, {"dX": dX})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=8), st.floats(-1e3, 1e3))
def test_softmax_rows_sum_to_one_and_ignore_a_constant(row, shift):
    X = np.array([row])
    P, _ = softmax_forward(X)
    P_shifted, _ = softmax_forward(X + shift)
    np.testing.assert_allclose(P.sum(axis=-1), 1.0)
    np.testing.assert_allclose(P_shifted, P, atol=1e-9)


# --------------------------------------------------------------------------- attention


def test_split_heads_and_merge_heads_worked_example():
    X = np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])  # T = 2, d = 4
    Xh = split_heads(X, 2)
    # head 0 owns columns 0-1, head 1 columns 2-3
    np.testing.assert_array_equal(Xh, [[[1.0, 2.0], [5.0, 6.0]], [[3.0, 4.0], [7.0, 8.0]]])
    np.testing.assert_array_equal(merge_heads(Xh), X)


def test_causal_attention_worked_example():
    Q = np.array([[[1.0], [1.0]]])  # H = 1, T = 2, hd = 1, so the scale 1/sqrt(hd) is 1
    K = np.array([[[0.0], [np.log(3.0)]]])
    V = np.array([[[2.0], [6.0]]])
    O, cache = causal_attention_forward(Q, K, V)
    # query 0 sees only key 0: weights [1, 0]; query 1 sees scores [0, ln 3]: weights [1/4, 3/4]
    # O = [2, 0.25 * 2 + 0.75 * 6] = [2, 5]
    np.testing.assert_allclose(O, [[[2.0], [5.0]]])
    dO = np.array([[[1.0], [1.0]]])
    dQ, dK, dV = causal_attention_backward(dO, cache)
    # dV_j = sum_t P_tj dO_t: [1 + 0.25, 0.75]
    np.testing.assert_allclose(dV, [[[1.25], [0.75]]])
    # dP_tj = dO_t V_j = [2, 6] in both rows; row 0: dS = [1 * (2 - 2), 0] = [0, 0]
    # row 1: sum(dP * P) = 0.5 + 4.5 = 5, dS = [0.25 * (2 - 5), 0.75 * (6 - 5)] = [-0.75, 0.75]
    # dQ_1 = -0.75 * 0 + 0.75 * ln 3 = 0.823959; dK_j = sum_t dS_tj Q_t = [-0.75, 0.75]
    np.testing.assert_allclose(dQ, [[[0.0], [0.823959]]], atol=1e-6)
    np.testing.assert_allclose(dK, [[[-0.75], [0.75]]])


def test_causal_attention_backward_matches_central_differences():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 4, 3))
    dOut = rng.normal(size=(2, 4, 3))
    O, cache = causal_attention_forward(Q, K, V)
    dQ, dK, dV = causal_attention_backward(dOut, cache)
    f = lambda: (causal_attention_forward(Q, K, V)[0] * dOut).sum()
    check_grads(f, {"dQ": Q, "dK": K, "dV": V}, {"dQ": dQ, "dK": dK, "dV": dV})


def test_attention_worked_example():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])  # T = 2, d = 2, one head: hd = 2, scale 1/sqrt(2) = 0.707107
    Wq = np.eye(2)
    bq = np.zeros(2)
    Wk = np.eye(2)
    bk = np.zeros(2)
    Wv = np.eye(2)
    bv = np.zeros(2)
    Wo = np.eye(2)
    bo = np.array([0.5, -0.5])
    n_heads = 1
    Y, cache = attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)
    # Q = K = V = X. Query 0 sees only key 0: O_0 = V_0 = [1, 0].
    # Query 1 scores [q1.k0, q1.k1] / sqrt(2) = [0, 0.707107]; weights [1, e^0.707107] / (1 + e^0.707107)
    #   = [0.330238, 0.669762]; O_1 = 0.330238 * [1, 0] + 0.669762 * [0, 1]. Y = O + bo.
    np.testing.assert_allclose(Y, [[1.5, -0.5], [0.830238, 0.169762]], atol=1e-6)
    dY = np.array([[0.0, 0.0], [1.0, -1.0]])
    dX, (dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo) = attention_backward(dY, cache, Wq, Wk, Wv, Wo)
    # dbo = sum of dY rows; dWo = O^T dY: column 0 gets O_1, column 1 gets -O_1
    np.testing.assert_allclose(dbo, [1.0, -1.0])
    np.testing.assert_allclose(dWo, [[0.330238, -0.330238], [0.669762, -0.669762]], atol=1e-6)
    # dO = dY; dV_j = sum_t P_tj dO_t = P_1j * [1, -1]
    np.testing.assert_allclose(dWv, [[0.330238, -0.330238], [0.669762, -0.669762]], atol=1e-6)
    np.testing.assert_allclose(dbv, [1.0, -1.0], atol=1e-12)
    # dP_1 = [dO_1 . V_0, dO_1 . V_1] = [1, -1]; sum(dP_1 * P_1) = -0.339523
    # dS_1 = P_1 * (dP_1 + 0.339523) = [0.442362, -0.442362]; row 0 of dS is 0
    # dQ_1 = 0.707107 * (0.442362 * K_0 - 0.442362 * K_1) = [0.312797, -0.312797]
    np.testing.assert_allclose(dWq, [[0.0, 0.0], [0.312797, -0.312797]], atol=1e-6)
    np.testing.assert_allclose(dbq, [0.312797, -0.312797], atol=1e-6)
    # dK_j = 0.707107 * dS_1j * Q_1: dK_0 = [0, 0.312797], dK_1 = [0, -0.312797]; dWk = X^T dK = dK
    np.testing.assert_allclose(dWk, [[0.0, 0.312797], [0.0, -0.312797]], atol=1e-6)
    # the two rows of dK cancel in dbk = dK_0 + dK_1
    np.testing.assert_allclose(dbk, [0.0, 0.0], atol=1e-12)
    # dX = dQ + dK + dV (identity weights): row 0 = [0, 0.312797] + [0.330238, -0.330238]
    # row 1 = [0.312797, -0.312797] + [0, -0.312797] + [0.669762, -0.669762]
    np.testing.assert_allclose(dX, [[0.330238, -0.017441], [0.982559, -1.295356]], atol=1e-6)


def test_attention_backward_matches_central_differences():
    rng = np.random.default_rng(6)
    T, d, n_heads = 4, 6, 2
    X = rng.normal(size=(T, d))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, d)) for _ in range(4))
    bq, bk, bv, bo = (rng.normal(size=d) for _ in range(4))
    dOut = rng.normal(size=(T, d))
    Y, cache = attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)
    dX, (dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo) = attention_backward(dOut, cache, Wq, Wk, Wv, Wo)
    f = lambda: (attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads)[0] * dOut).sum()
    inputs = {"dX": X, "dWq": Wq, "dbq": bq, "dWk": Wk, "dWv": Wv, "dbv": bv, "dWo": Wo, "dbo": bo}
    mine = {"dX": dX, "dWq": dWq, "dbq": dbq, "dWk": dWk, "dWv": dWv, "dbv": dbv, "dWo": dWo, "dbo": dbo}
    check_grads(f, inputs, mine)
    # the key bias: softmax ignores the constant q_t . bk it adds to row t of the scores
    largest = max(np.abs(g).max() for g in mine.values())
    assert np.abs(dbk).max() <= 1e-12 * largest, f"dbk: mine {dbk}, expected 0"
    assert np.abs(numerical_grad(f, bk)).max() < 1e-8, "the loss should not move when bk moves"


# --------------------------------------------------------------------------- cross-entropy


def test_cross_entropy_worked_example():
    logits = np.array([[0.0, 0.0, np.log(2.0)], [1.0, 1.0, 1.0]])  # T = 2 positions, V = 3
    targets = np.array([2, 0])
    loss, cache = cross_entropy_forward(logits, targets)
    # P_0 = [1, 1, 2] / 4, P_1 = [1, 1, 1] / 3; loss = (-ln 0.5 - ln(1/3)) / 2 = (0.693147 + 1.098612) / 2
    np.testing.assert_allclose(loss, 0.895880, atol=1e-6)
    dloss = 1.0
    dlogits = cross_entropy_backward(dloss, cache)
    # (P - onehot) / T: row 0 = [0.25, 0.25, 0.5 - 1] / 2, row 1 = [1/3 - 1, 1/3, 1/3] / 2
    np.testing.assert_allclose(dlogits, [[0.125, 0.125, -0.25], [-1 / 3, 1 / 6, 1 / 6]])


def test_cross_entropy_backward_matches_central_differences():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(5, 4)) * 3
    targets = np.array([0, 3, 3, 1, 2])
    loss, cache = cross_entropy_forward(logits, targets)
    dlogits = cross_entropy_backward(1.0, cache)
    check_grads(lambda: cross_entropy_forward(logits, targets)[0], {"dlogits": logits}, {"dlogits": dlogits})


def test_cross_entropy_is_stable_for_large_logits():
    logits = np.array([[1000.0, 0.0], [0.0, -1000.0]])
    loss, _ = cross_entropy_forward(logits, np.array([1, 1]))
    # row 0: -log softmax = 1000 (up to e^-1000); row 1: 1000 as well
    np.testing.assert_allclose(loss, 1000.0)

"""Numerical checks of the derivations on the embedding, linear, GELU and softmax pages.

Each test works a derivation's steps out by hand from a real call of the code,
then compares them with central differences of the forward and with the
hand-written backward. The pages show these locals, recorded while the tests
run. The feed-forward test runs the real block_forward with hand-picked
weights, so that its page can show the three feed-forward lines at work.
"""

import numpy as np

from gradcheck import numerical_grad
from ops import (
    GELU_A,
    GELU_C,
    embedding_backward,
    embedding_forward,
    gelu_backward,
    gelu_forward,
    linear_backward,
    linear_forward,
    softmax_backward,
    softmax_forward,
)
from transformer import ModelConfig, block_forward, init_block_params


def test_embedding_scatter_add_derivation():
    """Each table row collects every row of dX that read it; assignment keeps only one of them."""
    tok_emb = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])  # the numbers of test_embedding_worked_example
    pos_emb = np.array([[10.0, 0.0], [0.0, 10.0], [20.0, 20.0], [30.0, 30.0]])
    ids = np.array([2, 0, 2])  # token 2 at positions 0 and 2
    dX = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    V, T = tok_emb.shape[0], ids.shape[0]
    # Step 2: row v of the gradient sums the rows t of dX with ids[t] == v
    derived_tok = np.stack([dX[ids == v].sum(axis=0) for v in range(V)])  # (V, d)
    # Step 3: position t < T receives row t of dX; the unused positions receive 0
    derived_pos = np.zeros_like(pos_emb)
    derived_pos[:T] = dX
    f = lambda: (embedding_forward(ids, tok_emb, pos_emb)[0] * dX).sum()  # its gradient on X is dX
    numeric_tok = numerical_grad(f, tok_emb)
    numeric_pos = numerical_grad(f, pos_emb)
    # Three ways to write the scatter. Only np.add.at adds the two rows of token 2.
    scatter_add = np.zeros_like(tok_emb)
    np.add.at(scatter_add, ids, dX)
    assigned = np.zeros_like(tok_emb)
    assigned[ids] = dX  # token 2's two writes: one overwrites the other
    buffered = np.zeros_like(tok_emb)
    buffered[ids] += dX  # reads all rows first, then writes them: one write is lost again
    dtok_emb, dpos_emb = embedding_backward(dX, ids, tok_emb, pos_emb)
    np.testing.assert_allclose(derived_tok, numeric_tok, atol=1e-8)
    np.testing.assert_allclose(derived_pos, numeric_pos, atol=1e-8)
    np.testing.assert_array_equal(dtok_emb, derived_tok)
    np.testing.assert_array_equal(dpos_emb, derived_pos)
    np.testing.assert_array_equal(scatter_add, derived_tok)
    for wrong in (assigned, buffered):
        np.testing.assert_array_equal(wrong[[0, 1]], derived_tok[[0, 1]])  # tokens read once are right
        assert not np.allclose(wrong[2], derived_tok[2]), "token 2 should have lost one of its two rows"


def test_linear_derivation_matches_the_code():
    """The element-by-element sums of the chain rule equal central differences and linear_backward."""
    X = np.array([[1.0, 2.0], [3.0, -1.0]])  # T = 2 rows, so the sums over rows are visible; d_in = 2
    W = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])  # (d_in, d_out) = (2, 3)
    b = np.array([0.5, 0.0, 0.0])
    dY = np.array([[1.0, 0.0, 1.0], [0.0, 2.0, -1.0]])
    Y, cache = linear_forward(X, W, b)
    T, d_in = X.shape
    d_out = W.shape[1]
    # The chain rule, one entry at a time: dY[t, j] reaches X[t, k] through W[k, j],
    # W[k, j] through X[t, k] (for every row t), and b[j] directly (for every row t).
    dX_sum = np.zeros((T, d_in))
    dW_sum = np.zeros((d_in, d_out))
    db_sum = np.zeros(d_out)
    for t in range(T):
        for j in range(d_out):
            for k in range(d_in):
                dX_sum[t, k] += dY[t, j] * W[k, j]
                dW_sum[k, j] += X[t, k] * dY[t, j]
            db_sum[j] += dY[t, j]
    f = lambda: (linear_forward(X, W, b)[0] * dY).sum()  # its gradient on Y is dY
    numeric_dX = numerical_grad(f, X)
    numeric_dW = numerical_grad(f, W)
    numeric_db = numerical_grad(f, b)
    dx, dw, db = linear_backward(dY, cache, W)
    np.testing.assert_allclose(dX_sum, numeric_dX, atol=1e-8)
    np.testing.assert_allclose(dW_sum, numeric_dW, atol=1e-8)
    np.testing.assert_allclose(db_sum, numeric_db, atol=1e-8)
    np.testing.assert_allclose(dx, dX_sum, atol=1e-12)
    np.testing.assert_allclose(dw, dW_sum, atol=1e-12)
    np.testing.assert_allclose(db, db_sum, atol=1e-12)


def test_gelu_derivative_matches_the_code():
    """GELU's derivative, built step by step, equals the diagonal of the forward's Jacobian and gelu_backward."""
    x = np.array([[-1.0, 0.0, 1.0, 2.0]])  # the inputs of test_gelu_worked_example
    c = np.sqrt(2.0 / np.pi)  # the constants of the tanh approximation, written here independently
    a = 0.044715
    assert c == GELU_C and a == GELU_A
    u = c * (x + a * x**3)
    t = np.tanh(u)
    dt_du = 1.0 - t**2  # step 2: tanh' = 1 - tanh^2
    du_dx = c * (1.0 + 3.0 * a * x**2)  # step 3
    derived = 0.5 * (1.0 + t) + 0.5 * x * dt_du * du_dx  # steps 1 and 4: the product rule and the chain rule
    n = x.shape[1]
    numeric = np.zeros((n, n))  # the forward's Jacobian by central differences: row i is dY_i / dX_j
    for i in range(n):
        numeric[i] = numerical_grad(lambda: gelu_forward(x)[0][0, i], x)[0]
    off_diagonal = numeric - np.diag(np.diag(numeric))
    dx = gelu_backward(np.ones_like(x), gelu_forward(x)[1])  # dY = 1 gives the derivative itself
    np.testing.assert_allclose(np.diag(numeric), derived[0], atol=1e-8)
    np.testing.assert_allclose(off_diagonal, 0.0, atol=1e-12)
    np.testing.assert_allclose(dx, derived, atol=1e-12)


def test_feed_forward_worked_example():
    """block_forward with attention switched off: X2 = X + W2-layer(GELU(W1-layer(LN2(X))))."""
    cfg = ModelConfig(vocab_size=3, seq_len=2, emb_dim=2, n_heads=1, n_layers=1, ff_dim=3)
    params = {k: np.zeros_like(v) for k, v in init_block_params(cfg, np.random.default_rng(0), 0).items()}
    params["b0.ln1_g"] = np.ones(2)
    params["b0.ln2_g"] = np.ones(2)  # LayerNorm 2 only normalises: gamma 1, beta 0
    # every attention weight and bias is 0, so attention adds 0 and X1 = X
    params["b0.ff_w1"] = np.array([[1.0, 0.0, -1.0], [1.0, 2.0, 0.0]])  # (d, F) = (2, 3)
    params["b0.ff_b1"] = np.array([0.5, 0.0, -2.0])
    params["b0.ff_w2"] = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])  # (F, d) = (3, 2)
    params["b0.ff_b2"] = np.array([0.0, 0.5])
    X = np.array([[1.0, 3.0], [2.0, 0.0]])
    X2, cache = block_forward(X, params, 0, cfg)
    # LN2: row 0 has mean 2 and deviations [-1, 1], variance 1, so Xn2 = [-1, 1] up to epsilon; row 1 is [1, -1]
    # H = Xn2 W1 + b1: row 0 = [-1 + 1, 0 + 2, 1 + 0] + [0.5, 0, -2] = [0.5, 2, -1]; row 1 = [0, -2, -1] + b1 = [0.5, -2, -3]
    # G = GELU(H): GELU(0.5) = 0.345714, GELU(2) = 1.954598, GELU(-1) = -0.158808, GELU(-2) = -0.045402, GELU(-3) = -0.003637
    # F = G W2 + b2 = [G0 + G2, G1 - G2] + [0, 0.5]: row 0 = [0.186906, 2.613406]; row 1 = [0.342077, 0.458235]
    # X2 = X + F, because attention added 0
    np.testing.assert_allclose(X2, [[1.186906, 5.613406], [2.342077, 0.458235]], atol=1e-4)


def test_softmax_shift_worked_example():
    """Subtracting the row maximum gives the same probabilities, and keeps exp finite where the plain formula fails."""
    ln3 = np.log(3.0)
    X = np.array([[0.0, ln3], [1000.0, 1000.0 + ln3], [-1000.0, -1000.0 + ln3]])  # the same gap in every row
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        E_plain = np.exp(X)  # row 1 overflows to inf, row 2 underflows to 0
        plain = E_plain / E_plain.sum(axis=-1, keepdims=True)  # inf / inf and 0 / 0 are nan
    M = X.max(axis=-1, keepdims=True)
    Z = X - M  # the largest entry of every row is 0, so exp(Z) is at most 1
    E = np.exp(Z)
    P, _ = softmax_forward(X)
    np.testing.assert_allclose(plain[0], [0.25, 0.75])  # where exp is finite, both ways agree
    assert np.isinf(E_plain[1]).all() and (E_plain[2] == 0).all()
    assert np.isnan(plain[1:]).all()
    np.testing.assert_allclose(P, [[0.25, 0.75]] * 3, atol=1e-12)  # e^0 : e^ln3 = 1 : 3 in every row
    np.testing.assert_allclose(E / E.sum(axis=-1, keepdims=True), P)


def test_softmax_jacobian_matches_the_code():
    """The Jacobian diag(P) - P P^T equals central differences; dP times it equals softmax_backward."""
    x = np.log(np.array([[2.0, 3.0, 5.0]]))  # P = [2, 3, 5] / 10
    dP = np.array([[1.0, 0.0, 2.0]])
    P, cache = softmax_forward(x)
    p = P[0]
    jacobian = np.diag(p) - np.outer(p, p)  # step 1: entry (i, j) is P_i (delta_ij - P_j)
    n = x.shape[1]
    numeric = np.zeros((n, n))  # row i: dP_i / dX_j by central differences of the forward
    for i in range(n):
        numeric[i] = numerical_grad(lambda: softmax_forward(x)[0][0, i], x)[0]
    weighted = (dP * P).sum(axis=-1, keepdims=True)  # step 2: sum_i dP_i P_i
    step2 = P * (dP - weighted)
    chain = dP @ jacobian  # the chain rule with the whole matrix: sum_i dP_i J_ij
    dx = softmax_backward(dP, cache)
    row_sums = dx.sum(axis=-1)  # step 3: 0, because P sums to 1
    np.testing.assert_allclose(p, [0.2, 0.3, 0.5])
    np.testing.assert_allclose(jacobian, numeric, atol=1e-8)
    np.testing.assert_allclose(chain, dx, atol=1e-12)
    np.testing.assert_allclose(step2, dx, atol=1e-12)
    np.testing.assert_allclose(row_sums, 0.0, atol=1e-12)

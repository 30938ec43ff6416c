"""The operations of a small transformer, each with a backward pass written by hand.

Why this module exists: nothing here relies on automatic differentiation, so
every operation is a pair of plain NumPy functions. ``<name>_forward(...)``
returns ``(out, cache)``; ``<name>_backward(dOut, cache, ...)``, placed directly
below it, takes the gradient of the loss with respect to ``out`` and returns the
gradients with respect to the forward's inputs. A gradient is named after what
it is the gradient of: ``dX`` is dLoss/dX, ``dgamma`` is dLoss/dgamma.

What it follows: the GPT-2 / nanoGPT transformer (pre-LayerNorm blocks, GELU in
its tanh approximation, causal multi-head self-attention with biased
projections), written for one sequence at a time: activations have shape
(T, d) and there is no batch axis. Input checking lives at the model's entry
points in transformer.py, not in these operations.
"""

import numpy as np

# --------------------------------------------------------------------------- embedding


def embedding_forward(ids, tok_emb, pos_emb):
    """Row t of the output is the vector of token ids[t] plus the vector of position t."""
    T = ids.shape[0]
    X = tok_emb[ids] + pos_emb[:T]  # (T, d)
    return X, ids


def embedding_backward(dX, cache, tok_emb, pos_emb):
    """Scatter each row of dX back to the two table rows it was read from.

    np.add.at accumulates, so a token that occurs twice in the sequence receives
    the sum of both rows (plain fancy-index assignment would keep only one).
    """
    ids = cache
    T = ids.shape[0]
    dtok_emb = np.zeros_like(tok_emb)  # (V, d)
    np.add.at(dtok_emb, ids, dX)
    dpos_emb = np.zeros_like(pos_emb)  # (seq_len, d); rows T.. were not used and stay 0
    np.add.at(dpos_emb, np.arange(T), dX)
    return dtok_emb, dpos_emb


# --------------------------------------------------------------------------- linear


def linear_forward(X, W, b):
    """Affine map of every row, Y = X W + b, with W of shape (d_in, d_out)."""
    Y = X @ W + b  # (T, d_out)
    return Y, X


def linear_backward(dY, cache, W):
    X = cache
    dX = dY @ W.T  # (T, d_in)
    dW = X.T @ dY  # (d_in, d_out): a sum over rows of outer products x_t dy_t
    db = dY.sum(axis=0)  # (d_out,): b was added to every row
    return dX, dW, db


# --------------------------------------------------------------------------- layer norm

# LayerNorm over the last axis of each row: Xhat = (X - mu) * s with
# s = 1 / sqrt(var + epsilon), then Y = gamma * Xhat + beta.
# Backward: differentiating Xhat through mu and var (s depends on X too) gives
# dX = s * (dXhat - mean(dXhat) - Xhat * mean(dXhat * Xhat)), means over the row.
# gamma and beta are shared by all rows, so their gradients sum over rows.


def layer_norm_forward(X, gamma, beta, epsilon=1e-5):
    mu = X.mean(axis=-1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    s = 1.0 / np.sqrt(var + epsilon)
    Xhat = (X - mu) * s
    return gamma * Xhat + beta, (Xhat, s)


def layer_norm_backward(dY, cache, gamma):
    Xhat, s = cache
    dXhat = dY * gamma
    dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))

    dgamma = (dY * Xhat).sum(axis=0)
    dbeta = dY.sum(axis=0)
    return dX, dgamma, dbeta


# --------------------------------------------------------------------------- GELU

GELU_C = np.sqrt(2.0 / np.pi)  # sqrt(2 / pi), the scale inside the tanh approximation
GELU_A = 0.044715  # the cubic coefficient of the tanh approximation (Hendrycks & Gimpel)


def gelu_forward(X):
    """GELU as in GPT-2: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    u = GELU_C * (X + GELU_A * X**3)  # (T, f)
    t = np.tanh(u)  # (T, f)
    Y = 0.5 * X * (1.0 + t)  # (T, f)
    return Y, (X, t)


def gelu_backward(dY, cache):
    """Product rule on 0.5 x (1 + t), with dt/du = 1 - t^2 and du/dx = c (1 + 3 a x^2)."""
    X, t = cache
    du_dX = GELU_C * (1.0 + 3.0 * GELU_A * X**2)  # (T, f)
    dY_dX = 0.5 * (1.0 + t) + 0.5 * X * (1.0 - t**2) * du_dX  # (T, f)
    dX = dY * dY_dX  # (T, f)
    return dX


# --------------------------------------------------------------------------- softmax


def softmax_forward(X):
    """Softmax over the last axis; the cache is the output P itself.

    Subtracting each row's max changes nothing mathematically (softmax ignores
    a constant added to a row) but keeps exp from overflowing.
    """
    Z = X - X.max(axis=-1, keepdims=True)  # (..., n), largest entry of each row is 0
    E = np.exp(Z)  # (..., n), entries in (0, 1]
    P = E / E.sum(axis=-1, keepdims=True)  # (..., n), rows sum to 1
    return P, P


def softmax_backward(dP, cache):
    """The Jacobian dP_i/dX_j = P_i (delta_ij - P_j), applied to each row."""
    P = cache
    dX = P * (dP - (dP * P).sum(axis=-1, keepdims=True))  # (..., n), rows sum to 0
    return dX


# --------------------------------------------------------------------------- attention


def split_heads(X, n_heads):
    """(T, d) -> (n_heads, T, d // n_heads): head h owns a contiguous block of columns."""
    T, d = X.shape
    return X.reshape(T, n_heads, d // n_heads).transpose(1, 0, 2)


def merge_heads(Xh):
    """(n_heads, T, hd) -> (T, n_heads * hd), the inverse of split_heads.

    Both only move numbers around, so the backward of each is the other.
    """
    H, T, hd = Xh.shape
    return Xh.transpose(1, 0, 2).reshape(T, H * hd)


def causal_attention_forward(Q, K, V):
    """softmax(Q K^T / sqrt(hd), future masked) V for every head at once.

    Q, K, V have shape (H, T, hd). Query t may only look at keys 0..t.
    """
    T = Q.shape[1]
    scale = 1.0 / np.sqrt(Q.shape[-1])
    S = (Q @ K.transpose(0, 2, 1)) * scale  # (H, T, T), row = query, column = key
    future = np.triu(np.ones((T, T), dtype=bool), k=1)  # (T, T), True where key comes after query
    S_masked = np.where(future, -np.inf, S)  # (H, T, T); the diagonal is never masked
    P, _ = softmax_forward(S_masked)  # (H, T, T), exactly 0 where masked
    O = P @ V  # (H, T, hd)
    return O, (Q, K, V, P, future, scale)


def causal_attention_backward(dO, cache):
    Q, K, V, P, future, scale = cache
    dP = dO @ V.transpose(0, 2, 1)  # (H, T, T)
    dV = P.transpose(0, 2, 1) @ dO  # (H, T, hd)
    dS_masked = softmax_backward(dP, P)  # (H, T, T), already 0 where masked because P is 0 there
    dS = np.where(future, 0.0, dS_masked)  # (H, T, T): no gradient passes through a masked entry
    dQ = (dS @ K) * scale  # (H, T, hd)
    dK = (dS.transpose(0, 2, 1) @ Q) * scale  # (H, T, hd)
    return dQ, dK, dV


def attention_forward(X, Wq, bq, Wk, bk, Wv, bv, Wo, bo, n_heads):
    """Causal multi-head self-attention of one sequence X (T, d), heads split from d."""
    Q, c_q = linear_forward(X, Wq, bq)  # (T, d) queries
    K, c_k = linear_forward(X, Wk, bk)  # (T, d) keys
    V, c_v = linear_forward(X, Wv, bv)  # (T, d) values
    Qh = split_heads(Q, n_heads)  # (H, T, hd)
    Kh = split_heads(K, n_heads)  # (H, T, hd)
    Vh = split_heads(V, n_heads)  # (H, T, hd)
    Oh, c_heads = causal_attention_forward(Qh, Kh, Vh)  # (H, T, hd)
    O = merge_heads(Oh)  # (T, d), the heads side by side
    Y, c_o = linear_forward(O, Wo, bo)  # (T, d)
    return Y, (c_q, c_k, c_v, c_heads, c_o, n_heads)


def attention_backward(dY, cache, Wq, Wk, Wv, Wo):
    """Returns dX and (dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo).

    dbk comes out zero (exactly, or up to rounding). The key bias adds q_t . bk
    to every score in row t, a constant per row, and softmax ignores a constant
    added to a row, so the loss does not depend on bk. The chain rule shows the
    same: dbk = sum_j dK_j = scale * sum_t q_t (sum_j dS_tj), and every row of dS
    sums to zero (see softmax_backward). It is still computed like the others.
    """
    c_q, c_k, c_v, c_heads, c_o, n_heads = cache
    dO, dWo, dbo = linear_backward(dY, c_o, Wo)  # (T, d)
    dOh = split_heads(dO, n_heads)  # (H, T, hd), the backward of merge_heads
    dQh, dKh, dVh = causal_attention_backward(dOh, c_heads)  # (H, T, hd) each
    dQ = merge_heads(dQh)  # (T, d), the backward of split_heads
    dK = merge_heads(dKh)  # (T, d)
    dV = merge_heads(dVh)  # (T, d)
    dXq, dWq, dbq = linear_backward(dQ, c_q, Wq)  # (T, d)
    dXk, dWk, dbk = linear_backward(dK, c_k, Wk)  # (T, d); dbk is 0, see the docstring
    dXv, dWv, dbv = linear_backward(dV, c_v, Wv)  # (T, d)
    dX = dXq + dXk + dXv  # (T, d): X fed all three projections, so the gradients add
    return dX, (dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo)


# --------------------------------------------------------------------------- loss


def cross_entropy_forward(logits, targets):
    """Mean over positions t of -log softmax(logits[t])[targets[t]]; logits (T, V), targets (T,)."""
    T = logits.shape[0]
    Z = logits - logits.max(axis=-1, keepdims=True)  # (T, V), shifted for stability
    log_P = Z - np.log(np.exp(Z).sum(axis=-1, keepdims=True))  # (T, V) log-probabilities
    loss = -log_P[np.arange(T), targets].mean()
    P = np.exp(log_P)  # (T, V)
    return loss, (P, targets)


def cross_entropy_backward(dloss, cache):
    """dlogits = dloss * (P - onehot(targets)) / T; pass dloss = 1.0 for the loss itself."""
    P, targets = cache
    T = P.shape[0]
    onehot = np.zeros_like(P)  # (T, V)
    onehot[np.arange(T), targets] = 1.0
    dlogits = dloss * (P - onehot) / T  # (T, V)
    return dlogits

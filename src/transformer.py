"""The model: a GPT-style decoder-only transformer assembled from the operations in ops.py.

Why this module exists: it wires the hand-differentiated operations into a
model, keeps the parameters in one flat dict of named arrays, and runs the
backward pass in exactly the reverse order of the forward pass, adding
gradients wherever two paths join (the residual connections).

What it follows: GPT-2 / nanoGPT with pre-LayerNorm blocks
(x + attn(ln1(x)), then x + mlp(ln2(x))), a final LayerNorm and a linear head,
for one sequence of token ids at a time. This module is also where bad input is
caught: forward, loss_and_grads and generate raise ValueError with a message
naming the problem.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from ops import (
    attention_backward,
    attention_forward,
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
    softmax_forward,
)


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int  # number of distinct token ids; ids run from 0 to vocab_size - 1
    seq_len: int = 16  # most positions the model reads at once (rows of pos_emb)
    emb_dim: int = 32  # width d of every token vector in the residual stream
    n_heads: int = 4  # attention heads; each gets emb_dim // n_heads columns
    n_layers: int = 2  # number of transformer blocks
    ff_dim: int = 128  # hidden width of each block's feed-forward layer
    ln_eps: float = 1e-5  # epsilon added to the variance inside every LayerNorm
    init_std: float = 0.02  # standard deviation of the normal init of every matrix

    def __post_init__(self):
        for name in ("vocab_size", "seq_len", "emb_dim", "n_heads", "n_layers", "ff_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        if self.emb_dim % self.n_heads != 0:
            raise ValueError(f"ModelConfig.emb_dim ({self.emb_dim}) must be divisible by n_heads ({self.n_heads})")

    @classmethod
    def from_dict(cls, d):
        """Build a config from a dict; a key that is not a field raises ValueError naming it."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in d:
            if key not in known:
                raise ValueError(f"unknown ModelConfig key: {key!r}")
        return cls(**d)

    def to_dict(self):
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------- parameters


def init_params(cfg, rng):
    """All parameters as a dict of named arrays; matrices ~ normal(0, init_std), biases 0, LayerNorm gains 1."""
    d, V, std = cfg.emb_dim, cfg.vocab_size, cfg.init_std
    params = {}
    params["tok_emb"] = rng.normal(0.0, std, (V, d))  # one row per token id
    params["pos_emb"] = rng.normal(0.0, std, (cfg.seq_len, d))  # one row per position
    for l in range(cfg.n_layers):
        params.update(init_block_params(cfg, rng, l))
    params["lnf_g"], params["lnf_b"] = np.ones(d), np.zeros(d)  # final LayerNorm
    params["head_w"] = rng.normal(0.0, std, (d, V))  # residual stream -> logits
    params["head_b"] = np.zeros(V)
    return params


def init_block_params(cfg, rng, l):
    """The parameters of block l, named "b{l}.<name>"."""
    d, f, std = cfg.emb_dim, cfg.ff_dim, cfg.init_std
    p = f"b{l}."
    block = {}
    block[p + "ln1_g"], block[p + "ln1_b"] = np.ones(d), np.zeros(d)  # LayerNorm before attention
    block[p + "attn_wq"], block[p + "attn_bq"] = rng.normal(0.0, std, (d, d)), np.zeros(d)  # queries
    block[p + "attn_wk"], block[p + "attn_bk"] = rng.normal(0.0, std, (d, d)), np.zeros(d)  # keys
    block[p + "attn_wv"], block[p + "attn_bv"] = rng.normal(0.0, std, (d, d)), np.zeros(d)  # values
    block[p + "attn_wo"], block[p + "attn_bo"] = rng.normal(0.0, std, (d, d)), np.zeros(d)  # output projection
    block[p + "ln2_g"], block[p + "ln2_b"] = np.ones(d), np.zeros(d)  # LayerNorm before the feed-forward
    block[p + "ff_w1"], block[p + "ff_b1"] = rng.normal(0.0, std, (d, f)), np.zeros(f)  # d -> ff_dim
    block[p + "ff_w2"], block[p + "ff_b2"] = rng.normal(0.0, std, (f, d)), np.zeros(d)  # ff_dim -> d
    return block


# --------------------------------------------------------------------------- input checks


def check_ids(ids, cfg, name="ids", max_len=None):
    """ids as a 1-D integer array of token ids in [0, vocab_size), or a ValueError naming the problem."""
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of token ids, got shape {ids.shape}")
    if ids.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one token id, got an empty sequence")
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if max_len is not None and ids.shape[0] > max_len:
        raise ValueError(f"{name} has length {ids.shape[0]}, longer than seq_len = {max_len}")
    outside = (ids < 0) | (ids >= cfg.vocab_size)
    if outside.any():
        raise ValueError(f"{name} holds token id {ids[outside][0]}, outside the vocabulary [0, {cfg.vocab_size})")
    return ids


# --------------------------------------------------------------------------- one block


def block_forward(X, params, l, cfg):
    """Pre-LN block l: X1 = X + attention(LN1(X)), then X2 = X1 + FF(LN2(X1)). X is (T, d)."""
    p = f"b{l}."
    Xn, c_ln1 = layer_norm_forward(X, params[p + "ln1_g"], params[p + "ln1_b"], cfg.ln_eps)  # (T, d)
    A, c_attn = attention_forward(
        Xn,
        params[p + "attn_wq"],
        params[p + "attn_bq"],
        params[p + "attn_wk"],
        params[p + "attn_bk"],
        params[p + "attn_wv"],
        params[p + "attn_bv"],
        params[p + "attn_wo"],
        params[p + "attn_bo"],
        cfg.n_heads,
    )  # (T, d)
    X1 = X + A  # (T, d) residual
    Xn2, c_ln2 = layer_norm_forward(X1, params[p + "ln2_g"], params[p + "ln2_b"], cfg.ln_eps)  # (T, d)
    H, c_ff1 = linear_forward(Xn2, params[p + "ff_w1"], params[p + "ff_b1"])  # (T, ff_dim)
    G, c_gelu = gelu_forward(H)  # (T, ff_dim)
    F, c_ff2 = linear_forward(G, params[p + "ff_w2"], params[p + "ff_b2"])  # (T, d)
    X2 = X1 + F  # (T, d) residual
    return X2, (c_ln1, c_attn, c_ln2, c_ff1, c_gelu, c_ff2)


def block_backward(dX2, cache, params, l, cfg):
    """Gradients of block l, in the reverse order of block_forward. Returns dX and a dict of this block's grads."""
    p = f"b{l}."
    c_ln1, c_attn, c_ln2, c_ff1, c_gelu, c_ff2 = cache
    dG, dff_w2, dff_b2 = linear_backward(dX2, c_ff2, params[p + "ff_w2"])  # (T, ff_dim); dF = dX2
    dH = gelu_backward(dG, c_gelu)  # (T, ff_dim)
    dXn2, dff_w1, dff_b1 = linear_backward(dH, c_ff1, params[p + "ff_w1"])  # (T, d)
    dX1_branch, dln2_g, dln2_b = layer_norm_backward(dXn2, c_ln2, params[p + "ln2_g"])  # (T, d)
    dX1 = dX2 + dX1_branch  # (T, d): X2 = X1 + F, the residual path and the branch add
    dXn, dattn = attention_backward(
        dX1, c_attn, params[p + "attn_wq"], params[p + "attn_wk"], params[p + "attn_wv"], params[p + "attn_wo"]
    )  # (T, d)
    dX_branch, dln1_g, dln1_b = layer_norm_backward(dXn, c_ln1, params[p + "ln1_g"])  # (T, d)
    dX = dX1 + dX_branch  # (T, d): X1 = X + A, the residual path and the branch add
    dWq, dbq, dWk, dbk, dWv, dbv, dWo, dbo = dattn
    grads = {
        p + "ln1_g": dln1_g,
        p + "ln1_b": dln1_b,
        p + "attn_wq": dWq,
        p + "attn_bq": dbq,
        p + "attn_wk": dWk,
        p + "attn_bk": dbk,
        p + "attn_wv": dWv,
        p + "attn_bv": dbv,
        p + "attn_wo": dWo,
        p + "attn_bo": dbo,
        p + "ln2_g": dln2_g,
        p + "ln2_b": dln2_b,
        p + "ff_w1": dff_w1,
        p + "ff_b1": dff_b1,
        p + "ff_w2": dff_w2,
        p + "ff_b2": dff_b2,
    }
    return dX, grads


# --------------------------------------------------------------------------- whole model


def forward(ids, params, cfg):
    """Logits (T, V) for the next token at every position of ids (T,), and the cache for backward."""
    ids = check_ids(ids, cfg, "ids", max_len=cfg.seq_len)
    X, c_emb = embedding_forward(ids, params["tok_emb"], params["pos_emb"])  # (T, d)
    c_blocks = []
    for l in range(cfg.n_layers):
        X, c_block = block_forward(X, params, l, cfg)  # (T, d)
        c_blocks.append(c_block)
    Xf, c_lnf = layer_norm_forward(X, params["lnf_g"], params["lnf_b"], cfg.ln_eps)  # (T, d)
    logits, c_head = linear_forward(Xf, params["head_w"], params["head_b"])  # (T, V)
    return logits, (c_emb, c_blocks, c_lnf, c_head)


def backward(dlogits, cache, params, cfg):
    """Gradients of every parameter given dlogits (T, V); the reverse of forward, step by step."""
    c_emb, c_blocks, c_lnf, c_head = cache
    grads = {}
    dXf, dhead_w, dhead_b = linear_backward(dlogits, c_head, params["head_w"])  # (T, d)
    dX, dlnf_g, dlnf_b = layer_norm_backward(dXf, c_lnf, params["lnf_g"])  # (T, d)
    for l in reversed(range(cfg.n_layers)):
        dX, block_grads = block_backward(dX, c_blocks[l], params, l, cfg)  # (T, d)
        grads.update(block_grads)
    dtok_emb, dpos_emb = embedding_backward(dX, c_emb, params["tok_emb"], params["pos_emb"])
    grads.update(tok_emb=dtok_emb, pos_emb=dpos_emb, lnf_g=dlnf_g, lnf_b=dlnf_b, head_w=dhead_w, head_b=dhead_b)
    return {name: grads[name] for name in params}  # same keys, same order as params


def loss_and_grads(ids, targets, params, cfg):
    """Mean next-token cross-entropy of one sequence and its gradient for every parameter.

    ids (T,) are the inputs and targets (T,) the token expected after each of them.
    """
    ids = check_ids(ids, cfg, "ids", max_len=cfg.seq_len)
    targets = check_ids(targets, cfg, "targets")
    if targets.shape != ids.shape:
        raise ValueError(f"targets must have the same length as ids: got {targets.shape[0]} and {ids.shape[0]}")
    logits, cache = forward(ids, params, cfg)  # (T, V)
    loss, c_ce = cross_entropy_forward(logits, targets)
    dlogits = cross_entropy_backward(1.0, c_ce)  # (T, V)
    grads = backward(dlogits, cache, params, cfg)
    return loss, grads


def generate(prompt_ids, params, cfg, n_new, temperature=1.0, rng=None):
    """Append n_new tokens to prompt_ids one at a time and return the n_new new ids.

    The model sees at most the last seq_len ids (a longer prompt is cut from
    the left). temperature 0 picks the most likely token (greedy); otherwise
    the next token is drawn from softmax(logits / temperature) using rng, which
    may be a seed or a numpy Generator: the same seed gives the same tokens.
    """
    ids = list(check_ids(prompt_ids, cfg, "prompt_ids"))
    n_prompt = len(ids)
    if isinstance(n_new, bool) or not isinstance(n_new, (int, np.integer)) or n_new < 0:
        raise ValueError(f"n_new must be a non-negative integer, got {n_new!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    rng = np.random.default_rng(rng)
    for _ in range(n_new):
        context = np.array(ids[-cfg.seq_len :])  # (T,), T <= seq_len
        logits, _ = forward(context, params, cfg)  # (T, V)
        last = logits[-1]  # (V,) scores for the token after the context
        if temperature == 0:
            next_id = int(np.argmax(last))
        else:
            P, _ = softmax_forward(last / temperature)  # (V,)
            next_id = int(rng.choice(cfg.vocab_size, p=P))
        ids.append(next_id)
    return np.array(ids[n_prompt:], dtype=np.int64)

"""Optional: the loss and every gradient against PyTorch autograd, on the same parameters.

The central-difference checks (test_gradcheck.py) are the project's own
evidence; this is a second, independent opinion. The same model is written
here from PyTorch's own building blocks (F.layer_norm, F.gelu with the tanh
approximation, F.scaled_dot_product_attention with is_causal=True,
F.cross_entropy) and differentiated by autograd, in float64. bench/bench_model.py
reuses torch_loss to time the same model in PyTorch.
"""

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="optional cross-check against PyTorch autograd; torch is not a dependency of the project"
)
F = torch.nn.functional

from gradcheck import rel_error  # noqa: E402
from transformer import ModelConfig, init_params, loss_and_grads  # noqa: E402


def torch_loss(ids, targets, tparams, cfg):
    """The model of transformer.py in PyTorch: mean next-token cross-entropy of one sequence."""
    T, d, H = len(ids), cfg.emb_dim, cfg.n_heads
    ids = torch.as_tensor(ids)
    X = tparams["tok_emb"][ids] + tparams["pos_emb"][:T]
    for l in range(cfg.n_layers):
        w = {name[len(f"b{l}.") :]: value for name, value in tparams.items() if name.startswith(f"b{l}.")}
        Xn = F.layer_norm(X, (d,), w["ln1_g"], w["ln1_b"], cfg.ln_eps)
        Q = (Xn @ w["attn_wq"] + w["attn_bq"]).view(T, H, d // H).transpose(0, 1)
        K = (Xn @ w["attn_wk"] + w["attn_bk"]).view(T, H, d // H).transpose(0, 1)
        V = (Xn @ w["attn_wv"] + w["attn_bv"]).view(T, H, d // H).transpose(0, 1)
        O = F.scaled_dot_product_attention(Q, K, V, is_causal=True).transpose(0, 1).reshape(T, d)
        X = X + O @ w["attn_wo"] + w["attn_bo"]
        Xn2 = F.layer_norm(X, (d,), w["ln2_g"], w["ln2_b"], cfg.ln_eps)
        X = X + F.gelu(Xn2 @ w["ff_w1"] + w["ff_b1"], approximate="tanh") @ w["ff_w2"] + w["ff_b2"]
    Xf = F.layer_norm(X, (d,), tparams["lnf_g"], tparams["lnf_b"], cfg.ln_eps)
    logits = Xf @ tparams["head_w"] + tparams["head_b"]
    return F.cross_entropy(logits, torch.as_tensor(targets))


def to_torch(params):
    """Copies of the NumPy parameters as float64 leaf tensors that collect gradients."""
    return {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in params.items()}


def test_loss_and_every_gradient_match_pytorch():
    cfg = ModelConfig(vocab_size=11, seq_len=8, emb_dim=16, n_heads=4, n_layers=2, ff_dim=24, init_std=0.3)
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    for value in params.values():
        value += rng.normal(0.0, 0.2, value.shape)  # no gain exactly 1, no bias exactly 0
    ids = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    targets = np.array([1, 4, 1, 5, 9, 2, 6, 5])
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    tparams = to_torch(params)
    tloss = torch_loss(ids, targets, tparams, cfg)
    tloss.backward()
    assert loss == pytest.approx(tloss.item(), rel=1e-12)
    failures = []
    largest = max(np.abs(grads[name]).max() for name in grads)
    for name in params:
        theirs = tparams[name].grad.numpy()
        if name.endswith("attn_bk"):  # exactly 0 in exact arithmetic: compare with the scale of the others
            err = max(np.abs(grads[name]).max(), np.abs(theirs).max()) / largest
        else:
            err = rel_error(grads[name], theirs)
        if not err < 1e-10:
            failures.append(f"{name}: mine {grads[name]} torch {theirs} rel err {err:.2e}")
    assert not failures, "\n".join(failures)

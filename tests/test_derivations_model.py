"""Worked examples and numerical checks for the pages on the output head, the
cross-entropy loss, backpropagation through the model and gradient checking.

Each test runs the real code on small inputs and asserts what those pages say.
The site shows these tests' locals, recorded while they run, so every number on
the pages comes from here or from the code these tests call.
"""

import numpy as np
import pytest

from gradcheck import numerical_grad, rel_error
from ops import cross_entropy_backward, cross_entropy_forward, softmax_backward, softmax_forward
from tests.test_gradcheck import TOL, loss_only, small_model, text_table
from transformer import ModelConfig, backward, check_ids, forward, init_params, loss_and_grads


def tiny_model():
    """Four tokens, three positions, one block of width 4, parameters moved away from their init.

    init_params gives zero biases and unit LayerNorm gains; the extra noise makes
    every parameter matter in the examples. The values are random, not trained.
    """
    cfg = ModelConfig(vocab_size=4, seq_len=3, emb_dim=4, n_heads=2, n_layers=1, ff_dim=8, init_std=0.5)
    rng = np.random.default_rng(3)
    params = init_params(cfg, rng)
    for value in params.values():
        value += rng.normal(0.0, 0.3, value.shape)
    return cfg, params


def rejection(ids, cfg, name="ids", max_len=None):
    """The message of the ValueError that check_ids raises for ids."""
    with pytest.raises(ValueError) as info:
        check_ids(ids, cfg, name, max_len=max_len)
    return str(info.value)


# --------------------------------------------------------------------------- the head and the logits


def test_head_worked_example():
    """forward ends in the final LayerNorm and one linear layer; row t of the logits scores the next token."""
    cfg, params = tiny_model()
    ids = np.array([2, 0, 3])
    logits, cache = forward(ids, params, cfg)
    c_emb, c_blocks, c_lnf, c_head = cache
    Xf = c_head  # the head's cache is its input, the output of the final LayerNorm
    np.testing.assert_allclose(logits, Xf @ params["head_w"] + params["head_b"], rtol=1e-12)
    assert logits.shape == (len(ids), cfg.vocab_size)
    # softmax of a row: a probability for each token of the vocabulary being the next one
    P, _ = softmax_forward(logits)
    row_sums = P.sum(axis=-1)
    greedy = np.argmax(logits, axis=-1)  # what temperature 0 would pick after each prefix
    np.testing.assert_allclose(row_sums, 1.0)
    assert (np.argmax(P, axis=-1) == greedy).all()  # softmax keeps the order of a row
    # row t reads ids[0..t] only: changing the last id leaves the earlier rows exactly as they were
    changed = ids.copy()
    changed[2] = 1
    logits_changed, _ = forward(changed, params, cfg)
    difference = logits_changed - logits
    np.testing.assert_array_equal(difference[:2], 0.0)
    assert np.abs(difference[2]).max() > 1e-3


def test_check_ids_worked_example():
    """What check_ids accepts and turns into an array, what it rejects, and what would go wrong without it."""
    cfg = ModelConfig(vocab_size=4, seq_len=3)
    ids = check_ids([2, 0, 3], cfg, "ids", max_len=cfg.seq_len)  # a list is accepted and returned as an array
    assert isinstance(ids, np.ndarray) and ids.dtype.kind == "i"
    wrong_shape = rejection([[2, 0], [3, 1]], cfg)
    empty = rejection([], cfg)  # np.asarray([]) is float64: the emptiness test must come before the dtype test
    not_integers = rejection([2.0, 0.0], cfg)
    too_long = rejection([2, 0, 3, 1], cfg, max_len=cfg.seq_len)
    too_large = rejection([2, 4, 3], cfg)
    negative = rejection([0, -1], cfg, name="targets")
    assert wrong_shape == "ids must be a 1-D sequence of token ids, got shape (2, 2)"
    assert empty == "ids must hold at least one token id, got an empty sequence"
    assert not_integers == "ids must hold integer token ids, got dtype float64"
    assert too_long == "ids has length 4, longer than seq_len = 3"
    assert too_large == "ids holds token id 4, outside the vocabulary [0, 4)"
    assert negative == "targets holds token id -1, outside the vocabulary [0, 4)"
    # Without the check, a negative id is not an error in NumPy: it counts from the end.
    tok_emb = np.arange(8.0).reshape(4, 2)  # (V, d) with V = 4
    row_read_for_minus_one = tok_emb[np.array([-1])]
    np.testing.assert_array_equal(row_read_for_minus_one, tok_emb[[3]])  # the row of token 3, silently
    logits = np.array([[0.0, 0.0, 0.0, 2.0]])
    loss_for_minus_one, _ = cross_entropy_forward(logits, np.array([-1]))
    loss_for_three, _ = cross_entropy_forward(logits, np.array([3]))
    assert loss_for_minus_one == loss_for_three  # a wrong target gives a plausible loss, not an error


# --------------------------------------------------------------------------- cross-entropy


def test_cross_entropy_gradient_derivation_matches_the_code():
    """(P - onehot) / T equals central differences of the loss, the long way through softmax, and the code."""
    logits = np.array([[0.0, 0.0, np.log(2.0)], [1.0, 1.0, 1.0]])  # the inputs of test_cross_entropy_worked_example
    targets = np.array([2, 0])
    T, V = logits.shape
    loss, cache = cross_entropy_forward(logits, targets)
    P, _ = softmax_forward(logits)  # step 2: the derivative of log-sum-exp is softmax
    onehot = np.eye(V)[targets]  # step 3: the derivative of the target's own logit
    derived = (P - onehot) / T  # step 4: the mean over positions divides by T
    numeric = numerical_grad(lambda: cross_entropy_forward(logits, targets)[0], logits)
    # The long way: the gradient on P is -1 / (T P) at each target and 0 elsewhere, then softmax's Jacobian.
    dP = -onehot / (T * P)
    chained = softmax_backward(dP, P)
    dlogits = cross_entropy_backward(1.0, cache)
    row_sums = dlogits.sum(axis=-1)  # each row of P sums to 1 and each row of onehot too
    np.testing.assert_allclose(derived, numeric, atol=1e-9)
    np.testing.assert_allclose(chained, derived, atol=1e-15)
    np.testing.assert_array_equal(dlogits, derived)
    np.testing.assert_allclose(row_sums, 0.0, atol=1e-15)
    # Where a target's probability underflows to 0, the long way divides by 0; the combined form does not.
    extreme = np.array([[1000.0, 0.0]])
    extreme_targets = np.array([1])
    loss_extreme, cache_extreme = cross_entropy_forward(extreme, extreme_targets)
    P_extreme, _ = softmax_forward(extreme)
    onehot_extreme = np.eye(2)[extreme_targets]
    with np.errstate(divide="ignore", invalid="ignore"):
        chained_extreme = softmax_backward(-onehot_extreme / P_extreme, P_extreme)
    combined_extreme = cross_entropy_backward(1.0, cache_extreme)
    assert P_extreme[0, 1] == 0.0
    assert np.isnan(chained_extreme).all()
    np.testing.assert_array_equal(combined_extreme, [[1.0, -1.0]])
    assert loss_extreme == 1000.0


# --------------------------------------------------------------------------- backpropagation


def test_backward_worked_example():
    """backward, fed the loss's dlogits, gives what loss_and_grads gives, key for key."""
    cfg, params = tiny_model()
    ids = np.array([2, 0, 2])  # token 2 occurs twice
    targets = np.array([0, 2, 1])
    logits, cache = forward(ids, params, cfg)
    loss, c_ce = cross_entropy_forward(logits, targets)
    dlogits = cross_entropy_backward(1.0, c_ce)
    grads = backward(dlogits, cache, params, cfg)
    same_loss, same_grads = loss_and_grads(ids, targets, params, cfg)
    assert same_loss == loss
    assert list(grads) == list(params) == list(same_grads)
    for name in params:
        assert grads[name].shape == params[name].shape, name
        np.testing.assert_array_equal(grads[name], same_grads[name], err_msg=name)
    np.testing.assert_array_equal(grads["tok_emb"][[1, 3]], 0.0)  # tokens 1 and 3 are not in ids


# --------------------------------------------------------------------------- gradient checking


def test_numerical_grad_worked_example():
    """Central differences of sum(x^3) against its exact gradient 3 x^2; x is unchanged afterwards."""
    x = np.array([[1.0, -2.0], [0.5, 0.3]])
    before = x.copy()
    grad = numerical_grad(lambda: (x**3).sum(), x)
    exact = 3 * x**2
    gap = float(np.abs(grad - exact).max())
    np.testing.assert_array_equal(x, before)
    assert gap < 1e-9


def test_central_difference_error_against_h():
    """The error of a central difference over h: h^2 / 6 |f'''| while h is large, rounding once h is small."""
    x = np.array([1.0])
    f = lambda: float(np.exp(x[0]))  # f = f' = f''' = e at x = 1
    hs = [10.0**-k for k in range(2, 12)]
    errors = [abs(float(numerical_grad(f, x, h=h)[0]) - np.e) for h in hs]
    eps = float(np.finfo(np.float64).eps)
    truncation = [h**2 / 6 * np.e for h in hs]  # h^2 / 6 |f'''|, the first term of the estimate
    rounding = [eps * np.e / h for h in hs]  # eps |f| / h, the second term
    header = ("h", "measured error", "truncation term", "rounding term")
    table = text_table(
        [header]
        + [
            (f"{h:.0e}", f"{err:.1e}", f"{trunc:.1e}", f"{rnd:.1e}")
            for h, err, trunc, rnd in zip(hs, errors, truncation, rounding)
        ]
    )
    h_star = (3 * eps * np.e / np.e) ** (1 / 3)  # (3 eps |f| / |f'''|)^(1/3)
    for h, err, trunc, rnd in zip(hs, errors, truncation, rounding):
        if h >= 1e-4:
            assert err == pytest.approx(trunc, rel=0.01)  # truncation dominates: the prediction holds
        else:
            assert err <= trunc + rnd  # rounding takes over: the error stays below the estimate
    assert 1e-6 < h_star < 1e-4
    # float32 with the same h: rounding of about 1.2e-7 |f| / h leaves about two correct digits
    x32 = np.array([1.0])
    f32 = lambda: float(np.exp(np.float32(x32[0])))
    float32_error = abs(float(numerical_grad(f32, x32)[0]) - np.e)
    float64_error = errors[hs.index(1e-5)]
    assert 1e-3 < float32_error < 1e-1
    assert float64_error < 1e-9


def test_model_gradient_gap_against_h():
    """Central differences of the model's loss over h, against backprop: the gap is smallest near h = 1e-5."""
    cfg, params, ids, targets = small_model()
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    hs = [10.0**-k for k in range(2, 12)]
    gaps = []
    for h in hs:
        numerical = numerical_grad(lambda: loss_only(ids, targets, params, cfg), params["lnf_g"], h=h)
        gaps.append(float(np.abs(numerical - grads["lnf_g"]).max()))
    table = text_table([("h", "largest gap on lnf_g")] + [(f"{h:.0e}", f"{gap:.1e}") for h, gap in zip(hs, gaps)])
    best_h = hs[int(np.argmin(gaps))]
    gap_at_default = gaps[hs.index(1e-5)]
    assert 1e-6 <= best_h <= 1e-4
    assert gap_at_default < 1e-9
    assert gaps[0] > 1e3 * gap_at_default and gaps[-1] > 1e3 * gap_at_default  # both ends are far worse


def test_rel_error_worked_example():
    """One number per tensor: the norm of the difference over the larger norm."""
    analytic = np.array([3.0, 4.0])
    numerical = np.array([3.0, 4.5])
    r = rel_error(analytic, numerical)
    assert r == pytest.approx(0.5 / np.sqrt(3.0**2 + 4.5**2))


def test_key_bias_exception_worked_example():
    """Why test_every_tensor_passes skips attn_bk: the true gradient is 0, and the relative test then measures noise."""
    cfg, params, ids, targets = small_model()
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    tol = TOL
    dbk = [grads[f"b{l}.attn_bk"] for l in range(cfg.n_layers)]
    numerical = [
        numerical_grad(lambda: loss_only(ids, targets, params, cfg), params[f"b{l}.attn_bk"])
        for l in range(cfg.n_layers)
    ]
    largest_dbk = max(float(np.abs(g).max()) for g in dbk)
    largest_numerical = max(float(np.abs(n).max()) for n in numerical)
    rel_errors = [rel_error(a, n) for a, n in zip(dbk, numerical)]
    # the rounding level of central differences here: eps |loss| / h
    noise = float(np.finfo(np.float64).eps) * abs(loss) / 1e-5
    assert largest_dbk <= 1e-15
    assert largest_numerical <= 10 * noise  # what central differences measure is rounding, nothing more
    assert max(rel_errors) > tol  # so the relative comparison would fail a correct gradient
    for l in range(cfg.n_layers):
        params[f"b{l}.attn_bk"] += 3.0
    loss_moved = loss_only(ids, targets, params, cfg) - loss
    assert abs(loss_moved) <= 1e-12 * loss

"""Tests of transformer.py: parameters, shapes, causality, generation and bad input."""

import numpy as np
import pytest

from transformer import ModelConfig, forward, generate, init_params, loss_and_grads


@pytest.fixture
def model():
    cfg = ModelConfig(vocab_size=11, seq_len=8, emb_dim=16, n_heads=4, n_layers=2, ff_dim=32, init_std=0.3)
    params = init_params(cfg, np.random.default_rng(0))
    return cfg, params


# --------------------------------------------------------------------------- config and parameters


def test_model_config_defaults():
    cfg = ModelConfig(vocab_size=11)
    assert (cfg.seq_len, cfg.emb_dim, cfg.n_heads, cfg.n_layers, cfg.ff_dim) == (16, 32, 4, 2, 128)
    assert (cfg.ln_eps, cfg.init_std) == (1e-5, 0.02)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


def test_unknown_config_key_is_named():
    with pytest.raises(ValueError, match="unknown ModelConfig key: 'foo'"):
        ModelConfig.from_dict({"vocab_size": 11, "foo": 1})


def test_bad_config_values():
    with pytest.raises(ValueError, match=r"emb_dim \(30\) must be divisible by n_heads \(4\)"):
        ModelConfig(vocab_size=11, emb_dim=30)
    with pytest.raises(ValueError, match="ModelConfig.vocab_size must be a positive integer, got 0"):
        ModelConfig(vocab_size=0)


def test_init_params_names_shapes_and_values():
    cfg = ModelConfig(vocab_size=5, seq_len=4, emb_dim=8, n_heads=2, n_layers=1, ff_dim=12)
    params = init_params(cfg, np.random.default_rng(0))
    expected = {
        "tok_emb": (5, 8),
        "pos_emb": (4, 8),
        "b0.ln1_g": (8,),
        "b0.ln1_b": (8,),
        "b0.attn_wq": (8, 8),
        "b0.attn_bq": (8,),
        "b0.attn_wk": (8, 8),
        "b0.attn_bk": (8,),
        "b0.attn_wv": (8, 8),
        "b0.attn_bv": (8,),
        "b0.attn_wo": (8, 8),
        "b0.attn_bo": (8,),
        "b0.ln2_g": (8,),
        "b0.ln2_b": (8,),
        "b0.ff_w1": (8, 12),
        "b0.ff_b1": (12,),
        "b0.ff_w2": (12, 8),
        "b0.ff_b2": (8,),
        "lnf_g": (8,),
        "lnf_b": (8,),
        "head_w": (8, 5),
        "head_b": (5,),
    }
    assert {name: value.shape for name, value in params.items()} == expected
    assert list(params) == list(expected)
    for name, value in params.items():
        if name.endswith(("ln1_g", "ln2_g", "lnf_g")):
            np.testing.assert_array_equal(value, 1.0, err_msg=name)
        elif value.ndim == 1:
            np.testing.assert_array_equal(value, 0.0, err_msg=name)
    matrices = np.concatenate([value.ravel() for value in params.values() if value.ndim == 2])
    assert matrices.std() == pytest.approx(cfg.init_std, rel=0.05)


def test_init_params_is_deterministic_under_a_seed(model):
    cfg, params = model
    again = init_params(cfg, np.random.default_rng(0))
    for name in params:
        np.testing.assert_array_equal(again[name], params[name])


# --------------------------------------------------------------------------- forward and backward


def test_forward_shapes(model):
    cfg, params = model
    for T in (1, 5, cfg.seq_len):
        logits, _ = forward(np.arange(T) % cfg.vocab_size, params, cfg)
        assert logits.shape == (T, cfg.vocab_size)


def test_grads_have_the_keys_and_shapes_of_params(model):
    cfg, params = model
    ids = np.array([3, 1, 4, 1, 5])
    loss, grads = loss_and_grads(ids, np.array([1, 4, 1, 5, 9]), params, cfg)
    assert np.isfinite(loss) and loss > 0
    assert list(grads) == list(params)
    for name in params:
        assert grads[name].shape == params[name].shape, name


def test_untrained_loss_is_near_log_vocab():
    cfg = ModelConfig(vocab_size=11)  # init_std 0.02: logits near 0, probabilities near 1/11
    params = init_params(cfg, np.random.default_rng(0))
    loss, _ = loss_and_grads(np.arange(10), np.arange(1, 11), params, cfg)
    assert loss == pytest.approx(np.log(11), abs=0.05)


def test_a_position_never_sees_later_tokens(model):
    cfg, params = model
    ids = np.array([3, 1, 4, 1, 5, 9])
    changed = ids.copy()
    changed[4:] = [0, 0]
    logits, _ = forward(ids, params, cfg)
    logits_changed, _ = forward(changed, params, cfg)
    np.testing.assert_allclose(logits_changed[:4], logits[:4], rtol=0, atol=1e-12)
    assert not np.allclose(logits_changed[4:], logits[4:])


# --------------------------------------------------------------------------- generation


def test_generate_is_deterministic_under_a_seed(model):
    cfg, params = model
    prompt = np.array([1, 2, 3])
    first = generate(prompt, params, cfg, 10, temperature=1.0, rng=42)
    assert first.shape == (10,)
    assert ((first >= 0) & (first < cfg.vocab_size)).all()
    np.testing.assert_array_equal(generate(prompt, params, cfg, 10, temperature=1.0, rng=42), first)
    np.testing.assert_array_equal(generate(prompt, params, cfg, 10, rng=np.random.default_rng(42)), first)
    assert not np.array_equal(generate(prompt, params, cfg, 10, temperature=1.0, rng=43), first)


def test_greedy_generation_picks_the_argmax(model):
    cfg, params = model
    prompt = np.array([5, 6])
    out = generate(prompt, params, cfg, 3, temperature=0)
    logits, _ = forward(prompt, params, cfg)
    assert out[0] == np.argmax(logits[-1])
    logits, _ = forward(np.array([5, 6, out[0], out[1]]), params, cfg)
    assert out[2] == np.argmax(logits[-1])


def test_generate_reads_only_the_last_seq_len_ids(model):
    cfg, params = model
    prompt = np.arange(cfg.seq_len + 5) % cfg.vocab_size  # longer than the model's window
    tail = prompt[-cfg.seq_len :]
    out = generate(prompt, params, cfg, 6, temperature=0)
    np.testing.assert_array_equal(generate(tail, params, cfg, 6, temperature=0), out)
    other_start = prompt.copy()
    other_start[:5] = 0  # outside the window: no effect
    np.testing.assert_array_equal(generate(other_start, params, cfg, 6, rng=7), generate(tail, params, cfg, 6, rng=7))


def test_generate_nothing(model):
    cfg, params = model
    assert generate([1, 2], params, cfg, 0).shape == (0,)


# --------------------------------------------------------------------------- bad input


def test_ids_of_the_wrong_shape(model):
    cfg, params = model
    with pytest.raises(ValueError, match=r"ids must be a 1-D sequence of token ids, got shape \(2, 3\)"):
        forward(np.zeros((2, 3), dtype=int), params, cfg)
    with pytest.raises(ValueError, match="ids must hold at least one token id"):
        forward(np.array([], dtype=int), params, cfg)
    with pytest.raises(ValueError, match="ids must hold integer token ids, got dtype float64"):
        forward(np.array([1.0, 2.0]), params, cfg)


def test_token_id_outside_the_vocabulary(model):
    cfg, params = model
    with pytest.raises(ValueError, match=r"ids holds token id 11, outside the vocabulary \[0, 11\)"):
        forward(np.array([1, 11, 2]), params, cfg)
    with pytest.raises(ValueError, match=r"targets holds token id -1, outside the vocabulary \[0, 11\)"):
        loss_and_grads(np.array([1, 2]), np.array([3, -1]), params, cfg)
    with pytest.raises(ValueError, match=r"prompt_ids holds token id 99, outside the vocabulary"):
        generate([1, 99], params, cfg, 2)


def test_sequence_longer_than_seq_len(model):
    cfg, params = model
    ids = np.zeros(cfg.seq_len + 1, dtype=int)
    with pytest.raises(ValueError, match="ids has length 9, longer than seq_len = 8"):
        forward(ids, params, cfg)
    with pytest.raises(ValueError, match="longer than seq_len"):
        loss_and_grads(ids, ids, params, cfg)


def test_targets_of_another_length(model):
    cfg, params = model
    with pytest.raises(ValueError, match="targets must have the same length as ids: got 2 and 3"):
        loss_and_grads(np.array([1, 2, 3]), np.array([2, 3]), params, cfg)


def test_bad_generation_settings(model):
    cfg, params = model
    with pytest.raises(ValueError, match="temperature must be >= 0, got -1"):
        generate([1], params, cfg, 2, temperature=-1)
    with pytest.raises(ValueError, match="n_new must be a non-negative integer, got -2"):
        generate([1], params, cfg, -2)

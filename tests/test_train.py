"""Tests of train.py: the data, the optimizer pieces, checkpoints and a short run."""

import json
import os

import numpy as np
import pytest

import train
from config import TrainConfig
from train import (
    EQUALS,
    AdamW,
    batch_loss_and_grads,
    clip_grad_norm,
    decays,
    decode,
    load_checkpoint,
    lr_schedule,
    make_batch,
    make_eval_set,
    make_example,
    save_checkpoint,
)
from transformer import ModelConfig, init_params, loss_and_grads


@pytest.fixture
def small():
    cfg = ModelConfig(vocab_size=11, seq_len=6, emb_dim=16, n_heads=2, n_layers=1, ff_dim=32)
    params = init_params(cfg, np.random.default_rng(0))
    return cfg, params


# --------------------------------------------------------------------------- data


def test_an_example_is_digits_equals_sorted_digits():
    seq = make_example(np.random.default_rng(0), 5)
    assert seq.shape == (11,)
    assert seq[5] == EQUALS
    np.testing.assert_array_equal(seq[6:], np.sort(seq[:5]))
    text = decode(seq)
    assert text[5] == "=" and text[6:] == "".join(sorted(text[:5]))


def test_data_is_deterministic_under_a_seed():
    a = make_batch(np.random.default_rng(3), 4, 3, set())
    b = make_batch(np.random.default_rng(3), 4, 3, set())
    np.testing.assert_array_equal(a, b)


def test_training_batches_never_hold_an_eval_prompt():
    eval_set = make_eval_set(np.random.default_rng(1), 300, 3)  # 300 of the 1000 three-digit prompts
    held_out = {decode(seq[:3]) for seq in eval_set}
    assert len(held_out) == 300
    batch = make_batch(np.random.default_rng(2), 500, 3, held_out)
    assert not {decode(seq[:3]) for seq in batch} & held_out


# --------------------------------------------------------------------------- optimisation


def test_batch_loss_and_grads_is_the_mean_over_sequences(small):
    cfg, params = small
    batch = np.array([[1, 2, 3, 10, 1, 2, 3], [3, 2, 0, 10, 0, 2, 3]])
    loss, grads = batch_loss_and_grads(batch, params, cfg)
    loss_a, grads_a = loss_and_grads(batch[0, :-1], batch[0, 1:], params, cfg)
    loss_b, grads_b = loss_and_grads(batch[1, :-1], batch[1, 1:], params, cfg)
    assert loss == pytest.approx((loss_a + loss_b) / 2)
    for name in params:
        np.testing.assert_allclose(grads[name], (grads_a[name] + grads_b[name]) / 2, err_msg=name)


def test_decay_rule_matrices_only(small):
    cfg, params = small
    for name, value in params.items():
        assert decays(name, value) == (value.ndim >= 2), name
    assert decays("b0.attn_wq", params["b0.attn_wq"]) and decays("tok_emb", params["tok_emb"])
    assert not decays("b0.attn_bq", params["b0.attn_bq"])
    assert not decays("b0.ln1_g", params["b0.ln1_g"]) and not decays("head_b", params["head_b"])


def test_adamw_never_decays_1d_parameters(small):
    cfg, params = small
    for value in params.values():
        value += 0.5  # no parameter is 0, so decay would show everywhere
    before = {name: value.copy() for name, value in params.items()}
    zero_grads = {name: np.zeros_like(value) for name, value in params.items()}
    AdamW(params, weight_decay=0.1).step(params, zero_grads, lr=0.01)
    for name, value in params.items():
        if value.ndim >= 2:
            np.testing.assert_allclose(value, before[name] * (1 - 0.01 * 0.1), err_msg=name)
        else:
            np.testing.assert_array_equal(value, before[name], err_msg=name)


def test_adamw_first_step_moves_by_lr_times_the_sign():
    params = {"w": np.array([[1.0, -2.0]]), "b": np.array([0.5])}
    grads = {"w": np.array([[0.3, -4.0]]), "b": np.array([-0.01])}
    AdamW(params, eps=0.0, weight_decay=0.0).step(params, grads, lr=0.1)
    # step 1: m_hat = g, v_hat = g^2, so the update is lr * g / |g|
    np.testing.assert_allclose(params["w"], [[0.9, -1.9]])
    np.testing.assert_allclose(params["b"], [0.6])


def test_clip_grad_norm():
    grads = {"a": np.array([3.0]), "b": np.array([[4.0]])}  # global norm 5
    assert clip_grad_norm(grads, 1.0) == pytest.approx(5.0)
    np.testing.assert_allclose(grads["a"], [0.6])
    np.testing.assert_allclose(grads["b"], [[0.8]])
    assert clip_grad_norm(grads, 2.0) == pytest.approx(1.0)  # below the limit: unchanged
    np.testing.assert_allclose([grads["a"][0], grads["b"][0, 0]], [0.6, 0.8])


def test_lr_schedule_warms_up_then_decays_to_min_lr():
    lrs = [lr_schedule(step, 1.0, 0.1, 10, 100) for step in range(1, 101)]
    assert lrs[0] == pytest.approx(0.1)  # step 1 of 10
    assert lrs[9] == pytest.approx(1.0)  # end of warmup
    assert lrs[-1] == pytest.approx(0.1)  # the floor at the last step
    assert lrs[54] == pytest.approx(0.55)  # half way through the decay: the middle of lr and min_lr
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))


def test_loss_falls_on_a_short_run(small):
    cfg, params = small
    rng = np.random.default_rng(0)
    optimizer = AdamW(params)
    losses = []
    for step in range(1, 41):
        batch = make_batch(rng, 8, 3, set())
        loss, grads = batch_loss_and_grads(batch, params, cfg)
        clip_grad_norm(grads, 1.0)
        optimizer.step(params, grads, lr_schedule(step, 1e-2, 1e-3, 5, 40))
        losses.append(loss)
    assert np.mean(losses[-5:]) < 0.85 * np.mean(losses[:5]), losses  # about 2.34 -> 1.78


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip(small, tmp_path):
    cfg, params = small
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), params, cfg)
    loaded = load_checkpoint(str(path), cfg)
    assert list(loaded) == list(params)
    for name in params:
        np.testing.assert_array_equal(loaded[name], params[name])
    assert os.listdir(tmp_path) == ["model.npz"]  # no temporary file left behind


def test_corrupt_checkpoint(small, tmp_path):
    cfg, params = small
    path = tmp_path / "model.npz"
    path.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match="model.npz is corrupt or not a checkpoint of this model"):
        load_checkpoint(str(path), cfg)


def test_truncated_checkpoint(small, tmp_path):
    cfg, params = small
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), params, cfg)
    path.write_bytes(path.read_bytes()[:500])  # cut short, as by a full disk
    with pytest.raises(ValueError, match="model.npz is corrupt"):
        load_checkpoint(str(path), cfg)


def test_checkpoint_from_another_config_names_the_fields(small, tmp_path):
    cfg, params = small
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), params, cfg)
    other = ModelConfig(vocab_size=11, seq_len=6, emb_dim=8, n_heads=2, n_layers=2, ff_dim=32)
    with pytest.raises(
        ValueError,
        match=r"another config; differing fields: emb_dim \(checkpoint 16, expected 8\), "
        r"n_layers \(checkpoint 1, expected 2\)",
    ):
        load_checkpoint(str(path), other)


def test_an_interrupted_save_keeps_the_old_checkpoint(small, tmp_path, monkeypatch):
    cfg, params = small
    path = tmp_path / "model.npz"
    save_checkpoint(str(path), params, cfg)

    def savez_interrupted(file, **arrays):
        file.write(b"half a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(train.np, "savez", savez_interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(str(path), {name: value + 1 for name, value in params.items()}, cfg)
    monkeypatch.undo()
    loaded = load_checkpoint(str(path), cfg)
    np.testing.assert_array_equal(loaded["head_w"], params["head_w"])
    assert os.listdir(tmp_path) == ["model.npz"]


# --------------------------------------------------------------------------- main


def test_main_runs_and_writes_checkpoint_and_history(tmp_path, capsys):
    out = tmp_path / "run" / "sort.npz"
    argv = [
        "--steps",
        "4",
        "--n-digits",
        "3",
        "--batch-size",
        "2",
        "--eval-every",
        "2",
        "--log-every",
        "2",
        "--n-eval",
        "5",
        "--n-samples",
        "1",
        "--emb-dim",
        "8",
        "--ff-dim",
        "16",
        "--out",
        str(out),
    ]
    history = train.main(argv)
    printed = capsys.readouterr().out
    assert "step      4 | loss" in printed and "tokens/s" in printed and "exact match" in printed
    assert [e["step"] for e in history["eval"]] == [0, 2, 4]
    saved = json.loads((tmp_path / "run" / "sort.history.json").read_text())
    assert saved["step"] == [1, 2, 3, 4] and len(saved["loss"]) == 4
    assert saved["eval"][0]["samples"][0]["prompt"].endswith("=")
    cfg = ModelConfig.from_dict(saved["model_config"])
    assert cfg.emb_dim == 8 and cfg.ff_dim == 16
    load_checkpoint(str(out), cfg)


def test_main_rejects_a_task_longer_than_the_model(tmp_path):
    with pytest.raises(ValueError, match="n_digits = 9 needs seq_len >= 18, got 16"):
        train.main(["--n-digits", "9", "--out", str(tmp_path / "m.npz")])


def test_every_train_config_field_is_a_flag():
    tc = train.parse_args(["--lr", "0.5", "--seed", "7"])
    assert tc == TrainConfig(lr=0.5, seed=7)

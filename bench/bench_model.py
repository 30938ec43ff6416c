"""How fast the NumPy model is, and how it compares with the same model in PyTorch.

Why this exists: the model runs one sequence at a time through many small
NumPy calls, so its speed is set by per-call overhead more than by arithmetic.
This prints the forward+backward time of one sequence (median of several
runs) and the training throughput in tokens per second, with the default
sizes of config.py. When torch is importable it times the same model in
PyTorch eager mode on the CPU (float64, the same parameters, the per-sequence
torch_loss of tests/test_torch_crosscheck.py) and prints the ratio
numpy / torch. Figures and ratios only: nothing passes or fails.

Run: python bench/bench_model.py
"""

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT / "src", ROOT):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

import numpy as np  # noqa: E402

from config import TrainConfig  # noqa: E402
from train import VOCAB, AdamW, batch_loss_and_grads, clip_grad_norm, decays, make_batch, make_example  # noqa: E402
from transformer import ModelConfig, init_params, loss_and_grads  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

REPEATS = 7  # timed runs; the median is reported


def median_seconds(fn, number):
    """Median over REPEATS runs of the time of one call of fn, each run averaging number calls."""
    fn()  # warm up
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def bench_numpy(cfg, tc, params, seq, batch):
    """Seconds per forward+backward of one sequence, and per training step of one batch."""
    optimizer = AdamW(params, tc.beta1, tc.beta2, tc.adam_eps, tc.weight_decay)

    def train_step():
        loss, grads = batch_loss_and_grads(batch, params, cfg)
        clip_grad_norm(grads, tc.clip_norm)
        optimizer.step(params, grads, tc.min_lr)

    one = median_seconds(lambda: loss_and_grads(seq[:-1], seq[1:], params, cfg), number=50)
    step = median_seconds(train_step, number=3)
    return one, step


def bench_torch(cfg, tc, params, seq, batch):
    """The same two timings for the PyTorch version of the model."""
    from tests.test_torch_crosscheck import to_torch, torch_loss

    tparams = to_torch(params)
    groups = [  # weight decay on matrices only, as train.decays says
        {"params": [value for name, value in tparams.items() if decays(name, value)]},
        {"params": [value for name, value in tparams.items() if not decays(name, value)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(
        groups, lr=tc.min_lr, betas=(tc.beta1, tc.beta2), eps=tc.adam_eps, weight_decay=tc.weight_decay
    )

    def one_sequence():
        for value in tparams.values():
            value.grad = None
        torch_loss(seq[:-1], seq[1:], tparams, cfg).backward()

    def train_step():
        optimizer.zero_grad()
        loss = sum(torch_loss(row[:-1], row[1:], tparams, cfg) for row in batch) / len(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(tparams.values(), tc.clip_norm)
        optimizer.step()

    one = median_seconds(one_sequence, number=50)
    step = median_seconds(train_step, number=3)
    return one, step


def main():
    tc = TrainConfig()
    cfg = ModelConfig(
        vocab_size=len(VOCAB),
        seq_len=tc.seq_len,
        emb_dim=tc.emb_dim,
        n_heads=tc.n_heads,
        n_layers=tc.n_layers,
        ff_dim=tc.ff_dim,
        init_std=tc.init_std,
    )
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    seq = make_example(rng, tc.n_digits)  # (2 n_digits + 1,)
    batch = make_batch(rng, tc.batch_size, tc.n_digits, set())
    T = len(seq) - 1
    tokens_per_step = tc.batch_size * T
    n_params = sum(value.size for value in params.values())
    print(
        f"model: {n_params:,} parameters, {cfg.n_layers} blocks, d = {cfg.emb_dim}, T = {T}, float64; "
        f"batch {tc.batch_size}; {os.cpu_count()} CPUs; numpy {np.__version__}; median of {REPEATS} runs"
    )
    np_one, np_step = bench_numpy(cfg, tc, init_params(cfg, np.random.default_rng(0)), seq, batch)
    print(f"numpy  forward+backward per sequence: {np_one * 1e3:7.3f} ms")
    print(
        f"numpy  training step (grads, clip, AdamW): {np_step * 1e3:7.2f} ms "
        f"= {tokens_per_step / np_step:,.0f} tokens/s"
    )
    if torch is None:
        print("torch is not installed: no PyTorch comparison")
        return
    th_one, th_step = bench_torch(cfg, tc, params, seq, batch)
    print(f"torch {torch.__version__} eager, {torch.get_num_threads()} threads, float64, one sequence at a time:")
    print(f"torch  forward+backward per sequence: {th_one * 1e3:7.3f} ms")
    print(
        f"torch  training step (grads, clip, AdamW): {th_step * 1e3:7.2f} ms "
        f"= {tokens_per_step / th_step:,.0f} tokens/s"
    )
    print(f"ratio numpy / torch time: forward+backward {np_one / th_one:.2f}, training step {np_step / th_step:.2f}")


if __name__ == "__main__":
    main()

"""The training run's hyperparameters, in one place.

Why this module exists: train.main reads every value below (each one can be
overridden from the command line, e.g. ``--steps 500``) and builds the model's
ModelConfig from the model fields. Nothing here is unused. The defaults follow
nanoGPT's recipe scaled down (AdamW, linear warmup then cosine decay, gradient
clipping at norm 1) and are sized so that ``python src/train.py`` learns the
sorting task in about two minutes on two CPU cores.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainConfig:
    # the task: sort a string of digits, e.g. "47139082=01234789"
    n_digits: int = 8  # digits per example; a sequence has n_digits + 1 + n_digits tokens

    # the model (train.main builds a ModelConfig from these)
    seq_len: int = 16  # positions the model has; the inputs need 2 * n_digits of them
    emb_dim: int = 32  # width of the residual stream
    n_heads: int = 4  # attention heads per block
    n_layers: int = 2  # transformer blocks
    ff_dim: int = 128  # hidden width of the feed-forward layers
    init_std: float = 0.02  # standard deviation of the initial matrices

    # optimisation
    steps: int = 4000  # optimizer steps
    batch_size: int = 32  # sequences per step (a loop over sequences)
    lr: float = 3e-3  # peak learning rate, reached at the end of warmup
    min_lr: float = 3e-4  # learning rate at the last step (cosine floor)
    warmup_steps: int = 100  # steps of linear warmup from lr / warmup_steps to lr
    weight_decay: float = 0.01  # AdamW decoupled weight decay, matrices only
    beta1: float = 0.9  # AdamW decay rate of the first-moment (mean) estimate
    beta2: float = 0.99  # AdamW decay rate of the second-moment estimate
    adam_eps: float = 1e-8  # AdamW epsilon added to sqrt(second moment)
    clip_norm: float = 1.0  # the global gradient norm is clipped to this
    seed: int = 0  # seeds the initial parameters and the training data

    # evaluation, logging and output
    eval_every: int = 500  # evaluate on the held-out examples every this many steps
    n_eval: int = 200  # held-out examples, never used for training
    n_samples: int = 3  # held-out examples shown as text at each evaluation
    log_every: int = 100  # print the training loss every this many steps
    out: str = "runs/sort.npz"  # checkpoint path; the history goes next to it as .history.json

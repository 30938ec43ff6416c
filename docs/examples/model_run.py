"""The model run the site's shapes and inventories are traced from.

The generator calls ``run(config())`` and ``run(probe(config()))`` under its
recorder (settings: ``model_run``). ``config()`` is the ModelConfig that
``train.main`` builds (through ``train.model_config``), so the site shows the
sizes training really uses. ``probe(cfg)`` gives every size field a distinct
prime (emb_dim a multiple of n_heads, as the model requires), so that each
dimension seen in the probe run names exactly one config field or product or
quotient of two; that is how ``(16, 32)`` becomes ``(T, d)`` even where two
fields are equal in the real config.
"""

from __future__ import annotations

import dataclasses

import numpy as np

import train
from transformer import init_params, loss_and_grads


def config():
    """The ModelConfig a default training run uses (``python src/train.py`` with no flags)."""
    return train.model_config(train.parse_args([]))


def probe(cfg):
    """cfg with a distinct prime for every size (emb_dim = n_heads * head size), so each dimension is unique.

    n_layers differs from the real config's, so that the per-layer index of a
    parameter name (b0., b1., ...) shows which field it runs over.
    """
    n_heads, head_dim = 3, 5  # emb_dim = 15 must be divisible by n_heads
    n_layers = 7 if cfg.n_layers == 2 else 2
    sizes = dict(vocab_size=23, seq_len=11, emb_dim=n_heads * head_dim, n_heads=n_heads, n_layers=n_layers, ff_dim=29)
    return dataclasses.replace(cfg, **sizes)


def run(cfg):
    """One real forward and backward pass of the model on a fixed full-length sequence."""
    rng = np.random.default_rng(0)
    params = init_params(cfg, rng)
    ids = np.arange(cfg.seq_len) % cfg.vocab_size  # (T,), every position used
    targets = (ids + 1) % cfg.vocab_size  # (T,)
    loss, grads = loss_and_grads(ids, targets, params, cfg)
    return float(loss)

"""The model run the pages' shapes are traced from: config(), probe(cfg), run(cfg)."""

import numpy as np
from model import build, mse_loss

from config import CONFIG


def config():
    """The config in effect: the dict config.py holds."""
    return dict(CONFIG)


def probe(cfg):
    """cfg with a distinct prime for every size, so each dimension names one field."""
    return {**cfg, "seq_len": 5, "d_model": 7, "d_hidden": 11}


def run(cfg):
    """One forward and backward pass of the model."""
    model = build(cfg)
    X = np.random.default_rng(0).normal(size=(cfg["seq_len"], cfg["d_model"]))
    loss, dY = mse_loss(model(X), np.zeros_like(X))
    model.backward(dY)
    return loss

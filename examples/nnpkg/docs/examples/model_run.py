"""The model run the pages' shapes are traced from: config(), probe(cfg), run(cfg)."""

import numpy as np
from nnpkg import build_mlp


def config():
    """The sizes the pages describe: a batch of 4 rows of 3 features, 8 hidden units, 1 output."""
    return {"batch_size": 4, "n_features": 3, "n_hidden": 8, "n_outputs": 1}


def probe(cfg):
    """cfg with a distinct prime for every size, so each dimension names one field."""
    return {**cfg, "batch_size": 5, "n_features": 7, "n_hidden": 11, "n_outputs": 13}


def run(cfg):
    """One training step: forward through the list of layers, then backward in reverse."""
    net = build_mlp(cfg["n_features"], cfg["n_hidden"], n_outputs=cfg["n_outputs"], l1=0.01)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(cfg["batch_size"], cfg["n_features"]))
    y = (rng.random(size=(cfg["batch_size"], cfg["n_outputs"])) > 0.5).astype(float)
    return net.train_on_batch(X, y)

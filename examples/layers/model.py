"""A two-layer perceptron with a normalised input, built from the layers and the config dict."""

import numpy as np
from layers import Layer, LayerNorm, Linear, ReLU


class MLP(Layer):
    """Y = fc2(relu(fc1(norm(X)))): the layers run in order, backward in reverse."""

    def __init__(self, d_model, d_hidden, rng, eps=1e-5):
        self.norm = LayerNorm(d_model, eps)
        self.fc1 = Linear(d_model, d_hidden, rng)
        self.act = ReLU()
        self.fc2 = Linear(d_hidden, d_model, rng)

    def forward(self, X):
        H = self.norm(X)  # (T, d)
        H = self.fc1(H)  # (T, h)
        H = self.act(H)  # (T, h)
        Y = self.fc2(H)  # (T, d)
        return Y

    def backward(self, dY):
        dH = self.fc2.backward(dY)
        dH = self.act.backward(dH)
        dH = self.fc1.backward(dH)
        dX = self.norm.backward(dH)
        return dX


def build(cfg):
    """The model the config describes."""
    rng = np.random.default_rng(cfg["seed"])
    return MLP(cfg["d_model"], cfg["d_hidden"], rng, cfg["eps"])


def mse_loss(Y, target):
    """Mean squared error and its gradient on Y."""
    diff = Y - target
    loss = float((diff**2).mean())
    dY = 2.0 * diff / diff.size
    return loss, dY

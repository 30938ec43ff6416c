"""Layers as objects: each keeps its parameters, computes forward, and backward from what forward cached.

The style of many small NumPy libraries: a layer is called like a function
(``Y = layer(X)``), which runs its ``forward``; ``backward(dY)`` returns the
gradient on the input and keeps the gradients of its own parameters in
``self.grads``.
"""

import numpy as np


class Layer:
    """What every layer shares: calling it runs forward."""

    def __call__(self, X):
        return self.forward(X)


class Linear(Layer):
    """Y = X W + b."""

    def __init__(self, d_in, d_out, rng):
        self.W = rng.normal(0.0, 1.0 / np.sqrt(d_in), size=(d_in, d_out))  # (d_in, d_out)
        self.b = np.zeros(d_out)  # (d_out,)
        self.grads = {}

    def forward(self, X):
        self.X = X  # (T, d_in), kept for backward
        return X @ self.W + self.b  # (T, d_out)

    def backward(self, dY):
        self.grads = {"W": self.X.T @ dY, "b": dY.sum(axis=0)}
        dX = dY @ self.W.T  # (T, d_in)
        return dX


class ReLU(Layer):
    """Y = max(X, 0), element by element."""

    def forward(self, X):
        self.mask = X > 0
        return X * self.mask

    def backward(self, dY):
        dX = dY * self.mask
        return dX


class LayerNorm(Layer):
    """Each row normalised to mean 0 and variance 1, then scaled and shifted."""

    def __init__(self, d, eps=1e-5):
        self.gamma = np.ones(d)  # (d,)
        self.beta = np.zeros(d)  # (d,)
        self.eps = eps
        self.grads = {}

    def forward(self, X):
        mu = X.mean(axis=-1, keepdims=True)  # (T, 1)
        var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)  # (T, 1)
        s = 1.0 / np.sqrt(var + self.eps)  # (T, 1)
        Xhat = (X - mu) * s  # (T, d)
        self.Xhat, self.s = Xhat, s
        return self.gamma * Xhat + self.beta

    def backward(self, dY):
        Xhat, s = self.Xhat, self.s
        self.grads = {"gamma": (dY * Xhat).sum(axis=0), "beta": dY.sum(axis=0)}
        dXhat = dY * self.gamma  # (T, d)
        dX = s * (dXhat - dXhat.mean(axis=-1, keepdims=True) - Xhat * (dXhat * Xhat).mean(axis=-1, keepdims=True))
        return dX

"""Losses: each gives the loss of every sample and its gradient on the network's output."""

import numpy as np

from nnpkg.deep_learning.activations import sigmoid


class SigmoidCrossEntropy:
    """Binary cross entropy of the sigmoid of the logits, without a separate sigmoid layer."""

    def __init__(self, eps=1e-15):
        self.log_func = sigmoid  # the link from logits to probabilities
        self.eps = eps

    def loss(self, y, logits):
        p = np.clip(self.log_func(logits), self.eps, 1 - self.eps)
        return -y * np.log(p) - (1 - y) * np.log(1 - p)

    def gradient(self, y, logits):
        p = self.log_func(logits)
        return p - y

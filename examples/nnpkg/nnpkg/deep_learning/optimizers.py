"""Optimizers: each layer keeps its own copy and asks it for the updated weights."""

import numpy as np


class StochasticGradientDescent:
    """w - learning_rate * (momentum-averaged gradient)."""

    def __init__(self, learning_rate=0.01, momentum=0.0):
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.w_updt = None

    def update(self, w, grad_wrt_w):
        if self.w_updt is None:
            self.w_updt = np.zeros(np.shape(w))
        self.w_updt = self.momentum * self.w_updt + (1 - self.momentum) * grad_wrt_w
        return w - self.learning_rate * self.w_updt

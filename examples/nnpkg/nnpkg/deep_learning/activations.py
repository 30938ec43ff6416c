"""Activation functions: each is an object, called on an array, with its derivative as ``gradient``."""

import numpy as np


class Sigmoid:
    """1 / (1 + exp(-x)), element by element."""

    def __call__(self, x):
        return 1 / (1 + np.exp(-x))

    def gradient(self, x):
        s = self.__call__(x)
        return s * (1 - s)


class ReLU:
    """max(x, 0), element by element."""

    def __call__(self, x):
        return np.where(x >= 0, x, 0.0)

    def gradient(self, x):
        return np.where(x >= 0, 1.0, 0.0)


class TanH:
    """tanh(x), element by element."""

    def __call__(self, x):
        return np.tanh(x)

    def gradient(self, x):
        return 1 - np.tanh(x) ** 2


# One shared instance, for the code that needs the logistic function itself.
sigmoid = Sigmoid()

"""Central differences: what every hand-written gradient in nnpkg is checked against."""

import numpy as np


def numerical_grad(f, x, h=1e-6):
    """d f() / d x, by nudging each entry of x in place by +-h and calling f() again."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        up = f()
        x[i] = old - h
        down = f()
        x[i] = old
        grad[i] = (up - down) / (2 * h)
    return grad

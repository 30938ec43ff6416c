"""Numerical checks of the derivations the site works through.

Each test computes a derivation's intermediate results from a real call of
the code and compares them with central differences or with the code's own
result. The site shows these locals, recorded while the test runs.
"""

import numpy as np

from gradcheck import numerical_grad
from ops import layer_norm_backward, layer_norm_forward


def test_layer_norm_derivation_matches_the_code():
    """Step 5's matrix equals the forward's Jacobian, and step 6 equals layer_norm_backward."""
    x = np.array([[1.0, 2.0, 3.0, 6.0]])
    gamma = np.array([1.0, 1.0, 1.0, 2.0])
    beta = np.array([0.0, 0.0, 0.0, 1.0])
    dY = np.array([[1.0, 0.0, 0.0, 1.0]])
    y, cache = layer_norm_forward(x, gamma, beta)
    Xhat, s = cache
    d = x.shape[1]
    # Step 5: dXhat_i / dX_j = s (delta_ij - 1/d - Xhat_i Xhat_j / d), one row of X
    jacobian = s[0, 0] * (np.eye(d) - 1.0 / d - np.outer(Xhat[0], Xhat[0]) / d)  # (d, d)
    numeric = np.zeros((d, d))  # the same matrix by central differences of the forward
    for i in range(d):
        numeric[i] = numerical_grad(lambda: layer_norm_forward(x, np.ones(d), np.zeros(d))[0][0, i], x)[0]
    # Step 6: the chain rule over the row, dX = dXhat @ jacobian
    dXhat = dY * gamma
    step6 = dXhat @ jacobian  # (1, d)
    dx, dgamma, dbeta = layer_norm_backward(dY, cache, gamma)
    np.testing.assert_allclose(jacobian, numeric, atol=1e-8)
    np.testing.assert_allclose(step6, dx, atol=1e-12)

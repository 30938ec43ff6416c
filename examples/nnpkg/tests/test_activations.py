"""The activation functions and the Activation layer that picks one by name."""

import numpy as np
from nnpkg.deep_learning.activations import ReLU, sigmoid
from nnpkg.deep_learning.layers import Activation
from nnpkg.gradcheck import numerical_grad


def test_sigmoid_worked_example():
    x = np.array([[-2.0, 0.0, 2.0]])
    y = sigmoid(x)
    np.testing.assert_allclose(y, [[0.11920292, 0.5, 0.88079708]])
    np.testing.assert_allclose(sigmoid.gradient(x), y * (1 - y))


def test_relu_worked_example():
    relu = ReLU()
    x = np.array([[-1.5, 0.0, 2.0]])
    np.testing.assert_array_equal(relu(x), [[0.0, 0.0, 2.0]])
    np.testing.assert_array_equal(relu.gradient(x), [[0.0, 1.0, 1.0]])


def test_activation_layer_worked_example():
    layer = Activation("relu")
    X = np.array([[-1.0, 2.0], [0.5, -3.0]])
    out = layer.forward_pass(X)
    accum_grad = np.array([[1.0, 1.0], [2.0, 2.0]])
    grad_in = layer.backward_pass(accum_grad)
    np.testing.assert_array_equal(out, [[0.0, 2.0], [0.5, 0.0]])
    np.testing.assert_array_equal(grad_in, [[0.0, 1.0], [2.0, 0.0]])


def test_sigmoid_layer_matches_central_differences():
    layer = Activation("sigmoid")
    X = np.random.default_rng(0).normal(size=(3, 4))
    G = np.random.default_rng(1).normal(size=(3, 4))
    layer.forward_pass(X)
    grad_in = layer.backward_pass(G)
    numeric = numerical_grad(lambda: float((layer.forward_pass(X) * G).sum()), X)
    np.testing.assert_allclose(grad_in, numeric, atol=1e-6)

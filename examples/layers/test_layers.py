"""The layers against central differences, and the worked examples the pages show."""

import unittest

import numpy as np
from layers import LayerNorm, Linear, ReLU
from model import MLP, mse_loss

from config import CONFIG
from gradcheck import numerical_grad


class TestLayerNorm(unittest.TestCase):
    def setUp(self):
        self.norm = LayerNorm(4)

    def test_worked_example(self):
        X = np.array([[1.0, 2.0, 3.0, 6.0], [0.5, -1.0, 2.0, 0.0]])
        Y = self.norm(X)
        dX = self.norm.backward(np.ones_like(Y) * np.array([1.0, -1.0, 0.5, 2.0]))
        np.testing.assert_allclose(Y.mean(axis=-1), 0.0, atol=1e-12)
        self.assertEqual(dX.shape, X.shape)

    def test_backward_matches_central_differences(self):
        X = np.random.default_rng(1).normal(size=(3, 4))
        dY = np.random.default_rng(2).normal(size=(3, 4))
        self.norm.forward(X)
        dX = self.norm.backward(dY)
        numeric = numerical_grad(lambda: float((self.norm.forward(X) * dY).sum()), X)
        np.testing.assert_allclose(dX, numeric, atol=1e-6)


class TestLinear(unittest.TestCase):
    def test_shapes_and_gradient(self):
        layer = Linear(4, 3, np.random.default_rng(0))
        X = np.random.default_rng(3).normal(size=(2, 4))
        Y = layer(X)
        dX = layer.backward(np.ones_like(Y))
        self.assertEqual(Y.shape, (2, 3))
        numeric = numerical_grad(lambda: float(layer.forward(X).sum()), X)
        np.testing.assert_allclose(dX, numeric, atol=1e-6)


class TestReLU(unittest.TestCase):
    def test_passes_positive_values_only(self):
        act = ReLU()
        Y = act.forward(np.array([[-1.0, 0.0, 2.0]]))
        np.testing.assert_array_equal(Y, [[0.0, 0.0, 2.0]])
        np.testing.assert_array_equal(act.backward(np.ones((1, 3))), [[0.0, 0.0, 1.0]])


class TestMLP(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(CONFIG["seed"])
        self.model = MLP(CONFIG["d_model"], CONFIG["d_hidden"], rng, CONFIG["eps"])

    def test_gradient_of_the_loss(self):
        X = np.random.default_rng(4).normal(size=(CONFIG["seq_len"], CONFIG["d_model"]))
        target = np.zeros_like(X)
        loss, dY = mse_loss(self.model(X), target)
        dX = self.model.backward(dY)
        numeric = numerical_grad(lambda: mse_loss(self.model.forward(X), target)[0], X)
        np.testing.assert_allclose(dX, numeric, atol=1e-6)
        self.assertGreater(loss, 0.0)


if __name__ == "__main__":
    unittest.main()

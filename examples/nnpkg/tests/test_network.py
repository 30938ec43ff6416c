"""The network: its loss, one training step through the list of layers, and a short fit."""

import numpy as np
from nnpkg import NeuralNetwork, build_mlp
from nnpkg.deep_learning.layers import Activation, Dense
from nnpkg.deep_learning.loss_functions import SigmoidCrossEntropy
from nnpkg.deep_learning.optimizers import StochasticGradientDescent
from nnpkg.gradcheck import numerical_grad


def test_loss_worked_example():
    loss_function = SigmoidCrossEntropy()
    y = np.array([[1.0], [0.0]])
    logits = np.array([[2.0], [0.5]])
    loss = loss_function.loss(y, logits)
    grad = loss_function.gradient(y, logits)
    np.testing.assert_allclose(loss, [[0.126928], [0.974077]], rtol=1e-5)
    np.testing.assert_allclose(grad, [[-0.119203], [0.622459]], rtol=1e-5)


def test_loss_gradient_matches_central_differences():
    loss_function = SigmoidCrossEntropy()
    y = np.array([[1.0], [0.0], [1.0]])
    logits = np.array([[0.3], [-1.2], [2.5]])
    numeric = numerical_grad(lambda: float(loss_function.loss(y, logits).sum()), logits)
    np.testing.assert_allclose(loss_function.gradient(y, logits), numeric, atol=1e-6)


def test_train_on_batch_worked_example():
    net = NeuralNetwork(optimizer=StochasticGradientDescent(learning_rate=0.5))
    net.add(Dense(2, input_shape=(2,), seed=0))
    net.add(Activation("tanh"))
    net.add(Dense(1, seed=1))
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    y = np.array([[1.0], [0.0]])
    before = net.train_on_batch(X, y)
    after = net.train_on_batch(X, y)
    assert after < before


def test_fit_learns_a_separable_problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 2))
    y = (X[:, :1] + X[:, 1:] > 0).astype(float)
    net = build_mlp(n_features=2, n_hidden=8, learning_rate=0.5)
    history = net.fit(X, y, n_epochs=30, batch_size=16)
    assert history[-1] < history[0]
    assert np.mean(net.predict(X) == y) > 0.9


def test_predict_proba_is_a_probability():
    net = build_mlp(n_features=3, n_hidden=4, l1=0.01)
    X = np.random.default_rng(1).normal(size=(5, 3))
    net.train_on_batch(X, np.ones((5, 1)))
    p = net.predict_proba(X)
    assert p.shape == (5, 1)
    assert np.all((p > 0) & (p < 1))

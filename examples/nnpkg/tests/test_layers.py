"""Dense, batch normalization and the L1 penalty: worked examples and central differences."""

import numpy as np
from nnpkg.deep_learning.layers import L1, Dense, make_bn
from nnpkg.deep_learning.optimizers import StochasticGradientDescent
from nnpkg.gradcheck import numerical_grad


def small_dense():
    """A Dense layer from 3 inputs to 2 units, with weights easy to follow by hand."""
    layer = Dense(2, input_shape=(3,))
    layer.initialize(StochasticGradientDescent(learning_rate=0.1))
    layer.W = np.array([[0.5, -1.0], [0.25, 0.0], [-0.5, 1.0]])
    layer.w0 = np.array([[0.1, -0.2]])
    return layer


def test_dense_forward_worked_example():
    layer = small_dense()
    X = np.array([[1.0, 2.0, -1.0], [0.0, 1.0, 3.0]])
    out = layer.forward_pass(X)
    np.testing.assert_allclose(out, [[1.6, -2.2], [-1.15, 2.8]])


def test_dense_backward_worked_example():
    layer = small_dense()
    W = layer.W.copy()
    layer.forward_pass(np.array([[1.0, 2.0, -1.0], [0.0, 1.0, 3.0]]))
    grad_out = np.array([[1.0, -1.0], [0.5, 2.0]])
    grad_in = layer.backward_pass(grad_out)
    np.testing.assert_allclose(grad_in, grad_out @ W.T)
    np.testing.assert_allclose(grad_in, [[1.5, 0.25, -1.5], [-1.75, 0.125, 1.75]])


def test_dense_backward_matches_central_differences():
    layer = Dense(4, input_shape=(3,), seed=1)
    layer.initialize(StochasticGradientDescent())
    layer.trainable = False  # keep the weights fixed while the differences are taken
    X = np.random.default_rng(2).normal(size=(5, 3))
    G = np.random.default_rng(3).normal(size=(5, 4))
    layer.forward_pass(X)
    grad_in = layer.backward_pass(G)
    numeric = numerical_grad(lambda: float((layer.forward_pass(X) * G).sum()), X)
    np.testing.assert_allclose(grad_in, numeric, atol=1e-6)


def test_dense_l1_penalty_adds_to_the_weight_gradient():
    layer = Dense(2, input_shape=(3,), regularizer=L1(alpha=0.5), seed=0)
    layer.initialize(StochasticGradientDescent(learning_rate=1.0))
    W = layer.W.copy()
    X = np.zeros((1, 3))  # no data gradient: only the penalty moves the weights
    layer.forward_pass(X)
    layer.backward_pass(np.ones((1, 2)))
    np.testing.assert_allclose(layer.W, W - 0.5 * np.sign(W))
    assert layer.penalty() == 0.5 * np.abs(layer.W).sum()


def test_batch_normalization_normalizes_each_feature():
    bn = make_bn(momentum=0.9, input_shape=(3,))
    X = np.array([[1.0, 2.0, 0.0], [3.0, -2.0, 0.5], [5.0, 0.0, 1.0]])
    out = bn.forward_pass(X)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-12)
    assert np.all(out.std(axis=0) < 1.0)  # eps keeps the variance a little above the batch's


def test_batch_normalization_backward_matches_central_differences():
    bn = make_bn(input_shape=(3,), optimizer=StochasticGradientDescent(learning_rate=0.0))
    X = np.random.default_rng(4).normal(size=(6, 3))
    G = np.random.default_rng(5).normal(size=(6, 3))
    bn.forward_pass(X)
    grad_in = bn.backward_pass(G)
    numeric = numerical_grad(lambda: float((bn.forward_pass(X) * G).sum()), X)
    np.testing.assert_allclose(grad_in, numeric, atol=1e-6)


def test_batch_normalization_backward_worked_example():
    bn = make_bn(input_shape=(3,), optimizer=StochasticGradientDescent(learning_rate=0.0))
    X = np.array([[1.0, 2.0, 0.0], [3.0, -2.0, 0.5], [5.0, 0.0, 1.0]])
    bn.forward_pass(X)
    accum_grad = np.array([[0.1, -0.2, 0.3], [0.4, 0.0, -0.1], [-0.5, 0.2, 0.1]])
    grad_in = bn.backward_pass(accum_grad)
    # normalising over the batch forgets a shift of every row: the gradient on the input sums to 0 down the batch
    np.testing.assert_allclose(grad_in.sum(axis=0), 0.0, atol=1e-12)


def test_l1_penalty_worked_example():
    reg = L1(alpha=0.5)
    W = np.array([[1.0, -2.0], [0.0, 0.5]])
    penalty = reg(W)
    assert penalty == 1.75


def test_l1_gradient_worked_example():
    from nnpkg.deep_learning import L1

    reg = L1(alpha=0.1)
    W = np.array([[2.0, -0.5], [0.0, 3.0]])
    assert np.isclose(reg.forward(W), 0.55)
    grad = reg.backward(W)
    np.testing.assert_allclose(grad, [[0.1, -0.1], [0.0, 0.1]])

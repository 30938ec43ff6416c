"""Layers: each keeps its weights, and has a forward_pass and a backward_pass.

``backward_pass(accum_grad)`` takes the gradient of the loss on the layer's
output, updates the layer's weights with its optimizer, and returns the
gradient on the layer's input, which the network hands to the layer before.
"""

import copy
import math

import numpy as np

from nnpkg.deep_learning.activations import ReLU, Sigmoid, TanH
from nnpkg.deep_learning.optimizers import StochasticGradientDescent

from .module import Module

__all__ = ["Layer", "Dense", "Activation", "BatchNormalization", "L1", "make_bn", "activation_functions"]


class Layer:
    """What every layer shares; the network calls these in order."""

    input_shape = None

    def set_input_shape(self, shape):
        self.input_shape = shape

    def layer_name(self):
        return self.__class__.__name__

    def parameters(self):
        return 0

    def penalty(self):
        return 0.0

    def forward_pass(self, X, training=True):
        raise NotImplementedError

    def backward_pass(self, accum_grad):
        raise NotImplementedError

    def output_shape(self):
        return self.input_shape


class L1(Module):
    """The L1 weight penalty alpha * sum |W|, which a Dense layer adds to the loss."""

    def __init__(self, alpha):
        self.alpha = alpha

    def forward(self, W):
        return self.alpha * np.abs(W).sum()

    def backward(self, W):
        """The gradient of the penalty on W (the subgradient 0 where W is 0)."""
        return self._bwd(W)

    def _bwd(self, W):
        return self.alpha * np.sign(W)


class Dense(Layer):
    """A fully connected layer: n_units outputs, each a weighted sum of the inputs plus a bias."""

    def __init__(self, n_units, input_shape=None, regularizer=None, seed=None):
        self.n_units = n_units
        self.input_shape = input_shape
        self.regularizer = regularizer
        self.seed = seed
        self.trainable = True
        self.layer_input = None
        self.W = None
        self.w0 = None

    def initialize(self, optimizer):
        limit = 1 / math.sqrt(self.input_shape[0])
        rng = np.random.default_rng(self.seed)
        self.W = rng.uniform(-limit, limit, (self.input_shape[0], self.n_units))
        self.w0 = np.zeros((1, self.n_units))
        self.W_opt = copy.copy(optimizer)
        self.w0_opt = copy.copy(optimizer)

    def parameters(self):
        return self.W.size + self.w0.size

    def penalty(self):
        return self.regularizer(self.W) if self.regularizer is not None else 0.0

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return X.dot(self.W) + self.w0

    def backward_pass(self, accum_grad):
        W = self.W  # the weights the forward pass used
        if self.trainable:
            grad_w = self.layer_input.T.dot(accum_grad)
            if self.regularizer is not None:
                grad_w = grad_w + self.regularizer.backward(W)
            grad_w0 = np.sum(accum_grad, axis=0, keepdims=True)
            self.W = self.W_opt.update(self.W, grad_w)
            self.w0 = self.w0_opt.update(self.w0, grad_w0)
        accum_grad = accum_grad.dot(W.T)
        return accum_grad

    def output_shape(self):
        return (self.n_units,)


activation_functions = {"sigmoid": Sigmoid, "relu": ReLU, "tanh": TanH}


class Activation(Layer):
    """An activation function as a layer, chosen by name: Activation("relu")."""

    def __init__(self, name):
        self.activation_name = name
        self.activation_func = activation_functions[name]()
        self.trainable = True

    def layer_name(self):
        return f"Activation ({self.activation_func.__class__.__name__})"

    def forward_pass(self, X, training=True):
        self.layer_input = X
        return self.activation_func(X)

    def backward_pass(self, accum_grad):
        return accum_grad * self.activation_func.gradient(self.layer_input)


class BatchNormalization(Layer):
    """Each feature normalised over the batch, then scaled by gamma and shifted by beta."""

    def __init__(self, momentum=0.99, eps=0.01):
        self.momentum = momentum
        self.eps = eps
        self.trainable = True
        self.running_mean = None
        self.running_var = None

    def initialize(self, optimizer):
        self.gamma = np.ones(self.input_shape)
        self.beta = np.zeros(self.input_shape)
        self.gamma_opt = copy.copy(optimizer)
        self.beta_opt = copy.copy(optimizer)

    def parameters(self):
        return self.gamma.size + self.beta.size

    def forward_pass(self, X, training=True):
        if self.running_mean is None:
            self.running_mean = np.mean(X, axis=0)
            self.running_var = np.var(X, axis=0)
        if training and self.trainable:
            mean = np.mean(X, axis=0)
            var = np.var(X, axis=0)
            self.running_mean = self.momentum * self.running_mean + (1 - self.momentum) * mean
            self.running_var = self.momentum * self.running_var + (1 - self.momentum) * var
        else:
            mean = self.running_mean
            var = self.running_var
        self.X_centered = X - mean
        self.stddev_inv = 1 / np.sqrt(var + self.eps)
        X_norm = self.X_centered * self.stddev_inv
        return self.gamma * X_norm + self.beta

    def backward_pass(self, accum_grad):
        gamma = self.gamma  # the scale the forward pass used
        if self.trainable:
            X_norm = self.X_centered * self.stddev_inv
            grad_gamma = np.sum(accum_grad * X_norm, axis=0)
            grad_beta = np.sum(accum_grad, axis=0)
            self.gamma = self.gamma_opt.update(self.gamma, grad_gamma)
            self.beta = self.beta_opt.update(self.beta, grad_beta)
        batch_size = accum_grad.shape[0]
        accum_grad = (
            (1 / batch_size)
            * gamma
            * self.stddev_inv
            * (
                batch_size * accum_grad
                - np.sum(accum_grad, axis=0)
                - self.X_centered * self.stddev_inv**2 * np.sum(accum_grad * self.X_centered, axis=0)
            )
        )
        return accum_grad


def make_bn(momentum=0.99, input_shape=None, optimizer=None):
    """A BatchNormalization layer; given input_shape, ready to use without a network."""
    bn = BatchNormalization(momentum=momentum)
    if input_shape is not None:
        bn.set_input_shape(input_shape)
        bn.initialize(optimizer if optimizer is not None else StochasticGradientDescent())
    return bn

"""The network: a list of layers, run forward in order and backward in reverse."""

import numpy as np

from nnpkg.deep_learning.activations import sigmoid
from nnpkg.deep_learning.layers import L1, Activation, Dense, make_bn
from nnpkg.deep_learning.loss_functions import SigmoidCrossEntropy
from nnpkg.deep_learning.optimizers import StochasticGradientDescent


class NeuralNetwork:
    """Layers added in order; the last layer's output is the logits of the loss."""

    def __init__(self, optimizer, loss=SigmoidCrossEntropy):
        self.optimizer = optimizer
        self.layers = []
        self.loss_function = loss()

    def add(self, layer):
        """Appends a layer, giving it the previous layer's output shape and its own copy of the optimizer."""
        if self.layers:
            layer.set_input_shape(shape=self.layers[-1].output_shape())
        if hasattr(layer, "initialize"):
            layer.initialize(optimizer=self.optimizer)
        self.layers.append(layer)

    def train_on_batch(self, X, y):
        """One step of gradient descent on the batch (X, y); returns the loss before the step."""
        y_pred = self._forward_pass(X)
        loss = np.mean(self.loss_function.loss(y, y_pred)) + sum(layer.penalty() for layer in self.layers)
        loss_grad = self.loss_function.gradient(y, y_pred) / y.size
        self._backward_pass(loss_grad=loss_grad)
        return loss

    def fit(self, X, y, n_epochs, batch_size):
        """Trains for n_epochs over X in batches of batch_size; returns the mean loss of each epoch."""
        history = []
        for _ in range(n_epochs):
            losses = [
                self.train_on_batch(X[i : i + batch_size], y[i : i + batch_size]) for i in range(0, len(X), batch_size)
            ]
            history.append(float(np.mean(losses)))
        return history

    def _forward_pass(self, X, training=True):
        for layer in self.layers:
            X = layer.forward_pass(X, training)
        return X

    def _backward_pass(self, loss_grad):
        for layer in reversed(self.layers):
            loss_grad = layer.backward_pass(loss_grad)

    def predict_proba(self, X):
        """The probability of the class 1 for each row of X."""
        return sigmoid(self._forward_pass(X, training=False))

    def predict(self, X):
        return (self.predict_proba(X) > 0.5).astype(int)


def build_mlp(n_features, n_hidden, n_outputs=1, learning_rate=0.1, momentum=0.99, l1=0.0, seed=0):
    """Dense, batch normalization, ReLU, Dense: a one-hidden-layer classifier."""
    net = NeuralNetwork(optimizer=StochasticGradientDescent(learning_rate=learning_rate))
    net.add(Dense(n_hidden, input_shape=(n_features,), regularizer=L1(l1) if l1 else None, seed=seed))
    net.add(make_bn(momentum=momentum))
    net.add(Activation("relu"))
    net.add(Dense(n_outputs, seed=seed + 1))
    return net

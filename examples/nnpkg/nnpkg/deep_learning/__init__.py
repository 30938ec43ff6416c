"""Layers, activations, losses and the network that runs them in order."""

from .layers import *  # noqa: F403 (the layers module lists its public names in __all__)
from .network import NeuralNetwork, build_mlp  # noqa: F401

"""nnpkg: a small neural-network package in plain NumPy, every gradient written by hand."""

from nnpkg.deep_learning import NeuralNetwork, build_mlp

__all__ = ["NeuralNetwork", "build_mlp"]
__version__ = "0.1.0"

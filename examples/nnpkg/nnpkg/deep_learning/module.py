"""The base of the function-like modules: calling a module runs its forward."""


class Module:
    """A piece of computation with a forward and a backward; ``m(x)`` is ``m.forward(x)``."""

    def __call__(self, *args):
        return self.forward(*args)

    def forward(self, *args):
        raise NotImplementedError

    def backward(self, *args):
        raise NotImplementedError

"""What the recorder's child runs for a gradient check (``kinds.gradcheck``): central differences of a forward,
measured with the project's own central-difference function, and the form the forward's recorded inputs travel
in (``encode`` in the build, ``decode`` in the child).

The child runs ``central_differences`` by this module's dotted name, and what a recording loads is what it
depends on: so this module imports nothing of the generator, and a recording of central differences depends on
the project's code and this file only.
"""

from __future__ import annotations

import importlib
from typing import Any

CENTRAL_DIFFERENCES = "central_differences"  # the function of this module the child runs


def encode(value: Any):
    """A hashable, exact stand-in for a recorded argument (requests are hashed and cached by repr). In the build
    only: the child, which imports nothing of the generator (see the module's doc), decodes."""

    import numpy as np

    from docs_hooks.run.recording import Opaque

    if isinstance(value, np.ndarray):
        return ("__ndarray__", value.dtype.str, value.shape, tuple(value.ravel().tolist()))
    if isinstance(value, np.generic):
        return ("__scalar__", value.dtype.str, value.item())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return ("__tuple__", tuple(encode(v) for v in value))
    if isinstance(value, dict):
        return ("__dict__", tuple((k, encode(v)) for k, v in value.items()))
    if isinstance(value, Opaque) and value.fields:  # a config object of the project: made again in the child
        return ("__object__", value.type, tuple((k, encode(v)) for k, v in value.fields.items()))
    raise TypeError(f"cannot pass a recorded {type(value).__name__} to the central-difference run")


def decode(value: Any):
    import numpy as np

    if isinstance(value, tuple) and value and value[0] == "__ndarray__":
        _, dtype, shape, flat = value
        return np.array(flat, dtype=np.dtype(dtype)).reshape(shape)
    if isinstance(value, tuple) and value and value[0] == "__scalar__":
        return np.dtype(value[1]).type(value[2])
    if isinstance(value, tuple) and value and value[0] == "__tuple__":
        return tuple(decode(v) for v in value[1])
    if isinstance(value, tuple) and value and value[0] == "__dict__":
        return {k: decode(v) for k, v in value[1]}
    if isinstance(value, tuple) and value and value[0] == "__object__":
        return _make_object(value[1], {k: decode(v) for k, v in value[2]})
    return value


def _make_object(dotted: str, fields: dict) -> object:
    """An object of the project's class ``dotted`` with these fields (a dataclass through its constructor)."""
    import dataclasses

    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:]:
            found = getattr(found, part)
        break
    else:
        raise ImportError(f"cannot import the class {dotted}")
    if not isinstance(found, type):
        raise TypeError(f"{dotted} is not a class")
    cls: type[object] = found
    if dataclasses.is_dataclass(cls):
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        obj: object = cls(**{k: v for k, v in fields.items() if k in init})
        for k, v in fields.items():
            if k not in init:
                object.__setattr__(obj, k, v)
        return obj
    obj = cls.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _load(spec: str):
    module, _, qual = spec.partition(":")
    target = importlib.import_module(module)
    for part in qual.split("."):
        target = getattr(target, part)
    return target


def central_differences(numerical_grad: str, forward: str, inputs: tuple, dY, wrt: tuple) -> dict:
    """Runs in the recorder's child: the project's numerical_grad of sum(forward(**inputs)[0] * dY).

    ``numerical_grad(f, x)`` nudges ``x`` in place and calls ``f()``, so ``f`` reads the
    very array that is being nudged.
    """

    import numpy as np

    ng = _load(numerical_grad)
    fwd = _load(forward)
    args = {k: decode(v) for k, v in inputs}
    weights = decode(dY)

    def f():
        out = fwd(**args)
        out = out[0] if isinstance(out, tuple) else out
        return float(np.sum(out * weights))

    # an entry of a dictionary argument is nudged in its dictionary, where the forward reads it
    return {name: ng(f, args[name[0]][name[1]] if isinstance(name, tuple) else args[name]) for name in wrt}

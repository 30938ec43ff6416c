"""Numerical gradients by central differences, to check the hand-written backward passes.

Why this module exists: every backward pass in ops.py and transformer.py is
derived by hand, and the only independent evidence that a derivation is right
is to compare it with the gradient measured by nudging each input and watching
the loss move. It follows the classic gradient check (as in CS231n): central
differences in float64 and a relative error that does not depend on the scale
of the gradient.
"""

import numpy as np


def numerical_grad(f, x, h=1e-5):
    """Central-difference gradient of the scalar f() with respect to every entry of x.

    f takes no arguments and must read x (the same array object) when called:
    each entry of x is set to x + h, then x - h, in place, f is evaluated, and the
    entry is restored before moving on, so x is unchanged afterwards.

    Why h = 1e-5: the central difference (f(x+h) - f(x-h)) / 2h has a truncation
    error of order h^2 |f'''| and a rounding error of order eps |f| / h, with
    eps = 2.2e-16 for float64. The sum is smallest near h = eps^(1/3) = 6e-6;
    1e-5 is close to that, so a correct gradient agrees to about 1e-10 relative.
    In float32 (eps = 1.2e-7) the same h would leave only a few correct digits,
    which is why x must be float64.
    """
    if x.dtype != np.float64:
        raise ValueError(f"numerical_grad needs a float64 array, got {x.dtype}: rounding would swamp h = {h}")
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + h
        f_plus = f()
        x[index] = saved - h
        f_minus = f()
        x[index] = saved
        grad[index] = (f_plus - f_minus) / (2.0 * h)
    return grad


def rel_error(a, b, delta=1e-8):
    """|a - b| / max(|a|, |b|, delta), where |.| is the Euclidean norm of a whole tensor.

    One number per tensor rather than a ratio per entry, so that entries whose
    true gradient is tiny (where central differences measure mostly their own
    truncation and rounding error, up to about 1e-9 in these checks) do not dominate. The floor
    delta is small but well above rounding noise: two tensors that are both
    essentially zero (such as the key-bias gradient) are compared by their
    absolute difference / delta instead, and two exact zeros give 0.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = max(np.linalg.norm(a), np.linalg.norm(b), delta)
    return float(np.linalg.norm(a - b) / scale)

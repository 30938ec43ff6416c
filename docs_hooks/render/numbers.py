"""How a recorded value reads on a page: numbers rounded the same way everywhere, and values as JSON data for
a widget. Pure functions of the value (NumPy is imported in the functions that use it)."""

from __future__ import annotations

import math
from typing import Any, SupportsFloat


def format_scalar(x: SupportsFloat) -> str:
    """A number rounded to 4 places, trailing zeros dropped: 1, 0.75, -1.069; tiny ones as 1e-05."""
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    r = round(x, 4) + 0.0
    if r == 0 and x != 0:
        return f"{x:.4g}"
    return f"{r:.4f}".rstrip("0").rstrip(".")


def format_value(value: Any) -> str:
    """Arrays with 4 decimals (``[[1.0000, 0.0000]]``), numbers plainly, tuples item by item."""

    import numpy as np

    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return format_value(value.item())
        if value.dtype.kind == "f":
            rounded = np.round(value.astype(np.float64), 4) + 0.0  # + 0.0 turns -0.0 into 0.0
            return np.array2string(
                rounded,
                separator=", ",
                max_line_width=10**6,
                threshold=1000,
                formatter={"float_kind": lambda v: f"{v:.4f}"},
            )
        return np.array2string(value, separator=", ", max_line_width=10**6, threshold=1000)
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format_scalar(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def format_gap(gap: float) -> str:
    return "0" if gap == 0 else f"{gap:.1e}"


def jsonable(value: Any) -> Any:
    """Recorded values as JSON data: arrays keep their shape and dtype."""

    import numpy as np

    if isinstance(value, np.ndarray):
        return {"shape": list(value.shape), "dtype": value.dtype.name, "values": jsonable(value.tolist())}
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)

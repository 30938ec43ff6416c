"""Evidence from running the real code: registers the handlers of the evidence blocks.

Each module below owns one concern and exposes ``attach(builder)``:
``examples`` (tiny worked examples, central-difference tables), ``shapes``
(the model run, symbolic shapes, symbols and call-site shapes) and
``inventory`` (parameters and config values), ``matrix`` (site-wide
traceability tables) and ``results`` (a recorded training run).
"""

from __future__ import annotations

import importlib


def attach(builder) -> None:
    for name in ("examples", "shapes", "inventory", "matrix", "results"):
        try:
            module = importlib.import_module(f"docs_hooks.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"docs_hooks.{name}":
                raise
            continue
        module.attach(builder)

"""Keeping the cyclic garbage collector off the generator's long-lived objects.

Indexing the code and parsing the pages create many objects that live for the
whole build (the index, the parsed pages) and almost no reference cycles. Each
collection of the oldest generation walks every live object, so on a large
project the collector would rescan the index again and again while the pages
are expanded (bench_scale.py shows it: the time grows faster than the code).
``paused`` turns the collector off while those
objects are made; ``freeze`` then moves everything alive into the permanent
generation, which collections skip, for as long as the build runs, and
``unfreeze`` hands it all back: when the next build of the same process
starts (``mkdocs serve``), when a build fails, and while ``mkdocs serve``
collects a build it replaced (``core.session.Session.settle``). After ``mkdocs build`` the
process ends with its objects still frozen, so the collector does not walk
them all once more on the way out. Reference counting still frees what is
dropped meanwhile.

A speed device: ``bench/bench_docs.py --devices gc-freeze`` measures what it buys (bench/README.md).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def paused():
    """Pause the collector for the block (nesting is fine: only the outermost turns it back on)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def freeze() -> None:
    """Keep every object alive now out of later collections, until ``unfreeze``."""
    gc.freeze()


def unfreeze() -> None:
    gc.unfreeze()

"""docs_hooks: traced documentation of NumPy code, every equation tied to the lines that compute it.

What a user names is here: the MkDocs plugin (``plugins: [docs_hooks]``, also under ProperDocs), the
Python-Markdown extension (``markdown_extensions: [docs_hooks.extension]``, for Zensical), the one error
type, the settings and the command line's entry (``python -m docs_hooks``). Everything else is private to
the package and may move; its folders are the stages of a build (read, resolve, run, render), the block
kinds, and the core that walks a site through them.

Each name is imported when it is first used, so that a command that needs none of the front ends (``check``)
does not import MkDocs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__all__ = ["Settings", "TraceError", "TraceExtension", "TracePlugin", "load_settings", "main", "makeExtension"]

_WHERE = {
    "Settings": "docs_hooks.base.settings",
    "load_settings": "docs_hooks.base.settings",
    "TraceError": "docs_hooks.base.errors",
    "TracePlugin": "docs_hooks.plugin",
    "TraceExtension": "docs_hooks.extension",
    "makeExtension": "docs_hooks.extension",
    "main": "docs_hooks.cli",
}

if TYPE_CHECKING:
    from docs_hooks.base.errors import TraceError
    from docs_hooks.base.settings import Settings, load_settings
    from docs_hooks.cli import main
    from docs_hooks.extension import TraceExtension, makeExtension
    from docs_hooks.plugin import TracePlugin


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'docs_hooks' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)


def __dir__() -> list[str]:
    return sorted(__all__)

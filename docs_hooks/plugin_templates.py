"""The theme's templates compiled once per ``mkdocs serve`` session, not again at every rebuild.

MkDocs makes a new Jinja environment for every build, and Jinja compiles each
template a build renders from its source: Material's main.html with the
partials it includes, 404.html, the sitemap. On a rebuild that converts one
page that is most of MkDocs' own time (bench/README.md, "The theme's
templates under serve"). ``CompiledTemplates`` is a Jinja bytecode cache
(``jinja2.BytecodeCache``, Jinja's own hook for this) that the plugin keeps
across the rebuilds of ``mkdocs serve`` and gives each build's environment in
on_env.

What a compiled template is reused for:

- the same template file: Jinja keys the cache by the template's name and
  file, and hands over a digest of its source, so an edited override is
  compiled again;
- an environment that compiles the same way: what Jinja reads of the
  environment while it compiles (its plain settings: delimiters, whitespace,
  what its extensions add; its extensions, autoescaping, ``finalize``, which
  filters and tests exist and what they are passed) is part of the key
  (``compiled_alike``). A callable setting is told apart only by its
  identity, so an environment with one (none of MkDocs' own) finds nothing
  another build's compiled.

The compiled code stays in memory: the cache folder holds no code to run, and a
single ``mkdocs build`` compiles each template once anyway.
"""

from __future__ import annotations

from types import CodeType
from typing import Any

import jinja2
from jinja2.bccache import Bucket

# The ways of compiling (``compiled_alike``) whose templates are kept, those used last: a build's environment
# compiles one way, and an environment with a callable setting a new way at every build, which would
# otherwise add a compiled theme to the process at each rebuild.
WAYS = 4


class CompiledTemplates(jinja2.BytecodeCache):
    """Compiled templates, by the environment's way of compiling and the template's file, with the digest of
    the source each was compiled from (see the module's doc)."""

    def __init__(self) -> None:
        # way of compiling -> Jinja's key of a template's file -> (the digest of its source, its code)
        self._code: dict[tuple, dict[str, tuple[str, CodeType]]] = {}
        self.compiled = 0  # templates compiled by the environments this cache was given
        self.reused = 0  # templates found compiled

    def attach(self, env: jinja2.Environment) -> None:
        """Give ``env`` this cache, unless it has one already (another plugin's, or the site's own)."""
        if env.bytecode_cache is None:
            env.bytecode_cache = self

    def load_bytecode(self, bucket: Bucket) -> None:
        found = self._compiled_by(bucket.environment).get(bucket.key)
        if found is not None and found[0] == bucket.checksum:
            bucket.code = found[1]
            self.reused += 1

    def dump_bytecode(self, bucket: Bucket) -> None:
        if bucket.code is not None:
            self._compiled_by(bucket.environment)[bucket.key] = (bucket.checksum, bucket.code)
            self.compiled += 1

    def _compiled_by(self, env: jinja2.Environment) -> dict[str, tuple[str, CodeType]]:
        """The templates compiled the way ``env`` compiles, that way now the last used (see ``WAYS``)."""
        way = compiled_alike(env)
        templates = self._code.pop(way, {})
        self._code[way] = templates
        while len(self._code) > WAYS:
            del self._code[next(iter(self._code))]
        return templates


def compiled_alike(env: jinja2.Environment) -> tuple:
    """What Jinja reads of an environment while it compiles a template: two environments with equal keys
    compile a template to the same code. Its plain settings are all taken, whatever set them (the delimiters and
    whitespace settings of ``Environment``, ``optimized``, what an extension adds, such as i18n's
    ``newstyle_gettext``); a setting that holds a callable (``autoescape``, ``finalize``) by its identity."""
    plain = (str, bool, int, float, type(None))
    return (
        _named(type(env)),  # a sandboxed environment compiles differently (its class says so)
        _named(env.code_generator_class),
        tuple(sorted((name, value) for name, value in vars(env).items() if isinstance(value, plain))),
        _setting(env.autoescape),
        _setting(env.finalize),
        tuple(sorted((name, _named(type(ext))) for name, ext in env.extensions.items())),
        _callables(env.filters),
        _callables(env.tests),
    )


def _setting(value: Any) -> object:
    """A setting as part of the key: a plain value as it is, a callable by its identity and what it is passed."""
    if callable(value):
        return ("callable", _Identity(value), _passed(value))
    return value


class _Identity:
    """An object in a key by its identity (and kept alive by it, so that no other takes its place)."""

    __slots__ = ("value",)

    def __init__(self, value: object):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


def _named(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _callables(found: dict[str, Any]) -> tuple:
    """Filters or tests: the compiled code calls each by name, passing it what its ``jinja_pass_arg`` says."""
    return tuple(sorted((name, _passed(f)) for name, f in found.items()))


def _passed(f: Any) -> str:
    """What Jinja passes a filter, test or finalize before its value (``pass_context`` and the like mark it)."""
    return str(getattr(f, "jinja_pass_arg", None))

"""Symbolic references: parse one, resolve it to exactly one statement span, or fail.

A reference is a dotted function name, optionally followed by ``:`` and the text
of one statement inside that function (or a leading part of it)::

    ops.layer_norm_forward
    ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)
    train.main: cfg = ModelConfig(

The text is compared as Python tokens, so spacing and comments do not matter.
A text equal to one statement wins; otherwise it must occur, as whole tokens,
in exactly one statement.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve.codeindex import CodeIndex, Function, Statement, did_you_mean, normalise_tokens, tokens_contain

DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")


@dataclass(frozen=True)
class Ref:
    function: str | None  # None: look in the functions of the surrounding entry
    text: str | None  # None: the whole function

    def __str__(self) -> str:
        if self.text is None:
            return self.function or ""
        return f"{self.function}: {self.text}" if self.function else self.text


@dataclass(frozen=True)
class Resolved:
    ref: Ref
    function: Function
    statement: Statement | None  # None when the reference names the whole function

    @property
    def start(self) -> int:
        return self.statement.start if self.statement else self.function.start

    @property
    def end(self) -> int:
        return self.statement.end if self.statement else self.function.end

    @property
    def lines(self) -> tuple[str, ...]:
        return self.statement.lines if self.statement else self.function.source_lines

    @property
    def locked(self) -> Statement:
        """What the review lock records: the statement, or the whole function."""
        return self.statement if self.statement is not None else self.function.whole

    @property
    def label(self) -> str:
        """``ops.py:43`` or ``train.py:48-51``."""
        span = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{self.function.display_path}:{span}"

    @property
    def key(self) -> str:
        return f"{self.function.name}: {self.ref.text}" if self.ref.text is not None else self.function.name


def parse_ref(text: str) -> Ref:
    """Split ``name: statement`` into its parts.

    The part before the first ``:`` is a function name when it is a dotted name;
    otherwise the whole text is a statement to look for in the functions of the
    surrounding entry.
    """
    text = text.strip()
    if not text:
        raise TraceError("empty code reference; write a dotted function name, optionally ': statement text'")
    head, sep, tail = text.partition(":")
    head = head.strip()
    if DOTTED.match(head):
        return Ref(head, (tail.strip() or None) if sep else None)
    return Ref(None, text)


def resolve(index: CodeIndex, ref: Ref, scope: list[str] | None = None) -> Resolved:
    """The one statement (or function) ``ref`` points at.

    ``scope`` lists the functions a bare statement text is looked up in.
    Raises TraceError, without a page position, when there is not exactly one.
    """
    if ref.function is not None:
        functions = [index.function(ref.function)]
    else:
        if not scope:
            raise TraceError(f"names no function, and no entry is open; write 'module.function: {ref.text}'")
        functions = [index.function(name) for name in scope]
    if ref.text is None:
        return Resolved(ref, functions[0], None)

    needle = normalise_tokens(ref.text)
    if not needle:
        raise TraceError("has no code after the ':'; write a statement from the function")
    # The def line counts as a statement too, so that a default value can be referenced.
    statements = [(fn, s) for fn in functions for s in [fn.header, *fn.statements] if s is not None]
    exact = [(fn, s) for fn, s in statements if s.tokens == needle]
    found = exact or [(fn, s) for fn, s in statements if tokens_contain(s.tokens, needle)]
    names = ", ".join(fn.name for fn in functions)
    if len(found) == 1:
        fn, stmt = found[0]
        return Resolved(Ref(fn.name, ref.text), fn, stmt)
    if not found:
        candidates = {s.text.splitlines()[0]: (fn, s) for fn in functions for s in fn.statements}
        # Prefer statements that begin like the reference (same target: 'var = ...').
        first = needle.split(" ")[0]
        alike = [c for c, (_, st) in candidates.items() if st.tokens.split(" ")[0] == first]
        close = difflib.get_close_matches(ref.text.strip(), alike, n=3, cutoff=0.3) or difflib.get_close_matches(
            ref.text.strip(), list(candidates), n=3, cutoff=0.4
        )
        hint = ""
        if close:
            hint = (
                "; did you mean "
                + " or ".join(f"'{c}' ({candidates[c][0].display_path}:{candidates[c][1].start})" for c in close)
                + "?"
            )
        spans = ", ".join(f"{fn.display_path}:{fn.start}-{fn.end}" for fn in functions)
        raise TraceError(
            f"no statement of {names} ({spans}) matches '{ref.text}'{hint or '.'} "
            "Copy the statement's text from the code."
        )
    where = ", ".join(f"{fn.display_path}:{s.start}" for fn, s in found)
    raise TraceError(
        f"'{ref.text}' matches {len(found)} statements of {names} ({where}); "
        "quote more of the statement so that exactly one matches."
    )


__all__ = ["Ref", "Resolved", "parse_ref", "resolve", "did_you_mean"]

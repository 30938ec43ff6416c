"""What an equation's code lines are to it, and the check that a line said to compute it does.

An equation names lines of code in one of three roles: the lines compute it
(``computes``, the default), the equation is worked out from them (``derived``),
or it is a contrast, something the code does not do, shown beside what it does
(``contrast``). Only the first is an implementation, and only the first can be
checked: the symbol on the left of the equation's first ``=`` must be a name the
statement assigns or returns. The entry's ``trace-symbols`` table says which
code name a symbol has; an entry without one is not checked.
"""

from __future__ import annotations

import ast
import itertools
import re
import textwrap

ROLES = ("computes", "derived", "contrast")
DEFAULT_ROLE = "computes"
ROLE_WORDS = {
    "computes": "Computes it",
    "derived": "Derived from",
    "contrast": "Contrast, not in the code",
}

_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|\\left|\\right|\s+")
_SUBSCRIPT = re.compile(r"_(\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|[A-Za-z0-9])")
# What makes a left-hand side an expression rather than one symbol: a derivative, a fraction, a sum, a product,
# a function applied to arguments, a relation, a list of several symbols.
_COMPOUND = re.compile(r"\\(?:partial|frac|tfrac|dfrac|sum|prod|max|min|log|exp|operatorname)(?![A-Za-z])|[()]")
# A left-hand side that states a relation or a distribution (x ~ N(0, 1), z <= 0) is a condition, not a value.
_RELATION = re.compile(r"\\(?:sim|le|leq|ge|geq|ne|neq|in|approx|propto)(?![A-Za-z])|[<>]")
_BRACED = re.compile(r"\{(?:[^{}]|\{[^{}]*\})*\}")
_MUTATORS = {"update", "append", "extend", "insert", "setdefault"}  # methods that fill their object in place
_NAMES = re.compile(r"^\s*[A-Za-z_]\w*(\s*,\s*[A-Za-z_]\w*)*\s*$")


def normalise_tex(tex: str) -> str:
    """TeX with spacing commands, ``\\left``/``\\right``, blanks and the braces of one-character scripts
    dropped, for comparing symbols (``X_{1}`` is ``X_1``)."""
    return re.sub(r"([_^])\{(\w)\}", r"\1\2", _SPACING.sub("", tex))


def left_side(tex: str) -> str | None:
    """The TeX before the equation's first ``=`` outside braces; None when it has none."""
    depth = 0
    for i, ch in enumerate(tex):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "=" and depth == 0:
            return tex[:i].strip() or None
    return None


def _split_top(text: str) -> list[str]:
    """``text`` split at its commas outside braces and brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _balanced(text: str) -> bool:
    """Whether the brackets of ``text`` close in order, never below zero."""
    depth = 0
    for ch in text:
        depth += ch in "{(["
        depth -= ch in "})]"
        if depth < 0:
            return False
    return depth == 0


def _expression(text: str) -> str | None:
    try:
        return ast.unparse(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError:
        return None


def symbol_names(rows: list[dict]) -> dict[str, list[str]]:
    """Each symbol of trace-symbols rows (normalised TeX) -> the code it stands for.

    A name, each name of a row that pairs several symbols with as many names
    (``\\hat{X},\\, s`` with ``Xhat, s``), an expression of the function, or, for
    a symbol the code does not name (``code: none``), the expression of its
    ``shape`` when it has one.
    """
    out: dict[str, list[str]] = {}
    for row in rows:
        if not isinstance(row, dict) or row.get("symbol") is None or row.get("code") is None:
            continue
        symbol, code = str(row["symbol"]).strip().strip("$"), str(row["code"]).strip()
        if code.lower() == "none":
            shape = str(row.get("shape") or "").strip()
            expr = _expression(shape) if shape and shape.lower() != "scalar" else None
            out.setdefault(normalise_tex(symbol), []).extend([expr] if expr else [])
            continue
        symbols = [normalise_tex(s) for s in _split_top(normalise_tex(symbol))]
        if _NAMES.match(code):
            names = [n.strip() for n in code.split(",")]
            if len(symbols) == len(names) > 1:
                for s, n in zip(symbols, names):
                    out.setdefault(s, []).append(n)
                continue
            out.setdefault(normalise_tex(symbol), []).extend(names)
        else:
            expr = _expression(code)
            out.setdefault(normalise_tex(symbol), []).extend([expr] if expr else [code])
    return out


def _without_subscripts(tex: str):
    """``tex``, then ``tex`` with each choice of its subscripts removed (``\\mu_t`` -> ``\\mu``)."""
    groups = [m.span() for m in _SUBSCRIPT.finditer(tex)][:6]
    for n in range(len(groups) + 1):
        for drop in itertools.combinations(groups, n):
            kept, last = [], 0
            for a, b in drop:
                kept.append(tex[last:a])
                last = b
            kept.append(tex[last:])
            yield "".join(kept)


def lookup(lhs: str, table: dict[str, list[str]]) -> tuple[str, list[str]] | None:
    """The table's symbol that ``lhs`` writes (with or without its index subscripts), and its code.

    A subscript that holds a name and indexes, ``dX_{1,ti}``, is also tried with its name alone (``dX_1``).
    """
    tex = normalise_tex(lhs)
    named = normalise_tex(re.sub(r"_\{([^{},]+),[^{}]*\}", r"_{\1}", tex))
    for form in dict.fromkeys((named, tex)):
        for candidate in _without_subscripts(form):
            if candidate in table:
                return candidate, table[candidate]
    return None


def _statement_tree(text: str) -> ast.Module | None:
    text = textwrap.dedent(text)
    for attempt in (text, text + "\n    pass"):  # a compound statement's header alone
        try:
            return ast.parse(attempt)
        except SyntaxError:
            continue
    return None


def _targets(node: ast.AST, out: list[str]) -> None:
    if isinstance(node, ast.Name):
        out.append(node.id)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _targets(elt, out)
    elif isinstance(node, ast.Starred):
        _targets(node.value, out)
    elif isinstance(node, (ast.Subscript, ast.Attribute)):
        out.append(ast.unparse(node))
        base = node.value
        while isinstance(base, (ast.Subscript, ast.Attribute)):
            base = base.value
        if isinstance(base, ast.Name):
            out.append(base.id)


def _returned(node: ast.AST | None, out: list[str]) -> None:
    if node is None:
        return
    if isinstance(node, (ast.Tuple, ast.List)):
        for elt in node.elts:
            _returned(elt, out)
    else:
        out.append(node.id if isinstance(node, ast.Name) else ast.unparse(node))


def outputs(statement_text: str) -> list[str]:
    """What a statement gives a value to: the names (and subscripts, attributes) it assigns, and what it returns.

    ``x = ...``, ``x += ...``, ``x[...] = ...`` and each name of a tuple target
    count; a ``return`` of a tuple counts each element (a name, or the
    expression's text). A ``for`` header assigns its loop variable.
    """
    tree = _statement_tree(statement_text)
    if tree is None or not tree.body:
        return []
    st = tree.body[0]
    out: list[str] = []
    if isinstance(st, ast.Assign):
        for target in st.targets:
            _targets(target, out)
    elif isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        _targets(st.target, out)
    elif isinstance(st, (ast.With, ast.AsyncWith)):
        for item in st.items:
            if item.optional_vars is not None:
                _targets(item.optional_vars, out)
    elif isinstance(st, ast.Return):
        _returned(st.value, out)
    elif (
        isinstance(st, ast.Expr)
        and isinstance(st.value, ast.Call)
        and isinstance(st.value.func, ast.Attribute)
        and st.value.func.attr in _MUTATORS
    ):
        _targets(st.value.func.value, out)  # grads.update(...) fills grads in place
    return out


def _returns_one_unnamed(statement_text: str) -> bool:
    """Whether the statement returns one value that is neither a name nor a tuple (``return a @ b``)."""
    tree = _statement_tree(statement_text)
    if not (tree and tree.body and isinstance(tree.body[0], ast.Return)):
        return False
    value = tree.body[0].value
    return value is not None and not isinstance(value, (ast.Name, ast.Tuple, ast.List))


def _without_comments(statement_text: str) -> str:
    """The statement on one line, as written, without its comments."""
    import io
    import tokenize

    lines = statement_text.split("\n")
    try:
        for tok in tokenize.generate_tokens(io.StringIO(statement_text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                lines[row - 1] = lines[row - 1][:col]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a header alone ends early; its comments up to there are gone already
    return " ".join(" ".join(lines).split())


def _is_condition(statement_text: str) -> bool:
    """Whether the statement tests a condition (``if``, ``assert``, ``while``) rather than giving a value."""
    tree = _statement_tree(statement_text)
    return bool(tree and tree.body and isinstance(tree.body[0], (ast.If, ast.Assert, ast.While)))


def computes_problem(
    eq_id: str, tex: str, table: dict[str, list[str]] | None, statements: list[tuple[str, str]]
) -> str | None:
    """Why the statements do not compute the equation's left-hand side, or None when one does (or no table says).

    ``statements`` are (label, text) of the lines the equation names, e.g.
    ("ops.py:72", "mu = X.mean(axis=-1, keepdims=True)").
    """
    if table is None or not statements:
        return None
    what = f"equation '{eq_id}' is shown as computed by its code (role: computes, the default)"
    todo = (
        "declare 'role: derived' if the equation is worked out from these lines, or 'role: contrast' if the code "
        "does something else there; or point 'code:' at the statement that assigns it"
    )
    lhs = left_side(tex)
    if lhs is None:
        return None  # a condition or an update written without '=': nothing to match
    if _RELATION.search(lhs) or all(_is_condition(text) for _, text in statements):
        return None  # a condition the lines test, not a value they compute
    bare = normalise_tex(lhs)
    if bare.startswith("(") and bare.endswith(")") and _split_top(bare[1:-1]) and _balanced(bare[1:-1]):
        lhs = bare[1:-1]  # a tuple of values, (dX, d\gamma, d\beta) = ...
    parts = _split_top(lhs)
    if len(parts) > 1:  # several values at once: each one the table names must be given by the lines
        for part in parts:
            problem = computes_problem(eq_id, f"{part} = {tex}", table, statements)
            if problem:
                return problem
        return None
    found = lookup(lhs, table)
    if found is None:
        if not _COMPOUND.search(_BRACED.sub("{}", lhs)):
            return None  # a symbol the table does not list: its code name is not known, so it is not checked
        return (
            f"{what}, but its left-hand side {lhs} is an expression (a derivative, a sum, a function applied), "
            f"not a symbol of this entry's trace-symbols table, so no statement can assign it; add a row "
            f"naming it in the code to trace-symbols, or {todo}"
        )
    symbol, names = found
    if not names:
        return (
            f"{what}, but its left-hand side {lhs} is not named in the code (its trace-symbols row says "
            f"code: none); {todo}"
        )
    wanted = {_expression(n) or n for n in names}
    given: list[str] = []
    for _, text in statements:
        given.extend(outputs(text))
        if _returns_one_unnamed(text):
            return None  # the function's result, which it does not name: what the caller names it is not known here
    if wanted & {_expression(g) or g for g in given}:
        return None
    lines = "; ".join(f"{label} '{_without_comments(text)}'" for label, text in statements)
    gives = ", ".join(dict.fromkeys(given)) or "nothing"
    return (
        f"{what}, but its left-hand side {lhs} is {' or '.join(sorted(wanted))} in the code, and {lines} "
        f"assigns or returns {gives}; {todo}"
    )

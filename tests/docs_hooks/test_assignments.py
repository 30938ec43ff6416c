"""Tests of docs_hooks.resolve.assignments: which recording (arguments on entry, locals on return) holds the
value a line of a function saw, read from its source alone.

Each test writes one small function to a file and asks about its lines; the lines are found by their text.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from docs_hooks.resolve.assignments import ENTRY, RETURN, assignments, one_line, read_paths


def seen_in(tmp_path: Path, source: str):
    """The assignments of the first function of ``source``, and a function giving the line of a text."""
    text = textwrap.dedent(source).lstrip("\n")
    tree = ast.parse(text)
    node = tree.body[0]
    params = tuple(a.arg for a in node.args.args)
    lines = text.splitlines()
    found = assignments(tree, lines, node.lineno, node.end_lineno, params)

    def line(needle: str) -> int:
        return next(i for i, s in enumerate(lines, 1) if needle in s)

    return found, line


BACKWARD = """
def backward(self, g, W):
    grad_w = self.x.T @ g
    if self.penalty:
        grad_w = grad_w + self.penalty * W
    self.W = self.W - grad_w
    total = 0.0
    for row in g:
        total += row.sum()
    g = g @ W.T
    return g
"""


def test_an_argument_reads_on_entry_until_it_is_reassigned_and_on_return_after(tmp_path):
    seen, line = seen_in(tmp_path, BACKWARD)
    assert seen.bare("g") == ENTRY
    assert seen.read_at(["g"], line("grad_w = self.x.T @ g")) == {"g": ENTRY}
    # the statement that reassigns g reads the g it was given
    assert seen.read_at(["g", "W.T"], line("g = g @ W.T")) == {"g": ENTRY, "W": ENTRY}
    assert seen.after(["g"], line("g = g @ W.T")) == {"g": RETURN}
    assert seen.read_at(["g"], line("return g")) == {"g": RETURN}


def test_a_name_bound_twice_has_no_one_value_and_one_built_in_place_does(tmp_path):
    seen, line = seen_in(tmp_path, BACKWARD)
    bound = seen.bare("grad_w")
    assert [(a.start, a.text) for a in bound] == [
        (line("grad_w = self.x.T @ g"), "grad_w = self.x.T @ g"),
        (line("grad_w = grad_w + self.penalty * W"), "grad_w = grad_w + self.penalty * W"),
    ]
    assert seen.bare("total") == RETURN  # bound once, then added to
    assert seen.bare("row") == RETURN  # one loop target
    later = seen.after(["grad_w"], line("grad_w = self.x.T @ g"))
    assert later[0] == "grad_w" and later[1].start == line("grad_w = grad_w + self.penalty")


def test_a_store_into_an_attribute_changes_that_attribute_only(tmp_path):
    seen, line = seen_in(tmp_path, BACKWARD)
    here = line("grad_w = self.x.T @ g")
    # self.W changes later: a read of self.x does not see it, a read of self.W or of self does
    assert seen.read_at(["self.x.T"], here) == {"self": ENTRY}
    assert seen.read_at(["self.W"], here) == {"self": ENTRY}  # an argument: its value on entry
    assert seen.after(["self.x"], line("self.W = self.W - grad_w")) == {"self": ENTRY}
    assert seen.after(["self.W"], line("self.W = self.W - grad_w")) == {"self": RETURN}
    # a read of self as a whole sees the store into self.W
    assert seen.read_at(["self"], line("total = 0.0")) == {"self": RETURN}


def test_a_change_later_in_a_loop_around_the_line_leaves_neither_recording(tmp_path):
    seen, line = seen_in(
        tmp_path,
        """
        def f(x, n):
            for _ in range(n):
                y = x * 2
                x = x + 1
            return y
        """,
    )
    blocked = seen.read_at(["x"], line("y = x * 2"))
    assert blocked[0] == "x" and blocked[1].start == line("x = x + 1")
    # the second time round, the statement reads what it assigned the first time
    itself = seen.read_at(["x"], line("x = x + 1"))
    assert itself[0] == "x" and itself[1].start == line("x = x + 1")


def test_a_local_assigned_before_and_after_a_line(tmp_path):
    seen, line = seen_in(
        tmp_path,
        """
        def f(x):
            y = x + 1
            z = y * 2
            y = y - 1
            return z
        """,
    )
    blocked = seen.read_at(["y"], line("z = y * 2"))
    assert isinstance(blocked, tuple) and blocked[1].start == line("y = y - 1")
    assert seen.read_at(["x"], line("z = y * 2")) == {"x": ENTRY}


def test_two_branches_of_one_if_bind_a_name_once_on_every_path(tmp_path):
    seen, _ = seen_in(
        tmp_path,
        """
        def f(x, greedy):
            if greedy:
                pick = x.argmax()
            elif x.sum() > 0:
                pick = 1
            else:
                pick = 0
            again = 1
            if x.any():
                again = 2
            return pick, again
        """,
    )
    assert seen.bare("pick") == RETURN
    assert [a.text for a in seen.bare("again")] == ["again = 1", "again = 2"]


def test_other_bindings_are_seen(tmp_path):
    seen, line = seen_in(
        tmp_path,
        """
        def f(path, items):
            with open(path) as handle:
                text = handle.read()
            try:
                value = int(text)
            except ValueError as err:
                value = None
            if (n := len(items)) > 2:
                items[0] = n
            return value
        """,
    )
    assert [a.start for a in seen.of("handle")] == [line("with open(path)")]
    assert [a.start for a in seen.of("err")] == [line("except ValueError")]
    assert [a.start for a in seen.of("n")] == [line("if (n := len(items))")]
    assert seen.bare("items") == ENTRY
    assert seen.of("items")[0].binds is False  # a store into an item changes it in place
    assert isinstance(seen.bare("value"), tuple)


def test_a_statement_on_one_line_as_a_page_may_quote_it():
    assert one_line(["accum_grad = (", "    (1 / n)  # the mean", "    * g", ")"]) == "accum_grad = ((1 / n) * g)"
    assert one_line(["for name, theta in params.items():"]) == "for name, theta in params.items()"
    assert one_line(['s = "a # b"  # comment']) == 's = "a # b"'


def test_what_an_expression_reads():
    tree = ast.parse("self.m[name] * g + np.sqrt(self.v[name]).sum()", mode="eval")
    assert read_paths(tree) == ["self.m", "name", "g", "np.sqrt", "self.v"]


def test_a_module_without_the_function_has_no_assignments():
    assert assignments(ast.parse("x = 1\n"), ["x = 1"], 1, 1, ()) is None


def test_a_statement_closed_by_a_bracket_on_a_line_of_its_own_ends_on_that_line():
    import ast

    from docs_hooks.resolve.assignments import assignments

    source = "def f(a, b):\n    x = (\n        a + b\n    )\n    return x\n"
    seen = assignments(ast.parse(source), source.splitlines(), 1, 5, ("a", "b"))

    assert seen is not None
    [x] = seen.of("x")
    assert (x.start, x.end, x.text) == (2, 4, "x = (a + b)")  # as a page quotes it, and as the index spans it
    assert seen.read_at(["x"], 4) == seen.read_at(["x"], 2)  # its closing line is the statement's

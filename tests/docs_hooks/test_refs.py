"""Tests of docs_hooks.resolve.refs: ``References``, the one place every reference of a page is resolved.

What users rely on: a reference resolves to one statement span (or a whole function) of the code; every
reference that resolved is recorded for the review lock (``uses``: the page, where on it and what, the code
as written, a digest of its tokens, and its line); every one that did not is kept in ``unresolved`` with its
line, and its problem, naming the page and line, is in ``problems``. ``check`` and ``relock`` read these lists,
so a reference can be neither lost nor counted twice.

The code is conftest's tiny project: ``src/ops.py`` holds the layer norm, forward on lines 6-15 (``mu`` on
line 8, ``var`` on 9-12, ``s`` on 13), backward on 18-27.
"""

from __future__ import annotations

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import index_for
from docs_hooks.resolve.codeindex import normalise_tokens
from docs_hooks.resolve.lock import LockEntry
from docs_hooks.resolve.refs import References

from .conftest import BASE_FILES, OPS, write_tree

PAGE = "docs/page.md"
MEAN = "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """The code index of the tiny project (built once for this module)."""
    root = write_tree(tmp_path_factory.mktemp("refs") / "proj", BASE_FILES)
    return index_for(load_settings(root))


def index_of(tmp_path, ops: str):
    """The code index of the tiny project with ``src/ops.py`` replaced by ``ops``."""
    root = write_tree(tmp_path / "proj", {**BASE_FILES, "src/ops.py": ops})
    return index_for(load_settings(root))


def test_a_reference_resolves_to_its_statement_and_is_recorded_for_the_lock_with_its_line(index):
    refs = References(index, PAGE)

    resolved = refs.resolve(MEAN, 12, "inline")

    assert (resolved.function.name, resolved.start, resolved.end) == ("ops.layer_norm_forward", 8, 8)
    statement = index.functions["ops.layer_norm_forward"].statements[0]
    assert refs.uses == [
        LockEntry(PAGE, f"inline | {MEAN}", "mu = X.mean(axis=-1, keepdims=True)", statement.digest, 12)
    ]
    assert (refs.problems, refs.unresolved) == ([], {})


def test_the_key_names_where_the_reference_sits_and_its_text_without_surrounding_spaces(index):
    refs = References(index, PAGE)

    refs.resolve(f"  {MEAN}  \n", 3, "equation ln-mean")

    [use] = refs.uses
    assert use.key == f"equation ln-mean | {MEAN}"


def test_a_statement_over_several_lines_is_recorded_whole_and_its_digest_is_of_its_tokens(index):
    refs = References(index, PAGE)

    resolved = refs.resolve("ops.layer_norm_forward: var = ((X - mu) ** 2).mean(", 4, "inline")

    assert (resolved.start, resolved.end) == (9, 12)
    [use] = refs.uses
    assert use.code == "var = ((X - mu) ** 2).mean(\naxis=-1,\nkeepdims=True,\n)"  # every line, as written
    tokens = normalise_tokens("var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)")
    assert use.digest == index.functions["ops.layer_norm_forward"].statements[1].digest
    assert index.functions["ops.layer_norm_forward"].statements[1].tokens == tokens


def test_a_reference_to_a_whole_function_records_the_whole_function(index):
    refs = References(index, PAGE)

    resolved = refs.resolve("ops.layer_norm_backward", 2, "entry layer-norm-backward")

    assert (resolved.start, resolved.end, resolved.statement) == (18, 27, None)
    [use] = refs.uses
    backward = index.functions["ops.layer_norm_backward"]
    assert use.code.splitlines()[0] == "def layer_norm_backward(dY, cache, gamma):"
    assert use.code.splitlines()[-1] == "return dX, dgamma, dbeta"
    assert len(use.code.splitlines()) == 10  # lines 18-27
    assert use.digest == backward.whole.digest != backward.statements[-1].digest


def test_a_bare_statement_is_looked_up_in_the_entrys_functions(index):
    refs = References(index, PAGE)
    scope = ["ops.layer_norm_backward", "ops.layer_norm_forward"]

    resolved = refs.resolve("s = 1.0 / np.sqrt(var + epsilon)", 7, "equation inv-std", scope)

    assert (resolved.function.name, resolved.start) == ("ops.layer_norm_forward", 13)
    [use] = refs.uses
    assert use.key == "equation inv-std | s = 1.0 / np.sqrt(var + epsilon)"  # the text as written
    assert use.code == "s = 1.0 / np.sqrt(var + epsilon)  # inverse standard deviation"


def test_a_failed_reference_returns_none_and_its_problem_names_page_and_line(index):
    refs = References(index, PAGE)

    assert refs.resolve("ops.layer_norm_forward: mu = X.sum()", 9, "inline") is None

    [problem] = refs.problems
    assert isinstance(problem, TraceError)
    assert (problem.path, problem.line) == (PAGE, 9)
    assert str(problem) == (
        "docs/page.md:9: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; did you mean "
        "'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code."
    )
    assert refs.unresolved == {(PAGE, "inline | ops.layer_norm_forward: mu = X.sum()"): 9}
    assert refs.uses == []  # nothing for the lock


@pytest.mark.parametrize(
    ("text", "scope", "reason"),
    [
        (
            "ops.no_such_function: x = 1",
            None,
            "no function 'ops.no_such_function' in the code index. Use the dotted name: module, then class if any, "
            "then function.",
        ),
        ("mu = X", None, "names no function, and no entry is open; write 'module.function: mu = X'"),
        (
            "ops.layer_norm_forward: keepdims=True",
            None,
            "'keepdims=True' matches 2 statements of ops.layer_norm_forward (ops.py:8, ops.py:9); quote more of "
            "the statement so that exactly one matches.",
        ),
    ],
)
def test_every_way_a_reference_fails_is_recorded_as_unresolved_at_its_line(index, text, scope, reason):
    refs = References(index, "docs/guide/other.md")

    assert refs.resolve(text, 31, "inline", scope) is None

    assert [str(p) for p in refs.problems] == [f"docs/guide/other.md:31: reference '{text}': {reason}"]
    assert refs.unresolved == {("docs/guide/other.md", f"inline | {text}"): 31}


def test_each_reference_of_a_page_lands_in_exactly_one_list_in_page_order(index):
    refs = References(index, PAGE)
    written = [
        (MEAN, 3),
        ("ops.layer_norm_forward: mu = X.sum()", 4),
        ("ops.layer_norm_backward: dbeta = dY.sum(axis=0)", 5),
        ("ops.gone", 6),
    ]

    for text, line in written:
        refs.resolve(text, line, "inline")

    assert [(u.key, u.line) for u in refs.uses] == [(f"inline | {MEAN}", 3), ("inline | " + written[2][0], 5)]
    assert refs.unresolved == {(PAGE, "inline | " + written[1][0]): 4, (PAGE, "inline | ops.gone"): 6}
    assert [p.line for p in refs.problems] == [4, 6]


def test_a_reference_a_block_resolved_itself_is_recorded_as_given(index):
    refs = References(index, PAGE)
    entry = LockEntry(PAGE, "example one | mu", "mu = X.mean(axis=-1, keepdims=True)", "0123456789abcdef", 14)

    refs.lock(entry)
    refs.resolve(MEAN, 15, "inline")

    assert refs.uses[0] is entry
    assert len(refs.uses) == 2 and (refs.problems, refs.unresolved) == ([], {})


def test_the_digest_ignores_spacing_and_comments_but_not_a_change_of_the_code(tmp_path, index):
    """What the lock compares: the same tokens pass however they are laid out; other tokens do not."""
    respaced = OPS.replace(
        "    mu = X.mean(axis=-1, keepdims=True)", "    mu = X.mean( axis=-1,keepdims=True )  # the mean"
    )
    changed = OPS.replace("    mu = X.mean(axis=-1, keepdims=True)", "    mu = X.mean(axis=-1, keepdims=False)")
    before = References(index, PAGE)
    before.resolve(MEAN, 3, "inline")

    after_respacing = References(index_of(tmp_path / "a", respaced), PAGE)
    after_respacing.resolve(MEAN, 3, "inline")
    after_change = References(index_of(tmp_path / "b", changed), PAGE)
    after_change.resolve("ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=False)", 3, "inline")

    [old], [respaced_use], [changed_use] = before.uses, after_respacing.uses, after_change.uses
    assert respaced_use.digest == old.digest
    assert respaced_use.code == "mu = X.mean( axis=-1,keepdims=True )  # the mean"  # shown as written now
    assert changed_use.digest != old.digest

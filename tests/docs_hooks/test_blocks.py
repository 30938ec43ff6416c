"""Reading trace blocks: YAML that could stand for more than it says is refused, with the page line.

Each test parses a page written here (no project is needed) and asserts the
exact message the author sees.
"""

from __future__ import annotations

import pytest

from docs_hooks.blocks import parse_page, within_root
from docs_hooks.errors import TraceError

from .conftest import page

# About 400 bytes of YAML that, with its aliases expanded, stands for 9**9 (387 million) strings.
ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def problems(text: str) -> list[str]:
    return [str(p) for p in parse_page(text, "docs/page.md").problems]


def test_a_yaml_alias_bomb_is_refused_before_it_is_expanded():
    assert 350 < len(ALIAS_BOMB.encode()) < 450

    found = problems("# Page\n\n```trace-entry\n" + ALIAS_BOMB + "```\n")

    assert found == [
        "docs/page.md:4: block 'trace-entry' uses the anchor '&a'; YAML anchors and aliases are not accepted: "
        "write the value out in full"
    ]


def test_an_alias_is_refused_at_its_own_line():
    found = problems(page("""
        # Page

        ```trace-entry
        title: Layer norm
        function: [ops.layer_norm_forward, *other]
        status: implemented
        ```
        """))

    assert found == [
        "docs/page.md:5: block 'trace-entry' uses the alias '*other'; YAML anchors and aliases are not accepted: "
        "write the value out in full"
    ]


def test_a_merge_key_is_refused_as_an_alias():
    found = problems(page("""
        ```trace-symbols
        rows:
          - &row {symbol: x, meaning: input, code: X}
          - <<: *row
            symbol: y
        ```
        """))

    assert found == [
        "docs/page.md:3: block 'trace-symbols' uses the anchor '&row'; YAML anchors and aliases are not accepted: "
        "write the value out in full"
    ]


def test_a_field_written_twice_is_an_error_at_the_second_one():
    found = problems(page("""
        # Page

        ```trace-entry
        title: Layer norm
        function: ops.layer_norm_forward
        title: Layer norm forward
        status: implemented
        ```
        """))

    assert found == [
        "docs/page.md:6: block 'trace-entry' has the key 'title' twice in one mapping (first on line 4); "
        "keep one of them"
    ]


def test_a_key_written_twice_inside_a_field_is_an_error_too():
    found = problems(page("""
        ```trace-params
        match: ln1_
        roles: {ln1_gamma: scale, ln1_gamma: shift}
        ```
        """))

    assert found == [
        "docs/page.md:3: block 'trace-params' has the key 'ln1_gamma' twice in one mapping (first on line 3); "
        "keep one of them"
    ]


def test_a_block_without_anchors_or_repeated_keys_is_read_as_written():
    [block] = parse_page(page("""
        ```trace-entry
        title: "Layer norm & friends *"
        function: [ops.layer_norm_forward]
        status: implemented
        ```
        """), "docs/page.md").blocks

    assert block.data["title"] == "Layer norm & friends *"
    assert block.data["function"] == ["ops.layer_norm_forward"]


@pytest.mark.parametrize("written", ["docs/data/run.json", "tests/../docs/run.json", "./run.json"])
def test_a_path_inside_the_project_root_is_kept(written):
    assert within_root(written, "field 'file'") == written


@pytest.mark.parametrize("written", ["/etc/passwd", "../outside.json", "docs/../../outside.json", "..", "C:/x.json"])
def test_a_path_outside_the_project_root_is_an_error(written):
    with pytest.raises(TraceError) as info:
        within_root(written, "field 'file'")

    assert str(info.value) == (
        f"field 'file': '{written}' is outside the project root; a page names only the project's files: "
        "write the path from the project root, with no leading '/' and no '..' above it"
    )

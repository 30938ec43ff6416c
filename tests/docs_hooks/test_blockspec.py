"""Reading a trace block's body (docs_hooks.read.blockspec): unknown kinds and fields, missing or mistyped fields,
YAML that does not parse and YAML that could stand for more than it says are refused, with the page line; what is
read is the block's fields as written, each with its line.

Each test parses a page written here (or expands it in a tiny project) and asserts the
exact message the author sees.
"""

from __future__ import annotations

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.read.blocks import parse_page
from docs_hooks.read.blockspec import BLOCK_KINDS, read_fields, valid_fields

from .conftest import FWD_ENTRY, page, page_problems

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
    found = problems(
        page("""
        # Page

        ```trace-entry
        title: Layer norm
        function: [ops.layer_norm_forward, *other]
        status: implemented
        ```
        """)
    )

    assert found == [
        "docs/page.md:5: block 'trace-entry' uses the alias '*other'; YAML anchors and aliases are not accepted: "
        "write the value out in full"
    ]


def test_a_merge_key_is_refused_as_an_alias():
    found = problems(
        page("""
        ```trace-symbols
        rows:
          - &row {symbol: x, meaning: input, code: X}
          - <<: *row
            symbol: y
        ```
        """)
    )

    assert found == [
        "docs/page.md:3: block 'trace-symbols' uses the anchor '&row'; YAML anchors and aliases are not accepted: "
        "write the value out in full"
    ]


def test_a_field_written_twice_is_an_error_at_the_second_one():
    found = problems(
        page("""
        # Page

        ```trace-entry
        title: Layer norm
        function: ops.layer_norm_forward
        title: Layer norm forward
        status: implemented
        ```
        """)
    )

    assert found == [
        "docs/page.md:6: block 'trace-entry' has the key 'title' twice in one mapping (first on line 4); "
        "keep one of them"
    ]


def test_a_key_written_twice_inside_a_field_is_an_error_too():
    found = problems(
        page("""
        ```trace-params
        match: ln1_
        roles: {ln1_gamma: scale, ln1_gamma: shift}
        ```
        """)
    )

    assert found == [
        "docs/page.md:3: block 'trace-params' has the key 'ln1_gamma' twice in one mapping (first on line 3); "
        "keep one of them"
    ]


def test_a_block_without_anchors_or_repeated_keys_is_read_as_written():
    [block] = parse_page(
        page("""
        ```trace-entry
        title: "Layer norm & friends *"
        function: [ops.layer_norm_forward]
        status: implemented
        ```
        """),
        "docs/page.md",
    ).blocks

    assert block.data["title"] == "Layer norm & friends *"
    assert block.data["function"] == ["ops.layer_norm_forward"]


def test_unknown_block_suggests_the_close_kind(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equasion
        id: ln-mean
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:7: unknown block 'trace-equasion'; did you mean 'trace-equation'? Known blocks: "
        + ", ".join(f"trace-{kind}" for kind in BLOCK_KINDS)
        + "."
    ]
    assert {"entry", "equation", "excerpt"} <= set(BLOCK_KINDS)


def test_unknown_field_is_reported_on_its_own_line(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        cod: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:11: unknown field 'cod' in block 'trace-equation'; did you mean 'code'? "
        "Fields of trace-equation: id, title, tex, code, role."
    ]


def test_missing_field_is_reported_at_the_fence(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:7: block 'trace-equation' is missing the field 'tex' (the equation in TeX)."
    ]


def test_malformed_yaml_points_at_the_bad_line_inside_the_block(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean of a row
        tex: \\mu = \\frac{1}{d} \\sum_i X_i
        code: ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:11: block 'trace-equation' is not valid YAML: mapping values are not allowed in this context. "
        "Quote values that contain ': ' or start with '-', '{', '[' or '*'."
    ]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (
            "status: [implemented]",
            "docs/page.md:4: field 'status' of block 'trace-entry' must be one of implemented, derived, "
            "illustrative, not list ['implemented']",
        ),
        (
            "status: done",
            "docs/page.md:4: field 'status' of block 'trace-entry' must be one of implemented, derived, "
            "illustrative, not str 'done'",
        ),
        (
            "status: implemented\nspec: {eq: 1}",
            "docs/page.md:5: field 'spec' of block 'trace-entry' must be a text or a list of texts, not dict {'eq': 1}",
        ),
        (
            "status: implemented\nnote: [a, [b]]",
            "docs/page.md:5: field 'note' of block 'trace-entry' must be text, not list ['a', ['b']]",
        ),
    ],
)
def test_wrong_field_type_names_field_expected_and_found(make_project, field, message):
    root = make_project({"docs/page.md": FWD_ENTRY.replace("status: implemented", field)})

    assert page_problems(root) == [message]


def test_an_unknown_role_is_named_with_the_choices(make_project):
    root = make_project(
        {
            "docs/page.md": FWD_ENTRY
            + "\n"
            + page("""
        ```trace-equation
        id: ln-mean
        title: Mean
        role: explains
        tex: \\mu
        code: mu = X.mean(axis=-1, keepdims=True)
        ```
        """)
        }
    )

    messages = page_problems(root)

    assert (
        len(messages) == 1
        and messages[0].startswith("docs/page.md:10: ")
        and "computes, derived, contrast" in messages[0]
    ), messages


# --------------------------------------------------------------------------- read_fields and valid_fields, on their own


def test_the_fields_of_a_body_are_checked_and_each_has_its_page_line():
    body = "title: Layer norm\nfunction: ops.layer_norm_forward\nstatus: implemented\nspec: 3"

    fields = read_fields("entry", body, "docs/page.md", 7)

    assert fields == {
        "title": "Layer norm",
        "function": ["ops.layer_norm_forward"],  # a list field written as one text
        "status": "implemented",
        "spec": ["3"],
        "__lines__": {"title": 8, "function": 9, "status": 10, "spec": 11},
    }
    assert read_fields("shapes", "", "docs/page.md", 7) == {"__lines__": {}}  # an empty body: no field is required


def test_a_body_that_is_not_a_mapping_is_refused_at_its_first_line():
    with pytest.raises(TraceError) as info:
        read_fields("shapes", "- caption", "docs/page.md", 7)

    assert str(info.value) == "docs/page.md:8: block 'trace-shapes' must be a YAML mapping of field: value"


def test_valid_fields_are_what_read_fields_makes_and_nothing_else():
    fields = read_fields("entry", "title: T\nfunction: [ops.f]\nstatus: derived", "docs/page.md", 1)

    assert valid_fields("entry", fields)
    assert not valid_fields("entri", fields)  # an unknown kind
    assert not valid_fields("entry", {k: v for k, v in fields.items() if k != "status"})  # a required field missing
    assert not valid_fields("entry", {**fields, "function": "ops.f"})  # a list field holding a text
    assert not valid_fields("entry", {**fields, "colour": "red"})  # a field the kind does not have
    assert not valid_fields("entry", {k: v for k, v in fields.items() if k != "__lines__"})  # no lines
    assert not valid_fields("entry", [fields])

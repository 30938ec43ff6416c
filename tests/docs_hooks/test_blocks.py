"""Reading a page (docs_hooks.read.blocks): its Markdown and trace blocks in order, a block never closed and
literal line numbers refused with the page line, paths kept inside the project root, and parsed pages kept in the
cache. What a block's body may hold is tested in test_blockspec.py.

Each test parses a page written here (or expands it in a tiny project) and asserts the
exact message the author sees.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docs_hooks.base.errors import TraceError
from docs_hooks.read import blocks, blockspec
from docs_hooks.read.blocks import parse_page, parse_pages, within_root

from .conftest import FWD_ENTRY, expand_page, mutated, page, page_problems, store_rows, stored_rows


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


# --------------------------------------------------------------------------- parsed pages kept in the cache

CACHED_PAGE = page("""
    # Layer norm, see ops.py:12

    ```trace-entry
    title: Layer norm
    function: ops.layer_norm_forward
    status: implemented
    ```

    ```trace-params
    match: [ln1_]
    roles: {ln1_g: scale, ln1_b: shift}
    ```

    ```trace-equation
    id: mean
    title: Mean
    tex: \\mu = x
    code: [mu = X.mean()]
    colour: red
    ```
    """)


def summary(pages) -> dict:
    """What a parse gives, as plain values (problems as the messages the author sees)."""
    return {
        path: ([(type(s).__name__, vars(s)) for s in p.segments], [str(e) for e in p.problems])
        for path, p in pages.items()
    }


@pytest.fixture
def parsed(monkeypatch):
    """The pages parsed (not read back from the cache)."""
    done = []
    original = blocks.parse_page

    def spy(text, path):
        done.append(path)
        return original(text, path)

    monkeypatch.setattr(blocks, "parse_page", spy)
    return done


def test_a_page_read_back_from_the_cache_is_the_page_parsed(tmp_path, parsed):
    store = tmp_path / "pages.sqlite3"
    pages = {"docs/page.md": CACHED_PAGE, "docs/other.md": "# Other\n"}
    first = parse_pages(pages, store)
    assert parsed == ["docs/page.md", "docs/other.md"]
    assert summary(first) == summary(parse_pages(pages))
    assert summary(first)["docs/page.md"][1] == [
        "docs/page.md:19: unknown field 'colour' in block 'trace-equation'; Fields of trace-equation: id, title, "
        "tex, code, role.",
        "docs/page.md:1: literal line reference 'ops.py:12'; line numbers are computed by the build. Write a "
        "symbolic reference instead: [[module.function: statement text]].",
    ]
    parsed.clear()

    again = parse_pages(pages, store)

    assert parsed == []
    assert summary(again) == summary(first)


def test_an_edited_page_is_parsed_again(tmp_path, parsed):
    store = tmp_path / "pages.sqlite3"
    parse_pages({"docs/page.md": CACHED_PAGE, "docs/other.md": "# Other\n"}, store)
    parsed.clear()

    again = parse_pages(
        {"docs/page.md": CACHED_PAGE.replace("Layer norm", "Layer normalisation"), "docs/other.md": "# Other\n"}, store
    )

    assert parsed == ["docs/page.md"]
    assert again["docs/page.md"].blocks[0].data["title"] == "Layer normalisation"


def test_the_cache_key_digests_the_code_that_parses_a_page_and_the_yaml_reader():
    code = Path(blocks.__file__).read_bytes() + Path(blockspec.__file__).read_bytes()

    assert hashlib.sha256(code + blocks._yaml_init().read_bytes()).hexdigest() == blocks._SELF_DIGEST


def _damage(entry: dict, how: str) -> None:
    block = next(s for s in entry["segments"] if s[0] == "block" and s[1] == "entry")
    if how == "field of the wrong type":
        block[2]["function"] = "ops.layer_norm_forward"  # a list field holding a text
    elif how == "unknown kind":
        block[1] = "entri"
    elif how == "required field missing":
        del block[2]["status"]
    elif how == "line of the wrong type":
        block[3] = "3"
    elif how == "problem of the wrong shape":
        entry["problems"][0] = ["no line"]


@pytest.mark.parametrize(
    "how",
    [
        "not json",
        "field of the wrong type",
        "unknown kind",
        "required field missing",
        "line of the wrong type",
        "problem of the wrong shape",
    ],
)
def test_a_damaged_entry_is_a_miss_and_the_page_is_parsed_again(tmp_path, parsed, how):
    store = tmp_path / "pages.sqlite3"
    pages = {"docs/page.md": CACHED_PAGE}
    first = parse_pages(pages, store)
    [(key, value)] = stored_rows(store).items()
    if how == "not json":
        value = b"not json"
    else:
        entry = json.loads(value)
        _damage(entry, how)
        value = json.dumps(entry).encode()
    store_rows(store, {key: value})
    parsed.clear()

    again = parse_pages(pages, store)

    assert parsed == ["docs/page.md"]
    assert summary(again) == summary(first)
    [stored] = stored_rows(store).values()  # written again whole
    assert [s[1] for s in json.loads(stored)["segments"] if s[0] == "block"] == ["entry", "params"]


def test_a_block_whose_values_json_cannot_keep_is_parsed_every_time(tmp_path, parsed):
    store = tmp_path / "pages.sqlite3"
    text = CACHED_PAGE.replace("{ln1_g: scale, ln1_b: shift}", "{ln1_g: 2024-01-31, 3: shift}")  # a date, a number key
    first = parse_pages({"docs/page.md": text}, store)
    parsed.clear()

    again = parse_pages({"docs/page.md": text}, store)

    assert parsed == ["docs/page.md"]
    assert summary(again) == summary(first)
    assert str(again["docs/page.md"].blocks[1].data["roles"]["ln1_g"]) == "2024-01-31"


def test_literal_line_reference_in_prose(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        # Layer norm

        The mean is computed at `ops.py:43`, the variance in src/ops.py:9-12.
        Tests are named like tests/test_ops.py::test_rows_have_zero_mean, which is fine.
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:3: literal line reference 'ops.py:43'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]].",
        "docs/page.md:3: literal line reference 'src/ops.py:9-12'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]].",
    ]


def test_literal_line_reference_in_a_block_field(make_project):
    root = make_project(
        {"docs/page.md": FWD_ENTRY.replace("status: implemented", "status: implemented\nnote: see ops.py:8")}
    )

    assert page_problems(root) == [
        "docs/page.md:5: literal line reference 'ops.py:8'; line numbers are computed by the build. "
        "Write a symbolic reference instead: [[module.function: statement text]]."
    ]


def test_unclosed_block_is_reported(make_project):
    root = make_project({"docs/page.md": FWD_ENTRY.rstrip("`\n") + "\n"})

    assert page_problems(root) == ["docs/page.md:1: block 'trace-entry' is never closed; end it with ```"]


def test_inline_reference_to_a_statement_with_indexing(make_project):
    root = make_project({"docs/page.md": "Loop [[ops.layer_norm_backward: for row in range(dY.shape[0]):]].\n"})

    expanded = expand_page(root)

    assert expanded.problems == []
    assert "<code>ops.py:23</code>" in expanded.markdown


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.data())
def test_an_entry_of_nearly_the_right_form_is_a_page_or_a_miss_never_an_error(data):
    entry = json.loads(blocks._encode_page(parse_page(CACHED_PAGE, "docs/page.md")))
    raw = data.draw(st.binary() | st.just(json.dumps(mutated(data, entry)).encode()), label="entry")

    page = blocks._decode_page(raw, "docs/page.md")

    assert page is None or all(type(s) in (blocks.Block, blocks.Markdown) for s in page.segments)


def test_the_authored_fences_are_those_starting_a_line_but_trace_blocks_nested_ones_and_one_left_open():
    text = (
        "# Page\n\n```python\nx = 1\n```\n\n"  # kept
        + FWD_ENTRY  # a trace block: the generator expands it
        + "\n````markdown\n```trace-entry\ntitle: shown, not run\n```\n````\n"  # kept whole, a fence inside it
        + "\n- a list\n\n    ```python\n    y = 2\n    ```\n"  # indented: inside the list item
        + "\n~~~\nplain\n~~~\n"  # kept
        + "\n```python\nopen = True\n"  # never closed
    )
    assert blocks.authored_fences(text) == [
        "```python\nx = 1\n```\n",
        "````markdown\n```trace-entry\ntitle: shown, not run\n```\n````\n",
        "~~~\nplain\n~~~\n",
    ]

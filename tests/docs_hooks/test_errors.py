"""Tests of docs_hooks.errors: a TraceError reads ``path:line: message`` once it is placed, and keeps the first
place it was given."""

from __future__ import annotations

from docs_hooks.base.errors import TraceError


def test_an_error_without_a_place_is_its_message():
    err = TraceError("no function 'ops.nowhere' in the code index")

    assert str(err) == "no function 'ops.nowhere' in the code index"
    assert (err.path, err.line) == (None, None)


def test_an_error_reads_path_and_line_then_the_message():
    assert str(TraceError("unknown block 'trace-x'", "docs/page.md", 7)) == "docs/page.md:7: unknown block 'trace-x'"
    assert str(TraceError("not valid JSON", "docs/trace.lock")) == "docs/trace.lock: not valid JSON"


def test_at_places_an_error_that_has_no_place_and_leaves_the_original_as_it_was():
    err = TraceError("names no function")

    placed = err.at("docs/page.md", 3)

    assert str(placed) == "docs/page.md:3: names no function"
    assert (placed.message, placed.path, placed.line) == ("names no function", "docs/page.md", 3)
    assert str(err) == "names no function"


def test_at_keeps_the_place_an_error_already_has():
    err = TraceError("cannot parse: invalid syntax", "src/broken.py", 1)

    assert err.at("docs/page.md", 9) is err
    assert str(err.at("docs/page.md", None)) == "src/broken.py:1: cannot parse: invalid syntax"

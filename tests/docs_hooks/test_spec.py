"""Tests of docs_hooks.spec: compiling the Typst spec and reading equation numbers back."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from docs_hooks.base.cachedir import read_entry, write_entry
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import make_build
from docs_hooks.read.spec import SpecRef, format_refs
from docs_hooks.run import spec
from docs_hooks.run.spec import compile_spec

from .conftest import mutated

REPO = Path(__file__).resolve().parents[2]

PREAMBLE = """\
#set heading(numbering: "1.1")
#set math.equation(numbering: "(1)")
"""


def write_spec(folder: Path, body: str, name: str = "doc.typ") -> Path:
    path = folder / name
    path.write_text(PREAMBLE + body, encoding="utf-8")
    return path


# -------------------------------------------------------------- lookups --


def test_missing_label_names_it_and_suggests_a_close_one(tmp_path):
    source = write_spec(
        tmp_path,
        "= Norm\n$ mu = 1/d sum_i x_i $ <eq:ln-mean>\n$ sigma^2 = 0 $ <eq:ln-var>\n",
    )
    index = compile_spec(source)

    with pytest.raises(TraceError) as caught:
        index.lookup("eq:ln-maen")
    message = str(caught.value)
    assert "'eq:ln-maen'" in message
    assert "did you mean 'eq:ln-mean'" in message
    assert "add <eq:ln-maen>" in message  # says what to do

    placed = caught.value.at("docs/layernorm.md", 12)
    assert str(placed).startswith("docs/layernorm.md:12: ")


def test_missing_label_without_close_match_still_says_what_exists(tmp_path):
    source = write_spec(tmp_path, "= A\n$ a $ <eq:alpha>\n")
    with pytest.raises(TraceError) as caught:
        compile_spec(source).lookup("eq:zzzzzz-qqq")
    assert "'eq:zzzzzz-qqq'" in str(caught.value)
    assert "'eq:alpha'" in str(caught.value)


def test_label_on_unnumbered_equation_is_explained(tmp_path):
    source = write_spec(
        tmp_path,
        "= A\n#[\n#set math.equation(numbering: none)\n$ a $ <eq:plain>\n]\n$ b $ <eq:numbered>\n",
    )
    index = compile_spec(source)
    assert index.labels() == ["eq:numbered"]
    assert index.lookup("eq:numbered").equation == 1
    with pytest.raises(TraceError, match="without a number"):
        index.lookup("eq:plain")


def test_duplicate_label_is_an_error(tmp_path):
    source = write_spec(tmp_path, "= A\n$ a $ <eq:twice>\n$ b $ <eq:twice>\n")
    with pytest.raises(TraceError, match="'eq:twice' is on two equations"):
        compile_spec(source)


# ----------------------------------------------- numbers come from the PDF --


def test_inserting_a_section_moves_section_equation_and_page(tmp_path):
    before = "= Intro\n$ a = 1 $ <eq:first>\n= Target\n== Sub\nSome text.\n$ b = 2 $ <eq:target>\n"
    source = write_spec(tmp_path, before)
    index = compile_spec(source)
    assert index.labels() == ["eq:first", "eq:target"]
    assert index.lookup("eq:target") == SpecRef("eq:target", "2.1", 2, 1)

    inserted = "= Inserted\n$ c = 3 $ <eq:new>\n#pagebreak()\n"
    source.write_text(PREAMBLE + before.replace("= Target", inserted + "= Target"), encoding="utf-8")
    index = compile_spec(source)

    assert index.labels() == ["eq:first", "eq:new", "eq:target"]
    assert index.lookup("eq:first") == SpecRef("eq:first", "1", 1, 1)
    assert index.lookup("eq:new") == SpecRef("eq:new", "2", 2, 1)
    assert index.lookup("eq:target") == SpecRef("eq:target", "3.1", 3, 2)


def test_section_uses_the_heading_numbering_and_tolerates_no_heading(tmp_path):
    source = tmp_path / "doc.typ"
    source.write_text(
        '#set math.equation(numbering: "(1)")\n'
        "$ x $ <eq:before-any-heading>\n"
        '#set heading(numbering: "A.1.")\n'
        "= Appendix\n== Part\n$ y $ <eq:appendix>\n",
        encoding="utf-8",
    )
    index = compile_spec(source)
    assert index.lookup("eq:before-any-heading").section == ""
    assert index.lookup("eq:appendix").section == "A.1"
    assert format_refs([index.lookup("eq:before-any-heading")]) == "Eq. 1, p. 1"


# ------------------------------------------------------------ formatting --


def ref(label: str, section: str, equation: int, page: int) -> SpecRef:
    return SpecRef(label=label, section=section, equation=equation, page=page)


def test_format_refs():
    mean = ref("eq:ln-mean", "4.3", 30, 7)
    var = ref("eq:ln-var", "4.3", 31, 7)
    attn = ref("eq:attn-qkv", "5.1", 40, 9)

    assert format_refs([]) == "Not stated in the PDF"
    assert format_refs([mean]) == "Section 4.3, Eq. 30, p. 7"
    assert format_refs([mean, var]) == "Section 4.3, Eq. 30, 31, p. 7"
    assert format_refs([mean, var, attn]) == "Section 4.3, Eq. 30, 31, p. 7; Section 5.1, Eq. 40, p. 9"
    # document order, duplicates dropped
    assert format_refs([attn, var, mean, var]) == "Section 4.3, Eq. 30, 31, p. 7; Section 5.1, Eq. 40, p. 9"


def test_format_refs_section_over_a_page_break():
    refs = [ref("eq:a", "4.3", 30, 7), ref("eq:b", "4.3", 31, 8), ref("eq:c", "4.4", 32, 8)]
    assert format_refs(refs) == "Section 4.3, Eq. 30, p. 7; Eq. 31, p. 8; Section 4.4, Eq. 32, p. 8"


# ----------------------------------------------------------------- cache --


def test_cache_skips_unchanged_sources_and_recompiles_edited_ones(tmp_path, monkeypatch):
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    (spec_dir / "macros.typ").write_text("#let note = [n]\n", encoding="utf-8")
    source = write_spec(spec_dir, '#import "macros.typ": note\n= A\n$ a $ <eq:a>\n')
    cache = tmp_path / "cache"
    pdf_out = tmp_path / "site" / "spec.pdf"

    compiles = []
    real_compile = spec._compile
    monkeypatch.setattr(spec, "_compile", lambda *a: compiles.append(a) or real_compile(*a))

    first = compile_spec(source, pdf_out=pdf_out, cache_dir=cache)
    assert (len(compiles), first.from_cache) == (1, False)
    assert pdf_out.read_bytes().startswith(b"%PDF")
    cached_files = sorted(cache.iterdir())
    assert [p.suffix for p in cached_files] == [".json", ".pdf"]
    # A hit rewrites nothing: the same files (inodes), the same bytes. It only marks them used (cachedir).
    stored = {p: (p.stat().st_ino, p.read_bytes()) for p in cached_files}

    pdf_out.unlink()
    second = compile_spec(source, pdf_out=pdf_out, cache_dir=cache)
    assert (len(compiles), second.from_cache) == (1, True)
    assert second.refs == first.refs
    assert pdf_out.read_bytes() == first.pdf  # a hit still delivers the PDF
    assert {p: (p.stat().st_ino, p.read_bytes()) for p in sorted(cache.iterdir())} == stored

    # Editing the main file recompiles ...
    source.write_text(source.read_text() + "= B\n$ b $ <eq:b>\n", encoding="utf-8")
    third = compile_spec(source, pdf_out=pdf_out, cache_dir=cache)
    assert (len(compiles), third.from_cache) == (2, False)
    assert third.lookup("eq:b") == SpecRef("eq:b", "2", 2, 1)

    # ... and so does editing a file it imports.
    (spec_dir / "macros.typ").write_text("#let note = [m]\n", encoding="utf-8")
    fourth = compile_spec(source, pdf_out=pdf_out, cache_dir=cache)
    assert (len(compiles), fourth.from_cache) == (3, False)
    assert fourth.key != third.key

    # Old entries are pruned: one index and one PDF per spec.
    assert len(list(cache.iterdir())) == 2


def test_cache_ignores_its_own_outputs_inside_the_spec_folder(tmp_path):
    source = write_spec(tmp_path, "= A\n$ a $ <eq:a>\n")
    cache = tmp_path / "cache"  # inside the spec folder, like pdf_out below
    compile_spec(source, pdf_out=tmp_path / "doc.pdf", cache_dir=cache)
    again = compile_spec(source, pdf_out=tmp_path / "doc.pdf", cache_dir=cache)
    assert again.from_cache


def test_corrupt_cache_entry_recompiles(tmp_path):
    source = write_spec(tmp_path / "", "= A\n$ a $ <eq:a>\n")
    cache = tmp_path / "cache"
    compile_spec(source, cache_dir=cache)
    for entry in cache.glob("*.json"):
        entry.write_text("{not json", encoding="utf-8")
    index = compile_spec(source, cache_dir=cache)
    assert not index.from_cache
    assert index.lookup("eq:a").equation == 1


# ---------------------------------------------------------------- errors --


def test_compile_error_names_the_typ_file_and_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = write_spec(tmp_path, "= A\n\nSome text.\n#undefined-function()\n")
    with pytest.raises(TraceError) as caught:
        compile_spec(source)
    error = caught.value
    assert error.path == "doc.typ"
    assert error.line == 6  # two preamble lines + four body lines
    assert str(error).startswith("doc.typ:6: Typst could not compile the specification: unknown variable")


def test_compile_error_in_an_included_file_points_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "broken.typ").write_text("ok\n#let f(x) = x +\n", encoding="utf-8")
    source = write_spec(tmp_path, '= A\n#include "parts/broken.typ"\n')
    with pytest.raises(TraceError) as caught:
        compile_spec(source)
    assert (caught.value.path, caught.value.line) == (os.path.join("parts", "broken.typ"), 2)


def test_compile_error_in_a_spec_folder_below_the_working_directory(tmp_path, monkeypatch):
    """As in a project: the build runs in the project root, the source is spec/doc.typ."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec").mkdir()
    source = write_spec(tmp_path / "spec", "= A\n\n#undefined-function()\n")
    with pytest.raises(TraceError) as caught:
        compile_spec(source)
    assert (caught.value.path, caught.value.line) == (os.path.join("spec", "doc.typ"), 5)


def test_compile_error_outside_the_working_directory_is_named_by_its_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    (tmp_path / "spec").mkdir()
    source = write_spec(tmp_path / "spec", "= A\n\n#undefined-function()\n")
    with pytest.raises(TraceError) as caught:
        compile_spec(source)
    assert (caught.value.path, caught.value.line) == (str((tmp_path / "spec" / "doc.typ").resolve()), 5)


def test_missing_source_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="not found"):
        compile_spec(tmp_path / "nope.typ")


# ------------------------------------------------------- the real spec --


def test_real_spec_compiles_and_has_the_layernorm_labels(tmp_path):
    index = compile_spec(REPO / "spec" / "model.typ", pdf_out=tmp_path / "model.pdf")
    assert (tmp_path / "model.pdf").read_bytes().startswith(b"%PDF")
    assert "eq:ln-mean" in index.labels()
    mean = index.lookup("eq:ln-mean")
    assert mean.section.startswith("4.") and mean.equation > 0 and mean.page > 0
    for name in ("mean", "var", "inv-std", "xhat", "out", "dxhat", "dx", "dgamma", "dbeta"):
        assert index.lookup(f"eq:ln-{name}").section == mean.section
    assert all(label.startswith("eq:") for label in index.labels())
    assert index.warnings == ()


def test_a_compile_that_does_not_end_is_stopped_at_test_timeout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = write_spec(tmp_path, "= A\n\n#for i in range(100000) { for j in range(100000) { let k = i * j } }\n")

    with pytest.raises(TraceError) as caught:
        compile_spec(source, timeout=2)

    assert str(caught.value) == (
        "doc.typ: Typst did not finish compiling the specification within test_timeout = 2 s, so it was stopped; "
        "look for a loop that does not end in the Typst source, or raise test_timeout in [tool.docs_hooks]"
    )


# -------------------------------------------------------------- pages cite the spec by label --
# The build reads section, equation and page from the compiled PDF.

SPEC = """\
#set heading(numbering: "1.1")
#set math.equation(numbering: "(1)")

= Normalisation

$ mu_t = 1/d sum_i X_(t i) $ <eq:ln-mean>
"""


PAGE = """\
```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: implemented
spec: [{label}]
```
"""


def spec_project(make_project, spec: str = SPEC, label: str = "eq:ln-mean"):
    return make_project(
        {
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
            'spec_source = "spec/model.typ"\nspec_pdf = "spec/model.pdf"\n',
            "spec/model.typ": spec,
            "docs/page.md": PAGE.format(label=label),
        }
    )


def pdf_reference(root) -> tuple[str, list[str]]:
    builder = make_build(load_settings(root))
    result = builder.expand("docs/page.md", (root / "docs/page.md").read_text())
    found = re.search(r"<td>PDF reference</td><td>(.*?)</td>", result.markdown)
    cell = found.group(1) if found else ""
    problems = [str(p) for p in result.problems if "not reviewed yet" not in str(p)]
    return cell, problems


def test_an_entry_shows_section_equation_and_page_from_the_pdf(make_project):
    cell, problems = pdf_reference(spec_project(make_project))

    assert problems == []
    assert cell == (
        '<a href="../spec/model.pdf#page=1" title="the specification, eq:ln-mean">Section 1, Eq. 1, p. 1</a>'
    )


def test_a_section_inserted_before_moves_the_numbers_without_editing_the_page(make_project):
    before = SPEC.replace("= Normalisation", "= Notation\n\n$ a = b $ <eq:notation>\n\n#pagebreak()\n\n= Normalisation")

    cell, problems = pdf_reference(spec_project(make_project, spec=before))

    assert problems == []
    assert ">Section 2, Eq. 2, p. 2</a>" in cell and "#page=2" in cell


def test_a_label_that_does_not_exist_fails_with_page_and_line(make_project):
    _, problems = pdf_reference(spec_project(make_project, label="eq:ln-maen"))

    assert len(problems) == 1
    assert problems[0].startswith("docs/page.md:1: unknown spec label 'eq:ln-maen'")
    assert "did you mean 'eq:ln-mean'" in problems[0]


def test_a_typst_error_stops_the_build_with_the_spec_file_and_line(make_project, monkeypatch):
    """The specification compiles in a thread while the code is indexed; its error still reaches the build."""
    import pytest

    from docs_hooks.base.errors import TraceError

    broken = SPEC + "\n#let x = (\n"  # an unclosed parenthesis, on line 8
    root = spec_project(make_project, spec=broken)
    monkeypatch.chdir(root)  # as mkdocs build runs: in the project root
    with pytest.raises(TraceError) as info:
        make_build(load_settings(root))
    assert str(info.value).startswith("spec/model.typ:8: Typst could not compile the specification: unclosed delimiter")


@pytest.mark.parametrize(
    "entry",
    [b"[]", b'"text"', b"null", b'{"schema": 1, "refs": [{"label": 3}]}', b"[" * 100_000, b"\xff\xfe"],
    ids=["a list", "a text", "null", "a label that is a number", "nested too deep", "not UTF-8"],
)
def test_a_cached_index_that_is_not_an_index_is_compiled_again(tmp_path, entry):
    source = write_spec(tmp_path, "= A\n$ a $ <eq:a>\n")
    cache = tmp_path / "cache"
    compile_spec(source, cache_dir=cache)
    [index_file] = cache.glob("*.json")
    write_entry(index_file, entry)  # sealed as the build seals it: the reader's own check decides

    index = compile_spec(source, cache_dir=cache)

    assert not index.from_cache and index.lookup("eq:a").equation == 1
    assert compile_spec(source, cache_dir=cache).from_cache  # and cached again


def test_a_cached_pdf_that_is_not_a_pdf_is_compiled_again(tmp_path):
    source = write_spec(tmp_path, "= A\n$ a $ <eq:a>\n")
    cache = tmp_path / "cache"
    compile_spec(source, cache_dir=cache)
    [pdf] = cache.glob("*.pdf")
    write_entry(pdf, b"<html>not a PDF</html>")

    index = compile_spec(source, cache_dir=cache)

    assert not index.from_cache and index.pdf.startswith(b"%PDF-") and read_entry(pdf) == index.pdf


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.data())
def test_an_index_of_nearly_the_right_form_reads_back_or_is_refused_never_another_error(data):
    refs = [{"label": "eq:a", "section": "1", "equation": 1, "page": 1}]
    entry = {"schema": 1, "key": "k", "refs": refs, "warnings": ["w"], "unnumbered": ["eq:b"]}
    text = json.dumps(mutated(data, entry))

    try:
        index = spec.SpecIndex._from_json(text, Path("doc.typ"), b"%PDF-")
    except ValueError:
        return  # refused: compiled again
    assert all(type(r.equation) is int and type(r.page) is int for r in index.refs.values())

"""Pages cite the specification by label; the build reads section, equation and page from the PDF."""

from __future__ import annotations

import re

from docs_hooks.project import make_builder
from docs_hooks.settings import load_settings

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
    return make_project({
        "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
                          'spec_source = "spec/model.typ"\nspec_pdf = "spec/model.pdf"\n',
        "spec/model.typ": spec,
        "docs/page.md": PAGE.format(label=label),
    })


def pdf_reference(root) -> tuple[str, list[str]]:
    builder = make_builder(load_settings(root))
    result = builder.expand("docs/page.md", (root / "docs/page.md").read_text())
    found = re.search(r"<td>PDF reference</td><td>(.*?)</td>", result.markdown)
    cell = found.group(1) if found else ""
    problems = [str(p) for p in result.problems if "not reviewed yet" not in str(p)]
    return cell, problems


def test_an_entry_shows_section_equation_and_page_from_the_pdf(make_project):
    cell, problems = pdf_reference(spec_project(make_project))

    assert problems == []
    assert cell == ('<a href="../spec/model.pdf#page=1" title="the specification, eq:ln-mean">'
                    "Section 1, Eq. 1, p. 1</a>")


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

    from docs_hooks.errors import TraceError

    broken = SPEC + "\n#let x = (\n"  # an unclosed parenthesis, on line 8
    root = spec_project(make_project, spec=broken)
    monkeypatch.chdir(root)  # as mkdocs build runs: in the project root
    with pytest.raises(TraceError) as info:
        make_builder(load_settings(root))
    assert str(info.value).startswith("spec/model.typ:8: Typst could not compile the specification: unclosed delimiter")

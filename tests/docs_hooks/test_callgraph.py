"""'Reached by tests through other functions' for a helper most tests reach: the first hundred, then 'and more',
folded under their count."""

from __future__ import annotations

from docs_hooks.callgraph import REACHED_SHOWN
from docs_hooks.project import make_builder
from docs_hooks.settings import load_settings

HUB = '''\
def hub(x):
    return x + 1


def wrapper(x):
    return hub(x) * 2
'''


def reaching_tests(n: int) -> str:
    lines = ["from hub import wrapper", ""]
    for i in range(n):
        lines += ["", f"def test_{i:03d}():", f"    assert wrapper({i}) == {2 * (i + 1)}", ""]
    return "\n".join(lines)


PAGE = "# Hub\n\n```trace-entry\ntitle: The hub\nfunction: hub.hub\nstatus: implemented\n```\n\nText.\n"


def facts_row(markdown: str) -> str:
    start = markdown.index("<td>Reached by tests through other functions</td><td>")
    return markdown[start:markdown.index("</tr>", start)]


def test_a_long_list_of_reaching_tests_stops_after_the_first_hundred(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(REACHED_SHOWN + 20)})
    builder = make_builder(load_settings(root))

    row = facts_row(builder.expand("docs/hub.md", PAGE).markdown)

    assert row.count("<code>test_") == REACHED_SHOWN
    assert f"<summary>more than {REACHED_SHOWN} tests</summary>" in row
    assert row.endswith(", and more</details></td>")


def test_a_short_list_is_complete(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(3)})
    builder = make_builder(load_settings(root))

    row = facts_row(builder.expand("docs/hub.md", PAGE).markdown)

    assert row.count("<code>test_") == 3
    assert "<summary>3 tests</summary>" in row
    assert "and more" not in row


def test_a_site_that_shows_no_recorded_evidence_starts_no_recording_process(make_project):
    root = make_project({"src/hub.py": HUB, "tests/test_hub.py": reaching_tests(3), "docs/hub.md": PAGE})
    builder = make_builder(load_settings(root))

    builder.expand("docs/hub.md", PAGE)

    assert builder.workers._recorder is None  # no recording process, early or late

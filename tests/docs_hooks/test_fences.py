"""Tests of docs_hooks.fences: fenced code highlighted once per text comes out, to the byte, as SuperFences makes
it, whatever the page's count of fences before it, the site's highlight settings or what the store holds."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
from markdown.preprocessors import Preprocessor

from docs_hooks.fences import SENTINEL, Fences, highlight_ahead

from .conftest import FWD_ENTRY, run_cli, store_rows, stored_rows
from .test_cli import MKDOCS_YML
from .test_plugin import SERVE_REBUILD, run_script

EXTENSIONS = ["attr_list", "md_in_html", "pymdownx.superfences", "pymdownx.highlight"]
# As this site highlights: every line an anchor and a span, both numbered by the fence's place in the page.
SITE = {"pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__span", "stripnl": False}}

PAGE = f"""\
# Listings

```python linenums="12"
def f(x):
    return x + 1
```

Some prose.

``` python linenums="3" hl_lines="1 3"
a = 1
b = 2
c = 3
```

```python title="kept.py"
z = 1
```

```
no language
```

```python
n = {SENTINEL}
```

```javascript
let s = "__span-0-1";
```

```python linenums="12"
def f(x):
    return x + 1
```
"""


class _Attach(Preprocessor):
    """What the extension does first on each page: the fences' formatter wrapped."""

    def __init__(self, md: markdown.Markdown, fences: Fences):
        super().__init__(md)
        self.fences = fences

    def run(self, lines: list[str]) -> list[str]:
        self.fences.attach(self.md)
        return lines


def convert(text: str, fences: Fences | None, configs: dict = SITE, extensions: list = EXTENSIONS) -> str:
    md = markdown.Markdown(extensions=extensions, extension_configs=configs)
    if fences is not None:
        md.preprocessors.register(_Attach(md, fences), "attach", 28)
    return md.convert(text)


def test_a_fence_comes_out_as_superfences_makes_it_whether_highlighted_now_kept_in_memory_or_read_back(tmp_path):
    plain = convert(PAGE, None)
    assert len(set(re.findall(r'id="__codelineno-(\d+)-', plain))) == 7  # each of the seven fences numbered apart
    fences = Fences(tmp_path)
    assert convert(PAGE, fences) == plain
    # Kept: the two fences with line numbers and the plain one, once each (the repeated one is reused); left to
    # SuperFences: the titled one, and the one holding the sentinel's digits. The fence that holds text looking
    # like a line's id is kept, and that text stays as it is.
    assert (fences.made, fences.reused) == (4, 1)
    assert convert(PAGE, fences) == plain
    assert (fences.made, fences.reused) == (4, 6)
    fences.close()
    again = Fences(tmp_path)  # a new process: read back from the store
    assert convert(PAGE, again) == plain
    assert (again.made, again.reused) == (0, 5)
    again.close()


def test_fences_after_one_left_to_superfences_keep_the_numbers_superfences_gives_them(tmp_path):
    titled = '```python title="t.py"\nt = 0\n```\n\n'
    page = titled + PAGE + "\n" + titled + '```python linenums="12"\ndef f(x):\n    return x + 1\n```\n'
    fences = Fences(tmp_path)
    convert(PAGE, fences)
    assert convert(page, fences) == convert(page, None)


def test_other_highlight_settings_get_their_own_highlighting_not_a_template_made_under_others(tmp_path):
    fences = Fences(tmp_path)
    convert(PAGE, fences)
    fences.flush()
    for configs in (
        {"pymdownx.highlight": {"anchor_linenums": True, "line_spans": "__line", "stripnl": False}},
        {"pymdownx.highlight": {"linenums_style": "pymdownx-inline"}},
        {"pymdownx.highlight": {}, "pymdownx.superfences": {"css_class": "own"}},
    ):
        made = fences.made
        assert convert(PAGE, fences, configs) == convert(PAGE, None, configs)
        assert fences.made > made


def test_a_damaged_or_foreign_entry_of_the_store_is_highlighted_again(tmp_path):
    fences = Fences(tmp_path / "cache")
    plain = convert(PAGE, None)
    convert(PAGE, fences)
    fences.close()
    store = tmp_path / "cache" / "fences.sqlite3"
    rows = stored_rows(store)
    assert rows and all(value is not None for value in rows.values())
    keys = sorted(rows)
    # not sealed for its key; sealed but not UTF-8; sealed but holding the sentinel's digits (not a template)
    store_rows(store, {keys[0]: "<pre>forged</pre>", keys[1]: b"\xff\xfe", keys[2]: f"<pre>{SENTINEL}</pre>".encode()})
    again = Fences(tmp_path / "cache")
    assert convert(PAGE, again) == plain
    assert again.made == 3
    again.close()


def test_a_site_that_highlights_without_pygments_or_without_superfences_is_left_as_it_is(tmp_path):
    fences = Fences(tmp_path)
    no_pygments = {"pymdownx.highlight": {"use_pygments": False}}
    assert convert(PAGE, fences, no_pygments) == convert(PAGE, None, no_pygments)
    fenced_code = ["attr_list", "fenced_code", "codehilite"]
    assert convert(PAGE, fences, {}, fenced_code) == convert(PAGE, None, {}, fenced_code)
    assert (fences.made, fences.reused) == (0, 0)


def test_without_a_cache_folder_the_fences_are_kept_for_the_process_only(tmp_path):
    fences = Fences(None)
    plain = convert(PAGE, None)
    assert convert(PAGE, fences) == plain
    assert convert(PAGE, fences) == plain
    assert (fences.made, fences.reused) == (4, 6)
    fences.close()


# Builds the site twice in one process, as mkdocs serve does, then prints what the plugin's fences did.
SERVE_TWICE = (
    SERVE_REBUILD
    + r"""
for n in range(2):
    fences = rebuild()["docs_hooks"]._fences
    html = (root / "site" / "page" / "index.html").read_text()
    print(json.dumps({"made": fences.made, "reused": fences.reused, "html": html}), flush=True)
plugins.on_shutdown()
"""
)


def test_under_mkdocs_a_listing_is_highlighted_once_and_the_page_comes_out_the_same(make_project):
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": FWD_ENTRY})
    first, second = run_script(SERVE_TWICE, root)
    assert first["made"] >= 1 and first["reused"] == 0  # the entry's listing
    assert second["made"] == first["made"] and second["reused"] == first["made"]
    assert second["html"] == first["html"]
    assert (
        '<span class="k">def</span><span class="w"> </span><span class="nf">layer_norm_forward</span>' in first["html"]
    )
    (third,) = run_script(SERVE_TWICE.replace("range(2)", "range(1)"), root)  # a new process: from the store
    assert (third["made"], third["reused"]) == (0, first["made"])
    assert third["html"] == first["html"]
    assert Path(root / ".cache" / "docs_hooks" / "fences.sqlite3").is_file()


def test_a_stored_value_that_is_not_a_template_written_here_is_a_miss():
    from docs_hooks import fences

    template = '<div class="highlight"><pre><span></span><code>x\x00</code></pre></div>\n'
    assert fences._loaded((fences._MARK + template).encode()) == template
    for other in (b"\x12", template.encode(), b"\xff", (fences._MARK + fences._DIGITS).encode(), None):
        assert fences._loaded(other) is None


# A site whose highlight settings number every line (the templates depend on them), with an entry's listing, an
# excerpt's (its statement marked: hl_lines) and two fences of the author's, one with a title (left to SuperFences).
AHEAD_SITE = MKDOCS_YML.replace(
    "  - pymdownx.highlight\n", "  - pymdownx.highlight:\n      anchor_linenums: true\n      line_spans: __span\n"
)
AHEAD_PAGE = (
    "# Layer norm\n\n"
    + FWD_ENTRY
    + "\n```trace-excerpt\ncode: 'ops.layer_norm_forward: s = 1.0'\ncontext: 1\n```\n"
    + "\nAs a reader would call it:\n\n```python\ny, cache = layer_norm_forward(X, gamma, beta)\n```\n"
    + '\n```python title="call.py"\ny = layer_norm_forward(X, gamma, beta)[0]\n```\n'  # a title: SuperFences' own
)


def test_the_listings_record_highlights_ahead_are_all_a_first_mkdocs_build_needs_and_the_page_is_the_same(
    make_project, capsys
):
    root = make_project({"mkdocs.yml": AHEAD_SITE, "docs/page.md": AHEAD_PAGE})
    (before,) = run_script(SERVE_TWICE.replace("range(2)", "range(1)"), root)
    (root / ".cache" / "docs_hooks" / "fences.sqlite3").unlink()  # as after the tests: no listing highlighted yet
    capsys.readouterr()

    assert run_cli(root, "record") == 0
    assert "3 fenced code block(s) of the pages highlighted, 0 kept already;" in capsys.readouterr().out
    (after,) = run_script(SERVE_TWICE.replace("range(2)", "range(1)"), root)

    # the two listings and the author's own fence: Pygments ran for none of them
    assert before["made"] == 3 and (after["made"], after["reused"]) == (0, 3)
    assert after["html"] == before["html"]
    assert 'class="hll"' in after["html"] and 'id="__span-' in after["html"]  # the marked statement, the settings
    assert run_cli(root, "record") == 0
    assert "0 fenced code block(s) of the pages highlighted, 3 kept already;" in capsys.readouterr().out


def test_nothing_is_highlighted_ahead_without_mkdocs_yml_nor_when_mkdocs_cannot_read_it_which_it_says(tmp_path, capsys):
    listing = '```python linenums="3"\nx = 1\n```\n'
    assert highlight_ahead(tmp_path, tmp_path / "cache", [listing]) == (0, 0, None)
    # A site another front end builds, or whose theme is not installed: the build highlights the listings itself.
    (tmp_path / "mkdocs.yml").write_text("site_name: Tiny\ntheme:\n  name: no-such-theme\n")
    made, kept, why = highlight_ahead(tmp_path, tmp_path / "cache", [listing])
    assert (made, kept) == (0, 0) and not (tmp_path / "cache").exists()
    assert why is not None and why.startswith("mkdocs.yml: MkDocs could not read it (") and "no-such-theme" in why
    assert why.endswith("; the build highlights them")
    assert capsys.readouterr() == ("", "")  # said once, by the caller

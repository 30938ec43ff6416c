"""plugin_search: Material's search plugin reads the pages under the MkDocs plugin, in a process beside the
build when there are many to read, and the index comes out the same as when it reads each one itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import BASE_FILES, REPO, run_cli, write_tree
from .test_plugin import SERVE_REBUILD, run_script
from .test_search import MKDOCS_YML, PAGE
from .test_search import build as search_build

# The small Material site of test_search, with a page whose front matter the search plugin reads (its tags
# and boost) and one with an attribute it takes out of the page (read in the build, never by the process).
CONFIG = MKDOCS_YML.replace(
    "  - Prose: prose.md\n", "  - Prose: prose.md\n  - Tagged: tagged.md\n  - Marked: marked.md\n  - Dated: dated.md\n"
)
FILES = {
    "mkdocs.yml": CONFIG,
    "docs/page.md": PAGE,
    "docs/prose.md": "# Prose\n\nJust text, and `code`.\n\n## More\n\nA second section.\n",
    "docs/tagged.md": "---\ntags: [norms, maths]\nsearch:\n  boost: 2\n---\n\n# Tagged\n\nA page with tags.\n",
    # a tag YAML reads as a date, which JSON would not give back: read in the build
    "docs/dated.md": "---\ntags: [2024-01-01, dated]\n---\n\n# Dated\n\nA page with a date for a tag.\n",
    "docs/marked.md": '# Marked\n\n<div data-search-exclude="yes" markdown>Left out.</div>\n\nKept.\n',
}

# Builds the site one way and says what the search plugin's reading did:
#   off      the search plugin reads every page itself, as it is (SearchReading not at work)
#   build    SearchReading at work, every page read in the build (a threshold no build reaches)
#   process  every page the process may read read there (from the first byte)
#   killed   the process killed as soon as it is started: the build reads those pages itself
BUILD = """
import json, sys
from docs_hooks import plugin_search, search_reader
from docs_hooks.run import children

how, site, config = sys.argv[1:4]
started, ended, readings = [], [], []
if how == "off":
    plugin_search.SearchReading.wrap = lambda self, config: None
plugin_search.PROCESS_FROM = 10**12 if how == "build" else 0
start, close, settle = plugin_search.SearchProcess.__init__, plugin_search.SearchProcess.close, plugin_search.SearchReading.settle

def starting(self):
    start(self)
    started.append(self)
    if how == "killed":
        children.kill_group(self._proc)

def closing(self, wait=True):
    close(self, wait)
    ended.append(self._proc.wait(timeout=60))

def settling(self):
    settle(self)
    readings.append(self.read_aside)

read_parts = []
real_read = search_reader._read
search_reader._read = lambda html, after: read_parts.append(html) or real_read(html, after)
plugin_search.SearchProcess.__init__ = starting
plugin_search.SearchProcess.close = closing
plugin_search.SearchReading.settle = settling
from mkdocs.__main__ import cli
try:
    cli(["build", "--strict", "-q", "-d", site, "-f", config])
finally:
    said = {"started": len(started), "ended": ended, "read aside": max(readings, default=0)}
    print(json.dumps({**said, "parts read": read_parts}))
"""


def build(root: Path, how: str, name: str = "site") -> tuple[Path, dict]:
    """The site built ``how`` (see BUILD), and what it said of its reading: the parts of pages read in the build
    as ``parts read`` (see ``search_reader.Sections``), the rest as BUILD prints it."""
    site, said = search_build(root, how, script=BUILD, site=root / name)
    return site, json.loads(said.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """The site built each way, each on a cache with no reading of the search plugin in it."""
    built = {}
    for how in ("off", "build", "process", "killed"):
        root = tmp_path_factory.mktemp(how) / "proj"
        write_tree(root, {**BASE_FILES, **FILES})
        (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
        assert run_cli(root, "relock") == 0
        built[how] = build(root, how)
    return built


def test_pages_read_in_a_process_of_their_own_make_the_index_and_the_pages_they_make_when_read_in_the_build(sites):
    (off, _), (in_build, said_build), (aside, said) = sites["off"], sites["build"], sites["process"]
    said_build = dict(said_build)
    parts = said_build.pop("parts read")
    assert said_build == {"started": 0, "ended": [], "read aside": 0}
    # each page read in the build a part at a time, but marked, which the search plugin rewrites: it reads that
    assert any("Just text" in part for part in parts) and not any("Left out." in part for part in parts)
    # page, prose and tagged went to the process; marked has an attribute the search plugin takes out, and
    # dated a tag JSON would not give back
    assert said["started"] == 1 and said["read aside"] == 3, said
    assert said["ended"] == [0]  # it ended with the build, having answered every page
    index = (aside / "search/search_index.json").read_bytes()
    assert (
        index == (off / "search/search_index.json").read_bytes() == (in_build / "search/search_index.json").read_bytes()
    )
    docs = json.loads(index)["docs"]
    tagged = [d for d in docs if d["location"].startswith("tagged/")]
    assert tagged and tagged[0]["tags"] == ["norms", "maths"] and tagged[0]["boost"] == 2
    assert not any("Left out." in d["text"] for d in docs) and any("Kept." in d["text"] for d in docs)
    dated = [d for d in docs if d["location"].startswith("dated/")]
    assert dated and dated[0]["tags"] == ["dated"]  # Material leaves out a tag that is no string or number
    locations = [d["location"] for d in docs]
    assert locations.index("prose/") < locations.index("prose/#more") < locations.index("tagged/"), locations
    for page in sorted(off.rglob("*.html")):
        assert (aside / page.relative_to(off)).read_bytes() == page.read_bytes(), page


def test_when_the_process_dies_the_build_reads_its_pages_itself_and_the_index_is_the_same(sites):
    (off, _), (killed, said) = sites["off"], sites["killed"]
    assert said["started"] == 1 and said["read aside"] == 0, said
    assert said["ended"] and said["ended"][0] != 0  # killed, not ended by the build
    assert (killed / "search/search_index.json").read_bytes() == (off / "search/search_index.json").read_bytes()


def test_a_warm_build_finds_every_page_read_and_starts_no_process(sites):
    aside, said = sites["process"]
    root = aside.parent
    site, again = build(root, "process", "site-again")
    assert again == {"started": 0, "ended": [], "read aside": 0, "parts read": []}
    assert (site / "search/search_index.json").read_bytes() == (aside / "search/search_index.json").read_bytes()


def test_after_a_prose_edit_the_build_reads_only_the_part_of_the_page_that_changed(tmp_path):
    root = tmp_path / "proj"
    write_tree(root, {**BASE_FILES, **FILES})
    (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
    assert run_cli(root, "relock") == 0
    # The pages go to the process (but dated, read in the build): it hands the parts it read to the build.
    _, first = build(root, "process")
    assert first["read aside"] == 3 and all("A second section." not in part for part in first["parts read"])

    prose = root / "docs/prose.md"
    prose.write_text(prose.read_text(encoding="utf-8").replace("A second section.", "A second, edited section."))
    edited, said = build(root, "build", "site-edited")
    assert [("edited" in part, part.count("<h2")) for part in said["parts read"]] == [(True, 1)], said
    off, _ = build(root, "off", "site-off")  # the search plugin reads every page itself
    assert (edited / "search/search_index.json").read_bytes() == (off / "search/search_index.json").read_bytes()

    # Tags changed, the HTML not: the page's entries are made again, from its parts kept, none read, and none
    # of it goes to the process, however small the threshold (PROCESS_FROM 0).
    tagged = root / "docs/tagged.md"
    tagged.write_text(tagged.read_text(encoding="utf-8").replace("tags: [norms, maths]", "tags: [norms]"))
    retagged, said = build(root, "process", "site-retagged")
    assert said == {"started": 0, "ended": [], "read aside": 0, "parts read": []}, said
    off, _ = build(root, "off", "site-off-retagged")
    assert (retagged / "search/search_index.json").read_bytes() == (off / "search/search_index.json").read_bytes()
    docs = json.loads((retagged / "search/search_index.json").read_bytes())["docs"]
    assert [d["tags"] for d in docs if d["location"] == "tagged/"] == [["norms"]]


# `mkdocs serve --dirty` in one process: a first build, then before each build the pages named in an argument
# (comma-separated) edited; prints the search index's entries, sorted, as one JSON list.
DIRTY_SERVE = (
    SERVE_REBUILD
    + r"""
rebuild(dirty=True)
for names in sys.argv[2:]:
    for name in names.split(","):
        page = root / "docs" / name
        page.write_text(page.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    rebuild(dirty=True)
index = json.loads((root / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
print(json.dumps(sorted(json.dumps(entry, sort_keys=True) for entry in index["docs"])))
plugins.on_shutdown()
"""
)


def test_a_dirty_build_that_converts_several_pages_indexes_each_once_and_keeps_the_others(tmp_path):
    """Material's search plugin merges a dirty build's entries into the last index for one page a build; a dirty
    build after a code edit converts several (and one that converts the home page would lose every other)."""
    root = tmp_path / "proj"
    write_tree(root, {**BASE_FILES, **FILES, "docs/index.md": "# Home\n\nThe site's home.\n"})
    (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
    assert run_cli(root, "relock") == 0

    [served] = run_script(DIRTY_SERVE, root, "prose.md,tagged.md", "index.md", "page.md,prose.md")

    fresh, _ = build(root, "build", "site-fresh")
    index = json.loads((fresh / "search/search_index.json").read_text(encoding="utf-8"))
    assert served == sorted(json.dumps(entry, sort_keys=True) for entry in index["docs"])
    assert len({json.loads(entry)["location"] for entry in served}) == len(served)  # none twice

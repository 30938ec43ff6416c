"""Tests of docs_hooks.core.session: what every front end keeps across the rebuilds of a serve.

A serve lives for a day of edits: the build is kept while the code is unchanged
and replaced when it changes, and nothing of a replaced build or of a page's
earlier text stays in memory (what the serve memory figure of bench/README.md
measures at the site's scale, here held object by object)."""

import gc
import shutil
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import markdown

from docs_hooks.core import session as session_module
from docs_hooks.core.session import Session, as_markdown_reads, without_front_matter
from docs_hooks.core.warmup import WarmUp

from .conftest import BWD_ENTRY, FWD_ENTRY, run_cli

T = TypeVar("T")


def open_session(root) -> Session:
    session = Session(root)
    session.refresh()
    session.plan_site()
    return session


def test_the_build_is_kept_while_the_code_is_unchanged_and_replaced_with_its_processes_when_it_changes(make_project):
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    session = open_session(root)
    try:
        first = session.build
        session.expand("docs/page.md", (root / "docs/page.md").read_text())
        (root / "docs/page.md").write_text("# Page, edited\n\n" + FWD_ENTRY)

        assert session.refresh() is first  # a page edit keeps the build

        ops = root / "src/ops.py"
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        replaced = weakref.ref(first)
        first_workers = first.workers
        del first
        second = session.refresh()

        assert second is not replaced()
        assert first_workers is not None and first_workers._recorder is None  # its recording process ended
        gc.collect()
        assert replaced() is None, gc.get_referrers(replaced())  # and nothing holds the old build
    finally:
        session.close()


def test_a_page_edited_again_and_again_keeps_only_its_last_expansion(make_project):
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    assert run_cli(root, "relock") == 0  # reviewed: the page is the build's expansion, no box added
    session = open_session(root)
    try:
        old = []
        for n in range(5):
            text = f"# Page\n\nEdit {n}.\n\n" + FWD_ENTRY
            expanded = session.expand("docs/page.md", text)
            assert f"Edit {n}." in expanded.markdown
            old.append(weakref.ref(expanded))
            del expanded
        gc.collect()

        assert [ref() is None for ref in old] == [True, True, True, True, False]
    finally:
        session.close()


def test_a_problem_without_a_box_of_its_own_gets_one_under_the_title_and_is_reported(make_project):
    reported = []
    root = make_project({"docs/page.md": "# Page\n\nSee [[ops.layer_norm_forward: no such statement]].\n"})
    session = Session(root, reported.append)
    session.refresh()
    try:
        expanded = session.expand("docs/page.md", (root / "docs/page.md").read_text())
    finally:
        session.close()

    assert [p.line for p in reported] == [3]
    lines = expanded.markdown.split("\n")
    assert lines[0] == "# Page"
    assert "trace-error" in "\n".join(lines[1:4]) and "no such statement" in "\n".join(lines[1:4])


def test_what_a_page_comes_out_as_is_the_same_across_builds_until_what_it_shows_changes(make_project):
    """The digest a dirty build compares: a new build after an edit of code the page does not show gives the
    same one, a new caller of the page's function another, and a page that shows a problem none."""
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    assert run_cli(root, "relock") == 0
    text = (root / "docs/page.md").read_text()
    reported = []
    session = Session(root, reported.append)
    model = root / "src/model.py"
    try:
        session.refresh()
        first = session.comes_out_as("docs/page.md", text)
        model.write_text(model.read_text() + "\n\ndef appended():\n    return 1\n")
        session.refresh()
        unrelated = session.comes_out_as("docs/page.md", text)
        model.write_text(model.read_text() + "\n\ndef caller(X, g, b):\n    return ops.layer_norm_forward(X, g, b)\n")
        session.refresh()
        new_caller = session.comes_out_as("docs/page.md", text)
        (root / "src/ops.py").write_text((root / "src/ops.py").read_text().replace("keepdims=True)", "keepdims=1)"))
        session.refresh()
        unreviewed = session.comes_out_as("docs/page.md", text)
    finally:
        session.close()

    assert first is not None and unrelated == first
    assert new_caller is not None and new_caller != first
    assert unreviewed is None  # the lock names the old line: a problem, so the page is always built again
    assert reported == []  # nothing is reported: the page is converted (and its problems reported) later


def test_front_matter_is_left_out_as_empty_lines_so_page_lines_stay_those_of_the_file():
    text = "---\ntitle: A page\ntags: [x]\n---\n\n# Heading\n\nBody.\n"

    handed = without_front_matter(text)

    assert handed.split("\n").index("# Heading") == text.split("\n").index("# Heading")
    assert handed.strip() == "# Heading\n\nBody."
    assert without_front_matter("# No front matter\n") == "# No front matter\n"


def test_a_page_resolved_ahead_is_the_text_python_markdown_hands_its_preprocessors():
    seen = []

    class Capture(markdown.preprocessors.Preprocessor):
        def run(self, lines):
            seen.append("\n".join(lines))
            return lines

    class Ext(markdown.Extension):
        def extendMarkdown(self, md):
            md.preprocessors.register(Capture(md), "capture", 28)

    text = "# T\r\n\r\n\tindented\r\n   \r\nend"
    markdown.Markdown(extensions=[Ext()]).convert(text)

    assert as_markdown_reads(text).rstrip("\n") == seen[0].rstrip("\n")


def test_a_front_end_that_settles_has_a_replaced_build_collected_after_the_rebuild_not_in_it(make_project):
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    session = open_session(root)
    session.settles = True
    ops = root / "src/ops.py"
    try:
        first = weakref.ref(session.build)
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        session.refresh()
        gc.collect()
        assert first() is not None  # frozen with the new build: the rebuild did not collect it

        session.settle()
        assert first() is None  # collected now

        second = weakref.ref(session.build)
        ops.write_text(ops.read_text() + "\n\ndef appended_again():\n    return 2\n")
        session.refresh()
        third = weakref.ref(session.build)
        ops.write_text(ops.read_text() + "\n\ndef appended_once_more():\n    return 3\n")
        session.refresh()  # edited again before settle() ran: the rebuild collects, this replaced build too
        assert second() is None and third() is None

        fourth = weakref.ref(session.build)
        ops.write_text(ops.read_text() + "\n\ndef appended_last():\n    return 4\n")
        session.refresh()
        session.settle_later(0.01)
        session._settler.join()
        assert fourth() is None

        fifth = weakref.ref(session.build)
        ops.write_text(ops.read_text() + "\n\ndef appended_at_last():\n    return 5\n")
        session.settle_later(60)
        stale = session._settler
        session.refresh()  # the timer set before this refresh must not collect in its rebuild
        stale.cancel()
        stale.function(*stale.args)
        gc.collect()
        assert fifth() is not None
        session.settle()
        assert fifth() is None
    finally:
        session.close()


def test_a_rebuild_stops_the_warm_up_before_it_reads_the_settings_and_the_code_again(make_project, monkeypatch):
    # The warm-up renders in a thread of the serve process: left going, it takes turns with everything the rebuild
    # does, down to reading every code file to tell whether the code changed.
    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    session = open_session(root)
    happened: list[str] = []

    def noted(name: str, real: Callable[..., T]) -> Callable[..., T]:
        def call(*args, **kwargs):
            happened.append(name)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(WarmUp, "stop", noted("stop the warm-up", WarmUp.stop))
    monkeypatch.setattr(session_module, "load_settings", noted("read the settings", session_module.load_settings))
    monkeypatch.setattr(session_module, "fingerprint", noted("digest the code", session_module.fingerprint))
    try:
        for edit in ("page", "code"):
            happened.clear()
            if edit == "code":
                ops = root / "src/ops.py"
                ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
            session.refresh()
            assert happened[:3] == ["stop the warm-up", "read the settings", "digest the code"], (edit, happened)
    finally:
        session.close()


def test_the_review_lock_is_read_again_when_its_text_changes_and_only_then(make_project, monkeypatch):
    from docs_hooks.core import session as session_module

    root = make_project({"docs/page.md": "# Page\n\n" + FWD_ENTRY})
    run_cli(root, "relock")
    parsed = []
    real = session_module.parse_lock
    monkeypatch.setattr(session_module, "parse_lock", lambda text, name: parsed.append(name) or real(text, name))
    session = Session(root)
    try:
        session.refresh()
        locked = session.locked
        assert parsed == ["docs/trace.lock"] and list(locked) == ["docs/page.md"]
        session.refresh()  # a rebuild of serve with the lock as it was
        assert parsed == ["docs/trace.lock"] and session.locked is locked
        lock = root / "docs/trace.lock"
        lock.write_text(lock.read_text().replace('"docs/page.md"', '"docs/other.md"'))
        session.refresh()
        assert len(parsed) == 2 and list(session.locked) == ["docs/other.md"]
        lock.unlink()
        session.refresh()
        assert session.locked == {}
    finally:
        session.close()


def test_a_page_handed_over_again_is_read_as_markdown_reads_it_once_per_text():
    session = Session(Path("."))
    text = "# Title\n\tindented\r\n   \nend"
    first = session.as_read(text)
    assert first == as_markdown_reads(text)
    assert session.as_read(text) is first  # the same build
    assert session.as_read(text, 2) == as_markdown_reads(text, 2) != first  # its tab length is part of it


def test_a_code_edit_that_changes_no_recording_reads_the_recordings_back_without_unpacking_them_again(make_project):
    from .test_recordings import EXAMPLE_PAGE

    root = make_project({"docs/page.md": EXAMPLE_PAGE})
    run_cli(root, "relock")
    session = Session(root)
    ops = root / "src/ops.py"

    def rebuild(n: int) -> list:
        if n:
            ops.write_text(ops.read_text() + f"\n\ndef appended_{n}():\n    return {n}\n")  # reaches no recording
        build = session.refresh()
        session.plan_site()
        expanded = session.expand("docs/page.md", (root / "docs/page.md").read_text())
        assert expanded.problems == []
        build.await_background()  # the recordings made are stored
        return build.workers.recorder.recordings()

    try:
        made = rebuild(0)
        read = rebuild(1)  # a new build: read back from the store
        again = rebuild(2)
    finally:
        session.close()
    assert made and len(read) == len(again) == len(made)
    assert [r.request for r in read] == [r.request for r in made]
    assert all(a is r for a, r in zip(again, read))  # the same objects: not read or unpacked again


def in_a_fresh_copy(root: Path, copy: Path, expand: Callable[[Session], T]) -> T:
    """What ``expand`` gives in a session of a copy of the project without its cache folder: nothing a serve
    session of ``root`` kept can reach it."""
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".cache"))
    session = Session(copy)
    try:
        return expand(session)
    finally:
        session.close()


TWO_ENTRIES = {"docs/fwd.md": "# Forward\n\n" + FWD_ENTRY, "docs/bwd.md": "# Backward\n\n" + BWD_ENTRY}


def relocked(make_project, pages: dict[str, str]) -> Path:
    """A project with ``pages``, its references locked."""
    root = make_project(pages)
    assert run_cli(root, "relock") == 0
    return root


def expand_all(session: Session, pages: dict[str, str] = TWO_ENTRIES) -> dict[str, str]:
    """Every page expanded as a front end's rebuild does: the settings and the code read again, the site planned."""
    session.refresh()
    session.plan_site()
    return {page: session.expand(page, text).markdown for page, text in pages.items()}


def test_after_a_code_edit_a_serve_renders_again_only_the_pages_that_read_what_changed(make_project, tmp_path):
    """Under ``mkdocs serve`` (``settles``) each page's rendering is kept with what it read of the code
        (``kept.TracedPages``). A function appended to the module of both pages' functions renders neither again; a
        new caller of one of them, elsewhere, renders its page again (the page lists its callers), and not the other;
        an edit of one renders its page again, with the edit in it; lines moved above both render both again. Each
        time, every page comes out as a fresh build of the same code makes it. Each page's plan is kept the same
    way: a page whose resolving read the same of the code is not resolved again."""
    pages = TWO_ENTRIES
    root = relocked(make_project, pages)

    def fresh() -> dict[str, str]:
        return in_a_fresh_copy(root, tmp_path / f"fresh{len(made)}", expand_all)

    edits = [
        ("src/ops.py", lambda text: text + "\n\ndef appended():\n    return 1\n"),
        ("src/model.py", lambda text: text + "\n\ndef caller(X, g, b):\n    return ops.layer_norm_forward(X, g, b)\n"),
        ("src/ops.py", lambda text: text.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(axis=0) * 1.0")),
        ("src/ops.py", lambda text: '"""Tiny layer norm."""\n\nSCALE = 1\n' + text.split("\n", 1)[1]),
    ]
    serve = Session(root)
    serve.settles = True
    reused, replanned, seen, made = [], [], [], []
    try:
        expand_all(serve)
        for path, edit in edits:
            (root / path).write_text(edit((root / path).read_text()))
            before, plans_before = serve.traces.reused, serve.traces.plans_reused
            seen.append(expand_all(serve))
            reused.append(serve.traces.reused - before)
            replanned.append(serve.traces.plans_reused - plans_before)
            made.append(fresh())
    finally:
        serve.close()

    assert seen == made  # what serve shows is what a fresh build shows
    assert "caller" in seen[1]["docs/fwd.md"] and "caller" not in seen[0]["docs/fwd.md"]
    assert "dY.sum(axis=0) * 1.0" in seen[2]["docs/bwd.md"] and "dY.sum(axis=0) * 1.0" not in seen[1]["docs/bwd.md"]
    assert reused == [2, 1, 1, 0]
    # Each page is resolved from its file's text and from the text handed over: two plans a page, kept the same way.
    assert replanned == [4, 4, 2, 0]


def test_the_call_graph_s_answers_are_taken_from_the_last_build_while_its_inputs_are_the_same(make_project, tmp_path):
    """A kept page's questions of the runs' call graph (its callers, the tests that call or reach its function)
    are answered from an earlier build's graph while what those questions read is the same
    (``kept.GraphAnswers``): after a function appended that nothing calls, and not after a new test of a shown
    function, which the page then lists. Each time, every page comes out as a fresh build of the same code
    makes it."""
    root = relocked(make_project, TWO_ENTRIES)

    taken, seen, made = answers_taken_over_edits(root, TWO_ENTRIES, lambda serve: serve.traces.graph, tmp_path)

    assert seen == made
    assert "test_added_here" in seen[1]["docs/fwd.md"] and "test_added_here" not in seen[0]["docs/fwd.md"]
    assert taken[0] > 0 and taken[1] == 0 and taken[2] > 0


def answers_taken_over_edits(root: Path, pages: dict[str, str], keeper, tmp_path: Path):
    """A serve of ``root`` over three code edits (a function appended that nothing calls, a new test of the shown
    function, another function appended): after each, how many answers ``keeper(serve)`` gave (its ``taken``),
    the pages as the serve expands them, and as a fresh build of a copy does."""
    new_test = "\n\ndef test_added_here():\n    layer_norm_forward(np.eye(2), np.ones(2), np.zeros(2))\n"
    edits = [
        ("src/ops.py", lambda text: text + "\n\ndef appended():\n    return 1\n"),
        ("tests/test_ops.py", lambda text: text + new_test),
        ("src/model.py", lambda text: text + "\n\ndef appended_too():\n    return 2\n"),
    ]
    serve = Session(root)
    serve.settles = True
    taken, seen, made = [], [], []
    try:
        expand_all(serve, pages)
        for n, (path, edit) in enumerate(edits):
            (root / path).write_text(edit((root / path).read_text()))
            before = keeper(serve).taken
            seen.append(expand_all(serve, pages))
            taken.append(keeper(serve).taken - before)
            made.append(in_a_fresh_copy(root, tmp_path / f"fresh{n}", lambda session: expand_all(session, pages)))
    finally:
        serve.close()
    return taken, seen, made


def test_a_plan_kept_under_serve_does_not_keep_the_build_that_resolved_it(make_project):
    """A plan holds its build's project, index and graph; kept across builds (``kept.TracedPages.keep_plan``) it
    holds their roles instead, and a later build that takes it puts its own back."""
    root = make_project({"docs/fwd.md": "# Forward\n\n" + FWD_ENTRY})
    assert run_cli(root, "relock") == 0
    text = (root / "docs/fwd.md").read_text()
    serve = Session(root)
    serve.settles = True
    try:
        first = serve.refresh()
        serve.plan_site()
        serve.expand("docs/fwd.md", text)
        gone = weakref.ref(first.project)
        ops = root / "src/ops.py"
        ops.write_text(ops.read_text() + "\n\ndef appended():\n    return 1\n")
        before = serve.traces.plans_reused
        second = serve.refresh()
        serve.plan_site()
        plan = second.plan("docs/fwd.md", text)
        assert serve.traces.plans_reused > before  # taken, not resolved again
        assert plan.project is second.project and plan.refs.index is second.project.index
        del first
        serve.settle()
        gc.collect()
        assert gone() is None
    finally:
        serve.close()


def test_a_page_rendered_again_after_a_code_edit_renders_again_only_the_blocks_that_read_what_changed(
    make_project, tmp_path
):
    """The list of functions no page documents reads every function; an excerpt, the statements it shows. A
    function appended renders the page again (the list grows) but takes the excerpt as it was; an edit of the
    excerpt's statement renders both again. Each time the page comes out as a fresh build makes it."""
    text = (
        "# Blocks\n\n```trace-excerpt\ncode: 'ops.layer_norm_forward: mu = X'\n```\n\n"
        "```trace-inventory\nof: undocumented\n```\n"
    )
    root = make_project({"docs/blocks.md": text})
    assert run_cli(root, "relock") == 0

    def expand(session: Session) -> str:
        session.refresh()
        session.plan_site()
        return session.expand("docs/blocks.md", text).markdown

    def fresh(n: int) -> str:
        return in_a_fresh_copy(root, tmp_path / f"fresh{n}", expand)

    ops = root / "src/ops.py"
    edits = [
        lambda t: t + "\n\ndef appended():\n    return 1\n",
        lambda t: t.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) * 1.0"),
    ]
    serve = Session(root)
    serve.settles = True
    seen, made, blocks = [], [], []
    try:
        expand(serve)
        for n, edit in enumerate(edits):
            ops.write_text(edit(ops.read_text()))
            before = serve.traces.blocks_reused
            seen.append(expand(serve))
            blocks.append(serve.traces.blocks_reused - before)
            made.append(fresh(n))
    finally:
        serve.close()
    assert seen == made
    assert "appended" in seen[0] and "* 1.0" in seen[1] and "* 1.0" not in seen[0]
    assert blocks == [1, 0]

"""The KaTeX renderer (docs_hooks.math): what a formula KaTeX refuses, a KaTeX that fails to start or
never answers, and a killed build each leave behind."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from docs_hooks.base.errors import TraceError
from docs_hooks.run.math import MathRenderer

from .conftest import REPO, expand_page, store_rows, stored_rows, write_tree

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (REPO / "node_modules" / "katex").is_dir(),
    reason="KaTeX is not installed here: run npm ci",
)

REFUSED = "is not allowed: the build trusts no command that makes a link, loads a file or sets HTML attributes"


def fake_katex(root: Path, index_js: str) -> Path:
    """A project whose own KaTeX (node_modules/katex/dist/katex.min.js) is ``index_js``: one that breaks in a
    chosen way. The build takes the project's KaTeX when docs-hooks carries none (an editable install)."""
    write_tree(
        root,
        {
            "node_modules/katex/package.json": '{"name": "katex", "version": "0.0.0-test"}\n',
            "node_modules/katex/dist/katex.min.js": textwrap.dedent(index_js),
        },
    )
    return root


# A KaTeX that loops without end on the formula "loop", after leaving a file named busy beside itself.
LOOPING = """\
    const fs = require("fs");
    exports.renderToString = (tex) => {
      if (tex === "loop") {
        fs.writeFileSync(__dirname + "/busy", "");
        for (;;) {}
      }
      return "<span>" + tex + "</span>";
    };
    """


def test_a_formula_with_a_command_katex_does_not_trust_fails_with_page_and_line(make_project):
    root = make_project({"docs/page.md": "A link in a formula, $\\href{javascript:alert(1)}{x}$, is refused.\n"})

    problems = [str(p) for p in expand_page(root).problems]

    assert problems == [
        f"docs/page.md:1: KaTeX cannot render '\\\\href{{javascript:alert(1)}}{{x}}': \\href {REFUSED}; fix the TeX"
    ]


def test_every_refused_command_of_a_formula_is_named(tmp_path):
    renderer = MathRenderer(REPO)
    try:
        [(html, error)] = renderer.render_many([("\\includegraphics{x.png} \\url{https://example.com}", True)])
    finally:
        renderer.close()

    assert html is None
    assert error == (
        "\\includegraphics, \\url are not allowed: the build trusts no command that makes a link, "
        "loads a file or sets HTML attributes"
    )


def test_each_formula_is_html_for_the_eye_and_mathml_for_a_screen_reader():
    renderer = MathRenderer(REPO)
    try:
        [(html, error)] = renderer.render_many([("\\mu_t", False)])
    finally:
        renderer.close()

    assert error is None
    assert html.count("<math") == 1 and '<annotation encoding="application/x-tex">\\mu_t</annotation>' in html
    assert '<span class="katex-html" aria-hidden="true">' in html


def test_renders_cached_before_the_render_script_changed_are_not_reused(tmp_path, monkeypatch):
    import docs_hooks.run.math as math

    html_only = tmp_path / "katex_render.js"  # the script as it was when formulas had no MathML
    html_only.write_text(math.SCRIPT.read_text(encoding="utf-8").replace('"htmlAndMathml"', '"html"'))
    with monkeypatch.context() as patch:
        patch.setattr(math, "SCRIPT", html_only)
        before = MathRenderer(REPO, tmp_path / "cache")
        [(old, _)] = before.render_many([("x", False)])
        before.close()

    after = MathRenderer(REPO, tmp_path / "cache")
    try:
        [(new, _)] = after.render_many([("x", False)])
        assert after._proc is not None  # KaTeX ran: the store held no render of this script
    finally:
        after.close()

    assert "<math" not in old and "<math" in new


def test_a_katex_that_dies_at_start_is_reported_with_what_node_said(tmp_path):
    root = fake_katex(tmp_path / "proj", 'throw new Error("this KaTeX is broken");\n')
    renderer = MathRenderer(root)

    with pytest.raises(TraceError) as caught:
        renderer.render_many([("x", False)])

    lines = str(caught.value).split("\n")
    assert lines[:2] == [
        "KaTeX failed to run (node exited with code 1); if KaTeX is damaged, reinstall docs-hooks. node said:",
        "Error: this KaTeX is broken",
    ]


def test_a_missing_render_script_is_reported_with_what_node_said(tmp_path, monkeypatch):
    import docs_hooks.run.math as math

    monkeypatch.setattr(math, "SCRIPT", tmp_path / "site-packages" / "docs_hooks" / "katex_render.js")
    renderer = MathRenderer(REPO)

    with pytest.raises(TraceError) as caught:
        renderer.render_many([("x", False)])

    message = str(caught.value)
    assert message.startswith(
        "KaTeX failed to run (node exited with code 1); if KaTeX is damaged, reinstall docs-hooks. node said:\n"
    )
    assert f"Cannot find module '{math.SCRIPT}'" in message


def test_a_batch_katex_does_not_finish_in_time_stops_it_with_a_clear_error(tmp_path):
    root = fake_katex(tmp_path / "proj", LOOPING)
    renderer = MathRenderer(root, timeout=1)
    renderer.start()
    proc = renderer._proc

    with pytest.raises(TraceError) as caught:
        renderer.render_many([("x", False), ("loop", True)])

    assert str(caught.value) == (
        "KaTeX gave no answer within 1 s for a batch of 2 formula(s) and was stopped; look for a formula of "
        "this page that KaTeX cannot finish, and check that 'node' runs on this machine"
    )
    assert proc.poll() is not None and renderer._proc is None
    # the next batch starts a new process (given time enough to start on a busy machine)
    renderer.timeout = 600
    assert renderer.render_many([("y", False)]) == [("<span>y</span>", None)]
    renderer.close()


CHILD = """\
import sys, threading
from pathlib import Path
from docs_hooks.run.math import MathRenderer

renderer = MathRenderer(Path(sys.argv[1]), timeout=3600)
renderer.start()
print(renderer._proc.pid, flush=True)
renderer.render_many([("loop", False)])
"""


def test_node_does_not_outlive_a_build_killed_while_katex_is_busy(tmp_path):
    root = fake_katex(tmp_path / "proj", LOOPING)
    build = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    node = int(build.stdout.readline())
    exited = os.pidfd_open(node)  # readable once node has exited
    try:
        busy = root / "node_modules" / "katex" / "dist" / "busy"
        while not busy.exists() and build.poll() is None:
            time.sleep(0.05)
        assert build.poll() is None, "the build ended before KaTeX got its formula"

        build.send_signal(signal.SIGKILL)
        build.wait()

        # Far longer than node needs to notice its closed stdin: a node left behind never becomes readable.
        gone = select.select([exited], [], [], 120)[0]
        assert gone, f"node (pid {node}) is still running after its build was killed"
    finally:
        if not select.select([exited], [], [], 0)[0]:
            os.kill(node, signal.SIGKILL)
        os.close(exited)


def test_katex_is_found_in_the_wheel_first_then_in_the_project(tmp_path, monkeypatch):
    import docs_hooks.run.math as math

    project = fake_katex(tmp_path / "proj", "exports.renderToString = (tex) => tex;\n")
    wheel = tmp_path / "site-packages" / "docs_hooks" / "_katex"
    monkeypatch.setattr(math, "BUNDLED", wheel)
    assert math.katex_dist(project) == project / "node_modules" / "katex" / "dist"
    assert math.katex_version(math.katex_dist(project)) == "0.0.0-test"

    write_tree(wheel, {"katex.min.js": "exports.renderToString = (tex) => tex;\n", "VERSION": "9.9.9\n"})

    assert math.katex_dist(project) == wheel
    assert math.katex_version(wheel) == "9.9.9"


def test_without_node_the_message_says_to_install_it(make_project, monkeypatch):
    import docs_hooks.run.math as math

    monkeypatch.setattr(math.shutil, "which", lambda name: None)
    renderer = MathRenderer(make_project())

    with pytest.raises(TraceError) as caught:
        renderer.render_many([("x", False)])

    assert str(caught.value) == (
        "the site renders its math at build time with KaTeX, which needs Node.js: install "
        "'node' (version 18 or later) and put it on the PATH"
    )


# ------------------------------------------------------------------ what the store holds is checked


@settings(max_examples=300, deadline=None, database=None)
@given(raw=st.binary() | st.text().map(str.encode))
def test_a_stored_render_that_is_not_katex_html_is_a_miss_never_an_error(raw):
    assume(not raw.startswith(b'<span class="katex'))
    folder = Path(tempfile.mkdtemp())
    try:
        renderer = MathRenderer(REPO, folder)
        item = ("x", False)
        renderer.store.put_many({renderer._key(item): raw})  # sealed by the store: the reader's own check decides

        todo = renderer._from_store([item])

        assert todo == [item] and renderer.cache == {}  # rendered again
        renderer.close()
    finally:
        shutil.rmtree(folder)


def test_a_stored_render_whose_bytes_are_not_utf8_or_not_katex_html_is_rendered_again_and_stored_anew(tmp_path):
    formulas = [("x^2", False), ("\\frac{a}{b}", True), ("y", False)]
    first = MathRenderer(REPO, tmp_path / "cache")
    rendered = first.render_many(formulas)
    first.close()
    store = tmp_path / "cache" / "katex.sqlite3"
    stored = stored_rows(store)
    damaged = [b"\xff\xfe not UTF-8", b"", b"<script>alert(1)</script>"]
    store_rows(store, dict(zip(stored, damaged)))

    again = MathRenderer(REPO, tmp_path / "cache")
    try:
        assert again.render_many(formulas) == rendered
        assert again._proc is not None  # KaTeX ran: none of those rows was taken for a render
    finally:
        again.close()
    assert stored_rows(store) == stored

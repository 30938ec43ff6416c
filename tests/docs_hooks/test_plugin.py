"""The MkDocs plugin (docs_hooks.plugin): what a site that names it under ``plugins:`` gets.

Each test builds a tiny throwaway site with MkDocs itself, in a child process, as
``mkdocs build`` and ``mkdocs serve`` do.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .conftest import PYPROJECT, run_cli
from .test_cli import MKDOCS_YML, RICH_PAGE, RICH_PYPROJECT, RICH_SPEC, SITE_PAGE, mkdocs_build
from .test_kept import BACKWARD_PAGE, DYNAMIC_TEST, EXAMPLE_PAGE

# Builds the site again and again in one process, as `mkdocs serve` does after each change (MkDocs keeps the
# plugin object, since it defines on_startup), editing a source file before each rebuild. After each build it
# prints the worker processes alive under this process and the resident memory of the whole process tree.
SERVE_LIKE = r"""
import json, logging, os, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

root = Path(sys.argv[1])
logging.getLogger("mkdocs").setLevel(logging.ERROR)

def tree(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found + [q for p in found for q in tree(p)]

def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

def config():
    return load_config(config_file=str(root / "mkdocs.yml"), site_dir=str(root / "site"))

first = config()
first.plugins.on_startup(command="serve", dirty=False)
ops = root / "src" / "ops.py"
for edit in range(int(sys.argv[2]) + 1):
    if edit:
        ops.write_text(ops.read_text() + f"\n# edit {edit}\n")
    build(config(), serve_url="http://127.0.0.1:8000/")
    workers = tree(os.getpid())
    print(json.dumps({"edit": edit, "workers": len(workers),
                      "rss_mb": sum(rss_kb(p) for p in [os.getpid(), *workers]) / 1024}), flush=True)
first.plugins.on_shutdown()
print(json.dumps({"after_shutdown": len(tree(os.getpid()))}), flush=True)
"""


# The start of a script that builds a site again and again in one process, as `mkdocs serve` does: each
# ``rebuild()`` loads mkdocs.yml anew, which makes a new collection of the plugins with the same plugin objects
# (MkDocs keeps those that define on_startup, as docs_hooks and Material's search plugin do), and returns it;
# ``rebuild(dirty=True)``, as `mkdocs serve --dirty` does.
SERVE_REBUILD = r"""
import json, logging, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

root = Path(sys.argv[1])
logging.getLogger("mkdocs").setLevel(logging.ERROR)
plugins = None

def rebuild(dirty=False):
    global plugins
    config = load_config(config_file=str(root / "mkdocs.yml"), site_dir=str(root / "site"))
    if plugins is None:
        config.plugins.on_startup(command="serve", dirty=dirty)
    plugins = config.plugins
    build(config, serve_url="http://127.0.0.1:8000/", dirty=dirty)
    return plugins
"""


def run_script(script: str, root, *args: str, timeout: float = 600) -> list:
    """What ``script`` printed, a JSON value a line, run in a fresh Python process in the project at ``root``."""
    result = subprocess.run(
        [sys.executable, "-c", script, str(root), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith(("{", "["))]


def serve_like(root, edits: int) -> list[dict]:
    return run_script(SERVE_LIKE, root, str(edits), timeout=900)


def rich_site(make_project):
    root = make_project(
        {
            "pyproject.toml": RICH_PYPROJECT,
            "spec/model.typ": RICH_SPEC,
            "docs/page.md": RICH_PAGE,
            "mkdocs.yml": MKDOCS_YML,
        }
    )
    assert run_cli(root, "relock") == 0
    return root


def test_serve_ends_the_old_workers_on_each_code_change_so_processes_and_memory_stay_flat(make_project):
    root = rich_site(make_project)

    runs = serve_like(root, edits=10)

    builds, shutdown = runs[:-1], runs[-1]
    assert len(builds) == 11
    assert builds[0]["workers"] >= 2  # the recorder and KaTeX of the first build
    assert max(b["workers"] for b in builds[1:]) <= builds[0]["workers"], builds
    assert builds[-1]["rss_mb"] - builds[0]["rss_mb"] < 100, builds
    assert shutdown == {"after_shutdown": 0}


def test_the_plugin_links_its_own_assets_and_keeps_the_lock_and_helpers_out_of_the_site(make_project):
    page = RICH_PAGE.split("```trace-shapes")[0]  # no call-site shapes: the helper below runs no model
    root = make_project(
        {
            "pyproject.toml": RICH_PYPROJECT + 'model_run = "docs/examples/model_run.py"\n',
            "spec/model.typ": RICH_SPEC,
            "docs/page.md": page,
            "mkdocs.yml": MKDOCS_YML,
            "docs/examples/model_run.py": "def config():\n    return {}\n",
        }
    )
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    site = root / "site"
    html = (site / "page/index.html").read_text(encoding="utf-8")
    for asset in (
        "assets/docs_hooks/trace.css",
        "assets/docs_hooks/katex/katex.min.css",
        "assets/docs_hooks/trace-widgets.js",
    ):
        assert (site / asset).is_file(), asset
        assert f'"../{asset}"' in html, asset
    assert not (site / "trace.lock").exists()
    assert not (site / "examples").exists()


def test_a_settings_problem_stops_the_build_with_one_message_and_no_traceback(make_project):
    root = make_project(
        {
            "pyproject.toml": "[tool.docs_hooks]\nsource_root = 'nowhere'\nsorce = 1\n",
            "mkdocs.yml": MKDOCS_YML,
            "docs/page.md": "# Page\n",
        }
    )

    result = mkdocs_build(root)

    log = result.stdout + result.stderr
    assert result.returncode == 1
    assert "Traceback" not in log
    assert "ERROR   -  pyproject.toml: unknown setting 'sorce' in [tool.docs_hooks]; known settings: " in log
    assert "Aborted with a BuildError!" in log


def test_a_source_file_that_does_not_parse_stops_the_build_at_its_line_with_no_traceback(make_project):
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": "# Page\n"})
    (root / "src/ops.py").write_text("def broken(:\n    pass\n", encoding="utf-8")

    result = mkdocs_build(root)

    log = result.stdout + result.stderr
    assert result.returncode == 1
    assert "Traceback" not in log
    assert "ERROR   -  src/ops.py:1: " in log, log


# The entry and equation of RICH_PAGE without its spec, example and shapes, then an excerpt and the matrix.
UNCONFIGURED_PAGE = (
    RICH_PAGE.split("```trace-example")[0].replace("spec: [eq:ln-mean]\n", "")
    + """\
```trace-excerpt
code: "ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)"
```

```trace-inventory
of: matrix
```
"""
)


def test_features_left_unconfigured_leave_no_empty_rows_or_columns(make_project):
    """No spec: no PDF row, no Specification column. No repo_url: no GitHub link or column; code links go to the
    site's own source pages."""
    root = make_project(
        {"pyproject.toml": "[tool.docs_hooks]\n", "mkdocs.yml": MKDOCS_YML, "docs/page.md": UNCONFIGURED_PAGE}
    )
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert "PDF reference" not in html and "Specification" not in html and "Not stated in the PDF" not in html
    assert "GitHub" not in html and "example.com" not in html
    assert '<a href="../source/src/ops.py/#L6">Source</a>' in html  # the listing: its source page, at its first line
    assert '<a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward"><code>ops.py:8</code></a>' in html
    assert (root / "site/source/src/ops.py/index.html").is_file()


def test_with_a_spec_and_repo_url_the_rows_and_columns_are_there(make_project):
    root = make_project(
        {
            "pyproject.toml": RICH_PYPROJECT,
            "spec/model.typ": RICH_SPEC,
            "mkdocs.yml": MKDOCS_YML,
            "docs/page.md": UNCONFIGURED_PAGE.replace(
                "status: implemented\n", "status: implemented\nspec: [eq:ln-mean]\n"
            ),
        }
    )
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert "<td>PDF reference</td>" in html and ">Specification</th>" in html
    assert '<a href="https://example.com/repo/blob/abc123/src/ops.py#L6-L15">GitHub</a>' in html
    assert "<th>GitHub</th>" in html


WIDGET_PAGE = """\
# Layer norm

```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: implemented
```

```trace-example
test: tests/test_ops.py::test_rows_have_zero_mean
title: One matrix
widget: true
show:
  - {label: Mean, code: mu}
```
"""


def test_a_widget_with_no_browser_kernel_is_a_warning_at_its_line_and_a_registered_kernel_silences_it(make_project):
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": WIDGET_PAGE})
    assert run_cli(root, "relock") == 0

    missing = mkdocs_build(root)

    assert missing.returncode == 1
    assert (
        "WARNING -  docs/page.md:12: example 'One matrix': widget: no browser kernel registers "
        "ops.layer_norm_forward, so its inputs cannot be edited on the page; add one to a script listed in "
        'mkdocs.yml\'s extra_javascript (see trace-widgets.js: register("ops.layer_norm_forward", ...)), or '
        "remove 'widget: true'"
    ) in missing.stdout + missing.stderr

    (root / "docs/kernels.js").write_text(
        "(window.traceWidgetKernels = window.traceWidgetKernels || []).push(({ nd, register }) => {\n"
        '  register("ops.layer_norm_forward", ({ X }) => ({ mu: X.mean(-1, true) }));\n});\n',
        encoding="utf-8",
    )
    (root / "mkdocs.yml").write_text(MKDOCS_YML + "extra_javascript:\n  - kernels.js\n", encoding="utf-8")

    registered = mkdocs_build(root)

    assert registered.returncode == 0, registered.stdout + registered.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert html.index('src="../kernels.js"') < html.index('src="../assets/docs_hooks/trace-widgets.js"')


def test_serve_watches_the_code_beside_everything_but_not_the_site_the_cache_or_a_virtual_environment(tmp_path):
    from docs_hooks.base.settings import load_settings
    from docs_hooks.plugin import TracePlugin

    from .conftest import write_tree

    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.docs_hooks]\nsource_root = "."\ntests_root = "."\n',
            "layers.py": "",
            "test_layers.py": "",
            "docs/index.md": "# Hi\n",
            "site/index.html": "",
            ".cache/docs_hooks/index.sqlite": "",
            "env/pyvenv.cfg": "",
            "node_modules/katex/katex.js": "",
            "tools/run.py": "",
        },
    )

    class Server:
        watched: list[str] = []

        def watch(self, path):
            self.watched.append(path)

    from docs_hooks.core.session import Session

    plugin = TracePlugin()
    plugin.session = Session(root)
    plugin.session.settings = load_settings(root)
    server = plugin.on_serve(Server(), config=None, builder=None)

    assert sorted(server.watched) == [
        str(root / name) for name in ("layers.py", "pyproject.toml", "test_layers.py", "tools")
    ]


def test_a_site_wide_table_is_filled_before_the_search_index_reads_the_page(make_project, tmp_path):
    import json

    from .conftest import run_cli
    from .test_cli import MKDOCS_YML, mkdocs_build

    root = make_project(
        {
            "mkdocs.yml": MKDOCS_YML.replace(
                "  - Layer norm: page.md\n", "  - Layer norm: page.md\n  - Left out: left.md\n"
            ),
            "docs/page.md": "# Layer norm\n\n```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\n"
            "status: implemented\n```\n",
            "docs/left.md": "# Left out\n\n```trace-inventory\nof: undocumented\n```\n",
        }
    )
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    html = (root / "site/left/index.html").read_text(encoding="utf-8")
    assert "trace-late" not in html and "layer_norm_backward" in html  # a function no page documents
    index = json.loads((root / "site/search/search_index.json").read_text(encoding="utf-8"))
    assert any("layer_norm_backward" in doc["text"] for doc in index["docs"] if doc["location"].startswith("left/"))


# ------------------------------------------------------------------ strict, whatever the log level


def quiet_build(root, *flags: str):
    import os
    import subprocess
    import sys

    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", *flags, "-f", str(root / "mkdocs.yml"), "-d", str(root / "site")]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_a_strict_build_under_q_fails_on_the_generators_problems_and_prints_each(make_project):
    """MkDocs counts only the warnings it prints, so under -q its strict mode counts none: the plugin counts its own
    problems and aborts the build at its end, with the lines it would have printed."""
    from .test_cli import MKDOCS_YML, SITE_PAGE

    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.sum()")})

    strict = quiet_build(root, "--strict", "-q")
    relaxed = quiet_build(root, "-q")

    assert strict.returncode == 1, strict.stdout + strict.stderr
    lines = [line for line in (strict.stdout + strict.stderr).splitlines() if line.strip()]  # MkDocs aborts on stdout
    assert lines[0] == "Aborted with 1 docs_hooks problem(s) in strict mode:", lines
    assert lines[1] == (
        "docs/page.md:7: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; did you mean "
        "'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code."
    ), lines
    assert "Traceback" not in strict.stderr
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr  # not strict: the build goes on


def test_every_problem_of_a_page_shows_on_the_page_in_the_error_box_a_block_failure_gets(make_project):
    """A broken reference in an equation or code changed since it was reviewed has no block of its own to fail:
    the page gets the same error box at its top, so an author sees it in the browser under mkdocs serve too."""
    from .conftest import FWD_ENTRY
    from .test_cli import MKDOCS_YML

    page = (
        "# Layer norm\n\n" + FWD_ENTRY + "\n```trace-equation\nid: mean\ntitle: The mean\ntex: \\mu\n"
        "code: mu = X.sum()\n```\n"
    )
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": page})

    result = quiet_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    built = (root / "site" / "page" / "index.html").read_text(encoding="utf-8")
    boxes = re.findall(
        r'<div class="admonition failure trace-error"><p class="admonition-title">Trace error</p>'
        r"<p>(.*?)</p></div>",
        built,
    )
    assert any("docs/page.md:13: reference &#x27;mu = X.sum()&#x27;" in b for b in boxes), boxes
    assert any("not reviewed yet" in b for b in boxes), boxes  # the lock's problems too
    assert built.index("Trace error") < built.index("The mean")  # at the top, under the title


# ------------------------------------------------------------------ serve --dirty

DIRTY_SERVE = (
    SERVE_REBUILD
    + r"""
import time

site = root / "site"

def rebuild_dirty():
    # Prints the pages the rebuild wrote again.
    before = {str(p.relative_to(site)): p.stat().st_mtime_ns for p in site.rglob("index.html")}
    time.sleep(0.05)  # the file times below tell a rewritten page from a kept one
    rebuild(dirty=True)
    after = {str(p.relative_to(site)): p.stat().st_mtime_ns for p in site.rglob("index.html")}
    print(json.dumps(sorted(p for p in after if before.get(p) != after[p])), flush=True)

rebuild_dirty()
rebuild_dirty()
home = root / "docs" / "index.md"
home.write_text(home.read_text() + "\nOne more sentence.\n")
rebuild_dirty()
model = root / "src" / "model.py"
model.write_text(model.read_text() + "\n\ndef appended():\n    return 1\n")
rebuild_dirty()
model.write_text(model.read_text() + "\n\ndef caller(X, g, b):\n    return ops.layer_norm_forward(X, g, b)\n")
rebuild_dirty()
plugins.on_shutdown()
"""
)


ALL_SOURCE_PAGES = PYPROJECT + 'source_pages = "all"\n'  # a source page for every file of the index


def test_by_default_the_site_has_a_source_page_for_each_file_its_pages_cite_and_links_others_to_the_repository(
    make_project,
):
    from .conftest import FWD_ENTRY

    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": FWD_ENTRY})
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    made = sorted(p.relative_to(root / "site").as_posix() for p in (root / "site/source").rglob("index.html"))
    assert made == ["source/src/ops.py/index.html"]  # the entry's file; not model.py, nor the tests
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert 'href="../source/src/ops.py/#L' in html
    assert "docs-hooks-source:" not in html and 'href="../source/src/model.py' not in html
    assert 'href="https://example.com/repo/blob/abc123/src/model.py#L' in html  # a caller's line, on the repository


def test_a_dirty_serve_rebuilds_the_pages_whose_inputs_changed_and_only_those(make_project):
    """MkDocs' dirty build rebuilds a page whose file is newer than its HTML. A page that shows code is
    rebuilt when it comes out different (a new caller of its function), not when only the code around it
    changed; a source page, given as text, would be rebuilt every time."""
    from .conftest import FWD_ENTRY

    root = make_project(
        {
            "mkdocs.yml": MKDOCS_YML,
            "pyproject.toml": ALL_SOURCE_PAGES,
            "docs/index.md": "# Home\n\nProse only.\n",
            "docs/page.md": FWD_ENTRY,
        }
    )
    assert run_cli(root, "relock") == 0

    first, unchanged, prose, code, caller = run_script(DIRTY_SERVE, root)

    assert {"index.html", "page/index.html", "source/src/ops.py/index.html"} <= set(first)
    assert unchanged == []
    assert prose == ["index.html"]
    assert code == ["source/src/model.py/index.html"]  # the page shows nothing of the appended function
    assert caller == ["page/index.html", "source/src/model.py/index.html"]
    assert "appended" in (root / "site/source/src/model.py/index.html").read_text(encoding="utf-8")
    assert "model.caller" in (root / "site/page/index.html").read_text(encoding="utf-8")


# A hook that stops a build after its pages are converted and before they are written, while a file FAIL exists.
FAILING_HOOK = """\
from pathlib import Path


def on_post_page(output, page, config):
    if (Path(config.config_file_path).parent / "FAIL").exists():
        raise RuntimeError("a build that stops before it writes its pages")
    return output
"""

DIRTY_AFTER_A_FAILED_BUILD = (
    SERVE_REBUILD
    + r"""
logging.getLogger("mkdocs").setLevel(logging.CRITICAL)

def attempt():
    try:
        rebuild(dirty=True)
    except Exception as err:
        return type(err).__name__
    return "built"

page = root / "site" / "page" / "index.html"
done = [attempt()]
model = root / "src" / "model.py"
model.write_text(model.read_text() + "\n\ndef caller(X, g, b):\n    return ops.layer_norm_forward(X, g, b)\n")
(root / "FAIL").write_text("")
done.append(attempt())
(root / "FAIL").unlink()
done.append(attempt())
print(json.dumps([done, "model.caller" in page.read_text()]))
plugins.on_shutdown()
"""
)


def test_a_dirty_serve_after_a_build_that_stopped_builds_every_page_again(make_project):
    """A build that stops after converting a page and before writing it must not leave that page's new state
    taken for written: the next dirty build writes it."""
    from .conftest import FWD_ENTRY

    root = make_project(
        {
            "mkdocs.yml": MKDOCS_YML + "hooks:\n  - failing_hook.py\n",
            "failing_hook.py": FAILING_HOOK,
            "docs/page.md": FWD_ENTRY,
        }
    )
    assert run_cli(root, "relock") == 0

    [(done, shows_the_new_caller)] = run_script(DIRTY_AFTER_A_FAILED_BUILD, root)

    assert done == ["built", "RuntimeError", "built"]
    assert shows_the_new_caller


# One build as `mkdocs build` makes it, then one as the first of `mkdocs serve`; for each, the recordings the
# build had read once it was done and its background work ended.
READ_BACK = r"""
import json, logging, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config

root = Path(sys.argv[1])
logging.getLogger("mkdocs").setLevel(logging.ERROR)
read_back = {}
for command in ("build", "serve"):
    config = load_config(config_file=str(root / "mkdocs.yml"), site_dir=str(root / "site"))
    config.plugins.on_startup(command=command, dirty=False)
    build(config, serve_url="http://127.0.0.1:8000/" if command == "serve" else None)
    session = config.plugins["docs_hooks"].session
    session.build.await_background()
    read_back[command] = [rec.target for rec in session.build.workers.recorder.recordings()]
    config.plugins.on_shutdown()
print(json.dumps(read_back))
"""


def test_serve_reads_back_the_recordings_of_the_pages_it_kept_once_a_build_is_done(make_project):
    """A rebuild after a prose edit then finds the call graph made (``Build.warm_up``); ``mkdocs build``
    ends instead, and reads nothing it does not show."""
    nav = "  - Forward: page.md\n  - Backward: b.md\n"
    root = make_project(
        {
            "tests/test_dynamic.py": DYNAMIC_TEST,
            "docs/page.md": EXAMPLE_PAGE,
            "docs/b.md": BACKWARD_PAGE,
            "mkdocs.yml": MKDOCS_YML.replace("  - Layer norm: page.md\n", nav),
        }
    )
    assert run_cli(root, "relock") == 0
    assert mkdocs_build(root).returncode == 0  # every page rendered and kept

    assert run_script(READ_BACK, root) == [{"build": [], "serve": ["tests.test_dynamic.test_dynamic"]}]


def _verbose_build(root, site: str) -> str:
    """The log of ``mkdocs build -v`` of the project at ``root`` into ``site``, which must succeed."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-v", "-f", str(root / "mkdocs.yml"), "-d", str(root / site)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_under_material_the_source_pages_share_one_rendering_of_their_navigation_and_are_the_pages_material_makes(
    make_project,
):
    """The same site with a custom_dir that overrides one of the templates the navigation is made from (with a
    copy of Material's own, so the pages come out the same) renders each source page's navigation itself."""
    import material

    material_yml = MKDOCS_YML.replace("name: mkdocs", "name: material")
    page = SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")
    root = make_project({"mkdocs.yml": material_yml, "pyproject.toml": ALL_SOURCE_PAGES, "docs/page.md": page})
    shared = _verbose_build(root, "site-shared")
    logo = (Path(material.__file__).parent / "templates/partials/logo.html").read_text(encoding="utf-8")
    (root / "overrides/partials").mkdir(parents=True)
    (root / "overrides/partials/logo.html").write_text(logo, encoding="utf-8")
    (root / "mkdocs.yml").write_text(material_yml.replace("name: material", "name: material\n  custom_dir: overrides"))
    own = _verbose_build(root, "site-own")

    source_pages = sorted(
        p.relative_to(root / "site-shared") for p in (root / "site-shared/source").rglob("index.html")
    )
    assert len(source_pages) == 5  # src/ops.py, src/model.py and the three files of tests/
    assert "docs_hooks: the site navigation of 5 source pages rendered 1 time(s)" in shared
    assert "docs_hooks: the site navigation of" not in own
    for rel in source_pages:
        assert (root / "site-shared" / rel).read_bytes() == (root / "site-own" / rel).read_bytes(), rel
    assert 'class="md-nav__link"' in (root / "site-shared" / source_pages[0]).read_text(encoding="utf-8")


# Builds the site twice in one process, as mkdocs serve does, with a sentence of docs/page.md edited before the
# second build; prints how many times each build resolved a page (core.planned.plan_page), and which pages.
PLANS = (
    SERVE_REBUILD
    + r"""
from docs_hooks.core import planned

resolved = []
resolve = planned.plan_page
planned.plan_page = lambda page, *args: resolved.append(page.path) or resolve(page, *args)
for edit in range(2):
    if edit:
        page = root / "docs" / "page.md"
        page.write_text(page.read_text() + "\nOne more sentence.\n")
    rebuild()
    print(json.dumps(sorted(resolved)), flush=True)
    resolved.clear()
plugins.on_shutdown()
"""
)


def test_a_build_resolves_each_page_once_and_after_a_prose_edit_only_that_page(make_project):
    """A page resolved when MkDocs hands over the files is the text the extension is handed when MkDocs
    converts it (the front matter left out, a source page's too), so it is not resolved a second time."""
    root = make_project(
        {
            "mkdocs.yml": MKDOCS_YML,
            "pyproject.toml": ALL_SOURCE_PAGES,
            "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)"),
        }
    )

    first, after_edit = run_script(PLANS, root)

    sources = [
        f"docs/source/{p}.md"
        for p in ("src/model.py", "src/ops.py", "tests/__init__.py", "tests/test_model.py", "tests/test_ops.py")
    ]
    assert first == sorted(["docs/page.md", *sources])
    assert after_edit == ["docs/page.md"]


# An author's session on a project shaped unlike this repository's: each edit is made, the site rebuilt, and the
# site compared, file by file, with what a first build in a fresh process writes from the same files and an empty
# cache. A cached page, a recording, a line map or a dirty build's choice that outlived what it was made from
# shows as a difference. The site is rebuilt as `mkdocs serve` (argv[2] "plain") or `mkdocs serve --dirty`
# ("dirty") rebuild it, in one process, or by a new process after every second edit from the cache the builds
# before it left ("restart": serve started again, or `mkdocs build`, after a pull). MkDocs keeps one plugin object
# per process (on_startup), so each serve has a process of its own; the three run side by side, and the dirty one
# makes each state's fresh build (``cold``) for all of them.
SERVE_EDITS = (
    SERVE_REBUILD
    + r"""
import hashlib, re, shutil, subprocess, time

mode, cold, edits = sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])
dirty = mode == "dirty"
logging.getLogger("mkdocs").setLevel(logging.CRITICAL)
URL = "http://127.0.0.1:8000/"

def rebuilt():
    # Whether the build succeeded: one that stops (a file of the code that does not parse) is reported by
    # mkdocs serve, which goes on serving and builds again after the next edit.
    if mode == "restart":
        args = [sys.executable, "-c", FRESH, str(root), str(root / "site")]
        return subprocess.run(args, cwd=root, stderr=subprocess.DEVNULL).returncode == 0
    time.sleep(0.02)  # MkDocs' dirty build tells a page changed from the times of its file and its HTML
    try:
        rebuild(dirty=dirty)
    except Exception:
        return False
    return True

FRESH = '''
import logging, sys
from pathlib import Path
from mkdocs.commands.build import build
from mkdocs.config import load_config
logging.getLogger("mkdocs").setLevel(logging.CRITICAL)
config = load_config(config_file=str(Path(sys.argv[1]) / "mkdocs.yml"), site_dir=sys.argv[2])
config.plugins.on_startup(command="serve", dirty=False)
build(config, serve_url="%s")
config.plugins.on_shutdown()
''' % URL

def state():
    # The project's files as they are now, digested: an edit undone comes back to a state built before.
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not {".cache", "site", "__pycache__", "node_modules"} & set(rel.parts):
            h.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]

def fresh(key):
    # The project as it is now, copied without its cache and site, built once in a fresh process (started now,
    # waited for by ``done``, which gives None when that build stops): the serve's rebuild runs meanwhile. The
    # dirty run makes these builds, one per state of the files, and writes "made" or "failed" once it has waited
    # for one; the other runs, started beside it, wait for those of each state they come to.
    site, project = cold / key / "site", cold / key / "project"
    made, failed = cold / key / "made", cold / key / "failed"
    if not dirty or made.exists() or failed.exists():
        def waited():
            waiting = time.monotonic()
            while not (made.exists() or failed.exists()):
                assert time.monotonic() - waiting < 300, f"the dirty run made no fresh build of {key}"
                time.sleep(0.05)
            return files(site, project) if made.exists() else None
        return waited
    shutil.copytree(root, project, ignore=shutil.ignore_patterns(".cache", "site", "__pycache__", "node_modules"))
    (project / "node_modules").symlink_to((root / "node_modules").resolve(), target_is_directory=True)
    args = [sys.executable, "-c", FRESH, str(project), str(site)]
    run = subprocess.Popen(args, cwd=project, stderr=subprocess.DEVNULL)

    def done():
        if run.wait() != 0:
            failed.write_text("")
            return None
        made.write_text("")
        return files(site, project)

    return done

def files(site, project):
    # Every file of the site but the sitemap (its dates), each page without the time it was built (MkDocs'
    # theme prints it) and with the project's folder named alike (pytest's report of a test that cannot be
    # imported names its file); under --dirty the search index holds only the pages the build converted, as with
    # MkDocs alone, and is left out.
    out = {}
    for path in site.rglob("*"):
        rel = path.relative_to(site).as_posix()
        if path.is_file() and not rel.startswith("sitemap") and not (dirty and rel == "search/search_index.json"):
            text = re.sub(rb"Build Date UTC : [^<]*", b"", path.read_bytes())
            out[rel] = text.replace(str(project).encode(), b"<project>")
    return out

def differ(a, b):
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))

made = fresh(state())
assert rebuilt()
before = made()
print(json.dumps({"edit": "first build", "differ": differ(files(root / "site", root), before), "changed": []}), flush=True)
for n, (label, rel, old, new) in enumerate(edits, 1):
    path = root / rel
    if old is None:  # a file made
        path.write_text(new, encoding="utf-8")
    elif new is None:  # a file taken away
        path.unlink()
    else:
        text = path.read_text(encoding="utf-8")
        assert old in text, (label, old)
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
    if mode == "restart" and n % 2 and n < len(edits):  # a new process after every second edit: two at a time
        print(json.dumps({"edit": label, "skipped": True}), flush=True)
        continue
    made = fresh(state())
    step = {"edit": label, "built": rebuilt()}
    after = made()
    step["fresh build"] = after is not None
    if step["built"] and after is not None:
        step.update(differ=differ(files(root / "site", root), after), changed=differ(before, after))
        before = after
    print(json.dumps(step), flush=True)
if plugins is not None:
    plugins.on_shutdown()
"""
)

# Each edit: (what it is, file, text, replaced by); a file is made with no text to replace (None), taken away with
# no replacement (None).
TYPO = ("a typo", "layers.py", "    def forward(self, X):\n        mu", "    def forward(self, X)\n        mu")
GAMMA = ("a value the example shows", "layers.py", "self.gamma = np.ones(d)", "self.gamma = np.full(d, 2.0)")
BROKEN = ("an equation's line broken", "layers.py", "Xhat = (X - mu) * s", "Xhat = s * (X - mu)")
# Its tests then fail, and pytest's report of them, on the page, names a Linear object by its address (Python's repr).
RENAMED = (
    "a documented function renamed",
    "layers.py",
    "    def forward(self, X):\n        self.X",
    "    def apply(self, X):\n        self.X",
)


def undone(label: str, edit: tuple) -> tuple:
    """The edit taken back."""
    return (label, edit[1], edit[3], edit[2])


# The edits of examples/layers: the config a dict, a model run, tests as unittest classes beside the code, read
# and recorded.
LAYERS_EDITS = [
    ("prose", "docs/layer-norm.md", "Normalises each row", "Normalises every row"),
    ("a test's input", "test_layers.py", "[1.0, 2.0, 3.0, 6.0]", "[1.0, 2.0, 3.0, 7.0]"),
    ("a comment", "layers.py", "keepdims=True)  # (T, 1)\n", "keepdims=True)  # (T, 1), the row means\n"),
    ("a docstring", "layers.py", '"""Each row normalised', '"""Every row normalised'),
    (
        "a new caller",
        "model.py",
        "\n\ndef build(cfg):",
        "\n\ndef normalise(X):\n    return LayerNorm(X.shape[-1]).forward(X)\n\n\ndef build(cfg):",
    ),
    TYPO,
    undone("the typo mended", TYPO),
    (
        "lines moved",
        "layers.py",
        "\n\nclass LayerNorm(Layer):",
        "\n\nEPS = 1e-5  # a constant\n\n\nclass LayerNorm(Layer):",
    ),
    ("a config value", "config.py", '"d_hidden": 8', '"d_hidden": 6'),
    ("the model run", "docs/examples/model_run.py", "return dict(CONFIG)", 'return {**CONFIG, "d_hidden": 10}'),
    GAMMA,
    undone("that value undone", GAMMA),
    BROKEN,
    undone("mended", BROKEN),
    RENAMED,
    undone("its name given back", RENAMED),
    ("the helper of central differences", "gradcheck.py", "h=1e-6", "h=1e-3"),
    (
        "a page added",
        "docs/more.md",
        None,
        "# More\n\n```trace-entry\ntitle: ReLU\nfunction: layers.ReLU.forward\nstatus: implemented\n```\n",
    ),
    (
        "the page put in the navigation",
        "mkdocs.yml",
        "  - The model: model.md\n",
        "  - The model: model.md\n  - More: more.md\n",
    ),
    ("a module taken away", "config.py", "", None),
    (
        "put back",
        "config.py",
        None,
        '"""The settings."""\n\nCONFIG = {"seq_len": 3, "d_model": 4, "d_hidden": 8, "eps": 1e-5, "seed": 0}\n',
    ),
]

# The edits of examples/nnpkg: a package under the project root, its tests measured by the coverage run.
NNPKG_EDITS = [
    (
        "a test added",
        "tests/test_activations.py",
        "\n\ndef test_relu_worked_example():",
        "\n\ndef test_sigmoid_is_a_half_at_zero():\n    assert sigmoid(np.zeros((1, 1)))[0, 0] == 0.5\n"
        "\n\ndef test_relu_worked_example():",
    ),
    (
        "a comment in a test",
        "tests/test_activations.py",
        "    y = sigmoid(x)\n",
        "    y = sigmoid(x)  # the logistic\n",
    ),
    ("a call changed", "nnpkg/deep_learning/activations.py", "s = self.__call__(x)", "s = 1 / (1 + np.exp(-x))"),
    (
        "the test taken out",
        "tests/test_activations.py",
        "def test_sigmoid_is_a_half_at_zero():",
        "def _sigmoid_is_a_half_at_zero():",
    ),
]


def served_like_a_fresh_build(tmp_path: Path, example: str, edits: list) -> dict[str, list[dict]]:
    """Each way of rebuilding's report, edit by edit (see SERVE_EDITS): ``serve --dirty``, which makes the fresh
    builds, ``serve`` and a new process after every second edit, side by side."""
    from .conftest import REPO

    def start(mode: str) -> subprocess.Popen:
        root = tmp_path / mode
        ignored = shutil.ignore_patterns(".cache", "site", "__pycache__")
        shutil.copytree(REPO / "examples" / example, root, ignore=ignored)
        (root / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
        args = [sys.executable, "-c", SERVE_EDITS, str(root), mode, str(tmp_path / "fresh"), json.dumps(edits)]
        env = {**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"}
        return subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def report(run: subprocess.Popen) -> list[dict]:
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, out + err
        return [json.loads(line) for line in out.splitlines() if line.startswith(("{", "["))]

    started = {mode: start(mode) for mode in ("dirty", "plain", "restart")}
    reports = {mode: report(run) for mode, run in started.items()}
    return reports


def test_after_each_kind_of_edit_serve_and_a_restarted_build_write_the_site_a_fresh_build_writes(tmp_path):
    """A served site is never stale: after each edit an author makes (prose, a test's input, a comment, a
    docstring, a typo that stops the build and its mending, a new caller, lines moved, the config, the model run,
    an edit undone, an equation broken and mended, a documented function renamed and its name given back, the
    helper of central differences, a page added and put in the navigation, a module taken away and put back),
    every page of ``mkdocs serve``, of ``mkdocs serve --dirty``, and of a build started anew from the cache the
    builds before it left, is the page a first build in a fresh process writes, with no cache."""
    reports = served_like_a_fresh_build(tmp_path, "layers", LAYERS_EDITS)

    for mode, steps in reports.items():
        assert [step["edit"] for step in steps] == ["first build"] + [edit[0] for edit in LAYERS_EDITS]
        assert {step["edit"]: step["differ"] for step in steps if step.get("differ")} == {}, mode
        built = [step for step in steps if not step.get("skipped")]
        stopped = [(step["edit"], step["built"], step["fresh build"]) for step in built if "differ" not in step]
        assert stopped == [("a typo", False, False)], mode  # the one build that stops, and only in all of them
    changed = {step["edit"]: set(step.get("changed", ())) for step in reports["dirty"]}
    # Each edit changed what it stands for, in the fresh builds: the comparison above is not of sites alike.
    assert (
        "layer-norm/index.html" in changed["prose"] & changed["a test's input"] & changed["a value the example shows"]
    )
    assert "source/layers.py/index.html" in changed["a comment"] & changed["a docstring"] & changed["lines moved"]
    assert "traceability/index.html" in changed["a new caller"]
    assert "linear/index.html" in changed["a config value"] & changed["the model run"]
    assert changed["that value undone"] == changed["a value the example shows"]
    assert "layer-norm/index.html" in changed["an equation's line broken"] & changed["mended"]
    assert "layer-norm/index.html" in changed["the helper of central differences"]
    assert "linear/index.html" in changed["a documented function renamed"] & changed["its name given back"]
    assert {"more/index.html", "traceability/index.html"} <= changed["a page added"]
    assert {"index.html", "source/layers.py/index.html"} <= changed["the page put in the navigation"]  # every page
    assert "configuration/index.html" in changed["a module taken away"] & changed["put back"]


def test_after_edits_of_the_tests_serve_and_a_restarted_build_write_the_site_a_fresh_build_writes(tmp_path):
    """The same for a package whose tests the coverage run measures: a test added, a comment in a test, a call
    changed, a test taken out."""
    reports = served_like_a_fresh_build(tmp_path, "nnpkg", NNPKG_EDITS)

    for mode, steps in reports.items():
        assert [step["edit"] for step in steps] == ["first build"] + [edit[0] for edit in NNPKG_EDITS]
        assert all(step.get("built", True) and step.get("fresh build", True) for step in steps), mode
        assert len([step for step in steps if "differ" in step]) == (3 if mode == "restart" else 5), mode
        assert {step["edit"]: step["differ"] for step in steps if step.get("differ")} == {}, mode
    changed = {step["edit"]: set(step["changed"]) for step in reports["dirty"]}
    assert (
        "activations/index.html" in changed["a test added"] & changed["a call changed"] & changed["the test taken out"]
    )

"""The command line's ``impact`` (in a throwaway git repository) and the MkDocs adapter.

``impact REV`` resolves today's pages against the code at REV and now, and lists
the references whose code differs. The adapter is exercised with a real
``mkdocs build --strict`` of a tiny site that names the plugin under ``plugins:``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import LOCK, MEAN_PAGE, OPS, expand_page, run_cli

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

IMPACT_PAGE = (
    "The mean [[ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)]], "
    "the scale [[ops.layer_norm_forward: s = 1.0 / np.sqrt(var + epsilon)]],\n"
    "the shift [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]].\n"
)


def git(root, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


@pytest.fixture
def committed(make_project):
    """A project committed to a fresh git repository."""
    root = make_project({"docs/page.md": IMPACT_PAGE, ".gitignore": "node_modules\n"})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def impact(root, capsys, rev: str = "HEAD", *options: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run_cli(root, "impact", rev, *options)
    out, err = capsys.readouterr()
    return code, out, err


def test_impact_lists_changed_and_gone_references_only(committed, capsys):
    edited = (
        OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) + 0.0")
        .replace("    dbeta = dY.sum(axis=0)\n", "")
        .replace("\n\ndef layer_norm_forward", "\n\nEPS = 1e-5\n\n\ndef layer_norm_forward")
    )  # moves it all
    (committed / "src/ops.py").write_text(edited)

    code, out, err = impact(committed, capsys)

    assert (code, err) == (0, "")
    assert out == (
        "Pages whose referenced code changed since HEAD:\n"
        "\n"
        "- `docs/page.md`: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): "
        "code changed since HEAD\n"
        "- `docs/page.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): no longer resolves\n"
    )
    assert "s = 1.0" not in out  # moved, not changed


def test_impact_lists_references_new_since_the_revision(committed, capsys):
    (committed / "src/ops.py").write_text(
        OPS.replace("    return dX, dgamma, dbeta", "    dX = dX + 0\n    return dX, dgamma, dbeta")
    )
    (committed / "docs/page.md").write_text(IMPACT_PAGE + "And [[ops.layer_norm_backward: dX = dX + 0]].\n")

    code, out, _ = impact(committed, capsys)

    assert code == 0
    assert out == (
        "Pages whose referenced code changed since HEAD:\n"
        "\n"
        "- `docs/page.md`: inline | ops.layer_norm_backward: dX = dX + 0: new since HEAD\n"
    )


def test_impact_with_nothing_changed(committed, capsys):
    assert impact(committed, capsys) == (0, "No page references code that changed since HEAD.\n", "")
    assert impact(committed, capsys, "HEAD", "--fail-on-change") == (
        0,
        "No page references code that changed since HEAD.\n",
        "",
    )


def test_impact_with_fail_on_change_exits_1_when_it_lists_something(committed, capsys):
    (committed / "src/ops.py").write_text(OPS.replace("    dbeta = dY.sum(axis=0)\n", "    dbeta = dY.sum(0)\n"))
    (committed / "docs/other.md").write_text("The shift, now: [[ops.layer_norm_backward: dbeta = dY.sum(0)]].\n")

    assert impact(committed, capsys)[0] == 0  # without the option: the list only, for a comment
    code, out, err = impact(committed, capsys, "HEAD", "--fail-on-change")

    assert code == 1
    assert out == (
        "Pages whose referenced code changed since HEAD:\n"
        "\n"
        "- `docs/other.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(0): new since HEAD\n"
        "- `docs/page.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): no longer resolves\n"
    )
    assert err == "docs_hooks impact: 2 reference(s) on 2 page(s) changed since HEAD (--fail-on-change)\n"


def test_impact_of_an_unknown_revision_names_it(committed, capsys):
    code, out, err = impact(committed, capsys, "no-such-rev")

    assert (code, out) == (2, "")
    assert err.startswith("error: cannot read revision 'no-such-rev': fatal: ")


@pytest.mark.parametrize("rev", ["--output={out}", "-o{out}"])
def test_impact_refuses_a_revision_that_starts_with_a_dash(committed, capsys, tmp_path, rev):
    out_file = tmp_path / "written-by-git"
    rev = rev.format(out=out_file)
    capsys.readouterr()

    code = run_cli(committed, "impact", "--", rev)
    out, err = capsys.readouterr()

    assert (code, out) == (2, "")
    assert err == (
        f"error: '{rev}' is not a revision (it starts with '-'); name a branch, tag or commit, e.g. origin/main\n"
    )
    assert not out_file.exists()


def test_impact_gives_git_the_revision_after_end_of_options(committed, capsys, monkeypatch):
    from docs_hooks.core import review

    calls = []
    run = subprocess.run
    monkeypatch.setattr(review.subprocess, "run", lambda args, **kw: calls.append(args) or run(args, **kw))

    assert impact(committed, capsys)[0] == 0
    [archive] = [c for c in calls if c[:2] == ["git", "archive"]]
    assert archive[archive.index("--end-of-options") + 1] == "HEAD"


# ------------------------------------------------------------------ permanent links

UNPINNED = '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\n'


ENTRY_PAGE = "```trace-entry\ntitle: Forward\nfunction: ops.layer_norm_forward\nstatus: implemented\n```\n"


def test_links_point_at_the_current_commit(make_project):
    root = make_project({"pyproject.toml": UNPINNED, "docs/page.md": ENTRY_PAGE})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, env=GIT_ENV, capture_output=True, text=True, check=True
    ).stdout.strip()

    markdown = expand_page(root).markdown

    assert len(head) == 40
    assert f'<a href="https://example.com/repo/blob/{head}/src/ops.py#L6-L15">GitHub</a>' in markdown


def test_links_fall_back_to_main_outside_git(make_project):
    root = make_project({"pyproject.toml": UNPINNED, "docs/page.md": ENTRY_PAGE})

    markdown = expand_page(root).markdown

    assert '<a href="https://example.com/repo/blob/main/src/ops.py#L6-L15">GitHub</a>' in markdown


def test_a_line_reference_links_to_its_source_page_and_the_source_page_links_back(make_project):
    text = (
        SITE_PAGE.format(mean="mu = X.mean(") + "\n" + ENTRY_PAGE.replace("title: Forward", "title: Layer norm forward")
    )
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": text})
    assert run_cli(root, "relock") == 0

    result = mkdocs_build(root)

    assert result.returncode == 0, result.stdout + result.stderr
    page = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert '<a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward"><code>ops.py:8</code></a>' in page
    source = (root / "site/source/src/ops.py/index.html").read_text(encoding="utf-8")
    assert '<tr id="L8"' in source and '<a href="#L8">8</a>' in source
    cited = source.split('<tr id="L6"', 1)[1].split("</tr>", 1)[0]  # the function's first line: cited by its entry
    assert (
        'class="trace-src-cited"' in cited
        and '<a href="../../../page/#layer-norm-forward">Layer norm forward</a>' in cited
    )
    assert "docs-hooks-source:" not in page + source


# ------------------------------------------------------------------ the MkDocs adapter

MKDOCS_YML = """\
site_name: Tiny
docs_dir: docs
theme:
  name: mkdocs
plugins:
  - search
  - docs_hooks
markdown_extensions:
  - attr_list
  - md_in_html
  - pymdownx.superfences
  - pymdownx.highlight
nav:
  - Layer norm: page.md
"""

SITE_PAGE = """\
---
title: Layer norm
---

# Layer norm

The mean is taken at [[ops.layer_norm_forward: {mean}]].
"""


def mkdocs_build(root) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(root / "site")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_strict_build_fails_on_a_broken_reference_and_names_page_and_line(make_project):
    # The front matter is stripped by MkDocs before the hook sees the page: the line must still be the file's.
    root = make_project({"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.sum()")})

    result = mkdocs_build(root)

    log = result.stdout + result.stderr
    assert result.returncode == 1, log
    assert (
        "WARNING -  docs/page.md:7: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; did you mean "
        "'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code.\n"
    ) in log
    assert "Aborted with 1 warnings in strict mode!" in log


def test_strict_build_of_a_reviewed_site_succeeds_then_fails_when_the_code_changes(make_project, capsys):
    root = make_project(
        {"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")}
    )
    assert run_cli(root, "relock") == 0

    clean = mkdocs_build(root)

    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "WARNING" not in clean.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert ('<a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward"><code>ops.py:8</code></a>') in html

    (root / "src/ops.py").write_text(
        OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) * 2")
    )
    changed = mkdocs_build(root)

    assert changed.returncode == 1
    assert (
        "WARNING -  docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): changed "
        "since reviewed. Old text: 'mu = X.mean(axis=-1, keepdims=True)'. New text: "
        "'mu = X.mean(axis=-1, keepdims=True) * 2'. Review the page against the new code, then run 'python -m docs_hooks relock'\n"
    ) in changed.stdout + changed.stderr


# ------------------------------------------------------------------ check, relock and impact stop after resolving

RICH_PAGE = """\
# Layer norm

```trace-entry
title: Layer norm forward
function: ops.layer_norm_forward
status: implemented
spec: [eq:ln-mean]
```

```trace-equation
id: ln-mean
title: Mean of one row
tex: \\mu_t = \\frac{1}{d} \\sum_i X_{ti}
code: mu = X.mean(axis=-1, keepdims=True)
```

```trace-example
test: tests/test_ops.py::test_rows_have_zero_mean
title: One matrix
show:
  - {label: Mean, code: mu}
  - {label: Centred, code: X - mu}
```

```trace-shapes
names:
  - {ref: "model.Block.norm: return layer_norm_forward(", label: Before the branch}
```

The shift is [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]].
"""

OTHER_PAGE = "# Backward\n\nThe shift is [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]].\n"

RICH_PYPROJECT = (
    '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\n'
    'spec_source = "spec/model.typ"\nspec_pdf = "spec/model.pdf"\n'
)

RICH_SPEC = '#set math.equation(numbering: "(1)")\n\n= Normalisation\n\n$ mu_t = 1/d sum_i X_(t i) $ <eq:ln-mean>\n'


@pytest.fixture
def rich(make_project, capsys):
    """A committed and reviewed project whose page cites the spec and shows an example and shapes."""
    root = make_project(
        {
            "pyproject.toml": RICH_PYPROJECT,
            "spec/model.typ": RICH_SPEC,
            "docs/page.md": RICH_PAGE,
            "docs/other.md": OTHER_PAGE,
            ".gitignore": "node_modules\n.cache\n",
        }
    )
    assert run_cli(root, "relock") == 0
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    capsys.readouterr()
    return root


def test_impact_head_with_nothing_changed_lists_nothing_on_a_page_citing_the_spec_and_showing_evidence(rich, capsys):
    assert impact(rich, capsys) == (0, "No page references code that changed since HEAD.\n", "")


def test_impact_of_a_one_statement_change_lists_exactly_the_references_to_that_statement(rich, capsys):
    (rich / "src/ops.py").write_text(OPS.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(axis=0) * 1.0"))

    code, out, err = impact(rich, capsys)

    assert (code, err) == (0, "")
    assert out == (
        "Pages whose referenced code changed since HEAD:\n"
        "\n"
        "- `docs/other.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): code changed since HEAD\n"
        "- `docs/page.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): code changed since HEAD\n"
    )


def test_impact_of_a_change_inside_a_shown_expression_names_the_example(rich, capsys):
    (rich / "src/ops.py").write_text(
        OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) + 0.0")
    )

    code, out, _ = impact(rich, capsys)

    assert code == 0
    assert "- `docs/page.md`: equation ln-mean | mu = X.mean(axis=-1, keepdims=True): code changed since HEAD\n" in out
    assert "entry layer-norm-forward | ops.layer_norm_forward: code changed since HEAD" in out
    assert "docs/other.md" not in out


PROCESS_WATCH = """\
import sys
started = []
def watch(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system"):
        started.append(repr(args[1] if event == "subprocess.Popen" else args))
sys.addaudithook(watch)
from docs_hooks import cli
code = cli.main(["--root", sys.argv[1], sys.argv[2]])
print("STARTED", started)
sys.exit(code)
"""


@pytest.mark.parametrize("command", ["check", "relock"])
def test_check_and_relock_on_a_cold_cache_start_no_process_but_git(rich, command):
    import shutil

    shutil.rmtree(rich / ".cache", ignore_errors=True)

    result = subprocess.run(
        [sys.executable, "-c", PROCESS_WATCH, str(rich), command], cwd=rich, capture_output=True, text=True, timeout=300
    )

    assert result.returncode == 0, result.stdout + result.stderr
    started = result.stdout.split("STARTED ", 1)[1].strip()
    assert started.startswith("[") and all(part.startswith("['git',") for part in eval(started)), started
    assert not (rich / ".cache/docs_hooks/recordings.sqlite3").exists()
    assert not (rich / ".cache/docs_hooks/katex.sqlite3").exists()


def test_a_full_build_of_the_same_project_does_start_workers(rich):
    """The other direction: the same watch sees the recorder and KaTeX of a real build (so the test above can fail)."""
    code = PROCESS_WATCH.replace(
        'from docs_hooks import cli\ncode = cli.main(["--root", sys.argv[1], sys.argv[2]])',
        "from docs_hooks.core.site import expand_site\nfrom docs_hooks.base.settings import "
        "load_settings\nexpand_site(load_settings(sys.argv[1]))\ncode = 0",
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(rich), "build"], cwd=rich, capture_output=True, text=True, timeout=300
    )

    assert result.returncode == 0, result.stdout + result.stderr
    started = eval(result.stdout.split("STARTED ", 1)[1].strip())
    assert any("node" in part and "katex_render.js" in part for part in started), started
    assert any("docs_hooks.run.record_child" in part for part in started), started


def test_check_on_a_cold_cache_still_refuses_a_spec_label_the_specification_lacks(rich, check):
    import shutil

    shutil.rmtree(rich / ".cache", ignore_errors=True)
    (rich / "docs/page.md").write_text(RICH_PAGE.replace("spec: [eq:ln-mean]", "spec: [eq:ln-mena]"))

    code, err, _ = check(rich)

    assert code == 1
    assert err[0].startswith("docs/page.md:3: unknown spec label 'eq:ln-mena': no numbered equation in ")
    assert "eq:ln-mean" in err[0]  # the closest label is suggested


def test_check_prints_each_problem_and_a_count_and_exits_1(make_project, check):
    root = make_project({"docs/page.md": "# Layer norm\n\nThe mean: [[ops.layer_norm_forward: mu = X.sum()]].\n"})

    code, err, out = check(root)

    assert (code, out) == (1, "")
    assert err == [
        "docs/page.md:3: reference 'ops.layer_norm_forward: mu = X.sum()': no statement of "
        "ops.layer_norm_forward (ops.py:6-15) matches 'mu = X.sum()'; "
        "did you mean 'mu = X.mean(axis=-1, keepdims=True)' (ops.py:8)? Copy the statement's text from the code.",
        "docs_hooks check: 1 problem(s)",
    ]


def test_relock_refuses_a_page_with_a_problem_and_keeps_the_lock_byte_for_byte(make_project, relock):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)
    before = (root / LOCK).read_bytes()

    (root / "docs/page.md").write_text(MEAN_PAGE + "\nAnd [[ops.layer_norm_forward: keepdims=True]].\n")
    (root / "src/ops.py").write_text(
        OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) + 0")
    )
    _, out, err = relock(root, expect=1)

    assert out == ""
    assert err.splitlines() == [
        "docs/page.md:9: reference 'ops.layer_norm_forward: keepdims=True': 'keepdims=True' matches 2 statements "
        "of ops.layer_norm_forward (ops.py:8, ops.py:9); quote more of the statement so that exactly one matches.",
        "relock: 1 problem(s) in the pages; the lock was not changed. Fix them, then run relock again.",
    ]
    assert (root / LOCK).read_bytes() == before
    assert sorted(p.name for p in (root / "docs").iterdir()) == ["page.md", "trace.lock"]  # no temp file left

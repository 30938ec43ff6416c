"""The command line's ``impact`` (in a throwaway git repository) and the MkDocs adapter.

``impact REV`` resolves today's pages against the code at REV and now, and lists
the references whose code differs. The adapter is exercised with a real
``mkdocs build --strict`` of a tiny site that names docs_hooks/hooks.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import OPS, REPO, expand_page, run_cli

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


def impact(root, capsys, rev: str = "HEAD") -> tuple[int, str, str]:
    capsys.readouterr()
    code = run_cli(root, "impact", rev)
    out, err = capsys.readouterr()
    return code, out, err


def test_impact_lists_changed_and_gone_references_only(committed, capsys):
    edited = (OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) + 0.0")
              .replace("    dbeta = dY.sum(axis=0)\n", "")
              .replace("\n\ndef layer_norm_forward", "\n\nEPS = 1e-5\n\n\ndef layer_norm_forward"))  # moves it all
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
    (committed / "src/ops.py").write_text(OPS.replace("    return dX, dgamma, dbeta", "    dX = dX + 0\n    return dX, dgamma, dbeta"))
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
    assert err == (f"error: '{rev}' is not a revision (it starts with '-'); name a branch, tag or commit, "
                   "e.g. origin/main\n")
    assert not out_file.exists()


def test_impact_gives_git_the_revision_after_end_of_options(committed, capsys, monkeypatch):
    from docs_hooks import cli

    calls = []
    run = subprocess.run
    monkeypatch.setattr(cli.subprocess, "run", lambda args, **kw: calls.append(args) or run(args, **kw))

    assert impact(committed, capsys)[0] == 0
    [archive] = [c for c in calls if c[:2] == ["git", "archive"]]
    assert archive[archive.index("--end-of-options") + 1] == "HEAD"


# ------------------------------------------------------------------ permanent links

UNPINNED = '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\n'


def test_links_point_at_the_current_commit(make_project):
    root = make_project({"pyproject.toml": UNPINNED, "docs/page.md": "See [[ops.layer_norm_forward: mu = X.mean(]].\n"})
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, env=GIT_ENV, capture_output=True,
                          text=True, check=True).stdout.strip()

    markdown = expand_page(root).markdown

    assert len(head) == 40
    assert f'<a href="https://example.com/repo/blob/{head}/src/ops.py#L8"' in markdown


def test_links_fall_back_to_main_outside_git(make_project):
    root = make_project({"pyproject.toml": UNPINNED, "docs/page.md": "See [[ops.layer_norm_forward: mu = X.mean(]].\n"})

    markdown = expand_page(root).markdown

    assert '<a href="https://example.com/repo/blob/main/src/ops.py#L8"' in markdown


# ------------------------------------------------------------------ the MkDocs adapter

MKDOCS_YML = f"""\
site_name: Tiny
docs_dir: docs
theme:
  name: mkdocs
hooks:
  - {REPO / "docs_hooks" / "hooks.py"}
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
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
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
    root = make_project({"mkdocs.yml": MKDOCS_YML,
                         "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")})
    assert run_cli(root, "relock") == 0

    clean = mkdocs_build(root)

    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "WARNING" not in clean.stderr
    html = (root / "site/page/index.html").read_text(encoding="utf-8")
    assert ('<a href="https://example.com/repo/blob/abc123/src/ops.py#L8" title="ops.layer_norm_forward">'
            "<code>ops.py:8</code></a>") in html

    (root / "src/ops.py").write_text(OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) * 2"))
    changed = mkdocs_build(root)

    assert changed.returncode == 1
    assert (
        "WARNING -  docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): changed "
        "since reviewed. Old text: 'mu = X.mean(axis=-1, keepdims=True)'. New text: "
        "'mu = X.mean(axis=-1, keepdims=True) * 2'. Review the page against the new code, then run 'python -m docs_hooks relock'\n"
    ) in changed.stdout + changed.stderr

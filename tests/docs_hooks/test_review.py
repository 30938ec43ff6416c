"""Tests of docs_hooks.core.review: ``check``, ``relock``, ``impact`` and ``references``, called as functions.

What users rely on: each command makes a static build (pages read, every reference resolved, nothing run or
rendered), prints what it found in the page's terms and returns the exit code: ``check`` 1 when a reference
does not resolve or its code differs from the review lock, and it never writes the lock; ``relock`` writes the
lock from what every page references now and counts what changed; ``impact REV`` lists the references whose
code differs between REV and now, returns 0 (1 with ``fail_on_change`` when the list is not empty), and raises
a TraceError for a revision git cannot read. The command line's own handling (exit code 2 for a TraceError,
``--fail-on-change``) is tested in test_cli.py, the lock's messages in test_lock.py.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core import review
from docs_hooks.core.site import index_for
from docs_hooks.resolve.lock import read_lock

from .conftest import BASE_FILES, BWD_ENTRY, LOCK, MEAN_PAGE, OPS, write_tree
from .test_cli import GIT_ENV

BACKWARD_PAGE = (
    "# Backward\n\n"
    + BWD_ENTRY
    + "\nThe shift is [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]], the scale's gradient\n"
    "[[ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0)]].\n"
)  # the entry on lines 3-7, the shift on line 9, the scale's gradient on line 10


def git(root, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def project(make_project):
    """A project with two pages (not reviewed yet) and its settings."""
    root = make_project({"docs/page.md": MEAN_PAGE, "docs/backward.md": BACKWARD_PAGE})
    return root, load_settings(root)


def outputs(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    return out, err


# ----------------------------------------------------------------------------- references


def test_references_resolve_every_page_and_render_nothing(project):
    root, settings = project

    result = review.references(settings)

    assert sorted(result.pages) == ["docs/backward.md", "docs/page.md"]
    assert result.problems == []
    assert {p: [u.key for u in e.uses] for p, e in result.pages.items()} == {
        "docs/backward.md": [
            "entry layer-norm-backward | ops.layer_norm_backward",
            "inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0)",
            "inline | ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0)",
        ],
        "docs/page.md": [
            "entry layer-norm-forward | ops.layer_norm_forward",
            "inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)",
        ],
    }
    assert all(e.parts == [] for e in result.pages.values())  # resolved only: no page was rendered
    assert not (root / ".cache/docs_hooks/recordings.sqlite3").exists()  # and nothing was recorded


def test_references_against_another_index_resolve_todays_pages_against_that_code(project, tmp_path):
    _, settings = project
    other = write_tree(
        tmp_path / "other",
        {**BASE_FILES, "src/ops.py": OPS.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(axis=0) * 2")},
    )

    now = review.references(settings)
    then = review.references(settings, index_for(settings, other))

    def digests(result):
        return {u.key: u.digest for u in result.pages["docs/backward.md"].uses}

    differ = sorted(k for k in digests(now) if digests(now)[k] != digests(then)[k])
    assert differ == [
        "entry layer-norm-backward | ops.layer_norm_backward",  # the whole function holds the statement
        "inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0)",
    ]


# ----------------------------------------------------------------------------- relock


def test_relock_writes_the_lock_from_what_the_pages_reference_now(project, capsys):
    root, settings = project
    capsys.readouterr()

    assert review.relock(settings) == 0

    out, err = outputs(capsys)
    assert (out, err) == ("relock: 5 reference(s) recorded in docs/trace.lock (5 new or changed, 0 dropped)\n", "")
    locked = read_lock(root / LOCK)
    assert {k: e.digest for k, e in locked.items()} == {
        (u.page, u.key): u.digest for u in review.references(settings).uses
    }


def test_relock_counts_what_changed_and_what_was_dropped(project, capsys):
    root, settings = project
    review.relock(settings)
    capsys.readouterr()

    (root / "src/ops.py").write_text(OPS.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(axis=0) + 0.0"))
    (root / "docs/backward.md").write_text(
        BACKWARD_PAGE.replace("dbeta = dY.sum(axis=0)]]", "dbeta = dY.sum(axis=0) + 0.0]]").replace(
            "the scale's gradient\n[[ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0)]]", "and no more"
        )
    )
    assert review.relock(settings) == 0

    # changed: the entry (its function changed) and the shift's new text; dropped: the old shift and dgamma
    assert outputs(capsys) == (
        "relock: 4 reference(s) recorded in docs/trace.lock (2 new or changed, 2 dropped)\n",
        "",
    )
    assert sorted(json.loads((root / LOCK).read_text())["pages"]["docs/backward.md"]) == [
        "entry layer-norm-backward | ops.layer_norm_backward",
        "inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0) + 0.0",
    ]


def test_relock_records_a_reference_the_page_makes_twice_once(make_project, capsys):
    root = make_project(
        {"docs/page.md": MEAN_PAGE + "\nOnce more: [[ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)]].\n"}
    )
    settings = load_settings(root)
    assert len(review.references(settings).uses) == 3
    capsys.readouterr()

    assert review.relock(settings) == 0

    assert outputs(capsys)[0] == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"
    assert len(read_lock(root / LOCK)) == 2
    assert review.check(settings) == 0  # both places are reviewed by the one entry


def test_relock_with_nothing_changed_rewrites_the_same_lock(project, capsys):
    root, settings = project
    review.relock(settings)
    before = (root / LOCK).read_bytes()
    capsys.readouterr()

    assert review.relock(settings) == 0

    assert outputs(capsys)[0] == "relock: 5 reference(s) recorded in docs/trace.lock (0 new or changed, 0 dropped)\n"
    assert (root / LOCK).read_bytes() == before


# ----------------------------------------------------------------------------- check


def test_check_of_a_reviewed_project_returns_0_and_says_so_on_stdout(project, capsys):
    _, settings = project
    review.relock(settings)
    capsys.readouterr()

    assert review.check(settings) == 0

    assert outputs(capsys) == ("docs_hooks check: every reference resolves and matches the review lock\n", "")


def test_check_of_a_page_whose_code_changed_since_the_lock_returns_1_and_leaves_the_lock_alone(project, capsys):
    root, settings = project
    review.relock(settings)
    locked = (root / LOCK).read_bytes()
    (root / "src/ops.py").write_text(OPS.replace("dgamma = (dY * Xhat).sum(axis=0)", "dgamma = (dY * Xhat).sum(0)"))
    capsys.readouterr()

    assert review.check(settings) == 1

    out, err = outputs(capsys)
    assert out == ""
    assert err.splitlines() == [
        # the page's own problem first: the reference no longer resolves
        "docs/backward.md:10: reference 'ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0)': no statement "
        "of ops.layer_norm_backward (ops.py:18-27) matches 'dgamma = (dY * Xhat).sum(axis=0)'; did you mean "
        "'dgamma = (dY * Xhat).sum(0)' (ops.py:21)? Copy the statement's text from the code.",
        # then the lock: the entry's function changed, and the code the reference was reviewed against is gone
        "docs/backward.md:3: entry layer-norm-backward | ops.layer_norm_backward: changed since reviewed. "
        "Old text: 'dgamma = (dY * Xhat).sum(axis=0)'. New text: 'dgamma = (dY * Xhat).sum(0)'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/backward.md:10: inline | ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0): the reviewed "
        "code is gone. It was: 'dgamma = (dY * Xhat).sum(axis=0)'. Point the reference at the code that replaced "
        "it, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 3 problem(s)",
    ]
    assert (root / LOCK).read_bytes() == locked


# ----------------------------------------------------------------------------- impact

SECOND_OPS = OPS.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(0)").replace(
    "dgamma = (dY * Xhat).sum(axis=0)", "dgamma = (dY * Xhat).sum(0)"
)
SECOND_MODEL = BASE_FILES["src/model.py"] + "\n\ndef unused():\n    return 0\n"  # code no page references
SECOND_PAGE = MEAN_PAGE + "\nThe model is built at [[model.build: cfg = Config(]].\n"  # new reference, old code


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A throwaway git repository with two commits: ``v1`` (tagged), then HEAD, which changes two statements of
    the backward pass (the backward page follows one of them), adds a function to model.py that no page
    references, and a reference to unchanged code on the other page. The work tree is HEAD's."""
    root = write_tree(
        tmp_path_factory.mktemp("impact") / "proj",
        {**BASE_FILES, "docs/page.md": MEAN_PAGE, "docs/backward.md": BACKWARD_PAGE, ".gitignore": ".cache\n"},
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    git(root, "tag", "v1")
    write_tree(
        root,
        {
            "src/ops.py": SECOND_OPS,
            "src/model.py": SECOND_MODEL,
            "docs/page.md": SECOND_PAGE,
            "docs/backward.md": BACKWARD_PAGE.replace("dbeta = dY.sum(axis=0)", "dbeta = dY.sum(0)"),
        },
    )
    git(root, "commit", "-q", "-am", "second")
    return load_settings(root)


IMPACT_SINCE_V1 = [
    "- `docs/backward.md`: entry layer-norm-backward | ops.layer_norm_backward: code changed since {rev}",
    "- `docs/backward.md`: inline | ops.layer_norm_backward: dbeta = dY.sum(0): new since {rev}",
    "- `docs/backward.md`: inline | ops.layer_norm_backward: dgamma = (dY * Xhat).sum(axis=0): no longer resolves",
]


def test_impact_lists_the_references_whose_code_changed_between_two_revisions(history, capsys):
    capsys.readouterr()

    assert review.impact(history, "v1") == 0

    out, err = outputs(capsys)
    assert err == ""
    assert (
        out == "Pages whose referenced code changed since v1:\n\n" + "\n".join(IMPACT_SINCE_V1).format(rev="v1") + "\n"
    )
    # not listed: docs/page.md, whose new reference points at code that did not change, and model.py's new function


def test_impact_of_a_commit_named_by_its_hash_lists_the_same(history, capsys):
    first = git(history.project_root, "rev-list", "--max-parents=0", "HEAD")
    capsys.readouterr()

    assert review.impact(history, first) == 0

    assert outputs(capsys)[0].splitlines()[2:] == [line.format(rev=first) for line in IMPACT_SINCE_V1]


def test_impact_of_the_revision_the_work_tree_holds_lists_nothing(history, capsys):
    capsys.readouterr()

    assert review.impact(history, "HEAD", fail_on_change=True) == 0

    assert outputs(capsys) == ("No page references code that changed since HEAD.\n", "")


def test_impact_with_fail_on_change_returns_1_and_counts_references_and_pages(history, capsys):
    capsys.readouterr()

    assert review.impact(history, "v1", fail_on_change=True) == 1

    out, err = outputs(capsys)
    assert out.splitlines()[2:] == [line.format(rev="v1") for line in IMPACT_SINCE_V1]
    assert err == "docs_hooks impact: 3 reference(s) on 1 page(s) changed since v1 (--fail-on-change)\n"


@pytest.mark.parametrize(
    ("rev", "message"),
    [
        ("v9", "cannot read revision 'v9': fatal: "),
        ("-v1", "'-v1' is not a revision (it starts with '-'); name a branch, tag or commit, e.g. origin/main"),
    ],
)
def test_impact_of_a_revision_git_cannot_read_raises_and_prints_nothing(history, capsys, rev, message):
    capsys.readouterr()

    with pytest.raises(TraceError) as caught:
        review.impact(history, rev)

    assert str(caught.value).startswith(message)
    assert outputs(capsys) == ("", "")


def test_impact_of_a_revision_from_before_the_tests_folder_existed_lists_what_changed(make_project, capsys):
    """A root folder that did not exist yet at REV holds nothing there: impact compares without it."""
    root = make_project({"docs/page.md": MEAN_PAGE, ".gitignore": "node_modules\n.cache\n"})
    tests = {p: (root / p).read_text() for p in BASE_FILES if p.startswith("tests/")}
    for p in tests:
        (root / p).unlink()
    (root / "tests").rmdir()
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "code only")
    edited = "mu = X.mean(-1, keepdims=True)"
    write_tree(root, {**tests, "src/ops.py": OPS.replace("mu = X.mean(axis=-1, keepdims=True)", edited)})
    (root / "docs/page.md").write_text(MEAN_PAGE.replace("mu = X.mean(axis=-1, keepdims=True)", edited))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "tests")
    capsys.readouterr()

    assert review.impact(load_settings(root), "HEAD~1") == 0

    assert outputs(capsys)[0].splitlines()[2:] == [
        "- `docs/page.md`: entry layer-norm-forward | ops.layer_norm_forward: code changed since HEAD~1",
        f"- `docs/page.md`: inline | ops.layer_norm_forward: {edited}: new since HEAD~1",
    ]

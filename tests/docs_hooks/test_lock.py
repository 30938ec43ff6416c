"""The review lock: code that moves passes, code that changes fails until relock, and a lock git could not
merge, or one that cannot be read, is never replaced unseen.

``relock`` records what every reference points at now; over a lock with merge
conflict markers that would approve both sides of the conflict without a
review, so it refuses, and ``check`` and the build name the conflict's line.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.resolve.lock import LockEntry, by_page, compare, conflict_line, read_lock

from .conftest import BWD_ENTRY, FWD_ENTRY, LOCK, MEAN_PAGE, OPS, expand_page
from .test_cli import MKDOCS_YML, SITE_PAGE, mkdocs_build

CONFLICT = (
    "docs/trace.lock:4: the review lock has an unresolved merge conflict (git's marker is on this line); "
    "take one side of the conflict, then run 'python -m docs_hooks relock' again"
)


def conflicted(lock_text: str) -> str:
    """``lock_text`` as git leaves it when two branches changed its first entry differently."""
    lines = lock_text.splitlines(keepends=True)
    ours, theirs = lines[3:6], [line.replace('"hash": "', '"hash": "0') for line in lines[3:6]]
    return "".join(
        lines[:3] + ["<<<<<<< HEAD\n"] + ours + ["=======\n"] + theirs + [">>>>>>> other-branch\n"] + lines[6:]
    )


def reviewed(make_project, relock, files=None):
    root = make_project({"docs/page.md": MEAN_PAGE, **(files or {})})
    relock(root)
    return root


def test_relock_refuses_a_lock_with_merge_conflict_markers_and_leaves_it_as_it_is(make_project, relock):
    root = reviewed(make_project, relock)
    (root / LOCK).write_text(conflicted((root / LOCK).read_text()))
    before = (root / LOCK).read_bytes()

    _, out, err = relock(root, expect=1)

    assert out == ""
    assert err.splitlines() == [CONFLICT, "relock: docs/trace.lock was not changed."]
    assert (root / LOCK).read_bytes() == before


def test_check_reports_a_conflicted_lock_at_its_first_marker(make_project, relock, check):
    root = reviewed(make_project, relock)
    (root / LOCK).write_text(conflicted((root / LOCK).read_text()))

    code, err, _ = check(root)

    assert (code, err) == (2, [f"error: {CONFLICT}"])


def test_a_build_reports_a_conflicted_lock_at_its_first_marker_without_a_traceback(make_project, relock):
    root = reviewed(
        make_project,
        relock,
        {"mkdocs.yml": MKDOCS_YML, "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)")},
    )
    (root / LOCK).write_text(conflicted((root / LOCK).read_text()))

    result = mkdocs_build(root)

    assert result.returncode == 1
    assert f"ERROR   -  {CONFLICT}\n" in result.stderr
    assert "Traceback" not in result.stderr


def test_relock_refuses_a_lock_that_is_not_json(make_project, relock):
    root = make_project({"docs/page.md": MEAN_PAGE, LOCK: '{"version": 1, "pages": {\n'})

    _, out, err = relock(root, expect=1)

    assert out == ""
    assert err.splitlines() == [
        "docs/trace.lock:2: the review lock is not valid JSON (Expecting property name enclosed in double quotes); "
        "restore it from git, then run 'python -m docs_hooks relock'",
        "relock: docs/trace.lock was not changed.",
    ]
    assert (root / LOCK).read_text() == '{"version": 1, "pages": {\n'


def test_relock_of_a_missing_lock_records_every_reference(make_project, relock):
    root = make_project({"docs/page.md": MEAN_PAGE})

    _, out, _ = relock(root)

    assert out == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"


def test_relock_keeps_the_file_mode_of_the_lock(make_project, relock):
    root = reviewed(make_project, relock)
    os.chmod(root / LOCK, 0o664)  # shared with the group, say
    (root / "docs/page.md").write_text(MEAN_PAGE + "\nAnd [[ops.layer_norm_forward: Xhat = (X - mu) * s]].\n")

    _, out, _ = relock(root)

    assert out == "relock: 3 reference(s) recorded in docs/trace.lock (1 new or changed, 0 dropped)\n"
    assert stat.S_IMODE((root / LOCK).stat().st_mode) == 0o664


def test_the_first_conflict_marker_is_found_and_a_clean_lock_has_none():
    assert conflict_line('{\n<<<<<<< HEAD\n"a"\n=======\n"b"\n>>>>>>> x\n}\n') == 2
    assert conflict_line('{\n"a"\n=======\n"b"\n>>>>>>> x\n}\n') == 3  # its '<<<<<<<' half already removed
    assert (
        conflict_line(json.dumps({"pages": {"p": {"k <<<<<<< x": {"code": "=======", "hash": "1"}}}}, indent=2)) is None
    )


def test_a_lock_that_cannot_be_read_is_named(tmp_path):
    folder = tmp_path / "trace.lock"
    folder.mkdir()  # a folder where the file should be

    with pytest.raises(TraceError) as info:
        read_lock(folder, "docs/trace.lock")

    assert str(info.value) == (
        f"docs/trace.lock: cannot read the review lock ([Errno 21] Is a directory: "
        f"'{folder}'); restore it from git, then run 'python -m docs_hooks relock'"
    )


def test_every_lock_message_names_the_command_not_a_make_target():
    locked = {
        ("docs/page.md", "inline | a"): LockEntry("docs/page.md", "inline | a", "x = 1", "1"),
        ("docs/page.md", "inline | gone"): LockEntry("docs/page.md", "inline | gone", "y = 2", "2"),
        ("docs/page.md", "inline | dropped"): LockEntry("docs/page.md", "inline | dropped", "z = 3", "3"),
    }
    current = [
        LockEntry("docs/page.md", "inline | a", "x = 2", "9", 3),
        LockEntry("docs/page.md", "inline | new", "w = 4", "4", 5),
    ]

    problems = [str(p) for p in compare(locked, current, LOCK, {("docs/page.md", "inline | gone"): 7})]

    assert problems == [
        "docs/page.md:3: inline | a: changed since reviewed. Old text: 'x = 1'. New text: 'x = 2'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/page.md:5: inline | new: not reviewed yet (w = 4); review the page, then run "
        "'python -m docs_hooks relock' to record it in docs/trace.lock",
        "docs/page.md:7: inline | gone: the reviewed code is gone. It was: 'y = 2'. Point the reference at the code "
        "that replaced it, then run 'python -m docs_hooks relock'",
        "docs/page.md: inline | dropped: docs/trace.lock records this reference but the page no longer makes it; "
        "run 'python -m docs_hooks relock' to drop it",
    ]


def test_one_page_compared_against_its_own_entries_meets_the_problems_it_meets_against_the_whole_lock():
    def entry(page, key, code, line=None):
        return LockEntry(page, key, code, str(hash(code)), line)

    locked = {
        (e.page, e.key): e
        for e in [
            entry("docs/a.md", "inline | kept", "x = 1"),
            entry("docs/a.md", "inline | dropped", "y = 2"),
            entry("docs/a.md", "inline | changed", "z = 3"),
            entry("docs/b.md", "inline | kept", "x = 1"),
            entry("docs/b.md", "inline | dropped", "w = 4"),
        ]
    }
    current = [entry("docs/a.md", "inline | kept", "x = 1", 3), entry("docs/a.md", "inline | changed", "z = 4", 4)]
    grouped = by_page(locked)

    assert sorted(grouped) == ["docs/a.md", "docs/b.md"]
    whole = [str(p) for p in compare(locked, current, LOCK, {}, {"docs/a.md"})]
    own = [str(p) for p in compare(grouped["docs/a.md"], current, LOCK, {}, {"docs/a.md"})]
    assert own == whole and len(whole) == 2  # the change and the dropped reference of docs/a.md only


def test_relock_then_check_passes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})

    _, out, _ = relock(root)
    code, err, out_check = check(root)

    assert out == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"
    assert (code, err) == (0, [])
    assert out_check == "docs_hooks check: every reference resolves and matches the review lock\n"
    lock = json.loads((root / LOCK).read_text())
    assert lock["version"] == 1
    entries = lock["pages"]["docs/page.md"]
    assert {k: v["code"] for k, v in entries.items()} == {
        "entry layer-norm-forward | ops.layer_norm_forward": "\n".join(
            line.strip() for line in OPS.split("\n\n\n")[1].splitlines()
        ),
        "inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True)": "mu = X.mean(axis=-1, keepdims=True)",
    }


def test_check_without_a_lock_lists_what_is_not_reviewed(make_project, check):
    root = make_project({"docs/page.md": MEAN_PAGE})

    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: not reviewed yet "
        "(def layer_norm_forward(X, gamma, beta, epsilon=1e-5):); review the page, then run 'python -m docs_hooks relock' "
        "to record it in docs/trace.lock",
        "docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): not reviewed yet "
        "(mu = X.mean(axis=-1, keepdims=True)); review the page, then run 'python -m docs_hooks relock' to record it in "
        "docs/trace.lock",
        "docs_hooks check: 2 problem(s)",
    ]


def test_code_that_moves_shows_new_numbers_and_still_passes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)
    before = expand_page(root).markdown
    assert '<a href="../source/src/ops.py/#L8" title="ops.layer_norm_forward"><code>ops.py:8</code></a>' in before

    moved = OPS.replace("\n\ndef layer_norm_forward", "\n\ndef helper():\n    return 1\n\n\ndef layer_norm_forward")
    (root / "src/ops.py").write_text(moved)
    after = expand_page(root).markdown

    assert '<a href="../source/src/ops.py/#L12" title="ops.layer_norm_forward"><code>ops.py:12</code></a>' in after
    assert "<code>ops.py:8</code>" not in after
    assert "#L10-L19" in after  # the listing's GitHub link follows too
    assert '``` python linenums="10"' in after
    assert check(root)[:2] == (0, [])


def test_comment_and_spacing_changes_are_not_changes(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    edited = OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis = -1,keepdims=True)  # the mean")
    (root / "src/ops.py").write_text(edited)

    assert check(root)[:2] == (0, [])


def test_changed_statement_fails_until_relock(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    edited = OPS.replace("mu = X.mean(axis=-1, keepdims=True)", "mu = X.mean(axis=-1, keepdims=True) * 1.0")
    (root / "src/ops.py").write_text(edited)
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: changed since reviewed. "
        "Old text: 'mu = X.mean(axis=-1, keepdims=True)'. New text: 'mu = X.mean(axis=-1, keepdims=True) * 1.0'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/page.md:7: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): changed since "
        "reviewed. Old text: 'mu = X.mean(axis=-1, keepdims=True)'. "
        "New text: 'mu = X.mean(axis=-1, keepdims=True) * 1.0'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 2 problem(s)",
    ]

    _, out, _ = relock(root)
    assert out == "relock: 2 reference(s) recorded in docs/trace.lock (2 new or changed, 0 dropped)\n"
    assert check(root)[:2] == (0, [])


def test_changed_signature_is_a_change_of_the_entry(make_project, relock, check):
    root = make_project({"docs/page.md": FWD_ENTRY})
    relock(root)

    (root / "src/ops.py").write_text(OPS.replace("epsilon=1e-5):", "epsilon=1e-6):"))
    code, err, _ = check(root)

    assert code == 1
    assert err[0] == (
        "docs/page.md:1: entry layer-norm-forward | ops.layer_norm_forward: changed since reviewed. "
        "Old text: 'def layer_norm_forward(X, gamma, beta, epsilon=1e-5):'. "
        "New text: 'def layer_norm_forward(X, gamma, beta, epsilon=1e-6):'. "
        "Review the page against the new code, then run 'python -m docs_hooks relock'"
    )


def test_removed_statement_fails_and_quotes_the_reviewed_text(make_project, relock, check):
    root = make_project(
        {"docs/page.md": BWD_ENTRY + "\nThe shift: [[ops.layer_norm_backward: dbeta = dY.sum(axis=0)]].\n"}
    )
    relock(root)

    (root / "src/ops.py").write_text(OPS.replace("    dbeta = dY.sum(axis=0)\n", ""))
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:7: reference 'ops.layer_norm_backward: dbeta = dY.sum(axis=0)': no statement of "
        "ops.layer_norm_backward (ops.py:18-26) matches 'dbeta = dY.sum(axis=0)'; did you mean "
        "'dgamma = (dY * Xhat).sum(axis=0)' (ops.py:21) or 'dXhat = dY * gamma' (ops.py:20)? "
        "Copy the statement's text from the code.",
        "docs/page.md:1: entry layer-norm-backward | ops.layer_norm_backward: changed since reviewed. "
        "Old text: 'dbeta = dY.sum(axis=0)'. New text: ''. Review the page against the new code, then run 'python -m docs_hooks relock'",
        "docs/page.md:7: inline | ops.layer_norm_backward: dbeta = dY.sum(axis=0): the reviewed code is gone. "
        "It was: 'dbeta = dY.sum(axis=0)'. Point the reference at the code that replaced it, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 3 problem(s)",
    ]


def test_removed_function_fails(make_project, relock, check):
    root = make_project({"docs/page.md": "See [[model.backward_all: grads = ops.layer_norm_backward(]].\n"})
    relock(root)

    (root / "src/model.py").write_text((root / "src/model.py").read_text().split("\n\ndef backward_all")[0] + "\n")
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md:1: reference 'model.backward_all: grads = ops.layer_norm_backward(': no function "
        "'model.backward_all' in the code index; did you mean 'model.Block.forward' or "
        "'model.build' or 'model.Block.norm'? Use the dotted name: module, then class if any, then function.",
        "docs/page.md:1: inline | model.backward_all: grads = ops.layer_norm_backward(: the reviewed code is gone. "
        "It was: 'grads = ops.layer_norm_backward(\\ndY, cache, gamma,\\n)  # through the module name'. "
        "Point the reference at the code that replaced it, then run 'python -m docs_hooks relock'",
        "docs_hooks check: 2 problem(s)",
    ]


def test_reference_dropped_from_the_page_is_reported_until_relock(make_project, relock, check):
    root = make_project({"docs/page.md": MEAN_PAGE})
    relock(root)

    (root / "docs/page.md").write_text(FWD_ENTRY)
    code, err, _ = check(root)

    assert code == 1
    assert err == [
        "docs/page.md: inline | ops.layer_norm_forward: mu = X.mean(axis=-1, keepdims=True): docs/trace.lock "
        "records this reference but the page no longer makes it; run 'python -m docs_hooks relock' to drop it",
        "docs_hooks check: 1 problem(s)",
    ]
    _, out, _ = relock(root)
    assert out == "relock: 1 reference(s) recorded in docs/trace.lock (0 new or changed, 1 dropped)\n"
    assert check(root)[:2] == (0, [])


def test_corrupt_lock_is_named_in_the_error(make_project, check):
    root = make_project({"docs/page.md": MEAN_PAGE, LOCK: '{"version": 1, "pages": {\n'})

    code, err, _ = check(root)

    assert code == 2
    assert err == [
        f"error: {LOCK}:2: the review lock is not valid JSON (Expecting property name enclosed in double "
        "quotes); restore it from git, then run 'python -m docs_hooks relock'"
    ]


@pytest.mark.parametrize("text", ["[]\n", '{"version": 1, "pages": {"docs/page.md": {"inline | x": {"code": "x"}}}}\n'])
def test_lock_with_the_wrong_shape_is_named_in_the_error(make_project, check, text):
    root = make_project({"docs/page.md": MEAN_PAGE, LOCK: text})

    code, err, _ = check(root)

    assert code == 2
    assert len(err) == 1 and err[0].startswith("error: ") and "trace.lock" in err[0]

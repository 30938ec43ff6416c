"""Tests of docs_hooks.core.digests: the fingerprint that keeps the build of `mkdocs serve` while the code is
unchanged, and the digest of the files a page that shows the code is made from."""

import os

from docs_hooks.base.settings import load_settings
from docs_hooks.core import digests
from docs_hooks.core.digests import fingerprint, project_digest


def test_the_fingerprint_ignores_pages_and_follows_code_and_tests(make_project):
    root = make_project({"docs/page.md": "See [[ops.layer_norm_forward]].\n"})
    settings = load_settings(root)
    first = fingerprint(settings)

    (root / "docs/page.md").write_text("A prose edit. See [[ops.layer_norm_forward]].\n")
    assert fingerprint(settings) == first

    (root / "tests/test_ops.py").write_text((root / "tests/test_ops.py").read_text() + "\n# a comment\n")
    second = fingerprint(settings)
    assert second != first

    (root / "src/ops.py").write_text((root / "src/ops.py").read_text() + "\n")
    assert fingerprint(settings) != second


def test_the_project_digest_follows_every_file_but_the_pages_and_knows_a_large_one_by_size_and_time(
    make_project, monkeypatch
):
    root = make_project({"docs/page.md": "See [[ops.layer_norm_forward]].\n", "data/table.csv": "a,b\n1,2\n"})
    settings = load_settings(root)
    first = project_digest(settings)

    (root / "docs/page.md").write_text("A prose edit.\n")
    assert project_digest(settings) == first  # a page's own text is in its key, not here

    (root / "data/table.csv").write_text("a,b\n1,3\n")
    second = project_digest(settings)
    assert second != first  # a data file a run may read

    monkeypatch.setattr(digests, "WHOLE_FILE_BYTES", 4)  # every file is now a large one
    large = project_digest(settings)
    stat = (root / "data/table.csv").stat()
    (root / "data/table.csv").write_text("a,b\n1,4\n")  # same size, same time: not seen
    os.utime(root / "data/table.csv", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert project_digest(settings) == large
    os.utime(root / "data/table.csv", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert project_digest(settings) != large

"""atomic_write: the whole text or the old one, never half; missing folders are made."""

from __future__ import annotations

import os
import stat

import pytest

from docs_hooks.base.atomic import atomic_write


def test_it_makes_missing_folders_and_writes_text_and_bytes(tmp_path):
    target = tmp_path / "a" / "b" / "entry.json"
    atomic_write(target, "first")
    assert target.read_text() == "first"
    atomic_write(target, b"second")  # the folder exists now
    assert target.read_bytes() == b"second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(target.parent) == ["entry.json"]  # no temporary file left behind


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "entry.txt"
    atomic_write(target, "kept")
    with pytest.raises(TypeError):
        atomic_write(target, object())  # neither str nor bytes: fails while writing
    assert target.read_text() == "kept"
    assert os.listdir(tmp_path) == ["entry.txt"]


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "trace.lock"
    target.write_text("old")
    os.chmod(target, 0o600)  # kept private by its owner, say

    atomic_write(target, "new")

    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600

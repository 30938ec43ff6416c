"""Settings: defaults that fit the common layouts, what is excluded, the test_timeout setting, and one clear error
for a bad value."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import (
    KNOWN_KEYS,
    ModuleNames,
    current_ref,
    excluded,
    is_test_file,
    load_settings,
    pytest_import_mode,
)

from .conftest import BASE_FILES, run_cli, write_tree


def settings_with(make_project, line: str):
    return load_settings(make_project({"pyproject.toml": BASE_FILES["pyproject.toml"] + line + "\n"}))


def test_test_timeout_is_120_seconds_unless_set(make_project):
    assert load_settings(make_project()).test_timeout == 120.0


def test_test_timeout_takes_seconds_whole_or_not(make_project, tmp_path):
    assert settings_with(make_project, "test_timeout = 2").test_timeout == 2.0
    assert settings_with(make_project, "test_timeout = 0.5").test_timeout == 0.5


@pytest.mark.parametrize("value", ["0", "-3", '"60"', "true", "nan", "inf"])
def test_a_test_timeout_that_is_not_a_positive_number_is_an_error_naming_the_setting(make_project, value):
    with pytest.raises(TraceError) as err:
        settings_with(make_project, f"test_timeout = {value}")

    shown = {"0": "0", "-3": "-3", '"60"': "'60'", "true": "True", "nan": "nan", "inf": "inf"}[value]
    assert str(err.value) == (
        f"pyproject.toml: test_timeout in [tool.docs_hooks] must be a positive number of seconds, not {shown}; "
        "write, say, test_timeout = 120"
    )


def settings_of(tmp_path, body: str, files: dict[str, str] | None = None):
    root = write_tree(tmp_path / "proj", {"pyproject.toml": f"[tool.docs_hooks]\n{body}", **(files or {})})
    return load_settings(root)


@pytest.mark.parametrize(
    "body, message",
    [
        ("exclude = 3\n", "pyproject.toml: [tool.docs_hooks] exclude: must be a list of glob patterns, not 3"),
        (
            'exclude = "build"\n',
            "pyproject.toml: [tool.docs_hooks] exclude: must be a list of glob patterns, not 'build'",
        ),
        (
            "exclude = [1, 2]\n",
            "pyproject.toml: [tool.docs_hooks] exclude: must be a list of glob patterns, not [1, 2]",
        ),
        (
            "source_root = 1\n",
            "pyproject.toml: [tool.docs_hooks] source_root: must be a path (a string, relative to "
            "the project root), not 1",
        ),
        (
            'tests_root = ""\n',
            "pyproject.toml: [tool.docs_hooks] tests_root: must be a path (a string, relative to "
            "the project root), not ''",
        ),
        ("model_config = true\n", "pyproject.toml: [tool.docs_hooks] model_config: must be a string, not true"),
        (
            'coverage_tests = "tests"\n',
            "pyproject.toml: [tool.docs_hooks] coverage_tests: must be a list of pytest arguments, not 'tests'",
        ),
        (
            'symbols = "T"\n',
            'pyproject.toml: [tool.docs_hooks] symbols: must be a table of config field = "symbol" '
            "([tool.docs_hooks.symbols]), not 'T'",
        ),
    ],
)
def test_a_setting_of_the_wrong_type_is_one_error_naming_it(tmp_path, body, message):
    with pytest.raises(TraceError) as err:
        settings_of(tmp_path, body)
    assert str(err.value) == message


def test_check_reports_a_bad_setting_without_a_traceback(tmp_path, capsys):
    root = write_tree(
        tmp_path / "proj", {"pyproject.toml": "[tool.docs_hooks]\nexclude = 3\n", "docs/index.md": "# Hi\n"}
    )

    code = run_cli(root, "check")
    err = capsys.readouterr().err

    assert code != 0
    assert "pyproject.toml: [tool.docs_hooks] exclude: must be a list of glob patterns, not 3" in err
    assert "Traceback" not in err


def test_the_roots_default_to_src_and_tests_when_the_project_has_them(tmp_path):
    s = settings_of(tmp_path, "", {"src/a.py": "", "tests/test_a.py": ""})

    assert (s.source_root, s.tests_root) == (s.project_root / "src", s.project_root / "tests")


def test_the_roots_default_to_the_project_root_otherwise(tmp_path):
    s = settings_of(tmp_path, "", {"a.py": "", "test_a.py": ""})

    assert (s.source_root, s.tests_root) == (s.project_root, s.project_root)


def test_a_root_of_dot_is_the_project_root(tmp_path):
    s = settings_of(tmp_path, 'source_root = "."\ntests_root = "."\n')

    assert s.source_root.resolve() == s.project_root and s.tests_root.resolve() == s.project_root


def test_the_defaults_exclude_what_is_not_the_projects_code_and_the_setting_adds_to_them(tmp_path):
    s = settings_of(tmp_path, 'docs_dir = "site_src"\nexclude = ["scripts", "tools/gen_*.py"]\n')
    root = s.project_root
    left_out = [
        ".venv/lib/x.py",
        ".git/hooks/x.py",
        "venv/x.py",
        "node_modules/katex/x.py",
        "site/x.py",
        "site_src/examples/helper.py",
        "build/lib/x.py",
        "dist/x.py",
        "pkg.egg-info/x.py",
        "__pycache__/x.py",
        "scripts/plot.py",
        "tools/gen_data.py",
        "a/b/node_modules/x.py",
    ]
    kept = ["model.py", "tools/keep.py", "pkg/sitemap.py", "docs/x.py", "builder/x.py"]

    assert [p for p in left_out if not s.is_excluded(root / p)] == []
    assert [p for p in kept if s.is_excluded(root / p)] == []


def test_a_pattern_with_a_slash_matches_from_the_project_root(tmp_path):
    assert excluded(tmp_path / "docs/examples/run.py", tmp_path, ["docs/examples"])
    assert not excluded(tmp_path / "src/docs/examples/run.py", tmp_path, ["docs/examples"])


def test_test_files_are_named_as_pytest_names_them():
    assert [
        n for n in ["test_ops.py", "ops_test.py", "conftest.py", "ops.py", "testing.py", "attest.py"] if is_test_file(n)
    ] == ["test_ops.py", "ops_test.py", "conftest.py"]


def test_unknown_setting_is_named(make_project, check):
    root = make_project({"pyproject.toml": '[tool.docs_hooks]\nrepo = "https://example.com/repo"\n'})

    code, err, _ = check(root)

    assert code == 2
    assert err == [
        "error: pyproject.toml: unknown setting 'repo' in [tool.docs_hooks]; known settings: "
        + ", ".join(sorted(KNOWN_KEYS))
    ]
    assert "repo_url" in KNOWN_KEYS


# ----------------------------------------------------------------------------- module names


@pytest.mark.parametrize(
    ("files", "mode"),
    [
        ({}, "prepend"),
        ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-ra --import-mode=importlib"\n'}, "importlib"),
        ({"pyproject.toml": '[tool.pytest]\naddopts = ["--import-mode", "append"]\n'}, "append"),
        ({"tox.ini": "[pytest]\naddopts = --import-mode=importlib\n"}, "importlib"),
        ({"setup.cfg": "[tool:pytest]\naddopts = --import-mode=importlib\n"}, "importlib"),
        # pytest reads the first file that configures it: an empty pytest.ini wins over the rest
        ({"pytest.ini": "", "tox.ini": "[pytest]\naddopts = --import-mode=importlib\n"}, "prepend"),
        (
            {"setup.cfg": "[metadata]\nname = x\n", "tox.ini": "[pytest]\naddopts = --import-mode=importlib\n"},
            "importlib",
        ),
    ],
)
def test_the_import_mode_is_read_where_pytest_reads_it(tmp_path, files, mode):
    write_tree(tmp_path, files)

    assert pytest_import_mode(tmp_path) == mode


def test_a_pytest_configuration_that_does_not_parse_is_an_error_naming_it(tmp_path):
    write_tree(tmp_path, {"tox.ini": "[pytest\naddopts = --import-mode=importlib\n"})

    with pytest.raises(TraceError) as err:
        pytest_import_mode(tmp_path)

    assert str(err.value).startswith("tox.ini: cannot read it as pytest reads it (File contains no section headers.")
    assert str(err.value).endswith("; fix it")


def test_modules_are_named_by_their_packages_else_from_where_they_are_imported(tmp_path):
    root = write_tree(
        tmp_path,
        {
            "src/ops.py": "",
            "src/mypkg/__init__.py": "",
            "src/mypkg/sub/__init__.py": "",
            "src/mypkg/sub/layers.py": "",
            "tests/test_ops.py": "",
            "tests/conftest.py": "",
            "tests/unit/__init__.py": "",
            "tests/unit/test_layers.py": "",
            "tests/helpers/data.py": "",
        },
    )
    names = ModuleNames(root)

    assert names.of_code(root / "src/ops.py", root / "src") == "ops"
    assert names.of_code(root / "src/mypkg/sub/layers.py", root) == "mypkg.sub.layers"
    assert names.of_code(root / "src/mypkg/__init__.py", root) == "mypkg"
    assert names.of_test(root / "tests/test_ops.py") == "test_ops"
    assert names.of_test(root / "tests/conftest.py") == "tests.conftest"  # one of several, each loaded apart
    assert names.of_test(root / "tests/unit/test_layers.py") == "unit.test_layers"
    assert names.of_helper(root / "tests/helpers/data.py", root / "tests") == "helpers.data"
    assert names.test_bases([root / "tests/test_ops.py", root / "tests/unit/test_layers.py"]) == [root / "tests"]
    importlib = ModuleNames(root, "importlib")
    assert importlib.of_test(root / "tests/test_ops.py") == "tests.test_ops"
    assert importlib.of_test(root / "tests/unit/test_layers.py") == "unit.test_layers"  # a package either way
    assert importlib.test_bases([root / "tests/test_ops.py"]) == []


def test_coverage_tests_measures_every_test_of_the_tests_root_unless_set(tmp_path):
    tests = {"src/m.py": "def f():\n    return 1\n", "tests/test_m.py": "def test_f():\n    pass\n"}
    assert settings_of(tmp_path / "a", "", tests).coverage_tests == ["tests"]
    beside = {"m.py": "def f():\n    return 1\n", "test_m.py": "def test_f():\n    pass\n"}
    assert settings_of(tmp_path / "b", "", beside).coverage_tests == ["."]  # tests beside the code
    assert settings_of(tmp_path / "c", 'tests_root = "checks"\n', {"checks/m_test.py": ""}).coverage_tests == ["checks"]
    # none without a test file (a conftest.py alone, or a test file in an excluded folder, is none)
    none = {"src/m.py": "", "tests/conftest.py": "", "tests/build/test_old.py": "", "node_modules/x/test_y.py": ""}
    assert settings_of(tmp_path / "d", "", none).coverage_tests == []
    assert settings_of(tmp_path / "e", "coverage_tests = []\n", tests).coverage_tests == []  # set: as written
    assert settings_of(tmp_path / "f", 'coverage_tests = ["tests/test_m.py"]\n', tests).coverage_tests == [
        "tests/test_m.py"
    ]


# ------------------------------------------------------------------ the commit the site is built from


def _git(folder: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    env.pop("GIT_DIR", None)
    who = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]
    done = subprocess.run(["git", *who, *args], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_commit_read_from_the_repository_files_is_the_one_git_names_in_every_form_of_repository(
    tmp_path, monkeypatch
):
    from docs_hooks.base import settings

    def read_from_files(folder: Path, fallback: str = "main") -> str:
        """current_ref, with git not to be run: the answer comes from the repository's files."""
        with monkeypatch.context() as patch:
            patch.setattr(settings.subprocess, "run", lambda *a, **k: pytest.fail(f"git was run for {folder}"))
            return current_ref(folder, fallback)

    monkeypatch.delenv("GIT_DIR", raising=False)
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    _git(repo, "init", "-q")
    assert current_ref(repo) == "main"  # an unborn branch: no commit yet (git, asked, says so too)
    (repo / "a.txt").write_text("a\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-q", "-m", "first")
    first = _git(repo, "rev-parse", "HEAD")
    assert read_from_files(repo) == read_from_files(repo / "docs") == first  # the branch's file; from inside

    _git(repo, "pack-refs", "--all")  # the branch now only in packed-refs
    assert not (repo / ".git/refs/heads/main").exists()
    assert read_from_files(repo) == first

    (repo / "a.txt").write_text("b\n")
    _git(repo, "commit", "-q", "-am", "second")
    second = _git(repo, "rev-parse", "HEAD")
    _git(repo, "worktree", "add", "-q", "-b", "other", str(tmp_path / "tree"), first)
    assert (tmp_path / "tree/.git").is_file()  # a worktree: its HEAD of its own, its branches the repository's
    assert read_from_files(tmp_path / "tree") == first and read_from_files(repo) == second
    _git(repo, "checkout", "-q", "--detach", second)
    assert (repo / ".git/HEAD").read_text().strip() == second == read_from_files(repo)  # a detached HEAD

    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))  # git reads this one, wherever it runs: so does the build
    assert current_ref(tmp_path / "tree") == second
    monkeypatch.delenv("GIT_DIR")

    outside = tmp_path / "outside"
    outside.mkdir()
    assert not any((p / ".git").exists() for p in (outside, *outside.parents)), (
        "the test needs a folder in no repository"
    )
    assert read_from_files(outside, fallback="fallback") == "fallback"

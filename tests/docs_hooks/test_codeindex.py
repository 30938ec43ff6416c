"""The code index on the layouts and code shapes projects have: where the code and tests are, what is left
out, which functions are tests, and calls of layer objects (through ``__call__`` and their methods); and the
cache that keeps what each file contributes, keyed by the file's text."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, index_for, make_build
from docs_hooks.resolve import codeindex

from .conftest import BASE_FILES, OPS, mutated, page, page_problems, run_cli, store_rows, stored_rows, write_tree
from .test_cli import MKDOCS_YML, SITE_PAGE

PYPROJECT_FLAT = """\
[tool.docs_hooks]
source_root = "."
tests_root = "."
"""

LAYERS = '''\
import numpy as np


class Layer:
    def __call__(self, X):
        return self.forward(X)


class LayerNorm(Layer):
    def __init__(self, d):
        self.gamma = np.ones(d)

    def forward(self, X):
        return X * self.gamma

    def backward(self, dY):
        return dY * self.gamma


class Scale:
    """A layer of its own, with no base: its __call__ runs forward."""

    def __call__(self, X):
        return self.forward(X)

    def forward(self, X):
        return 2 * X


class Model(Layer):
    def __init__(self, d):
        self.norm = LayerNorm(d)
        self.scale = Scale()

    def forward(self, X):
        H = self.norm(X)
        return self.scale(H)

    def backward(self, dY):
        return self.norm.backward(dY)


def run(X):
    layer = LayerNorm(4)
    Y = layer(X)
    return layer.backward(Y)
'''

TESTS_BESIDE = """\
import unittest

import numpy as np

from layers import LayerNorm


class TestLayerNorm(unittest.TestCase):
    def setUp(self):
        self.norm = LayerNorm(4)

    def test_forward(self):
        Y = self.norm(np.ones((2, 4)))
        self.assertEqual(Y.shape, (2, 4))

    def helper(self):
        return self.norm.forward(np.ones((1, 4)))


class TestPytestStyle:
    def test_backward(self):
        layer = LayerNorm(4)
        assert layer.backward(np.ones((1, 4))).shape == (1, 4)


class Helpers:
    def test_not_collected(self):
        return LayerNorm(4).forward(np.ones((1, 4)))


def test_function():
    layer = LayerNorm(4)
    assert layer.forward(np.ones((1, 4))).shape == (1, 4)
"""


def flat_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    """Code and tests side by side in the project's root, plus the folders a real project has around them."""
    return write_tree(
        root,
        {
            "pyproject.toml": PYPROJECT_FLAT,
            "layers.py": LAYERS,
            "test_layers.py": TESTS_BESIDE,
            "docs/index.md": "# Home\n",
            "docs/examples/model_run.py": "def run(cfg):\n    return cfg\n",
            "node_modules/katex/build/make.py": "def make():\n    pass\n",
            ".venv/lib/site.py": "def site():\n    pass\n",
            "env/pyvenv.cfg": "home = /usr/bin\n",
            "env/lib/thing.py": "def thing():\n    pass\n",
            "site/search.py": "def search():\n    pass\n",
            "build/lib/layers.py": LAYERS,
            "pkg.egg-info/x.py": "def x():\n    pass\n",
            **(extra or {}),
        },
    )


def test_tests_beside_the_code_are_tests_and_the_other_folders_are_left_out(tmp_path):
    root = flat_project(tmp_path / "proj")
    index = index_for(load_settings(root))

    files = sorted({fn.repo_path for fn in index.functions.values()})
    assert files == ["layers.py", "test_layers.py"]
    assert not index.functions["layers.LayerNorm.forward"].is_test
    assert index.functions["test_layers.TestLayerNorm.test_forward"].is_test
    assert index.functions["test_layers.test_function"].display_path == "test_layers.py"


def test_a_test_file_inside_the_source_root_is_a_test_named_as_pytest_imports_it(tmp_path):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.docs_hooks]\nsource_root = "src"\ntests_root = "tests"\n',
            "src/layers.py": LAYERS,
            "src/test_layers.py": TESTS_BESIDE,
            "tests/test_more.py": "from layers import run\n\n\ndef test_run():\n    run(None)\n",
        },
    )
    index = index_for(load_settings(root))

    # src/ is no package: pytest imports the file from its folder, as test_layers, and shows it by its path
    test = index.functions["test_layers.test_function"]
    assert (test.is_test, test.display_path) == (True, "src/test_layers.py")
    assert "src.test_layers.test_function" not in index.functions
    callers = {site.caller: index.functions[site.caller].is_test for site in index.calls_to("layers.LayerNorm.forward")}
    assert callers == {
        "layers.Model.forward": False,
        "layers.run": False,
        "test_layers.Helpers.test_not_collected": True,  # LayerNorm(4).forward(...)
        "test_layers.TestLayerNorm.helper": True,
        "test_layers.TestLayerNorm.test_forward": True,
        "test_layers.test_function": True,
    }


def test_a_tests_root_inside_the_source_root_indexes_each_test_once(tmp_path):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.docs_hooks]\nsource_root = "."\ntests_root = "tests"\n',
            "layers.py": LAYERS,
            "tests/__init__.py": "",
            "tests/helpers.py": "from layers import run\n\n\ndef make():\n    return run(None)\n",
            "tests/test_layers.py": TESTS_BESIDE,
        },
    )
    index = index_for(load_settings(root))

    sites = [s for s in index.calls_to("layers.LayerNorm.forward") if s.caller == "tests.test_layers.test_function"]
    assert len(sites) == 1
    assert index.functions["tests.helpers.make"].is_test  # a helper of the tests, not the documented code
    assert [f for f in index.functions if f.endswith("test_function")] == ["tests.test_layers.test_function"]


def test_an_exclude_setting_leaves_out_more_and_the_defaults_stay(tmp_path):
    root = flat_project(
        tmp_path / "proj",
        {
            "pyproject.toml": PYPROJECT_FLAT + 'exclude = ["scripts", "tools/gen_*.py"]\n',
            "scripts/plot.py": "def plot():\n    pass\n",
            "tools/gen_data.py": "def gen():\n    pass\n",
            "tools/keep.py": "def keep():\n    pass\n",
        },
    )
    index = index_for(load_settings(root))

    assert sorted({fn.repo_path for fn in index.functions.values()}) == ["layers.py", "test_layers.py", "tools/keep.py"]


def test_without_src_and_tests_folders_the_roots_default_to_the_project_root(tmp_path):
    root = write_tree(
        tmp_path / "proj",
        {"pyproject.toml": "[tool.docs_hooks]\n", "layers.py": LAYERS, "test_layers.py": TESTS_BESIDE},
    )
    settings = load_settings(root)

    assert (settings.source_root, settings.tests_root) == (root.resolve(), root.resolve())
    assert index_for(settings).functions["test_layers.test_function"].is_test


def test_calling_a_layer_reaches_its_forward_through_call(tmp_path):
    index = index_for(load_settings(flat_project(tmp_path / "proj")))

    def sites(name):
        return sorted((s.caller, s.line, s.via, s.written) for s in index.calls_to(name))

    assert sites("layers.LayerNorm.forward") == [
        ("layers.Model.forward", 36, "layers.Layer.__call__", "norm"),  # self.norm = LayerNorm(d) in __init__
        ("layers.run", 45, "layers.Layer.__call__", "layer"),  # layer = LayerNorm(4) in the same function
        ("test_layers.Helpers.test_not_collected", 28, "", ""),  # LayerNorm(4).forward(...)
        ("test_layers.TestLayerNorm.helper", 17, "", ""),  # self.norm.forward(...), self.norm made in setUp
        ("test_layers.TestLayerNorm.test_forward", 13, "layers.Layer.__call__", "norm"),
        ("test_layers.test_function", 33, "", ""),  # layer.forward(...)
    ]
    # a __call__ of the class itself, and the call of the instance as a call of that __call__
    assert sites("layers.Scale.forward") == [
        ("layers.Model.forward", 37, "layers.Scale.__call__", "scale"),
        ("layers.Scale.__call__", 24, "", ""),
    ]
    assert sites("layers.Layer.__call__") == [
        ("layers.Model.forward", 36, "", ""),
        ("layers.run", 45, "", ""),
        ("test_layers.TestLayerNorm.test_forward", 13, "", ""),
    ]
    assert sites("layers.LayerNorm.backward") == [
        ("layers.Model.backward", 40, "", ""),  # self.norm.backward(dY)
        ("layers.run", 46, "", ""),  # layer.backward(Y)
        ("test_layers.TestPytestStyle.test_backward", 23, "", ""),
    ]


def test_a_test_method_of_a_test_class_or_a_testcase_runs_as_a_test_and_a_helper_does_not(tmp_path):
    index = index_for(load_settings(flat_project(tmp_path / "proj")))
    runs = {name: index.runs_as_test(fn) for name, fn in index.functions.items() if fn.is_test}

    assert runs == {
        "test_layers.TestLayerNorm.setUp": False,
        "test_layers.TestLayerNorm.test_forward": True,  # a unittest.TestCase
        "test_layers.TestLayerNorm.helper": False,
        "test_layers.TestPytestStyle.test_backward": True,  # a Test* class
        "test_layers.Helpers.test_not_collected": False,  # neither
        "test_layers.test_function": True,
    }


def test_an_entry_of_a_layer_with_tests_beside_the_code_lists_each_test_once(tmp_path):
    page = (
        "# LayerNorm\n\n```trace-entry\ntitle: LayerNorm forward\nfunction: layers.LayerNorm.forward\n"
        "status: implemented\n```\n"
    )
    root = flat_project(tmp_path / "proj", {"docs/page.md": page})
    settings = load_settings(root)
    settings.coverage_tests = []  # the calls written in the code alone: no run observes any
    result = expand_site(settings, make_build(settings, coverage=False)).pages["docs/page.md"]

    assert [str(p) for p in result.problems] == []
    used = re.search(r"<td>Called by</td><td>(.*?)</td>.*?<td>Tested by</td><td>(.*?)</td>", result.markdown, re.S)
    assert re.findall(r"<code>(.*?)</code>", used.group(1)) == ["layers.Model.forward", "layers.run"]
    assert re.findall(r"<code>(.*?)</code>", used.group(2)) == [
        "test_layers.TestLayerNorm.test_forward",
        "test_layers.test_function",
    ]
    tests_it = re.findall(r"<td>Tests it</td><td>(?:<a [^>]*>)?<code>(.*?)</code>", result.markdown)
    assert tests_it == ["test_layers.py:13", "test_layers.py:17", "test_layers.py:28", "test_layers.py:33"]  # once each


def test_an_index_read_back_from_the_cache_reaches_forward_through_an_inherited_call(tmp_path):
    settings = load_settings(flat_project(tmp_path / "proj"))
    made = index_for(settings)
    assert (tmp_path / "proj/.cache/docs_hooks/index.sqlite3").is_file()

    cached = index_for(settings)  # every file's part from the cache: the classes' bases come back with them

    def sites(index):
        return sorted((s.caller, s.line, s.via, s.written) for s in index.calls_to("layers.LayerNorm.forward"))

    assert any(via == "layers.Layer.__call__" for _, _, via, _ in sites(made))
    assert sites(cached) == sites(made)


# ------------------------------------------------------------------ the index's cache
# What each file contributes is kept in the cache folder, keyed by the file's text.


def summary(index):
    """Everything the index answers, as plain values (for comparing two indexes)."""
    return (
        {
            n: (f.repo_path, f.start, f.end, f.params, [s.tokens for s in f.statements], f.local_names)
            for n, f in index.functions.items()
        },
        sorted((c.caller, c.callee, c.line, c.via, c.written) for c in index.calls),
        sorted((u.caller, u.method, u.written, u.line) for u in index.unresolved),
        sorted((r.reader, r.base, r.attr, r.line) for r in index.attribute_reads),
        dict(index.classes),
        dict(index.file_digests),
    )


@pytest.fixture
def counted(monkeypatch):
    """How many files were parsed (not read back from the cache)."""
    parsed = []
    original = codeindex._index_file

    def spy(text, digest, file, *rest):
        parsed.append(file.name)
        return original(text, digest, file, *rest)

    monkeypatch.setattr(codeindex, "_index_file", spy)
    return parsed


def test_an_unchanged_file_is_read_back_and_gives_the_same_index(make_project, counted):
    settings = load_settings(make_project())
    first = index_for(settings)
    n_files = len(counted)
    assert n_files >= 3

    again = index_for(settings)

    assert len(counted) == n_files  # nothing parsed the second time
    assert summary(again) == summary(first)
    assert again.calls_to("ops.layer_norm_forward")  # calls are resolved across cached files too


def test_an_edited_file_is_parsed_again_and_the_index_shows_the_edit(make_project, counted):
    root = make_project()
    settings = load_settings(root)
    index_for(settings)
    counted.clear()
    ops = root / "src/ops.py"
    ops.write_text(ops.read_text(encoding="utf-8") + "\n\ndef added(x):\n    return x + 1\n", encoding="utf-8")

    index = index_for(settings)

    assert counted == ["ops.py"]
    assert "ops.added" in index.functions


def rows(store) -> list[bytes]:
    return list(stored_rows(store).values())


def set_rows(store, value) -> None:
    store_rows(store, dict.fromkeys(stored_rows(store), value))


@pytest.mark.parametrize(
    "damaged",
    [
        b"not json",
        b'{"digest": "x"}',  # JSON, but not an entry
        b"[" * 100_000,  # nested deeper than a reader can follow
        "text, not bytes",
    ],
)
def test_a_damaged_cache_entry_is_indexed_again(make_project, counted, damaged):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    set_rows(store, damaged)
    counted.clear()

    again = index_for(settings)

    assert len(counted) >= 3
    assert summary(again) == summary(first)
    assert all(json.loads(v)["digest"] for v in rows(store))  # rewritten whole, as JSON


def test_an_entry_whose_lines_do_not_fit_the_file_is_indexed_again(make_project, counted):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        for statement in entry["statements"]:
            statement[1] += 1000  # past the end of the file
        store_rows(store, {key: json.dumps(entry).encode()})
    counted.clear()

    again = index_for(settings)

    assert len(counted) >= 3
    assert summary(again) == summary(first)


def _wrong(entry: dict, where: str) -> bool:
    """Put a value of the wrong type (or out of range) at ``where`` in an entry; whether the entry has that place."""
    fn = entry["functions"][0] if entry["functions"] else None
    if where == "tokens" and entry["statements"]:
        entry["statements"][0][2] = 5
    elif where == "is_test" and fn is not None:
        fn["is_test"] = 1  # an int, not a bool
    elif where == "param" and fn is not None:
        fn["params"].append(3)
    elif where == "read line" and entry["reads"]:
        entry["reads"][0][4] = True  # a bool, not an int
    elif where == "call statement" and entry["pending"]:
        entry["pending"][0][3] = -1  # before the first statement
    elif where == "short row" and entry["pending"]:
        entry["pending"][0].pop()
    else:
        return False
    return True


@pytest.mark.parametrize("where", ["tokens", "is_test", "param", "read line", "call statement", "short row"])
def test_an_entry_with_a_value_of_the_wrong_type_is_indexed_again(make_project, counted, where):
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    changed = 0
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        if _wrong(entry, where):
            changed += 1
            store_rows(store, {key: json.dumps(entry).encode()})
    assert changed >= 1
    counted.clear()

    again = index_for(settings)

    assert len(counted) == changed  # those entries, and only those, were indexed again
    assert summary(again) == summary(first)


def test_an_entry_of_the_earlier_form_is_indexed_again(make_project, counted):
    """Entries are keyed by the code that reads them, so an earlier version's are never looked up; one found
    under a current key all the same (its import tables, its calls by dotted name) is a miss too."""
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    earlier = {}
    for key, value in stored_rows(store).items():
        entry = json.loads(value)
        for new in ("module", "names", "stars", "exports", "scopes", "attrs"):
            del entry[new]
        entry["tables"] = [{}]
        entry["pending"] = [["f", "m", ["g"], 1, 0, 0, None, 0] for _ in entry["pending"]]
        earlier[key] = json.dumps(entry).encode()  # sealed as the build seals an entry: only its form is wrong
    store_rows(store, earlier)
    counted.clear()

    again = index_for(settings)

    assert len(counted) == len(again.file_digests)
    assert summary(again) == summary(first)


class WritesAFile:
    """A pickle that, when read with pickle.loads, creates ``path``: what a tampered cache could hold."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def test_a_pickle_in_the_cache_is_a_miss_and_never_runs(make_project, counted, tmp_path):
    armed = tmp_path / "written-by-pickle-loads"
    pickle.loads(pickle.dumps(WritesAFile(armed))).close()
    assert armed.exists()  # the payload works: reading it with pickle runs it
    settings = load_settings(make_project())
    first = index_for(settings)
    store = settings.cache_dir / "index.sqlite3"
    target = tmp_path / "written-by-the-cache"
    set_rows(store, pickle.dumps(WritesAFile(target)))
    counted.clear()

    again = index_for(settings)

    assert not target.exists()
    assert len(counted) >= 3  # every file was indexed again
    assert summary(again) == summary(first)
    assert all(json.loads(v)["digest"] for v in rows(store))


def test_a_file_that_is_not_utf8_is_an_error_naming_it(make_project):
    root = make_project()
    (root / "src/latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))

    with pytest.raises(TraceError, match=r"^src/latin.py:1: cannot read: not UTF-8 .*save the file as UTF-8"):
        index_for(load_settings(root))


def test_missing_function_names_the_entry_and_suggests_close_names(make_project):
    root = make_project(
        {
            "docs/page.md": page("""
        # Layer norm

        ```trace-entry
        title: Layer norm forward
        function: ops.layer_norm_forwrd
        status: implemented
        ```
        """)
        }
    )

    assert page_problems(root) == [
        "docs/page.md:3: entry 'Layer norm forward': no function 'ops.layer_norm_forwrd' in the code index; "
        "did you mean 'ops.layer_norm_forward' or 'ops.layer_norm_backward'? "
        "Use the dotted name: module, then class if any, then function."
    ]


def test_missing_function_in_an_inline_reference(make_project):
    root = make_project({"docs/page.md": "See [[model.biuld: cfg = Config(]].\n"})

    assert page_problems(root) == [
        "docs/page.md:1: reference 'model.biuld: cfg = Config(': no function 'model.biuld' in the code index; "
        "did you mean 'model.build' or 'model.backward_all' or 'model.Block.forward'? Use the dotted name: module, then class if any, then function."
    ]


def test_syntax_error_in_the_source_names_file_and_line(make_project, check):
    root = make_project({"src/broken.py": "def f(:\n    pass\n", "docs/page.md": "# Nothing\n"})

    code, err, _ = check(root)

    assert code == 2
    assert err == ["error: src/broken.py:1: cannot parse: invalid syntax; fix the syntax error"]


def test_call_through_an_import_inside_the_function_is_a_call_site(make_project):
    root = make_project(
        {
            "src/user.py": "def b(X):\n    from ops import layer_norm_backward\n    return layer_norm_backward(X, None, 1)\n"
        }
    )

    callers = [(s.caller, s.line) for s in index_for(load_settings(root)).calls_to("ops.layer_norm_backward")]

    assert ("user.b", 3) in callers


@pytest.mark.parametrize(
    ("package", "name"), [(False, "test_x.test_x"), (True, "tests.unit.test_x.test_x")], ids=["folder", "package"]
)
def test_tests_in_a_nested_tests_root_are_named_as_pytest_imports_them(make_project, package, name):
    root = make_project(
        {
            "pyproject.toml": '[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\nref = "abc123"\ntests_root = "tests/unit"\n',
            "tests/unit/test_x.py": "from ops import layer_norm_forward\n\n\ndef test_x():\n    layer_norm_forward(1, 1, 0)\n",
            **({"tests/unit/__init__.py": ""} if package else {}),
        }
    )

    tests = {f.name: f.display_path for f in index_for(load_settings(root)).functions.values() if f.is_test}

    # tests/ is a package (make_project writes tests/__init__.py); tests/unit/ is one only with its __init__.py
    assert tests == {name: "tests/unit/test_x.py"}


def test_method_called_through_an_instance_is_a_call_site(make_project):
    root = make_project(
        {
            "src/opt.py": (
                "class Stepper:\n"
                "    def __init__(self, lr):\n"
                "        self.lr = lr\n"
                "\n"
                "    def step(self, x):\n"
                "        return x - self.lr\n"
                "\n"
                "\n"
                "def train(x):\n"
                "    stepper = Stepper(0.1)\n"
                "    return stepper.step(x)  # one update\n"
            )
        }
    )

    index = index_for(load_settings(root))

    assert [(s.caller, s.line, s.statement.text) for s in index.calls_to("opt.Stepper.step")] == [
        ("opt.train", 11, "return stepper.step(x)  # one update")
    ]
    assert [(s.caller, s.line) for s in index.calls_to("opt.Stepper.__init__")] == [("opt.train", 10)]


def test_check_works_in_a_project_under_a_dotted_folder(make_project, tmp_path, check):
    root = make_project({"docs/page.md": "See [[ops.nowhere]].\n"}, root=tmp_path / ".work" / "proj")

    assert check(root)[0] == 1


@pytest.fixture(scope="module")
def indexed_file(tmp_path_factory):
    """(an entry of the cache as the build writes it for one file, the file, its text)."""
    root = write_tree(tmp_path_factory.mktemp("entry"), BASE_FILES)
    file = root / "src/model.py"
    text = file.read_text(encoding="utf-8")
    part = codeindex._index_file(text, "digest", file, codeindex.Root(root / "src", root / "src", False), root, "model")
    return json.loads(codeindex._encode(part)), file, text


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_entry_of_nearly_the_right_form_is_a_file_index_or_a_miss_never_an_error(indexed_file, data):
    entry, file, text = indexed_file
    raw = data.draw(st.binary() | st.just(json.dumps(mutated(data, entry)).encode()), label="entry")

    part = codeindex._decode(raw, file, text)

    assert part is None or type(part) is codeindex.FileIndex


# ------------------------------------------------------------------ modules named as Python imports them

DENSE = """\
import numpy as np

from .base import Layer


class Dense(Layer):
    def __init__(self, n):
        self.W = np.ones((n, n))

    def forward(self, X):
        out = X @ self.W
        return out
"""

BASE = "class Layer:\n    def __call__(self, X):\n        return self.forward(X)\n"

TEST_DENSE = """\
import numpy as np

from {package}.layers import Dense


def test_dense_forward():
    layer = Dense(2)
    assert (layer(np.ones((1, 2))) == 2).all()
"""


@pytest.mark.parametrize("source_root", ["pkg", "."])
def test_a_package_is_named_as_it_is_imported_whatever_folder_the_source_root_is(tmp_path, source_root):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": f'[tool.docs_hooks]\nsource_root = "{source_root}"\ntests_root = "tests"\n',
            "pkg/__init__.py": "",
            "pkg/layers/__init__.py": "from .dense import Dense  # noqa: F401\n",
            "pkg/layers/dense.py": DENSE,
            "pkg/layers/base.py": BASE,
            "tests/test_dense.py": TEST_DENSE.format(package="pkg"),
            "docs/dense.md": "# Dense\n\n```trace-entry\ntitle: Dense\nfunction: pkg.layers.dense.Dense.forward\n"
            "status: implemented\n```\n",
        },
    )
    settings = load_settings(root)
    index = index_for(settings)

    assert sorted(index.modules) == ["pkg", "pkg.layers", "pkg.layers.base", "pkg.layers.dense", "test_dense"]
    result = expand_site(settings, make_build(settings, coverage=False)).pages["docs/dense.md"]
    assert [str(p) for p in result.problems] == []  # implemented: a test calls it
    tested = re.search(r"<td>Tested by</td><td>(.*?)</td>", result.markdown, re.S).group(1)
    assert re.findall(r"<code>(.*?)</code>", tested) == ["test_dense.test_dense_forward"]


@pytest.mark.parametrize("source_root", ["src", "."])
def test_a_src_layout_is_named_from_the_folder_above_its_package(tmp_path, source_root):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": f'[tool.docs_hooks]\nsource_root = "{source_root}"\ntests_root = "tests"\n',
            "src/mypkg/__init__.py": "",
            "src/mypkg/layers.py": DENSE,
            "src/mypkg/base.py": BASE,
            "tests/test_dense.py": TEST_DENSE.format(package="mypkg"),
        },
    )
    index = index_for(load_settings(root))

    assert [n for n in index.functions if not index.functions[n].is_test] == [
        "mypkg.base.Layer.__call__",
        "mypkg.layers.Dense.__init__",
        "mypkg.layers.Dense.forward",
    ]
    assert [s.caller for s in index.calls_to("mypkg.layers.Dense.forward")] == ["test_dense.test_dense_forward"]


CLIP = "def clip(x, limit):\n    if x > limit:\n        return limit\n    return x\n"

TEST_CLIP = """\
from clip import clip


def test_small_values_pass_through():
    assert clip(1, 5) == 1


def test_large_values_are_clipped():
    assert clip(9, 5) == 5
"""

CLIP_ENTRY = """\
# Clip

```trace-entry
title: Clip
function: clip.clip
status: implemented
```

```trace-equation
id: clipped
title: The limit
tex: y = l
code: return limit
```
"""


def test_in_pytests_default_layout_the_page_names_the_tests_that_run_its_lines(tmp_path):
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.docs_hooks]\ncoverage_tests = ["tests"]\n',
            "src/clip.py": CLIP,
            "tests/test_clip.py": TEST_CLIP,  # no tests/__init__.py: pytest imports it as test_clip
            "docs/clip.md": CLIP_ENTRY,
        },
    )
    builder = make_build(load_settings(root))

    expanded = builder.expand("docs/clip.md", CLIP_ENTRY)
    html, problems = expanded.markdown, expanded.problems

    assert problems == []
    tested = re.search(r"<td>Tested by</td><td>(.*?)</td>", html, re.S).group(1)
    assert re.findall(r"<code>(.*?)</code>", tested) == [
        "test_clip.test_small_values_pass_through",
        "test_clip.test_large_values_are_clipped",
    ]
    ran = re.search(r"<td>Tests that run these equations' lines \(line coverage\)</td><td>(.*?)</td></tr>", html)
    # the tests that ran `return limit`, by file, then name: the map named them as the index does
    assert ran and re.findall(r"<code>(.*?)</code>", ran.group(1)) == [
        "tests/test_clip.py",
        "test_large_values_are_clipped",
    ]


def test_a_cold_build_of_code_with_invalid_escape_sequences_prints_no_warning_about_them(make_project):
    """Python warns of ``"\\d"`` in a docstring when it compiles the file, in 3.11 as a DeprecationWarning
    (shown here with PYTHONWARNINGS=default), from 3.12 as a SyntaxWarning: the index parses the file twice
    (ast, griffe), so each one was printed twice, and a code base printed hundreds of them."""
    ops = OPS.replace("Normalise each row of X,", "Normalise each row of X (\\d is not an escape),")
    assert "\\d" in ops
    root = make_project(
        {
            "src/ops.py": ops,
            "mkdocs.yml": MKDOCS_YML,
            "docs/page.md": SITE_PAGE.format(mean="mu = X.mean(axis=-1, keepdims=True)"),
        }
    )
    assert run_cli(root, "relock") == 0
    shutil.rmtree(root / ".cache")  # a cold build: every file parsed

    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(root / "site")],
        cwd=root,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONWARNINGS": "default"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "escape sequence" not in result.stdout + result.stderr

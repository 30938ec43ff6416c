"""docs_hooks.resolve.indexing: the code index built on the layouts and code shapes projects have: where the
code and tests are, what is left out, how modules are named, and calls of layer objects (through ``__call__``
and their methods). (What the cache keeps of each file: test_indexstore.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.core.site import expand_site, index_for, make_build

from .conftest import write_tree

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


def test_a_file_that_is_not_utf8_is_an_error_naming_it(make_project):
    root = make_project()
    (root / "src/latin.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))

    with pytest.raises(TraceError, match=r"^src/latin.py:1: cannot read: not UTF-8 .*save the file as UTF-8"):
        index_for(load_settings(root))


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


EXTRA = "def helper(x):\n    return x\n"


def test_an_index_after_an_edit_takes_the_last_index_parts_of_the_files_unchanged_since(make_project, monkeypatch):
    from docs_hooks.resolve import indexing

    root = make_project({"src/extra.py": EXTRA})
    settings = load_settings(root)
    indexed = indexing.IndexedFiles()
    first = index_for(settings, indexed=indexed)
    read: list[str] = []  # the files read back from the cache or parsed, not taken from the last index
    for name, file_at in (("decode_part", 1), ("index_file", 2)):
        real = getattr(indexing, name)
        monkeypatch.setattr(indexing, name, lambda *a, real=real, at=file_at: read.append(a[at].name) or real(*a))
    ops = root / "src/ops.py"
    ops.write_text(ops.read_text(encoding="utf-8") + "\n\ndef added(x):\n    return x + 1\n", encoding="utf-8")
    (root / "src/extra.py").unlink()

    again = index_for(settings, indexed=indexed)

    assert read == ["ops.py"]  # the edited file alone
    assert "ops.added" in again.functions and "extra.helper" not in again.functions
    unchanged = [n for n, f in again.functions.items() if f.repo_path not in ("src/ops.py", "src/extra.py")]
    assert unchanged and all(again.functions[n] is first.functions[n] for n in unchanged)  # the very objects
    assert again.functions["ops.layer_norm_forward"] is not first.functions["ops.layer_norm_forward"]
    fresh = index_for(settings)  # what a process that kept nothing makes
    assert again.functions == fresh.functions
    assert sorted(map(repr, again.calls)) == sorted(map(repr, fresh.calls))

    read.clear()
    (root / "src/extra.py").write_text(EXTRA, encoding="utf-8")
    index_for(settings, indexed=indexed)
    assert read == ["extra.py"]  # a file gone from the last index is not kept from the one before

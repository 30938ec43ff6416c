"""What of a module's text a run depends on: the top-level functions that did not run and that nothing names are
left out, so that adding or editing one changes nothing; and comments, which Python never runs."""

from __future__ import annotations

import pytest

from docs_hooks.run.residue import ALL, CODE, NO_COMMENTS, ModuleText, Unreachable, digest, left_out, without_comments

MODULE = """\
import numpy as np

EPS = 1e-5


def norm(x):
    return x / (np.abs(x).max() + EPS)


def unused(x: np.ndarray, k: int = 2) -> np.ndarray | None:
    return x * k
"""


def rest(text: str, ran=frozenset({"norm"}), *loaded: str) -> str:
    module = ModuleText.of(text)
    return digest(
        module, [range(f.start, f.end + 1) for f in left_out(module, ran, [ModuleText.of(t) for t in loaded])]
    )


def test_a_function_that_did_not_run_and_that_nothing_names_is_left_out_added_edited_or_moved():
    module = ModuleText.of(MODULE)
    assert left_out(module, {"norm"}, []) == [Unreachable("unused", 10, 11)]
    assert left_out(module, {"norm", "unused"}, []) == []  # one that ran counts
    base = rest(MODULE)
    assert rest(MODULE.replace("k: int = 2", "k: int = 3")) == base
    assert rest(MODULE + "\n\nasync def added(y=(1, -2), *, z: 'str' = None):\n    return y\n") == base
    assert rest(MODULE.replace("def norm", "def first():\n    pass\n\n\ndef norm")) == base
    assert rest(MODULE.replace("EPS = 1e-5", "EPS = 1e-6")) != base  # the rest of the module counts


@pytest.mark.parametrize(
    "added",
    [
        "def norm(x):\n    return x\n",  # another binding of a name (here one that ran)
        "def twice(x):\n    return x * 2\n\n\nTWICE = twice\n",  # the module names it
        "def twice(x):\n    return x * 2\n\n\n__all__ = ['twice']\n",  # in a string
        "@np.vectorize\ndef twice(x):\n    return x * 2\n",  # a decorator runs
        "def twice(x, rng=np.random.default_rng(0)):\n    return x * 2\n",  # a default calls
        "def twice(x) -> print('evaluated'):\n    return x * 2\n",  # an annotation calls
        "class Twice:\n    def twice(self, x):\n        return x * 2\n",  # a class (a method is never left out)
        "def twice(x):\n    return x * 2\n\n\nNAMES = sorted(globals())\n",  # a namespace listed
    ],
)
def test_a_function_that_can_change_a_run_counts(added):
    assert rest(MODULE + "\n\n" + added) != rest(MODULE)


def test_comments_are_cut_off_every_line_kept_where_it_is_and_a_hash_in_a_string_is_code():
    lines = [
        "def f(x):  # one",
        '    """# not a comment',
        '    # not one either"""',
        "    # a line of its own",
        "    return x + '#'  # two",
    ]
    assert without_comments(lines, first=10) == [
        "def f(x):",
        '    """# not a comment',
        '    # not one either"""',
        "",
        "    return x + '#'",
    ]
    assert lines[0] == "def f(x):  # one"  # the lines given are left as they were


def test_an_encoding_declaration_and_lines_the_tokenizer_cannot_read_keep_their_comments():
    cookie = ["#!/usr/bin/env python", "# -*- coding: latin-1 -*-", "x = 1  # one"]
    assert without_comments(cookie) == ["", "# -*- coding: latin-1 -*-", "x = 1"]
    assert without_comments(cookie[1:], first=3) == ["", "x = 1"]  # on the file's third line it is a comment
    assert without_comments(["x = (1,  # open", "  # the bracket is never closed"]) == [
        "x = (1,  # open",
        "  # the bracket is never closed",
    ]
    assert without_comments(["x = 1  # a\x0cform feed"]) == ["x = 1  # a\x0cform feed"]


def test_the_rest_of_a_module_is_read_without_its_comments_but_a_coding_line_counts():
    base = rest(MODULE)
    assert rest(MODULE.replace("EPS = 1e-5", "EPS = 1e-5  # small")) == base
    assert rest(MODULE.replace("EPS = 1e-5", "# the floor\nEPS = 1e-5")) == base
    assert rest(MODULE.replace("EPS = 1e-5", "EPS = '# 1e-5'")) != base
    assert rest("# -*- coding: latin-1 -*-\n" + MODULE) != base


@pytest.mark.parametrize("reader", ["import inspect", "from traceback import format_exc", "import linecache"])
def test_a_module_that_names_a_reader_of_source_lines_reads_source_and_comments_then_count(reader):
    assert ModuleText.of(reader + "\n" + MODULE).reading() == ALL and ModuleText.of(MODULE).reading() == CODE
    commented = ModuleText.of(MODULE.replace("EPS = 1e-5", "EPS = 1e-5  # small"))
    assert digest(commented, [], ALL) != digest(ModuleText.of(MODULE), [], ALL)
    assert digest(commented, []) == digest(ModuleText.of(MODULE), [])


DOCUMENTED = '''\
"""The module's docstring."""


class Scale:
    """A class's, on
    two lines."""

    def apply(self, x):  # naïve
        """Ünïcode before: é."""  ; y = x
        return y * 2


def f_string(x):
    f"""not a docstring: {x}"""
    return x


def example(x):
    """>>> example(2)"""
    return x
'''


def test_docstrings_are_read_as_empty_strings_on_the_lines_they_hold_but_a_doctest_or_an_f_string_is_code():
    module = ModuleText.of(DOCUMENTED)

    assert module.read_as(CODE) == [
        '""',
        "",
        "",
        "class Scale:",
        '    ""',
        "",
        "",
        "    def apply(self, x):",
        '        ""  ; y = x',
        "        return y * 2",
        "",
        "",
        "def f_string(x):",
        '    f"""not a docstring: {x}"""',
        "    return x",
        "",
        "",
        "def example(x):",
        '    """>>> example(2)"""',  # a doctest's example: pytest may run it
        "    return x",
    ]
    assert module.read_as(NO_COMMENTS) == [line.split("  #")[0] for line in DOCUMENTED.splitlines()]
    assert module.read_as(ALL) == DOCUMENTED.splitlines()


@pytest.mark.parametrize("reader", ["HELP = f.__doc__", "import doctest", "import pydoc"])
def test_a_module_that_names_a_reader_of_docstrings_makes_them_count_but_not_comments(reader):
    module = ModuleText.of(DOCUMENTED + reader + "\n")
    assert module.reading() == NO_COMMENTS
    edited = DOCUMENTED.replace("The module's docstring.", "The module's own docstring.")
    assert digest(ModuleText.of(edited), []) == digest(ModuleText.of(DOCUMENTED), [])
    assert digest(ModuleText.of(edited + reader + "\n"), [], NO_COMMENTS) != digest(module, [], NO_COMMENTS)


def test_postponed_annotations_are_not_evaluated_so_they_may_call():
    module = "from __future__ import annotations\n" + MODULE
    assert rest(module + "\n\ndef twice(x) -> f(1):\n    return x\n") == rest(module)


@pytest.mark.parametrize(
    "other, counts",
    [
        ("import mod\n\nprint(mod.twice)\n", True),  # another file the run loaded names it
        ("import mod\n\nf = getattr(mod, 'twice', None)\n", True),
        ("import mod\n\ndef f(name):\n    return getattr(mod, name + '_forward', None)\n", True),  # a made name
        ("import mod\n\nNAMES = dir(mod)\n", True),  # another file lists the module's namespace
        ("import mod\n\nfor v in vars(mod).values():\n    pass\n", True),
        ("from inspect import getmembers\nimport mod\n\nF = getmembers(mod)\n", True),
        ("import mod\n\nD = mod.__dict__\n", True),
        ("import sys\n\nM = sys.modules['mod']\n", True),
        ("def f(args):\n    return vars(args), dir(args)\n", False),  # vars of a value, not of a module
        ("import mod\n\ndef f(obj, name):\n    return getattr(obj, name), hasattr(mod, 'norm')\n", False),
        ("def f():\n    return dir()\n", False),  # a function's own names
        ("import mod\n\nprint(mod.norm)\n", False),
    ],
)
def test_what_other_loaded_files_name_or_list_counts(other, counts):
    added = MODULE + "\n\ndef twice(x):\n    return x * 2\n"
    assert (rest(added, frozenset({"norm"}), other) != rest(MODULE, frozenset({"norm"}), other)) is counts


def test_a_module_python_cannot_parse_leaves_nothing_out_and_one_that_lists_must_be_parsed():
    broken = MODULE + "\ndef (:\n"
    assert left_out(ModuleText.of(broken), {"norm"}, []) == []
    assert left_out(ModuleText.of(MODULE), {"norm"}, [ModuleText.of("import mod\nx = dir(mod\n")]) == []


def test_texts_parse_a_file_once_per_text_and_keep_one_entry_per_file(tmp_path):
    from docs_hooks.run.residue import Texts

    texts, file = Texts(), tmp_path / "mod.py"
    file.write_text(MODULE, encoding="utf-8")
    first = texts.get(file)
    assert first is not None and texts.get(file) is first  # read again, not parsed again
    file.write_text(MODULE + "\n\ndef twice(x):\n    return x * 2\n", encoding="utf-8")
    second = texts.get(file)
    assert second is not first and [f.name for f in second.candidates] == ["norm", "unused", "twice"]
    assert len(texts._known) == 1
    file.unlink()
    assert texts.get(file) is None


def test_what_parsing_a_text_finds_is_kept_in_the_cache_folder_and_read_back_without_parsing(tmp_path):
    from docs_hooks.base.cachedir import store_file
    from docs_hooks.run.residue import Texts

    lister = "import mod\nnames = dir(mod)\n"
    files = {tmp_path / "mod.py": MODULE, tmp_path / "lister.py": lister, tmp_path / "broken.py": "def (:\n"}
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    first = Texts()
    first.keep_in(tmp_path / "cache")
    made = {path: first.get(path) for path in files}
    first.close()

    later = Texts()
    later.keep_in(tmp_path / "cache")
    read = {path: later.get(path) for path in files}

    for path in files:
        assert read[path] is not None and made[path] is not None
        assert "tree" not in vars(read[path])  # not parsed: what it found came from the store
        assert read[path].candidates == made[path].candidates
        assert read[path].lists_namespaces == made[path].lists_namespaces
        assert read[path].read_as(CODE) == made[path].read_as(CODE)  # where its comments and docstrings are
        assert "tree" not in vars(read[path])
    assert [f.name for f in read[tmp_path / "mod.py"].candidates] == ["norm", "unused"]
    assert read[tmp_path / "lister.py"].lists_namespaces is True
    assert read[tmp_path / "broken.py"].candidates == []  # one Python cannot parse leaves nothing out
    later.close()

    # A row a build did not write as this form (sealed, so only a bug could leave it) is parsed again.
    import sqlite3

    from docs_hooks.base.cachedir import Store

    path = store_file(tmp_path / "cache", "residue")
    with sqlite3.connect(path) as db:
        keys = [key for (key,) in db.execute("SELECT key FROM entries")]
    store = Store(path)
    store.put_many({key: b'[[["norm", "one", 2]], false]' for key in keys})
    store.close()
    again = Texts()
    again.keep_in(tmp_path / "cache")
    module = again.get(tmp_path / "mod.py")
    assert module is not None and [f.name for f in module.candidates] == ["norm", "unused"]
    assert "tree" in vars(module)
    again.close()


def test_without_a_cache_folder_nothing_is_kept(tmp_path):
    from docs_hooks.run.residue import Texts

    (tmp_path / "mod.py").write_text(MODULE, encoding="utf-8")
    texts = Texts()
    texts.keep_in(None)
    module = texts.get(tmp_path / "mod.py")

    assert module is not None and "tree" not in vars(module)  # parsed only when asked, as without a store
    assert [f.name for f in module.candidates] == ["norm", "unused"]
    assert not any(tmp_path.rglob("*.sqlite3"))

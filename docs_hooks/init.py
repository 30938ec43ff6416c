"""``python -m docs_hooks init``: set a project up for a traced site, run once in its root.

It looks at the project's Python files and writes only what it can back:

- ``mkdocs.yml``: a minimal one (Material, ``plugins: [search, docs_hooks]``, the
  Markdown extensions the generated pages use); when one exists, ``docs_hooks`` is
  added to its ``plugins:`` by inserting one line (``- docs_hooks``, or
  ``docs_hooks: {}`` in the mapping form; with no ``plugins:``, the key with
  ``search``, MkDocs' default, and ``docs_hooks``), the rest of the file left as
  written. A file it cannot edit safely (flow style, a template, one that
  inherits its plugins through ``INHERIT``) is refused with the line to add by
  hand; the docs folder and the Markdown extensions are read through ``INHERIT``;
- ``[tool.docs_hooks]`` in ``pyproject.toml`` (the file made when missing): the
  source root (the folder holding most non-test ``.py`` files; the folder above it
  when it is a package, so that modules are named as the project imports them:
  ``pkg.layers``, not ``layers``), the tests root and the docs folder. An existing
  section is never changed: init says what it would have written instead;
- ``docs/index.md``, a starter page: an entry for one function (the first public
  function some test calls, else the first public function) and an excerpt of its
  first statement. When ``docs/`` holds another generator's sources (Sphinx's
  ``conf.py`` and ``.rst`` files), the site goes in a folder of its own instead,
  since MkDocs would copy those files into the site; a docs folder whose home
  page is ``README.md`` gets no ``index.md`` (MkDocs would drop one of the two);
- the first review lock, as ``python -m docs_hooks relock`` writes it.

Everything is worked out before anything is written, so a refusal leaves the
project as it was; a file that exists is never overwritten (except for the one
plugin line), and a second run changes nothing. What init finds in the project
(its layout, its mkdocs.yml's settings, the function to explain) is
``docs_hooks.init_survey``; this module writes from it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from docs_hooks.base.atomic import atomic_write
from docs_hooks.base.errors import TraceError
from docs_hooks.base.settings import load_settings
from docs_hooks.init_survey import (
    Layout,
    TolerantLoader,
    detect_layout,
    effective_config,
    first_statement,
    foreign_docs,
    is_test_file,
    pick_function,
    plugin_names,
    python_files,
    read_yaml,
)
from docs_hooks.resolve.codeindex import Function

PLUGIN = "docs_hooks"

# What the generated pages need from Python-Markdown, as mkdocs.yml names it.
EXTENSIONS = ("attr_list", "md_in_html", "admonition", "tables", "toc", "pymdownx.superfences", "pymdownx.highlight")

MKDOCS_YML = """\
site_name: {site_name}
docs_dir: {docs_dir}

theme:
  name: {theme}

plugins:
  - search
  - docs_hooks

markdown_extensions:
  - attr_list
  - md_in_html
  - admonition
  - tables
  - toc:
      permalink: true
  - pymdownx.superfences
  - pymdownx.highlight:
      anchor_linenums: true
      stripnl: false
      line_spans: __span
"""


def default_theme() -> str:
    """Material for MkDocs when it is installed (the theme the generated pages are styled for first), else
    MkDocs' own theme, which every MkDocs has: the mkdocs.yml init writes builds either way."""
    import importlib.util

    return "material" if importlib.util.find_spec("material") is not None else "mkdocs"


NEXT_STEPS = """\
Next:
  mkdocs serve                 the site at http://127.0.0.1:8000/, rebuilt on every edit
  mkdocs build --strict        the site in site/, failing on any warning
  python -m docs_hooks check   what CI runs: fails on a broken reference or code changed since reviewed
After writing a page, or reviewing one against changed code: python -m docs_hooks relock"""

# Where the site goes when docs/ holds another generator's sources.
OWN_DOCS = "traced-docs"


# ----------------------------------------------------------------------------- mkdocs.yml


def add_plugin(text: str, name: str = "mkdocs.yml") -> str | None:
    """``text`` with ``docs_hooks`` added to its ``plugins:``, or None when it names the plugin already.

    Only one line is inserted (or, with no plugins list, ``plugins: [search, docs_hooks]``
    appended in block style), and the result is read back to check that nothing
    else changed. Raises a TraceError at the line to edit by hand when that cannot
    be done safely.
    """
    by_hand = f"add '- {PLUGIN}' under plugins: by hand"
    for number, line in enumerate(text.splitlines(), 1):
        if "{{" in line or "{%" in line:
            raise TraceError(f"the file looks like a template ({line.strip()!r}); {by_hand}", name, number)
    node, data = read_yaml(text, name)
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise TraceError(f"is not a mapping of settings; {by_hand}", name, 1)
    keys = {k.value: (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}
    if "INHERIT" in keys and "plugins" not in keys:
        # MkDocs takes the plugins of the file it inherits from: a plugins: list added here would replace them.
        raise TraceError(
            f"inherits its settings from {data['INHERIT']!r} (INHERIT) and has no plugins: of its own; add "
            f"'- {PLUGIN}' to the plugins: of the file that lists them",
            name,
            keys["INHERIT"][0].start_mark.line + 1,
        )
    plugins = data.get("plugins")
    if PLUGIN in plugin_names(plugins):
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    if plugins is None:
        expected: dict | list = ["search", PLUGIN]
        if "plugins" not in keys:
            sep = "" if not text or text.endswith(("\n", "\r")) else newline
            new = text + sep + newline.join(["plugins:", "  - search", f"  - {PLUGIN}", ""])
        else:  # 'plugins:' with nothing under it
            key = keys["plugins"][0]
            at = key.start_mark.line + 1
            new = "".join(lines[:at] + [f"  - search{newline}", f"  - {PLUGIN}{newline}"] + lines[at:])
    else:
        key, value = keys["plugins"]
        at = key.start_mark.line + 1
        if key.start_mark.column != 0:
            raise TraceError(f"plugins: is not at the top level of the file; {by_hand}", name, at)
        if not isinstance(value, (yaml.SequenceNode, yaml.MappingNode)) or value.flow_style:
            raise TraceError(
                f"plugins: is written on one line ({lines[at - 1].strip()!r}); write it as one "
                f"plugin a line, or add {PLUGIN} to it by hand",
                name,
                at,
            )
        indent = value.start_mark.column
        item = f"- {PLUGIN}" if isinstance(value, yaml.SequenceNode) else f"{PLUGIN}: {{}}"
        last = at - 1  # index of the last line of the plugins block
        for i in range(at, len(lines)):
            stripped = lines[i].strip()
            if not stripped or stripped.startswith("#"):
                continue
            column = len(lines[i]) - len(lines[i].lstrip(" "))
            if column == 0 and not (indent == 0 and stripped.startswith("-")):
                break
            last = i
        if not lines[last].endswith(("\n", "\r")):
            lines[last] += newline
        new = "".join(lines[: last + 1] + [" " * indent + item + newline] + lines[last + 1 :])
        expected = {**plugins, PLUGIN: {}} if isinstance(plugins, dict) else [*plugins, PLUGIN]
    try:
        after = yaml.load(new, Loader=TolerantLoader)
    except yaml.YAMLError:
        after = None
    if after != {**data, "plugins": expected}:
        raise TraceError(
            f"cannot add {PLUGIN} to plugins: without changing something else; {by_hand}",
            name,
            keys["plugins"][0].start_mark.line + 1 if "plugins" in keys else None,
        )
    return new


def missing_extensions(data: dict) -> list[str]:
    """The Markdown extensions the generated pages use that a mkdocs.yml does not name."""
    named = plugin_names(data.get("markdown_extensions") or [])
    return [e for e in EXTENSIONS if e not in named]


# ----------------------------------------------------------------------------- pyproject.toml


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def settings_section(layout: Layout) -> str:
    lines = ["[tool.docs_hooks]", f"source_root = {_toml_string(layout.source_root)}"]
    if layout.tests_root is not None:
        lines.append(f"tests_root = {_toml_string(layout.tests_root)}")
    lines.append(f"docs_dir = {_toml_string(layout.docs_dir)}")
    if layout.docs_dir != "docs":
        lines.append(f"lock_path = {_toml_string(layout.docs_dir + '/trace.lock')}")
    if layout.exclude:
        lines.append(f"exclude = [{', '.join(map(_toml_string, layout.exclude))}]")
    return "\n".join(lines) + "\n"


def _read_toml(text: str, name: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = re.search(r"\(at line (\d+)", str(exc))
        raise TraceError(
            f"cannot read it as TOML ({exc}); fix it, then run init again", name, int(where.group(1)) if where else None
        ) from None


def add_section(text: str, section: str, name: str = "pyproject.toml") -> str:
    """``text`` with the ``[tool.docs_hooks]`` section appended, checked by reading both back."""
    before = _read_toml(text, name)
    sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    new = text + sep + section
    after = _read_toml(new, name)
    tool = dict(before.get("tool", {}))
    tool[PLUGIN] = tomllib.loads(section)["tool"][PLUGIN]
    if after != {**before, "tool": tool}:  # pragma: no cover - appending a new table changes nothing else
        raise TraceError(
            f"cannot add [tool.{PLUGIN}] without changing something else; add it by hand:\n{section}", name
        )
    return new


# ----------------------------------------------------------------------------- the starter page


def _block(kind: str, data: dict) -> str:
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    return f"```trace-{kind}\n{body}```\n"


def starter_page(title: str, fn: Function | None, tests: list[str], excerpt: str | None) -> str:
    head = f"# {title}\n\n"
    if fn is None:
        return head + (
            "This site is documented with docs_hooks. No public function was found in the code yet: "
            "add a `trace-entry` block naming one to explain it.\n"
        )
    status = "implemented" if tests else "illustrative"
    page = head + (
        f"A first traced entry, written by `python -m docs_hooks init`. The build fills in the listing of "
        f"`{fn.name}` with its real line numbers, where it is called and which tests run it. "
        + (
            "Its status is implemented: a test calls it.\n\n"
            if tests
            else "Its status is illustrative: no test calls it yet. Once one does, change it to implemented.\n\n"
        )
    )
    page += _block(
        "entry", {"id": fn.short_name.replace("_", "-"), "title": fn.name, "function": fn.name, "status": status}
    )
    if excerpt is not None:
        page += "\nIts first statement, as the code has it now:\n\n" + _block("excerpt", {"code": excerpt})
    return page


# ----------------------------------------------------------------------------- the command


@dataclass
class Plan:
    """What init writes: file -> new text, and what it reports."""

    writes: dict[Path, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    relock: bool = False


def _project_name(pyproject: dict, root: Path) -> str:
    return str(pyproject.get("project", {}).get("name") or root.resolve().name)


def plan(root: Path) -> Plan:
    """Everything init would write, worked out without writing; a TraceError when it cannot go on."""
    root = Path(root)
    out = Plan()
    mkdocs_path, pyproject_path = root / "mkdocs.yml", root / "pyproject.toml"
    pyproject_text = pyproject_path.read_text(encoding="utf-8") if pyproject_path.exists() else ""
    pyproject = _read_toml(pyproject_text, "pyproject.toml")
    existing = pyproject.get("tool", {}).get(PLUGIN)

    docs_dir = "docs"
    if mkdocs_path.exists():
        text = mkdocs_path.read_text(encoding="utf-8")
        new = add_plugin(text)
        data = effective_config(text, mkdocs_path)
        docs_dir = str(data.get("docs_dir") or "docs")
        if new is None:
            out.notes.append(f"mkdocs.yml: kept as it is; it names {PLUGIN} under plugins: already")
        else:
            out.writes[mkdocs_path] = new
            out.notes.append(f"mkdocs.yml: added {PLUGIN} to plugins:, the rest of the file as it was")
        missing = missing_extensions(data)
        if missing:
            out.notes.append(
                "mkdocs.yml: the generated pages also use these Markdown extensions, which it does not "
                f"name: {', '.join(missing)}; add them under markdown_extensions:"
            )
    elif existing is not None and existing.get("docs_dir"):
        docs_dir = str(existing["docs_dir"])
    skipped: tuple[str, ...] = ()
    if not mkdocs_path.exists() and existing is None:
        found = foreign_docs(root / docs_dir)
        if found is not None:
            if (root / OWN_DOCS).exists():
                raise TraceError(
                    f"{docs_dir}/ holds the {found} of another site, and {OWN_DOCS}/ exists too; set docs_dir in "
                    "[tool.docs_hooks] to a new folder for the traced site, then run init again"
                )
            out.notes.append(
                f"{docs_dir}/: holds the {found} of another site, kept as they are; the traced site's pages go "
                f"in {OWN_DOCS}/ (MkDocs would copy those files into the site)"
            )
            skipped, docs_dir = (docs_dir,), OWN_DOCS

    layout = detect_layout(root, docs_dir, skipped)
    section = settings_section(layout)
    if existing is None:
        out.writes[pyproject_path] = add_section(pyproject_text, section)
        out.notes.append(
            "pyproject.toml: "
            + ("added" if pyproject_text else "wrote")
            + " [tool.docs_hooks]:\n"
            + _indent(section.split("\n", 1)[1])
        )
        overrides = tomllib.loads(section)["tool"][PLUGIN]
    else:
        found = tomllib.loads(section)["tool"][PLUGIN]
        if any(existing.get(k) != v for k, v in found.items()):
            out.notes.append(
                "pyproject.toml: [tool.docs_hooks] exists and was left as it is; init would have "
                "written:\n" + _indent(section)
            )
        else:
            out.notes.append("pyproject.toml: [tool.docs_hooks] exists and was left as it is")
        overrides = {}
    # The settings the build will read: the ones written now, or the project's own.
    settings = load_settings(root, overrides) if existing is None else load_settings(root)

    if not mkdocs_path.exists():
        theme = default_theme()
        out.writes[mkdocs_path] = MKDOCS_YML.format(
            site_name=_yaml_scalar(_project_name(pyproject, root)),
            docs_dir=_yaml_scalar(settings.rel(settings.docs_dir)),
            theme=theme,
        )
        if theme == "material":
            out.notes.insert(0, "mkdocs.yml: wrote a minimal one (Material theme, plugins: search and docs_hooks)")
        else:
            out.notes.insert(
                0,
                "mkdocs.yml: wrote a minimal one (MkDocs' own theme, plugins: search and docs_hooks); for "
                "Material for MkDocs, pip install mkdocs-material and set theme: name: material",
            )

    index_page = settings.docs_dir / "index.md"
    readme = settings.docs_dir / "README.md"
    if index_page.exists():
        out.notes.append(f"{settings.rel(index_page)}: kept as it is")
    elif readme.exists():
        out.notes.append(
            f"{settings.rel(readme)}: kept as it is, the site's home page; no starter page written "
            "(MkDocs would drop one of README.md and index.md)"
        )
    else:
        from docs_hooks.core.site import index_for

        # Read straight from the files (a second argument names the tree): init keeps no cache of its own.
        index = index_for(settings, settings.project_root)
        source_files = (
            layout.source_files
            if existing is None
            else [
                f.as_posix()
                for f in python_files(root, settings.rel(settings.docs_dir))
                if not is_test_file(f) and settings.source_root.resolve() in (root / f).resolve().parents
            ]
        )
        picked = pick_function(index, source_files)
        fn, tests = picked if picked else (None, [])
        excerpt = first_statement(index, fn) if fn is not None else None
        out.writes[index_page] = starter_page(_project_name(pyproject, root), fn, tests, excerpt)
        if fn is None:
            out.notes.append(f"{settings.rel(index_page)}: a starter page; no public function found to explain")
        else:
            why = (
                f"implemented: called by {', '.join(tests[:3])}{' and others' if len(tests) > 3 else ''}"
                if tests
                else "illustrative: no test calls it"
            )
            out.notes.append(
                f"{settings.rel(index_page)}: a starter page with an entry for {fn.name} ({why})"
                + (" and an excerpt of its first statement" if excerpt else "")
            )
    if settings.lock_path.exists():
        out.notes.append(f"{settings.rel(settings.lock_path)}: kept as it is")
    else:
        out.relock = True
    return out


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip("\n").split("\n"))


def _yaml_scalar(value: str) -> str:
    return yaml.safe_dump(value, default_style=None, allow_unicode=True, width=10_000).splitlines()[0]


def init_project(root: Path) -> int:
    """Run init in ``root``; print what was written and what to run next. The exit code of the command."""
    root = Path(root)
    todo = plan(root)  # a TraceError here leaves every file as it was
    for path, text in todo.writes.items():
        atomic_write(path, text)
    for note in todo.notes:
        print(f"init: {note}")
    code = 0
    if todo.relock:
        from docs_hooks.core.review import relock

        code = relock(load_settings(root))
        if code:
            print(
                "init: the review lock was not written; fix the problems above, then run: python -m docs_hooks relock"
            )
    print(NEXT_STEPS)
    return code

"""The guide, ``docs/own-code.md``, followed as a new user follows it: no single module is under test here.

The guide grows one example project as it goes. This test reads the page, takes its fenced blocks in order
(with the site's own Markdown extension for them, pymdownx.superfences) and does what each says:

- a block titled with a file name (```` ```python title="norm.py" ````) is that file of the project: written
  whole; for ``pyproject.toml`` and ``mkdocs.yml``, merged into what the file holds (tables and mappings key
  by key, any other value replaced); for ``.gitignore`` and a page (``.md``), added below what it holds;
- a block of shell commands (``sh``) is run in the project's root, one line at a time; each must exit 0.
  ``pip install`` lines are not run: the generator is installed where this test runs (and
  ``examples/check_example.sh`` installs its wheel in a fresh environment);
- a GitHub workflow (``.github/workflows/*.yml``) is written, then its ``run:`` steps are run as a pull
  request's CI would run them, against a base branch ``main`` that holds the project as it was before the
  guide's first command.

Any other block fails the test, saying what to write: every block of the page is part of the example.
Then each trace block of each page the guide wrote must show expanded in the HTML of the last strict build,
and the guide's tables of settings and plugin options must give every setting and option of the code (and
no other) with the default the code gives it.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import markdown
import numpy as np
import pytest
import yaml

from docs_hooks.base.settings import DEFAULT_EXCLUDE, KNOWN_KEYS, load_settings
from docs_hooks.plugin import PluginConfig

from .test_cli import GIT_ENV

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "own-code.md"
SHELL = ("sh", "bash", "shell")  # commands only: a block that shows their output is no file and no command
MERGED = ("pyproject.toml", "mkdocs.yml")
ADDED_BELOW = (".gitignore",)
BASE = "main"  # the branch a pull request of the example project goes into

# What each kind of trace block leaves in the built page when it expanded: HTML its kind always writes. A block
# that fails leaves an error box instead, which the test looks for first; these make sure none went missing.
EXPANDED = {
    "entry": r'<h3 id="[\w-]+-implementation"',  # its "Actual implementation" section
    "equation": r'<p class="trace-eq-code">',
    "symbols": r'<table class="trace-table trace-symbols">',
    "example": r'<div class="trace-example" id=',
    "shapes": r'<p class="trace-shapes-site">',
    "params": r'<table class="trace-table trace-params">',
    "config": r'<table class="trace-table trace-config">',
    "excerpt": r'<div class="trace-listing-head">',  # also above an entry's listing
    "inventory": r'<table class="trace-table trace-[a-z-]+">',
    "results": r'<svg class="trace-curve"',
}


@dataclass
class Fence:
    number: int  # the block's place on the page, from 1
    language: str
    title: str | None
    text: str

    def __str__(self) -> str:
        title = f' title="{self.title}"' if self.title else ""
        return f"block {self.number} of docs/own-code.md (```{self.language}{title}, starting {self.text[:40]!r})"


def guide_fences(text: str) -> list[Fence]:
    """Every fenced block of the page, in order, as the site's Markdown reads them."""
    found: list[Fence] = []

    def validate(language, inputs, options, attrs, md):
        options.update(inputs)
        return True

    def keep(source, language, class_name, options, md, **kwargs):
        found.append(Fence(len(found) + 1, language, options.get("title"), source))
        return ""

    fence = {"name": "*", "class": "", "format": keep, "validator": validate}
    md = markdown.Markdown(
        extensions=["pymdownx.superfences"],
        extension_configs={"pymdownx.superfences": {"custom_fences": [fence]}},
    )
    md.convert(text)
    return found


def guide_tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of the page: its rows (the header first), each a list of cells."""
    tables, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


# ----------------------------------------------------------------------------- writing the project


def toml_text(data: dict, table: tuple[str, ...] = ()) -> str:
    """``data`` (tables of strings, numbers, booleans and lists of them) as TOML; checked by reading it back."""

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(f"cannot write {v!r} as TOML here")

    def key(k: str) -> str:
        return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else value(k)

    scalars = [f"{key(k)} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    out = (f"[{'.'.join(map(key, table))}]\n" if table and scalars else "") + "".join(s + "\n" for s in scalars)
    for k, v in data.items():
        if isinstance(v, dict):
            out += ("\n" if out else "") + toml_text(v, (*table, k))
    if not table:
        assert tomllib.loads(out) == data, out
    return out


def merged(into: dict, new: dict) -> dict:
    out = dict(into)
    for k, v in new.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def write_file(root: Path, fence: Fence) -> None:
    path = root / fence.title
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    if fence.title in MERGED and before:
        if fence.title.endswith(".toml"):
            text = toml_text(merged(tomllib.loads(before), tomllib.loads(fence.text)))
        else:
            text = yaml.safe_dump(
                merged(yaml.safe_load(before), yaml.safe_load(fence.text)), sort_keys=False, allow_unicode=True
            )
    elif before and (fence.title in ADDED_BELOW or fence.title.endswith(".md")):
        text = before.rstrip("\n") + "\n\n" + fence.text
    else:
        text = fence.text
    path.write_text(text, encoding="utf-8")


# ----------------------------------------------------------------------------- running its commands


@dataclass
class Ran:
    where: str  # the block it came from
    command: str
    code: int
    output: str


@dataclass
class Followed:
    root: Path
    fences: list[Fence]
    pages: list[str] = field(default_factory=list)  # the pages the guide wrote, from the project root
    ran: list[Ran] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # pip install lines

    @property
    def failed(self) -> Ran | None:
        return next((r for r in self.ran if r.code != 0), None)


def environment() -> dict[str, str]:
    """The shell a user of the generator has: its python and mkdocs first on the PATH."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**GIT_ENV, "PATH": path, "NO_MKDOCS_2_WARNING": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def run(done: Followed, where: str, command: str, env: dict[str, str]) -> bool:
    if re.match(r"\s*pip3? install\b", command):
        done.skipped.append(command)
        return True
    proc = subprocess.run(
        ["bash", "-e", "-c", command], cwd=done.root, env=env, capture_output=True, text=True, timeout=900
    )
    done.ran.append(Ran(where, command, proc.returncode, proc.stdout + proc.stderr))
    return proc.returncode == 0


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)


def start_history(root: Path) -> None:
    """The project as a git repository whose base branch holds what it was before the first command."""
    git(root, "init", "-q", "-b", BASE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "The project before the guide's first command")
    git(root, "update-ref", f"refs/remotes/origin/{BASE}", "HEAD")


def run_workflow(done: Followed, fence: Fence, env: dict[str, str]) -> bool:
    workflow = yaml.safe_load(fence.text)
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "run" not in step:
                continue  # an action (checkout, setup-python): what this test's environment already is
            step_env = {k: str(v).replace("${{ github.base_ref }}", BASE) for k, v in (step.get("env") or {}).items()}
            unknown = [t for t in [step["run"], *step_env.values()] if "${{" in t]
            assert not unknown, f"{fence}: the step {step['run']!r} uses an expression this test cannot evaluate"
            if not run(done, str(fence), step["run"], {**env, **step_env}):
                return False
    return True


def follow(root: Path) -> Followed:
    text = GUIDE.read_text(encoding="utf-8")
    done = Followed(root, guide_fences(text))
    env = environment()
    started = False
    for fence in done.fences:
        if fence.title:
            write_file(root, fence)
            if fence.title.endswith(".md") and fence.title not in done.pages and in_docs(root, fence.title):
                done.pages.append(fence.title)
            if fence.title.startswith(".github/workflows/") and not run_workflow(done, fence, env):
                return done
        elif fence.language in SHELL:
            if not started:
                start_history(root)
                started = True
            for line in fence.text.splitlines():
                if line.strip() and not line.lstrip().startswith("#") and not run(done, str(fence), line, env):
                    return done
        else:
            pytest.fail(
                f"{fence} is neither a file of the example project nor commands: give it a title naming the file "
                '(```python title="model.py"), or make it a block of sh commands'
            )
    return done


@pytest.fixture(scope="module")
def followed(tmp_path_factory) -> Followed:
    return follow(tmp_path_factory.mktemp("guide") / "example")


# ----------------------------------------------------------------------------- the tests


def test_every_command_of_the_guide_runs_in_the_project_it_describes(followed):
    failed = followed.failed
    assert failed is None, f"{failed.where}: '{failed.command}' exited {failed.code}:\n{failed.output[-6000:]}"
    commands = [r.command for r in followed.ran]
    # what the page promises to take a project through: set up, review, build strictly
    for needed in ("python -m docs_hooks init", "python -m docs_hooks relock", "mkdocs build --strict"):
        assert needed in commands, f"the guide never runs {needed!r}; it ran: {commands}"


def test_every_trace_block_of_the_guide_expands_in_the_strict_build(followed):
    assert followed.failed is None, "the guide's commands failed: see the test above"
    expanded = 0
    for page in followed.pages:
        source = (followed.root / page).read_text(encoding="utf-8")
        kinds = re.findall(r"^```trace-([a-z]+)", source, re.M)
        assert kinds, f"{page}: the guide wrote a page with no trace block"
        built = built_page(followed.root, page)
        assert 'class="admonition failure trace-error"' not in built, trace_errors(built)
        for kind in dict.fromkeys(kinds):
            assert kind in EXPANDED, f"{page}: no sign of a trace-{kind} block known to this test; add it to EXPANDED"
            shown = len(re.findall(EXPANDED[kind], built))
            want = kinds.count(kind)
            assert shown >= want, (
                f"{page}: {want} trace-{kind} block(s), {shown} expanded in {built_path(followed.root, page)}"
            )
            expanded += want
        assert "```trace-" not in htmllib.unescape(re.sub(r"<[^>]+>", "", built)), f"{page}: a block left as text"
    assert expanded > 0, "the guide wrote no trace block"


def test_the_pages_inline_references_link_to_the_code(followed):
    assert followed.failed is None, "the guide's commands failed: see the first test"
    for page in followed.pages:
        source = (followed.root / page).read_text(encoding="utf-8")
        refs = re.findall(r"\[\[([^\]]+)\]\]", source)
        built = built_page(followed.root, page)
        left = [r for r in refs if f"[[{r}]]" in htmllib.unescape(built)]
        assert left == [], f"{page}: inline references left as text"
        links = re.findall(r'<a href="[^"]*source/[^"]*#L\d+"[^>]*><code>[\w/.]+\.py:\d+(?:-\d+)?</code></a>', built)
        assert len(links) >= len(refs), f"{page}: {len(refs)} inline references, {len(links)} links to the code"


NODE_PAGE = """\
globalThis.window = globalThis;
globalThis.document = { readyState: "loading", addEventListener() {} };
const fs = require("fs");
const [scripts, name, inputs] = JSON.parse(fs.readFileSync(0, "utf8"));
for (const script of scripts) (0, eval)(fs.readFileSync(script, "utf8"));
process.stdout.write(JSON.stringify(window.traceWidgets.runKernel(name, inputs)));
"""


def test_the_guides_browser_kernels_compute_what_the_python_recorded(followed):
    """Each editable example of the guide's pages, recomputed by the kernel its scripts register (in node, as
    the page's scripts would in a browser), from the recorded inputs: every row the kernel computes must
    give the recorded value."""
    assert followed.failed is None, "the guide's commands failed: see the first test"
    config = yaml.load((followed.root / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    own = [s for s in config.get("extra_javascript", []) if not s.startswith("assets/docs_hooks/")]  # the site's
    scripts = [str(followed.root / docs_dir(followed.root) / s) for s in own]
    scripts.append(str(REPO / "docs_hooks" / "assets" / "trace-widgets.js"))  # the generator's, once
    checked = 0
    for page in followed.pages:
        built = built_page(followed.root, page)
        for raw in re.findall(
            r'<script type="application/json" class="trace-example-data">(.*?)</script>', built, re.S
        ):
            data = json.loads(raw)
            proc = subprocess.run(
                ["node", "-e", NODE_PAGE],
                input=json.dumps([scripts, data["function"], data["inputs"]]),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 0, f"{page}: the kernel of {data['function']} failed:\n{proc.stderr}"
            got = {re.sub(r"\s+", "", k): v for k, v in json.loads(proc.stdout).items()}
            for row in data["rows"]:
                value = got.get(re.sub(r"\s+", "", row["code"]))
                assert value is not None, f"{page}: the kernel of {data['function']} does not compute {row['code']}"
                want, have = row["value"], value
                where = f"{page}: {row['code']} by the kernel of {data['function']}: {have}, recorded: {want}"
                assert have["shape"] == want["shape"], where
                assert np.allclose(have["values"], want["values"], rtol=1e-12, atol=0), where
                checked += 1
    assert checked > 0, "the guide shows no editable example"


def docs_dir(root: Path) -> str:
    """The docs folder the project's mkdocs.yml names (init writes one)."""
    path = root / "mkdocs.yml"
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) if path.exists() else None
    return (config or {}).get("docs_dir", "docs")


def project_of(root: Path, page: str) -> Path:
    """The project a page of the guide belongs to: the innermost folder above it that holds a pyproject.toml
    (the guide's second project lives in a folder of the first)."""
    for folder in Path(page).parents:
        if folder != Path(".") and (root / folder / "pyproject.toml").is_file():
            return root / folder
    return root


def in_docs(root: Path, page: str) -> bool:
    project = project_of(root, page)
    return (root / page).relative_to(project).is_relative_to(docs_dir(project))


def built_path(root: Path, page: str) -> str:
    """Where MkDocs writes a page of the docs folder (directory URLs): docs/norm.md -> site/norm/index.html;
    from the guide's root."""
    project = project_of(root, page)
    rel = (root / page).relative_to(project).relative_to(docs_dir(project))
    folder = rel.parent if rel.stem == "index" else rel.parent / rel.stem
    return (project.relative_to(root) / "site" / folder / "index.html").as_posix()


def built_page(root: Path, page: str) -> str:
    return (root / built_path(root, page)).read_text(encoding="utf-8")


def trace_errors(built: str) -> str:
    boxes = re.findall(r'trace-error"><p class="admonition-title">Trace error</p><p>(.*?)</p>', built, re.S)
    return "trace errors on the page:\n" + "\n".join(htmllib.unescape(b) for b in boxes)


# ----------------------------------------------------------------------------- the settings tables


def table(first: str) -> dict[str, str]:
    """The guide's table whose first column is headed ``first``: each row's name (in backticks) -> its default."""
    found = [t for t in guide_tables(GUIDE.read_text(encoding="utf-8")) if t[0][:2] == [first, "default"]]
    assert len(found) == 1, f"docs/own-code.md has {len(found)} tables headed '{first} | default'"
    rows = {}
    for cells in found[0][1:]:
        name = re.fullmatch(r"`([\w.]+)`", cells[0])
        assert name, f"docs/own-code.md: the {first} {cells[0]!r} is not written as `name`"
        rows[name.group(1)] = cells[1]
    return rows


def cases(name: str, cell: str) -> list[tuple[str, str]]:
    """(the kind of project, the value the cell says the default is there) for a default as the guide writes it."""
    if m := re.fullmatch(r"`([^`]+)`", cell):
        return [("any", m.group(1))]
    if re.fullmatch(r"none(: .+)?", cell):
        return [("any", "none")]
    if m := re.fullmatch(r"`([^`]+)` when the project has that folder, else `([^`]+)`", cell):
        return [(f"a folder {m.group(1)}", m.group(1)), ("bare", m.group(2))]
    if m := re.fullmatch(r"the current commit, else `([^`]+)`", cell):
        return [("a git commit", "the current commit"), ("bare", m.group(1))]
    if m := re.fullmatch(r"`([^`]+)` with `repo_url`, else `([^`]+)`", cell):
        return [("a repo_url", m.group(1)), ("bare", m.group(2))]
    pytest.fail(
        f"docs/own-code.md: cannot read the default of {name}, {cell!r}; write it as `value`, none (or none: why), "
        "`folder` when the project has that folder, else `other`, the current commit, else `branch`, or "
        "`value` with `repo_url`, else `other`"
    )


def project(tmp_path: Path, kind: str) -> Path:
    root = tmp_path / re.sub(r"\W", "-", kind)
    root.mkdir(exist_ok=True)
    if kind.startswith("a folder "):
        (root / kind.split(" ", 2)[2]).mkdir(exist_ok=True)
    elif kind == "a repo_url":
        (root / "pyproject.toml").write_text('[tool.docs_hooks]\nrepo_url = "https://example.com/repo"\n')
    elif kind == "a git commit":
        (root / "a.py").write_text("x = 1\n")
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "one")
    return root


def shown(settings, name: str, value) -> str:
    """A setting's value as the guide's table writes it."""
    if name == "exclude":  # what the setting adds to what the index always leaves out
        value = [p for p in value if p not in DEFAULT_EXCLUDE and p != settings.rel(settings.docs_dir)]
    if isinstance(value, Path):
        return settings.rel(value)
    if value is None or value in ("", [], {}):
        return "none"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def test_the_settings_table_gives_every_setting_with_its_default(tmp_path):
    rows = table("setting")

    assert sorted(set(KNOWN_KEYS) - set(rows)) == [], "settings missing from the guide's table"
    assert sorted(set(rows) - set(KNOWN_KEYS)) == [], "settings in the guide's table that the code does not know"
    asserted = 0
    for name, cell in rows.items():
        for kind, documented in cases(name, cell):
            root = project(tmp_path, kind)
            settings = load_settings(root)
            if documented == "the current commit":
                head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
                documented = head.stdout.strip()
            where = "any project" if kind == "any" else f"a project with {kind}" if kind != "bare" else "a bare folder"
            assert shown(settings, name, getattr(settings, name)) == documented, f"the default of {name} in {where}"
            asserted += 1
    assert asserted >= len(KNOWN_KEYS)


def test_the_plugin_options_table_gives_every_option_with_its_default():
    rows = table("option")
    options = dict(PluginConfig._schema)

    assert sorted(set(options) - set(rows)) == [], "plugin options missing from the guide's table"
    assert sorted(set(rows) - set(options)) == [], "options in the guide's table that the plugin does not have"
    for name, cell in rows.items():
        [(_, documented)] = cases(name, cell)
        default = options[name].default
        assert (yaml.safe_dump(default).split("\n")[0] if default is not None else "none") == documented, name

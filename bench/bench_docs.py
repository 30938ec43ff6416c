"""What the documentation generator adds to MkDocs where an author feels it: the site, built and served.

Every figure is a ratio to the floor: MkDocs alone building the same authored
pages, with the docs_hooks plugin taken out of mkdocs.yml (its trace blocks then
show as plain code blocks). Everything runs on a copy of the project in a
temporary folder (the project's own docs/, .cache/ and site/ are never
written); each figure is the median of --runs runs, and the machine is shared
and noisy, so the ratios are what to read. Nothing passes or fails.

Figures (seconds, median of --runs runs; each build in a fresh process unless it says serve):

floor            ``mkdocs build`` of the same pages, mkdocs.yml without the plugin
cold             ``mkdocs build`` with no .cache/docs_hooks
cold, line map   ``mkdocs build`` with only the line map ``make test`` writes in the cache
cold, after tests  ``mkdocs build`` with what the test run wrote in the cache: the line map, and the
                 recordings, formulas and specification the pages need (what a first build after
                 ``make test`` finds)
warm             ``mkdocs build`` with the cache the previous build left
serve            one process, as ``mkdocs serve`` does it: a first build, then a rebuild after a prose edit
                 of --page, then after a code edit (a function appended to a module of the source, none of
                 the documented ones touched), each against the floor's rebuild after the same prose edit;
                 each edit comes --pause seconds (default 2) after the build before it, as an author's
                 does; every run edits anew (the copy's cache would know a repeated edit)
serve --dirty    the same as ``mkdocs serve --dirty`` does it (only what changed is rebuilt), against the
                 floor's dirty rebuild after the same prose edit
templates kept   serve's and serve --dirty's figures also against a second floor: MkDocs alone given the
                 template cache the plugin gives its own builds (docs_hooks.plugin_templates), which spares
                 MkDocs compiling the theme's templates at every rebuild; the first ratio is what an author
                 feels, the second what the generator adds beyond what it saves MkDocs
memory           the serve process and its children, in MB: after the first build, after the first code
                 edit (which starts the children a code edit needs) and after --edits edits more (prose and
                 code in turn), and how many child processes it has
check            ``python -m docs_hooks check``, warm

Run:   .venv/bin/python bench/bench_docs.py [--runs 3] [--edits 50] [--page layer-norm.md] [--pause 2]
       [--profile DIR]
With --devices NAME[,NAME] it measures instead what each speed device of the generator buys: a cold
build, the warm build after it and serve's rebuilds after a prose edit and a code edit, with the device turned off
against the same with everything on, alternated, each on a cleared cache (see DEVICES; turned off by
a sitecustomize.py in the copy).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
PAUSE = 2.0  # seconds between a build of mkdocs serve and the author's next edit
# What a copy of the project holds; docs_hooks is copied too (a snapshot of the generator as it is now),
# and PYTHONPATH points at the copy so that the build, its child processes and the CLI all use it.
COPY_ITEMS = ["src", "tests", "docs", "spec", "mkdocs.yml", "pyproject.toml", "package.json", "docs_hooks"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "site")
TARGETS = {"prose edit": 1.2, "code edit": 2.5, "warm": 1.3, "cold, after tests": 2.0}
MEMORY_TARGET_MB = 60  # growth of the serve process tree over the edits


# ----------------------------------------------------------------------------- helpers


def copy_project(dest: Path, source: Path = ROOT) -> Path:
    """A copy of the project in ``dest`` (node_modules symlinked), without caches."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COPY_ITEMS:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORE)
        elif src.exists():
            shutil.copy2(src, dest / name)
    os.symlink(node_modules(source), dest / "node_modules")
    return dest


def node_modules(source: Path) -> Path:
    """The KaTeX the copy renders with: the project's own node_modules, else this checkout's when both pin the same
    packages (a worktree of another commit has none). Without KaTeX no page is kept, so every figure would be wrong:
    the bench stops instead."""
    if (source / "node_modules").is_dir():
        return source / "node_modules"
    lock = "package-lock.json"
    same = (source / lock).is_file() and (source / lock).read_bytes() == (ROOT / lock).read_bytes()
    if same and (ROOT / "node_modules").is_dir():
        return ROOT / "node_modules"
    raise SystemExit(f"bench_docs: {source} has no node_modules (KaTeX): run 'npm ci' there first")


def env_for(project: Path | None) -> dict:
    env = dict(os.environ)
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.pop("COVERAGE_PROCESS_START", None)
    # Python as a user runs it: with its bytecode cache (a shell that turns it off would time compiling too).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if project is not None:
        env["PYTHONPATH"] = str(project)
    return env


def timed_run(cmd: list[str], cwd: Path, env: dict, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if check and proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc


def mkdocs_build(project: Path, site: Path, config: str = "mkdocs.yml", profile: Path | None = None) -> float:
    """Wall time of ``mkdocs build`` in a fresh process."""
    shutil.rmtree(site, ignore_errors=True)
    args = ["build", "-q", "-f", str(project / config), "-d", str(site)]
    cmd = [PYTHON, "-m", *(["cProfile", "-o", str(profile), "-m"] if profile else []), "mkdocs", *args]
    elapsed, _ = timed_run(cmd, project, env_for(project))
    return elapsed


def clear_cache(project: Path) -> None:
    shutil.rmtree(project / ".cache", ignore_errors=True)


def snapshot_cache(project: Path, to: Path) -> None:
    """What the cache holds now, copied to ``to`` (what the test run wrote, to start each build from)."""
    shutil.rmtree(to, ignore_errors=True)
    shutil.copytree(project / ".cache", to)


def restore_cache(project: Path, snapshot: Path) -> None:
    clear_cache(project)
    shutil.copytree(snapshot, project / ".cache")


def keep_only_line_map(project: Path) -> None:
    """The cache as a first build after ``make test`` finds it: the line map the test run wrote, nothing else."""
    cache = project / ".cache" / "docs_hooks"
    for entry in list(cache.iterdir()) if cache.is_dir() else []:
        if entry.name != "coverage":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def med(values: list[float]) -> float:
    return statistics.median(values)


def fmt(values: list[float]) -> str:
    return f"{med(values):7.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})"


# ----------------------------------------------------------------------------- the floor


def without_plugin(config_text: str) -> str:
    """mkdocs.yml without the docs_hooks plugin: MkDocs alone on the same pages."""
    if not re.search(r"^\s*-\s*docs_hooks\s*$", config_text, re.M):
        raise SystemExit("mkdocs.yml names no 'docs_hooks' under a block-style 'plugins:' list")
    lines = [line for line in config_text.split("\n") if not re.match(r"^\s*-\s*docs_hooks(\.extension)?\s*$", line)]
    return "\n".join(lines)


def make_floor(project: Path) -> str:
    """Write the floor's mkdocs.yml beside the project's; its file name."""
    text = (project / "mkdocs.yml").read_text(encoding="utf-8")
    (project / "mkdocs.floor.yml").write_text(without_plugin(text), encoding="utf-8")
    return "mkdocs.floor.yml"


# ----------------------------------------------------------------------------- edits


def first_prose_line(text: str) -> int:
    """Index of the first line of prose (a line starting with a letter, outside fences)."""
    fence = None
    for i, line in enumerate(text.split("\n")):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if m:
            fence = None if fence and m.group(1).startswith(fence) else (fence or m.group(1))
            continue
        if fence is None and re.match(r"^[A-Za-z]", line) and "[[" not in line and "$" not in line:
            return i
    raise SystemExit("no prose line to edit")


def edit_prose(path: Path, n: int) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    i = first_prose_line("\n".join(lines))
    lines[i] = re.sub(r" Edited \d+\.$", "", lines[i]) + f" Edited {n}."
    path.write_text("\n".join(lines), encoding="utf-8")


def code_file(project: Path) -> Path:
    """The module a code edit appends to: the first module of the source root (``source_root``), by path."""
    import tomllib

    settings = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {})
    source = project / settings.get("docs_hooks", {}).get("source_root", "src")
    return sorted(p for p in source.rglob("*.py") if not p.name.startswith(("test_", "_")))[0]


def coverage_tests(project: Path) -> list[str]:
    """The pytest arguments of the project's ``coverage_tests`` setting."""
    import tomllib

    settings = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8")).get("tool", {})
    return list(settings.get("docs_hooks", {}).get("coverage_tests", [])) or ["tests"]


def edit_code(path: Path, n: int) -> None:
    """A function appended (or the last one replaced): no documented function's code changes."""
    text = re.sub(r"\n\n\ndef _bench_edit_\d+\(\):\n    return \d+\n$", "\n", path.read_text(encoding="utf-8"))
    path.write_text(text.rstrip("\n") + f"\n\n\ndef _bench_edit_{n}():\n    return {n}\n", encoding="utf-8")


# ----------------------------------------------------------------------------- serve, in one process


def tree_rss(pid: int) -> tuple[float, int, float]:
    """Resident memory of the process ``pid`` and all its descendants, in MB, how many descendants, and the
    memory of ``pid`` alone, read in the same pass (so that a thread allocating between two readings cannot put
    the process above its tree)."""

    def children(p: int) -> list[int]:
        out = []
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                out += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        return out

    total, count, own, todo = 0, -1, 0, [pid]
    while todo:
        p = todo.pop()
        count += 1
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    kb = int(line.split()[1])
                    total += kb
                    if p == pid:
                        own = kb
        except OSError:
            continue
        todo += children(p)
    return total / 1024, count, own / 1024


def folder_mb(folder: Path) -> float:
    """The size of the files under ``folder`` (the cache folder), in MB."""
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def serve_child(
    config_file: str,
    page: str,
    edits: int,
    profile: str | None,
    first_edit: int = 0,
    dirty: bool = False,
    pause: float = PAUSE,
    templates: bool = False,
    code_module: str | None = None,
) -> None:
    """Runs in a fresh process, as mkdocs serve does: a first build, a prose edit, a code edit, then ``edits``
    edits in turn, each a rebuild with a fresh config and the same plugin object (``dirty``: as
    ``mkdocs serve --dirty`` does them; ``templates``: a site without the plugin given the template cache the
    plugin gives its own, ``floor_templates``). The prose edit and the code edit come ``pause`` seconds after the
    build before them, as an author's would; the ``edits`` come at once. Edits are numbered from
    ``first_edit``, so that no run repeats another's (the cache the copy keeps would know it). ``code_module``:
    the module a code edit appends to (from the project's root; by default ``code_file``). Prints JSON, with the
    pages the code edit took as they were, not rendered again (``code edit kept``: their reads of the code held,
    see docs_hooks.base.reads), the plans it took as they were (``code edit plans kept``: each page is resolved
    from its file's text and from the text MkDocs hands over) and the blocks of pages rendered again it took as
    they were (``code edit blocks kept``)."""
    import gc
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    site_dir = tempfile.mkdtemp(prefix="bench_serve_")
    serve_url = "http://127.0.0.1:8000/"
    project = Path(config_file).parent
    plugins = None
    compiled = None  # the floor's template cache (``templates``)

    def rebuild() -> float:
        nonlocal plugins, compiled
        # As serve, a new collection of the plugins each rebuild, with the same plugin objects (MkDocs keeps
        # those that define on_startup)
        config = load_config(config_file=config_file, site_dir=site_dir)
        if plugins is None:
            config.plugins.on_startup(command="serve", dirty=dirty)
        plugins = config.plugins
        if templates:
            compiled = floor_templates(plugins, compiled)
        config.site_url = serve_url
        start = time.perf_counter()
        build(config, serve_url=serve_url, dirty=dirty)
        return time.perf_counter() - start

    page_path = project / "docs" / page
    code = project / code_module if code_module else code_file(project)
    out = {"first": rebuild()}
    gc.collect()
    out["rss first"], out["children first"], _ = tree_rss(os.getpid())
    time.sleep(pause)
    edit_prose(page_path, first_edit)
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    out["prose edit"] = rebuild()
    if profile:
        prof.disable()
        prof.dump_stats(profile)
    if "docs_hooks" in Path(config_file).read_text(encoding="utf-8"):
        time.sleep(pause)
        edit_code(code, first_edit)
        traces = plugins["docs_hooks"].session.traces if "docs_hooks" in plugins else None  # not the floor's
        counts = ("reused", "plans_reused", "blocks_reused")  # the last two: not in a generator before them
        before = {c: getattr(traces, c, 0) for c in counts}
        out["code edit"] = rebuild()
        if traces is not None:
            out["code edit kept"] = traces.reused - before["reused"]
            out["code edit plans kept"] = getattr(traces, "plans_reused", 0) - before["plans_reused"]
            out["code edit blocks kept"] = getattr(traces, "blocks_reused", 0) - before["blocks_reused"]
    gc.collect()
    # The children a code edit starts (the recorder, KaTeX) live until the next code edit: the tree is
    # compared from here on, like with like; the first build may have had none (every page kept).
    out["rss code"], out["children code"], out["own code"] = tree_rss(os.getpid())
    out["cache code"] = folder_mb(project / ".cache")
    children = []
    for n in range(1, edits + 1):
        if n % 2:
            edit_prose(page_path, first_edit + n)
        else:
            edit_code(code, first_edit + n)
        rebuild()
        children.append(tree_rss(os.getpid())[1])
    gc.collect()
    out["rss last"], out["children last"], out["own last"] = tree_rss(os.getpid())
    out["cache last"] = folder_mb(project / ".cache")
    out["children most"] = max(children, default=out["children code"])
    if compiled is not None:
        out["templates reused"] = compiled.reused
    plugins.on_shutdown()
    shutil.rmtree(site_dir, ignore_errors=True)
    print(json.dumps(out))


def floor_templates(plugins, cache=None):
    """Give the floor's theme environment, in the build of ``plugins``, the template cache the plugin gives its
    own (``docs_hooks.plugin_templates``; ``cache``, the one of the builds before), at the same event: what
    MkDocs alone would take with it."""
    from docs_hooks.plugin_templates import CompiledTemplates

    cache = CompiledTemplates() if cache is None else cache

    def on_env(env, *, config, files):
        cache.attach(env)
        return env

    plugins.events["env"].append(on_env)
    return cache


def serve(
    project: Path,
    config: str,
    page: str,
    edits: int,
    profile: Path | None = None,
    first_edit: int = 0,
    dirty: bool = False,
    pause: float = PAUSE,
    templates: bool = False,
    code_module: str | None = None,
) -> dict:
    options = {
        "profile": str(profile) if profile else None,
        "first_edit": first_edit,
        "dirty": dirty,
        "pause": pause,
        "templates": templates,
        "code_module": code_module,
    }
    cmd = [PYTHON, str(Path(__file__).resolve()), "_serve", str(project / config), page, str(edits)]
    _, proc = timed_run([*cmd, json.dumps(options)], project, env_for(project))
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- speed devices

# Each speed device of the generator, and how the copy turns it off (a sitecustomize.py, imported by
# every Python process that runs with PYTHONPATH at the copy, patches it when BENCH_DOCS_WITHOUT names it).
DEVICES = {
    "prefetch": "every plan's needs started in the background as soon as the pages are resolved (Build._prefetch)",
    "gc-freeze": "the collector kept off the build's long-lived objects (base.gcpause)",
    "light-search": "Material's search plugin handed each page without its spans, and what it made of a page kept "
    "(plugin_search.SearchReading; search-kept is the second alone)",
    "search-process": "the pages Material's search plugin has to read, in a build with many, read by a process beside "
    "the build as MkDocs converts them (plugin_search.SearchProcess)",
    "search-kept": "what the search plugin made of a page kept across builds, by its HTML (render.search.IndexedPages)",
    "search-parts": "a page the search plugin reads in the build read a part at a time, each part's sections kept "
    "by its HTML, so an edited page has only the part that changed read again (search_reader.Sections)",
    "prune-daily": "the cache folder pruned once a day, not after every build (base.cachedir.prune_if_due)",
    "warm-up": "the call graph made, and each page read back rendered once, while mkdocs serve waits for the "
    "author's edit (core.site.Build.warm_up, core.warmup)",
    "settle-later": "a build replaced after a code edit collected while the author reads, not in the rebuild "
    "(core.session.Session.settle)",
    "recording-children": "a large batch of recordings shared with a helper process per spare core "
    "(run.record.Recorder._run)",
    "source-nav": "the site navigation of the source pages rendered once per build for all those at one depth, "
    "under Material (plugin_material.SourceNav)",
    "template-cache": "the theme's templates compiled once while mkdocs serve runs, not at every rebuild "
    "(plugin_templates.CompiledTemplates)",
    "fences-kept": "fenced code (the listings of entries and excerpts) highlighted once per text, its HTML kept "
    "across builds (fences.Fences)",
    "index-kept": "each unchanged file's part of the code index taken from the last index of a serve, not read "
    "back from the cache (resolve.indexing.IndexedFiles)",
    "map-read-once": "the last line map, carried over by a serve's code edits, read as a map once "
    "(run.coverage_map.MapsRead)",
    "graph-answers-kept": "the call graph's answers to the kept pages' reads taken from an earlier build of a "
    "serve while the graph's inputs are the same (core.kept.GraphAnswers)",
    "written-later": "the pages a serve's code edit took as they were written to the cache while serve waits, "
    "not in the rebuild (core.kept.KeptPages.put_later)",
    "map-written-later": "the line map a serve's code edit carried over written to the cache while serve waits, "
    "not in the rebuild (run.coverage_map.MapsRead.write_later)",
    "parsed-kept": "the pages parsed kept by a serve for all its builds: a page whose texts did not change is not "
    "read back from the cache folder (core.planned.ParsedPages)",
    "coverage-answers-kept": "line coverage's answers to the kept pages' reads taken from an earlier build of a serve "
    "while the line map is the same (core.kept.CoverageAnswers)",
    # Not a device but a cost: what noting who called which function, in the coverage run and the
    # recordings, adds (off/on below 1).
    "observe-calls": "the calls noted while the tests and the model run run (run.observed.CallObserver)",
}
SITECUSTOMIZE = """
import os

_off = os.environ.get("BENCH_DOCS_WITHOUT")
if _off:
    import contextlib

    from docs_hooks import fences, plugin, plugin_search
    from docs_hooks.base import gcpause
    from docs_hooks.core import kept, planned, session, site
    from docs_hooks.render import search
    from docs_hooks.resolve import indexing
    from docs_hooks.run import coverage_map, observed, record

    for owner, name in [(site.Build, "_prefetch"), (gcpause, "freeze"), (site, "paused"),
                        (observed.CallObserver, "_hook"), (plugin.SearchReading, "wrap"),
                        (search.IndexedPages, "get"), (plugin, "prune_if_due"), (site.Build, "warm_up"),
                        (record, "usable_cores"), (session.Session, "settle"), (plugin, "material_navigation"),
                        (plugin_search, "PROCESS_FROM"), (fences.Fences, "attach"), (plugin_search, "_stock_index"),
                        (plugin.CompiledTemplates, "attach"), (indexing.IndexedFiles, "get"),
                        (coverage_map.MapsRead, "read"), (kept.GraphAnswers, "of"),
                        (kept.KeptPages, "put_later"), (coverage_map.MapsRead, "write_later"),
                        (planned, "ParsedPages"), (kept.CoverageAnswers, "of")]:
        if not hasattr(owner, name):  # the generator moved on: a patch of nothing would measure nothing
            raise SystemExit(f"bench_docs: {owner.__name__}.{name} no longer exists; update SITECUSTOMIZE")

    if _off == "prefetch":
        site.Build._prefetch = lambda self, plans, pages: None
    elif _off == "gc-freeze":
        for module in (site, gcpause):
            module.freeze = module.unfreeze = lambda: None
            module.paused = contextlib.nullcontext
        session.gcpause = gcpause
    elif _off == "observe-calls":
        observed.CallObserver._hook = lambda self: None  # no trace or profile function: nothing noted
    elif _off == "light-search":
        plugin.SearchReading.wrap = lambda self, config: None
    elif _off == "search-process":
        plugin_search.PROCESS_FROM = 10**12  # no build has that much to read
    elif _off == "search-kept":
        search.IndexedPages.get = lambda self, key: None
    elif _off == "prune-daily":
        from docs_hooks.base import cachedir

        plugin.prune_if_due = cachedir.prune
    elif _off == "warm-up":
        site.Build.warm_up = lambda self: None
    elif _off == "recording-children":
        record.usable_cores = lambda: 1
    elif _off == "settle-later":
        session.Session.settles = property(lambda self: False, lambda self, value: None)
    elif _off == "source-nav":
        plugin.material_navigation = lambda env: False
    elif _off == "fences-kept":
        fences.Fences.attach = lambda self, md: None
    elif _off == "template-cache":
        plugin.CompiledTemplates.attach = lambda self, env: None
    elif _off == "index-kept":
        indexing.IndexedFiles.get = lambda self, key: None
    elif _off == "map-read-once":
        coverage_map.MapsRead.read = lambda self, raw: coverage_map.read_map(raw.decode("utf-8"))
    elif _off == "graph-answers-kept":
        kept.GraphAnswers.of = lambda self, inputs: {}  # every build's answers its own
    elif _off == "written-later":
        kept.KeptPages.put_later = kept.KeptPages.put
    elif _off == "map-written-later":
        def write_now(self, path, data):
            coverage_map.write_entry(path, data)
            coverage_map._trim(path.parent)

        coverage_map.MapsRead.write_later = write_now
    elif _off == "coverage-answers-kept":
        kept.CoverageAnswers.of = lambda self, coverage, tests: {}  # every build's answers its own
    elif _off == "parsed-kept":
        plans_init = planned.SitePlans.__init__
        planned.SitePlans.__init__ = lambda self, project, kinds, order, parsed=None: plans_init(
            self, project, kinds, order
        )  # each build parses (or reads back) its own
    elif _off == "search-parts":
        plugin_search._stock_index = lambda index: False  # every page read whole, by the search plugin's handler
"""


def measure_devices(project: Path, work: Path, runs: int, names: list[str], page: str) -> None:
    """A cold build, a warm build, and the rebuild of a serve process after a prose edit of ``page``, without
    each device against the same with all of them, alternated; prints the ratios."""
    unknown = sorted(set(names) - set(DEVICES))
    if unknown:
        raise SystemExit(f"bench_docs: no speed device named {', '.join(unknown)}; the devices: {', '.join(DEVICES)}")
    (project / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    print("== what each speed device buys: without it / with everything on ==")
    print(
        "   cold: a build with no cache; warm: the next build; prose edit, code edit: serve's rebuilds after a prose "
        "edit, then a code edit"
    )
    edit = 20000
    for device in names:
        figures: dict[str | None, dict[str, list[float]]] = {
            w: {"cold": [], "warm": [], "prose edit": [], "code edit": []} for w in (None, device)
        }
        for _ in range(runs):
            for without, times in figures.items():
                if without:
                    os.environ["BENCH_DOCS_WITHOUT"] = without
                try:
                    clear_cache(project)
                    times["cold"].append(mkdocs_build(project, work / "site"))
                    times["warm"].append(mkdocs_build(project, work / "site"))
                    edit += 1000
                    served = serve(project, "mkdocs.yml", page, 0, first_edit=edit)
                    times["prose edit"].append(served["prose edit"])
                    times["code edit"].append(served["code edit"])
                finally:
                    os.environ.pop("BENCH_DOCS_WITHOUT", None)
        on, off = figures[None], figures[device]
        shown = "; ".join(
            f"{what} off/on = {med(off[what]) / med(on[what]):5.2f}x (off {fmt(off[what])}; on {fmt(on[what])})"
            for what in on
        )
        print(f"{device:14s} {shown}\n               {DEVICES[device]}")
    (project / "sitecustomize.py").unlink()


# ----------------------------------------------------------------------------- report


def load_line() -> str:
    return f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def ratio(name: str, value: float, floor: float) -> str:
    target = TARGETS.get(name)
    return f"{value / floor:5.2f}x" + (f"  (target <= {target}x)" if target else "")


def kept(value: float, floor: float) -> str:
    """The ratio to the floor given the plugin's template cache: what the generator adds beyond what it saves
    MkDocs (see floor_templates)."""
    return f"; {value / floor:5.2f}x the floor with its templates kept"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--edits", type=int, default=50, help="edits of the serve memory figure")
    parser.add_argument("--page", default="layer-norm.md", help="the page a prose edit edits")
    parser.add_argument("--project", type=Path, default=ROOT, help="the project to copy (default: this one)")
    parser.add_argument("--profile", type=Path, help="write cProfile files of a cold build and a prose edit here")
    parser.add_argument("--devices", help="measure these speed devices instead (comma-separated), or 'all'")
    parser.add_argument(
        "--code-file", help="the module a code edit appends to, from the project's root (default: the first module)"
    )
    parser.add_argument(
        "--pause", type=float, default=PAUSE, help=f"seconds an author takes before an edit (default {PAUSE})"
    )
    args = parser.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="bench_docs_") as tmp:
        work = Path(tmp)
        project = copy_project(work / "project", args.project)
        if args.devices:
            names = list(DEVICES) if args.devices == "all" else args.devices.split(",")
            measure_devices(project, work, args.runs, names, args.page)
            print(load_line())
            return
        floor_config = make_floor(project)
        names = ("floor", "cold", "cold, line map", "cold, after tests", "warm", "check")
        figures: dict[str, list[float]] = {k: [] for k in names}
        for n in range(args.runs):
            figures["floor"].append(mkdocs_build(project, work / "site-floor", floor_config))
            clear_cache(project)
            profile = args.profile / "cold.prof" if args.profile and n == 0 else None
            figures["cold"].append(mkdocs_build(project, work / "site", profile=profile))
            figures["warm"].append(mkdocs_build(project, work / "site"))
            check, _ = timed_run([PYTHON, "-m", "docs_hooks", "check"], project, env_for(project), check=False)
            figures["check"].append(check)
        # What `make test` writes (its pytest plugin), once: the line map of the tests coverage_tests names, and
        # what the pages need of the run stage (python -m docs_hooks record).
        tests = coverage_tests(project)
        clear_cache(project)
        timed_run([PYTHON, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], project, env_for(project))
        snapshot_cache(project, work / "after-tests")
        for _ in range(args.runs):
            restore_cache(project, work / "after-tests")
            figures["cold, after tests"].append(mkdocs_build(project, work / "site"))
            restore_cache(project, work / "after-tests")
            keep_only_line_map(project)
            figures["cold, line map"].append(mkdocs_build(project, work / "site"))
        floor = med(figures["floor"])
        print(f"== the site ({args.runs} runs each; ratios to the floor, MkDocs alone on the same pages) ==")
        for name, values in figures.items():
            extra = "" if name in ("floor", "check") else ratio(name, med(values), floor)
            print(f"{name:17s} {fmt(values)}  {extra}")
        profile = args.profile / "prose-edit.prof" if args.profile else None
        # Every run edits anew (numbered apart): a run that repeated another's edit would find it in the cache.
        served = [
            serve(
                project,
                "mkdocs.yml",
                args.page,
                0 if i else args.edits,
                profile,
                1000 * (i + 1),
                pause=args.pause,
                code_module=args.code_file,
            )
            for i in range(args.runs)
        ]
        floors, kept_floors = (
            [
                serve(project, floor_config, args.page, 0, first_edit=1000 * (i + 1), pause=args.pause, templates=t)
                for i in range(args.runs)
            ]
            for t in (False, True)
        )
        floor_edit = med([f["prose edit"] for f in floors])
        kept_edit = med([f["prose edit"] for f in kept_floors])
        print(
            f"\n== serve: rebuilds in one process ({args.runs} runs; each edit {args.pause:g} s after the build "
            "before it; against the floor's prose edit, and against the floor's with its templates compiled once) =="
        )
        print(f"{'floor, prose edit':22s} {fmt([f['prose edit'] for f in floors])}")
        print(f"{'  templates kept':22s} {fmt([f['prose edit'] for f in kept_floors])}")
        for name in ("first", "prose edit", "code edit"):
            values = [s[name] for s in served]
            print(f"{name:22s} {fmt(values)}  {ratio(name, med(values), floor_edit)}{kept(med(values), kept_edit)}")
        code = args.code_file or code_file(project).relative_to(project).as_posix()
        print(
            f"{'  pages kept':22s} {[s['code edit kept'] for s in served]} (their reads of the code held after {code})"
            f"; plans kept {[s.get('code edit plans kept') for s in served]}"
            f", blocks kept {[s.get('code edit blocks kept') for s in served]}"
        )
        dirty, dirty_floors, dirty_kept = (
            [
                serve(project, cfg, args.page, 0, None, 5000 + 1000 * i, True, args.pause, t, args.code_file)
                for i in range(args.runs)
            ]
            for cfg, t in (("mkdocs.yml", False), (floor_config, False), (floor_config, True))
        )
        dirty_floor = med([f["prose edit"] for f in dirty_floors])
        dirty_kept_edit = med([f["prose edit"] for f in dirty_kept])
        print(
            f"\n== serve --dirty: only what changed rebuilt ({args.runs} runs; against the floor's dirty prose edit, "
            "and against the same with its templates compiled once) =="
        )
        print(f"{'floor, prose edit':22s} {fmt([f['prose edit'] for f in dirty_floors])}")
        print(f"{'  templates kept':22s} {fmt([f['prose edit'] for f in dirty_kept])}")
        for name in ("prose edit", "code edit"):
            values = [s[name] for s in dirty]
            print(
                f"{name:22s} {fmt(values)}  {ratio(name, med(values), dirty_floor)}{kept(med(values), dirty_kept_edit)}"
            )
        print(
            f"{'  pages kept':22s} {[s['code edit kept'] for s in dirty]}; plans kept "
            f"{[s.get('code edit plans kept') for s in dirty]}, blocks kept {[s.get('code edit blocks kept') for s in dirty]}"
        )
        s = served[0]
        print(
            f"\n== serve memory over {args.edits} edits after the first code edit (prose and code in turn) ==\n"
            f"process tree {s['rss first']:.1f} MB after the first build ({s['children first']} child processes), "
            f"{s['rss code']:.1f} MB after the first code edit ({s['children code']}), {s['rss last']:.1f} MB after "
            f"the last edit ({s['children last']}; at most {s['children most']} after any edit): "
            f"{s['rss last'] - s['rss code']:+.1f} MB (target <= {MEMORY_TARGET_MB} MB)\n"
            f"the serve process alone: {s['own code']:.1f} MB -> {s['own last']:.1f} MB "
            f"({s['own last'] - s['own code']:+.1f} MB)\n"
            f"the cache folder: {s['cache code']:.1f} MB -> {s['cache last']:.1f} MB "
            f"({s['cache last'] - s['cache code']:+.1f} MB)"
        )
        print(load_line())


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_serve":
        options = json.loads(sys.argv[5])
        serve_child(
            sys.argv[2],
            sys.argv[3],
            int(sys.argv[4]),
            options["profile"],
            options["first_edit"],
            options["dirty"],
            options["pause"],
            options["templates"],
            options["code_module"],
        )
    else:
        main()

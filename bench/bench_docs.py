"""How much the documentation generator adds to an MkDocs build of the real site.

Why this exists: the trace blocks are expanded at build time (code index,
recorded runs, coverage map, KaTeX, the review lock). This prints how long the
site takes to build with the generator, next to the "floor": the same site
built from the already-expanded Markdown with the plugin off. Everything runs
on a copy of the project in a temporary folder (the project's own docs/,
.cache/ and site/ are never written), each figure is the median of several
runs, and the machine is shared and noisy, so the ratios are what to read.
Nothing passes or fails.

Figures (wall-clock seconds, median of --runs runs):

cold build       ``mkdocs build`` in a fresh process with no .cache/docs_hooks
floor cold       the same build of the expanded pages, mkdocs.yml without the docs_hooks plugin
cache kept       ``mkdocs build`` in a fresh process with the cache the previous build
                 left (CI with a restored cache when no code changed)
warm rebuild     in one process, as ``mkdocs serve`` does it: load the config and
                 build, edit one page's prose, load the config again and build again
                 with the same hooks module state; the second build is timed
floor warm       the same rebuild of the floor site
check            ``python -m docs_hooks check`` in a fresh process, warm and cold cache

For the cold build it also prints the CPU time of the MkDocs process alone and of its
child processes, and the least wall-clock time that much work can take on this
machine's cores, however well it overlaps: max(own CPU, all CPU / cores).

Targets: cold at most 1.5x the floor, warm at most 1.1x the floor, check at most 0.5 s.

Run:   .venv/bin/python bench/bench_docs.py [--runs 5] [--page layer-norm.md] [--breakdown] [--profile DIR]
With --breakdown it also prints the time of each stage of the generator and of MkDocs
(a cold build, a warm build, a rebuild after a prose edit, in one process).
With --profile DIR it also writes cProfile files of the cold build and of one
warm rebuild into DIR and prints their top functions.
With --devices it measures instead what each speed device of the generator buys: a
cold build with the device turned off against one with everything on, alternated,
each pair on a cleared cache (see DEVICES; turned off by a sitecustomize.py in the copy).
With --costs it measures, the same way, what a piece of evidence costs: a cold build
with it against one without it (see COSTS).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
# What a copy of the project holds; docs_hooks is copied too (a snapshot of the generator as it is now),
# and PYTHONPATH points at the copy so that the build, its child processes and the CLI all use it.
COPY_ITEMS = ["src", "tests", "docs", "spec", "mkdocs.yml", "pyproject.toml", "package.json", "docs_hooks"]
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
TARGETS = {"cold": 1.5, "warm": 1.1, "check": 0.5}


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
    if (source / "node_modules").exists():
        os.symlink(source / "node_modules", dest / "node_modules")
    return dest


def env_for(project: Path | None) -> dict:
    env = dict(os.environ)
    env["NO_MKDOCS_2_WARNING"] = "1"
    env.pop("COVERAGE_PROCESS_START", None)
    # Python as a user runs it: with its bytecode cache (a shell that turns it off would time compiling too).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if project is not None:
        env["PYTHONPATH"] = str(project)
    return env


def children_cpu() -> float:
    """CPU seconds (user + system) of every waited-for child process and its descendants so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def own_cpu() -> float:
    """CPU seconds of this process and of the children it waited for (KaTeX, recorder, coverage)."""
    return time.process_time() + children_cpu()


class Timing(float):
    """Wall-clock seconds, with the CPU seconds it took in ``.cpu`` (the machine is shared: CPU is steadier).

    ``.main`` is the CPU time of the build's own process alone, when it was measured
    (``mkdocs_build``); ``.cpu - .main`` is then what its child processes used.
    """

    def __new__(cls, wall: float, cpu: float, main: float | None = None):
        obj = super().__new__(cls, wall)
        obj.cpu = cpu
        obj.main = main
        return obj


def timed_run(cmd: list[str], cwd: Path, env: dict, check: bool = True) -> tuple[Timing, subprocess.CompletedProcess]:
    cpu0, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = Timing(time.perf_counter() - start, children_cpu() - cpu0)
    if check and proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc


# Runs MkDocs as ``python -m mkdocs`` does, and writes the CPU time of this process alone (all its
# threads, not its children) to the file named first. The exit handler is registered before MkDocs
# is imported, so it runs after every other one (the hooks stop their child processes in theirs).
MAIN_CPU_WRAPPER = """\
import atexit, resource, runpy, sys
out = sys.argv.pop(1)
def report():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        f.write(repr(ru.ru_utime + ru.ru_stime))
atexit.register(report)
sys.argv[0] = "mkdocs"
runpy.run_module("mkdocs", run_name="__main__", alter_sys=True)
"""


def mkdocs_build(
    project: Path, site: Path, config: str = "mkdocs.yml", profile: Path | None = None, env_project: Path | None = None
) -> Timing:
    """Wall time of ``mkdocs build`` in a fresh process (and, unless profiled, its own CPU time in ``.main``)."""
    shutil.rmtree(site, ignore_errors=True)
    args = ["build", "-q", "-f", str(project / config), "-d", str(site)]
    if profile:
        elapsed, _ = timed_run(
            [PYTHON, "-m", "cProfile", "-o", str(profile), "-m", "mkdocs", *args], project, env_for(env_project)
        )
        return elapsed
    with tempfile.NamedTemporaryFile("r", suffix=".cpu") as report:
        elapsed, _ = timed_run([PYTHON, "-c", MAIN_CPU_WRAPPER, report.name, *args], project, env_for(env_project))
        return Timing(elapsed, elapsed.cpu, float(report.read()))


# Each speed device of the generator, and how the copy turns it off (a sitecustomize.py, imported by
# every Python process that runs with PYTHONPATH at the copy, patches it when BENCH_DOCS_WITHOUT names it).
DEVICES = {
    "early-children": "the recorder and KaTeX started before the code is indexed (project._early_*)",
    "prefetch": "every page's formulas and recordings started in background threads (Workers.prefetch)",
    "late-coverage": "pages expanded while the coverage run goes on (stash.Late.defer), not waiting for it",
    "gc-freeze": "the collector kept off the build's long-lived objects (gcpause)",
}
# What a piece of evidence costs, turned off the same way: a cold build with it against one without it.
COSTS = {
    "observe-calls": "who called which function, noted while the tests run under coverage and while the recordings "
    "run (observed.CallObserver)",
}
SITECUSTOMIZE = """
import os

_off = os.environ.get("BENCH_DOCS_WITHOUT")
if _off:
    import contextlib

    from docs_hooks import expand
    from docs_hooks.base import gcpause
    from docs_hooks import plugin
    from docs_hooks import project
    from docs_hooks.render import stash
    from docs_hooks.run import coverage_map, observed

    for owner, name in [(project, "_early_recorder"), (project, "_early_katex"), (expand.Builder, "prefetch"),
                        (stash.Late, "defer"), (gcpause, "freeze"), (project, "paused"),
                        (observed.CallObserver, "_hook"), (coverage_map.CallsPerTest, "start")]:
        if not hasattr(owner, name):  # the generator moved on: a patch of nothing would measure nothing
            raise SystemExit(f"bench_docs: {owner.__name__}.{name} no longer exists; update SITECUSTOMIZE")

    if _off == "early-children":
        project._early_recorder = lambda *a, **k: None
        project._early_katex = lambda *a, **k: None
    elif _off == "prefetch":
        expand.Builder.prefetch = lambda self, pages: None
    elif _off == "late-coverage":
        stash.Late.defer = lambda self, make, on_error, key: make()
    elif _off == "gc-freeze":
        for module in (project, gcpause):
            module.freeze = module.unfreeze = lambda: None
            module.paused = contextlib.nullcontext
        plugin.gcpause = gcpause
    elif _off == "observe-calls":
        observed.CallObserver._hook = lambda self: None  # no profile or trace function: nothing observed
        coverage_map.CallsPerTest.start = lambda self: None
"""


def measure_devices(project: Path, work: Path, runs: int, names: list[str], costs: bool = False) -> None:
    """A cold build without each device against one with all of them, alternated; prints the ratios. With
    ``costs``, the same for the pieces of evidence of COSTS, printed as what each costs (on/off)."""
    (project / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    table = COSTS if costs else DEVICES
    if costs:
        print("== what each piece of evidence costs: cold build (no cache) with it / without it ==")
    else:
        print("== what each speed device buys: cold build (no cache) without it / with everything on ==")
    unknown = sorted(set(names) - set(table))
    if unknown:
        raise SystemExit(f"bench_docs: nothing named {', '.join(unknown)}; the choices: {', '.join(table)}")
    for device in names:
        what = table[device]
        on, off = [], []
        for _ in range(runs):
            clear_cache(project)
            on.append(mkdocs_build(project, work / "site-cold", env_project=project))
            clear_cache(project)
            os.environ["BENCH_DOCS_WITHOUT"] = device
            try:
                off.append(mkdocs_build(project, work / "site-cold", env_project=project))
            finally:
                del os.environ["BENCH_DOCS_WITHOUT"]
        if costs:
            ratio = f"on/off = {med(on) / med(off):5.2f}x, CPU {med_cpu(on) / med_cpu(off):5.2f}x"
            print(f"{device:15s} {ratio}  (on {fmt(on)}; off {fmt(off)})  {what}", flush=True)
        else:
            print(
                f"{device:15s} off/on = {med(off) / med(on):5.2f}x  (off {fmt(off)}; on {fmt(on)})  {what}", flush=True
            )
    (project / "sitecustomize.py").unlink()
    print(load_line())


def clear_cache(project: Path) -> None:
    shutil.rmtree(project / ".cache", ignore_errors=True)


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


def med(values: list[float]) -> float:
    return statistics.median(values)


def med_cpu(values: list[Timing]) -> float:
    return statistics.median(v.cpu for v in values)


def fmt(values: list[Timing]) -> str:
    return (
        f"{med(values):7.3f} s wall, {med_cpu(values):7.3f} s CPU  "
        f"(runs, wall: {', '.join(f'{v:.2f}' for v in values)})"
    )


# ----------------------------------------------------------------------------- the floor


CAPTURE_HOOK = '''\
"""Bench helper: writes each page's expanded Markdown and every generated file into a floor docs folder.

A page is written as MkDocs would get it without the plugin: with the generated HTML in it (not the
placeholders the plugin keeps it out of Markdown with), and with what the plugin fills in at the end of the
build (site-wide tables, what the coverage run measured) filled in. The stylesheets and scripts the plugin
links go to assets.json, for the floor's mkdocs.yml.
"""
import json
from pathlib import Path
from mkdocs.plugins import event_priority

OUT = Path({out!r})
PAGES = {{}}  # the file to write -> (its front matter, the expanded Markdown, the page's path for the plugin)


@event_priority(-100)
def on_config(config, **kwargs):
    links = {{"extra_css": [str(x) for x in config.extra_css],
              "extra_javascript": [str(x) for x in config.extra_javascript]}}
    (OUT.parent / "assets.json").write_text(json.dumps(links), encoding="utf-8")
    return config


@event_priority(-100)
def on_files(files, config, **kwargs):
    for f in files:
        if f.generated_by is not None:
            dest = OUT / f.src_uri
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.content_bytes)
    return files


@event_priority(-100)
def on_page_markdown(markdown, page, config, files, **kwargs):
    from mkdocs.utils.meta import get_data

    from docs_hooks.render.stash import unstash

    if page.file.abs_src_path is None:  # a page the plugin makes (a source page): written in on_post_build
        return markdown
    full = unstash(markdown, getattr(page, "docs_hooks_html", None) or [])
    source = Path(page.file.abs_src_path).read_text(encoding="utf-8")
    body, meta = get_data(source)
    head = source[: len(source) - len(body)] if meta and source.endswith(body) else ""
    PAGES[OUT / page.file.src_uri] = (head, full, page.file.abs_src_path)
    return markdown


@event_priority(-100)
def on_post_build(config, **kwargs):
    from docs_hooks.render import sources

    plugin = config.plugins["docs_hooks"]
    settings, builder = plugin.settings, plugin.builder
    for src_uri, repo_path in plugin.source_files.items():
        url = builder.links.source_pages[repo_path]
        dest = OUT / src_uri
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(sources.page_markdown(repo_path, plugin.source_page(repo_path, url)), encoding="utf-8")
    for dest, (head, full, src) in PAGES.items():
        text, _ = builder.finish(settings.rel(Path(src)), full)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(head + text, encoding="utf-8")
'''


def _without_plugin(config_text: str, links: dict) -> str:
    """mkdocs.yml without the docs_hooks plugin, linking the stylesheets and scripts the plugin linked."""
    if not re.search(r"^\s*-\s*docs_hooks\s*$", config_text, re.M):
        raise SystemExit("mkdocs.yml names no 'docs_hooks' under a block-style 'plugins:' list")
    out, skipping = [], False
    for line in config_text.split("\n"):
        if re.match(r"^\s*-\s*docs_hooks\s*$", line):
            continue
        if re.match(r"^(extra_css|extra_javascript)\s*:", line):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "\t", "-")) or not line.strip()):
            continue
        skipping = False
        out.append(line)
    for key, values in links.items():
        if values:
            out.append(f"{key}:\n" + "".join(f"  - {v}\n" for v in values))
    return "\n".join(out)


def _with_extra_hook(config_text: str, hook: Path) -> str:
    if re.search(r"^hooks\s*:", config_text, re.M):
        raise SystemExit("mkdocs.yml has a 'hooks:' list of its own; the bench adds one")
    return config_text.rstrip("\n") + f"\nhooks:\n  - {hook}\n"


def make_floor(project: Path, floor: Path, work: Path, env_project: Path | None = None) -> Path:
    """A project holding the site's pages already expanded, and a mkdocs.yml without hooks."""
    docs = floor / "docs"
    config_text = (project / "mkdocs.yml").read_text(encoding="utf-8")
    m = re.search(r"^docs_dir\s*:\s*(\S+)", config_text, re.M)
    docs_dir = m.group(1) if m else "docs"
    shutil.copytree(project / docs_dir, docs, ignore=IGNORE)
    hook = work / "capture_hook.py"
    hook.write_text(CAPTURE_HOOK.format(out=str(docs)), encoding="utf-8")
    (project / "mkdocs.capture.yml").write_text(_with_extra_hook(config_text, hook), encoding="utf-8")
    mkdocs_build(project, work / "site-capture", "mkdocs.capture.yml", env_project=env_project)
    (project / "mkdocs.capture.yml").unlink()
    links = json.loads((docs.parent / "assets.json").read_text(encoding="utf-8"))
    floor_config = _without_plugin(config_text, links)
    if docs_dir != "docs":
        floor_config = re.sub(r"^docs_dir\s*:.*$", "docs_dir: docs", floor_config, flags=re.M)
    (floor / "mkdocs.yml").write_text(floor_config, encoding="utf-8")
    return floor


# ----------------------------------------------------------------------------- warm rebuild, as serve does it


def serve_child(config_file: str, page: str, rebuilds: int, profile: str | None) -> None:
    """Runs in a fresh process: one build, then ``rebuilds`` times edit the page and build again."""
    import logging

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    site_dir = tempfile.mkdtemp(prefix="bench_serve_")
    serve_url = "http://127.0.0.1:8000/"

    def get_config():  # as mkdocs.commands.serve does: a fresh config, the same hooks modules
        config = load_config(config_file=config_file, site_dir=site_dir)
        return config

    config = get_config()
    config.plugins.on_startup(command="serve", dirty=False)
    config.site_url = serve_url
    start, cpu0 = time.perf_counter(), own_cpu()
    build(config, serve_url=serve_url, dirty=False)
    first = [time.perf_counter() - start, own_cpu() - cpu0]
    times = []
    page_path = Path(config.docs_dir) / page
    for n in range(rebuilds):
        edit_prose(page_path, n)
        prof = None
        if profile and n == rebuilds - 1:
            import cProfile

            prof = cProfile.Profile()
        start, cpu0 = time.perf_counter(), own_cpu()
        if prof:
            prof.enable()
        config = get_config()  # serve's builder() with no config: load it again
        config.site_url = serve_url
        build(config, serve_url=serve_url, dirty=False)
        if prof:
            prof.disable()
        times.append([time.perf_counter() - start, own_cpu() - cpu0])
        if prof:
            prof.dump_stats(profile)
    config.plugins.on_shutdown()
    shutil.rmtree(site_dir, ignore_errors=True)
    print(json.dumps({"first": first, "rebuilds": times}))


def serve_rebuilds(
    project: Path, page: str, rebuilds: int, env_project: Path | None, profile: Path | None = None
) -> dict:
    cmd = [PYTHON, str(Path(__file__).resolve()), "_serve", str(project / "mkdocs.yml"), page, str(rebuilds)]
    if profile:
        cmd.append(str(profile))
    _, proc = timed_run(cmd, project, env_for(env_project))
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"first": Timing(*data["first"]), "rebuilds": [Timing(*t) for t in data["rebuilds"]]}


# ----------------------------------------------------------------------------- where the time goes


class Timers:
    """Inclusive wall and CPU time of wrapped functions (only the outermost call of a recursive one)."""

    def __init__(self):
        self.data: dict[str, list[float]] = {}  # name -> [calls, wall, cpu]
        self.depth: dict[str, int] = {}

    def wrap(self, owner, attr: str, name: str | None = None) -> None:
        original = getattr(owner, attr, None)
        if original is None:  # the generator moved on: say so, rather than leave a stage out of the breakdown
            raise AttributeError(
                f"bench_docs: {getattr(owner, '__name__', owner)}.{attr} no longer exists; update install_timers"
            )
        if getattr(original, "_bench_timed", False):
            return
        name = name or f"{getattr(owner, '__name__', owner)}.{attr}"
        timers = self

        def timed(*args, **kwargs):
            depth = timers.depth.get(name, 0)
            if depth:
                timers.depth[name] = depth + 1
                try:
                    return original(*args, **kwargs)
                finally:
                    timers.depth[name] = depth
            timers.depth[name] = 1
            start, cpu0 = time.perf_counter(), own_cpu()
            try:
                return original(*args, **kwargs)
            finally:
                entry = timers.data.setdefault(name, [0, 0.0, 0.0])
                entry[0] += 1
                entry[1] += time.perf_counter() - start
                entry[2] += own_cpu() - cpu0
                timers.depth[name] = 0

        timed._bench_timed = True
        timed.__wrapped__ = original
        setattr(owner, attr, timed)

    def reset(self) -> dict:
        data, self.data = self.data, {}
        return data


def install_timers(timers: Timers) -> None:
    """Timers around the generator's stages and MkDocs' events (before the hooks module is loaded)."""
    import importlib

    import mkdocs.plugins
    import mkdocs.structure.pages

    mods = {
        name.rpartition(".")[2]: importlib.import_module(f"docs_hooks.{name}")
        for name in (
            "project",
            "expand",
            "resolve.context",
            "run.record",
            "run.math",
            "run.coverage_map",
            "run.spec",
            "resolve.lock",
        )
    }
    project, expand, context = mods["project"], mods["expand"], mods["context"]
    timers.wrap(project, "make_builder", "make_builder (index, spec, workers)")
    timers.wrap(project, "index_for", "  index_for (code index)")
    timers.wrap(mods["spec"], "compile_spec", "  compile_spec")
    timers.wrap(expand.Builder, "expand", "Builder.expand (all pages)")
    timers.wrap(expand.Builder, "await_background", "  waiting for the background work (recordings, KaTeX)")
    timers.wrap(expand, "parse_page", "  parse_page (YAML blocks)")
    timers.wrap(context.Context, "prose", "  Context.prose (inline references, formulas)")
    timers.wrap(expand, "read_entry", "  read_entry")
    timers.wrap(expand.Builder, "equation", "  equation")
    timers.wrap(expand.Builder, "entry_footer", "  entry_footer (generated sections)")
    timers.wrap(context.Context, "render_math", "  render_math (KaTeX)")
    timers.wrap(mods["math"].MathRenderer, "render_many", "    MathRenderer.render_many")
    timers.wrap(mods["coverage_map"].Measurement, "result", "    coverage run (waiting for its result)")
    timers.wrap(mods["record"].Recorder, "_cached", "    Recorder._cached (read cache)")
    timers.wrap(mods["record"].RecordingChild, "run", "    RecordingChild.run (child process)")
    timers.wrap(expand.Builder, "finish", "Builder.finish (what is made late)")
    timers.wrap(mods["lock"], "compare", "lock.compare")
    timers.wrap(mods["lock"], "read_lock", "lock.read_lock")

    original_init = expand.Builder.__init__

    def init_and_wrap(builder, *args, **kwargs):
        """Each block kind's handler of the new builder, timed on its own."""
        original_init(builder, *args, **kwargs)
        for table, label in (
            (builder.handlers, "  handler trace-{}"),
            (builder.inventory_kinds, "    inventory of: {}"),
        ):
            for kind, fn in list(table.items()):
                holder = type("H", (), {"f": staticmethod(fn)})
                timers.wrap(holder, "f", label.format(kind))
                table[kind] = holder.f

    expand.Builder.__init__ = init_and_wrap

    collection = mkdocs.plugins.PluginCollection
    original_run_event = collection.run_event

    def run_event(self, name, item=None, **kwargs):
        key = f"mkdocs event {name} (all plugins)"
        start, cpu0 = time.perf_counter(), own_cpu()
        try:
            return original_run_event(self, name, item, **kwargs)
        finally:
            entry = timers.data.setdefault(key, [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - start
            entry[2] += own_cpu() - cpu0

    collection.run_event = run_event
    timers.wrap(mkdocs.structure.pages.Page, "render", "mkdocs Page.render (Markdown to HTML)")


def breakdown_child(config_file: str, page: str) -> None:
    """Runs in a fresh process: a cold build, a warm build and a rebuild after a prose edit, timed by stage."""
    import logging

    timers = Timers()
    install_timers(timers)
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    logging.getLogger("mkdocs").setLevel(logging.ERROR)
    site_dir = tempfile.mkdtemp(prefix="bench_breakdown_")
    serve_url = "http://127.0.0.1:8000/"
    project = Path(config_file).parent
    results = {}
    for label in (
        "cold build (no cache, in-process)",
        "warm build (cache on disk, new config)",
        "rebuild after a prose edit (serve-like)",
    ):
        if label.startswith("cold"):
            clear_cache(project)
        if label.startswith("rebuild"):
            config_probe = load_config(config_file=config_file, site_dir=site_dir)
            edit_prose(Path(config_probe.docs_dir) / page, 99)
        timers.reset()
        start, cpu0 = time.perf_counter(), own_cpu()
        config = load_config(config_file=config_file, site_dir=site_dir)
        config.site_url = serve_url
        build(config, serve_url=serve_url, dirty=False)
        total = [1, time.perf_counter() - start, own_cpu() - cpu0]
        data = timers.reset()
        data["TOTAL (load_config + build)"] = total
        results[label] = data
    shutil.rmtree(site_dir, ignore_errors=True)
    print(json.dumps(results))


BREAKDOWN_ORDER = [
    "TOTAL (load_config + build)",
    "mkdocs event config (all plugins)",
    "make_builder (index, spec, workers)",
    "index_for (code index)",
    "compile_spec",
    "mkdocs event files (all plugins)",
    "mkdocs event page_markdown (all plugins)",
    "Builder.expand (all pages)",
    "waiting for the background work (recordings, KaTeX)",
    "parse_page (YAML blocks)",
    "Context.prose (inline references, formulas)",
    "read_entry",
    "equation",
    "entry_footer (generated sections)",
    "coverage run (waiting for its result)",
    "render_math (KaTeX)",
    "MathRenderer.render_many",
]
BREAKDOWN_TAIL = [
    "Recorder._cached (read cache)",
    "RecordingChild.run (child process)",
    "lock.read_lock",
    "lock.compare",
    "mkdocs Page.render (Markdown to HTML)",
    "mkdocs event page_context (all plugins)",
    "Builder.finish (what is made late)",
    "mkdocs event post_build (all plugins)",
]


def print_breakdown(results: dict) -> None:
    print("\n== where the time goes: inclusive seconds, wall / CPU; nested stages are counted in their callers too ==")
    labels = list(results)
    names: list[str] = []
    for data in results.values():
        for name in data:
            if name.strip() not in names:
                names.append(name.strip())
    for data in results.values():  # keys without their indentation
        for name in list(data):
            data[name.strip()] = data.pop(name)
    handlers = [n for n in names if n.startswith(("handler ", "inventory of"))]
    handlers.sort(key=lambda n: (n.startswith("inventory"), n))
    order = [n for n in BREAKDOWN_ORDER if n in names] + handlers + [n for n in BREAKDOWN_TAIL if n in names]
    order += [n for n in names if n not in order]
    short = ["cold", "warm", "rebuild"][: len(labels)]
    print(f"{'stage':42s}" + "".join(f"{'calls':>7s}{k + ' wall':>14s}{k + ' CPU':>13s}" for k in short))
    for name in order:
        cells = [results[label].get(name, [0, 0.0, 0.0]) for label in labels]
        if name.startswith("mkdocs event") and all(c[1] < 0.005 for c in cells):
            continue  # events nothing spends time in
        row = f"{name[:42]:42s}"
        for calls, wall, cpu in cells:
            row += f"{int(calls):7d}{wall:14.3f}{cpu:13.3f}"
        print(row)
    for label, key in zip(labels, short):
        print(f"  {key}: {label}")


# ----------------------------------------------------------------------------- report


PROFILE_FOCUS = (
    r"docs_hooks|subprocess.py:\d+\(run\)|poll|pickle|yaml/__init__|griffe/_internal/agents/visitor|"
    r"mkdocs/structure/pages.py:\d+\(render\)|search/plugin.py:\d+\(on_page_context\)|md_in_html.py:\d+\(run\)"
)


def print_profile(path: Path, title: str, top: int = 30) -> None:
    """The profile's top functions by cumulative time (the generator's and the big library stages), then by own time."""
    import io
    import pstats

    print(f"\n== cProfile: {title} ({path}) ==")
    for key, focus, n in (("cumulative", PROFILE_FOCUS, top), ("tottime", None, 15)):
        out = io.StringIO()
        stats = pstats.Stats(str(path), stream=out)
        stats.sort_stats(key)
        stats.print_stats(*((focus, n) if focus else (n,)))
        text = out.getvalue()
        text = re.sub(r"/\S*/(site-packages|python3\.\d+)/", "", text)
        text = re.sub(r"/\S*?/(docs_hooks/)", r"\1", text)
        lines = [
            l for l in text.splitlines() if l.strip() and not l.lstrip().startswith(("List reduced", "Ordered by"))
        ]
        print(f"-- by {key}" + (" (generator and main library stages)" if focus else ""))
        print("\n".join(lines[1:]))


def cpu_bound(run: Timing, cores: int) -> float:
    """The least wall-clock time this much work takes on ``cores`` cores.

    The build's own process cannot finish before its own CPU time has passed,
    and all the processes together cannot finish before their CPU time shared
    out over every core has. Both hold however well the work overlaps.
    """
    return max(run.main, run.cpu / cores)


def print_cpu_bound(cold: list[Timing], floor: list[Timing]) -> None:
    """Where a cold build's CPU time goes, and the ratio no overlap of it could beat on this machine."""
    cores = os.cpu_count() or 1
    main = med([run.main for run in cold])
    children = med([run.cpu - run.main for run in cold])
    bound = med([cpu_bound(run, cores) for run in cold])
    print("\n== the cold build's CPU time, and what it allows on this machine ==")
    print(
        f"MkDocs process (MkDocs, the hooks, their threads) {main:6.3f} s CPU   "
        f"(floor: {med([run.main for run in floor]):.3f} s)"
    )
    print(f"its child processes (coverage run, recorder, KaTeX) {children:6.3f} s CPU")
    print(
        f"least wall-clock time on {cores} cores = max(own CPU, all CPU / {cores}) = {bound:.3f} s "
        f"= {bound / med(floor):.2f}x the floor"
    )


def verdict(value: float, target: float, unit: str = "x") -> str:
    return f"{'meets' if value <= target else 'MISSES'} target <= {target}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per figure; the median is printed (default 5)")
    parser.add_argument(
        "--page", default="layer-norm.md", help="page (inside docs/) whose prose the warm rebuild edits"
    )
    parser.add_argument("--profile", type=Path, help="folder for cProfile files of the cold build and a warm rebuild")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print it")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the generator's stages and MkDocs' events in a cold build, a warm build and a rebuild",
    )
    parser.add_argument(
        "--devices",
        nargs="?",
        const=",".join(DEVICES),
        metavar="NAME,...",
        help="only measure what each speed device buys (a cold build without it / with it): "
        f"all of them, or those named ({', '.join(DEVICES)})",
    )
    parser.add_argument(
        "--costs",
        nargs="?",
        const=",".join(COSTS),
        metavar="NAME,...",
        help=f"only measure what a piece of evidence costs (a cold build with it / without it): ({', '.join(COSTS)})",
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_docs_"))
    try:
        project = copy_project(work / "project")
        docs = project / "docs"
        page = (
            args.page
            if (docs / args.page).is_file()
            else sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.md"))[0]
        )
        n_pages = len(list(docs.rglob("*.md")))
        print(f"bench_docs: {n_pages} pages, {args.runs} runs per figure, edited page: {page}")
        print(f"copy of the project: {project}\n")
        if args.devices:
            measure_devices(project, work, args.runs, args.devices.split(","))
            return
        if args.costs:
            measure_devices(project, work, args.runs, args.costs.split(","), costs=True)
            return

        # The floor: expanded pages (a warm build of the copy writes them), hooks off.
        make_floor(project, work / "floor", work, env_project=project)
        floor = work / "floor"
        mkdocs_build(floor, work / "site-floor")  # warm up the OS caches

        cold, floor_cold, kept, check_warm, check_cold = [], [], [], [], []
        check_rc = None
        for i in range(args.runs):
            clear_cache(project)
            cold.append(mkdocs_build(project, work / "site-cold", env_project=project))
            floor_cold.append(mkdocs_build(floor, work / "site-floor"))
            kept.append(mkdocs_build(project, work / "site-cold", env_project=project))
            clear_cache(project)
            t, proc = timed_run([PYTHON, "-m", "docs_hooks", "check"], project, env_for(project), check=False)
            check_cold.append(t)
            t, proc = timed_run([PYTHON, "-m", "docs_hooks", "check"], project, env_for(project), check=False)
            check_warm.append(t)
            check_rc = proc.returncode
            print(
                f"  run {i + 1}: cold {cold[-1]:.2f} s, floor {floor_cold[-1]:.2f} s, cache kept {kept[-1]:.2f} s, "
                f"check cold {check_cold[-1]:.2f} s, check warm {check_warm[-1]:.2f} s",
                flush=True,
            )

        # Warm rebuilds: one serve-like process each for the real site (cache warm) and the floor.
        mkdocs_build(project, work / "site-cold", env_project=project)  # the cache is warm, as in a working tree
        served = serve_rebuilds(project, page, args.runs, project)
        floor_served = serve_rebuilds(floor, page, args.runs, None)
        warm, floor_warm = served["rebuilds"], floor_served["rebuilds"]

        print("\n== figures (wall-clock, median) ==")
        print(f"cold build (no cache, fresh process)   {fmt(cold)}")
        print(f"floor: cold build, hooks off            {fmt(floor_cold)}")
        print(f"build in a fresh process, cache kept    {fmt(kept)}")
        print(
            f"first build in a serve process (warm cache) {served['first']:.3f} s wall, {served['first'].cpu:.3f} s CPU; "
            f"floor {floor_served['first']:.3f} s wall, {floor_served['first'].cpu:.3f} s CPU"
        )
        print(f"warm rebuild after a prose edit         {fmt(warm)}")
        print(f"floor: warm rebuild after the same edit {fmt(floor_warm)}")
        print(f"check, warm cache (fresh process)       {fmt(check_warm)}  exit code {check_rc}")
        print(f"check, cold cache (fresh process)       {fmt(check_cold)}")

        r_cold, c_cold = med(cold) / med(floor_cold), med_cpu(cold) / med_cpu(floor_cold)
        r_warm, c_warm = med(warm) / med(floor_warm), med_cpu(warm) / med_cpu(floor_warm)
        print("\n== ratios and targets (wall-clock; CPU time in brackets) ==")
        print(f"cold  hooks/floor = {r_cold:5.2f}x  [{c_cold:5.2f}x CPU]   {verdict(r_cold, TARGETS['cold'])}")
        r_kept, c_kept = med(kept) / med(floor_cold), med_cpu(kept) / med_cpu(floor_cold)
        print(
            f"fresh process, cache kept: hooks/floor = {r_kept:5.2f}x  [{c_kept:5.2f}x CPU]   "
            "(for information: a CI run with the cache restored and no code changed)"
        )
        print(f"warm  hooks/floor = {r_warm:5.2f}x  [{c_warm:5.2f}x CPU]   {verdict(r_warm, TARGETS['warm'])}")
        print(
            f"check (warm cache) = {med(check_warm):5.2f} s  [{med_cpu(check_warm):5.2f} s CPU]   "
            f"{verdict(med(check_warm), TARGETS['check'], ' s')}"
        )
        print(f"check (cold cache) = {med(check_cold):5.2f} s  [{med_cpu(check_cold):5.2f} s CPU]   (for information)")
        print(load_line())
        print_cpu_bound(cold, floor_cold)

        if args.breakdown:
            cmd = [PYTHON, str(Path(__file__).resolve()), "_breakdown", str(project / "mkdocs.yml"), page]
            _, proc = timed_run(cmd, project, env_for(project))
            print_breakdown(json.loads(proc.stdout.strip().splitlines()[-1]))

        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            clear_cache(project)
            cold_prof = args.profile.resolve() / "cold_build.prof"
            mkdocs_build(project, work / "site-cold", profile=cold_prof, env_project=project)
            warm_prof = args.profile.resolve() / "warm_rebuild.prof"
            serve_rebuilds(project, page, 2, project, profile=warm_prof)
            print_profile(cold_prof, "cold build (mkdocs build, no cache)")
            print_profile(warm_prof, "warm rebuild after a prose edit (serve-like, second build)")
    finally:
        release(work, args.keep)


def load_line() -> str:
    return f"load average now: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"


def release(work: Path, keep: bool) -> None:
    """Remove the temporary folder, or say where it was kept (--keep)."""
    if keep:
        print(f"\nkept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_serve":
        serve_child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else None)
    elif len(sys.argv) > 1 and sys.argv[1] == "_breakdown":
        breakdown_child(sys.argv[2], sys.argv[3])
    else:
        main()

"""How the documentation generator scales with the size of the code base and of the site.

Why this exists: the real site is small; a project that grows should not see
its build grow faster than its code. This writes a synthetic project into a
temporary folder, at 1x (about 2,000 functions in 100 modules, calling each
other, with tests, and 200 pages) and at 10x (20,000 functions in 1,000
modules, 2,000 pages). Each page has about ten items of the core blocks only
(trace-entry, trace-equation, trace-excerpt, inline [[references]] and inline
math; no evidence blocks). Through the core API (docs_hooks.core.site) it times,
as the median of --runs runs:

index            index_for: the code index (griffe + ast)
build, cold cache     make_build and expand_site with no cache folder: every page, every
                 formula rendered by KaTeX
build, warm cache     the same with the cache folder the previous build left
check, warm cache     check_site: index, every page, the lock comparison
check CLI        ``python -m docs_hooks check`` in a fresh process (with --cli)

and prints the 10x/1x ratio of each (target: at most 12, i.e. close to linear).
With --mkdocs it also measures, at each size, what an author feels (as bench_docs.py
does for the real site, against MkDocs alone on the same pages): a warm ``mkdocs
build``, a cold one after the project's tests ran with the generator's pytest
plugin (the line map, and what the pages need of the run stage), and a prose edit
and a code edit rebuilt in one serve-like process, then again as ``mkdocs serve
--dirty`` rebuilds them (against the floor's dirty rebuild); the edits also
against MkDocs alone given the template cache the plugin gives its own builds
("templates kept").
Nothing passes or fails.

Run:   .venv/bin/python bench/bench_scale.py [--runs 3] [--sizes 1,10] [--cli] [--mkdocs] [--profile DIR]
With --profile DIR it writes cProfile files of one build of every page at the
largest size (cold cache, then warm cache) into DIR.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bench_docs as BD  # noqa: E402  (copy, floor and timing helpers)

from docs_hooks.init import MKDOCS_YML as MKDOCS_TEMPLATE  # noqa: E402

MODULES_PER_PACKAGE = 10
FUNCTIONS_PER_MODULE = 18  # plus a class with two methods: 20 per module
TESTS_PER_MODULE = 4
PAGES_PER_MODULE = 2
CORE_PACKAGE = "pkg000"  # shared helpers every package calls now and then (hubs of the call graph)


# ----------------------------------------------------------------------------- the synthetic project


def store_rows(path: Path) -> int:
    """How many entries a cache store (docs_hooks.cachedir.Store) holds; 0 when it does not exist."""
    import sqlite3
    from contextlib import closing

    if not path.is_file():
        return 0
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]


def _fname(j: int) -> str:
    return f"f{j:02d}"


def module_source(pkg: int, mod: int, rng: random.Random) -> str:
    """One module: 18 functions calling lower ones (same module, same package, the core) and a class."""
    lines = [
        f'"""Synthetic module {pkg:03d}.{mod:02d}: steps that call each other."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    imported: dict[tuple[int, int, int], str] = {}
    bodies = []
    for j in range(FUNCTIONS_PER_MODULE):
        v = f"{j:02d}"
        calls = []
        if j > 0:
            calls.append(_fname(rng.randrange(j)))
        if mod > 0 and rng.random() < 0.7:
            other = (pkg, rng.randrange(mod), rng.randrange(FUNCTIONS_PER_MODULE))
            imported.setdefault(other, f"m{other[1]:02d}_{_fname(other[2])}")
            calls.append(imported[other])
        if pkg > 0 and rng.random() < 0.25:
            other = (0, rng.randrange(MODULES_PER_PACKAGE), rng.randrange(FUNCTIONS_PER_MODULE))
            imported.setdefault(other, f"core{other[1]:02d}_{_fname(other[2])}")
            calls.append(imported[other])
        k = rng.randrange(2, 9)
        body = [
            f"def {_fname(j)}(x, y):",
            f'    """Step {j} of module {pkg:03d}.{mod:02d}: scales, combines and folds its inputs."""',
            f"    a{v} = x * {k} + y  # the scaled input",
        ]
        prev = f"a{v}"
        for n, callee in enumerate(calls):
            body.append(f"    b{v}_{n} = {callee}({prev}, y)")
            prev = f"b{v}_{n}"
        body += [
            f"    c{v} = {prev} - {k} * y",
            f"    for i in range({k % 3 + 1}):",
            f"        c{v} = c{v} + i * a{v}",
            f"    if c{v} > {10 * k}:",
            f"        c{v} = c{v} / {k}",
            f"    d{v} = [c{v}, a{v}, {prev}]",
            f"    return sum(d{v}) + {j}",
            "",
        ]
        bodies.append("\n".join(body))
    for (p, m, f), alias in sorted(imported.items()):
        lines.append(f"from pkg{p:03d}.mod{m:02d} import {_fname(f)} as {alias}")
    lines.append("")
    lines += bodies
    lines += [
        "",
        "class Accumulator:",
        '    """Keeps a running total of steps."""',
        "",
        "    def __init__(self, start):",
        "        self.total = start",
        "",
        "    def add(self, x):",
        f"        self.total = self.total + {_fname(FUNCTIONS_PER_MODULE - 1)}(x, self.total)",
        "        return self.total",
        "",
    ]
    return "\n".join(lines)


def test_source(pkg: int, mod: int) -> str:
    names = [_fname(j) for j in range(FUNCTIONS_PER_MODULE)]
    lines = [
        f'"""Tests of pkg{pkg:03d}.mod{mod:02d}."""',
        "",
        f"from pkg{pkg:03d}.mod{mod:02d} import Accumulator, {', '.join(names)}",
        "",
    ]
    per = -(-FUNCTIONS_PER_MODULE // TESTS_PER_MODULE)
    for t in range(TESTS_PER_MODULE):
        lines.append(f"def test_steps_{t}():")
        for name in names[t * per : (t + 1) * per]:
            lines.append(f"    assert {name}(1, 2) is not None")
        lines.append("")
    lines += ["def test_accumulator():", "    acc = Accumulator(0)", "    assert acc.add(1) is not None", ""]
    return "\n".join(lines)


PROSE = (
    "This paragraph explains what the step does and why, in words a reader can follow without "
    "the code open beside it. It says which inputs matter, how they are combined, and what the "
    "result is used for further on."
)


def page_source(page: int, pkg: int, mod: int, rng: random.Random) -> str:
    """A page of about ten core items: two entries, four equations, two excerpts, inline references and math."""
    module = f"pkg{pkg:03d}.mod{mod:02d}"
    chosen = rng.sample(range(FUNCTIONS_PER_MODULE), 3)
    out = [
        f"# Page {page}: {module}",
        "",
        f"Steps of `{module}`. The first scales its input, as in $a_{{{page}}} = k x + y$, "
        f"computed at [[{module}.{_fname(chosen[0])}: a{chosen[0]:02d} =]].",
        "",
        PROSE,
        "",
    ]
    for e, j in enumerate(chosen[:2]):
        v, fn = f"{j:02d}", f"{module}.{_fname(j)}"
        out += [
            f"## Step {_fname(j)}",
            "",
            PROSE,
            "",
            "```trace-entry",
            f"id: p{page}-{_fname(j)}",
            f"title: Step {_fname(j)} of {module}",
            f"function: {fn}",
            "status: implemented",
            "```",
            "",
            PROSE,
            "",
            "```trace-equation",
            f"id: p{page}-e{e}-scale",
            "title: Scale and shift",
            f"tex: a_{{{j}}} = {page % 7 + 2} x + y + {e}",
            f"code: a{v} = x * ",
            "```",
            "",
            f"The folded value $c_{{{j}}}$ collects the scaled input once per round, [[{fn}: c{v} = c{v} + i * a{v}]].",
            "",
            "```trace-equation",
            f"id: p{page}-e{e}-fold",
            "title: Fold",
            f"tex: c_{{{j}}} \\leftarrow c_{{{j}}} + i\\, a_{{{j}}} \\quad (p = {page})",
            f"code: c{v} = c{v} + i * a{v}",
            "```",
            "",
            PROSE,
            "",
            "```trace-excerpt",
            f"code: '{fn}: return sum(d{v})'",
            "context: 1",
            "```",
            "",
        ]
    j = chosen[2]
    out += [
        "## Where it goes next",
        "",
        PROSE + f" The last step returns [[{module}.{_fname(j)}: return]], and the total is $\\sum_i d_{{{page},i}}$.",
        "",
    ]
    return "\n".join(out)


PYPROJECT = """\
[tool.docs_hooks]
source_root = "src"
tests_root = "tests"
docs_dir = "docs"
lock_path = "docs/trace.lock"
repo_url = "https://github.com/example/synthetic"
ref = "main"
"""

# The synthetic site is set up as `python -m docs_hooks init` sets up a user's site.
MKDOCS_YML = MKDOCS_TEMPLATE.format(site_name="Synthetic site", docs_dir="docs", theme="material")


def generate(dest: Path, scale: int) -> dict:
    """Write the synthetic project for ``scale`` (1 = 2,000 functions, 200 pages); returns its counts."""
    rng = random.Random(scale)
    packages = 10 * scale
    (dest / "src").mkdir(parents=True)
    (dest / "tests").mkdir()
    (dest / "docs").mkdir()
    (dest / "tests" / "__init__.py").write_text("")
    page = 0
    for pkg in range(packages):
        pdir = dest / "src" / f"pkg{pkg:03d}"
        pdir.mkdir()
        (pdir / "__init__.py").write_text(f'"""Synthetic package {pkg}."""\n')
        for mod in range(MODULES_PER_PACKAGE):
            (pdir / f"mod{mod:02d}.py").write_text(module_source(pkg, mod, rng))
            (dest / "tests" / f"test_pkg{pkg:03d}_mod{mod:02d}.py").write_text(test_source(pkg, mod))
            for _ in range(PAGES_PER_MODULE):
                (dest / "docs" / f"page{page:05d}.md").write_text(page_source(page, pkg, mod, rng))
                page += 1
    (dest / "docs" / "index.md").write_text("# Synthetic site\n\nEvery page documents steps of one module.\n")
    (dest / "pyproject.toml").write_text(PYPROJECT)
    (dest / "mkdocs.yml").write_text(MKDOCS_YML)
    shutil.copytree(ROOT / "docs_hooks", dest / "docs_hooks", ignore=BD.IGNORE)
    if (ROOT / "node_modules").exists():
        os.symlink(ROOT / "node_modules", dest / "node_modules")
    modules = packages * MODULES_PER_PACKAGE
    return {
        "modules": modules,
        "functions": modules * (FUNCTIONS_PER_MODULE + 2),
        "tests": modules * (TESTS_PER_MODULE + 1),
        "pages": page,
    }


# ----------------------------------------------------------------------------- timing


def timed(fn, runs: int, setup=None) -> tuple[list[float], object]:
    """Wall-clock seconds of ``fn()`` (``fn(setup())`` when ``setup`` is given), ``runs`` times; and its result."""
    out = []
    result = None
    for _ in range(runs):
        arg = setup() if setup else None
        gc.collect()
        start = time.perf_counter()
        result = fn(arg) if setup else fn()
        out.append(time.perf_counter() - start)
    return out, result


def measure(project: Path, runs: int, cli: bool) -> dict:
    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import check_site, expand_site, index_for, make_build
    from docs_hooks.resolve.lock import write_lock

    settings = load_settings(project)
    cache = settings.cache_dir
    # The review lock, as after 'python -m docs_hooks relock': check then compares every reference, finds nothing.
    first = expand_site(settings, make_build(settings))
    write_lock(settings.lock_path, list({(u.page, u.key): u for u in first.uses}.values()))
    n_uses = len(first.uses)
    del first

    def clear_cache():  # nothing kept between builds: every formula goes to KaTeX
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)

    def build():  # a whole build: the index, the background work started, every page
        made = make_build(settings)
        try:
            return expand_site(settings, made)
        finally:
            made.close()

    t = {}
    t["index"], index = timed(lambda: index_for(settings), runs)
    t["build, cold cache"], result = timed(lambda _: build(), runs, clear_cache)
    t["build, warm cache"], result = timed(build, runs)
    t["check, warm cache"], problems = timed(lambda: check_site(settings), runs)
    if cli:
        cli_times = []
        for _ in range(runs):
            elapsed, _ = BD.timed_run(
                [BD.PYTHON, "-m", "docs_hooks", "--root", str(project), "check"], project, BD.env_for(project), False
            )
            cli_times.append(elapsed)
        t["check CLI"] = cli_times
    info = {
        "functions indexed": len(index.functions),
        "call sites": len(index.calls),
        "pages expanded": len(result.pages),
        "references (lock entries)": n_uses,
        "formulas kept in the cache": store_rows(cache / "katex.sqlite3") if cache else 0,
        "problems in the pages": len(result.problems),
        "problems found by check": len(problems),
    }
    return {"times": t, "info": info}


def profile_expansion(project: Path, out_dir: Path, scale: int) -> None:
    """cProfile of the expansion of every page with a fresh build: cold cache, then warm cache."""
    import cProfile

    from docs_hooks.base.settings import load_settings
    from docs_hooks.core.site import expand_site, make_build

    settings = load_settings(project)
    for kind in ("cold", "warm"):
        if kind == "cold" and settings.cache_dir is not None:
            shutil.rmtree(settings.cache_dir, ignore_errors=True)
        prof = cProfile.Profile()
        prof.enable()
        expand_site(settings, make_build(settings))
        prof.disable()
        out = out_dir / f"expand_{scale}x_{kind}.prof"
        prof.dump_stats(str(out))
        print(f"  wrote {out}")


def author_at(project: Path, work: Path, runs: int) -> dict:
    """What an author feels at this size, against MkDocs alone on the same pages (see bench_docs)."""
    floor_config = BD.make_floor(project)
    page = next(p.name for p in sorted((project / "docs").glob("*.md")) if p.name != "index.md")
    floor, warm = [], []
    # A warm build finds what an earlier MkDocs build left (its rendered pages, the search plugin's entries),
    # not only what the core's builds above cached.
    BD.mkdocs_build(project, work / "site")
    for _ in range(runs):
        floor.append(BD.mkdocs_build(project, work / "site-floor", floor_config))
        warm.append(BD.mkdocs_build(project, work / "site"))
    # A first build after the tests: the project's test run with the generator's pytest plugin, as a user sets
    # it up (`-p docs_hooks.pytest_linemap`, and the source folder on pytest's path), writes the line map and
    # makes what the pages need beside the tests; then a cold build from what it left.
    BD.clear_cache(project)
    plugin = ["-p", "no:cacheprovider", "-p", "docs_hooks.pytest_linemap", "-o", "pythonpath=src"]
    tests = [BD.PYTHON, "-m", "pytest", "-q", "-x", *plugin, "tests"]
    made, _ = BD.timed_run(tests, project, BD.env_for(project))
    BD.snapshot_cache(project, work / "after-tests")
    after_tests = []
    for _ in range(runs):
        BD.restore_cache(project, work / "after-tests")
        after_tests.append(BD.mkdocs_build(project, work / "site"))

    def served(config: str, first: int, **how) -> list[dict]:
        # Each run edits anew (numbered apart): a repeated edit would be found in the project's cache.
        return [BD.serve(project, config, page, 0, first_edit=1000 * (i + first), **how) for i in range(runs)]

    plain, floors = served("mkdocs.yml", 1), served(floor_config, 1)
    # MkDocs alone given the template cache the plugin gives its own builds: what the generator adds beyond
    # what it saves MkDocs (see bench_docs.floor_templates).
    kept = served(floor_config, 1, templates=True)
    # The same under ``mkdocs serve --dirty``, which MkDocs advises for a large site: each rebuild converts only
    # the pages that changed (for the generator, those that come out different: plugin.DirtyPages).
    dirty, dirty_floors = served("mkdocs.yml", 5, dirty=True), served(floor_config, 5, dirty=True)
    dirty_kept = served(floor_config, 5, dirty=True, templates=True)
    return {
        "floor": floor,
        "warm": warm,
        "test run (plugin on)": [made],
        "cold, after tests": after_tests,
        "floor, prose edit": [f["prose edit"] for f in floors],
        "floor, templates kept": [f["prose edit"] for f in kept],
        "prose edit": [s["prose edit"] for s in plain],
        "code edit": [s["code edit"] for s in plain],
        "kept": [s["code edit kept"] for s in plain],  # pages whose reads of the code held (not a time)
        "dirty, floor, prose edit": [f["prose edit"] for f in dirty_floors],
        "dirty, templates kept": [f["prose edit"] for f in dirty_kept],
        "dirty, prose edit": [s["prose edit"] for s in dirty],
        "dirty, code edit": [s["code edit"] for s in dirty],
        "dirty, kept": [s["code edit kept"] for s in dirty],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is printed (default 3)")
    parser.add_argument("--sizes", default="1,10", help="scales to run, comma-separated (default 1,10)")
    parser.add_argument("--cli", action="store_true", help="also time 'python -m docs_hooks check' in a fresh process")
    parser.add_argument("--mkdocs", action="store_true", help="also measure warm builds and edits against MkDocs alone")
    parser.add_argument("--profile", type=Path, help="folder for a cProfile file of the expansion at the largest size")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and print it")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    work = Path(tempfile.mkdtemp(prefix="bench_scale_"))
    # The core API of the snapshot copied into each synthetic project (the same code as docs_hooks/ now).
    snapshot = work / "snapshot"
    shutil.copytree(ROOT / "docs_hooks", snapshot / "docs_hooks", ignore=BD.IGNORE)
    sys.path.insert(0, str(snapshot))
    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    results = {}
    try:
        for scale in sizes:
            project = work / f"x{scale}"
            start = time.perf_counter()
            counts = generate(project, scale)
            print(
                f"{scale}x: {counts['functions']:,} functions in {counts['modules']:,} modules, "
                f"{counts['tests']:,} tests, {counts['pages']:,} pages (written in {time.perf_counter() - start:.1f} s)",
                flush=True,
            )
            results[scale] = measure(project, args.runs, args.cli)
            for name, values in results[scale]["times"].items():
                print(f"  {name:22s} {BD.fmt(values)}", flush=True)
            print("  " + "; ".join(f"{k}: {v:,}" for k, v in results[scale]["info"].items()), flush=True)
            if args.mkdocs:
                felt = author_at(project, work / f"mkdocs-{scale}x", args.runs)
                results[scale]["author"] = felt
                kept, dirty_kept = felt.pop("kept"), felt.pop("dirty, kept")
                for name, values in felt.items():
                    # A serve edit against the floor's prose edit served the same way (``--dirty`` or not).
                    way = "dirty, " if name.startswith("dirty") else ""
                    base = felt[f"{way}floor, prose edit"] if "edit" in name else felt["floor"]
                    alone = name.startswith(("floor", "test run", "dirty, floor", "dirty, templates"))
                    ratio = "" if alone else f"  {BD.med(values) / BD.med(base):5.2f}x"
                    if name.endswith("edit") and not alone:
                        floor_kept = felt["dirty, templates kept"] if way else felt["floor, templates kept"]
                        ratio += BD.kept(BD.med(values), BD.med(floor_kept))
                    print(f"  mkdocs {name:24s} {BD.fmt(values)}{ratio}", flush=True)
                print(f"  mkdocs code edit: pages taken as they were (their reads of the code held): {kept}")
                print(f"  mkdocs dirty code edit: pages taken as they were: {dirty_kept}")

        if len(sizes) >= 2:
            lo, hi = min(sizes), max(sizes)
            target = 1.2 * hi / lo
            print(f"\n== {hi}x / {lo}x ratios (target: at most {target:g}) ==")
            for name in results[lo]["times"]:
                a, b = results[lo]["times"][name], results[hi]["times"][name]
                print(f"  {name:22s} {BD.med(b) / BD.med(a):6.2f}x")
        print(BD.load_line())

        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
            hi = max(sizes)
            profile_expansion(work / f"x{hi}", args.profile.resolve(), hi)
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

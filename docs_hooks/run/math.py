"""TeX to HTML at build time, with KaTeX (pinned in package-lock.json) run by Node.js.

Where KaTeX comes from (``katex_dist``): the copy the docs-hooks wheel carries
(``docs_hooks/_katex``, put there when the wheel is built), else the documented
project's ``node_modules/katex`` (an editable install, or a project that pins
its own KaTeX). A user therefore needs ``node`` on the PATH and no npm step.

The site then needs no script and no network to show its math: only KaTeX's
CSS and fonts, which the adapter ships with the site. Each formula is HTML for
the eye and MathML for a screen reader (see katex_render.js). Renders are
cached by their TeX, KaTeX's version and the render script's text in one store
for the whole site, so a warm rebuild starts no process.

One KaTeX process serves the build. It gets ``timeout`` seconds for each
batch of formulas, is stopped past that, and ends when its stdin closes, so it
does not outlive a build that is killed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

from docs_hooks.base.cachedir import Store, store_file
from docs_hooks.base.errors import TraceError
from docs_hooks.run.turns import Turns

SCRIPT = Path(__file__).with_name("katex_render.js")
BUNDLED = Path(__file__).resolve().parents[1] / "_katex"  # KaTeX as the wheel carries it (see setup.py)


def katex_dist(project_root: Path) -> Path | None:
    """The folder holding katex.min.js, its stylesheet and fonts: the wheel's copy, else the project's npm one."""
    for folder in (
        BUNDLED,
        Path(project_root) / "node_modules" / "katex" / "dist",
        Path(__file__).resolve().parents[2] / "node_modules" / "katex" / "dist",
    ):
        if (folder / "katex.min.js").is_file():
            return folder
    return None


def katex_version(dist: Path | None) -> str:
    """KaTeX's version, from the wheel's VERSION file or npm's package.json; "none" without KaTeX."""
    if dist is None:
        return "none"
    for version_file in (dist / "VERSION", dist.parent / "package.json"):
        try:
            text = version_file.read_text(encoding="utf-8")
        except OSError:
            continue
        return json.loads(text)["version"] if version_file.suffix == ".json" else text.strip()
    return "unknown"


TIMEOUT = 60.0  # seconds KaTeX may take for one batch of formulas (one page's, or the prefetch's)
# $...$ in prose: no space just inside the dollars, no digit right after (so "$5 and $6" stays text).
INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)(?P<tex>[^$\n]+?)(?<=\S)\$(?![\w$])")


def _rendered(raw: bytes) -> str | None:
    """The HTML of a stored render; None when the entry is not one (KaTeX's HTML always opens with its span)."""
    try:
        html = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return html if html.startswith('<span class="katex') else None


class MathRenderer:
    def __init__(self, project_root: Path, cache_dir: Path | None = None, timeout: float = TIMEOUT) -> None:
        self.project_root = project_root
        self.timeout = timeout
        self.cache: dict[tuple[str, bool], tuple[str | None, str | None]] = {}
        self.node = shutil.which("node")
        self.dist = katex_dist(project_root)
        # Every formula of the site in one store: a first build renders hundreds of them.
        store = store_file(cache_dir, "katex")
        self.store = Store(store) if store is not None else None
        self._version: str | None = None  # KaTeX's version and the render script's digest
        self._proc: subprocess.Popen[str] | None = None
        self._turns = Turns()  # the build's thread and the prefetch share one KaTeX process

    @property
    def version(self) -> str:
        """What renders a formula besides its TeX: KaTeX's version and the render script (its options)."""
        if self._version is None:
            katex = katex_version(self.dist)
            script = hashlib.sha256(SCRIPT.read_bytes()).hexdigest() if SCRIPT.is_file() else "none"
            self._version = f"{katex}\0{script}"
        return self._version

    def _key(self, item: tuple[str, bool]) -> str:
        """A formula's key in the store: KaTeX's version, the render script, display or inline, and the TeX."""
        return hashlib.sha256(f"{self.version}\0{item[1]}\0{item[0]}".encode()).hexdigest()

    def _from_store(self, items: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """Fill the cache with what the store holds of ``items``; the ones it does not hold."""
        if self.store is None or not items:
            return items
        keys = {self._key(item): item for item in items}
        for key, raw in self.store.get_many(list(keys)).items():
            html = _rendered(raw)
            if html is not None:  # else not what a render stores: rendered again, and stored anew
                self.cache[keys[key]] = (html, None)
        return [item for item in items if item not in self.cache]

    def available(self) -> bool:
        return self.node is not None and self.dist is not None

    def render_many(self, items: list[tuple[str, bool]]) -> list[tuple[str | None, str | None]]:
        """(html, error) for each (tex, display)."""
        cache = self.cache
        with self._turns.turn(lambda: all(item in cache for item in items)) as rendered:
            if rendered:  # already (by the prefetch, say)
                return [cache[item] for item in items]
            return self._render_many(items)

    def _render_many(self, items: list[tuple[str, bool]]) -> list[tuple[str | None, str | None]]:
        todo = self._from_store([it for it in dict.fromkeys(items) if it not in self.cache])
        if todo:
            if not self.available():
                raise TraceError(
                    "the site renders its math at build time with KaTeX, which needs Node.js: install 'node' "
                    "(version 18 or later) and put it on the PATH"
                    if self.node is None
                    else "KaTeX is missing: the docs-hooks wheel carries it; with an editable install of docs-hooks, "
                    "run 'npm ci' in the docs-hooks source folder"
                )
            rendered: dict[str, bytes] = {}
            for item, result in zip(todo, self._ask([{"tex": t, "display": d} for t, d in todo])):
                self.cache[item] = (result.get("html"), result.get("error"))
                if result.get("html") is not None:
                    rendered[self._key(item)] = result["html"].encode("utf-8")
            self._turns.landed()  # a page waiting for these goes on while they are stored
            if self.store is not None:
                self.store.put_many(rendered)
        return [self.cache[it] for it in items]

    def _ask(self, payload: list[dict]) -> list[dict]:
        """One batch through the build's KaTeX process (started on first use, kept for the build)."""
        self.start()
        proc = self._proc
        # start() runs KaTeX, with pipes to and from it, once available() (which _render_many checked)
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()  # the read below then meets the end of the output

        timer = threading.Timer(self.timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            stdin.write(json.dumps(payload) + "\n")
            stdin.flush()
            answer = stdout.readline()
        except (BrokenPipeError, OSError, ValueError):
            answer = ""
        finally:
            timer.cancel()
        if not answer:
            raise self._failed(proc, expired.is_set(), len(payload))
        return json.loads(answer)

    def _failed(self, proc: subprocess.Popen[str], expired: bool, formulas: int) -> TraceError:
        """The error of a KaTeX process that gave no answer; the process is ended and its stderr read."""
        try:
            proc.wait(timeout=5)  # its output ended: it is exiting, give it the time to
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reason = proc.stderr.read().strip()[-2000:] if proc.stderr else ""
        self._proc = None
        self.close()
        if expired:
            return TraceError(
                f"KaTeX gave no answer within {self.timeout:g} s for a batch of {formulas} formula(s) and was "
                "stopped; look for a formula of this page that KaTeX cannot finish, and check that "
                "'node' runs on this machine"
            )
        said = f"node said:\n{reason}" if reason else "node wrote no reason"
        return TraceError(
            f"KaTeX failed to run (node exited with code {proc.returncode}); if KaTeX is damaged, reinstall "
            f"docs-hooks. {said}"
        )

    def start(self) -> None:
        """Start the KaTeX process now, if it is not running: it loads KaTeX while the build does other work."""
        node, dist = self.node, self.dist
        if node is None or dist is None or (self._proc is not None and self._proc.poll() is None):
            return  # not available(), or running
        self._proc = subprocess.Popen(
            [node, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            cwd=self.project_root,
            env={"KATEX_JS": str(dist / "katex.min.js"), "PATH": ""},
        )

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait(timeout=10)
            self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def assets(self, prefix: str) -> list[tuple[str, Path]]:
        """(site path, file) of KaTeX's stylesheet and fonts, to ship with the site."""
        dist = self.dist
        if dist is None:
            return []
        files = [("katex.min.css", dist / "katex.min.css")]
        files += [(f"fonts/{f.name}", f) for f in sorted((dist / "fonts").iterdir())]
        return [(f"{prefix}/{name}", path) for name, path in files]

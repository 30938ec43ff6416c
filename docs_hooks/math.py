"""TeX to HTML at build time, with KaTeX from the npm registry (pinned in package-lock.json).

The site then needs no script and no network to show its math: only KaTeX's
CSS and fonts, which the adapter ships with the site. Renders are cached by
their TeX (and KaTeX's version) in one store for the whole site, so a warm
rebuild starts no process.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

from .cachedir import Store, store_file
from .errors import TraceError
from .turns import Turns

SCRIPT = Path(__file__).with_name("katex_render.js")
# $...$ in prose: no space just inside the dollars, no digit right after (so "$5 and $6" stays text).
INLINE_MATH = re.compile(r"(?<![\\$\w])\$(?=\S)(?P<tex>[^$\n]+?)(?<=\S)\$(?![\w$])")


class MathRenderer:
    def __init__(self, project_root: Path, cache_dir: Path | None = None):
        self.project_root = project_root
        self.cache: dict[tuple[str, bool], tuple[str | None, str | None]] = {}
        self.node = shutil.which("node")
        # Every formula of the site in one store: a first build renders hundreds of them.
        self.store = Store(store_file(cache_dir, "katex")) if cache_dir else None
        self._version: str | None = None
        self._proc: subprocess.Popen | None = None
        self._turns = Turns()  # the build's thread and the prefetch share one KaTeX process

    def _key(self, item: tuple[str, bool]) -> str:
        """A formula's key in the store: KaTeX's version, display or inline, and the TeX."""
        if self._version is None:
            pkg = self.project_root / "node_modules" / "katex" / "package.json"
            self._version = json.loads(pkg.read_text())["version"] if pkg.exists() else "none"
        return hashlib.sha256(f"{self._version}\0{item[1]}\0{item[0]}".encode()).hexdigest()

    def _from_store(self, items: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
        """Fill the cache with what the store holds of ``items``; the ones it does not hold."""
        if self.store is None or not items:
            return items
        keys = {self._key(item): item for item in items}
        for key, html in self.store.get_many(list(keys)).items():
            self.cache[keys[key]] = (html.decode("utf-8"), None)
        return [item for item in items if item not in self.cache]

    def available(self) -> bool:
        return self.node is not None and (self.project_root / "node_modules" / "katex").is_dir()

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
                    "KaTeX is not installed: run 'npm ci' in the project root (make setup does it); "
                    "the site renders its math at build time"
                )
            rendered = {}
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
        try:
            self._proc.stdin.write(json.dumps(payload) + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        except (BrokenPipeError, OSError):
            answer = ""
        if not answer:
            err = self._proc.stderr.read() if self._proc.poll() is not None else ""
            self.close()
            raise TraceError(f"KaTeX failed to run: {err.strip()[-2000:]}")
        return json.loads(answer)

    def start(self) -> None:
        """Start the KaTeX process now, if it is not running: it loads KaTeX while the build does other work."""
        if not self.available() or (self._proc is not None and self._proc.poll() is None):
            return
        self._proc = subprocess.Popen(
            [self.node, str(SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", cwd=self.project_root,
            env={"KATEX_ROOT": str(self.project_root), "PATH": ""},
        )

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self._proc is not None:
            if self._proc.stdin:
                self._proc.stdin.close()
            self._proc.wait(timeout=10)
            self._proc = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def assets(self, prefix: str) -> list[tuple[str, Path]]:
        """(site path, file) of KaTeX's stylesheet and fonts, to ship with the site."""
        dist = self.project_root / "node_modules" / "katex" / "dist"
        if not dist.is_dir():
            return []
        files = [("katex.min.css", dist / "katex.min.css")]
        files += [(f"fonts/{f.name}", f) for f in sorted((dist / "fonts").iterdir())]
        return [(f"{prefix}/{name}", path) for name, path in files]

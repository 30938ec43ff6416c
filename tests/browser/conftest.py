"""Fixtures of the browser tests: the site built once, served on 127.0.0.1, and Debian's chromium.

The whole suite is skipped, with the reason, when /usr/bin/chromium is missing
(``CHROMIUM`` in the environment names another binary). Playwright's own browser
download is not used: Playwright drives the system's chromium.

The site is built once per session with ``mkdocs build`` (not ``--strict``: the
strict build is ``make build``'s job, and a page that is still waiting for review
in docs/trace.lock should not hide what a reader's browser sees). Build warnings
are reported as one pytest warning.

Every page is opened in a browser context that resolves no host but 127.0.0.1 and
aborts any request to another host, so a test can never reach the network, and the
watcher records what was attempted: a request to another host is a failure.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# A page is loaded once it has had no request in flight for this long after its load event (the search index,
# fonts and scripts a page asks for as it starts are asked for within a few milliseconds of each other).
QUIET = 0.2
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-domain-reliability",
    # no host resolves but the test server's, so nothing can leave the machine
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def page_paths() -> list[str]:
    """Every Markdown page of the site, relative to docs/ (hidden folders left out)."""
    return sorted(
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(DOCS).parts)
    )


def page_url(md_path: str) -> str:
    """The URL path of a page inside the site (MkDocs' directory URLs): layer-norm.md -> layer-norm/."""
    stem = md_path[: -len(".md")]
    if stem == "index" or stem.endswith("/index") or stem.upper().endswith("README"):
        stem = stem.rpartition("/")[0] if "/" in stem else ""
    return f"{stem}/" if stem else ""


def build_site(dest: Path, *extra: str, config: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", *extra, "-f", str(config or REPO / "mkdocs.yml"), "-d", str(dest)]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)


# ---------------------------------------------------------------------------- the browser


@pytest.fixture(scope="session")
def chromium() -> str:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"browser tests need chromium: {CHROMIUM} not found; apt-get install chromium")
    return CHROMIUM


@pytest.fixture(scope="session")
def browser(chromium):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="browser tests need Playwright for Python: pip install -e '.[test]'"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield b
        b.close()


# ---------------------------------------------------------------------------- the site


@dataclass
class Site:
    root: Path  # the built files
    base: str  # http://127.0.0.1:PORT/
    log: str  # the build's output

    def file_for(self, url: str) -> Path | None:
        """The built file a same-site URL serves, or None."""
        path = urlsplit(url).path
        rel = path.lstrip("/")
        target = self.root / rel
        if path.endswith("/") or target.is_dir():
            target = target / "index.html"
        return target if target.is_file() else None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="session")
def site(chromium, tmp_path_factory) -> Site:
    root = tmp_path_factory.mktemp("site") / "site"
    proc = build_site(root)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"mkdocs build failed (exit {proc.returncode}):\n{log[-6000:]}", pytrace=False)
    warned = [line for line in log.splitlines() if line.startswith("WARNING")]
    if warned:
        warnings.warn(
            f"the site builds with {len(warned)} warning(s), so 'make build' (--strict) fails; the browser tests "
            f"ran on the non-strict build. First: {warned[0]}",
            stacklevel=1,
        )
    from . import fixture_page

    fixture_page.write(root)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Site(root, f"http://127.0.0.1:{server.server_port}/", log)
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------------------- watching a page


@dataclass
class Watch:
    """What a page did while it loaded: errors, failed requests, requests elsewhere, bytes received."""

    base: str
    problems: list[str] = field(default_factory=list)
    responses: list = field(default_factory=list)
    in_flight: set = field(default_factory=set)  # the requests made and not yet answered
    last_request: float = 0.0  # when a request was last made or answered (time.monotonic)

    def attach(self, page) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda err: self.problems.append(f"uncaught error: {err}"))
        page.on("request", lambda r: self._request(r, made=True))
        page.on("requestfinished", lambda r: self._request(r, made=False))
        page.on("requestfailed", self._failed)
        page.on("response", self._response)

    def _request(self, request, made: bool) -> None:
        self.last_request = time.monotonic()
        if made:
            self.in_flight.add(request)
        else:
            self.in_flight.discard(request)

    def _failed(self, request) -> None:
        self._request(request, made=False)
        self.problems.append(f"failed request: {request.url} ({request.failure})")

    def settle(self, page, quiet: float = QUIET, limit: float = 30.0) -> None:
        """Wait until the page has had no request in flight for ``quiet`` seconds (Playwright's "networkidle"
        waits half a second, for every page of every test)."""
        started = last = time.monotonic()
        while time.monotonic() - max(last, self.last_request) < quiet:
            assert time.monotonic() - started < limit, f"requests still in flight after {limit} s: {self.in_flight}"
            page.wait_for_timeout(25)  # the driver hands this process the page's events meanwhile
            if self.in_flight:
                last = time.monotonic()

    def _console(self, msg) -> None:
        if msg.type in ("error", "assert"):
            self.problems.append(f"console {msg.type}: {msg.text}")

    def _response(self, response) -> None:
        self.responses.append(response)
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def elsewhere(self) -> re.Pattern:
        """The URLs ``route`` is for: any but the site's own and data:, blob:, about:. Matched by the
        browser's driver, so that the site's own requests do not wait for this process."""
        return re.compile(r"^(?!" + re.escape(self.base) + r"|data:|blob:|about:)")

    def route(self, route) -> None:
        """A request to another host (``elsewhere``): noted, and not made."""
        self.problems.append(f"request to another host: {route.request.url}")
        route.abort("blockedbyclient")


class _Pages:
    """Pages of the site, each opened in a browser context of its own, all closed together."""

    def __init__(self, browser, site):
        self.browser, self.site = browser, site
        self.contexts: list = []

    def open(self, path: str, viewport: dict | None = None, color_scheme: str = "light"):
        """The page at ``path``, loaded and quiet, and what it did meanwhile (a ``Watch``)."""
        context = self.browser.new_context(
            viewport=viewport or DESKTOP, color_scheme=color_scheme, service_workers="block"
        )
        self.contexts.append(context)
        watch = Watch(self.site.base)
        context.route(watch.elsewhere(), watch.route)
        page = context.new_page()
        watch.attach(page)
        page.goto(self.site.base + path, wait_until="load")
        watch.settle(page)
        return page, watch

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def open_page(browser, site):
    """open_page(path, viewport=DESKTOP, color_scheme='light') -> (page, watch), loaded and quiet."""
    pages = _Pages(browser, site)
    yield pages.open
    pages.close()


@pytest.fixture(scope="module")
def desktop_page(browser, site):
    """desktop_page(path) -> (page, watch): the page at desktop width in the light scheme, loaded once for the
    tests of a module that only read it (each page of the site takes a second or two to load)."""
    pages = _Pages(browser, site)
    yield functools.cache(lambda path: pages.open(path))
    pages.close()


def numbers_and_skeleton(text: str) -> tuple[list[float], str]:
    """The numbers in a shown value, and the text around them (to compare shown values loosely)."""
    pattern = r"-?(?:\d+\.?\d*(?:e[+-]?\d+)?|inf)|nan"
    text = text.replace("\n", "")  # the page writes a line break as <br>, which has no text
    nums = [float(m) for m in re.findall(pattern, text)]
    return nums, re.sub(pattern, "#", text)


def have_node_and_katex() -> bool:
    return shutil.which("node") is not None and (REPO / "node_modules" / "katex").is_dir()

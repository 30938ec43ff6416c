"""The built site in chromium, as a reader sees it.

Every page at desktop width (at a phone's width: test_phone.py): loads with no
console error, no failed request and no request to another host; its math is
KaTeX HTML with no raw TeX left visible; every link inside the site reaches an
existing page and an existing id. Search finds a function by name. The LayerNorm
page is photographed at desktop and phone width (tests/browser/screenshots/,
ignored by git) and its weight is measured.
"""

from __future__ import annotations

import html.parser
import json
import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from docs_hooks.read.blocks import parse_page, prose_lines
from docs_hooks.run.math import INLINE_MATH

from .conftest import DESKTOP, DOCS, PHONE, SCREENSHOTS, page_paths, page_url

PAGES = page_paths()
LAYER_NORM = "layer-norm.md"
WEIGHT_BUDGET = 2_000_000  # bytes the LayerNorm page may transfer (HTML, CSS, JS, fonts, data)

# TeX a reader should never see as text: a command, $$, or $...$ left over.
RAW_TEX = re.compile(
    r"\$\$|\\(?:frac|sum|left|right|hat|sqrt|mu|sigma|gamma|beta|epsilon|partial|operatorname|mathrm|cdot)\b"
)


def test_the_site_has_pages(chromium):
    assert LAYER_NORM in PAGES, f"docs/{LAYER_NORM} is missing; the browser tests photograph it"


@pytest.mark.parametrize("md", PAGES)
def test_page_loads_cleanly_and_shows_rendered_math(desktop_page, site, md):
    path = page_url(md)
    assert site.file_for(site.base + path), f"docs/{md} was not built to {path}"
    page, watch = desktop_page(path)
    found = page.evaluate(
        """() => {
          const article = document.querySelector("article") || document.body;
          const copy = article.cloneNode(true);
          copy.querySelectorAll(".katex, code, pre, script, style").forEach(e => e.remove());
          return {
            katex: article.querySelectorAll(".katex").length,
            katexErrors: article.querySelectorAll(".katex-error").length,
            traceErrors: Array.from(article.querySelectorAll(".trace-error"), e => e.textContent.trim().slice(0, 300)),
            text: copy.textContent,
            title: document.title,
            noPermalink: Array.from(article.querySelectorAll("h2[id], h3[id], h4[id], h5[id], h6[id]"))
              .filter(h => !h.querySelector("a.headerlink")).map(h => h.id),
          };
        }"""
    )
    problems = list(watch.problems)
    source = (DOCS / md).read_text(encoding="utf-8")
    # Math the page itself writes: equation blocks and $...$ in prose (not blocks shown inside code fences).
    prose = "\n".join(line for _, line in prose_lines(source.split("\n")))
    equations = any(b.kind == "equation" for b in parse_page(source, md).blocks)
    if equations or INLINE_MATH.search(re.sub(r"`[^`]*`", "", prose)):
        if not found["katex"]:
            problems.append("the page has math, but no .katex element: KaTeX did not render it")
    if found["katexErrors"]:
        problems.append(f"{found['katexErrors']} KaTeX error(s) on the page")
    problems += [f"an error box on the page: {t}" for t in found["traceErrors"]]
    problems += [f"heading #{h} has no permalink" for h in found["noPermalink"]]
    for m in RAW_TEX.finditer(found["text"]):
        problems.append(f"raw TeX visible: ...{found['text'][max(0, m.start() - 40) : m.end() + 40]!r}...")
    for m in INLINE_MATH.finditer(found["text"]):
        problems.append(f"unrendered $...$ visible: {m.group(0)!r}")
    assert not problems, f"{path}:\n" + "\n".join(problems)


def test_a_request_to_another_host_is_noted_and_not_made_and_one_to_the_site_is_made(open_page, site):
    page, watch = open_page(page_url(LAYER_NORM))
    statuses = page.evaluate(
        """async ([site]) => Promise.all([site, "http://example.invalid/x.png"].map(
             url => fetch(url).then(r => r.status, () => "refused")))""",
        [site.base + "index.html"],
    )
    assert statuses == [200, "refused"]
    assert watch.problems[0] == "request to another host: http://example.invalid/x.png", watch.problems
    assert not [p for p in watch.problems if site.base in p], watch.problems  # the site's own request is made


def test_a_page_is_taken_as_loaded_only_after_the_requests_it_makes_one_after_another_are_answered(open_page, site):
    """What every test reads of a page (``Watch.settle``): a request the page makes after its load event, and one
    it makes a tenth of a second after that one is answered, are both waited for, and a failing one is noted."""
    (site.root / "_late-requests.html").write_text(
        "<!doctype html><title>late</title><script>addEventListener('load', () => setTimeout(() =>"
        " fetch('_missing-1.json').then(() => setTimeout(() => fetch('_missing-2.json'), 100)), 50));</script>",
        encoding="utf-8",
    )
    page, watch = open_page("_late-requests.html")
    assert [p for p in watch.problems if p.startswith("HTTP 404")] == [
        f"HTTP 404: {site.base}_missing-1.json",
        f"HTTP 404: {site.base}_missing-2.json",
    ], watch.problems


# ---------------------------------------------------------------------------- links


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "id" or (k == "name" and tag == "a"):
                self.ids.add(v)


@cache
def ids_in(file: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(file.read_text(encoding="utf-8"))
    return frozenset(parser.ids)


def test_every_link_inside_the_site_reaches_a_page_and_an_id(desktop_page, site):
    problems, checked = [], 0
    for md in PAGES:
        path = page_url(md)
        page, watch = desktop_page(path)
        hrefs = page.evaluate(
            "() => Array.from(document.querySelectorAll('a[href]'), a => [a.getAttribute('href'), a.href])"
        )
        for raw, url in hrefs:
            if not url.startswith(site.base):
                continue  # another site (GitHub): not fetched, the tests make no request outside
            checked += 1
            target = site.file_for(url)
            where = f"{path}: link {raw!r}"
            if target is None:
                problems.append(f"{where} -> {urlsplit(url).path} does not exist in the site")
                continue
            fragment = unquote(urlsplit(url).fragment)
            if fragment and target.suffix == ".html" and fragment not in ids_in(target):
                problems.append(f"{where} -> no id '{fragment}' in {target.relative_to(site.root)}")
        problems += [f"{path}: {p}" for p in watch.problems]
    assert checked > 0
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- search


def test_search_finds_a_function_by_its_name(open_page, site):
    page, watch = open_page("")
    box = page.locator("input.md-search__input")
    box.click()
    # the search worker builds its index in the background: wait until it says it is ready
    page.wait_for_function(
        "() => { const m = document.querySelector('.md-search-result__meta');"
        " return m && m.textContent.trim() && !/initiali/i.test(m.textContent); }",
        timeout=60_000,
    )
    box.press_sequentially("layer_norm_backward")  # Material searches on key events, as a reader types
    try:
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
    except Exception:
        meta = page.locator(".md-search-result__meta").inner_text()
        raise AssertionError(
            f"no search result after 30 s; the search box says {meta!r}; page problems: {watch.problems}"
        ) from None
    hrefs = page.evaluate("() => Array.from(document.querySelectorAll('.md-search-result__item a'), a => a.href)")
    assert any(urlsplit(h).path.rstrip("/").endswith(page_url(LAYER_NORM).rstrip("/")) for h in hrefs), hrefs
    assert not watch.problems, "\n".join(watch.problems)


def test_generated_tables_stay_out_of_the_search_index_and_the_prose_stays_in(site):
    """The matrix, the facts of each entry and the worked-example tables are marked data-search-exclude."""
    docs = json.loads((site.root / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    text = {d["location"]: d["title"] + " " + d["text"] for d in docs}
    everything = " ".join(text.values())
    # the matrix's head row and an entry's facts rows are generated on every page that has them
    assert "Tests that run its lines" not in everything
    assert "Reached by tests through other functions" not in everything
    assert "From central differences" not in everything
    # what a reader searches for is still there: the prose of the pages and the code-and-math tables
    traceability = " ".join(v for k, v in text.items() if k.startswith("traceability/"))
    assert "Traceability" in traceability
    layer_norm = " ".join(v for k, v in text.items() if k.startswith(page_url(LAYER_NORM)))
    assert "layer_norm_backward" in layer_norm and "Code and math connection" in layer_norm
    html = (site.root / "traceability" / "index.html").read_text(encoding="utf-8")
    assert html.count("data-search-exclude") >= 3


# ---------------------------------------------------------------------------- the LayerNorm page


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_of_the_layer_norm_page(open_page, scheme):
    """Full-page screenshots, for a person to look at: tests/browser/screenshots/layer-norm-*.png."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        page, watch = open_page(page_url(LAYER_NORM), viewport=viewport, color_scheme=scheme)
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == (
            "slate" if scheme == "dark" else "default"
        ), "the palette does not follow the reader's preference"
        out = SCREENSHOTS / f"layer-norm-{name}-{scheme}.png"
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 10_000
        page.screenshot(path=str(SCREENSHOTS / f"layer-norm-{name}-{scheme}-top.png"))  # the first screen
        example = page.locator(".trace-example[data-trace-widget]").first
        if example.count():
            example.scroll_into_view_if_needed()
            example.screenshot(path=str(SCREENSHOTS / f"layer-norm-{name}-{scheme}-example.png"))
        assert not watch.problems, "\n".join(watch.problems)


def test_the_layer_norm_page_has_copy_buttons_and_a_palette_toggle(open_page):
    page, watch = open_page(page_url(LAYER_NORM))
    listings = page.locator(".highlight").count()
    assert listings > 0
    copy_buttons = page.locator(".highlight button[data-md-type=copy], .highlight button.md-clipboard").count()
    assert copy_buttons >= listings, f"{copy_buttons} copy buttons for {listings} listings"
    before = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    page.locator("form[data-md-component=palette] label:visible").first.click()
    after = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
    assert {before, after} == {"default", "slate"}, (before, after)
    assert not watch.problems, "\n".join(watch.problems)


def test_every_formula_of_the_layer_norm_page_is_math_a_screen_reader_reads(open_page):
    """Each formula carries MathML, exposed to assistive technology; its HTML drawing is hidden from it."""
    page, watch = open_page(page_url(LAYER_NORM))
    formulas = page.evaluate(
        """() => Array.from(document.querySelectorAll("article .katex"), k => ({
              tex: (k.querySelector("annotation") || {}).textContent || k.textContent.slice(0, 80),
              math: k.querySelectorAll("math").length,
              spoken: Array.from(k.querySelectorAll("math"), m => m.textContent.trim()).join(""),
              drawingHidden: k.querySelector(":scope > .katex-html")?.getAttribute("aria-hidden") === "true",
            }))"""
    )
    assert formulas, "the LayerNorm page has no formula"
    problems = [f"{f['tex']!r}: {f['math']} <math> elements" for f in formulas if f["math"] != 1]
    problems += [f"{f['tex']!r}: its <math> is empty" for f in formulas if f["math"] == 1 and not f["spoken"]]
    problems += [f"{f['tex']!r}: its HTML drawing is not aria-hidden" for f in formulas if not f["drawingHidden"]]
    assert not problems, f"{len(problems)} of {len(formulas)} formulas:\n" + "\n".join(problems)
    # in the accessibility tree as Playwright computes it: role math, one per formula
    assert page.locator("article").get_by_role("math").count() == len(formulas)
    assert not watch.problems, "\n".join(watch.problems)


def test_weight_of_the_layer_norm_page(open_page, site):
    """Bytes the browser receives to show the page, by kind; written to screenshots/layer-norm-weight.json."""
    page, watch = open_page(page_url(LAYER_NORM))
    page.evaluate("document.fonts.ready")
    watch.settle(page)
    by_kind: dict[str, int] = {}
    files = []
    for response in watch.responses:
        size = len(response.body())
        kind = response.request.resource_type
        by_kind[kind] = by_kind.get(kind, 0) + size
        files.append({"url": response.url[len(site.base) :], "kind": kind, "bytes": size})
    total = sum(by_kind.values())
    SCREENSHOTS.mkdir(exist_ok=True)
    report = {"total": total, "by_kind": by_kind, "files": sorted(files, key=lambda f: -f["bytes"])}
    (SCREENSHOTS / "layer-norm-weight.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nLayerNorm page: {total} bytes; " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    assert not watch.problems, "\n".join(watch.problems)
    assert total < WEIGHT_BUDGET, f"the LayerNorm page weighs {total} bytes, over {WEIGHT_BUDGET}: {by_kind}"

"""The built site in chromium at a phone's width: no page of it scrolls sideways (its wide tables, formulas and
listings scroll inside their own boxes), and none shows a console error or a failed request there.

Apart from test_site.py, which reads every page at desktop width, so that the two halves of the site's page loads
can run in two pytest-xdist workers at once.
"""

from __future__ import annotations

import pytest

from .conftest import PHONE, page_paths, page_url

PAGES = page_paths()


@pytest.mark.parametrize("md", PAGES)
def test_page_does_not_scroll_sideways_on_a_phone(open_page, md):
    page, watch = open_page(page_url(md), viewport=PHONE)
    widths = page.evaluate(
        "() => ({page: document.documentElement.scrollWidth, body: document.body.scrollWidth, view: window.innerWidth})"
    )
    wide = page.evaluate(
        """() => Array.from(document.querySelectorAll("article *"))
              .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                      && !e.closest(".trace-table-wrap, .trace-math, .highlight, .md-typeset__scrollwrap, .trace-example-inputs, .trace-example-check, .katex-mathml"))
              .slice(0, 5).map(e => e.tagName + "." + e.className)"""
    )
    assert widths["page"] <= widths["view"] and widths["body"] <= widths["view"], (
        f"{page_url(md)} scrolls sideways at {PHONE['width']} px: {widths}; too wide: {wide}"
    )
    assert not watch.problems, "\n".join(watch.problems)

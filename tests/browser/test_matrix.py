"""The traceability matrix and the folded test lists, as a reader sees them in chromium.

The matrix fits the desktop width with no column cut off and stays short; its
filter box and sortable headers (docs_hooks/assets/trace-matrix.js) work; on a phone
the page does not scroll sideways. Long lists of test names are folded: the
LayerNorm page shows few of them before a reader opens a list.
"""

from __future__ import annotations

import pytest

from .conftest import DESKTOP, PHONE, page_url

MATRIX = page_url("traceability.md")
MAX_HEIGHT = 15_000  # px, at 1280 px wide
MAX_UNFOLDED_TESTS = 40  # test names the LayerNorm page shows without opening a <details>

ROWS = "Array.from(document.querySelectorAll('table.trace-matrix tbody tr:not(.trace-matrix-names)'))"


def visible_rows(page) -> list[str]:
    return page.evaluate(f"() => {ROWS}.filter(r => !r.hidden && r.offsetParent !== null).map(r => r.textContent)")


def test_the_matrix_is_short_and_no_column_is_cut_off_at_desktop_width(open_page):
    page, watch = open_page(MATRIX, viewport=DESKTOP)
    found = page.evaluate(
        """() => ({
          height: document.documentElement.scrollHeight,
          view: window.innerWidth,
          heads: Array.from(document.querySelectorAll('table.trace-matrix thead th'),
                            th => [th.textContent.trim(), th.getBoundingClientRect().right]),
        })"""
    )
    assert found["heads"], "no table.trace-matrix on the page"
    cut = [(name, right) for name, right in found["heads"] if right > found["view"]]
    assert not cut, f"header cells end past the {found['view']} px viewport: {cut}"
    assert found["height"] <= MAX_HEIGHT, f"the matrix page is {found['height']} px tall, over {MAX_HEIGHT}"
    assert not watch.problems, "\n".join(watch.problems)


def test_every_status_badge_stays_inside_its_cell_at_desktop_width(open_page):
    page, watch = open_page(MATRIX, viewport=DESKTOP)
    out = page.evaluate(
        """() => Array.from(document.querySelectorAll('table.trace-matrix td .trace-badge'), b => {
          const cell = b.closest('td').getBoundingClientRect(), badge = b.getBoundingClientRect();
          return [b.textContent, badge.left - cell.left, cell.right - badge.right];
        })"""
    )
    assert out, "no status badge in the matrix"
    # no badge crosses into the Role column (nor the Page column): a little room each side at the least
    crossing = [(label, round(left, 1), round(right, 1)) for label, left, right in out if left < 0 or right < 0]
    assert not crossing, f"{len(crossing)} of {len(out)} badges leave their cell: {crossing[:3]}"
    assert not watch.problems, "\n".join(watch.problems)


def test_filtering_by_a_function_leaves_only_its_rows(open_page):
    page, watch = open_page(MATRIX)
    total = len(visible_rows(page))
    page.locator("input.trace-matrix-filter").fill("layer_norm_backward")
    rows = visible_rows(page)
    assert 0 < len(rows) < total, f"{len(rows)} of {total} rows left"
    assert all("layer_norm_backward" in r for r in rows)
    # a row is kept for its function, not for a test whose name only contains it
    codes = page.evaluate(f"() => {ROWS}.filter(r => !r.hidden).map(r => r.cells[4].textContent)")
    assert all("layer_norm_backward" in c for c in codes), codes
    assert page.locator(".trace-matrix-count").inner_text() == f"{len(rows)} of {total} equations"
    page.locator("input.trace-matrix-filter").fill("")
    assert len(visible_rows(page)) == total
    assert not watch.problems, "\n".join(watch.problems)


def test_a_row_opens_to_its_test_names_and_the_filter_finds_a_test_by_name(open_page):
    # A <details> fires its "toggle" event in a task of its own after the click (HTML's "queue a details
    # toggle event task"), and the names row follows that event: so the test waits for the row with
    # Playwright's expect, which retries, instead of reading the page at the moment the click returns.
    expect = pytest.importorskip("playwright.sync_api").expect
    page, watch = open_page(MATRIX)
    total = len(visible_rows(page))
    details = page.locator("table.trace-matrix details.trace-fold").first
    names = page.locator("table.trace-matrix tr.trace-matrix-names:visible .trace-matrix-tests")
    assert names.count() == 0  # folded: the names come in when a row is opened
    details.locator("summary").click()
    expect(names.first).to_be_visible()
    lists = names.all_inner_texts()
    assert lists, "the opened row shows no test names"
    # below its row, across the table
    assert details.evaluate("d => d.closest('tr').nextElementSibling.classList.contains('trace-matrix-names')")
    name = lists[0].split(": ", 1)[1].split(", ")[0]
    assert name.startswith("test_"), lists
    page.locator("input.trace-matrix-filter").fill(name)
    assert 0 < len(visible_rows(page)) < total
    assert details.evaluate("d => !d.closest('tr').hidden")  # the row that lists it stays, open
    expect(names).to_have_count(len(lists))
    details.locator("summary").click()
    expect(names).to_have_count(0)
    assert not watch.problems, "\n".join(watch.problems)


def test_a_header_sorts_its_column_both_ways(open_page):
    page, watch = open_page(MATRIX)
    counts = "() => " + ROWS + ".map(r => Number(r.cells[6].dataset.sort))"
    titles = "() => " + ROWS + ".map(r => r.cells[0].textContent.trim())"
    before = page.evaluate(titles)
    header = page.locator("table.trace-matrix thead th").nth(6).locator("button")
    header.click()
    up = page.evaluate(counts)
    assert up == sorted(up) and page.evaluate(titles) != before
    header.click()
    down = page.evaluate(counts)
    assert down == sorted(down, reverse=True) and down != up
    sorts = (
        "() => Array.from(document.querySelectorAll('table.trace-matrix thead th'), th => th.getAttribute('aria-sort'))"
    )
    assert page.evaluate(sorts)[6] == "descending"
    page.locator("table.trace-matrix thead th").nth(0).locator("button").click()
    assert page.evaluate(sorts)[0] == "ascending" and page.evaluate(sorts)[6] is None
    assert page.evaluate(titles) == page.evaluate(
        "() => " + ROWS + ".map(r => r.cells[0].textContent.trim())"
        ".sort((a, b) => a.localeCompare(b, undefined, {numeric: true}))"
    )
    assert not watch.problems, "\n".join(watch.problems)


def test_the_matrix_page_does_not_scroll_sideways_on_a_phone(open_page):
    page, watch = open_page(MATRIX, viewport=PHONE)
    widths = page.evaluate(
        "() => ({page: document.documentElement.scrollWidth, body: document.body.scrollWidth, view: window.innerWidth})"
    )
    assert widths["page"] <= widths["view"] and widths["body"] <= widths["view"], widths
    assert not watch.problems, "\n".join(watch.problems)


def test_the_layer_norm_page_folds_its_long_lists_of_tests(open_page):
    page, watch = open_page(page_url("layer-norm.md"))
    names = """() => Array.from(document.querySelectorAll('article code'))
        .filter(c => /(^|\\.)test_\\w+$/.test(c.textContent.trim()) && c.checkVisibility())
        .map(c => c.textContent.trim())"""
    shown = page.evaluate(names)
    assert 0 < len(shown) <= MAX_UNFOLDED_TESTS, f"{len(shown)} test names shown unfolded: {shown}"
    folded = page.locator("article details.trace-fold")
    assert folded.count() > 0
    folded.first.locator("summary").click()  # opening one list shows its names
    assert len(page.evaluate(names)) > len(shown)
    assert not watch.problems, "\n".join(watch.problems)

/* The traceability matrix: a filter box and sortable columns.
 *
 * Works on every <table class="trace-matrix"> of the page (docs_hooks/matrix.py
 * writes it). The filter keeps the rows in which every word typed begins a
 * word of the row's text: an equation's title, its page and entry, its status
 * and role, the function and lines of its code, the names of its tests (folded
 * in the row, but searched all the same) and its specification. A row's test
 * names are written once for all rows that share them, in a <template> after
 * the table; opening the row's <details> shows them in a row below it. So
 * `layer_norm_backward` finds that function's rows, not the rows of a test
 * whose name only contains it. A header sorts its column on a click (again:
 * the other way); a cell's data-sort, when it has one, is what is compared.
 * Plain script, no request.
 */
(function () {
  "use strict";

  const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  function matcher(query) {
    const words = query.trim().split(/\s+/).filter(Boolean);
    // \b before a word character: the term begins a word (names with _ are one word)
    const res = words.map((w) => new RegExp((/^\w/.test(w) ? "\\b" : "") + escape(w), "i"));
    return (text) => res.every((re) => re.test(text));
  }

  function key(row, column, type) {
    const cell = row.cells[column];
    if (!cell) return type === "number" ? -Infinity : "";
    const raw = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    return type === "number" ? parseFloat(raw) || 0 : raw;
  }

  function setUp(table) {
    if (table.dataset.traceMatrix === "ready") return;
    table.dataset.traceMatrix = "ready";
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    // the names a row folds: one <template> after the table for every distinct list (see matrix.py)
    const wrap = table.closest(".trace-table-wrap") || table;
    const lists = new Map(Array.from(wrap.querySelectorAll("template[data-tests]"), (t) => [t.dataset.tests, t]));
    const folded = (r) => Array.from(r.querySelectorAll("details[data-tests]"), (d) => lists.get(d.dataset.tests))
      .filter(Boolean);
    const texts = new Map(rows.map((r) => [
      r,
      [r.textContent, ...folded(r).map((t) => t.content.textContent)].join(" ").replace(/\s+/g, " "),
    ]));
    // An opened row shows its names in a row of their own below it, the table's full width: a cell of
    // the table is too narrow for them.
    const opened = new Map();  // row -> its names row
    table.addEventListener("toggle", (event) => {
      const details = event.target;
      const list = lists.get(details.dataset.tests);
      const row = details.closest("tr");
      if (!list || !row) return;
      let names = opened.get(row);
      if (!names && details.open) {
        names = document.createElement("tr");
        names.className = "trace-matrix-names";
        const cell = names.insertCell();
        cell.colSpan = row.cells.length;
        cell.appendChild(list.content.cloneNode(true));
        opened.set(row, names);
        row.after(names);
      }
      if (names) names.hidden = !details.open || row.hidden;
    }, true);  // toggle does not bubble: listen while it goes down
    rows.forEach((r, i) => { r.dataset.order = String(i); });

    // the filter box, above the table
    const bar = document.createElement("div");
    bar.className = "trace-matrix-bar";
    const label = document.createElement("label");
    label.textContent = "Filter";
    const input = document.createElement("input");
    input.type = "search";
    input.className = "trace-matrix-filter";
    input.placeholder = "function, page, status, test ...";
    label.appendChild(input);
    const count = document.createElement("span");
    count.className = "trace-matrix-count";
    count.setAttribute("aria-live", "polite");
    bar.append(label, count);
    wrap.parentNode.insertBefore(bar, wrap);

    function filter() {
      const ok = matcher(input.value);
      let shown = 0;
      for (const r of rows) {
        const keep = ok(texts.get(r));
        r.hidden = !keep;
        const names = opened.get(r);
        if (names) names.hidden = !keep || !r.querySelector("details[open]");
        if (keep) shown++;
      }
      count.textContent = shown === rows.length
        ? `${rows.length} equations`
        : `${shown} of ${rows.length} equations`;
    }
    input.addEventListener("input", filter);
    filter();

    // sortable headers: a button in each, so a keyboard reaches them too
    const heads = Array.from(table.tHead.rows[0].cells);
    // on a phone each row is a card: every cell says which column it is (trace.css)
    for (const r of rows) {
      Array.from(r.cells).forEach((cell, i) => { if (heads[i]) cell.dataset.label = heads[i].textContent.trim(); });
    }
    heads.forEach((th, column) => {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "trace-matrix-sort";
      button.textContent = th.textContent;
      button.title = "Sort by this column";
      th.textContent = "";
      th.appendChild(button);
      button.addEventListener("click", () => {
        const type = th.dataset.sortType || "text";
        const ascending = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach((h) => h.removeAttribute("aria-sort"));
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        const sign = ascending ? 1 : -1;
        const sorted = rows.slice().sort((a, b) => {
          const ka = key(a, column, type);
          const kb = key(b, column, type);
          const c = type === "number" ? ka - kb : String(ka).localeCompare(String(kb), undefined, { numeric: true });
          return c * sign || Number(a.dataset.order) - Number(b.dataset.order);
        });
        body.append(...sorted.flatMap((r) => (opened.has(r) ? [r, opened.get(r)] : [r])));
      });
    });
  }

  function start() {
    document.querySelectorAll("table.trace-matrix").forEach(setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

"use strict";
// Sorting and filtering for the report's tables; no dependencies, works from file:// too.
(function () {
  function cellKey(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var key = cell.getAttribute("data-sort");
    return key === null ? cell.textContent.trim() : key;
  }
  function compare(a, b) {
    var na = a === "" ? NaN : Number(a), nb = b === "" ? NaN : Number(b);
    if (!isNaN(na) && !isNaN(nb)) return na - nb;
    return a.localeCompare(b, undefined, { numeric: true });
  }
  function sortBy(table, th) {
    var index = th.cellIndex;
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (r) { return [cellKey(r, index), r]; });
    keyed.sort(function (x, y) { var c = compare(x[0], y[0]); return ascending ? c : -c; });
    var frag = document.createDocumentFragment();
    keyed.forEach(function (pair) { frag.appendChild(pair[1]); });
    body.appendChild(frag);
    applyFilters(table);
  }
  function applyFilters(table) {
    var textInput = document.querySelector('input[data-filter-for="' + table.id + '"]');
    var statusSelect = document.querySelector('select[data-status-filter-for="' + table.id + '"]');
    var query = textInput ? textInput.value.trim().toLowerCase() : "";
    var wanted = statusSelect ? statusSelect.value : "";
    var rows = table.tBodies[0].rows, shown = 0;
    // Long tables are paged: only one page of the matching rows is in the layout.
    var size = Number(table.getAttribute("data-page-size")) || Infinity;
    var pages = 1, page = table._page || 0;
    var matching = [];
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      if (row._text === undefined) row._text = row.textContent.toLowerCase();
      var ok = (!query || row._text.indexOf(query) !== -1) &&
               (!wanted || row.querySelector('[data-status="' + wanted + '"]') !== null);
      if (ok) matching.push(row); else row.hidden = true;
    }
    shown = matching.length;
    if (size !== Infinity) pages = Math.max(1, Math.ceil(shown / size));
    page = Math.min(page, pages - 1);
    table._page = page;
    for (var j = 0; j < matching.length; j++) {
      matching[j].hidden = size !== Infinity && Math.floor(j / size) !== page;
    }
    var counter = document.querySelector('[data-count-for="' + table.id + '"]');
    if (counter) counter.textContent = shown + " of " + rows.length + " shown";
    var pager = document.querySelector('[data-pager-for="' + table.id + '"]');
    if (pager) renderPager(pager, table, page, pages, size, shown);
  }
  function renderPager(pager, table, page, pages, size, shown) {
    pager.textContent = "";
    if (pages <= 1) return;
    function button(text, target) {
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.disabled = target < 0 || target >= pages || target === page;
      b.addEventListener("click", function () { table._page = target; applyFilters(table); });
      pager.appendChild(b);
    }
    button("\u2039 prev", page - 1);
    var label = document.createElement("span");
    var first = page * size + 1, last = Math.min((page + 1) * size, shown);
    label.textContent = "rows " + first + "\u2013" + last + " (page " + (page + 1) + " of " + pages + ")";
    pager.appendChild(label);
    button("next \u203a", page + 1);
  }
  function setUp(table) {
    if (table.tHead) {
      table.tHead.addEventListener("click", function (ev) {
        var th = ev.target.closest("th");
        if (th && !ev.target.closest("a")) sortBy(table, th);
      });
    }
    var controls = document.querySelectorAll(
      '[data-filter-for="' + table.id + '"], [data-status-filter-for="' + table.id + '"]');
    for (var i = 0; i < controls.length; i++) {
      controls[i].addEventListener("input", function () { applyFilters(table); });
    }
    applyFilters(table);
  }
  var tables = document.querySelectorAll("table.sortable");
  for (var i = 0; i < tables.length; i++) setUp(tables[i]);

  // Track views: spans carry their start and end (data-s, data-e); zooming changes the
  // visible time range and re-places them, so text keeps its size.
  function setUpZoom(svg) {
    var t0 = Number(svg.getAttribute("data-t0")), t1 = Number(svg.getAttribute("data-t1"));
    var left = Number(svg.getAttribute("data-left")), right = Number(svg.getAttribute("data-right"));
    var view = [t0, t1], drag = null;
    var spans = svg.querySelectorAll("g.span");
    var axisStart = svg.querySelector('[data-axis="start"]'), axisEnd = svg.querySelector('[data-axis="end"]');
    // Times are seconds (data-unit "s") or microseconds ("us").
    var perSecond = svg.getAttribute("data-unit") === "us" ? 1e6 : 1;
    function fmt(t) {
      var s = t / perSecond;
      if (s === 0) return "0";
      if (s < 1e-3) return (s * 1e6).toFixed(1) + "\u00b5s";
      return s < 1 ? (s * 1000).toFixed(s < 0.01 ? 2 : 0) + "ms" : s.toFixed(1) + "s";
    }
    function draw() {
      var scale = (right - left) / (view[1] - view[0]);
      for (var i = 0; i < spans.length; i++) {
        var g = spans[i], s = Number(g.getAttribute("data-s")), e = Number(g.getAttribute("data-e"));
        var x = left + (s - view[0]) * scale, w = Math.max((e - s) * scale, 1);
        var visible = x + w >= left && x <= right;
        g.style.display = visible ? "" : "none";
        if (!visible) continue;
        var cx = Math.max(x, left), cw = Math.min(x + w, right) - cx;
        var rect = g.querySelector("rect"), text = g.querySelector("text");
        rect.setAttribute("x", cx.toFixed(1));
        rect.setAttribute("width", Math.max(cw, 1).toFixed(1));
        if (text) {
          // Text never runs past its bar: cut to what fits (about 6 px a character).
          if (text._full === undefined) text._full = text.textContent;
          var fit = Math.floor((cw - 6) / 6);
          text.textContent = fit >= text._full.length ? text._full
            : text._full.slice(0, Math.max(fit - 1, 0)) + "\u2026";
          text.setAttribute("x", (cx + 3).toFixed(1));
          text.style.display = fit > 3 ? "" : "none";
        }
      }
      if (axisStart) axisStart.textContent = fmt(view[0]);
      if (axisEnd) axisEnd.textContent = fmt(view[1]);
      svg.setAttribute("data-view", view[0] + " " + view[1]);
    }
    function timeAt(ev) {
      var box = svg.getBoundingClientRect();
      var x = (ev.clientX - box.left) * svg.viewBox.baseVal.width / box.width;
      return view[0] + (x - left) / (right - left) * (view[1] - view[0]);
    }
    svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var at = timeAt(ev), factor = ev.deltaY < 0 ? 0.8 : 1.25;
      var width = Math.min((view[1] - view[0]) * factor, t1 - t0);
      var start = Math.max(t0, Math.min(at - (at - view[0]) * factor, t1 - width));
      view = [start, start + width];
      draw();
    }, { passive: false });
    svg.addEventListener("pointerdown", function (ev) { drag = [timeAt(ev), view.slice()]; });
    svg.addEventListener("pointerup", function () { drag = null; });
    svg.addEventListener("pointerleave", function () { drag = null; });
    svg.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      var width = view[1] - view[0];
      var shift = drag[0] - (drag[1][0] + (timeAt(ev) - view[0]));
      var start = Math.max(t0, Math.min(drag[1][0] + shift, t1 - width));
      view = [start, start + width];
      draw();
    });
    svg.addEventListener("dblclick", function () { view = [t0, t1]; draw(); });
    draw();
  }
  var zoomable = document.querySelectorAll("svg.zoomable");
  for (var k = 0; k < zoomable.length; k++) setUpZoom(zoomable[k]);
})();

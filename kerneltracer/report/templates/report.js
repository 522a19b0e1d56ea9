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
  }
  function applyFilters(table) {
    var textInput = document.querySelector('input[data-filter-for="' + table.id + '"]');
    var statusSelect = document.querySelector('select[data-status-filter-for="' + table.id + '"]');
    var query = textInput ? textInput.value.trim().toLowerCase() : "";
    var wanted = statusSelect ? statusSelect.value : "";
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      if (row._text === undefined) row._text = row.textContent.toLowerCase();
      var ok = (!query || row._text.indexOf(query) !== -1) &&
               (!wanted || row.querySelector('[data-status="' + wanted + '"]') !== null);
      row.hidden = !ok;
      if (ok) shown++;
    }
    var counter = document.querySelector('[data-count-for="' + table.id + '"]');
    if (counter) counter.textContent = shown + " of " + rows.length + " shown";
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
})();

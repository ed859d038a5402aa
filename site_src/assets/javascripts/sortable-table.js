/* Sortable tables, as a progressive enhancement: a <table data-sortable> is a plain table that
   works without JavaScript; here each header cell with a data-sort-type ("text" or "number")
   gets a button that sorts the rows by the data-sort value of that column's cells (text in the
   page language's collation, numbers numerically; empty values last in either direction) and
   says so with aria-sort. Written for the comparison page (glossary/site/compare.py). */
(function () {
  "use strict";

  var collator = new Intl.Collator(document.documentElement.lang || undefined, {
    numeric: true,
    sensitivity: "base"
  });

  function key(row, index) {
    var cell = row.cells[index];
    var value = cell ? cell.getAttribute("data-sort") : null;
    return value === null ? cell.textContent.trim() : value;
  }

  function compare(a, b, type) {
    if (type === "number") {
      return parseFloat(a) - parseFloat(b);
    }
    return collator.compare(a, b);
  }

  function sortBy(table, header, index) {
    var type = header.getAttribute("data-sort-type");
    var direction = header.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    var sign = direction === "ascending" ? 1 : -1;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1, index);
      var b = key(r2, index);
      if (a === "" || b === "") {
        return (a === "") - (b === "");
      }
      return sign * compare(a, b, type);
    });
    rows.forEach(function (row) {
      body.appendChild(row);
    });
    Array.prototype.forEach.call(header.parentNode.cells, function (cell) {
      cell.removeAttribute("aria-sort");
    });
    header.setAttribute("aria-sort", direction);
  }

  function enhance(table) {
    if (table.hasAttribute("data-sort-ready") || !table.tHead || !table.tBodies.length) {
      return;
    }
    table.setAttribute("data-sort-ready", "");
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      if (!header.hasAttribute("data-sort-type")) {
        return;
      }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "gl-sort";
      while (header.firstChild) {
        button.appendChild(header.firstChild);
      }
      header.appendChild(button);
      button.addEventListener("click", function () {
        sortBy(table, header, index);
      });
    });
  }

  function enhanceAll() {
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), enhance);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(enhanceAll); /* Material's page-load stream (instant loading) */
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhanceAll);
  } else {
    enhanceAll();
  }
})();

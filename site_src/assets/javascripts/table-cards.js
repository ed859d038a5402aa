/* Tables as cards on a phone, as a progressive enhancement. Each body cell of a page's plain
   tables (in a .gl-table region, neither a matrix nor a styled table) gets the text of its
   column's header as data-label and its content wrapped in one span.gl-value; the table is then
   marked data-cards, and glossary.css lays it out on a narrow screen as a stack of cards, one
   per row, each value beside its label (the value is the second grid column as a whole, so a
   line break in it stays under the value). Without JavaScript a table stays a table in its
   keyboard-focusable scroll region. The labels used to be written into the HTML of every cell,
   which made them a third of a long table's bytes. */
(function () {
  "use strict";

  function label(cell) {
    return cell.textContent.replace(/\s+/g, " ").trim();
  }

  function enhance(table) {
    if (table.hasAttribute("data-cards") || !table.tHead || !table.tBodies.length) {
      return;
    }
    var labels = Array.prototype.map.call(table.tHead.rows[0].cells, label);
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        Array.prototype.forEach.call(row.cells, function (cell, index) {
          if (cell.tagName !== "TD") {
            return;
          }
          var value = document.createElement("span");
          value.className = "gl-value";
          while (cell.firstChild) {
            value.appendChild(cell.firstChild);
          }
          cell.appendChild(value);
          cell.setAttribute("data-label", labels[index] || "");
        });
      });
    });
    table.setAttribute("data-cards", "");
  }

  function enhanceAll() {
    var tables = document.querySelectorAll(".gl-table table:not([class]):not([data-matrix])");
    Array.prototype.forEach.call(tables, enhance);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(enhanceAll); /* Material's page-load stream (instant loading) */
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhanceAll);
  } else {
    enhanceAll();
  }
})();

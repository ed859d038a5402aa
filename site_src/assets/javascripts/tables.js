/* The site's tables, as progressive enhancements; both work on a plain table that reads well
   without JavaScript, and both run on every page load (Material's instant loading included).

   Sorting: a <table data-sortable> (the comparison page, glossary/site/compare.py) gets, in each
   header cell with a data-sort-type ("text" or "number"), a button that sorts the rows by the
   data-sort value of that column's cells (text in the page language's collation, numbers
   numerically; empty values last in either direction) and says so with aria-sort.

   Cards on a phone: each body cell of a page's plain tables (in a .gl-table region, neither a
   matrix nor a styled table) gets the text of its column's header as data-label and its content
   wrapped in one span.gl-value; the table is then marked data-cards, and glossary.css lays it
   out on a narrow screen as a stack of cards, one per row, each value beside its label (the
   value is the second grid column as a whole, so a line break in it stays under the value).
   Without JavaScript a table stays a table in its keyboard-focusable scroll region. The labels
   used to be written into the HTML of every cell, which made them a third of a long table's
   bytes. Sorting runs first, so a card's label is the header's text inside its sort button. */
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

  function sortable(table) {
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

  function label(cell) {
    return cell.textContent.replace(/\s+/g, " ").trim();
  }

  function cards(table) {
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
    Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), sortable);
    var tables = document.querySelectorAll(".gl-table table:not([class]):not([data-matrix])");
    Array.prototype.forEach.call(tables, cards);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(enhanceAll); /* Material's page-load stream (instant loading) */
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", enhanceAll);
  } else {
    enhanceAll();
  }
})();

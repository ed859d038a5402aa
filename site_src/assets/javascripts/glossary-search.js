/* Site search in the reader's language, loaded before Material's bundle (overrides/main.html).

   1. Results of the page's language first. Material (9.x, no query or result hooks since 9.0)
      searches in a web worker that answers each query with groups of documents, best first.
      A listener added to that worker before Material's own reorders each answer in place:
      the groups of the page's language first, each part in Material's order.
   2. Each result names its language: a badge in the language's own name (the names of the
      language selector, from #__glossary), marked with its lang, after the result's title.
   3. Material looks for a sitemap.xml next to every alternate link, expecting the links to
      point at language roots with a sitemap each; mkdocs-static-i18n points them at the
      page's own translations instead (which the selector follows directly), so every page
      logged 404s. Those look-ups get an empty sitemap, which is what Material falls back to
      on a 404; the site's one sitemap at its root is fetched as before.

   4. Accent-blind search, same ranking with or without accents: the index is shipped as the
      pages read; when Material hands it to its worker, every title and text is folded letter
      for letter (accents dropped, ё -> е, й kept: the rules of glossary.normalize; кэш -> кеш,
      the two spellings of "cache"; written so that the length of a string never changes), and
      so is every query. A query typed with
      or without accents then meets the same tokens, scored the same. The worker's answer
      highlights positions in the folded text; since folding keeps every position, the same
      slices of the original text are shown, with the reader's accents, never a folded word.
      glossary/site/search.py holds the same fold in Python, for the tests. */
(function () {
  "use strict";

  var SETUP = 0; // Material's SearchMessageType.SETUP
  var QUERY = 2; // Material's SearchMessageType.QUERY
  var RESULT = 3; // Material's SearchMessageType.RESULT
  var EMPTY_SITEMAP =
    "data:application/xml,%3Curlset%20xmlns%3D%22http%3A%2F%2Fwww.sitemaps.org%2Fschemas%2Fsitemap%2F0.9%22%2F%3E";

  function readJson(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : {};
  }

  var config = readJson("__config");
  var site = readJson("__glossary");
  var names = site.languages || {};
  var base = new URL(config.base || ".", location.href);

  /* The language of a site path relative to the root: its first segment when that is a
     language with a folder ("es/terms/poda/"), the default language otherwise. */
  function languageOf(path) {
    var head = String(path).split("/", 1)[0];
    return head !== site.default && Object.prototype.hasOwnProperty.call(names, head)
      ? head
      : site.default;
  }

  function pageLanguage() {
    var lang = (document.documentElement.lang || "").slice(0, 2);
    return Object.prototype.hasOwnProperty.call(names, lang) ? lang : site.default;
  }

  function ownLanguageFirst(groups, language) {
    var own = [];
    var other = [];
    groups.forEach(function (group) {
      var first = group && group[0];
      (first && languageOf(first.location) === language ? own : other).push(group);
    });
    return own.concat(other);
  }

  /* One UTF-16 unit to one: a letter whose canonical decomposition is a base letter and
     combining marks becomes the base letter (á -> a, ё -> е, Ñ -> N), except й and Й. */
  var MARKS = /^\p{M}+$/u;
  var KEPT = { "\u0439": true, "\u0419": true };
  var foldedChars = Object.create(null);

  function foldChar(c) {
    var folded = foldedChars[c];
    if (folded === undefined) {
      var parts = c.normalize("NFD");
      folded = parts.length > 1 && !KEPT[c] && MARKS.test(parts.slice(1)) ? parts[0] : c;
      foldedChars[c] = folded;
    }
    return folded;
  }

  /* Russian writes the loanword "cache" both ways, кэш and кеш: one spelling for search. */
  function fold(text) {
    return String(text)
      .replace(/[^\x00-\x7f]/g, foldChar)
      .replace(/([кК])([эЭ])([шШ])/g, function (_, k, e, sh) {
        return k + (e === "\u044d" ? "\u0435" : "\u0415") + sh;
      });
  }

  var originals = Object.create(null); // location -> {title, text} as the page reads

  function foldedIndex(data) {
    var docs = data.docs.map(function (doc) {
      originals[doc.location] = { title: doc.title, text: doc.text };
      var copy = Object.assign({}, doc);
      if (typeof doc.title === "string") copy.title = fold(doc.title);
      if (typeof doc.text === "string") copy.text = fold(doc.text);
      return copy;
    });
    return Object.assign({}, data, { docs: docs });
  }

  /* The highlighted slices of a folded field, in the original's letters: each piece between
     two <mark> tags is found in the folded field, and the same span of the original shown. */
  function unfold(highlighted, original) {
    if (typeof highlighted !== "string" || typeof original !== "string") return highlighted;
    var folded = fold(original);
    var cursor = 0;
    return highlighted
      .split(/(<\/?mark>)/)
      .map(function (piece) {
        if (piece === "<mark>" || piece === "</mark>" || !piece) return piece;
        var at = folded.indexOf(piece, cursor);
        if (at < 0) return piece;
        cursor = at + piece.length;
        return original.slice(at, cursor);
      })
      .join("");
  }

  var queryWords = Object.create(null); // folded word of the last query -> as the reader typed

  function rememberQuery(query) {
    queryWords = Object.create(null);
    String(query)
      .toLowerCase()
      .split(/[\s\-]+/)
      .forEach(function (word) {
        if (word) queryWords[fold(word)] = word;
      });
  }

  /* A result's query terms name the words the reader typed (Material shows a missing one,
     struck out) or, for a found one, the word as the page writes it (Material passes it to
     the page it opens, which highlights it): never the folded form. */
  var LETTERS = /[\p{L}\p{N}]/u;

  function pageForm(term, original) {
    var folded = fold(original);
    var escaped = term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    var found = new RegExp("(^|[^\\p{L}\\p{N}])" + escaped, "iu").exec(folded);
    if (!found) return null;
    var start = found.index + found[1].length;
    var end = start + term.length;
    while (end < folded.length && LETTERS.test(folded[end])) end++;
    return original.slice(start, end).toLowerCase();
  }

  function readerTerms(item, original) {
    var text = original.title + " " + original.text.replace(/<[^>]*>/g, " ");
    var terms = {};
    Object.keys(item.terms || {}).forEach(function (term) {
      var found = item.terms[term];
      terms[(found && pageForm(term, text)) || queryWords[term] || term] = found;
    });
    return terms;
  }

  /* Material completes the query from the words of a matching title: with a title's spelling. */
  function readerSuggestions(data) {
    var titles = data.items.map(function (group) {
      var original = group[0] && originals[group[0].location];
      return original ? String(original.title) : "";
    });
    return data.suggest.map(function (term) {
      for (var i = 0; i < titles.length; i++) {
        var written = pageForm(term, titles[i]);
        if (written) return written;
      }
      return term;
    });
  }

  function restoreText(groups) {
    groups.forEach(function (group) {
      group.forEach(function (item) {
        var original = originals[item.location];
        if (!original) return;
        item.title = unfold(item.title, original.title);
        item.text = unfold(item.text, original.text);
        item.terms = readerTerms(item, original);
      });
    });
  }

  function reorder(event) {
    var message = event.data;
    if (message && message.type === RESULT && message.data && message.data.items) {
      restoreText(message.data.items);
      message.data.items = ownLanguageFirst(message.data.items, pageLanguage());
      if (message.data.suggest) message.data.suggest = readerSuggestions(message.data);
    }
  }

  /* What Material sends its worker: the index folded, each query folded. */
  function foldMessage(message) {
    if (message && message.type === SETUP && message.data && message.data.docs) {
      return { type: SETUP, data: foldedIndex(message.data) };
    }
    if (message && message.type === QUERY && typeof message.data === "string") {
      rememberQuery(message.data);
      return { type: QUERY, data: fold(message.data) };
    }
    return message;
  }

  function isSearchWorker(url) {
    var search = config.search && new URL(config.search, location.href);
    return Boolean(search) && String(new URL(url, location.href)) === String(search);
  }

  var NativeWorker = window.Worker;
  if (NativeWorker) {
    var SiteWorker = function (url, options) {
      var worker = new NativeWorker(url, options);
      if (isSearchWorker(url)) {
        worker.addEventListener("message", reorder);
        var post = worker.postMessage.bind(worker);
        worker.postMessage = function (message, transfer) {
          return transfer === undefined
            ? post(foldMessage(message))
            : post(foldMessage(message), transfer);
        };
      }
      return worker;
    };
    SiteWorker.prototype = NativeWorker.prototype;
    window.Worker = SiteWorker;
  }

  function badge(language) {
    var span = document.createElement("span");
    span.className = "gl-search-lang";
    span.lang = language;
    span.textContent = names[language] || language;
    return span;
  }

  function markLanguages(list) {
    list.querySelectorAll(".md-search-result__item").forEach(function (item) {
      var link = item.querySelector("a");
      var title = link && link.querySelector(".md-search-result__article h1");
      if (!title || title.querySelector(".gl-search-lang")) return;
      var path = link.href.startsWith(base.href) ? link.href.slice(base.href.length) : "";
      title.appendChild(badge(languageOf(path)));
    });
  }

  function watchResults() {
    var list = document.querySelector(".md-search-result__list");
    if (!list) return;
    new MutationObserver(function () {
      markLanguages(list);
    }).observe(list, { childList: true, subtree: true });
  }

  var rootSitemap = String(new URL("sitemap.xml", base));
  var open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    var args = Array.prototype.slice.call(arguments);
    var target = new URL(String(url), location.href);
    if (/\/sitemap\.xml$/.test(target.pathname) && String(target) !== rootSitemap) {
      args[1] = EMPTY_SITEMAP;
    }
    return open.apply(this, args);
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", watchResults);
  } else {
    watchResults();
  }
})();

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

   The accent-blind part of search (destilacion, емкость) is in the index itself: see
   glossary/site/search.py, run after the build. */
(function () {
  "use strict";

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

  function reorder(event) {
    var message = event.data;
    if (message && message.type === RESULT && message.data && message.data.items) {
      message.data.items = ownLanguageFirst(message.data.items, pageLanguage());
    }
  }

  function isSearchWorker(url) {
    var search = config.search && new URL(config.search, location.href);
    return Boolean(search) && String(new URL(url, location.href)) === String(search);
  }

  var NativeWorker = window.Worker;
  if (NativeWorker) {
    var SiteWorker = function (url, options) {
      var worker = new NativeWorker(url, options);
      if (isSearchWorker(url)) worker.addEventListener("message", reorder);
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

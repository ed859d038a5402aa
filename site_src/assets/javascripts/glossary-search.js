/* Site search in the reader's language, loaded before Material's bundle (overrides/main.html).

   1. Results of the page's language first. Material (9.x, no query or result hooks since 9.0)
      searches in a web worker that answers each query with groups of documents, best first.
      Each language has a worker of its own (point 5): the page's language's groups come
      first, in Material's order, then those of the other languages.
   2. Each result names its language: a badge in the language's own name (the names of the
      language selector, from #__glossary), marked with its lang, after the result's title.
   3. Material looks for a sitemap.xml next to every alternate link, expecting the links to
      point at language roots with a sitemap each; mkdocs-static-i18n points them at the
      page's own translations instead (which the selector follows directly), so every page
      logged 404s. Those look-ups get an empty sitemap, which is what Material falls back to
      on a 404; the site's one sitemap at its root is fetched as before.

   4. Accent-blind search, same ranking with or without accents: the index is shipped as the
      pages read; when Material hands it to its workers, every title and text is folded letter
      for letter (accents dropped, ё -> е, й kept: the rules of glossary.normalize; кэш -> кеш,
      the two spellings of "cache"; written so that the length of a string never changes), and
      so is every query. A query typed with
      or without accents then meets the same tokens, scored the same. The worker's answer
      highlights positions in the folded text; since folding keeps every position, the same
      slices of the original text are shown, with the reader's accents, never a folded word.
      glossary/site/search.py holds the same fold in Python, for the tests.

   5. The first result soon after the index loads. Material's worker builds its lunr index from
      the documents when it receives them (about a second for the whole index: the time grows
      with the text), then answers each query in turn, one per keystroke. Material talks to the
      object returned for its worker URL; here that is a stand-in speaking the same messages,
      with two Material workers behind it. The first gets the page's language alone (a third of
      the text) and, once it is ready, search is ready; only then does the second start, with
      the other languages, so that it does not slow the first. The page's language comes in a
      file of its own: Material's request for the whole index (search/search_index.json) asks
      for search/search_index.<lang>.json instead, a third of the bytes to download and parse
      (glossary/site/search.py writes one per language), and the other languages' files are
      fetched once search is ready. Given the whole index (a build without those files), the
      stand-in splits it by language itself. The first worker is created with the page, as
      Material creates its own, so that its script loads while the index downloads. A query goes to every ready
      worker and their answers make one, the page's language first; when the second worker
      becomes ready, the query on the screen is asked again, and its answer gains the other
      languages. While a query is being answered, later keystrokes keep only the newest query,
      sent as soon as the answer arrives, so the last keystroke never waits behind a queue of
      the prefixes typed before it. Each document's folded text is kept, so an answer is
      restored without folding again. */
(function () {
  "use strict";

  var SETUP = 0; // Material's SearchMessageType.SETUP
  var READY = 1; // Material's SearchMessageType.READY
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

  /* The letters that may fold: not ASCII, and not the basic Cyrillic block А-я (U+0410-U+044F),
     none of which decomposes but й and Й, which are kept; so a Russian text, nearly all of it
     in that block, is not looked at letter by letter. */
  var FOLDABLE = /[^\x00-\x7f\u0410-\u044f]/g;

  /* Russian writes the loanword "cache" both ways, кэш and кеш: one spelling for search. */
  function fold(text) {
    return String(text)
      .replace(FOLDABLE, foldChar)
      .replace(/([кК])([эЭ])([шШ])/g, function (_, k, e, sh) {
        return k + (e === "\u044d" ? "\u0435" : "\u0415") + sh;
      });
  }

  /* location -> the document as the page reads it, and folded: {title, text, folded: {...}} */
  var originals = Object.create(null);

  function foldedDocs(docs) {
    return docs.map(function (doc) {
      var copy = Object.assign({}, doc);
      if (typeof doc.title === "string") copy.title = fold(doc.title);
      if (typeof doc.text === "string") copy.text = fold(doc.text);
      originals[doc.location] = {
        title: doc.title,
        text: doc.text,
        folded: { title: copy.title, text: copy.text },
      };
      return copy;
    });
  }

  /* The highlighted slices of a folded field, in the original's letters: each piece between
     two <mark> tags is found in the folded field, and the same span of the original shown. */
  function unfold(highlighted, original, folded) {
    if (typeof highlighted !== "string" || typeof original !== "string") return highlighted;
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

  /* The words of each query sent, folded -> as the reader typed them (a query's answer may
     arrive after the reader typed the next one). */
  var typedWords = Object.create(null);

  function rememberQuery(query) {
    var words = Object.create(null);
    String(query)
      .toLowerCase()
      .split(/[\s\-]+/)
      .forEach(function (word) {
        if (word) words[fold(word)] = word;
      });
    typedWords[fold(query)] = words;
  }

  /* A result's query terms name the words the reader typed (Material shows a missing one,
     struck out) or, for a found one, the word as the page writes it (Material passes it to
     the page it opens, which highlights it): never the folded form. */
  var LETTERS = /[\p{L}\p{N}]/u;

  function pageForm(term, original, folded) {
    var escaped = term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    var found = new RegExp("(^|[^\\p{L}\\p{N}])" + escaped, "iu").exec(folded);
    if (!found) return null;
    var start = found.index + found[1].length;
    var end = start + term.length;
    while (end < folded.length && LETTERS.test(folded[end])) end++;
    return original.slice(start, end).toLowerCase();
  }

  /* A document's title and text without markup, as written and folded, made once. */
  function plainText(original) {
    if (!original.plain) {
      var text = original.title + " " + String(original.text).replace(/<[^>]*>/g, " ");
      original.plain = { text: text, folded: fold(text) };
    }
    return original.plain;
  }

  function readerTerms(item, original, words) {
    var plain = plainText(original);
    var terms = {};
    Object.keys(item.terms || {}).forEach(function (term) {
      var found = item.terms[term];
      terms[(found && pageForm(term, plain.text, plain.folded)) || words[term] || term] = found;
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
        var written = pageForm(term, titles[i], fold(titles[i]));
        if (written) return written;
      }
      return term;
    });
  }

  function restoreText(groups, words) {
    groups.forEach(function (group) {
      group.forEach(function (item) {
        var original = originals[item.location];
        if (!original) return;
        item.title = unfold(item.title, original.title, original.folded.title);
        item.text = unfold(item.text, original.text, original.folded.text);
        item.terms = readerTerms(item, original, words);
      });
    });
  }

  /* One answer from the workers' answers: the page's language's groups, then the other
     languages' groups, each in Material's order (best first); the first completion found. */
  function mergedAnswer(answers) {
    var merged = { items: [] };
    answers.forEach(function (answer) {
      merged.items = merged.items.concat(answer.items || []);
    });
    var suggesting = answers.filter(function (answer) {
      return answer.suggest;
    });
    if (suggesting.length) {
      var found = suggesting.filter(function (answer) {
        return answer.suggest.length;
      });
      merged.suggest = found.length ? found[0].suggest : [];
    }
    return merged;
  }

  function readerAnswer(answer, query) {
    restoreText(answer.items, typedWords[query] || Object.create(null));
    if (answer.suggest) answer.suggest = readerSuggestions(answer);
    return answer;
  }

  /* The documents of the page's language, and those of the others (in the index's order). */
  function splitByLanguage(docs) {
    var language = pageLanguage();
    var own = [];
    var rest = [];
    docs.forEach(function (doc) {
      (languageOf(doc.location) === language ? own : rest).push(doc);
    });
    return [own, rest];
  }

  /* The whole index's address, and that of one language's file (written beside it by the
     build). */
  var wholeIndex = String(new URL("search/search_index.json", base));

  function languageIndex(language) {
    return String(new URL("search/search_index." + language + ".json", base));
  }

  /* The documents of the languages other than the page's, from their own files, in the order
     of the language selector; a file that fails to arrive leaves its language out. */
  function otherLanguagesDocs() {
    var language = pageLanguage();
    var others = Object.keys(names).filter(function (other) {
      return other !== language;
    });
    return Promise.all(
      others.map(function (other) {
        return fetch(languageIndex(other))
          .then(function (response) {
            return response.ok ? response.json() : { docs: [] };
          })
          .then(function (data) {
            return data.docs || [];
          })
          .catch(function () {
            return [];
          });
      })
    ).then(function (parts) {
      return [].concat.apply([], parts);
    });
  }

  /* What Material takes for its search worker: the same messages (SETUP, READY, QUERY,
     RESULT), answered by two Material workers (point 5 above). */
  function SearchWorkers(url, options) {
    var facade = new EventTarget();
    var workers = [];
    var later = null; // () -> a promise of the documents of the worker to start once ready
    var ready = false;
    var asked = null; // the folded query the ready workers are answering
    var waiting = null; // the newest query typed since
    var latest = null; // the last query Material sent
    // The first worker is created with the page, as Material creates its own: its script and
    // lunr's language scripts load while the index downloads, not after it has arrived.
    var spare = new NativeWorker(url, options);

    function emit(message) {
      var event = new MessageEvent("message", { data: message });
      facade.dispatchEvent(event);
      if (typeof facade.onmessage === "function") facade.onmessage(event);
    }

    function ask(query) {
      asked = query;
      workers.forEach(function (part) {
        part.answer = null;
        part.asked = part.pending = part.ready;
        if (part.ready) part.worker.postMessage({ type: QUERY, data: query });
      });
    }

    function request(query) {
      if (ready && asked === null) ask(query);
      else waiting = query;
    }

    function answered() {
      var query = asked;
      var answers = workers
        .filter(function (part) {
          return part.asked;
        })
        .map(function (part) {
          return part.answer;
        });
      asked = null;
      if (waiting !== null) {
        var next = waiting;
        waiting = null;
        ask(next);
      }
      emit({ type: RESULT, data: readerAnswer(mergedAnswer(answers), query) });
    }

    function start(docs, data) {
      var worker = spare || new NativeWorker(url, options);
      spare = null;
      var entry = { worker: worker, ready: false, asked: false, pending: false, answer: null };
      worker.addEventListener("message", function (event) {
        receive(entry, event.data, data);
      });
      workers.push(entry);
      worker.postMessage({ type: SETUP, data: Object.assign({}, data, { docs: foldedDocs(docs) }) });
    }

    function receive(part, message, data) {
      if (!message) return;
      if (message.type === READY) {
        part.ready = true;
        if (!ready) {
          ready = true;
          emit(message);
          var rest = later;
          later = null;
          if (rest) {
            rest().then(function (docs) {
              if (docs.length) start(docs, data);
            });
          }
        } else if (latest !== null) {
          request(latest); // the answer on the screen gains this worker's languages
        }
        if (waiting !== null && asked === null) {
          var first = waiting;
          waiting = null;
          ask(first);
        }
      } else if (message.type === RESULT && part.pending) {
        part.answer = message.data || { items: [] };
        part.pending = false;
        if (!workers.some(function (w) { return w.pending; })) answered();
      }
    }

    facade.postMessage = function (message) {
      if (message && message.type === SETUP && message.data && message.data.docs) {
        var parts = splitByLanguage(message.data.docs);
        later = parts[1].length
          ? function () {
              return Promise.resolve(parts[1]); // the whole index was loaded
            }
          : otherLanguagesDocs;
        start(parts[0], message.data);
      } else if (message && message.type === QUERY && typeof message.data === "string") {
        rememberQuery(message.data);
        latest = fold(message.data);
        request(latest);
      }
    };
    facade.terminate = function () {
      if (spare) spare.terminate();
      workers.forEach(function (part) {
        part.worker.terminate();
      });
    };
    return facade;
  }

  function isSearchWorker(url) {
    var search = config.search && new URL(config.search, location.href);
    return Boolean(search) && String(new URL(url, location.href)) === String(search);
  }

  var NativeWorker = window.Worker;
  if (NativeWorker) {
    var SiteWorker = function (url, options) {
      return isSearchWorker(url) ? SearchWorkers(url, options) : new NativeWorker(url, options);
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

  /* Material's requests: a sitemap that does not exist (point 3) and the whole index, for
     which the page's language's own file is fetched (point 5). */
  var rootSitemap = String(new URL("sitemap.xml", base));
  var open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    var args = Array.prototype.slice.call(arguments);
    var target = new URL(String(url), location.href);
    if (/\/sitemap\.xml$/.test(target.pathname) && String(target) !== rootSitemap) {
      args[1] = EMPTY_SITEMAP;
    } else if (String(target) === wholeIndex) {
      args[1] = languageIndex(pageLanguage());
    }
    return open.apply(this, args);
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", watchResults);
  } else {
    watchResults();
  }
})();

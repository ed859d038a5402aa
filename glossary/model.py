"""The in-memory model of the glossary: immutable entries built by :mod:`glossary.loader`.

An :class:`Entry` is one technique or concept, written in every language of
:data:`glossary.schema.LANGS` (:class:`LangText`), with its primary sources (:class:`Source`),
the maintained libraries that implement it (:class:`Library`) and, for techniques, where the
reference implementation lives (:class:`Reference`). A :class:`Glossary` maps slugs to entries.

The classes are frozen dataclasses: the site, the exporters and the command line read them and
never change them. Build them with :func:`glossary.loader.load_glossary`, which validates first.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class LangText:
    """An entry's text in one language."""

    term: str
    aliases: tuple[str, ...]
    definition: str
    explanation: str
    note: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The term followed by its aliases."""
        return (self.term, *self.aliases)


@dataclass(frozen=True)
class Source:
    """A primary source: a paper, a book or a documentation page.

    ``year`` is the publication (venue) year; ``arxiv_year`` keeps the year of the preprint.
    """

    title: str
    authors: tuple[str, ...]
    year: int
    arxiv: str | None = None
    doi: str | None = None
    url: str | None = None
    venue: str | None = None
    arxiv_year: int | None = None
    """The year the arXiv id was posted (given in the entry, else read from the id)."""
    authors_truncated: bool = False
    """Whether ``authors`` lists only the first authors; citations then end in "et al."."""

    @property
    def link(self) -> str | None:
        """The canonical link: arXiv abstract page, else DOI resolver, else ``url``."""
        if self.arxiv:
            return f"https://arxiv.org/abs/{self.arxiv}"
        if self.doi:
            return f"https://doi.org/{self.doi}"
        return self.url


@dataclass(frozen=True)
class Library:
    """A maintained library API that implements the technique or concept."""

    name: str
    api: str
    url: str | None = None


@dataclass(frozen=True)
class Reference:
    """Where a technique's reference implementation lives and whether it exists yet."""

    module: str
    status: str

    @property
    def implemented(self) -> bool:
        return self.status == "implemented"

    @property
    def command(self) -> str:
        """The command that runs it, e.g. ``python -m reference.pruning``."""
        return f"python -m {self.module}"


@dataclass(frozen=True)
class Entry:
    """One glossary entry (a technique or a concept)."""

    slug: str
    kind: str
    category: str
    related: tuple[str, ...]
    reference: Reference | None
    libraries: tuple[Library, ...]
    sources: tuple[Source, ...]
    lang: dict[str, LangText] = field(hash=False)
    path: Path | None = field(default=None, compare=False)
    one_way: tuple[str, ...] = ()
    """Slugs of ``related`` that deliberately do not link back (see :mod:`glossary.links`)."""

    def text(self, lang: str) -> LangText:
        """The entry's text in ``lang``."""
        return self.lang[lang]

    def term(self, lang: str) -> str:
        """The preferred term in ``lang``."""
        return self.lang[lang].term

    @property
    def is_technique(self) -> bool:
        return self.kind == "technique"


@dataclass(frozen=True)
class Glossary:
    """All entries, keyed by slug; iterating yields entries in slug order."""

    entries: dict[str, Entry] = field(hash=False)

    def get(self, slug: str) -> Entry | None:
        return self.entries.get(slug)

    def __getitem__(self, slug: str) -> Entry:
        return self.entries[slug]

    def __contains__(self, slug: object) -> bool:
        return slug in self.entries

    def __iter__(self) -> Iterator[Entry]:
        return iter(sorted(self.entries.values(), key=lambda e: e.slug))

    def __len__(self) -> int:
        return len(self.entries)

    def techniques(self) -> list[Entry]:
        return [e for e in self if e.kind == "technique"]

    def concepts(self) -> list[Entry]:
        return [e for e in self if e.kind == "concept"]

    def in_category(self, category: str) -> list[Entry]:
        return [e for e in self if e.category == category]

"""Sources: one year policy (year = venue year, arxiv_year = preprint year), no fake authors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from glossary_support import REAL, copy_valid, edit, problems

from glossary import export, schema
from glossary.loader import load_glossary


@pytest.fixture
def d(tmp_path: Path) -> Path:
    return copy_valid(tmp_path)


def test_arxiv_id_year() -> None:
    assert schema.arxiv_id_year("2010.02502") == 2020
    assert schema.arxiv_id_year("1712.05877v3") == 2017
    assert schema.arxiv_id_year("cs/0112017") == 2001
    assert schema.arxiv_id_year("hep-th/9901001") == 1999
    assert schema.arxiv_id_year("not an id") is None


def test_year_is_the_venue_year(d: Path) -> None:
    path = edit(
        d, "ddim", '    arxiv: "2010.02502"\n', '    arxiv: "2010.02502"\n    venue: "ICLR 2021"\n'
    )
    assert problems(d) == [
        f"{path}:11: sources[0].year: year 2020 differs from the venue 'ICLR 2021' (hint: year is "
        "the venue year: set year: 2021 and keep the arXiv year in arxiv_year)"
    ]
    edit(d, "ddim", "    year: 2020\n", "    year: 2021\n    arxiv_year: 2020\n")
    assert problems(d) == []
    source = load_glossary(d)["ddim"].sources[0]
    assert (source.year, source.arxiv_year, source.venue) == (2021, 2020, "ICLR 2021")


def test_arxiv_year_must_match_the_id(d: Path) -> None:
    path = edit(d, "ddim", "    year: 2020\n", "    year: 2020\n    arxiv_year: 2019\n")
    assert problems(d) == [
        f"{path}:12: sources[0].arxiv_year: arxiv_year 2019 does not match the id '2010.02502' "
        "(hint: the id was posted in 2020)"
    ]


def test_arxiv_year_is_read_from_the_id_when_absent(d: Path) -> None:
    assert load_glossary(d)["ddim"].sources[0].arxiv_year == 2020
    assert load_glossary(d)["ema"].sources[0].arxiv_year is None  # a DOI, no preprint


def test_et_al_is_not_an_author(d: Path) -> None:
    path = edit(d, "ddim", "Stefano Ermon]", "et al.]")
    assert problems(d) == [
        f"{path}:10: sources[0].authors[2]: 'et al.' is not an author (hint: list the real "
        "authors, or the first ones and set authors_truncated: true)"
    ]


def test_truncated_authors_are_marked_without_a_fake_author(d: Path) -> None:
    edit(d, "ddim", "Stefano Ermon]\n", "Stefano Ermon]\n    authors_truncated: true\n")
    g = load_glossary(d)
    buf = io.StringIO()
    export.write_json(g, buf)
    (entry,) = [e for e in json.loads(buf.getvalue())["entries"] if e["slug"] == "ddim"]
    src = entry["sources"][0]
    assert src["authors"] == ["Jiaming Song", "Chenlin Meng", "Stefano Ermon"]
    assert src["authors_truncated"] is True and src["arxiv_year"] == 2020
    assert export._source_text(g["ddim"].sources[0]).startswith(
        "Jiaming Song, Chenlin Meng, Stefano Ermon, et al. (2020). "
    )
    edit(d, "ddim", "authors_truncated: true", "authors_truncated: yes please")
    assert problems(d)[0].endswith("sources[0].authors_truncated: expected true or false, got text")


def test_committed_sources_follow_the_policy() -> None:
    for entry in load_glossary(REAL):
        for s in entry.sources:
            assert not any(schema.ET_AL_RE.match(a) for a in s.authors), entry.slug
            if s.arxiv:
                assert s.arxiv_year == schema.arxiv_id_year(s.arxiv), entry.slug
    ddim = load_glossary(REAL)["ddim"].sources[0]
    assert (ddim.year, ddim.arxiv_year) == (2021, 2020)
    jacob = next(s for s in load_glossary(REAL)["quantization"].sources if s.arxiv == "1712.05877")
    assert (jacob.year, jacob.arxiv_year, jacob.venue) == (2018, 2017, "CVPR 2018")

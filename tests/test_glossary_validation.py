"""Validation is airtight: the schema's patterns matched in full, real arXiv months and DOI
syntax, and hostile files (deep nesting, NUL bytes, an empty folder) get one correct line each
while the other files are still checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from glossary_support import copy_valid, edit, problems

from glossary import schema


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('arxiv: "2010.02502"', 'arxiv: "2010.02502\\n"', "malformed arXiv id '2010.02502\\n'"),
        ('arxiv: "2010.02502"', 'arxiv: "2013.02502"', "malformed arXiv id '2013.02502'"),
        ('arxiv: "2010.02502"', 'arxiv: "2000.02502"', "malformed arXiv id '2000.02502'"),
        ('arxiv: "2010.02502"', 'arxiv: "2010.02502v0"', "malformed arXiv id"),
    ],
)
def test_arxiv_ids_match_in_full_with_a_real_month(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    d = copy_valid(tmp_path)
    edit(d, "ddim", old, new)
    found = problems(d)
    assert len(found) == 1 and expected in found[0] and "\n" not in found[0]


@pytest.mark.parametrize(
    ("slug", "old", "new", "expected"),
    [
        ("ema", 'doi: "10.1137/0330046"', 'doi: "10.1137/0330046\\n"', "malformed DOI"),
        ("ema", 'doi: "10.1137/0330046"', 'doi: "10.1137/ 0330046"', "malformed DOI"),
        ("ema", 'doi: "10.1137/0330046"', 'doi: "10.11/0330046"', "malformed DOI"),
        ("pruning", "module: reference.pruning", 'module: "reference.pruning\\n"', "module path"),
        ("pruning", "related: [feature-caching,", 'related: ["feature-caching\\n",', "valid slug"),
        (
            "pruning",
            "url: https://pytorch.org/docs/stable/nn.html#utilities",
            'url: "https://pytorch.org/docs\\n"',
            "http(s) URL",
        ),
        (
            "pruning",
            "url: https://pytorch.org/docs/stable/nn.html#utilities",
            'url: "https://pytorch.org/docs\\x1b[0m"',
            "http(s) URL",
        ),
    ],
)
def test_every_field_pattern_is_matched_in_full(
    tmp_path: Path, slug: str, old: str, new: str, expected: str
) -> None:
    d = copy_valid(tmp_path)
    edit(d, slug, old, new)
    found = [p for p in problems(d) if expected in p]
    assert len(found) == 1 and "\n" not in found[0], problems(d)


def test_schema_patterns_are_the_checks() -> None:
    arxiv = next(f for f in schema.SOURCE_FIELDS if f.name == "arxiv")
    assert arxiv.matches("2305.10924") and arxiv.matches("2305.10924v2")
    assert arxiv.matches("cs/0112017") and arxiv.matches("hep-th/9901001")
    assert not arxiv.matches("2305.10924\n") and not arxiv.matches("2313.10924")
    doi = next(f for f in schema.SOURCE_FIELDS if f.name == "doi")
    assert doi.matches("10.1109/CVPR.2016.90") and not doi.matches("10.1109/CVPR 2016")


def test_deep_nesting_nul_bytes_and_the_rest_are_reported_together(tmp_path: Path) -> None:
    d = copy_valid(tmp_path)
    (d / "zz-deep.yaml").write_text(
        "slug: zz-deep\nkind: concept\nx: " + "[" * 600 + "]" * 600 + "\n", encoding="utf-8"
    )
    (d / "zz-nul.yaml").write_bytes(b"slug: zz-nul\nkind: concept\nx: 'a\x00b'\n")
    edit(d, "ddim", 'arxiv: "2010.02502"', 'arxiv: "2013.02502"')
    found = problems(d)
    assert len(found) == 3, found
    assert any("zz-deep.yaml:3: yaml: nested more than" in p for p in found)
    assert any("zz-nul.yaml:3: file: contains a NUL byte" in p for p in found)
    assert any("ddim.yaml" in p and "2013.02502" in p for p in found)


def test_an_empty_folder_is_a_problem_not_zero_entries_ok(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    found = problems(tmp_path / "empty")
    assert len(found) == 1 and "holds no entry files" in found[0]

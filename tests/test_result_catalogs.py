"""The words of the results (gettext catalogs of the shared ``results`` domain and of each
technique) follow the same house style as the entries (glossary/style/*.yaml)."""

from __future__ import annotations

import pytest
from babel.messages.pofile import read_po

from glossary import style
from glossary.resulttext import LANGS, catalog_path
from reference.registry import slugs

DOMAINS = ["results", *slugs(), "stacking"]


@pytest.mark.parametrize("lang", LANGS)
def test_result_catalogs_follow_the_house_style(lang: str) -> None:
    sheet, problems = style.load_sheet(lang)
    assert sheet is not None and problems == []
    found = []
    for domain in DOMAINS:
        with catalog_path(domain, lang).open("rb") as fh:
            catalog = read_po(fh, locale=lang, domain=domain)
        for message in catalog:
            if not message.id:
                continue
            texts = message.string if isinstance(message.string, list | tuple) else [message.string]
            for text in texts:
                for _line, rule, variant in style.check_text(sheet, domain, "msgstr", [(0, text)]):
                    found.append(f"{domain}: {message.id}: {variant!r} (rule {rule.id})")
    assert found == []

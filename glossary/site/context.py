"""What every page builder needs: the glossary, the results and how links are written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from glossary.model import Glossary
from glossary.site.plots import Chart
from glossary.site.results import Results


@dataclass
class Context:
    """Everything a page builder needs."""

    glossary: Glossary
    results: Results
    module_exists: Callable[[str], bool]
    use_directory_urls: bool = True
    problems: list[str] = field(default_factory=list)
    charts: dict[tuple[str, str], list[Chart]] = field(default_factory=dict)
    """The drawn charts of each page, keyed by ``(page path, language)``
    (``("terms/pruning", "es")``, ``("compare", "ru")``); none unless
    :func:`glossary.site.generate.draw_charts` ran."""

"""What every page builder needs: the glossary, the results and how links are written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from glossary.model import Glossary
from glossary.site.results import Results


@dataclass
class Context:
    """Everything a page builder needs."""

    glossary: Glossary
    results: Results
    module_exists: Callable[[str], bool]
    use_directory_urls: bool = True
    problems: list[str] = field(default_factory=list)

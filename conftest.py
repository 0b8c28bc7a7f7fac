"""pytest's hooks for test_mediawiki_mcp.py, whose fixtures live in the test module itself."""
from __future__ import annotations

import pytest

from realwiki import wikis_needed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs the tests that need no real wiki first, in their order, and then the others, in
    theirs: the run's wikis start in the background meanwhile (the farm fixture)."""
    items.sort(key=lambda item: bool(wikis_needed([item])))

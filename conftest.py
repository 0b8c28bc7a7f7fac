"""pytest's hooks for test_mediawiki_mcp.py, whose fixtures live in the test module itself."""
from __future__ import annotations

import contextlib
import ctypes
import tempfile
from pathlib import Path
from typing import Any

import pytest

from realwiki import stop_shared, wikis_needed


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs the tests that need no real wiki first, in their order, and then the others, in
    theirs: the run's wikis start in the background meanwhile (the farm fixture)."""
    items.sort(key=lambda item: bool(wikis_needed([item])))


# Under pytest-xdist (-n), the workers share one farm of wikis: its directory is made here, in
# the process that runs them, handed to each, and cleared once they are all done.

def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        config.stash[FARM] = Path(tempfile.mkdtemp(prefix="mw-farm-"))
        # A wiki outlives the worker that started it: as its orphan, this process can reap it.
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["wiki_farm"] = str(node.config.stash[FARM])


def pytest_unconfigure(config: pytest.Config) -> None:
    if FARM in config.stash:
        stop_shared(config.stash[FARM])


FARM = pytest.StashKey[Path]()
PR_SET_CHILD_SUBREAPER = 36

"""pytest's hooks, and the fixtures the tests share: the real wikis of a run and what is made on them
once (servers, accounts, histories, the dists), and the fakes for faults a real wiki will not make."""
from __future__ import annotations

import contextlib
import ctypes
import inspect
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from realwiki import (
    VERSIONS,
    RealWiki,
    StateServer,
    WikiFarm,
    stop_shared,
    wikis_needed,
)
from tests.support import (
    CHROMEDRIVER,
    CHROMIUM,
    Accounts,
    FakeWiki,
    History,
    HttpServer,
    build_dists,
    farm_wiki,
    http_servers,
    make_accounts,
    make_history,
    make_server,
    shared_bot_server,
)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the marks set here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``wiki`` the tests that use a real wiki (a wiki fixture, or the farm itself), and runs those
    that need none first, in their order, and then the others, in theirs: the run's wikis start in
    the background meanwhile (the farm fixture)."""
    for item in items:
        function = getattr(item, "function", None)
        if wikis_needed([item]) or function and "farm" in inspect.signature(function).parameters:
            item.add_marker(pytest.mark.wiki)
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


@pytest.fixture
def bot_server(farm: WikiFarm, wiki: RealWiki) -> Any:
    return shared_bot_server(farm, wiki)


@pytest.fixture
def anon_server(farm: WikiFarm, wiki: RealWiki) -> Any:
    return farm.once((wiki.api, "anon_server"), lambda _: make_server({"MEDIAWIKI_URL": wiki.api}))


@pytest.fixture(scope="session", autouse=True)
def farm(request: pytest.FixtureRequest) -> Iterator[WikiFarm]:
    """The run's wikis, and the packages the packaging tests install, made in the background as
    the run begins, while the tests that need neither run (conftest.py orders them first). Under
    pytest-xdist its workers share one farm (conftest.py names its directory)."""
    shared = getattr(request.config, "workerinput", {}).get("wiki_farm")
    running = WikiFarm(shared=Path(shared) if shared else None)
    running.prepare(wikis_needed(request.session.items))
    if any("dists" in getattr(item, "fixturenames", ()) for item in request.session.items):
        running.prepare_across("dists", build_dists)
    try:
        yield running
    finally:
        running.close()


@pytest.fixture
def mw_version() -> str:
    """The MediaWiki version of a test's wiki: the first of VERSIONS, or each in turn for a test
    marked on_every_version."""
    return VERSIONS[0]


@pytest.fixture
def wiki(farm: WikiFarm, mw_version: str) -> RealWiki:
    return farm.wiki(mw_version)


german_wiki = farm_wiki("german_wiki")      # 1.43 in German: Kategorie:, Datei:, Vorlage:, Diskussion:


persian_wiki = farm_wiki("persian_wiki")    # 1.43 in Persian, written right to left


recipes_wiki = farm_wiki("recipes_wiki")    # articles also in a namespace of their own (Recipe:)


other_wiki = farm_wiki("other_wiki")        # a second, private wiki: reading it needs an account


third_wiki = farm_wiki("third_wiki")        # a public wiki nobody configured: add-wiki finds it


spam_wiki = farm_wiki("spam_wiki")          # refuses edits for its own reasons ($wgSpamRegex, SpamBlacklist)


@pytest.fixture
def accounts(farm: WikiFarm, wiki: RealWiki) -> Accounts:
    return farm.across(f"accounts-{wiki.key}", lambda _: make_accounts(wiki))


@pytest.fixture
def history(farm: WikiFarm, wiki: RealWiki) -> History:
    return farm.across(f"history-{wiki.key}", lambda _: make_history(wiki))


@pytest.fixture
def fake() -> Iterator[FakeWiki]:
    server = FakeWiki()
    yield server
    server.close()


@pytest.fixture
def the_other_version(farm: WikiFarm, mw_version: str) -> RealWiki:
    """The test wiki of the version of VERSIONS that the test's wiki is not: 1.43 beside 1.39."""
    return farm.wiki(next(v for v in VERSIONS if v != mw_version))


@pytest.fixture
def http_bot_server(farm: WikiFarm, wiki: RealWiki) -> HttpServer:
    return farm.once((wiki.api, "http_bot_server"),
                     lambda stack: stack.enter_context(http_servers((wiki.env(), ())))[0])


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium that Selenium drives (as root, Chromium runs only without its sandbox).
    A browser that dies while starting ("DevToolsActivePort file doesn't exist", seen once in CI
    on two busy cores) is started again with a new profile: that is the browser's fault, not the
    server's, and the test has not begun."""
    from selenium import webdriver
    from selenium.common.exceptions import SessionNotCreatedException
    from selenium.webdriver.chrome.service import Service
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(path)]
    assert not missing, f"{', '.join(missing)} missing: apt-get install chromium chromium-driver (.ci/run does)"
    for attempt in (1, 2, 3):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=800,1000", f"--user-data-dir={tmp_path / f'chromium-{attempt}'}"):
            options.add_argument(argument)
        try:
            driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
            break
        except SessionNotCreatedException:
            if attempt == 3:
                raise
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session", params=["redis", "valkey"])
def state_server(request: pytest.FixtureRequest) -> Iterator[StateServer]:
    server = StateServer(request.param)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def dists(farm: WikiFarm) -> Path:
    """The sdist and the wheel, built once a run (the farm starts it early)."""
    return farm.across("dists", build_dists)


@pytest.fixture(scope="session")
def installed_wheel(dists: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed; its bin directory."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    wheel = next(dists.glob("*.whl"))
    done = subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--python", str(venv / "bin" / "python"),
                           str(wheel)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv / "bin"

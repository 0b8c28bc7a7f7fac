"""The path of one tool call through the package: which of its functions and modules a get-page
and an edit (update-page on the revision read) pass, counted with a profiler on the test wiki.

    python benchmarks/walk.py [--show]

Starts realwiki's test wiki, builds the server with the test wiki's bot account, warms it with one
call of each, and then counts, for one call of each through an in-memory MCP client: the package's
named functions called (each once; comprehensions and lambdas are not counted), the modules they
are in, and how often the call passes from one module into another (each call or return that
crosses a module boundary). --show prints the path.
Never part of the test run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import Client

from mediawiki_mcp.config import Config
from mediawiki_mcp.server import create_server
from realwiki import RIVER_ARTICLE, start_test_wiki

PACKAGE = str(ROOT / "mediawiki_mcp")


class Path_:
    """The package's frames entered while it records, in order: (module, function)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.crossings = 0
        self.recording = False
        self.lock = threading.Lock()
        self.last: str | None = None

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if not self.recording or event not in ("call", "return"):
            return
        filename = frame.f_code.co_filename
        module = Path(filename).stem if filename.startswith(PACKAGE) else None
        if module is None or "<" in frame.f_code.co_qualname:  # comprehensions and lambdas are not steps
            return
        with self.lock:
            if event == "call":
                self.calls.append((module, frame.f_code.co_qualname))
            if self.last is not None and module != self.last:
                self.crossings += 1
            self.last = module

    def summary(self, what: str, show: bool) -> None:
        functions = list(dict.fromkeys(self.calls))
        modules = list(dict.fromkeys(module for module, _ in self.calls))
        print(f"{what}: {len(functions)} functions of the package in {len(modules)} modules, "
              f"{self.crossings} passes between modules")
        print(f"  modules, in the order first entered: {', '.join(modules)}")
        if show:
            for module, function in functions:
                print(f"    {module}.{function}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="print each function, in the order first called")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mediawiki-mcp-walk-") as directory:
        wiki = start_test_wiki(Path(directory))
        try:
            server = create_server(Config.from_env({
                "MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_USERNAME": wiki.bot_user, "MEDIAWIKI_PASSWORD": wiki.bot_password,
                "MEDIAWIKI_READ_ONLY": "false"}))
            title = "Walk benchmark page"

            async def go() -> None:
                async with Client(server) as client:
                    await client.call_tool("create-page", {"title": title, "source": "First line."})
                    await client.call_tool("get-page", {"title": RIVER_ARTICLE})  # warm: logins, site info
                    page = await client.call_tool("get-page", {"title": title})
                    await client.call_tool("update-page", {"title": title, "source": "Second line."})
                    for name, arguments in (("get-page", {"title": RIVER_ARTICLE}),
                                            ("update-page", {"title": title, "source": "Third line."})):
                        if name == "update-page":
                            page = await client.call_tool("get-page", {"title": title})
                        path = Path_()
                        sys.setprofile(path.profile)
                        threading.setprofile(path.profile)
                        path.recording = True
                        result = await client.call_tool(name, arguments)
                        path.recording = False
                        sys.setprofile(None)
                        threading.setprofile(None)  # type: ignore[arg-type]
                        assert not result.is_error, result
                        path.summary(name, options.show)
                    del page
            anyio.run(go)
        finally:
            wiki.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

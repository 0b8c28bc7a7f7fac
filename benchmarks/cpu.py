"""The CPU time this process spends on one tool call: the server and an in-memory MCP client, the
wiki's own time apart (it runs in php). Comparing two versions on one wiki:

    python benchmarks/cpu.py                       # starts realwiki's test wiki, measures, stops it
    python benchmarks/cpu.py --wiki API USER PASS  # a wiki already running (e.g. for another checkout)

Each case is called once to warm up, then --runs times; the median per case is printed, in ms.
It runs the installed mediawiki_mcp, so another checkout's venv measures that checkout. Never part
of the test run.
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import mediawiki_mcp

CASES: list[tuple[str, dict[str, Any]]] = [
    ("get-page", {"title": "Long page"}), ("get-page", {"title": "Apple"}), ("search-page", {"query": "fruit"}),
    ("get-page-history", {"title": "Apple"}), ("get-category-members", {"category": "Fruits"})]


def measure(api: str, user: str, password: str, runs: int) -> None:
    server = mediawiki_mcp.create_server(mediawiki_mcp.Config.from_env({
        "MEDIAWIKI_URL": api, "MEDIAWIKI_USERNAME": user, "MEDIAWIKI_PASSWORD": password,
        "MEDIAWIKI_MCP_LOG_LEVEL": "WARNING"}))
    logging.disable(logging.INFO)  # as main() sets the level; an embedded server's log is the embedder's

    async def go() -> None:
        async with Client(server) as client:
            for name, arguments in CASES:
                await client.call_tool(name, arguments)
            for name, arguments in CASES:
                spent = []
                for _ in range(runs):
                    started = time.process_time()
                    result = await client.call_tool(name, arguments)
                    spent.append(time.process_time() - started)
                    assert not result.is_error, result
                print(f"{name:<22} {next(iter(arguments.values()))!s:<12} {statistics.median(spent) * 1000:7.2f} ms CPU")
    anyio.run(go)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wiki", nargs=3, metavar=("API", "USER", "PASSWORD"), help="a running wiki and bot account")
    parser.add_argument("--runs", type=int, default=40, help="timed calls per case (default 40)")
    options = parser.parse_args(argv)
    print(f"mediawiki_mcp from {Path(mediawiki_mcp.__file__).parent}")
    if options.wiki:
        api, user, password = options.wiki
        measure(api, user, password, options.runs)
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from realwiki import start_test_wiki
    with tempfile.TemporaryDirectory(prefix="mediawiki-mcp-cpu-") as directory:
        wiki = start_test_wiki(Path(directory))
        try:
            measure(wiki.api, wiki.bot_user, wiki.bot_password, options.runs)
        finally:
            wiki.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

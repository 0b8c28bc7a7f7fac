"""The baseline for benchmarks/bench.py: a minimal MCPServer with one tool that
makes one requests call to a wiki's API and returns the body.

    python benchmarks/minimal_server.py http://127.0.0.1:8080/w/api.php
"""
from __future__ import annotations

import sys

import requests
from mcp.server.mcpserver import MCPServer

API = sys.argv[1]
session = requests.Session()
server = MCPServer("minimal")


@server.tool(structured_output=False)
def get(params: dict[str, str]) -> str:
    """Makes one GET request to the wiki's API."""
    return session.get(API, params={**params, "format": "json", "formatversion": "2"}, timeout=30).text


if __name__ == "__main__":
    server.run("stdio")

"""Load over Streamable HTTP against the real test wiki: many sessions at once.

    python benchmarks/load.py [--sessions 50] [--calls 20] [--idle 100]

Run alone it starts the test suite's real MediaWiki; benchmarks/bench.py runs it too, on its
wiki. Three set-ups of `mediawiki-mcp --transport http`: one process keeping sessions, one
process with --stateless, and two --stateless processes behind a round-robin proxy (this
file, run with --proxy, in a process of its own so that it shares no interpreter with the
clients). In each, every session (a thread with its own connection) initializes, then makes
its mixed read calls one after another, all sessions at once. Printed: throughput, p50 and
p99 latency of the calls, errors, and the server's resident memory per idle session (its
growth while that many more sessions are opened and left idle, divided by their number).
Budgets: no errors, p99 at most 4 x p50, under 2 MB per idle session. Never part of the tests.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import http.server
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-06-18"
#: The mix each session cycles through: everyday reads, each one request to the wiki.
MIX: list[tuple[str, dict[str, Any]]] = [
    ("get-page", {"title": "Apple"}),
    ("search-page", {"query": "fruit"}),
    ("get-page", {"title": "Banana", "content": "none", "metadata": True}),
    ("search-page-by-prefix", {"prefix": "Ba"}),
    ("get-category-members", {"category": "Fruits"}),
    ("get-page-history", {"title": "Apple"}),
    ("get-links-here", {"title": "Apple"}),
    ("get-pages", {"titles": ["Apple", "Banana", "Cherry"]}),
    ("get-site-info", {}),
    ("get-page", {"title": "Long page", "section": 1}),
]


# ---------------------------------------------------------------------------
# Servers and the round-robin proxy
# ---------------------------------------------------------------------------

class HttpServerProcess:
    """`mediawiki-mcp --transport http --port 0`; its address read from its log."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        script = shutil.which("mediawiki-mcp")
        command = [script] if script else [sys.executable, str(ROOT / "mediawiki_mcp.py")]
        # At INFO, the server logs the address it listens on.
        self.process = subprocess.Popen([*command, "--transport", "http", "--port", "0", *args],
                                        env=dict(env, MEDIAWIKI_MCP_LOG_LEVEL="INFO"),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        assert self.process.stderr
        for line in self.process.stderr:
            found = re.search(r"Streamable HTTP at (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise RuntimeError("the HTTP server did not start")
        # Keep reading the log, so the server never blocks on a full pipe.
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def relay(handler: http.server.BaseHTTPRequestHandler, port: int, body: bytes | None, timeout: float) -> None:
    """Sends the request ``handler`` holds (its ``body`` read) to 127.0.0.1:``port`` and writes the
    whole answer back with its length (a POST's event stream ends with its answer)."""
    upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
    upstream.request(handler.command, handler.path, body=body, headers={**headers, "Host": f"127.0.0.1:{port}"})
    response = upstream.getresponse()
    payload = response.read()
    handler.send_response(response.status)
    for key, value in response.getheaders():
        if key.lower() not in ("transfer-encoding", "connection", "content-length"):
            handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
    upstream.close()


def serve_round_robin(targets: list[int]) -> None:
    """--proxy: forwards each request to the next of the target ports in turn, as a load
    balancer in front of replicas does; prints its own port, then serves until killed."""
    turn = itertools.cycle(targets)
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                port = next(turn)
            relay(self, port, body, timeout=120)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


@contextlib.contextmanager
def round_robin_proxy(urls: list[str]) -> Iterator[str]:
    ports = [str(int(url.rsplit(":", 1)[1].split("/")[0])) for url in urls]
    proxy = subprocess.Popen([sys.executable, __file__, "--proxy", *ports], stdout=subprocess.PIPE, text=True)
    assert proxy.stdout
    try:
        yield f"http://127.0.0.1:{proxy.stdout.readline().strip()}/mcp"
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)


# ---------------------------------------------------------------------------
# A Streamable HTTP client session, as plain HTTP
# ---------------------------------------------------------------------------

class Session:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = requests.Session()
        self.session_id: str | None = None
        self.next_id = 0

    def post(self, message: dict[str, Any]) -> requests.Response:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if message.get("method") != "initialize":
            headers["MCP-Protocol-Version"] = PROTOCOL
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        response = self.http.post(self.url, data=json.dumps(message), headers=headers, timeout=120)
        self.session_id = response.headers.get("Mcp-Session-Id", self.session_id)  # none when stateless
        return response

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC answer; raises on an HTTP error."""
        self.next_id += 1
        response = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        response.raise_for_status()
        if response.headers.get("Content-Type", "").startswith("text/event-stream"):
            events = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
            return next(event for event in events if event.get("id") == self.next_id)
        return response.json()

    def open(self) -> None:
        answer = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                             "clientInfo": {"name": "load", "version": "1"}})
        assert "result" in answer, answer
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()

    def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """Calls a tool; returns what went wrong, or None."""
        try:
            answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        except (requests.RequestException, StopIteration, ValueError) as error:
            return f"{tool}: {type(error).__name__}: {error}"
        if "error" in answer:
            return f"{tool}: JSON-RPC {answer['error']}"
        if answer["result"].get("isError"):
            return f"{tool}: {answer['result']['content'][0]['text'][:120]}"
        return None


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_sessions(connect: Callable[[], Callable[[int], str | None]], sessions: int, calls: int) -> dict[str, Any]:
    """Every session at once, each making its calls one after another. ``connect`` opens a
    session and returns its caller: call number -> what went wrong, or None."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(sessions + 1, timeout=300)

    def one(index: int) -> None:
        try:
            call = connect()
        except (requests.RequestException, AssertionError, ValueError, StopIteration) as error:  # counted
            with lock:
                errors.append(f"connect: {type(error).__name__}: {error}")
            start.wait()
            return
        start.wait()
        mine, wrong = [], []
        for i in range(index, index + calls):
            began = time.perf_counter()
            problem = call(i)
            mine.append(time.perf_counter() - began)
            if problem:
                wrong.append(problem)
        with lock:
            latencies.extend(mine)
            errors.extend(wrong)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {"calls": len(latencies), "seconds": elapsed, "throughput": len(latencies) / elapsed,
            "p50": statistics.median(latencies) if latencies else 0.0,
            "p99": percentile(latencies, 0.99) if latencies else 0.0, "errors": errors}


def mcp_session(url: str) -> Callable[[], Callable[[int], str | None]]:
    def connect() -> Callable[[int], str | None]:
        session = Session(url)
        session.open()
        return lambda i: session.call(*MIX[i % len(MIX)])
    return connect


def bare_api(api: str) -> Callable[[], Callable[[int], str | None]]:
    """The wiki alone under the same load: get-page's API request, the cheapest read of the mix."""
    params = {"action": "query", "prop": "revisions", "titles": "Apple", "rvprop": "ids|timestamp|content",
              "rvslots": "main", "format": "json", "formatversion": "2"}

    def connect() -> Callable[[int], str | None]:
        http = requests.Session()

        def call(_: int) -> str | None:
            response = http.get(api, params=params, timeout=120)
            return None if response.ok and "query" in response.json() else f"API: {response.status_code}"
        return call
    return connect


def idle_growth_kib(url: str, servers: list[HttpServerProcess], idle: int) -> float:
    """Resident memory the servers gain per session opened and left idle (a stateful server
    keeps each until it idles out; a stateless one keeps none)."""
    before = sum(server.rss_kib() for server in servers)
    for _ in range(idle):
        Session(url).open()
    return (sum(server.rss_kib() for server in servers) - before) / idle


def run_load(env: dict[str, str], sessions: int = 50, calls: int = 20, idle: int = 100) -> list[tuple[str, bool, str]]:
    """Prints the figures of the wiki alone and of the three set-ups; returns the budgets as
    (name, met, figure)."""
    print(f"\nload over Streamable HTTP: {sessions} sessions at once x {calls} mixed read calls "
          f"({len(MIX)} kinds); memory: {idle} more sessions opened and left idle")
    print(f"{'set-up':<36}{'calls/s':>8}{'p50 ms':>9}{'p99 ms':>9}{'p99/p50':>8}{'errors':>7}"
          f"{'CPU ms/call':>12}{'KiB/idle':>9}")

    def row(name: str, figures: dict[str, Any], cpu: str = "", per_idle: str = "") -> float:
        ratio = figures["p99"] / figures["p50"] if figures["p50"] else float("inf")
        print(f"{name:<36}{figures['throughput']:>8.1f}{figures['p50'] * 1000:>9.1f}{figures['p99'] * 1000:>9.1f}"
              f"{ratio:>8.2f}{len(figures['errors']):>7}{cpu:>12}{per_idle:>9}")
        for problem in sorted(set(figures["errors"]))[:5]:
            print(f"    error: {problem}")
        return ratio

    row("the wiki alone (get-page's request)", run_sessions(bare_api(env["MEDIAWIKI_URL"]), sessions, calls))
    budgets: list[tuple[str, bool, str]] = []
    setups: list[tuple[str, list[tuple[str, ...]]]] = [
        ("one process, sessions", [()]), ("one process, --stateless", [("--stateless",)]),
        ("two --stateless, round robin", [("--stateless",), ("--stateless",)])]
    for name, args in setups:
        servers: list[HttpServerProcess] = []
        try:
            servers += [HttpServerProcess(env, *extra) for extra in args]
            address: contextlib.AbstractContextManager[str] = (
                round_robin_proxy([s.url for s in servers]) if len(servers) > 1
                else contextlib.nullcontext(servers[0].url))
            with address as url:
                run_sessions(mcp_session(url), min(sessions, 10), 2)  # warm: site info, connections
                per_idle = idle_growth_kib(url, servers, idle)  # left open through the load run
                cpu = sum(server.cpu_seconds() for server in servers)
                figures = run_sessions(mcp_session(url), sessions, calls)
                cpu = (sum(server.cpu_seconds() for server in servers) - cpu) / max(figures["calls"], 1)
        finally:
            for server in servers:
                server.stop()
        ratio = row(name, figures, f"{cpu * 1000:.1f}", f"{per_idle:.1f}")
        budgets += [(f"load, {name}: no errors", not figures["errors"], f"{len(figures['errors'])} errors"),
                    (f"load, {name}: p99 <= 4 x p50", ratio <= 4, f"{ratio:.2f} x"),
                    (f"load, {name}: < 2 MB per idle session", per_idle < 2048, f"{per_idle:.1f} KiB")]
    return budgets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50, help="sessions at once (default 50)")
    parser.add_argument("--calls", type=int, default=20, help="calls per session (default 20)")
    parser.add_argument("--idle", type=int, default=100, help="idle sessions for the memory figure (default 100)")
    parser.add_argument("--proxy", nargs="+", type=int, metavar="PORT", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.proxy:
        serve_round_robin(options.proxy)
        return 0
    sys.path.insert(0, str(ROOT))
    from realwiki import start_test_wiki

    with tempfile.TemporaryDirectory(prefix="mw-load-") as directory:
        wiki = start_test_wiki(Path(directory))
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_"))}
            budgets = run_load(dict(env, MEDIAWIKI_URL=wiki.api, MEDIAWIKI_MCP_LOG_LEVEL="WARNING"),
                               options.sessions, options.calls, options.idle)
        finally:
            wiki.stop()
    print("\nbudgets:")
    for name, met, figure in budgets:
        print(f"  [{'met' if met else 'MISSED'}] {name}: {figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

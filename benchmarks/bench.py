"""Benchmarks mediawiki-mcp against the real test wiki and checks its budgets.

    python benchmarks/bench.py [--calls N] [--memory-calls N] [--load]
    python benchmarks/bench.py --start-only [--start-runs N]   # no wiki: start time alone

Starts the test suite's real MediaWiki (realwiki.py, the module the tests use
too), runs the installed `mediawiki-mcp` over real
stdio, and prints:

- per read tool: HTTP requests per call in steady state (counted by a proxy in
  front of the wiki), median and p90 latency through the MCP client, and the
  median of the same API request(s) made directly with requests;
- time at the wiki: the request a tool sends (captured at the proxy) against the
  leanest query that returns the fields its answer shows, replayed alternately;
- the server's overhead on a small page above a minimal MCPServer with one tool
  making the same single requests call (benchmarks/minimal_server.py);
- bytes on the wire of representative responses;
- tools/list bytes, in all and per tool;
- time from process start to the initialize answer and to the first tools/list, and the
  CPU time the process spent until that answer (which other work on the machine hardly
  changes), each the median of --start-runs starts taken in turn with the minimal server's;
- resident memory after start and after many calls;
- the time a keyed append spends on the state store, in memory and in a real
  redis-server (MCP_STATE_URL), median and p99 over --store-appends appends;
- find-text-origin on a page of 200 revisions (imported from an XML dump): its requests and
  time, and the revisions it read, for a sentence added long ago and one added lately
  (--text-origin-only measures that alone);
- with --load, the load over Streamable HTTP of benchmarks/load.py;
and the budgets of issue 8, each met or not. Never part of the test run.
"""
from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from load import relay
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from mediawiki_mcp.calls import IDEMPOTENCY_MAX_KEYS, IdempotencyStore
from mediawiki_mcp.config import Config
from mediawiki_mcp.dispatch import run_tool
from mediawiki_mcp.ledger import ReadLedger
from mediawiki_mcp.settings import READ_LEDGER_MAX_ENTRIES
from mediawiki_mcp.state import ServerState
from mediawiki_mcp.store import MemoryStore, open_state_store
from realwiki import BATCH_TITLES, SEARCH_WORD, StateServer, import_page, start_test_wiki

#: (tool, arguments, what it shows). Tools the server does not offer are reported as such.
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("get-page", {"title": "Apple"}, "small page"),
    ("get-page", {"title": "Long page"}, "long page, truncated"),
    ("get-page", {"title": "Long page", "section": 8}, "one section"),
    ("get-page", {"title": "Apple", "content": "html"}, "rendered HTML"),
    ("get-pages", {"titles": BATCH_TITLES + ["Apple", "Banana"]}, "50 titles"),
    ("search-page", {"query": SEARCH_WORD}, "full text"),
    ("search-page-by-prefix", {"prefix": "Ba"}, "title prefix"),
    ("get-site-info", {}, ""),
    ("whoami", {}, ""),
    ("get-revision", {"revisionId": 1}, ""),
    ("get-page-history", {"title": "Apple"}, ""),
    ("compare-pages", {"fromTitle": "Apple", "toTitle": "Banana"}, ""),
    ("get-category-members", {"category": "Fruits"}, ""),
    ("get-links-here", {"title": "Apple"}, ""),
    ("get-recent-changes", {}, ""),
    ("get-user-contributions", {"user": "Admin"}, ""),
    ("get-log-events", {"type": "upload"}, ""),
    ("parse-wikitext", {"wikitext": "Hello [[Apple]] and [[Nowhere]]."}, ""),
    ("get-file", {"title": "File:Red square.png"}, ""),
    # the image itself comes from the wiki's own address, which the counting proxy does not see
    ("get-file-data", {"title": "Red square.png"}, "image (+1 off-proxy)"),
]
#: The leanest query that returns what each of these cases shows (the tool's own request is captured,
#: never written here), keyed as CASES are: (tool, its arguments as JSON).
LEANEST: dict[tuple[str, str], dict[str, Any]] = {
    ("get-page", json.dumps({"title": "Apple"})): {
        "action": "query", "titles": "Apple", "redirects": 1, "prop": "revisions", "rvprop": "ids|content",
        "rvslots": "main"},
    ("search-page", json.dumps({"query": SEARCH_WORD})): {
        "action": "query", "list": "search", "srsearch": SEARCH_WORD, "srwhat": "text", "srnamespace": 0,
        "srlimit": 10, "srprop": "snippet", "srinfo": "totalhits"},
    ("get-site-info", "{}"): {"action": "query", "meta": "siteinfo", "siprop": "general|namespaces|extensions"},
    ("whoami", "{}"): {"action": "query", "meta": "userinfo", "uiprop": "groups|rights|editcount"},
    ("get-category-members", json.dumps({"category": "Fruits"})): {
        "action": "query", "list": "categorymembers", "cmtitle": "Category:Fruits", "cmprop": "title|type",
        "cmlimit": 50, "titles": "Category:Fruits", "prop": "categoryinfo"},
}
#: What get-page asks besides with metadata=true: the cost of the fields a plain read leaves out.
WITH_METADATA = {"prop": "revisions|info", "inprop": "protection", "rvprop": "ids|timestamp|user|comment|content"}
#: What the client adds to every request.
API_FORMAT = {"format": "json", "formatversion": 2, "errorformat": "plaintext", "errorlang": "en"}
WIRE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("get-page", {"title": "Long page"}), ("get-pages", {"titles": BATCH_TITLES + ["Apple", "Banana"]}),
    ("search-page", {"query": "fruit"})]


# ---------------------------------------------------------------------------
# A proxy that counts the HTTP requests reaching the wiki
# ---------------------------------------------------------------------------

class CountingProxy:
    def __init__(self, target_port: int) -> None:
        self.urls: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                proxy.urls.append(f"{self.command} {self.path}" + (f" {body.decode()}" if body else ""))
                relay(self, target_port, body, timeout=60)

            do_GET = do_POST = forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


# ---------------------------------------------------------------------------
# Real stdio: a raw JSON-RPC driver (exact bytes, start time, memory)
# ---------------------------------------------------------------------------

class StdioProcess:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"server exited during {method}")
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                return reply, len(line)

    def notify(self, method: str) -> None:
        assert self.process.stdin
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.process.stdin.flush()

    def initialize(self) -> float:
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        elapsed = time.perf_counter() - self.started
        self.notify("notifications/initialized")
        return elapsed

    def cpu_seconds(self) -> float:
        """The CPU time the process has run so far (Linux's schedstat, in nanoseconds)."""
        return int(Path(f"/proc/{self.process.pid}/schedstat").read_text().split()[0]) / 1e9

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=20)


# ---------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------

def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def server_command() -> list[str]:
    script = shutil.which("mediawiki-mcp")
    return [script] if script else [sys.executable, str(ROOT / "mediawiki_mcp.py")]


def timed_calls(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]],
                repeat: int) -> list[list[float]]:
    """Latency of each call through the MCP SDK's client over real stdio."""
    async def go() -> list[list[float]]:
        timings: list[list[float]] = [[] for _ in calls]
        async with Client(params) as client:
            for i, (tool, arguments) in enumerate(calls):
                await client.call_tool(tool, arguments)  # warm: site info, connection
                for _ in range(repeat):
                    start = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    timings[i].append(time.perf_counter() - start)
                    assert not result.is_error, (tool, result.content)
        return timings
    return anyio.run(go)


def paired_calls(first: StdioServerParameters, first_call: tuple[str, dict[str, Any]],
                 second: StdioServerParameters, second_call: tuple[str, dict[str, Any]],
                 repeat: int) -> tuple[list[float], list[float]]:
    """Both servers connected at once and called alternately, the order swapped each time,
    so that whatever else the machine does weighs on both alike."""
    async def go() -> tuple[list[float], list[float]]:
        times: tuple[list[float], list[float]] = ([], [])
        async with Client(first) as a, Client(second) as b:
            pairs = ((a, first_call, times[0]), (b, second_call, times[1]))
            for client, (tool, arguments), _ in pairs:
                await client.call_tool(tool, arguments)  # warm
            for i in range(repeat):
                for client, (tool, arguments), sink in (pairs if i % 2 else pairs[::-1]):
                    start = time.perf_counter()
                    result = await client.call_tool(tool, arguments)
                    sink.append(time.perf_counter() - start)
                    assert not result.is_error, (tool, result.content)
        return times
    return anyio.run(go)


def bare_latency(session: requests.Session, recorded: list[str], wiki_port: int, repeat: int) -> float:
    """The median time of the same API request(s), made directly with requests."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for entry in recorded:
            method, path, *body = entry.split(" ", 2)
            url = f"http://127.0.0.1:{wiki_port}{path}"
            if method == "GET":
                session.get(url, timeout=60)
            else:
                session.post(url, data=dict(urllib.parse.parse_qsl(body[0] if body else "")), timeout=60)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def alternate_replays(session: requests.Session, urls: list[str], repeat: int) -> list[float]:
    """The median time of each of these GET URLs, replayed one after another ``repeat`` times, the
    order turned each round, so that whatever else the machine does weighs on each alike."""
    samples: list[list[float]] = [[] for _ in urls]
    for url in urls:
        session.get(url, timeout=60).raise_for_status()  # warm: the connection, the wiki's caches
    for i in range(repeat):
        for j in (range(len(urls)) if i % 2 else reversed(range(len(urls)))):
            start = time.perf_counter()
            _ = session.get(urls[j], timeout=60).content
            samples[j].append(time.perf_counter() - start)
    return [statistics.median(s) for s in samples]


def api_url(wiki_port: int, params: dict[str, Any]) -> str:
    return f"http://127.0.0.1:{wiki_port}/w/api.php?" + urllib.parse.urlencode({**params, **API_FORMAT})


class StartTimes(NamedTuple):
    init: float       # process start to the initialize answer
    listed: float     # process start to the first tools/list answer
    cpu: float        # CPU time the process spent until the initialize answer


def start_times(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, StartTimes]:
    """Each command's StartTimes, the medians of ``runs`` starts; the commands start in turn, so
    that a change in the machine's load falls on each alike."""
    samples: dict[str, list[StartTimes]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            process = StdioProcess(command, env)
            init = process.initialize()
            cpu = process.cpu_seconds()
            process.request("tools/list")
            samples[name].append(StartTimes(init, time.perf_counter() - process.started, cpu))
            process.close()
    return {name: StartTimes(*map(statistics.median, zip(*runs_of))) for name, runs_of in samples.items()}


def start_budget(env: dict[str, str], api: str, runs: int) -> tuple[str, bool, str]:
    """Prints the start times of mediawiki-mcp and of the minimal server; the budget's line."""
    minimal = [sys.executable, str(ROOT / "benchmarks" / "minimal_server.py"), api]
    times = start_times({"ours": server_command(), "minimal": minimal}, env, runs)
    ours, least = times["ours"], times["minimal"]
    print(f"\nstart to initialize answer: mediawiki-mcp {ms(ours.init)} ms, minimal MCPServer {ms(least.init)} ms; "
          f"to first tools/list: {ms(ours.listed)} ms vs {ms(least.listed)} ms; CPU time to the initialize "
          f"answer: {ms(ours.cpu)} ms vs {ms(least.cpu)} ms (medians of {runs}, taken in turn)")
    return ("start to initialize <= 50 ms above a minimal MCPServer", ours.init - least.init <= 0.05,
            f"{ms(ours.init - least.init)} ms (CPU time {ms(ours.cpu - least.cpu)} ms)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=30, help="timed calls per case (default 30)")
    parser.add_argument("--memory-calls", type=int, default=500, help="calls before the second memory reading")
    parser.add_argument("--start-runs", type=int, default=10, help="process starts to time (default 10)")
    parser.add_argument("--start-only", action="store_true",
                        help="only the start time, with no wiki (the server asks none before a call)")
    parser.add_argument("--store-appends", type=int, default=200,
                        help="keyed appends timed on each state store (default 200)")
    parser.add_argument("--text-origin-only", action="store_true",
                        help="only find-text-origin on a page of 200 revisions")
    parser.add_argument("--load", action="store_true",
                        help="also the load over HTTP of benchmarks/load.py (50 sessions x 20 calls, three set-ups)")
    options = parser.parse_args(argv)
    if options.start_only:
        api = "http://127.0.0.1:9/w/api.php"  # the discard port: nothing answers, and nothing asks
        name, met, figure = start_budget(dict(bench_env(), MEDIAWIKI_URL=api), api, options.start_runs)
        print(f"  [{'met' if met else 'MISSED'}] {name}: {figure}")
        return 0

    with tempfile.TemporaryDirectory(prefix="mw-bench-") as directory:
        wiki = start_test_wiki(Path(directory))
        try:
            if options.text_origin_only:
                text_origin(wiki, options.calls)
                return 0
            return run(wiki, options)
        finally:
            wiki.stop()


def bench_env() -> dict[str, str]:
    """The environment the server runs in, but for its wiki: every toolset, so that every read
    tool is measured (tools/list is measured as configured in run). Installed packages run from
    compiled bytecode; the module's is let be cached too, as pip install does, rather than
    compiled afresh at every start."""
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("MEDIAWIKI_", "MCP_")) and k != "PYTHONDONTWRITEBYTECODE"}
    return dict(base_env, MEDIAWIKI_MCP_LOG_LEVEL="WARNING", MCP_TOOLSETS="all")


def run(wiki: Any, options: argparse.Namespace) -> int:
    wiki_port = int(urllib.parse.urlsplit(wiki.api).port or 80)
    proxy = CountingProxy(wiki_port)
    direct_env = dict(bench_env(), MEDIAWIKI_URL=wiki.api)
    proxied_env = dict(direct_env, MEDIAWIKI_URL=f"http://127.0.0.1:{proxy.port}/w/api.php")
    command = server_command()
    budgets: list[tuple[str, bool, str]] = []

    # tools/list: what every client pays on every turn
    probe = StdioProcess(command, direct_env)
    probe.initialize()
    listing, list_bytes = probe.request("tools/list")
    probe.close()
    tools = listing["result"]["tools"]
    offered = {t["name"] for t in tools}
    # on a writable wiki (the bot password), with the default toolsets and with every one: each
    # tool's entry in bytes, as compact JSON
    writable: dict[str, dict[str, int]] = {}
    for toolsets in ("default", "all"):
        writer = StdioProcess(command, dict(direct_env, MEDIAWIKI_USERNAME=wiki.bot_user,
                                            MEDIAWIKI_PASSWORD=wiki.bot_password, MCP_TOOLSETS=toolsets))
        writer.initialize()
        written, _ = writer.request("tools/list")
        writer.close()
        writable[toolsets] = {t["name"]: len(json.dumps(t, separators=(",", ":"), ensure_ascii=False).encode())
                              for t in written["result"]["tools"]}

    cases = [(tool, args, note) for tool, args, note in CASES if tool in offered]
    missing = sorted({tool for tool, _, _ in CASES} - offered)

    # requests per call, steady state, counted at the proxy
    counting = StdioProcess(command, proxied_env)
    counting.initialize()
    counts, recorded = [], []
    for tool, args, _ in cases:
        counting.request("tools/call", {"name": tool, "arguments": args})  # warm
        before = len(proxy.urls)
        counting.request("tools/call", {"name": tool, "arguments": args})
        counts.append(len(proxy.urls) - before)
        recorded.append([u.replace(f":{proxy.port}", f":{wiki_port}") for u in proxy.urls[before:]])
    counting.close()

    # latency through the MCP client, and the bare requests
    params = StdioServerParameters(command=command[0], args=command[1:], env=direct_env)
    timings = timed_calls(params, [(t, a) for t, a, _ in cases], options.calls)
    session = requests.Session()
    bare = [bare_latency(session, urls, wiki_port, options.calls) for urls in recorded]

    print(f"mediawiki-mcp benchmark: {len(cases)} read-tool cases, {options.calls} timed calls each, "
          f"wiki {wiki.api} (MediaWiki on php -S, SQLite)\n")
    print(f"{'tool':<24}{'case':<22}{'requests':>9}{'median ms':>11}{'p90 ms':>9}{'bare ms':>9}{'over ms':>9}")
    for (tool, args, note), count, samples, direct in zip(cases, counts, timings, bare):
        median = statistics.median(samples)
        print(f"{tool:<24}{(note or json.dumps(args))[:21]:<22}{count:>9}{ms(median):>11}"
              f"{ms(percentile(samples, 0.9)):>9}{ms(direct):>9}{ms(median - direct):>9}")
    if missing:
        print(f"\nnot offered by this build: {', '.join(missing)}")
    single = [(t, a, n) for (t, a, n), c in zip(cases, counts) if c != 1]
    expected_two = {("get-page", json.dumps({"title": "Apple", "content": "html", "metadata": True}))}
    budgets.append(("one HTTP request per read call (steady state)",
                    all((t, json.dumps(a)) in expected_two for t, a, _ in single),
                    "all one" if not single else "more than one: " + ", ".join(
                        f"{t} {json.dumps(a)}" for t, a, _ in single)))

    # time at the wiki: each tool's own request against the leanest query that returns the same fields
    rounds = options.calls * 2
    print(f"\nat the wiki: each tool's request (captured) against the leanest query returning the fields it "
          f"shows (median of {rounds} alternate replays):")
    print(f"  {'tool':<24}{'case':<22}{'tool ms':>9}{'leanest ms':>12}{'diff ms':>9}")
    for (tool, args, note), count, urls in zip(cases, counts, recorded):
        lean = LEANEST.get((tool, json.dumps(args)))
        method, path = urls[0].split(" ")[:2]
        if lean is None or count != 1 or method != "GET":
            continue
        extra = [api_url(wiki_port, {**lean, **WITH_METADATA})] if tool == "get-page" else []
        sent, leanest, *rest = alternate_replays(session, [f"http://127.0.0.1:{wiki_port}{path}",
                                                           api_url(wiki_port, lean), *extra], rounds)
        print(f"  {tool:<24}{(note or json.dumps(args))[:21]:<22}{ms(sent):>9}{ms(leanest):>12}"
              f"{ms(sent - leanest):>9}")
        if tool == "get-page":
            print(f"  {'':<24}{'(as metadata=true asks)':<22}{ms(rest[0]):>9}{'':>12}{ms(rest[0] - leanest):>9}")
            budgets.append(("get-page of a small page <= 1.0 ms above the leanest query at the wiki",
                            sent - leanest <= 0.001, f"{ms(sent - leanest)} ms"))

    # overhead above a minimal MCPServer making the same single requests call
    small = next(i for i, (t, a, _) in enumerate(cases) if t == "get-page" and a == {"title": "Apple"})
    recorded_params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(recorded[small][0].split(" ")[1]).query))
    for key in ("format", "formatversion"):
        recorded_params.pop(key, None)
    minimal = StdioServerParameters(command=sys.executable,
                                    args=[str(ROOT / "benchmarks" / "minimal_server.py"), wiki.api], env=direct_env)
    ours = StdioServerParameters(command=command[0], args=command[1:], env=direct_env)
    rounds_ours, rounds_min = paired_calls(ours, ("get-page", {"title": "Apple"}),
                                           minimal, ("get", {"params": recorded_params}), options.calls * 5)
    overhead = statistics.median(rounds_ours) - statistics.median(rounds_min)
    print(f"\nsmall page: mediawiki-mcp median {ms(statistics.median(rounds_ours))} ms, minimal MCPServer "
          f"{ms(statistics.median(rounds_min))} ms, bare requests {ms(bare[small])} ms; "
          f"overhead above minimal {ms(overhead)} ms")
    budgets.append(("overhead on a small page <= 1.0 ms above a minimal MCPServer", overhead <= 0.001,
                    f"{ms(overhead)} ms"))

    # bytes on the wire
    wire = StdioProcess(command, direct_env)
    wire.initialize()
    print("\nbytes on the wire (one JSON-RPC response line):")
    for tool, args in WIRE_CASES:
        reply, size = wire.request("tools/call", {"name": tool, "arguments": args})
        texts = [c.get("text", "") for c in reply["result"]["content"]]
        content = sum(len(t.encode()) for t in texts)
        label = f"{tool} {json.dumps(args)[:40]}"
        print(f"  {label:<58}{size:>8} bytes ({len(texts)} blocks, {content} bytes of text)")
        if tool == "get-page":
            duplicated = "structuredContent" in reply["result"] or len(set(texts)) != len(texts)
            budgets.append(("no response carries the same content twice", not duplicated,
                            "structuredContent absent, blocks distinct" if not duplicated else "duplicated"))
            budgets.append(("long page response <= about 52,500 bytes on the wire", size <= 52_500, f"{size} bytes"))
    wire.close()

    default, everything = (sum(writable[t].values()) for t in ("default", "all"))
    average = everything / max(len(writable["all"]), 1)
    print(f"\ntools/list of a writable wiki: default toolsets {default} bytes for {len(writable['default'])} tools; "
          f"every toolset {everything} bytes for {len(writable['all'])} tools ({average:.0f} per tool); "
          f"a read-only wiki, every toolset: {list_bytes} bytes on the wire for {len(tools)} tools")
    print("  largest:")
    for name, size in sorted(writable["all"].items(), key=lambda item: -item[1])[:5]:
        print(f"  {name:<28}{size:>6}")
    budgets.append(("tools/list of the default toolsets <= 18,900 bytes", default <= 18_900, f"{default} bytes"))
    budgets.append(("tools/list, every toolset, <= 840 bytes per tool on average", average <= 840,
                    f"{average:.0f} bytes"))

    budgets.append(start_budget(direct_env, wiki.api, options.start_runs))

    # memory
    memory = StdioProcess(command, direct_env)
    memory.initialize()
    memory.request("tools/list")
    memory.request("tools/call", {"name": "get-page", "arguments": {"title": "Apple"}})
    first = memory.rss_kib()
    mix = [(t, a) for t, a, _ in cases]
    for i in range(options.memory_calls):
        tool, args = mix[i % len(mix)]
        memory.request("tools/call", {"name": tool, "arguments": args})
    after = memory.rss_kib()
    memory.close()
    growth = (after - first) / first
    print(f"\nresident memory: {first / 1024:.1f} MiB after start and the first call, "
          f"{after / 1024:.1f} MiB after {options.memory_calls} more calls ({growth:+.1%})")
    budgets.append((f"memory after {options.memory_calls} calls within 10% of after the first",
                    growth <= 0.10, f"{growth:+.1%}"))

    store_times(wiki, options.store_appends)
    text_origin(wiki, options.calls)
    if options.load:
        from load import run_load
        budgets += run_load(direct_env)

    print("\nbudgets:")
    for name, met, figure in budgets:
        print(f"  [{'met' if met else 'MISSED'}] {name}: {figure}")
    return 0


#: find-text-origin's page: ORIGIN_REVISIONS revisions, each changing a line of its own; the sentences
#: traced come in at the revisions (counted from 1) ORIGIN_CASES names, and stay.
ORIGIN_TITLE = "Text origin benchmark"
ORIGIN_REVISIONS = 200
ORIGIN_CASES = {"The old mill was built in 1722.": 57, "The new bridge opened in 2019.": 190}


def origin_revision(n: int) -> tuple[str, str, str]:
    """Revision ``n`` of find-text-origin's page: its user (two accounts in turn), summary and text."""
    lines = [f"The river log, entry {n}.", "The gauge stands at the bridge."]
    lines += [sentence for sentence, at in ORIGIN_CASES.items() if n >= at]
    return "Editor" if n % 3 == 0 else "Admin", f"Entry {n}", "\n".join(lines)


def text_origin(wiki: Any, calls: int) -> None:
    """find-text-origin on a page of ORIGIN_REVISIONS revisions, imported from an XML dump (faster than
    as many edits): the HTTP requests of a call (counted at a proxy, after a first call), its median
    time through the MCP client over stdio, and the revisions it read."""
    import_page(wiki, ORIGIN_TITLE, map(origin_revision, range(1, ORIGIN_REVISIONS + 1)))
    wiki_port = int(urllib.parse.urlsplit(wiki.api).port or 80)
    proxy = CountingProxy(wiki_port)
    env = dict(bench_env(), MEDIAWIKI_URL=f"http://127.0.0.1:{proxy.port}/w/api.php")
    cases = [("find-text-origin", {"title": ORIGIN_TITLE, "text": sentence}) for sentence in ORIGIN_CASES]
    counting = StdioProcess(server_command(), env)
    counting.initialize()
    print(f"\nfind-text-origin on a page of {ORIGIN_REVISIONS} revisions (imported from an XML dump):")
    print(f"  {'sentence added in revision':<28}{'found':>7}{'read':>6}{'requests':>10}{'median ms':>11}"
          f"{'p90 ms':>9}")
    rows = []
    for tool, arguments in cases:
        counting.request("tools/call", {"name": tool, "arguments": arguments})  # warm: site info, connection
        before = len(proxy.urls)
        reply, _ = counting.request("tools/call", {"name": tool, "arguments": arguments})
        text = "\n".join(c.get("text", "") for c in reply["result"]["content"])
        fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        rows.append((len(proxy.urls) - before, fields.get("Added in revision", "?"),
                     fields.get("Revisions read", "?").split()[0]))
    counting.close()
    params = StdioServerParameters(command=server_command()[0], args=server_command()[1:], env=env)
    timings = timed_calls(params, cases, calls)
    history: dict[str, Any] = {"action": "query", "prop": "revisions", "titles": ORIGIN_TITLE,
                               "rvprop": "ids", "rvlimit": "max", "format": "json", "formatversion": 2}
    oldest = min(int(r["revid"]) for r in requests.get(wiki.api, params=history, timeout=30).json()[
        "query"]["pages"][0]["revisions"])
    for (sentence, at), (count, found, read), samples in zip(ORIGIN_CASES.items(), rows, timings):
        right = "yes" if found == str(oldest + at - 1) else f"NO ({found})"
        print(f"  {at:<28}{right:>7}{read:>6}{count:>10}{ms(statistics.median(samples)):>11}"
              f"{ms(percentile(samples, 0.9)):>9}")


class TimedStore:
    """A state store that adds the time each of its calls takes to ``spent``."""

    def __init__(self, store: Any, spent: list[float]) -> None:
        self.store, self.spent = store, spent

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if not callable(method):
            return method

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.spent[0] += time.perf_counter() - started
        return timed


def store_times(wiki: Any, appends: int) -> None:
    """Keyed appends through the server's own tool path (in this process, against the real wiki),
    each timed whole and in its state store calls: the in-memory store, then a real redis-server."""
    config = Config.from_env({"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_USERNAME": wiki.bot_user,
                                "MEDIAWIKI_PASSWORD": wiki.bot_password})
    redis = StateServer("redis")
    print(f"\nstate store: {appends} keyed appends each (update-page mode=append with an idempotencyKey)")
    print(f"{'store':<10}{'on store median ms':>20}{'p99 ms':>9}{'whole append median ms':>24}")
    try:
        for name, shared in (("memory", None), ("redis", open_state_store(redis.url))):
            spent = [0.0]
            state = ServerState.from_config(config)
            ledger: Any = TimedStore(shared or MemoryStore(READ_LEDGER_MAX_ENTRIES), spent)  # a store alike
            keys: Any = TimedStore(shared or MemoryStore(IDEMPOTENCY_MAX_KEYS), spent)
            state.reads, state.idempotency = ReadLedger(store=ledger), IdempotencyStore(store=keys)
            title = f"Store benchmark {name} {os.getpid()}"
            run_tool(state, "create-page", {"title": title, "source": "Log:"})
            on_store, whole = [], []
            for i in range(appends):
                spent[0] = 0.0
                started = time.perf_counter()
                blocks, failed = run_tool(state, "update-page", {
                    "title": title, "mode": "append", "source": f"* {i}", "idempotencyKey": f"{title} {i}"})
                whole.append(time.perf_counter() - started)
                on_store.append(spent[0])
                assert not failed, blocks
            print(f"{name:<10}{ms(statistics.median(on_store)):>20}{ms(percentile(on_store, 0.99)):>9}"
                  f"{ms(statistics.median(whole)):>24}")
    finally:
        redis.stop()


if __name__ == "__main__":
    raise SystemExit(main())

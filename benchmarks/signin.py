"""Measures what a sign-in costs with MCP_AUTH=login, against the real test wiki.

    python benchmarks/signin.py [--people N]

Starts the test suite's MediaWiki 1.39 (realwiki.py), serves mediawiki-mcp over Streamable HTTP
in this process with MCP_AUTH=login, and signs N people in one after another (the wiki's two
accounts with bot passwords, in turn), each as a client does: register, /authorize, the sign-in
form posted as a browser posts it, /token; then their first tool call (whoami). Prints, for each:

- the requests the server sent to the wiki for the sign-in, and for the first call;
- the time from /authorize to the token answer;
- what the sign-in added to the state store (bytes of its entries) and to the process's Python
  heap (tracemalloc), the first call's own client included.

Never part of the test run.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import logging
import re
import secrets
import socket
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.parse
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from mediawiki_mcp.cli import argument_parser
from mediawiki_mcp.config import Config
from mediawiki_mcp.http import MCP_PATH, HttpOptions, http_app, http_options
from mediawiki_mcp.login_forms import SIGN_IN_PATH, SIGN_IN_SPACE
from mediawiki_mcp.server import create_server
from realwiki import start_test_wiki

CALLBACK = "http://127.0.0.1:8976/callback"  # nothing listens: the code is read from the redirect


class WikiRequests:
    """Counts the requests this process sends to the wiki (the server's; the benchmark's own
    requests go to the MCP server, never to the wiki)."""

    def __init__(self, origin: str) -> None:
        self.origin, self.count, self.lock = origin, 0, threading.Lock()
        send = requests.Session.send

        def counted(session: requests.Session, request: Any, **options: Any) -> Any:
            if str(request.url).startswith(origin):
                with self.lock:
                    self.count += 1
            return send(session, request, **options)
        requests.Session.send = counted  # type: ignore[method-assign, assignment]


def serve(server: Any, options: HttpOptions) -> str:
    import uvicorn
    uv = uvicorn.Server(uvicorn.Config(http_app(server, options), host="127.0.0.1", port=options.port,
                                       log_config=None, access_log=False))
    threading.Thread(target=uv.run, daemon=True).start()
    while not uv.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}"


def sign_in(base: str, username: str, password: str) -> str:
    """One person's sign-in as a client and a browser make it; their access token."""
    client = requests.post(base + "/register", json={
        "client_name": "Benchmark", "redirect_uris": [CALLBACK], "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"]}, timeout=30).json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    browser = requests.Session()
    form = browser.get(base + "/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": client["client_id"], "redirect_uri": CALLBACK,
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s"}), timeout=30)
    fields = {name: html.unescape(value) for name, value in
              re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.text)}
    answer = browser.post(base + SIGN_IN_PATH, data={**fields, "username": username, "password": password},
                          allow_redirects=False, timeout=60)
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(answer.headers["location"]).query)["code"][0]
    tokens = requests.post(base + "/token", data={
        "grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": CALLBACK,
        "client_id": client["client_id"], "client_secret": client["client_secret"]}, timeout=30)
    return str(tokens.json()["access_token"])


def first_call(base: str, token: str) -> str:
    """whoami in a new MCP session with the person's token; its text."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}

    def post(body: dict[str, Any], session: str = "") -> requests.Response:
        sent = {**headers, "MCP-Protocol-Version": "2025-06-18", **({"Mcp-Session-Id": session} if session else {})}
        return requests.post(base + MCP_PATH, data=json.dumps(body), headers=sent, timeout=60)
    started = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    session = started.headers["mcp-session-id"]
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}},
                  session)
    data = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
    return str(data[-1]["result"]["content"][0]["text"])


def store_bytes(server: Any) -> int:
    store = server.state.reads.store
    return sum(len(key[2]) + len(value) for kind in store._kinds.values() for key, (value, _) in kind.items()
               if key[0] == SIGN_IN_SPACE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--people", type=int, default=4, help="sign-ins, one after another (default 4)")
    options = parser.parse_args(argv)
    from cryptography.fernet import Fernet
    with tempfile.TemporaryDirectory(prefix="mediawiki-mcp-signin-") as directory:
        wiki = start_test_wiki(Path(directory))
        try:
            env = {"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_READ_ONLY": "false", "MCP_AUTH": "login",
                   "MCP_AUTH_SECRET": Fernet.generate_key().decode()}
            server = create_server(Config.from_env(env))
            logging.getLogger().setLevel(logging.WARNING)  # the SDK's set-up logs each request at INFO
            with socket.socket() as probe:  # a free port, known before start: the issuer's address names it
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            http = http_options(argument_parser().parse_args(["--transport", "http", "--port", str(port)]), env)
            assert http is not None
            counter = WikiRequests(wiki.url)
            base = serve(server, http)
            accounts = [(wiki.bot_user, wiki.bot_password), (wiki.editor_user, wiki.editor_password)]
            tracemalloc.start()
            print(f"{'person':<12} {'sign-in requests':>16} {'authorize to token':>19} {'first call requests':>20} "
                  f"{'store bytes':>12} {'heap KiB':>9}")
            for n in range(options.people):
                user, password = accounts[n % len(accounts)]
                heap, stored = tracemalloc.take_snapshot(), store_bytes(server)
                before, started = counter.count, time.perf_counter()
                token = sign_in(base, user, password)
                took, signing = time.perf_counter() - started, counter.count - before
                before = counter.count
                who = first_call(base, token)
                calling = counter.count - before
                added = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(heap, "filename"))
                name = re.search(r"User: (\S+)", who)
                print(f"{name[1] if name else '?':<12} {signing:>16} {took * 1000:>16.0f} ms {calling:>20} "
                      f"{store_bytes(server) - stored:>12} {added / 1024:>9.0f}")
            return 0
        finally:
            wiki.stop()


if __name__ == "__main__":
    raise SystemExit(main())

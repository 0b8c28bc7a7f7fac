"""What the test files share: calling tools through a real MCP client, what the tests make on
the real wikis, fake wikis and proxies for the faults a real wiki will not make, and the server
run over HTTP or as a program."""
from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import html
import http.server
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp import Client, MCPError
from mcp.server.auth.provider import TokenError

from mediawiki_mcp.cli import argument_parser
from mediawiki_mcp.client import RetryPolicy
from mediawiki_mcp.config import Config
from mediawiki_mcp.http import HttpOptions, http_app, http_options
from mediawiki_mcp.login import SignIns
from mediawiki_mcp.login_forms import SIGN_IN_PATH
from mediawiki_mcp.server import create_server
from mediawiki_mcp.state import ServerState
from realwiki import (
    BOT_GRANTS,
    VERSIONS,
    WIKI_FIXTURES,
    RealWiki,
    WikiFarm,
    free_port,
    php,
    png_bytes,
)

HERE = Path(__file__).resolve().parent.parent  # the checkout


@dataclasses.dataclass
class Result:
    blocks: list[str]        # the text blocks
    is_error: bool
    images: list[Any] = dataclasses.field(default_factory=list)  # image blocks

    @property
    def text(self) -> str:
        return "\n".join(self.blocks)


def call(server: Any, tool: str, **arguments: Any) -> Result:
    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)
    result = anyio.run(go)
    return Result([block.text for block in result.content if block.type == "text"],
                  bool(result.is_error), [block for block in result.content if block.type == "image"])


def calls_at_once(server: Any, tool: str, calls: list[dict[str, Any]]) -> list[Result]:
    """Makes the calls of ``tool`` at once, each from a thread of its own; their results."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(lambda arguments: call(server, tool, **arguments), calls))


def list_tools(server: Any, session: bool = False) -> list[Any]:
    """The tools/list a client sees; ``session``: one speaking a protocol version with sessions (as
    clients over stdio do today), which is offered the tools listed to sessions alone."""
    async def go() -> Any:
        async with Client(server, **({"mode": "legacy"} if session else {})) as client:
            return (await client.list_tools()).tools
    return anyio.run(go)


def make_server(env: dict[str, str], **client_options: Any) -> Any:
    """A server with every toolset on, unless ``env`` says otherwise."""
    state = ServerState.from_config(Config.from_env({"MCP_TOOLSETS": "all", **env}), **client_options)
    return create_server(state=state)


class RequestCounter:
    """Counts the HTTP requests a server's wiki clients send (a requests hook)."""

    def __init__(self, server: Any) -> None:
        self.count = 0
        self.urls: list[str] = []
        for client in server.state.clients.values():
            client._ensure_ready()
            client._session.hooks["response"].append(self._hook)

    def _hook(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.count += 1
        self.urls.append(response.request.url or "")

    @contextlib.contextmanager
    def counting(self) -> Iterator[list[int]]:
        start, box = self.count, [0]
        yield box
        box[0] = self.count - start


def assert_requests_per_call(server: Any, counter: RequestCounter, calls: list[tuple[str, dict[str, Any], int]],
                             refused: Callable[[str, dict[str, Any], int], bool] = lambda *_: False) -> None:
    """Calls each (tool, arguments, HTTP requests expected) and asserts the requests it sent, and that
    it failed only where ``refused(tool, arguments, requests)`` says; prints the table."""
    table = []
    for tool, arguments, expected in calls:
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert result.is_error == refused(tool, arguments, n[0]), (tool, result.text)
        table.append((tool, arguments, n[0]))
        assert n[0] == expected, (tool, arguments, n[0], counter.urls[-n[0]:])
    print("\n".join(f"{n} request(s): {tool} {json.dumps(a)[:100]}" for tool, a, n in table))


def shared_bot_server(farm: WikiFarm, wiki: RealWiki) -> Any:
    """The server that acts as the bot on ``wiki``, one per wiki and test run."""
    return farm.once((wiki.api, "bot_server"), lambda _: make_server(wiki.env()))


WRITABLE_NOWHERE = {"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php", "MEDIAWIKI_USERNAME": "Bot@mcp",
                    "MEDIAWIKI_PASSWORD": "0" * 32}  # write tools listed; tools/list sends no request


def content_of(block: str) -> str:
    """The body of a header-and-body block."""
    return block.split("\n\n", 1)[1]


def rows_of(block: str) -> list[str]:
    """The rows of a list block (its first line is the header)."""
    return block.split("\n")[1:]


def next_value(marker: str, param: str) -> Any:
    assert marker.startswith("More results available. "), marker
    return json.loads(marker.split(f"again with {param}=", 1)[1].removesuffix("."))


def follow_markers(server: Any, tool: str, param: str, arguments: dict[str, Any],
                   most: int = 20) -> list[Result]:
    """Calls a list tool, then again with the value each 'More results' marker names,
    until a call has no marker; returns every call's result."""
    results = [call(server, tool, **arguments)]
    while len(results[-1].blocks) == 2:
        assert not results[-1].is_error and len(results) < most, results[-1].text
        arguments = {**arguments, param: next_value(results[-1].blocks[1], param)}
        results.append(call(server, tool, **arguments))
    assert not results[-1].is_error, results[-1].text
    return results


def field(result: Result, label: str) -> str:
    """The value of a ``Label: value`` line in a result."""
    for line in result.text.splitlines():
        if line.startswith(label + ": "):
            return line[len(label) + 2:]
    raise AssertionError(f"no {label!r} line in {result.text!r}")


def read_whole(server: Any, tool: str = "get-page", **arguments: Any) -> str:
    """Reads a page or section (or revision) by following the offset markers, as a model would."""
    parts, offset = [], 0
    for _ in range(20):
        result = call(server, tool, **arguments, offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            return "".join(parts)
        offset = int(result.blocks[-1].rsplit("offset=", 1)[1].rstrip("."))
    raise AssertionError("never reached the end")


_servers: dict[str, Any] = {}


def bot_server_for(wiki: RealWiki) -> Any:
    """A plain bot server for setting pages up (not the one under test)."""
    if wiki.api not in _servers:
        _servers[wiki.api] = make_server(wiki.env())
    return _servers[wiki.api]


def tools_list_bytes(tools: list[Any]) -> dict[str, int]:
    """Each tool's bytes in tools/list, as compact JSON."""
    return {t.name: len(json.dumps(t.model_dump(mode="json", by_alias=True, exclude_none=True),
                                   separators=(",", ":"), ensure_ascii=False).encode()) for t in tools}


#: Runs a test once on each MediaWiki version of VERSIONS: its wiki, and the fixtures made on
#: it (bot_server, anon_server, history, http_bot_server), are that version's.
on_every_version = pytest.mark.parametrize("mw_version", VERSIONS)


def farm_wiki(fixture: str) -> Any:
    """The fixture of one more wiki of the farm, as WIKI_FIXTURES names it (WIKIS says what it is)."""
    @pytest.fixture(name=fixture)
    def running(farm: WikiFarm) -> RealWiki:
        return farm.wiki(WIKI_FIXTURES[fixture])
    return running


#: Wikis by the diff engine they use: MediaWiki's own PHP engine on 1.39 and on 1.43 (the
#: Persian wiki), and wikidiff2, Wikipedia's, on 1.43.
DIFF_ENGINES = {"php-1.39": "1.39", "wikidiff2-1.43": "1.43", "php-1.43": "fa"}


LONG_PARAGRAPH = " ".join(f"The river carries grain {n} of sand to the sea." for n in range(60))


#: It (2.8 KB on one line, as MediaWiki keeps a paragraph) with one word changed, as
#: compare-pages and a dry run show it.
ONE_WORD_DIFF = ("~… of sand to the sea. The river carries grain 36 of sand to the sea. The river carries grain 37 "
                 "of [-sand-]{+silt+} to the sea. The river carries grain 38 of sand to the sea. The river carries "
                 "grain 39 of sand to …")


def two_wiki_config(wiki: RealWiki, other: RealWiki, **extra: Any) -> dict[str, Any]:
    """Two wikis as the TypeScript server's config.json has them; credentials from ${VAR}."""
    return {
        "defaultWiki": wiki.key,
        "allowWikiManagement": True,
        "wikis": {
            wiki.key: {"sitename": "Test Wiki", "server": wiki.url, "articlepath": "/wiki",
                       "scriptpath": "/w", "username": "${A_USER}", "password": "${A_PASS}",
                       "token": None, "private": False, "tags": None},
            "other": {"sitename": "Other Wiki", "server": other.url, "articlepath": "/wiki",
                      "username": "${B_USER}", "password": "${B_PASS}", "readOnly": True,
                      "private": True, "oauth2ClientId": "client-key", "oauth2CallbackPort": 53117},
        },
        **extra,
    }


def config_env(tmp_path: Path, config: dict[str, Any], wiki: RealWiki, other: RealWiki,
               **extra: str) -> dict[str, str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return {"CONFIG": str(path), "A_USER": wiki.bot_user, "A_PASS": wiki.bot_password,
            "B_USER": other.bot_user, "B_PASS": other.bot_password, **extra}


def build_dists(out: Path) -> Path:
    """The sdist and the wheel, built by `python -m build` (the wheel from the sdist) into ``out``."""
    done = subprocess.run([sys.executable, "-m", "build", "--installer", "uv", "--outdir", str(out), str(HERE)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def revision_ids(wiki: RealWiki, title: str) -> list[int]:
    """Every revision ID of a page, newest first (empty when it does not exist)."""
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="ids",
                        rvlimit="max")["query"]["pages"][0]
    return [r["revid"] for r in page.get("revisions", [])]


def latest_revision(wiki: RealWiki, title: str) -> dict[str, Any]:
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="ids|user|comment|tags",
                        rvslots="main")["query"]["pages"][0]
    return page["revisions"][0]


def as_editor(wiki: RealWiki) -> tuple[requests.Session, str]:
    """A bare API session of the SECOND account (Editor), with its edit token."""
    session = requests.Session()
    login_token = session.get(wiki.api, params={"action": "query", "meta": "tokens", "type": "login",
                                                "format": "json"}).json()["query"]["tokens"]["logintoken"]
    done = session.post(wiki.api, data={"action": "login", "lgname": wiki.editor_user, "format": "json",
                                        "lgpassword": wiki.editor_password, "lgtoken": login_token}).json()
    assert done["login"]["result"] == "Success", done
    token = session.get(wiki.api, params={"action": "query", "meta": "tokens",
                                          "format": "json"}).json()["query"]["tokens"]["csrftoken"]
    return session, token


def editor_edit(wiki: RealWiki, title: str, text: str) -> None:
    session, token = as_editor(wiki)
    done = session.post(wiki.api, data={"action": "edit", "title": title, "text": text, "token": token,
                                        "format": "json", "formatversion": "2"}).json()
    assert done["edit"]["result"] == "Success", done


def create(server: Any, title: str, text: str) -> int:
    result = call(server, "create-page", title=title, source=text)
    assert not result.is_error, result.text
    return int(field(result, "Revision ID"))


def big_section_page() -> str:
    sentences = "".join(f"Sentence {n:03d} of the big section.\n" for n in range(120))  # ~4 KB
    return (f"Lead text.\n== Small ==\nA small section.\n== Big ==\n{sentences}"
            "The very last line of the big section.\n== After ==\nThe end.")


def good_then_bad(server: Any, wiki: RealWiki, title: str, bad: int) -> tuple[int, list[int]]:
    """A page made by the bot ("Good text."), then edited ``bad`` times by Editor: its first revision
    and Editor's, newest first."""
    base = create(server, title, "Good text.")
    for n in range(bad):
        editor_edit(wiki, title, f"Bad text {n}.")
    return base, revision_ids(wiki, title)[:bad]


def unique_png(seed: str) -> bytes:
    """A small PNG of a colour taken from ``seed``: each test uploads its own content, so the
    shared wiki never sees one test's file as a duplicate of another's."""
    colour = hashlib.sha1(seed.encode()).digest()
    return png_bytes(3 + colour[3] % 5, 2 + colour[4] % 5, (colour[0], colour[1], colour[2]))


def file_versions(wiki: RealWiki, title: str) -> list[dict[str, Any]]:
    """Every version of a file on the wiki, newest first (empty when there is no file)."""
    page = wiki.raw_get(action="query", titles=title, prop="imageinfo", iilimit="max",
                        iiprop="sha1|url|user|comment|size")["query"]["pages"][0]
    return page.get("imageinfo", [])


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def uploads_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "uploads"
    directory.mkdir()
    return directory


def upload_server(wiki: RealWiki, directory: Path, **env: str) -> Any:
    return make_server(wiki.env(MCP_UPLOAD_DIRS=str(directory), **env))


def signature(user: str, time: str) -> str:
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) {time}, 1 March 2026 (UTC)"


def threaded_talk(style: str) -> str:
    """A topic of three comments, the second with a reply already, in list style ``style``."""
    return (f"Intro of the talk page.\n\n== Plans ==\nWe should plan the picnic. {signature('Alice', '10:00')}\n"
            f"{style}I agree; Saturday? {signature('Bob', '11:00')}\n"
            f"{style}{style}Saturday works for me. {signature('Carol', '12:00')}\n"
            f"{style}Sunday is better for me. {signature('Dave', '13:00')}\n\n"
            f"== Other ==\nSomething else. {signature('Eve', '14:00')}")


@dataclasses.dataclass
class Accounts:
    """Two more ways into the test wiki, for what an account may not do."""
    plain: dict[str, str]    # a server acting as Plain: the user group only, language German
    limited: dict[str, str]  # a server acting as Admin through a bot password granted basic, editpage


def make_accounts(wiki: RealWiki) -> Accounts:
    main_password = "Plain-" + secrets.token_hex(12)
    plain_password, limited_password = secrets.token_hex(16), secrets.token_hex(16)
    php(wiki.directory, "maintenance/createAndPromote.php", "Plain", main_password)
    php(wiki.directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Plain", plain_password)
    php(wiki.directory, "maintenance/createBotPassword.php", "--appid=limited", "--grants=basic,editpage",
        "Admin", limited_password)
    session, token = bare_login(wiki, "Plain", main_password)  # preferences need the main password
    done = session.post(wiki.api, timeout=30, data={"action": "options", "change": "language=de",
                                                     "token": token, "format": "json"}).json()
    assert done.get("options") == "success", done
    return Accounts(plain=wiki.env(MEDIAWIKI_USERNAME="Plain@mcp", MEDIAWIKI_PASSWORD=plain_password),
                    limited=wiki.env(MEDIAWIKI_USERNAME="Admin@limited", MEDIAWIKI_PASSWORD=limited_password))


# -- a page with a history of its own, made through the bare API ---------------

HISTORY_TITLE = "History page"


HISTORY_LINES = 10


@dataclasses.dataclass
class History:
    revisions: list[int]            # oldest first
    texts: dict[int, str]
    users: dict[int, str]
    minor: set[int]
    redirect_revision: int           # tagged mw-new-redirect
    started: str                     # timestamps bracketing the edits
    finished: str


def history_text(step: int) -> str:
    return "\n".join(f"Line {n}" + (f" edit {step}" if step and n == (step - 1) % HISTORY_LINES + 1 else "")
                     for n in range(1, HISTORY_LINES + 1))


def bare_login(wiki: RealWiki, user: str, password: str) -> tuple[requests.Session, str]:
    session = requests.Session()
    api = {"format": "json", "formatversion": "2"}
    token = session.get(wiki.api, params=dict(api, action="query", meta="tokens", type="login"),
                        timeout=30).json()["query"]["tokens"]["logintoken"]
    login = session.post(wiki.api, data=dict(api, action="login", lgname=user, lgpassword=password,
                                              lgtoken=token), timeout=30).json()
    assert login["login"]["result"] == "Success", login
    csrf = session.get(wiki.api, params=dict(api, action="query", meta="tokens"),
                       timeout=30).json()["query"]["tokens"]["csrftoken"]
    return session, csrf


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def make_history(wiki: RealWiki) -> History:
    """Ten revisions of one page by two accounts: minor edits, one redirect (tagged)."""
    accounts = {"Admin": bare_login(wiki, wiki.bot_user, wiki.bot_password),
                "Editor": bare_login(wiki, wiki.editor_user, wiki.editor_password)}
    started = utc_now()
    result = History([], {}, {}, set(), 0, started, "")
    for step in range(10):
        user = "Editor" if step % 3 == 1 else "Admin"
        text = "#REDIRECT [[Apple]]" if step == 8 else history_text(step)
        minor = step in (2, 5)
        session, token = accounts[user]
        edit = session.post(wiki.api, timeout=30, data={
            "action": "edit", "title": HISTORY_TITLE, "text": text, "summary": f"Step {step}",
            "minor" if minor else "notminor": "1", "token": token,
            "format": "json", "formatversion": "2"}).json()["edit"]
        assert edit["result"] == "Success", edit
        revision = edit["newrevid"]
        result.revisions.append(revision)
        result.texts[revision], result.users[revision] = text, user
        if minor:
            result.minor.add(revision)
        if step == 8:
            result.redirect_revision = revision
    result.finished = utc_now()
    return result


def list_changes_heard(heard: list[str]) -> Callable[[Any], Awaitable[None]]:
    """A client's message handler that notes each notification's method in ``heard``."""
    async def handler(message: Any) -> None:
        heard.append(getattr(message, "method", type(message).__name__))
    return handler


LIST_CHANGED = "notifications/tools/list_changed"


PROMPTS_CHANGED = "notifications/prompts/list_changed"


def prompt_session(server: Any, work: Callable[[Any], Awaitable[Any]], session: bool = False) -> Any:
    """What ``work(client)`` returns, with a client of ``server`` (``session``: one with a session)."""
    async def go() -> Any:
        async with Client(server, **({"mode": "legacy"} if session else {})) as client:
            return await work(client)
    return anyio.run(go)


def prompt_error(server: Any, name: str, arguments: dict[str, str] | None = None) -> str:
    """The MCP error of a prompts/get."""
    async def work(client: Any) -> str:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt(name, arguments)
        return str(raised.value)
    return prompt_session(server, work)


SITEINFO = {"batchcomplete": True, "query": {
    "general": {"sitename": "Fake", "generator": "MediaWiki 1.39.0", "server": "//127.0.0.1",
                "articlepath": "/wiki/$1", "scriptpath": "/w", "lang": "en", "mainpage": "Main Page"},
    "namespaces": {"0": {"id": 0, "name": ""}}, "namespacealiases": []}}


#: The account of a fake wiki (anonymous, as its tests run without credentials) may do anything.
USERINFO = {"batchcomplete": True, "query": {"userinfo": {
    "id": 0, "name": "127.0.0.1", "anon": True, "groups": ["*"],
    "rights": ["read", "edit", "createpage", "move", "move-subpages", "suppressredirect", "delete",
               "undelete", "upload", "reupload", "upload_by_url"]}}}


PAGE = {"batchcomplete": True, "query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
        "lastrevid": 7, "revisions": [{"revid": 7, "slots": {"main": {"content": "Fake page text."}}}]}]}}


@dataclasses.dataclass
class Reply:
    status: int = 200   # 0: no answer at all, the connection is closed
    body: Any = dataclasses.field(default_factory=lambda: PAGE)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0


def serve_locally(handler: type[http.server.BaseHTTPRequestHandler]) -> http.server.ThreadingHTTPServer:
    """A test's own HTTP server on a free loopback port, serving from a daemon thread."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    # a short poll: shutdown() waits for the loop to look, 0.5 s by default, at every close
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    return server


def relay(handler: http.server.BaseHTTPRequestHandler, answer: requests.Response) -> None:
    """Passes a wiki's answer on, as a proxy in front of it does: status, type, cookies, body."""
    handler.send_response(answer.status_code)
    handler.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
    for cookie in answer.raw.headers.getlist("Set-Cookie"):
        handler.send_header("Set-Cookie", cookie)
    handler.send_header("Content-Length", str(len(answer.content)))
    handler.end_headers()
    handler.wfile.write(answer.content)


class FakeWiki:
    """A local HTTP server answering with scripted replies; site info and the account's
    rights are automatic."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.replies: list[Reply] = []
        self.files: dict[str, tuple[bytes, str]] = {}  # path -> (body, content type), served as is
        self.seen: list[dict[str, Any]] = []
        self.siteinfo_path: str | None = None  # set: site info answers only there
        self.release = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.answer()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.answer(self.rfile.read(length).decode())

            def answer(self, body: str = "") -> None:
                url = urllib.parse.urlsplit(self.path)
                params = dict(urllib.parse.parse_qsl(url.query or body))
                fake.seen.append({"path": url.path, "params": params, "headers": dict(self.headers)})
                if url.path in fake.files:
                    body, kind = fake.files[url.path]
                    self.send_response(200)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client may stop early
                        self.wfile.write(body)
                    return
                if params.get("meta") == "siteinfo" and fake.siteinfo_path in (None, url.path):
                    reply = Reply(body=SITEINFO)
                elif is_rights_query(params):
                    reply = Reply(body=USERINFO)
                else:
                    reply = fake.replies.pop(0) if fake.replies else Reply()
                if reply.delay:
                    fake.release.wait(reply.delay)
                if not reply.status:
                    self.close_connection = True
                    return
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                content_type = "text/html" if isinstance(reply.body, bytes) else "application/json"
                self.send_header("Content-Type", reply.headers.pop("Content-Type", content_type))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(payload)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.api = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/w/api.php"
        # a short poll: shutdown() waits for the loop to look, 0.5 s by default, at every close
        threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True).start()

    def requests_to_api(self) -> list[dict[str, Any]]:
        return [s for s in self.seen if s["params"].get("meta") != "siteinfo" and not is_rights_query(s["params"])]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def is_rights_query(params: dict[str, str]) -> bool:
    return params.get("meta") == "userinfo" and params.get("uiprop") == "groups|rights"


def fake_server(fake: FakeWiki, sleeps: list[float] | None = None, **env: str) -> Any:
    return make_server({"MEDIAWIKI_URL": fake.api, **env},
                       retry=RetryPolicy(sleep=sleeps.append if sleeps is not None else (lambda s: None)),
                       timeout=(2.0, 0.5))


def is_edit(body: bytes) -> bool:
    return urllib.parse.parse_qs(body.decode(errors="replace")).get("action") == ["edit"]


def posts(action: str) -> Callable[[bytes], bool]:
    """Picks the POST of one API action (for DroppingProxy)."""
    return lambda body: urllib.parse.parse_qs(body.decode(errors="replace")).get("action") == [action]


class DroppingProxy:
    """Forwards requests to the real wiki, but after forwarding the first POST that ``drops``
    picks (an edit by default; the wiki saves it) closes the connection without answering:
    the answer is lost. With ``gateway_page`` (content type, body), it answers that POST as a
    failing gateway does instead: HTTP 502 with that body. With ``gate`` (a user name and
    password) it asks for HTTP basic auth, as a web server in front of a wiki can: a request
    without them gets HTTP 401."""

    def __init__(self, target: str, drops: Callable[[bytes], bool] = is_edit,
                 gateway_page: tuple[str, bytes] | None = None, gate: tuple[str, str] | None = None) -> None:
        self.drops_left = 1
        proxy = self
        expected = "Basic " + base64.b64encode(":".join(gate).encode()).decode() if gate else None

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.admitted():
                    answer = requests.get(target + self.path, headers=self.forwarded(), timeout=30)
                    proxy.hold(urllib.parse.urlsplit(self.path).query.encode())
                    relay(self, answer)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.admitted():
                    return
                headers = {**self.forwarded(), "Content-Type": self.headers.get("Content-Type", "")}
                answer = requests.post(target + self.path, data=body, headers=headers, timeout=30)
                if proxy.drops_left and drops(body):
                    proxy.drops_left -= 1
                    if gateway_page:  # the wiki has saved; the gateway answers with its own page
                        self.send_response(502)
                        self.send_header("Content-Type", gateway_page[0])
                        self.send_header("Content-Length", str(len(gateway_page[1])))
                        self.end_headers()
                        self.wfile.write(gateway_page[1])
                    self.close_connection = True  # the wiki has saved; its answer goes nowhere
                    return
                proxy.hold(body)
                relay(self, answer)

            def admitted(self) -> bool:
                if expected is None or self.headers.get("Authorization") == expected:
                    return True
                page = b"<html><body><h1>401 Authorization Required</h1></body></html>"
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="wiki"')
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return False

            def forwarded(self) -> dict[str, str]:
                return {"Cookie": self.headers.get("Cookie", ""), "User-Agent": self.headers.get("User-Agent", "")}


        self.server = serve_locally(Handler)
        self.port = self.server.server_address[1]
        self.api = f"http://127.0.0.1:{self.port}/w/api.php"

    def hold(self, request: bytes) -> None:
        """Called with each request (a GET's query, a POST's body) once the wiki has answered it,
        before the answer is passed on (see HoldingProxy)."""

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class HoldingProxy(DroppingProxy):
    """Forwards every request to the real wiki at once, but holds back the wiki's answer to a
    request that contains one of ``markers`` until the test releases that marker."""

    def __init__(self, target: str, *markers: bytes) -> None:
        self.arrived = {marker: threading.Event() for marker in markers}
        self.released = {marker: threading.Event() for marker in markers}
        super().__init__(target, drops=lambda body: False)

    def hold(self, request: bytes) -> None:
        for marker, released in self.released.items():
            if marker in request:
                self.arrived[marker].set()
                released.wait(60)

    def close(self) -> None:
        for released in self.released.values():
            released.set()
        super().close()


def run_script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The package run as a program (python -m mediawiki_mcp, as the installed command runs it)."""
    return subprocess.run([sys.executable, "-m", "mediawiki_mcp", *args], capture_output=True, cwd=HERE,
                          text=True, timeout=120, env={**os.environ, **env}, check=False)


INIT_PARAMS = {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}}


class HttpServer:
    """A `mediawiki-mcp --transport http --port 0` process; its stderr is collected
    all along (so the server never blocks on a full pipe)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        # The console script beside this interpreter first: the venv's, even when not activated.
        script = (shutil.which("mediawiki-mcp", path=str(Path(sys.executable).parent))
                  or shutil.which("mediawiki-mcp"))
        assert script, "the console script is not installed: pip install -e '.[test]'"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_")) and k != "PORT"}
        self.process = subprocess.Popen([script, "--transport", "http", "--port", "0", *args],
                                        env={**clean, **env}, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url = ""  # http://127.0.0.1:PORT/mcp, once it serves
        self.started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr
        for line in self.process.stderr:
            self.lines.append(line)
            if "Serving MCP over Streamable HTTP at " in line:
                self.url = line.split(" at ", 1)[1].split()[0]
                self.started.set()
        self.started.set()

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_started(self) -> HttpServer:
        self.started.wait(60)
        assert self.url, "the HTTP server did not start: " + self.log
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Sends the signal and returns the exit code once the process and its stderr end."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=30)
        self.reader.join(timeout=10)
        return code


@contextlib.contextmanager
def http_servers(*specs: tuple[dict[str, str], tuple[str, ...]]) -> Iterator[list[HttpServer]]:
    """Starts servers (environment, extra arguments) side by side; stops them at the end."""
    servers = [HttpServer(env, *args) for env, args in specs]
    try:
        yield [server.wait_started() for server in servers]
    finally:
        for server in servers:
            server.stop()


def post_rpc(url: str, method: str, params: dict[str, Any] | None = None, *, rpc_id: int | None = 1,
             session: str | None = None, headers: dict[str, str] | None = None) -> requests.Response:
    """One JSON-RPC message POSTed as a Streamable HTTP client does."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rpc_id is not None:
        body["id"] = rpc_id
    if params is not None:
        body["params"] = params
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if method != "initialize":
        sent["MCP-Protocol-Version"] = INIT_PARAMS["protocolVersion"]
    if session:
        sent["Mcp-Session-Id"] = session
    return requests.post(url, data=json.dumps(body), headers={**sent, **(headers or {})}, timeout=60)


def rpc_result(response: requests.Response) -> dict[str, Any]:
    """The result of a JSON-RPC response sent as JSON or as a server-sent event."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        # an event stream names no charset, so requests would read it as Latin-1: it is UTF-8
        events = [json.loads(line[5:]) for line in response.content.decode().splitlines()
                  if line.startswith("data:")]
        message = next(e for e in events if "id" in e)
    else:
        message = response.json()
    assert "result" in message, message
    return message["result"]


def tool_text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return "\n".join(block["text"] for block in result["content"])


@functools.cache
def generator() -> ModuleType:
    """packaging/generate.py, which makes the generated files: a script beside the module, not
    part of the package (a directory named packaging must not shadow the library of that name)."""
    spec = importlib.util.spec_from_file_location("generate", HERE / "packaging" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve_in_thread(server: Any, options: HttpOptions, port: int = 0) -> Iterator[str]:
    """Serves http_app in this process (so RequestCounter sees the wiki traffic), on ``port``
    (0: a free one)."""
    import uvicorn
    uv = uvicorn.Server(uvicorn.Config(http_app(server, options), host="127.0.0.1", port=port,
                                       log_config=None))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uv.started:  # polling for the server to come up
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{uv.servers[0].sockets[0].getsockname()[1]}/mcp"
    finally:
        uv.should_exit = True
        thread.join(timeout=30)


def people_file(path: Path, wiki: RealWiki, key: str, member_password: str | None = None,
                **admin_elsewhere: dict[str, str]) -> tuple[dict[str, str], str, str]:
    """Writes a token file of the two people of the tests: Admin and Member, each with a bot password
    of their own on the wiki ``key`` (Admin also on ``admin_elsewhere``'s wikis). Returns the
    environment it refers to and the two people's tokens."""
    admin, member = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    env = {"ADMIN_TOKEN": admin, "ADMIN_BOT_PASSWORD": wiki.bot_password}
    path.write_text(json.dumps({"people": [
        {"token": "${ADMIN_TOKEN}",
         "wikis": {key: {"username": wiki.bot_user, "password": "${ADMIN_BOT_PASSWORD}"}, **admin_elsewhere}},
        {"name": "Member", "tokenSha256": hashlib.sha256(member.encode()).hexdigest(),
         "wikis": {key: {"username": wiki.plain_user, "password": {"exec": {
             "command": "printf", "args": ["%s", member_password or wiki.plain_password]}}}}}]}))
    return env, admin, member


def revision_users(wiki: RealWiki, title: str) -> list[str]:
    """Who saved each revision of a page, newest first."""
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="user", rvlimit="max",
                        formatversion="2")["query"]["pages"][0]
    return [r["user"] for r in page.get("revisions", [])]


#: Where the test's OAuth clients say they wait for the code (nothing listens: the test reads it).
CALLBACK = "http://127.0.0.1:8976/callback"


def login_env(wiki: RealWiki, **extra: str) -> dict[str, str]:
    """A server where people sign in to ``wiki``. It has no account of its own there, so that nothing
    a signed-in person does can pass for the configured account's."""
    from cryptography.fernet import Fernet
    return {"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_READ_ONLY": "false", "MCP_TOOLSETS": "all", "MCP_AUTH": "login",
            "MCP_AUTH_SECRET": Fernet.generate_key().decode(), **extra}


def admin_login_env(wiki: RealWiki, **extra: str) -> dict[str, str]:
    """A server where people sign in to ``wiki`` whose configured account there is Admin, an
    administrator: anything served through it instead of the person's own account would show."""
    return login_env(wiki, MEDIAWIKI_USERNAME=wiki.bot_user, MEDIAWIKI_PASSWORD=wiki.bot_password, **extra)


def mcp_status(url: str, token: str, tool: str = "", session: str | None = None, **arguments: Any) -> int:
    """The HTTP status of a tools/call (or, without ``tool``, an initialize) sent with ``token``."""
    if not tool:
        return initialize_status(url, token)
    return post_rpc(url, "tools/call", {"name": tool, "arguments": arguments}, session=session,
                    headers={"Authorization": f"Bearer {token}"}).status_code


@contextlib.contextmanager
def login_server(env: dict[str, str]) -> Iterator[tuple[Any, str]]:
    """A server with MCP_AUTH=login served in this process: (the server, its /mcp address)."""
    server = make_server(env)
    port = free_port()
    options = http_options(argument_parser().parse_args(["--transport", "http", "--port", str(port)]), env)
    with serve_in_thread(server, options, port) as url:
        yield server, url


def form_fields(page: str) -> dict[str, str]:
    """What a browser sends of a sign-in form besides what the person types: its hidden fields and
    the wiki chosen."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))
    if chosen := re.search(r'<option value="([^"]*)" selected', page):
        fields["wiki"] = chosen[1]
    return {name: html.unescape(value) for name, value in fields.items()}


@dataclasses.dataclass
class Browser:
    """A person's browser on the sign-in page: opens the link, fills in the form and sends it;
    ``change`` is what the test does to the form's fields before they go."""
    username: str
    password: str
    change: Callable[[dict[str, str]], dict[str, str]] = lambda fields: fields
    session: requests.Session = dataclasses.field(default_factory=requests.Session)
    pages: list[requests.Response] = dataclasses.field(default_factory=list)

    def sign_in(self, url: str) -> str:
        """Where the server sends the browser after the form ('' when it shows a page instead)."""
        form = self.session.get(url, timeout=60)
        self.pages.append(form)
        fields = {**form_fields(form.text), "username": self.username, "password": self.password}
        answer = self.session.post(urllib.parse.urljoin(form.url, SIGN_IN_PATH), data=self.change(fields),
                                   allow_redirects=False, timeout=60)
        self.pages.append(answer)
        return answer.headers.get("location", "")


class TokenMemory:
    """Where an OAuth client of the SDK keeps its registration and tokens (TokenStorage)."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def signed_in_calls(url: str, browser: Browser, calls: list[tuple[str, dict[str, Any]]],
                    storage: TokenMemory | None = None) -> list[Result]:
    """Tool calls through the SDK's own OAuth client, which signs in with ``browser`` when it has
    no token (or one that no longer works)."""
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
    landed: list[str] = []

    async def redirect(authorization_url: str) -> None:
        landed.append(await anyio.to_thread.run_sync(browser.sign_in, authorization_url))

    async def callback() -> AuthorizationCodeResult:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(landed[-1]).query)
        assert "code" in query, browser.pages[-1].text
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                       iss=query.get("iss", [None])[0])

    metadata = OAuthClientMetadata(client_name="Test client", redirect_uris=[CALLBACK],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])
    auth = OAuthClientProvider(url, metadata, storage or TokenMemory(), redirect, callback)

    async def go() -> list[Any]:
        async with httpx2.AsyncClient(auth=auth, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in calls]
    return [Result([b.text for b in r.content if b.type == "text"], bool(r.is_error)) for r in anyio.run(go)]


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclasses.dataclass
class OAuthApp:
    """A client registered by hand, to send the flow's requests one at a time as a client would."""
    base: str  # the server's origin
    client_id: str
    client_secret: str
    redirect_uri: str = CALLBACK

    @classmethod
    def register(cls, mcp_url: str, redirect_uri: str = CALLBACK) -> OAuthApp:
        base = mcp_url.removesuffix("/mcp")
        answer = requests.post(base + "/register", json={
            "client_name": "Test client", "redirect_uris": [redirect_uri], "response_types": ["code"],
            "grant_types": ["authorization_code", "refresh_token"]}, timeout=30)
        assert answer.status_code == 201, answer.text
        return cls(base, answer.json()["client_id"], answer.json()["client_secret"], redirect_uri)

    def authorize_url(self, challenge: str, redirect_uri: str = "") -> str:
        return self.base + "/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": self.client_id, "redirect_uri": redirect_uri or self.redirect_uri,
            "code_challenge": challenge, "code_challenge_method": "S256", "state": "s1"})

    def code(self, browser: Browser, challenge: str, redirect_uri: str = "") -> str:
        """The code the server sends to the redirect URI once ``browser`` signed in."""
        location = browser.sign_in(self.authorize_url(challenge, redirect_uri))
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
        assert location.startswith(redirect_uri or self.redirect_uri) and query["state"] == ["s1"], location
        return query["code"][0]

    def token(self, **fields: str) -> requests.Response:
        return requests.post(self.base + "/token", data={"client_id": self.client_id,
                                                         "client_secret": self.client_secret, **fields}, timeout=30)

    def tokens(self, browser: Browser) -> dict[str, Any]:
        verifier, challenge = pkce()
        answer = self.token(grant_type="authorization_code", code=self.code(browser, challenge),
                            code_verifier=verifier, redirect_uri=self.redirect_uri)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


def error_text(result: dict[str, Any]) -> str:
    assert result.get("isError") and len(result["content"]) == 1, result
    return str(result["content"][0]["text"])


NODE_BIN = HERE / ".ci" / "node" / "node_modules" / ".bin"  # .ci/run installs the npm tools here


def node_tool(name: str) -> str:
    path = NODE_BIN / name
    assert path.exists(), f"{name} is not installed: npm install --prefix .ci/node ... (as .ci/run does)"
    return str(path)


def with_node_path(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment with the Node 22 of .ci/node first on PATH (the npm tools need it)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


class PersonSession:
    """One MCP session over HTTP with a person's bearer token on every request."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.headers = url, {"Authorization": f"Bearer {token}"}
        self.session = post_rpc(url, "initialize", INIT_PARAMS, headers=self.headers).headers["Mcp-Session-Id"]
        post_rpc(url, "notifications/initialized", rpc_id=None, session=self.session, headers=self.headers)

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return rpc_result(post_rpc(self.url, "tools/call", {"name": tool, "arguments": arguments}, rpc_id=2,
                                   session=self.session, headers=self.headers))

    def tools(self) -> set[str]:
        listed = rpc_result(post_rpc(self.url, "tools/list", {}, rpc_id=3, session=self.session, headers=self.headers))
        return {tool["name"] for tool in listed["tools"]}


FORGOTTEN_READ = ("invalid_input: Nothing was saved: the record of this client's reads is full and no longer "
                  "holds its read of {title}, so whether it was read whole is not known. Read it again (get-page), "
                  "then write it with the latestId that read returns.")


def sections_page(count: int) -> str:
    """A page of ``count`` sections of about 200 bytes each."""
    return "Intro of the page.\n" + "".join(f"== Part {n} ==\n" + f"Sentence {n} of the page. " * 8 + "\n"
                                             for n in range(1, count + 1))


# -- writes that must not lose or misplace text --------------------------------------

def sizes_on_wiki(wiki: RealWiki, *revids: int) -> dict[int, int]:
    pages = wiki.raw_get(action="query", revids="|".join(map(str, revids)), prop="revisions",
                         rvprop="ids|size")["query"]["pages"]
    return {r["revid"]: r["size"] for p in pages for r in p["revisions"]}


def copy_server(tmp_path: Path, source: RealWiki, target: RealWiki, *, private: bool = False,
                private_target: bool = False) -> Any:
    """A server with two writable wikis, ``target`` the default and ``source``, each configured
    private if asked."""
    config = {"defaultWiki": "target", "wikis": {
        "target": {"server": target.url, "scriptpath": "/w", "articlepath": "/wiki",
                   "username": "${T_USER}", "password": "${T_PASS}", "private": private_target},
        "source": {"server": source.url, "scriptpath": "/w", "articlepath": "/wiki",
                   "username": "${S_USER}", "password": "${S_PASS}", "private": private}}}
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(config))
    return make_server({"CONFIG": str(path), "T_USER": target.bot_user, "T_PASS": target.bot_password,
                        "S_USER": source.bot_user, "S_PASS": source.bot_password})


def page_exists(wiki: RealWiki, title: str) -> bool:
    return not wiki.raw_get(action="query", titles=title)["query"]["pages"][0].get("missing")


def initialize_status(url: str, token: str) -> int:
    """The HTTP status of an initialize sent with ``token``."""
    return post_rpc(url, "initialize", INIT_PARAMS, headers={"Authorization": f"Bearer {token}"}).status_code


class ReadTogether:
    """A state store whose reads of a refresh token wait for the other exchange's (up to 2 s): both
    exchanges read the token before either changes anything, as two replicas may."""

    def __init__(self, store: Any, together: threading.Barrier) -> None:
        self.store, self.together = store, together

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def get(self, key: Any) -> Any:
        found = self.store.get(key)
        if key[1] == "refresh":
            with contextlib.suppress(threading.BrokenBarrierError):
                self.together.wait(2)
        return found


async def exchanged_at_once(sign_ins: list[Any], client_id: str, refresh_token: str) -> list[Any]:
    """Exchanges one refresh token through each of ``sign_ins`` (a replica's SignIns each, or one
    twice) at once, once all have loaded it: each one's tokens, or its TokenError."""
    loaded = []
    for sign_in in sign_ins:
        client = await sign_in.get_client(client_id)
        loaded.append((sign_in, client, await sign_in.load_refresh_token(client, refresh_token)))
    assert all(token is not None for _, _, token in loaded)
    together = threading.Barrier(len(loaded))
    for sign_in in set(sign_ins):
        sign_in.store = ReadTogether(sign_in.store, together)
    answers: list[Any] = [None] * len(loaded)

    async def exchange(n: int) -> None:
        sign_in, client, token = loaded[n]
        try:
            answers[n] = await sign_in.exchange_refresh_token(client, token, token.scopes)
        except TokenError as error:
            answers[n] = error
    async with anyio.create_task_group() as tasks:
        for n in range(len(loaded)):
            tasks.start_soon(exchange, n)
    return answers


def sign_ins_of(server: Any, env: dict[str, str], url: str) -> Any:
    """The SignIns of a server's state, as its HTTP app has it."""
    options = http_options(argument_parser().parse_args(["--transport", "http"]), env).sign_in
    return SignIns(server.state, options, url.removesuffix("/mcp"))


def register_client(mcp_url: str, address: str = "127.0.0.1", **metadata: Any) -> requests.Response:
    """A client's registration (/register) sent from ``address`` (as a proxy names it)."""
    fields = {"client_name": "Test client", "redirect_uris": [CALLBACK], "response_types": ["code"],
              "grant_types": ["authorization_code", "refresh_token"], **metadata}
    return requests.post(mcp_url.removesuffix("/mcp") + "/register", json=fields, timeout=60,
                         headers={"X-Forwarded-For": address})


#: Debian's Chromium and its driver (.ci/run installs both), given to Selenium by path so that it
#: downloads nothing.
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def metric_values(url: str, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """GET /metrics beside ``url`` (/mcp), read with prometheus_client's own parser: each sample's value
    by its name and labels."""
    from prometheus_client.parser import text_string_to_metric_families
    answer = requests.get(url.replace("/mcp", "/metrics"), headers=headers, timeout=30)
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("text/plain"), answer.text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.text) for sample in family.samples}


def pyproject() -> dict[str, Any]:
    import tomllib
    return tomllib.loads((HERE / "pyproject.toml").read_text())["project"]


class StdioSession:
    """An MCP client speaking protocol 2025-06-18, as many clients still do, to a server
    process over its stdin and stdout."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, cwd=cwd, text=True)
        self.next_id = 0
        self.init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                "clientInfo": {"name": "test", "version": "1"}})
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        self.send({"jsonrpc": "2.0", "method": method})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        assert self.process.stdout
        line = self.process.stdout.readline()
        assert line, self.close()
        answer = json.loads(line)
        assert answer.get("id") == self.next_id and "result" in answer, answer
        return answer["result"]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> str:
        """Closes stdin, waits for the server to end, and returns what it logged."""
        if self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        return self.process.stderr.read() if self.process.stderr else ""

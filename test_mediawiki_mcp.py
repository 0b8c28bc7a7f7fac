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
import re
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


def start_test_wiki(directory: Path, name: str = "Test Wiki", seed: bool = True,
                    extra_settings: str = "") -> RealWiki:
    """Installs a MediaWiki into ``directory`` and serves it; see real-mediawiki.md.
    ``extra_settings`` is PHP for LocalSettings.php, written before the server starts
    (php -S caches compiled files for 2 s, so later changes are not seen at once)."""
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
""" + extra_settings)
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
            answer = wiki.raw_get(action="query", meta="siteinfo")
            if "query" in answer or "error" in answer:  # a private wiki answers readapidenied
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
        # every tool that acts on a wiki takes `wiki`; add-wiki and the like act on none
        assert "wiki" in schema["properties"] or not m.TOOLS[t.name].scoped
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
            assert "title" not in prop
        assert t.output_schema is None


def test_zero_config_offers_no_write_tools() -> None:
    tools = list_tools(m.create_server(m.Config.from_env({})))
    # add-wiki changes only the server's own list of wikis, never a wiki
    assert all(t.annotations.read_only_hint for t in tools if t.name != "add-wiki")
    assert "add-wiki" in {t.name for t in tools}


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
                if params.get("meta") == "siteinfo" and fake.siteinfo_path in (None, url.path):
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


def test_an_http_proxy_from_the_environment_is_used(fake: FakeWiki, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{fake.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = make_server({"MEDIAWIKI_URL": "http://wiki.invalid/w/api.php"}, sleep=lambda s: None)
    result = call(server, "get-page", title="Main Page")
    assert not result.is_error and "Fake page text." in result.text
    assert fake.seen and all(s["headers"]["Host"] == "wiki.invalid" for s in fake.seen)


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

WRITE_TOOLS = ("create-page", "update-page", "move-page", "delete-page", "undelete-page")


def revision_ids(wiki: RealWiki, title: str) -> list[int]:
    """Every revision ID of a page, newest first (empty when it does not exist)."""
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="ids",
                        rvlimit="max")["query"]["pages"][0]
    return [r["revid"] for r in page.get("revisions", [])]


def latest_revision(wiki: RealWiki, title: str) -> dict[str, Any]:
    page = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="ids|user|comment|tags",
                        rvslots="main")["query"]["pages"][0]
    return page["revisions"][0]


def field(result: Result, label: str) -> str:
    """The value of a ``Label: value`` line in a result."""
    for line in result.text.splitlines():
        if line.startswith(label + ": "):
            return line[len(label) + 2:]
    raise AssertionError(f"no {label!r} line in {result.text!r}")


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


def test_write_tools_are_annotated_by_what_they_do(bot_server: Any) -> None:
    tools = {t.name: t for t in list_tools(bot_server)}
    hints = {name: (t.annotations.read_only_hint, t.annotations.destructive_hint,
                    t.annotations.idempotent_hint) for name, t in tools.items() if name in WRITE_TOOLS}
    assert hints == {"create-page": (False, False, True), "update-page": (False, True, False),
                     "move-page": (False, True, True), "delete-page": (False, True, True),
                     "undelete-page": (False, False, True)}
    assert all("idempotencyKey" in tools[n].input_schema["properties"] for n in WRITE_TOOLS)
    assert {n for n in WRITE_TOOLS if "dryRun" in tools[n].input_schema["properties"]} == {
        "create-page", "update-page"}


def test_create_page_makes_a_page_and_never_overwrites_one(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write create test"
    result = call(bot_server, "create-page", title=title, source="First text.", comment="Start it")
    assert not result.is_error and result.blocks[0].startswith("Created.\nTitle: Write create test\n")
    revid = int(field(result, "Revision ID"))
    assert field(result, "URL") == f"{wiki.url}/wiki/Write_create_test"
    assert field(result, "Diff") == f"{wiki.url}/w/index.php?oldid={revid}"
    assert wiki.wikitext(title) == "First text."
    assert latest_revision(wiki, title)["comment"] == "Start it (via mediawiki-mcp)"
    again = call(bot_server, "create-page", title=title, source="Other text.")
    assert again.is_error and again.blocks[0].startswith("conflict: ")
    assert "update-page" in again.text
    assert wiki.wikitext(title) == "First text." and revision_ids(wiki, title) == [revid]


def test_update_with_latest_id_refuses_an_overlapping_edit_by_another_account(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write conflict test"
    create(bot_server, title, "Line one.\nLine two is the one both change.\nLine three.")
    seen = call(bot_server, "get-page", title=title)
    latest = int(field(seen, "Revision ID"))
    editor_edit(wiki, title, "Line one.\nLine two, as the Editor wrote it.\nLine three.")
    result = call(bot_server, "update-page", title=title, latestId=latest,
                  source="Line one.\nLine two, as the model wrote it.\nLine three.")
    assert result.is_error and result.blocks[0].startswith("conflict: ")
    assert "get-page" in result.text
    assert "Line two, as the Editor wrote it." in wiki.wikitext(title)
    assert latest_revision(wiki, title)["user"] == "Editor"


def test_update_with_latest_id_keeps_a_non_overlapping_edit_by_another_account(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write merge test"
    create(bot_server, title, "Top line.\n\nMiddle paragraph.\n\nBottom line.")
    latest = int(field(call(bot_server, "get-page", title=title), "Revision ID"))
    editor_edit(wiki, title, "Top line, edited by the Editor.\n\nMiddle paragraph.\n\nBottom line.")
    result = call(bot_server, "update-page", title=title, latestId=latest,
                  source="Top line.\n\nMiddle paragraph.\n\nBottom line, edited by the model.")
    assert not result.is_error, result.text
    assert wiki.wikitext(title) == ("Top line, edited by the Editor.\n\nMiddle paragraph.\n\n"
                                    "Bottom line, edited by the model.")


def test_latest_id_of_another_page_is_refused(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write wrong base test"
    revid = create(bot_server, title, "Text.")
    other = revision_ids(wiki, "Apple")[0]
    result = call(bot_server, "update-page", title=title, source="New.", latestId=other)
    assert result.is_error and result.blocks[0].startswith(f"invalid_input: latestId {other} is not a revision")
    assert revision_ids(wiki, title) == [revid]


def big_section_page() -> str:
    sentences = "".join(f"Sentence {n:03d} of the big section.\n" for n in range(120))  # ~4 KB
    return (f"Lead text.\n== Small ==\nA small section.\n== Big ==\n{sentences}"
            "The very last line of the big section.\n== After ==\nThe end.")


def read_whole(server: Any, **arguments: Any) -> str:
    """Reads a page or section by following the offset markers, as a model would."""
    parts, offset = [], 0
    for _ in range(20):
        result = call(server, "get-page", **arguments, offset=offset)
        parts.append(content_of(result.blocks[0]))
        if len(result.blocks) == 1:
            return "".join(parts)
        offset = int(result.blocks[-1].rsplit("offset=", 1)[1].rstrip("."))
    raise AssertionError("never reached the end")


def test_writing_back_a_truncated_section_is_refused_until_it_is_read_whole(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write truncated section test"
    create(server, title, big_section_page())
    first = call(server, "get-page", title=title, section=2)
    assert len(first.blocks) == 2 and first.blocks[1].startswith("Content truncated at ")
    seen = content_of(first.blocks[0])
    assert "Sentence 005" in seen and "The very last line" not in seen
    changed = seen.replace("Sentence 005 of the big section.", "Sentence five, reworded.")
    refused = call(server, "update-page", title=title, section=2, source=changed)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: Section 2 ")
    assert "find and replace" in refused.text and "offset=" in refused.text
    assert "The very last line of the big section." in wiki.wikitext(title)
    whole = read_whole(server, title=title, section=2)
    assert whole.endswith("The very last line of the big section.")
    done = call(server, "update-page", title=title, section=2,
                source=whole.replace("Sentence 005 of the big section.", "Sentence five, reworded."))
    assert not done.is_error, done.text
    text = wiki.wikitext(title)
    assert "Sentence five, reworded." in text and "The very last line of the big section." in text
    assert "Sentence 119 of the big section." in text and text.endswith("== After ==\nThe end.")


def test_a_truncated_page_read_guards_whole_writes_and_unseen_sections(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))
    title = "Write truncated page test"
    create(server, title, big_section_page())
    first = call(server, "get-page", title=title)
    assert len(first.blocks) == 2
    seen = content_of(first.blocks[0])
    whole_page = call(server, "update-page", title=title, source=seen + "\n")
    assert whole_page.is_error and whole_page.blocks[0].startswith("invalid_input: Nothing was saved: Page ")
    unseen_section = call(server, "update-page", title=title, section=2, source="== Big ==\nShort now.")
    assert unseen_section.is_error and "get-page with section=2" in unseen_section.text
    assert "The very last line of the big section." in wiki.wikitext(title)
    # Section 1 was shown whole by that read, and find-replace needs no whole read.
    assert not call(server, "update-page", title=title, section=1,
                    source="== Small ==\nA small section, edited.").is_error
    assert not call(server, "update-page", title=title, find="The very last line",
                    replace="The final line").is_error
    text = wiki.wikitext(title)
    assert "A small section, edited." in text and "The final line of the big section." in text
    assert "Sentence 119 of the big section." in text


def test_replacing_a_section_keeps_its_subsections_unless_told(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write subsections test"
    original = "Lead.\n== Parent ==\nParent text.\n=== Child ===\nChild text.\n== Next ==\nNext text."
    revid = create(bot_server, title, original)
    refused = call(bot_server, "update-page", title=title, section=1, source="== Parent ==\nNew parent text.")
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: Nothing was saved: section 1 ")
    assert "(Child)" in refused.text and "removeSubsections=true" in refused.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    kept = call(bot_server, "update-page", title=title, section=1,
                source="== Parent ==\nNew parent text.\n=== Child ===\nChild text.")
    assert not kept.is_error
    assert wiki.wikitext(title) == ("Lead.\n== Parent ==\nNew parent text.\n=== Child ===\nChild text.\n\n"
                                    "== Next ==\nNext text.")  # MediaWiki's splice adds the blank line
    removed = call(bot_server, "update-page", title=title, section=1, removeSubsections=True,
                   source="== Parent ==\nOnly the parent now.")
    assert not removed.is_error
    assert wiki.wikitext(title) == "Lead.\n== Parent ==\nOnly the parent now.\n\n== Next ==\nNext text."


def test_an_append_sent_twice_with_one_idempotency_key_lands_once(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write idempotency test"
    create(bot_server, title, "Log:")
    before = revision_ids(wiki, title)
    first = call(bot_server, "update-page", title=title, mode="append", source="\n* entry one",
                 idempotencyKey="req-7f3a")
    second = call(bot_server, "update-page", title=title, mode="append", source="\n* entry one",
                  idempotencyKey="req-7f3a")
    assert not first.is_error and not second.is_error
    assert second.blocks[0].startswith("Repeat: ") and second.blocks[0].endswith(first.blocks[0])
    assert wiki.wikitext(title) == "Log:\n* entry one"
    assert len(revision_ids(wiki, title)) == len(before) + 1
    other = call(bot_server, "update-page", title=title, mode="append", source="\n* entry two",
                 idempotencyKey="req-7f3a")
    assert other.is_error and other.blocks[0].startswith("conflict: idempotencyKey 'req-7f3a' was already used")
    assert wiki.wikitext(title) == "Log:\n* entry one"


class DroppingProxy:
    """Forwards requests to the real wiki, but after forwarding the first edit POST (which
    the wiki saves) closes the connection without answering: the answer is lost."""

    def __init__(self, target: str) -> None:
        self.drops_left = 1
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.relay(requests.get(target + self.path, headers=self.forwarded(), timeout=30))

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {**self.forwarded(), "Content-Type": self.headers.get("Content-Type", "")}
                answer = requests.post(target + self.path, data=body, headers=headers, timeout=30)
                fields = urllib.parse.parse_qs(body.decode())
                if fields.get("action") == ["edit"] and proxy.drops_left:
                    proxy.drops_left -= 1
                    self.close_connection = True  # the wiki has saved; its answer goes nowhere
                    return
                self.relay(answer)

            def forwarded(self) -> dict[str, str]:
                return {"Cookie": self.headers.get("Cookie", ""), "User-Agent": self.headers.get("User-Agent", "")}

            def relay(self, answer: requests.Response) -> None:
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "application/json"))
                for cookie in answer.raw.headers.getlist("Set-Cookie"):
                    self.send_header("Set-Cookie", cookie)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.api = f"http://127.0.0.1:{self.server.server_address[1]}/w/api.php"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("kind", ["append", "create"])
def test_a_write_whose_answer_is_lost_is_reported_saved_and_not_repeated(
        wiki: RealWiki, kind: str) -> None:
    proxy = DroppingProxy(wiki.url)
    try:
        server = make_server(wiki.env(MEDIAWIKI_URL=proxy.api))
        title = f"Write lost answer {kind} test"
        if kind == "append":
            create(bot_server_for(wiki), title, "Before.")
            before = revision_ids(wiki, title)
            result = call(server, "update-page", title=title, mode="append", source="\nAppended once.")
            assert wiki.wikitext(title) == "Before.\nAppended once."
        else:
            before = []
            result = call(server, "create-page", title=title, source="Created once.")
            assert wiki.wikitext(title) == "Created once."
        assert proxy.drops_left == 0, "the proxy never dropped an answer"
        assert not result.is_error, result.text
        assert result.blocks[0].startswith("Saved (the wiki's answer was lost; its history shows the edit once).")
        after = revision_ids(wiki, title)
        assert len(after) == len(before) + 1 and int(field(result, "Revision ID")) == after[0]
    finally:
        proxy.close()


_servers: dict[str, Any] = {}


def bot_server_for(wiki: RealWiki) -> Any:
    """A plain bot server for setting pages up (not the one under test)."""
    if wiki.api not in _servers:
        _servers[wiki.api] = make_server(wiki.env())
    return _servers[wiki.api]


def test_a_lost_write_not_in_the_history_is_reported_unconfirmed_and_not_resent(fake: FakeWiki) -> None:
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
                                 "revisions": [{"revid": 7, "parentid": 0}]}]}}
    history = {"query": {"userinfo": {"id": 0, "name": "127.0.0.1", "anon": True},
                         "pages": [{"pageid": 1, "ns": 0, "title": "Main Page",
                                    "revisions": [{"revid": 7, "parentid": 0, "user": "Someone",
                                                   "comment": "older"}]}]}}
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    fake.replies = [Reply(body=page), Reply(body=tokens), Reply(delay=5.0), Reply(body=history)]
    server = fake_server(fake, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "update-page", title="Main Page", mode="append", source="x")
    assert result.is_error and result.blocks[0].startswith(
        f"upstream_failure: The wiki at 127.0.0.1:{fake.port} timed out after 0.5 s while writing. "
        "The page's history shows no edit by this account after revision 7 yet. A slow wiki may "
        "still save it: check with get-page-history before calling again.")
    edits = [s for s in fake.requests_to_api() if s["params"].get("action") == "edit"]
    assert len(edits) == 1 and edits[0]["params"]["baserevid"] == "7"
    assert edits[0]["params"]["maxlag"] == "5" and edits[0]["params"]["nocreate"] == "1"


def test_write_retries_only_on_answers_that_prove_nothing_was_written(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    tokens = {"query": {"tokens": {"csrftoken": "+\\"}}}
    page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [{"revid": 7}]}]}}
    saved = {"edit": {"result": "Success", "title": "Main Page", "pageid": 1, "oldrevid": 7, "newrevid": 8}}
    maxlag = Reply(body={"errors": [{"code": "maxlag", "text": "Waiting for a database server."}]},
                   headers={"Retry-After": "2"})
    fake.replies = [Reply(body=page), Reply(body=tokens), maxlag, Reply(body=saved)]
    server = fake_server(fake, sleeps, MEDIAWIKI_READ_ONLY="false")
    result = call(server, "update-page", title="Main Page", source="new")
    assert not result.is_error and field(result, "Revision ID") == "8" and sleeps == [2.0]
    # ratelimited without a short Retry-After: refused at once, never resent
    limited = Reply(body={"errors": [{"code": "ratelimited", "text": "You've exceeded your rate limit."}]})
    fake.replies = [Reply(body=page), limited]
    result = call(server, "update-page", title="Main Page", source="new")
    assert result.is_error and result.blocks[0].startswith("rate_limited: You've exceeded your rate limit.")
    # badtoken: one fresh token, one resend, then the error
    bad = Reply(body={"errors": [{"code": "badtoken", "text": "Invalid CSRF token."}]})
    fake.seen.clear()
    fake.replies = [Reply(body=page), bad, Reply(body=tokens), dataclasses.replace(bad)]
    result = call(server, "update-page", title="Main Page", source="new")
    assert result.is_error and result.blocks[0].startswith("authentication: Invalid CSRF token.")
    actions = [s["params"].get("action") or s["params"].get("meta") for s in fake.requests_to_api()]
    assert actions == ["query", "edit", "query", "edit"]


def test_an_expired_edit_token_is_refreshed_once_on_the_real_wiki(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write token refresh test"
    create(server, title, "Text.")
    server.mediawiki_state.clients[wiki.key]._csrf = "0123456789abcdef+\\"  # as if the session had renewed
    result = call(server, "update-page", title=title, source="Text, after a token refresh.")
    assert not result.is_error, result.text
    assert wiki.wikitext(title) == "Text, after a token refresh."


def test_find_replace_changes_one_passage_and_refuses_absent_or_ambiguous_text(
        bot_server: Any, wiki: RealWiki) -> None:
    title = "Write find replace test"
    original = "The cat sat on the mat.\nThe dog sat on the log.\nA cat again."
    revid = create(bot_server, title, original)
    absent = call(bot_server, "update-page", title=title, find="The bird", replace="The fish")
    assert absent.is_error and absent.blocks[0].startswith("invalid_input: The text to find does not occur")
    twice = call(bot_server, "update-page", title=title, find="cat", replace="lynx")
    assert twice.is_error and twice.blocks[0].startswith("invalid_input: The text to find occurs 2 times")
    assert "replaceAll=true" in twice.text
    assert wiki.wikitext(title) == original and revision_ids(wiki, title) == [revid]
    once = call(bot_server, "update-page", title=title, find="dog sat on the log", replace="dog slept")
    assert not once.is_error and field(once, "Previous revision ID") == str(revid)
    assert field(once, "Diff") == f"{wiki.url}/w/index.php?diff={field(once, 'Revision ID')}&oldid={revid}"
    everywhere = call(bot_server, "update-page", title=title, find="cat", replace="lynx", replaceAll=True)
    assert not everywhere.is_error
    assert wiki.wikitext(title) == "The lynx sat on the mat.\nThe dog slept.\nA lynx again."


def test_update_of_a_missing_page_creates_nothing(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write no such page test"
    for arguments in ({"source": "x"}, {"source": "x", "mode": "append"}, {"find": "a", "replace": "b"}):
        result = call(bot_server, "update-page", title=title, **arguments)
        assert result.is_error and result.blocks[0].startswith(f"not_found: Page {title!r} does not exist")
        assert "create-page" in result.text
    assert revision_ids(wiki, title) == []


def test_dry_run_saves_nothing_and_shows_the_diff(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write dry run test"
    revid = create(bot_server, title, "Alpha.\nBeta.\nGamma.\nDelta.")
    result = call(bot_server, "update-page", title=title, find="Gamma.", replace="Gamma, changed.",
                  dryRun=True)
    assert not result.is_error
    assert result.blocks[0] == ("Dry run: nothing was saved. The diff that would be saved:\n"
                                f"Title: {title}\nBase revision ID: {revid}\n\n"
                                "@@ line 2 @@\n Beta.\n-Gamma.\n+Gamma, changed.\n Delta.")
    appended = call(bot_server, "update-page", title=title, mode="append", source="\nEpsilon.", dryRun=True)
    assert appended.blocks[0].endswith("@@ line 4 @@\n Delta.\n+Epsilon.")
    new = call(bot_server, "create-page", title="Write dry run new page", source="Hello.", dryRun=True)
    assert not new.is_error and new.blocks[0].endswith("@@ line 1 @@\n+Hello.")
    existing = call(bot_server, "create-page", title=title, source="Hello.", dryRun=True)
    assert existing.is_error and existing.blocks[0].startswith("conflict: ")
    assert revision_ids(wiki, title) == [revid] and revision_ids(wiki, "Write dry run new page") == []


def test_delete_needs_confirmation_and_undelete_restores(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write delete test"
    create(bot_server, title, "To be deleted.")
    call(bot_server, "update-page", title=title, source="To be deleted, second revision.")
    latest = revision_ids(wiki, title)[0]
    asked = call(bot_server, "delete-page", title=title)
    assert asked.is_error and len(asked.blocks) == 1
    assert asked.blocks[0] == (f"invalid_input: Nothing was deleted. delete-page would delete {title!r} "
                               f"(latest revision {latest}, 31 bytes, 2 revisions) from {wiki.key}. "
                               "Ask the user to confirm, then call delete-page again with confirm=true.")
    assert revision_ids(wiki, title)[0] == latest
    deleted = call(bot_server, "delete-page", title=title, confirm=True, comment="Test")
    assert not deleted.is_error and deleted.blocks[0].startswith(f"Deleted.\nTitle: {title}\nLog ID: ")
    assert revision_ids(wiki, title) == []
    restored = call(bot_server, "undelete-page", title=title)
    assert not restored.is_error, restored.text
    assert field(restored, "Revisions restored") == "2" and field(restored, "Revision ID") == str(latest)
    assert wiki.wikitext(title) == "To be deleted, second revision."
    again = call(bot_server, "undelete-page", title=title)
    assert again.is_error and again.blocks[0].startswith("not_found: ")


def test_move_with_and_without_a_redirect(bot_server: Any, wiki: RealWiki) -> None:
    create(bot_server, "Write move source", "Moving text.")
    create(bot_server, "Talk:Write move source", "Talk text.")
    moved = call(bot_server, "move-page", fromTitle="Write move source", toTitle="Write move target")
    assert not moved.is_error, moved.text
    assert moved.blocks[0] == ("Moved.\nFrom: Write move source\nTo: Write move target\nRedirect left: yes\n"
                               "Talk page moved: Talk:Write move source -> Talk:Write move target\n"
                               f"URL: {wiki.url}/wiki/Write_move_target")
    assert wiki.wikitext("Write move target") == "Moving text."
    assert wiki.wikitext("Write move source").startswith("#REDIRECT [[Write move target]]")
    assert wiki.wikitext("Talk:Write move target") == "Talk text."
    plain = call(bot_server, "move-page", fromTitle="Write move target", toTitle="Write move final",
                 leaveRedirect=False, moveTalk=False)
    assert not plain.is_error and "Redirect left: no" in plain.text and "Talk page" not in plain.text
    assert revision_ids(wiki, "Write move target") == [] and wiki.wikitext("Write move final") == "Moving text."
    onto = call(bot_server, "move-page", fromTitle="Write move final", toTitle="Apple")
    assert onto.is_error and onto.blocks[0].startswith("conflict: ")
    assert wiki.wikitext("Apple").startswith("An apple is a fruit.")


def test_a_write_to_a_read_only_wiki_is_permission_denied(wiki: RealWiki) -> None:
    writable = m.WikiConfig(key=wiki.key, url=wiki.api, username=wiki.bot_user,
                            password=wiki.bot_password, read_only=False)
    locked = dataclasses.replace(writable, key="locked.example", read_only=True)
    state = m.ServerState.from_config(m.Config(wikis={wiki.key: writable, "locked.example": locked},
                                               default_wiki=wiki.key))
    server = m.create_server(state=state)
    assert "create-page" in {t.name for t in list_tools(server)}
    for tool, arguments in [("create-page", {"title": "Write read-only test", "source": "x"}),
                            ("update-page", {"title": "Apple", "source": "x"}),
                            ("delete-page", {"title": "Apple", "confirm": True})]:
        result = call(server, tool, wiki="locked.example", **arguments)
        assert result.is_error and result.blocks[0].startswith("permission_denied: The wiki locked.example "
                                                               "is configured read-only")
    assert revision_ids(wiki, "Write read-only test") == []
    assert wiki.wikitext("Apple").startswith("An apple is a fruit.")


def test_tags_and_attribution_follow_the_wiki_configuration(wiki: RealWiki) -> None:
    session = requests.Session()  # the tag must exist: create it as Admin with the main password
    token = session.get(wiki.api, params={"action": "query", "meta": "tokens", "type": "login",
                                          "format": "json"}).json()["query"]["tokens"]["logintoken"]
    session.post(wiki.api, data={"action": "login", "lgname": "Admin", "lgpassword": wiki.admin_password,
                                 "lgtoken": token, "format": "json"})
    csrf = session.get(wiki.api, params={"action": "query", "meta": "tokens", "format": "json"}
                       ).json()["query"]["tokens"]["csrftoken"]
    made = session.post(wiki.api, data={"action": "managetags", "operation": "create", "tag": "mcp-edit",
                                        "token": csrf, "format": "json"}).json()
    assert "error" not in made, made
    config = m.WikiConfig(key=wiki.key, url=wiki.api, username=wiki.bot_user, password=wiki.bot_password,
                          read_only=False, tags=["mcp-edit"], attribute_edits=False)
    server = m.create_server(state=m.ServerState.from_config(m.Config({wiki.key: config}, wiki.key)))
    title = "Write tags test"
    assert not call(server, "create-page", title=title, source="Tagged.", comment="Plain summary").is_error
    revision = latest_revision(wiki, title)
    assert revision["tags"] == ["mcp-edit"] and revision["comment"] == "Plain summary"
    config.tags = ["no-such-tag"]
    result = call(server, "update-page", title=title, source="Untagged?")
    assert result.is_error and result.blocks[0].startswith("invalid_input: ")
    assert wiki.wikitext(title) == "Tagged."


def test_bot_flag_needs_the_bot_right(bot_server: Any, wiki: RealWiki) -> None:
    title = "Write bot flag test"
    revid = create(bot_server, title, "Text.")
    refused = call(bot_server, "update-page", title=title, source="Bot text.", bot=True)
    assert refused.is_error and refused.blocks[0].startswith("invalid_input: The account Admin lacks the bot right")
    assert revision_ids(wiki, title) == [revid]
    password = secrets.token_hex(16)
    php(wiki.directory, "maintenance/createAndPromote.php", "--bot", "Robot", "Robot-" + secrets.token_hex(12))
    php(wiki.directory, "maintenance/createBotPassword.php", "--appid=mcp", f"--grants={BOT_GRANTS}",
        "Robot", password)
    robot = make_server(wiki.env(MEDIAWIKI_USERNAME="Robot@mcp", MEDIAWIKI_PASSWORD=password))
    assert not call(robot, "update-page", title=title, source="Bot text.", bot=True).is_error
    change = wiki.raw_get(action="query", list="recentchanges", rctitle=title, rcprop="flags|user",
                          rclimit=1)["query"]["recentchanges"][0]
    assert change["user"] == "Robot" and change["bot"] is True


def test_a_protected_page_is_permission_denied(wiki: RealWiki) -> None:
    title = "Write protected test"
    create(bot_server_for(wiki), title, "Protected text.")
    client = m.MediaWikiClient(wiki.api, username=wiki.bot_user, password=wiki.bot_password)
    client.write({"action": "protect", "title": title, "protections": "edit=sysop"})
    anonymous = make_server({"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_READ_ONLY": "false"})
    result = call(anonymous, "update-page", title=title, source="Vandalism.")
    assert result.is_error and result.blocks[0].startswith("permission_denied: ")
    assert "[protectedpage]" in result.text and "administrator" in result.text
    assert wiki.wikitext(title) == "Protected text."


BAD_WRITE_ARGUMENTS = [
    ("update-page", {"source": "x"}, "Missing required argument 'title'"),
    ("update-page", {"title": "{t}"}, "Give source (the new text), or find and replace."),
    ("update-page", {"title": "{t}", "source": "x", "find": "a", "replace": "b"}, "without source and mode"),
    ("update-page", {"title": "{t}", "find": "a", "replace": "b", "mode": "append"}, "without source and mode"),
    ("update-page", {"title": "{t}", "find": "Text"}, "find needs replace"),
    ("update-page", {"title": "{t}", "find": "", "replace": "b"}, "'find' must not be empty"),
    ("update-page", {"title": "{t}", "source": "x", "replace": "b"}, "replace and replaceAll go with find"),
    ("update-page", {"title": "{t}", "source": "x", "removeSubsections": True}, "removeSubsections applies only"),
    ("update-page", {"title": "{t}", "source": "x", "mode": "insert"}, "'mode' must be one of replace, append, prepend"),
    ("update-page", {"title": "{t}", "source": "x", "section": -1}, "'section' must be at least 0"),
    ("update-page", {"title": "{t}", "source": "x", "latestId": 0}, "'latestId' must be at least 1"),
    ("update-page", {"title": "{t}", "source": "x", "latestId": "12"}, "'latestId' must be an integer"),
    ("update-page", {"title": "{t}", "source": 5}, "'source' must be a string"),
    ("update-page", {"title": "{t}", "source": "x\ud800"}, "invalid Unicode"),
    ("update-page", {"title": "{t}", "source": "x", "sumary": "typo"}, "Unknown argument 'sumary'"),
    ("update-page", {"title": "{t}", "source": "x", "minor": "yes"}, "'minor' must be true or false"),
    ("create-page", {"title": "A|B", "source": "x"}, "not a valid page title"),
    ("create-page", {"title": "{t}"}, "Missing required argument 'source'"),
    ("create-page", {"title": "{t}", "source": "x", "contentModel": "x" * 100}, "at most 64"),
    ("create-page", {"title": "{t}", "source": "x", "idempotencyKey": "k" * 300}, "at most 200"),
    ("delete-page", {"title": "{t}", "confirm": "yes"}, "'confirm' must be true or false"),
    ("move-page", {"fromTitle": "{t}", "toTitle": " "}, "'toTitle' must be a non-empty page title"),
    ("move-page", {"fromTitle": "{t}"}, "Missing required argument 'toTitle'"),
]


def test_bad_write_arguments_change_nothing_and_send_nothing(wiki: RealWiki) -> None:
    server = make_server(wiki.env())
    title = "Write bad arguments test"
    revid = create(server, title, "Text stays.")
    counter = RequestCounter(server)
    for tool, arguments, message in BAD_WRITE_ARGUMENTS:
        arguments = {k: v.replace("{t}", title) if isinstance(v, str) else v for k, v in arguments.items()}
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert result.is_error and len(result.blocks) == 1, (tool, arguments)
        assert result.blocks[0].startswith("invalid_input: ") and message in result.blocks[0], result.text
        assert n[0] == 0, (tool, arguments)
    assert revision_ids(wiki, title) == [revid] and wiki.wikitext(title) == "Text stays."


def test_steady_state_requests_per_write_tool(wiki: RealWiki) -> None:
    """HTTP requests per write call once login, site info and the edit token are cached
    (the closing notes quote this table)."""
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    create(server, "Write requests warm-up", "Warm.")  # caches the token
    calls = [
        ("create-page", {"title": "Write requests test", "source": "One.\n"}, 1),
        ("create-page", {"title": "Write requests test 2", "source": "x", "dryRun": True}, 1),
        ("update-page", {"title": "Write requests test", "source": "Two.\n"}, 2),
        ("update-page", {"title": "Write requests test", "mode": "append", "source": "Three.\n"}, 2),
        ("update-page", {"title": "Write requests test", "find": "Two.", "replace": "2."}, 2),
        ("update-page", {"title": "Write requests test", "section": 0, "source": "Lead.\n"}, 2),
        ("update-page", {"title": "Write requests test", "source": "x", "dryRun": True}, 1),
        ("move-page", {"fromTitle": "Write requests test", "toTitle": "Write requests moved"}, 1),
        ("delete-page", {"title": "Write requests moved"}, 1),
        ("delete-page", {"title": "Write requests moved", "confirm": True}, 1),
        ("undelete-page", {"title": "Write requests moved"}, 2),
    ]
    table = []
    for tool, arguments, expected in calls:
        with counter.counting() as n:
            result = call(server, tool, **arguments)
        assert result.is_error == (tool == "delete-page" and "confirm" not in arguments), result.text
        table.append((tool, arguments, n[0]))
        assert n[0] == expected, (tool, arguments, n[0], counter.urls[-n[0]:])
    print("\n".join(f"{n} request(s): {tool} {json.dumps(a)}" for tool, a, n in table))


# -- the pieces behind the write tools ------------------------------------------

def test_line_diff_is_compact() -> None:
    assert m.line_diff("a\nb\nc\nd\ne\nf", "a\nb\nC\nd\ne\nf\ng") == "@@ line 2 @@\n b\n-c\n+C\n d\n@@ line 6 @@\n f\n+g"
    assert m.line_diff("same", "same") == ""


def test_section_ends_include_subsections_and_count_bytes() -> None:
    text = "Lead é\n== A ==\nx\n=== A1 ===\ny\n== B ==\nz"
    assert m.section_ends(text) == {0: 8, 1: 31, 2: 31, 3: 40}
    assert [text.encode()[s.start:].split(b"\n")[0] for s in m.wikitext_sections(text)] == [
        b"== A ==", b"=== A1 ===", b"== B =="]


def test_read_ledger_remembers_the_last_read_of_each_page_and_section() -> None:
    ledger = m.ReadLedger()
    text = "Lead.\n== A ==\n" + "a" * 3000 + "\n== B ==\nb"
    ledger.record("w", "P", None, 5, text, 0, 1000)
    assert ledger.unseen("w", "P", None).seen == 1000
    assert ledger.unseen("w", "P", 1) is not None and ledger.unseen("w", "P", 2) is not None
    assert ledger.unseen("w", "Other", None) is None  # never read here: nothing to protect
    ledger.record("w", "P", 2, 5, "== B ==\nb", 0, 1000)  # a later whole read of section 2
    assert ledger.unseen("w", "P", 2) is None
    ledger.record("w", "P", None, 6, text, 1000, 5000)  # the tail of a newer revision: still a gap
    assert ledger.unseen("w", "P", None).seen == 0
    for offset in (0, 1000, 2000, 3000):
        ledger.record("w", "P", None, 6, text, offset, 1000)
    assert ledger.unseen("w", "P", None) is None and ledger.unseen("w", "P", 1) is None


def test_idempotency_store_runs_once_forgets_failures_and_expires() -> None:
    now = [0.0]
    store = m.IdempotencyStore(ttl=3600, capacity=2, clock=lambda: now[0])
    runs: list[int] = []
    assert store.run("k", "f", lambda: runs.append(1) or ["done"]) == (["done"], False)
    assert store.run("k", "f", lambda: runs.append(2) or ["again"]) == (["done"], True)
    with pytest.raises(m.WikiError, match="^conflict: idempotencyKey 'k' was already used"):
        store.run("k", "other", lambda: ["x"])

    def fail() -> list[str]:
        raise m.WikiError("upstream_failure", "boom")
    with pytest.raises(m.WikiError):
        store.run("f", "f", fail)
    assert store.run("f", "f", lambda: ["second try"]) == (["second try"], False)
    now[0] = 3601.0
    assert store.run("k", "f", lambda: ["fresh"]) == (["fresh"], False)
    for key in ("a", "b", "c"):
        store.run(key, "f", lambda: ["x"])
    assert len(store._calls) <= 3 and runs == [1]


def test_idempotency_store_runs_concurrent_repeats_once() -> None:
    store = m.IdempotencyStore()
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> list[str]:
        runs.append(1)
        started.set()
        release.wait(10)
        return ["saved"]
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(store.run("k", "f", slow)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: results.append(store.run("k", "f", slow)))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert runs == [1] and sorted(results, key=lambda r: r[1]) == [(["saved"], False), (["saved"], True)]


# ---------------------------------------------------------------------------
# File uploads on the real wiki
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Several wikis, the configuration file, add-wiki and remove-wiki
# ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def other_wiki() -> Iterator[RealWiki]:
    """A second, private wiki: reading it needs an account."""
    with tempfile.TemporaryDirectory(prefix="mw-other-") as directory:
        running = start_test_wiki(Path(directory), "Other Wiki", seed=False,
                                  extra_settings="$wgGroupPermissions['*']['read'] = false;\n")
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="session")
def third_wiki() -> Iterator[RealWiki]:
    """A public wiki nobody configured: add-wiki finds it."""
    with tempfile.TemporaryDirectory(prefix="mw-third-") as directory:
        running = start_test_wiki(Path(directory), "Third Wiki", seed=False)
        try:
            yield running
        finally:
            running.stop()


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


@contextlib.contextmanager
def temporary_tool(name: str, **options: Any) -> Iterator[None]:
    """Registers a tiny tool for one test and removes it afterwards."""
    @m.tool(name, "Test only", **options)
    def test_tool(ctx: m.ToolContext) -> str:
        """Returns the key of the wiki it ran on (a test-only tool)."""
        return f"ran on {ctx.wiki.key}"
    try:
        yield
    finally:
        m.TOOLS.pop(name, None)


def test_typescript_config_file_serves_two_wikis(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mediawiki_mcp"):
        server = make_server(config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki))
    assert [r.message for r in caplog.records if "oauth2" in r.message] == [
        f"configuration file {tmp_path / 'config.json'}: oauth2CallbackPort, oauth2ClientId ignored "
        "(browser OAuth is not a feature of this server; use token or username and password)"]
    assert "Name: Test Wiki" in call(server, "get-site-info").text
    other = call(server, "get-site-info", wiki="other")  # a private wiki: site info needs the login
    assert not other.is_error and "Name: Other Wiki" in other.text and f"API: {other_wiki.api}" in other.text
    assert "User: Admin\n" in call(server, "whoami", wiki="mcp://wikis/other").text
    page = call(server, "get-page", wiki="other", title="Main Page")
    assert not page.is_error and page.blocks[0].startswith("Title: Main Page")
    assert "An apple is a fruit." in call(server, "get-page", title="Apple").text
    assert call(server, "get-page", wiki="other", title="Apple").blocks[0].startswith("not_found: ")
    listed = call(server, "list-wikis").text.splitlines()
    assert listed == [f"{wiki.key}: Test Wiki, {wiki.url}, API {wiki.api} (default)",
                      f"other: Other Wiki, {other_wiki.url}, API {other_wiki.api} (read-only; private)"]


def test_a_private_wiki_without_an_account_says_so(other_wiki: RealWiki) -> None:
    result = call(make_server({"MEDIAWIKI_URL": other_wiki.url}), "get-page", title="Main Page")
    assert result.is_error and result.blocks[0].startswith(
        f"authentication: {other_wiki.key} is a private wiki: reading needs an account.")


def test_writes_to_the_read_only_wiki_are_refused(wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    env = config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki)
    state = m.ServerState.from_config(m.Config.from_env(env))
    with temporary_tool("test-write", read_only=False):
        assert "test-write" in {t.name for t in list_tools(m.create_server(state=state))}
        blocks, is_error = m.run_tool(state, "test-write", {"wiki": "other"})
        assert is_error and blocks == ["permission_denied: The wiki other is configured read-only; the "
                                       "operator decides this, and no retry by the model changes it."]
        assert m.run_tool(state, "test-write", {}) == ([f"ran on {wiki.key}"], False)


def test_write_tools_reach_the_writable_wiki_and_are_refused_on_the_read_only_one(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    config = two_wiki_config(wiki, other_wiki)
    config["wikis"][wiki.key]["attributeEdits"] = False
    server = make_server(config_env(tmp_path, config, wiki, other_wiki))
    title = f"Multi wiki page {secrets.token_hex(4)}"
    refused = call(server, "create-page", wiki="other", title=title, source="Not here.")
    assert refused.blocks == ["permission_denied: The wiki other is configured read-only; the operator "
                              "decides this, and no retry by the model changes it."]
    created = call(server, "create-page", title=title, source="Written through the config file.",
                   comment="Made by the multi-wiki test")
    assert not created.is_error, created.text
    assert wiki.wikitext(title) == "Written through the config file."
    revision = wiki.raw_get(action="query", prop="revisions", titles=title, rvprop="comment")
    assert revision["query"]["pages"][0]["revisions"][0]["comment"] == "Made by the multi-wiki test"


def test_a_tool_needing_an_extension_names_the_wikis_that_have_it(wiki: RealWiki, fake: FakeWiki,
                                                                 tmp_path: Path) -> None:
    config = {"defaultWiki": "fake", "wikis": {
        "fake": {"server": f"http://127.0.0.1:{fake.port}", "scriptpath": "/w"},
        wiki.key: {"server": wiki.url, "scriptpath": "/w"}}}
    (tmp_path / "c.json").write_text(json.dumps(config))
    state = m.ServerState.from_config(m.Config.from_env({"CONFIG": str(tmp_path / "c.json")}))
    with temporary_tool("test-cite", read_only=True, needs_extension="Cite"), \
            temporary_tool("test-cargo", read_only=True, needs_extension="Cargo"):
        assert m.run_tool(state, "test-cite", {"wiki": wiki.key}) == ([f"ran on {wiki.key}"], False)
        assert m.run_tool(state, "test-cite", {}) == ([
            f"invalid_input: test-cite needs the Cite extension, which the wiki fake does not have. "
            f"Wikis that have it: {wiki.key}; pass one as wiki."], True)
        blocks, is_error = m.run_tool(state, "test-cargo", {"wiki": wiki.key})
        assert is_error and blocks[0].endswith("does not have. No configured wiki has it.")
        counter = RequestCounter(m.create_server(state=state))
        with counter.counting() as n:  # the extensions are learnt once per wiki
            m.run_tool(state, "test-cite", {"wiki": wiki.key})
        assert n[0] == 0


def run_script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HERE / "mediawiki_mcp.py"), *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})


def test_check_reports_each_wiki_and_fails_on_a_wrong_password(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    env = config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki)
    done = run_script("--check", "--config", env.pop("CONFIG"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"{wiki.key} (default): Test Wiki, MediaWiki 1.39.{lines[0].split('1.39.')[1].split(',')[0]}, "
                        "as Admin (bot password Admin@mcp), read and write")
    assert lines[1] == f"  API: {wiki.api}" and lines[2].startswith("  Tools: get-page, get-pages,")
    assert lines[3].startswith("other: Other Wiki, MediaWiki 1.39") and lines[3].endswith(
        "as Admin (bot password Admin@mcp), read-only")
    assert lines[-1] == "Server tools: add-wiki, remove-wiki, list-wikis"
    wrong = "0" * 32
    env["B_PASS"] = wrong
    failed = run_script("--check", env={**env, "CONFIG": str(tmp_path / "config.json")})
    assert failed.returncode == 1
    assert "other: FAILED: authentication: Login to " in failed.stdout
    assert "1 of 2 wikis failed the check." in failed.stdout
    assert wrong not in failed.stdout + failed.stderr and other_wiki.bot_password not in failed.stdout


def test_the_environment_alone_still_configures_one_wiki_from_any_url(wiki: RealWiki) -> None:
    for url in (wiki.url, f"{wiki.url}/wiki/Apple", wiki.api):
        server = make_server(wiki.env(MEDIAWIKI_URL=url))
        assert "User: Admin\n" in call(server, "whoami").text
        assert f"API: {wiki.api}" in call(server, "get-site-info").text
        assert "list-wikis" not in {t.name for t in list_tools(server)}


def test_api_named_by_the_wikis_html_is_found(fake: FakeWiki) -> None:
    fake.siteinfo_path = "/mw/api.php"
    page = (b'<html><head><link rel="EditURI" type="application/rsd+xml" '
            b'href="//127.0.0.1:%d/mw/api.php?action=rsd&amp;x=1"></head><body>hi</body></html>' % fake.port)
    fake.replies = [Reply(404, b"<html>no</html>"), Reply(404, b"<html>no</html>"), Reply(200, page)]
    server = make_server({"MEDIAWIKI_URL": f"http://127.0.0.1:{fake.port}/wiki/Main_Page"})
    result = call(server, "get-page", title="Main Page")
    assert not result.is_error, result.text
    client = server.mediawiki_state.clients[f"127.0.0.1:{fake.port}"]
    assert client.api_url == f"http://127.0.0.1:{fake.port}/mw/api.php"
    assert [s["path"] for s in fake.seen][:4] == ["/w/api.php", "/api.php", "/wiki/Main_Page", "/mw/api.php"]


@pytest.mark.parametrize("text, found", [
    ('<link rel="EditURI" type="application/rsd+xml" href="https://w.example.org/w/api.php?action=rsd"/>',
     "https://w.example.org/w/api.php"),
    ("<LINK REL=EditURI HREF='//w.example.org/api.php?action=rsd'>", "http://w.example.org/api.php"),
    ('<link href="/wiki/api.php?action=rsd" rel="EditURI">', "http://page.example.org/wiki/api.php"),
    ('<link rel="stylesheet" href="/w/load.php">', None),
])
def test_api_from_html(text: str, found: str | None) -> None:
    assert m.api_from_html(f"<html><head>{text}</head>", "http://page.example.org/wiki/Foo") == found


def test_servers_written_oddly_are_normalised() -> None:
    assert m.normalise_server("//en.wikipedia.org") == "https://en.wikipedia.org"
    assert m.normalise_server("wiki.example.org/w/") == "https://wiki.example.org/w/"
    assert m.normalise_server("HTTP://Wiki.example.org") == "http://Wiki.example.org"
    with pytest.raises(ValueError):
        m.normalise_server("ftp://wiki.example.org")
    site = m.SiteInfo.from_api({"general": {"server": "//w.example.org"}}, "http://w.example.org/w/api.php")
    assert site.server == "http://w.example.org"


# -- the address guard --

@pytest.mark.parametrize("address, problem", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("192.168.0.9", "private"),
    ("172.16.5.4", "private"), ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("::ffff:127.0.0.1", "loopback"), ("0.0.0.0", "unspecified"), ("100.64.0.1", "not globally routable"),
    ("224.0.0.1", "multicast"), ("93.184.216.34", None), ("2606:4700::1111", None),
])
def test_address_guard_knows_non_public_addresses(address: str, problem: str | None) -> None:
    assert m.address_problem(address) == problem


def test_address_guard_resolves_and_honours_trusted_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {"public.example": ["93.184.216.34"], "sneaky.example": ["93.184.216.34", "10.0.0.7"]}
    monkeypatch.setattr(m, "resolve_addresses", lambda host, port: names[host])
    assert m.check_address("https://public.example/wiki/X") == "93.184.216.34"
    with pytest.raises(m.WikiError) as refused:
        m.check_address("http://sneaky.example:8080/w/api.php")
    assert str(refused.value) == (
        "permission_denied: sneaky.example resolves to 10.0.0.7, a private address, which this server does "
        "not reach for a URL given by a model. The operator can allow the host by listing it in "
        "MCP_TRUSTED_HOSTS; no retry by the model changes this.")
    assert m.check_address("http://sneaky.example:8080/", ["sneaky.example:8080"]) == "93.184.216.34"
    assert m.check_address("http://sneaky.example:8080/", ["SNEAKY.example"]) == "93.184.216.34"
    with pytest.raises(m.WikiError, match="^permission_denied"):
        m.check_address("http://sneaky.example:8080/", ["sneaky.example:9090"])
    for url, message in (("file:///etc/passwd", "is not an http"), ("http://u:p@public.example/", "user name"),
                         ("http://public.example:99999/", "invalid port")):
        with pytest.raises(m.WikiError, match=f"^invalid_input: .*{message}"):
            m.check_address(url)


def test_add_wiki_refuses_a_private_address_before_any_request(fake: FakeWiki) -> None:
    server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php"})
    result = call(server, "add-wiki", wikiUrl=f"http://127.0.0.1:{fake.port}/wiki/Main_Page")
    assert result.is_error and result.blocks[0].startswith(
        "permission_denied: 127.0.0.1 resolves to 127.0.0.1, a loopback address")
    assert "MCP_TRUSTED_HOSTS" in result.text and fake.seen == []
    assert list(server.mediawiki_state.config.wikis) == ["en.wikipedia.org"]


def test_add_wiki_refuses_a_redirect_to_a_private_address(fake: FakeWiki) -> None:
    hidden = FakeWiki()
    try:
        fake.siteinfo_path = "/elsewhere"
        fake.replies = [Reply(302, {}, {"Location": f"http://localhost:{hidden.port}/w/api.php"})]
        server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php",
                              "MCP_TRUSTED_HOSTS": f"127.0.0.1:{fake.port}"})
        result = call(server, "add-wiki", wikiUrl=f"http://127.0.0.1:{fake.port}/")
        assert result.is_error and result.blocks[0].startswith(
            "permission_denied: localhost resolves to ")
        assert len(fake.seen) == 1 and hidden.seen == []
    finally:
        hidden.close()


def test_add_wiki_refuses_a_page_that_redirects_to_a_private_address(fake: FakeWiki) -> None:
    """The page fetched for its EditURI link is guarded on every hop too."""
    hidden = FakeWiki()
    try:
        fake.siteinfo_path = "/elsewhere"
        fake.replies = [Reply(404, b"<html>no</html>"), Reply(404, b"<html>no</html>"),
                        Reply(301, b"", {"Location": f"http://localhost:{hidden.port}/wiki/Main_Page"})]
        server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php",
                              "MCP_TRUSTED_HOSTS": f"127.0.0.1:{fake.port}"})
        result = call(server, "add-wiki", wikiUrl=f"http://127.0.0.1:{fake.port}/wiki/Main_Page")
        assert result.is_error and result.blocks[0].startswith("permission_denied: localhost resolves to ")
        assert [s["path"] for s in fake.seen] == ["/w/api.php", "/api.php", "/wiki/Main_Page"]
        assert hidden.seen == []
    finally:
        hidden.close()


@pytest.mark.parametrize("url, message", [
    ("", "is not an http(s) URL of a wiki"), ("ftp://wiki.example.org/", "is not an http(s) URL"),
    ("http://", "is not an http(s) URL"), ("x" * 2001, "at most 2000 are accepted"),
])
def test_add_wiki_refuses_what_is_no_wiki_url(url: str, message: str) -> None:
    result = call(m.create_server(m.Config.from_env({})), "add-wiki", wikiUrl=url)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text


def test_wiki_keys_leave_out_the_schemes_own_port() -> None:
    assert m.wiki_key("https://en.wikipedia.org:443/w/api.php") == "en.wikipedia.org"
    assert m.wiki_key("http://127.0.0.1:8080/w/api.php") == "127.0.0.1:8080"
    assert m.wiki_key("http://wiki.example.org:443/") == "wiki.example.org:443"


def test_add_wiki_pins_the_address_it_checked(fake: FakeWiki, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trusted name that only the guard's resolver knows: every request goes to the checked
    address, with the name in the Host header."""
    monkeypatch.setattr(m, "resolve_addresses", lambda host, port: ["127.0.0.1"])
    server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php",
                          "MCP_TRUSTED_HOSTS": "wiki.invalid"})
    result = call(server, "add-wiki", wikiUrl=f"http://wiki.invalid:{fake.port}/wiki/Main_Page")
    assert not result.is_error, result.text
    assert "Added wiki: 127.0.0.1" in result.text  # the fake's $wgServer names 127.0.0.1
    assert {s["headers"]["Host"] for s in fake.seen} == {f"wiki.invalid:{fake.port}"}


def test_add_wiki_finds_a_third_wiki_from_a_page_url_and_remove_wiki_removes_it(
        wiki: RealWiki, third_wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=f"localhost, {third_wiki.key}"))
    assert {"list-wikis", "remove-wiki"}.isdisjoint(t.name for t in list_tools(server))
    added = call(server, "add-wiki", wikiUrl=f"{third_wiki.url}/wiki/Main_Page")
    assert not added.is_error, added.text
    assert added.text == "\n".join([
        f"Added wiki: {third_wiki.key}", "Name: Third Wiki",
        f"MediaWiki: {added.text.split('MediaWiki: ')[1].splitlines()[0]}", f"Server: {third_wiki.url}",
        f"API: {third_wiki.api}", "Access: read-only", f'Pass wiki="{third_wiki.key}" to other tools to use it.'])
    assert "User: anonymous" in call(server, "whoami", wiki=third_wiki.key).text
    assert "Name: Third Wiki" in call(server, "get-site-info", wiki=third_wiki.key).text
    assert {"list-wikis", "remove-wiki"} <= {t.name for t in list_tools(server)}
    again = call(server, "add-wiki", wikiUrl=third_wiki.api)
    assert again.is_error and again.blocks[0].startswith(f"conflict: {third_wiki.key} is already configured")
    assert call(server, "add-wiki", wikiUrl=wiki.url).blocks[0].startswith("conflict: ")
    removed = call(server, "remove-wiki", wiki=third_wiki.key)
    assert removed.text == f"Removed wiki {third_wiki.key} (Third Wiki)."
    gone = call(server, "get-page", wiki=third_wiki.key, title="Main Page")
    assert gone.is_error and gone.blocks[0].startswith(f"invalid_input: Unknown wiki '{third_wiki.key}'")
    refused = call(server, "remove-wiki", wiki=wiki.key)
    assert refused.is_error and refused.blocks[0].startswith("permission_denied: The tool remove-wiki is not offered")


def test_the_default_wiki_cannot_be_removed_and_a_configured_one_comes_back_with_its_account(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    server = make_server(config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki))
    result = call(server, "remove-wiki", wiki=wiki.key)
    assert result.blocks == [f"invalid_input: {wiki.key} is the default wiki, which cannot be removed."]
    assert call(server, "remove-wiki", wiki="mcp://wikis/other").text == "Removed wiki other (Other Wiki)."
    back = call(server, "add-wiki", wikiUrl=f"{other_wiki.url}/wiki/Main_Page")  # private address: configured
    assert not back.is_error and "Added wiki: other" in back.text and "Access: read-only" in back.text
    assert "User: Admin\n" in call(server, "whoami", wiki="other").text


def test_wiki_management_can_be_switched_off(wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    env = config_env(tmp_path, two_wiki_config(wiki, other_wiki, allowWikiManagement=False), wiki, other_wiki)
    names = {t.name for t in list_tools(make_server(env))}
    assert "list-wikis" in names and not {"add-wiki", "remove-wiki"} & names
    result = call(make_server(env), "add-wiki", wikiUrl="https://de.wikipedia.org/")
    assert result.is_error and result.blocks[0].startswith(
        "permission_denied: The tool add-wiki is not offered with this server's configuration; no retry")
    stateless = m.Config.from_env({})
    stateless.stateless = True
    assert "add-wiki" not in {t.name for t in list_tools(m.create_server(stateless))}


def test_clients_are_told_when_the_wikis_change(wiki: RealWiki, third_wiki: RealWiki) -> None:
    """A handshake-era client gets notifications/resources/list_changed and, as the tools
    change too, notifications/tools/list_changed on its session."""
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))
    seen: list[str] = []

    async def handler(message: Any) -> None:
        seen.append(getattr(message, "method", type(message).__name__))

    async def go() -> tuple[Any, ...]:
        async with Client(server, mode="legacy", message_handler=handler) as client:
            capabilities = client.session.server_capabilities
            first = [str(r.uri) for r in (await client.list_resources()).resources]
            added = await client.call_tool("add-wiki", {"wikiUrl": third_wiki.url})
            after_add = list(seen)
            resources = {str(r.uri): r for r in (await client.list_resources()).resources}
            read = await client.read_resource(f"mcp://wikis/{third_wiki.key}")
            await client.call_tool("get-page", {"title": "Apple"})
            after_read = list(seen)
            await client.call_tool("remove-wiki", {"wiki": third_wiki.key})
            last = [str(r.uri) for r in (await client.list_resources()).resources]
            return capabilities, first, added, after_add, resources, read, after_read, last

    capabilities, first, added, after_add, resources, read, after_read, last = anyio.run(go)
    assert capabilities.resources.list_changed and capabilities.tools.list_changed
    assert first == [f"mcp://wikis/{wiki.key}"] and not added.is_error
    assert after_add == ["notifications/resources/list_changed", "notifications/tools/list_changed"]
    assert resources[f"mcp://wikis/{third_wiki.key}"].title == "Third Wiki"
    assert read.contents[0].text == "\n".join([
        f"Wiki: {third_wiki.key}", "Name: Third Wiki", f"Server: {third_wiki.url}",
        f"API: {third_wiki.api}", "Read-only: yes"])
    assert after_read == after_add  # a call that changes no list announces nothing
    assert seen[len(after_add):] == ["notifications/resources/list_changed", "notifications/tools/list_changed"]
    assert last == first


def test_listening_clients_of_2026_hear_of_new_wikis(wiki: RealWiki, third_wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))

    async def go() -> list[str]:
        async with Client(server) as client:
            async with client.listen(resources_list_changed=True, tools_list_changed=True) as subscription:
                await client.call_tool("add-wiki", {"wikiUrl": third_wiki.url})
                events: list[str] = []
                with anyio.fail_after(10):
                    async for event in subscription:
                        events.append(type(event).__name__)
                        if len(events) == 2:
                            break
                return events

    assert sorted(anyio.run(go)) == ["ResourcesListChanged", "ToolsListChanged"]


def test_reading_an_unknown_wiki_resource_is_an_error(wiki: RealWiki) -> None:
    async def go() -> Any:
        async with Client(make_server(wiki.env())) as client:
            try:
                await client.read_resource("mcp://wikis/nowhere.example.org")
            except Exception as error:  # the SDK raises the JSON-RPC error
                return error
    error = anyio.run(go)
    assert f"Unknown resource mcp://wikis/nowhere.example.org; the wikis are mcp://wikis/{wiki.key}." in str(error)


# -- configuration errors, each naming the field --

BAD_CONFIGS = [
    ("{not json", "is not valid JSON"),
    ('["a list"]', "must hold a JSON object, not array"),
    ({"wikis": {}}, "wikis must name at least one wiki"),
    ({"wikis": {"w": {"server": "https://w.example.org", "readOnly": "true"}}},
     "wikis.w.readOnly must be boolean, not string (remove the quotes)"),
    ({"wikis": {"w": {"server": "https://w.example.org", "tags": [1]}}}, "wikis.w.tags must be string or"),
    ({"wikis": {"w": {"server": 5}}}, "wikis.w.server must be string, not number"),
    ({"wikis": {"w": {"sitename": "W"}}}, "wikis.w.server is required"),
    ({"wikis": {"w": {"server": "ftp://w.example.org"}}}, "wikis.w.server must be an http(s) URL"),
    ({"wikis": {"w": "https://w.example.org"}}, "wikis.w must be an object, not string"),
    ({"defaultWiki": "x", "wikis": {"w": {"server": "https://w.example.org"}}},
     "defaultWiki 'x' is not one of the wikis: w"),
    ({"wikis": {"w": {"server": "https://w.example.org", "username": "me@bot", "password": "${NOPE_UNSET}"}}},
     "wikis.w.password refers to ${NOPE_UNSET}, which is not set"),
    ({"wikis": {"w": {"server": "https://w.example.org", "username": "me@bot"}}},
     "wikis.w: username and password go together"),
    ({"wikis": {"w": {"server": "https://w.example.org", "token": {"run": "x"}}}}, "wikis.w.token must be"),
    ({"wikis": {"w": {"server": "https://w.example.org", "token": {"exec": {"command": ""}}}}},
     "wikis.w.token.exec.command must be a non-empty string"),
    ({"wikis": {"w": {"server": "https://w.example.org"}}, "allowWikiManagement": "no"},
     "allowWikiManagement must be boolean"),
    ({"wikis": {"w": {"server": "https://w.example.org"}}, "uploadDirs": ["relative/dir"]},
     "uploadDirs: upload directory 'relative/dir' must be an absolute path"),
    ({"wikis": {"mcp://wikis/w": {"server": "https://w.example.org"}}}, "wiki key 'mcp://wikis/w'"),
]


@pytest.mark.parametrize("content, message", BAD_CONFIGS)
def test_bad_configuration_files_fail_naming_the_field(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(m.ConfigError, match=re.escape(message)):
        m.Config.from_env({"CONFIG": str(path)})


def test_a_bad_configuration_file_stops_the_server_with_exit_status_2(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "private": "yes"}}}))
    done = run_script("--config", str(path), env={})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith("mediawiki-mcp: wikis.w.private must be boolean, not string "
                                        "(remove the quotes)")
    missing = run_script(env={"CONFIG": str(tmp_path / "nope.json")})
    assert missing.returncode == 2 and "configuration file" in missing.stderr and "does not exist" in missing.stderr


def test_exec_secrets_run_the_command_and_never_show_its_output(tmp_path: Path) -> None:
    good = {"exec": {"command": sys.executable, "args": ["-c", "print('  tok-from-exec-123  ')"]}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "token": good}}}))
    wiki = m.Config.from_env({"CONFIG": str(path)}).wikis["w"]
    assert wiki.token == "tok-from-exec-123" and not wiki.read_only
    bad = {"exec": {"command": sys.executable,
                    "args": ["-c", "import sys; print('s3cret-printed'); sys.stderr.write('vault locked\\n'); sys.exit(3)"]}}
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "password": bad,
                                                "username": "me@bot"}}}))
    with pytest.raises(m.ConfigError) as error:
        m.Config.from_env({"CONFIG": str(path)})
    assert str(error.value) == (f"wikis.w.password: the secret command {sys.executable!r} failed with "
                                "exit status 3: vault locked")
    done = run_script("--config", str(path), env={})
    assert done.returncode == 2 and "s3cret-printed" not in done.stdout + done.stderr
    empty = {"exec": {"command": sys.executable, "args": ["-c", "pass"]}}
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "token": empty}}}))
    with pytest.raises(m.ConfigError, match="wikis.w.token: the secret command .* printed nothing"):
        m.Config.from_env({"CONFIG": str(path)})


def test_configuration_file_settings_and_shared_environment_names(tmp_path: Path) -> None:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "defaultWiki": "${DEFAULT_KEY}",
        "uploadDirs": [str(uploads)],
        "wikis": {
            "public": {"sitename": "Public", "server": "//wiki.example.org", "articlepath": "/wiki",
                       "scriptpath": "/w", "tags": "mcp-edit", "attributeEdits": False},
            "company": {"server": "https://intra.example.com/", "scriptpath": "", "token": "${TOK}",
                        "readOnly": False, "private": True, "tags": ["a", "b"]}}}))
    config = m.Config.from_env({"CONFIG": str(path), "DEFAULT_KEY": "company", "TOK": "t0k-123",
                                "MCP_TRUSTED_HOSTS": "Wiki.Internal:8080, other", "MCP_UPLOAD_DIRS": str(tmp_path),
                                "MCP_CONTENT_MAX_BYTES": "20000"})
    assert config.default_wiki == "company" and config.content_max_bytes == 20000
    public, company = config.wikis["public"], config.wikis["company"]
    assert public.url == "https://wiki.example.org/w/api.php" and public.read_only and public.tags == ["mcp-edit"]
    assert not public.attribute_edits and public.sitename == "Public"
    assert company.url == "https://intra.example.com/api.php" and company.token == "t0k-123"
    assert not company.read_only and company.private and company.tags == ["a", "b"]
    assert config.trusted_hosts == ["wiki.internal:8080", "other"]
    assert config.upload_dirs == [os.path.realpath(tmp_path), os.path.realpath(uploads)]
    assert "t0k-123" not in repr(config)


# ---------------------------------------------------------------------------
# Streamable HTTP transport
# ---------------------------------------------------------------------------


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

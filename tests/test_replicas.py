"""Tests: Replicas that share state through Valkey or Redis."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import json
import logging
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp.server.auth.provider import TokenError
from mcp.shared.auth import OAuthToken

from mediawiki_mcp.calls import IdempotencyStore
from mediawiki_mcp.cli import main
from mediawiki_mcp.config import Config
from mediawiki_mcp.errors import WikiError
from mediawiki_mcp.http_ops import HealthCheck
from mediawiki_mcp.ledger import PageRead, ReadLedger
from mediawiki_mcp.login_forms import SIGN_OUT_PATH
from mediawiki_mcp.settings import ConfigError, shown_address
from mediawiki_mcp.state import ServerState
from mediawiki_mcp.store import open_state_store
from realwiki import (
    RIVER_ARTICLE,
    STORE_PASSWORD,
    RealWiki,
    StateServer,
    free_port,
    php,
)
from tests.support import (
    CALLBACK,
    HERE,
    INIT_PARAMS,
    Browser,
    HttpServer,
    OAuthApp,
    PersonSession,
    TokenMemory,
    admin_login_env,
    big_section_page,
    bot_server_for,
    call,
    content_of,
    create,
    editor_edit,
    error_text,
    exchanged_at_once,
    http_servers,
    initialize_status,
    login_env,
    login_server,
    make_server,
    mcp_status,
    metric_values,
    people_file,
    pkce,
    post_rpc,
    register_client,
    revision_ids,
    revision_users,
    rpc_result,
    run_script,
    sign_ins_of,
    signed_in_calls,
    tool_text,
)


def replica_env(wiki: RealWiki, store: StateServer, **extra: str) -> dict[str, str]:
    return wiki.env(MCP_STATE_URL=store.url, **extra)


def http_call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """One tools/call to a stateless replica; the result as JSON-RPC gives it."""
    return rpc_result(post_rpc(url, "tools/call", {"name": tool, "arguments": arguments}))


@pytest.mark.redis
def test_one_append_sent_through_two_replicas_with_one_key_lands_once(
        wiki: RealWiki, state_server: StateServer) -> None:
    """A client that gets no answer from one replica retries through another with the same key:
    sent at once through both, the append is saved once, and both answers carry its result."""
    title = f"Shared key test {state_server.kind}"
    create(bot_server_for(wiki), title, "Log:")
    before = revision_ids(wiki, title)
    arguments = {"title": title, "mode": "append", "source": "* entry one", "idempotencyKey": "req-shared-1"}
    with http_servers(*[(replica_env(wiki, state_server), ("--stateless",))] * 2) as replicas:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda r: tool_text(http_call(r.url, "update-page", **arguments)), replicas))
        again = tool_text(http_call(replicas[1].url, "update-page", **arguments))
        other = http_call(replicas[0].url, "update-page", **{**arguments, "source": "* entry two"})
        logs = "".join(r.log for r in replicas)
    assert wiki.wikitext(title) == "Log:\n* entry one"
    assert len(revision_ids(wiki, title)) == len(before) + 1
    first = next(a for a in answers if not a.startswith("Repeat: "))
    assert sorted(a.startswith("Repeat: ") for a in answers) == [False, True]
    assert all(a.endswith(first) for a in (*answers, again)) and again.startswith("Repeat: ")
    assert error_text(other).startswith("conflict: idempotencyKey 'req-shared-1' was already used")
    assert f"shared through {state_server.shown}" in logs and STORE_PASSWORD not in logs


PINNED_BASE_NEEDED = ("invalid_input: Nothing was saved: this server cannot tell its clients apart (HTTP without "
                      "sessions), so no read here shows which revision of {what} this text is based on. Pass "
                      "latestId, the revision ID get-page returned with the text. To change part of the page, use "
                      "update-page with find and replace, or replace one section (section=N) that get-page showed "
                      "whole, with latestId.")


READ_CUT = ("invalid_input: Nothing was saved: revision {revision} of {what} was read in part (truncated) through "
            "this server, which cannot tell its clients apart (HTTP without sessions), so it cannot know that this "
            "text holds the rest. To change part of the page, use update-page with find and replace, or replace "
            "one section (section=N) that get-page showed whole, with latestId.")


@pytest.mark.redis
def test_a_truncated_read_through_one_replica_refuses_a_whole_write_back_through_the_other(
        wiki: RealWiki, state_server: StateServer) -> None:
    """Stateless replicas cannot tell their clients apart: a revision read cut through one is not
    written back whole through either, whoever read the rest, and a whole write names its base;
    a section the cut read showed whole may still be replaced, with latestId."""
    title = f"Shared read ledger test {state_server.kind}"
    create(bot_server_for(wiki), title, big_section_page())
    env = replica_env(wiki, state_server, MCP_CONTENT_MAX_BYTES="1000")
    with http_servers((env, ("--stateless",)), (env, ("--stateless",))) as (one, two):
        read = http_call(one.url, "get-page", title=title)
        assert len(read["content"]) == 2 and "Content truncated at " in read["content"][1]["text"]
        seen, revision = content_of(read["content"][0]["text"]), int(read["content"][0]["text"].split("\n")[1][13:])
        unpinned = http_call(two.url, "update-page", title=title, source=seen)
        assert error_text(unpinned) == PINNED_BASE_NEEDED.format(what=repr(title))
        for offset in range(1000, 5000, 1000):  # the rest, read through the other replica
            http_call(two.url, "get-page", title=title, offset=offset)
        for url, source in ((one.url, seen), (two.url, big_section_page() + "\nMore.")):
            refused = http_call(url, "update-page", title=title, source=source, latestId=revision)
            assert error_text(refused) == READ_CUT.format(revision=revision, what=repr(title))
        cut_section = http_call(one.url, "update-page", title=title, section=2, source="== Big ==\nx",
                                latestId=revision, dryRun=True)
        assert error_text(cut_section) == READ_CUT.format(revision=revision, what=f"section 2 of {title!r}")
        small = http_call(two.url, "update-page", title=title, section=1, source="== Small ==\nChanged.",
                          latestId=revision, dryRun=True)
        assert tool_text(small).startswith("Dry run: nothing was saved.")
    assert wiki.wikitext(title) == big_section_page()


@pytest.mark.redis
def test_through_replicas_a_whole_write_without_latest_id_is_refused_not_based_on_anothers_read(
        wiki: RealWiki, state_server: StateServer) -> None:
    """A reads the page through one replica; a colleague changes line 2; B reads that through the
    other; A's whole-page write without latestId is refused (no read vouches for it), and with
    the latestId of its read it merges, keeping the colleague's line."""
    title = f"Shared base test {state_server.kind}"
    lines = [f"Line {n} of the page." for n in range(1, 9)]
    create(bot_server_for(wiki), title, "\n".join(lines))
    theirs = "\n".join(lines).replace("Line 2 of", "Line 2, by a colleague, of")
    mine = "\n".join(lines).replace("Line 7 of", "Line 7, by A, of")
    env = replica_env(wiki, state_server)
    with http_servers((env, ("--stateless",)), (env, ("--stateless",))) as (one, two):
        read = tool_text(http_call(one.url, "get-page", title=title))
        editor_edit(wiki, title, theirs)
        http_call(two.url, "get-page", title=title)
        for section, source in ((None, mine), (0, "Line 1, by A.")):
            where = {"section": section} if section is not None else {}
            what = f"section {section} of {title!r}" if section is not None else repr(title)
            refused = http_call(two.url, "update-page", title=title, source=source, **where)
            assert error_text(refused) == PINNED_BASE_NEEDED.format(what=what)
        assert wiki.wikitext(title) == theirs
        saved = http_call(two.url, "update-page", title=title, source=mine, latestId=int(read.split("\n")[1][13:]))
        assert tool_text(saved).startswith("Saved, merged with the edits made since revision ")
    assert wiki.wikitext(title) == theirs.replace("Line 7 of", "Line 7, by A, of")


def start_script(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The server started over stdio with nothing to read: it ends at once, unless it cannot start."""
    return subprocess.run([sys.executable, "-m", "mediawiki_mcp"], stdin=subprocess.DEVNULL, cwd=HERE,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **env}, check=False)


@pytest.mark.redis
def test_a_store_refusing_the_password_stops_the_server_and_one_unreachable_fails_the_check(
        wiki: RealWiki, state_server: StateServer) -> None:
    wrong = wiki.env(MCP_STATE_URL=state_server.url.replace(STORE_PASSWORD, "not-the-password"))
    refused = (f"mediawiki-mcp: The state store {state_server.shown} refuses the user name or password of "
               "MCP_STATE_URL (stateUrl in a configuration file); correct the setting. The value given is not shown.")
    for done in (start_script(wrong), run_script("--check", env=wrong)):
        assert done.returncode == 2 and done.stderr.splitlines()[-1] == refused, done.stderr
        assert "not-the-password" not in done.stdout + done.stderr
    port = free_port()
    nowhere = wiki.env(MCP_STATE_URL=f"redis://:{STORE_PASSWORD}@127.0.0.1:{port}/0")
    degraded = start_script(nowhere)  # the store may come back: the server starts, refusing writes
    assert degraded.returncode == 0 and (f"shared through redis://127.0.0.1:{port}/0, which cannot be reached "
                                         "now (ConnectionError): writes are refused until it is") in degraded.stderr
    checked = run_script("--check", env=nowhere)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert (f"State store: redis://127.0.0.1:{port}/0, FAILED: it cannot be reached (ConnectionError), so every "
            "write is refused") in checked.stdout.splitlines()
    reached = run_script("--check", env=replica_env(wiki, state_server))
    assert reached.returncode == 0 and f"State store: {state_server.shown}, reached" in reached.stdout.splitlines()
    assert STORE_PASSWORD not in "".join(d.stdout + d.stderr for d in (degraded, checked, reached))


@pytest.mark.redis
def test_a_store_refusing_the_database_stops_the_server_saying_what_the_store_said(
        wiki: RealWiki, state_server: StateServer) -> None:
    missing = wiki.env(MCP_STATE_URL=state_server.url.removesuffix("/0") + "/99")  # 16 databases by default
    said = (f"mediawiki-mcp: The state store redis://127.0.0.1:{state_server.port}/99 refuses MCP_STATE_URL "
            "(stateUrl in a configuration file): it says 'DB index is out of range'; correct the setting.")
    for done in (start_script(missing), run_script("--check", env=missing)):
        assert done.returncode == 2 and done.stderr.splitlines()[-1] == said, done.stderr
        assert STORE_PASSWORD not in done.stdout + done.stderr and "cannot be reached" not in done.stderr


@pytest.mark.redis
def test_a_read_made_while_the_store_is_down_is_recorded_once_it_is_back(
        wiki: RealWiki, state_server: StateServer) -> None:
    """A read cut while the shared store is down says it is not on record yet; it is recorded once
    the store is back, so its text is not written back whole through either replica."""
    store = StateServer(state_server.kind)  # one of its own, to stop
    title = f"Store down read test {store.kind}"
    create(bot_server_for(wiki), title, big_section_page())
    env = replica_env(wiki, store, MCP_CONTENT_MAX_BYTES="1000")
    try:
        with http_servers((env, ("--stateless",)), (env, ("--stateless",))) as (one, two):
            store.stop()
            read = http_call(one.url, "get-page", title=title)["content"]
            store.start()
            body = next(block["text"] for block in read if block["text"].startswith("Title: "))
            revision = int(body.split("\n")[1][13:])
            refused = [http_call(url, "update-page", title=title, source=content_of(body), latestId=revision)
                       for url in (one.url, two.url)]
            logs = one.log
    finally:
        store.stop()
    assert [error_text(r) for r in refused] == [READ_CUT.format(revision=revision, what=repr(title))] * 2
    assert wiki.wikitext(title) == big_section_page() and STORE_PASSWORD not in logs
    assert read[0]["text"] == (f"Note: the state store {store.shown} cannot be reached, so this read is not on "
                               "record yet for the checks that keep a write from losing text; it is recorded once "
                               "the store is back, and writes are refused until then.")
    assert len(read) == 3 and read[2]["text"].startswith(
        f"Content truncated at {len(read[1]['text'].split(chr(10) * 2, 1)[1].encode())} of ")


@pytest.mark.redis
def test_with_the_store_stopped_writes_are_refused_reads_go_on_and_then_writes_work_again(
        wiki: RealWiki, state_server: StateServer) -> None:
    store = StateServer(state_server.kind)  # one of its own, to stop
    title = f"Store down test {store.kind}"
    create(bot_server_for(wiki), title, "Log:")
    before = revision_ids(wiki, title)
    append = {"title": title, "mode": "append", "source": "* after the outage", "idempotencyKey": "req-outage"}
    try:
        with http_servers((replica_env(wiki, store), ("--stateless",))) as (replica,):
            health = replica.url.replace("/mcp", "/health")
            assert requests.get(health, timeout=30).json() == {"status": "ok", "store": "ok"}
            store.stop()
            unkeyed = {k: v for k, v in append.items() if k != "idempotencyKey"}
            for arguments in (append, unkeyed,
                              {"title": title, "source": "Replaced.", "comment": "whole"}):
                refused = error_text(http_call(replica.url, "update-page", **arguments))
                assert refused == (f"upstream_failure: The state store {store.shown} cannot be reached "
                                   "(ConnectionError); nothing was written. Retry later; tell the user if it "
                                   "persists."), refused
            assert "An apple is a fruit." in tool_text(http_call(replica.url, "get-page", title="Apple"))
            down = HealthCheck(ServerState.from_config(Config.from_env(replica_env(wiki, store)))).probe()
            assert wiki.wikitext(title) == "Log:" and revision_ids(wiki, title) == before
            store.start()
            saved = tool_text(http_call(replica.url, "update-page", **append))
            repeat = tool_text(http_call(replica.url, "update-page", **append))
            log_text = replica.log
    finally:
        store.stop()
    assert saved.startswith("Saved.") and repeat.startswith("Repeat: ")
    assert wiki.wikitext(title) == "Log:\n* after the outage" and len(revision_ids(wiki, title)) == len(before) + 1
    assert down == (200, {"status": "degraded", "store": "unavailable"})  # reads go on: kept in rotation
    assert "Traceback" not in log_text and STORE_PASSWORD not in log_text


@pytest.mark.redis
def test_while_the_store_is_down_every_write_it_keeps_track_of_is_refused_alike(wiki: RealWiki) -> None:
    """With or without an idempotencyKey, as a dry run or not: each write tool gives the one refusal
    and writes nothing; once the store is back, they write again."""
    store = StateServer("valkey")  # one of its own, to stop
    title = f"Store down every tool {secrets.token_hex(4)}"
    talk = f"Talk:{title}"
    create(bot_server_for(wiki), title, "Text.\n\n[[Category:Kept]]")
    server = make_server(replica_env(wiki, store, MCP_TOOLSETS="all"))
    calls = [("create-page", {"title": f"{title} new", "source": "New."}),
             ("update-page", {"title": title, "mode": "append", "source": "More."}),
             ("update-page-categories", {"title": title, "add": ["Added"]}),
             ("update-page-categories", {"title": title, "add": ["Added"], "dryRun": True}),
             ("add-talk-topic", {"title": title, "heading": "Outage", "message": "Hello."}),
             ("move-page", {"fromTitle": title, "toTitle": f"{title} moved"}),
             ("delete-page", {"title": title, "confirm": True, "idempotencyKey": "outage-delete"}),
             ("protect-page", {"title": title, "edit": "sysop"})]
    before = revision_ids(wiki, title)
    try:
        store.stop()
        refused = {(name, json.dumps(args)): call(server, name, **args) for name, args in calls}
        read = call(server, "get-page", title=title)
        after = (revision_ids(wiki, title), wiki.wikitext(title), revision_ids(wiki, f"{title} new"),
                 revision_ids(wiki, talk))
        store.start()
        moved = call(server, "move-page", fromTitle=title, toTitle=f"{title} moved")
    finally:
        store.stop()
    expected = (f"upstream_failure: The state store {store.shown} cannot be reached (ConnectionError); nothing "
                "was written. Retry later; tell the user if it persists.")
    assert {key: result.text for key, result in refused.items()} == dict.fromkeys(refused, expected)
    assert not read.is_error and "Text." in read.text  # reads go on
    assert after == (before, "Text.\n\n[[Category:Kept]]", [], [])  # nothing written, nothing created
    assert not moved.is_error and moved.text.startswith("Moved."), moved.text


@pytest.mark.redis
def test_a_key_claimed_by_a_replica_that_died_is_a_conflict_never_a_second_write(
        state_server: StateServer) -> None:
    """Two replicas' idempotency stores over one real server: the second waits for the first's
    result while the first runs, and once the first is gone (its lease lapsed, as when its process
    is killed mid-write) answers conflict without running the call."""
    one, two = (IdempotencyStore(store=open_state_store(state_server.url)) for _ in range(2))
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def slow() -> list[str]:
        runs.append("one")
        started.set()
        release.wait(10)
        return ["saved once"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(one.run, "k-wait", "f", slow, "w")
        assert started.wait(10)
        second = pool.submit(two.run, "k-wait", "f", lambda: runs.append("two") or ["again"], "w")
        release.set()
        assert first.result(10) == (["saved once"], False) and second.result(10) == (["saved once"], True)
    died = open_state_store(state_server.url)  # a replica that claimed a key, then died before answering
    entry = ("w", "idempotency", "k-died")
    assert died.claim(entry, json.dumps({"fingerprint": "f"}), 3600)
    died._held.clear()  # its renewals stop with it ...
    state_server.client().delete(died.lease(entry))  # ... and its lease lapses
    with pytest.raises(WikiError, match="^conflict: The first call with idempotencyKey 'k-died' stopped "
                                          "before it finished"):
        two.run("k-died", "f", lambda: runs.append("two") or ["twice"], "w")
    assert runs == ["one"]
    keys = set(state_server.client().scan_iter("mediawiki-mcp:{w}:*"))
    assert {"mediawiki-mcp:{w}:idempotency:k-wait", "mediawiki-mcp:{w}:idempotency:k-died"} <= keys
    assert 3500 < state_server.client().ttl("mediawiki-mcp:{w}:idempotency:k-wait") <= 3600  # an hour


@pytest.mark.redis
def test_the_read_ledger_in_a_shared_store_works_as_in_memory(state_server: StateServer) -> None:
    shared, memory = ReadLedger(store=open_state_store(state_server.url)), ReadLedger()
    text = "Lead.\n== A ==\n" + "a" * 3000 + "\n== B ==\nb"
    wiki = f"ledger-{secrets.token_hex(4)}"
    for ledger in (shared, memory):
        ledger.of(wiki).record("P", None, 5, text, (0, 1000))
        ledger.of(wiki).saved("P", None, 5, 7, sent_whole=False)
        ledger.of(wiki).previewed("P", "find x", 7)
    unseen = [dataclasses.replace(ledger.of(wiki).unseen("P", None), order=0) for ledger in (shared, memory)]
    assert unseen[0] == unseen[1] and unseen[0].seen == 1000 and unseen[0].section_ends == {0: 6, 1: 3015, 2: 3024}
    for ledger in (shared, memory):
        assert (ledger.of(wiki).base("P", 1), ledger.of(wiki).preview("P", "find x")) == (7, (7, None))
    ttl = state_server.client().ttl(f"mediawiki-mcp:{{{wiki}}}:read:P|None")
    assert 24 * 3600 - 100 < ttl <= 24 * 3600


@pytest.mark.redis
def test_the_read_ledger_keeps_values_in_memory_and_the_wire_format_replicas_share_in_the_store(
        state_server: StateServer) -> None:
    """In memory the ledger keeps its entries as they are; in the shared store it writes them as
    replicas of other versions do, and reads what they wrote (a read kept before byte ranges were)."""
    wiki, text = f"wire-{secrets.token_hex(4)}", "Lead.\n== A ==\n" + "a" * 3000
    memory, shared = ReadLedger(), ReadLedger(store=open_state_store(state_server.url))
    for ledger in (memory, shared):
        ledger.of(wiki).record("P", None, 5, text, (0, 1000))
        ledger.of(wiki).previewed("P", "find x", 5)
    assert isinstance(memory.store.get((wiki, "read", "P|None")), PageRead)
    assert memory.store.get((wiki, "base", "P|None")).revid == 5
    store, prefix = state_server.client(), f"mediawiki-mcp:{{{wiki}}}:"
    revid, ranges, total, _, ends, last, starts = json.loads(store.get(prefix + "read:P|None"))
    assert (revid, ranges, total, ends, last, starts) == (5, [[0, 1000]], 3014, [[0, 6], [1, 3014]], [0, 0],
                                                          [[0, 0], [1, 6]])
    assert json.loads(store.get(prefix + "base:P|None"))[::2] == [5, False]
    assert json.loads(store.get(prefix + "ledger:"))["dropped"] is False
    assert [json.loads(store.get(key)) for key in store.scan_iter(prefix + "preview:*")] == [[5, None]]
    store.set(prefix + "read:Q|None", json.dumps([7, 10, 100, 1, [], [0, 0]]))
    assert shared.of(wiki).unseen("Q", None) == PageRead(7, [(0, 10)], 100, 1, {})


@pytest.mark.redis
def test_each_clients_read_ledger_is_its_own_and_bounded_in_memory_and_in_the_shared_store(
        state_server: StateServer) -> None:
    """What one client read vouches for none of another's writes; each client's ledger is bounded
    in entries and in bytes, its least recently written entries dropped first, in memory as in the
    shared store; once one was, a page it no longer holds counts as forgotten."""
    text = "Lead.\n== A ==\n" + "a" * 3000 + "\n== B ==\nb"
    wiki = f"clients-{secrets.token_hex(4)}"
    bounds = [{"capacity": 3}, {"capacity": 100, "max_bytes": 1000}]
    ledgers = [ReadLedger(store=store, **bound) for bound in bounds
               for store in (open_state_store(state_server.url), None)]
    for n, ledger in enumerate(ledgers):
        a, b = f"session:a{n}", f"session:b{n}"
        ledger.of(wiki, a).record("Cut", None, 5, text, (0, 1000))
        ledger.of(wiki, b).record("Cut", None, 5, text, (1000, 6000))  # b reads the rest, a does not
        assert ledger.of(wiki, a).unseen("Cut", None).ranges == [(0, 1000)]
        assert ledger.of(wiki, b).unseen("Cut", None).ranges == [(1000, len(text))]
        assert (ledger.of(wiki, a).base("Cut", None), ledger.of(wiki, "session:c").base("Cut", None)) == (5, None)
        for page in range(12):
            ledger.of(wiki, a).record(f"P{page}", None, 6, "Short.", (0, 1000))
        assert ledger.of(wiki, a).unseen("Cut", None) is None and ledger.of(wiki, a).forgotten("Cut", None), n
        assert not ledger.of(wiki, a).forgotten("P11", None) and ledger.of(wiki, a).base("P11", None) == 6
        assert ledger.of(wiki, b).unseen("Cut", None) is not None and not ledger.of(wiki, b).forgotten("Cut", None)
    kept = {key.split("|")[1] for key in state_server.client().scan_iter(f"mediawiki-mcp:{{{wiki}}}:read:session:a0|*")}
    assert kept == {"P9", "P10", "P11"}


@pytest.mark.redis
def test_clients_without_sessions_are_kept_under_a_hash_of_their_token_never_the_token(
        wiki: RealWiki, state_server: StateServer) -> None:
    """Over stateless HTTP the bearer token is all that tells callers apart; the shared store
    names their entries by its hash, and a write still needs latestId (one token, many clients)."""
    token = f"replica-token-{secrets.token_hex(8)}"
    title = f"Shared token caller test {state_server.kind}"
    create(bot_server_for(wiki), title, big_section_page())
    bearer = {"Authorization": f"Bearer {token}"}
    with http_servers((replica_env(wiki, state_server, MCP_AUTH_TOKEN=token), ("--stateless",))) as (replica,):
        def tools_call(tool: str, **arguments: Any) -> dict[str, Any]:
            return rpc_result(post_rpc(replica.url, "tools/call", {"name": tool, "arguments": arguments},
                                       headers=bearer))
        tools_call("get-page", title=title)
        refused = tools_call("update-page", title=title, source="Replaced.")
    assert error_text(refused).startswith("invalid_input: Nothing was saved: this server cannot tell its clients "
                                          "apart (HTTP without sessions)")
    keys = list(state_server.client().scan_iter("mediawiki-mcp:*"))
    hashed = hashlib.sha256(token.encode()).hexdigest()[:16]
    assert f"mediawiki-mcp:{{{wiki.key}}}:read:shared:{hashed}|{title}|None" in keys
    assert not [key for key in keys if token in key] and wiki.wikitext(title) == big_section_page()


@pytest.mark.redis
def test_a_person_is_one_client_across_replicas_and_two_people_are_two(
        wiki: RealWiki, state_server: StateServer, tmp_path: Path) -> None:
    """Through two stateless replicas sharing a store, a person's reads vouch for their own whole-page
    write whichever replica served them (without sessions, a shared token could not: it needs
    latestId), and never for another person's; each edit is signed by its person."""
    title = f"People replicas test {state_server.kind} {secrets.token_hex(4)}"
    create(bot_server_for(wiki), title, big_section_page())
    env, admin, member = people_file(tmp_path / "people.json", wiki, wiki.key)
    replica = replica_env(wiki, state_server, MCP_CONTENT_MAX_BYTES="1000", MCP_AUTH_TOKENS=str(tmp_path / "people.json"),
                          MEDIAWIKI_USERNAME=wiki.editor_user, MEDIAWIKI_PASSWORD=wiki.editor_password, **env)

    def call_as(token: str, server: HttpServer, tool: str, **arguments: Any) -> dict[str, Any]:
        return rpc_result(post_rpc(server.url, "tools/call", {"name": tool, "arguments": arguments},
                                   headers={"Authorization": f"Bearer {token}"}))
    with http_servers(*[(replica, ("--stateless",))] * 2) as (one, two):
        seen = content_of(tool_text(call_as(member, one, "get-page", title=title)))
        for offset in range(500, 5000, 500):
            call_as(admin, two, "get-page", title=title, offset=offset)
        refused = call_as(member, one, "update-page", title=title, source=seen)
        tool_text(call_as(admin, one, "get-page", title=title))  # the rest of what Admin read on the other
        saved = call_as(admin, one, "update-page", title=title, source=big_section_page() + "\nMore by Admin.")
    logs = one.log + two.log  # once they stopped: a write's log line may follow its answer
    assert re.match(rf"invalid_input: Nothing was saved: Page {re.escape(repr(title))} was not read whole",
                    error_text(refused))
    assert tool_text(saved).startswith("Saved."), saved
    assert wiki.wikitext(title) == big_section_page() + "\nMore by Admin."
    assert revision_users(wiki, title)[0] == "Admin" and "Editor" not in revision_users(wiki, title)
    assert f"write by 'Member': update-page on {wiki.key}, page {title!r}: invalid_input" in logs
    assert f"write by 'Admin': update-page on {wiki.key}, page {title!r}: done" in logs
    for secret in (admin, member, wiki.plain_password, wiki.bot_password, wiki.editor_password):
        assert secret not in logs


def test_the_state_store_setting_is_checked_and_its_password_never_shown(tmp_path: Path) -> None:
    for value in ("http://cache:6379", "cache:6379", "redis://", "redis://:pw@cache:99999"):
        with pytest.raises(ConfigError, match="MCP_STATE_URL takes a redis:// or rediss:// address") as caught:
            Config.from_env({"MCP_STATE_URL": value})
        assert "pw" not in str(caught.value)
    config = Config.from_env({"MCP_STATE_URL": "rediss://app:pw@cache.internal:6380/2?password=pw"})
    assert config.state_url and "pw" not in repr(config)
    assert shown_address(config.state_url) == "rediss://app@cache.internal:6380/2"
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"wikis": {"a.example": {"server": "https://a.example"}},
                                "stateUrl": "redis://:${STORE_PW}@cache:6379/0"}))
    assert Config.from_env({"STORE_PW": "p@ss"}, str(path)).state_url == "redis://:p%40ss@cache:6379/0"
    with pytest.raises(ConfigError, match=r"stateUrl refers to \$\{STORE_PW\}, which is not set"):
        Config.from_env({}, str(path))
    assert ServerState.from_config(Config.from_env({})).reads.store.name == "memory"  # without it


def test_a_malformed_store_option_or_database_stops_the_server_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in [n for n in os.environ if n.startswith(("MEDIAWIKI_", "MCP_")) or n == "CONFIG"]:
        monkeypatch.delenv(name)
    for value, said in (("redis://:pw@127.0.0.1:1/0?socket_timeout=abc",
                         "the option 'socket_timeout' of the address must be a number"),
                        ("redis://:pw@127.0.0.1:1/abc", "the database, the path after the host, must be a number such as /0"),
                        ("redis://:pw@127.0.0.1:1/0?db=x", "the option 'db' of the address must be a whole number")):
        monkeypatch.setenv("MCP_STATE_URL", value)
        assert main([]) == 2
        err = capsys.readouterr().err
        assert err == f"mediawiki-mcp: MCP_STATE_URL: {said} (the value given is not shown: it may hold a password)\n"


def test_a_store_password_in_the_user_position_is_never_shown(wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    secret = "S3cretStorePw"
    server = make_server(wiki.env(MCP_STATE_URL=f"redis://{secret}@127.0.0.1:1/0"))
    assert server.state.reads.store.name == "redis://127.0.0.1:1/0"
    with caplog.at_level(logging.WARNING):
        read = call(server, "get-page", title=RIVER_ARTICLE)
        refused = call(server, "create-page", title="Store password hidden test", source="Never saved.")
    assert not read.is_error and refused.is_error, refused.text
    assert refused.blocks[0].startswith("upstream_failure: The state store redis://127.0.0.1:1/0 cannot be reached")
    assert secret not in refused.text and secret not in caplog.text and "redis://127.0.0.1:1/0" in caplog.text
    assert shown_address("redis://app:pw@cache:6379/0?password=pw") == "redis://app@cache:6379/0"


@pytest.mark.redis
def test_a_person_signed_in_through_one_replica_is_let_in_by_the_other(
        wiki: RealWiki, state_server: StateServer) -> None:
    import redis
    env = {**login_env(wiki), "MCP_STATE_URL": state_server.url}
    with http_servers((env, ("--stateless",)), (env, ("--stateless",))) as (one, other):
        storage = TokenMemory()
        [read] = signed_in_calls(one.url, Browser(wiki.editor_user, wiki.editor_password),
                                 [("get-page", {"title": RIVER_ARTICLE})], storage)
        assert not read.is_error, read.text
        arguments = {"name": "get-page", "arguments": {"title": RIVER_ARTICLE}}
        token = storage.tokens.access_token
        answer = post_rpc(other.url, "tools/call", arguments, headers={"Authorization": f"Bearer {token}"})
        assert "The '''Rhine'''" in tool_text(rpc_result(answer))
        assert post_rpc(other.url, "tools/call", arguments).status_code == 401
        logs = one.log + other.log
    store = redis.Redis.from_url(state_server.url, decode_responses=True)
    values = "\n".join(str(store.get(key)) for key in store.keys("mediawiki-mcp:{sign-in}:*"))
    assert '"username": "Editor@mcp"' in values  # the account is there, its password encrypted
    for secret in (wiki.editor_password, token, storage.tokens.refresh_token):
        assert secret not in values and secret not in logs


@pytest.mark.redis
def test_the_sign_in_command_lists_who_is_signed_in_and_revoking_one_makes_their_tokens_fail(
        wiki: RealWiki, state_server: StateServer) -> None:
    """mediawiki-mcp sign-in list names each person signed in through a running server (wiki, account,
    when, live tokens; no secret), and sign-in revoke WIKI:USER signs them out there: their access
    token is 401, their refresh token refused. Neither needs MCP_AUTH_SECRET, as neither decrypts a
    bot password. Without MCP_STATE_URL it says why it cannot see them."""
    import redis
    url = state_server.url.rpartition("/")[0] + "/7"  # a database of its own: other tests sign Editor in too
    redis.Redis.from_url(url).flushdb()
    served = {**login_env(wiki), "MCP_STATE_URL": url}
    env = {name: value for name, value in served.items() if name != "MCP_AUTH_SECRET"}  # the commands'
    person = f"{wiki.key}:Editor"
    with http_servers((served, ())) as [server]:
        app = OAuthApp.register(server.url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        assert initialize_status(server.url, tokens["access_token"]) == 200
        listed = run_script("sign-in", "list", env=env)
        assert listed.returncode == 0, listed.stderr
        header, row = listed.stdout.splitlines()
        assert header.split() == ["PERSON", "WIKI", "ACCOUNT", "SIGNED", "IN", "LIVE", "TOKENS"]
        assert row.split()[:3] == [person, wiki.key, wiki.editor_user] and row.split()[-1] == "1", row
        assert re.search(r" \d{4}-\d\d-\d\d \d\d:\d\d UTC ", row), row
        revoked = run_script("sign-in", "revoke", person, env=env)
        assert revoked.returncode == 0 and f"Signed out {person}: every token of theirs is revoked" in revoked.stdout
        assert initialize_status(server.url, tokens["access_token"]) == 401
        assert app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]).status_code == 400
        assert run_script("sign-in", "list", env=env).stdout == "No one is signed in.\n"
        again = run_script("sign-in", "revoke", person, env=env)
        assert again.returncode == 1 and f"No one is signed in as {person}" in again.stdout
    for secret in (wiki.editor_password, tokens["access_token"], tokens["refresh_token"], url):
        assert secret not in listed.stdout + listed.stderr + revoked.stdout + revoked.stderr
    alone = run_script("sign-in", "list", env=login_env(wiki))
    assert alone.returncode == 2 and "MCP_STATE_URL, which is not set" in alone.stderr


@pytest.mark.wiki
@pytest.mark.redis
def test_the_sign_in_command_shows_bidi_controls_in_names_escaped_and_revokes_by_what_it_shows(
        wiki: RealWiki, state_server: StateServer) -> None:
    """A user name with U+2067 (kept by MediaWiki) signed in as typed with U+202E before it (stripped
    by MediaWiki as it logs in): sign-in list shows both escaped, so that no name reorders the
    operator's table, and sign-in revoke takes the person as the list shows them."""
    import redis
    user, app, password = "Iso\u2067late", "app" + secrets.token_hex(3), secrets.token_hex(16)
    php(wiki.directory, "maintenance/createAndPromote.php", "--force", user, "Pw-" + secrets.token_hex(12))
    php(wiki.directory, "maintenance/createBotPassword.php", f"--appid={app}", "--grants=basic", user, password)
    url = state_server.url.rpartition("/")[0] + "/8"  # a database of its own, to list this person alone
    redis.Redis.from_url(url).flushdb()
    env = {**login_env(wiki), "MCP_STATE_URL": url}
    with login_server(env) as (_, mcp):
        tokens = OAuthApp.register(mcp).tokens(Browser(f"\u202e{user}@{app}", password))
        listed = run_script("sign-in", "list", env=env)
        assert listed.returncode == 0, listed.stderr
        shown = f"{wiki.key}:Iso\\u2067late"
        assert listed.stdout.splitlines()[1].split()[:3] == [shown, wiki.key, f"\\u202eIso\\u2067late@{app}"], listed
        assert "\u2067" not in listed.stdout and "\u202e" not in listed.stdout
        revoked = run_script("sign-in", "revoke", shown, env=env)
        assert revoked.returncode == 0 and f"Signed out {shown}: every token" in revoked.stdout, revoked
        assert initialize_status(mcp, tokens["access_token"]) == 401


@pytest.mark.redis
def test_replicas_with_different_keys_refuse_each_others_sign_ins_and_a_refresh_moves_them_to_the_new_key(
        wiki: RealWiki, state_server: StateServer) -> None:
    """Replica 1 has the key K1, replica 2 K2, on one store: a person signed in through 1 is refused
    by 2 (401: sign in again), never served as its configured account, Admin. Rotating: a replica
    with "K2,K1" refreshes their tokens, which then hold the password encrypted with K2, so a
    replica with K2 alone serves them as themselves."""
    from cryptography.fernet import Fernet
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    title = f"Other key {state_server.kind} {secrets.token_hex(4)}"

    def replica(keys: str) -> Any:
        return login_server(admin_login_env(wiki, MCP_STATE_URL=state_server.url, MCP_AUTH_SECRET=keys))
    with replica(old) as (_, one), replica(new) as (_, two), replica(f"{new},{old}") as (_, both):
        app = OAuthApp.register(one)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        assert "User: Editor" in tool_text(PersonSession(one, tokens["access_token"]).call("whoami"))
        assert initialize_status(two, tokens["access_token"]) == 401
        assert mcp_status(two, tokens["access_token"], "create-page", title=title, source="Not to be saved.") == 401
        rotated = OAuthApp(both.removesuffix("/mcp"), app.client_id, app.client_secret).token(
            grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        token = rotated.json()["access_token"]
        assert "User: Editor" in tool_text(PersonSession(two, token).call("whoami"))
        assert initialize_status(one, token) == 401  # encrypted with the new key, which one lacks
        stranded = app.token(grant_type="refresh_token", refresh_token=rotated.json()["refresh_token"])
        assert stranded.status_code == 400 and stranded.json()["error"] == "invalid_grant", stranded.text
    assert revision_ids(wiki, title) == []


@pytest.mark.redis
def test_two_replicas_exchanging_one_refresh_token_at_once_give_tokens_once(
        wiki: RealWiki, state_server: StateServer) -> None:
    """Then the person's key is deleted from the store, as an eviction would: they are refused."""
    env = admin_login_env(wiki, MCP_STATE_URL=state_server.url)
    with login_server(env) as (one, url), login_server(env) as (two, other_url):
        app = OAuthApp.register(url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        replicas = [sign_ins_of(one, env, url), sign_ins_of(two, env, other_url)]
        answers = anyio.run(exchanged_at_once, replicas, app.client_id, tokens["refresh_token"])
        given = [answer for answer in answers if isinstance(answer, OAuthToken)]
        refused = [answer for answer in answers if isinstance(answer, TokenError)]
        assert len(given) == 1 and [error.error for error in refused] == ["invalid_grant"], answers
        assert initialize_status(other_url, given[0].access_token) == 200
        # the person's key evicted or deleted from the store: their tokens are refused, on every replica
        assert state_server.client().delete(f"mediawiki-mcp:{{sign-in}}:person:{wiki.key}:Editor") == 1
        for replica in (url, other_url):
            assert initialize_status(replica, given[0].access_token) == 401


@pytest.mark.redis
def test_a_person_signs_in_and_refreshes_through_a_redis_without_getdel(wiki: RealWiki) -> None:
    """Redis has GETDEL from 6.2 only; 6.0 is still many systems' own (Debian 11, Ubuntu 22.04). On a
    Redis without it (renamed away here, as it is missing there) a code and a refresh token still work
    once each, where every exchange answered 503 'cannot be reached' and no one could sign in."""
    store = StateServer("redis", "--rename-command", "GETDEL", "")
    try:
        with login_server(login_env(wiki, MCP_STATE_URL=store.url)) as (_, url):
            app, (verifier, challenge) = OAuthApp.register(url), pkce()
            code = app.code(Browser(wiki.editor_user, wiki.editor_password), challenge)
            exchanges = [app.token(grant_type="authorization_code", code=code, code_verifier=verifier,
                                   redirect_uri=CALLBACK) for _ in range(2)]
            assert exchanges[0].status_code == 200, exchanges[0].text
            assert exchanges[1].status_code == 400 and exchanges[1].json()["error"] == "invalid_grant"
            refresh = exchanges[0].json()["refresh_token"]
            renewed, again = (app.token(grant_type="refresh_token", refresh_token=refresh) for _ in range(2))
            assert renewed.status_code == 200 and again.status_code == 400, (renewed.text, again.text)
            assert "User: Editor" in tool_text(PersonSession(url, renewed.json()["access_token"]).call("whoami"))
    finally:
        store.stop()


@pytest.mark.redis
def test_while_the_store_is_down_the_sign_in_page_says_so_and_signs_no_one_in(wiki: RealWiki) -> None:
    store = StateServer("valkey")  # one of its own, to stop
    try:
        with login_server(login_env(wiki, MCP_STATE_URL=store.url)) as (_, url):
            app = OAuthApp.register(url)
            link = requests.get(app.authorize_url(pkce()[1]), allow_redirects=False, timeout=30).headers["location"]
            store.stop()
            page = requests.get(link, timeout=30)
            assert page.status_code == 503 and "cannot be reached" in page.text, page.text
            assert STORE_PASSWORD not in page.text
    finally:
        store.stop()


@pytest.mark.redis
def test_a_store_that_fails_while_the_sign_in_form_is_checked_is_counted_once_as_store_down(wiki: RealWiki) -> None:
    """The store answers reads but refuses writes (its ACL) once the form was sent, so the check of
    the password reads it and the sign-in's first write fails: the person sees the store-down page,
    and /metrics counts the sign-in once, as store_down, not also as upstream_failure."""
    import redis
    store = StateServer("redis")
    try:
        with login_server(login_env(wiki, MCP_STATE_URL=store.url)) as (_, url):
            admin = redis.Redis.from_url(store.url)

            def refusing_writes(fields: dict[str, str]) -> dict[str, str]:
                admin.execute_command("ACL", "SETUSER", "default", "-@write")
                return fields
            browser = Browser(wiki.editor_user, wiki.editor_password, refusing_writes)
            try:
                assert browser.sign_in(OAuthApp.register(url).authorize_url(pkce()[1])) == ""
            finally:
                admin.execute_command("ACL", "SETUSER", "default", "+@all")
            assert browser.pages[-1].status_code == 503, browser.pages[-1].text
            counted = {labels: value for (name, labels), value in metric_values(url).items()
                       if name == "mediawiki_mcp_sign_ins_total"}
            assert counted == {(("outcome", "store_down"),): 1}, counted
    finally:
        store.stop()


@pytest.mark.redis
def test_while_the_store_is_stopped_or_gone_every_sign_in_endpoint_answers_503_and_the_log_says_so_once(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    """A store that stops answering (SIGSTOP: every request times out) and one that is gone
    (connection refused): /mcp and the OAuth endpoints answer 503 with a JSON error and
    Retry-After, and the log has one WARNING per outage, no traceback, and a line when it is back."""
    store = StateServer("redis")  # one of its own, to stop
    try:
        with caplog.at_level(logging.INFO), login_server(login_env(wiki, MCP_STATE_URL=store.url)) as (_, url):
            app = OAuthApp.register(url)
            tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
            bearer = {"Authorization": f"Bearer {tokens['access_token']}"}

            def answers() -> dict[str, requests.Response]:
                return {"/mcp": post_rpc(url, "initialize", INIT_PARAMS, headers=bearer),
                        "/register": register_client(url),
                        "/authorize": requests.get(app.authorize_url(pkce()[1]), allow_redirects=False, timeout=60),
                        "/token": app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]),
                        "/revoke": requests.post(app.base + "/revoke", timeout=60, data={
                            "token": tokens["refresh_token"], "client_id": app.client_id,
                            "client_secret": app.client_secret}),
                        "/sign-out": requests.post(app.base + SIGN_OUT_PATH, headers=bearer, timeout=60)}

            def outage(cause: str) -> None:
                for path, answer in answers().items():
                    assert answer.status_code == 503, (path, answer.status_code, answer.text)
                    assert answer.json()["error"] == "temporarily_unavailable", (path, answer.text)
                    assert f"The state store {store.shown} cannot be reached" in answer.json()["error_description"]
                    assert int(answer.headers["Retry-After"]) > 0 and STORE_PASSWORD not in answer.text
                warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
                assert len(warned) == 1 and warned[0].startswith(f"state store {store.shown} cannot be reached: "
                                                                 f"{cause}"), warned
                assert not any(r.exc_info for r in caplog.records) and "Traceback" not in caplog.text

            caplog.clear()
            os.killpg(store.process.pid, signal.SIGSTOP)
            try:
                outage("Timeout")
            finally:
                os.killpg(store.process.pid, signal.SIGCONT)
            assert initialize_status(url, tokens["access_token"]) == 200
            assert f"state store {store.shown} is reached again" in caplog.messages
            caplog.clear()
            store.stop()
            outage("Error 111 connecting")
            # each of them counted in /metrics, which needs no store
            assert metric_values(url)[("mediawiki_mcp_refused_requests_total", (("reason", "store_down"),))] == 12
    finally:
        store.stop()

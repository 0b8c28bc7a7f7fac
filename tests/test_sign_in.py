"""Tests: Sign-in over HTTP (MCP_AUTH=login): the MCP authorization flow."""
from __future__ import annotations

import html
import http.server
import json
import logging
import re
import secrets
import time
import unicodedata
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import requests
from mcp.server.auth.provider import TokenError
from mcp.shared.auth import OAuthToken

from mediawiki_mcp.cli import argument_parser
from mediawiki_mcp.http import http_options, http_warnings
from mediawiki_mcp.login_forms import (
    CLIENT_NAME_MAX_CHARS,
    CLIENT_UNUSED_SECONDS,
    REGISTRATIONS_PER_ADDRESS,
    SIGN_IN_FAILURES_PER_ADDRESS,
    SIGN_IN_FAILURES_PER_NAME,
    SIGN_IN_FAILURES_PER_NAME_EVERYWHERE,
    SIGN_IN_PATH,
    SIGN_IN_SPACE,
    SIGN_OUT_PATH,
    csrf_cookie,
    secret_hash,
)
from mediawiki_mcp.settings import ConfigError
from mediawiki_mcp.store import UNUSED_CLIENT
from realwiki import (
    BOT_GRANTS,
    RIVER_ARTICLE,
    RealWiki,
    php,
)
from tests.support import (
    CALLBACK,
    INIT_PARAMS,
    Browser,
    OAuthApp,
    PersonSession,
    TokenMemory,
    admin_login_env,
    config_env,
    error_text,
    exchanged_at_once,
    form_fields,
    http_servers,
    initialize_status,
    latest_revision,
    login_env,
    login_server,
    mcp_status,
    metric_values,
    on_every_version,
    pkce,
    post_rpc,
    register_client,
    revision_ids,
    revision_users,
    rpc_result,
    run_script,
    serve_locally,
    sign_ins_of,
    signed_in_calls,
    tool_text,
    two_wiki_config,
)


def stored_values(server: Any) -> str:
    """Everything the server keeps in its (in-memory) state store, as one text."""
    store = server.state.reads.store
    return "\n".join(f"{key} {value}" for kind in store._kinds.values() for key, (value, _) in kind.items())


def issued(server: Any, kind: str) -> list[str]:
    """What the server holds of a kind of the sign-in's entries (code, access, refresh, person, request)."""
    store = server.state.reads.store
    return [key[2] for key in store._kinds[kind] if key[0] == SIGN_IN_SPACE and store.get(key)]


@on_every_version
def test_two_people_sign_in_with_the_sdks_oauth_client_and_their_calls_work(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with login_server(login_env(wiki)) as (server, url):
        for user, password in ((wiki.bot_user, wiki.bot_password), (wiki.editor_user, wiki.editor_password)):
            browser, storage = Browser(user, password), TokenMemory()
            [read, who] = signed_in_calls(url, browser, [("get-page", {"title": RIVER_ARTICLE}), ("whoami", {})],
                                          storage)
            assert not read.is_error and "Rhine" in read.text, read.text
            assert f"User: {user.split('@')[0]}\n" in who.text, who.text  # logged in with their bot password
            form = browser.pages[0].text
            site = wiki.raw_get(action="query", meta="siteinfo")["query"]["general"]["sitename"]
            assert f"Sign in to {site}" in form and wiki.url in form and url.removesuffix("/mcp") in form
            assert re.search(r'class="consent"><b>Test client</b>.*?<b>127\.0\.0\.1:8976</b>', form, re.DOTALL), form
            assert "Special:BotPasswords" in form and "Edit existing pages" in form
            assert browser.pages[0].headers["X-Frame-Options"] == "DENY"  # in no other site's frame
            assert browser.pages[1].status_code == 303
            secrets_given = (password, storage.tokens.access_token, storage.tokens.refresh_token)
            assert not any(secret in stored_values(server) for secret in secrets_given)
            assert not any(secret in caplog.text for secret in secrets_given)
        health = requests.get(url.removesuffix("/mcp") + "/health", timeout=30)
        assert health.status_code == 200 and "token" not in health.text.lower()


def test_mcp_with_a_trailing_slash_is_sent_on_to_mcp_with_sign_in_as_without() -> None:
    from cryptography.fernet import Fernet
    env = {"MEDIAWIKI_URL": "http://127.0.0.1:9/w/api.php", "MCP_AUTH": "login",
           "MCP_AUTH_SECRET": Fernet.generate_key().decode()}
    with login_server(env) as (_, url):
        moved = post_rpc(url + "/", "initialize", INIT_PARAMS)  # requests follows a 307 with the same POST
        assert [(r.status_code, r.headers["Location"]) for r in moved.history] == [(307, url)]
        assert moved.status_code == 401 and "resource_metadata=" in moved.headers["WWW-Authenticate"]


def test_without_a_token_of_this_server_mcp_answers_401_naming_where_to_sign_in(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url), login_server(login_env(wiki)) as (_, other_url):
        base = url.removesuffix("/mcp")
        bare = post_rpc(url, "initialize", INIT_PARAMS)
        assert bare.status_code == 401
        metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        assert f'resource_metadata="{metadata_url}"' in bare.headers["WWW-Authenticate"]
        resource = requests.get(metadata_url, timeout=30).json()
        assert resource["resource"] == url and resource["authorization_servers"] == [base + "/"]
        issuer = requests.get(base + "/.well-known/oauth-authorization-server", timeout=30).json()
        assert issuer["code_challenge_methods_supported"] == ["S256"]
        assert (issuer["registration_endpoint"], issuer["revocation_endpoint"]) == (base + "/register",
                                                                                     base + "/revoke")
        assert initialize_status(url, secrets.token_urlsafe(32)) == 401
        app = OAuthApp.register(url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        assert initialize_status(url, tokens["access_token"]) == 200
        assert initialize_status(other_url, tokens["access_token"]) == 401  # another server's token
        # Expired: the entry as the store holds it an hour on, when its time has passed.
        store = server.state.reads.store
        key = (SIGN_IN_SPACE, "access", secret_hash(tokens["access_token"]))
        entry = json.loads(store.get(key))
        store.put(key, json.dumps({**entry, "expires_at": time.time() - 1}), 60)
        assert initialize_status(url, tokens["access_token"]) == 401
        # Revoked by the client: the access token and its refresh token stop working.
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        revoked = requests.post(base + "/revoke", data={"token": tokens["access_token"], "client_id": app.client_id,
                                                        "client_secret": app.client_secret}, timeout=30)
        assert revoked.status_code == 200, revoked.text
        assert initialize_status(url, tokens["access_token"]) == 401
        refreshed = app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
        assert requests.get(base + "/health", timeout=30).status_code == 200  # open to load balancers


def test_an_access_token_stops_at_the_end_of_its_own_lifetime_while_its_refresh_token_goes_on(wiki: RealWiki) -> None:
    with login_server(admin_login_env(wiki, MCP_ACCESS_TOKEN_SECONDS="2")) as (_, url):
        app = OAuthApp.register(url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        assert tokens["expires_in"] == 2  # not tried at once: on a busy machine its 2 s may have passed
        deadline = time.monotonic() + 30
        while initialize_status(url, tokens["access_token"]) == 200:  # polling for the 2 s to pass
            assert time.monotonic() < deadline, "the access token still works long after its lifetime"
            time.sleep(0.2)
        assert initialize_status(url, tokens["access_token"]) == 401
        renewed = app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert renewed.status_code == 200, renewed.text
        session = PersonSession(url, renewed.json()["access_token"])
        assert "User: Editor" in tool_text(session.call("whoami"))


def test_a_token_whose_person_the_store_lost_is_refused_never_served_as_the_configured_account(
        wiki: RealWiki) -> None:
    """The person's record deleted (or evicted) from the store: their tokens are 401, so the client
    signs in again; nothing is done through the configured account, an administrator."""
    title = f"Lost person {secrets.token_hex(4)}"
    with login_server(admin_login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        session = PersonSession(url, tokens["access_token"])
        assert "User: Editor" in tool_text(session.call("whoami"))
        server.state.reads.store.forget((SIGN_IN_SPACE, "person", f"{wiki.key}:Editor"))
        assert mcp_status(url, tokens["access_token"], "create-page", session.session, title=title,
                          source="Not to be saved.") == 401
        refused, unknown = (post_rpc(url, "initialize", INIT_PARAMS, headers={"Authorization": f"Bearer {token}"})
                            for token in (tokens["access_token"], secrets.token_urlsafe(32)))
        assert refused.status_code == unknown.status_code == 401  # as for an unknown token: sign in again
        assert refused.headers["WWW-Authenticate"] == unknown.headers["WWW-Authenticate"]
        assert "resource_metadata=" in refused.headers["WWW-Authenticate"]
        refreshed = app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"])
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text
        again = PersonSession(url, app.tokens(Browser(wiki.editor_user, wiki.editor_password))["access_token"])
        assert "User: Editor" in tool_text(again.call("whoami"))  # signed in again, they act as themselves
        assert initialize_status(url, tokens["access_token"]) == 401  # and the old token stays refused
    assert revision_ids(wiki, title) == []


def test_a_token_kept_as_an_older_server_kept_it_is_refused(wiki: RealWiki) -> None:
    """A token and person record in the shape an older version stored them (the account with the
    person, no epoch): after an upgrade it is 401, as any token whose account cannot be used."""
    from cryptography.fernet import Fernet
    env = admin_login_env(wiki)
    token, refresh, person = secrets.token_urlsafe(32), secrets.token_urlsafe(32), f"{wiki.key}:Editor"
    grant = {"client_id": "old", "scopes": [], "resource": None, "subject": person}
    with login_server(env) as (server, url):
        store = server.state.reads.store
        store.put((SIGN_IN_SPACE, "person", person), json.dumps({
            "name": "Editor", "wiki": wiki.key, "username": wiki.editor_user,
            "password": Fernet(env["MCP_AUTH_SECRET"]).encrypt(wiki.editor_password.encode()).decode()}), 600)
        store.put((SIGN_IN_SPACE, "access", secret_hash(token)), json.dumps({
            **grant, "expires_at": time.time() + 600, "refresh": secret_hash(refresh)}), 600)
        assert initialize_status(url, token) == 401


def test_sign_out_revokes_every_token_of_the_person_and_forgets_their_password(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        first, second = (app.tokens(Browser(wiki.editor_user, wiki.editor_password)) for _ in range(2))
        other = app.tokens(Browser(wiki.bot_user, wiki.bot_password))
        assert "User: Editor\n" in tool_text(PersonSession(url, first["access_token"]).call("whoami"))
        [(_, client)] = server.state.people._clients.values()  # the client that call logged in as them
        session = client.session_for(wiki.api).cookies.copy()  # the person's wiki session, as a browser has it
        assert requests.post(url.removesuffix("/mcp") + SIGN_OUT_PATH, timeout=30).status_code == 401
        out = requests.post(url.removesuffix("/mcp") + SIGN_OUT_PATH, timeout=30,
                            headers={"Authorization": f"Bearer {first['access_token']}"})
        assert out.status_code == 200 and out.json() == {"signedOut": True}
        for tokens in (first, second):
            assert initialize_status(url, tokens["access_token"]) == 401
            assert app.token(grant_type="refresh_token", refresh_token=tokens["refresh_token"]).status_code == 400
        assert initialize_status(url, other["access_token"]) == 200  # someone else stays signed in
        ended = requests.get(wiki.api, params={"action": "query", "meta": "userinfo", "format": "json"},
                             cookies=session, timeout=30).json()["query"]["userinfo"]
        assert "anon" in ended, ended
        assert [person.rpartition(":")[2] for person in issued(server, "person")] == ["Admin"]


def test_sign_out_after_many_refreshes_of_one_client_revokes_the_tokens_of_every_other(wiki: RealWiki) -> None:
    """One client of the person refreshes 105 times and signs out: their other client's tokens stop
    too, and stay stopped after the person signs in again."""
    with login_server(admin_login_env(wiki)) as (_, url):
        app = OAuthApp.register(url)
        other, busy = (app.tokens(Browser(wiki.editor_user, wiki.editor_password)) for _ in range(2))
        for _ in range(105):
            answer = app.token(grant_type="refresh_token", refresh_token=busy["refresh_token"])
            assert answer.status_code == 200, answer.text
            busy = answer.json()
        out = requests.post(url.removesuffix("/mcp") + SIGN_OUT_PATH, timeout=30,
                            headers={"Authorization": f"Bearer {busy['access_token']}"})
        assert out.status_code == 200 and out.json() == {"signedOut": True}
        for tokens in (other, busy):
            assert initialize_status(url, tokens["access_token"]) == 401
        refreshed = app.token(grant_type="refresh_token", refresh_token=other["refresh_token"])
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text
        app.tokens(Browser(wiki.editor_user, wiki.editor_password))  # signed in again
        refreshed = app.token(grant_type="refresh_token", refresh_token=other["refresh_token"])
        assert refreshed.status_code == 400 and initialize_status(url, other["access_token"]) == 401


def test_a_code_works_once_with_its_verifier_and_a_refresh_token_once(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        verifier, challenge = pkce()
        code = app.code(Browser(wiki.editor_user, wiki.editor_password), challenge)
        wrong = app.token(grant_type="authorization_code", code=code, code_verifier=pkce()[0],
                          redirect_uri=CALLBACK)
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant", wrong.text
        assert all(not issued(server, kind) for kind in ("access", "refresh"))
        right = app.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=CALLBACK)
        assert right.status_code == 200, right.text
        again = app.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=CALLBACK)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant", again.text
        assert len(issued(server, "access")) == 1
        refresh = right.json()["refresh_token"]
        renewed = app.token(grant_type="refresh_token", refresh_token=refresh)
        assert renewed.status_code == 200, renewed.text
        assert initialize_status(url, renewed.json()["access_token"]) == 200
        assert initialize_status(url, right.json()["access_token"]) == 401  # the old pair is gone
        reused = app.token(grant_type="refresh_token", refresh_token=refresh)
        assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant", reused.text


def test_two_exchanges_of_one_refresh_token_at_once_give_tokens_once(wiki: RealWiki) -> None:
    env = admin_login_env(wiki)
    with login_server(env) as (server, url):
        app = OAuthApp.register(url)
        tokens = app.tokens(Browser(wiki.editor_user, wiki.editor_password))
        sign_ins = sign_ins_of(server, env, url)
        answers = anyio.run(exchanged_at_once, [sign_ins, sign_ins], app.client_id, tokens["refresh_token"])
        given = [answer for answer in answers if isinstance(answer, OAuthToken)]
        refused = [answer for answer in answers if isinstance(answer, TokenError)]
        assert len(given) == 1 and [error.error for error in refused] == ["invalid_grant"], answers
        assert initialize_status(url, given[0].access_token) == 200


def test_a_redirect_uri_must_be_registered_but_a_loopback_one_may_change_its_port(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        verifier, challenge = pkce()
        for unregistered in ("http://attacker.example/callback", "http://127.0.0.1:8976/elsewhere",
                             "https://127.0.0.1:8976/callback"):
            refused = requests.get(app.authorize_url(challenge, unregistered), allow_redirects=False, timeout=30)
            assert refused.status_code == 400 and "not registered" in refused.text, refused.text
        assert not issued(server, "request")
        elsewhere = requests.get(app.authorize_url(challenge) + "&resource=https%3A%2F%2Fother.example%2Fmcp",
                                 allow_redirects=False, timeout=30)
        assert "error=invalid_target" in elsewhere.headers["location"] and not issued(server, "request")
        other_port = "http://127.0.0.1:9123/callback"
        code = app.code(Browser(wiki.editor_user, wiki.editor_password), challenge, other_port)
        answer = app.token(grant_type="authorization_code", code=code, code_verifier=verifier, redirect_uri=other_port)
        assert answer.status_code == 200, answer.text


def test_a_registration_too_large_to_keep_is_refused_and_leaves_the_store_as_it_was(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        before = stored_values(server)
        for metadata, said in (({"client_name": "x" * 4_000_000}, "larger than 16384 bytes"),
                               ({"client_name": "x" * (CLIENT_NAME_MAX_CHARS + 1)}, "client_name is longer"),
                               ({"redirect_uris": [f"{CALLBACK}/{i}" for i in range(11)]}, "redirect_uris lists more"),
                               ({"contacts": ["a@example.org"] * 11}, "contacts lists more"),
                               ({"client_uri": "https://app.example/" + "a" * 2000}, "client_uri is longer")):
            refused = register_client(url, **metadata)
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"] == "invalid_client_metadata" and said in refused.json()["error_description"]
        chunked = requests.post(url.removesuffix("/mcp") + "/register", data=iter([b'{"client_name": "', b"x" * 20_000]),
                                headers={"Content-Type": "application/json"}, timeout=60)  # no length given
        assert chunked.status_code == 400 and "larger than 16384 bytes" in chunked.json()["error_description"]
        assert stored_values(server) == before
        assert register_client(url, client_name="x" * CLIENT_NAME_MAX_CHARS).status_code == 201


def test_registrations_from_one_address_are_limited_and_others_go_on(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (_, url):
        for _ in range(REGISTRATIONS_PER_ADDRESS):
            assert register_client(url, "203.0.113.9").status_code == 201
        refused = register_client(url, "203.0.113.9")
        assert refused.status_code == 429 and "Too many registrations from this address" in refused.text
        assert refused.json()["error"] == "invalid_client_metadata" and int(refused.headers["Retry-After"]) > 0
        assert register_client(url, "198.51.100.4").status_code == 201


def test_a_client_that_never_signs_anyone_in_is_forgotten_after_an_hour_and_one_that_did_is_kept(
        wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        unused, used = OAuthApp.register(url), OAuthApp.register(url)
        used.tokens(Browser(wiki.editor_user, wiki.editor_password))
        store, now = server.state.reads.store, time.monotonic()
        store.clock = lambda: now + CLIENT_UNUSED_SECONDS + 1  # the store an hour on
        assert issued(server, "client") == [used.client_id] and issued(server, UNUSED_CLIENT) == []
        challenge = pkce()[1]
        assert requests.get(unused.authorize_url(challenge), allow_redirects=False, timeout=30).status_code == 400
        assert requests.get(used.authorize_url(challenge), allow_redirects=False, timeout=30).status_code == 302


def test_unused_registrations_are_kept_up_to_a_bound_the_oldest_forgotten_first_never_a_used_client(
        wiki: RealWiki) -> None:
    """Registrations from many addresses, each within its own limit, fill no more of the memory
    store than its bound of unused clients; a client that signed someone in stays."""
    with login_server(login_env(wiki)) as (server, url):
        server.state.reads.store.capacities[UNUSED_CLIENT] = 2
        used = OAuthApp.register(url)
        used.tokens(Browser(wiki.editor_user, wiki.editor_password))
        oldest, *newer = (OAuthApp.register(url) for _ in range(3))
        challenge = pkce()[1]
        refused = requests.get(oldest.authorize_url(challenge), allow_redirects=False, timeout=30)
        assert refused.status_code == 400, refused.text
        for app in (used, *newer):
            assert requests.get(app.authorize_url(challenge), allow_redirects=False, timeout=30).status_code == 302
        assert issued(server, "client") == [used.client_id]


def test_only_https_and_loopback_redirect_uris_are_registered(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        for uri in ("http://evil.example/cb", "javascript:alert(1)", "http://127.0.0.2.evil.example/cb",
                    "com.example.app:/oauth2redirect", "https://app.example/cb#here"):
            refused = register_client(url, redirect_uris=[CALLBACK, uri])
            assert refused.status_code == 400 and refused.json()["error"] == "invalid_redirect_uri", (uri, refused.text)
        assert not issued(server, "client") and not issued(server, UNUSED_CLIENT)
        for uri in ("https://app.example/callback", "http://localhost:8976/cb", "http://[::1]:8976/cb", CALLBACK):
            app = OAuthApp.register(url, uri)
            assert requests.get(app.authorize_url(pkce()[1]), allow_redirects=False, timeout=30).status_code == 302
        assert OAuthApp.register(url).code(Browser(wiki.editor_user, wiki.editor_password), pkce()[1])


def test_only_a_loopback_redirect_may_change_its_port(wiki: RealWiki) -> None:
    """An https:// redirect must match as registered; so must an http:// one that a client
    registered before only loopback ones were taken."""
    with login_server(login_env(wiki)) as (server, url):
        secure = OAuthApp.register(url, "https://app.example/callback")
        older = OAuthApp.register(url)
        key = (SIGN_IN_SPACE, UNUSED_CLIENT, older.client_id)
        store = server.state.reads.store
        store.put(key, json.dumps({**json.loads(store.get(key)), "redirect_uris": ["http://app.example/callback"]}), 60)
        challenge = pkce()[1]
        for app, uri, said in ((secure, "https://app.example:9123/callback", "not registered"),
                               (older, "http://app.example:9123/callback", "not registered"),
                               (older, "http://app.example/callback", "neither https:// nor http:// on this")):
            refused = requests.get(app.authorize_url(challenge, uri), allow_redirects=False, timeout=30)
            assert refused.status_code == 400 and said in refused.text, refused.text
        assert not issued(server, "request")
        loopback = OAuthApp.register(url)
        moved = requests.get(loopback.authorize_url(challenge, "http://127.0.0.1:9123/callback"), allow_redirects=False,
                             timeout=30)
        assert moved.status_code == 302 and SIGN_IN_PATH in moved.headers["location"]


def test_a_form_without_its_csrf_token_is_refused_and_signs_no_one_in(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        changes: list[Callable[[dict[str, str]], dict[str, str]]] = [
            lambda fields: {k: v for k, v in fields.items() if k != "csrf"},
            lambda fields: {**fields, "csrf": secrets.token_urlsafe(32)}]
        for change in changes:
            browser = Browser(wiki.editor_user, wiki.editor_password, change)
            assert browser.sign_in(app.authorize_url(challenge)) == ""
            assert browser.pages[-1].status_code == 403 and "CSRF" in browser.pages[-1].text
        # The right field from another browser, which lacks the cookie that came with the form.
        form = requests.get(app.authorize_url(challenge), timeout=30)
        posted = requests.post(form.url.split("?")[0], data={**form_fields(form.text), "username": wiki.editor_user,
                                                             "password": wiki.editor_password},
                               allow_redirects=False, timeout=30)
        assert posted.status_code == 403 and "location" not in posted.headers
        assert not issued(server, "code") and not issued(server, "person")


def test_a_csrf_field_and_cookie_that_agree_on_a_value_the_server_never_issued_are_refused(wiki: RealWiki) -> None:
    """A page that sets its own cookie and field alike (a cookie planted from a sibling host) does
    not pass for the form this server sent."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        forged = secrets.token_urlsafe(32)
        browser = requests.Session()
        form = browser.get(app.authorize_url(pkce()[1]), timeout=30)
        fields = form_fields(form.text)
        browser.cookies.set(csrf_cookie(fields["request"]), forged, path=SIGN_IN_PATH)
        posted = browser.post(form.url.split("?")[0], allow_redirects=False, timeout=30, data={
            **fields, "csrf": forged, "username": wiki.editor_user, "password": wiki.editor_password})
        assert posted.status_code == 403 and "CSRF" in posted.text and "location" not in posted.headers
        assert not issued(server, "code") and not issued(server, "person")


def test_two_sign_ins_open_in_one_browser_at_once_each_work(wiki: RealWiki) -> None:
    """Two clients (or one that asked twice) open the sign-in page in one browser; the form opened
    first is sent after the second was opened, and both sign in."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        browser = requests.Session()
        forms = [browser.get(app.authorize_url(pkce()[1]), timeout=30) for _ in range(2)]
        for form in forms:
            fields = {**form_fields(form.text), "username": wiki.editor_user, "password": wiki.editor_password}
            answer = browser.post(form.url.split("?")[0], data=fields, allow_redirects=False, timeout=30)
            assert answer.status_code == 303 and "code=" in answer.headers["location"], answer.text
        assert len(issued(server, "code")) == 2


def test_the_sign_in_link_opened_again_after_signing_in_says_it_was_used(wiki: RealWiki) -> None:
    """The back button, or the form sent twice: nothing more is issued, and the page says the
    sign-in went through rather than only that the link is unknown."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        browser = Browser(wiki.editor_user, wiki.editor_password)
        assert app.code(browser, pkce()[1])
        back = browser.session.get(browser.pages[0].url, timeout=30)
        again = browser.session.post(browser.pages[-1].request.url, data=browser.pages[-1].request.body,
                                     headers={"Content-Type": "application/x-www-form-urlencoded"},
                                     allow_redirects=False, timeout=30)
        for page in (back, again):
            assert page.status_code == 400 and "location" not in page.headers
            assert "The link was used to sign in already (your MCP client has the sign-in)" in page.text, page.text
        assert len(issued(server, "code")) == 1


def test_a_wrong_password_shows_the_form_again_with_the_wikis_reason(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        browser = Browser(wiki.editor_user, "not-the-password")
        assert browser.sign_in(app.authorize_url(challenge)) == ""
        again = browser.pages[-1]
        error = re.search(r'<p class="error"[^>]*>(.*?)</p>', again.text, re.DOTALL)
        assert again.status_code == 401 and error, again.text
        assert "Incorrect username or password" in html.unescape(error[1]), error[1]
        assert form_fields(again.text)["csrf"] and f'value="{wiki.editor_user}"' in again.text
        assert not issued(server, "code") and not issued(server, "person")
        # The form shown again works: the right password signs in.
        browser.password = wiki.editor_password
        fields = {**form_fields(again.text), "username": wiki.editor_user, "password": wiki.editor_password}
        answer = browser.session.post(again.url, data=fields, allow_redirects=False, timeout=30)
        assert answer.status_code == 303 and "code=" in answer.headers["location"]


def test_the_sign_in_takes_a_bot_password_never_the_wiki_password(wiki: RealWiki) -> None:
    """A user name without a bot password's app (Admin, not Admin@mcp) is refused before any login:
    the server would otherwise hold the whole account's password. Nothing is issued or counted."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        browser = Browser("admin", wiki.admin_password)
        assert browser.sign_in(app.authorize_url(challenge)) == ""
        again = browser.pages[-1]
        error = re.search(r'<p class="error"[^>]*>(.*?)</p>', again.text, re.DOTALL)
        assert again.status_code == 400 and error, again.text
        assert html.unescape(error[1]) == ("Give the user name of a bot password, such as Admin@mcp, and its "
                                           "password: this server does not take your wiki password. Make one at "
                                           "Special:BotPasswords, as below.")
        assert not issued(server, "code") and not issued(server, "person") and not issued(server, "failures")


def test_a_user_name_sent_with_a_line_break_writes_no_line_of_its_own_in_the_log(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO), login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        forged = "Nobody\nINFO mediawiki_mcp: signed in: Admin"
        assert Browser(forged + "@mcp", "wrong").sign_in(app.authorize_url(pkce()[1])) == ""
        assert not issued(server, "code")
    assert "sign-in to" in caplog.text and "'Nobody\\nINFO mediawiki_mcp: signed in: Admin'" in caplog.text
    assert not any(record.getMessage().count("\n") for record in caplog.records if "sign-in" in record.getMessage())


@pytest.mark.wiki
def test_a_user_name_with_bidi_controls_the_wiki_accepts_reorders_no_line_of_the_log(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    """A wiki takes user names with characters that reorder what a terminal shows: U+2067 (an isolate)
    in the name itself, which MediaWiki keeps, and U+202E (an override) typed before it on the sign-in
    form, which MediaWiki strips as it logs in. Signed in so, a person's logins and writes are logged
    with the name quoted and escaped, as every other line names a caller."""
    user, app, password = "Iso\u2067late", "app" + secrets.token_hex(3), secrets.token_hex(16)
    php(wiki.directory, "maintenance/createAndPromote.php", "--force", user, "Pw-" + secrets.token_hex(12))
    php(wiki.directory, "maintenance/createBotPassword.php", f"--appid={app}",
        "--grants=basic,createeditmovepage,editpage", user, password)
    title = f"Isolated {secrets.token_hex(4)}"
    with caplog.at_level(logging.INFO), login_server(login_env(wiki)) as (_, url):
        tokens = OAuthApp.register(url).tokens(Browser(f"\u202e{user}@{app}", password))
        made = PersonSession(url, tokens["access_token"]).call("create-page", title=title, source="Made.")
        assert tool_text(made).startswith("Created."), made
    assert latest_revision(wiki, title)["user"] == user
    assert f"write by '{wiki.key}:Iso\\u2067late': create-page on {wiki.key}, page {title!r}: done" in caplog.messages
    assert f"logged in to {wiki.key} as '\\u202eIso\\u2067late@{app}'" in caplog.messages
    assert not [message for message in caplog.messages if "\u2067" in message or "\u202e" in message]


@pytest.mark.browser
@on_every_version
def test_a_person_signs_in_from_chromium_after_a_wrong_password_shows_the_wikis_reason(
        wiki: RealWiki, chromium: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    arrived: list[str] = []

    class Callback(http.server.BaseHTTPRequestHandler):  # the client's loopback redirect
        def do_GET(self) -> None:
            arrived.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"Signed in; you may close this window.")

        def log_message(self, *args: Any) -> None:
            pass

    callback = serve_locally(Callback)
    site = wiki.raw_get(action="query", meta="siteinfo")["query"]["general"]["sitename"]
    try:
        with login_server(login_env(wiki)) as (server, url):
            app = OAuthApp.register(url, f"http://127.0.0.1:{callback.server_port}/callback")
            verifier, challenge = pkce()
            chromium.get(app.authorize_url(challenge))
            assert chromium.title == f"Sign in to {site}"
            assert wiki.url in chromium.find_element(By.TAG_NAME, "body").text
            chromium.find_element(By.NAME, "username").send_keys(wiki.editor_user)
            chromium.find_element(By.NAME, "password").send_keys("0" * 32)
            chromium.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            # the answer comes once the server has tried the password on the wiki: slow under load
            error = WebDriverWait(chromium, 30).until(lambda _: chromium.find_elements(By.CLASS_NAME, "error"))[0].text
            assert "Incorrect username or password" in error, error  # the wiki's own words
            assert "model" not in error, error  # a person reads it
            assert chromium.find_element(By.NAME, "username").get_attribute("value") == wiki.editor_user
            shot = tmp_path / "sign-in.png"
            assert chromium.save_screenshot(str(shot)) and shot.read_bytes().startswith(b"\x89PNG")
            assert not arrived and not issued(server, "code")
            chromium.find_element(By.NAME, "password").send_keys(wiki.editor_password)
            chromium.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
            WebDriverWait(chromium, 30).until(lambda _: arrived)
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(arrived[0]).query)
            answer = app.token(grant_type="authorization_code", code=query["code"][0], code_verifier=verifier,
                               redirect_uri=app.redirect_uri)
            assert answer.status_code == 200, answer.text
            token = answer.json()["access_token"]
            headers = {"Authorization": f"Bearer {token}"}
            session = post_rpc(url, "initialize", INIT_PARAMS, headers=headers).headers["mcp-session-id"]
            post_rpc(url, "notifications/initialized", rpc_id=None, session=session, headers=headers)
            who = tool_text(rpc_result(post_rpc(url, "tools/call", {"name": "whoami", "arguments": {}},
                                                session=session, headers=headers)))
            assert "User: Editor" in who, who
    finally:
        callback.shutdown()


def test_sign_ins_that_keep_failing_stop_being_tried_for_that_user_name(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        for _ in range(SIGN_IN_FAILURES_PER_NAME):
            assert Browser(wiki.editor_user, "wrong").sign_in(app.authorize_url(challenge)) == ""
        browser = Browser(wiki.editor_user, wiki.editor_password)
        assert browser.sign_in(app.authorize_url(challenge)) == ""
        assert browser.pages[-1].status_code == 429 and "Too many failed sign-ins" in browser.pages[-1].text
        assert not issued(server, "code")
        assert app.code(Browser(wiki.bot_user, wiki.bot_password), challenge)  # another name is let in


def test_every_spelling_of_a_user_name_that_the_wiki_reads_as_one_counts_against_one_throttle(
        wiki: RealWiki) -> None:
    """Underscores and spaces around or in a name, and its first letter's case, name one wiki user:
    guesses spread across such spellings stop as those with one spelling do."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        for name in ("editor_@mcp", "Editor__@other", "_Editor@mcp", " editor _@mcp", "__Editor@x"):
            assert Browser(name, "wrong").sign_in(app.authorize_url(challenge)) == ""
        browser = Browser(wiki.editor_user, wiki.editor_password)
        assert browser.sign_in(app.authorize_url(challenge)) == ""
        assert browser.pages[-1].status_code == 429 and "Too many failed sign-ins" in browser.pages[-1].text
        assert not issued(server, "code")


def browser_at(address: str, username: str, password: str) -> Browser:
    """A browser at ``address``, as the proxy in front of the server names it (X-Forwarded-For)."""
    browser = Browser(username, password)
    browser.session.headers["X-Forwarded-For"] = address
    return browser


def test_a_locked_name_is_refused_in_every_spelling_the_wiki_reads_as_it_and_none_reaches_the_wiki(
        wiki: RealWiki, monkeypatch: pytest.MonkeyPatch) -> None:
    """Direction marks, which MediaWiki strips, and a name in NFD, which it reads in NFC, name
    the same wiki user: wrong passwords spread over such spellings lock it as one, and once
    locked no spelling is tried on the wiki."""
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        challenge = pkce()[1]
        logins: list[str] = []  # each sign-in logs in to the wiki with a client of its own
        make_client = server.state.make_client
        monkeypatch.setattr(server.state, "make_client", lambda config: logins.append(config.username)
                            or make_client(config))
        editor = wiki.editor_user.partition("@")[0]
        for name in (f"\u200e{editor}@mcp", f"{editor}\u200f@mcp", f"\u202a{editor}\u202c@x", editor.lower() + "@mcp",
                     f"{editor}@mcp"):
            browser = Browser(name, "wrong")
            assert browser.sign_in(app.authorize_url(challenge)) == "" and browser.pages[-1].status_code == 401
        assert len(logins) == 5
        for name in (wiki.editor_user, f"\u200e{editor}@mcp", f"{editor}\u200e@mcp", f"{editor}\u200f@mcp"):
            browser = Browser(name, wiki.editor_password)
            assert browser.sign_in(app.authorize_url(challenge)) == "", name
            assert browser.pages[-1].status_code == 429 and "Too many failed sign-ins" in browser.pages[-1].text
        composed = unicodedata.normalize("NFC", "Zoë")
        for _ in range(SIGN_IN_FAILURES_PER_NAME):
            assert Browser(f"{composed}@mcp", "wrong").sign_in(app.authorize_url(challenge)) == ""
        tried = len(logins)
        browser = Browser(unicodedata.normalize("NFD", "Zoë") + "@mcp", "wrong")
        assert browser.sign_in(app.authorize_url(challenge)) == "" and browser.pages[-1].status_code == 429
        assert len(logins) == tried == 10 and not issued(server, "code")


def test_a_name_locked_on_one_wiki_still_signs_in_to_another(wiki: RealWiki, other_wiki: RealWiki,
                                                             tmp_path: Path) -> None:
    env = {**config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki), **login_env(wiki)}
    del env["MEDIAWIKI_URL"]
    with login_server(env) as (_, url):
        app = OAuthApp.register(url)
        challenge = pkce()[1]
        on_other: Callable[[dict[str, str]], dict[str, str]] = lambda fields: {**fields, "wiki": "other"}
        for _ in range(SIGN_IN_FAILURES_PER_NAME):
            assert Browser(other_wiki.editor_user, "wrong", on_other).sign_in(app.authorize_url(challenge)) == ""
        locked = Browser(other_wiki.editor_user, other_wiki.editor_password, on_other)
        assert locked.sign_in(app.authorize_url(challenge)) == "" and locked.pages[-1].status_code == 429
        assert app.code(Browser(wiki.editor_user, wiki.editor_password), challenge)


def test_a_name_locked_from_one_address_lets_its_owner_in_from_another_until_guesses_come_from_many(
        wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (server, url):
        app = OAuthApp.register(url)
        challenge = pkce()[1]
        for _ in range(SIGN_IN_FAILURES_PER_NAME):
            assert browser_at("203.0.113.7", wiki.editor_user, "wrong").sign_in(app.authorize_url(challenge)) == ""
        guesser = browser_at("203.0.113.7", wiki.editor_user, wiki.editor_password)
        assert guesser.sign_in(app.authorize_url(challenge)) == "" and guesser.pages[-1].status_code == 429
        assert app.code(browser_at("198.51.100.2", wiki.editor_user, wiki.editor_password), challenge)
        spread = SIGN_IN_FAILURES_PER_NAME_EVERYWHERE - SIGN_IN_FAILURES_PER_NAME
        for i in range(spread):  # one guess from each of many addresses
            browser = browser_at(f"192.0.2.{i + 1}", wiki.editor_user, "wrong")
            assert browser.sign_in(app.authorize_url(challenge)) == "" and browser.pages[-1].status_code == 401
        owner = browser_at("198.51.100.2", wiki.editor_user, wiki.editor_password)
        assert owner.sign_in(app.authorize_url(challenge)) == "" and owner.pages[-1].status_code == 429
        assert len(issued(server, "code")) == 1


def test_failures_from_one_address_under_many_names_lock_that_address(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (_, url):
        app = OAuthApp.register(url)
        challenge = pkce()[1]
        for i in range(SIGN_IN_FAILURES_PER_ADDRESS):
            browser = browser_at("203.0.113.8", f"Nobody{i}@mcp", "wrong")
            assert browser.sign_in(app.authorize_url(challenge)) == "" and browser.pages[-1].status_code == 401
        locked = browser_at("203.0.113.8", wiki.editor_user, wiki.editor_password)
        assert locked.sign_in(app.authorize_url(challenge)) == "" and locked.pages[-1].status_code == 429
        assert "from this address" in locked.pages[-1].text
        assert app.code(browser_at("198.51.100.3", wiki.editor_user, wiki.editor_password), challenge)


def test_with_several_wikis_the_person_chooses_the_one_they_sign_in_to(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    env = {**config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki), **login_env(wiki)}
    del env["MEDIAWIKI_URL"]
    with login_server(env) as (server, url):
        app = OAuthApp.register(url)
        _, challenge = pkce()
        unknown = Browser(other_wiki.editor_user, other_wiki.editor_password,
                          lambda fields: {**fields, "wiki": "elsewhere"})
        assert unknown.sign_in(app.authorize_url(challenge)) == "" and unknown.pages[-1].status_code == 400
        assert "Choose one of the wikis listed" in unknown.pages[-1].text and not issued(server, "code")
        browser = Browser(other_wiki.editor_user, other_wiki.editor_password,
                          lambda fields: {**fields, "wiki": "other"})
        tokens = app.tokens(browser)
        form = browser.pages[0].text
        assert re.findall(r'<option value="([^"]*)"( selected)?', form) == [(wiki.key, " selected"), ("other", "")]
        assert other_wiki.url in form and form.count("Special:BotPasswords</a>") == 2
        session = PersonSession(url, tokens["access_token"])
        assert "User: Editor\n" in tool_text(session.call("whoami", wiki="other"))
        title = f"Signed in elsewhere {secrets.token_hex(4)}"
        refused = session.call("create-page", title=title, source="x.", wiki=wiki.key)
        assert error_text(refused) == (  # other is read-only: no right is missing, a wiki to write to is
            "authentication: Editor has no account of their own on a wiki this server writes to, so it does not use "
            f"create-page for them (never as its own account); nothing was changed. A sign-in acts on one wiki: to "
            f"act on {wiki.key}, sign in again choosing it."), refused
        assert revision_ids(wiki, title) == []


def test_a_person_without_an_account_on_a_wiki_reads_nothing_private_of_its_configured_account(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path) -> None:
    """Signed in to the other wiki only, a person reads the first one's public pages through its
    configured account (Admin, who watches pages), never its watchlist; whoami and get-site-info say
    they have no account there and that writes are off for them."""
    env = {**config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki), **login_env(wiki)}
    del env["MEDIAWIKI_URL"]
    with login_server(env) as (_, url):
        app = OAuthApp.register(url)
        browser = Browser(other_wiki.editor_user, other_wiki.editor_password, lambda fields: {**fields, "wiki": "other"})
        session = PersonSession(url, app.tokens(browser)["access_token"])
        assert "Rhine" in tool_text(session.call("get-page", title=RIVER_ARTICLE, wiki=wiki.key))
        refused = session.call("get-watchlist", wiki=wiki.key)
        assert error_text(refused) == (
            f"permission_denied: Editor has no account of their own on {wiki.key}, so this server does not read "
            "the watchlist there for them: get-watchlist shows what only an account sees, and the server's own "
            f"account is not theirs. A sign-in acts on one wiki: to act on {wiki.key}, sign in again choosing it."
        ), refused
        assert tool_text(session.call("whoami", wiki=wiki.key)) == (
            f"Wiki: {wiki.key}\nUser: none: Editor has no account of their own on this wiki (signed in to other)\n"
            "Reads: what anyone may read, through this server's own account; not the watchlist\n"
            "Writes from this server: off for Editor. A sign-in acts on one wiki: to act on this wiki, sign in "
            "again choosing it.")
        assert "User: Editor" in tool_text(session.call("whoami", wiki="other"))
        site = tool_text(session.call("get-site-info", wiki=wiki.key))
        assert "\nWrites from this server: off for Editor. A sign-in acts on one wiki: to act on this wiki" in site


def test_each_tool_call_of_a_signed_in_person_is_logged_under_the_wiki_they_signed_in_to(
        wiki: RealWiki, other_wiki: RealWiki, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Editor signed in to each of two wikis is two people: one acts as Editor on the first wiki, the
    other reads it through its configured account. The log names each as WIKI:USER, as the line of
    their sign-in and mediawiki-mcp sign-in list|revoke do, so the operator tells them apart."""
    env = {**config_env(tmp_path, two_wiki_config(wiki, other_wiki), wiki, other_wiki), **login_env(wiki)}
    del env["MEDIAWIKI_URL"]
    with caplog.at_level(logging.INFO), login_server(env) as (_, url):
        app = OAuthApp.register(url)
        for browser in (Browser(wiki.editor_user, wiki.editor_password),
                        Browser(other_wiki.editor_user, other_wiki.editor_password,
                                lambda fields: {**fields, "wiki": "other"})):
            session = PersonSession(url, app.tokens(browser)["access_token"])
            assert "Rhine" in tool_text(session.call("get-page", title=RIVER_ARTICLE, wiki=wiki.key))
    assert [message for message in caplog.messages if message.startswith("tool call: ")] == [
        f"tool call: person='{key}:Editor' tool='get-page' wiki={wiki.key} outcome=done client=127.0.0.1"
        for key in (wiki.key, "other")]


@on_every_version
def test_each_signed_in_persons_edit_is_signed_with_their_own_name(wiki: RealWiki) -> None:
    with login_server(login_env(wiki)) as (_, url):
        for user, password in ((wiki.editor_user, wiki.editor_password), (wiki.bot_user, wiki.bot_password)):
            title = f"Signed in as {user.split('@')[0]} {secrets.token_hex(4)}"
            [made] = signed_in_calls(url, Browser(user, password),
                                     [("create-page", {"title": title, "source": "Made by a person."})])
            assert not made.is_error, made.text
            assert latest_revision(wiki, title)["user"] == user.split("@")[0]
        # a person without the right to delete is refused it, on a page the admin could delete
        [refused] = signed_in_calls(url, Browser(wiki.plain_user, wiki.plain_password),
                                    [("delete-page", {"title": title, "confirm": True})])
        assert refused.is_error and refused.text.startswith(
            "permission_denied: The tool delete-page is not offered to Member"), refused.text
        assert latest_revision(wiki, title)["user"] == "Admin"


@pytest.mark.wiki
def test_each_client_of_a_person_keeps_the_grants_of_the_bot_password_it_signed_in_with(wiki: RealWiki) -> None:
    """Admin signs in from one client with a bot password granted 'basic' only, then from another
    with one granted everything: the first is still offered no write tool, and is told which grants
    its bot password lacks and where to tick them; its create-page saves nothing. The server's own
    account is Admin too, with every grant."""
    app_id, password = "reader" + secrets.token_hex(3), secrets.token_hex(16)
    php(wiki.directory, "maintenance/createBotPassword.php", f"--appid={app_id}", "--grants=basic", "Admin", password)
    title = f"Grants per client {secrets.token_hex(4)}"
    with login_server(admin_login_env(wiki)) as (_, url):
        app = OAuthApp.register(url)
        reader = PersonSession(url, app.tokens(Browser(f"Admin@{app_id}", password))["access_token"])
        full = PersonSession(url, app.tokens(Browser(wiki.bot_user, wiki.bot_password))["access_token"])
        assert "create-page" in full.tools() and "create-page" not in reader.tools()
        refused = reader.call("create-page", title=title, source="Not to be saved.")
        assert error_text(refused) == (
            "permission_denied: The tool create-page is not offered to Admin: their bot password lacks the grant "
            "'Create, edit, and move pages' and 'Edit existing pages', which their account could use. They can tick "
            "it at Special:BotPasswords on the wiki, then sign in again from the MCP client; no retry by the model "
            "changes it."), refused
        assert f"App: {app_id} (bot password)" in tool_text(reader.call("whoami"))
        assert revision_ids(wiki, title) == []
        made = full.call("create-page", title=title, source="Made with every grant.")
        assert tool_text(made).startswith("Created."), made
        assert "create-page" not in reader.tools()


def revoke_bot_password(wiki: RealWiki, app_id: str) -> None:
    """Deletes a bot password, as its owner does at Special:BotPasswords: its sessions end with it."""
    php(wiki.directory, "maintenance/sql.php", "--query", f"DELETE FROM bot_passwords WHERE bp_app_id = '{app_id}'")


def test_the_debug_log_of_a_served_sign_in_shows_no_secret(wiki: RealWiki) -> None:
    """At DEBUG, the access log shows each request's path: never the secret of a sign-in link, which
    opens that person's form, nor a code, token or password."""
    env = {**login_env(wiki), "MEDIAWIKI_MCP_LOG_LEVEL": "DEBUG"}
    with http_servers((env, ())) as (http,):
        app, (verifier, challenge) = OAuthApp.register(http.url), pkce()
        browser = Browser(wiki.editor_user, wiki.editor_password)
        code = app.code(browser, challenge)
        tokens = app.token(grant_type="authorization_code", code=code, code_verifier=verifier,
                           redirect_uri=CALLBACK).json()
        assert initialize_status(http.url, tokens["access_token"]) == 200
        link = urllib.parse.parse_qs(urllib.parse.urlsplit(browser.pages[0].url).query)["request"][0]
    assert '"GET /sign-in?request=(hidden) HTTP/1.1" 200' in http.log, http.log
    for secret in (link, code, tokens["access_token"], tokens["refresh_token"], wiki.editor_password):
        assert secret not in http.log


def test_metrics_count_tool_calls_sign_ins_and_wiki_requests_and_name_no_one(
        wiki: RealWiki, caplog: pytest.LogCaptureFixture) -> None:
    """/metrics in Prometheus' text format: a signed-in person's calls by tool and outcome, sign-ins by
    outcome, store errors and each wiki's request times; no person, title or address in it. The log
    has a line per call and names the address a failed sign-in came from."""
    title = f"Metrics {secrets.token_hex(4)}"
    with caplog.at_level(logging.INFO), login_server(login_env(wiki)) as (_, url):
        app = OAuthApp.register(url)
        assert Browser(wiki.editor_user, "wrong-" + wiki.editor_password).sign_in(
            app.authorize_url(pkce()[1])) == ""
        made, missing = signed_in_calls(url, Browser(wiki.editor_user, wiki.editor_password), [
            ("create-page", {"title": title, "source": "Counted."}), ("get-page", {"title": title + " gone"})])
        assert not made.is_error and missing.is_error, (made.text, missing.text)
        values = metric_values(url)
        text = requests.get(url.replace("/mcp", "/metrics"), timeout=30).text
    assert values[("mediawiki_mcp_tool_calls_total", (("outcome", "done"), ("tool", "create-page")))] == 1
    assert values[("mediawiki_mcp_tool_calls_total", (("outcome", "not_found"), ("tool", "get-page")))] == 1
    assert values[("mediawiki_mcp_sign_ins_total", (("outcome", "authentication"),))] == 1
    assert values[("mediawiki_mcp_sign_ins_total", (("outcome", "signed_in"),))] == 1
    assert values[("mediawiki_mcp_store_errors_total", ())] == 0
    assert values[("mediawiki_mcp_wiki_request_seconds_count", (("wiki", wiki.key),))] >= 3  # login, edit, read
    for private in ("Editor", title):  # (the wiki's key here is an address, 127.0.0.1:port, as the client's)
        assert private not in text, private
    editor = wiki.editor_user.split("@")[0]
    assert (f"tool call: person='{wiki.key}:{editor}' tool='create-page' wiki={wiki.key} outcome=done "
            "client=127.0.0.1" in caplog.text), caplog.text
    assert f"tool='get-page' wiki={wiki.key} outcome=not_found client=127.0.0.1" in caplog.text
    assert f"sign-in to {wiki.key} as '{editor}' from 127.0.0.1 failed: authentication" in caplog.text
    assert wiki.editor_password not in caplog.text


def test_metrics_count_grants_refused_at_token(wiki: RealWiki) -> None:
    """A refresh token used twice, a code used twice, and the refresh token of a person who signed
    out: each refused invalid_grant at /token and counted in /metrics."""
    with login_server(login_env(wiki)) as (_, url):
        app, (verifier, challenge) = OAuthApp.register(url), pkce()
        code = app.code(Browser(wiki.editor_user, wiki.editor_password), challenge)
        exchanges = [app.token(grant_type="authorization_code", code=code, code_verifier=verifier,
                               redirect_uri=CALLBACK) for _ in range(2)]
        refresh = exchanges[0].json()["refresh_token"]
        renewed, again = (app.token(grant_type="refresh_token", refresh_token=refresh) for _ in range(2))
        out = requests.post(url.removesuffix("/mcp") + SIGN_OUT_PATH, timeout=30,
                            headers={"Authorization": f"Bearer {renewed.json()['access_token']}"})
        assert out.status_code == 200, out.text
        gone = app.token(grant_type="refresh_token", refresh_token=renewed.json()["refresh_token"])
        for refused in (exchanges[1], again, gone):
            assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant", refused.text
        assert metric_values(url)[("mediawiki_mcp_refused_requests_total", (("reason", "grant"),))] == 3


def test_metrics_count_the_requests_refused_before_any_tool_by_reason(wiki: RealWiki) -> None:
    """/metrics counts the requests refused at the door, so that an operator sees tokens refused in
    numbers (a replica with another key, a store that lost its people), apart from the first request
    of each client, which comes without a token; and wrong Hosts and Origins."""
    with login_server(login_env(wiki)) as (server, url):
        tokens = OAuthApp.register(url).tokens(Browser(wiki.editor_user, wiki.editor_password))
        assert initialize_status(url, tokens["access_token"]) == 200
        server.state.reads.store.forget((SIGN_IN_SPACE, "person", f"{wiki.key}:Editor"))
        assert initialize_status(url, tokens["access_token"]) == 401  # its person no longer known
        assert initialize_status(url, secrets.token_urlsafe(32)) == 401
        assert post_rpc(url, "initialize", INIT_PARAMS).status_code == 401
        assert post_rpc(url, "initialize", INIT_PARAMS, headers={"Host": "evil.example"}).status_code == 421
        assert post_rpc(url, "initialize", INIT_PARAMS, headers={"Origin": "http://evil.example"}).status_code == 403
        values = metric_values(url)
    refused = {dict(labels)["reason"]: value for (name, labels), value in values.items()
               if name == "mediawiki_mcp_refused_requests_total"}
    assert refused == {"token": 2, "no_token": 1, "host": 1, "origin": 1}, values


def test_metrics_answer_this_machine_or_their_token_only(wiki: RealWiki) -> None:
    """Without MCP_METRICS_TOKEN /metrics answers loopback clients only (a proxy's X-Forwarded-For
    names the client) that name this machine as Host (not a page led there by DNS rebinding), with it
    only those that send it, from anywhere; the MCP tokens neither open nor close it."""
    env = {**wiki.env(), "MCP_AUTH_TOKEN": "t" * 32, "MCP_ALLOWED_HOSTS": "mcp.example.org"}
    with http_servers((env, ())) as [server]:
        metrics = server.url.replace("/mcp", "/metrics")
        assert "mediawiki_mcp_tool_calls" in requests.get(metrics, timeout=30).text  # Host: 127.0.0.1:port
        assert requests.get(metrics, headers={"Host": "mcp.example.org"}, timeout=30).status_code == 200
        for headers in ({"X-Forwarded-For": "203.0.113.9"}, {"Host": "evil.example"}):
            refused = requests.get(metrics, headers=headers, timeout=30)
            assert refused.status_code == 403 and "MCP_METRICS_TOKEN" in refused.text, headers
    scraper = secrets.token_urlsafe(24)
    with http_servers(({**env, "MCP_METRICS_TOKEN": scraper}, ())) as [server]:
        metrics = server.url.replace("/mcp", "/metrics")
        for sent in ({}, {"Authorization": "Bearer " + "t" * 32}):
            assert requests.get(metrics, headers=sent, timeout=30).status_code == 401
        assert metric_values(server.url, Authorization=f"Bearer {scraper}", Host="10.0.0.5:3000",
                             **{"X-Forwarded-For": "203.0.113.9"})[("mediawiki_mcp_store_errors_total", ())] == 0
    assert scraper not in server.log and "t" * 32 not in server.log


@pytest.mark.wiki
def test_a_person_whose_bot_password_was_revoked_is_refused_then_signs_in_again_with_a_new_one(
        wiki: RealWiki) -> None:
    """Member signs in with a bot password of their own, which they then revoke: their calls are
    refused (authentication), nothing done; signed in again with another one, the new sign-in's calls
    act as them through it, while the old sign-in's token keeps its own, revoked, account: it is
    still refused, never served with the grants of the other sign-in."""
    app_id, password = "revoked" + secrets.token_hex(3), secrets.token_hex(16)
    php(wiki.directory, "maintenance/createBotPassword.php", f"--appid={app_id}", f"--grants={BOT_GRANTS}",
        "Member", password)
    title = f"Signed in again {secrets.token_hex(4)}"
    with login_server(login_env(wiki)) as (_, url):
        app = OAuthApp.register(url)
        first = PersonSession(url, app.tokens(Browser(f"Member@{app_id}", password))["access_token"])
        assert f"App: {app_id} (bot password)" in tool_text(first.call("whoami"))
        revoke_bot_password(wiki, app_id)
        refused = first.call("create-page", title=title, source="Not to be saved.")
        assert error_text(refused).startswith(f"authentication: Login to {urllib.parse.urlsplit(wiki.url).netloc} "
                                              f"as Member@{app_id} failed"), refused
        assert error_text(refused).endswith(  # what a signed-in person does, not what the token file's people do
            "Nothing was done as another account. Member needs a working bot password of their own here: sign in "
            "again with a working one (from the MCP client, authenticate to this server again).")
        assert revision_ids(wiki, title) == []
        again = PersonSession(url, app.tokens(Browser(wiki.plain_user, wiki.plain_password))["access_token"])
        made = again.call("create-page", title=title, source="Made with the new bot password.")
        assert tool_text(made).startswith("Created."), made
        assert "App: mcp (bot password)" in tool_text(again.call("whoami"))
        assert error_text(first.call("whoami")).startswith(f"authentication: Login to {urllib.parse.urlsplit(wiki.url).netloc} "
                                                           f"as Member@{app_id} failed")
    assert revision_users(wiki, title) == ["Member"]


@pytest.mark.parametrize("env, named", [
    ({}, "needs MCP_AUTH_SECRET"),
    ({"MCP_AUTH_SECRET": "not-a-fernet-key"}, "MCP_AUTH_SECRET must hold Fernet keys"),
    ({"MCP_PUBLIC_URL": "http://mcp.example.org"}, "MCP_PUBLIC_URL takes an origin"),
    ({"MCP_PUBLIC_URL": "https://mcp.example.org/mcp"}, "MCP_PUBLIC_URL takes an origin"),
    ({"MCP_BIND": "0.0.0.0"}, "needs MCP_PUBLIC_URL"),
    ({"MCP_ACCESS_TOKEN_SECONDS": "600", "MCP_REFRESH_TOKEN_SECONDS": "60"},
     r"MCP_REFRESH_TOKEN_SECONDS \(60\) must be at least MCP_ACCESS_TOKEN_SECONDS \(600\)"),
])
def test_sign_in_settings_that_cannot_work_stop_the_server_naming_them(env: dict[str, str], named: str) -> None:
    from cryptography.fernet import Fernet
    key = {"MCP_AUTH_SECRET": Fernet.generate_key().decode()} if env and "MCP_AUTH_SECRET" not in env else {}
    with pytest.raises(ConfigError, match=named) as refused:
        http_options(argument_parser().parse_args(["--transport", "http"]), {"MCP_AUTH": "login", **key, **env})
    assert "not-a-fernet-key" not in str(refused.value)


def test_the_check_checks_the_sign_in_settings_over_any_transport_and_names_no_key(wiki: RealWiki) -> None:
    from cryptography.fernet import Fernet
    new, old = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    for broken, named in (({"MCP_AUTH_SECRET": "not-a-fernet-key"}, "MCP_AUTH_SECRET must hold Fernet keys"),
                          ({"MCP_AUTH_SECRET": new, "MCP_PUBLIC_URL": "https://mcp.example.org/mcp"},
                           "MCP_PUBLIC_URL takes an origin"),
                          ({"MCP_AUTH_SECRET": new, "MCP_BIND": "0.0.0.0"}, "needs MCP_PUBLIC_URL")):
        done = run_script("--check", env=wiki.env(MCP_AUTH="login", **broken))
        assert done.returncode == 2 and named in done.stderr, done.stdout + done.stderr
        assert "not-a-fernet-key" not in done.stderr
    checked = run_script("--check", env=wiki.env(MCP_AUTH="login", MCP_AUTH_SECRET=f"{new},{old}",
                                                 MCP_PUBLIC_URL="https://mcp.example.org"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Sign-in: MCP_AUTH=login, public URL https://mcp.example.org, 2 keys in MCP_AUTH_SECRET" in (
        checked.stdout.splitlines())
    local = run_script("--check", env=wiki.env(MCP_AUTH="login", MCP_AUTH_SECRET=new))
    assert ("Sign-in: MCP_AUTH=login, public URL http://127.0.0.1:3000 (the address listened on: MCP_PUBLIC_URL "
            "is not set), 1 key in MCP_AUTH_SECRET") in local.stdout.splitlines(), local.stdout
    assert not any(key in d.stdout + d.stderr for key in (new, old) for d in (checked, local))


def test_a_bad_sign_in_key_stops_the_installed_program_naming_the_setting() -> None:
    done = run_script("--transport", "http", env={"MCP_AUTH": "login", "MCP_AUTH_SECRET": "not-a-fernet-key"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "mediawiki-mcp: MCP_AUTH_SECRET must hold Fernet keys" in done.stderr


def test_sign_in_options_come_from_the_settings_and_keys_rotate() -> None:
    from cryptography.fernet import Fernet
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    env = {"MCP_AUTH": "login", "MCP_AUTH_SECRET": f"{new}, {old}", "MCP_PUBLIC_URL": "https://MCP.example.org/",
           "MCP_BIND": "0.0.0.0", "MCP_ACCESS_TOKEN_SECONDS": "600"}
    options = http_options(argument_parser().parse_args(["--transport", "http"]), env)
    assert options.public_url == "https://mcp.example.org" and options.sign_in.access_seconds == 600
    assert options.sign_in.refresh_seconds == 30 * 24 * 3600 and new not in repr(options)
    cipher = options.sign_in.cipher()
    assert cipher.decrypt(Fernet(old).encrypt(b"kept")) == b"kept"  # stored before the new key came first
    assert Fernet(new).decrypt(cipher.encrypt(b"new")) == b"new"
    assert http_warnings(options) == []  # people sign in: nothing is open to anyone

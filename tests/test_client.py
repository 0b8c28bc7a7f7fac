"""Tests: The client against faults: a fake wiki for what a real one will not do."""
from __future__ import annotations

import base64
import dataclasses
import logging
import ssl
import subprocess
from pathlib import Path

import pytest

from mediawiki_mcp.client import MAX_ATTEMPTS, MediaWikiClient, RetryPolicy
from mediawiki_mcp.wire import __version__
from realwiki import (
    RealWiki,
)
from tests.support import FakeWiki, Reply, call, fake_server, field, make_server


def test_the_retry_policy_waits_as_asked_within_its_attempts_and_budget() -> None:
    slept: list[float] = []
    now = [100.0]
    policy = RetryPolicy(budget=30.0, attempts=4, sleep=slept.append, clock=lambda: now[0])
    read = {"transient": True}
    assert policy.pause(1, 100.0, status=503, retry_after="3", **read) and slept == [3.0]
    assert [policy.wait(n, 100.0, status=502, **read) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]  # no Retry-After
    assert policy.wait(1, 100.0, status=None, **read) == 0.5  # no answer at all: a connection failure
    assert policy.wait(1, 100.0, status=429, retry_after="Wed, 21 Oct 2026 07:28:00 GMT", **read) == 0.5
    assert policy.wait(1, 100.0, status=503, retry_after="-4", **read) == 0.0
    # a Retry-After longer than a person waits, the attempts used up, the budget spent: no more
    assert policy.wait(1, 100.0, status=503, retry_after="3600", **read) is None
    assert policy.wait(4, 100.0, status=503, **read) is None
    now[0] = 128.0
    assert policy.wait(1, 100.0, status=503, retry_after="3", **read) is None
    assert policy.wait(1, 100.0, status=503, retry_after="2", **read) == 2.0
    # a write is sent again only after answers that prove nothing was written
    write = {"transient": False}
    assert policy.wait(1, 128.0, status=503, **write) is None and policy.wait(1, 128.0, **write) is None
    assert policy.wait(1, 128.0, status=200, code="maxlag", retry_after="5", **write) == 5.0
    assert policy.wait(1, 128.0, status=200, code="ratelimited", retry_after="1", **write) == 1.0
    assert policy.wait(1, 128.0, status=200, code="ratelimited", **write) is None  # no Retry-After: not soon
    assert policy.wait(1, 128.0, status=404, code="missingtitle", **read) is None
    assert not policy.pause(4, 128.0, status=503, **read) and slept == [3.0]  # giving up waits for nothing


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
    fake.replies = [dataclasses.replace(maxlag, headers={"Retry-After": "5"}) for _ in range(MAX_ATTEMPTS)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error and result.blocks[0].startswith("rate_limited: Waiting for a database server")


def test_a_long_retry_after_is_not_waited_out(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    fake.replies = [Reply(503, b"<html>down</html>", {"Retry-After": "3600"})]
    result = call(fake_server(fake, sleeps), "get-page", title="Main Page")
    assert sleeps == [] and result.is_error
    assert result.blocks[0] == (f"upstream_failure: The wiki at 127.0.0.1:{fake.port} answered HTTP 503 with "
                                "text/html instead of API JSON. Retry later; tell the user if it persists.")


def test_a_timeout_is_upstream_failure(fake: FakeWiki) -> None:
    fake.replies = [Reply(delay=5.0)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error
    assert result.blocks[0].startswith(f"upstream_failure: The wiki at 127.0.0.1:{fake.port} timed out after 0.5 s")


def test_an_html_error_page_is_reported_without_its_html(fake: FakeWiki) -> None:
    fake.replies = [Reply(500, b"<html><body><h1>Fatal exception of type Foo</h1></body></html>")
                    for _ in range(MAX_ATTEMPTS)]
    result = call(fake_server(fake), "get-page", title="Main Page")
    assert result.is_error and "HTTP 500 with text/html" in result.text and "<h1>" not in result.text


def test_a_server_error_is_retried_within_bounds(fake: FakeWiki) -> None:
    sleeps: list[float] = []
    fake.replies = [Reply(502, b"bad gateway") for _ in range(10)]
    result = call(fake_server(fake, sleeps), "get-page", title="Main Page")
    assert result.is_error and len(fake.requests_to_api()) == MAX_ATTEMPTS
    assert len(sleeps) == MAX_ATTEMPTS - 1


def test_persistent_429_is_rate_limited(fake: FakeWiki) -> None:
    fake.replies = [Reply(429, {"x": 1}, {"Retry-After": "1"}) for _ in range(MAX_ATTEMPTS)]
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


def test_a_redirect_from_http_to_https_moves_the_api_address_for_good(
        fake: FakeWiki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wiki that moved to https answers its old http address with a redirect: reads follow it,
    and from then on every request, writes included (a POST is never redirected), goes to https."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    secure = FakeWiki(tls)
    try:
        fake.siteinfo_path = "/nowhere"  # the http address answers everything with the redirect
        fake.replies = [Reply(301, b"", {"Location": secure.api}) for _ in range(10)]
        page = {"query": {"pages": [{"pageid": 1, "ns": 0, "title": "Main Page", "revisions": [{"revid": 7}]}]}}
        saved = {"edit": {"result": "Success", "title": "Main Page", "pageid": 1, "oldrevid": 7, "newrevid": 8}}
        secure.replies = [Reply(body=page), Reply(body={"query": {"tokens": {"csrftoken": "+\\"}}}),
                          Reply(body=saved)]
        server = fake_server(fake, MEDIAWIKI_READ_ONLY="false")
        assert f"API: {secure.api}" in call(server, "get-site-info").text
        result = call(server, "update-page", title="Main Page", source="new", latestId=7)
        assert not result.is_error and field(result, "Revision ID") == "8", result.text
        assert len(fake.seen) == 1 and secure.api.startswith("https://")
        assert "edit" in [s["params"].get("action") for s in secure.requests_to_api()]  # the write too
    finally:
        secure.close()


def test_basic_auth_from_the_address_goes_to_the_wikis_origin_only(fake: FakeWiki) -> None:
    other = FakeWiki()
    try:
        fake.replies = [Reply(302, {}, {"Location": f"http://localhost:{other.port}/w/api.php"})]
        result = call(fake_server(fake, MEDIAWIKI_URL=f"http://gate:s3cret-gate@127.0.0.1:{fake.port}/w/api.php"),
                      "get-page", title="Main Page")
        assert not result.is_error and "Fake page text." in result.text
        basic = "Basic " + base64.b64encode(b"gate:s3cret-gate").decode()
        assert fake.seen and all(s["headers"].get("Authorization") == basic for s in fake.seen)
        assert len(other.seen) == 1 and "Authorization" not in other.seen[0]["headers"]
    finally:
        other.close()


def test_oauth_token_is_sent_as_a_bearer_header(fake: FakeWiki) -> None:
    result = call(fake_server(fake, MEDIAWIKI_TOKEN="tok-abc-123"), "get-page", title="Main Page")
    assert not result.is_error
    assert all(s["headers"].get("Authorization") == "Bearer tok-abc-123" for s in fake.seen)
    assert all(s["params"].get("assert") == "user" for s in fake.requests_to_api())


def test_a_token_the_wiki_does_not_accept_is_named_so_not_a_lost_login(wiki: RealWiki, fake: FakeWiki) -> None:
    """A wiki without OAuth (the test wikis) ignores a bearer token and serves the request as
    anonymous, so assert=user fails; a wiki with OAuth refuses the token itself (the fake serves
    that). Either way it is the token, and no session expired."""
    refused = ("did not accept the OAuth token (MEDIAWIKI_TOKEN, or token in the configuration file): it is "
               "mistyped, expired or revoked, or the wiki lacks the OAuth extension. Tell the user; no retry "
               "by the model changes this.")
    read = call(make_server({"MEDIAWIKI_URL": wiki.api, "MEDIAWIKI_TOKEN": "bogus-token-123"}), "get-page",
                title="Apple")
    assert read.is_error and read.text == f"authentication: {wiki.key} {refused}"
    fake.replies = [Reply(body={"errors": [{"code": "mwoauth-invalid-authorization",
                                            "text": "The authorization headers in your request are not valid"}]})]
    who = call(fake_server(fake, MEDIAWIKI_TOKEN="bogus-token-456"), "whoami")
    assert who.is_error and who.text == f"authentication: 127.0.0.1:{fake.port} {refused}"
    assert "bogus-token" not in read.text + who.text


def test_an_http_proxy_from_the_environment_is_used(fake: FakeWiki, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{fake.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = make_server({"MEDIAWIKI_URL": "http://wiki.invalid/w/api.php"},
                         retry=RetryPolicy(sleep=lambda s: None))
    result = call(server, "get-page", title="Main Page")
    assert not result.is_error and "Fake page text." in result.text
    assert fake.seen and all(s["headers"]["Host"] == "wiki.invalid" for s in fake.seen)


def test_user_agent_carries_the_operators_part(fake: FakeWiki) -> None:
    call(fake_server(fake, MEDIAWIKI_USER_AGENT="ReleaseBot/1.0 (ana@example.org)"), "get-page", title="X")
    agent = fake.seen[0]["headers"]["User-Agent"]
    assert agent.startswith("ReleaseBot/1.0 (ana@example.org) mediawiki-mcp/" + __version__ + " requests/")


def test_wikimedia_without_contact_details_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    client = MediaWikiClient("https://en.wikipedia.org/w/api.php")
    with caplog.at_level(logging.WARNING, logger="mediawiki_mcp"):
        for _ in range(2):  # a second session, as after a lost one
            client._new_session()
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "MEDIAWIKI_USER_AGENT" in caplog.records[0].message

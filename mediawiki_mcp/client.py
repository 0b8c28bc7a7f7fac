"""MediaWikiClient: the API of one wiki. Sends by the layers of wire.py, retries by RetryPolicy,
logs in, keeps the site info, and settles a write whose answer was lost."""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import typing
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import (
    NEXT_STEP,
    RETRY_LATER,
    ResponseLost,
    WikiError,
    authentication,
    error_from_api,
    invalid_input,
    rate_limited,
    upstream_failure,
)
from .guard import AddressGuard, discover_api, follow, pinnable_session
from .siteinfo import CHOICES, RIGHTS, SITEINFO_PARAMS, SUMMARY_MESSAGES, TOKEN_TYPES, WATCH_EXPIRY, Account, SiteInfo
from .wire import (
    RUNNING_CALL,
    BasicAuth,
    _requests,
    _warn_once,
    api_error_code,
    api_error_text,
    encode_params,
    extension_names,
    field_values,
    is_wikimedia_host,
    log,
    logged,
    never_connected,
    origin_of,
    parse_json,
    split_userinfo,
)

if TYPE_CHECKING:
    import requests


#: Reads whose parameters encode longer than this go by POST: servers cap URLs near 8 KB.
MAX_GET_PARAMS_BYTES = 4000


#: (connect, read) seconds for every request to a wiki.
DEFAULT_TIMEOUT = (10.0, 30.0)


#: Tool calls that run at once against one wiki (and its connection pool); more wait their
#: turn. Each wiki has its own, so a slow wiki holds up only the calls made to it.
MAX_CALLS_PER_WIKI = 32


#: Reads give up retrying once this many seconds have passed: a person is waiting.
READ_RETRY_BUDGET_SECONDS = 30.0


MAX_ATTEMPTS = 4


#: The longest single wait between attempts; a longer Retry-After ends the retries.
MAX_RETRY_WAIT_SECONDS = 10.0


#: Sent on writes so that a lagged database cluster refuses them cleanly.
WRITE_MAXLAG_SECONDS = 5


#: The codes by which a wiki refuses an OAuth bearer token: OAuth's own, or, on a wiki without
#: OAuth, which ignores the header, the failed assert=user of a request made anonymously.
TOKEN_REFUSED = ("mwoauth-invalid-authorization", "mwoauth-invalid-authorization-invalid-user",
                 "assertuserfailed", "assertnameduserfailed")


#: Warnings by which MediaWiki says it ignored part of a request (a parameter, or a value of a
#: list parameter), so that its answer is not to the question asked.
IGNORED_PART_WARNINGS = ("unrecognizedparams", "unrecognizedvalues")


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Whether and when a request is sent again, for a person who is waiting: a read (``transient``)
    after a connection failure, HTTP 5xx or 429; any request after maxlag, or ratelimited with a
    Retry-After, which prove that nothing was done. It waits as Retry-After asks, else 0.5 s doubling;
    a longer wait than ``longest_wait``, ``attempts`` sent, or ``budget`` seconds spent ends it."""
    budget: float = READ_RETRY_BUDGET_SECONDS
    attempts: int = MAX_ATTEMPTS
    longest_wait: float = MAX_RETRY_WAIT_SECONDS
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def wait(self, attempt: int, started: float, *, transient: bool, status: int | None = None,
             code: str | None = None, retry_after: str | None = None) -> float | None:
        """Seconds to wait before sending again after attempt ``attempt`` (1: the first) of a request
        first sent at ``started`` (``clock``), or None: not again. ``status`` None: no answer came."""
        if not (code == "maxlag" or code == "ratelimited" and retry_after is not None
                or transient and (status is None or status >= 500 or status == 429)):
            return None
        backoff = min(0.5 * 2 ** (attempt - 1), self.longest_wait)
        try:
            wait = max(float(retry_after), 0.0) if retry_after and retry_after.strip() else backoff
        except ValueError:  # an HTTP date: not worth parsing for a wait this short
            wait = backoff
        too_long = not wait <= self.longest_wait or self.clock() + wait > started + self.budget
        return None if attempt >= self.attempts or too_long else wait

    def pause(self, attempt: int, started: float, why: str = "", **answer: Any) -> bool:
        """Waits as ``wait`` says and returns True, or returns False at once: not again."""
        wait = self.wait(attempt, started, **answer)
        if wait is None:
            return False
        if why:
            log.info("%s; retrying in %.1f s", why, wait)
        self.sleep(wait)
        return True


@dataclasses.dataclass(frozen=True)
class Credentials:
    """Whom a client signs in as: a bot password (username, password) or an OAuth token; and
    the user name and password of HTTP basic auth, for the web server in front of the wiki."""
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    token: str | None = dataclasses.field(default=None, repr=False)
    basic_auth: tuple[str, str] | None = dataclasses.field(default=None, repr=False)


class Learnt(typing.NamedTuple):
    """What a client has learnt of its wiki so far (MediaWikiClient.learnt): None, not yet."""
    site: SiteInfo | None
    api_url: str | None


class MediaWikiClient:
    """The API of one wiki, shared by every tool call on worker threads.

    Reads are GETs; writes and long inputs are POSTs. What it learns of the wiki is fetched on
    first use and cached: the session, API address (discover_api), login, site info and tokens
    behind one lock; the account, the groups' rights, extensions, API parameters and messages
    without it, as two calls fetching them at once only fetch them twice.
    """

    def __init__(self, url: str, credentials: Credentials = Credentials(), *, user_agent_prefix: str = "",
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, retry: RetryPolicy | None = None,
                 guard: AddressGuard | None = None) -> None:
        self.url, userinfo = split_userinfo(url)
        self._basic_auth = credentials.basic_auth or userinfo
        self.username = credentials.username
        self._password = credentials.password
        self._token = credentials.token
        self.user_agent_prefix = user_agent_prefix
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        #: None: the operator chose this wiki. A guard: its URL came from a model, so every
        #: request passes the address guard and is pinned.
        self.guard = guard
        parsed = urllib.parse.urlsplit(self.url)
        self.host = (parsed.hostname or "").lower()
        self.name = parsed.netloc  # how messages name the wiki
        self._api_url: str | None = (urllib.parse.urlunsplit(parsed[:3] + ("", ""))
                                     if parsed.path.endswith("api.php") else None)
        self._session: requests.Session | None = None
        self._plain: requests.Session | None = None
        self._site: SiteInfo | None = None
        self._extensions: frozenset[str] | None = None
        self._parameters: dict[tuple[str, str], Any] | None = None
        self._summaries: dict[str, str] | None = None
        self._logged_in = False
        self._tokens: dict[str, str] = {}
        self._account: Account | None = None
        self._group_rights: dict[str, list[str]] | None = None
        self._lock = threading.RLock()
        #: Given the seconds each request to the wiki took (ServerState.observed: /metrics), or None.
        self.observe: Callable[[float], None] | None = None

    def __repr__(self) -> str:  # never the credentials
        return f"<MediaWikiClient {self.url!r} user={self.username!r}>"

    @property
    def authenticated(self) -> bool:
        return bool(self.username or self._token)

    # -- public API ---------------------------------------------------------

    def get(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A read: a GET (a POST when its parameters are too long for a URL), retried on
        transient failures within the retry budget."""
        self._ensure_ready()
        return self._call("GET", params)

    def token(self, kind: str = "csrf", refresh: bool = False) -> str:
        """A token of one of TOKEN_TYPES, fetched once per session with the others and cached."""
        with self._lock:
            if refresh or kind not in self._tokens:
                data = self.get({"action": "query", "meta": "tokens", "type": TOKEN_TYPES})
                tokens = data.get("query", {}).get("tokens", {})
                self._tokens = {k: tokens[f"{k}token"] for k in TOKEN_TYPES if tokens.get(f"{k}token")}
                if kind not in self._tokens:
                    raise upstream_failure(f"{self.name} gave no {kind} token. "
                                           + NEXT_STEP["upstream_failure"])
            return self._tokens[kind]

    def write(self, params: Mapping[str, Any], files: Mapping[str, Any] | None = None,
              token: str = "csrf") -> dict[str, Any]:
        """A write: a POST with maxlag and a token of the kind the action takes. It is sent
        again only after answers that prove nothing was written: maxlag, ratelimited with a
        short Retry-After, and badtoken (once, with a fresh token). An answer that never
        arrives raises ResponseLost and is not resent: the caller settles it (settle_write).
        ``files`` go multipart; give their contents as bytes so a resend can repeat them."""
        self._ensure_ready()
        fields = {**params, "maxlag": WRITE_MAXLAG_SECONDS}
        for attempt in (1, 2):
            fields["token"] = self.token(token, refresh=attempt > 1)
            if call := RUNNING_CALL.get():
                call.sent_write = True  # from here on, a stop cannot say that nothing changed
            try:
                return self._call("POST", fields, files=files, write=True)
            except WikiError as error:
                if error.code != "badtoken" or attempt > 1:
                    raise
                log.info("%s refused the edit token; fetching a new one", self.name)
        raise AssertionError("unreachable")

    @property
    def site(self) -> SiteInfo:
        """Site info, fetched once (and on the first call, with API discovery)."""
        self._ensure_ready()
        assert self._site is not None
        return self._site

    def refresh_site(self, extra_props: str = "") -> dict[str, Any]:
        """Fetches site info again (for get-site-info) and updates the cache."""
        params = dict(SITEINFO_PARAMS)
        if extra_props:
            params["siprop"] += "|" + extra_props
        data = self.get(params)
        with self._lock:
            self._site = SiteInfo.from_api(data.get("query", {}), self.api_url)
            if "extensions" in data.get("query", {}):
                self._extensions = extension_names(data["query"])
        return data.get("query", {})

    @property
    def extensions(self) -> frozenset[str]:
        """The names of the wiki's installed extensions, lower-cased; fetched once."""
        if self._extensions is None:
            data = self.get({"action": "query", "meta": "siteinfo", "siprop": "extensions"})
            self._extensions = extension_names(data.get("query", {}))
        return self._extensions

    @property
    def parameters(self) -> Mapping[tuple[str, str], Any]:
        """The types of the API parameters CHOICES and WATCH_EXPIRY name, by (module, name), as
        the wiki has them (a parameter it lacks is absent); fetched once, in one request."""
        if self._parameters is None:
            wanted = {module for module, _ in (*CHOICES.values(), WATCH_EXPIRY)}
            data = self.get({"action": "paraminfo", "modules": sorted(wanted)})
            self._parameters = {(m.get("path"), p.get("name")): p.get("type")
                                for m in data.get("paraminfo", {}).get("modules") or []
                                for p in m.get("parameters") or []}
        return self._parameters

    @property
    def choices(self) -> Mapping[str, tuple[str, ...]]:
        """The values the wiki takes for each of CHOICES' arguments (its content models, its log
        types), by kind."""
        types = {kind: self.parameters.get(parameter) for kind, parameter in CHOICES.items()}
        # a type name, not a list, where any string goes
        return {kind: tuple(v for v in values if v) if isinstance(values, list) else ()
                for kind, values in types.items()}

    @property
    def summaries(self) -> dict[str, str]:
        """The wiki's own messages for the edit summaries of SUMMARY_MESSAGES, in its content
        language (as MediaWiki writes its own summaries), by name; those it has not are left out.
        Fetched once."""
        if self._summaries is None:
            data = self.get({"action": "query", "meta": "allmessages", "ammessages": "|".join(SUMMARY_MESSAGES),
                             "amlang": self.site.lang or "en"})
            self._summaries = {m["name"]: m["content"] for m in data.get("query", {}).get("allmessages") or []
                               if isinstance(m.get("content"), str) and not m.get("missing")}
        return self._summaries

    @property
    def account(self) -> Account:
        """The account this client acts as, with its rights; fetched once."""
        if self._account is None:
            info = self.get({"action": "query", "meta": "userinfo", "uiprop": "groups|rights"}
                            ).get("query", {}).get("userinfo", {})
            self._account = Account(str(info.get("name", "")), "anon" in info,
                                    tuple(info.get("groups") or ()), frozenset(info.get("rights") or ()))
        return self._account

    @property
    def account_known(self) -> bool:
        """Whether ``account`` is known already, so that reading it asks the wiki nothing."""
        return self._account is not None

    def cannot(self, right: str) -> str | None:
        """Why the account may not use a right (``a|b``: either of two), as a sentence saying
        what it cannot do; None when it may. A right its groups give but its bot password's or
        token's grants leave out is named as such: only the user can add the grant."""
        account = self.account
        if account.can(right):
            return None
        right = right.split("|")[0]
        doing, grant = RIGHTS.get(right, (f"use the '{right}' right", ""))
        who = "Anonymous users" if account.anonymous else f"The account {account.name}"
        holders = self._holders(right)
        if self.missing_grant(right):
            via = (f"the bot password {self.username} lacks the grant '{grant}', which the user can add at "
                   "Special:BotPasswords" if self.username else
                   f"the OAuth token lacks the grant '{grant}'; its owner can issue one that has it")
            return f"{who} cannot {doing} on {self.name}: {via} (the account itself has the '{right}' right)."
        given = ", ".join("everyone" if g == "*" else g for g in holders) or "no group"
        return (f"{who} cannot {doing} on {self.name}: it lacks the '{right}' right, which the wiki gives "
                f"to: {given}.")

    def missing_grant(self, right: str) -> str | None:
        """The grant (as Special:BotPasswords names it) that the bot password or token lacks for a
        right (``a|b``: either) that the account's groups give; None when it has the right, or its
        groups lack it too."""
        if self.account.can(right) or not self.authenticated:
            return None
        right = right.split("|")[0]
        if set(self._holders(right)) & set(self.account.groups):
            return RIGHTS.get(right, ("", f"the one that carries '{right}'"))[1]
        return None

    def _holders(self, right: str) -> list[str]:
        """The groups the wiki gives a right to; fetched once."""
        if self._group_rights is None:
            data = self.get({"action": "query", "meta": "siteinfo", "siprop": "usergroups"})
            self._group_rights = {g.get("name", ""): g.get("rights") or []
                                  for g in data.get("query", {}).get("usergroups") or []}
        return [group for group, rights in self._group_rights.items() if right in rights]

    @property
    def api_url(self) -> str:
        self._ensure_ready()
        assert self._api_url is not None
        return self._api_url

    @property
    def learnt(self) -> Learnt:
        """Site info and API address as far as learnt so far, without any request."""
        return Learnt(self._site, self._api_url)

    def session_for(self, url: str) -> requests.Session:
        """The session for a request to ``url`` (fetch_file): the wiki's own, with its cookies and
        token, for the origin of its API; for any other, one without them."""
        home = origin_of(url) == origin_of(self.api_url)
        with self._lock:
            self._plain = self._plain or pinnable_session(self.user_agent_prefix, MAX_CALLS_PER_WIKI)
            return self._session if home and self._session else self._plain

    def close(self) -> None:
        for session in (self._session, self._plain):
            if session is not None:
                session.close()

    # -- first use ----------------------------------------------------------

    def _ensure_ready(self) -> None:
        if self._site is not None and (self._logged_in or not self.username):
            return
        with self._lock:
            if self._session is None:
                self._session = self._new_session()
            if self._api_url is None:
                self._api_url, query = discover_api(
                    self.url, lambda candidate: self._call("GET", SITEINFO_PARAMS, url=candidate, auth=False),
                    self._session, self.guard, self.timeout)
                if query is not None:
                    self._site = SiteInfo.from_api(query, self._api_url)
            if self.username and not self._logged_in:
                self._login()
            if self._site is None:  # learnt with the wiki's own credentials: private wikis work
                data = self._call("GET", SITEINFO_PARAMS)
                self._site = SiteInfo.from_api(data.get("query", {}), self._api_url)

    def _new_session(self) -> requests.Session:
        session = pinnable_session(self.user_agent_prefix, MAX_CALLS_PER_WIKI)
        session.headers["Accept-Encoding"] = "gzip"
        # requests reads proxy, CA bundle and netrc settings from the environment again on
        # every request (about a millisecond each time); the wiki is fixed, so read them once.
        session.trust_env = False
        session.proxies.update(_requests().utils.get_environ_proxies(self.url))
        session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
        if self._token:
            session.headers["Authorization"] = f"Bearer {self._token}"
        if self._basic_auth:
            session.auth = BasicAuth(origin_of(self.url), *self._basic_auth)
        if not self.user_agent_prefix and is_wikimedia_host(self.host):  # the setting is one: said once
            _warn_once("Set MEDIAWIKI_USER_AGENT to a name and contact address, such as "
                       "'MyTool/1.0 (you@example.org)': Wikimedia throttles clients without one.")
        return session

    def _login(self) -> None:
        """Bot-password login (action=login); anything but Success is refused."""
        token = self._call("GET", {"action": "query", "meta": "tokens", "type": "login"}, auth=False)
        login_token = token.get("query", {}).get("tokens", {}).get("logintoken", "")
        data = self._call("POST", {"action": "login", "lgname": self.username,
                                   "lgpassword": self._password or "", "lgtoken": login_token},
                          auth=False)
        result = data.get("login", {})
        if result.get("result") != "Success":
            reason = result.get("reason") or result.get("result") or "no reason given"
            if isinstance(reason, dict):
                reason = reason.get("text") or reason.get("code") or ""
            raise authentication(f"Login to {self.name} as {self.username} failed: "
                                 f"{reason} Check the bot password's user name (Name@BotName) and "
                                 "password in Special:BotPasswords; no retry by the model changes this.")
        self._logged_in = True
        self._tokens = {}  # tokens belong to the session
        log.info("logged in to %s as %s", self.name, logged(self.username or ""))

    # -- the request path: send (and follow), retry, read the answer --------------

    def _call(self, method: str, params: Mapping[str, Any], *, files: Mapping[str, Any] | None = None,
              url: str | None = None, auth: bool = True, relogin: bool = True,
              write: bool = False) -> dict[str, Any]:
        """A request to the API, sent again as the retry policy says (a read, asked as a GET, after
        transient failures too), its answer read (_answer); an expired session is logged into again once."""
        read, target = method == "GET", url or self._api_url
        assert target is not None
        fields = encode_params(params)
        # errorlang: the wiki's messages come inside this server's English sentences, whatever
        # language the account prefers
        fields.update(format="json", formatversion="2", errorformat="plaintext", errorlang="en")
        if auth and self.authenticated:
            fields["assert"] = "user"  # a lost session must fail, never act anonymously
        if method == "GET" and len(urllib.parse.urlencode(fields)) > MAX_GET_PARAMS_BYTES:
            method = "POST"  # wikitext to parse or compare, say
        started, attempt = self.retry.clock(), 0
        while True:
            attempt += 1
            try:
                response = self._send(method, target, fields, files)
            except _requests().RequestException as exc:  # connection refused, reset, timeout
                timed_out = isinstance(exc, _requests().Timeout)
                problem = (f"timed out after {self.timeout[1]:g} s" if timed_out
                           else f"could not be reached ({type(exc).__name__})")
                if write and not never_connected(exc):  # else nothing was sent: a plain failure
                    lost = problem if timed_out else f"dropped the connection ({type(exc).__name__})"
                    raise ResponseLost(f"The wiki at {self.name} {lost} while writing.") from None
                if self.retry.pause(attempt, started, transient=read and not timed_out):
                    continue
                raise upstream_failure(f"The wiki at {self.name} {problem}. " + RETRY_LATER) from None
            data = parse_json(response)
            code = api_error_code(data)
            if self.retry.pause(attempt, started, f"{self.name} answered {response.status_code}"
                                + (f" ({code})" if code else ""), transient=read,
                                status=response.status_code, code=code,
                                retry_after=response.headers.get("Retry-After")):
                continue
            try:
                return self._answer(response, data, target, fields, write)
            except WikiError as error:
                if not (relogin and self.username and error.code in ("assertuserfailed",
                                                                     "assertnameduserfailed")):
                    raise
            with self._lock:  # the session expired: log in again once, then retry
                self._logged_in = False
                self._login()
            return self._call(method, params, files=files, url=url, auth=auth, relogin=False, write=write)

    def _send(self, method: str, url: str, fields: dict[str, str],
              files: Mapping[str, Any] | None) -> requests.Response:
        """Sends one request to the API (follow): a GET's redirects are followed where the
        credentials stay home, and one to the same host moves the API address for good."""
        assert self._session is not None

        def hop(location: str) -> None:
            new_host = (urllib.parse.urlsplit(location).hostname or "").lower()
            if method != "GET":
                raise upstream_failure(f"The wiki redirected a POST to {location}; "
                                       "set the wiki's URL to its final api.php address.")
            if new_host != self.host and self.authenticated:
                raise upstream_failure(f"The wiki at {self.name} redirected to another "
                                       f"host ({new_host}); credentials are not sent there. Set the wiki's "
                                       "URL to the address it redirects to.")
            if self._api_url is not None and new_host == self.host:
                self._api_url = location.split("?")[0]  # e.g. http -> https: go there directly from now on
        options = {"params": fields} if method == "GET" else {"data": fields, "files": files}
        started = time.monotonic()
        try:
            return follow(self._session, method, url, guard=self.guard, hop=hop, timeout=self.timeout, **options)
        finally:
            if self.observe is not None:
                self.observe(time.monotonic() - started)

    def _answer(self, response: requests.Response, data: dict[str, Any] | None, target: str,
                fields: Mapping[str, str], write: bool) -> dict[str, Any]:
        """The API's answer to a request, or the WikiError it means: by MediaWiki's error code when
        there is one, else by the HTTP status (a write with no API answer may have been saved all
        the same: ResponseLost). MediaWiki answers a request with a parameter or value it does not
        know as if that part had not been asked (an unknown namespace ID: results from every
        namespace), with a warning; so such a warning fails a read. A write has happened by then,
        so it is logged loudly instead, as other warnings (deprecations) are logged."""
        status, code = response.status_code, api_error_code(data)
        if code is not None and data is not None:
            if code == "readapidenied" and not self.authenticated:
                raise authentication(f"{self.name} is a private wiki: reading needs "
                                     "an account. Configure a bot password or token for it.", code)
            if self._token and code in TOKEN_REFUSED:  # a token has no session to expire
                raise authentication(
                    f"{self.name} did not accept the OAuth token (MEDIAWIKI_TOKEN, or token in the "
                    "configuration file): it is mistyped, expired or revoked, or the wiki lacks the "
                    "OAuth extension. Tell the user; no retry by the model changes this.", code)
            raise error_from_api(code, api_error_text(data), self.name)
        if status == 429:
            raise rate_limited(f"{self.name} is throttling requests (HTTP 429). " + NEXT_STEP["rate_limited"])
        if status == 401 and data is None:  # the web server in front of the wiki, not MediaWiki
            raise authentication(f"The web server of {self.name} refused the request with "
                                 "HTTP 401: it wants a user name and password (HTTP basic auth), "
                                 + ("and refused those in the wiki's address." if self._basic_auth else
                                    "which go in the wiki's address: https://user:password@host/...")
                                 + " Tell the user; no retry by the model changes this.")
        if data is None:
            kind = response.headers.get("Content-Type", "unknown").split(";")[0]
            if write:
                raise ResponseLost(f"The wiki at {self.name} answered the write with HTTP {status} "
                                   f"and {kind} instead of API JSON.")
            if status < 500:  # an answer, but not the API's: the address is wrong
                raise upstream_failure(f"{target} answered HTTP {status} with {kind}, not MediaWiki API "
                                       "JSON: it is not the wiki's api.php. Tell the user to check the "
                                       "wiki's address in the configuration; no retry changes this.")
            raise upstream_failure(f"The wiki at {self.name} answered HTTP {status} "
                                   f"with {kind} instead of API JSON. " + RETRY_LATER)
        if status >= 400:
            if write and status >= 500:  # a gateway's error in JSON: the wiki may have saved
                raise ResponseLost(f"The wiki at {self.name} answered the write with HTTP {status} "
                                   "and no API answer.")
            raise upstream_failure(f"The wiki at {self.name} answered HTTP {status}. "
                                   + (RETRY_LATER if status >= 500 else NEXT_STEP["upstream_failure"]))
        warnings = data.get("warnings")
        for warning in warnings if isinstance(warnings, list) else []:
            code = str(warning.get("code", ""))
            if code not in IGNORED_PART_WARNINGS or write:
                log.log(logging.WARNING if code in IGNORED_PART_WARNINGS else logging.DEBUG,
                        "warning %s from %s: %s", code, self.name, warning.get("text"))
                continue
            text = " ".join(str(warning.get("text", "")).split())
            if code == "unrecognizedparams":
                raise upstream_failure(f"{self.name} ignored part of the request: {text} Its MediaWiki may "
                                       "be too old for this tool; tell the user. The same call fails "
                                       "again.", code)
            values = [str(v) for v in (warning.get("data") or {}).get("values") or []]
            of_namespace = any(name.endswith("namespace") and set(values) <= set(field_values(value))
                               for name, value in fields.items())
            if values and of_namespace and self._site:
                raise invalid_input(f"{self.name} has no namespace {', '.join(values)} to use "
                                    f"here. Its namespaces: {self._site.namespace_list()}.", code)
            raise invalid_input(f"{self.name} does not know the value {', '.join(values)} that "
                                f"this call asked for: {text} Change the call.", code)
        return data

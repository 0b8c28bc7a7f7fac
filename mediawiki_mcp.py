# /// script
# requires-python = ">=3.10"
# dependencies = ["mcp>=2.3,<3", "requests"]
# ///
"""mediawiki-mcp: a Model Context Protocol server for any MediaWiki wiki.

One module, read top to bottom: constants, errors, the MediaWiki client,
configuration, text helpers, tools, command line. Run it with
``python mediawiki_mcp.py`` (stdio) or embed it::

    from mediawiki_mcp import Config, create_server
    server = create_server(Config.from_env())

Importing this module does no I/O and starts nothing.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import html
import inspect
import json
import logging
import os
import re
import sys
import threading
import time
import types
import typing
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

if TYPE_CHECKING:  # imported lazily at run time: see _requests()
    import requests
    from mcp.server.mcpserver import MCPServer

__version__ = "0.1.0"

log = logging.getLogger("mediawiki_mcp")

# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------

DEFAULT_WIKI_URL = "https://en.wikipedia.org/w/api.php"
DEFAULT_CONTENT_MAX_BYTES = 50_000

#: (connect, read) seconds for every request to a wiki.
DEFAULT_TIMEOUT = (10.0, 30.0)
#: Reads give up retrying once this many seconds have passed: a person is waiting.
READ_RETRY_BUDGET_SECONDS = 30.0
MAX_ATTEMPTS = 4
#: The longest single wait between attempts; a longer Retry-After ends the retries.
MAX_RETRY_WAIT_SECONDS = 10.0
MAX_REDIRECTS = 5
#: Sent on writes so that a lagged database cluster refuses them cleanly.
WRITE_MAXLAG_SECONDS = 5
#: MediaWiki's own limit on a title, in bytes of UTF-8.
MAX_TITLE_BYTES = 255
#: How many sections a truncation marker lists before summarising the rest.
MARKER_MAX_SECTIONS = 60

#: Hosts whose operators ask for contact details in the User-Agent.
WIKIMEDIA_HOST_SUFFIXES = (
    "wikipedia.org", "wikimedia.org", "wikidata.org", "wiktionary.org", "wikibooks.org",
    "wikiquote.org", "wikisource.org", "wikinews.org", "wikiversity.org", "wikivoyage.org",
    "mediawiki.org", "wikifunctions.org",
)

ERROR_CATEGORIES = (
    "not_found", "permission_denied", "invalid_input", "conflict",
    "authentication", "rate_limited", "upstream_failure",
)

#: MediaWiki API error codes and the category each one means for a caller.
#: Anything not listed becomes upstream_failure with MediaWiki's own text kept.
MW_ERROR_CATEGORIES: dict[str, str] = {
    **dict.fromkeys((
        "missingtitle", "nosuchrevid", "nosuchpageid", "nosuchsection", "rvnosuchsection",
        "nosuchuser", "missingfile", "nofile", "filenotfound", "nosuchlogid",
        "cantundelete", "nodeletedrevs",
    ), "not_found"),
    **dict.fromkeys((
        "permissiondenied", "protectedpage", "protectedtitle", "protectednamespace",
        "protectednamespace-interface", "cascadeprotected", "blocked", "autoblocked",
        "blockedfrommail", "readapidenied", "writeapidenied", "noapiwrite", "cantcreate",
        "cantcreate-anon", "noimageredirect", "noimageredirect-anon", "noedit", "noedit-anon",
        "cantedit", "customcssprotected", "customjsprotected", "customjsonprotected",
        "sitecssprotected", "sitejsprotected", "sitejsonprotected", "abusefilter-disallowed",
        "abusefilter-blocked-display", "spamblacklist", "titleblacklist-forbidden",
        "cantmove", "cantmove-anon", "cantmovefile", "cantdelete", "badaccess-groups",
        "mustbeposted", "emptynewsection", "confirmemail", "upload-disabled", "uploaddisabled",
        "copyuploaddisabled", "copyuploadbaddomain", "copyuploadbadurl", "unsupportednamespace",
    ), "permission_denied"),
    **dict.fromkeys((
        "invalidtitle", "badtags", "tags-apply-not-allowed-one", "tags-apply-not-allowed-multi",
        "missingparam", "badvalue", "invalidsection", "badcontinue", "toomanyvalues",
        "paramempty", "invalidparammix", "notanarticle", "baddatatype", "badinteger",
        "unknown_action", "nosuchnamespace", "badmd5", "contenttoobig", "selfmove",
        "immobilenamespace", "nonfilenamespace", "invalid-content-data", "badformat",
        "unsupportedrepo", "invalidexpiry", "invalid-file-key", "illegal-filename",
        "filetype-banned", "filetype-missing", "bad-prefix", "verification-error",
        "empty-file", "file-too-large", "toolong", "mustpostparams", "missingtitle-createonly",
        "invalidcategory", "invaliduser", "baduser", "notarget", "fileexists-forbidden",
        "nosuchtag", "badparams", "unknownparam", "invalidlang",
    ), "invalid_input"),
    **dict.fromkeys((
        "editconflict", "articleexists", "pagedeleted", "fileexists-no-change",
        "duplicate-archive", "exists", "alreadyrolled", "filedupe", "duplicate",
    ), "conflict"),
    **dict.fromkeys((
        "assertuserfailed", "assertbotfailed", "assertnameduserfailed", "notloggedin",
        "mwoauth-invalid-authorization", "mwoauth-invalid-authorization-invalid-user",
        "login-required", "badtoken", "notoken",
    ), "authentication"),
    **dict.fromkeys((
        "ratelimited", "maxlag", "actionthrottled", "actionthrottledtext",
    ), "rate_limited"),
}

#: What the caller can do next, by category, for errors raised by MediaWiki.
NEXT_STEP = {
    "not_found": "Check the title or ID; search-page-by-prefix or search-page finds existing pages.",
    "permission_denied": "Tell the user; retrying as the same account changes nothing.",
    "authentication": "Tell the user to check the wiki's credentials.",
    "rate_limited": "Wait a minute before retrying.",
    "upstream_failure": "Retry later; tell the user if it persists.",
}

ENVIRONMENT_VARIABLES = {
    "MEDIAWIKI_URL": "any URL of the wiki: api.php, a page or its origin "
                     f"(default {DEFAULT_WIKI_URL})",
    "MEDIAWIKI_USERNAME": "bot password user name, such as Name@BotName",
    "MEDIAWIKI_PASSWORD": "bot password (from Special:BotPasswords)",
    "MEDIAWIKI_TOKEN": "OAuth 2 owner-only access token (instead of a bot password)",
    "MEDIAWIKI_READ_ONLY": "true offers no write tools; default: true without credentials",
    "MEDIAWIKI_USER_AGENT": "your part of the User-Agent, such as 'MyBot/1.0 (me@example.org)'",
    "MCP_CONTENT_MAX_BYTES": f"byte budget of content per response (default {DEFAULT_CONTENT_MAX_BYTES})",
    "MEDIAWIKI_MCP_LOG_LEVEL": "log level on stderr (default INFO)",
    "MCP_TRANSPORT": "stdio (default) or http (Streamable HTTP at /mcp); or --transport",
    "MCP_BIND": "HTTP: address to listen on (default 127.0.0.1); or --host",
    "PORT": "HTTP: port (default 3000; 0 picks a free one); or --port",
    "MCP_ALLOWED_HOSTS": "HTTP: Host headers accepted, comma-separated, name:* for any port",
    "MCP_ALLOWED_ORIGINS": "HTTP: Origin headers accepted, comma-separated (https://app.example.org)",
    "MCP_AUTH_TOKEN": "HTTP: token every request to /mcp must send as 'Authorization: Bearer'",
    "MCP_STATELESS": "HTTP: true keeps no state between requests, for replicas; or --stateless",
}


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

class WikiError(Exception):
    """The one exception of this module: a failure the caller is told about.

    ``str(error)`` is the text the model receives: ``category: message``.
    """

    def __init__(self, category: str, message: str) -> None:
        assert category in ERROR_CATEGORIES, category
        super().__init__(category, message)
        self.category = category
        self.message = message

    def __str__(self) -> str:
        return f"{self.category}: {self.message}"


def invalid(message: str) -> WikiError:
    return WikiError("invalid_input", message)


def error_from_api(code: str, text: str, wiki: str = "") -> WikiError:
    """Maps a MediaWiki API error to a WikiError, keeping MediaWiki's words."""
    category = MW_ERROR_CATEGORIES.get(code)
    if category is None and code.startswith(("abusefilter-", "spamblacklist")):
        category = "permission_denied"
    if category is None and code == "readonly":
        text = f"The wiki is in read-only mode: {text}"
    text = " ".join(text.split()) or code
    where = f" ({wiki})" if wiki else ""
    if category is None:
        return WikiError("upstream_failure", f"MediaWiki error {code}{where}: {text} "
                                             + NEXT_STEP["upstream_failure"])
    step = NEXT_STEP.get(category, "")
    return WikiError(category, f"{text}{where} [{code}]" + (f" {step}" if step else ""))


# ---------------------------------------------------------------------------
# MediaWiki client
# ---------------------------------------------------------------------------

def _requests() -> Any:
    """Imports requests on first use: it costs ~0.1 s that start-up need not pay."""
    import requests
    return requests


def is_wikimedia_host(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(host == s or host.endswith("." + s) for s in WIKIMEDIA_HOST_SUFFIXES)


def user_agent(operator_part: str = "") -> str:
    ours = f"mediawiki-mcp/{__version__} requests/{_requests().__version__}"
    return f"{operator_part.strip()} {ours}".strip()


@dataclasses.dataclass(frozen=True)
class SiteInfo:
    """What the client learns once per wiki (action=query&meta=siteinfo)."""
    name: str
    generator: str
    server: str           # scheme and host, never protocol-relative
    article_path: str     # "/wiki/$1"
    script_path: str      # "/w"
    lang: str
    main_page: str
    read_only: bool
    read_only_reason: str
    namespaces: dict[int, str]          # ID -> local name ("" for the main namespace)
    namespace_ids: dict[str, int]       # lower-cased local, canonical and alias names -> ID
    raw: dict[str, Any]

    def page_url(self, title: str) -> str:
        path = urllib.parse.quote(title.replace(" ", "_"), safe=";@$!*(),/~:")
        return self.server + self.article_path.replace("$1", path)

    def index_url(self, **params: Any) -> str:
        return f"{self.server}{self.script_path}/index.php?" + urllib.parse.urlencode(params)

    def namespace_of(self, title: str) -> int:
        prefix, sep, _ = title.partition(":")
        if not sep:
            return 0
        return self.namespace_ids.get(prefix.strip().replace("_", " ").lower(), 0)

    @classmethod
    def from_api(cls, query: dict[str, Any], api_url: str) -> SiteInfo:
        general = query.get("general", {})
        scheme = urllib.parse.urlsplit(api_url).scheme or "https"
        server = general.get("server") or ""
        if server.startswith("//"):  # protocol-relative $wgServer, as on Wikimedia wikis
            server = f"{scheme}:{server}"
        if not server:
            parts = urllib.parse.urlsplit(api_url)
            server = f"{parts.scheme}://{parts.netloc}"
        namespaces: dict[int, str] = {}
        ids: dict[str, int] = {}
        for ns in (query.get("namespaces") or {}).values():
            nsid = int(ns["id"])
            namespaces[nsid] = ns.get("name", "")
            for name in (ns.get("name"), ns.get("canonical")):
                if name:
                    ids[name.lower()] = nsid
        for alias in query.get("namespacealiases") or []:
            ids[alias.get("alias", "").lower()] = int(alias["id"])
        return cls(
            name=general.get("sitename", ""),
            generator=general.get("generator", ""),
            server=server.rstrip("/"),
            article_path=general.get("articlepath") or "/index.php?title=$1",
            script_path=general.get("scriptpath", ""),
            lang=general.get("lang", ""),
            main_page=general.get("mainpage", ""),
            read_only=bool(general.get("readonly")),
            read_only_reason=general.get("readonlyreason", ""),
            namespaces=namespaces,
            namespace_ids=ids,
            raw=general,
        )


SITEINFO_PARAMS = {"action": "query", "meta": "siteinfo",
                   "siprop": "general|namespaces|namespacealiases"}


class MediaWikiClient:
    """The API of one wiki, shared by every tool call on worker threads.

    Reads are GETs; writes and long inputs are POSTs. Login, site info and the
    API address are learnt on first use and cached, behind one lock.
    """

    def __init__(
        self,
        url: str,
        *,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        user_agent_prefix: str = "",
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
        retry_budget: float = READ_RETRY_BUDGET_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        pool_size: int = 32,
    ) -> None:
        self.url = url
        self.username = username
        self._password = password
        self._token = token
        self.user_agent_prefix = user_agent_prefix
        self.timeout = timeout
        self.retry_budget = retry_budget
        self.sleep = sleep
        self.pool_size = pool_size
        parsed = urllib.parse.urlsplit(url)
        self.host = (parsed.hostname or "").lower()
        self.name = parsed.netloc  # how messages name the wiki
        self._api_url: str | None = url if parsed.path.endswith("api.php") else None
        self._session: requests.Session | None = None
        self._site: SiteInfo | None = None
        self._logged_in = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:  # never the credentials
        return f"<MediaWikiClient {self.url!r} user={self.username!r}>"

    @property
    def authenticated(self) -> bool:
        return bool(self.username or self._token)

    # -- public API ---------------------------------------------------------

    def get(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """A read: a GET, retried on transient failures within the retry budget."""
        self._ensure_ready()
        return self._call("GET", params, retry_transient=True)

    def post(self, params: Mapping[str, Any], files: Mapping[str, Any] | None = None,
             retry_transient: bool = False) -> dict[str, Any]:
        """A POST. Retried only on errors that prove nothing was done, unless told
        the request is a read too long for a URL (retry_transient=True)."""
        self._ensure_ready()
        return self._call("POST", params, files=files, retry_transient=retry_transient)

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
        return data.get("query", {})

    @property
    def api_url(self) -> str:
        self._ensure_ready()
        assert self._api_url is not None
        return self._api_url

    def close(self) -> None:
        if self._session is not None:
            self._session.close()

    # -- first use ----------------------------------------------------------

    def _ensure_ready(self) -> None:
        if self._site is not None and (self._logged_in or not self.username):
            return
        with self._lock:
            if self._session is None:
                self._session = self._new_session()
            if self.username and not self._logged_in:
                if self._api_url is None:
                    self._discover_api()
                self._login()
            if self._site is None:
                if self._api_url is None:
                    self._discover_api()
                else:
                    data = self._call("GET", SITEINFO_PARAMS, retry_transient=True)
                    self._site = SiteInfo.from_api(data.get("query", {}), self._api_url)

    def _new_session(self) -> requests.Session:
        rq = _requests()
        session = rq.Session()
        adapter = rq.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=self.pool_size)
        session.mount("https://", adapter)
        session.mount("http://", adapter)
        session.headers["User-Agent"] = user_agent(self.user_agent_prefix)
        session.headers["Accept-Encoding"] = "gzip"
        if self._token:
            session.headers["Authorization"] = f"Bearer {self._token}"
        if not self.user_agent_prefix and is_wikimedia_host(self.host):
            _warn_once("Set MEDIAWIKI_USER_AGENT to a name and contact address, such as "
                       "'MyTool/1.0 (you@example.org)': Wikimedia throttles clients without one.")
        return session

    def _discover_api(self) -> None:
        """Finds api.php from the configured URL: tries /w/api.php, then /api.php."""
        parts = urllib.parse.urlsplit(self.url)
        if not parts.scheme or not parts.netloc:
            raise invalid(f"{self.url!r} is not a wiki URL; give its api.php address or origin.")
        origin = f"{parts.scheme}://{parts.netloc}"
        failures = []
        for candidate in (origin + "/w/api.php", origin + "/api.php"):
            try:
                data = self._call("GET", SITEINFO_PARAMS, retry_transient=True, url=candidate)
            except WikiError as error:
                failures.append(f"{candidate}: {error.message}")
                continue
            if "general" in data.get("query", {}):
                self._api_url = candidate
                self._site = SiteInfo.from_api(data["query"], candidate)
                return
        raise WikiError("upstream_failure", f"No MediaWiki API found at {self.url}: "
                        + "; ".join(failures) + ". Set MEDIAWIKI_URL to the wiki's api.php address.")

    def _login(self) -> None:
        """Bot-password login (action=login); anything but Success is refused."""
        token = self._call("GET", {"action": "query", "meta": "tokens", "type": "login"},
                           retry_transient=True, auth=False)
        login_token = token.get("query", {}).get("tokens", {}).get("logintoken", "")
        data = self._call("POST", {"action": "login", "lgname": self.username,
                                   "lgpassword": self._password or "", "lgtoken": login_token},
                          auth=False)
        result = data.get("login", {})
        if result.get("result") != "Success":
            reason = result.get("reason") or result.get("result") or "no reason given"
            if isinstance(reason, dict):
                reason = reason.get("text") or reason.get("code") or ""
            raise WikiError("authentication", f"Login to {self.name} as {self.username} failed: "
                            f"{reason} Check the bot password's user name (Name@BotName) and "
                            "password in Special:BotPasswords; no retry by the model changes this.")
        self._logged_in = True
        log.info("logged in to %s as %s", self.name, self.username)

    # -- the one place requests are sent ------------------------------------

    def _call(self, method: str, params: Mapping[str, Any], *, files: Mapping[str, Any] | None = None,
              retry_transient: bool = False, url: str | None = None, auth: bool = True,
              relogin: bool = True) -> dict[str, Any]:
        target = url or self._api_url
        assert target is not None and self._session is not None
        fields = encode_params(params)
        fields.update(format="json", formatversion="2", errorformat="plaintext")
        if auth and self.authenticated:
            fields["assert"] = "user"  # a lost session must fail, never act anonymously
        deadline = time.monotonic() + self.retry_budget
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            try:
                response = self._send(method, target, fields, files)
            except WikiError:
                raise
            except Exception as exc:  # connection refused, reset, timeout
                rq = _requests()
                if not isinstance(exc, rq.RequestException):
                    raise
                timed_out = isinstance(exc, rq.Timeout)
                problem = (f"timed out after {self.timeout[1]:g} s" if timed_out
                           else f"could not be reached ({type(exc).__name__})")
                if retry_transient and attempt < MAX_ATTEMPTS and not timed_out:
                    wait = backoff(attempt)
                if wait is None or time.monotonic() + wait > deadline:
                    raise WikiError("upstream_failure", f"The wiki at {self.name} {problem}. "
                                    + NEXT_STEP["upstream_failure"]) from None
                self.sleep(wait)
                continue
            status = response.status_code
            data = parse_json(response)
            code = api_error_code(data)
            retryable = (status >= 500 or status == 429) and retry_transient or code == "maxlag"
            if retryable and attempt < MAX_ATTEMPTS:
                wait = retry_after(response, attempt)
                if wait is not None and time.monotonic() + wait <= deadline:
                    log.info("%s answered %s%s; retrying in %.1f s", self.name, status,
                             f" ({code})" if code else "", wait)
                    self.sleep(wait)
                    continue
            if code is not None:
                if code in ("assertuserfailed", "assertnameduserfailed") and self.username and relogin:
                    with self._lock:  # the session expired: log in again once, then retry
                        self._logged_in = False
                        self._login()
                    return self._call(method, params, files=files, retry_transient=retry_transient,
                                      url=url, auth=auth, relogin=False)
                if code == "readapidenied" and not self.authenticated:
                    raise WikiError("authentication", f"{self.name} is a private wiki: reading needs "
                                    "an account. Configure a bot password or token for it.")
                raise error_from_api(code, api_error_text(data), self.name)
            if status == 429:
                raise WikiError("rate_limited", f"{self.name} is throttling requests (HTTP 429). "
                                + NEXT_STEP["rate_limited"])
            if data is None:
                kind = response.headers.get("Content-Type", "unknown").split(";")[0]
                raise WikiError("upstream_failure", f"The wiki at {self.name} answered HTTP {status} "
                                f"with {kind} instead of API JSON. " + NEXT_STEP["upstream_failure"])
            if status >= 400:
                raise WikiError("upstream_failure", f"The wiki at {self.name} answered HTTP {status}. "
                                + NEXT_STEP["upstream_failure"])
            for warning in data.get("warnings") or []:
                log.debug("warning from %s: %s", self.name, warning)
            return data

    def _send(self, method: str, url: str, fields: dict[str, str],
              files: Mapping[str, Any] | None) -> requests.Response:
        """Sends one request, following redirects only where credentials stay home."""
        assert self._session is not None
        for _ in range(MAX_REDIRECTS + 1):
            if method == "GET":
                response = self._session.get(url, params=fields, timeout=self.timeout,
                                             allow_redirects=False)
            else:
                response = self._session.post(url, data=fields, files=files, timeout=self.timeout,
                                              allow_redirects=False)
            if not response.is_redirect:
                return response
            location = urllib.parse.urljoin(response.url, response.headers["Location"])
            new_host = (urllib.parse.urlsplit(location).hostname or "").lower()
            if method != "GET":
                raise WikiError("upstream_failure", f"The wiki redirected a POST to {location}; "
                                "set the wiki's URL to its final api.php address.")
            if new_host != self.host and self.authenticated:
                raise WikiError("upstream_failure", f"The wiki at {self.name} redirected to another "
                                f"host ({new_host}); credentials are not sent there. Set the wiki's "
                                "URL to the address it redirects to.")
            url = location.split("?")[0]
            if url != self._api_url and self._api_url is not None and new_host == self.host:
                self._api_url = url  # e.g. http -> https: go there directly from now on
            fields = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query)) or fields
        raise WikiError("upstream_failure", f"The wiki at {self.name} redirected too many times.")


def encode_params(params: Mapping[str, Any]) -> dict[str, str]:
    """Turns Python values into API fields: lists joined by | (or U+001F when a
    value holds a |), booleans present only when true, None left out."""
    fields: dict[str, str] = {}
    for key, value in params.items():
        if value is None or value is False:
            continue
        if value is True:
            fields[key] = "1"
        elif isinstance(value, (list, tuple)):
            items = [str(v) for v in value]
            fields[key] = ("\x1f" + "\x1f".join(items)) if any("|" in v for v in items) else "|".join(items)
        else:
            fields[key] = str(value)
    return fields


def parse_json(response: requests.Response) -> dict[str, Any] | None:
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def api_error_code(data: dict[str, Any] | None) -> str | None:
    if not data:
        return None
    if data.get("errors"):
        return str(data["errors"][0].get("code", "unknown"))
    if isinstance(data.get("error"), dict):
        return str(data["error"].get("code", "unknown"))
    return None


def api_error_text(data: dict[str, Any]) -> str:
    if data.get("errors"):
        return " ".join(str(e.get("text") or e.get("*") or "") for e in data["errors"])
    error = data.get("error") or {}
    return str(error.get("info") or error.get("*") or "")


def backoff(attempt: int) -> float:
    return min(0.5 * 2 ** (attempt - 1), MAX_RETRY_WAIT_SECONDS)


def retry_after(response: requests.Response, attempt: int) -> float | None:
    """Seconds to wait before retrying, from Retry-After if given; None if too long."""
    header = response.headers.get("Retry-After", "").strip()
    if not header:
        return backoff(attempt)
    try:
        wait = float(header)
    except ValueError:  # an HTTP date: not worth parsing for a wait this short
        return backoff(attempt)
    return max(wait, 0.0) if wait <= MAX_RETRY_WAIT_SECONDS else None


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


# ---------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------

TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off", ""}


class ConfigError(Exception):
    """Configuration that cannot work; main() prints it and exits non-zero."""


def parse_bool(name: str, value: str) -> bool:
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ConfigError(f"{name} must be true or false, not {value!r}")


@dataclasses.dataclass
class WikiConfig:
    """One configured wiki. Credentials are never shown by repr()."""
    key: str
    url: str
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    token: str | None = dataclasses.field(default=None, repr=False)
    read_only: bool = True
    private: bool = False                 # its content must not leave through public means
    tags: list[str] = dataclasses.field(default_factory=list)   # change tags sent on every write
    attribute_edits: bool = True          # edit summaries end with " (via mediawiki-mcp)"

    def client(self, user_agent_prefix: str = "", **options: Any) -> MediaWikiClient:
        return MediaWikiClient(self.url, username=self.username, password=self.password,
                               token=self.token, user_agent_prefix=user_agent_prefix, **options)


@dataclasses.dataclass
class Config:
    wikis: dict[str, WikiConfig]
    default_wiki: str
    content_max_bytes: int = DEFAULT_CONTENT_MAX_BYTES
    user_agent: str = ""
    upload_dirs: list[str] = dataclasses.field(default_factory=list)
    trusted_hosts: list[str] = dataclasses.field(default_factory=list)
    allow_wiki_management: bool = True
    stateless: bool = False               # HTTP replicas: offer nothing that needs session state

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        env = os.environ if environ is None else environ
        url = env.get("MEDIAWIKI_URL", "").strip() or DEFAULT_WIKI_URL
        parts = urllib.parse.urlsplit(url if "://" in url else "https://" + url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"MEDIAWIKI_URL must be an http(s) URL of the wiki, not {url!r}")
        url = urllib.parse.urlunsplit(parts)
        username = env.get("MEDIAWIKI_USERNAME", "").strip() or None
        password = env.get("MEDIAWIKI_PASSWORD") or None
        token = env.get("MEDIAWIKI_TOKEN", "").strip() or None
        if bool(username) != bool(password):
            raise ConfigError("MEDIAWIKI_USERNAME and MEDIAWIKI_PASSWORD go together: set both or neither")
        if username and token:
            raise ConfigError("Set either MEDIAWIKI_USERNAME/MEDIAWIKI_PASSWORD or MEDIAWIKI_TOKEN, not both")
        read_only = not (username or token)
        if env.get("MEDIAWIKI_READ_ONLY", "").strip():
            read_only = parse_bool("MEDIAWIKI_READ_ONLY", env["MEDIAWIKI_READ_ONLY"])
        key = wiki_key(url)
        wiki = WikiConfig(key=key, url=url, username=username, password=password, token=token,
                          read_only=read_only)
        budget = env.get("MCP_CONTENT_MAX_BYTES", "").strip()
        content_max_bytes = DEFAULT_CONTENT_MAX_BYTES
        if budget:
            if not budget.isdigit() or int(budget) < 1000:
                raise ConfigError(f"MCP_CONTENT_MAX_BYTES must be a whole number of bytes, at least "
                                  f"1000, not {budget!r}")
            content_max_bytes = int(budget)
        return cls(wikis={key: wiki}, default_wiki=key, content_max_bytes=content_max_bytes,
                   user_agent=env.get("MEDIAWIKI_USER_AGENT", "").strip())


def wiki_key(url: str) -> str:
    """A wiki's key is its server name (with the port when there is one)."""
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "") + (f":{parts.port}" if parts.port else "")


# ---------------------------------------------------------------------------
# Text helpers: pure functions that shape what the model reads
# ---------------------------------------------------------------------------

def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def char_start(data: bytes, position: int) -> int:
    """Moves a byte position back to the start of the UTF-8 character it falls in."""
    position = max(0, min(position, len(data)))
    while 0 < position < len(data) and (data[position] & 0xC0) == 0x80:
        position -= 1
    return position


@dataclasses.dataclass(frozen=True)
class Slice:
    """A window of a content body, in UTF-8 bytes."""
    text: str
    start: int
    end: int
    total: int

    @property
    def truncated(self) -> bool:
        return self.end < self.total


def slice_content(text: str, offset: int, budget: int) -> Slice:
    """The part of ``text`` from byte ``offset`` that fits ``budget`` bytes, cut on
    character boundaries (an offset inside a character starts at that character)."""
    data = text.encode("utf-8")
    if offset > len(data):
        raise invalid(f"offset {offset} is past the end of the content ({len(data)} bytes).")
    start = char_start(data, offset)
    end = char_start(data, start + budget)
    if end == start and start < len(data):  # a budget smaller than one character
        end = start + 1
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end += 1
    return Slice(data[start:end].decode("utf-8"), start, end, len(data))


HEADING = re.compile(r"^(={1,6})(.+?)\1[ \t]*$", re.MULTILINE)
NOT_HEADINGS = re.compile(
    r"<!--.*?(?:-->|\Z)|<(nowiki|pre|syntaxhighlight|source|math|score|includeonly)\b[^>]*>.*?</\1\s*>",
    re.DOTALL | re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Section:
    number: int
    level: int
    heading: str


def wikitext_sections(text: str) -> list[Section]:
    """The sections of wikitext as MediaWiki numbers them for section=N editing."""
    visible = NOT_HEADINGS.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found = []
    for match in HEADING.finditer(visible):
        heading = match.group(2).strip()
        if heading.strip("="):
            found.append(Section(len(found) + 1, len(match.group(1)), heading))
    return found


def section_list(sections: list[tuple[int, str]]) -> str:
    """``0 (Lead), 1 (History), ...``, summarising beyond MARKER_MAX_SECTIONS."""
    shown = [f"{n} ({heading})" for n, heading in sections[:MARKER_MAX_SECTIONS]]
    rest = len(sections) - MARKER_MAX_SECTIONS
    if rest > 0:
        shown.append(f"and {rest} more ({sections[MARKER_MAX_SECTIONS][0]}-{sections[-1][0]})")
    return ", ".join(shown)


def call_args(**args: Any) -> str:
    """Renders arguments the way markers name them: ``section=2 and offset=50000``."""
    return " and ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())


def truncated_marker(piece: Slice, tool: str, *, sections: list[tuple[int, str]] | None = None,
                     again: Mapping[str, Any] | None = None, verb: str = "again with") -> str:
    """The content-truncated marker: where the cut is, and the exact next calls."""
    parts = [f"Content truncated at {piece.end} of {piece.total} bytes."]
    if sections:
        parts.append(f"Available sections: 0 (Lead), {section_list(sections)}."
                     if sections[0][0] != 0 else f"Available sections: {section_list(sections)}.")
        parts.append(f"To read a specific section, call {tool} {verb} section=N.")
    parts.append(f"To read on, call {tool} {verb} {call_args(**dict(again or {}), offset=piece.end)}.")
    return " ".join(parts)


def more_results_marker(count: int, items: str, tool: str, param: str, value: Any) -> str:
    return (f"More results available. Returned {count} {items}. To fetch the next segment, "
            f"call {tool} again with {param}={json.dumps(value, ensure_ascii=False)}.")


def labelled(*pairs: tuple[str, Any]) -> str:
    """Compact ``Label: value`` lines; empty and default values are left out."""
    return "\n".join(f"{label}: {value}" for label, value in pairs
                     if value not in (None, "", False, [], ()))


def strip_tags(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def encode_continuation(cont: Mapping[str, Any]) -> str:
    return urllib.parse.urlencode({k: str(v) for k, v in cont.items()}, safe="|:")


def decode_continuation(token: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """Parses a continueFrom token back into API fields, accepting only the
    continuation fields this tool's query produces (never other API parameters)."""
    try:
        pairs = urllib.parse.parse_qsl(token, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        pairs = []
    fields = dict(pairs)
    if not fields or any(k not in allowed and k != "continue" for k in fields):
        raise invalid(f"continueFrom {token!r} is not a continuation this tool produced; pass the "
                      "value from the last 'More results available' marker unchanged.")
    return fields


# ---------------------------------------------------------------------------
# Tools: the registry, argument checking and dispatch, then each tool
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Arg:
    """A tool parameter's description and bounds, placed in its annotation."""
    description: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    title: bool = False  # a page title: non-empty, at most 255 bytes


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: Any        # str, int, bool, list, or a tuple of allowed strings (an enum)
    item_kind: Any   # for lists
    arg: Arg
    required: bool
    default: Any


@dataclasses.dataclass
class ToolSpec:
    name: str
    title: str
    description: str
    fn: Callable[..., Any]
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool
    params: dict[str, Param]
    offered: Callable[[ServerState], bool] | None = None

    def schema(self) -> dict[str, Any]:
        properties = {name: param_schema(p) for name, p in self.params.items()}
        properties["wiki"] = WIKI_PARAM_SCHEMA
        required = [name for name, p in self.params.items() if p.required]
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema


#: Every tool, by name, in the order tools/list shows them.
TOOLS: dict[str, ToolSpec] = {}

WIKI_PARAM_SCHEMA = {"type": "string", "description":
                     "Wiki key (e.g. en.wikipedia.org) or mcp://wikis/{key}. Omitted: the default wiki."}


def tool(name: str, title: str, *, read_only: bool, destructive: bool = False,
         idempotent: bool = True, open_world: bool = True,
         offered: Callable[[ServerState], bool] | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a tool function. Its docstring is the description; its parameters
    after the first (the ToolContext) are the tool's arguments, each annotated
    ``Annotated[type, Arg(...)]``."""
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        TOOLS[name] = ToolSpec(
            name=name, title=title, description=inspect.cleandoc(fn.__doc__ or ""), fn=fn,
            read_only=read_only, destructive=destructive, idempotent=idempotent,
            open_world=open_world, params=signature_params(fn), offered=offered)
        return fn
    return register


def signature_params(fn: Callable[..., Any]) -> dict[str, Param]:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = {}
    for name, parameter in list(inspect.signature(fn).parameters.items())[1:]:
        hint = hints[name]
        assert typing.get_origin(hint) is Annotated, f"{fn.__name__}.{name} needs Annotated[..., Arg()]"
        base, arg = typing.get_args(hint)[:2]
        kind, item_kind = type_kind(base)
        required = parameter.default is inspect.Parameter.empty
        params[name] = Param(name, kind, item_kind, arg, required,
                             None if required else parameter.default)
    return params


def type_kind(hint: Any) -> tuple[Any, Any]:
    """Reduces a type hint to (kind, item kind): str, int, bool, list or an enum tuple."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (hint,) = [h for h in typing.get_args(hint) if h is not type(None)]
        return type_kind(hint)
    if origin is Literal:
        return tuple(typing.get_args(hint)), None
    if origin is list:
        return list, type_kind(typing.get_args(hint)[0])[0]
    return hint, None


JSON_TYPES = {str: "string", int: "integer", bool: "boolean", list: "array"}


def param_schema(p: Param) -> dict[str, Any]:
    schema: dict[str, Any]
    if isinstance(p.kind, tuple):
        schema = {"type": "string", "enum": list(p.kind)}
    else:
        schema = {"type": JSON_TYPES[p.kind]}
    if p.kind is list:
        item = p.item_kind
        schema["items"] = ({"type": "string", "enum": list(item)} if isinstance(item, tuple)
                           else {"type": JSON_TYPES[item]})
        if p.arg.title:
            schema["items"]["minLength"] = 1
        if p.arg.max_items:
            schema["minItems"], schema["maxItems"] = 1, p.arg.max_items
    if p.arg.title:
        schema["minLength"] = 1
    if p.arg.max_length:
        schema["maxLength"] = p.arg.max_length
    if p.arg.minimum is not None:
        schema["minimum"] = p.arg.minimum
    if p.arg.maximum is not None:
        schema["maximum"] = p.arg.maximum
    if p.default is not None:
        schema["default"] = p.default
    schema["description"] = p.arg.description
    return schema


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Validates a call's arguments against the tool's parameters. Every problem is
    an invalid_input error naming the argument, never a silent drop or a crash."""
    accepted = [*spec.params, "wiki"]
    unknown = [name for name in arguments if name not in accepted]
    if unknown:
        raise invalid(f"Unknown argument{'s' if len(unknown) > 1 else ''} "
                      f"{', '.join(repr(u) for u in unknown)} for {spec.name}. "
                      f"Accepted arguments: {', '.join(accepted)}.")
    values: dict[str, Any] = {}
    for name, p in spec.params.items():
        value = arguments.get(name)
        if value is None:
            if p.required:
                raise invalid(f"Missing required argument {name!r} for {spec.name}: {p.arg.description}")
            values[name] = p.default
            continue
        values[name] = check_value(spec.name, p, value)
    return values


def check_value(tool_name: str, p: Param, value: Any) -> Any:
    name = p.name
    if p.kind is list:
        if not isinstance(value, list):
            raise invalid(f"Argument {name!r} must be an array, got {json_type(value)}.")
        if not value and p.required:
            raise invalid(f"Argument {name!r} must not be empty.")
        if p.arg.max_items and len(value) > p.arg.max_items:
            raise invalid(f"Argument {name!r} takes at most {p.arg.max_items} items, got {len(value)}; "
                          f"split the call.")
        item = Param(f"{name}[{{}}]", p.item_kind, None, p.arg, True, None)
        return [check_value(tool_name, dataclasses.replace(item, name=f"{name}[{i}]"), v)
                for i, v in enumerate(value)]
    if isinstance(p.kind, tuple):
        if value not in p.kind:
            raise invalid(f"Argument {name!r} must be one of {', '.join(p.kind)}; got {value!r}.")
        return value
    if p.kind is bool:
        if not isinstance(value, bool):
            raise invalid(f"Argument {name!r} must be true or false, got {json_type(value)}.")
        return value
    if p.kind is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(f"Argument {name!r} must be an integer, got {json_type(value)}.")
        if p.arg.minimum is not None and value < p.arg.minimum:
            raise invalid(f"Argument {name!r} must be at least {p.arg.minimum}, got {value}.")
        if p.arg.maximum is not None and value > p.arg.maximum:
            raise invalid(f"Argument {name!r} must be at most {p.arg.maximum}, got {value}.")
        return value
    if not isinstance(value, str):
        raise invalid(f"Argument {name!r} must be a string, got {json_type(value)}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(f"Argument {name!r} contains invalid Unicode (an unpaired surrogate).") from None
    if p.arg.title:
        value = value.strip()
        if not value:
            raise invalid(f"Argument {name!r} must be a non-empty page title.")
        if utf8_len(value) > MAX_TITLE_BYTES:
            raise invalid(f"Argument {name!r} is {utf8_len(value)} bytes long; a page title has at "
                          f"most {MAX_TITLE_BYTES}.")
        if any(c in value for c in "\x00\n\r\t|[]{}<>#") and not value.startswith("#"):
            bad = sorted({repr(c) for c in value if c in "\x00\n\r\t|[]{}<>#"})
            raise invalid(f"Argument {name!r} is not a valid page title: it contains {', '.join(bad)}.")
    if p.arg.max_length and len(value) > p.arg.max_length:
        raise invalid(f"Argument {name!r} is {len(value)} characters long; at most "
                      f"{p.arg.max_length} are accepted.")
    return value


def json_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


@dataclasses.dataclass
class ServerState:
    """Everything one server instance holds: its configuration and a client per wiki."""
    config: Config
    clients: dict[str, MediaWikiClient]

    @classmethod
    def from_config(cls, config: Config, **client_options: Any) -> ServerState:
        clients = {key: wiki.client(config.user_agent, **client_options)
                   for key, wiki in config.wikis.items()}
        return cls(config=config, clients=clients)

    def any_writable(self) -> bool:
        return any(not w.read_only for w in self.config.wikis.values())

    def resolve_wiki(self, wiki: Any) -> str:
        if wiki is None or wiki == "":
            return self.config.default_wiki
        if not isinstance(wiki, str):
            raise invalid(f"Argument 'wiki' must be a string, got {json_type(wiki)}.")
        key = wiki.removeprefix("mcp://wikis/").strip().rstrip("/")
        if key not in self.config.wikis:
            raise invalid(f"Unknown wiki {wiki!r}. Configured wikis: {', '.join(self.config.wikis)}.")
        return key


@dataclasses.dataclass
class ToolContext:
    """What a tool function receives: the wiki's client and the server's settings."""
    mw: MediaWikiClient
    wiki: WikiConfig
    state: ServerState

    @property
    def budget(self) -> int:
        return self.state.config.content_max_bytes

    @property
    def site(self) -> SiteInfo:
        return self.mw.site


def offered_tools(state: ServerState) -> list[ToolSpec]:
    """The tools this configuration offers: write tools only when a wiki is writable."""
    return [spec for spec in TOOLS.values()
            if (spec.read_only or state.any_writable()) and (spec.offered is None or spec.offered(state))]


def run_tool(state: ServerState, name: str, arguments: Mapping[str, Any] | None) -> tuple[list[Any], bool]:
    """Runs one tool call (on a worker thread). Returns content blocks and is_error;
    never raises, so nothing but ``category: message`` reaches the model."""
    spec = TOOLS.get(name)
    try:
        if spec is None or spec not in offered_tools(state):
            raise invalid(f"Unknown tool {name!r}. Available tools: "
                          f"{', '.join(s.name for s in offered_tools(state))}.")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise invalid("Tool arguments must be an object.")
        arguments = dict(arguments or {})
        key = state.resolve_wiki(arguments.get("wiki"))
        values = check_arguments(spec, arguments)
        wiki = state.config.wikis[key]
        if not spec.read_only and wiki.read_only:
            raise WikiError("permission_denied", f"The wiki {key} is configured read-only; the "
                            "operator decides this, and no retry by the model changes it.")
        result = spec.fn(ToolContext(state.clients[key], wiki, state), **values)
    except WikiError as error:
        return [str(error)], True
    except Exception as exc:  # a bug here must still answer in the contract's shape
        log.exception("tool %s failed", name)
        return [f"upstream_failure: {name} failed unexpectedly ({type(exc).__name__}); "
                "the server log has the details."], True
    return (result if isinstance(result, list) else [result]), False


def create_server(config: Config | None = None, state: ServerState | None = None) -> MCPServer:
    """Builds the MCP server for a configuration (default: from the environment)."""
    import anyio
    import mcp_types as mt
    from mcp.server.mcpserver import MCPServer

    state = state or ServerState.from_config(config or Config.from_env())
    server = MCPServer(name="mediawiki-mcp", version=__version__, instructions=(
        "Reads, searches and edits MediaWiki wikis. Wiki pages are addressed by page title; "
        f"the default wiki is {state.config.default_wiki}."))

    # MCPServer builds schemas with pydantic, keeps unknown arguments quiet and answers
    # failures as "Error executing tool"; the tool contract needs otherwise, so this
    # one place serves tools/list and tools/call from the TOOLS registry instead.
    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=[
            mt.Tool(name=spec.name, title=spec.title, description=spec.description,
                    input_schema=spec.schema(),
                    annotations=mt.ToolAnnotations(
                        read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                        idempotent_hint=spec.idempotent, open_world_hint=spec.open_world))
            for spec in offered_tools(state)])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        blocks, is_error = await anyio.to_thread.run_sync(run_tool, state, params.name, params.arguments)
        return mt.CallToolResult(content=[
            mt.TextContent(type="text", text=b) if isinstance(b, str) else b for b in blocks],
            is_error=is_error)

    lowlevel = server._lowlevel_server  # noqa: SLF001 - see the comment above
    lowlevel.add_request_handler("tools/list", mt.PaginatedRequestParams, list_tools)
    lowlevel.add_request_handler("tools/call", mt.CallToolRequestParams, call_tool)
    server.mediawiki_state = state  # type: ignore[attr-defined]  # for embedders and tests
    return server


# -- shared pieces of the page tools ----------------------------------------

TitleArg = Arg("Wiki page title, with its namespace prefix if any (e.g. Talk:Foo).", title=True)


def resolve_page(query: dict[str, Any], title: str) -> tuple[dict[str, Any], str | None]:
    """The page a single-title query returned, and the title it was redirected from."""
    pages = query.get("pages") or []
    page = pages[0] if pages else {}
    redirected = None
    for hop in query.get("redirects") or []:
        redirected = redirected or hop.get("from")
    return page, redirected


def check_page(page: dict[str, Any], title: str, wiki: str) -> None:
    if page.get("invalid"):
        raise invalid(f"{title!r} is not a valid page title: {page.get('invalidreason', '')}")
    if "interwiki" in page:
        raise invalid(f"{title!r} points to another wiki (interwiki prefix {page['interwiki']!r}).")
    if page.get("special"):
        raise invalid(f"{page.get('title', title)!r} is a special page; it has no content to read.")
    if page.get("missing") or not page:
        raise WikiError("not_found", f"Page {page.get('title', title)!r} not found on {wiki}. "
                        "search-page-by-prefix or search-page finds existing titles.")


def revision_of(page: dict[str, Any]) -> dict[str, Any]:
    revisions = page.get("revisions") or [{}]
    return revisions[0]


def main_slot(revision: dict[str, Any]) -> dict[str, Any]:
    return (revision.get("slots") or {}).get("main") or {}


# -- read tools: pages, search, the wiki and the account ---------------------

@tool("get-page", "Get page", read_only=True)
def get_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    content: Annotated[Literal["source", "html", "none"], Arg(
        "'source' for wikitext, 'html' for rendered HTML, 'none' for metadata only.")] = "source",
    metadata: Annotated[bool, Arg(
        "Adds page ID, content model, size, last edit and URL.")] = False,
    section: Annotated[int | None, Arg(
        "Section number to return alone (0 = lead); numbers are listed when a page is truncated.",
        minimum=0)] = None,
    offset: Annotated[int, Arg(
        "Byte offset into the content to start from, as named by a truncation marker.",
        minimum=0)] = 0,
) -> list[str]:
    """Returns one wiki page, latest revision: wikitext or rendered HTML, with its title and revision ID
    (the latestId for a safe update). Follows redirects and says so. Content is truncated at 50000
    bytes by default; the marker lists the sections and the next call (section or offset).
    For several pages at once, use get-pages. For a historical revision, use get-revision."""
    if content == "html":
        return page_html(ctx, title, metadata, section, offset)
    query = ctx.mw.get({
        "action": "query", "titles": title, "redirects": True, "prop": "revisions|info",
        "rvprop": "ids|timestamp|user|size|comment" + ("|content|contentmodel" if content == "source" else ""),
        "rvslots": "main", "rvsection": section if content == "source" else None,
    }).get("query", {})
    page, redirected = resolve_page(query, title)
    check_page(page, title, ctx.wiki.key)
    revision = revision_of(page)
    header = page_header(ctx, page, revision, redirected, metadata, section)
    if content == "none":
        return [header]
    text = main_slot(revision).get("content", "")
    return content_blocks(header, text, offset, ctx.budget, "get-page",
                          sections=None if section is not None else wikitext_sections(text),
                          again={"section": section} if section is not None else None)


def page_header(ctx: ToolContext, page: dict[str, Any], revision: dict[str, Any],
                redirected: str | None, metadata: bool, section: int | None) -> str:
    lines = [("Title", page.get("title")), ("Redirected from", redirected),
             ("Revision ID", revision.get("revid") or page.get("lastrevid")),
             ("Section", section)]
    if metadata:
        lines += [("Page ID", page.get("pageid")),
                  ("Content model", page.get("contentmodel")),
                  ("Size", f"{page.get('length', revision.get('size', 0))} bytes"),
                  ("Last edited", f"{revision.get('timestamp')} by {revision.get('user')}"
                   if revision.get("timestamp") else None),
                  ("Edit summary", revision.get("comment")),
                  ("URL", ctx.site.page_url(page.get("title", "")))]
    return labelled(*lines)


def content_blocks(header: str, text: str, offset: int, budget: int, tool_name: str, *,
                   sections: list[Section] | list[tuple[int, str]] | None,
                   again: Mapping[str, Any] | None) -> list[str]:
    """Header and body as one block, then the truncation marker as its own block."""
    piece = slice_content(text, offset, budget)
    if offset:
        header += f"\nOffset: {piece.start} of {piece.total} bytes"
    blocks = [f"{header}\n\n{piece.text}"]
    if piece.truncated:
        numbered = [(s.number, s.heading) if isinstance(s, Section) else s for s in sections or []]
        blocks.append(truncated_marker(piece, tool_name, sections=numbered or None, again=again))
    return blocks


def page_html(ctx: ToolContext, title: str, metadata: bool, section: int | None,
              offset: int) -> list[str]:
    parsed = ctx.mw.get({"action": "parse", "page": title, "redirects": True,
                         "prop": "text|sections|revid", "section": section,
                         "disableeditsection": True, "disablelimitreport": True}).get("parse", {})
    page: dict[str, Any] = {"title": parsed.get("title"), "pageid": parsed.get("pageid")}
    revision: dict[str, Any] = {"revid": parsed.get("revid")}
    redirected = next((r.get("from") for r in parsed.get("redirects") or []), None)
    if metadata:
        query = ctx.mw.get({"action": "query", "pageids": parsed.get("pageid"), "prop": "revisions|info",
                            "rvprop": "ids|timestamp|user|size|comment", "rvslots": "main"})
        page, _ = resolve_page(query.get("query", {}), title)
        revision = revision_of(page)
    header = page_header(ctx, page, revision, redirected, metadata, section)
    sections = [(int(s["index"]), strip_tags(s.get("line", ""))) for s in parsed.get("sections") or []
                if str(s.get("index", "")).isdigit()]
    return content_blocks(header, parsed.get("text", ""), offset, ctx.budget, "get-page",
                          sections=None if section is not None else sections,
                          again={"content": "html", **({"section": section} if section is not None else {})})


@tool("get-pages", "Get pages", read_only=True)
def get_pages(
    ctx: ToolContext,
    titles: Annotated[list[str], Arg("Wiki page titles, in the order wanted.", title=True, max_items=50)],
    content: Annotated[Literal["source", "none"], Arg(
        "'source' for wikitext, 'none' for titles and revision IDs only.")] = "source",
    metadata: Annotated[bool, Arg("Adds page ID, content model, size and last edit to each page.")] = False,
) -> list[str]:
    """Returns up to 50 wiki pages in one call, each as its title, revision ID and wikitext, in the order
    asked. Missing titles are listed, not an error. One budget of 50000 bytes by default covers all
    pages; pages that do not fit are named with the call that reads them. For one page, rendered
    HTML, a section or a byte offset, use get-page."""
    wanted = list(dict.fromkeys(titles))
    query = ctx.mw.get({
        "action": "query", "titles": wanted, "redirects": True, "prop": "revisions|info",
        "rvprop": "ids|timestamp|user|size" + ("|content|contentmodel" if content == "source" else ""),
        "rvslots": "main",
    }).get("query", {})
    found = batch_pages(query, wanted)
    blocks: list[str] = []
    missing = [t for t, (page, _) in found.items() if page is None]
    if missing:
        blocks.append("Missing pages: " + ", ".join(missing))
    used, omitted, cut = 0, [], None
    total = sum(utf8_len(main_slot(revision_of(p)).get("content", "")) for p, _ in found.values() if p)
    for asked, (page, redirected) in found.items():
        if page is None:
            continue
        revision = revision_of(page)
        header = page_header(ctx, page, revision, redirected, metadata, None)
        if content == "none":
            blocks.append(header)
            continue
        if "content" not in main_slot(revision) and revision:
            omitted.append(page["title"])  # the wiki held it back to keep its response small
            continue
        text = main_slot(revision).get("content", "")
        size = utf8_len(text)
        if omitted or used + size > ctx.budget:
            if not used and not omitted and cut is None:  # a first page over the budget alone
                piece = slice_content(text, 0, ctx.budget)
                blocks.append(f"{header}\n\n{piece.text}")
                cut = (page["title"], piece, wikitext_sections(text))
                used += piece.end
            else:
                omitted.append(page["title"])
            continue
        blocks.append(f"{header}\n\n{text}")
        used += size
    if cut or omitted:
        blocks.append(pages_marker(used, total, cut, omitted))
    return blocks or ["No pages."]


def batch_pages(query: dict[str, Any], wanted: list[str]) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Maps each asked title to its page (None if missing) and the redirect followed."""
    normalized = {n["from"]: n["to"] for n in query.get("normalized") or []}
    redirects = {r["from"]: r["to"] for r in query.get("redirects") or []}
    by_title = {p.get("title"): p for p in query.get("pages") or []}
    result: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for asked in wanted:
        title = normalized.get(asked, asked)
        target = redirects.get(title)
        page = by_title.get(target or title)
        if page is None or page.get("missing") or page.get("invalid") or page.get("special"):
            result[asked] = (None, None)
        else:
            result[asked] = (page, title if target else None)
    return result


def pages_marker(used: int, total: int, cut: tuple[str, Slice, list[Section]] | None,
                 omitted: list[str]) -> str:
    parts = [f"Content truncated at {used} of {total} bytes."]
    if cut:
        title, piece, sections = cut
        if sections:
            parts.append(f"Available sections of {title}: 0 (Lead), "
                         f"{section_list([(s.number, s.heading) for s in sections])}.")
            parts.append(f"To read a specific section, call get-page with title={json.dumps(title)} "
                         "and section=N.")
        parts.append(f"To read on, call get-page with title={json.dumps(title, ensure_ascii=False)} "
                     f"and offset={piece.end}.")
    if omitted:
        names = json.dumps(omitted, ensure_ascii=False)
        parts.append(f"Not included: {', '.join(omitted)}. To read them, call get-pages again with "
                     f"titles={names}.")
    return " ".join(parts)


@tool("search-page", "Search pages", read_only=True)
def search_page(
    ctx: ToolContext,
    query: Annotated[str, Arg("Words to find in page text (the wiki's search syntax applies).",
                              max_length=300)],
    namespaces: Annotated[list[int] | None, Arg("Namespace IDs to search. Default: the main namespace.",
                                                max_items=50)] = None,
    limit: Annotated[int, Arg("Most results to return.", minimum=1, maximum=50)] = 10,
    continueFrom: Annotated[str | None, Arg("Continuation value from the previous call's marker.")] = None,
) -> list[str]:
    """Searches the full text of wiki pages and returns matching titles with a text snippet each,
    best match first. For titles that start with given text, use search-page-by-prefix."""
    if not query.strip():
        raise invalid("Argument 'query' must contain something to search for.")
    data = ctx.mw.get({
        "action": "query", "list": "search", "srsearch": query, "srwhat": "text",
        "srnamespace": namespaces or [0], "srlimit": limit, "srprop": "snippet",
        "srinfo": "totalhits",
        **(decode_continuation(continueFrom, ("sroffset",)) if continueFrom else {}),
    })
    hits = data.get("query", {}).get("search") or []
    total = data.get("query", {}).get("searchinfo", {}).get("totalhits")
    rows = [f"{h['title']}: {s}" if (s := strip_tags(h.get("snippet", ""))) else h["title"]
            for h in hits]
    head = f"{total} pages match." if total is not None else f"{len(rows)} pages match."
    blocks = ["\n".join([head, *rows]) if rows else f"No pages match {query!r}."]
    if data.get("continue"):
        blocks.append(more_results_marker(len(rows), "pages", "search-page", "continueFrom",
                                          encode_continuation(data["continue"])))
    return blocks


@tool("search-page-by-prefix", "Search pages by prefix", read_only=True)
def search_page_by_prefix(
    ctx: ToolContext,
    prefix: Annotated[str, Arg("Start of the page title; a namespace prefix (e.g. Category:) "
                               "selects that namespace.", max_length=255)],
    namespace: Annotated[int | None, Arg("Namespace ID to search in, instead of a prefix in the text.",
                                         minimum=0)] = None,
    limit: Annotated[int, Arg("Most titles to return.", minimum=1, maximum=100)] = 20,
    continueFrom: Annotated[str | None, Arg("Continuation value from the previous call's marker.")] = None,
) -> list[str]:
    """Returns the titles of wiki pages that begin with the given text, one per line. For pages
    that mention words in their text, use search-page."""
    if not prefix.strip():
        raise invalid("Argument 'prefix' must not be empty.")
    data = ctx.mw.get({
        "action": "query", "list": "prefixsearch", "pssearch": prefix, "pslimit": limit,
        "psnamespace": namespace,
        **(decode_continuation(continueFrom, ("psoffset",)) if continueFrom else {}),
    })
    titles = [p["title"] for p in data.get("query", {}).get("prefixsearch") or []]
    blocks = ["\n".join(titles) if titles else f"No page titles start with {prefix!r}."]
    if data.get("continue"):
        blocks.append(more_results_marker(len(titles), "titles", "search-page-by-prefix",
                                          "continueFrom", encode_continuation(data["continue"])))
    return blocks


@tool("get-site-info", "Get site info", read_only=True)
def get_site_info(ctx: ToolContext) -> str:
    """Returns facts about the wiki: its name, MediaWiki version, language, main page, public
    address, whether it is read-only, its namespaces with their IDs and its installed extensions."""
    query = ctx.mw.refresh_site("extensions")
    site = ctx.site
    namespaces = ", ".join(f"{i} {n or '(Main)'}" for i, n in sorted(site.namespaces.items()) if i >= 0)
    extensions = sorted({e.get("name", "") for e in query.get("extensions") or []} - {""})
    return labelled(
        ("Wiki", ctx.wiki.key), ("Name", site.name), ("MediaWiki", site.generator),
        ("Language", site.lang), ("Main page", site.main_page),
        ("Main page URL", site.page_url(site.main_page) if site.main_page else None),
        ("API", ctx.mw.api_url),
        ("Read-only", f"yes: {site.read_only_reason}" if site.read_only else None),
        ("Writes from this server", "off (configured read-only)" if ctx.wiki.read_only else "on"),
        ("Namespaces", namespaces), ("Extensions", ", ".join(extensions)))


@tool("whoami", "Who am I", read_only=True)
def whoami(ctx: ToolContext) -> str:
    """Returns the account this server acts as on the wiki: user name, groups and the rights that
    matter for editing, or that it is anonymous. Useful before writing, to learn what is allowed."""
    info = ctx.mw.get({"action": "query", "meta": "userinfo",
                       "uiprop": "groups|rights|editcount"}).get("query", {}).get("userinfo", {})
    notable = ("edit", "createpage", "move", "delete", "undelete", "upload", "reupload",
               "upload_by_url", "protect", "block", "bot", "apihighlimits", "writeapi")
    rights = [r for r in notable if r in set(info.get("rights") or [])]
    anonymous = "anon" in info
    return labelled(
        ("Wiki", ctx.wiki.key),
        ("User", f"anonymous (IP {info.get('name')})" if anonymous else info.get("name")),
        ("Login", f"{ctx.mw.username} (bot password)" if ctx.mw.username else
         "OAuth 2 access token" if ctx.wiki.token else None),
        ("User ID", None if anonymous else info.get("id")),
        ("Groups", ", ".join(g for g in info.get("groups") or [] if g != "*")),
        ("Edit count", None if anonymous else info.get("editcount")),
        ("Rights", ", ".join(rights)),
        ("Writes from this server", "off (configured read-only)" if ctx.wiki.read_only else "on"))


# -- read tools: revisions, history and diffs --------------------------------


# -- read tools: categories, links, recent changes, parsing -----------------


# -- read tools: files ---------------------------------------------------------


# -- write tools: pages ------------------------------------------------------


# -- write tools: files ------------------------------------------------------


# -- wikis: listing, adding, removing -------------------------------------------


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------

def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediawiki-mcp", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serves the Model Context Protocol for MediaWiki wikis, over stdio by default "
                    "(default wiki: English Wikipedia, anonymous and read-only).",
        epilog="environment variables:\n" + "\n".join(
            f"  {name:<24} {text}" for name, text in ENVIRONMENT_VARIABLES.items()))
    parser.add_argument("--version", action="version", version=f"mediawiki-mcp {__version__}")
    parser.add_argument("--transport", choices=["stdio", "http"], help="stdio (default) or http")
    parser.add_argument("--host", help=f"HTTP: address to listen on (default {DEFAULT_HTTP_HOST})")
    parser.add_argument("--port", type=int, help=f"HTTP: port to listen on (default {DEFAULT_HTTP_PORT})")
    parser.add_argument("--stateless", action="store_true", default=None,
                        help="HTTP: keep no state between requests (for replicas behind a load balancer)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)
    logging.basicConfig(level=os.environ.get("MEDIAWIKI_MCP_LOG_LEVEL", "INFO").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = Config.from_env()
        http = http_options(args)
    except ConfigError as error:
        print(f"mediawiki-mcp: {error}", file=sys.stderr)
        return 2
    if http is not None:
        config.stateless = http.stateless
    server = create_server(config)
    if http is not None:
        return serve_http(server, http)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    return 0


# -- Streamable HTTP transport ------------------------------------------------

DEFAULT_HTTP_HOST = "127.0.0.1"
DEFAULT_HTTP_PORT = 3000
MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
#: (connect, read) seconds of the health check's site-info request: a load balancer waits on it.
HEALTH_TIMEOUT = (2.0, 3.0)
#: Health probes closer together than this share one answer, so /health cannot flood the wiki.
HEALTH_MIN_INTERVAL_SECONDS = 1.0
#: After SIGTERM, requests in flight get this long to finish before they are cancelled.
SHUTDOWN_GRACE_SECONDS = 5
LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")


@dataclasses.dataclass
class HttpOptions:
    """How the Streamable HTTP transport listens and whom it answers."""
    host: str = DEFAULT_HTTP_HOST
    port: int = DEFAULT_HTTP_PORT
    allowed_hosts: list[str] = dataclasses.field(default_factory=list)
    allowed_origins: list[str] = dataclasses.field(default_factory=list)
    auth_token: str | None = dataclasses.field(default=None, repr=False)
    stateless: bool = False

    @property
    def loopback(self) -> bool:
        import ipaddress  # HTTP-only modules are imported where used: stdio start-up skips them
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def host_patterns(self) -> list[str] | None:
        """Accepted Host headers; None when Host is not checked (non-loopback, none configured)."""
        return self.allowed_hosts or (list(LOOPBACK_HOSTS) if self.loopback else None)

    @property
    def origin_patterns(self) -> list[str]:
        """Accepted Origin headers (a request without one is not from a browser page)."""
        if self.allowed_origins or not self.loopback:
            return self.allowed_origins
        return [f"http://{host}" for host in LOOPBACK_HOSTS]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"


def http_options(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> HttpOptions | None:
    """The HTTP transport's options, from the command line, else the environment;
    None when the transport is stdio."""
    env = os.environ if environ is None else environ
    transport = args.transport or env.get("MCP_TRANSPORT", "").strip().lower() or "stdio"
    if transport not in ("stdio", "http"):
        raise ConfigError(f"MCP_TRANSPORT must be stdio or http, not {transport!r}")
    if transport == "stdio":
        return None
    port = args.port
    if port is None:
        text = env.get("PORT", "").strip()
        if text and not text.isdigit():
            raise ConfigError(f"PORT must be a port number, not {text!r}")
        port = int(text) if text else DEFAULT_HTTP_PORT
    if not 0 <= port <= 65535:
        raise ConfigError(f"The port (--port or PORT) must be between 0 and 65535, not {port}")
    hosts = comma_list(env.get("MCP_ALLOWED_HOSTS", ""))
    if bad := [h for h in hosts if "/" in h or " " in h]:
        raise ConfigError(f"MCP_ALLOWED_HOSTS takes Host header values such as mcp.example.org or "
                          f"localhost:*, not {bad[0]!r}")
    origins = comma_list(env.get("MCP_ALLOWED_ORIGINS", ""))
    if bad := [o for o in origins if not re.fullmatch(r"https?://[^/\s]+", o)]:
        raise ConfigError(f"MCP_ALLOWED_ORIGINS takes origins such as https://app.example.org "
                          f"(scheme and host, no path), not {bad[0]!r}")
    stateless = args.stateless or parse_bool("MCP_STATELESS", env.get("MCP_STATELESS", ""))
    return HttpOptions(host=(args.host or env.get("MCP_BIND", "")).strip() or DEFAULT_HTTP_HOST,
                       port=port, allowed_hosts=hosts, allowed_origins=origins,
                       auth_token=env.get("MCP_AUTH_TOKEN", "").strip() or None, stateless=stateless)


def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def header_allowed(value: str | None, patterns: list[str]) -> bool:
    """Whether a Host or Origin header matches a pattern: exactly, or ``name:*`` for
    that name with any port (case-insensitive)."""
    value = (value or "").strip().lower()
    for pattern in (p.lower() for p in patterns):
        if value == pattern:
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1:].isdigit():
            return True
    return False


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an Authorization header carries the token, compared in constant time."""
    import hashlib
    import hmac
    scheme, _, supplied = authorization.strip().partition(" ")
    digest = hashlib.sha256  # equal lengths: the comparison reveals nothing, not even the length
    return scheme.lower() == "bearer" and hmac.compare_digest(
        digest(supplied.strip().encode()).digest(), digest(token.encode()).digest())


def http_refusal(headers: Mapping[str, str], options: HttpOptions) -> tuple[int, str] | None:
    """Why a request to the MCP endpoint is refused, as (HTTP status, reason), or None.
    Host and Origin checks stop DNS rebinding (a web page reaching a server on this
    machine or network through a browser); the bearer token stops everyone else."""
    hosts = options.host_patterns
    if hosts is not None and not header_allowed(headers.get("host"), hosts):
        return 421, f"Host {headers.get('host')!r} is not served here (MCP_ALLOWED_HOSTS)."
    origin = headers.get("origin")
    if origin is not None and not header_allowed(origin, options.origin_patterns):
        return 403, f"Origin {origin!r} is not allowed (MCP_ALLOWED_ORIGINS)."
    if options.auth_token and not bearer_matches(headers.get("authorization", ""), options.auth_token):
        return 401, "This server needs 'Authorization: Bearer <token>' (MCP_AUTH_TOKEN)."
    return None


class HealthCheck:
    """GET /health: whether the default wiki answers a site-info request, quickly.

    Exempt from the token and the Host check: a load balancer probes it, and the
    answer (ok or an error category) reveals nothing about the wiki or its content."""

    def __init__(self, state: ServerState) -> None:
        wiki = state.config.wikis[state.config.default_wiki]
        # A client of its own: short timeouts, no retries, the tools' client untouched.
        self.client = wiki.client(state.config.user_agent, timeout=HEALTH_TIMEOUT, retry_budget=0)
        self.answer: tuple[int, dict[str, str]] = (503, {"status": "unknown"})
        self.checked_at = float("-inf")
        self.lock: Any = None

    def probe(self) -> tuple[int, dict[str, str]]:
        try:
            self.client.get({"action": "query", "meta": "siteinfo"})
        except WikiError as error:
            log.warning("health check: %s", error)
            return 503, {"status": "unavailable", "error": error.category}
        except Exception:
            log.exception("health check failed")
            return 503, {"status": "unavailable", "error": "upstream_failure"}
        return 200, {"status": "ok"}

    async def endpoint(self, request: Any) -> Any:
        import anyio
        from starlette.responses import JSONResponse
        self.lock = self.lock or anyio.Lock()
        async with self.lock:
            if time.monotonic() - self.checked_at >= HEALTH_MIN_INTERVAL_SECONDS:
                self.answer = await anyio.to_thread.run_sync(self.probe)
                self.checked_at = time.monotonic()
        status, body = self.answer
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


def http_app(server: MCPServer, options: HttpOptions) -> Any:
    """The ASGI application: MCP at /mcp behind the Host, Origin and token checks,
    and /health. Embedders can serve it with any ASGI server."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.datastructures import Headers
    from starlette.responses import JSONResponse

    server.custom_route(HEALTH_PATH, methods=["GET"])(HealthCheck(server.mediawiki_state).endpoint)
    # The SDK's own Host/Origin check is off: it cannot leave Host unchecked while checking
    # Origin (a non-loopback bind), and on loopback it would refuse MCP_ALLOWED_HOSTS.
    # guarded() below checks both, and the token, before the SDK sees a request.
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=options.stateless, host=options.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != HEALTH_PATH:
            refusal = http_refusal(Headers(scope=scope), options)
            if refusal is not None:
                status, reason = refusal
                log.warning("refused %s %s: %s", scope.get("method"), scope["path"], reason)
                response = JSONResponse(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}},
                    status_code=status, headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)
                await response(scope, receive, send)
                return
        await app(scope, receive, send)
    return guarded


def http_warnings(options: HttpOptions) -> list[str]:
    """What an operator should hear at start about how exposed the server is."""
    if options.loopback or options.auth_token:
        return []
    return [f"Listening on {options.host}, beyond this machine, without MCP_AUTH_TOKEN: anyone who "
            "reaches this address can use every tool. Set MCP_AUTH_TOKEN, or listen on 127.0.0.1 "
            "behind a proxy that authenticates."
            + ("" if options.allowed_hosts else " Host headers are not checked (MCP_ALLOWED_HOSTS).")]


def serve_http(server: MCPServer, options: HttpOptions) -> int:
    """Serves MCP over Streamable HTTP until SIGTERM or SIGINT; returns the exit code."""
    import signal
    import socket

    import uvicorn

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            options.host, options.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)  # connections wait in the backlog from now on, before uvicorn runs
    except OSError as error:
        print(f"mediawiki-mcp: cannot listen on {options.host} port {options.port}: "
              f"{error.strerror or error}", file=sys.stderr)
        return 1
    options = dataclasses.replace(options, port=listener.getsockname()[1])
    for warning in http_warnings(options):
        log.warning(warning)
    config = uvicorn.Config(
        http_app(server, options), log_config=None, access_log=log.isEnabledFor(logging.DEBUG),
        server_header=False, timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    log.info("Serving MCP over Streamable HTTP at %s (%shealth check: %s)", options.url,
             "stateless; " if options.stateless else "", HEALTH_PATH)
    # uvicorn shuts down gracefully on SIGTERM and SIGINT, then raises the signal again
    # for the previous handler: these make that a clean exit instead of a kill or a traceback.
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
    log.info("Stopped serving MCP over Streamable HTTP")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

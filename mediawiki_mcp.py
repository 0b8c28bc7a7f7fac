# Generated from mediawiki_mcp/ by packaging/single_file.py; do not edit: run python packaging/generate.py
# /// script
# requires-python = ">=3.10"
# dependencies = ["mcp>=2.3,<3", "requests"]
# ///
"""mediawiki-mcp: a Model Context Protocol server for any MediaWiki wiki, in one file.

Made from the package mediawiki_mcp/, one section a module, bottom layer first. Run it with
``python mediawiki_mcp.py`` or ``uv run mediawiki_mcp.py`` (stdio), or embed it::

    from mediawiki_mcp import Config, create_server
    server = create_server(Config.from_env())

Importing this module does no I/O and starts nothing. Sign-in over HTTP (MCP_AUTH=login) and the
shared state store (MCP_STATE_URL) need the package: pip install 'mediawiki-mcp[login,redis]'.
"""
from __future__ import annotations

import argparse
import base64
import bisect
import collections
import concurrent.futures
import contextlib
import contextvars
import dataclasses
import datetime
import functools
import hashlib
import html
import html.parser
import importlib
import importlib.util
import inspect
import ipaddress
import itertools
import json
import logging
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
import typing
import unicodedata
import urllib.parse
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType, UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal

if TYPE_CHECKING:
    import requests
    from mcp.server.lowlevel.server import Server

    class WikiServer(Server[Any]):
        state: ServerState


# ---------------------------------------------------------------------------
# errors.py: The closed error vocabulary: the seven categories, MediaWiki's error codes mapped to them, the next
# step each suggests, and WikiError, which every refusal raises.
# ---------------------------------------------------------------------------

#: The kinds of failure a caller is told about: each error is ``category: message``.
ErrorCategory = Literal["not_found", "permission_denied", "invalid_input", "conflict",
                        "authentication", "rate_limited", "upstream_failure"]


#: MediaWiki API error codes and the category each one means for a caller (the codes of
#: MediaWiki's includes/api/i18n/en.json, and those the API takes from core messages).
#: Anything not listed becomes upstream_failure with MediaWiki's own text kept.
MW_ERROR_CATEGORIES: dict[str, ErrorCategory] = {
    **dict.fromkeys((
        "missingtitle", "missingtitle-byname", "nosuchrevid", "nosuchpageid", "nosuchsection",
        "nosuchsection-what", "rvnosuchsection", "nosuchuser", "nosuchuserid", "nosuchlogid", "nosuchrcid",
        "missingfile", "filenotfound", "filedoesnotexist", "nodeleteablefile", "cantdelete",
        "cantundelete", "nodeletedrevs", "undelete-no-results", "badid_rvstartid", "badid_rvendid",
        "missingrev-pageid", "missingrev-title", "missingcontent-pageid", "missingcontent-revid",
        "compare-nofromrevision", "compare-notorevision", "compare-nosuchfromsection",
        "compare-nosuchtosection", "changecontentmodel-missingtitle", "stashedfilenotfound",
    ), "not_found"),
    **dict.fromkeys((
        "permissiondenied", "permissiondenied-generic", "protectedpage", "protectedtitle",
        "protectednamespace", "protectednamespace-interface", "cascadeprotected", "blocked",
        "blocked-partial", "autoblocked", "systemblocked", "blockedfrommail", "writeapidenied",
        "noapiwrite", "cantcreate", "cantcreate-anon", "noimageredirect", "noimageredirect-anon",
        "noedit", "noedit-anon", "cantedit", "customcssprotected", "customjsprotected",
        "customjsonprotected", "mycustomcssprotected", "mycustomjsprotected", "mycustomjsonprotected",
        "sitecssprotected", "sitejsprotected", "sitejsonprotected", "spamblacklist", "spamdetected",
        "spamprotectionmatch",
        "titleblacklist-forbidden", "hookaborted", "cantmove", "cantmove-anon", "cantmovefile",
        "bigdelete", "badaccess-groups", "confirmemail", "upload-disabled", "uploaddisabled",
        "copyuploaddisabled", "copyuploadbaddomain", "copyuploadbadurl", "cantchangecontentmodel",
        "tags-apply-no-permission", "cantoverwrite-sharedfile", "fileexists-sharedrepo-perm",
        "cannotviewtitle", "cantview-deleted-revision-content", "cantview-deleted-comment",
        "siteinfo-includealldenied", "readapidenied", "notvisiblerev",
        # only the configured tags are sent: the operator's to fix, not the model's
        "badtags", "tags-apply-not-allowed-one", "tags-apply-not-allowed-multi",
    ), "permission_denied"),
    **dict.fromkeys((
        "invalidtitle", "cidrtoobroad",
        "missingparam", "missingparam-one-of", "missingparam-at-least-one-of", "badvalue",
        "badvalue-notmultivalue", "unrecognizedvalue", "invalidsection", "badcontinue", "toomanyvalues",
        "paramempty", "invalidparammix", "invalidparammix-cannotusewith", "invalidparammix-mustusewith",
        "multival-only-one-of", "notanarticle", "baddatatype", "badinteger", "integeroutofrange-abovemax",
        "integeroutofrange-belowminimum", "maxbytes", "maxchars", "unknown_action", "unknownaction",
        "nosuchnamespace", "badmd5", "contenttoobig", "selfmove", "immobilenamespace",
        "immobile-source-namespace", "immobile-target-namespace", "immobile-source-page",
        "immobile-target-page", "nonfilenamespace", "nonfile-cannot-move-to-file", "filetypemismatch",
        "imageinvalidfilename", "bad-target-model", "contentnotallowedhere", "pagecannotexist",
        "unsupportednamespace", "invalid-content-data", "invalid-json-data", "contentserializationexception",
        "no-direct-editing", "changecontentmodel-nodirectediting", "changecontentmodel-cannot-convert",
        "changecontentmodel-cannotbeused", "badformat", "badformat-generic", "unsupportedrepo",
        "invalidexpiry", "pastexpiry", "toofewexpiries", "badexpiry", "badexpiry-past", "badexpiry-duration",
        "invalid-file-key", "illegal-filename",
        "filetype-banned", "filetype-missing", "filename-tooshort", "windows-nonascii-filename",
        "bad-prefix", "verification-error", "empty-file", "file-too-large", "toolong", "nofile",
        "mustpostparams", "missingtitle-createonly", "invalidcategory", "invaliduser", "baduser",
        "notarget", "nosuchtag", "badparams", "unknownparam", "invalidlang", "emptypage", "revwrongpage",
        "appendnotsupported", "sectionsnotsupported", "sectionsnotsupported-what", "contentmodel-mismatch",
        "badtimestamp", "show", "emptynewsection", "missingcommenttext", "redirect-appendonly",
        "edit-invalidredirect", "compare-maintextrequired", "compare-no-title", "compare-notext",
        "compare-relative-to-deleted", "compare-relative-to-nothing", "invalidurlparam", "urlparamnormal",
        "badurl", "protect-invalidaction", "protect-invalidlevel", "revisions-norevids",
        "revisions-singlepage", "multpages", "stashzerolength", "stashinvalidfile", "cantrollback",
        "onlyauthor",
    ), "invalid_input"),
    **dict.fromkeys((
        "editconflict", "articleexists", "redirectexists", "create-titleexists", "pagedeleted",
        "fileexists-no-change", "fileexists-forbidden", "fileexists-shared-forbidden", "overwrite",
        "duplicate-archive", "exists", "alreadyrolled", "filedupe", "duplicate", "undofailure",
    ), "conflict"),
    **dict.fromkeys((
        "assertuserfailed", "assertbotfailed", "assertnameduserfailed", "assertanonfailed", "notloggedin",
        "mwoauth-invalid-authorization", "mwoauth-invalid-authorization-invalid-user", "login-required",
        "mustbeloggedin", "mustbeloggedin-generic", "mustbeloggedin-uploadstash", "reauthenticate",
        "cannotreauthenticate", "badtoken", "notoken",
    ), "authentication"),
    **dict.fromkeys((
        "ratelimited", "maxlag", "actionthrottled", "actionthrottledtext", "concurrency-limit",
    ), "rate_limited"),
}


#: Codes of failures that a later retry can fix: the wiki is locked for maintenance, or broke
#: down midway (an internal exception, its file or lock backend, a fetch that timed out).
#: Every other failure says why, and that retrying the same call changes nothing.
MW_RETRY_LATER = ("readonly", "internal_api_error_", "backend-fail-", "lockmanager-fail-",
                  "exceptioncaught", "unknownerror", "stashfailed", "upload-inprogress", "http-timed-out",
                  "http-curl-error", "cirrussearch-backend-error")


RETRY_LATER = "Retry later; tell the user if it persists."


#: What the caller can do next, by category: the standard last sentence of an error's message.
NEXT_STEP: dict[ErrorCategory, str] = {
    "not_found": "Check the title or ID; search-page-by-prefix or search-page finds existing pages.",
    "permission_denied": "Tell the user; retrying as the same account changes nothing.",
    "invalid_input": "Change the call as the message says; the same call fails again.",
    "conflict": "Read the current state again before deciding what to do.",
    "authentication": "Tell the user to check the wiki's credentials.",
    "rate_limited": "Wait a minute before retrying.",
    "upstream_failure": "Tell the user: the same call fails again until the cause is fixed on the wiki.",
}


#: The next step when the wiki refuses the change tags of the configuration (WikiConfig.tags).
TAGS_NEXT_STEP = ("The change tags come from this server's configuration (tags), not from the call: tell the "
                  "user that the operator must define them on the wiki (Special:Tags) or take them out of the "
                  "configuration. No call changes this.")


#: What to do next for MediaWiki codes whose category alone does not say enough.
MW_NEXT_STEP = {
    **dict.fromkeys(("badtags", "tags-apply-not-allowed-one", "tags-apply-not-allowed-multi",
                     "tags-apply-no-permission"), TAGS_NEXT_STEP),
    "cidrtoobroad": "Narrow the range (a larger number after the /) to what the wiki accepts, or ask for "
                    "several narrower ranges; only the wiki's operator can widen its limit.",
    "articleexists": "To change the existing page, use update-page; otherwise pick another title.",
    "editconflict": "Someone else changed the page since that revision: read it again with get-page, "
                    "redo the change on the new text, and tell the user what changed.",
    "pagedeleted": "The page was deleted after it was read; tell the user (undelete-page restores it).",
    "badtoken": "The wiki refused the edit token even after a fresh one; tell the user to check the "
                "wiki's credentials.",
    **dict.fromkeys(("protectedpage", "cascadeprotected"),
                    "The page is protected; ask a wiki administrator, since this account cannot edit it."),
    "blocked": "The account is blocked from editing; tell the user.",
    "readonly": "The wiki is locked for maintenance; retry later.",
    "missingtitle": "Check the title; search-page-by-prefix finds existing pages, create-page makes new ones.",
    "nosuchrevid": "get-page-history lists a page's revision IDs.",
    "nosuchsection": "The page exists; its sections are numbered from 1 in the order of its headings "
                     "(0 is the lead).",
    "pagecannotexist": "Pages in this namespace (such as Special:) cannot be created or edited; pick "
                       "another title.",
    "unsupportednamespace": "Pages in this namespace (such as Special:) cannot be changed; pick another "
                            "title.",
    "invalid-json-data": "Fix the JSON, or create the page with another contentModel.",
    "invalid-content-data": "Fix the text for the page's content model, or pass another contentModel.",
    "nonfile-cannot-move-to-file": "Only files move into the File namespace; pick a title in another one.",
    "nonfilenamespace": "A file can move only to another title in the File namespace.",
    "filetypemismatch": "A file keeps its type when it moves: give the new title the file's extension.",
    "immobile-target-namespace": "Pages cannot be moved into that namespace; pick a title in another one.",
    "selfmove": "fromTitle and toTitle name the same page; nothing needs moving.",
    "verification-error": "Upload a file whose extension matches its content, of a type the wiki accepts.",
    "cantrollback": "Every revision of the page is by that user, so there is nothing to return to; to remove "
                    "the page, use delete-page.",
    # Saves the wiki refuses for its own reasons: the same text is refused again, whoever sends it.
    **dict.fromkeys(("spamprotectionmatch", "spamdetected"),
                    "Nothing was saved: the wiki's spam filter matched the text named. Take it out or reword "
                    "it, then save again; only a wiki administrator can change the filter."),
    "spamblacklist": "Nothing was saved: the wiki does not accept links to the site named. Take the link out "
                     "(or give the address as plain text in <nowiki>), then save again; a wiki administrator "
                     "can allow the site.",
    "protectedtitle": "Nothing was saved: the title is protected against creation. Ask a wiki administrator "
                      "to create the page, or pick another title.",
    "titleblacklist-forbidden": "Nothing was saved: the wiki does not allow this title. Pick another title, "
                                "or ask a wiki administrator.",
    **dict.fromkeys(("abusefilter-disallowed", "abusefilter-warning"),
                    "Nothing was saved: an abuse filter of the wiki stopped the edit for the reason given. "
                    "Tell the user that reason and change the edit; a wiki administrator can review the "
                    "filter."),
}


class WikiError(Exception):
    """A failure a tool's caller is told about (configuration that cannot work is a ConfigError,
    at start), made by the factory of its category below: the raiser's ``message``, MediaWiki's
    ``code`` when the API refused, and what dispatch adds where the call ends: the ``wiki`` it
    happened on, where several serve, and ``notes`` after the message (the tools it names that
    are not offered, a person's account to fix). ``str(error)`` renders them once into the text
    the model receives: ``category: message``. Code that handles one branches on ``category`` or
    ``code``, never on the message."""

    def __init__(self, category: ErrorCategory, message: str, code: str = "") -> None:
        assert category in typing.get_args(ErrorCategory), category
        super().__init__(category, message)
        self.category = category
        self.message = message
        self.code = code
        self.wiki = ""
        self.notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = " ".join((self.message, *self.notes))
        if self.wiki and not re.search(rf"(?<![\w.-]){re.escape(self.wiki)}(?![\w-]|\.\w)", text):
            text = f"On the wiki {self.wiki}: {text}"  # unless the message names it already
        return f"{self.category}: {text}"


class ResponseLost(WikiError):
    """A write whose answer never arrived (timeout, reset, a gateway error page):
    the wiki may or may not have saved it, so it is never resent blindly."""

    def __init__(self, message: str) -> None:
        super().__init__("upstream_failure", message)


#: One factory per category: ``raise not_found(message)``, or ``not_found(message, code)`` for an
#: error that MediaWiki answered with ``code``. NEXT_STEP holds each category's usual next step.
not_found = functools.partial(WikiError, "not_found")
permission_denied = functools.partial(WikiError, "permission_denied")
invalid_input = functools.partial(WikiError, "invalid_input")
conflict = functools.partial(WikiError, "conflict")
authentication = functools.partial(WikiError, "authentication")
rate_limited = functools.partial(WikiError, "rate_limited")
upstream_failure = functools.partial(WikiError, "upstream_failure")


def error_from_api(code: str, text: str, wiki: str = "") -> WikiError:
    """Maps a MediaWiki API error to a WikiError, keeping MediaWiki's words and adding what
    to do next: only a failure that a later retry can fix says to retry."""
    category = MW_ERROR_CATEGORIES.get(code)
    if category is None and code.startswith(("abusefilter-", "spamblacklist", "titleblacklist")):
        category = "permission_denied"
    if code == "readonly":
        text = f"The wiki is in read-only mode: {text}"
    text = " ".join(text.split()) or code
    where = f" ({wiki})" if wiki else ""
    step = MW_NEXT_STEP.get(code) or (RETRY_LATER if code.startswith(MW_RETRY_LATER)
                                      else NEXT_STEP[category or "upstream_failure"])
    if category is None:
        return upstream_failure(f"MediaWiki error {code}{where}: {text} {step}", code)
    return WikiError(category, f"{text}{where} [{code}] {step}", code)


# ---------------------------------------------------------------------------
# wire.py: One request on the wire: the requests session made lazily, the User-Agent, parameters encoded, an
# answer decoded and its error code read, and the call in flight a write marks.
# ---------------------------------------------------------------------------

__version__ = "0.1.0"


log = logging.getLogger("mediawiki_mcp")


#: Hosts whose operators ask for contact details in the User-Agent.
WIKIMEDIA_HOST_SUFFIXES = (
    "wikipedia.org", "wikimedia.org", "wikidata.org", "wiktionary.org", "wikibooks.org",
    "wikiquote.org", "wikisource.org", "wikinews.org", "wikiversity.org", "wikivoyage.org",
    "mediawiki.org", "wikifunctions.org",
)


# A request to a wiki's API goes through layers, each with one job: send_once() sends it,
# follow() follows its redirects (the address guard checks each hop), RetryPolicy decides
# whether and when to send it again, and MediaWikiClient._answer() reads the answer or maps
# it to a WikiError by MediaWiki's code. MediaWikiClient is the API of one wiki on top.

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


def send_once(session: requests.Session, method: str, url: str, **options: Any) -> requests.Response:
    """One request, its redirects left to the caller. requests reads a redirect's Location
    even so, and a malformed one (an unclosed IPv6 bracket) escapes as a bare ValueError:
    that is the remote end's fault, reported as such."""
    try:
        return session.request(method, url, allow_redirects=False, **options)
    except ValueError as exc:
        if isinstance(exc, _requests().RequestException):  # InvalidURL and friends are ValueErrors too
            raise
        raise upstream_failure(f"{host_of(url)} redirected to a malformed address.") from None


def never_connected(exc: Exception) -> bool:
    """Whether a request failed before a connection was made (refused, unresolvable, timed
    out connecting), so the wiki never saw it."""
    import urllib3  # requests' own transport
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError too


DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:  # not a number: no origin anything else has
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def host_of(url: str) -> str:
    """The host and port of a URL as messages name them: never a user name or password."""
    return urllib.parse.urlsplit(url).netloc.rpartition("@")[2]


def without_userinfo(url: str) -> str:
    """A URL as messages show it: without the user name and password it may carry. A text, so that
    it holds for a URL that does not parse too."""
    return re.sub(r"^([^:/?#]*://)[^/?#]*@", r"\1", url)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """A URL without the user name and password it may carry, and those, percent-decoded.
    They go as HTTP basic auth (BasicAuth), so no address this server shows holds them."""
    parts = urllib.parse.urlsplit(url)
    userinfo, at, location = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    return (urllib.parse.urlunsplit(parts._replace(netloc=location)),
            (urllib.parse.unquote(user), urllib.parse.unquote(password)))


@dataclasses.dataclass(frozen=True)
class BasicAuth:
    """HTTP basic auth for one origin (a requests ``auth`` hook): a request to any other
    origin, a redirect's included, goes without it."""
    origin: tuple[str, str, int | None]
    user: str = dataclasses.field(repr=False)
    password: str = dataclasses.field(repr=False)

    def __call__(self, request: Any) -> Any:
        if origin_of(request.url) == self.origin:
            pair = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
            request.headers["Authorization"] = f"Basic {pair}"
        return request


def encode_params(params: Mapping[str, Any]) -> dict[str, str]:
    """Turns Python values into API fields: lists joined by | (or U+001F when a
    value holds a |), booleans present only when true, None and empty lists left out (an empty
    field would ask for no value at all: cmtype= lists no members)."""
    fields: dict[str, str] = {}
    for key, value in params.items():
        if value is None or value is False or value == []:
            continue
        if value is True:
            fields[key] = "1"
        elif isinstance(value, (list, tuple)):
            items = [str(v) for v in value]
            fields[key] = ("\x1f" + "\x1f".join(items)) if any("|" in v for v in items) else "|".join(items)
        else:
            fields[key] = str(value)
    return fields


def field_values(field: str) -> list[str]:
    """The values of a list field, as encode_params joined them."""
    return field[1:].split("\x1f") if field.startswith("\x1f") else field.split("|")


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


_warn_once = functools.cache(log.warning)


def extension_names(query: Mapping[str, Any]) -> frozenset[str]:
    """Lower-cased names from site info's ``extensions`` prop."""
    return frozenset(str(e.get("name", "")).lower() for e in query.get("extensions") or []) - {""}


@dataclasses.dataclass(eq=False)
class RunningCall:
    """A tool call in flight, as ToolCalls tracks it."""
    scope: Any                 # the anyio.CancelScope its caller waits in, cancelled when the server stops
    started: bool = False      # it got its turn and began
    sent_write: bool = False   # it began sending a write to the wiki (MediaWikiClient.write)


#: The call whose job runs on this thread: MediaWikiClient.write marks it as having sent a write.
RUNNING_CALL: contextvars.ContextVar[RunningCall | None] = contextvars.ContextVar("RUNNING_CALL",
                                                                                   default=None)


#: The most characters of a name a caller chose (a user name, a tool's) that a log line shows.
LOGGED_NAME_CHARS = 80


def logged(name: str) -> str:
    """A name a caller chose, as a log line shows it: quoted, with control and bidi characters escaped
    (repr), so that it can neither write a line of its own nor reorder what a terminal shows, and cut
    to LOGGED_NAME_CHARS, so that it cannot fill the log."""
    return repr(name[:LOGGED_NAME_CHARS]) + ("..." if len(name) > LOGGED_NAME_CHARS else "")


# ---------------------------------------------------------------------------
# siteinfo.py: What a wiki says about itself (namespaces, magic words, extensions, rights) and what an account
# may do there: the facts the tools read from siteinfo and userinfo.
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Syntax:
    """What a wiki's preprocessor knows besides core wikitext: its tags (core and extensions',
    from siprop=extensiontags) and whether -{ }- language conversion markup is on."""
    tags: frozenset[str] = frozenset({"pre", "nowiki", "gallery", "indicator", "langconvert"})
    lang_conversion: bool = True


CORE_SYNTAX = Syntax()


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
    syntax: Syntax = CORE_SYNTAX  # for section numbers
    #: Protection: the kinds, the levels and those that cascade (siprop=restrictions)
    restrictions: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    content_namespaces: tuple[int, ...] = (0,)  # what search-page searches by default
    #: The local names of Special:Contributions, which an IP's signature links (Spezial:Beiträge/…)
    contributions_aliases: tuple[str, ...] = ()

    def page_url(self, title: str) -> str:
        path = urllib.parse.quote(title.replace(" ", "_"), safe=";@$!*(),/~:")
        return self.server + self.article_path.replace("$1", path)

    def index_url(self, **params: Any) -> str:
        return f"{self.server}{self.script_path}/index.php?" + urllib.parse.urlencode(params)

    def namespace_list(self) -> str:
        """``0 (Main), 1 Talk, ...``: the namespaces pages can be in, with their IDs."""
        return ", ".join(f"{i} {n or '(Main)'}" for i, n in sorted(self.namespaces.items()) if i >= 0)

    def namespace_of(self, title: str) -> int:
        prefix, sep, _ = title.partition(":")
        if not sep:
            return 0
        return self.namespace_ids.get(prefix.strip().replace("_", " ").lower(), 0)

    @classmethod
    def from_api(cls, query: dict[str, Any], api_url: str) -> SiteInfo:
        general = query.get("general", {})
        # a protocol-relative $wgServer (as on Wikimedia wikis) takes the API's scheme; none, its origin
        server = urllib.parse.urljoin(api_url, general.get("server") or "/")
        spaces = list((query.get("namespaces") or {}).values())
        names = [(ns.get(key), int(ns["id"])) for ns in spaces for key in ("name", "canonical")]
        names += [(alias.get("alias"), int(alias["id"])) for alias in query.get("namespacealiases") or []]
        tags = frozenset(tag.strip("<>").lower() for tag in query.get("extensiontags") or [])
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
            namespaces={int(ns["id"]): ns.get("name", "") for ns in spaces},
            namespace_ids={name.lower(): nsid for name, nsid in names if name},
            raw=general,
            syntax=Syntax(tags or CORE_SYNTAX.tags, general.get("langconversion") is not False),
            restrictions=query.get("restrictions") or {},
            content_namespaces=tuple(sorted(int(ns["id"]) for ns in spaces if ns.get("content"))) or (0,),
            contributions_aliases=tuple(alias for page in query.get("specialpagealiases") or []
                                        if page.get("realname") == "Contributions"
                                        for alias in page.get("aliases") or []),
        )


@dataclasses.dataclass(frozen=True)
class Account:
    """Whom a client acts as on its wiki and what it may do there (meta=userinfo): the rights
    of its groups, narrowed by the grants of its bot password or token."""
    name: str
    anonymous: bool
    groups: tuple[str, ...]
    rights: frozenset[str]

    def can(self, right: str) -> bool:
        """Whether the account has the right (``a|b``: either of two)."""
        return any(r in self.rights for r in right.split("|"))


#: Rights that tools check before they act: what each lets an account do, and the bot
#: password grant (Special:BotPasswords) that carries it.
RIGHTS = {
    "edit": ("edit pages", "Edit existing pages"),
    "createpage": ("create pages", "Create, edit, and move pages"),
    "move": ("move pages", "Create, edit, and move pages"),
    "move-subpages": ("move subpages", "Create, edit, and move pages"),
    "suppressredirect": ("move pages without leaving a redirect", "Create, edit, and move pages"),
    "delete": ("delete pages", "Delete pages, revisions, and log entries"),
    "undelete": ("restore deleted pages", "Delete pages, revisions, and log entries"),
    "upload": ("upload files", "Upload new files"),
    "reupload": ("upload new versions of files", "Upload, replace, and move files"),
    "rollback": ("roll back edits", "Rollback changes to pages"),
    "protect": ("change the protection of pages", "Protect and unprotect pages"),
    "viewmywatchlist": ("read the watchlist", "View your watchlist"),
    "editmywatchlist": ("change the watchlist", "Edit your watchlist"),
}


#: What a refused call can do instead, for rights that have a way round.
WITHOUT_RIGHT = {
    "rollback": "Without it, undo-edit reverts the same edits: revisionId the latest, oldestRevisionId the "
                "first of the run.",
}


#: Arguments whose values the wiki defines, as the API module and parameter that take them (paraminfo).
#: A wiki may add its own values (an extension's log type, content model): checked before a call sends.
CHOICES = {"content model": ("edit", "contentmodel"), "log type": ("query+logevents", "type")}


#: A parameter whose presence says what the wiki does: watch's expiry ($wgWatchlistExpiry).
WATCH_EXPIRY = ("watch", "expiry")


#: MediaWiki's own values of CHOICES' arguments, which every wiki takes: sent unchecked, and named in
#: the tools' schemas (the log types most asked for: the first seven).
STANDARD_CHOICES = {
    "content model": ("wikitext", "javascript", "css", "json", "text"),
    "log type": ("delete", "move", "protect", "upload", "block", "rights", "newusers", "create", "merge",
                 "import", "patrol", "tag", "managetags", "contentmodel", "suppress")}


SITEINFO_PARAMS = {"action": "query", "meta": "siteinfo",
                   "siprop": "general|namespaces|namespacealiases|extensiontags|restrictions|"
                            "specialpagealiases"}


#: The messages of the edit summaries the talk tools write: MediaWiki's for a new section
#: ("/* $1 */ new section"), DiscussionTools' for a reply ("Reply"; core has none).
SUMMARY_MESSAGES = ("newsectionsummary", "discussiontools-defaultsummary-reply")


#: The kinds of token write actions take (rollback and watch have their own), fetched in one request.
TOKEN_TYPES = ("csrf", "rollback", "watch")


# ---------------------------------------------------------------------------
# guard.py: The address guard: a URL a model gives (add-wiki, uploads from a URL) reaches no private or
# loopback address, at every redirect; and finding a wiki's API from its address.
# ---------------------------------------------------------------------------

MAX_REDIRECTS = 5


# A URL that comes from a model (add-wiki, uploads from a URL) must not make this
# server reach what only it can reach: its own loopback, the private network it sits
# in, a cloud metadata address. The guard resolves the host, refuses non-public
# addresses unless the operator trusts the host (MCP_TRUSTED_HOSTS), and pins the
# connection to the address it checked, so a second DNS answer cannot swap it. Every
# redirect is followed by follow(), which has the guard check each hop.

def resolve_addresses(host: str, port: int) -> list[str]:
    """The IP addresses a host name resolves to (AddressGuard's resolver unless it is given one)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_problem(address: str) -> str | None:
    """Why an address is not public ("loopback", "private", ...), or None if it is."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for problem in ("loopback", "unspecified", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{problem}"):
            return problem.replace("_", "-")
    return None if ip.is_global else "not globally routable"


def host_port(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(parts.scheme, 80)


def guard_target(url: str) -> tuple[str, int]:
    """The host and port the address guard checks for a URL; invalid_input for anything but
    a plain http(s) URL (a malformed one included: it may come from a redirect)."""
    shown = without_userinfo(url)
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        raise invalid_input(f"{shown!r} is not a valid URL.") from None
    try:
        host, port = host_port(url)
    except ValueError:
        raise invalid_input(f"{shown!r} has an invalid port.") from None
    if parts.scheme not in ("http", "https") or not host:
        raise invalid_input(f"{shown!r} is not an http(s) URL.")
    if parts.username is not None or parts.password is not None:
        raise invalid_input(f"The URL {parts.hostname} must not carry a user name or password.")
    return host, port


@dataclasses.dataclass(frozen=True)
class AddressGuard:
    """The address guard: resolves a URL's host and refuses private, loopback, link-local and
    other non-public addresses, unless the host (``host`` or ``host:port``) is one the operator
    trusts (MCP_TRUSTED_HOSTS). ``resolve`` looks names up (tests give one that knows theirs)."""
    trusted_hosts: Iterable[str] = ()
    resolve: Callable[[str, int], list[str]] = resolve_addresses

    def check(self, url: str) -> str:
        """The checked address to connect to for ``url``."""
        host, port = guard_target(url)
        try:
            addresses = self.resolve(host, port)
        except (OSError, UnicodeError):
            raise invalid_input(f"The host {host} of {url} could not be resolved; check the URL.") from None
        if not addresses:
            raise invalid_input(f"The host {host} of {url} has no address; check the URL.")
        trusted = {t.strip().lower() for t in self.trusted_hosts}
        shown = f"[{host}]" if ":" in host else host
        if not trusted & {host, shown, f"{shown}:{port}"}:
            for address in addresses:
                problem = address_problem(address)
                if problem:
                    raise permission_denied(
                        f"{shown} resolves to {address}, a {problem} address, which this server does not "
                        "reach for a URL given by a model. The operator can allow the host by listing it "
                        "in MCP_TRUSTED_HOSTS; no retry by the model changes this.")
        return addresses[0]


@functools.cache
def _pinning_adapter_class() -> type:
    rq = _requests()

    class PinningAdapter(rq.adapters.HTTPAdapter):  # type: ignore[name-defined,misc]
        """An HTTPAdapter that connects to the address the guard checked for a host
        (TLS still verifies the host name), and like any other one for other hosts."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.pins: dict[tuple[str, int], str] = {}
            super().__init__(*args, **kwargs)

        def build_connection_pool_key_attributes(self, request: Any, verify: Any,
                                                 cert: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
            host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
            address = self.pins.get(host_port(request.url))
            if address:
                if host_params["scheme"] == "https":
                    pool_kwargs["server_hostname"] = pool_kwargs["assert_hostname"] = host_params["host"]
                host_params["host"] = address
            return host_params, pool_kwargs

        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            if self.pins.get(host_port(request.url)):  # the Host header names the host, not the address
                request.headers.setdefault("Host", urllib.parse.urlsplit(request.url).netloc)
            return super().send(request, *args, **kwargs)

    return PinningAdapter


def pinnable_session(user_agent_prefix: str, pool_size: int = 10) -> requests.Session:
    """A session with this server's User-Agent whose connections the address guard can pin."""
    session = _requests().Session()
    adapter = _pinning_adapter_class()(pool_connections=4, pool_maxsize=pool_size)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.headers["User-Agent"] = user_agent(user_agent_prefix)
    return session


def guard_and_pin(session: requests.Session, url: str, guard: AddressGuard) -> None:
    """Checks a URL's host with the address guard, once per host and session, and pins the
    session's connections to that host to the checked address."""
    key = guard_target(url)  # first: requests has no adapter for other schemes
    pins = session.get_adapter(url).pins  # type: ignore[attr-defined]  # pinnable_session's adapter
    if key not in pins:
        pins[key] = guard.check(url)


def follow(session: requests.Session | Callable[[str], requests.Session], method: str, url: str, *,
           guard: AddressGuard | None, hop: Callable[[str], None] = lambda location: None,
           **options: Any) -> requests.Response:
    """Sends a request (send_once) and follows its redirects, the one place that does: the address
    guard checks every hop (``guard`` None: an operator's URL), and ``hop`` may refuse a
    redirect's target. ``session`` may be a function choosing one (pinnable_session) per URL, so
    credentials stay with their origin. A redirect's query replaces ``params``. Transport failures
    raise requests' exceptions (failed_url names the hop)."""
    start = url
    for _ in range(MAX_REDIRECTS + 1):
        current = session(url) if callable(session) else session
        if guard is not None:
            guard_and_pin(current, url, guard)
        response = send_once(current, method, url, **options)
        if not response.is_redirect:
            return response
        response.close()
        url = urllib.parse.urljoin(response.url, response.headers["Location"])  # send_once checked it
        hop(url)
        if urllib.parse.urlsplit(url).query:
            options.pop("params", None)
    raise upstream_failure(f"{start} redirected too many times.")


def failed_url(exc: Exception, url: str) -> str:
    """The URL of the hop whose request failed (follow), else ``url``."""
    return getattr(getattr(exc, "request", None), "url", None) or url


def guarded_get(session: requests.Session, url: str, guard: AddressGuard | None,
                **options: Any) -> requests.Response:
    """A GET of a URL through follow(), a transport failure an upstream_failure."""
    try:
        return follow(session, "GET", url, guard=guard, **options)
    except _requests().RequestException as exc:
        raise upstream_failure(f"{host_of(failed_url(exc, url))} could not be reached "
                               f"({type(exc).__name__}).") from None


def fetch_file(client: MediaWikiClient, url: str, max_bytes: int) -> bytes | None:
    """Downloads a file a wiki points to (an upload, a thumbnail), or None when it is over max_bytes.
    The wiki's credentials go only to its own origin (session_for); a wiki a model added has every
    hop checked by the address guard, as its API calls have."""
    try:
        response = follow(client.session_for, "GET", url, guard=client.guard,
                          timeout=client.timeout, stream=True)
        with response:
            if response.status_code >= 400:
                raise fetch_error(response.status_code, response.url)
            if int(response.headers.get("Content-Length") or 0) > max_bytes:
                return None
            data = bytearray()
            for chunk in response.iter_content(65536):
                data += chunk
                if len(data) > max_bytes:
                    return None
            return bytes(data)
    except _requests().RequestException as exc:
        raise upstream_failure(f"Fetching {failed_url(exc, url)} failed ({type(exc).__name__}). "
                               + RETRY_LATER) from None


def fetch_error(status: int, url: str) -> WikiError:
    if status == 404:
        return not_found(f"The wiki lists {url}, but it answered HTTP 404 for it.")
    if status in (401, 403):
        return permission_denied(f"The wiki refused access to {url} (HTTP {status}). "
                                 + NEXT_STEP["permission_denied"])
    return upstream_failure(f"Fetching {url} answered HTTP {status}. "
                            + (RETRY_LATER if status >= 500 else NEXT_STEP["upstream_failure"]))


def discover_api(url: str, ask: Callable[[str], dict[str, Any]], session: requests.Session,
                 guard: AddressGuard | None,
                 timeout: tuple[float, float]) -> tuple[str, dict[str, Any] | None]:
    """Finds api.php from any URL of a wiki (a page, its origin): tries /w/api.php and /api.php
    at its origin, then the address the wiki's own HTML names (``<link rel="EditURI"
    href=".../api.php?action=rsd">``). ``ask(candidate)`` requests site info there. Returns the
    API's address and its site info query, None when it answered wanting a login first."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid_input(f"{url!r} is not a wiki URL; give its api.php address or a page URL.")
    origin = f"{parts.scheme}://{parts.netloc}"
    failures: list[str] = []
    for guess in (origin + "/w/api.php", origin + "/api.php", None):  # None: the address the page names
        candidate = guess or api_named_by_page(url, session, guard, timeout, failures)
        if candidate is None:
            break
        try:
            query = ask(candidate).get("query", {})
        except WikiError as error:
            if not error.code and error.category != "upstream_failure":
                raise  # the address guard refused the URL or a hop, or the web server wants other
                # credentials: no other candidate fares better
            if error.code == "readapidenied" and error.category == "authentication":
                raise  # a private wiki, and no account to read it with
            if error.code:  # an API answered, wanting a login first: a private wiki
                return candidate, None
            failures.append(f"{candidate}: {error.message.split('. ')[0]}")  # the remedy comes once, below
            continue
        if "general" in query:
            return candidate, query
        failures.append(f"{candidate}: the answer is not MediaWiki site info")
    raise upstream_failure(f"No MediaWiki API found at {url}: " + "; ".join(failures) + ". Give the wiki's "
                           "api.php address instead (such as https://wiki.example.org/w/api.php).")


def api_named_by_page(url: str, session: requests.Session, guard: AddressGuard | None,
                      timeout: tuple[float, float], failures: list[str]) -> str | None:
    """The api.php address that the HTML of a wiki's page names (EditURI)."""
    try:
        response = guarded_get(session, url, guard, timeout=timeout, stream=True,
                               headers={"Authorization": None})  # no token to any host
    except WikiError as error:
        if error.category != "upstream_failure":
            raise
        failures.append(f"{url}: {error.message.split('. ')[0]}")
        return None
    with response:
        found = api_from_html(read_head(response), response.url)
    if not found:
        failures.append(f"{url}: its HTML names no API (no <link rel=\"EditURI\">)")
    return found


HEAD_MAX_BYTES = 512 * 1024


EDIT_URI_LINK = re.compile(r"<link\b[^>]*\brel\s*=\s*[\"']?EditURI\b[^>]*>", re.IGNORECASE)


HREF = re.compile(r"\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", re.IGNORECASE)


def read_head(response: requests.Response) -> str:
    """The start of an HTML page, up to its </head> (bounded), for discovery."""
    data = b""
    for chunk in response.iter_content(64 * 1024):
        data += chunk
        if b"</head>" in data.lower() or len(data) >= HEAD_MAX_BYTES:
            break
    return data[:HEAD_MAX_BYTES].decode(response.encoding or "utf-8", "replace")


def api_from_html(page: str, base_url: str) -> str | None:
    """The api.php address a MediaWiki page names in ``<link rel="EditURI" href=...>``,
    made absolute (``//host/w/api.php?action=rsd`` takes the page's scheme)."""
    for tag in EDIT_URI_LINK.findall(page):
        match = HREF.search(tag)
        if match:
            href = html.unescape(next(g for g in match.groups() if g is not None))
            url = urllib.parse.urljoin(base_url, href)
            parts = urllib.parse.urlsplit(url)
            if parts.scheme in ("http", "https") and parts.path.endswith("api.php"):
                return urllib.parse.urlunsplit(parts[:3] + ("", ""))
    return None


# ---------------------------------------------------------------------------
# client.py: MediaWikiClient: the API of one wiki. Sends by the layers of wire.py, retries by RetryPolicy,
# logs in, keeps the site info, and settles a write whose answer was lost.
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# settings.py: The settings table: one row per environment variable, each with its parser, default and help,
# which drives the parser, --help and the README's table.
# ---------------------------------------------------------------------------

DEFAULT_WIKI_URL = "https://en.wikipedia.org/w/api.php"


DEFAULT_CONTENT_MAX_BYTES = 50_000


#: get-file-data's cap on the base64-encoded image it returns (as the TypeScript server's).
DEFAULT_FILE_DATA_MAX_BYTES = 1_000_000


#: MCP_TEXT_ORIGIN_MAX_READS's default: a bisection of 30 reads spans a billion revisions.
DEFAULT_TEXT_ORIGIN_MAX_READS = 30


#: The largest file the server holds in memory to upload (MCP_UPLOAD_MAX_BYTES's default).
DEFAULT_UPLOAD_MAX_BYTES = 100_000_000


DEFAULT_HTTP_HOST = "127.0.0.1"


#: MCP_SHUTDOWN_GRACE_SECONDS's default: how long tool calls in flight get to finish after SIGTERM.
SHUTDOWN_GRACE_SECONDS = 5.0


DEFAULT_HTTP_PORT = 3000


#: MCP_SESSIONS_PER_PERSON's default: a person's clients at once, with room for those that crashed.
DEFAULT_SESSIONS_PER_PERSON = 20


#: MCP_HEADER_TIMEOUT_SECONDS's default: ample for a request's head on any link, short for a client that
#: opens connections and sends their heads a byte at a time to hold them (slowloris).
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0


#: Host names of this machine, which OAuth lets be served over plain http.
LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


#: How HTTP callers prove who they are (MCP_AUTH; its help says how each works).
AUTH_MODES = ("token", "login")


#: With MCP_AUTH=login, how long an access token and a refresh token work by default.
DEFAULT_ACCESS_TOKEN_SECONDS = 3600


DEFAULT_REFRESH_TOKEN_SECONDS = 30 * 24 * 3600


#: The reads (and bases, previews) one client's read ledger keeps at most for the no-loss checks
#: of writes, and how long each is kept after its last change.
READ_LEDGER_MAX_ENTRIES = 2000


#: The bytes of one client's read ledger, at most (MCP_READ_LEDGER_MAX_BYTES).
DEFAULT_READ_LEDGER_MAX_BYTES = 256 * 1024


#: Who confirms a guarded action (MCP_CONFIRM; its help says what each means).
CONFIRM_CHOICES = ("auto", "person", "model")


#: A question to the person that stays unanswered this long is a decline (MCP_CONFIRM_TIMEOUT_SECONDS).
DEFAULT_CONFIRM_TIMEOUT_SECONDS = 300.0


TRUE_WORDS = {"1", "true", "yes", "on"}


FALSE_WORDS = {"0", "false", "no", "off", ""}


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


#: One entry of a host list: host, host:port, [IPv6] or [IPv6]:port, or host:* (any port).
HOST_ENTRY = re.compile(r"(\[[0-9a-f:.]+\]|[^\s/\\@:\[\]*?#,]+)(?::([0-9]{1,5}|\*))?", re.IGNORECASE)


class ConfigError(Exception):
    """Configuration that cannot work; main() prints it and exits non-zero."""


def optional_module(name: str, setting: str, extra: str, needs: str, needed: str) -> Any:
    """The package's optional module ``name``, which ``setting`` asks for; a ConfigError naming what
    to install where the single file runs (it does not carry the optional modules), or where the
    module ``needs`` (``needed``, in words), which the ``extra`` installs, is missing."""
    install = f"pip install 'mediawiki-mcp[{extra}]'"
    if not __package__:
        raise ConfigError(f"{setting} needs the package, which the single file mediawiki_mcp.py does not carry: "
                          f"{install} and run mediawiki-mcp")
    try:
        importlib.import_module(needs)  # asked first: the module below may be imported already
    except ImportError:
        raise ConfigError(f"{setting} needs {needed}, which is not installed: {install}") from None
    return importlib.import_module(f".{name}", __package__)


def setting_parser(convert: Callable[[str], Any], ok: Callable[[str], bool],
                   wanted: str) -> Callable[[str, str], Any]:
    """The parser of a setting's trimmed text: ``convert(text)`` where ``ok(text)``, else a
    ConfigError saying that the variable must be ``wanted``."""
    def parse(name: str, value: str) -> Any:
        if not ok(value.strip()):
            raise ConfigError(f"{name} must be {wanted}, not {value.strip()!r}")
        return convert(value.strip())
    return parse


parse_bool = setting_parser(lambda text: text.lower() in TRUE_WORDS,
                            lambda text: text.lower() in TRUE_WORDS | FALSE_WORDS, "true or false")


byte_count = setting_parser(int, lambda text: whole_number(text) and int(text) >= 1000,
                            "a whole number of bytes, at least 1000")


seconds = setting_parser(int, lambda text: whole_number(text) and int(text) > 0, "a number of seconds")


def nonblank(name: str, value: str) -> str:
    """A value refused when set but empty, as that would silently change which wiki the server
    uses (elsewhere an empty value means the default)."""
    if not value.strip():
        raise ConfigError(f"{name} is set but empty: give it a value, or unset it")
    return value.strip()


def credential(name: str, value: str, header: bool = False) -> str:
    """A credential trimmed of surrounding whitespace, which no bot password or token holds and
    a pasted one often does. Refused when empty (that would silently make the wiki anonymous or
    the HTTP server open) or unsendable; the message names it and never shows it. ``header``:
    it travels in an HTTP header, which carries printable ASCII only, and no space in a token."""
    value = value.strip()
    if not value:
        raise ConfigError(f"{name} is set but empty: give the credential, or leave {name} out")
    if header and not printable_ascii(value, spaces=False):
        raise ConfigError(f"{name} must be printable ASCII without spaces, as it travels in an HTTP header; "
                          "check it (it is not shown)")
    if not value.isprintable():
        raise ConfigError(f"{name} holds a control character, such as a line break; check it "
                          "(it is not shown)")
    return value


def printable_ascii(text: str, spaces: bool = True) -> bool:
    return all(" " < c <= "~" or spaces and c == " " for c in text)


def whole_number(text: str) -> bool:
    return re.fullmatch(r"[0-9]+", text) is not None


def valid_host(host: str) -> bool:
    """Whether a host name or IP address can name a server: no spaces, no empty labels."""
    if not host or any(c.isspace() or not c.isprintable() or c in '<>"{}|\\^`' for c in host):
        return False
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def host_list(name: str, value: str, header: bool = False) -> list[str]:
    """A comma-separated list of ``host`` or ``host:port`` entries. ``header``: Host header
    values, where ``host:*`` means any port (and IPv6 comes in brackets). A URL or a wildcard
    would never match anything, so it is refused rather than kept."""
    entries = comma_list(value)
    for entry in entries:
        if not host_entry(entry, header):
            raise ConfigError(f"{name} takes hosts such as wiki.internal or wiki.internal:8080"
                              + (" (localhost:* for any port)" if header else "")
                              + f", separated by commas, not {entry!r}")
    return entries


def host_entry(entry: str, header: bool) -> bool:
    """Whether ``entry`` is a host, optionally with a port (see host_list)."""
    match = HOST_ENTRY.fullmatch(entry)
    if not match:
        try:
            ipaddress.ip_address(entry)
        except ValueError:
            return False
        return not header  # a bare IPv6 address: the address guard matches it, a Host header never holds it
    port = match.group(2)
    return port is None or (header if port == "*" else 0 < int(port) < 65536)


def origin_list(name: str, value: str) -> list[str]:
    origins = comma_list(value)
    for origin in origins:
        scheme, _, rest = origin.partition("://")
        if scheme.lower() not in ("http", "https") or not host_entry(rest, header=True):
            raise ConfigError(f"{name} takes origins such as https://app.example.org "
                              f"(scheme and host, no path), not {origin!r}")
    return origins


def public_origin(name: str, value: str) -> str:
    """The origin clients reach this server at (MCP_PUBLIC_URL): https, or http on a loopback host,
    as OAuth requires of an issuer; no path, since the sign-in's routes sit at the root."""
    parts = urllib.parse.urlsplit(value.strip())
    if (parts.scheme not in ("https", "http") or not parts.hostname
            or parts.scheme == "http" and parts.hostname not in LOOPBACK_NAMES
            or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username):
        raise ConfigError(f"{name} takes an origin such as https://mcp.example.org (https, or http on "
                          f"127.0.0.1 or localhost; no path), not {value.strip()!r}")
    return f"{parts.scheme}://{parts.netloc.lower()}"


def secret_list(name: str, value: str) -> tuple[str, ...]:
    """Comma-separated secrets (MCP_AUTH_SECRET's keys), never quoted in a message."""
    keys = tuple(comma_list(value))
    if not keys:
        raise ConfigError(f"{name} is set but empty: give a key, or leave {name} out")
    return keys


def state_address(name: str, value: str) -> str:
    """A Valkey or Redis address (MCP_STATE_URL), checked without ever quoting it: it may
    hold a password."""
    value = value.strip()
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("redis", "rediss") or not parts.hostname:
        raise ConfigError(f"{name} takes a redis:// or rediss:// address such as redis://cache.internal:6379/0 "
                          f"(the value given is not shown: it may hold a password)")
    # The Redis client would take /abc as database 0 and crash at start on a malformed option.
    if parts.path.strip("/") and not parts.path.strip("/").isdigit():
        raise ConfigError(f"{name}: the database, the path after the host, must be a number such as /0 "
                          "(the value given is not shown: it may hold a password)")
    for option, text in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        try:
            STATE_OPTION_TYPES.get(option, str)(text)
        except ValueError:
            raise ConfigError(f"{name}: the option {option!r} of the address must be a "
                              f"{'whole ' if STATE_OPTION_TYPES[option] is int else ''}number "
                              "(the value given is not shown: it may hold a password)") from None
    return value


#: The options of a store address that the Redis client reads as numbers.
STATE_OPTION_TYPES: dict[str, type[int | float]] = {
    "db": int, "socket_timeout": float, "socket_connect_timeout": float, "socket_read_size": int,
    "max_connections": int, "health_check_interval": int, "timeout": float, "protocol": int}


def shown_address(url: str) -> str:
    """A store's address as logs, errors and /health show it: without password or query. A name
    alone before the @ (redis://secret@host) is shown neither: it is often the password."""
    parts = urllib.parse.urlsplit(url)
    user = f"{parts.username}@" if parts.username and parts.password is not None else ""
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def upload_directories(entries: Iterable[str], source: str) -> tuple[str, ...]:
    """Directories uploads may read from: absolute, existing, symlinks resolved."""
    found = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        if not os.path.isabs(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} must be an absolute path")
        if not os.path.exists(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} does not exist")
        if not os.path.isdir(entry):
            raise ConfigError(f"{source}: upload directory {entry!r} is not a directory")
        found.append(os.path.realpath(entry))
    return tuple(found)


#: The groups of tools an operator may offer (MCP_TOOLSETS); each tool names its own (@tool).
TOOLSETS = {
    "pages": "read and search pages, categories, links, templates; site info and the account",
    "edit": "create, change, move and copy pages (from another wiki); categories; a replace across pages",
    "history": "revisions, page history, diffs and undo",
    "talk": "start and answer talk page discussions",
    "changes": "recent changes, user contributions, logs, watchlist",
    "files": "read, upload and update files",
    "admin": "delete, undelete, protect and roll back (rights most accounts lack)",
    "wikis": "add and remove wikis",
}


DEFAULT_TOOLSETS = frozenset({"pages", "edit", "history"})


#: What a session may load with load-toolset unless the operator says otherwise: all but the
#: toolsets of rights most accounts lack and of the server's own wikis.
DEFAULT_LOADABLE_TOOLSETS = frozenset(TOOLSETS) - {"admin", "wikis"}


def toolset_names(name: str, value: str) -> frozenset[str]:
    """Comma-separated toolsets, where ``all`` names every one and ``default`` the default ones."""
    entries = [e.lower() for e in comma_list(value)]
    unknown = [f" {e!r}" for e in entries if e not in (*TOOLSETS, "all", "default")]
    if unknown or not entries:
        raise ConfigError(f"{name} names no toolset{''.join(unknown[:1])}; the toolsets are "
                          f"{', '.join(TOOLSETS)}, all and default")
    return frozenset(toolset for entry in entries for toolset in
                     (TOOLSETS if entry == "all" else DEFAULT_TOOLSETS if entry == "default" else (entry,)))


def loadable_toolsets(name: str, value: str) -> frozenset[str]:
    """Toolsets as toolset_names reads them, where an empty value names none."""
    return toolset_names(name, value) if value.strip() else frozenset()


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting: its environment variable, its help (--help, docs/configuration.md, installers), its value
    when unset, how its text is read and checked (``parse(variable, text)``, a ConfigError naming
    the variable), the configuration file's field that says the same, whether it is a secret,
    whether an empty value means the default (else parse refuses it) and ``also``, older names read
    first, their values (lists) joined."""
    variable: str
    help: str
    default: Any = None
    parse: Callable[[str, str], Any] = nonblank
    field: str = ""
    secret: bool = False
    empty_is_default: bool = True
    also: tuple[str, ...] = ()

    def read(self, env: Mapping[str, str]) -> Any:
        given = [self.parse(name, env[name]) for name in self.names_given(env)]
        if not given:
            return self.default
        return tuple(item for value in given for item in value) if self.also else given[-1]

    def names_given(self, env: Mapping[str, str]) -> list[str]:
        """The names of this setting that ``env`` gives a value (not an empty one meaning the default)."""
        return [name for name in (*self.also, self.variable)
                if name in env and (env[name].strip() or not self.empty_is_default)]

    @property
    def described(self) -> str:
        return self.help + "".join(f" (also {name})" for name in self.also)


SETTINGS = {row.variable: row for row in (
    Setting("MEDIAWIKI_URL", "any URL of the wiki: its api.php, a page or its origin; user:password@ in it goes as "
            f"HTTP basic auth, to that origin only (default {DEFAULT_WIKI_URL})", DEFAULT_WIKI_URL,
            field="wikis.*.server", empty_is_default=False),
    Setting("MEDIAWIKI_USERNAME", "bot password user name, such as Name@BotName (Special:BotPasswords)",
            parse=credential, field="wikis.*.username", secret=True, empty_is_default=False),
    Setting("MEDIAWIKI_PASSWORD", "bot password; surrounding spaces are trimmed", parse=credential,
            field="wikis.*.password", secret=True, empty_is_default=False),
    Setting("MEDIAWIKI_TOKEN", "OAuth 2 owner-only access token, sent as a Bearer token instead of a bot password",
            parse=functools.partial(credential, header=True), field="wikis.*.token", secret=True,
            empty_is_default=False),
    Setting("MEDIAWIKI_READ_ONLY", "when true, no write tools are offered and writes to the wiki are refused; "
            "default: true without credentials", parse=parse_bool, field="wikis.*.readOnly"),
    Setting("MEDIAWIKI_USER_AGENT", "your part of the User-Agent, such as 'MyBot/1.0 (me@example.org)': Wikimedia "
            "throttles clients without contact details", "",
            setting_parser(str, printable_ascii, "printable ASCII, as it travels in an HTTP header")),
    Setting("CONFIG", "JSON file naming several wikis (as --config); MEDIAWIKI_URL, the credentials and "
            "MEDIAWIKI_READ_ONLY are then ignored", empty_is_default=False),
    Setting("MCP_TRUSTED_HOSTS", "comma-separated hosts (host or host:port) that add-wiki and URL uploads may "
            "reach on private addresses", (), lambda name, value: tuple(h.lower() for h in host_list(name, value))),
    Setting("MCP_UPLOAD_DIRS", "directories uploads may read from, separated by ':' (';' on Windows); none: "
            "uploads from disk are off", (), lambda name, value: upload_directories(value.split(os.pathsep), name),
            field="uploadDirs", also=("MEDIAWIKI_UPLOAD_DIRS",)),
    Setting("MCP_UPLOAD_MAX_BYTES", f"largest file the server uploads itself (default {DEFAULT_UPLOAD_MAX_BYTES}); "
            "a larger URL upload is fetched by the wiki", DEFAULT_UPLOAD_MAX_BYTES, byte_count),
    Setting("MCP_CONTENT_MAX_BYTES", f"byte budget of content per response (default {DEFAULT_CONTENT_MAX_BYTES})",
            DEFAULT_CONTENT_MAX_BYTES, byte_count),
    Setting("MCP_FILE_DATA_MAX_BYTES", "largest image get-file-data returns, in bytes of base64 "
            f"(default {DEFAULT_FILE_DATA_MAX_BYTES})", DEFAULT_FILE_DATA_MAX_BYTES, byte_count),
    Setting("MCP_CONFIRM", "who confirms a guarded action (delete, protect, rollback, a replace across pages, "
            "an undo of other people's edits, a move with subpages, an undelete of many revisions, a page "
            "emptied or shrunk by update-page's removeSections or blank): auto (default: the person, asked "
            "through the client where it can ask, else the model: confirm=true, dryRun=false), person (refused "
            "where the client cannot ask) or model (never asks the person)", "auto",
            setting_parser(str.lower, lambda text: text.lower() in CONFIRM_CHOICES,
                           " or ".join(CONFIRM_CHOICES))),
    Setting("MCP_CONFIRM_TIMEOUT_SECONDS", "seconds the person has to answer a confirmation question "
            f"(default {DEFAULT_CONFIRM_TIMEOUT_SECONDS:g}); no answer is a decline",
            DEFAULT_CONFIRM_TIMEOUT_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None
                and 0 < float(text) <= 86400, "a number of seconds above 0, up to 86400")),
    Setting("MCP_TEXT_ORIGIN_MAX_READS", "most revisions find-text-origin reads the text of in one call "
            f"(default {DEFAULT_TEXT_ORIGIN_MAX_READS}, at least 2); it then names the call that goes on",
            DEFAULT_TEXT_ORIGIN_MAX_READS,
            setting_parser(int, lambda text: whole_number(text) and int(text) >= 2, "a whole number, at least 2")),
    Setting("MEDIAWIKI_MCP_LOG_LEVEL", f"log level on stderr: {', '.join(LOG_LEVELS)} (default INFO)", "INFO",
            setting_parser(str.upper, lambda text: text.upper() in LOG_LEVELS, f"one of {', '.join(LOG_LEVELS)}")),
    Setting("MCP_TRANSPORT", "the transport: stdio (default) or http (Streamable HTTP at /mcp); or --transport",
            "stdio", setting_parser(str.lower, lambda text: text.lower() in ("stdio", "http"), "stdio or http")),
    Setting("MCP_BIND", f"HTTP: address to listen on (default {DEFAULT_HTTP_HOST}); or --host", DEFAULT_HTTP_HOST),
    Setting("PORT", f"HTTP: port (default {DEFAULT_HTTP_PORT}; 0 picks a free one); or --port", DEFAULT_HTTP_PORT,
            setting_parser(int, whole_number, "a port number")),
    Setting("MCP_ALLOWED_HOSTS", "HTTP: Host headers accepted, comma-separated, name:* for any port (default: the "
            "loopback names when listening on loopback, else unchecked)", [],
            functools.partial(host_list, header=True)),
    Setting("MCP_ALLOWED_ORIGINS", "HTTP: Origin headers accepted, comma-separated, such as "
            "https://app.example.org (default: the loopback names when listening on loopback)", [], origin_list),
    Setting("MCP_AUTH_TOKEN", "HTTP: token every request to /mcp must send as 'Authorization: Bearer'",
            parse=functools.partial(credential, header=True), secret=True, empty_is_default=False),
    Setting("MCP_AUTH_TOKENS", "HTTP: JSON file giving each person a token of their own and their wiki "
            "accounts, so that each edits as themselves (docs/people.md)", empty_is_default=False),
    Setting("MCP_AUTH", "HTTP: how callers prove who they are: token (MCP_AUTH_TOKEN, MCP_AUTH_TOKENS; the "
            "default when either is set) or login (each person signs in with a bot password of their own; "
            "docs/sign-in.md)",
            parse=setting_parser(str.lower, lambda text: text.lower() in AUTH_MODES, " or ".join(AUTH_MODES))),
    Setting("MCP_METRICS_TOKEN", "HTTP: token a scraper of /metrics sends as 'Authorization: Bearer' (default: "
            "none, and /metrics answers this machine's own addresses only); needs pip install "
            "'mediawiki-mcp[metrics]'", parse=functools.partial(credential, header=True), secret=True,
            empty_is_default=False),
    Setting("MCP_PUBLIC_URL", "HTTP with MCP_AUTH=login: the origin clients reach this server at, such as "
            "https://mcp.example.org behind a TLS proxy (default: the address it listens on)",
            parse=public_origin),
    Setting("MCP_AUTH_SECRET", "HTTP with MCP_AUTH=login: comma-separated Fernet keys that encrypt the bot "
            "passwords people sign in with; the first encrypts, all decrypt (to rotate, put a new key first)",
            parse=secret_list, secret=True, empty_is_default=False),
    Setting("MCP_ACCESS_TOKEN_SECONDS", "HTTP with MCP_AUTH=login: how long an access token works (default "
            f"{DEFAULT_ACCESS_TOKEN_SECONDS})", DEFAULT_ACCESS_TOKEN_SECONDS, seconds),
    Setting("MCP_REFRESH_TOKEN_SECONDS", "HTTP with MCP_AUTH=login: how long a refresh token works, at least "
            f"MCP_ACCESS_TOKEN_SECONDS (default {DEFAULT_REFRESH_TOKEN_SECONDS}, 30 days)",
            DEFAULT_REFRESH_TOKEN_SECONDS, seconds),
    Setting("MCP_TOOLSETS", f"comma-separated groups of tools to offer: {', '.join(TOOLSETS)}; all; default "
            f"(the default: {', '.join(t for t in TOOLSETS if t in DEFAULT_TOOLSETS)})", DEFAULT_TOOLSETS,
            toolset_names, field="toolsets"),
    Setting("MCP_LOADABLE_TOOLSETS", "comma-separated toolsets a client may load for its session with "
            f"load-toolset (default: {', '.join(t for t in TOOLSETS if t in DEFAULT_LOADABLE_TOOLSETS)}); "
            "empty: none, and load-toolset is not offered", DEFAULT_LOADABLE_TOOLSETS, loadable_toolsets,
            field="loadableToolsets", empty_is_default=False),
    Setting("MCP_READ_LEDGER_MAX_BYTES", "bytes of what each client read that the server keeps for the no-loss "
            f"checks of writes (default {DEFAULT_READ_LEDGER_MAX_BYTES}, and at most {READ_LEDGER_MAX_ENTRIES} "
            "pages and sections); past it the oldest is dropped, and such a page must be read again before "
            "it is written whole", DEFAULT_READ_LEDGER_MAX_BYTES, byte_count),
    Setting("MCP_STATELESS", "HTTP: true keeps no state between requests, for replicas; or --stateless", False,
            parse_bool),
    Setting("MCP_SHUTDOWN_GRACE_SECONDS", "HTTP: seconds the tool calls in flight get to finish after SIGTERM "
            f"(default {SHUTDOWN_GRACE_SECONDS:g}); those still running are then answered with what is known",
            SHUTDOWN_GRACE_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None and float(text) <= 3600,
                "a number of seconds up to 3600")),
    Setting("MCP_SESSIONS_PER_PERSON", "HTTP: MCP sessions one person (MCP_AUTH_TOKENS, MCP_AUTH=login) may have "
            f"open at once (default {DEFAULT_SESSIONS_PER_PERSON}); one more closes their oldest idle session, or "
            "is refused (429) while every one is busy", DEFAULT_SESSIONS_PER_PERSON,
            setting_parser(int, lambda text: whole_number(text) and int(text) >= 1, "a whole number, at least 1")),
    Setting("MCP_HEADER_TIMEOUT_SECONDS", "HTTP: seconds a client has to send a request's line and headers "
            f"(default {DEFAULT_HEADER_TIMEOUT_SECONDS:g}); a connection still sending them then is closed",
            DEFAULT_HEADER_TIMEOUT_SECONDS, setting_parser(
                float, lambda text: re.fullmatch(r"[0-9]+(\.[0-9]+)?", text) is not None and 0 < float(text) <= 3600,
                "a number of seconds above 0, up to 3600")),
    Setting("MCP_STATE_URL", "redis:// or rediss:// address of a Valkey or Redis server through which replicas "
            "share idempotency keys and the record of reads (needs pip install 'mediawiki-mcp[redis]'); "
            "default: kept in each process's memory", parse=state_address, field="stateUrl", secret=True),
)}


def setting(env: Mapping[str, str], variable: str) -> Any:
    """The value of a setting (SETTINGS) in ``env``."""
    return SETTINGS[variable].read(env)


# ---------------------------------------------------------------------------
# config.py: Config and WikiConfig: the settings read from the environment, or from the TypeScript MediaWiki
# MCP server's config.json, into the wikis this server serves.
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class WikiConfig:
    """One configured wiki. Credentials are never shown by repr()."""
    key: str
    url: str
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    token: str | None = dataclasses.field(default=None, repr=False)
    read_only: bool = True
    private: bool = False                 # its content must not leave through public means
    tags: tuple[str, ...] = ()            # change tags sent on every write
    attribute_edits: bool = True          # edit summaries end with " (via mediawiki-mcp)"
    sitename: str = ""                    # the configured name, until site info says
    basic_auth: tuple[str, str] | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        # A user name and password in the address go as HTTP basic auth: the address itself
        # is shown (list-wikis, resources), so it never keeps them.
        url, userinfo = split_userinfo(self.url)
        object.__setattr__(self, "url", url)
        object.__setattr__(self, "basic_auth", self.basic_auth or userinfo)

    def client(self, user_agent_prefix: str = "", **options: Any) -> MediaWikiClient:
        credentials = Credentials(self.username, self.password, self.token, self.basic_auth)
        return MediaWikiClient(self.url, credentials, user_agent_prefix=user_agent_prefix, **options)


def from_setting(variable: str) -> Any:
    """A Config field that a setting fills (Config.from_env), its default the setting's."""
    return dataclasses.field(default=SETTINGS[variable].default, metadata={"setting": variable})


@dataclasses.dataclass(frozen=True)
class Config:
    """The configuration, as read at start; the wikis added and removed since belong to the
    server's state (ServerState.wikis), and how it is served to the transport (HttpOptions)."""
    wikis: Mapping[str, WikiConfig]
    default_wiki: str
    content_max_bytes: int = from_setting("MCP_CONTENT_MAX_BYTES")
    file_data_max_bytes: int = from_setting("MCP_FILE_DATA_MAX_BYTES")
    confirm: str = from_setting("MCP_CONFIRM")
    confirm_timeout_seconds: float = from_setting("MCP_CONFIRM_TIMEOUT_SECONDS")
    text_origin_max_reads: int = from_setting("MCP_TEXT_ORIGIN_MAX_READS")
    user_agent: str = from_setting("MEDIAWIKI_USER_AGENT")
    upload_max_bytes: int = from_setting("MCP_UPLOAD_MAX_BYTES")
    upload_dirs: tuple[str, ...] = from_setting("MCP_UPLOAD_DIRS")
    trusted_hosts: tuple[str, ...] = from_setting("MCP_TRUSTED_HOSTS")
    toolsets: frozenset[str] = from_setting("MCP_TOOLSETS")
    loadable_toolsets: frozenset[str] = from_setting("MCP_LOADABLE_TOOLSETS")
    read_ledger_max_bytes: int = from_setting("MCP_READ_LEDGER_MAX_BYTES")
    state_url: str | None = dataclasses.field(default=None, repr=False, metadata={"setting": "MCP_STATE_URL"})
    allow_wiki_management: bool = True
    toolsets_from: str = ""  # where the toolsets were chosen (--check says): '' is by default

    def __post_init__(self) -> None:
        object.__setattr__(self, "wikis", MappingProxyType(dict(self.wikis)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, config_path: str | None = None) -> Config:
        """The configuration from the environment, or from the JSON file that ``config_path``
        (``--config``) or ``CONFIG`` names, with the environment's shared settings."""
        env = os.environ if environ is None else environ
        shared = {field.name: setting(env, field.metadata["setting"]) for field in dataclasses.fields(cls)
                  if "setting" in field.metadata}
        shared["toolsets_from"] = "MCP_TOOLSETS" if SETTINGS["MCP_TOOLSETS"].names_given(env) else ""
        path = config_path or setting(env, "CONFIG")
        if path:
            return config_from_file(path, env, shared)
        username, password, token = (setting(env, name) for name in
                                     ("MEDIAWIKI_USERNAME", "MEDIAWIKI_PASSWORD", "MEDIAWIKI_TOKEN"))
        url = wiki_address(setting(env, "MEDIAWIKI_URL"), "MEDIAWIKI_URL", "MEDIAWIKI_TOKEN" if token else "")
        if bool(username) != bool(password):
            raise ConfigError("MEDIAWIKI_USERNAME and MEDIAWIKI_PASSWORD go together: set both or neither")
        if username and token:
            raise ConfigError("Set either MEDIAWIKI_USERNAME/MEDIAWIKI_PASSWORD or MEDIAWIKI_TOKEN, not both")
        read_only = setting(env, "MEDIAWIKI_READ_ONLY")
        wiki = WikiConfig(key=wiki_key(url), url=url, username=username, password=password, token=token,
                          read_only=not (username or token) if read_only is None else read_only)
        return cls(wikis={wiki.key: wiki}, default_wiki=wiki.key, **shared)


def wiki_key(url: str) -> str:
    """A wiki's key is its server name (with the port when it is not the scheme's own)."""
    parts = urllib.parse.urlsplit(url)
    default = DEFAULT_PORTS.get(parts.scheme.lower())
    return (parts.hostname or "") + (f":{parts.port}" if parts.port and parts.port != default else "")


def normalise_server(url: str) -> str:
    """An http(s) URL from what people write for a wiki's address: ``//host`` (a
    protocol-relative $wgServer) and a bare ``host`` become https; ValueError otherwise."""
    url = url.strip()
    if url.startswith("//"):
        url = "https:" + url
    elif "://" not in url:
        url = "https://" + url
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not valid_host(parts.hostname or ""):
        raise ValueError(url)
    parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc, parts.path, parts.query, ""))


def wiki_address(value: str, name: str, token: str = "") -> str:
    """A configured wiki address, normalised. A user name and password in it (for HTTP basic
    auth) must come together, and not beside a token (``token``: where one is set), as both
    travel in the Authorization header. Messages never show an address that has them."""
    try:
        url = normalise_server(value)
    except ValueError:
        shown = "(not shown: it holds a user name or password)" if "@" in value else repr(value)
        raise ConfigError(f"{name} must be an http(s) URL of the wiki, not {shown}") from None
    basic_auth = split_userinfo(url)[1]
    if basic_auth and not all(basic_auth):
        lacking = "user name but no password" if basic_auth[0] else "password but no user name"
        raise ConfigError(f"{name} holds a {lacking} before its @; HTTP basic auth needs both")
    if basic_auth and token:
        raise ConfigError(f"{name} holds a user name and password for HTTP basic auth, which cannot go "
                          f"beside a token ({token}): both travel in the Authorization header")
    return url


#: Per-wiki fields of that format and the JSON types each takes (credentials apart).
WIKI_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "sitename": ("string",), "server": ("string",), "articlepath": ("string",),
    "scriptpath": ("string",), "readOnly": ("boolean",), "private": ("boolean",),
    "attributeEdits": ("boolean",), "tags": ("string", "array of strings", "null"),
    "publicServer": ("string", "null"), "oauth2ClientId": ("string", "null"),
    "oauth2ClientSecret": ("string", "null"), "oauth2CallbackPort": ("number", "null"),
}


#: The credential fields: those of the secret settings (SETTINGS).
SECRET_FIELDS = tuple(row.field.removeprefix("wikis.*.") for row in SETTINGS.values()
                      if row.secret and row.field.startswith("wikis.*."))


#: Accepted and ignored: browser OAuth is a feature of the TypeScript server only, and links
#: are built from the public address the wiki itself reports.
IGNORED_WIKI_FIELDS = ("oauth2ClientId", "oauth2ClientSecret", "oauth2CallbackPort", "publicServer")


TOP_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "defaultWiki": ("string",), "wikis": ("object",), "allowWikiManagement": ("boolean",),
    "uploadDirs": ("array of strings",), "toolsets": ("array of strings", "string"), "stateUrl": ("string",),
    "loadableToolsets": ("array of strings", "string"),
}


EXEC_SECRET_TIMEOUT_SECONDS = 30


VARIABLE = re.compile(r"\$\{([^}]+)\}")


def json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array of strings" if all(isinstance(v, str) for v in value) else "array"
    kinds = ((type(None), "null"), (bool, "boolean"), ((int, float), "number"), (str, "string"),
             (dict, "object"))
    return next((kind for types, kind in kinds if isinstance(value, types)), type(value).__name__)


def check_type(path: str, value: Any, kinds: tuple[str, ...]) -> None:
    kind = json_kind(value)
    if kind not in kinds and not (kind == "array of strings" and "array" in kinds):
        quoted = " (remove the quotes)" if kind == "string" and kinds[0] in ("boolean", "number") else ""
        raise ConfigError(f"{path} must be {' or '.join(kinds)}, not {kind}{quoted}")


def substitute(value: str, env: Mapping[str, str], path: str, required: bool,
               encode: Callable[[str], str] = str) -> str:
    """Replaces ``${VAR}`` with the environment's value (through ``encode``). An unset variable
    is an error where ``required`` (credentials); elsewhere the text stays, as the TypeScript
    server does."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in env:
            return encode(env[name])
        if required:
            raise ConfigError(f"{path} refers to ${{{name}}}, which is not set in the environment")
        return match.group(0)
    return VARIABLE.sub(replace, value)


def substitute_address(value: str, env: Mapping[str, str], path: str) -> str:
    """``${VAR}`` in a wiki address. In the user name and password before its @ a variable is a
    credential: it must be set, and it is percent-encoded, since a password may hold any character."""
    scheme = re.match(r"([a-z][a-z0-9+.-]*:)?//", value, re.IGNORECASE)
    start = scheme.end() if scheme else 0
    userinfo, at, _ = re.split(r"[/?#]", value[start:], maxsplit=1)[0].rpartition("@")
    if not at:
        return substitute(value, env, path, False)
    end = start + len(userinfo)
    return (value[:start] + substitute(userinfo, env, path, True, lambda v: urllib.parse.quote(v, safe=""))
            + substitute(value[end:], env, path, False))


def file_credential(value: Any, env: Mapping[str, str], path: str, header: bool, secret: bool = True) -> str | None:
    """A credential field of the configuration file: null, a string (``${VAR}`` substituted,
    the variable required) or an exec source. A literal empty string is no credential, as null
    is and as the TypeScript server reads it; one that a variable leaves empty is refused.
    Written out, a ``secret`` gets a warning at start; a user name (not ``secret``) none."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, str):
        if secret and not VARIABLE.search(value):
            _warn_once(f"{path} holds a plaintext credential; ${{VAR}} or an exec source keeps it out "
                       "of the file.")
        value = substitute(value, env, path, True)
    else:
        value = run_secret_command(value, path)
    return credential(path, value, header)


def run_secret_command(spec: Any, path: str, timeout: float = EXEC_SECRET_TIMEOUT_SECONDS) -> str:
    """A secret from ``{"exec": {"command": ..., "args": [...]}}``: the command's trimmed
    standard output. Run without a shell; its output is never shown, not even on failure. One that
    takes longer than ``timeout`` seconds is killed with every process it started."""
    command = spec.get("exec") if isinstance(spec, dict) else None
    if not isinstance(command, dict):
        raise ConfigError(f"{path} must be a string, null or {{\"exec\": {{\"command\": ..., \"args\": [...]}}}}")
    program, args = command.get("command"), command.get("args", [])
    if not isinstance(program, str) or not program:
        raise ConfigError(f"{path}.exec.command must be a non-empty string")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{path}.exec.args must be an array of strings")
    try:  # its error output goes nowhere: it may hold the secret too
        # A session of its own: on a timeout its whole process group goes, so no helper it
        # started (a password manager's agent, say) lives on holding the output pipe open.
        process = subprocess.Popen([program, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True, stdin=subprocess.DEVNULL, start_new_session=True)
    except FileNotFoundError:
        raise ConfigError(f"{path}: the secret command {program!r} was not found") from None
    except OSError as error:
        raise ConfigError(f"{path}: the secret command {program!r} could not run ({error.strerror})") from None
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise ConfigError(f"{path}: the secret command {program!r} did not finish within {timeout:g} s, "
                          "so it was stopped") from None
    if process.returncode != 0:
        ended = (f"was stopped by signal {-process.returncode}" if process.returncode < 0
                 else f"failed with exit status {process.returncode}")
        raise ConfigError(f"{path}: the secret command {program!r} {ended}; its output is not shown (it may "
                          "hold the secret): run the command yourself to see why.")
    secret = output.strip()
    if not secret:
        raise ConfigError(f"{path}: the secret command {program!r} printed nothing")
    return secret


def json_object(path: str) -> dict[str, Any]:
    """The JSON object a configuration file holds."""
    try:
        with open(path, encoding="utf-8") as file:
            raw = json.load(file)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path} does not exist") from None
    except OSError as error:
        raise ConfigError(f"configuration file {path} cannot be read: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"configuration file {path} is not valid JSON: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"configuration file {path} must hold a JSON object, not {json_kind(raw)}")
    return raw


def config_from_file(path: str, env: Mapping[str, str], settings: dict[str, Any]) -> Config:
    """Reads the configuration file (the TypeScript server's config.json shape). Every
    problem is a ConfigError naming the field."""
    raw = json_object(path)
    for name, kinds in TOP_FIELD_TYPES.items():
        if name in raw:
            check_type(name, raw[name], kinds)
    unknown = [name for name in raw if name not in TOP_FIELD_TYPES]
    if unknown:
        log.warning("configuration file %s: unknown field(s) %s ignored", path, ", ".join(unknown))
    for row in SETTINGS.values():
        if row.field.startswith("wikis.") and env.get(row.variable, "").strip():
            log.warning("%s is ignored: the configuration file %s names the wikis", row.variable, path)
    wikis: dict[str, WikiConfig] = {}
    ignored: set[str] = set()
    for key, entry in (raw.get("wikis") or {}).items():
        wikis[key] = wiki_from_file(key, entry, env, ignored)
    if not wikis:
        raise ConfigError("wikis must name at least one wiki, such as "
                          "{\"en.wikipedia.org\": {\"server\": \"https://en.wikipedia.org\"}}")
    if ignored:
        log.warning("configuration file %s: %s ignored (browser OAuth is not a feature of this server; "
                    "use token or username and password)", path, ", ".join(sorted(ignored)))
    default = substitute(raw.get("defaultWiki") or next(iter(wikis)), env, "defaultWiki", False)
    if default not in wikis:
        raise ConfigError(f"defaultWiki {default!r} is not one of the wikis: {', '.join(wikis)}")
    upload_dirs = upload_directories(
        [substitute(d, env, "uploadDirs", False) for d in raw.get("uploadDirs") or []], "uploadDirs")
    settings = {**settings, "upload_dirs": tuple(dict.fromkeys(settings["upload_dirs"] + upload_dirs))}
    if "toolsets" in raw:  # the file's choice over the environment's, as for the wikis
        toolsets = raw["toolsets"]
        settings["toolsets"] = toolset_names("toolsets", toolsets if isinstance(toolsets, str) else ",".join(toolsets))
        settings["toolsets_from"] = f"toolsets in {path}"
    if "loadableToolsets" in raw:
        loadable = raw["loadableToolsets"]
        settings["loadable_toolsets"] = loadable_toolsets(
            "loadableToolsets", loadable if isinstance(loadable, str) else ",".join(loadable))
    if raw.get("stateUrl"):  # the file's choice over the environment's too
        settings["state_url"] = state_address("stateUrl", substitute_address(raw["stateUrl"], env, "stateUrl"))
    return Config(wikis=wikis, default_wiki=default,
                  allow_wiki_management=raw.get("allowWikiManagement", True), **settings)


def wiki_from_file(key: str, entry: Any, env: Mapping[str, str], ignored: set[str]) -> WikiConfig:
    where = f"wikis.{key}"
    if not key.strip() or key.startswith("mcp://") or any(c.isspace() or c == "/" for c in key):
        raise ConfigError(f"wiki key {key!r} must be a name such as en.wikipedia.org "
                          "(no spaces, no /, not starting with mcp://)")
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(entry)}")
    fields = {name: wiki_field(where, name, value, env, ignored) for name, value in entry.items()}
    if not fields.get("server"):
        raise ConfigError(f"{where}.server is required: the wiki's address, such as https://{key}")
    username, password, token = (fields.get(n) for n in SECRET_FIELDS)
    url = wiki_address(fields["server"], f"{where}.server", f"{where}.token" if token else "")
    if isinstance(fields.get("scriptpath"), str):
        url = with_script_path(url, fields["scriptpath"], f"{where}.scriptpath")
    if bool(username) != bool(password):
        raise ConfigError(f"{where}: username and password go together (a bot password); set both or neither")
    if username and token:
        raise ConfigError(f"{where}: set either token or username and password, not both")
    private = bool(fields.get("private", False))
    if private and not (username or token):
        log.warning("%s is private but has no credentials: reading it will fail", where)
    tags = fields.get("tags") or ()
    tags = (tags,) if isinstance(tags, str) else tuple(tags)
    if not all(tag.strip() for tag in tags):
        raise ConfigError(f"{where}.tags holds an empty tag")
    return WikiConfig(
        key=key, url=url, username=username, password=password, token=token,
        # Without credentials a wiki is read-only unless the file says otherwise: an
        # anonymous edit would publish the server's IP address.
        read_only=fields.get("readOnly", not (username or token)),
        private=private, tags=tags,
        attribute_edits=fields.get("attributeEdits", True), sitename=fields.get("sitename") or "")


def wiki_field(where: str, name: str, value: Any, env: Mapping[str, str], ignored: set[str]) -> Any:
    """A field of the wiki at ``where`` in the configuration file, its type checked and ``${VAR}``
    substituted; ``ignored`` gains the name of a field set that this server ignores."""
    path = f"{where}.{name}"
    if name in SECRET_FIELDS:
        return file_credential(value, env, path, header=name == "token")
    if name not in WIKI_FIELD_TYPES:
        log.warning("%s is not a field of the configuration format; ignored", path)
        return value
    check_type(path, value, WIKI_FIELD_TYPES[name])
    if name in IGNORED_WIKI_FIELDS and value is not None:
        ignored.add(name)
    if name == "server":
        return substitute_address(value, env, path)
    if isinstance(value, list):
        return [substitute(v, env, path, False) for v in value]
    return substitute(value, env, path, False) if isinstance(value, str) else value


def with_script_path(url: str, script_path: str, path: str) -> str:
    """The api.php address in the directory ``script_path`` (scriptpath, as MediaWiki's $wgScriptPath,
    from the origin, so that server may be a page URL too), unless ``url`` is one already."""
    parts = urllib.parse.urlsplit(url)
    if parts.path.endswith("api.php"):
        return url
    directory = script_path.strip().strip("/")
    if re.search(r"[\s?#:]", directory) or directory.endswith("api.php"):
        raise ConfigError(f"{path} must be a path such as /w (the directory of api.php), not {script_path!r}")
    api = f"/{directory}/api.php".replace("//", "/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, api, "", ""))


# ---------------------------------------------------------------------------
# render.py: Text for a model: byte budgets cut on character boundaries, labelled lines, continuation tokens,
# and the wiki's timestamps and protections in words.
# ---------------------------------------------------------------------------

def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


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
    character boundaries (an offset inside a character starts at that character; a budget
    smaller than the first character still shows it)."""
    data = text.encode("utf-8")
    if offset > len(data):
        raise invalid_input(f"offset {offset} is past the end of the content ({len(data)} bytes).")
    start = utf8_len(data[:max(offset, 0)].decode("utf-8", "ignore"))  # back to a character's start
    shown = (data[start:start + budget].decode("utf-8", "ignore")  # drops a character cut at the end
             or data[start:start + 4].decode("utf-8", "ignore")[:1])
    return Slice(shown, start, start + utf8_len(shown), len(data))


#: The share of a budget a truncation marker's list of sections may take (1/4): the rest is
#: content, so that a call always reads on.
OUTLINE_SHARE = 4


def fitted(text: str, offset: int, budget: int, marker: Callable[[Slice], str]) -> tuple[Slice, str | None]:
    """The part of ``text`` from ``offset`` that fits ``budget`` bytes together with its truncation
    marker (made by ``marker`` for a cut), and that marker; None when the rest of the text fits whole.
    The marker names the cut, so its length changes with it: a few digits, fitted in a few tries."""
    piece = slice_content(text, offset, budget)
    note = marker(piece) if piece.truncated else None
    while note is not None and piece.end - piece.start + utf8_len(note) > budget:
        smaller = slice_content(text, offset, max(budget - utf8_len(note), 1))
        if smaller.end >= piece.end:
            break  # a budget the marker alone overruns: a character still, so that a call reads on
        piece, note = smaller, marker(smaller)
    return piece, note


def call_args(**args: Any) -> str:
    """Renders arguments the way markers name them: ``section=2 and offset=50000``."""
    return " and ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())


class Batch(typing.NamedTuple):
    """What a truncation marker of several pages (get-pages) says besides the page it cut: the bytes
    it shows of all the pages and their total (said when it cut none), the pages it left out, and the
    other arguments of the call that reads those."""
    shown: tuple[int, int]
    left_out: Sequence[str]
    fields: Mapping[str, Any]


def more_results_marker(count: int, item: str, tool: str, param: str, value: Any) -> str:
    return (f"More results available. Returned {counted(count, item)}. To fetch the next segment, "
            f"call {tool} again with {param}={json.dumps(value, ensure_ascii=False)}.")


def counted(number: int, noun: str) -> str:
    """``1 page``, ``2 pages``, ``2 matches``: a count with its noun (a regular one) in the right number."""
    return f"{number} {noun}{'' if number == 1 else 'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def labelled(*pairs: tuple[str, Any]) -> str:
    """Compact ``Label: value`` lines; empty and default values are left out. A number is a
    value, 0 included (section 0 is the lead), so only None, False and empty text or lists go."""
    return "\n".join(f"{label}: {value}" for label, value in pairs
                     if value is not None and value is not False and (isinstance(value, int) or value))


def strip_tags(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def encode_continuation(cont: Mapping[str, Any]) -> str:
    return urllib.parse.urlencode({k: str(v) for k, v in cont.items()}, safe="|:")


def decode_continuation(token: str, allowed: tuple[str, ...]) -> dict[str, str]:
    """Parses a continueFrom token back into API fields, accepting only the
    continuation fields this tool's query produces (never other API parameters)."""
    try:
        fields = dict(urllib.parse.parse_qsl(token, keep_blank_values=True, strict_parsing=True))
    except ValueError:
        fields = {}
    if not fields or any(k not in allowed and k != "continue" for k in fields):
        raise invalid_input(f"continueFrom {token!r} is not a continuation this tool produced; pass the "
                            "value from the last 'More results available' marker unchanged.")
    return fields


#: How MediaWiki writes the expiry of what never expires.
NEVER = ("infinite", "infinity", "indefinite", "never", "")


def until_clause(expiry: Any) -> str:
    """`` until 2026-12-08T04:23:48Z``, or nothing for what never expires."""
    return "" if str(expiry or "").lower() in NEVER else f" until {expiry}"


def protection_text(entries: Iterable[Mapping[str, Any]]) -> str:
    """``edit=sysop until 2026-12-08T04:23:48Z, move=sysop; cascading``, or ``none``: protection
    levels as prop=info and the protection log give them (type, level, expiry, cascade); then
    those another page's cascading protection imposes (prop=info names it as their source)."""
    levels = [e for e in entries if e.get("level")]
    own = [e for e in levels if not e.get("source")]
    text = ", ".join(f"{e.get('type')}={e['level']}{until_clause(e.get('expiry'))}" for e in own)
    text = text + ("; cascading" if any(e.get("cascade") for e in own) else "") if text else "none"
    for source in dict.fromkeys(e["source"] for e in levels if e.get("source")):
        imposed = ", ".join(f"{e.get('type')}={e['level']}" for e in levels if e.get("source") == source)
        text += f"; yet {imposed} by the cascading protection of {source}, which only that page can lift"
    return text


def one_line(text: str) -> str:
    """Collapses whitespace (edit summaries may hold newlines) so a row stays one line."""
    return " ".join(str(text).split())


def signed(number: int) -> str:
    return f"{number:+d}" if number else "0"


#: The units of an age a person says ("3 days ago"), in seconds.
AGE_UNITS = {"minute": 60, "hour": 3600, "day": 86400, "week": 604800}


def wiki_timestamp(value: str, name: str, *, day_end: bool = False) -> str:
    """A time as a person says it, in MediaWiki's UTC form 2026-11-29T15:00:00Z: an ISO 8601 time
    (UTC when it names no zone), an age (24 hours ago, 1 week ago), or a day (an ISO 8601 date,
    today, yesterday; UTC): its first moment, or with ``day_end`` its last, as an end means it."""
    text = " ".join(value.lower().split())
    now = datetime.datetime.now(datetime.timezone.utc)
    age = re.fullmatch(r"(\d{1,4}|an?) (minute|hour|day|week)s? ago", text)
    days_ago = {"today": 0, "yesterday": 1}.get(text)
    moment: datetime.datetime | None
    if age:
        count = int(age[1]) if age[1].isdigit() else 1
        moment = now - datetime.timedelta(seconds=count * AGE_UNITS[age[2]])
    elif days_ago is not None:
        moment = datetime.datetime.combine(now.date() - datetime.timedelta(days=days_ago), datetime.time(),
                                           datetime.timezone.utc)
    else:
        moment = iso_moment(value)
    if moment is None:
        raise invalid_input(f"Argument {name!r} must be a date or time in ISO 8601 (2026-11-29, "
                            "2026-11-29T15:00:00Z; UTC when no zone is given), an age such as 24 hours "
                            f"ago or 3 days ago, today or yesterday; got {value!r}.")
    # a day: today, yesterday or an ISO 8601 date (calendar or week), never an age or a time
    if day_end and (days_ago is not None or re.fullmatch(r"\d{4}-(\d\d-\d\d|w\d\d-\d)", text)):
        moment += datetime.timedelta(days=1, seconds=-1)
    try:
        moment = moment.astimezone(datetime.timezone.utc)
    except OverflowError:  # a zone that moves it before the year 1 or past 9999
        raise invalid_input(f"Argument {name!r} is {value!r}, which in UTC falls outside the years 1 to "
                            "9999.") from None
    # MediaWiki reads four digits of year; strftime writes the year 1 as "1"
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%SZ")


def iso_moment(value: str) -> datetime.datetime | None:
    """An ISO 8601 date or time as an aware datetime (UTC when it names no zone); None if it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(re.sub("[Zz]$", "+00:00", value.strip()))  # 3.10 reads no Z
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def title_in_namespace(site: SiteInfo, title: str, namespace: int) -> str:
    """``title`` in ``namespace``: kept when it already carries any of the wiki's names
    for that namespace (local, canonical or alias), else prefixed with the local name."""
    if site.namespace_of(title) == namespace:
        return title
    return f"{site.namespaces.get(namespace) or CANONICAL_NAMESPACES[namespace]}:{title}"


#: The English names every wiki also accepts, for namespaces that tools add to titles.
CANONICAL_NAMESPACES = {6: "File", 10: "Template", 14: "Category"}


#: Image formats a model can view, by their first bytes.
RASTER_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
                     (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def raster_type(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, GIF or WebP bytes, read from the bytes themselves."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in RASTER_SIGNATURES if data.startswith(magic)), None)


# ---------------------------------------------------------------------------
# sections.py: Sections as MediaWiki counts them, from wikitext alone: the preprocessor's headings, the outline
# (wikitext_sections, outline_of), a heading as it reads and as a lookup compares it (heading_plain,
# heading_key), spans (section_span, section_text, replace_section), a section followed across edits
# (followed_section), the no-loss checks of a section's text (lost_subsections, lost_headings,
# repeated_sections, shrunk_to_section), and text as the wiki receives and saves it. What needs the
# wiki (a heading looked up with the page's rendered outline) is in pages.
# ---------------------------------------------------------------------------

#: Brackets the preprocessor pairs, as Preprocessor::$rules: closing text, and the element
#: each count makes (None: plain text, so headings inside still count).
BRACKETS: dict[str, tuple[str, dict[int, str | None]]] = {
    "{": ("}", {2: "template", 3: "tplarg"}), "[": ("]", {2: None}), "-{": ("}-", {2: None})}


@dataclasses.dataclass(frozen=True)
class Section:
    number: int
    level: int
    heading: str
    start: int = 0  # byte offset of the heading line in the text


class HeadingNode(typing.NamedTuple):
    """A heading as the preprocessor finds it, in characters: the section number it takes, its
    level, and where its line starts and its closing equals signs end."""
    number: int
    level: int
    start: int
    end: int


@dataclasses.dataclass(slots=True)
class _Part:
    """One part of an open bracket (its text up to a pipe): where it starts, the headings found
    in it, and the comment bookkeeping Preprocessor_Hash keeps for heading ends."""
    start: int
    headings: list[HeadingNode] = dataclasses.field(default_factory=list)
    eqpos: bool = False
    comment_end: int = -1
    visual_end: int = -1


class _Piece:
    __slots__ = ("close", "count", "open", "parts", "prefix", "start")

    def __init__(self, open_: str, close: str, count: int, start: int = 0, prefix: str = "") -> None:
        self.open, self.close, self.count, self.start, self.prefix = open_, close, count, start, prefix
        self.parts = [_Part(start + count)]

    def flags(self) -> tuple[bool, bool, bool]:
        """(find pipes, find equals, in a heading), as PPDStackElement::getFlags."""
        pipe = self.open not in ("\n", "[")
        return pipe, pipe and len(self.parts) > 1 and not self.parts[-1].eqpos, self.open == "\n"

    def broken(self) -> list[HeadingNode]:
        return [h for part in self.parts for h in part.headings]


@functools.lru_cache(maxsize=32)
def _element_pattern(tags: frozenset[str]) -> re.Pattern[str]:
    names = sorted(tags | {"includeonly", "noinclude", "/noinclude", "onlyinclude", "/onlyinclude"})
    return re.compile("(" + "|".join(re.escape(n) for n in names) + r")(?:[ \t\n\x0b\x0c\r]|/>|>)|(!--)",
                      re.IGNORECASE)


@functools.lru_cache(maxsize=256)
def _closing_tag(name: str) -> re.Pattern[str]:
    return re.compile("</" + re.escape(name) + "[ \t\n\x0b\x0c\r]*>", re.IGNORECASE)


@functools.lru_cache(maxsize=128)
def _next_mark(closing: str, pipe: bool, equals: bool, heading: bool, lang_conversion: bool) -> re.Pattern[str]:
    """Where the preprocessor stops next: a bracket, a tag, the closing text of the innermost
    bracket, pipes or equals signs where they count, and a line break where it can end a
    heading or start one. A '-' matters only in -{."""
    chars = "[{<" + closing.replace("-", "").replace("\n", "") + ("|" if pipe else "") + ("=" if equals else "")
    return re.compile("[" + re.escape(chars) + "]|\n" + ("" if heading else "(?==)")
                      + (r"|-(?=\{)" if "-" in closing or lang_conversion else ""))


#: A link or template call with no markup inside: it holds no heading, so it is skipped whole.
PLAIN_BRACKETS = re.compile(r"\[\[[^\[\]{}<\n]*\]\]|\{\{[^\[\]{}<\n]*\}\}")


def _span(text: str, chars: str, start: int, limit: int | None = None) -> int:
    """PHP's strspn: how many of ``chars`` run from ``start``."""
    end = len(text) if limit is None else min(len(text), start + limit)
    i = start
    while i < end and text[i] in chars:
        i += 1
    return i - start


def _span_back(text: str, chars: str, end: int) -> int:
    """How many of ``chars`` run backwards from just before ``end``."""
    i = end
    while i > 0 and text[i - 1] in chars:
        i -= 1
    return end - i


@dataclasses.dataclass(frozen=True)
class Node:
    """A stretch of wikitext the preprocessor makes a node of, in characters: a template call or
    parser function ('template'), a parameter ('tplarg'), a tag ('tag', such as <ref>) or a
    comment; ``parts``: for a template or parameter, its parts' (start, end), the name first."""
    kind: str
    start: int
    end: int
    name: str = ""
    parts: tuple[tuple[int, int], ...] = ()


def preprocess(text: str, syntax: Syntax = CORE_SYNTAX, inclusion: bool = False,  # noqa: C901
               ) -> tuple[list[HeadingNode], list[Node]]:
    """The headings and the other nodes (Node) of wikitext, as MediaWiki's preprocessor
    (Preprocessor_Hash, a port of buildDomTreeArrayFromText) finds them; ``inclusion``: as a page
    transcluding it reads it (<noinclude> parts left out, <includeonly> parts in), where no heading
    makes a section. The headings come in text order, those that make sections: comments,
    <includeonly> and the wiki's tags hide a heading; so does a template call around it, yet that
    heading still takes a number, which is why section numbers can skip one."""
    ignored = ("includeonly", "/includeonly") if inclusion else ("noinclude", "/noinclude")
    element_pattern = _element_pattern(syntax.tags | ({"/includeonly"} if inclusion else set()))
    nodes: list[Node] = []
    root: list[HeadingNode] = []
    stack: list[_Piece] = []
    index, i, length = 1, 0, len(text)
    no_more_gt, no_closing = False, set()
    fake_line_start = True

    def headings() -> list[HeadingNode]:  # where a heading closed now belongs
        return stack[-1].parts[-1].headings if stack else root

    while True:
        find_pipe, find_equals, in_heading = stack[-1].flags() if stack else (False, False, False)
        if fake_line_start:
            found, char = "line-start", ""
        else:
            closing = stack[-1].close if stack else ""
            match = _next_mark(closing, find_pipe, find_equals, in_heading, syntax.lang_conversion).search(text, i)
            i = match.start() if match else length
            if i >= length:
                if closing != "\n":
                    break
                found, char = "line-end", ""
            else:
                char, two = text[i], text[i:i + 2]
                opening = two if two in BRACKETS else char
                if char in "|=<":
                    found = {"|": "pipe", "=": "equals", "<": "angle"}[char]
                elif char == "\n":
                    found = "line-end" if in_heading else "line-start"
                elif closing in (two, char):
                    found, char = "close", closing
                elif opening in BRACKETS:
                    found, char = "open", opening
                else:  # a '-' or '}' that opens or closes nothing
                    i += 1
                    continue
        if found == "angle":
            element = element_pattern.match(text, i + 1)
            if not element:
                i += 1
                continue
            if element.group(2):  # a comment, to -->; whole-line comments vanish with their line
                end = text.find("-->", i + 4)
                if end < 0:
                    i = length
                    continue
                ws_start = i - _span_back(text, " \t", i)
                ws_end = end + 2 + _span(text, " \t", end + 3)
                while text.startswith("<!--", ws_end + 1) and (more := text.find("-->", ws_end + 4)) >= 0:
                    ws_end = more + 2 + _span(text, " \t", more + 3)
                fake_line_start = (ws_start > 0 and text[ws_start - 1] == "\n"
                                   and text[ws_end + 1:ws_end + 2] == "\n")
                end = ws_end + 1 if fake_line_start else end + 2
                if stack:
                    part = stack[-1].parts[-1]
                    if part.comment_end != ws_start - 1:
                        part.visual_end = ws_start
                    part.comment_end = end
                nodes.append(Node("comment", i, end + 1))
                i = end + 1
                continue
            name = element.group(1)
            lower = name.lower()
            tag_end = -1 if no_more_gt else text.find(">", i + len(name) + 1)
            if tag_end < 0:
                no_more_gt = True
                i += 1
                continue
            if lower in ignored or lower in ("onlyinclude", "/onlyinclude"):
                i = tag_end + 1
                continue
            if text[tag_end - 1] == "/":
                end = tag_end + 1
            elif name not in no_closing and (closed := _closing_tag(name).search(text, tag_end + 1)):
                end = closed.end()
            elif name in ("includeonly", "noinclude", "onlyinclude"):
                end = length
            else:  # no closing tag: the opening tag is plain text
                no_closing.add(name)
                i = tag_end + 1
                continue
            nodes.append(Node("tag", i, end, lower))
            i = end
            continue
        if found == "line-start":
            if fake_line_start:
                fake_line_start = False
            else:
                i += 1
            count = _span(text, "=", i, 6)
            if count > 0 and not (count == 1 and find_equals):
                stack.append(_Piece("\n", "\n", count, start=i))
                i += count
        elif found == "line-end":
            piece = stack.pop()
            part = piece.parts[-1]
            search_start = i - _span_back(text, " \t", i)
            if part.comment_end >= 0 and search_start - 1 == part.comment_end:
                search_start = part.visual_end - _span_back(text, " \t", part.visual_end)
            equals = _span_back(text, "=", search_start)
            if search_start - equals == piece.start:  # a line of equals signs only
                level = min(6, (equals - 1) // 2) if equals >= 3 else 0
            else:
                level = min(equals, piece.count)
            if level:
                headings().append(HeadingNode(index, level, piece.start, search_start))
                index += 1
            else:
                headings().extend(piece.broken())
        elif found == "open":
            plain = PLAIN_BRACKETS.match(text, i)
            if plain:
                if char == "{":
                    pipes = [k for k in range(i + 2, plain.end() - 2) if text[k] == "|"]
                    parts = tuple(zip([i + 2] + [k + 1 for k in pipes], [*pipes, plain.end() - 2]))
                    nodes.append(Node("template", i, plain.end(), text[slice(*parts[0])].strip(), parts))
                i = plain.end()
                continue
            count = _span(text, char[-1], i + 1) + 1 if len(char) > 1 else _span(text, char, i)
            prefix = ""
            if char == "-{" and count > 2:  # "-{{": the braces win
                prefix, char, count, i = "-", "{", count - 1, i + 1
            close, names = BRACKETS[char]
            if count >= min(names):
                stack.append(_Piece(char, close, count, start=i, prefix=prefix))
            i += count
        elif found == "close":
            piece = stack[-1]
            count = len(char) if len(char) > 1 else _span(text, char, i, piece.count)
            names = BRACKETS[piece.open][1]
            matching = max((n for n in names if n <= count), default=0)
            if not matching:
                i += count
                continue
            kept = piece.broken() if names[matching] is None else []  # a template hides its headings
            if names[matching]:
                bounds = [part.start for part in piece.parts] + [i + 1]
                parts = tuple((a, b - 1) for a, b in itertools.pairwise(bounds))
                nodes.append(Node(str(names[matching]), piece.start + piece.count - matching, i + matching,
                                  text[parts[0][0]:parts[0][1]].strip(), parts))
            i += matching
            stack.pop()
            if matching < piece.count:
                piece.count -= matching
                piece.parts = [_Part(piece.start + piece.count)]
                if piece.count == 1 and piece.open == "{" and piece.prefix == "-":
                    piece.prefix, piece.open, piece.count, piece.close = "", "-{", 2, "}-"
                if piece.count >= min(BRACKETS[piece.open][1]):
                    stack.append(piece)
            headings().extend(kept)
        elif found == "pipe":
            stack[-1].parts.append(_Part(i + 1))
            i += 1
        elif found == "equals":
            stack[-1].parts[-1].eqpos = True
            i += 1
    for piece in stack:  # unclosed brackets are plain text, and headings in them count
        root.extend(piece.broken())
    return sorted(root, key=lambda h: h.start), nodes


def wikitext_sections(text: str, syntax: Syntax = CORE_SYNTAX) -> list[Section]:
    """The sections of wikitext as MediaWiki numbers them for section=N editing (preprocess)."""
    found: list[Section] = []
    position = offset = 0
    for number, level, start, end in preprocess(text, syntax)[0]:
        offset += utf8_len(text[position:start])
        position = start
        heading = re.sub(r"<!--.*?(?:-->|$)", "", text[start + level:end - level], flags=re.DOTALL)
        found.append(Section(number, level, " ".join(heading.split()), offset))
    return found


def section_heading(text: str, number: int | None, syntax: Syntax) -> str | None:
    """The heading of section ``number`` of wikitext ``text``, as it reads (heading_plain)."""
    found = (heading_plain(s.heading) for s in wikitext_sections(text, syntax) if s.number == number)
    return next(found, None)


def numbered_headings(sections: Iterable[Section | tuple[int, str]]) -> list[tuple[int, str]]:
    """Sections as (number, heading) rows, each heading as the outline names it (heading_plain)."""
    return [(s.number, heading_plain(s.heading)) if isinstance(s, Section) else s for s in sections]


class Heading(typing.NamedTuple):
    """A section as a heading names it; ``source``: the page a template brings it from, which
    gives it no ``number`` here."""
    number: int | None
    level: int
    text: str  # as it reads
    source: str = ""


def outline_of(parsed: Mapping[str, Any]) -> list[Heading]:
    return [Heading(int(s["index"]) if str(s.get("index", "")).isdigit() else None, int(s.get("level") or 2),
                    heading_plain(s.get("line", "")), "" if str(s.get("index", "")).isdigit()
                    else str(s.get("fromtitle") or "").replace("_", " ")) for s in parsed.get("sections") or []]


def html_sections(parsed: dict[str, Any]) -> list[tuple[int, str]]:
    """The numbered sections of an action=parse result, as truncation markers list them."""
    return [(number, heading) for number, _, heading, _ in outline_of(parsed) if number is not None]


def source_headings(text: str, syntax: Syntax) -> list[Heading]:
    """The numbered headings of wikitext as written (templates, tags and all) and as they read
    without markup: the names a section may be asked for besides the rendered one."""
    sections = wikitext_sections(text, syntax)
    return ([Heading(s.number, s.level, s.heading) for s in sections]
            + [Heading(s.number, s.level, heading_plain(s.heading)) for s in sections])


def heading_plain(heading: str) -> str:
    """A heading as the outline names it, from its wikitext or from the HTML action=parse lists
    it with: links as their text; bold, italics, tags and footnotes dropped."""
    text = re.sub(r"\[\[:?(?:[^\[\]|]*\|)?([^\[\]]*)\]\]", r"\1", FOOTNOTE.sub("", heading))
    text = re.sub(r"\[(?:[a-z]+:)?//[^\s\]]+\s*([^\]]*)\]", r"\1", text)
    text = re.sub(r"<[^>]*>|'{2,}", "", text)
    return " ".join(html.unescape(text).split())


#: A footnote in a heading: a <ref> as written, or the mark ([1], [n 1]) action=parse's outline
#: renders it as. The outline and every answer name a heading without its footnotes.
FOOTNOTE = re.compile(r"<ref\b[^>]*?/>|<ref\b[^>]*>.*?(?:</ref\s*>|$)"
                      r"|<sup\b[^>]*>(?:(?!</sup>).)*?(?:&#91;|\[)(?:(?!</sup>).)*</sup>", re.IGNORECASE | re.DOTALL)


#: A footnote's mark as rendered text shows it after a heading: [1], [n 1], [a].
FOOTNOTE_MARK = re.compile(r"\[[^\[\]]*\]")


def heading_key(heading: str, marks: bool = True) -> str:
    """A heading as matching compares it: its plain text in NFC, case and spacing aside; without
    ``marks``, bracketed text aside too, as rendered text shows a footnote's mark ('Notes[1]')."""
    plain = heading_plain(heading.strip().strip("="))
    plain = plain if marks else FOOTNOTE_MARK.sub("", plain)
    return " ".join(unicodedata.normalize("NFC", plain).split()).casefold()


def heading_paths(sections: list[Section]) -> list[tuple[str | None, str]]:
    """Each heading with the heading it stands under (None at the top): (parent, heading)."""
    paths: list[tuple[str | None, str]] = []
    above: list[Section] = []
    for s in sections:
        while above and above[-1].level >= s.level:
            above.pop()
        paths.append((above[-1].heading if above else None, s.heading))
        above.append(s)
    return paths


def heading_keys(sections: list[Section]) -> list[tuple[str | None, str]]:
    """heading_paths as heading_key compares headings: (the parent's key or None, the heading's key)."""
    return [(parent and heading_key(parent), heading_key(own)) for parent, own in heading_paths(sections)]


def starts_heading(text: str) -> bool:
    return bool(re.match(r"=[^\n]*=[ \t]*(?:\n|$)", text.lstrip("\n")))


def section_spans(text: str, syntax: Syntax = CORE_SYNTAX) -> dict[int, tuple[int, int]]:
    """Where each section (0 = lead) lies, in bytes: from its heading to the next heading of the
    same or a higher level, so that it holds its subsections."""
    sections = wikitext_sections(text, syntax)
    total = utf8_len(text)
    spans = {0: (0, sections[0].start if sections else total)}
    for i, section in enumerate(sections):
        spans[section.number] = (section.start, next((s.start for s in sections[i + 1:]
                                                      if s.level <= section.level), total))
    return spans


def section_span(text: str, section: int, syntax: Syntax = CORE_SYNTAX) -> tuple[int, int] | None:
    """Where section ``section`` lies in ``text`` (section_spans); None when there is none."""
    return section_spans(text, syntax).get(section)


def section_ends(text: str, syntax: Syntax = CORE_SYNTAX) -> dict[int, int]:
    """Where each section (0 = lead) ends, in bytes (section_spans)."""
    return {number: end for number, (_, end) in section_spans(text, syntax).items()}


def section_text(text: str, span: tuple[int, int]) -> str:
    """A section's text as the wiki gives it (rvsection): trailing space dropped."""
    return text.encode()[span[0]:span[1]].decode().rstrip(PHP_WHITESPACE)


def replace_section(text: str, span: tuple[int, int], new: str) -> str:
    """``text`` with the section at ``span`` replaced as MediaWiki's Parser::replaceSection does:
    the new text and a blank line before what follows, trailing space dropped."""
    data = text.encode()
    new = new.rstrip(PHP_WHITESPACE)
    return (data[:span[0]].decode() + (new + "\n\n" if new else "")
            + data[span[1]:].decode()).rstrip(PHP_WHITESPACE)


def followed_section(seen: str, now: str, number: int, syntax: Syntax = CORE_SYNTAX) -> list[int]:
    """Section ``number`` of text ``seen``, followed into text ``now``: a section added or removed
    above it moves it (one below does not), and it is found by its heading and the one it stands
    under (one Notes is not another's). The numbers it may have in ``now``: one, or none or several."""
    before, after = wikitext_sections(seen, syntax), wikitext_sections(now, syntax)
    was = next((i for i, s in enumerate(before) if s.number == number), None)

    def above(sections: list[Section]) -> list[tuple[int, str]]:  # up to the section: level and heading
        return [(s.level, heading_key(s.heading)) for s in sections[:number]]
    if was is None or above(before) == above(after):  # changed below it at most
        return [number]
    path = heading_keys(before)[was]
    return [s.number for s, there in zip(after, heading_keys(after)) if there == path]


def repeated_sections(whole: str, section: int, new: str, syntax: Syntax = CORE_SYNTAX) -> list[str]:
    """The headings of the sections that new text for section ``section`` of page text ``whole``
    holds, at the section's level or above, and the page has besides it: saved, they would stand on
    the page twice (the next sections, or the whole page, written back into one section)."""
    span = section_span(whole, section, syntax)
    if span is None:
        return []
    own = next((s for s in wikitext_sections(whole, syntax) if s.number == section), None)  # None: the lead
    # each as it would stand on the page, under its heading: a Usage given under Linux is its own,
    # not the one under Windows written twice
    placed = wikitext_sections(replace_section(whole, span, new), syntax)
    end = span[0] + utf8_len(new.rstrip(PHP_WHITESPACE))  # where the new text ends there
    paths = [(s.level, *keys) for s, keys in zip(placed, heading_keys(placed))]
    elsewhere = {path for s, path in zip(placed, paths) if not span[0] <= s.start < end}
    given = [(s, path) for s, path in zip(placed, paths) if span[0] <= s.start < end]
    given = given[1:] if own and given and heading_key(given[0][0].heading) == heading_key(own.heading) else given
    return list(dict.fromkeys(s.heading for s, path in given
                              if (not own or s.level <= own.level) and path in elsewhere))


def lost_subsections(old: str, new: str, syntax: Syntax = CORE_SYNTAX) -> list[str]:
    """The subsections of section text ``old`` that text ``new`` lacks. Headings are compared
    with the heading each stands under, and repeats count: a page repeats References or
    Quellen under many subsections, and each is a subsection of its own. A heading left over
    after that keeps one of the same name: its level changed, so it stands under another."""
    kept = collections.Counter(heading_paths(wikitext_sections(new, syntax)))
    paths = heading_paths(wikitext_sections(old, syntax))
    unmatched = []
    for path in paths:
        if kept[path]:
            kept[path] -= 1
        elif path is not paths[0]:
            unmatched.append(path)
    names = collections.Counter(heading for (_, heading), count in kept.items() for _ in range(count))
    lost = []
    for parent, heading in unmatched:
        if names[heading]:
            names[heading] -= 1
        else:
            lost.append(heading if parent == paths[0][1] else f"{heading} (under {parent})")
    return lost


def lost_headings(old: str, new: str, syntax: Syntax) -> list[str]:
    """The headings of page text ``old`` that text ``new`` lacks (each repeat counts)."""
    kept = collections.Counter(heading_plain(s.heading) for s in wikitext_sections(new, syntax))
    lost = []
    for s in wikitext_sections(old, syntax):
        heading = heading_plain(s.heading)
        if kept[heading]:
            kept[heading] -= 1
        else:
            lost.append(f"{s.number} ({heading})")
    return lost


def shrunk_to_section(old: str, new: str, syntax: Syntax = CORE_SYNTAX) -> int | None:
    """The section of page text ``old`` that whole-page text ``new`` is shaped like, when saving
    it would shrink the page to that section: ``new`` is under half the size, the page has more
    than one section, and ``new`` has exactly that section's headings (none: the lead)."""
    if utf8_len(new) * 2 >= utf8_len(old):
        return None
    sections = wikitext_sections(old, syntax)
    outline = [(s.level, s.heading) for s in wikitext_sections(new, syntax)]
    if not sections or outline == [(s.level, s.heading) for s in sections]:
        return None  # a page of one section, or a shorter text of the same outline: a rewrite
    if not outline:
        return 0
    for i, section in enumerate(sections):  # its headings and its subsections'
        end = next((k for k in range(i + 1, len(sections)) if sections[k].level <= section.level),
                   len(sections))
        if [(s.level, s.heading) for s in sections[i:end]] == outline:
            return section.number
    return None


def section_list(sections: list[tuple[int, str]]) -> str:
    """``1 (History), 2 (Geography), ...``: every section, so that each can be asked for."""
    return ", ".join(f"{n} ({heading})" for n, heading in sections)


def fitting(items: Sequence[str], room: int) -> int:
    """How many of ``items``, joined by ", ", fit ``room`` bytes: at least the first."""
    sizes = itertools.accumulate(utf8_len(f", {item}") for item in items)
    return max(1, sum(size <= room for size in sizes)) if items else 0


def joined_within(items: Sequence[str], room: int) -> str:
    """``items`` joined by ", ", as many as fit ``room`` bytes, then how many more: a list in an answer's
    metadata or an error stays small, whatever the page."""
    shown = fitting(items, room)
    return ", ".join(items[:shown]) + (f", and {len(items) - shown} more" if shown < len(items) else "")


#: Control characters MediaWiki replaces in every request (UtfNormal\Validator::cleanUp).
REFUSED_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


PHP_WHITESPACE = " \t\n\r\0\x0b"  # what PHP's rtrim() strips


def as_wiki_receives(text: str) -> str:
    """Text as MediaWiki takes it from a request: NFC, refused control characters replaced by
    U+FFFD, line ends as the wiki keeps them (\n; a page never holds \r). Matching a find against
    the wiki's text, or diffing a dry run, needs the same."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", REFUSED_CHARACTERS.sub("\ufffd", text))


def as_saved(text: str) -> str:
    """Wikitext as a save stores it (the pre-save transform's line ends and trailing space;
    signatures and subst: are left as they are)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip(PHP_WHITESPACE)


def ends_block(text: str) -> bool:
    """Whether the last line of ``text`` closes a block: a heading, list item, table row,
    rule, template or tag standing on its own line."""
    last = text.rstrip().rpartition("\n")[2].strip()
    return (last[:1] in ("*", "#", ":", ";", "|", "!") or last.startswith("----") or starts_heading(last)
            or (last.endswith("}}") and last.startswith(("{{", "}}")))
            or (last.startswith("<") and last.endswith(">")))


def separator(before: str, after: str) -> str:
    """The line breaks that set ``after`` on a line of its own below ``before`` (an append or
    prepend): one, or a blank line when ``after`` starts with a heading or ``before`` ends with a
    block, except that a list line is never set apart. Line breaks already at the seam count."""
    if not before.strip() or not after.strip():
        return ""
    seam = before[len(before.rstrip()):] + after[:len(after) - len(after.lstrip())]
    # A list item joins the list it follows: decided by the item alone, so that an append made
    # on a read gone stale (appendtext lands on the page as it then is) joins it too.
    apart = after.lstrip()[:1] not in ("*", "#", ":", ";") and (starts_heading(after) or ends_block(before))
    wanted = 2 if apart else 1
    return "\n" * max(0, wanted - seam.count("\n"))


# ---------------------------------------------------------------------------
# merge.py: A three-way merge of lines, as MediaWiki's edit conflict resolution merges: the changes of two
# edits of one base, applied together where they do not overlap.
# ---------------------------------------------------------------------------

#: Past this many changed lines line_changes stops looking for the shortest edit.
MAX_EDIT_DISTANCE = 2000


def line_changes(a: list[str], b: list[str], *, shown: bool = False) -> list[tuple[int, int, int, int]]:
    """The changed blocks (a[i1:i2] became b[j1:j2]) between two lists of lines, found much as
    GNU diff finds them: common first and last lines set aside, a shortest edit (Myers), then
    each run of changes slid along equal lines as diff's shift_boundaries slides it; ``shown``:
    as MediaWiki's diff engines slide them for a diff shown (see shift_boundaries)."""
    pre = len(os.path.commonprefix([a, b]))  # of lists of lines as well as of strings
    suf = len(os.path.commonprefix([a[pre:][::-1], b[pre:][::-1]]))
    steps = shortest_edit(a[pre:len(a) - suf], b[pre:len(b) - suf])
    if steps is None:  # too far apart to search: difflib's matching will do
        import difflib  # seldom needed: left out of the start
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    changed = ([False] * (len(a) + 2), [False] * (len(b) + 2))  # [k + 1]: line k; both ends unchanged
    for side, k in steps:
        changed[side][pre + k + 1] = True
    shift_boundaries(a, changed[0], changed[1], shown)
    shift_boundaries(b, changed[1], changed[0], shown)
    blocks, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        i1, j1 = i, j
        i, j = unchanged_from(changed[0], i), unchanged_from(changed[1], j)  # as many unchanged either side
        if (i, j) == (i1, j1):
            i, j = i + 1, j + 1
        else:
            blocks.append((i1, i, j1, j))
    return blocks


def shortest_edit(old: list[str], new: list[str]) -> list[tuple[int, int]] | None:
    """The lines a shortest edit from ``old`` to ``new`` deletes, (0, i), and inserts, (1, j):
    Myers' greedy search; None past MAX_EDIT_DISTANCE."""
    n, m = len(old), len(new)
    if not n or not m:
        return [(0, i) for i in range(n)] + [(1, j) for j in range(m)]
    v, trace = {1: 0}, []
    for d in range(min(n + m, MAX_EDIT_DISTANCE) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y = x - k
            while x < n and y < m and old[x] == new[y]:
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                steps = []
                for e in range(d, 0, -1):  # back along the path: one insertion or deletion a step
                    v, k = trace[e], x - y
                    previous = k + 1 if k == -e or (k != e and v[k - 1] < v[k + 1]) else k - 1
                    x, y = v[previous], v[previous] - previous
                    steps.append((1, y) if previous == k + 1 else (0, x))
                return steps
    return None


def shift_boundaries(lines: list[str], changed: list[bool], other: list[bool], shown: bool = False) -> None:
    """GNU diff's shift_boundaries on one side's change flags (``changed[k + 1]`` for line k):
    each run of changes moves back while the line before it equals its last, merging with
    runs before; then forward as far as it goes, merging with runs after; then, if it merged
    with none, back to where it lines up with a run of changes on the other side."""
    i = j = 0  # j: the line of the other side that lines up with line i
    while True:
        while i < len(lines) and not changed[i + 1]:
            i, j = i + 1, unchanged_from(other, j) + 1
        if i == len(lines):
            return
        i, j = shift_run(lines, changed, other, i, unchanged_from(other, j), shown)


def unchanged_from(flags: list[bool], k: int, step: int = 1) -> int:
    """The first line from line ``k`` on (``step`` -1: back) that ``flags`` do not mark changed."""
    while flags[k + 1]:
        k += step
    return k


def shift_run(lines: list[str], changed: list[bool], other: list[bool], start: int, j: int,
              shown: bool) -> tuple[int, int]:
    """Slides the run of changes that starts at line ``start`` (shift_boundaries), ``j`` the line of
    the other side that lines up with it; where the run ends then, and the other side's line there."""
    end, i = len(lines), unchanged_from(changed, start + 1)
    while True:
        run = i - start
        while start and lines[start - 1] == lines[i - 1]:
            start, i = start - 1, i - 1
            changed[start + 1], changed[i + 1] = True, False
            start = unchanged_from(changed, start - 1, -1) + 1
            j = unchanged_from(other, j - 1, -1)
        # MediaWiki's port (DiffEngine::shiftBoundaries, whose moves wikidiff2 makes too) sets
        # a run back wherever the other side goes on, not only by a run of changes there
        corresponding = i if (j < len(other) - 2 if shown else other[j]) else end
        while i != end and lines[start] == lines[i]:
            changed[start + 1], changed[i + 1] = False, True
            start, i = start + 1, unchanged_from(changed, i + 1)
            if other[j + 2]:
                corresponding = i
            j = unchanged_from(other, j + 1)
        if run == i - start:
            break
    while corresponding < i:
        start, i = start - 1, i - 1
        changed[start + 1], changed[i + 1] = True, False
        j = unchanged_from(other, j - 1, -1)
    return i, j


def merge3(base: str, mine: str, theirs: str) -> str | None:
    """A three-way merge as MediaWiki's (GNU diff3 in wfMerge): changes from ``base`` to
    ``mine`` applied to ``theirs``; None where both changed the same or adjacent lines
    differently, which the wiki refuses as an edit conflict."""
    old, ours, other = (text.rstrip(PHP_WHITESPACE).split("\n") for text in (base, mine, theirs))
    sides = (ours, other)
    blocks = sorted([(c, 0) for c in line_changes(old, ours)] + [(c, 1) for c in line_changes(old, other)])
    shift = [0, 0]  # how far each side's lines have moved from base's so far
    merged: list[str] = []
    done = k = 0
    while k < len(blocks):
        group, high = [blocks[k]], blocks[k][0][1]
        k += 1
        while k < len(blocks) and blocks[k][0][0] <= high:  # overlapping or adjacent: one hunk
            group.append(blocks[k])
            high = max(high, blocks[k][0][1])
            k += 1
        low = group[0][0][0]
        merged += old[done:low]
        chunks: list[list[str] | None] = []
        for side in (0, 1):
            own = [c for c, s in group if s == side]
            start = low + shift[side]
            shift[side] += sum((j2 - j1) - (i2 - i1) for i1, i2, j1, j2 in own)
            chunks.append(sides[side][start:high + shift[side]] if own else None)
        if chunks[0] is not None and chunks[1] is not None and chunks[0] != chunks[1]:
            return None
        merged += chunks[0] if chunks[0] is not None else chunks[1] or []
        done = high
    return "\n".join(merged + old[done:])


# ---------------------------------------------------------------------------
# diff.py: Diffs: MediaWiki's HTML diff table as a compact text diff, and line and word diffs made here.
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DiffLine:
    """One line of a diff: '-' (only in the old text), '+' (only in the new) or ' '
    (in both), with where it stands on each side: its own line number there, or for a
    side it is not on, the number of the line that follows it there."""
    kind: str
    old: int
    new: int
    text: str


DIFF_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr>", re.DOTALL)


DIFF_CELL = re.compile(r"<td\b([^>]*)>(.*?)</td>", re.DOTALL)


CLASS_ATTR = re.compile(r"""\bclass\s*=\s*["']([^"']*)["']""")


LEFT_LINE_ID = re.compile(r"""\bid\s*=\s*["']mw-diff-left-l(\d+)["']""")


LINE_COMMENT = re.compile(r"<!--LINE (\d+)-->")


SPACE_RUN = re.compile("[ \u00a0]+")


def diff_line_number(attributes: str, cell: str) -> int | None:
    """A block header cell's line number, from its structure (the left cell's id) or from
    its digits in whatever script the wiki's language writes them; never from its words."""
    for pattern, text in ((LEFT_LINE_ID, attributes), (LINE_COMMENT, cell)):
        if match := pattern.search(text):
            return int(match.group(1))
    digits = "".join(c for c in strip_tags(cell) if c.isdecimal())
    return int(digits) if digits else None


def diff_cell_text(cell: str) -> str:
    """The text of one line of a diff table cell: tags (<div>, <ins>, <del>) dropped, entities
    decoded, and the spaces MediaWiki turned into no-break spaces to keep them visible given back
    (a leading space became NBSP+space, a trailing one space+NBSP, a double one NBSP+space)."""
    inner = re.sub(r"^<div\b[^>]*>(.*)</div>$", r"\1", cell.strip(), flags=re.DOTALL)
    if inner == "\u00a0" or re.fullmatch(r"<br\s*/?>", inner):
        return ""  # an empty line, made visible

    def spaces(match: re.Match[str]) -> str:
        run = match.group(0)
        if " " not in run or "\u00a0" not in run:
            return run  # plain spaces, or the text's own no-break spaces (or a tag's spaces)
        return " " * max(len(run) - (match.start() == 0) - (match.end() == len(inner)), 1)
    return html.unescape(re.sub(r"<[^>]*>", "", SPACE_RUN.sub(spaces, inner)))


def parse_diff_table(body: str) -> list[DiffLine]:
    """Reads MediaWiki's table diff (action=compare) by its cell classes: a diff-lineno row
    starts a block; diff-deletedline, diff-addedline and diff-context cells are its lines."""
    lines: list[DiffLine] = []
    old = new = 1
    for row in DIFF_ROW.finditer(body):
        deleted = added = context = None
        numbers: list[int | None] = []
        for cell in DIFF_CELL.finditer(row.group(1)):
            attributes, content = cell.groups()
            found = CLASS_ATTR.search(attributes)
            classes = set(found.group(1).split()) if found else set()
            if "diff-lineno" in classes:
                numbers.append(diff_line_number(attributes, content))
            elif "diff-deletedline" in classes:
                deleted = diff_cell_text(content)
            elif "diff-addedline" in classes:
                added = diff_cell_text(content)
            elif "diff-context" in classes and context is None:
                context = diff_cell_text(content)
        if numbers:
            left = numbers[0] if numbers[0] is not None else old
            right = numbers[1] if len(numbers) > 1 and numbers[1] is not None else left + new - old
            old, new = left, right
        elif deleted is not None or added is not None:
            if deleted is not None:
                lines.append(DiffLine("-", old, new, deleted))
                old += 1
            if added is not None:
                lines.append(DiffLine("+", old, new, added))
                new += 1
        elif context is not None:
            lines.append(DiffLine(" ", old, new, context))
            old, new = old + 1, new + 1
    return lines


def hunk_range(start: int, count: int) -> str:
    """A side of a unified hunk header: ``5``, ``5,3``, or ``4,0`` for none after line 4."""
    if count == 1:
        return str(start)
    return f"{start - 1 if count == 0 else start},{count}"


def compact_diff(lines: list[DiffLine]) -> str:
    """The changed lines only, as unified-diff hunks: each run of changes gets an
    ``@@ -old +new @@`` header with its line numbers, removals before additions."""
    runs: list[list[DiffLine]] = []
    follows = (0, 0)  # where a line continuing the current run would stand
    for line in lines:
        if line.kind == " ":
            runs.append([])
        elif runs and runs[-1] and (line.old, line.new) == follows:
            runs[-1].append(line)
        else:
            runs.append([line])
        follows = (line.old + (line.kind == "-"), line.new + (line.kind == "+"))
    hunks = []
    for run in filter(None, runs):
        removed = [d.text for d in run if d.kind == "-"]
        added = [d.text for d in run if d.kind == "+"]
        hunks.append((f"@@ -{hunk_range(run[0].old, len(removed))} +{hunk_range(run[0].new, len(added))} @@",
                      hunk_lines(removed, added)))
    moved_lines([lines for _, lines in hunks])
    out = [line for header, shown in hunks for line in (header, *shown)]
    if any(line.startswith("~") and ESCAPED_MARKER.search(line) for line in out):
        out.insert(0, ESCAPE_NOTE)
    return "\n".join(out)


#: The most pairs of a removed and an added line moved_lines compares, so that a diff of many
#: lines stays quick.
MOVED_PAIRS_MOST = 2500


def moved_lines(hunks: list[list[str]]) -> None:
    """A line removed in one hunk and added, edited, in another (a paragraph moved and changed):
    where it was added, its word changes (``~``) replace the whole line, as a line changed in place."""
    removed = [line[1:] for lines in hunks for line in lines if line.startswith("-")]
    added = [line for lines in hunks for line in lines if line.startswith("+")]
    if len(hunks) < 2 or not removed or len(removed) * len(added) > MOVED_PAIRS_MOST:
        return
    for lines in hunks:
        own = {line[1:] for line in lines if line.startswith("-")}  # they had their chance (hunk_lines)
        for k, line in enumerate(lines):
            if line.startswith("+"):
                found = next(((old, words) for old in removed if old not in own
                              and (words := changed_line(old, line[1:])) is not None), None)
                if found:
                    removed.remove(found[0])
                    lines[k] = f"~{found[1]}"


#: How many added lines on from the last pair a removed line looks for the line it became.
PAIR_WINDOW = 3


def hunk_lines(removed: list[str], added: list[str]) -> list[str]:
    """A run of changes as diff lines: a removed line paired with an added line it became
    (changed_line) shows once as ``~``; the others are ``-`` and ``+`` lines, whole. The
    wiki's engines pair lines each their own way (the PHP engine by position, wikidiff2 by
    likeness), so pairs are found here, and a dry run reads as compare-pages after the save."""
    out: list[str] = []
    j = 0
    for text in removed:
        for k in range(j, min(j + PAIR_WINDOW, len(added))):
            if (shown := changed_line(text, added[k])) is not None:
                out += [f"+{t}" for t in added[j:k]] + [f"~{shown}"]
                j = k + 1
                break
        else:
            out.append(f"-{text}")
    return out + [f"+{t}" for t in added[j:]]


#: What a word diff compares: a word, a run of spaces, or one other character; a Han, kana or
#: Thai character is a word of its own, as those scripts run words together.
WORD_TOKEN = re.compile(r"[^\W\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]+"
                        r"|\s+|.", re.DOTALL)


#: Unchanged text a changed line keeps either side of a change; more is cut to "…".
DIFF_CONTEXT_CHARS = 100


#: The marks of a word diff, as text may hold them too: there they are written with a backslash
#: between their two characters (ESCAPE_NOTE says so), so that a mark is always a change.
WORD_MARKER = re.compile(r"\[-|-\]|\{\+|\+\}")


ESCAPED_MARKER = re.compile(r"\[\\-|-\\\]|\{\\\+|\+\\\}")


ESCAPE_NOTE = r"(In ~ lines, [\- -\] {\+ +\} are the text's own [- -] {+ +}.)"


def unmarked(text: str) -> str:
    """``text`` with the word diff's marks it holds written apart (WORD_MARKER)."""
    return WORD_MARKER.sub(lambda mark: f"{mark.group()[0]}\\{mark.group()[1]}", text)


def changed_line(old: str, new: str) -> str | None:
    """Line ``old`` as it became ``new``, in one copy: removed words as ``[-words-]``, added ones as
    ``{+words+}``, unchanged stretches longer than DIFF_CONTEXT_CHARS either side of a change cut to
    "…". None when the two share less than half of the shorter one's words: both whole read better."""
    a, b = WORD_TOKEN.findall(old), WORD_TOKEN.findall(new)
    shorter = min(word_chars(a), word_chars(b))
    shared = collections.Counter(t for t in a if not t.isspace()) & collections.Counter(b)
    if not shorter or 2 * sum(len(t) * n for t, n in shared.items()) < shorter:
        return None  # even every shared word in order would be too few
    blocks = line_changes(a, b)
    if not blocks or 2 * (word_chars(a) - sum(word_chars(a[i1:i2]) for i1, i2, _, _ in blocks)) < shorter:
        return None
    merged: list[list[int]] = []
    for i1, i2, j1, j2 in blocks:  # changes apart by spaces alone read as one
        if merged and all(t.isspace() for t in a[merged[-1][1]:i1]):
            merged[-1][1:] = [i2, merged[-1][2], j2]
        else:
            merged.append([i1, i2, j1, j2])
    parts, done = [], 0
    for n, (i1, i2, j1, j2) in enumerate(merged):
        parts.append(unmarked(elided("".join(a[done:i1]), first=n == 0, last=False)))
        parts.append((f"[-{unmarked(''.join(a[i1:i2]))}-]" if i2 > i1 else "")
                     + (f"{{+{unmarked(''.join(b[j1:j2]))}+}}" if j2 > j1 else ""))
        done = i2
    parts.append(unmarked(elided("".join(a[done:]), first=False, last=True)))
    return "".join(parts)


def word_chars(tokens: list[str]) -> int:
    return sum(len(t) for t in tokens if not t.isspace())


def elided(same: str, first: bool, last: bool) -> str:
    """Unchanged text of a changed line, cut to DIFF_CONTEXT_CHARS after the change before it
    and before the change after it (at a space where one is near), the cut shown as "…"."""
    keep = DIFF_CONTEXT_CHARS
    if len(same) <= keep * (1 if first or last else 2) + 10:
        return same
    head = "" if first else same[:cut_at(same, keep)].rstrip() + " "
    tail = "" if last else " " + same[len(same) - cut_at(same[::-1], keep):].lstrip()
    return f"{head}…{tail}"


def cut_at(text: str, length: int) -> int:
    """Where to cut ``text`` near ``length`` characters: at the last space before it, if one is close."""
    space = text.rfind(" ", 0, length)
    return space if space > length * 3 // 4 else length


def line_diff(old: str, new: str) -> str:
    """The changed lines between two texts, in compare-pages' shape (see compact_diff): what a
    dry run shows is what compare-pages would show after the save, the changes found and placed
    as MediaWiki's engines find and place them (line_changes)."""
    a, b = old.splitlines(), new.splitlines()
    return compact_diff(diff_lines(a, b, line_changes(a, b, shown=True)))


def diff_lines(a: list[str], b: list[str], blocks: Iterable[tuple[int, int, int, int]]) -> list[DiffLine]:
    """The DiffLines of changed ``blocks`` (line_changes) between the lines ``a`` and ``b``."""
    lines: list[DiffLine] = []
    for i1, i2, j1, j2 in blocks:
        lines.append(DiffLine(" ", i1, j1, ""))  # the unchanged line before: separates runs of changes
        lines += [DiffLine("-", i1 + k + 1, j1 + 1, a[i1 + k]) for k in range(i2 - i1)]
        lines += [DiffLine("+", i2 + 1, j1 + k + 1, b[j1 + k]) for k in range(j2 - j1)]
    return lines


# ---------------------------------------------------------------------------
# plaintext.py: Plain text: a rendered page as a reader reads it, without navigation, references' markup or
# hidden elements.
# ---------------------------------------------------------------------------

#: Rendered parts plain text leaves out: edit links, navigation boxes, the table of contents,
#: references' links back, sort keys. Not noprint or noexcerpt: a reader sees those on screen
#: (a [citation needed] tag, a maintenance table); they are only left out of print and excerpts.
TEXT_SKIPPED_CLASSES = frozenset({
    "mw-editsection", "navbox", "vertical-navbox", "navbox-styles", "toc",
    "mw-cite-backlink", "mw-empty-elt", "sortkey", "mw-jump-link"})


TEXT_SKIPPED_TAGS = frozenset({"style", "script", "noscript", "template", "math"})


VOID_TAGS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                       "source", "track", "wbr"})


PARAGRAPH_TAGS = frozenset({"p", "table", "blockquote", "pre", "figure", "center", "section"})


LINE_TAGS = frozenset({"div", "caption", "figcaption", "tr", "li", "dt", "dd", "hr"})


HIDDEN_STYLE = re.compile(r"display\s*:\s*none", re.IGNORECASE)


#: <sup> and <sub> text as the Unicode characters that write it raised or lowered, where every
#: character has one; other text is written ^(...) or _(...), as in plain mathematics.
SUPERSCRIPTS = str.maketrans("0123456789+-\u2212=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁻⁼⁽⁾ⁿⁱ")


SUBSCRIPTS = str.maketrans("0123456789+-\u2212=()", "₀₁₂₃₄₅₆₇₈₉₊₋₋₌₍₎")


def scripted(text: str, tag: str) -> str:
    """``2`` in <sup> as ``²``; ``st`` as ``^st``, ``a b`` as ``^(a b)``; a note mark ``[a]`` as it is."""
    table, mark = (SUPERSCRIPTS, "^") if tag == "sup" else (SUBSCRIPTS, "_")
    if text.startswith("[") and text.endswith("]"):
        return text
    if all(ord(c) in table for c in text):
        return text.translate(table)
    return f"{mark}{text}" if text.isalnum() else f"{mark}({text})"


def gallery_file(href: str) -> str:
    """The file a gallery image links to, without its namespace: from its page's address, or
    from the upload form's for a missing file."""
    address = urllib.parse.urlsplit(href)
    query = urllib.parse.parse_qs(address.query)
    title = (query.get("wpDestFile") or query.get("title") or [urllib.parse.unquote(address.path)])[0]
    return title.rpartition("/")[2].rpartition(":")[2].replace("_", " ")


@dataclasses.dataclass
class _TextHeading:
    level: int
    anchor: str
    text: str = ""


@dataclasses.dataclass
class _Open:
    tag: str
    action: str = ""  # what closing it does: "skip", "cell", "list", "heading", "pre", "ref", "table", ...
    start: int = 0  # where its text starts in the line, for what closing it rewrites


class PlainText(html.parser.HTMLParser):
    """Reads MediaWiki's rendered HTML (action=parse) as plain text: headings as ``== Heading ==``
    lines with the section number the wiki edits them by (from ``sections``: anchor -> index),
    paragraphs apart by blank lines, list items one a line behind wikitext's markers, table
    rows one a line with their cells apart by " | ", references as ``[1]`` notes, a gallery's
    images one a line as ``* caption (file)``, <sup> and <sub> as ``km²`` (scripted). What a reader
    never sees (TEXT_SKIPPED_CLASSES and _TAGS, display:none) is left out; a line of text that reads
    as a heading (in <pre>) is indented a space, so that only headings start with =."""

    def __init__(self, sections: Mapping[str, tuple[str, str]]) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = sections
        self.lines: list[str | _TextHeading] = []
        self.line: list[str] = []
        self.open: list[_Open] = []
        self.skipping = 0
        self.cells = 0      # table cells open: line breaks inside one are spaces
        self.pre = 0
        self.lists: list[str] = []
        self.rows: list[int] = []  # cells so far in the current row of each open table
        self.heading: _TextHeading | None = None
        self.ref: list[str] | None = None  # the text of a reference mark being read, and its target
        self.ref_target = ""
        self.ref_labels: dict[str, str] = {}
        self.notes: dict[str, str] = {}  # each reference's note by its label
        self.note = ""  # the label of the note being read
        self.gallery: list[str] | None = None  # the thumb text of the gallery image being read
        self.gallery_file = ""  # and the file it links to (the thumb text names a missing file, in 1.39)

    def text(self, lines: Sequence[str | _TextHeading]) -> str:
        shown = "\n".join(self.heading_line(line) if isinstance(line, _TextHeading)
                          else f" {line}" if line.startswith("=") else line for line in lines)
        return re.sub(r"\n{3,}", "\n\n", shown).strip("\n")  # blank lines in a row read as one

    def heading_line(self, heading: _TextHeading) -> str:
        marks = "=" * heading.level
        index, source = self.sections.get(heading.anchor, ("", ""))
        where = (f" (section {index})" if index.isdigit() else
                 f" (from {source.replace('_', ' ')})" if index.startswith("T-") else "")
        return f"{marks} {heading.text} {marks}{where}"

    def section(self, number: int) -> list[str | _TextHeading] | None:
        """The lines of section ``number`` (its subsections and the sections templates bring
        into it included), then the notes of the references it cites; None when there is none."""
        numbered = [(k, line) for k, line in enumerate(self.lines) if isinstance(line, _TextHeading)
                    and self.sections.get(line.anchor, ("",))[0].isdigit()]
        start, level = 0, 0
        if number:
            start, heading = next(((k, h) for k, h in numbered if self.sections[h.anchor][0] == str(number)),
                                  (-1, None))
            if heading is None:
                return None
            level = heading.level
        end = next((k for k, h in numbered if k > start and (not level or h.level <= level)), len(self.lines))
        lines = self.lines[start:end]
        cited = re.findall(r"\[([^\[\]\n]{1,20})\]", self.text(lines))
        notes = [self.notes[label] for label in dict.fromkeys(cited)
                 if self.notes.get(label) and self.notes[label] not in lines]
        return [*lines, "", *notes] if notes else lines

    def newline(self, blank: bool = False) -> None:
        if self.cells:
            self.line.append(" ")
            return
        text = "".join(self.line)
        if self.pre:
            self.lines += text.split("\n")
        elif text.strip():
            self.lines.append(" ".join(text.split()))
        self.line = []
        if blank and self.lines and self.lines[-1] != "" and not isinstance(self.lines[-1], _TextHeading):
            self.lines.append("")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = set(attributes.get("class", "").split())
        if tag == "br":
            if self.pre:
                self.line.append("\n")
            elif not self.skipping:
                self.newline()
            return
        if tag in VOID_TAGS:
            return
        element = _Open(tag, start=len(self.line))
        self.open.append(element)
        if self.gallery is not None and tag == "a" and not self.gallery_file:
            self.gallery_file = gallery_file(attributes.get("href", ""))
        if self.skipping or self.unseen(tag, attributes, classes):
            element.action = "skip"
            self.skipping += 1
        else:
            element.action = self.started(element, attributes, classes)

    def unseen(self, tag: str, attributes: Mapping[str, str], classes: set[str]) -> bool:
        """Whether an element is one a reader never sees, or a gallery's image, read for its file alone."""
        return (tag in TEXT_SKIPPED_TAGS or bool(classes & TEXT_SKIPPED_CLASSES)
                or attributes.get("id") == "toc" or bool(HIDDEN_STYLE.search(attributes.get("style", "")))
                or self.gallery is not None and "thumb" in classes)

    def started(self, element: _Open, attributes: Mapping[str, str], classes: set[str]) -> str:
        """Starts an element that is seen; what closing it does (_Open.action)."""
        tag = element.tag
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.newline(blank=True)
            self.heading = _TextHeading(int(tag[1]), attributes.get("id", ""))
            self.lines.append(self.heading)
            return "heading"
        if "mw-headline" in classes and self.heading is not None:
            self.heading.anchor = attributes.get("id") or self.heading.anchor
            return ""
        if tag in PARAGRAPH_TAGS or tag in LINE_TAGS:
            self.newline(blank=tag in PARAGRAPH_TAGS)
        if tag in ("td", "th", "tr", "table", "ul", "ol", "dl") or tag in ("li", "dt", "dd") and self.lists:
            return self.structure_started(element, attributes.get("id", ""), classes)
        elif tag == "sup" and "reference" in classes:
            self.ref = []
            return "ref"
        elif tag in ("sup", "sub"):
            return "script"
        elif tag == "a" and self.ref is not None:
            self.ref_target = attributes.get("href", "").partition("#cite_note-")[2]
        elif tag == "pre":
            self.pre += 1
            return "pre"
        return ""

    def structure_started(self, element: _Open, anchor: str, classes: set[str]) -> str:
        """Starts a table, a row, a cell, a list or a list item; what closing it does."""
        tag = element.tag
        if tag in ("td", "th"):
            if self.rows and self.rows[-1]:
                self.line.append(" | ")
            if self.rows:
                self.rows[-1] += 1
            self.cells += 1
            return "cell"
        if tag == "tr":
            if self.rows:
                self.rows[-1] = 0
            return ""
        if tag == "table":
            self.rows.append(0)
            return "table"
        if tag in ("ul", "ol", "dl"):
            if not self.lists:
                self.newline(blank=True)
            self.lists.append("ref" if "references" in classes else {"ul": "*", "ol": "#", "dl": ":"}[tag])
            return "list"
        action = ""
        if self.lists[-1] == "ref":
            label = self.ref_labels.get(anchor.removeprefix("cite_note-"), str(len(self.notes) + 1))
            self.line.append(f"[{label}] ")
            self.notes[label], self.note, action = "", label, "note"
        else:
            marks = "".join(self.lists).replace("ref", "")
            self.line.append((marks[:-1] + ";" if tag == "dt" else marks) + " ")
        if "gallerybox" in classes:  # its caption's lines on the image's line
            self.gallery, self.gallery_file, self.cells, action = [], "", self.cells + 1, "gallery"
            element.start = len(self.line)
        return action

    def handle_endtag(self, tag: str) -> None:
        if not any(element.tag == tag for element in self.open):
            return  # a stray closing tag
        while self.open:
            element = self.open.pop()
            self.closed(element)
            if element.tag == tag:
                return

    def closed(self, element: _Open) -> None:
        action = element.action
        if action == "skip":
            self.skipping -= 1
            return
        if action == "heading" and self.heading is not None:
            self.heading.text = " ".join("".join(self.line).split())
            self.line, self.heading = [], None
            self.newline(blank=True)
        elif action == "cell":
            self.cells -= 1
        elif action == "table":
            self.rows.pop()
        elif action == "list":
            self.lists.pop()
            self.newline(blank=not self.lists)
        elif action == "note":
            self.newline()
            self.notes[self.note] = str(self.lines[-1])
            return
        elif action == "ref" and self.ref is not None:
            label = "".join(self.ref).strip().strip("[]")
            if self.ref_target and label:
                self.ref_labels.setdefault(self.ref_target, label)
            self.ref = None
        elif action == "pre":
            self.newline()
            self.pre -= 1
        elif action == "script":
            self.line[element.start:] = [scripted("".join(self.line[element.start:]).strip(), element.tag)]
        elif action == "gallery" and self.gallery is not None:
            file = self.gallery_file or " ".join("".join(self.gallery).split())
            caption = " ".join("".join(self.line[element.start:]).split())
            self.line[element.start:] = [f"{caption} ({file})" if caption and file else caption or file]
            self.gallery, self.cells = None, self.cells - 1
        if element.tag in PARAGRAPH_TAGS or element.tag in LINE_TAGS:
            self.newline(blank=element.tag in PARAGRAPH_TAGS)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            if self.gallery is not None:
                self.gallery.append(data)
            return
        self.line.append(data)
        if self.ref is not None:
            self.ref.append(data)


def plain_text(page_html: str, sections: Mapping[str, tuple[str, str]] | None = None,
               section: int | None = None) -> str | None:
    """A rendered page as plain text (PlainText); ``sections`` maps each heading's anchor to its
    section index and the page it comes from, as action=parse lists them. ``section``: that
    section alone, with the notes it cites (None when there is no such section)."""
    reader = PlainText(sections or {})
    reader.feed(page_html)
    reader.close()
    reader.newline()
    lines = reader.lines if section is None else reader.section(section)
    return None if lines is None else reader.text(lines)


# ---------------------------------------------------------------------------
# registry.py: The tool registry: the @tool decorator, the parameters many tools share, each tool's schema
# from its signature, and the checking of a model's arguments against it.
# ---------------------------------------------------------------------------

#: MediaWiki's own limit on a title, in bytes of UTF-8.
MAX_TITLE_BYTES = 255


#: The longest name a call may give (a wiki key, user name, change tag or log type) or time: MediaWiki
#: keeps names to 255 bytes. A longer value is refused before it is sent, or quoted in an answer.
MAX_NAME_CHARS = 255


#: The longest continueFrom: a marker's value holds a few titles, sort keys and IDs.
MAX_CONTINUATION_CHARS = 5000


#: Who confirms a client's guarded actions, as its tools/list says (confirmer): the model with
#: confirm=true, the person asked in the client, or no one (the operator wants the person, whom
#: this client cannot ask).
Confirmer = Literal["model", "person", "nobody"]


@dataclasses.dataclass(frozen=True)
class Arg:
    """A tool parameter's description and bounds, placed in its annotation."""
    description: str
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None
    # False: max_length is a cap a model does not write near (a key, a path, a URL, a whole text,
    # a summary), which check_text enforces and tools/list, paid on every turn, leaves out.
    max_length_listed: bool = True
    max_items: int | None = None
    title: bool = False  # a page title: non-empty, at most 255 bytes


def name_arg(description: str) -> Arg:
    """A name or time a call gives (user, tag, log type, start): capped at MAX_NAME_CHARS, unlisted."""
    return Arg(description, max_length=MAX_NAME_CHARS, max_length_listed=False)


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: Any        # str, int, bool, list, a tuple of allowed strings (an enum), or a frozenset of
                     # the types a value may have (int | str)
    item_kind: Any   # for lists
    arg: Arg
    required: bool
    default: Any


#: What a page write may do to the page's place on the account's watchlist (MediaWiki's watchlist).
WATCH_CHOICES = ("watch", "unwatch", "preferences", "nochange")


#: The arguments the registry adds to a tool's own, from its flags (guarded, continue_from, dry_run,
#: idempotency_key, watch, scoped), in this order. A tool function never declares them.
SHARED_PARAMS = {p.name: p for p in (
    Param("confirm", bool, None, Arg("true once the user agreed to what a call without it showed."), False,
          False),
    Param("continueFrom", str, None, Arg("From the marker.", max_length=MAX_CONTINUATION_CHARS,
                                         max_length_listed=False), False, None),
    Param("dryRun", bool, None, Arg("Returns the diff unsaved."), False, False),
    Param("idempotencyKey", str, None, Arg("Reuse on retry.", max_length=200,
                                           max_length_listed=False), False, None),
    Param("watch", WATCH_CHOICES, None, Arg("Default: preferences."), False, None),
    Param("wiki", str, None, Arg("Wiki key; omitted: the default wiki.", max_length=MAX_NAME_CHARS,
                                 max_length_listed=False), False, None))}


@dataclasses.dataclass(frozen=True)
class Quoted:
    """A setting as a description quotes it: ``{content_max_bytes:bytes}`` (a Config field and
    a unit) reads "50000 bytes by default (MCP_CONTENT_MAX_BYTES)" while the setting is at its
    default, naming the setting so that no model looks for an argument that changes it, and
    "20000 bytes" once the operator sets that; the unit ``MB`` counts whole millions of bytes."""
    value: Any
    default: Any
    setting: str = ""

    def __format__(self, unit: str) -> str:
        millions = unit == "MB" and self.value % 10**6 == 0
        text = f"{self.value // 10**6} MB" if millions else f"{self.value} {'bytes' if unit == 'MB' else unit}"
        return text + (f" by default ({self.setting})" if self.value == self.default else "")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Flags:
    """What ``@tool`` says of a tool besides its name, title and toolset. A ``read_only`` tool is
    not destructive and is idempotent; any other states ``destructive`` and ``idempotent``, never
    guessed. ``open_world``: it reaches beyond this server. Each other flag gives an argument or
    a gate:

    - ``scoped`` (the default): a ``wiki`` argument picks the wiki, and a write is refused on a
      wiki configured read-only. Off: it acts on no one wiki.
    - ``guarded``: a ``confirm`` argument (``ctx.confirmed``); unconfirmed, the tool raises a
      Preview instead of acting, which the person confirms where the client can ask them
      (run_guarded), else the model by calling again with confirm=true. ``shows``: what the
      Preview shows, which the description's sentence on confirming names (ToolSpec.description).
    - ``asks``: some of its calls are guarded actions (a save across pages, an undo of other
      people's edits...), with no ``confirm`` argument: while the person confirms (``ctx.asks``)
      and the call is not confirmed (``ctx.confirmed``: as_shown), the tool raises a Preview of
      one; elsewhere its own guard holds.
    - ``continue_from``, ``dry_run``: that argument, read as ``ctx.continue_from`` or
      ``ctx.dry_run``; ``dry_run_default``: dryRun unless the call passes false.
    - ``idempotency_key``: an ``idempotencyKey`` argument; a call repeating one with the
      same key and arguments returns its result, marked as a repeat, and runs nothing.
    - ``watch``: a ``watch`` argument, passed to MediaWiki as ``watchlist=ctx.watch``; watching
      or unwatching adds the editmywatchlist right.
    - ``needs_extension``: refused on a wiki without that extension, naming wikis with it.
    - ``rights``: refused for an account without them (``a|b``: either) at the tool's first
      use of ``ctx.client``, before anything is sent.
    - ``needs_upload_dirs``: of no use until the operator sets upload directories (--check).
    - ``offered(state)``: listed only while it holds.
    - ``in_session``: listed only to an MCP session (session_of), as what it does lasts for one.
    - ``live(state, session, caller)``: a sentence of the description built from the live state
      when tools/list is answered (load-toolset's toolsets), after the docstring's text.
    - ``see``: the description's routing sentence, ``{"for several pages": "get-pages"}``
      read "For several pages, use get-pages."; a clause whose tool (the value's first word)
      is not offered is left out."""
    read_only: bool
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool = True
    scoped: bool = True
    guarded: bool = False
    shows: str = ""
    asks: bool = False
    continue_from: bool = False
    dry_run: bool = False
    dry_run_default: bool = False
    idempotency_key: bool = False
    watch: bool = False
    needs_extension: str | None = None
    rights: tuple[str, ...] = ()
    needs_upload_dirs: bool = False
    offered: Callable[[ServerState], bool] | None = None
    in_session: bool = False
    live: Callable[[ServerState, Session | None, Caller], str] | None = None
    see: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def problem(self, name: str) -> str | None:
        """What the flags contradict, if anything: a write's hints are stated, never guessed."""
        if self.read_only and (self.destructive or self.idempotent is False or self.dry_run
                               or self.idempotency_key or self.watch or self.guarded or self.asks):
            return (f"{name} is read-only: not destructive, idempotent, no dryRun, idempotencyKey, watch or "
                    "confirm")
        if self.dry_run_default and not self.dry_run:
            return f"{name}: dry_run_default needs dry_run"
        if self.guarded != bool(self.shows):
            return f"{name}: a guarded tool says what its preview shows (shows=), and only a guarded one"
        if not self.read_only and (self.destructive is None or self.idempotent is None):
            return f"{name} is not read-only: state destructive= and idempotent="
        return None


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolSpec(Flags):
    """A registered tool (see Registry.tool): what tools/list shows and what a call runs."""
    name: str
    title: str
    toolset: str                         # its group (TOOLSETS), offered as the operator chooses
    doc: str             # the description, quoting settings as {field:unit} (Quoted); {{ }} for braces
    fn: Callable[..., Any]

    @functools.cached_property
    def params(self) -> dict[str, Param]:
        """The function's own arguments, read when first needed: evaluating every tool's annotations
        at import would be a good part of the time a server takes to start."""
        return signature_params(self.fn)

    @property
    def arguments(self) -> dict[str, Param]:
        """Every argument the tool takes: its own, then those its flags add."""
        flags = {"confirm": self.guarded, "continueFrom": self.continue_from, "dryRun": self.dry_run,
                 "idempotencyKey": self.idempotency_key, "watch": self.watch, "wiki": self.scoped}
        shared = {name: p for name, p in SHARED_PARAMS.items() if flags[name]}
        if self.dry_run_default:
            shared["dryRun"] = dataclasses.replace(shared["dryRun"], default=True)
        return {**self.params, **shared}

    def description(self, config: Config | None = None, absent: Collection[str] = (), live: str = "",
                    confirmer: Confirmer = "model") -> str:
        """The description quoting ``config`` (None: defaults), then ``live`` (the live sentence), who
        confirms a guarded tool (``confirmer``), and routing (see) to tools not ``absent``."""
        text = self.doc.format_map({f.name: Quoted(getattr(config, f.name, f.default), f.default,
                                                   f.metadata.get("setting", ""))
                                    for f in dataclasses.fields(Config)})
        # The user confirms what a call without confirm showed them (Preview.answer asks the same),
        # which their request to act had not: so it is no confirmation, and the sentence says so.
        confirming = "" if not self.guarded else {
            "model": f"Without confirm=true it only shows {self.shows}; confirm=true acts, once the user "
                     "agreed to that (their request does not count).",
            "person": f"It first asks the user, showing {self.shows}, and acts only on their yes.",
            "nobody": "Refused for this client: the operator wants the user to confirm it in a client that "
                      "can ask them, and this one cannot."}[confirmer]
        routes = "; ".join(f"{when}, use {to}" for when, to in self.see.items()
                           if to.split()[0] not in absent)
        return " ".join(part for part in (text, live, confirming, routes[:1].upper() + routes[1:] + "."
                                          if routes else "") if part)

    def schema(self, unlisted: Iterable[str] = ()) -> dict[str, Any]:
        """The input schema without the shared arguments ``unlisted`` (which a call may still pass).
        Open (no ``additionalProperties: false``) to spare 29 bytes a tool on every turn:
        check_arguments refuses unknown arguments."""
        arguments = {name: p for name, p in self.arguments.items() if name not in unlisted}
        required = [name for name, p in arguments.items() if p.required]
        return {"type": "object", "properties": {name: param_schema(p) for name, p in arguments.items()},
                **({"required": required} if required else {})}


class Preview(Exception):
    """What a guarded tool would do, raised instead while the call is not confirmed: answered to the
    model, or put to the person (run_guarded). ``choices``: parts the person may pick (pages to
    save); ``wiki`` and ``account``: where and as whom, which run_tool adds for the question."""

    def __init__(self, nothing: str, would: str, choices: Sequence[str] = ()) -> None:
        super().__init__(nothing, would)
        self.nothing, self.would = nothing, would  # "Nothing was deleted.", "delete 'X' (...) from w."
        self.choices = tuple(choices)
        self.wiki = self.account = ""

    def answer(self, tool_name: str) -> WikiError:
        return invalid_input(f"{self.nothing} {tool_name} would {self.would} Ask the user to confirm, then "
                             f"call {tool_name} again with confirm=true.")


@dataclasses.dataclass(eq=False)
class Registry:
    """Tools by name, in tools/list's order: REGISTRY, unless a server (a test's) is given its own."""
    tools: dict[str, ToolSpec] = dataclasses.field(default_factory=dict)

    def tool(self, name: str, title: str, *, toolset: str,
             **flags: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers a tool function: its docstring is the description (quoting settings: Quoted), its
        parameters after the ToolContext its own arguments, each ``Annotated[type, Arg(...)]``."""
        given = Flags(**flags)
        if problem := given.problem(name):
            raise TypeError(problem)
        if toolset not in TOOLSETS:
            raise TypeError(f"{name}: toolset {toolset!r} is not one of {', '.join(TOOLSETS)}")

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            spec = ToolSpec(**{**vars(given), "destructive": bool(given.destructive),
                               "idempotent": given.idempotent is not False},
                            name=name, title=title, toolset=toolset, doc=" ".join((fn.__doc__ or "").split()),
                            fn=fn)
            own = list(inspect.signature(fn).parameters)[1:]  # after the ToolContext
            if clash := set(own) & SHARED_PARAMS.keys() - ({"wiki"} if not spec.scoped else set()):
                raise TypeError(f"{name}: {', '.join(sorted(clash))} come from the flags of @tool, not from "
                                "the function's parameters")
            spec.description()  # a setting it names that Config lacks fails here, at import
            self.tools[name] = spec
            return fn
        return register


#: The module's tools; ``@tool`` adds to it.
REGISTRY = Registry()


tool = REGISTRY.tool


def signature_params(fn: Callable[..., Any]) -> dict[str, Param]:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = {}
    for name, parameter in list(inspect.signature(fn).parameters.items())[1:]:
        hint = hints[name]
        if typing.get_origin(hint) is typing.Union:  # Python 3.10 adds Optional[] when the default is None
            hint = next((h for h in typing.get_args(hint) if typing.get_origin(h) is Annotated), hint)
        assert typing.get_origin(hint) is Annotated, f"{fn.__name__}.{name} needs Annotated[..., Arg()]"
        base, arg = typing.get_args(hint)[:2]
        kind, item_kind = type_kind(base)
        required = parameter.default is inspect.Parameter.empty
        params[name] = Param(name, kind, item_kind, arg, required, None if required else parameter.default)
    return params


def type_kind(hint: Any) -> tuple[Any, Any]:
    """Reduces a type hint to (kind, item kind): str, int, bool, list or an enum tuple."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, UnionType):
        kinds = [h for h in typing.get_args(hint) if h is not type(None)]
        return (frozenset(kinds), None) if len(kinds) > 1 else type_kind(kinds[0])
    if origin is Literal:
        return tuple(typing.get_args(hint)), None
    if origin is list:
        return list, type_kind(typing.get_args(hint)[0])[0]
    return hint, None


JSON_TYPES = {str: "string", int: "integer", bool: "boolean", list: "array"}


def param_schema(p: Param) -> dict[str, Any]:
    """The JSON schema of one argument, stating only what narrows it (a flag is off unless set)."""
    schema = kind_schema(p.kind)
    # A title's bounds (not empty, at most 255 bytes) are check_text's alone: no model needs them
    # to write a title, and tools/list is paid on every turn.
    if p.kind is list:
        # A list of choices holds each at most once: its cap says nothing the choices do not.
        capped = p.arg.max_items and not (isinstance(p.item_kind, tuple) and p.arg.max_items >= len(p.item_kind))
        schema.update(items=kind_schema(p.item_kind), maxItems=p.arg.max_items if capped else None,
                      minItems=1 if p.required else None)
    # A floor of 0 or 1 (an ID's, an offset's, a count's) is check_int's alone: no model writes below
    # it. A default of false or 0 (an offset's) is where a flag or a reading starts, unless set.
    schema.update(maxLength=p.arg.max_length if p.arg.max_length_listed else None,
                  minimum=p.arg.minimum if (p.arg.minimum or 0) > 1 else None, maximum=p.arg.maximum,
                  default=None if p.default is False or p.default == 0 else p.default,
                  description=p.arg.description)
    return {key: value for key, value in schema.items() if value is not None}


def kind_schema(kind: Any) -> dict[str, Any]:
    if isinstance(kind, tuple):
        return {"type": "string", "enum": list(kind)}
    return {"type": sorted(JSON_TYPES[k] for k in kind) if isinstance(kind, frozenset) else JSON_TYPES[kind]}


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as the tool takes them; any problem is an invalid_input naming the argument."""
    accepted = spec.arguments
    unknown = [name for name in arguments if name not in accepted]
    if unknown:
        raise invalid_input(f"Unknown argument{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(repr(u) for u in unknown)} for {spec.name}. "
                            f"Accepted arguments: {', '.join(accepted)}.")
    values: dict[str, Any] = {}
    for name, p in accepted.items():
        if arguments.get(name) is not None:
            values[name] = check_value(p, arguments[name])
        elif p.required:
            raise invalid_input(f"Missing required argument {name!r} for {spec.name}: {p.arg.description}")
        else:
            values[name] = p.default
    return values


def check_value(p: Param, value: Any) -> Any:
    """``value`` as the tool gets it, once it is what ``p`` takes; else an invalid_input error."""
    name = p.name
    if isinstance(p.kind, frozenset):  # int | str: the value's own type says which it is
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        kind = str if isinstance(value, str) else int if number else None
        if kind not in p.kind:
            kinds = " or ".join(sorted(JSON_TYPES[k] for k in p.kind))
            raise invalid_input(f"Argument {name!r} must be {kinds}, got {json_type(value)}.")
        return check_value(dataclasses.replace(p, kind=kind), value)
    if isinstance(p.kind, tuple):
        if value not in p.kind:
            raise invalid_input(f"Argument {name!r} must be one of {', '.join(p.kind)}; got {quoted(value)}.")
        return value
    if p.kind is bool:
        if not isinstance(value, bool):
            raise invalid_input(f"Argument {name!r} must be true or false, got {json_type(value)}.")
        return value
    return {list: check_list, int: check_int}.get(p.kind, check_text)(p, value)


def check_list(p: Param, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise invalid_input(f"Argument {p.name!r} must be an array, got {json_type(value)}.")
    if not value and p.required:
        raise invalid_input(f"Argument {p.name!r} must not be empty.")
    if p.arg.max_items and len(value) > p.arg.max_items:
        raise invalid_input(f"Argument {p.name!r} takes at most {p.arg.max_items} items, got {len(value)}; "
                            f"split the call.")
    return [check_value(Param(f"{p.name}[{i}]", p.item_kind, None, p.arg, True, None), v)
            for i, v in enumerate(value)]


def check_int(p: Param, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_input(f"Argument {p.name!r} must be an integer, got {json_type(value)}.")
    if p.arg.minimum is not None and value < p.arg.minimum:
        raise invalid_input(f"Argument {p.name!r} must be at least {p.arg.minimum}, got {quoted(value)}.")
    if p.arg.maximum is not None and value > p.arg.maximum:
        raise invalid_input(f"Argument {p.name!r} must be at most {p.arg.maximum}, got {quoted(value)}.")
    return value


def check_text(p: Param, value: Any) -> str:
    if not isinstance(value, str):
        raise invalid_input(f"Argument {p.name!r} must be a string, got {json_type(value)}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_input(f"Argument {p.name!r} contains invalid Unicode (an unpaired surrogate)."
                            ) from None
    if p.arg.title:
        value = value.strip()
        check_title_text(p.name, value)
    if p.arg.max_length and len(value) > p.arg.max_length:
        raise invalid_input(f"Argument {p.name!r} is {len(value)} characters long; at most "
                            f"{p.arg.max_length} are accepted.")
    return value


def check_title_text(name: str, title: str) -> None:
    """Refuses what no wiki takes as a page title, saying what to give instead."""
    if not title:
        raise invalid_input(f"Argument {name!r} must be a non-empty page title.")
    # MediaWiki's limit leaves out the namespace prefix; whether a prefix is a namespace is the
    # wiki's to say, and it refuses a title still too long. First, so that no answer quotes more;
    # measured as the wiki would take it, escapes decoded and a fragment apart, as explained below.
    prefix, colon, rest = title.partition(":")
    colon = colon if utf8_len(prefix) <= MAX_TITLE_BYTES else ""  # no namespace is named so long
    taken = urllib.parse.unquote(rest if colon else title).partition("#")
    if max(utf8_len(taken[0]), utf8_len(taken[2])) > MAX_TITLE_BYTES:
        length = utf8_len(rest if colon else title)
        after = " after its namespace prefix" if colon else ""
        raise invalid_input(f"Argument {name!r} is {length} bytes long{after}; a page title has at most "
                            f"{MAX_TITLE_BYTES}.")
    if encoded := PERCENT_ESCAPE.search(title):
        shown = urllib.parse.unquote(title).replace("_", " ")
        raise invalid_input(f"Argument {name!r} is percent-encoded ({encoded.group(0)}); page titles are "
                            f"written as the wiki shows them: {shown!r}.")
    page, fragment, heading = title.partition("#")
    if fragment:
        raise invalid_input(f"Argument {name!r} ends in a fragment (#{heading}), which names a part of a "
                            f"page, not a page. Give the title alone ({page.strip()!r}); to read one "
                            "section, get-page takes section=N.")
    # control characters too: MediaWiki calls them "an invalid UTF-8 sequence", which they are not
    if bad := sorted({repr(c) for c in title if c in "|[]{}<>\x7f" or c < " "}):
        raise invalid_input(f"Argument {name!r} is not a valid page title: it contains {', '.join(bad)}.")


PERCENT_ESCAPE = re.compile("%[0-9A-Fa-f]{2}")


def quoted(value: Any) -> str:
    """``value`` as an error quotes it, in about 100 characters at most: no answer echoes a huge
    argument back (and Python will not write an integer of over 4,300 digits at all)."""
    if isinstance(value, int) and value.bit_length() > 300:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"  # log10(2) digits a bit
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:100]}… ({len(text)} characters)"


def json_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------
# store.py: The state store: what replicas share (MCP_STATE_URL) or this process keeps, behind one small
# interface that the Redis module implements too.
# ---------------------------------------------------------------------------

#: An entry of a state store: (wiki key, kind, name). Each kind is bounded on its own in memory.
StateKey = tuple[str, str, str]


#: The code of the error a shared store that cannot be reached gives.
STORE_DOWN = "state_store_unreachable"


#: What redis-py raises for a wrong or missing password or user name (WRONGPASS, NOAUTH).
LOGIN_REFUSED = "AuthenticationError"


#: How RedisStore.problem begins an error the store answered with (such as a database it does not have).
STORE_REFUSAL = "ResponseError: "


class StateStore(typing.Protocol):
    """Entries by StateKey, each expiring ``ttl`` seconds after its last write: MemoryStore in this
    process, or redis_store.RedisStore (MCP_STATE_URL) shared by replicas, which raises the
    STORE_DOWN error, before anything was written, when it cannot be reached. Entries are text, but
    the read ledger's, typed values that MemoryStore keeps as they are and RedisStore writes in their
    wire format; the ledger uses get, update, forget, next_order and when_reached alone."""
    name: str

    def get(self, key: StateKey) -> Any: ...
    def put(self, key: StateKey, value: str, ttl: float) -> None: ...
    def update(self, key: StateKey, change: Callable[[Any], Any], ttl: float) -> None:
        """Writes ``change(old value)`` unless it is None, with no other write in between."""
    def claim(self, key: StateKey, value: str, ttl: float) -> bool:
        """Writes ``value`` unless the entry exists, and holds it until release; whether it did."""
    def held(self, key: StateKey) -> bool:
        """Whether a claim on the entry is held, by a call still running (on any replica)."""
    def release(self, key: StateKey, forget: bool) -> None: ...
    def forget(self, key: StateKey) -> None: ...
    def take(self, key: StateKey) -> str | None:
        """Forgets the entry and returns its value, in one step: of two takers at once, on any
        replica, one gets it and the other None (a code or refresh token used once)."""
    def next_order(self) -> int:
        """A number greater than any it gave before: which of two notes came later."""
    def wait(self, seconds: float) -> None:
        """Waits up to ``seconds`` for another write."""
    def when_reached(self, write: Callable[[], None]) -> bool:
        """Runs ``write`` now, or, while the store cannot be reached, once it can (and a get first
        raises the STORE_DOWN error until then); whether it ran now."""
    def require(self) -> None:
        """Raises the STORE_DOWN error unless the store answers now."""
    def problem(self) -> str | None:
        """Why the store cannot be used now, by the name of the error, or None."""
    def entries(self, wiki: str, kind: str) -> Iterator[tuple[str, str]]:
        """The name and value of each live entry of one kind (``mediawiki-mcp sign-in list``)."""
    errors: int  # the requests that could not reach the store since this process began (/metrics)


#: The kind of entry of a client registered with the sign-in that has signed no one in yet: anyone
#: may register one, from many addresses, so this process keeps fewer of them than of other kinds
#: (at most 16 KB each), the oldest forgotten first; a client that signed someone in is kept apart.
UNUSED_CLIENT = "unused_client"


UNUSED_CLIENTS_IN_MEMORY = 2000


class MemoryStore:
    """The StateStore of this process: each kind holds at most ``capacity`` entries, or what
    ``capacities`` gives for it (the least recently written forgotten first, never one a running
    call holds)."""
    name = "memory"
    errors = 0  # it is always reached

    def __init__(self, capacity: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.clock = capacity, clock
        self.capacities = {UNUSED_CLIENT: min(capacity, UNUSED_CLIENTS_IN_MEMORY)}
        self._kinds: collections.defaultdict[str, collections.OrderedDict[StateKey, tuple[Any, float]]] = (
            collections.defaultdict(collections.OrderedDict))
        self._held: set[StateKey] = set()
        self._order = itertools.count(1)
        self._changed = threading.Condition(threading.RLock())

    def get(self, key: StateKey) -> Any:
        with self._changed:
            entry = self._kinds[key[1]].get(key)
            return entry[0] if entry and entry[1] > self.clock() else None

    def put(self, key: StateKey, value: Any, ttl: float) -> None:
        with self._changed:
            entries = self._kinds[key[1]]
            entries[key] = (value, self.clock() + ttl)
            entries.move_to_end(key)
            while len(entries) > self.capacities.get(key[1], self.capacity):
                oldest = next((k for k in entries if k not in self._held), None)
                if oldest is None:
                    break
                del entries[oldest]
            self._changed.notify_all()

    def update(self, key: StateKey, change: Callable[[Any], Any], ttl: float) -> None:
        with self._changed:
            new = change(self.get(key))
            if new is not None:
                self.put(key, new, ttl)

    def claim(self, key: StateKey, value: str, ttl: float) -> bool:
        with self._changed:
            if self.get(key) is not None:
                return False
            self._held.add(key)
            self.put(key, value, ttl)
            return True

    def held(self, key: StateKey) -> bool:
        return key in self._held

    def release(self, key: StateKey, forget: bool) -> None:
        with self._changed:
            self._held.discard(key)
            if forget:
                self.forget(key)
            self._changed.notify_all()

    def forget(self, key: StateKey) -> None:
        with self._changed:
            self._kinds[key[1]].pop(key, None)

    def take(self, key: StateKey) -> str | None:
        with self._changed:
            value = self.get(key)
            self.forget(key)
            return value

    def next_order(self) -> int:
        with self._changed:
            return next(self._order)

    def wait(self, seconds: float) -> None:
        with self._changed:
            self._changed.wait(seconds)

    def when_reached(self, write: Callable[[], None]) -> bool:
        write()
        return True

    def problem(self) -> str | None:
        return None

    def require(self) -> None:
        pass

    def entries(self, wiki: str, kind: str) -> Iterator[tuple[str, str]]:
        with self._changed:
            found = [(key[2], value) for key, (value, until) in self._kinds[kind].items()
                     if key[0] == wiki and until > self.clock()]
        yield from found


def open_state_store(url: str) -> StateStore:
    """The shared store at ``url``; a ConfigError when its client, the optional extra, is missing."""
    RedisStore = optional_module("redis_store", "MCP_STATE_URL (stateUrl)", "redis", "redis",
                                 "the Redis client").RedisStore
    name = shown_address(url)

    def unreachable(error: Exception) -> WikiError:  # RedisStore logs the outage, once
        return upstream_failure(f"The state store {name} cannot be reached ({type(error).__name__}); "
                                f"nothing was written. {RETRY_LATER}", STORE_DOWN)
    return RedisStore(url, name, unreachable)


def store_problem_at_start(store: StateStore) -> str | None:
    """Why the shared store cannot be reached at start, or None. A refused password is a
    ConfigError, which no wait mends; an unreachable store may come back."""
    problem = store.problem()
    if problem == LOGIN_REFUSED:
        raise ConfigError(f"The state store {store.name} refuses the user name or password of MCP_STATE_URL "
                          "(stateUrl in a configuration file); correct the setting. The value given is not "
                          "shown.")
    if problem and problem.startswith(STORE_REFUSAL):  # it answered: such as a database it does not have
        raise ConfigError(f"The state store {store.name} refuses MCP_STATE_URL (stateUrl in a configuration "
                          f"file): it says {problem.removeprefix(STORE_REFUSAL)!r}; correct the setting.")
    return problem


@contextlib.contextmanager
def unless_store_down(what: str) -> Iterator[None]:
    """Goes on, with a warning, when the shared store cannot be reached: for what is noted after
    the fact, which must not turn into a failure of its own."""
    try:
        yield
    except WikiError as error:
        if error.code != STORE_DOWN:
            raise
        log.warning("%s was not recorded in the state store", what)


# ---------------------------------------------------------------------------
# ledger.py: The read ledger: what each client was shown of each page (revision, sections, spans), so that
# a write never drops text the model did not see.
# ---------------------------------------------------------------------------

READ_LEDGER_TTL_SECONDS = 24 * 3600.0


#: Of a page, the revisions read in part that the ledger of clients not told apart keeps.
CUT_REVISIONS_KEPT = 20


#: The moves made here of one page that its reads under its old titles are followed through.
MOVES_FOLLOWED = 5


#: In memory, the ledger keeps this many full clients' entries of each kind in all, the least
#: recently written forgotten first: the bound of the whole process, beside each client's.
READ_LEDGER_CLIENTS_IN_MEMORY = 64


#: The caller of calls this server cannot tell apart (HTTP without sessions: stateless replicas,
#: or a protocol version that has none): ``shared``, or ``shared:<hash of the bearer token>``.
#: What is noted for it is every such client's, so no read vouches for its writes (told_apart).
SHARED_CALLER = "shared"


def told_apart(caller: str) -> bool:
    """Whether ``caller`` is one client ('' is this whole process, one client as over stdio)."""
    return caller.partition(":")[0] != SHARED_CALLER


def heading_entry(title: str, heading: str) -> str:
    """The read ledger's name for a section asked for by ``heading``, case and space aside."""
    return f"{title}|#{' '.join(heading.split()).casefold()}"


def client_entry(wiki: str, caller: str, kind: str, name: str) -> StateKey:
    """The one place entries are named: every kind is kept per caller, so that one client's
    entries never answer for another's."""
    return (wiki, kind, f"{caller}|{name}" if caller else name)


def merged_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Byte ranges in order, those that overlap or touch joined."""
    joined: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return joined


@dataclasses.dataclass(frozen=True)
class PageRead:
    """What one caller has read of one page or section: of the last revision it read, which bytes."""
    revid: int
    ranges: list[tuple[int, int]]  # the bytes read of that revision, in order, joined
    total: int
    order: int   # which read came later
    section_ends: dict[int, int]  # of a whole page read in part: where each section ends
    section_starts: dict[int, int] = dataclasses.field(default_factory=dict)  # and where each starts

    @property
    def seen(self) -> int:
        """The bytes read without a gap from the start."""
        return self.ranges[0][1] if self.ranges and self.ranges[0][0] == 0 else 0

    def unread(self, section: int | None) -> tuple[int, int] | None:
        """The first bytes of ``section`` (None, or one not located: the whole text) not read, if any."""
        start, end = ((self.section_starts.get(section, 0), self.section_ends[section])
                      if section in self.section_ends else (0, self.total))
        for first, last in self.ranges:
            if first <= start < last:
                start = last
        if start >= end:
            return None
        return start, min([end, *(first for first, _ in self.ranges if first > start)])


@dataclasses.dataclass(frozen=True)
class Base:
    """A revision of a page the caller was shown (kinds ``base`` and ``outline``): ``whole``, all of
    it; ``shown``, without its wikitext (ClientReads.showed), not by a read of its wikitext or a save."""
    revid: int
    order: int
    whole: bool = False
    shown: bool = False


@dataclasses.dataclass(frozen=True)
class LedgerIndex:
    """A caller's entries (``kind|name``) with their sizes, the least recently written first, and
    whether any was dropped to keep within the bounds (kind ``ledger``)."""
    entries: dict[str, int]
    dropped: bool = False


#: Of each page (kind ``cut``), the revisions read in part with the sections each read cut.
Cuts = tuple[tuple[int, tuple[int | None, ...]], ...]


#: A change of a ledger entry: its old value and the order of the call's note -> its new value
#: (None: left as it is).
EntryChange = Callable[[Any, int], Any]


def entry_size(value: object) -> int:
    """About the bytes an entry takes as the shared store writes it: its texts, and 8 a number."""
    if hasattr(value, "__dataclass_fields__"):
        value = list(vars(value).values())
    if isinstance(value, dict):
        value = list(value.items())
    if isinstance(value, (tuple, list)):
        return 2 + sum(map(entry_size, value))
    return len(value) if isinstance(value, str) else 8


#: How many renderings of a page (Shown.rendered) are remembered.
RENDERINGS_KEPT = 4


#: The marker plain text puts after a heading (plain_text): " (section 1)", " (from Template:Notes)".
SECTION_MARKER = re.compile(r"^(=+ .*? =+) \((?:section \d+|from [^\n]+)\)$", re.MULTILINE)


def rendering_digest(text: str) -> str:
    """A text's digest with its whitespace and its headings' section markers left out, as a
    model's copy may differ in them (a model strips the markers to make it look like wikitext)."""
    return hashlib.sha256("".join(SECTION_MARKER.sub(r"\1", text).split()).encode()).hexdigest()


class ReadLedger:
    """What each caller read and previewed, per wiki (ClientReads: one caller's): the store of the
    no-loss checks, its entries typed values (the shared store writes them in its wire format). A
    caller's ledger holds at most ``capacity`` entries of each kind and ``max_bytes`` bytes in all,
    the least recently written dropped first (ClientReads.forgotten)."""

    def __init__(self, capacity: int = READ_LEDGER_MAX_ENTRIES, store: StateStore | None = None,
                 max_bytes: int = DEFAULT_READ_LEDGER_MAX_BYTES) -> None:
        self.capacity, self.max_bytes = capacity, max_bytes
        self.store = store or MemoryStore(capacity * READ_LEDGER_CLIENTS_IN_MEMORY)

    def of(self, wiki: str, caller: str = "",
           syntax: Callable[[], Syntax] = lambda: CORE_SYNTAX) -> ClientReads:
        return ClientReads(self, wiki, caller, syntax)

    def note(self, wiki: str, caller: str, changes: list[tuple[str, str, EntryChange]]) -> bool:
        """Makes ``changes`` to the caller's entries; whether they are written now, not kept for
        when the shared store can be reached again."""
        def write() -> None:
            order = self.store.next_order()
            sizes = []
            for kind, name, change in changes:
                key = client_entry(wiki, caller, kind, name)
                if size := self._write(key, change, order):
                    sizes.append((f"{kind}|{key[2]}", size))
            if sizes:
                self._bound(wiki, caller, sizes)
        return self.store.when_reached(write)

    def _write(self, key: StateKey, change: EntryChange, order: int) -> int:
        """Changes one entry; the bytes it now takes (0: left as it was)."""
        written = [0]

        def sized(old: Any) -> Any:
            new = change(old, order)
            written[0] = 0 if new is None else len(key[2]) + entry_size(new)
            return new
        self.store.update(key, sized, READ_LEDGER_TTL_SECONDS)
        return written[0]

    def _bound(self, wiki: str, caller: str, sizes: list[tuple[str, int]]) -> None:
        """Keeps the caller's ledger within its bounds (LedgerIndex), ``sizes`` its entries just written."""
        dropped: list[str] = []

        def bounded(old: LedgerIndex | None) -> LedgerIndex:
            entries = dict(old.entries) if old else {}
            for entry, size in sizes:  # to the end
                entries.pop(entry, None)
                entries[entry] = size
            kinds = collections.Counter(entry.partition("|")[0] for entry in entries)
            total = sum(entries.values())
            dropped[:] = []
            for entry in list(entries)[:-len(sizes)]:
                kind = entry.partition("|")[0]
                if total <= self.max_bytes and kinds[kind] <= self.capacity:
                    if max(kinds.values()) <= self.capacity:
                        break
                    continue  # another kind is over its count: its oldest goes
                dropped.append(entry)
                kinds[kind] -= 1
                total -= entries.pop(entry)
            return LedgerIndex(entries, bool(old and old.dropped or dropped))
        self.store.update(client_entry(wiki, caller, "ledger", ""), bounded, READ_LEDGER_TTL_SECONDS)
        for entry in dropped:
            kind, _, name = entry.partition("|")
            self.store.forget((wiki, kind, name))


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a read tool showed of a page (ClientReads.showed records it): of revision ``revid``, the
    page's latest or not, the bytes ``span`` of wikitext ``text`` (the page's, or section ``section``'s,
    asked for by ``heading``); or, with no text, the revision ID alone, with ``rendered`` text of it,
    and its section numbers (``outline``) or not."""
    title: str
    revid: int
    text: str | None = None
    span: tuple[int, int] = (0, 0)
    section: int | None = None
    heading: str | None = None
    latest: bool = True
    rendered: tuple[str, ...] = ()
    outline: bool = True


@dataclasses.dataclass(frozen=True)
class ClientReads:
    """The read ledger of one caller on one wiki, per page and section: which bytes of which
    revision it read, so that text seen only in part is not written back whole; the latest revision
    it showed, the base of a write without latestId, so that an edit made since is merged or
    refused; and the revision of each page a dry run across pages saw, so that its save skips a
    page changed since (the model saw a diff, not the page). Callers not told apart share one
    ledger in which no read vouches for another: a revision any of them read in part is never
    written back whole, and writes name their base."""
    ledger: ReadLedger
    wiki: str
    caller: str
    syntax: Callable[[], Syntax]  # the wiki's, asked only when a read's sections are needed

    @property
    def told_apart(self) -> bool:
        return told_apart(self.caller)

    def showed(self, blocks: list[str], *shown: Shown) -> list[str]:
        """A read tool's answer ``blocks``, once what it showed is recorded: the one place read tools
        note their reads, ahead of it a note for the model where one could not be recorded yet."""
        notes = []
        for page in shown:
            if page.text is not None:
                notes.append(self.record(page.title, page.section, page.revid, page.text, page.span,
                                         latest=page.latest, heading=page.heading))
                continue
            if page.rendered:  # neither the text whole nor as shown is wikitext to write back
                self._rendered(page.title, *page.rendered)
            if page.latest and page.revid:
                self._shown(page.title, page.revid, page.outline)
        return [*dict.fromkeys(note for note in notes if note), *blocks]

    def record(self, title: str, section: int | None, revid: int, text: str, shown: tuple[int, int], *,
               latest: bool = True, heading: str | None = None) -> str | None:
        """Notes a read of ``text`` (a page or one section) that showed the bytes ``shown``; ``latest``:
        of the page's latest revision; ``heading``: the section was asked for by it. Returns a note
        for the model when the read could not be recorded yet."""
        total = utf8_len(text)
        start, end = shown[0], min(shown[1], total)
        partial = start > 0 or end < total
        # where a page's sections are, to tell which a read in part showed whole
        spans = section_spans(text, self.syntax()) if section is None and partial else {}
        starts, ends = {n: s for n, (s, _) in spans.items()}, {n: e for n, (_, e) in spans.items()}

        whole = [not partial]  # whether the reads of this revision, this one joined, showed it all

        def after(last: PageRead | None, order: int) -> PageRead:
            if not (self.told_apart and last and last.revid == revid):  # a shared ledger joins no reads
                return PageRead(revid, [(start, end)], total, order, ends, starts)
            joined = PageRead(revid, merged_ranges([(start, end), *last.ranges]), total, order,
                              last.section_ends or ends, last.section_starts if last.section_ends else starts)
            whole[0] = joined.unread(section) is None
            return joined

        def cut(known: Cuts | None, order: int) -> Cuts | None:
            """The latest CUT_REVISIONS_KEPT revisions some read showed in part, with the parts it cut;
            rewritten by every read, so that it is dropped no sooner than the page's read."""
            if not partial:
                return known
            parts: set[int | None] = {section}
            parts |= {n for n, last in ends.items() if starts[n] < end and last > start
                      and not start <= starts[n] <= last <= end}
            parts.update(*(p for r, p in known or () if r == revid))
            ordered = tuple(sorted(parts, key=lambda n: -1 if n is None else n))
            return (*((r, p) for r, p in known or () if r != revid), (revid, ordered))[-CUT_REVISIONS_KEPT:]
        name = f"{title}|{section}"
        changes: list[tuple[str, str, EntryChange]] = [("read", name, after)]
        if latest:
            changes += [("base", part, lambda _, order: Base(revid, order, whole[0] and section is None))
                        for part in (name, *([heading_entry(title, heading)] if heading else []))]
        if not self.told_apart:
            changes.append(("cut", title, cut))
        if self._note(changes):
            return None
        return (f"Note: the state store {self.ledger.store.name} cannot be reached, so this read is not on "
                "record yet for the checks that keep a write from losing text; it is recorded once the store "
                "is back, and writes are refused until then.")

    def saved(self, title: str, section: int | None, parent: int | None, revid: int,
              sent_whole: bool) -> None:
        """Notes a save of ``revid`` over ``parent``: a read (or an outline) that showed ``parent`` now
        shows ``revid``, as they differ by the caller's own edit. ``sent_whole``: the model sent the
        whole text and nothing was merged in, so it knows ``revid`` even unread."""
        def after(sent: bool, last: Base | None, order: int) -> Base | None:
            showed_parent = bool(last and parent and last.revid == parent)
            # the whole page stays known: sent whole, or a known parent changed by this edit alone
            whole = sent and section is None or bool(showed_parent and last and last.whole)
            unread = not sent and bool(last and last.shown)  # still no wikitext read of it
            return Base(revid, order, whole, unread) if sent or showed_parent else None
        bases = [("base", f"{title}|{part}", functools.partial(after, sent_whole and part == section))
                 for part in dict.fromkeys([None, section])]
        self._note([*bases, ("outline", title, functools.partial(after, False))])

    def base(self, title: str, section: int | None, heading: str | None = None, *,
             outlined: bool = False) -> int | None:
        """The latest revision the caller's last read of this page or section showed (also by
        ``heading``, as one added above renumbers it; ``outlined``: or whose section numbers a later
        outline showed), if any; none for a caller not told apart, whose reads may be another client's."""
        names = [f"{title}|{part}" for part in dict.fromkeys([section, None])]
        found = [self._get("base", name) for name in names + ([heading_entry(title, heading)] if heading else [])]
        found += [self._get("outline", title)] if outlined else []
        if not self.told_apart:  # asked all the same: a write stops while the store cannot be reached
            return None
        known = [b for b in found if b]
        # the text the model writes back comes from its wikitext reads: a revision shown later without
        # its wikitext (shown) is the base only where there is none
        last = max([b for b in known if not b.shown] or known, key=lambda b: b.order, default=None)
        return last.revid if last else None

    def knows_whole(self, title: str, revid: int) -> bool:
        """Whether the caller's reads (and its own saves since) showed all of revision ``revid`` of
        the page, the base of a write that would drop much of it. For callers not told apart: any
        read through this server, as only the revision named vouches for theirs."""
        last = self._get("base", f"{title}|None")
        return bool(last and last.revid == revid and last.whole)

    def _shown(self, title: str, revid: int, outline: bool) -> None:
        """Notes that the caller was shown revision ``revid`` of the page, the latest, without its
        wikitext (rendered, in finds, only its ID): where the caller read none of the page's wikitext,
        it is the base of the caller's next write, as a read of its wikitext would be; where it did,
        the text it writes back was made from that read, whose revision stays its base (base), so that
        the edits made since are merged in, not reverted. ``outline``: its section numbers were shown
        too (an outline, rendered text, finds): an edit by section number takes them as that revision's."""
        def pinned(last: Base | None, order: int) -> Base | None:
            if last and not last.shown:  # a wikitext read (or a save) of the page
                return None
            return Base(revid, order, shown=True)
        self._note([("base", f"{title}|None", pinned),
                    *([("outline", title, lambda _, order: Base(revid, order))] if outline else [])])

    def previewed(self, title: str, change: str, revid: int, saved: int | None = None) -> None:
        """Notes a dry run of ``change`` to a page at ``revid`` (``saved``: the revision its save made)."""
        self._note([("preview", preview_entry(title, change), lambda *_: (revid, saved))])

    def preview(self, title: str, change: str) -> tuple[int, int | None] | None:
        """The revision the caller's last dry run of ``change`` showed, and the one its save made, if any."""
        return self._get("preview", preview_entry(title, change))  # type: ignore[no-any-return]

    def _rendered(self, title: str, *texts: str) -> None:
        """Notes rendered text of a page shown to the caller: it is refused as wikitext (shows_rendered)."""
        digests = [rendering_digest(text) for text in texts]

        def after(known: tuple[str, ...] | None, order: int) -> tuple[str, ...]:
            return (*[d for d in known or () if d not in digests][-RENDERINGS_KEPT:], *digests)
        self._note([("rendered", title, after)])

    def shows_rendered(self, title: str, text: str) -> bool:
        """Whether ``text`` is, whitespace aside, rendered text of this page shown to the caller."""
        return rendering_digest(text) in (self._get("rendered", title) or ())

    def unseen(self, title: str, section: int | None) -> PageRead | None:
        """The caller's last read of this page or section, if it showed it only in part (later reads
        of the same revision add to it). None for a caller not told apart, as it may be another
        client's: their writes are checked by the revision they name (read_cut)."""
        if not self.told_apart:
            return None
        reads: list[PageRead | None] = [self._get("read", f"{title}|{part}") for part in dict.fromkeys([section, None])]
        last = max((r for r in reads if r), key=lambda r: r.order, default=None)
        return None if last is None or last.unread(section) is None else last

    def read_cut(self, title: str, section: int | None, revid: int) -> bool:
        """Whether a read by callers not told apart showed revision ``revid`` of this page or section
        in part, or may have (a revision older than those kept)."""
        kept: Cuts = self._get("cut", title) or ()
        if len(kept) == CUT_REVISIONS_KEPT and revid < min(r for r, _ in kept):
            return True
        return any(r == revid and section in parts for r, parts in kept)

    def forgotten(self, title: str, section: int | None) -> bool:
        """Whether the caller's ledger dropped entries and holds no read of this page or section now:
        it may have dropped one that showed it in part."""
        index: LedgerIndex | None = self._get("ledger", "")
        if not (index and index.dropped):
            return False
        return all(self._get("read", f"{title}|{part}") is None for part in dict.fromkeys([section, None]))

    def moved(self, old: str, new: str) -> None:
        """Notes a move made here of page ``old`` to ``new``: what was read of it under the old title
        (in part, and of which revision) holds for the new one until it is read there."""
        self._note([("moved", new, lambda *_: old)])

    def _get(self, kind: str, name: str) -> Any:
        def entry(kind: str, name: str) -> Any:
            return self.ledger.store.get(client_entry(self.wiki, self.caller, kind, name))
        found = entry(kind, name)
        title, bar, part = name.partition("|")  # a name starts with its page's title, which never holds '|'
        for _ in range(MOVES_FOLLOWED if kind in ("read", "base", "cut", "outline") else 0):
            old = found is None and entry("moved", title)
            if not old:
                break
            title, found = old, entry(kind, old + bar + part)
        return found

    def _note(self, changes: list[tuple[str, str, EntryChange]]) -> bool:
        return self.ledger.note(self.wiki, self.caller, changes)


def preview_entry(title: str, change: str) -> str:
    return f"{title}|{hashlib.sha256(change.encode()).hexdigest()}"


# ---------------------------------------------------------------------------
# calls.py: Tool calls in flight and idempotency keys: a retried write is answered once, and a call still
# running is waited for, not repeated.
# ---------------------------------------------------------------------------

#: Idempotency keys of write calls are remembered this long, at most this many.
IDEMPOTENCY_TTL_SECONDS = 3600.0


IDEMPOTENCY_MAX_KEYS = 1000


#: A repeat waits at most this long for the first call with its key to finish.
IDEMPOTENCY_WAIT_SECONDS = 120.0


#: A call waiting for another replica's call with the same key looks again this often.
STATE_POLL_SECONDS = 0.05


class IdempotencyStore:
    """Results of write calls by wiki, caller and idempotencyKey, for an hour: the same key with the
    same arguments returns the first result without running again, on any replica sharing the
    store (one that finds the key claimed by a call still running waits for its result)."""

    def __init__(self, ttl: float = IDEMPOTENCY_TTL_SECONDS, capacity: int = IDEMPOTENCY_MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic, store: StateStore | None = None) -> None:
        self.ttl = ttl
        self.store = store or MemoryStore(capacity, clock)

    def run(self, key: str, fingerprint: str, action: Callable[[], list[Any]],
            wiki: str = "", caller: str = "") -> tuple[list[Any], bool]:
        """``action()`` run once per key of ``caller``, and whether this call is a repeat. A failed
        call keeps nothing, so a retry runs again."""
        entry = client_entry(wiki, caller, "idempotency", key)
        until = time.monotonic() + IDEMPOTENCY_WAIT_SECONDS
        while not self.store.claim(entry, json.dumps({"fingerprint": fingerprint}), self.ttl):
            found = self.store.get(entry)
            if found is None:  # the first call failed meanwhile and let go: this one runs
                continue
            first = json.loads(found)
            if first["fingerprint"] != fingerprint:
                raise conflict(f"idempotencyKey {key!r} was already used with other "
                               "arguments; nothing was done. Use a new key for a new request.")
            if "result" in first:
                return first["result"], True
            if not self.store.held(entry):
                # The first call may have put its result and let go since the read above.
                if (found := self.store.get(entry)) is None or "result" in json.loads(found):
                    continue
                raise conflict(f"The first call with idempotencyKey {key!r} stopped before it finished (its "
                               "server went away), so whether it wrote is not known; nothing was done now. Check "
                               "the page's history (get-page-history) before calling again with a new key.")
            if time.monotonic() > until:
                raise conflict(f"The first call with idempotencyKey {key!r} is still "
                               "running; call again later to get its result.")
            self.store.wait(STATE_POLL_SECONDS)
        try:
            result = action()
        except BaseException:
            with unless_store_down(f"The failure of the call with idempotencyKey {key!r}"):
                self.store.release(entry, forget=True)
            raise
        with unless_store_down(f"The result of the call with idempotencyKey {key!r}"):
            self.store.put(entry, json.dumps({"fingerprint": fingerprint, "result": result}), self.ttl)
        with unless_store_down(f"The end of the call with idempotencyKey {key!r}"):
            self.store.release(entry, forget=False)
        return result, False


async def on_own_thread(fn: Callable[[], Any]) -> Any:
    """``fn()``, run on a thread of its own and awaited without holding up the event loop. A
    caller that stops waiting (cancelled, or cut short at shutdown) leaves the thread behind.
    Not anyio.to_thread: its worker threads are no daemons, so the interpreter's exit would wait
    for a wiki that never answers, and an abandoned call would hold a worker of its shared pool."""
    import asyncio
    done: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def work() -> None:
        if not done.set_running_or_notify_cancel():  # the caller stopped waiting already
            return
        try:
            done.set_result(fn())
        except BaseException as error:  # noqa: BLE001 - raised again for the caller, on the event loop
            done.set_exception(error)
    threading.Thread(target=work, name="mediawiki-mcp call", daemon=True).start()
    return await asyncio.wrap_future(done)


class ToolCalls:
    """Runs tool calls on threads of their own, MAX_CALLS_PER_WIKI at once per wiki, and lets a
    shutdown wait up to a grace time for those in flight, then answer each with what is known of
    it. A turn is taken on the call's thread, so an abandoned call keeps it until the wiki answers."""

    def __init__(self, per_wiki: int = MAX_CALLS_PER_WIKI) -> None:
        self.stopping = False
        self._turns: collections.defaultdict[str, threading.BoundedSemaphore] = collections.defaultdict(
            lambda: threading.BoundedSemaphore(per_wiki))  # used on the event loop only
        self._running: set[RunningCall] = set()
        self._lock = threading.Lock()

    async def run(self, wiki: str, job: Callable[[], Any], write: bool) -> Any:
        """``job``'s result, run in ``wiki``'s turn ('' for calls on no wiki); a WikiError
        when the server stops first. ``write``: the job may change the wiki."""
        import anyio
        if self.stopping:
            raise upstream_failure("This server is shutting down; nothing was done. Call "
                                   "again once it is back.")
        turns, call = self._turns[wiki], RunningCall(anyio.CancelScope())

        def in_turn() -> Any:
            with turns:
                with self._lock:
                    if call.scope.cancel_called:  # answered already: it must not begin now
                        return None
                    call.started = True
                RUNNING_CALL.set(call)  # this thread is the call's own (on_own_thread)
                return job()
        self._running.add(call)
        try:
            with call.scope:
                return await on_own_thread(in_turn)
        finally:
            self._running.discard(call)
        if not call.started:
            raise upstream_failure("This server stopped before the call began; nothing was "
                                   "done. Call again once the server is back.")
        if write and call.sent_write:
            raise upstream_failure("This server stopped before the wiki answered this write, "
                                   "which it may still save. Before calling again, check the page's history "
                                   "(get-page-history) or the file (get-file).")
        raise upstream_failure("This server stopped before the wiki answered; nothing was "
                               "changed. Call again once the server is back.")

    async def stop(self, grace: float) -> None:
        """Takes no more calls and gives those in flight ``grace`` seconds; then each is answered (run
        raises), its thread left behind."""
        import anyio
        self.stopping = True
        if count := len(self._running):
            log.info("Stopping: %d tool call%s in flight get up to %g s to finish",
                     count, "s" * (count > 1), grace)
        with anyio.move_on_after(grace):
            while self._running:
                await anyio.sleep(0.05)
        with self._lock:
            for call in self._running:
                call.scope.cancel()


# ---------------------------------------------------------------------------
# identity.py: People and their tokens: who a bearer token or a signed-in session is, and the accounts each
# person acts through on each wiki.
# ---------------------------------------------------------------------------

#: The shortest bearer token a person may have in MCP_AUTH_TOKENS: a short one can be guessed.
MIN_PERSON_TOKEN_CHARS = 16


@dataclasses.dataclass(frozen=True)
class Person:
    """Someone who signed in to this server (a token of MCP_AUTH_TOKENS, or MCP_AUTH=login). On each
    wiki of ``accounts`` the server acts as them, never as that wiki's configured account."""
    id: str  # stable and not secret: the caller (caller_id) whose reads and idempotency keys are theirs
    name: str  # what they are called: their wiki user name, never a secret
    accounts: Mapping[str, Credentials] = dataclasses.field(default_factory=dict, repr=False)
    signed_in: bool = False  # through the sign-in page (MCP_AUTH=login), not with a token of MCP_AUTH_TOKENS
    #: the sign-in whose account this is (MCP_AUTH=login): each has a wiki session of its own, with
    #: the grants of its bot password, whatever the person's other sign-ins have
    sign_in: str = ""

    @property
    def in_log(self) -> str:
        """How the operator's log names them: one signed in as WIKI:USER, as the sign-in's own lines and
        ``mediawiki-mcp sign-in list|revoke`` do (one user name signed in to two wikis is two people,
        one perhaps with no account on the wiki of the line); one of MCP_AUTH_TOKENS by their name."""
        return self.id if self.signed_in else self.name

    def account_fix(self) -> str:
        return ("sign in again with a working one (from the MCP client, authenticate to this server again)"
                if self.signed_in else "ask this server's operator to change it (MCP_AUTH_TOKENS)")

    def account_elsewhere(self, where: str) -> str:
        """How they get an account on ``where`` (a phrase naming a wiki)."""
        return (f"A sign-in acts on one wiki: to act on {where}, sign in again choosing it" if self.signed_in
                else f"To get one, ask this server's operator to add {where} to their entry (MCP_AUTH_TOKENS)")


#: The wiki clients kept for one person (one per wiki and sign-in), the least recently used dropped.
CLIENTS_PER_PERSON = 8


class People:
    """One client per person, wiki and sign-in, logged in as them (a request's person is resolved
    where it comes in: http_app). ``required``: every request over HTTP must come from a person
    (MCP_AUTH=login); one that does not is refused (person_of)."""

    def __init__(self) -> None:
        self.required = False
        #: each client with the account it logs in as
        self._clients: collections.OrderedDict[tuple[str, str, str], tuple[Credentials, MediaWikiClient]] = (
            collections.OrderedDict())
        self._lock = threading.Lock()

    def client(self, person: Person, wiki: WikiConfig, make: Callable[[WikiConfig], MediaWikiClient]
               ) -> MediaWikiClient:
        """``person``'s client on ``wiki`` for the sign-in they call with: the clients of two of their
        sign-ins never share a wiki session, so each has the grants of its own bot password."""
        account, key = person.accounts[wiki.key], (person.id, wiki.key, person.sign_in)
        with self._lock:
            made, client = self._clients.get(key, (None, None))
            if client is None or made != account:
                client = make(dataclasses.replace(wiki, username=account.username, password=account.password,
                                                  token=account.token))
                self._clients[key] = account, client
                theirs = [other for other in self._clients if other[0] == person.id]
                for dropped in theirs[:-CLIENTS_PER_PERSON]:  # one a call may still use: no close
                    del self._clients[dropped]
            self._clients.move_to_end(key)
            return client

    def forget(self, person_id: str) -> list[MediaWikiClient]:
        """Drops a person's clients (sign-out), returning them so their wiki sessions can be ended."""
        with self._lock:
            gone = [key for key in self._clients if key[0] == person_id]
            return [self._clients.pop(key)[1] for key in gone]


#: The fields of a person in MCP_AUTH_TOKENS; each of their wikis takes those of SECRET_FIELDS.
PERSON_FIELDS = ("name", "token", "tokenSha256", "wikis")


@dataclasses.dataclass(frozen=True)
class TokenTable:
    """The people of MCP_AUTH_TOKENS by the SHA-256 of their bearer tokens (never the tokens)."""
    path: str
    people: Mapping[bytes, Person] = dataclasses.field(repr=False)

    def person(self, token: str) -> Person | None:
        # Looked up by digest: the lookup's timing tells a guesser at most how near their guess's
        # digest is to a real one's, which brings them no nearer a token.
        return self.people.get(token_digest(token))


def token_digest(token: str) -> bytes:
    """How a bearer token, code or CSRF token is kept and compared: a digest that cannot be undone."""
    return hashlib.sha256(token.encode()).digest()


def token_table(path: str, env: Mapping[str, str], wikis: Mapping[str, WikiConfig],
                shared_token: str | None = None) -> TokenTable:
    """Reads MCP_AUTH_TOKENS (docs/people.md). Every mistake is a ConfigError naming the field,
    never showing a secret; ``shared_token`` (MCP_AUTH_TOKEN) may be no person's token."""
    raw = json_object(path)
    if unknown := sorted(set(raw) - {"people"}):
        raise ConfigError(f"{path}: {unknown[0]} is not a field of the token file; it holds people")
    entries = raw.get("people")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: people must be an array of at least one person, such as "
                          '[{"name": "Ana", "token": "${ANA_TOKEN}", "wikis": {"<wiki key>": '
                          '{"username": "Ana@mcp", "password": "${ANA_BOT_PASSWORD}"}}}]')
    people: dict[bytes, Person] = {}
    given = {token_digest(shared_token): "MCP_AUTH_TOKEN"} if shared_token else {}
    names: dict[str, str] = {}
    for index, entry in enumerate(entries):
        where = f"{path}: people[{index}]"
        digest, person = person_from_file(where, entry, env, wikis)
        if digest in given:
            raise ConfigError(f"{where} has the same token as {given[digest]}; each person needs a token "
                              "of their own")
        if person.name.casefold() in names:
            raise ConfigError(f"{where}.name {person.name!r} is also {names[person.name.casefold()]}'s; "
                              "the log names people by it, so each needs a name of their own")
        given[digest] = names[person.name.casefold()] = f"people[{index}]"
        people[digest] = person
    return TokenTable(path, people)


def person_from_file(where: str, entry: Any, env: Mapping[str, str], wikis: Mapping[str, WikiConfig]
                     ) -> tuple[bytes, Person]:
    """One person of the token file: the digest of their token, and who they are on which wikis."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(entry)}")
    if unknown := [name for name in entry if name not in PERSON_FIELDS]:
        raise ConfigError(f"{where}.{unknown[0]} is not a field of a person; they are "
                          f"{', '.join(PERSON_FIELDS)}")
    digest = person_token(where, entry, env)
    accounts = entry.get("wikis")
    if not isinstance(accounts, dict) or not accounts:
        raise ConfigError(f"{where}.wikis must name at least one wiki and the person's account there: "
                          '{"<wiki key>": {"username": "Ana@mcp", "password": "${ANA_BOT_PASSWORD}"}}')
    credentials = {key: account_from_file(f"{where}.wikis.{key}", key, account, env, wikis)
                   for key, account in accounts.items()}
    name = entry.get("name")
    if name is None:  # the wiki user name of the first account, without the bot password's app
        name = next((c.username.partition("@")[0] for c in credentials.values() if c.username), None)
        if name is None:
            raise ConfigError(f"{where}.name is required where no account has a username")
    check_type(f"{where}.name", name, ("string",))
    if not name.strip() or not name.isprintable():
        raise ConfigError(f"{where}.name must be a name the log can show, such as the person's wiki user name")
    person_id = hashlib.sha256(name.strip().encode()).hexdigest()[:16]
    return digest, Person(id=person_id, name=name.strip(), accounts=credentials)


def person_token(where: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> bytes:
    """The SHA-256 of a person's bearer token: given itself (token: text, ${VAR} or an exec
    source), or only as its digest (tokenSha256), so that the file holds no token at all."""
    if ("token" in entry) == ("tokenSha256" in entry):
        raise ConfigError(f"{where} needs either token or tokenSha256 (the token's SHA-256 in hex), "
                          "and only one of them")
    if "tokenSha256" in entry:
        check_type(f"{where}.tokenSha256", entry["tokenSha256"], ("string",))
        hexdigest = substitute(entry["tokenSha256"], env, f"{where}.tokenSha256", True).strip().lower()
        if not re.fullmatch(r"[0-9a-f]{64}", hexdigest):
            raise ConfigError(f"{where}.tokenSha256 must be 64 hexadecimal digits, as sha256sum prints "
                              "them for the token; check it (it is not shown)")
        return bytes.fromhex(hexdigest)
    token = file_credential(entry["token"], env, f"{where}.token", header=True)
    if token is None:
        raise ConfigError(f"{where}.token is empty: give the person's token, or tokenSha256")
    if len(token) < MIN_PERSON_TOKEN_CHARS:
        raise ConfigError(f"{where}.token is shorter than {MIN_PERSON_TOKEN_CHARS} characters, which is "
                          "guessable; make one with: "
                          "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'")
    return token_digest(token)


def account_from_file(where: str, key: str, account: Any, env: Mapping[str, str],
                      wikis: Mapping[str, WikiConfig]) -> Credentials:
    """A person's account on one configured wiki: a bot password of their own, or an OAuth token."""
    if key not in wikis:
        raise ConfigError(f"{where}: {key!r} is not a configured wiki; they are {', '.join(wikis)}")
    if not isinstance(account, dict):
        raise ConfigError(f"{where} must be an object, not {json_kind(account)}")
    if unknown := [name for name in account if name not in SECRET_FIELDS]:
        raise ConfigError(f"{where}.{unknown[0]} is not a field of an account; they are "
                          f"{', '.join(SECRET_FIELDS)}")
    username, password, token = (file_credential(account.get(name), env, f"{where}.{name}", header=name == "token",
                                                 secret=name != "username") for name in SECRET_FIELDS)
    if username and not password or password and not username:
        raise ConfigError(f"{where}.{'password' if username else 'username'} is missing: a bot password "
                          "(Special:BotPasswords) is a username such as Ana@mcp and its password")
    if not (username or token) or username and token:
        raise ConfigError(f"{where} needs either username and password (a bot password of the person's own) "
                          "or token (an OAuth access token of theirs)")
    return Credentials(username, password, token)


#: The key of a request's ASGI scope that carries its person, resolved where it comes in (http_app,
#: SignIns.require_person) and read by every handler (person_of).
PERSON_SCOPE = "mediawiki_mcp.person"


def bearer_token(authorization: str) -> str:
    """The token of an Authorization header ('Bearer <token>'), or '' for none."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


# ---------------------------------------------------------------------------
# state.py: ServerState: the live state one server holds (configuration, clients, stores, people), made once
# by create_server and shared by every call.
# ---------------------------------------------------------------------------

#: Pages one call reads or changes at most: MediaWiki's limit of titles per query.
MAX_PAGES_PER_CALL = 50


#: How long a model's regular expression may run on a page; longer is a pattern that backtracks
#: without end on this text, which would hold the call forever (ServerState.regex_seconds).
REGEX_SECONDS = 5.0


@dataclasses.dataclass
class ServerState:
    """Everything one server instance holds: its configuration, the wikis it serves now with a
    client each, its tools, what the write tools remember, and the tool calls in flight.
    ``stateless``: a replica that keeps no session state (--stateless). add-wiki and remove-wiki
    replace ``wikis`` and ``clients`` under ``lock``, never change them in place, so that a tool
    on another thread always sees a consistent pair."""
    config: Config
    wikis: dict[str, WikiConfig]
    clients: dict[str, MediaWikiClient]
    registry: Registry = REGISTRY
    stateless: bool = False
    reads: ReadLedger = dataclasses.field(default_factory=ReadLedger)
    idempotency: IdempotencyStore = dataclasses.field(default_factory=IdempotencyStore)
    calls: ToolCalls = dataclasses.field(default_factory=ToolCalls)
    client_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    resolve: Callable[[str, int], list[str]] = resolve_addresses  # how the address guard looks names up
    regex_seconds: float = REGEX_SECONDS  # how long a model's regular expression may run on a page
    pages_per_call: int = MAX_PAGES_PER_CALL  # the most pages of a category replace-in-pages takes
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)
    page_locks: weakref.WeakValueDictionary[tuple[str, str], threading.Lock] = dataclasses.field(
        default_factory=weakref.WeakValueDictionary, repr=False)
    people: People = dataclasses.field(default_factory=People)  # who signed in, and their clients
    metrics: Metrics | None = None  # what /metrics counts, while served over HTTP with prometheus-client

    @classmethod
    def from_config(cls, config: Config, registry: Registry = REGISTRY, *, stateless: bool = False,
                    resolve: Callable[[str, int], list[str]] = resolve_addresses,
                    **client_options: Any) -> ServerState:
        clients = {key: wiki.client(config.user_agent, **client_options) for key, wiki in config.wikis.items()}
        shared = open_state_store(config.state_url) if config.state_url else None
        return cls(config=config, wikis=dict(config.wikis), clients=clients, registry=registry,
                   stateless=stateless, client_options=client_options, resolve=resolve,
                   reads=ReadLedger(store=shared, max_bytes=config.read_ledger_max_bytes),
                   idempotency=IdempotencyStore(store=shared))

    def make_client(self, wiki: WikiConfig) -> MediaWikiClient:
        return self.observed(wiki.key, wiki.client(self.config.user_agent, **self.client_options))

    def observed(self, key: str, client: MediaWikiClient) -> MediaWikiClient:
        """``client``, each of its requests timed in /metrics under the wiki ``key`` when metrics are on."""
        if self.metrics is not None:
            client.observe = self.metrics.wiki_request_seconds.labels(key).observe
        return client

    def refused(self, reason: str) -> None:
        """Counts a request refused before any tool saw it (Metrics.refusals), when metrics are on."""
        if self.metrics is not None:
            self.metrics.refusals.labels(reason).inc()

    @property
    def guard(self) -> AddressGuard:
        """The address guard of URLs a model gives (add-wiki, uploads from a URL)."""
        return AddressGuard(self.config.trusted_hosts, self.resolve)

    def page_lock(self, wiki: str, title: str) -> threading.Lock:
        """This page's own lock, the same for every call about it while one holds it. Never
        shared by replicas: it only spaces out this process's own unpinned additions, which
        MediaWiki merges in any order, so that they do not queue up at the wiki's database lock.
        No two pages share one, so an edit waiting on a slow wiki holds up no other page's."""
        with self.lock:
            return self.page_locks.setdefault((wiki, title), threading.Lock())

    def any_writable(self) -> bool:
        return any(not w.read_only for w in self.wikis.values())

    def resolve_wiki(self, wiki: Any) -> str:
        if wiki is None or wiki == "":
            return self.config.default_wiki
        key = check_value(SHARED_PARAMS["wiki"], wiki).removeprefix("mcp://wikis/").strip().rstrip("/")
        if key not in self.wikis:
            raise invalid_input(f"Unknown wiki {wiki!r}. Configured wikis: {', '.join(self.wikis)}.")
        return key

    def entries(self) -> list[tuple[str, WikiConfig, MediaWikiClient]]:
        """Each wiki's key, configuration and client, as one consistent snapshot."""
        with self.lock:
            return [(key, wiki, self.clients[key]) for key, wiki in self.wikis.items()]

    def wiki_and_client(self, key: str) -> tuple[WikiConfig, MediaWikiClient]:
        with self.lock:  # add-wiki and remove-wiki may be changing both on another thread
            wiki, client = self.wikis.get(key), self.clients.get(key)
        if wiki is None or client is None:
            raise invalid_input(f"Unknown wiki {key!r}. Configured wikis: {', '.join(self.wikis)}.")
        return wiki, client

    def add_wiki(self, wiki: WikiConfig, client: MediaWikiClient) -> None:
        with self.lock:
            if wiki.key in self.wikis:
                raise conflict(f"The wiki {wiki.key} is already configured.")
            self.wikis = {**self.wikis, wiki.key: wiki}
            self.clients = {**self.clients, wiki.key: self.observed(wiki.key, client)}

    def remove_wiki(self, key: str) -> WikiConfig:
        with self.lock:
            if key == self.config.default_wiki:
                raise invalid_input(f"{key} is the default wiki, which cannot be removed.")
            removed = self.wikis[key]
            self.wikis = {k: wiki for k, wiki in self.wikis.items() if k != key}
            self.clients = {k: client for k, client in self.clients.items() if k != key}
            return removed


# ---------------------------------------------------------------------------
# dispatch.py: Dispatch: a tools/call resolved to its caller and wiki, checked, run on a worker thread, and its
# answer or error shaped; tools/list as each caller sees it.
# ---------------------------------------------------------------------------

def no_progress(done: float, total: float | None, message: str) -> None:
    """The progress reporter of a call whose client asked for none."""


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who makes a request, resolved once where it comes in (caller_of): ``id``, the scope of what
    the read ledger and idempotency keys vouch for (caller_id); the person, if one signed in (with
    MCP_AUTH=login, always; none: the configured accounts act); their account on each writable
    wiki where they have one (None where its login failed), so that what they are offered asks no
    wiki; and the client that acts for them on each wiki (client)."""
    id: str = ""
    person: Person | None = None
    accounts: tuple[Account | None, ...] = ()

    def offers(self, spec: ToolSpec) -> bool:
        """Whether the caller's accounts allow a tool: for a person, one that writes only where an
        account of theirs has its rights, or its login failed (the call then tells them why, as
        hiding the tool would not)."""
        return (self.person is None or spec.read_only or not spec.scoped
                or any(account is None or all(account.can(r) for r in spec.rights) for account in self.accounts))

    def client(self, state: ServerState, wiki: WikiConfig, configured: MediaWikiClient,
               spec: ToolSpec | None = None) -> MediaWikiClient:
        """The client a call of the caller (of the tool ``spec``, if any) acts through on ``wiki``:
        ``configured`` where no one signed in. A person acts through their own account where they
        have one, never the configured one; elsewhere the configured account reads what anyone may
        read for them, unless the wiki is private; nothing writes, and nothing reads what only an
        account sees (a read tool that needs a right of the account: the watchlist)."""
        person = self.person
        if person is None:
            return configured
        if wiki.key in person.accounts:
            return state.people.client(person, wiki, state.make_client)
        if spec is not None and spec.read_only and spec.rights:
            doing = RIGHTS.get(spec.rights[0], (f"use {spec.name}",))[0]
            raise permission_denied(f"{person.name} has no account of their own on {wiki.key}, so this server "
                                    f"does not {doing} there for them: {spec.name} shows what only an account "
                                    f"sees, and the server's own account is not theirs. "
                                    f"{person.account_elsewhere(wiki.key)}.")
        if spec is not None and spec.name == "whoami":  # says who they are from what the server knows
            return configured
        if wiki.private or spec is not None and not spec.read_only:
            doing = "read the private wiki" if spec is None or spec.read_only else f"use {spec.name} on the wiki"
            raise authentication(f"{person.name} has no account of their own on {wiki.key}, so this server "
                                 f"does not {doing} {wiki.key} for them (never as its own account); nothing was "
                                 f"changed. {person.account_elsewhere('the wiki')}.")
        return configured

    def note_write(self, write: tuple[str, str, Any] | None, outcome: str) -> None:
        """The operator's record of a write a person made: the tool, wiki, page and who; no secret."""
        if self.person is not None and write is not None:
            name, key, page = write
            log.info("write by %s: %s on %s%s: %s", logged(self.person.in_log), name, key,
                     f", page {page!r}" if page else "", outcome)

    def login_failed(self, key: str) -> tuple[str, ...]:
        """What a person is told, after the wiki's error, when their own login to ``key`` failed."""
        person = self.person
        if person is None or key not in person.accounts:
            return ()
        return ((f"Nothing was done as another account. {person.name} needs a working bot password of their own "
                 f"here: {person.account_fix()}."),)


#: The caller where no one signs in, within this process: the configured accounts act.
NO_PERSON = Caller()


@dataclasses.dataclass
class ToolContext:
    """What a tool function gets besides its arguments:

    - ``client``: the wiki's client. The tool's first use of it checks the rights of @tool: after
      the tool's own checks of its arguments, before it asks the wiki anything, so a call the
      account cannot make changes nothing (and asks no confirmation).
    - ``wiki``: the wiki's configuration; ``site``: its site info, learnt once per wiki.
    - ``continue_from``, ``dry_run``, ``watch``, ``confirmed``: those arguments (@tool's flags).
    - ``asks``: the person confirms this call's guarded actions (run_guarded); ``picked``: the
      choices of its Preview they picked; ``unconfirmable``: why they cannot from this client, and
      who could (unconfirmable()), so that a dry run does not send the model to a refused call.
    - ``budget``: the bytes of content one answer may carry (MCP_CONTENT_MAX_BYTES).
    - ``progress(done, total, message)``: MCP progress of a long call, sent only where the client
      asked for it, never failing the call.
    - ``state``: the server's; ``caller``: who calls (Caller; ``person``, theirs); ``session``: their
      MCP session, if any."""
    _client: MediaWikiClient
    wiki: WikiConfig
    state: ServerState
    progress: Callable[[float, float | None, str], None] = no_progress
    rights: tuple[str, ...] = ()  # the rights still to check
    continue_from: str | None = None
    dry_run: bool = False
    watch: str | None = None
    confirmed: bool = False
    asks: bool = False
    picked: frozenset[str] | None = None
    unconfirmable: str = ""
    caller: Caller = NO_PERSON
    session: Session | None = None

    @property
    def client(self) -> MediaWikiClient:
        rights, self.rights = self.rights, ()
        for right in rights:
            if why := self._client.cannot(right):
                instead = WITHOUT_RIGHT.get(right, NEXT_STEP["permission_denied"])
                raise permission_denied(f"{why} Nothing was changed. {instead}")
        return self._client

    @property
    def person(self) -> Person | None:
        return self.caller.person

    @property
    def budget(self) -> int:
        return self.state.config.content_max_bytes

    @property
    def reads(self) -> ClientReads:
        return self.state.reads.of(self.wiki.key, self.caller.id, lambda: self.site.syntax)

    @property
    def site(self) -> SiteInfo:
        return self._client.site


@dataclasses.dataclass(eq=False)
class Session:
    """What the server keeps of one MCP session while its connection lasts (session_of): the
    toolsets it loaded (load-toolset) on top of the operator's."""
    loaded: frozenset[str] = frozenset()  # replaced whole, as tool threads and the loop share it


def session_of(ctx: Any) -> Session | None:
    """The Session of a request's MCP session (caller_id); None where no requests share one
    (stateless HTTP, the 2026 protocol)."""
    if not caller_id(ctx).startswith(("session:", "connection:")):
        return None
    return connection_of(ctx).state.setdefault("mediawiki-mcp session", Session())


def connection_of(ctx: Any) -> Any:
    """The SDK's Connection a request came on: its session id, its state kept across requests, its
    standalone channel. The one private access to it: handlers get a ServerRequestContext, whose
    ServerSession keeps it as ``_connection`` (mcp/server/session.py:55); the public
    Context.connection (mcp/server/context.py:87) is not what ServerRunner hands handlers yet (:62)."""
    return ctx.session._connection


def toolsets_of(state: ServerState, session: Session | None) -> frozenset[str]:
    return state.config.toolsets | (session.loaded if session else frozenset())


def unlisted_arguments(state: ServerState, session: Session | None = None) -> set[str]:
    """The shared arguments tools/list leaves out: ``wiki`` with one wiki, and ``watch`` without
    the toolset of the watchlist."""
    return {name for name, unused in (("wiki", len(state.wikis) < 2),
                                      ("watch", "changes" not in toolsets_of(state, session))) if unused}


def offered_tools(state: ServerState, session: Session | None = None, caller: Caller = NO_PERSON) -> list[ToolSpec]:
    """The tools offered to a caller in a session: those of its toolsets, a tool that writes only
    where a wiki is writable (and the caller's accounts allow it: Caller.offers), and only while its
    ``offered`` holds. Asks no wiki."""
    writable, toolsets = state.any_writable(), toolsets_of(state, session)
    return [spec for spec in state.registry.tools.values()
            if spec.toolset in toolsets and (spec.read_only or not spec.scoped or writable)
            and (spec.offered is None or spec.offered(state)) and (session or not spec.in_session)
            and caller.offers(spec)]


def listed_tools(state: ServerState, session: Session | None = None, caller: Caller = NO_PERSON,
                 confirmer: Confirmer = "model") -> list[Any]:
    """tools/list's answer; without ``confirm`` where the model does not confirm guarded actions."""
    import mcp_types as mt

    offered, unlisted = offered_tools(state, session, caller), unlisted_arguments(state, session)
    unlisted |= {"confirm"} if confirmer != "model" else set()
    absent = state.registry.tools.keys() - {spec.name for spec in offered}
    return [mt.Tool(name=spec.name, title=spec.title,
                    description=spec.description(state.config, absent, spec.live(state, session, caller)
                                                 if spec.live else "", confirmer),
                    input_schema=spec.schema(unlisted),
                    annotations=mt.ToolAnnotations(
                        read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                        idempotent_hint=spec.idempotent, open_world_hint=spec.open_world))
            for spec in offered]


def known_account(client: MediaWikiClient) -> Account | None:
    """The account a client acts as (a login, the first time); None where its login fails."""
    try:
        return client.account
    except WikiError:
        return None


def writing_clients(state: ServerState, person: Person) -> list[MediaWikiClient]:
    """A person's client on each writable wiki where they have an account."""
    return [state.people.client(person, wiki, state.make_client) for key, wiki, _ in state.entries()
            if key in person.accounts and not wiki.read_only]


def require_extension(state: ServerState, spec: ToolSpec, key: str, client: MediaWikiClient) -> None:
    """Refuses a tool on a wiki without the extension it needs, if any, naming the wikis that have it."""
    needed = (spec.needs_extension or "").lower()
    if not needed or needed in client.extensions:
        return
    others = []
    for other, other_client in state.clients.items():
        try:
            if other != key and needed in other_client.extensions:
                others.append(other)
        except WikiError:  # an unreachable wiki cannot say; leave it out
            continue
    raise invalid_input(f"{spec.name} needs the {spec.needs_extension} extension, which the wiki {key} "
                        "does not have. " + (f"Wikis that have it: {', '.join(others)}; pass one as wiki."
                                             if others else "No configured wiki has it."))


def run_tool(state: ServerState, name: str, arguments: Mapping[str, Any] | None,
             progress: Callable[[float, float | None, str], None] = no_progress,
             caller: Caller = NO_PERSON, session: Session | None = None,
             person_confirms: bool | Accepted = False, unconfirmable: str = "") -> tuple[list[Any], bool]:
    """Runs one tool call (on a worker thread) for ``caller`` in ``session``, as the caller's
    person where one signed in: content blocks and is_error; never raises, so nothing but
    ``category: message`` reaches the model. ``person_confirms`` (run_guarded): the model's
    confirm counts for nothing, and a guarded action's Preview comes back as the one block; or
    what the person Accepted, done now unless it changed since (as_shown). ``unconfirmable``: why
    the person cannot confirm from this client (ToolContext.unconfirmable)."""
    accepted = person_confirms if isinstance(person_confirms, Accepted) else None
    spec = state.registry.tools.get(name)
    offered = offered_tools(state, session, caller)
    write = None  # what a write is about, for the operator's log of a person's writes
    source = ""  # the wiki an error comes from: none until the arguments are good
    try:
        if spec is None:
            raise invalid_input(f"Unknown tool {name!r}.{closest_tool(name, offered)}")
        if spec not in offered:
            raise unoffered_error(state, spec, session, caller)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise invalid_input("Tool arguments must be an object.")
        arguments = dict(arguments or {})
        key = state.resolve_wiki(arguments.get("wiki") if spec.scoped else None)
        values = check_arguments(spec, arguments)
        source = key if spec.scoped else ""
        wiki, client = state.wiki_and_client(key)
        if spec.scoped and not spec.read_only and wiki.read_only:
            raise permission_denied(f"The wiki {key} is configured read-only; the "
                                    "operator decides this, and no retry by the model changes it.")
        if spec.scoped:
            client = caller.client(state, wiki, client, spec)
            write = None if spec.read_only or spec.dry_run and values["dryRun"] else (
                name, key, values.get("newTitle") or values.get("title") or values.get("fromTitle"))
        require_extension(state, spec, key, client)
        if spec.idempotency_key:  # a write that the store keeps track of: its keys, what it read and saved
            state.reads.store.require()  # so none goes on while the store is down, with a key or not
        watch = values["watch"] if spec.watch else None
        ctx = ToolContext(client, wiki, state, progress,
                          spec.rights + (("editmywatchlist",) if watch in ("watch", "unwatch") else ()),
                          continue_from=values["continueFrom"] if spec.continue_from else None,
                          dry_run=spec.dry_run and values["dryRun"], watch=watch,
                          confirmed=spec.guarded and values["confirm"] and not person_confirms,
                          asks=bool(person_confirms), picked=accepted.picked if accepted else None,
                          unconfirmable=unconfirmable, caller=caller, session=session)
        own = {arg: values[arg] for arg in spec.params}

        def act() -> list[Any]:
            return as_blocks(as_shown(spec, ctx, own, accepted.would) if accepted else spec.fn(ctx, **own))
        idempotency_key = values["idempotencyKey"] if spec.idempotency_key and not ctx.dry_run else None
        result = once_per_key(state, spec, key, ctx, own, idempotency_key, act) if idempotency_key else act()
        result = naming_the_wiki(state, key, as_blocks(result)) if spec.scoped else result
    except Preview as preview:
        if person_confirms:
            account = known_account(client)
            preview.wiki, preview.account = key, account.name if account else ""
            return [preview], True
        return [str(preview.answer(name))], True
    except WikiError as error:
        caller.note_write(write, error.category)
        error.wiki = source if len(state.wikis) > 1 else ""
        error.notes = unoffered_notes(error.message, state, {s.name for s in offered} | {name}, session)
        if error.category == "authentication":
            error.notes += caller.login_failed(source)
        return [str(error)], True
    except Exception as exc:  # a bug here must still answer in the contract's shape
        log.exception("tool %s failed", name)
        return [str(WikiError("upstream_failure", f"{name} failed unexpectedly ({type(exc).__name__}); the "
                              "server log has the details."))], True
    caller.note_write(write, "done")
    return as_blocks(result), False


def unoffered_error(state: ServerState, spec: ToolSpec, session: Session | None, caller: Caller) -> WikiError:
    """Why a tool the caller is not offered is refused: a person's missing account or right, where
    the configured accounts would be offered it; else its toolset (tools/list lists those offered)."""
    name, person = spec.name, caller.person
    if person and spec in offered_tools(state, session):
        if not caller.accounts:  # no right is missing: they have nowhere to write as themselves
            writable = " or ".join(key for key, wiki, _ in state.entries() if not wiki.read_only)
            return authentication(f"{person.name} has no account of their own on a wiki this server writes to, "
                                  f"so it does not use {name} for them (never as its own account); nothing "
                                  f"was changed. {person.account_elsewhere(writable)}.")
        grants = sorted({grant for client in writing_clients(state, person) if "@" in (client.username or "")
                         for right in spec.rights if (grant := client.missing_grant(right))})
        if grants:  # their own to give: a bot password has the grants its owner ticked
            named = " and ".join(repr(grant) for grant in grants)
            again = ("then sign in again from the MCP client" if person.signed_in
                     else "then ask this server's operator to restart it, which logs in again")
            return permission_denied(
                f"The tool {name} is not offered to {person.name}: their bot password lacks the grant {named}, "
                f"which their account could use. They can tick it at Special:BotPasswords on the wiki, {again}; "
                "no retry by the model changes it.")
        return permission_denied(
            f"The tool {name} is not offered to {person.name}: their account lacks the right "
            f"{' and '.join(repr(r) for r in spec.rights)} on every wiki where they may write. Only the "
            "wiki's administrators can give it; no retry by the model changes it.")
    final = "" if spec.toolset in loadable_now(state, session) else "; no retry by the model changes it"
    return permission_denied(f"The tool {name} is not offered with this server's configuration"
                             f"{toolset_hint(state, spec, session)}{final}.")


def once_per_key(state: ServerState, spec: ToolSpec, key: str, ctx: ToolContext, own: Mapping[str, Any],
                 idempotency_key: str, act: Callable[[], list[Any]]) -> list[Any]:
    """``act()`` run once per idempotencyKey of the caller on wiki ``key``; a repeat answers the first
    result, marked. A question to the person and its answer are one confirmed call."""
    asked = {**own, "confirm": ctx.confirmed or ctx.asks} if spec.guarded else own
    fingerprint = json.dumps([spec.name, key, asked], sort_keys=True, ensure_ascii=False)
    result, repeated = state.idempotency.run(idempotency_key, fingerprint, act, key, ctx.caller.id)
    return [REPEAT_NOTE + result[0], *result[1:]] if repeated else result


def note_tool_call(state: ServerState, ctx: Any, person: Person | None, tool: str, wiki: str,
                   blocks: list[Any], is_error: bool) -> None:
    """The operator's line of one tool call (INFO) and its count in /metrics: who, which tool on which
    wiki, how it ended (an error's category, or done), from which address. Never the arguments or
    the answer, which hold a page's text."""
    outcome = "done"
    if is_error:
        category = str(blocks[0]).partition(":")[0] if blocks else ""
        outcome = category if category in typing.get_args(ErrorCategory) else "error"
    client = ctx.request.client if ctx.request is not None else None
    log.info("tool call: person=%s tool=%s wiki=%s outcome=%s client=%s", logged(person.in_log) if person else "-",
             logged(tool), wiki or "-", outcome, client.host if client else "-")
    if state.metrics is not None:  # an unknown tool's name is the model's, and would make a series each
        state.metrics.tool_calls.labels(tool if tool in state.registry.tools else "unknown", outcome).inc()


@dataclasses.dataclass(frozen=True)
class Accepted:
    """What the person accepted (run_guarded): Preview.would, and the choices picked (None: it had none)."""
    would: str
    picked: frozenset[str] | None = None


def as_shown(spec: ToolSpec, ctx: ToolContext, own: Mapping[str, Any], shown: str) -> Any:
    """Runs a guarded call the person accepted having been shown that it would do ``shown``:
    unconfirmed first, where anything else it would do now is a conflict; then confirmed. A call
    that no longer needs confirming has run by then."""
    try:
        return spec.fn(ctx, **own)
    except Preview as preview:
        if preview.would != shown:
            raise conflict(f"What {spec.name} would do changed while the person was being asked, so it was "
                           f"not done: they accepted that it would {shown} Now it would {preview.would} "
                           f"{preview.nothing} Call {spec.name} again to ask them about this.") from None
    ctx.confirmed = True
    return spec.fn(ctx, **own)


def naming_the_wiki(state: ServerState, key: str, blocks: list[Any]) -> list[Any]:
    """An answer whose first line names its wiki, when there are several; a block that is not text
    (an image) gets a text block of its own before it."""
    line = f"Wiki: {key}"
    if len(state.wikis) < 2 or blocks and isinstance(blocks[0], str) and blocks[0].startswith(line + "\n"):
        return blocks
    if blocks and isinstance(blocks[0], str):
        return [f"{line}\n{blocks[0]}", *blocks[1:]]
    return [line, *blocks]


def closest_tool(name: str, offered: Iterable[ToolSpec]) -> str:
    """A guess at the tool an unknown name means, short: the list itself is tools/list's."""
    import difflib  # seldom needed: left out of the start
    near = difflib.get_close_matches(name, [spec.name for spec in offered], n=1)
    return f" Did you mean {near[0]}?" if near else " tools/list names the tools offered."


async def caller_of(state: ServerState, ctx: Any) -> Caller:
    """The Caller of a request (a ServerRequestContext): its person as resolved where the request
    came in, with their accounts on the writable wikis (each logged in to once, off the event loop);
    else its session or token."""
    person = person_of(state, ctx)
    if person is None:
        return Caller(caller_id(ctx))
    clients = writing_clients(state, person)
    if all(client.account_known for client in clients):  # the usual case, which needs no thread
        accounts = tuple(map(known_account, clients))
    else:
        accounts = await on_own_thread(lambda: tuple(map(known_account, clients)))
    return Caller(caller_id(ctx, person), person, accounts)


def person_of(state: ServerState, ctx: Any) -> Person | None:
    """The person a request comes from, resolved once where it came in (http_app; with
    MCP_AUTH=login, SignIns.require_person) and carried in its scope; None where no one signs in.
    Where everyone must (People.required), a request without a person is refused here, never
    served as the configured accounts."""
    import mcp_types as mt
    from mcp.shared.exceptions import MCPError

    person = ctx.request.scope.get(PERSON_SCOPE) if ctx.request is not None else None
    if person is None and state.people.required:
        raise MCPError(code=mt.INVALID_REQUEST, message="This request comes from no signed-in person; sign in "
                       "again.")
    return person


def caller_id(ctx: Any, person: Person | None = None) -> str:
    """Who makes a tools/call, the scope of what the read ledger and idempotency keys vouch for:
    the person, whichever session they call from; else the MCP session (Streamable HTTP's, or a
    handshake-era connection that serves several calls); over HTTP without one, every client
    alike (SHARED_CALLER, told apart by the bearer token's hash alone); otherwise (a connection
    per call: the 2026 protocol over stdio or in memory) this whole process (''), whose one client
    is the process that started it."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if person is not None:
        return f"person:{person.id}"
    connection = connection_of(ctx)
    if connection.session_id:
        return f"session:{connection.session_id}"
    if ctx.request is not None:  # HTTP without a session: nothing tells one client from another
        token = bearer_token(ctx.request.headers.get("authorization", ""))
        return f"{SHARED_CALLER}:{token_digest(token).hex()[:16]}" if token else SHARED_CALLER
    if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return ""
    return "connection:" + connection.state.setdefault("mediawiki-mcp caller", secrets.token_hex(8))


REPEAT_NOTE = ("Repeat: a call with this idempotencyKey and these arguments already ran; nothing was "
               "written again. Its result:\n")


def unoffered_notes(message: str, state: ServerState, listed: Collection[str],
                    session: Session | None = None) -> tuple[str, ...]:
    """A note for each tool an error's message names that is not ``listed`` (the tools offered and
    the one called), rather than send the model to it."""
    named = set(re.findall(r"[\w-]+", message)) - set(listed)
    return tuple(f"{spec.name} is not offered by this server{toolset_hint(state, spec, session)}."
                 for spec in state.registry.tools.values() if spec.name in named)


def toolset_hint(state: ServerState, spec: ToolSpec, session: Session | None = None) -> str:
    """Why a tool is not offered, when it is its toolset's doing, and how it comes."""
    if spec.toolset in toolsets_of(state, session):
        return ""
    if spec.toolset in loadable_now(state, session):
        return f" (it is in the toolset {spec.toolset}, which load-toolset loads)"
    return f" (it is in the toolset {spec.toolset}, which the operator can add to MCP_TOOLSETS)"


def as_blocks(result: list[Any] | str) -> list[Any]:
    return result if isinstance(result, list) else [result]


def loadable_now(state: ServerState, session: Session | None) -> list[str]:
    """The toolsets a session may still load (load-toolset), in TOOLSETS' order: those the
    operator allows (MCP_LOADABLE_TOOLSETS) that it lacks, where the loader is offered to it."""
    if not any(spec.name == "load-toolset" for spec in offered_tools(state, session)):
        return []
    have = toolsets_of(state, session)
    return [name for name in TOOLSETS if name in state.config.loadable_toolsets and name not in have]


# ---------------------------------------------------------------------------
# prompts.py: Prompts: the workflows people repeat, as user messages that walk a model through this server's
# tools, and completion of their arguments.
# ---------------------------------------------------------------------------

# A prompt is a user message that walks the model through a job with this server's tools
# (clients show prompts as commands). Each names the tools it uses, and is listed only while
# all of them are offered to the session, so no prompt sends the model to a tool it lacks.

@dataclasses.dataclass(frozen=True)
class PromptArg:
    """An argument of a prompt. ``completes``: what completion/complete offers for it (a
    ``page`` or ``category`` of the wiki, by prefix; a configured ``wiki`` key), None: nothing."""
    name: str
    description: str
    required: bool = True
    completes: str | None = None


@dataclasses.dataclass(frozen=True)
class Prompt:
    """A prompt: its text is the user message, its arguments in braces (``{title}``) and
    ``{where}`` for the wiki; ``tools``: every tool the text names."""
    name: str
    title: str
    description: str
    arguments: tuple[PromptArg, ...]
    tools: tuple[str, ...]
    text: str


TITLE_PROMPT_ARG = PromptArg("title", "Page title.", completes="page")


#: Listed only where there are several wikis, as tools list their wiki argument.
WIKI_PROMPT_ARG = PromptArg("wiki", "Wiki key; omitted: the default wiki.", required=False, completes="wiki")


PROMPTS = {prompt.name: prompt for prompt in (
    Prompt("review-recent-changes", "Review recent changes",
           "Patrols what changed since a time: flags likely vandalism and suggests undoing it.",
           (PromptArg("since", "From when: an ISO 8601 time, 2 hours ago, yesterday."),),
           ("get-recent-changes", "compare-pages", "undo-edit"),
           "Review the changes made {where} since {since}, as a patroller would.\n"
           "1. Call get-recent-changes with start={since_arg} to list them; follow its continueFrom marker "
           "until the list ends.\n"
           "2. For each change that looks doubtful (an anonymous or new account, a large removal, blanking, "
           "insults, spam links, an odd summary), call compare-pages with toRevision (its revision ID) and "
           "fromRevision (the revision before it) to read the diff.\n"
           "3. Flag likely vandalism and say why. For each, suggest undo-edit with its revision ID, but undo "
           "nothing before I confirm.\n"
           "Answer with a table: page | revision ID | user | verdict (fine, doubtful, vandalism) | suggested "
           "action."),
    Prompt("fix-section", "Fix a section",
           "Reads a page's outline and one section, then proposes a corrected section as a dry-run edit.",
           (TITLE_PROMPT_ARG, PromptArg("section", "Section number or heading.")),
           ("get-page-sections", "get-page", "update-page"),
           "Help me fix the section {section} of the page {title_arg} {where}.\n"
           "1. Call get-page-sections with title={title_arg} to read the page's outline and find that section.\n"
           "2. Call get-page with title={title_arg} and its section to read the section's wikitext whole.\n"
           "3. Say what is wrong with it (facts, wording, formatting, broken markup, claims without a "
           "reference) and write the corrected wikitext.\n"
           "4. Call update-page with title={title_arg}, that section, the corrected text as source and "
           "dryRun=true, and show me the diff. Save it (dryRun=false, with an edit summary) only after I "
           "confirm."),
    Prompt("summarise-talk-page", "Summarise a talk page",
           "Summarises a talk page: its topics, who said what, and the questions still open.",
           (PromptArg("title", "The talk page, or the page it discusses.", completes="page"),),
           ("get-page-sections", "get-page"),
           "Summarise the talk page of {title_arg} {where} (the page itself if it is a talk page, else its "
           "talk page: Talk:, User talk:, and so on).\n"
           "1. Call get-page-sections with the talk page's title to list its topics.\n"
           "2. Call get-page with that title (a section at a time when the page is long) to read them.\n"
           "3. For each topic: what it is about, who said what (by their signatures), what was agreed, and "
           "what is still open.\n"
           "End with the open questions that need an answer, and who asked them."),
    Prompt("check-references", "Check a page's references",
           "Checks a page's references: incomplete or duplicated ones, and claims that lack one.",
           (TITLE_PROMPT_ARG,),
           ("find-in-page", "get-page"),
           "Check the references of the page {title_arg} {where}.\n"
           "1. Call find-in-page with title={title_arg} and find=\"<ref\" to locate every reference, then "
           "get-page with title={title_arg} to read the text they support.\n"
           "2. For each reference: is it complete (author or publisher, title, date, a URL where there is "
           "one), is it a duplicate that should be one named reference, is it still in the right place? "
           "Note each claim that needs a reference and has none.\n"
           "3. List the problems as: section | reference or claim | problem | fix, and propose the "
           "corrected wikitext. Change nothing on the wiki."),
    Prompt("survey-category", "Survey a category",
           "Reads a category's members and finds those that look out of place in it.",
           (PromptArg("category", "Category name, with or without its prefix.", completes="category"),),
           ("get-category-members", "get-pages"),
           "Survey the category {category_arg} {where}.\n"
           "1. Call get-category-members with category={category_arg}; follow its continueFrom marker until "
           "the list ends.\n"
           "2. Call get-pages with up to 50 of its pages at a time to read their leads.\n"
           "3. Say what the category is for, list the pages that look out of place in it (and why), and the "
           "subcategories that overlap."),
)}


def offered_prompts(state: ServerState, session: Session | None = None) -> list[Prompt]:
    """The prompts listed to a session: those whose every tool it is offered."""
    return prompts_using(spec.name for spec in offered_tools(state, session))


def prompts_using(tools: Iterable[str]) -> list[Prompt]:
    """The prompts whose every tool is among ``tools``."""
    offered = set(tools)
    return [prompt for prompt in PROMPTS.values() if offered.issuperset(prompt.tools)]


def prompt_arguments(state: ServerState, prompt: Prompt) -> tuple[PromptArg, ...]:
    """A prompt's arguments as listed: ``wiki`` too where there are several wikis."""
    return prompt.arguments + ((WIKI_PROMPT_ARG,) if len(state.wikis) > 1 else ())


def listed_prompt(state: ServerState, name: str, session: Session | None) -> Prompt:
    """The prompt of that name, refused (invalid_input) unless it is listed to the session."""
    listed = offered_prompts(state, session)
    prompt = next((p for p in listed if p.name == name), None)
    if prompt is None:
        names = ", ".join(p.name for p in listed) or "none"
        why = "is not offered with this server's configuration" if name in PROMPTS else "does not exist"
        raise invalid_input(f"The prompt {name!r} {why}; the prompts listed are: {names}.")
    return prompt


#: The longest value a prompt's argument takes (a title is at most 255 bytes).
PROMPT_ARG_MAX_CHARS = 500


def prompt_text(state: ServerState, name: str, arguments: Mapping[str, str] | None,
                session: Session | None = None) -> tuple[Prompt, str]:
    """A listed prompt and its user message, the arguments checked and filled in."""
    prompt = listed_prompt(state, name, session)
    accepted = prompt_arguments(state, prompt)
    given = {k: v.strip() for k, v in (arguments or {}).items()}
    if unknown := sorted(given.keys() - {a.name for a in accepted}):
        raise invalid_input(f"The prompt {name} takes no argument {', '.join(map(repr, unknown))}; its "
                            f"arguments: {', '.join(a.name for a in accepted)}.")
    if missing := [a.name for a in accepted if a.required and not given.get(a.name)]:
        raise invalid_input(f"The prompt {name} needs {', '.join(missing)}.")
    # a value goes into the message as it is: a line break would start steps of its own
    if odd := [k for k, v in given.items()
               if len(v) > PROMPT_ARG_MAX_CHARS or re.search(r"[\x00-\x1f\x7f]", v)]:
        raise invalid_input(f"The prompt {name}'s {', '.join(odd)} must be one line of at most "
                            f"{PROMPT_ARG_MAX_CHARS} characters.")
    if "since" in given:
        wiki_timestamp(given["since"], "since")  # refused here as get-recent-changes would refuse it
    key = state.resolve_wiki(given.get("wiki"))
    where = f"on the wiki {key}" + (f" (pass wiki={json.dumps(key)} to every tool)" if len(state.wikis) > 1
                                    else "")
    quoted = {f"{k}_arg": json.dumps(v, ensure_ascii=False) for k, v in given.items()}
    return prompt, prompt.text.format_map({**given, **quoted, "where": where})


#: The most values one completion answers with (the MCP limit).
COMPLETION_MAX_VALUES = 100


def completion_values(state: ServerState, kind: str | None, value: str, key: str,
                      caller: Caller = NO_PERSON) -> tuple[list[str], bool]:
    """The values completion/complete offers for an argument that ``kind`` names (PromptArg's
    ``completes``), beginning with ``value``, and whether there are more: wiki keys from the
    configuration, pages and categories from one prefix search on the wiki ``key`` (the one
    the prompt's wiki argument names, else the default), as ``caller`` reads it."""
    if kind == "wiki":
        keys = [key for key in state.wikis if key.startswith(value)]
        return keys[:COMPLETION_MAX_VALUES], len(keys) > COMPLETION_MAX_VALUES
    if kind not in ("page", "category"):
        return [], False
    wiki, client = state.wiki_and_client(key)
    client = caller.client(state, wiki, client)
    namespace = client.site.namespace_of(value)
    prefix = value.partition(":")[2] if namespace == 14 else value
    if kind == "category":
        query = {"list": "allcategories", "acprefix": prefix.lstrip(), "aclimit": COMPLETION_MAX_VALUES}
    elif not (value.partition(":")[2] if namespace else value).strip():
        # nothing typed yet, or a namespace alone, where the search finds nothing: its first pages
        query = {"list": "allpages", "apnamespace": namespace, "aplimit": COMPLETION_MAX_VALUES}
    else:
        query = {"list": "prefixsearch", "pssearch": value, "pslimit": COMPLETION_MAX_VALUES}
    data = client.get({"action": "query", **query})
    found = data.get("query", {}).get(query["list"]) or []
    lead = value[:len(value) - len(prefix)]  # "Category:" when the value has it, as the values then do
    values = [lead + c.get("category", "") if kind == "category" else c["title"] for c in found]
    return values, "continue" in data


# ---------------------------------------------------------------------------
# confirm.py: The person's confirmation: a destructive action asks the person (elicitation) before it runs,
# and reports progress while it waits.
# ---------------------------------------------------------------------------

#: While the person decides, the call reports progress this often, so that clients keep waiting.
CONFIRM_PROGRESS_SECONDS = 10.0


class CallProgress:
    """The progress a tools/call reports, kept rising across the stages of a guarded call (the
    preview, the wait for the person, the confirmed run, each counting from 0), as the
    specification requires: each stage counts on from the last, and a report that would not rise
    is left out."""

    def __init__(self, ctx: Any) -> None:
        import asyncio
        self.ctx, self.stage_start, self.last = ctx, 0.0, -1.0
        self.loop = asyncio.get_running_loop()

    def next_stage(self) -> None:
        self.stage_start = max(self.last, 0.0)

    async def report(self, done: float, total: float | None, message: str) -> None:
        value = self.stage_start + done
        if value <= self.last:
            return
        self.last = value
        until = None if total is None else self.stage_start + total
        await self.ctx.session.report_progress(value, until, message)

    def from_thread(self, done: float, total: float | None, message: str) -> None:
        """ToolContext.progress: a report carried onto the event loop, where the request's session
        lives, and waited for; one that cannot be sent is dropped, as progress is advisory."""
        import asyncio
        try:
            asyncio.run_coroutine_threadsafe(self.report(done, total, message), self.loop).result()
        except Exception:
            log.debug("could not report progress", exc_info=True)


async def run_guarded(state: ServerState, ctx: Any, name: str, job: Callable[..., tuple[list[Any], bool]],
                      wiki: str, write: bool) -> tuple[list[Any], bool]:
    """Runs a tools/call (``job``: run_tool) in the wiki's turn, reporting its progress. Where the
    person confirms, a guarded tool's preview is put to them outside the turn, as their minutes must
    not hold the wiki, and only their yes runs the call again, pinned to what they saw."""
    spec = state.registry.tools.get(name)
    person = bool(spec and (spec.guarded or spec.asks)) and person_confirms(state, ctx)
    # a preview must not send the model to a call that is refused: it says why, and who can confirm
    refused = unconfirmable(state, ctx) if person and not can_ask(ctx) else ""
    progress = CallProgress(ctx)
    job = functools.partial(job, progress=progress.from_thread)
    blocks, is_error = await state.calls.run(wiki, functools.partial(job, person_confirms=person,
                                                                     unconfirmable=refused), write=write)
    if not (blocks and isinstance(blocks[0], Preview)):
        return blocks, is_error
    preview = blocks[0]
    progress.next_stage()
    answer = (await ask_person(state, ctx, name, preview, progress) if can_ask(ctx) else permission_denied(
        f"{preview.nothing} {name} would {preview.would} {refused} No retry by the model changes this."))
    if isinstance(answer, WikiError):
        answer.wiki = preview.wiki if len(state.wikis) > 1 else ""
        return [str(answer)], True
    progress.next_stage()
    return await state.calls.run(wiki, functools.partial(job, person_confirms=answer), write=write)


def person_confirms(state: ServerState, ctx: Any) -> bool:
    """Whether the person, not the model's confirm=true, confirms guarded actions (MCP_CONFIRM)."""
    return state.config.confirm == "person" or state.config.confirm == "auto" and can_ask(ctx)


def confirmer(state: ServerState, ctx: Any) -> Confirmer:
    """Who confirms a request's guarded actions, as its tools/list describes them."""
    if not person_confirms(state, ctx):
        return "model"
    return "person" if can_ask(ctx) else "nobody"


def can_ask(ctx: Any) -> bool:
    """Whether the person behind a tools/call can be asked (elicitation/create) while it waits: the
    client declared form elicitation, and the connection carries a request back (not stateless
    HTTP, where the answer would reach another transport, nor the 2026 protocol)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    stateful = ctx.request is None or bool(connection_of(ctx).session_id)
    return (asks_in_forms(ctx) and stateful and ctx.session.can_send_request
            and ctx.session.protocol_version not in MODERN_PROTOCOL_VERSIONS)


def asks_in_forms(ctx: Any) -> bool:
    """Whether a request's client declared form elicitation (an empty one, as in 2025-06-18, means forms)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


#: The question's one field: the specification allows only flat fields of primitive types.
CONFIRM_SCHEMA = {"type": "object", "required": ["allow"], "properties": {"allow": {
    "type": "boolean", "title": "Allow it", "default": False,
    "description": "Yes does it; no, declining or no answer does nothing."}}}


def question_schema(preview: Preview) -> dict[str, Any]:
    """The question's fields: allow or not, or a yes or no for each choice (``choice1``, ...)."""
    if not preview.choices:
        return CONFIRM_SCHEMA
    return {"type": "object", "properties": {
        f"choice{number}": {"type": "boolean", "title": choice, "default": True}
        for number, choice in enumerate(preview.choices, 1)}}


async def ask_person(state: ServerState, ctx: Any, name: str, preview: Preview,
                     progress: CallProgress) -> Accepted | WikiError:
    """Puts a guarded action's preview to the person and waits, reporting progress so that the
    client keeps waiting for the call: what they accepted, else the error saying why nothing was
    done. No answer within MCP_CONFIRM_TIMEOUT_SECONDS is a decline, as is picking no choice."""
    import anyio
    from mcp.shared.exceptions import MCPError

    timeout = state.config.confirm_timeout_seconds
    question = "\n".join(line for line in (
        f"{name} would {preview.would}", f"Wiki: {preview.wiki}",
        f"Account: {preview.account}" if preview.account else "",
        "Pick what to do; nothing else is done." if preview.choices else "Nothing is done unless you allow it.")
        if line)

    async def keep_waiting() -> None:
        start = anyio.current_time()
        while True:
            try:
                await progress.report(anyio.current_time() - start, timeout,
                                      "Waiting for the person to answer in the client")
            except Exception:  # advisory, as in CallProgress.from_thread
                log.debug("could not report progress", exc_info=True)
            await anyio.sleep(CONFIRM_PROGRESS_SECONDS)

    action = f"to let {name} {preview.would.rstrip('.')}"

    def declined(why: str) -> WikiError:
        log.info("the person was asked %s on %s, and did not allow it", name, preview.wiki)
        return permission_denied(f"{why} {preview.nothing} Do not call {name} again for this unless the person "
                                 "asks for it.")
    async with anyio.create_task_group() as waiting:
        waiting.start_soon(keep_waiting)
        try:
            with anyio.fail_after(timeout):
                answer = await ctx.session.elicit_form(question, question_schema(preview),
                                                       related_request_id=ctx.request_id)
        except TimeoutError:
            return declined(f"The person did not answer within {timeout:g} seconds (MCP_CONFIRM_TIMEOUT_SECONDS) "
                            f"the question {action}, which counts as declined.")
        except (MCPError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            # the client claimed it could ask, then failed (an error answer, a malformed one, a
            # lost connection): nobody said yes
            log.info("asking the person to confirm %s failed: %s", name, error)
            return declined(f"The client could not put the question {action} to the person "
                            f"({type(error).__name__}), which counts as declined.")
        finally:
            waiting.cancel_scope.cancel()
    said = answer.content or {}
    if answer.action == "accept" and (unread := unanswered_fields(preview, said)):
        for_what = f" for {', '.join(unread)}" if any(unread) else ""
        return declined(f"The client accepted the question {action} without a yes or no{for_what}, so the "
                        "person's answer is not known (the client may not show this form), which counts as "
                        "declined.")
    picked = frozenset(choice for number, choice in enumerate(preview.choices, 1)
                       if said.get(f"choice{number}") is True)
    if answer.action == "accept" and (picked if preview.choices else said.get("allow") is True):
        log.info("the person was asked %s on %s, and allowed it", name, preview.wiki)
        return Accepted(preview.would, picked if preview.choices else None)
    if answer.action == "cancel":
        return declined(f"The person dismissed the question {action}, which counts as declined.")
    return declined(f"The person declined, in the client, {action}.")


def unanswered_fields(preview: Preview, said: Mapping[str, Any]) -> list[str] | None:
    """What an accepted answer left without a boolean: the choices given otherwise (a string "true"
    is no answer, rather than a page silently skipped; a choice left out is not picked), [''] where
    every field is; None where none is."""
    fields = [f"choice{number}" for number in range(1, len(preview.choices) + 1)] or ["allow"]
    unread = [field for field in fields if not isinstance(said.get(field), bool)]
    if len(unread) == len(fields):
        return [""]
    return [preview.choices[fields.index(field)] for field in unread if field in said] or None


def unconfirmable(state: ServerState, ctx: Any) -> str:
    """Why the person cannot confirm a guarded action from this client (MCP_CONFIRM=person, and the
    client cannot ask them: can_ask), and who could, which refuses it (run_guarded); a stateless server asks no one, whatever the
    client, so only its operator can change that."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    who = ("Clients that ask, such as Claude Code, VS Code and the MCP Inspector, can do it over stdio or a "
           "Streamable HTTP session, connecting with the handshake (protocol 2025-06-18 to 2025-11-25).")
    if state.stateless:
        why = ("no client can ask them on this server: it serves stateless HTTP (--stateless or "
               "MCP_STATELESS), where the answer could reach another replica")
        who = "Only its operator can change this: serve HTTP with sessions, or stdio."
    elif ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        why = (f"this client cannot ask them: it connected with the {ctx.session.protocol_version} protocol, "
               "whose calls cannot carry a question")
    elif not asks_in_forms(ctx):
        why = "this client cannot ask them: it did not declare MCP elicitation (form mode) when it connected"
    else:
        why = "this client cannot ask them: its connection cannot carry a question"
    return f"This server requires the person to confirm it in the client (MCP_CONFIRM=person), and {why}. {who}"


# ---------------------------------------------------------------------------
# pages.py: Pieces the page tools share: parameter types, a page resolved with its redirects, sections
# picked by number or heading, outlines, and revisions' slots.
# ---------------------------------------------------------------------------

def truncated_marker(piece: Slice | None, tool: str, *, sections: Sequence[Section | tuple[int, str]] = (),
                     again: Mapping[str, Any] | None = None, room: int | None = None,
                     outline: str | None = None, batch: Batch | None = None) -> str:
    """The content-truncated marker: where the cut is, and the exact next calls: ``tool`` again, or
    for a batch, which names a tool other than the one called, ``tool`` with. The sections listed
    are of the page ``again`` names, if it names one, as many as fit ``room`` bytes, then how many
    more and the call that lists them all (``outline``, if any)."""
    again = dict(again or {})
    verb = "with" if batch else "again with"
    end, total = (piece.end, piece.total) if piece else batch.shown if batch else (0, 0)
    # a batch's offset is into the page it cut, so its numbers are that page's, which it names
    of = f" of {again['title']}" if batch and piece else ""
    parts = [f"Content truncated at {end} of {total} bytes{of}."]
    numbered = numbered_headings(sections)
    if piece and numbered:
        of = f"Available sections of {again['title']}" if "title" in again else "Available sections"
        listed = numbered if numbered[0][0] == 0 else [(0, "Lead"), *numbered]
        fit = len(listed) if room is None else fitting([f"{n} ({heading})" for n, heading in listed], room)
        shown_list = listed[:fit]
        parts.append(f"{of}: {section_list(shown_list)}" + (
            "." if len(shown_list) == len(listed) else f", and {len(listed) - len(shown_list)} more."))
        if len(shown_list) < len(listed) and outline:
            parts.append(f"To list every section, call {outline}.")
        before = f"{call_args(**again)} and " if again else ""  # content="html" and the like
        parts.append(f"To read a specific section, call {tool} {verb} {before}section=N.")
    if piece:
        parts.append(f"To read on, call {tool} {verb} {call_args(**again, offset=piece.end)}.")
    if batch and batch.left_out:
        parts.append(f"Not included: {', '.join(batch.left_out)}. To read them, call get-pages again with "
                     f"{call_args(titles=list(batch.left_out), **batch.fields)}.")
    return " ".join(parts)


TitleArg = Arg("Page title.", title=True)


FileTitleArg = Arg("File title; File: optional.", title=True)


ContentArg = Arg("none: metadata only.")


SectionArg = Arg("Number (0 = lead) or heading.", minimum=0, max_length=255, max_length_listed=False)


OffsetArg = Arg("From the marker.", minimum=0)


Namespaces = Annotated[list[int] | None, Arg("Namespace IDs.", max_items=50)]


CommentArg = Arg("Edit summary.", max_length=500, max_length_listed=False)  # MediaWiki's limit


ReasonArg = Arg("Reason.", max_length=500, max_length_listed=False)


TitlesArg = Arg("Page titles.", title=True, max_items=MAX_PAGES_PER_CALL)


LatestIdArg = Arg("Revision ID of the page as read.", minimum=1)


TalkTitleArg = Arg("Talk page, or its subject page.", title=True)


FindArg = Arg("Exact wikitext; with regex, a Python regex.", max_length=500, max_length_listed=False)


def query_page(ctx: ToolContext, **params: Any) -> tuple[dict[str, Any], str | None]:
    """The page an action=query about one page answers with, and the title it was redirected from."""
    return resolve_page(ctx.client.get({"action": "query", **params}).get("query", {}))


def resolve_page(query: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The page a single-page query returned, and the title it was redirected from. A title of another
    wiki (an interwiki prefix) is listed apart: as a page marked ``interwiki``, which check_page refuses."""
    other = [{"title": i.get("title"), "interwiki": i.get("iw")} for i in query.get("interwiki") or []]
    pages, hops = query.get("pages") or other or [{}], query.get("redirects") or []
    return pages[0], next((hop["from"] for hop in hops if hop.get("from")), None)


def check_page(ctx: ToolContext, page: dict[str, Any], title: str, must_exist: bool = True,
               redirected: str | None = None) -> None:
    """Refuses a page that is not an existing page of this wiki (must_exist=False: an invalid title);
    ``redirected``: the title a redirect was followed from, refused too when it leads to no page."""
    if page.get("invalid"):
        raise invalid_input(f"{title!r} is not a valid page title: {invalid_reason(page)}")
    if redirected and (not page or page.get("missing")):
        raise broken_redirect(redirected, page.get("title"))
    if not must_exist:
        return
    if "interwiki" in page:
        raise invalid_input(f"{title!r} points to another wiki (interwiki prefix {page['interwiki']!r}).")
    if page.get("special"):
        raise invalid_input(f"{page.get('title', title)!r} is a special page, which the wiki makes when asked; "
                            "it has no text to read or change.")
    if page.get("missing") or not page:
        raise missing_page(ctx, page.get("title", title))


def broken_redirect(redirected: str, target: str | None) -> WikiError:
    """not_found for a redirect that leads to no page: to a ``target`` that does not exist, or (none
    given: the wiki answers with no page) in a loop or to another wiki."""
    where = (f"to {target!r}, which does not exist" if target
             else "in a loop or to another wiki, to no page here")
    return not_found(f"{redirected!r} redirects {where}. To read the redirect itself, call get-page with "
                     f"{call_args(title=redirected, followRedirects=False)}.")


def invalid_reason(page: dict[str, Any]) -> str:
    reason = page.get("invalidreason")  # {"code", "text"} with errorformat=plaintext
    return str(reason.get("text", "") if isinstance(reason, dict) else reason or "")


def missing_page(ctx: ToolContext, title: str) -> WikiError:
    return not_found(f"Page {title!r} not found on {ctx.wiki.key}. " + (
        why_missing(ctx, title) or "search-page-by-prefix or search-page finds existing titles."))


def why_missing(ctx: ToolContext, title: str) -> str | None:
    """What the wiki says of a page that is not there: that it is protected against creation, and
    where it went, from the log: deleted (undelete-page restores it) or moved without a redirect.
    None when it says neither."""
    query = ctx.client.get({"action": "query", "list": "logevents", "letitle": title, "lelimit": 5,
                            "leprop": "type|user|timestamp|comment|details", "titles": title,
                            "prop": "info", "inprop": "protection"}).get("query", {})
    create = [e for page in query.get("pages") or [] for e in page.get("protection") or []
              if e.get("type") == "create"]
    protected = f"It is protected against creation ({protection_text(create)}). " if create else ""
    for event in query.get("logevents") or []:
        when = (f" on {event.get('timestamp')} by {event.get('user', 'a hidden user')}"
                + (f" ({one_line(event['comment'])})" if event.get("comment") else ""))
        if (event.get("type"), event.get("action")) == ("delete", "delete"):
            return f"{protected}It was deleted{when}; undelete-page restores it."
        if event.get("type") == "move":
            target = (event.get("params") or {}).get("target_title")
            return f"{protected}It was moved to {target!r}{when}, leaving no redirect; use that title."
    if to := subject_redirect(ctx, title):
        return f"{protected}Its subject page is a redirect to {to!r}, whose talk page is {talk_title(ctx, to)!r}."
    return protected.strip() or None


def subject_redirect(ctx: ToolContext, talk: str) -> str | None:
    """The page that the subject page of talk page ``talk`` redirects to, if it is a redirect:
    readers of that page discuss it on its own talk page."""
    namespace = ctx.site.namespace_of(talk)
    if namespace <= 0 or not namespace % 2:
        return None
    name = talk.partition(":")[2].strip()
    subject = f"{ctx.site.namespaces.get(namespace - 1)}:{name}" if namespace > 1 else name
    query = ctx.client.get({"action": "query", "titles": subject, "redirects": True}).get("query", {})
    return (query.get("redirects") or [{}])[0].get("to")


def no_such_section(ctx: ToolContext, title: str, section: int | None, revid: int | None = None) -> WikiError:
    """not_found for a section past the last, listing the sections there are, as the wiki
    numbers them (headings that templates bring cannot be read or edited by number)."""
    outline = rendered_outline(ctx, title, **of_page(title, revid))
    return not_found(f"There is no section {section} in {title} on {ctx.wiki.key}. "
                     f"Its sections: {outline_list(ctx, outline, title)}.")


def of_page(title: str, revid: int | None) -> dict[str, Any]:
    """The action=parse parameters naming a revision, or else a page's latest."""
    return {"oldid": revid} if revid else {"page": title}


def outline_list(ctx: ToolContext, outline: Sequence[Heading], title: str) -> str:
    """``0 (Lead), 1 (== History ==), ...``: the sections of ``title`` that can be read or changed by
    number, as many as a truncation marker lists, then how many more and the call that lists them all."""
    listed = joined_within(["0 (Lead)"] + [f"{n} ({'=' * level} {heading} {'=' * level})"
                                           for n, level, heading, _ in outline if n is not None],
                           ctx.budget // OUTLINE_SHARE)
    return listed + (f" ({outline_call(title)} lists them all)" if listed.endswith(" more") else "")


class AskedSection(typing.NamedTuple):
    """A section asked for by number or heading: its number (None: the whole page), how a header
    shows it (``2 (History)`` for a heading), and the text read, cut to that section when its
    heading was looked up in that text."""
    number: int | None
    shown: int | str | None
    text: str = ""


def asked_section(ctx: ToolContext, title: str, section: int | str | None, *, text: str = "",
                  parsed: Mapping[str, Any] | None = None, revid: int | None = None) -> AskedSection:
    """The section ``section`` names: a number as it is; a heading (pick_section) looked up in the
    wikitext ``text`` of revision ``revid`` (its rendered outline fetched only if needed), or in an
    action=parse result ``parsed`` with prop=sections|wikitext."""
    if not isinstance(section, str):
        return AskedSection(section, section, text)
    syntax = ctx.site.syntax
    with_templates: Callable[[], list[Heading]]
    if parsed is None:
        outline = [Heading(s.number, s.level, heading_plain(s.heading)) for s in wikitext_sections(text, syntax)]
        with_templates = functools.cache(lambda: rendered_outline(ctx, title, **of_page(title, revid)))
    else:
        outline = outline_of(parsed)
        text, with_templates = str(parsed.get("wikitext", "")), lambda: outline
    number, heading = pick_section(ctx, outline, section, title, with_templates,
                                   lambda: source_headings(text, syntax) + with_templates())
    shown = f"{number} ({heading})" if heading else number
    if parsed is not None:
        return AskedSection(number, shown)
    span = section_span(text, number, syntax)
    if span is None:
        raise no_such_section(ctx, title, number, revid)
    return AskedSection(number, shown, section_text(text, span))


def rendered_outline(ctx: ToolContext, title: str, **params: Any) -> list[Heading]:
    """The sections action=parse lists for a page (page=) or revision (oldid=), those that
    templates bring included."""
    return outline_of(parse_page(ctx, title, None, prop="sections", **params))


def pick_section(ctx: ToolContext, outline: Sequence[Heading], wanted: str, title: str,
                 with_templates: Callable[[], list[Heading]],
                 aliases: Callable[[], list[Heading]]) -> tuple[int, str]:
    """The number and heading of the one section of ``outline`` headed ``wanted``, matched
    without regard to case, surrounding space or markup. Headed nowhere: not_found, listing
    the headings (a heading a template brings, from ``with_templates``, is named with its page);
    headed more than once: invalid_input, listing those sections. Digits that head nothing are
    taken as the section number. ``aliases``: the same sections' other names (as rendered, as
    written), tried when no heading matches, so that a section is found by the name
    get-page-sections shows and by its source alike."""
    key = heading_key(wanted)
    own = [(n, h) for n, _, h, _ in outline if n is not None and heading_key(h) == key]
    if not own and not wanted.strip().isdigit():
        numbered = {n: h for n, _, h, _ in outline if n is not None}
        own = [(n, numbered[n]) for n in dict.fromkeys(
            n for n, _, h, _ in aliases() if n in numbered and heading_key(h) == key)]
    if not own and not wanted.strip().isdigit():  # a heading named with its footnote marks: Notes[1]
        bare = heading_key(wanted, marks=False)
        own = [(n, h) for n, _, h, _ in outline if n is not None and heading_key(h, marks=False) == bare]
    if len(own) == 1:
        return own[0][0], own[0][1]
    if own:
        parents = {n: parent for (n, *_), (parent, _) in zip(outline, heading_paths(
            [Section(n or 0, level, h) for n, level, h, _ in outline]))}
        raise invalid_input(f"{len(own)} sections of {title} are headed {wanted!r}: " + ", ".join(
            f"{n} ({h}" + (f", under {parents[n]})" if parents.get(n) else ")") for n, h in own)
            + ". Give the one meant by its number: section=N.")
    if wanted.strip().isdigit():
        return int(wanted), ""
    brought = [src for n, _, h, src in with_templates() if n is None and heading_key(h) == key]
    if brought and not brought[0]:  # MediaWiki names no page for an <h2> written in HTML
        raise not_found(f"The heading {wanted!r} in {title} is written in HTML (<h2>), which starts no section: "
                        "its text is part of the section before it, as get-page-sections shows.")
    if brought:
        raise not_found(f"The section headed {wanted!r} in {title} comes from the page {brought[0]}, which "
                        f"{title} transcludes, so it is read and changed there: call again with "
                        f"title={json.dumps(brought[0], ensure_ascii=False)}.")
    raise not_found(f"No section of {title} on {ctx.wiki.key} is headed {wanted!r}. "
                    f"Its sections: {outline_list(ctx, outline, title)}.")


def no_such_revision(ctx: ToolContext, revid: int) -> WikiError:
    return not_found(f"Revision {revid} not found on {ctx.wiki.key}. get-page-history lists a page's "
                     "revision IDs.")


def revision_of(page: dict[str, Any]) -> dict[str, Any]:
    return (page.get("revisions") or [{}])[0]


def main_slot(revision: dict[str, Any]) -> dict[str, Any]:
    return (revision.get("slots") or {}).get("main") or {}


def slot_text(ctx: ToolContext, revision: dict[str, Any], section: int | None, title: str) -> str:
    """The wikitext of a revision's main slot; MediaWiki marks a missing section, not errs."""
    slot = main_slot(revision)
    if slot.get("nosuchsection"):
        raise no_such_section(ctx, title, section, revision.get("revid"))
    return slot.get("content", "")


def continuation(ctx: ToolContext, *keys: str) -> dict[str, str]:
    """The API fields of the call's continueFrom, if any; it may hold only ``keys`` (decode_continuation)."""
    return decode_continuation(ctx.continue_from, keys) if ctx.continue_from else {}


def listing(data: dict[str, Any], rows: list[str], head: str | None, empty: str, item: str,
            tool_name: str) -> list[str]:
    """``head`` over a row each (``empty`` when there are none), then the 'More results available'
    marker when MediaWiki has more to give."""
    blocks = ["\n".join([head, *rows] if head else rows) if rows else empty]
    if data.get("continue"):
        blocks.append(more_results_marker(len(rows), item, tool_name, "continueFrom",
                                          encode_continuation(data["continue"])))
    return blocks


def outline_call(title: str) -> str:
    """The call that lists every section of a page a marker could list only some of (get-page-sections,
    offered wherever get-page is: they are of one toolset)."""
    return f"get-page-sections with {call_args(title=title)}"


def parse_page(ctx: ToolContext, title: str, section: int | None, **params: Any) -> dict[str, Any]:
    """A page or revision rendered (action=parse); a missing page or section says what there is."""
    try:
        return ctx.client.get({"action": "parse", "section": section, "disableeditsection": True,
                               "disablelimitreport": True, **params}).get("parse", {})
    except WikiError as error:
        if error.code == "nosuchsection":
            raise no_such_section(ctx, title, section, params.get("oldid")) from None
        if error.code == "missingtitle":
            if params.get("redirects"):  # to a page that does not exist?
                page, redirected = query_page(ctx, titles=title, redirects=True)
                check_page(ctx, page, title, redirected=redirected)
            raise missing_page(ctx, title) from None
        raise


def refuse_unknown_choice(ctx: ToolContext, kind: str, value: str | None, before: str) -> None:
    """Refuses, before anything is sent, a value of one of CHOICES' arguments that the wiki does not
    take, naming those it does; ``before`` opens the message. MediaWiki's own pass unasked, and
    so does any value when the wiki lists none (it judges them itself)."""
    if not value or value in STANDARD_CHOICES[kind]:
        return
    known = ctx.client.choices[kind]
    if known and value not in known:
        raise invalid_input(f"{before}{ctx.wiki.key} knows no {kind} {value!r} (its {kind}s: "
                            f"{', '.join(known)}).")


def is_revision_of(ctx: ToolContext, revid: int, page: dict[str, Any]) -> bool:
    """Whether revision ``revid`` belongs to ``page``: a base from another page would make
    MediaWiki merge against another text."""
    query = ctx.client.get({"action": "query", "revids": revid}).get("query", {})
    other = (query.get("pages") or [{}])[0]
    return not query.get("badrevids") and other.get("pageid") == page.get("pageid")


def revision_texts(ctx: ToolContext, *revids: int) -> dict[int, str]:
    """The wikitext of revisions, by revision ID (one request)."""
    query = ctx.client.get({"action": "query", "revids": list(dict.fromkeys(revids)), "prop": "revisions",
                            "rvprop": "ids|content", "rvslots": "main"}).get("query", {})
    return {r["revid"]: main_slot(r).get("content", "") for p in query.get("pages") or []
            for r in p.get("revisions") or []}


def names_text(names: list[str]) -> str:
    """'Admin', 'Admin and Editor', 'Admin, Editor and 127.0.0.1'."""
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def talk_title(ctx: ToolContext, title: str) -> str:
    """The talk page of ``title``: itself if it is one (odd namespace IDs), else the page of
    the same name in the namespace after its own."""
    namespace = ctx.site.namespace_of(title)
    if namespace > 0 and namespace % 2:
        return title
    talk = ctx.site.namespaces.get(namespace + 1) if namespace >= 0 else None
    if talk is None:
        raise invalid_input(f"{title!r} is in a namespace without talk pages (such as Special:).")
    return f"{talk}:{title.partition(':')[2].strip() if namespace else title}"


# ---------------------------------------------------------------------------
# read_pages.py: Read tools for pages: get-page, get-page-sections and get-pages, with truncation and offsets.
# ---------------------------------------------------------------------------

@tool("get-page", "Get page", toolset="pages", read_only=True,
      see={"for several pages": "get-pages", "for the outline": "get-page-sections",
           "for an old revision": "get-revision"})
def get_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    content: Annotated[Literal["source", "html", "text", "none"], ContentArg] = "source",
    metadata: Annotated[bool, Arg(
        'Adds ID, content model, size, last edit, protection, URL.')] = False,
    section: Annotated[int | str | None, SectionArg] = None,
    offset: Annotated[int, OffsetArg] = 0,
    followRedirects: Annotated[bool, Arg("false: the redirect itself.")] = True,
) -> list[str]:
    """Returns a page's latest revision as wikitext, HTML or plain text, with its revision ID.
    Truncated at {content_max_bytes:bytes}; offset reads the rest."""
    refuse_section_of_none(content, section)
    if content in ("html", "text"):
        parsed, text, number, shown = rendered(ctx, title, content, section, page=title,
                                               redirects=followRedirects)
        page: dict[str, Any] = {"title": parsed.get("title"), "pageid": parsed.get("pageid")}
        revision: dict[str, Any] = {"revid": parsed.get("revid")}
        redirected, hops = parse_redirected(parsed), parsed.get("redirects")
        if metadata:
            page, _ = query_page(ctx, pageids=parsed.get("pageid"), **header_fields(True))
            revision = revision_of(page)
        sections: Sequence[Section | tuple[int, str]] = html_sections(parsed)
    else:
        number = None if isinstance(section, str) else section  # a heading is numbered from the whole text
        query = ctx.client.get({"action": "query", "titles": title, "redirects": followRedirects,
                                **header_fields(metadata, content == "source"),
                                "rvsection": number if content == "source" else None}).get("query", {})
        page, redirected = resolve_page(query)
        hops = query.get("redirects")
        check_page(ctx, page, title, redirected=redirected)
        revision = revision_of(page)
        if content == "none":
            return ctx.reads.showed([page_header(ctx, page, revision, redirected, metadata, section)],
                                    Shown(page["title"], revision.get("revid") or 0, outline=False))
        number, shown, text = asked_section(ctx, page["title"], section, revid=revision.get("revid"),
                                            text=slot_text(ctx, revision, number, page["title"]))
        sections = wikitext_sections(text, ctx.site.syntax)
    again = {**({} if content == "source" else {"content": content}),
             **({"section": number} if number is not None else {}),
             **({} if followRedirects else {"followRedirects": False})}
    header = page_header(ctx, page, revision, redirected, metadata, shown,
                         redirected_to=None if section is not None else redirect_section(
                             hops, page.get("title") or title, sections))
    blocks, piece = content_blocks(header, text, offset, ctx.budget, "get-page",
        again=again or None, outline=outline_call(page.get("title") or title),
        sections=None if number is not None else sections)
    if content != "source":
        seen = [Shown(page["title"], revision.get("revid") or 0, rendered=(text, piece.text))]
        return ctx.reads.showed(blocks, *seen if page.get("title") else [])
    # for update-page: refusing to write back a part, and the revision a write is based on; noted under
    # its heading too, by which a write may name it once a section above renumbered it
    return ctx.reads.showed(blocks, Shown(page["title"], revision.get("revid", 0), text, (piece.start, piece.end),
                                          number, section_heading(text, 1, ctx.site.syntax) if number else None))


def redirect_section(hops: Sequence[Mapping[str, Any]] | None, title: str,
                     sections: Sequence[Section | tuple[int, str]]) -> str | None:
    """The header line naming the section a redirect followed leads to (#REDIRECT [[Rhine#Course]]):
    get-page shows the whole page, as the wiki does, and this line says where to look, and how to
    read that section alone. Its heading is looked up among ``sections`` as section names are."""
    fragment = next((str(hop["tofragment"]) for hop in reversed(hops or []) if hop.get("tofragment")), "")
    if not fragment:
        return None
    key = heading_key(fragment.replace("_", " "))
    numbered = numbered_headings(sections)
    found = next(((n, h) for n, h in numbered if heading_key(h) == key), None)
    if found is None:
        return f"#{fragment}, which heads no section: the page is shown whole"
    return (f"section {found[0]} ({found[1]}), in the page shown whole; to read it alone, call get-page with "
            f"{call_args(title=title, section=found[0])}")


def refuse_section_of_none(content: str, section: int | str | None) -> None:
    """A section with content='none' would be neither read nor looked for, only echoed back."""
    if content == "none" and section is not None:
        raise invalid_input("section picks a part of the content, and content='none' reads none: leave "
                            "section out, or ask for the content.")


def header_fields(metadata: bool, content: bool = False, *, brief: bool = False) -> dict[str, Any]:
    """The query parameters that give page_header its lines: the revision ID; with metadata, prop=info
    (page ID, content model, size, protection) and the last edit's time, user and summary (``brief``:
    without protection and summary, as get-pages shows). ``content``: the wikitext too."""
    last_edit = ["timestamp", "user"] + ([] if brief else ["comment"])
    rvprop = ["ids", *(last_edit if metadata else []), *(["content"] if content else [])]
    return {"prop": "revisions|info" if metadata else "revisions",
            "inprop": "protection" if metadata and not brief else None,
            "rvprop": "|".join(rvprop), "rvslots": "main" if content else None}


def page_header(ctx: ToolContext, page: dict[str, Any], revision: dict[str, Any],
                redirected: str | None, metadata: bool, section: int | str | None,
                redirected_to: str | None = None) -> str:
    lines = [("Title", page.get("title")), ("Redirected from", redirected), ("Redirected to", redirected_to),
             ("Revision ID", revision.get("revid") or page.get("lastrevid")),
             ("Section", section)]
    if metadata:
        lines += [("Page ID", page.get("pageid")),
                  ("Content model", page.get("contentmodel")),
                  ("Size", f"{page.get('length', revision.get('size', 0))} bytes"),
                  ("Last edited", f"{revision.get('timestamp')} by {revision.get('user')}"
                   if revision.get("timestamp") else None),
                  ("Edit summary", revision.get("comment")),
                  ("Protection", page.get("protection") and protection_text(page["protection"])),
                  ("URL", ctx.site.page_url(page.get("title", "")))]
    return labelled(*lines)


def content_blocks(header: str, text: str, offset: int, budget: int, tool_name: str, *,
                   sections: Sequence[Section | tuple[int, str]] | None,
                   again: Mapping[str, Any] | None, outline: str | None = None) -> tuple[list[str], Slice]:
    """Header and body as one block, then the truncation marker as its own block; the body and the
    marker together fit ``budget`` (fitted). Also the part of ``text`` shown."""
    piece, marker = fitted(text, offset, budget, lambda cut: truncated_marker(
        cut, tool_name, sections=sections or (), again=again, room=budget // OUTLINE_SHARE, outline=outline))
    if offset:
        header += f"\nOffset: {piece.start} of {piece.total} bytes"
    return [f"{header}\n\n{piece.text}", *([marker] if marker else [])], piece


def parse_redirected(parsed: Mapping[str, Any]) -> str | None:
    """The title an action=parse result was redirected from; none for a redirect in a loop, whose own
    page it renders."""
    redirected = next((r.get("from") for r in parsed.get("redirects") or []), None)
    return redirected if redirected != parsed.get("title") else None


class Rendered(typing.NamedTuple):
    """A page or revision rendered (rendered): the action=parse result, the HTML or plain text
    shown, and the section asked for (AskedSection)."""
    parsed: dict[str, Any]
    body: str
    number: int | None
    shown: int | str | None


def rendered(ctx: ToolContext, title: str, content: str, section: int | str | None, **params: Any) -> Rendered:
    """A page (page=) or revision (oldid=) rendered, whole or one section (by number or heading),
    as HTML or plain text. Plain text is read from the whole page, so that a section's references
    are the page's; an HTML section by heading costs a request more, for the numbers of the headings."""
    by_name = isinstance(section, str)  # then the source too, for the headings as written
    parsed: dict[str, Any] = {}
    if content == "text" or by_name:
        props = ("text|sections|revid" if content == "text" else "sections") + "|wikitext" * by_name
        parsed = parse_page(ctx, title, None, prop=props, **params)
    number, shown, _ = asked_section(ctx, title, section, parsed=parsed)
    if content == "text":
        body = plain_text(parsed.get("text", ""), text_sections(parsed), number)
        if body is None:
            raise no_such_section(ctx, title, number, params.get("oldid"))
        return Rendered(parsed, body, number, shown)
    parsed = parse_page(ctx, title, number, prop="text|sections|revid", **params)
    return Rendered(parsed, parsed.get("text", ""), number, shown)


def text_sections(parsed: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """The anchor of each heading of an action=parse result, with its section index and the page
    it comes from (plain_text)."""
    return {s.get("anchor", ""): (str(s["index"]), str(s.get("fromtitle", "")))
            for s in parsed.get("sections") or [] if "index" in s}


SECTIONS_LEGEND = ("number | heading, its = marks showing its level | bytes of its own text | bytes with its "
                   "subsections (only when it has any)")


@tool("get-page-sections", "Get page sections", toolset="pages", read_only=True,
      see={"for a section's text": "get-page with section"})
def get_page_sections(ctx: ToolContext, title: Annotated[str, TitleArg]) -> list[str]:
    """Returns a page's outline and revision ID: each section's number, heading and size."""
    parsed = parse_page(ctx, title, None, page=title, redirects=True, prop="sections|revid|wikitext")
    text = parsed.get("wikitext", "")
    syntax = ctx.site.syntax
    own = wikitext_sections(text, syntax)
    ends = section_ends(text, syntax)
    starts = [s.start for s in own] + [utf8_len(text)]
    outline = outline_of(parsed)
    shown = dict(html_sections(parsed))
    rows = [((0, 0), f"0 | (Lead) | {ends[0]}")]  # by the number of the section they follow
    for s, end in zip(own, starts[1:]):
        marks, size, whole = "=" * s.level, end - s.start, ends[s.number] - s.start
        heading = shown.get(s.number) or heading_plain(s.heading)
        rows.append(((s.number, 0), f"{s.number} | {marks} {heading} {marks} | {size}"
                     + (f" | {whole}" if whole > size else "")))
    after = 0  # a heading a template brings comes after the numbered ones before it in the outline
    for place, (number, level, heading, source) in enumerate(outline, 1):
        if number is None:
            whence = f"from {source}" if source else "in HTML, part of the section before"
            rows.append(((after, place), f"- | {'=' * level} {heading} {'=' * level} | {whence}"))
        else:
            after = number
    redirected = parse_redirected(parsed)
    return ctx.reads.showed([labelled(("Title", parsed.get("title")), ("Redirected from", redirected),
                    ("Revision ID", parsed.get("revid")), ("Size", f"{utf8_len(text)} bytes")) \
        + f"\nSections ({SECTIONS_LEGEND}):\n" + "\n".join(row for _, row in sorted(rows))],
        Shown(parsed.get("title", title), parsed.get("revid") or 0))


@tool("get-pages", "Get pages", toolset="pages", read_only=True,
      see={"for HTML or a section": "get-page"})
def get_pages(
    ctx: ToolContext,
    titles: Annotated[list[str], TitlesArg],
    content: Annotated[Literal["source", "text", "none"], Arg(
        "none: revision IDs only.")] = "source",
    metadata: Annotated[bool, Arg("Adds ID, content model, size, last edit.")] = False,
) -> list[str]:
    """Returns up to 50 pages' wikitext or plain text with revision IDs; missing ones listed.
    The pages share {content_max_bytes:bytes}: whole pages first, then one cut; the marker says
    how to read the rest."""
    wanted = list(dict.fromkeys(titles))
    source = content == "source"
    query = ctx.client.get({"action": "query", "titles": wanted, "redirects": True,
                            **header_fields(metadata, source, brief=True)}).get("query", {})
    loops = "Redirects in a loop or to another wiki, which lead to no page here"
    other = "Titles of other wikis"
    unread: dict[str, list[str]] = {"Missing pages": [], loops: [], other: [], "Not valid page titles": [],
                                    "Special pages, which have no content": []}
    interwiki = {i["title"] for i in query.get("interwiki") or []}  # listed apart from pages, as normalized
    interwiki |= {n["from"] for n in query.get("normalized") or [] if n["to"] in interwiki}
    entries: dict[str, tuple[dict[str, Any], list[str]]] = {}  # by title: a page asked twice is one entry
    for asked, (page, redirected) in batch_pages(query, wanted).items():
        kind = (loops if page is None and redirected else
                other if page is None and as_wiki_receives(asked) in interwiki else
                "Missing pages" if page is None or page.get("missing") else
                "Not valid page titles" if page.get("invalid") else
                "Special pages, which have no content" if page.get("special") else None)
        if kind:
            unread[kind].append(f"{asked} ({invalid_reason(page)})" if page and page.get("invalid") else
                                f"{asked} (redirects to {page['title']})" if page and redirected else asked)
            continue
        assert page is not None
        entries.setdefault(page["title"], (page, []))[1].extend([redirected] if redirected else [])
    blocks = [f"{label}: {', '.join(titles)}" for label, titles in unread.items() if titles]
    headers = {title: page_header(ctx, page, revision_of(page), ", ".join(froms) or None, metadata, None)
               for title, (page, froms) in entries.items()}
    if content == "none":  # each revision ID shown is the base of a write
        return ctx.reads.showed(blocks + list(headers.values()) or ["No pages."],
                                *(Shown(title, revision_of(page).get("revid") or 0, outline=False)
                                  for title, (page, _) in entries.items()))
    bodies = dict(zip(entries, page_bodies(ctx, [page for page, _ in entries.values()], content)))
    sizes = {title: utf8_len(b[0]) if b else None for title, b in bodies.items()}
    text = {"content": "text"} if content == "text" else {}
    total = sum(size or 0 for size in sizes.values())
    room, marker = ctx.budget, None
    while True:  # the pages and the marker together fit the budget: the marker's room is the pages'
        whole, cut, left = fill_budget(sizes, room)
        cut_body = bodies[cut] if cut else None
        piece = slice_content(cut_body[0], 0, left) if cut_body else None
        if len(whole) == len(bodies):
            break
        marker = truncated_marker(
            piece, "get-page", sections=cut_body[1]() if cut_body else (),
            again={"title": cut, **text} if piece else None,
            room=ctx.budget // OUTLINE_SHARE, outline=outline_call(cut) if cut else None,
            batch=Batch((room - left + (piece.end if piece else 0), total),
                        [title for title in bodies if title not in whole and title != cut], text))
        if room - left + (piece.end if piece else 0) + utf8_len(marker) <= ctx.budget or room <= 1:
            break
        room = max(ctx.budget - utf8_len(marker), 1)
    seen: list[Shown] = []
    for title, body in bodies.items():
        if body and (title in whole or title == cut):
            shown = piece.text if piece and title == cut else body[0]
            # marked on the page itself: a model reading it alone must not take it for the whole page
            cut_at = (f"\nTruncated: at {piece.end} of {piece.total} bytes; the marker after the pages names the "
                      "call that reads on") if piece and title == cut else ""
            blocks.append(f"{headers[title]}{cut_at}\n\n{shown}")
            revid = revision_of(entries[title][0]).get("revid", 0)
            if source or revid:  # for update-page, as get-page; rendered, as get-page's: the base of a write
                seen.append(Shown(title, revid, body[0], (0, utf8_len(shown))) if source else
                            Shown(title, revid, rendered=(body[0], shown)))
    if marker and len(whole) < len(bodies):
        blocks.append(marker)
    return ctx.reads.showed(blocks, *seen) or ["No pages."]


#: A page's body and a way to its sections (for a marker), or None: the wiki held it back.
Body = tuple[str, Callable[[], Sequence[Section | tuple[int, str]]]] | None


def page_bodies(ctx: ToolContext, pages: list[dict[str, Any]], content: str) -> list[Body]:
    """Each page's wikitext as the query gave it, or its plain text, parsed four at a time."""
    if content == "text":
        def text(page: dict[str, Any]) -> Body:
            parsed = parse_page(ctx, page["title"], None, oldid=revision_of(page).get("revid"),
                                prop="text|sections")
            return plain_text(parsed.get("text", ""), text_sections(parsed)) or "", \
                functools.partial(html_sections, parsed)
        return run_each(text, pages)
    slots = [main_slot(revision_of(page)) for page in pages]
    # no revision with content (formatversion 2 gives an empty list): the wiki held it back, its
    # answer being at its size limit ($wgAPIMaxResultSize)
    return [(slot["content"], functools.partial(wikitext_sections, slot["content"], ctx.site.syntax))
            if "content" in slot else None for slot in slots]


def fill_budget(sizes: Mapping[str, int | None], budget: int) -> tuple[set[str], str | None, int]:
    """What a budget holds of bodies of these sizes, in order: every one that fits whole, then the
    first that does not, to be cut to what is left (none when nothing is), and that; a size of None
    is a body held back."""
    whole, left = set(), budget
    for title, size in sizes.items():
        if size is not None and size <= left:
            whole.add(title)
            left -= size
    cut = next((title for title, size in sizes.items() if title not in whole and size is not None), None)
    return whole, cut if left else None, left


def run_each(work: Callable[[Any], Any], items: Sequence[Any], at_once: int = 4) -> list[Any]:
    """``work`` on each item, a few at a time (each a request to the wiki), results in order."""
    if len(items) < 2:
        return [work(item) for item in items]
    with concurrent.futures.ThreadPoolExecutor(min(at_once, len(items))) as pool:
        return list(pool.map(work, items))


def batch_pages(query: dict[str, Any], wanted: list[str]) -> dict[str, tuple[dict[str, Any] | None, str | None]]:
    """Maps each asked title to its page (None if the answer has none) and the redirect followed."""
    normalized = {n["from"]: n["to"] for n in query.get("normalized") or []}
    redirects = {r["from"]: r["to"] for r in query.get("redirects") or []}
    by_title = {p.get("title"): p for p in query.get("pages") or []}
    result: dict[str, tuple[dict[str, Any] | None, str | None]] = {}
    for asked in wanted:
        sent = as_wiki_receives(asked)  # MediaWiki composes a decomposed title (NFC) before it normalizes
        followed = [normalized.get(sent, sent)]
        # on to the end of a double redirect; once round a loop
        while (hop := redirects.get(followed[-1])) and hop not in followed:
            followed.append(hop)
        result[asked] = (by_title.get(followed[-1]), followed[0] if followed[0] in redirects else None)
    return result


# ---------------------------------------------------------------------------
# read_search.py: Read tools for search and the wiki: search-page, search-page-by-prefix, find-in-page,
# get-site-info and whoami.
# ---------------------------------------------------------------------------

@tool("search-page", "Search pages", toolset="pages", read_only=True, continue_from=True,
      see={"for titles by prefix": "search-page-by-prefix",
           "for text in one page": "find-in-page"})
def search_page(
    ctx: ToolContext,
    query: Annotated[str, Arg("Search words (the wiki's syntax).", max_length=300,
                              max_length_listed=False)],
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most results.", minimum=1, maximum=50)] = 10,
) -> list[str]:
    """Searches page text (content namespaces by default): titles and snippets, best first."""
    if not query.strip():
        raise invalid_input("Argument 'query' must contain something to search for.")
    data = ctx.client.get({"action": "query", "list": "search", "srsearch": query, "srwhat": "text",
                           "srnamespace": namespaces or ctx.site.content_namespaces, "srlimit": limit,
                           "srprop": "snippet", "srinfo": "totalhits", **continuation(ctx, "sroffset")})
    hits = data.get("query", {}).get("search") or []
    total = data.get("query", {}).get("searchinfo", {}).get("totalhits")
    rows = [f"{h['title']}: {s}" if (s := strip_tags(h.get("snippet", ""))) else h["title"]
            for h in hits]
    matching = total if total is not None else len(rows)
    head = f"{counted(matching, 'page')} match{'es' if matching == 1 else ''}."
    return listing(data, rows, head, f"No pages match {query!r}.", "page", "search-page")


@tool("search-page-by-prefix", "Search pages by prefix", toolset="pages", read_only=True, continue_from=True,
      see={"for words inside pages": "search-page"})
def search_page_by_prefix(
    ctx: ToolContext,
    prefix: Annotated[str, Arg("Title start, with any namespace prefix.", max_length=255,
                               max_length_listed=False)],
    namespace: Annotated[int | None, Arg("Namespace ID.", minimum=0)] = None,
    limit: Annotated[int, Arg("Most titles.", minimum=1, maximum=100)] = 20,
) -> list[str]:
    """Returns titles starting with the prefix."""
    if not prefix.strip():
        raise invalid_input("Argument 'prefix' must not be empty.")
    named = ctx.site.namespace_of(prefix)
    if namespace is not None and named and named != namespace:  # MediaWiki would ignore namespace
        names = ctx.site.namespaces
        raise invalid_input(f"The prefix {prefix!r} is in namespace {named} ({names.get(named)}), but "
                            f"namespace is {namespace} ({names.get(namespace, 'unknown')}). Give the "
                            "namespace once: in the prefix or as namespace.")
    data = ctx.client.get({"action": "query", "list": "prefixsearch", "pssearch": prefix, "pslimit": limit,
                           "psnamespace": namespace, **continuation(ctx, "psoffset")})
    titles = [p["title"] for p in data.get("query", {}).get("prefixsearch") or []]
    return listing(data, titles, None, f"No page titles start with {prefix!r}.", "title",
                   "search-page-by-prefix")


FIND_LEGEND = ("section | line | byte offset, {reader}'s offset | what it is in, if a template call, "
               "reference or comment; then its line between those either side")


#: The matches find-in-page shows; it counts up to MAX_MATCHES.
FIND_SHOWN = 50


MAX_MATCHES = 10_000


@tool("find-in-page", "Find in page", toolset="pages", read_only=True, continue_from=True,
      see={"for words across pages": "search-page"})
def find_in_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    find: Annotated[str, FindArg],
    regex: Annotated[bool, Arg("find is a regex.")] = False,
    revisionId: Annotated[int | None, Arg("Older revision to search.", minimum=1)] = None,
) -> list[str]:
    """Finds text in a page's wikitext: each match's section, line, offset, context and
    enclosing template, reference or comment; 50 matches a call."""
    pattern, what = find_pattern(find, regex, "find")
    first, revisionId = next_matches(ctx, revisionId)
    try:
        page, redirected = query_page(ctx, titles=title, redirects=True, prop="revisions|info", rvslots="main",
                                      rvprop="ids|content", rvstartid=revisionId, rvendid=revisionId)
    except WikiError as error:
        if error.code in ("badid_rvstartid", "badid_rvendid") and revisionId:
            raise no_such_revision(ctx, revisionId) from None
        raise
    check_page(ctx, page, title, redirected=redirected)
    revision = revision_of(page)  # the one asked for, else the latest
    if "revid" not in revision or revisionId and revision["revid"] != revisionId:
        raise not_found(f"Revision {revisionId} is not a revision of {page['title']}; "
                        "get-page-history lists its revision IDs.")
    text = main_slot(revision).get("content", "")
    spans = match_spans(ctx, pattern, find, text)
    header = labelled(("Title", page["title"]), ("Redirected from", redirected),
                      ("Revision ID", revision["revid"]))
    # the latest revision is the base of a write, and the rows number its sections
    seen = Shown(page["title"], revision["revid"], latest=revision["revid"] == page.get("lastrevid"))
    if not spans:
        return ctx.reads.showed([f"{header}\nNo match of {what}."], seen)
    count = f"{'over ' if len(spans) > MAX_MATCHES else ''}{counted(min(len(spans), MAX_MATCHES), 'match')}"
    if first >= len(spans):
        raise invalid_input(f"continueFrom starts at match {first + 1}, but there are {count} of {what}.")
    shown = spans[first:first + FIND_SHOWN]
    # get-page reads the latest revision: an older one's offsets are get-revision's
    reader = f"get-revision {revisionId}" if revisionId else "get-page"
    blocks = [f"{header}\n{count} of {what}{f', from match {first + 1}' if first else ''} "
              f"({FIND_LEGEND.format(reader=reader)}):\n"
              + "\n".join(match_rows(ctx, text, shown))]
    if first + FIND_SHOWN < min(len(spans), MAX_MATCHES):
        # the next call reads the same revision, so that its matches follow on from these
        blocks.append(more_results_marker(len(shown), "match", "find-in-page", "continueFrom",
                                          encode_continuation({"from": first + FIND_SHOWN,
                                                               "revision": revision["revid"]})))
    return ctx.reads.showed(blocks, seen)


def next_matches(ctx: ToolContext, revision_id: int | None) -> tuple[int, int | None]:
    """Where a continued find-in-page starts (the index of its first match) and the revision it
    reads: the one the first call read."""
    if not ctx.continue_from:
        return 0, revision_id
    fields = continuation(ctx, "from", "revision")
    if not all(fields.get(key, "").isdigit() for key in ("from", "revision")):
        raise invalid_input(f"continueFrom {ctx.continue_from!r} is not a continuation find-in-page produced; "
                            "pass the value from its last 'More results available' marker unchanged.")
    if revision_id and revision_id != int(fields["revision"]):
        raise invalid_input(f"continueFrom reads on in revision {fields['revision']}, not {revision_id}; "
                            "leave revisionId out, or give the one the first call had.")
    return int(fields["from"]), int(fields["revision"])


def find_pattern(find: str, regex: bool, name: str) -> tuple[re.Pattern[str] | None, str]:
    """The regular expression a call's ``name`` argument is, when ``regex`` (None for plain text), and
    how an answer names what was looked for."""
    if not find:
        raise invalid_input(f"Argument '{name}' must not be empty.")
    quoted = json.dumps(find, ensure_ascii=False)
    if not regex:
        return None, quoted
    try:
        return re.compile(find), f"the regular expression {quoted}"
    except re.error as error:
        raise invalid_input(f"{name} is not a valid regular expression: {error}.") from None


def match_spans(ctx: ToolContext, pattern: re.Pattern[str] | None, find: str,
                text: str) -> list[tuple[int, int]]:
    """Where ``find`` (plain text) or ``pattern`` matches in ``text``, up to one past MAX_MATCHES."""
    if pattern:
        return regex_spans(pattern, text, ctx.state.regex_seconds)
    # as the wiki stores text, NFC: a decomposed é finds the é the page holds
    exact = re.escape(as_wiki_receives(find))
    return [found.span() for found in itertools.islice(re.finditer(exact, text), MAX_MATCHES + 1)]


#: Runs in a child process, which is stopped if it runs past ServerState.regex_seconds. Without a
#: replacement: the spans of the non-empty matches, up to one past ``most``; with one: the text with
#: every match replaced and how many, or why the replacement cannot be made.
REGEX_CHILD = """import json, re, sys
pattern, text, most, replace, seconds = json.load(sys.stdin)
try:  # the kernel stops it too, should this server end first and leave it running (Unix)
    import resource
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
except (ImportError, ValueError, OSError):
    pass
if replace is not None:  # a template (dollar_groups): each non-empty match replaced, as find-in-page shows them
    parts, count, at = [], 0, 0
    try:
        for found in re.finditer(pattern, text):
            if found.end() > found.start():
                parts += [text[at:found.start()], found.expand(replace)]
                at, count = found.end(), count + 1
    except (re.error, IndexError) as error:
        json.dump(str(error), sys.stdout)
        sys.exit()
    json.dump(["".join(parts) + text[at:], count], sys.stdout)
    sys.exit()
spans = []
for found in re.finditer(pattern, text):
    if found.end() > found.start():
        spans.append(found.span())
        if len(spans) > most:
            break
json.dump(spans, sys.stdout)"""


def run_regex(pattern: str, text: str, seconds: float, replace: str | None = None) -> Any:
    """REGEX_CHILD's answer for a model's regular expression on ``text``. It runs in a child process,
    stopped after ``seconds``: Python cannot stop a pattern that backtracks without end (such as
    (a+)+b) in its own thread, and holds every other call of the server while it runs."""
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", REGEX_CHILD], capture_output=True,
                              input=json.dumps([pattern, text, MAX_MATCHES, replace,
                                                int(seconds) + 1]).encode(),
                              timeout=seconds, check=True)
    except subprocess.TimeoutExpired:
        raise invalid_input(f"The regular expression ran over {seconds:g} s on this page without "
                            "finishing (it backtracks without end); simplify it, or find plain text."
                            ) from None
    except (OSError, subprocess.CalledProcessError) as error:
        raise upstream_failure(f"The regular expression could not be run ({type(error).__name__}). "
                               + NEXT_STEP["upstream_failure"]) from None
    return json.loads(done.stdout)


def regex_spans(pattern: re.Pattern[str], text: str, seconds: float) -> list[tuple[int, int]]:
    """Where a model's regular expression matches (non-empty) in ``text``, stopped after ``seconds``."""
    return [(start, end) for start, end in run_regex(pattern.pattern, text, seconds)]


def match_rows(ctx: ToolContext, text: str, spans: list[tuple[int, int]]) -> list[str]:
    """Each match: its section, line, byte offset and what it is inside, then its line (cut around
    it when long) between the lines either side; a match on the line of the one before, its row alone."""
    syntax = ctx.site.syntax
    sections = wikitext_sections(text, syntax)
    nodes = inner_nodes(text, syntax)
    line_starts = [0] + [k + 1 for k, c in enumerate(text) if c == "\n"]
    lines = text.split("\n")
    rows, last_line, position, offset = [], -1, 0, 0
    for start, end in spans:
        offset += utf8_len(text[position:start])
        position = start
        line = bisect.bisect_right(line_starts, start) - 1
        section = next((s for s in reversed(sections) if s.start <= offset), None)
        where = match_place(text, nodes, start)
        rows.append(" | ".join(filter(None, [
            f"{section.number} ({heading_plain(section.heading)})" if section else "0 (Lead)",
            f"line {line + 1}", str(offset), where])))
        if line != last_line:
            column = start - line_starts[line]
            if line and (before := lines[line - 1]).strip():
                rows.append(f"  {line}: {around(before, len(before), len(before))}")
            rows.append(f"> {line + 1}: {around(lines[line], column, column + end - start)}")
            if line + 1 < len(lines) and lines[line + 1].strip():
                rows.append(f"  {line + 2}: {around(lines[line + 1], 0, 0)}")
        last_line = line
    return rows


def around(line: str, start: int, end: int) -> str:
    """A line cut to DIFF_CONTEXT_CHARS either side of ``line[start:end]``."""
    before, after = line[:start], line[end:]
    if len(before) > DIFF_CONTEXT_CHARS:
        before = "…" + before[len(before) - cut_at(before[::-1], DIFF_CONTEXT_CHARS):]
    if len(after) > DIFF_CONTEXT_CHARS:
        after = after[:cut_at(after, DIFF_CONTEXT_CHARS)] + "…"
    return before + line[start:end] + after


def inner_nodes(text: str, syntax: Syntax) -> list[Node]:
    """The template calls, parameters, tags and comments of wikitext, with those inside <ref> tags,
    whose content the preprocessor leaves for Cite to read."""
    nodes = preprocess(text, syntax)[1]
    for node in list(nodes):
        if node.kind == "tag" and node.name == "ref" and text[node.end - 2:node.end] != "/>":
            inside = text.index(">", node.start) + 1
            nodes += [dataclasses.replace(n, start=n.start + inside, end=n.end + inside,
                                          parts=tuple((a + inside, b + inside) for a, b in n.parts))
                      for n in preprocess(text[inside:text.rindex("<", inside, node.end)], syntax)[1]]
    return nodes


def match_place(text: str, nodes: list[Node], at: int) -> str:
    """What a match at ``at`` is inside: ``in {{Cite note}} parameter title, in a reference``."""
    places = []
    for node in sorted((n for n in nodes if n.start <= at < n.end), key=lambda n: n.end - n.start):
        if node.kind == "comment":
            places.append("in a comment")
        elif node.kind == "tag":
            places.append("in a reference" if node.name in ("ref", "references") else f"in <{node.name}>")
        elif node.kind == "tplarg":
            places.append(f"in {{{{{{{node.name}}}}}}}")
        else:
            part = next((k for k, (a, b) in enumerate(node.parts) if a <= at <= b), 0)
            names = [argument_name(text[a:b]) for a, b in node.parts[1:part + 1]]
            param = names[-1] if names and names[-1] else str(names.count(None)) if names else ""
            places.append(f"in {{{{{node.name}}}}}" + (f" parameter {param}" if param else ""))
    return ", ".join(dict.fromkeys(places))


def argument_name(argument: str) -> str | None:
    """The name of a template call's argument (``name=value``); None for a positional one."""
    named = re.match(r"([^=\{\[<]*)=", argument)
    return named.group(1).strip() if named else None


@tool("get-site-info", "Get site info", toolset="pages", read_only=True,
      see={"for every wiki": "list-wikis", "to reach another wiki": "add-wiki"})
def get_site_info(ctx: ToolContext) -> str:
    """Returns which wiki this is (key, name, address), its version, language, read-only state,
    namespaces and extensions."""
    query = ctx.client.refresh_site("extensions")
    site = ctx.site
    extensions = sorted({e.get("name", "") for e in query.get("extensions") or []} - {""})
    return labelled(
        ("Wiki", ctx.wiki.key), ("Name", site.name), ("MediaWiki", site.generator),
        ("Language", site.lang), ("Main page", site.main_page),
        ("Main page URL", site.page_url(site.main_page) if site.main_page else None),
        ("API", ctx.client.api_url),
        ("Read-only", f"yes: {site.read_only_reason}" if site.read_only else None),
        ("Writes from this server", writes_from_here(ctx)),
        ("Namespaces", site.namespace_list()), ("Extensions", ", ".join(extensions)))


def writes_from_here(ctx: ToolContext) -> str:
    """Whether this server writes to the call's wiki for its caller: not where the operator made it
    read-only, nor for a person with no account of their own there."""
    if ctx.wiki.read_only:
        return "off (configured read-only)"
    if ctx.person is not None and ctx.wiki.key not in ctx.person.accounts:
        return f"off for {ctx.person.name}. {ctx.person.account_elsewhere('this wiki')}."
    return "on"


@tool("whoami", "Who am I", toolset="pages", read_only=True)
def whoami(ctx: ToolContext) -> str:
    """Returns the account this server acts as (or anonymous), its groups and rights."""
    person = ctx.person
    if person is not None and ctx.wiki.key not in person.accounts:  # the configured account is not theirs
        return labelled(
            ("Wiki", ctx.wiki.key),
            ("User", (f"none: {person.name} has no account of their own on this wiki (signed in to "
                      f"{', '.join(person.accounts)})")),
            ("Reads", "none: the wiki is private, and this server reads it for no one through its own account"
             if ctx.wiki.private else "what anyone may read, through this server's own account; not the watchlist"),
            ("Writes from this server", writes_from_here(ctx)))
    info = ctx.client.get({"action": "query", "meta": "userinfo",
                           "uiprop": "groups|rights|editcount"}).get("query", {}).get("userinfo", {})
    notable = ("edit", "createpage", "move", "delete", "undelete", "upload", "reupload",
               "upload_by_url", "protect", "block", "bot", "apihighlimits", "writeapi")
    rights = [r for r in notable if r in set(info.get("rights") or [])]
    anonymous = "anon" in info
    return labelled(
        ("Wiki", ctx.wiki.key),
        ("User", f"anonymous (IP {info.get('name')})" if anonymous else info.get("name")),
        login_line(ctx.client.username, bool(ctx.wiki.token)),
        ("User ID", None if anonymous else info.get("id")),
        ("Groups", ", ".join(g for g in info.get("groups") or [] if g != "*")),
        ("Edit count", None if anonymous else info.get("editcount")),
        ("Rights", ", ".join(rights)),
        ("Writes from this server", writes_from_here(ctx)))


def login_line(username: str | None, token: bool) -> tuple[str, str | None]:
    """whoami's line on how the server logs in: a bot password (User@app) logs in as User, so
    its app is named apart."""
    _, at, app = (username or "").partition("@")
    if at:
        return "App", f"{app} (bot password)"
    return "Login", f"{username} (password)" if username else "OAuth 2 access token" if token else None


# ---------------------------------------------------------------------------
# read_history.py: Read tools for revisions: get-revision, get-page-history and compare-pages.
# ---------------------------------------------------------------------------

#: The most wikitext a tool takes to diff or render: MediaWiki's default page size cap.
MAX_TEXT_CHARS = 2_000_000


@tool("get-revision", "Get revision", toolset="history", read_only=True,
      see={"for the latest revision": "get-page"})
def get_revision(
    ctx: ToolContext,
    revisionId: Annotated[int, Arg("Revision ID (get-page-history lists them).", minimum=1)],
    content: Annotated[Literal["source", "html", "text", "none"], ContentArg] = "source",
    section: Annotated[int | str | None, SectionArg] = None,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Returns a revision as wikitext, HTML or plain text, with its page, time, user and summary.
    Truncated at {content_max_bytes:bytes}; offset reads the rest."""
    refuse_section_of_none(content, section)
    number = None if isinstance(section, str) else section  # a heading is numbered from the whole text
    query = ctx.client.get({
        "action": "query", "revids": revisionId, "prop": "revisions|info", "rvslots": "main",
        "rvprop": "ids|timestamp|user|size|comment|flags|tags|contentmodel"
                  + ("|content" if content == "source" else ""),
        "rvsection": number if content == "source" else None,
    }).get("query", {})
    page: dict[str, Any] = next(iter(query.get("pages") or []), {})
    revision = revision_of(page)
    if query.get("badrevids") or revision.get("revid") != revisionId:
        raise no_such_revision(ctx, revisionId)
    title = page.get("title", "")
    latest = revisionId == page.get("lastrevid")
    if content == "none":  # its ID shown, as get-page's: the base of a write
        return ctx.reads.showed([revision_header(ctx, page, revision, section)],
                                Shown(title, revisionId, latest=latest, outline=False))
    if content in ("html", "text"):
        parsed, text, number, shown = rendered(ctx, title, content, section, oldid=revisionId)
        sections: Sequence[Section | tuple[int, str]] = html_sections(parsed)
    else:
        if "texthidden" in main_slot(revision) or "texthidden" in revision:
            raise permission_denied(f"The content of revision {revisionId} is hidden "
                                    "(revision deletion). " + NEXT_STEP["permission_denied"])
        number, shown, text = asked_section(ctx, title, section, text=slot_text(ctx, revision, number, title),
                                            revid=revisionId)
        sections = wikitext_sections(text, ctx.site.syntax)
    again = {**({} if content == "source" else {"content": content}),
             **({"section": number} if number is not None else {})}
    # its outline is the revision's: get-page-sections lists the latest one's
    blocks, piece = content_blocks(revision_header(ctx, page, revision, shown), text, offset, ctx.budget,
                                   "get-revision", sections=None if number is not None else sections,
                                   again=again or None)
    if content != "source":  # as get-page's: no wikitext to write back, of any revision; the latest's
        return ctx.reads.showed(blocks, Shown(title, revisionId, latest=latest, rendered=(text, piece.text)))
    # a truncated read of an old revision must not be written back either (update-page); a read of the
    # latest one is, like get-page's, the base of the next write
    return ctx.reads.showed(blocks, Shown(title, revisionId, text, (piece.start, piece.end), number,
                                          section_heading(text, 1, ctx.site.syntax) if number else None, latest))


def revision_header(ctx: ToolContext, page: dict[str, Any], revision: dict[str, Any],
                    section: int | str | None) -> str:
    revid, latest = revision.get("revid"), page.get("lastrevid")
    return labelled(
        ("Title", page.get("title")), ("Revision ID", revid),
        ("Parent revision ID", revision.get("parentid") or None),  # 0: the page's first revision
        ("Latest revision ID", f"{latest} (this one)" if latest == revid else latest),
        ("Timestamp", revision.get("timestamp")), ("User", revision_user(revision)),
        ("Edit summary", "(hidden)" if revision.get("commenthidden") else revision.get("comment")),
        ("Size", f"{revision.get('size', 0)} bytes"), ("Minor", "yes" if revision.get("minor") else None),
        ("Tags", ", ".join(revision.get("tags") or [])),
        ("Content model", main_slot(revision).get("contentmodel")), ("Section", section),
        ("URL", ctx.site.index_url(oldid=revid)))


def revision_user(revision: dict[str, Any]) -> str:
    return "(hidden)" if revision.get("userhidden") else revision.get("user", "")


HISTORY_LEGEND = ("revision ID | timestamp | user | size change | minor (only when minor) | "
                  "tags (only when any) | edit summary (quoted, only when any)")


@tool("get-page-history", "Get page history", toolset="history", read_only=True,
      see={"for content": "get-revision", "for what an edit changed": "compare-pages"})
def get_page_history(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    limit: Annotated[int, Arg("Most revisions.", minimum=1, maximum=50)] = 20,
    olderThan: Annotated[int | None, Arg("Older than this revision ID.", minimum=1)] = None,
    newerThan: Annotated[int | None, Arg("Newer than this revision ID.", minimum=1)] = None,
    tag: Annotated[str | None, name_arg("Only this change tag.")] = None,
    user: Annotated[str | None, name_arg("Only by this account.")] = None,
) -> list[str]:
    """Returns a page's revisions, newest first: ID, time, user, size change, summary; more with
    olderThan."""
    if olderThan is not None and newerThan is not None:
        raise invalid_input("Give olderThan or newerThan, not both: olderThan pages back in time, "
                            "newerThan forward.")
    anchor = olderThan or newerThan
    try:
        page, _ = query_page(ctx, titles=title, prop="revisions", rvlimit=limit + 2, rvstartid=anchor,
                             rvprop="ids|timestamp|user|size|comment|flags|tags", rvtag=tag, rvuser=user,
                             rvdir="newer" if newerThan else None)
    except WikiError as error:
        if error.code == "badid_rvstartid":
            raise not_found(f"Revision {anchor} does not exist on {ctx.wiki.key}; "
                            f"call get-page-history without {'olderThan' if olderThan else 'newerThan'} "
                            "for the latest revisions.") from None
        raise
    check_page(ctx, page, title)
    fetched = page.get("revisions") or []
    sizes = {r["revid"]: r.get("size", 0) for r in fetched}
    rows = [r for r in fetched if r["revid"] != anchor]
    more = len(rows) > limit
    rows = rows[:limit]
    unknown = [r["parentid"] for r in rows if r.get("parentid") and r["parentid"] not in sizes]
    if unknown:  # filtered by tag or user: the parents are not in the list
        parents = ctx.client.get({"action": "query", "revids": unknown, "prop": "revisions",
                                  "rvprop": "ids|size"}).get("query", {})
        sizes.update({r["revid"]: r.get("size", 0) for p in parents.get("pages") or []
                      for r in p.get("revisions") or []})
    if newerThan:
        rows.reverse()
    filters = "".join(f" {label} {value}" for label, value in (
        ("older than", olderThan), ("newer than", newerThan), ("tagged", tag), ("by", user)) if value)
    if not rows:
        return [f"No revisions of {page['title']}{filters}."]
    blocks = [f"Revisions of {page['title']}{filters}, newest first ({HISTORY_LEGEND}):\n"
              + "\n".join(history_row(r, sizes) for r in rows)]
    if more:
        param = "newerThan" if newerThan else "olderThan"
        blocks.append(more_results_marker(len(rows), "revision", "get-page-history", param,
                                          rows[0]["revid"] if newerThan else rows[-1]["revid"]))
    return blocks


def history_row(revision: dict[str, Any], sizes: Mapping[int, int]) -> str:
    parent = revision.get("parentid") or 0
    size = revision.get("size", 0)
    change = signed(size - sizes[parent]) if parent in sizes else "" if parent else signed(size)
    parts = [str(revision["revid"]), revision.get("timestamp", ""), revision_user(revision), change,
             "minor" if revision.get("minor") else "", row_tags(revision), row_summary(revision)]
    return " | ".join(p for p in parts if p)


def row_tags(row: Mapping[str, Any]) -> str:
    return "tags: " + ", ".join(row["tags"]) if row.get("tags") else ""


def row_summary(row: Mapping[str, Any]) -> str:
    """An edit summary as the last field of a row, quoted: a summary such as "minor" or one
    holding " | " then cannot pass for a flag or a column."""
    if row.get("commenthidden"):
        return "(summary hidden)"
    summary = one_line(row.get("comment", ""))
    return json.dumps(summary, ensure_ascii=False) if summary else ""


@tool("compare-pages", "Compare pages", toolset="history", read_only=True)
def compare_pages(
    ctx: ToolContext,
    fromRevision: Annotated[int | None, Arg("Old side: revision ID.", minimum=1)] = None,
    fromTitle: Annotated[str | None, Arg("Old side: page title (latest).", title=True)] = None,
    fromText: Annotated[str | None, Arg("Old side: wikitext.", max_length=MAX_TEXT_CHARS,
                                                max_length_listed=False)] = None,
    toRevision: Annotated[int | None, Arg("New side: revision ID.", minimum=1)] = None,
    toTitle: Annotated[str | None, Arg("New side: page title (latest).", title=True)] = None,
    toText: Annotated[str | None, Arg("New side: wikitext.", max_length=MAX_TEXT_CHARS,
                                              max_length_listed=False)] = None,
    includeDiff: Annotated[bool, Arg("false: counts only.")] = True,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Diffs two versions (revisions, pages or wikitext; text on one side at most): a unified diff,
    changed words as [-old-]{{+new+}}. Truncated at {content_max_bytes:bytes}."""
    sides = {side: compare_side(side, *values) for side, values in
             (("from", (fromRevision, fromTitle, fromText)), ("to", (toRevision, toTitle, toText)))}
    if fromText is not None and toText is not None:
        raise invalid_input("Cannot compare fromText with toText: one side must be a revision or a page "
                            "title (fromRevision, fromTitle, toRevision or toTitle).")
    result = ctx.client.get({"action": "compare", "prop": "diff|ids|title|size|timestamp|user",
                             **sides["from"], **sides["to"]}).get("compare", {})
    lines = parse_diff_table(result.get("body", ""))
    removed = sum(d.kind == "-" for d in lines)
    added = sum(d.kind == "+" for d in lines)
    size_from = result.get("fromsize", utf8_len(fromText) if fromText is not None else None)
    size_to = result.get("tosize", utf8_len(toText) if toText is not None else None)
    header = labelled(
        ("From", compare_label(result, "from", size_from)), ("To", compare_label(result, "to", size_to)),
        ("Size change", f"{signed(size_to - size_from)} bytes"
         if size_from is not None and size_to is not None else None),
        ("Changed lines", f"{removed} removed, {added} added" if removed or added else
         "none (the two sides are identical)"))
    if not includeDiff or not (removed or added):
        return [header]
    return content_blocks(header, compact_diff(lines), offset, ctx.budget, "compare-pages",
                          sections=None, again=None)[0]


def compare_side(side: str, revision: int | None, title: str | None, text: str | None) -> dict[str, Any]:
    names = [f"{side}Revision", f"{side}Title", f"{side}Text"]
    given = [n for n, v in zip(names, (revision, title, text)) if v is not None]
    if len(given) != 1:
        raise invalid_input(f"Must supply exactly one of {', '.join(names)}"
                            + (f"; got {' and '.join(given)}." if given else "."))
    if revision is not None:
        return {f"{side}rev": revision}
    if title is not None:
        return {f"{side}title": title}
    return {f"{side}slots": "main", f"{side}text-main": text}


def compare_label(result: dict[str, Any], side: str, size: int | None) -> str:
    title = result.get(f"{side}title")
    if title is None:
        return f"the supplied {side}Text ({size} bytes)"
    details = ", ".join(str(d) for d in (f"{size} bytes", result.get(f"{side}timestamp"),
                                         result.get(f"{side}user")) if d)
    return f"{title}, revision {result.get(f'{side}revid')} ({details})"


# ---------------------------------------------------------------------------
# read_origin.py: find-text-origin: the revision that added a text, found by bisecting the page's history.
# ---------------------------------------------------------------------------

#: Requests find-text-origin spends reading a page's history (500 revisions a request, 5000 for a
#: bot); past them it traces the text within the revisions read and says so.
ORIGIN_HISTORY_REQUESTS = 10


#: MediaWiki's change tags of an edit that restored earlier text.
REVERT_TAGS = ("mw-undo", "mw-rollback", "mw-manual-revert")


#: The longest line of the diff find-text-origin shows whole; a longer one is cut around the text.
ORIGIN_LINE_CHARS = 3 * DIFF_CONTEXT_CHARS


#: The most lines of the text find-text-origin shows in its diff (a regular expression may span many).
ORIGIN_DIFF_LINES = 10


@tool("find-text-origin", "Find text origin", toolset="history", read_only=True)
def find_text_origin(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    text: Annotated[str, FindArg],
    regex: Annotated[bool, Arg("text is a regex.")] = False,
    revisionId: Annotated[int | None, Arg("Revision to search back from.", minimum=1)] = None,
) -> list[str]:
    """Finds who last added a text to a page and when, bisecting its history. Reads at most
    {text_origin_max_reads:revisions}."""
    pattern, what = find_pattern(text, regex, "text")
    page, redirected, history, complete = origin_history(ctx, title, revisionId)
    trail = TextTrail(ctx, functools.partial(match_spans, ctx, pattern, text),
                      [r for r in history if not r.get("sha1hidden")], ctx.state.config.text_origin_max_reads)
    header = labelled(("Title", page["title"]), ("Redirected from", redirected))
    start = history[0]["revid"]
    where = f"revision {start}" if revisionId else f"the page's current revision ({start})"
    if history[0].get("sha1hidden"):
        raise permission_denied(f"The text of revision {start} is hidden (revision deletion). "
                                + NEXT_STEP["permission_denied"])
    if not trail.has(0):
        return [(f"{header}\nNo match of {what} in the wikitext of {where}, so there is no addition to "
                 "trace. To trace a text since removed, call find-text-origin again with the revisionId of a "
                 "revision that has it (get-page-history lists them); a text a template shows, with the "
                 "template's title.")]
    try:
        trail.latest_addition()
        unchecked = trail.check_reverts()
    except ReadsSpent:
        return [f"{header}\n{origin_progress(trail, what)}",
                (f"Result capped at {counted(trail.most, 'revision read')}. To read on, call find-text-origin "
                 f"again with revisionId={trail.revisions[trail.present]['revid']}.")]
    return [f"{header}\n{origin_found(ctx, trail, history, complete, what, unchecked)}"]


class ReadsSpent(Exception):
    """find-text-origin read as many revisions as one call may (Config.text_origin_max_reads)."""


@dataclasses.dataclass
class TextTrail:
    """find-text-origin's bisection of a page's history: the revisions whose text can be read,
    newest first, and for each one read, or of the same text as one read (by SHA-1), whether the
    text is in it. ``present`` and ``absent`` are the positions the search has narrowed to."""
    ctx: ToolContext
    matches: Callable[[str], list[tuple[int, int]]]  # where the text is in a revision's (match_spans)
    revisions: list[dict[str, Any]]
    most: int
    reads: int = 0
    present: int = 0
    absent: int | None = None
    known: dict[str, bool] = dataclasses.field(default_factory=dict)  # by SHA-1
    texts: dict[str, str] = dataclasses.field(default_factory=dict)   # of present and absent, by SHA-1
    spans: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # the first match in each

    def key(self, position: int) -> str:
        revision = self.revisions[position]
        return revision.get("sha1") or f"#{revision['revid']}"

    def has(self, position: int) -> bool:
        """Whether the text is in the revision at ``position``: read once per distinct text."""
        key = self.key(position)
        if key not in self.known:
            if self.reads >= self.most:
                raise ReadsSpent
            revid = self.revisions[position]["revid"]
            self.ctx.progress(self.reads, self.most, f"reading revision {revid}")
            query = self.ctx.client.get({"action": "query", "revids": revid, "prop": "revisions",
                                         "rvprop": "content", "rvslots": "main"}).get("query", {})
            slot = main_slot(revision_of(next(iter(query.get("pages") or []), {})))
            self.reads += 1
            text = slot.get("content", "")  # hidden since the history was read: as if without it
            spans = self.matches(text)
            self.known[key] = bool(spans)
            self.texts[key] = text
            if spans:
                self.spans[key] = spans[0]
        return self.known[key]

    def latest_addition(self) -> None:
        """Narrows ``present`` and ``absent`` to the revision that added the text, last, and the one
        before it: back from the newest in doubling steps until a revision without it, then by
        halves. ``absent`` stays None when every revision back to the oldest has it."""
        last, step = len(self.revisions) - 1, 1
        while self.absent is None and self.present < last:
            self.found_at(min(self.present + step, last))
            step *= 2
        while self.absent is not None and self.absent - self.present > 1:
            self.found_at((self.present + self.absent) // 2)

    def found_at(self, position: int) -> None:
        if self.has(position):
            self.present = position
        else:
            self.absent = position
        # the newest is kept too, where a revert found after sends the search back to it
        kept = {self.key(p) for p in (0, self.present, self.absent) if p is not None}
        self.texts = {k: v for k, v in self.texts.items() if k in kept}  # a page's text may be large

    def check_reverts(self) -> list[dict[str, Any]]:
        """Checks each revision after the addition found that is tagged as a revert (REVERT_TAGS), newest
        first: a text removed and then restored by a revert is in the newest revision and the one found
        alike, and the bisection's steps can pass over both. Where the text is not in the revert, or not
        in the revision before it, the latest addition is after that one, and is narrowed to again. The
        reverts left unread when the reads run out, which the answer names."""
        checked: set[int] = set()
        while True:
            reverts = [p for p in range(self.present) if p not in checked
                       and set(self.revisions[p].get("tags") or ()) & set(REVERT_TAGS)]
            if not reverts:
                return []
            checked.add(reverts[0])
            try:
                lacks = next((p for p in (reverts[0], reverts[0] + 1) if not self.has(p)), None)
            except ReadsSpent:
                return [self.revisions[p] for p in reverts]
            if lacks == reverts[0] + 1:  # the revert brought it back
                self.present, self.absent = reverts[0], lacks
            elif lacks is not None:  # removed again since the revert: added after it
                self.present, self.absent = 0, lacks
                self.latest_addition()


def origin_history(ctx: ToolContext, title: str, start: int | None
                   ) -> tuple[dict[str, Any], str | None, list[dict[str, Any]], bool]:
    """A page's revisions, newest first from ``start`` (None: the latest), without their text, as many
    as ORIGIN_HISTORY_REQUESTS bring; its page, the title it was redirected from, and whether they
    reach back to its first revision."""
    params = {"action": "query", "titles": title, "redirects": True, "prop": "revisions", "rvlimit": "max",
              "rvprop": "ids|timestamp|user|comment|sha1|tags", "rvstartid": start}
    history: list[dict[str, Any]] = []
    data: dict[str, Any] = {"continue": {}}
    page: dict[str, Any] = {}
    redirected = None
    for _ in range(ORIGIN_HISTORY_REQUESTS):
        try:
            data = ctx.client.get({**params, **data["continue"]})
        except WikiError as error:
            if error.code == "badid_rvstartid" and start:
                raise no_such_revision(ctx, start) from None
            raise
        if not history:
            page, redirected = resolve_page(data.get("query", {}))
            check_page(ctx, page, title, redirected=redirected)
        history += resolve_page(data.get("query", {}))[0].get("revisions") or []
        if "continue" not in data:
            break
    if not history or (start and history[0]["revid"] != start):
        raise not_found(f"Revision {start} is not a revision of {page.get('title', title)}; "
                        "get-page-history lists its revision IDs.")
    return page, redirected, history, "continue" not in data


def origin_progress(trail: TextTrail, what: str) -> str:
    """Where a stopped bisection got to: the oldest revision read with the text, and the newest
    without it, if one was read."""
    have = trail.revisions[trail.present]
    text = f"{what[:1].upper()}{what[1:]} is in revision {have['revid']} ({have.get('timestamp')})"
    if trail.absent is None:
        return f"{text}; it came in an older revision, not read yet (revisions read: {trail.reads})."
    lacks = trail.revisions[trail.absent]
    return (f"{text} and not in revision {lacks['revid']} ({lacks.get('timestamp')}): one of the "
            f"{trail.absent - trail.present} revisions from there to {have['revid']} added it "
            f"(revisions read: {trail.reads}).")


def few(items: list[str], most: int = 5) -> str:
    """The first ``most`` items, comma-separated, and "and more" when there are more."""
    return ", ".join(items[:most]) + (" and more" if len(items) > most else "")


def adding_lines(old: str, new: str, span: tuple[int, int]) -> str:
    """The changes from ``old`` to ``new`` on the lines of ``new`` that ``span`` (the text found) is
    on, as compare-pages shows them; a long line cut around the text."""
    a, b = old.splitlines(), new.splitlines()
    first = new.count("\n", 0, span[0])
    last = min(new.count("\n", 0, max(span[1] - 1, span[0])), first + ORIGIN_DIFF_LINES - 1)
    blocks = line_changes(a, b, shown=True)
    touching = [(i1, i2, j1, j2) for i1, i2, j1, j2 in blocks
                if (j1 <= last and j2 > first if j2 > j1 else first < j1 <= last)] or blocks[:1]
    touching = [within_lines(block, first, last) for block in touching]
    column = span[0] - (new.rfind("\n", 0, span[0]) + 1)
    shown = []
    for line in compact_diff(diff_lines(a, b, touching)).split("\n"):
        if len(line) > ORIGIN_LINE_CHARS:
            own = line[1:] == b[first] if first < len(b) else False
            line = (line[0] + around(b[first], column, min(column + span[1] - span[0], len(b[first]))) if own
                    else line[:ORIGIN_LINE_CHARS] + "…")
        shown.append(line)
    return "\n".join(shown)


def within_lines(block: tuple[int, int, int, int], first: int, last: int) -> tuple[int, int, int, int]:
    """A changed block (line_changes) whose new side reaches past lines ``first`` to ``last`` (a page
    made, a passage pasted with the text) cut to those: added after the old line they follow."""
    i1, i2, j1, j2 = block
    if j1 >= first and j2 <= last + 1 or i1 < i2 and j2 - j1 <= last - first + 1:
        return block  # within the text's lines, or lines replaced (their old side shown whole)
    at = min(i1 + max(first - j1, 0), i2)
    return at, at, max(j1, first), min(j2, last + 1)


def origin_found(ctx: ToolContext, trail: TextTrail, history: list[dict[str, Any]], complete: bool,
                 what: str, unchecked: list[dict[str, Any]]) -> str:
    """The answer of a finished bisection: the revision that added the text, its diff line, the
    revisions after it that were not read (and the reverts among them, ``unchecked``, that the reads
    did not reach), what the reads showed of earlier additions, and the gaps in the history."""
    added = trail.revisions[trail.present]
    before = trail.revisions[trail.absent] if trail.absent is not None else None
    if before is not None:
        found = (f"its latest addition: {what} is in revision {added['revid']} and each one read after it, "
                 f"not in revision {before['revid']} before it")
    elif complete and added is history[-1]:
        found = f"the page's first revision: {what} is in it and in each one read after it"
    elif complete:
        found = f"the oldest revision whose text is not hidden: {what} is in it and in each one read after it"
    else:
        found = (f"the oldest revision read: the history reads back no further (call find-text-origin again "
                 f"with revisionId={added['revid']} to go on)")
    # what the reads passed over after it: a text removed and put back there would not show
    unread = [r for position, r in enumerate(trail.revisions[:trail.present])
              if trail.key(position) not in trail.known]
    unread_reverts = any(set(r.get("tags") or ()) & set(REVERT_TAGS) for r in unread)
    earlier = earlier_evidence(trail, added)  # it may read one more revision: before they are counted
    read = f"{trail.reads} of {len(history)}{'' if complete else ' and more'} in the history"
    reverts = ", ".join(f"{r['revid']} ({', '.join(t for t in r.get('tags') or () if t in REVERT_TAGS)})"
                        for r in unchecked)
    lines = [labelled(
        ("Added in revision", added["revid"]), ("Found", found), ("Timestamp", added.get("timestamp")),
        ("User", revision_user(added)),
        ("Edit summary", "(hidden)" if added.get("commenthidden") else added.get("comment")),
        ("Tags", ", ".join(added.get("tags") or [])),
        ("Diff", ctx.site.index_url(diff=added["revid"], oldid=before["revid"]) if before
         else ctx.site.index_url(oldid=added["revid"])),
        ("Revisions read", read),
        ("Not read after it", unread and (
            f"{few([str(r['revid']) for r in unread])} ({len(unread)} of the {trail.present} after it"
            f"{'' if unread_reverts else ', none tagged as a revert'}): a text removed and put back there by "
            "an edit not tagged as a revert would not show")),
        ("Unchecked reverts", unchecked and (
            f"{reverts}, after it, restore earlier text, and the reads ran out before them: where one "
            f"restored this text after a removal, it is the latest addition. To check, call find-text-origin "
            f"again with revisionId={unchecked[0]['revid']}.")))]
    key = trail.key(trail.present)
    old = trail.texts.get(trail.key(trail.absent), "") if trail.absent is not None else ""
    lines.append("Diff line that added it:\n" + adding_lines(old, trail.texts[key], trail.spans[key]))
    lines += filter(None, [earlier, history_gaps(history, complete, added, before)])
    return "\n".join(lines)


def earlier_evidence(trail: TextTrail, added: dict[str, Any]) -> str | None:
    """What says the text was in the page before its latest addition, found cheaply: an older revision
    of the same text as one with it (by SHA-1), the page's oldest revision read when reads are left,
    or a revert tag on the revision that added it."""
    if trail.absent is not None:
        last = len(trail.revisions) - 1
        with contextlib.suppress(ReadsSpent):
            trail.has(last)
        for position in range(trail.absent + 1, last + 1):
            if trail.known.get(trail.key(position)):
                revision = trail.revisions[position]
                return (f"Earlier: it was also in revision {revision['revid']} ({revision.get('timestamp')}, "
                        f"{revision_user(revision)}): it was removed and added again since.")
    reverts = [tag for tag in added.get("tags") or [] if tag in REVERT_TAGS]
    if reverts:
        return (f"Earlier: the revision that added it is a revert ({', '.join(reverts)}), which restores "
                "older text.")
    return None


def history_gaps(history: list[dict[str, Any]], complete: bool, added: dict[str, Any],
                 before: dict[str, Any] | None) -> str | None:
    """The history's gaps: revisions whose text is hidden, and revisions whose parent is not the one
    before them (deleted revisions, out of reach)."""
    hidden = [str(r["revid"]) for r in history if r.get("sha1hidden")]
    follows = [r["revid"] for r in history[1:]] + ([0] if complete else [])
    orphans = [f"{r['revid']} ({r.get('parentid')})" for r, parent in zip(history, follows)
               if r.get("parentid") != parent]
    if not hidden and not orphans:
        return None
    parts = [f"the text of {few(hidden)} is hidden" if hidden else "",
             f"the parent{'s' if len(orphans) > 1 else ''} of {few(orphans)} "
             f"{'are' if len(orphans) > 1 else 'is'} deleted" if orphans else ""]
    between = added.get("parentid") != (before["revid"] if before else 0)
    return ("History gaps: " + "; ".join(filter(None, parts)) + ". Those revisions are out of reach"
            + (f"; one of them, before revision {added['revid']}, may have added it." if between else "."))


# ---------------------------------------------------------------------------
# read_links.py: Read tools for structure: categories and their trees, links, recent changes, parsing and
# templates' parameters.
# ---------------------------------------------------------------------------

@tool("get-category-members", "Get category members", toolset="pages", read_only=True, continue_from=True)
def get_category_members(
    ctx: ToolContext,
    category: Annotated[str, Arg("Category name; Category: optional.", title=True)],
    types: Annotated[list[Literal["page", "subcat", "file"]] | None, Arg(
        'Member types.', max_items=3)] = None,
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most members.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns a category's member counts, then its members."""
    title = title_in_namespace(ctx.site, category, 14)
    data = ctx.client.get({"action": "query", "list": "categorymembers", "cmtitle": title, "cmtype": types,
                           "cmprop": "title|type", "cmnamespace": namespaces, "cmlimit": limit, "titles": title,
                           "prop": "categoryinfo", **continuation(ctx, "cmcontinue")})
    query = data.get("query", {})
    members = query.get("categorymembers") or []
    page = next(iter(query.get("pages") or []), None)  # absent when continuing
    if page is not None:
        check_page(ctx, page, category, must_exist=False)
        title = page.get("title", title)
        if page.get("missing") and not members and not page.get("categoryinfo"):
            raise not_found(f"{title} has no page and no members on {ctx.wiki.key}. "
                            "search-page-by-prefix with namespace=14 finds existing categories.")
    rows = [m["title"] + (f" | {m['type']}" if m.get("type", "page") != "page" else "") for m in members]
    head = title + (" (no category page)" if page and page.get("missing") else "")
    if page is not None and (info := page.get("categoryinfo")):
        head += (f" (pages: {info.get('pages', 0)}, subcategories: {info.get('subcats', 0)}, "
                 f"files: {info.get('files', 0)})")
    return listing(data, rows, f"{head}:", f"{head}\nNo members match.", "member", "get-category-members")


#: The most requests one get-category-tree call sends: one for the category, one for each category
#: whose members it lists; past them the answer is capped, naming the next call.
CATEGORY_TREE_REQUESTS = 50


@tool("get-category-tree", "Get category tree", toolset="pages", read_only=True)
def get_category_tree(
    ctx: ToolContext,
    category: Annotated[str, Arg("Category name; Category: optional.", title=True)],
    depth: Annotated[int, Arg("Subcategory levels.", minimum=1, maximum=5)] = 2,
    pages: Annotated[bool, Arg("Also list pages and files.")] = False,
) -> list[str]:
    """Returns a category's subcategories to a depth with member counts; names cycles."""
    title = title_in_namespace(ctx.site, category, 14)
    page, _ = query_page(ctx, titles=title, prop="categoryinfo")
    check_page(ctx, page, category, must_exist=False)
    root = CategoryNode(page.get("title", title), page.get("categoryinfo") or {}, ())
    if page.get("missing") and not root.info:
        raise not_found(f"{root.title} has no page and no members on {ctx.wiki.key}. "
                        "search-page-by-prefix with namespace=14 finds existing categories.")
    seen, level, requests = {root.title}, [root], 1
    for step in range(depth + 1 if pages else depth):
        last = step == depth  # the categories at the depth asked: their pages only
        wanted = [node for node in level if node.listed(pages, last)]
        level = []
        for node, members in zip(wanted, run_each(
                functools.partial(category_members, ctx, pages=pages, last=last),
                [node.title for node in wanted[:CATEGORY_TREE_REQUESTS - requests]])):
            node.expand(members, seen)
            level += [child for child in node.children if not child.note]
        requests += min(len(wanted), CATEGORY_TREE_REQUESTS - requests)
    return category_tree_blocks(root, depth, pages, ctx.budget)


@dataclasses.dataclass(eq=False)
class CategoryNode:
    """A category in get-category-tree's answer: its counts (categoryinfo), the categories above it,
    what its members are once listed, and why it is not listed further (a cycle, a repeat)."""
    title: str
    info: Mapping[str, int]
    above: tuple[str, ...]
    children: list[CategoryNode] = dataclasses.field(default_factory=list)
    pages: list[str] = dataclasses.field(default_factory=list)
    listed_all: bool | None = None  # None: its members were not listed; False: only the first request's
    note: str = ""

    def listed(self, pages: bool, last: bool) -> bool:
        """Whether its members are worth a request: it has subcategories to show, or pages asked for."""
        return not self.note and (bool(self.info.get("subcats")) and not last
                                  or pages and bool(self.info.get("pages") or self.info.get("files")))

    def expand(self, members: tuple[list[dict[str, Any]], bool], seen: set[str]) -> None:
        found, self.listed_all = members
        path = (*self.above, self.title)
        for member in sorted(found, key=lambda m: m.get("title", "")):
            name = member.get("title", "")
            if member.get("ns") != 14:
                self.pages.append(name)
                continue
            child = CategoryNode(name, member.get("categoryinfo") or {}, path)
            if name in path:
                child.note = "cycle: " + " → ".join((*path[path.index(name):], name))
            elif name in seen:
                child.note = "shown elsewhere in this tree"
            seen.add(name)
            self.children.append(child)

    def walk(self) -> Iterator[CategoryNode]:
        """It and the categories below it, each before its children."""
        yield self
        for child in self.children:
            yield from child.walk()

    def row(self) -> str:
        """Its row in the tree, indented by its depth: its title, counts and notes."""
        counts = [f"{label}: {self.info[key]}" for key, label in
                  (("pages", "pages"), ("subcats", "subcategories"), ("files", "files")) if self.info.get(key)]
        notes = [*counts, self.note, "" if self.listed_all is not False else "first members only"]
        shown = ", ".join(filter(None, notes))
        return f"{'  ' * len(self.above)}{self.title}" + (f" ({shown})" if shown else "")


def category_members(ctx: ToolContext, title: str, pages: bool,
                     last: bool) -> tuple[list[dict[str, Any]], bool]:
    """A category's subcategories (at the ``last`` level none) and, if ``pages``, its pages and files,
    each subcategory with its counts: one request; and whether that was all of them."""
    kinds = ["page", "file"] if pages else []
    data = ctx.client.get({"action": "query", "generator": "categorymembers", "gcmtitle": title,
                           "gcmtype": kinds if last else ["subcat", *kinds], "gcmlimit": "max",
                           "prop": "categoryinfo"})
    return (data.get("query") or {}).get("pages") or [], "continue" not in data


def category_tree_blocks(root: CategoryNode, depth: int, pages: bool, budget: int) -> list[str]:
    """The tree as indented rows, within ``budget`` bytes; a marker naming the first category cut,
    and the categories shown whose members were left unlisted (the request cap), if any."""
    legend = (f"Subcategories of {root.title} to depth {depth}, each under its parent with its counts "
              "(0 left out)" + ("; its pages and files as '- ' rows" if pages else "") + ":")
    rows, size, cut, count = [legend], utf8_len(legend), None, 0
    unlisted: list[CategoryNode] = []
    for node in root.walk():
        lines = [node.row()] + [f"{'  ' * len(node.above)}  - {name}" for name in node.pages]
        more = utf8_len("\n".join(lines)) + 1
        if size + more > budget and node.pages:  # else a call from this category would be cut here again
            lines = pages_within(lines, budget - size, node)
            more = utf8_len("\n".join(lines)) + 1
        if size + more > budget:
            cut = node
            break
        if node.listed_all is None and node.listed(pages, last=len(node.above) == depth):
            unlisted.append(node)
        rows += lines
        size, count = size + more, count + 1
    blocks = ["\n".join(rows)]
    said = []
    if cut is not None:
        # the levels left below the category cut, and its pages if they were asked for
        rest = call_args(category=cut.title, depth=max(depth - len(cut.above), 1),
                         **({"pages": True} if pages else {}))
        said.append(f"Result capped at {count} {'category' if count == 1 else 'categories'}. Additional "
                    f"categories may exist — to see them, call get-category-tree again with {rest}.")
    if unlisted:
        said.append(unlisted_members(unlisted, depth, pages))
    return blocks + [" ".join(said)] if said else blocks


def unlisted_members(nodes: list[CategoryNode], depth: int, pages: bool) -> str:
    """The marker of the categories shown whose members the request cap left unlisted, and the
    calls that list them: the subcategories (and pages) of those above the depth asked, the pages
    and files of the others."""
    above = [node for node in nodes if node.info.get("subcats") and len(node.above) < depth]
    rest = [node for node in nodes if node not in above]
    kinds, calls = [], []
    if above:
        what = "subcategories and pages" if pages else "subcategories"
        first = call_args(category=above[0].title, depth=depth - len(above[0].above),
                          **({"pages": True} if pages else {}))
        kinds.append(f"the {what} of {', '.join(node.title for node in above)}")
        calls.append(f"get-category-tree again with {first} (a category's {what})")
    if rest:
        kinds.append(f"the pages and files of {', '.join(node.title for node in rest)}")
        calls.append(f"get-category-members with {call_args(category=rest[0].title)} "
                     "(a category's pages and files)")
    return (f"Result capped at {CATEGORY_TREE_REQUESTS} requests (the counts, then one a category listed): "
            f"{'' if above else 'every category is shown, but '}{' and '.join(kinds)} are not listed. To list "
            f"them, call {', or '.join(calls)}.")


def pages_within(lines: list[str], room: int, node: CategoryNode) -> list[str]:
    """A category's row and the rows of as many of its pages as fit in ``room`` bytes, then a row
    naming the call that lists the rest."""
    def rest(left: int) -> str:
        return (f"{'  ' * len(node.above)}  - … {left} more: get-category-members with "
                f"category={json.dumps(node.title, ensure_ascii=False)} lists them")
    kept = lines[:1]
    for line in lines[1:]:
        if utf8_len("\n".join([*kept, line, rest(len(lines) - len(kept) - 1)])) + 1 > room:
            break
        kept.append(line)
    return [*kept, rest(len(lines) - len(kept))]


#: Each kind of get-links-here: its list module, that module's parameter prefix, how a row says it,
#: and whether it follows redirects.
LINK_KINDS = {"wikilinks": ("backlinks", "bl", "", True),
              "transclusions": ("embeddedin", "ei", "transclusion", False),
              "fileusage": ("imageusage", "iu", "file link", True)}


@tool("get-links-here", "Get links here", toolset="pages", read_only=True, continue_from=True,
      see={"for what a page uses": "get-page-links"})
def get_links_here(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    types: Annotated[list[Literal["wikilinks", "transclusions", "fileusage"]] | None, Arg(
        'Link kinds.', max_items=3)] = None,
    namespaces: Namespaces = None,
    limit: Annotated[int, Arg("Most pages per kind.", minimum=1, maximum=250)] = 50,
) -> list[str]:
    """Returns pages that link to, transclude or (files) show a page, marked by how."""
    is_file = ctx.site.namespace_of(title) == 6
    if types and "fileusage" in types and not is_file:
        raise invalid_input(f"types 'fileusage' applies to File: pages only; {title!r} is not one.")
    kinds = list(dict.fromkeys(types)) if types else [k for k in LINK_KINDS if k != "fileusage" or is_file]
    used = [LINK_KINDS[k] for k in kinds]
    params: dict[str, Any] = {"action": "query", "titles": title, "list": [module for module, *_ in used]}
    for _, prefix, _, redirects in used:
        params.update({f"{prefix}title": title, f"{prefix}limit": limit,
                       f"{prefix}namespace": namespaces, f"{prefix}redirect": redirects})
    data = ctx.client.get({**params, **continuation(ctx, "blcontinue", "eicontinue", "iucontinue")})
    query = data.get("query", {})
    page = next(iter(query.get("pages") or []), None)  # absent when continuing
    if page is not None:
        check_page(ctx, page, title, must_exist=False)
        title = page.get("title", title)
    rows = []
    for module, _, how, _ in used:
        for link in query.get(module) or []:
            redirect = "redirect" if link.get("redirect") else ""
            rows.append(" | ".join(filter(None, [link["title"], how, redirect])))
            rows += [" | ".join(filter(None, [via["title"], how, f"via {link['title']}"]))
                     for via in link.get("redirlinks") or []]
    missing = " (the page does not exist)" if page and page.get("missing") else ""
    return listing(data, rows, f"Pages that link to {title}{missing}:", f"No pages link to {title}{missing}.",
                   "page", "get-links-here")


#: What a page links to and uses, in the order a get-page-links answer lists them: the prop module,
#: its parameters' prefix, how a row says it.
PAGE_USES = (("links", "pl", "link"), ("templates", "tl", "template"), ("categories", "cl", "category"),
             ("images", "im", "file"))


#: Rows of each kind a get-page-links call returns before its continueFrom marker (its description says it).
PAGE_USES_CAP = 100


@tool("get-page-links", "Get page links", toolset="pages", read_only=True, continue_from=True,
      see={"for pages linking to it": "get-links-here"})
def get_page_links(ctx: ToolContext, title: Annotated[str, TitleArg]) -> list[str]:
    """Returns the links, templates, categories and files a page uses. At most 100 of each a
    call."""
    data = ctx.client.get({"action": "query", "titles": title, "redirects": True,
                           **{f"{prefix}limit": PAGE_USES_CAP for _, prefix, _ in PAGE_USES},
                           "prop": "|".join(prop for prop, _, _ in PAGE_USES), "clprop": "hidden",
                           **continuation(ctx, *(f"{prefix}continue" for _, prefix, _ in PAGE_USES))})
    page, redirected = resolve_page(data.get("query", {}))
    check_page(ctx, page, title, redirected=redirected)
    rows = [f"{used['title']} | {note}" + (", hidden" if used.get("hidden") else "")
            for prop, _, note in PAGE_USES for used in page.get(prop) or []]
    name = page["title"] + (f" (redirected from {redirected})" if redirected else "")
    return listing(data, rows, f"{name} uses:", f"{name} has no links, templates, categories or files.",
                   "row", "get-page-links")


RC_HIDE = {"minor": "!minor", "bot": "!bot", "anonymous": "!anon", "registered": "anon",
           "redirects": "!redirect"}


RC_LEGEND = ("time | page | change | user | size change | flags (minor, bot; only when any) | "
             "tags (only when any) | edit summary (quoted, only when any)")


Start = Annotated[str | None, name_arg(
    "Earliest time listed: ISO 8601 (UTC unless zoned), a date, today, yesterday or an age (3 days ago).")]


End = Annotated[str | None, name_arg("Latest time listed, in start's forms; a date means its end.")]


ChangeTypes = Annotated[list[Literal["edit", "new", "log", "categorize"]] | None,
                        Arg("Default: edit, new, log.", max_items=4)]


ChangeUser = Annotated[str | None, name_arg("Only this account's.")]


ExcludeUser = Annotated[str | None, name_arg("Not this account's.")]


ChangeLimit = Annotated[int, Arg("Most changes.", minimum=1, maximum=500)]


@tool("get-recent-changes", "Get recent changes", toolset="changes", read_only=True, continue_from=True,
      see={"for one page": "get-page-history"})
def get_recent_changes(
    ctx: ToolContext, start: Start = None, end: End = None, namespaces: Namespaces = None,
    types: ChangeTypes = None, user: ChangeUser = None, excludeUser: ExcludeUser = None,
    tag: Annotated[str | None, name_arg("Only with this change tag.")] = None,
    hide: Annotated[list[Literal["minor", "bot", "anonymous", "registered", "redirects"]] | None, Arg(
        "Changes to leave out.", max_items=5)] = None,
    limit: ChangeLimit = 50,
) -> list[str]:
    """Returns the wiki's recent changes, newest first: time, page, revision ID or log action, user,
    size change, then flags, tags and summary."""
    return ChangeFilters(start, end, namespaces, types, user, excludeUser, hide, limit).listed(
        ctx, "recentchanges", {"rctag": tag}, "Recent changes", "changes", "get-recent-changes")


class ChangeFilters(typing.NamedTuple):
    """The filters that get-recent-changes and get-watchlist share, as the call gives them."""
    start: str | None
    end: str | None
    namespaces: list[int] | None
    types: Sequence[str] | None
    user: str | None
    exclude_user: str | None
    hide: Sequence[str] | None
    limit: int

    def listed(self, ctx: ToolContext, module: str, params: Mapping[str, Any], heading: str, what: str,
               tool_name: str) -> list[str]:
        """One page of list=recentchanges or list=watchlist so filtered, newest first, a row each."""
        if self.user and self.exclude_user:
            raise invalid_input("Give user or excludeUser, not both.")
        if self.hide and {"anonymous", "registered"} <= set(self.hide):
            raise invalid_input("Hiding both anonymous and registered users leaves no changes; hide one.")
        oldest, newest = time_window(self.start, self.end)
        prefix = {"recentchanges": "rc", "watchlist": "wl"}[module]
        data = ctx.client.get({"action": "query", "list": module, **params, **{
            f"{prefix}{name}": value for name, value in (
                ("dir", "older"), ("start", newest), ("end", oldest),
                ("prop", "title|ids|sizes|flags|user|timestamp|comment|loginfo|tags"),
                ("namespace", self.namespaces), ("type", self.types or ["edit", "new", "log"]),
                ("user", self.user), ("excludeuser", self.exclude_user),
                ("show", [RC_HIDE[h] for h in self.hide or []] or None), ("limit", self.limit))},
            **continuation(ctx, f"{prefix}continue")})
        rows = [change_row(c) for c in data.get("query", {}).get(module) or []]
        return listing(data, rows, f"{heading}, newest first ({RC_LEGEND}):", f"No {what} match.", "change",
                       tool_name)


def time_window(start: str | None, end: str | None) -> tuple[str | None, str | None]:
    """The oldest and newest time asked for, in MediaWiki's form; a start after the end is refused."""
    oldest = wiki_timestamp(start, "start") if start else None
    newest = wiki_timestamp(end, "end", day_end=True) if end else None
    if newest and oldest and oldest > newest:
        raise invalid_input(f"start ({oldest}) is after end ({newest}).")
    return oldest, newest


def change_row(change: dict[str, Any]) -> str:
    kind = str(change.get("type"))
    what = {"edit": f"revision {change.get('revid')}", "new": f"new page, revision {change.get('revid')}",
            "log": f"log {change.get('logtype')}/{change.get('logaction')}"}.get(kind, kind)
    size = (signed(change["newlen"] - change.get("oldlen", 0))
            if kind in ("edit", "new") and "newlen" in change else "")
    flags = ", ".join(f for f in ("minor", "bot") if change.get(f))
    parts = [change.get("timestamp", ""), change.get("title", ""), what,
             "(hidden)" if change.get("userhidden") else change.get("user", ""), size, flags,
             row_tags(change), row_summary(change)]
    return " | ".join(p for p in parts if p)


@tool("parse-wikitext", "Preview wikitext", toolset="pages", read_only=True)
def parse_wikitext(
    ctx: ToolContext,
    wikitext: Annotated[str, Arg("Wikitext to render.", max_length=MAX_TEXT_CHARS,
                                      max_length_listed=False)],
    title: Annotated[str | None, Arg("Page title it renders as; default: API.",
                                     title=True)] = None,
    offset: Annotated[int, OffsetArg] = 0,
) -> list[str]:
    """Renders wikitext unsaved (signatures, subst: expanded): HTML, warnings, links, templates,
    categories. HTML truncated at {content_max_bytes:bytes}."""
    if not wikitext.strip():
        raise invalid_input("Argument 'wikitext' must contain something to render.")
    lists = "" if offset else "|links|templates|categories|externallinks|parsewarnings|displaytitle"
    parsed = ctx.client.get({
        "action": "parse", "text": wikitext, "title": title, "contentmodel": "wikitext", "pst": True,
        "prop": "text" + lists,
        "disableeditsection": True, "disablelimitreport": True,
    }).get("parse", {})
    display = strip_tags(parsed.get("displaytitle", ""))
    lines = [("Rendered as", parsed.get("title"))]
    if not offset:  # the lists came with the first call
        lines += [
            ("Display title", display if display != parsed.get("title") else None),
            ("Warnings", "; ".join(one_line(w) for w in parsed.get("parsewarnings") or []))]
        listed = {"Links": existence_list(parsed.get("links")), "Templates": existence_list(parsed.get("templates")),
                  "Categories": [c["category"].replace("_", " ") + (" (missing)" if c.get("missing") else "")
                                 for c in parsed.get("categories") or []],
                  "External links": parsed.get("externallinks") or []}
        left = ctx.budget // OUTLINE_SHARE  # the lists share what a marker's list of sections may take
        shown: dict[str, str] = {}
        # the shortest first, each at most an even share of what is left: hundreds of links leave
        # room for the few categories
        for n, label in enumerate(sorted(listed, key=lambda label: utf8_len(", ".join(listed[label])))):
            shown[label] = joined_within(listed[label], left // (len(listed) - n))
            left = max(left - utf8_len(shown[label]), 0)
        lines += [(label, shown[label]) for label in listed]
    return content_blocks(labelled(*lines), parsed.get("text", ""), offset, ctx.budget, "parse-wikitext",
                          sections=None, again=None)[0]


TEMPLATE_LEGEND = ("name | type | required, suggested or deprecated | label | aliases | default | example | "
                   "description (quoted); each only when set")


@tool("get-template-info", "Get template info", toolset="pages", read_only=True)
def get_template_info(
    ctx: ToolContext,
    title: Annotated[str, Arg("Template name; Template: optional.", title=True)],
) -> str:
    """Returns a template's parameters and description from TemplateData, else from its
    {{{{{{name|default}}}}}} uses."""
    name = title_in_namespace(ctx.site, title, 10)
    if "templatedata" in ctx.client.extensions:
        data = ctx.client.get({"action": "templatedata", "titles": name, "redirects": True,
                               "lang": ctx.site.lang, "includeMissingTitles": True})
        found: dict[str, Any] = next(iter((data.get("pages") or {}).values()), {})
        redirected = next((r.get("from") for r in data.get("redirects") or []), None)
        check_page(ctx, found, title)
        if not found.get("notemplatedata"):
            params = found.get("params") or {}
            order = [p for p in found.get("paramOrder") or [] if p in params] or list(params)
            shape = found.get("format")  # 'inline', 'block', or a custom format string
            header = labelled(("Template", found.get("title")), ("Redirected from", redirected),
                              ("Description", found.get("description")),
                              ("Format", shape if shape in ("inline", "block", None)
                               else json.dumps(shape, ensure_ascii=False)))
            return header + (f"\nParameters ({TEMPLATE_LEGEND}):\n" + "\n".join(
                template_param_row(p, params[p]) for p in order) if order else "\nIt takes no parameters.")
    page, redirected = query_page(ctx, titles=name, redirects=True, prop="revisions", rvprop="content",
                                  rvslots="main")
    check_page(ctx, page, title, redirected=redirected)
    source = main_slot(revision_of(page)).get("content", "")
    inferred: dict[str, tuple[int, str | None]] = {}  # name: where it first is, its default
    for node in preprocess(source, ctx.site.syntax, inclusion=True)[1]:
        if node.kind == "tplarg" and node.name and "{" not in node.name:
            default = source[slice(*node.parts[1])] if len(node.parts) > 1 else None
            first, known = inferred.get(node.name, (node.start, None))
            inferred[node.name] = (min(first, node.start), known if known is not None else default)
    header = labelled(("Template", page.get("title")), ("Redirected from", redirected))
    if not inferred:
        return f"{header}\nIt has no TemplateData, and its source reads no parameters ({{{{{{name}}}}}})."
    rows = [name + (f" | default: {json.dumps(default, ensure_ascii=False)}" if default is not None else "")
            for name, (_, default) in sorted(inferred.items(), key=lambda item: (
                not item[0].isdigit(), int(item[0]) if item[0].isdigit() else item[1][0]))]
    return (f"{header}\nIt has no TemplateData: its parameters are inferred from {{{{{{name|default}}}}}} "
            "in its source (name | default, only when it has one):\n" + "\n".join(rows))


def template_param_row(name: str, param: Mapping[str, Any]) -> str:
    # TemplateData's deprecated is true or the reason, as text
    flags = [f"deprecated: {json.dumps(one_line(param[flag]), ensure_ascii=False)}"
             if flag == "deprecated" and isinstance(param[flag], str) else flag
             for flag in ("required", "suggested", "deprecated") if param.get(flag)]
    parts = [name, param.get("type") if param.get("type") not in (None, "unknown") else "", ", ".join(flags)]
    parts += [f"{key}: {one_line(param[key]) if key != 'aliases' else ', '.join(param[key])}"
              for key in ("label", "aliases", "default", "example") if param.get(key)]
    if param.get("description"):
        parts.append(json.dumps(one_line(param["description"]), ensure_ascii=False))
    return " | ".join(p for p in parts if p)


def existence_list(items: list[dict[str, Any]] | None) -> list[str]:
    return [i["title"] + ("" if i.get("exists") else " (missing)") for i in items or []]


# ---------------------------------------------------------------------------
# read_users.py: Read tools for people and files: contributions, logs, the watchlist, and file information and
# data.
# ---------------------------------------------------------------------------

def has_account(state: ServerState) -> bool:
    """Whether some wiki is used with an account: only an account has a watchlist."""
    return any(client.authenticated for _, _, client in state.entries())


CONTRIBUTIONS_LEGEND = ("revision ID | timestamp | page | size change | new, minor, latest (only when so) | "
                        "tags (only when any) | edit summary (quoted, only when any)")


@tool("get-user-contributions", "Get user contributions", toolset="changes",
      read_only=True, continue_from=True,
      see={"for all users": "get-recent-changes", "for one page": "get-page-history"})
def get_user_contributions(
    ctx: ToolContext,
    user: Annotated[str, name_arg("Account, IP address or CIDR range.")],
    namespaces: Namespaces = None,
    start: Start = None,
    end: End = None,
    oldestFirst: Annotated[bool, Arg("Oldest first.")] = False,
    limit: Annotated[int, Arg("Most edits.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns a user's (or IP range's) edits, newest first: revision ID, time, page, size change,
    then new, minor, latest, tags and summary."""
    name = user_name(user)
    oldest, newest = time_window(start, end)
    by_range = "/" in name
    params: dict[str, Any] = {
        "action": "query", "list": "usercontribs", "uciprange" if by_range else "ucuser": name,
        "ucnamespace": namespaces, "ucdir": "newer" if oldestFirst else "older",
        "ucstart": oldest if oldestFirst else newest, "ucend": newest if oldestFirst else oldest,
        "ucprop": "ids|title|timestamp|comment|sizediff|flags|tags", "uclimit": limit,
        **continuation(ctx, "uccontinue")}
    data = user_checked(ctx, params, None if by_range else name)
    rows = [contribution_row(edit) for edit in data.get("query", {}).get("usercontribs") or []]
    order = "oldest" if oldestFirst else "newest"
    return listing(data, rows, f"Edits by {name}, {order} first ({CONTRIBUTIONS_LEGEND}):",
                   f"No edits by {name} match.", "edit", "get-user-contributions")


def user_checked(ctx: ToolContext, params: dict[str, Any], name: str | None) -> dict[str, Any]:
    """The answer to a listing by user ``name``; not_found when there is no such account (asked in the
    same request, on a first call): an empty listing would otherwise read as "this user did nothing"."""
    if name and not ctx.continue_from:
        params = {**params, "list": [params["list"], "users"], "ususers": name}
    data = ctx.client.get(params)
    if (data.get("query", {}).get("users") or [{}])[0].get("missing"):
        raise not_found(f"There is no user {name!r} on {ctx.wiki.key}. User names are as the wiki shows "
                        "them, case-sensitive after the first letter.")
    return data


def user_name(text: str) -> str:
    """A user name, IP address or IP range as MediaWiki writes it (underscores as spaces, the
    first letter capital, IPv6 in capitals); '|' would name several users."""
    name = " ".join(text.replace("_", " ").split())
    if not name or "|" in name:
        raise invalid_input(f"Argument 'user' must name one user (an account, IP address or IP range), "
                            f"without '|'; got {text!r}.")
    try:
        ipaddress.ip_network(name, strict=False)
    except ValueError:
        return name[:1].upper() + name[1:]
    return name.upper()


def without_user_namespace(site: SiteInfo, text: str) -> str:
    """A user name given as a user page's title (User:Name, Benutzer:Name: any of the wiki's
    names for the namespace) as the name alone; any other text as it is."""
    return text.partition(":")[2] if site.namespace_of(text) == 2 else text


def contribution_row(edit: dict[str, Any]) -> str:
    flags = ", ".join(flag for flag, key in (("new", "new"), ("minor", "minor"), ("latest", "top"))
                      if edit.get(key))
    parts = [str(edit.get("revid", "")), edit.get("timestamp", ""), edit.get("title", ""),
             signed(edit["sizediff"]) if "sizediff" in edit else "", flags, row_tags(edit), row_summary(edit)]
    return " | ".join(p for p in parts if p)


LOG_LEGEND = "time | type/action | user | page | details (only when any) | reason (quoted, only when any)"


@tool("get-log-events", "Get log events", toolset="changes", read_only=True, continue_from=True,
      see={"for edits": "get-recent-changes"})
def get_log_events(
    ctx: ToolContext,
    type: Annotated[str | None, name_arg(f"Log type: {', '.join(STANDARD_CHOICES['log type'][:7])}, ...")] = None,
    title: Annotated[str | None, Arg("Only about this page.", title=True)] = None,
    user: Annotated[str | None, name_arg("Only by this account.")] = None,
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Arg("Most events.", minimum=1, maximum=500)] = 50,
) -> list[str]:
    """Returns log events (deletions, moves, protections, uploads, blocks, ...), newest first: time,
    type/action, user, page, then details and reason."""
    oldest, newest = time_window(start, end)
    refuse_unknown_choice(ctx, "log type", type, "")
    name = user_name(user) if user is not None else None
    params: dict[str, Any] = {"action": "query", "list": "logevents", "letype": type, "letitle": title,
                              "leuser": name, "lestart": newest, "leend": oldest, "lelimit": limit,
                              "leprop": "title|type|user|timestamp|comment|details",
                              **continuation(ctx, "lecontinue")}
    data = user_checked(ctx, params, name)
    rows = [log_row(event) for event in data.get("query", {}).get("logevents") or []]
    return listing(data, rows, f"Log events, newest first ({LOG_LEGEND}):", "No log events match.", "event",
                   "get-log-events")


def log_row(event: dict[str, Any]) -> str:
    hidden = event.get("actionhidden")
    parts = [event.get("timestamp", ""), f"{event.get('type')}/{event.get('action')}",
             "(hidden)" if event.get("userhidden") else event.get("user", ""),
             "(hidden)" if hidden else event.get("title", ""), "" if hidden else log_details(event),
             row_summary(event)]
    return " | ".join(p for p in parts if p)


def log_details(event: dict[str, Any]) -> str:
    """What a log event's parameters say: a move's target, protection levels, else each one."""
    params = event.get("params") or {}
    if event.get("type") == "move" and params.get("target_title"):
        return f"to {params['target_title']}" + (", no redirect" if params.get("suppressredirect") else "")
    if event.get("type") == "protect" and "details" in params:
        return protection_text(params["details"])
    shown = {k: v for k, v in params.items() if v not in (None, "", [], {}, False) and k != "description"}
    return "; ".join(k if v is True else f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}"
                     for k, v in shown.items())


@tool("get-watchlist", "Get watchlist", toolset="changes",
      read_only=True, continue_from=True, rights=("viewmywatchlist",),
      offered=has_account)
def get_watchlist(
    ctx: ToolContext, start: Start = None, end: End = None, namespaces: Namespaces = None,
    types: ChangeTypes = None, user: ChangeUser = None, excludeUser: ExcludeUser = None,
    hide: Annotated[list[Literal["minor", "bot", "anonymous", "registered"]] | None, Arg(
        "Changes to leave out.", max_items=4)] = None,
    limit: ChangeLimit = 50,
) -> list[str]:
    """Returns recent changes to the pages the account watches, newest first, in the rows of
    get-recent-changes and with its filters but tag."""
    return ChangeFilters(start, end, namespaces, types, user, excludeUser, hide, limit).listed(
        ctx, "watchlist", {"wlallrev": True}, "Changes to watched pages", "changes to watched pages",
        "get-watchlist")


def file_info(ctx: ToolContext, title: str, **extra: Any) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """The file page and its latest imageinfo, and the title it was redirected from (a moved
    file's old title redirects to its new one); not_found when there is no file. A Media: link's
    title (namespace -2, the file itself) names the file."""
    bare = title.partition(":")[2] if ctx.site.namespace_of(title) == -2 else title
    name = title_in_namespace(ctx.site, bare, 6)
    page, redirected = query_page(ctx, titles=name, redirects=True, prop="imageinfo", **extra)
    check_page(ctx, page, title, must_exist=False)
    info = next(iter(page.get("imageinfo") or []), None)
    if info is None:  # a page without a file, or neither (a file from a shared repository has no page)
        raise not_found(f"File {page.get('title', name)!r} not found on {ctx.wiki.key}"
                        + (" (its page exists, but no file was uploaded)" if not page.get("missing") else "")
                        + ". search-page-by-prefix with namespace=6 finds existing files.")
    return page, info, redirected


@tool("get-file", "Get file", toolset="files", read_only=True,
      see={"for the image itself": "get-file-data"})
def get_file(ctx: ToolContext, title: Annotated[str, FileTitleArg]) -> str:
    """Returns a file's metadata: URLs, MIME type, size, dimensions, uploader, upload time and comment;
    notes a followed redirect."""
    page, info, redirected = file_info(ctx, title, iiprop="timestamp|user|comment|size|mime|mediatype|url")
    width, height = info.get("width"), info.get("height")
    return labelled(
        ("Title", page.get("title")), ("Redirected from", redirected),
        ("URL", info.get("url")), ("Description URL", info.get("descriptionurl")),
        ("MIME type", info.get("mime")), ("Media type", info.get("mediatype")),
        ("Size", f"{info.get('size', 0)} bytes"),
        ("Dimensions", f"{width}×{height} pixels" if width and height else None),
        ("Duration", f"{info['duration']:g} s" if info.get("duration") else None),
        ("Uploaded", f"{info.get('timestamp')} by {'(hidden)' if info.get('userhidden') else info.get('user')}"),
        ("Upload comment", one_line(info.get("comment", ""))),
        ("Repository", "shared (another wiki's file)" if page.get("imagerepository") == "shared" else None))


@tool("get-file-data", "Get file data", toolset="files", read_only=True,
      see={"for metadata and URLs": "get-file"})
def get_file_data(
    ctx: ToolContext,
    title: Annotated[str, FileTitleArg],
    width: Annotated[int, Arg("Largest width, in pixels.", minimum=16, maximum=4000)] = 1024,
) -> list[Any]:
    """Returns a file's image as an image block, for clients that cannot reach the wiki; scaled to
    width (PNG, JPEG, GIF, WebP). Capped at {file_data_max_bytes:bytes of base64}."""
    page, info, redirected = file_info(ctx, title, iiprop="size|mime|url", iiurlwidth=width)
    name, mime = page.get("title", title), info.get("mime", "")
    thumb = info.get("thumburl") or ""
    # a thumbnail of a file MediaWiki cannot render is a file-type icon
    if thumb and "/file-type-icons/" not in urllib.parse.urlsplit(thumb).path:
        url, shown = thumb, (info.get("thumbwidth"), info.get("thumbheight"))
    elif mime.startswith("image/") and info.get("url"):
        url, shown = info["url"], (info.get("width"), info.get("height"))
    else:
        raise invalid_input(f"{name} is {mime or 'not an image'}, which the wiki does not render as an "
                            "image. get-file gives its metadata and URL.")
    limit = ctx.state.config.file_data_max_bytes
    data = fetch_file(ctx.client, url, limit * 3 // 4)
    if data is None:
        again = "Call get-file-data again with a smaller width." if url != info.get("url") else ""
        raise invalid_input(f"The image of {name} is over the {limit}-byte cap (MCP_FILE_DATA_MAX_BYTES, in "
                            f"base64). {again or 'The wiki cannot scale it; get-file gives its URL.'}")
    kind = raster_type(data)
    if kind is None:
        raise invalid_input(f"The wiki sent {name} as {mime or 'unknown data'}, not a PNG, JPEG, GIF or WebP "
                            "image. get-file gives its metadata and URL.")
    import mcp_types as mt  # the SDK's types, imported when first needed
    scaled = url != info.get("url")
    header = labelled(("Title", name), ("Redirected from", redirected), ("MIME type", kind),
                      ("Rendition", f"{shown[0]}×{shown[1]} pixels, scaled from {info.get('width')}×"
                                    f"{info.get('height')}" if scaled else
                       f"original, {shown[0]}×{shown[1]} pixels" if shown[0] else "original"),
                      ("Bytes", len(data)))
    return [header, mt.ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=kind)]


# ---------------------------------------------------------------------------
# saving.py: Saving an edit: the edit request, its summary and tags, a lost answer settled, and the no-loss
# rules that refuse a save which would drop unseen text or markup.
# ---------------------------------------------------------------------------

#: Appended to edit summaries unless a wiki's attributeEdits is false.
EDIT_SUMMARY_SUFFIX = " (via mediawiki-mcp)"


#: MediaWiki's limit on an edit summary, in characters (CommentStore); it cuts what is longer.
MAX_SUMMARY_CHARS = 500


def edit_summary(ctx: ToolContext, comment: str | None) -> str | None:
    """The summary a write sends: the comment, attributed unless the wiki is set not to be,
    cut with an ellipsis so that the attribution fits MediaWiki's limit. Without a comment,
    none, so that MediaWiki writes its own (a new page's start, a blanking, a deletion's)."""
    comment = as_wiki_receives(comment or "").strip()
    if not comment or not ctx.wiki.attribute_edits:
        return comment or None
    room = MAX_SUMMARY_CHARS - len(EDIT_SUMMARY_SUFFIX)
    if len(comment) > room:
        comment = comment[:room - 1].rstrip() + "…"
    return comment + EDIT_SUMMARY_SUFFIX


def change_tags(ctx: ToolContext) -> list[str] | None:
    return list(ctx.wiki.tags) or None


T = typing.TypeVar("T")


def settle_write(send: Callable[[], dict[str, Any]], check: Callable[[], T | None], *, what: str, look: str,
                 absent: str) -> tuple[dict[str, Any], T | None]:
    """``send()``'s answer (a write), and None; or, when the answer is lost, ``({}, check())``: what
    the wiki shows the write did, read instead of sending it again blindly. When the check finds
    nothing done, the error is ``absent``; when it fails, the error says that ``what`` ("the page
    was moved") could not be checked, and to ``look`` before calling again."""
    try:
        return send(), None
    except ResponseLost as lost:
        try:
            found = check()
        except WikiError as error:
            raise upstream_failure(f"{lost.message} Whether {what} could not be checked ({error.message}); "
                                   f"{look} before calling again.") from None
        if found is None:
            raise upstream_failure(f"{lost.message} {absent}") from None
        return {}, found


def after_lost_answer(status: str, shown: str) -> str:
    """``status`` ("Deleted.") of a write whose answer was lost, and what the wiki ``shown`` says
    it did instead (settle_write)."""
    return f"{status.rstrip('.')} ({LOST_ANSWER}; {shown})."


LOST_ANSWER = "the wiki's answer was lost"


EDIT_SHOWN_ONCE = "its history shows the edit once"


def saved_lines(ctx: ToolContext, title: str, revid: int, parent: int | None, status: str) -> str:
    diff = ctx.site.index_url(diff=revid, oldid=parent) if parent else ctx.site.index_url(oldid=revid)
    return status + "\n" + labelled(("Title", title), ("Revision ID", revid), ("Previous revision ID", parent),
                                    ("Size change", size_change(ctx, revid, parent)),
                                    ("URL", ctx.site.page_url(title)), ("Diff", diff))


def size_change(ctx: ToolContext, revid: int, parent: int | None) -> str:
    """A saved revision's size against its parent's, as the wiki stored them: the wiki's
    pre-save transform (signatures, subst:, trailing space) can change the text sent."""
    try:
        query = ctx.client.get({"action": "query", "revids": [parent, revid] if parent else revid,
                                "prop": "revisions", "rvprop": "ids|size"}).get("query", {})
    except WikiError as error:
        return f"unknown (the wiki did not say: {error.message})"
    sizes = {r["revid"]: r.get("size", 0) for p in query.get("pages") or [] for r in p.get("revisions") or []}
    if revid not in sizes or (parent and parent not in sizes):
        return "unknown (the wiki did not say)"
    old, new = sizes.get(parent, 0) if parent else 0, sizes[revid]
    return f"{signed(new - old)} bytes ({old} to {new})"


#: What an edit that changed nothing answers first.
UNCHANGED = "No change: the text is what the page already holds; nothing was saved."


def save_edit(ctx: ToolContext, title: str, fields: Mapping[str, Any], base: int | None,
              summary: str | None, done: str = "Saved.", composed: bool = False) -> str:
    """Sends one action=edit (send_edit) and describes the saved revision (``done`` says what
    it did)."""
    edit = send_edit(ctx, title, fields, base, summary, composed)
    title = edit.get("title", title)
    if edit.get("nochange"):
        return (UNCHANGED + "\n" + labelled(("Title", title), ("Revision ID", base), ("URL", ctx.site.page_url(title))))
    pin, parent = fields.get("baserevid"), edit.get("oldrevid") or None
    status = (after_lost_answer("Saved.", EDIT_SHOWN_ONCE) if edit.get("lost") else
              "Created." if edit.get("new") else done if not pin or pin == parent else
              f"Saved, merged with the edits made since revision {pin} (this change's base); read the page "
              "again before replacing it whole.")
    return saved_lines(ctx, title, edit["newrevid"], parent, status)


def send_edit(ctx: ToolContext, title: str, fields: Mapping[str, Any], base: int | None,
              summary: str | None, composed: bool = False) -> dict[str, Any]:
    """Sends one action=edit and returns MediaWiki's answer (its ``edit``). If that answer is
    lost, the page history tells whether the edit landed (the answer then says ``lost``): it
    is never sent twice. ``composed``: this server made the text (a find-replace, a reply), so
    the model has not seen the page it leaves."""
    data, landed = settle_edit(ctx, lambda: ctx.client.write(
        {"action": "edit", "title": title, **fields, "summary": summary, "tags": change_tags(ctx),
         "watchlist": ctx.watch}), title, base, summary, fields)
    if landed is not None:
        return landed
    edit = data.get("edit") or {}
    if edit.get("result") != "Success":
        if "captcha" in edit:
            raise permission_denied(f"{ctx.wiki.key} asks for a CAPTCHA to save this edit, which this server "
                                    "cannot solve; nothing was saved. The account needs the skipcaptcha "
                                    "right (for example the bot group).")
        detail = " ".join(f"{k}={v}" for k, v in edit.items() if k != "result")
        raise upstream_failure(f"The wiki did not save the edit ({detail or 'no reason'}). "
                               + NEXT_STEP["upstream_failure"])
    # an undo's text is the wiki's, made from edits the model may never have read: the text the model
    # read stays based on the revision it read, so that writing it back merges the undo in
    if not edit.get("nochange") and "undo" not in fields:
        pin, parent = fields.get("baserevid"), edit.get("oldrevid")
        ctx.reads.saved(edit.get("title", title), fields.get("section"), parent, edit["newrevid"],
                        "text" in fields and (pin or 0) == (parent or 0) and not composed)  # 0: created
    return edit


def settle_edit(ctx: ToolContext, send: Callable[[], dict[str, Any]], title: str, base: int | None,
                summary: str | None, fields: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """settle_write for an edit: when its answer is lost, the revision the page history shows it
    saved (find_landed_edit)."""
    # Not finding the edit is no proof it never lands: a slow wiki may still be saving it.
    return settle_write(send, lambda: find_landed_edit(ctx, title, base, summary, fields),
                        what="the edit was saved", look="read the page with get-page",
                        absent="The page's history shows no edit by this account "
                        f"{f'after revision {base}' if base else 'creating it'} yet. A slow wiki may still "
                        "save it: check with get-page-history before calling again.")


def find_landed_edit(ctx: ToolContext, title: str, base: int | None, summary: str | None,
                     fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The revision after ``base`` that this account saved with this summary, if any, as MediaWiki
    answers an edit (``lost`` set). Without a summary, or for an edit that adds text (parallel ones
    by this account may share a summary), it must also hold the text that ``fields`` sent, in its
    place. An undo sends no text (the wiki makes it): it must carry the wiki's mw-undo tag instead."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "meta": "userinfo",
                            "rvprop": "ids|user|comment|tags", "rvdir": "newer", "rvstartid": base,
                            "rvlimit": 20}).get("query", {})
    me = query.get("userinfo", {}).get("name")
    page, _ = resolve_page(query)
    undo = "undo" in fields
    candidates = [r for r in page.get("revisions") or [] if r.get("revid") != base and r.get("user") == me
                  and (not summary or stored_as(r.get("comment", ""), summary))
                  and (not undo or "mw-undo" in (r.get("tags") or []))]
    holds = sent_text_check(fields) if not undo and (not summary or "text" not in fields) else None
    if holds is not None and candidates:
        held = revision_texts(ctx, *(r["revid"] for r in candidates))
        candidates = [r for r in candidates if holds(held.get(r["revid"], ""))]
    found = next(iter(candidates), None)
    return found and {"result": "Success", "title": title, "newrevid": found["revid"],
                      "oldrevid": found.get("parentid") or None, "lost": True}


def sent_text_check(fields: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a revision's text shows the edit that ``fields`` sent: the appended text at its
    end, the prepended at its start, the section in it, or the whole text as it is."""
    if "appendtext" in fields:
        return lambda text: text.rstrip(PHP_WHITESPACE).endswith(as_saved(fields["appendtext"]))
    if "prependtext" in fields:
        return lambda text: text.startswith(fields["prependtext"])
    sent = as_saved(fields.get("text") or "")
    if fields.get("section") is not None:
        return lambda text: sent in text
    return lambda text: text.rstrip(PHP_WHITESPACE) == sent


def stored_as(stored: str, sent: str) -> bool:
    """Whether MediaWiki stored summary ``sent`` as ``stored``: in NFC, trimmed, after a section
    edit's ``/* heading */``, and cut to 500 characters with '...' when longer."""
    stored, sent = (unicodedata.normalize("NFC", s).strip() for s in (stored, sent))
    stored = re.sub(r"^/\*.*?\*/\s*", "", stored) if not sent.startswith("/*") else stored
    return stored == sent or stored.endswith("...") and sent.startswith(stored[:-3].rstrip())


def dry_run_result(title: str, base: int | None, section: int | None, old: str, new: str,
                   budget: int, merged_into: int | None = None) -> list[str]:
    """What a dry run answers: the diff between the page now and the page the save would
    leave, both whole, so its line numbers are compare-pages' after the save."""
    header = "Dry run: nothing was saved. The diff that would be saved:\n" + labelled(
        ("Title", title), ("Base revision ID", base), ("Section", section),
        ("Merged into", f"revision {merged_into}, the latest, as the save merges edits made since the base"
         if merged_into else None))
    diff = line_diff(old, new)
    if not diff:
        return [header + "\n\nNo change: the text is what the page already holds."]
    piece = slice_content(diff, 0, budget)
    blocks = [f"{header}\n\n{piece.text}"]
    if piece.truncated:
        blocks.append(f"Content truncated at {piece.end} of {piece.total} bytes. To review the rest, "
                      "dry-run smaller changes, such as one section at a time (section=N).")
    return blocks


def refuse_forbidden_dry_run(ctx: ToolContext, page: dict[str, Any], action: str) -> None:
    """Refuses a dry run of what the save would be refused for: a protected title or page, a
    blocked account (the query asked intestactions for ``action``)."""
    if (page.get("actions") or {}).get(action) is False:
        raise permission_denied(f"Nothing was saved (dry run): the account cannot {action} "
                                f"{page.get('title')!r} on {ctx.wiki.key} (protected, or the account is "
                                "blocked), so the save would be refused. Ask a wiki administrator, since "
                                f"this account cannot {action} it.")


def refuse_partial_write(ctx: ToolContext, title: str, section: int | None) -> None:
    """Refuses to write back a page or section that this caller's reads of the revision it last
    read did not show whole (a truncated read, and what it read on with offset)."""
    read = ctx.reads.unseen(title, section)
    if read is None:
        return
    what = f"Section {section} of {title!r}" if section is not None else f"Page {title!r}"
    start, end = read.unread(section) or (0, 0)
    shown = ", ".join(f"{first} to {last}" for first, last in read.ranges)
    if section is not None and read.section_ends:  # the page was read, in part
        seen = (f"the reads here of the page (revision {read.revid}) showed bytes {shown} of {read.total}, "
                f"not bytes {start} to {end}, in section {section}")
        rest = f"get-page with section={section}"
    else:
        if read.ranges == [(0, read.seen)]:
            seen = f"its last read here showed {read.seen} of {read.total} bytes"
        else:
            seen = (f"its reads here showed bytes {shown} of {read.total}, not "
                    + (f"the first {end}" if start == 0 else f"bytes {start} to {end}"))
        again = {k: v for k, v in (("section", section), ("offset", start or None)) if v is not None}
        rest = f"get-page with {call_args(**again)}" if again else "get-page"
        seen += f" (revision {read.revid})"
    raise invalid_input(f"Nothing was saved: {what} was not read whole ({seen}), so writing it back would "
                        "drop the part that was not read. To change part of it, use update-page with find "
                        f"and replace. To replace it whole, first read the rest ({rest}).")


def require_pinned_base(ctx: ToolContext, title: str, section: int | None, latest_id: int | None) -> None:
    """Refuses a whole-page or section write that no read of this caller's vouches for: without
    sessions, any read noted may be another client's; a read the full ledger dropped may have
    been a truncated one."""
    what = f"section {section} of {title!r}" if section is not None else repr(title)
    instead = ("To change part of the page, use update-page with find and replace, or replace one section "
               "(section=N) that get-page showed whole, with latestId.")
    if not ctx.reads.told_apart:
        if latest_id is None:
            raise invalid_input(f"Nothing was saved: this server cannot tell its clients apart (HTTP without "
                                f"sessions), so no read here shows which revision of {what} this text is based "
                                "on. Pass latestId, the revision ID get-page returned with the text. " + instead)
        if ctx.reads.read_cut(title, section, latest_id):
            raise invalid_input(f"Nothing was saved: revision {latest_id} of {what} was read in part "
                                "(truncated) through this server, which cannot tell its clients apart (HTTP "
                                "without sessions), so it cannot know that this text holds the rest. " + instead)
    if ctx.reads.forgotten(title, section):
        raise invalid_input(f"Nothing was saved: the record of this client's reads is full and no longer "
                            f"holds its read of {what}, so whether it was read whole is not known. Read it "
                            "again (get-page), then write it with the latestId that read returns.")


def refuse_unread_base(ctx: ToolContext, title: str, section: int | None, latest: Mapping[str, Any]) -> None:
    """Refuses a whole-page or section write without latestId from a client with no read of the page
    on record (a new session, after a restart): its text may be made from any revision, and saved on
    the latest it would undo the edits made since. The latest revision's author and size let the model
    tell whether its text was made from it."""
    what = f"section {section} of {title!r}" if section is not None else repr(title)
    revid = latest.get("revid")
    raise invalid_input(
        f"Nothing was saved: no read of {what} is on record for this client (a new session, or the page "
        "was not read here), so which revision this text was made from is not known, and saving it over "
        f"the latest would undo the edits made since. The latest is revision {revid}, by "
        f"{latest.get('user', 'an unknown user')} at {latest.get('timestamp', 'an unknown time')}, "
        f"{latest.get('size', 0)} bytes. If the text was made from that revision, call again with "
        f"latestId={revid}; if from an earlier one, pass that one's ID (the edits made since are then "
        "merged in, or refused as a conflict where they overlap); else read the page with get-page first.")


def refuse_unread_loss(ctx: ToolContext, target: EditTarget, new: str) -> None:
    """Refuses a whole-page write that would remove sections of its base, or more than half of its
    bytes, unless this client read that revision whole: a write made from a cut read, or from a read
    in another session, drops what the model never saw, whatever latestId it names."""
    base = target.pin or target.latest
    if ctx.reads.knows_whole(target.title, base):
        return
    old = target.old
    lost = lost_headings(old, new, ctx.site.syntax)
    shrunk = utf8_len(new) * 2 < utf8_len(old)
    if not lost and not shrunk:
        return
    going = [f"sections {few(lost, MAX_NAMED)}"] if lost else []
    going += [f"{utf8_len(old) - utf8_len(new)} of its {utf8_len(old)} bytes"] if shrunk else []
    raise invalid_input(
        f"Nothing was saved: this text would remove {' and '.join(going)} from {target.title!r} (revision "
        f"{base}), and this client has not read that revision whole, so the model has not seen all it would "
        "drop. To change part of the page, use update-page with find and replace, or section=N. To replace "
        "it whole, read it whole first with get-page (when the answer is cut, call again with the offset its "
        "marker names until the end), then call again with latestId left out or set to the revision ID that "
        "read showed.")


#: How many removed headings, templates or categories an answer names, the rest counted.
MAX_NAMED = 12


#: A template call's name ({{Infobox river|...}}, {{DEFAULTSORT:...}}), not a parameter ({{{1}}}).
TEMPLATE_CALL = re.compile(r"(?<!\{)\{\{(?!\{)\s*([^{}|\n<>\[\]]+?)\s*(?=\||\}\})")


#: A link with a prefix ([[Category:X|key]], [[de:Rhein]]) but not one led by a colon ([[:Category:X]]).
PREFIXED_LINK = re.compile(r"\[\[\s*([^\[\]|:\n]+?)\s*:\s*([^\[\]|\n]+?)\s*(?:\|[^\[\]\n]*)?\]\]")


HIDDEN_MARKUP = re.compile(r"<!--.*?(?:-->|$)|<(nowiki|pre)\b[^>]*>.*?(?:</\1\s*>|$)", re.DOTALL | re.IGNORECASE)


def template_calls_and_categories(site: SiteInfo, text: str) -> collections.Counter[str]:
    """The template calls ({{Name}}) and categories ([[Category:Name]]) of wikitext, as an answer
    names them, counted: what rendered text loses."""
    return collections.Counter(shown for shown, _ in named_markup(site, text))


def named_markup(site: SiteInfo, text: str) -> list[tuple[str, str]]:
    """Each template call and category of wikitext as an answer names it, with what makes it the
    same call when changed: a parser function's or magic word's name ({{DEFAULTSORT:B}} is
    {{DEFAULTSORT:A}} changed), a template's name, a category whole."""
    text = HIDDEN_MARKUP.sub("", text)
    found = []
    for name in TEMPLATE_CALL.findall(text):
        if name.lower().startswith(("subst:", "safesubst:")):
            continue
        shown = "{{" + as_named(name) + "}}"
        function, colon, _ = name.partition(":")
        # {{Template:Name}} and {{:Main page}} are templates, named by the whole
        is_function = colon and function.strip() and not site.namespace_of(name)
        found.append((shown, function.strip().lower() if is_function else shown))
    category = site.namespaces.get(14, "Category")
    for prefix, name in PREFIXED_LINK.findall(text):
        if site.namespace_ids.get(prefix.replace("_", " ").lower()) == 14:
            shown = f"[[{category}:{as_named(name)}]]"
            found.append((shown, shown))
    return found


def as_named(name: str) -> str:
    """A page name as the wiki names it: spaces for underscores, one at a time, first letter capital."""
    name = " ".join(name.replace("_", " ").split())
    return name[:1].upper() + name[1:]


def removed_markup(site: SiteInfo, old: str, new: str) -> list[str]:
    """The template calls and categories of ``old`` that ``new`` has fewer of (each once): a call
    whose argument changed ({{DISPLAYTITLE:Foo}} to {{DISPLAYTITLE:Bar}}) is not removed."""
    kept = collections.Counter(same for _, same in named_markup(site, new))
    removed = []
    for shown, same in named_markup(site, old):
        if kept[same]:
            kept[same] -= 1
        elif shown not in removed:
            removed.append(shown)
    return removed


def removed_note(removed: Sequence[str]) -> str:
    """The line of a write's answer that names the template calls and categories it removes."""
    return f"Removed: {few(list(removed), MAX_NAMED)}" if removed else ""


def refuse_dropped_markup(site: SiteInfo, title: str, old: str, new: str) -> None:
    """Refuses whole-page text that keeps none of the template calls and categories the page has:
    rendered text (get-page's content text) with its markers removed looks so, whichever session
    read it."""
    had = template_calls_and_categories(site, old)
    if not had or not new.strip() or template_calls_and_categories(site, new) & had:
        return
    raise invalid_input(
        f"Nothing was saved: the new text keeps none of the template calls and categories {title!r} has "
        f"({few(list(had), MAX_NAMED)}), as rendered text (get-page with content='text') would not: saved "
        "as wikitext, it would drop them all. Read the wikitext with get-page (content='source', the "
        "default) and change that. To remove them all the same, call again with removeSections=true.")


#: What may close a page after its text: links ([[Category:X|key]], [[de:Rhein]]), a default sort key.
CLOSING_ITEM = re.compile(PREFIXED_LINK.pattern + r"|\{\{\s*(DEFAULTSORT|DEFAULTSORTKEY|DEFAULTCATEGORYSORT)"
                          r"\s*:[^{}\n]*\}\}")


#: An interlanguage link's prefix: a language code ([[de:Rhein]], [[zh-yue:...]]).
LANGUAGE_PREFIX = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})*")


def is_closing_item(site: SiteInfo, found: re.Match[str]) -> bool:
    """Whether a CLOSING_ITEM match is a category, an interlanguage link or a default sort key."""
    if found.group(3):
        return True
    prefix = found.group(1).replace("_", " ").lower()
    namespace = site.namespace_ids.get(prefix)
    return namespace == 14 or namespace is None and bool(LANGUAGE_PREFIX.fullmatch(prefix))


def closing_links(site: SiteInfo, text: str) -> int | None:
    """Where the lines of categories, interlanguage links and default sort key that close ``text``
    start (a character index), if it ends with some: what a reader of the last section sees at its
    end but belongs to the page."""
    def closing_only(line: str) -> bool:  # blank, or nothing but closing items and comments
        return not CLOSING_ITEM.sub(lambda found: "" if is_closing_item(site, found) else found.group(0),
                                    HIDDEN_MARKUP.sub("", line)).strip()
    lines = text.rstrip(PHP_WHITESPACE).split("\n")
    first = len(lines)
    while first and closing_only(lines[first - 1]):
        first -= 1
    while first < len(lines) and not lines[first].strip():
        first += 1
    block = "\n".join(lines[first:])
    if first == len(lines) or not any(is_closing_item(site, f) and not f.group(3)
                                      for f in CLOSING_ITEM.finditer(HIDDEN_MARKUP.sub("", block))):
        return None
    return len("\n".join(lines[:first])) + (1 if first else 0)


def has_closing_items(site: SiteInfo, text: str) -> bool:
    return any(is_closing_item(site, f) for f in CLOSING_ITEM.finditer(HIDDEN_MARKUP.sub("", text)))


def closes_page(ctx: ToolContext, target: EditTarget) -> int | None:
    """Where the links that close the page start in the text an edit changes (closing_links), when
    that text is the page's end (the page, or its last section)."""
    if target.section is not None:
        span = section_span(target.base_text, target.section, ctx.site.syntax)
        if not span or span[1] < utf8_len(target.base_text):
            return None
    return closing_links(ctx.site, target.old)


def keeping_closing_links(ctx: ToolContext, target: EditTarget, new: str) -> tuple[str, str]:
    """New text for the page's last section, with the categories and interlanguage links that close
    the page kept below it when it has none of its own (the model read them as the section's end,
    and rewrote the section's prose); and a note saying so."""
    at = None if target.section is None else closes_page(ctx, target)
    # rendered text is left as given, for finish_edit to recognise and refuse
    if at is None or has_closing_items(ctx.site, new) or ctx.reads.shows_rendered(target.title, new):
        return new, ""
    block = target.old[at:]
    note = (f"Kept: {one_line(block)} (they close the page, and the text of section {target.section}, its "
            "last, had none; to change them, give them in source, or use update-page-categories)")
    return new.rstrip(PHP_WHITESPACE) + "\n\n" + block, note


def above_closing_links(ctx: ToolContext, target: EditTarget, added: str, at: int) -> str:
    """The text of an append, put above the links that close the page (at ``at`` in the text changed)."""
    body, block = target.old[:at].rstrip(PHP_WHITESPACE), target.old[at:]
    text = added.lstrip("\n")
    return f"{body}{separator(body, text)}{text}\n\n{block}"


# ---------------------------------------------------------------------------
# edit.py: The edit pipeline: every tool that changes a page's wikitext is a composer that edit_page reads
# for, runs, checks and saves pinned to the revision it read.
# ---------------------------------------------------------------------------

# Every tool that changes a page's wikitext is a composer that edit_page runs: it reads the
# page once and pins the base (read_for_edit), lets the tool compose the new text, applies
# the no-loss rules to text the model gave (refuse_lossy_write; refuse_partial_write at the
# read), then dry-runs the change through the checks the save would meet (refuse_unsaveable)
# or saves it (save_edit: a lost answer settled, the save recorded for this client). Undo and
# rollback use the wiki's own actions but share the dry run's checks and the save's steps.

@dataclasses.dataclass(frozen=True)
class EditTarget:
    """A page as an edit reads it: the page now, and the base the change is made on."""
    page: dict[str, Any]    # the query's page: info, the latest revision and its text
    title: str
    latest: int             # the latest revision; 0 when the page does not exist
    now: str                # the latest revision's text
    pin: int | None         # the base revision, sent as baserevid; None: unpinned (an addition)
    base_text: str          # the base revision's text, which MediaWiki splices a section into
    section: int | None     # the section changed, numbered as in the text it is made on
    old: str                # that section's text (or the page's), in the text the change is made on
    from_read: bool = False  # the base is this client's last read, not a latestId given
    #: a replacement with neither latestId nor a read of the page on record (refuse_unread_base, once
    #: the text shows whether it is a section read alone and written back as the page)
    unread: bool = False


@dataclasses.dataclass(frozen=True)
class Composed:
    """What a composer makes of an EditTarget: the new text of its section (or page), and how
    it goes to the wiki."""
    text: str
    note: str = ""  # labelled lines the answer ends with
    summary: str | None = None
    #: action=edit fields in place of text= (appendtext, section=new, minor), None to leave one out
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: The model's own text, held to the no-loss rules with these overrides; None: the server made
    #: it (a find-replace, a category, a reply), so the model has not seen the page it leaves.
    given: Overrides | None = None
    #: The section composed, when the composer picks it (a talk topic) rather than the call.
    section: int | None = None
    #: A save of its own (a reply through DiscussionTools); when it answers None, the usual save.
    send: Callable[[], str | None] | None = None


def edit_page(ctx: ToolContext, title: str, compose: Callable[[EditTarget], Composed | str], kind: ChangeKind,
              section: int | str | None = None, latest_id: int | None = None) -> list[str] | str:
    """Reads the page as a change of ``kind`` does (read_for_edit), composes the change (or, with
    nothing to save, the answer itself), and dry-runs or saves it (finish_edit)."""
    target = read_for_edit(ctx, title, section, kind, latest_id)
    change = compose(target)
    return change if isinstance(change, str) else finish_edit(ctx, target, change)


@dataclasses.dataclass(frozen=True)
class ChangeKind:
    """A kind of change, and how it reads its page (read_for_edit). Its base, unless a latestId
    names one, is the revision this client last read (``base`` "read"), the latest ("latest"), or
    none ("now": an addition, which MediaWiki adds to the page as it then is, so parallel ones all
    land, made on the page now where any other is made on its base, whose section numbers the model
    read). ``own_text``: a redirect whose own text the model has not read is refused; ``whole``: the
    text replaced must have been read whole; ``follow``: edit a redirect's target; ``creates``: a new
    page, read only in a dry run (a save's createonly has the wiki refuse a title that exists)."""
    base: Literal["read", "latest", "now"] = "latest"
    must_exist: bool = True
    own_text: bool = False
    whole: bool = False
    follow: bool = False
    creates: bool = False
    props: Sequence[str] = ("info",)
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)


REPLACEMENT = ChangeKind(base="read", own_text=True, whole=True)  # update-page's text for a page or section
IN_PLACE = ChangeKind(own_text=True)  # in the latest text: update-page's find, a prepend below a heading
ADDITION = ChangeKind(base="now", own_text=True)  # to the page as it then is: an append, a prepend
CREATION = ChangeKind(must_exist=False, creates=True)  # create-page, copy-page to a free title
OVERWRITE = ChangeKind(base="read", must_exist=False)  # copy-page with overwrite
CATEGORY_CHANGE = ChangeKind(props=("categories", "info"), params={"cllimit": "max"})
NEW_TOPIC = ChangeKind(must_exist=False, follow=True, props=())  # on a talk page it makes if missing
REPLY = ChangeKind(follow=True, props=())


def read_for_edit(ctx: ToolContext, title: str, section: int | str | None, kind: ChangeKind,
                  latest_id: int | None = None) -> EditTarget:
    """The page and the base of a change of ``kind``, read once."""
    from_read, on_now, own_text = kind.base == "read", kind.base == "now", kind.own_text
    if kind.creates and not ctx.dry_run:
        return EditTarget({}, title, 0, "", None, "", None, "")
    # in a dry run, prop=info too, for whether the account may edit the page at all
    props = dict.fromkeys(["revisions", *kind.props, *(["info"] if ctx.dry_run else [])])
    page, _ = query_page(ctx, **{"prop": "|".join(props), "rvprop": "ids|content|user|size|timestamp",
                                 "rvslots": "main",
                                 "intestactions": ctx.dry_run and ("create" if kind.creates else "edit") or None, "titles": title,
                                 "redirects": kind.follow or None, **kind.params})
    title = page.get("title", title)
    if page.get("missing") and kind.must_exist:
        raise not_found(f"Page {title!r} does not exist on {ctx.wiki.key}; nothing was saved. "
                        + (why_missing(ctx, title) or "To make it, use create-page; search-page-by-prefix "
                           "finds existing titles."))
    check_page(ctx, page, title, kind.must_exist or not page.get("missing") or page.get("special", False))
    for action in page.get("actions") or {}:  # asked in a dry run
        refuse_forbidden_dry_run(ctx, page, action)
    current = revision_of(page)
    latest: int = current.get("revid", 0)
    now = main_slot(current).get("content", "")
    heading = section if isinstance(section, str) else None
    number = asked_section(ctx, title, section, text=now, revid=latest).number
    if number and heading is None and not from_read and latest_id is None:  # made on the page now
        number = as_read(ctx, title, number, now, latest)
    own_base = latest_id is None or latest_id == latest or is_revision_of(ctx, latest_id, page)
    read_base = ctx.reads.base(title, number, heading and section_heading(now, number, ctx.site.syntax)) \
        if from_read and not latest_id else None
    # Asked even when the page is no redirect: a write stops here when the read ledger's store is down.
    own_text_read = own_text and ctx.reads.base(title, None) is not None
    if own_text and page.get("redirect") and not (own_base and (latest_id or own_text_read)):
        refuse_redirect_edit(ctx, title)  # get-page showed the target's text, not this page's
    if not own_base and latest_id is not None:  # only a given latestId can be another page's
        raise invalid_input(f"latestId {latest_id} is not a revision of {title!r} (its latest is {latest}); "
                            "nothing was saved. Pass the revision ID get-page returned for this page.")
    pin = latest_id or read_base or (latest if not on_now and latest else None)
    base = (revision_texts(ctx, pin).get(pin, "") if pin and pin != latest and (not on_now or ctx.dry_run)
            else now)
    seen = now if on_now else base
    if heading is not None and seen is not now:  # numbered anew: a section above may have come or gone since
        number = asked_section(ctx, title, heading, text=seen, revid=pin).number
    span = None if number is None else section_span(seen, number, ctx.site.syntax)
    if number is not None and span is None:
        raise no_such_section(ctx, title, number, pin or latest)
    if kind.whole:
        require_pinned_base(ctx, title, number, latest_id)
    unread = kind.whole and latest_id is None and read_base is None
    if kind.whole and not unread:  # else refused whole in finish_edit (refuse_unread_base)
        refuse_partial_write(ctx, title, number)
    old = seen if span is None else section_text(seen, span)
    return EditTarget(page, title, latest, now, pin, base, number, old, bool(read_base), unread=unread)


def as_read(ctx: ToolContext, title: str, number: int, now: str, latest: int) -> int:
    """Section ``number``, as this client last read the page, numbered in its text ``now``
    (followed_section): an edit made on the page now (an addition, a find) goes where the model saw
    that section."""
    read = ctx.reads.base(title, number, outlined=True)
    if not read or read == latest:
        return number
    seen = revision_texts(ctx, read).get(read, "")
    found = followed_section(seen, now, number, ctx.site.syntax)
    if len(found) == 1:
        return found[0]
    heading = section_heading(seen, number, ctx.site.syntax)
    raise invalid_input(f"Nothing was saved: section {number} of {title!r}, as read here (revision {read}), is "
                        f"headed {heading!r}, and sections were added or removed since (revision {latest} now), "
                        f"where {'several' if found else 'no'} sections have that heading under the same one as "
                        "then. Read the page again with get-page, then call again with the section's number there.")


def finish_edit(ctx: ToolContext, target: EditTarget, change: Composed) -> list[str] | str:
    """The last steps of every edit: the no-loss rules for the model's own text, then the dry
    run, or the save."""
    section = target.section if change.section is None else change.section
    if target.unread:
        if section is None and not (change.given and change.given.remove_sections) \
                and shrunk_to_section(target.old, change.text, ctx.site.syntax) is not None:
            refuse_shrinking(target.title, target.old, change.text, ctx.site.syntax)  # a section's text
        refuse_unread_base(ctx, target.title, section, revision_of(target.page))
    if change.given is not None:
        if section is not None:
            refuse_repeated_sections(target.title, target.base_text, section, change.text, ctx.site.syntax)
        if change.text.strip() and ctx.reads.shows_rendered(target.title, change.text):
            raise rendered_text(target.title, "it is what get-page returned as content text or html")
        if section is None and target.latest:
            refuse_unread_loss(ctx, target, change.text)
        refuse_lossy_write(target.title, section, target.old, change.text, ctx.site.syntax, change.given)
        if section is None and not (change.given.remove_sections or change.given.blank):
            refuse_dropped_markup(ctx.site, target.title, target.old, change.text)
        if section is None and ctx.asks and not ctx.confirmed and not ctx.dry_run:
            ask_before_overriding(ctx, target, change.text)
    # those the composer's own answer names already (update-page-categories') once
    removed = [r for r in removed_markup(ctx.site, replaced_text(ctx, target, section), change.text)
               if r.strip("[]{}") not in change.note]
    if removed and target.latest:
        change = dataclasses.replace(change, note="\n".join(filter(None, [removed_note(removed), change.note])))
    if ctx.dry_run:
        after = page_after(ctx, target, section, change.text)
        refuse_unsaveable(ctx, target.title, after, target.page.get("contentmodel"),
                          change.fields.get("contentmodel"))
        merged = target.pin and target.pin != target.latest
        model = change.fields.get("contentmodel") or target.page.get("contentmodel")
        saved_text = pre_save_transformed(ctx, target.title, change.text, as_saved(after), model)
        blocks = dry_run_result(target.title, target.pin or target.latest or None, section, target.now,
                                saved_text, ctx.budget, merged_into=target.latest if merged else None)
        expanded = PRE_SAVE_SHOWN if saved_text != as_saved(after) else ""
        note = "\n".join(filter(None, [expanded, change.note]))
        return [f"{blocks[0]}\n\n{note}" if note else blocks[0], *blocks[1:]]
    saved = change.send() if change.send is not None else None
    if saved is None:
        fields = {"text": change.text, "section": section, "baserevid": target.pin,
                  **({"nocreate": True} if target.latest else {"createonly": True}), **change.fields}
        saved = save_edit_of(ctx, target, {k: v for k, v in fields.items() if v is not None}, change)
    return f"{saved}\n{change.note}" if change.note else saved


def replaced_text(ctx: ToolContext, target: EditTarget, section: int | None) -> str:
    """The text a change of ``section`` replaces: the target's, or, where the composer picked the
    section (a reply's topic) on a target read whole, that section's text in it."""
    if section is None or section == target.section:
        return target.old
    span = section_span(target.base_text, section, ctx.site.syntax)
    return section_text(target.base_text, span) if span else ""


#: What MediaWiki's pre-save transform expands in the text a save sends: signatures (~~~,
#: ~~~~, ~~~~~), subst: and safesubst:, the pipe trick ([[Help:Links|]]).
PRE_SAVE_MARKS = re.compile(r"~~~|subst:|\|\]\]", re.IGNORECASE)


PRE_SAVE_SHOWN = ("Expanded: signatures, subst: and the pipe trick are shown as the wiki expands them on saving "
                  "now (a signature's time is the save's)")


def pre_save_transformed(ctx: ToolContext, title: str, given: str, after: str, model: str | None) -> str:
    """The page text ``after`` as a save stores it, once the wiki expands what the text ``given``
    holds for its pre-save transform (PRE_SAVE_MARKS): one request, made only when it holds any."""
    if (model or "wikitext") != "wikitext" or not PRE_SAVE_MARKS.search(given):
        return after
    parsed = ctx.client.get({"action": "parse", "title": title, "text": after, "contentmodel": "wikitext",
                             "onlypst": True}).get("parse", {})
    return as_saved(str(parsed.get("text", after)))


def ask_before_overriding(ctx: ToolContext, target: EditTarget, new: str) -> None:
    """Puts to the person (a Preview), where they confirm, a whole-page write that the no-loss
    rules let through only because the call says so (blank, removeSections)."""
    try:
        refuse_lossy_write(target.title, None, target.old, new, ctx.site.syntax)
    except WikiError:
        what = "empty it" if not new.strip() else "drop the rest of its text"
        raise Preview("Nothing was saved.", f"replace all of {target.title!r} on {ctx.wiki.key} (revision "
                      f"{target.latest}, {counted(utf8_len(target.old), 'byte')}) with "
                      f"{counted(utf8_len(new), 'byte')} of new text, which would {what}.") from None


def save_edit_of(ctx: ToolContext, target: EditTarget, fields: Mapping[str, Any], change: Composed) -> str:
    """save_edit for the pipeline: an unpinned addition waits for this server's others to the
    same page, and a conflict with the client's last read says so."""
    # This server's own unpinned additions to one page go one at a time, so that many at once
    # do not pile up in the wiki's queue for its database lock (as SQLite's) past the timeout.
    serial = ctx.state.page_lock(ctx.wiki.key, target.title) if not target.pin else contextlib.nullcontext()
    try:
        with serial:
            return save_edit(ctx, target.title, fields, target.latest or None, change.summary,
                             composed=change.given is None)
    except WikiError as error:
        if error.code == "editconflict" and target.pin:
            which = "the one last read here" if target.from_read else "this change's base (latestId)"
            raise conflict(f"{target.title!r} changed since revision {target.pin}, {which}, on lines this edit "
                           "changes too; nothing was saved. " + changes_since(ctx, target)
                           + MW_NEXT_STEP["editconflict"], error.code) from None
        raise


def changes_since(ctx: ToolContext, target: EditTarget) -> str:
    """The revisions made since the base of a change that conflicts, with their authors and
    summaries, and their change as a compact diff (within a share of the budget): what the model
    must reconcile. Two requests, made only once the edit is refused."""
    try:
        since = revisions_since(ctx, target.title, target.pin or 0)
        newest = since[-1]["revid"] if since else target.latest
        now = target.now if newest == target.latest else revision_texts(ctx, newest).get(newest, target.now)
    except WikiError:
        return ""  # the conflict stands: what it is made of is a help, not the answer
    diff = line_diff(target.base_text, now)
    piece = slice_content(diff, 0, max(ctx.budget // 2, 1))
    cut = f"\n(diff cut at {piece.end} of {piece.total} bytes)" if piece.truncated else ""
    return (f"The edits made since: {revision_rows(since)}. Their change (revision {target.pin} to {newest}):\n"
            f"{piece.text}{cut}\n")


def revisions_since(ctx: ToolContext, title: str, revid: int) -> list[dict[str, Any]]:
    """The revisions of a page after ``revid``, oldest first, one more than CONFLICT_REVISIONS_NAMED at most."""
    page, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user|comment", rvdir="newer",
                         rvstartid=revid, rvlimit=CONFLICT_REVISIONS_NAMED + 2)
    return [r for r in page.get("revisions") or [] if r.get("revid") != revid]


def revision_rows(since: list[dict[str, Any]]) -> str:
    """'253 by Editor ("Port added"), 254 by Admin': revisions, their authors and summaries."""
    rows = [f"{r['revid']} by {revision_user(r)}" + (f' ("{one_line(r["comment"])}")' if r.get("comment") else "")
            for r in since[:CONFLICT_REVISIONS_NAMED]]
    return ", ".join(rows) + (" and later ones" if len(since) > CONFLICT_REVISIONS_NAMED else "")


def find_changed_since_read(ctx: ToolContext, target: EditTarget, find: str) -> str:
    """Of a find that does not occur in the page now: a sentence saying that it was in the revision
    this client last read, and who changed it since; '' when it was not."""
    read = ctx.reads.base(target.title, target.section)
    if not read or read in (target.latest, target.pin):
        return ""
    text = revision_texts(ctx, read).get(read, "")
    if find not in text:
        return ""
    return (f" It is in revision {read}, the one last read here, and was changed since, by the revisions "
            f"{revision_rows(revisions_since(ctx, target.title, read))}: read the page again with get-page and "
            "find the text as it is now.")


#: How many revisions made since its base a conflict names.
CONFLICT_REVISIONS_NAMED = 10


def page_after(ctx: ToolContext, target: EditTarget, section: int | None, new: str) -> str:
    """The page text a save of ``new`` (the text of ``section``, or of the page) leaves, made as
    MediaWiki makes it: the section spliced into the base revision, and that merged into the
    latest when the base is older (a conflict when they overlap)."""
    old = target.base_text
    span = None if section is None else section_span(old, section, ctx.site.syntax)
    mine = new if section is None else replace_section(old, span, new) if span else old
    if not target.pin or target.pin == target.latest:
        return mine
    merged = merge3(old, mine, target.now)
    if merged is None:
        raise conflict(f"Nothing was saved (dry run): {target.title!r} changed since revision {target.pin} "
                       f"(its latest is {target.latest}) on lines this edit changes too, so the save would be "
                       "refused as an edit conflict. " + changes_since(ctx, target) + MW_NEXT_STEP["editconflict"],
                       "editconflict")
    return merged


def refuse_unsaveable(ctx: ToolContext, title: str, text: str, model: str | None,
                      asked: str | None = None) -> None:
    """Refuses in a dry run what the wiki's own checks would refuse the save for (unsaveable).
    A save meets the wiki's checks themselves."""
    why = unsaveable(ctx, title, text, model, asked)
    if why:
        raise invalid_input(f"Nothing was saved (dry run): {why}, so the save would be refused.")


def unsaveable(ctx: ToolContext, title: str, text: str, model: str | None,
               asked: str | None = None) -> str | None:
    """Why the wiki would refuse to save ``text`` on a page of content ``model``, if it would: a
    JSON that does not parse on a JSON page (or one ``asked`` to be JSON), a text over its
    maximum page size."""
    if (asked or model) == "json":
        try:
            json.loads(text)
        except ValueError as error:
            return f"{title!r} holds JSON, and the new text is not valid JSON ({error})"
    limit = int(ctx.site.raw.get("maxarticlesize") or 0)
    size = utf8_len(as_saved(text))
    if limit and size > limit:
        return (f"the new text of {title!r} is {size} bytes, over {ctx.wiki.key}'s maximum page size of "
                f"{limit} bytes")
    return None


def refuse_redirect_edit(ctx: ToolContext, title: str) -> None:
    """Refuses an edit through a redirect page whose own text the model has not seen."""
    query = ctx.client.get({"action": "query", "titles": title, "redirects": True}).get("query", {})
    target = str((query.get("redirects") or [{}])[0].get("to", ""))
    raise invalid_input(f"Nothing was saved: {title!r} is a redirect to {target!r}, so get-page shows the "
                        "target's text under it. To change that text, call update-page with "
                        f"title={json.dumps(target, ensure_ascii=False)}. To change the redirect page "
                        "itself, first read it with get-page and followRedirects=false.")


@dataclasses.dataclass(frozen=True)
class Overrides:
    """What a call explicitly lets a replacement lose (update-page's flags of the same names)."""
    remove_sections: bool = False
    remove_subsections: bool = False
    remove_heading: bool = False
    blank: bool = False


def refuse_lossy_write(title: str, section: int | None, old: str, new: str, syntax: Syntax,
                       allow: Overrides = Overrides()) -> None:
    """The no-loss rules of a replacement of ``old`` (the page, or section ``section``) by
    ``new``: never rendered text for wikitext; no page blanked, or shrunk to one section's
    shape; no section's heading or subsections dropped; each unless ``allow`` says so."""
    refuse_rendered_text(title, new)
    if section is None:
        if not new.strip() and old.strip() and not allow.blank:
            raise invalid_input(f"Nothing was saved: the new text is empty, so saving it would blank "
                                f"{title!r} ({utf8_len(old)} bytes). To delete the page, use delete-page. To "
                                "leave it empty, call again with blank=true.")
        if not allow.remove_sections and not allow.blank:
            refuse_shrinking(title, old, new, syntax)
        return
    if section and not allow.remove_heading and starts_heading(old) and not starts_heading(new):
        heading = old.lstrip("\n").partition("\n")[0].strip()
        raise invalid_input(f"Nothing was saved: the new text of section {section} of {title!r} lacks its "
                            f"heading ({heading}), so saving it would merge the section into the one before. "
                            f"Start source with the heading (get-page with section={section} shows it), or "
                            "set removeHeading=true to drop it.")
    if section and not allow.remove_subsections and (lost := lost_subsections(old, new, syntax)):
        raise invalid_input(f"Nothing was saved: section {section} of {title!r} has subsections that the new "
                            f"text lacks ({', '.join(lost)}), so replacing it would delete them. Include "
                            "them in source, replace a subsection on its own (section=N), or set "
                            "removeSubsections=true to delete them.")


def refuse_repeated_sections(title: str, whole: str, section: int, new: str, syntax: Syntax) -> None:
    """Refuses new text for a section that holds sections the page has besides it (repeated_sections)."""
    twice = repeated_sections(whole, section, new, syntax)
    if twice:
        raise invalid_input(f"Nothing was saved: the new text of section {section} of {title!r} holds sections "
                            f"the page has besides it ({', '.join(twice)}), so saving it would put them on the "
                            "page twice. To replace them too, call update-page without section, with the whole "
                            f"page's text; to replace section {section} alone, send only its text.")


#: What get-page's rendered content carries and wikitext does not: the plain text's section
#: markers ("== History == (section 1)") and the HTML of MediaWiki's parser output.
RENDERED_MARKERS = re.compile(r"^(=+) .*? \1 \((?:section \d+|from [^\n]+)\)$|"
                              r"<div class=\"mw-parser-output\"|<span class=\"mw-headline\"", re.MULTILINE)


#: The labelled lines get-page's answer starts with (page_header), up to its revision ID.
ANSWER_HEADER = re.compile(r"\A\s*Title: [^\n]+\n(?:[A-Z][\w ]*: [^\n]*\n)*?Revision ID: \d+\n")


def refuse_rendered_text(title: str, text: str) -> None:
    """Refuses text that get-page rendered (content text or html) written as wikitext: its
    templates, references and categories are gone from it. Also text that starts with the
    header of get-page's answer, which would be saved in the page."""
    if ANSWER_HEADER.match(text):
        raise invalid_input(f"Nothing was saved: the new text for {title!r} starts with the header of "
                            "get-page's answer (Title:, Revision ID: and the lines between), which is not part "
                            "of any page's text. Send only the text after the header's blank line.")
    found = RENDERED_MARKERS.search(text)
    if found:
        raise rendered_text(title, f"it holds {found.group(0)[:60]!r}, as get-page's content text or html "
                                   "shows a page")


def rendered_text(title: str, sign: str) -> WikiError:
    """The refusal of rendered text written as wikitext; ``sign``: how it shows."""
    return invalid_input(f"Nothing was saved: the new text for {title!r} is rendered text, not wikitext "
                         f"({sign}), so saving it would drop the page's templates, references and categories. "
                         "Read the wikitext with get-page (content='source', the default) and change that.")


def refuse_shrinking(title: str, whole: str, new: str, syntax: Syntax) -> None:
    """Refuses a whole-page write of text shaped like one of the page's sections: most likely
    that section, read alone and written back without section=N."""
    section = shrunk_to_section(whole, new, syntax)
    if section is None and utf8_len(new) * 2 < utf8_len(whole) and not wikitext_sections(whole, syntax):
        raise invalid_input(f"Nothing was saved: the new text ({utf8_len(new)} bytes) would replace all of "
                            f"{title!r} ({utf8_len(whole)} bytes), less than half of it. To change part of "
                            "it, use update-page with find and replace. To make this text the whole page, "
                            "call again with removeSections=true.")
    if section is None:
        return
    sections = wikitext_sections(whole, syntax)
    span = section_span(whole, section, syntax) or (0, 0)
    others = [(0, "Lead")] * (section != 0) + numbered_headings(s for s in sections
                                                                if not span[0] <= s.start < span[1])
    shape = "no headings, as the lead" if section == 0 else f"the headings of section {section}"
    raise invalid_input(f"Nothing was saved: the new text ({utf8_len(new)} bytes, {shape}) would replace all "
                        f"of {title!r} ({utf8_len(whole)} bytes), deleting the rest of the page: sections "
                        f"{section_list(others)}. To change only that section, call update-page with "
                        f"section={section} and this source. To make this text the whole page, call again "
                        "with removeSections=true.")


# ---------------------------------------------------------------------------
# write_pages.py: Write tools for whole pages: create-page, update-page, move-page, delete-page and undelete-page.
# ---------------------------------------------------------------------------

@tool("create-page", "Create page", toolset="edit",
      read_only=False, destructive=False, idempotent=True, dry_run=True,
      idempotency_key=True, watch=True, rights=("edit", "createpage"),
      see={"to change a page": "update-page"})
def create_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    source: Annotated[str, Arg("Content, usually wikitext.")],
    comment: Annotated[str | None, CommentArg] = None,
    contentModel: Annotated[str | None, Arg(
        ", ".join(STANDARD_CHOICES["content model"]) + "...; default: by namespace.",
        max_length=64)] = None,
) -> list[str] | str:
    """Creates a page; fails if the title exists or the text is empty."""
    source = as_wiki_receives(source)
    if not source.strip():  # as update-page refuses to blank a page, unless told
        raise invalid_input(f"Nothing was saved{' (dry run)' if ctx.dry_run else ''}: source is "
                            f"{'blank' if source else 'empty'}, so the page would be created empty. "
                            "Give the page's text as source.")
    refuse_unknown_choice(ctx, "content model", contentModel,
                          f"Nothing was saved{' (dry run)' if ctx.dry_run else ''}: ")

    def compose(target: EditTarget) -> Composed:
        if target.latest:  # read in a dry run only: a save's createonly has the wiki refuse it
            raise error_from_api("articleexists", f"The page {target.title!r} already exists.", ctx.wiki.key)
        return Composed(source, summary=edit_summary(ctx, comment), fields={"contentmodel": contentModel},
                        given=Overrides())
    return edit_page(ctx, title, compose, CREATION)


@tool("update-page", "Update page", toolset="edit",
      read_only=False, destructive=True, idempotent=False, dry_run=True, asks=True,
      idempotency_key=True, watch=True, rights=("edit",),
      see={"for new pages": "create-page", "for categories": "update-page-categories",
           "for many pages": "replace-in-pages"})
def update_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    source: Annotated[str | None, Arg(
        'The new page or section, or what mode adds.')] = None,
    section: Annotated[int | str | None, SectionArg] = None,
    mode: Annotated[Literal["replace", "append", "prepend"], Arg(
        "append/prepend: on its own line.")] = "replace",
    find: Annotated[str | None, Arg("Exact wikitext to change.")] = None,
    replace: Annotated[str | None, Arg("Replacement ('' deletes).")] = None,
    replaceAll: Annotated[bool, Arg("Every occurrence.")] = False,
    latestId: Annotated[int | None, LatestIdArg] = None,
    comment: Annotated[str | None, CommentArg] = None,
    minor: Annotated[bool, Arg("Minor edit.")] = False,
    bot: Annotated[bool, Arg("Bot edit.")] = False,
    removeSubsections: Annotated[bool, Arg("Lets a section lose subsections.")] = False,
    removeSections: Annotated[bool, Arg("Lets the page shrink to a section.")] = False,
    removeHeading: Annotated[bool, Arg("Lets a section lose its heading.")] = False,
    blank: Annotated[bool, Arg("Lets the page be emptied.")] = False,
) -> list[str] | str:
    """Changes an existing page: whole, a section, an addition (mode) or a passage (find, replace).
    Based on latestId, else on this client's last read of the page: others' edits to the same lines
    since then make a conflict. Refused: a replacement with neither; text from a truncated or
    rendered read (content text, html); a whole-page write dropping sections or half the page
    unless this client read the current page whole."""
    allow = Overrides(removeSections, removeSubsections, removeHeading, blank)
    check_update(source, section, mode, find, replace, replaceAll, allow)
    replacing = mode == "replace" and find is None
    source, find, replace = (None if t is None else as_wiki_receives(t) for t in (source, find, replace))

    if bot and not ctx.client.account.can("bot"):
        raise invalid_input(f"The account {ctx.client.account.name} lacks the bot right on {ctx.wiki.key}, "
                            "so bot=true cannot be honoured; nothing was saved. Call again without bot.")
    text = source or ""
    # A prepend to a section goes below its heading, as a section edit made on the base as a
    # replacement is; one that starts with a heading of its own is a section before it.
    in_section = mode == "prepend" and section not in (None, 0, "0") and not starts_heading(text)
    # A replacement is based on what the model saw; appends and prepends, unless pinned, on
    # nothing (MediaWiki adds them to the page as it then is, so parallel ones all land).
    kind = REPLACEMENT if replacing else IN_PLACE if mode == "replace" or in_section else ADDITION

    def compose(target: EditTarget) -> Composed:
        summary = edit_summary(ctx, comment)
        made = functools.partial(Composed, summary=summary)
        fields = {"minor": minor, "bot": bot}
        if find is not None:
            return made(replace_found(ctx, target, find, replace or "", replaceAll), fields=fields)
        if mode == "replace":
            kept, note = keeping_closing_links(ctx, target, text)
            return made(kept, note, fields=fields, given=allow)
        refuse_rendered_text(target.title, text)
        if mode == "append":
            added = separator(target.old, text) + text
            unpinned = {**fields, "appendtext": added, "text": None}
            at = closes_page(ctx, target) if target.latest else None
            if at is None:
                return made(target.old + added, fields=unpinned)
            # MediaWiki's appendtext adds below them: the text is sent whole on the latest revision
            # instead, made again on the page as it then is where an edit made since overlaps
            send = functools.partial(append_above_closing_links, ctx, target, text, summary, fields,
                                     lambda: read_for_edit(ctx, title, section, kind, latestId))
            return made(above_closing_links(ctx, target, added, at), fields=unpinned, send=send)
        if in_section:  # under its heading: MediaWiki's prependtext puts it above, in the section before
            heading, _, rest = target.old.partition("\n")
            body = rest.lstrip("\n")
            return made(f"{heading}\n{rest[:len(rest) - len(body)]}{text}{separator(text, body)}{body}",
                        fields=fields)
        added = text + separator(text, target.old)
        return made(added + target.old, fields={**fields, "prependtext": added, "text": None})
    return edit_page(ctx, title, compose, kind, section, latestId)


def check_update(source: str | None, section: int | str | None, mode: str, find: str | None,
                 replace: str | None, replace_all: bool, allow: Overrides) -> None:
    """Refuses update-page arguments that do not make one change: source or find with replace, and
    the Overrides only beside the replacement each lets through."""
    if find is not None:
        if source is not None or mode != "replace":
            raise invalid_input("find and replace change a passage in place: give them without source and mode.")
        if replace is None:
            raise invalid_input("find needs replace: the text to put in its place ('' deletes it).")
        if not find:
            raise invalid_input("Argument 'find' must not be empty.")
    elif source is None:
        raise invalid_input("Give source (the new text), or find and replace.")
    elif replace is not None or replace_all:
        raise invalid_input("replace and replaceAll go with find.")
    replacing = mode == "replace" and find is None
    for flag, given, whole in (("removeSubsections", allow.remove_subsections, False),
                               ("blank", allow.blank, True), ("removeSections", allow.remove_sections, True),
                               ("removeHeading", allow.remove_heading, False)):
        if given and not (replacing and (section is None) == whole):
            raise invalid_input(f"{flag} applies only to replacing " + (
                "the whole page (source without section)." if whole else "a section (section=N with source)."))


#: How many times an append above the links that close the page is made, each on the page as it then
#: is, while edits made meanwhile overlap it (a colleague's addition at the same place).
APPEND_ABOVE_TRIES = 3


def append_above_closing_links(ctx: ToolContext, target: EditTarget, text: str, summary: str | None,
                               fields: Mapping[str, Any], reread: Callable[[], EditTarget]) -> str | None:
    """Saves an append of ``text`` put above the links that close the page, on the revision read;
    where an edit made since overlaps it, again on the page read anew (``reread``). Where edits
    kept overlapping, it is appended as MediaWiki appends, below them, and the answer says so.
    None when the page no longer ends with such links: then it is appended as usual."""
    for attempt in range(APPEND_ABOVE_TRIES):
        if attempt:
            target = reread()
        at = closes_page(ctx, target)
        if at is None:
            return None
        new = above_closing_links(ctx, target, separator(target.old, text) + text, at)
        sent = {"text": new, "baserevid": target.latest, "nocreate": True, "section": target.section,
                **fields}
        try:
            saved = save_edit(ctx, target.title, {k: v for k, v in sent.items() if v is not None}, target.latest,
                              summary, composed=True)
        except WikiError as error:
            if error.code != "editconflict":
                raise
            continue
        return f"{saved}\nPlaced: above the categories and links that close the page"
    sent = {"appendtext": separator(target.old, text) + text, "nocreate": True, "section": target.section, **fields}
    with ctx.state.page_lock(ctx.wiki.key, target.title):
        saved = save_edit(ctx, target.title, {k: v for k, v in sent.items() if v is not None}, target.latest,
                          summary, composed=True)
    return (f"{saved}\nPlaced: below the categories and links that close the page, as others kept editing "
            "there meanwhile; to move it above them, read the page and edit it")


def replace_found(ctx: ToolContext, target: EditTarget, find: str, replace: str, every: bool) -> str:
    """The target's old text with ``find`` replaced, once (it must occur once) or everywhere. A
    find that was in the base revision but is gone from the latest was changed since: a
    conflict, showing the change and who made it."""
    old, base, latest, latest_text = target.old, target.pin or target.latest, target.latest, target.now
    where = repr(target.title) if target.section is None else f"section {target.section} of {target.title!r}"
    count = old.count(find)
    if count and base != latest and find not in latest_text:
        raise conflict(f"The text to find is in revision {base}, the base of this change, but no longer in "
                       f"{where} (revision {latest}): it was changed since. Nothing was saved. "
                       + (changes_since(ctx, target) or f"The changes since revision {base}:\n"
                          f"{line_diff(target.base_text, latest_text)[:2000]}\n")
                       + MW_NEXT_STEP["editconflict"], "editconflict")
    if count == 0:
        newer = f" It is in the latest revision, {latest}: pass that as latestId." \
            if base != latest and find in latest_text else find_changed_since_read(ctx, target, find)
        raise invalid_input(f"The text to find does not occur in {where} (revision {base}); nothing was "
                            "changed. find must match the wikitext exactly, whitespace and markup included: "
                            "get-page shows it." + (newer or other_spacing(old, find)))
    if count > 1 and not every:
        raise invalid_input(f"The text to find occurs {count} times in {where}; nothing was changed. "
                            "Include more of the surrounding text to pick one, or set replaceAll=true.")
    return old.replace(find, replace) if every else old.replace(find, replace, 1)


def other_spacing(text: str, find: str) -> str:
    """Where ``find`` occurs in ``text`` but for its spaces (a no-break space read as a space, a
    tab, two spaces), a sentence quoting the text there as JSON writes it; else ''."""
    words = find.split()  # at any of Unicode's spaces, U+00A0 among them
    found = len(words) > 1 and re.search(r"\s+".join(map(re.escape, words)), text)
    if not found:
        return ""
    odd = [c for c in dict.fromkeys(found.group()) if c.isspace() and c not in " \n"]
    names = ", ".join(f"U+{ord(c):04X} " + unicodedata.name(c, "TAB" if c == "\t" else "CONTROL") for c in odd)
    shown = "".join(f"\\u{ord(c):04x}" if c in odd else "\\n" if c == "\n" else c for c in found.group())
    return f' It occurs with other spacing{f" ({names})" if names else ""}: "{shown}"; give find so.'


@tool("move-page", "Move page", toolset="edit",
      read_only=False, destructive=True, idempotent=True, idempotency_key=True, asks=True,
      watch=True, rights=("move",))
def move_page(
    ctx: ToolContext,
    fromTitle: Annotated[str, Arg("Current title.", title=True)],
    toTitle: Annotated[str, Arg("New title.", title=True)],
    comment: Annotated[str | None, ReasonArg] = None,
    moveTalk: Annotated[bool, Arg("Also the talk page.")] = True,
    moveSubpages: Annotated[bool, Arg("Also subpages.")] = False,
    leaveRedirect: Annotated[bool, Arg(
        'Redirect at the old title.')] = True,
) -> str:
    """Renames a page, by default with its talk page. Fails, moving nothing, if the new title exists
    or the account cannot move as asked."""
    if not leaveRedirect and (why := ctx.client.cannot("suppressredirect")):
        raise invalid_input(f"{why} Nothing was moved. Call again without leaveRedirect=false to leave a "
                            "redirect.")
    if moveSubpages and (why := ctx.client.cannot("move-subpages")):
        raise invalid_input(f"{why} Nothing was moved. Call again without moveSubpages to move the page alone.")
    if moveSubpages and ctx.asks and not ctx.confirmed and (subpages := subpages_of(ctx, fromTitle)):
        named = ", ".join(subpages[:MOVE_SUBPAGES_NAMED]) + (
            f" and {len(subpages) - MOVE_SUBPAGES_NAMED} more" if len(subpages) > MOVE_SUBPAGES_NAMED else "")
        raise Preview("Nothing was moved.", f"move {fromTitle!r} to {toTitle!r} on {ctx.wiki.key} with its "
                      f"{counted(len(subpages), 'subpage')}: {named}.")
    params = {"action": "move", "from": fromTitle, "to": toTitle, "reason": edit_summary(ctx, comment),
              "movetalk": moveTalk, "movesubpages": moveSubpages, "noredirect": not leaveRedirect,
              "tags": change_tags(ctx), "watchlist": ctx.watch}
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params), lambda: moved_as_shown(ctx, fromTitle, toTitle),
            what="the page was moved", look="read both titles with get-page", absent=f"The wiki shows "
            f"{fromTitle!r} still in its place, so the page was not moved. Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":
            raise missing_page(ctx, fromTitle) from None
        raise
    moved = shown or answer.get("move", {})
    status = after_lost_answer("Moved.", "the wiki shows the page at its new title") if shown else "Moved."
    to = moved.get("to", toTitle)
    for pair in [moved, {"from": moved.get("talkfrom"), "to": moved.get("talkto")},
                 *(p for key in ("subpages", "subpages-talk") if isinstance(moved.get(key), list)
                   for p in moved[key])]:
        if pair.get("from") and pair.get("to"):
            ctx.reads.moved(pair["from"], pair["to"])
    talk_errors = [wiki_words(e) for e in moved.get("talkmove-errors") or []]
    source = moved.get("from", fromTitle)
    if talk_errors and ctx.site.namespace_of(to) % 2 and not ctx.site.namespace_of(source) % 2:
        # MediaWiki tried the new title's talk page, which is the new title itself, and says a page exists
        stays = f"{talk_title(ctx, source)} stays where it is: {to} is itself a talk page"
        talk_errors = [stays + ", which has none of its own"]
    subpages_moved, subpages_kept = subpage_moves(ctx, moved)
    return status + "\n" + labelled(
        ("From", source), ("To", to),
        ("Redirect left", "yes" if moved.get("redirectcreated") else "no"),
        ("Talk page moved", f"{moved['talkfrom']} -> {moved['talkto']}" if moved.get("talkto") else None),
        ("Talk page not moved", "; ".join(talk_errors)),
        ("Subpages moved", ", ".join(subpages_moved)), ("Subpages not moved", "; ".join(subpages_kept)),
        ("URL", ctx.site.page_url(to)))


#: The subpages a question about a move names; the rest are counted.
MOVE_SUBPAGES_NAMED = 20


def moved_as_shown(ctx: ToolContext, from_title: str, to_title: str) -> dict[str, Any] | None:
    """What the wiki shows after a move whose answer was lost, as the API answers a move: the
    page at its new title, its old title a redirect there or gone; None when the page is where
    it was (a refused move, the new title taken, say)."""
    query = ctx.client.get({"action": "query", "titles": [from_title, to_title], "redirects": True}
                           ).get("query", {})
    found = batch_pages(query, [from_title, to_title])
    (at_old, via), (at_new, _) = found[from_title], found[to_title]
    if at_new is None or (at_old is not None and at_old.get("pageid") != at_new.get("pageid")):
        return None
    return {"from": from_title, "to": at_new.get("title", to_title), "redirectcreated": bool(via)}


def subpage_moves(ctx: ToolContext, moved: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Each subpage a move moved (``A/1 -> B/1``), and each it left behind with the reason:
    MediaWiki moves them one by one, and refuses all of a page's subpages at once when the
    new namespace has none (naming none of them)."""
    done, kept = [], []
    for key, parent in (("subpages", moved.get("from")), ("subpages-talk", moved.get("talkfrom"))):
        result = moved.get(key) or []
        if isinstance(result, dict):
            errors = result.get("errors") or [{}]
            why = (f"the namespace of {moved.get('to')} has no subpages" if errors[0].get("code") ==
                   "namespace-nosubpages" else "; ".join(wiki_words(e) for e in errors))
            kept.append(f"{', '.join(subpages_of(ctx, parent) if parent else []) or 'its subpages'} ({why})")
            continue
        for subpage in result:
            if "to" in subpage:
                done.append(f"{subpage['from']} -> {subpage['to']}")
            else:
                why = "; ".join(wiki_words(e) for e in subpage.get("errors") or [])
                kept.append(f"{subpage.get('from')} ({why})")
    return done, kept


def subpages_of(ctx: ToolContext, title: str) -> list[str]:
    namespace = ctx.site.namespace_of(title)
    name = title.partition(":")[2] if namespace else title
    found = ctx.client.get({"action": "query", "list": "allpages", "apnamespace": namespace,
                            "apprefix": f"{name}/", "aplimit": "max"}).get("query", {}).get("allpages") or []
    return [p["title"] for p in found]


def wiki_words(error: Mapping[str, Any]) -> str:
    """One of MediaWiki's error texts inside a sentence: wiki links as their text."""
    text = WIKI_LINK.sub(lambda m: m.group(2) or m.group(1), str(error.get("text") or error.get("code", "")))
    return strip_tags(text)


WIKI_LINK = re.compile(r"\[\[:?([^|\]]*)(?:\|([^\]]*))?\]\]")


@tool("delete-page", "Delete page", toolset="admin",
      read_only=False, destructive=True, idempotent=True, idempotency_key=True, guarded=True,
      shows="the latest revision, size and revision count", rights=("delete",),
      see={"to restore it": "undelete-page"})
def delete_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Deletes a page with its history."""
    if not ctx.confirmed:
        query = ctx.client.get({"action": "query", "titles": title, "prop": "info|revisions",
                                "rvprop": "ids", "rvlimit": "max"})
        page, _ = resolve_page(query.get("query", {}))
        check_page(ctx, page, title)
        count = len(page.get("revisions") or [])
        revisions = f"more than {count} revisions" if query.get("continue") else counted(count, "revision")
        raise Preview("Nothing was deleted.", f"delete {page['title']!r} (latest revision "
                      f"{page.get('lastrevid')}, {counted(page.get('length', 0), 'byte')}, {revisions}"
                      f"{', a redirect' if page.get('redirect') else ''}) from {ctx.wiki.key}.")
    params = {"action": "delete", "title": title, "reason": edit_summary(ctx, comment),
              "tags": change_tags(ctx)}
    def gone_as_shown() -> dict[str, Any] | None:
        page, _ = query_page(ctx, titles=title)
        return {"title": page.get("title", title)} if page.get("missing") else None
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params), gone_as_shown, what="the page was deleted",
            look="read it with get-page", absent="The wiki shows the page still there, so it was not deleted. "
            "Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":  # deleted since the confirmation, or never there
            raise missing_page(ctx, title) from None
        raise
    deleted = shown or answer.get("delete", {})
    status = after_lost_answer("Deleted.", "the wiki shows the page deleted") if shown else "Deleted."
    return status + "\n" + labelled(("Title", deleted.get("title", title)), ("Log ID", deleted.get("logid")),
                                   ("Restore with", "undelete-page"))


@tool("undelete-page", "Undelete page", toolset="admin", read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, asks=True, rights=("undelete",))
def undelete_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Restores a deleted page with all its deleted revisions. Fails if the title has none."""
    if ctx.asks and not ctx.confirmed:
        page, _ = query_page(ctx, titles=title, prop="deletedrevisions", drvprop="ids|user", drvlimit="max")
        deleted = page.get("deletedrevisions") or []  # newest first; the first answer's, at most 500
        if len(deleted) >= UNDELETE_ASKS_FROM:
            authors = list(dict.fromkeys(revision_user(r) for r in deleted))
            by = names_text(authors[:5] + ["others"] * (len(authors) > 5))
            raise Preview("Nothing was restored.", f"restore {counted(len(deleted), 'deleted revision')} of "
                          f"{title!r} on {ctx.wiki.key} (revisions {deleted[-1].get('revid')} to "
                          f"{deleted[0].get('revid')}, by {by}).")
    params = {"action": "undelete", "title": title, "reason": edit_summary(ctx, comment),
              "tags": change_tags(ctx)}
    def page_as_shown() -> dict[str, Any] | None:
        page, _ = query_page(ctx, titles=title, prop="info")
        return None if page.get("missing") or not page else page
    answer, shown = settle_write(
        lambda: ctx.client.write(params), page_as_shown, what="the page was restored",
        look="read it with get-page", absent="The wiki shows the page still deleted, so it was not restored. "
        "Call again to retry.")
    restored, page = answer.get("undelete", {}), shown or query_page(ctx, titles=title, prop="info")[0]
    status = after_lost_answer("Restored.", "the wiki shows the page restored") if shown else "Restored."
    title = page.get("title", restored.get("title", title))
    return status + "\n" + labelled(("Title", title), ("Revisions restored", restored.get("revisions")),
                                    ("Revision ID", page.get("lastrevid")), ("URL", ctx.site.page_url(title)))


#: An undelete of this many revisions or more asks the person first, where they confirm.
UNDELETE_ASKS_FROM = 10


# ---------------------------------------------------------------------------
# write_admin.py: Write tools for undoing and guarding: undo-edit, rollback-edits, protect-page and watch-page.
# ---------------------------------------------------------------------------

@tool("undo-edit", "Undo edit", toolset="history",
      read_only=False, destructive=True, idempotent=False, dry_run=True, asks=True,
      idempotency_key=True, watch=True, rights=("edit",),
      see={"to remove a page": "delete-page", "for a user's latest edits": "rollback-edits"})
def undo_edit(
    ctx: ToolContext,
    revisionId: Annotated[int, Arg("Revision ID to undo; of a run, the latest.", minimum=1)],
    oldestRevisionId: Annotated[int | None, Arg("A run's first revision ID.", minimum=1)] = None,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str] | str:
    """Undoes an edit, or a run of them, in a new revision keeping later edits. Fails, saving
    nothing, if later edits changed the same lines, or for a page's creation."""
    oldest = oldestRevisionId or revisionId
    if oldest > revisionId:
        raise invalid_input(f"oldestRevisionId ({oldest}) is newer than revisionId ({revisionId}): give the "
                            "run's first revision as oldestRevisionId and its latest as revisionId.")
    query = ctx.client.get({"action": "query", "revids": [oldest, revisionId], "prop": "revisions|info",
                            "rvprop": "ids|user", "intestactions": "edit" if ctx.dry_run else None})
    found = {r["revid"]: (p, r) for p in query.get("query", {}).get("pages") or []
             for r in p.get("revisions") or []}
    for revid in (revisionId, oldest):
        if revid not in found:
            raise no_such_revision(ctx, revid)
    (page, newest), (other, first) = found[revisionId], found[oldest]
    if other.get("pageid") != page.get("pageid"):
        raise invalid_input(f"Revisions {oldest} and {revisionId} are of different pages "
                            f"({other.get('title')!r} and {page.get('title')!r}); a run to undo is of one page. "
                            "Nothing was saved.")
    title, latest, parent = page["title"], page.get("lastrevid", 0), first.get("parentid") or 0
    if not parent:
        raise invalid_input(f"Revision {oldest} created {title!r}, so undoing it would leave nothing; "
                            "nothing was saved. To remove the page, use delete-page.")
    # a run may hold other people's good edits: the answer, the dry run and the summary name them all,
    # and the person confirms undoing them where they are asked
    authors = [revision_user(newest)] if oldest == revisionId else run_authors(ctx, title, oldest, revisionId)
    what = (f"revision {revisionId} by {authors[0]}" if oldest == revisionId
            else f"revisions {oldest} to {revisionId} by {names_text(authors)}")
    if ctx.dry_run:  # the text MediaWiki's undo makes (ContentHandler::getUndoContent)
        refuse_forbidden_dry_run(ctx, page, "edit")
        texts = revision_texts(ctx, latest, revisionId, parent)
        now, undone, before = texts.get(latest, ""), texts.get(revisionId, ""), texts.get(parent, "")
        new = before if now == undone else merge3(undone, before, now)
        if new is None:
            raise undo_conflict(ctx, title, oldest, revisionId, parent)
        refuse_unsaveable(ctx, title, new, page.get("contentmodel"))
        preview = dry_run_result(title, latest, None, now, as_saved(new), ctx.budget)
        return preview if oldest == revisionId else [f"This would undo {what}.", *preview]
    if ctx.asks and not ctx.confirmed and len(authors) > 1:
        raise Preview("Nothing was saved.", f"undo {what} of {title!r} on {ctx.wiki.key}, whose latest revision "
                      f"is {latest}: the edits of {len(authors)} people.")
    done = f"Undid {what}" + ("; the edits made since are kept." if latest != revisionId else ".")
    # MediaWiki writes its own summary for one revision, none for a run
    summary = comment or (None if oldest == revisionId else f"Undo {what}")
    try:
        return save_edit(ctx, title, {"undo": revisionId, "undoafter": parent, "nocreate": True}, latest,
                         edit_summary(ctx, summary), done)
    except WikiError as error:
        if error.code == "undofailure":
            raise undo_conflict(ctx, title, oldest, revisionId, parent) from None
        raise


def run_authors(ctx: ToolContext, title: str, oldest: int, newest: int) -> list[str]:
    """Who made the revisions oldest to newest of a page, each once, in the order of their
    first edit in the run, and 'others' for a run longer than one answer."""
    data = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "rvprop": "ids|user",
                           "rvdir": "newer", "rvstartid": oldest, "rvendid": newest, "rvlimit": "max"})
    page, _ = resolve_page(data.get("query", {}))
    return list(dict.fromkeys(revision_user(r) for r in page.get("revisions") or [])) + ["others"] * (
        "continue" in data)


def undo_conflict(ctx: ToolContext, title: str, oldest: int, newest: int, parent: int) -> WikiError:
    """The conflict of an undo that later edits stand in the way of, naming them."""
    page, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user", rvdir="newer",
                         rvstartid=newest, rvlimit=11)
    since = [r for r in page.get("revisions") or [] if r.get("revid") != newest]
    named = ", ".join(f"{r['revid']} by {revision_user(r)}" for r in since[:10]) + ", ..." * (len(since) > 10)
    what = f"Revision {newest}" if oldest == newest else f"Revisions {oldest} to {newest}"
    return conflict(f"{what} of {title!r} cannot be undone cleanly: the edits made since (revision"
                    f"{'s' * (len(since) > 1)} {named}) changed the same lines. Nothing was saved. To undo it "
                    f"by hand, compare-pages with fromRevision={parent} and toRevision={newest} shows what it "
                    "changed; then update-page with find and replace changes that back in the current text.",
                    "undofailure")


@tool("rollback-edits", "Roll back edits", toolset="admin",
      read_only=False, destructive=True, idempotent=True, guarded=True,
      shows="the edits and the revision it returns to", idempotency_key=True, watch=True, rights=("rollback",),
      see={"for an older edit": "undo-edit"})
def rollback_edits(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    user: Annotated[str, Arg("The page's last editor, whose edits are reverted.")],
    comment: Annotated[str | None, CommentArg] = None,
) -> str:
    """Reverts the latest edits to a page by its last editor, back to the last revision by someone
    else."""
    name = user_name(without_user_namespace(ctx.site, user))
    run = rollback_run(ctx, title, name)
    if not ctx.confirmed:
        ctx.reads.previewed(run.title, f"rollback|{name}", run.latest)
        raise Preview("Nothing was rolled back.", f"revert {run.edits}, returning it to revision "
                      f"{run.target} by {run.target_user}.")
    previewed = (ctx.reads.preview(run.title, f"rollback|{name}") or (None, None))[0]
    if previewed and previewed != run.latest:
        raise conflict(f"{run.title!r} was edited since the preview the user confirmed (its latest "
                       f"revision was {previewed}, now {run.latest}); nothing was rolled back. rollback-edits "
                       f"would now revert {run.edits}: ask the user to confirm that, then call again with "
                       "confirm=true.")
    # action=rollback takes no base revision: an edit landing between the read above and the
    # rollback (one round trip) would be reverted too, unseen.
    params = {"action": "rollback", "title": run.title, "user": name, "summary": edit_summary(ctx, comment),
              "tags": change_tags(ctx), "watchlist": ctx.watch}
    try:
        answer, shown = settle_write(
            lambda: ctx.client.write(params, token="rollback"),
            lambda: rollback_as_shown(ctx, run.title, name),
            what="the rollback was saved", look="check get-page-history", absent=f"The wiki shows the latest "
            f"edit still by {name}, so nothing was rolled back. Call again to retry.")
    except WikiError as error:
        if error.code == "missingtitle":
            raise missing_page(ctx, title) from None
        if error.code == "alreadyrolled":
            raise not_latest_editor(run.title, name, None) from None
        raise
    done = shown or answer.get("rollback", {})
    status = (after_lost_answer(f"Rolled back {run.edits}.", "its history shows the rollback") if shown
              else f"Rolled back {run.edits}, to revision {done.get('last_revid')}.")
    return saved_lines(ctx, done.get("title", run.title), done["revid"], done.get("old_revid") or None, status)


@dataclasses.dataclass(frozen=True)
class RollbackRun:
    """The latest edits of a page by one user, which a rollback reverts."""
    title: str
    latest: int       # the page's latest revision
    edits: str        # "the 2 latest edits to 'X', all by Y (revisions 39 to 40)"
    target: int       # the revision it returns to
    target_user: str


def rollback_run(ctx: ToolContext, title: str, name: str) -> RollbackRun:
    """What a rollback would do now: which edits it reverts, and the revision it returns to."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "rvprop": "ids|user",
                            "rvlimit": "max"})
    page, _ = resolve_page(query.get("query", {}))
    check_page(ctx, page, title)
    revisions = page.get("revisions") or [{}]
    if revision_user(revisions[0]) != name:
        raise not_latest_editor(page["title"], name, revision_user(revisions[0]))
    run = list(itertools.takewhile(lambda r: revision_user(r) == name, revisions))
    target = revisions[len(run)] if len(run) < len(revisions) else None
    count = str(len(run))
    if target is None and query.get("continue"):  # the run goes on past this answer
        more, _ = query_page(ctx, titles=title, prop="revisions", rvprop="ids|user", rvexcludeuser=name)
        target, count = revision_of(more) or None, f"more than {len(run)}"
    if target is None:
        raise invalid_input(f"Every revision of {page['title']!r} is by {name}, so rollback has no earlier "
                            "version to return to; nothing was changed. To remove the page, use delete-page.")
    edits = (f"the latest edit to {page['title']!r}, by {name} (revision {run[0]['revid']})" if len(run) == 1
             else f"the {count} latest edits to {page['title']!r}, all by {name} (revisions "
                  f"{run[-1]['revid']} to {run[0]['revid']})")
    return RollbackRun(page["title"], run[0]["revid"], edits, target["revid"], revision_user(target))


def not_latest_editor(title: str, name: str, latest: str | None) -> WikiError:
    who = f"is by {latest}, not {name}" if latest else f"is no longer by {name} (edited or rolled back since)"
    return conflict(f"The latest edit to {title!r} {who}; nothing was rolled back. rollback-edits reverts "
                    "only the latest editor's edits: get-page-history shows them, and undo-edit undoes an older "
                    "one.", "alreadyrolled")


def rollback_as_shown(ctx: ToolContext, title: str, name: str) -> dict[str, Any] | None:
    """A rollback by this account at the top of the history, over the edits of ``name``, as the
    API answers one; None while the latest edit is still by ``name``."""
    query = ctx.client.get({"action": "query", "titles": title, "prop": "revisions", "meta": "userinfo",
                            "rvprop": "ids|user|tags", "rvlimit": 2}).get("query", {})
    page, _ = resolve_page(query)
    latest, before = [*(page.get("revisions") or []), {}, {}][:2]
    mine = latest.get("user") == query.get("userinfo", {}).get("name")
    if mine and "mw-rollback" in (latest.get("tags") or []) and before.get("user") == name:
        return {"title": page.get("title", title), "revid": latest["revid"], "old_revid": before.get("revid")}
    if latest.get("user") == name:
        return None
    raise upstream_failure(f"the latest edit is by {latest.get('user')}")


LevelArg = Arg("Same choices as edit.")


@tool("protect-page", "Protect page", toolset="admin", read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, guarded=True, shows="the old and new levels", rights=("protect",))
def protect_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    edit: Annotated[str | None, Arg("autoconfirmed, sysop; all lifts it.")] = None,
    move: Annotated[str | None, LevelArg] = None,
    upload: Annotated[str | None, LevelArg] = None,
    create: Annotated[str | None, LevelArg] = None,
    expiry: Annotated[str | None, Arg("Of the levels given: 1 week, ISO 8601 or infinite (default).")] = None,
    cascade: Annotated[bool | None, Arg("Protects transcluded pages too.")] = None,
    comment: Annotated[str | None, ReasonArg] = None,
) -> str:
    """Sets or lifts a page's edit, move, upload (files) and create (missing pages) protection;
    levels not given stay as they are."""
    asked = {kind: level for kind, level in (("edit", edit), ("move", move), ("upload", upload),
                                             ("create", create)) if level is not None}
    check_protection(ctx, asked, cascade, expiry)
    page, _ = query_page(ctx, titles=title, prop="info", inprop="protection")
    check_page(ctx, page, title, must_exist=False)
    title, kinds = page.get("title", title), page.get("restrictiontypes") or []
    for kind in asked:
        if kind not in kinds:
            missing = " (it does not exist)" if page.get("missing") else ""
            raise invalid_input(f"{title!r} cannot be protected against {kind}: it can be protected against "
                                f"{', '.join(kinds) or 'nothing'}{missing}. Nothing was changed.")
    # MediaWiki lifts every kind of protection a change leaves out: those not asked about go along.
    # Another page's cascading protection (its source) is not this page's to change, and stays.
    imposed = [p for p in page.get("protection") or [] if p.get("source")]
    now = {p["type"]: p for p in page.get("protection") or [] if p.get("level") and not p.get("source")}
    new = {kind: now.get(kind, {"type": kind, "level": ""}) for kind in kinds}
    new.update({kind: {"type": kind, "level": "" if level == "all" else level, "expiry": expiry or "infinite"}
                for kind, level in asked.items()})
    cascading = any(p.get("cascade") for p in now.values())
    cascades = cascading if cascade is None else cascade
    allowed = ctx.site.restrictions.get("cascadinglevels") or ["sysop"]
    if cascades and new.get("edit", {}).get("level") not in allowed:
        if cascade:
            raise invalid_input(f"cascade protects pages this one transcludes only at edit level "
                                f"{' or '.join(allowed)}; give edit={allowed[0]} with it. Nothing was "
                                "changed.")
        cascades = False  # MediaWiki ends cascading when the edit level drops below it
    if not ctx.confirmed:
        changes = [f"{kind}: {level_text(now.get(kind))} -> {level_text(new[kind])}" if kind in asked
                   else f"{kind}: {level_text(now[kind])} (kept)" for kind in kinds
                   if kind in asked or kind in now]
        if cascades != cascading:
            changes.append(f"cascading: {'on' if cascading else 'off'} -> {'on' if cascades else 'off'}")
        staying = f" It stays protected whatever is set: {protection_text(imposed)}." if imposed else ""
        raise Preview("Nothing was changed.", f"change the protection of {title!r} on {ctx.wiki.key}: "
                      f"{'; '.join(changes)}.{staying}")
    params = {"action": "protect", "title": title, "cascade": cascades, "reason": edit_summary(ctx, comment),
              "protections": [f"{kind}={p['level'] or 'all'}" for kind, p in new.items()],
              "expiry": [p.get("expiry") or "infinite" for p in new.values()], "tags": change_tags(ctx)}

    def protection_as_shown() -> list[dict[str, Any]] | None:
        shown = query_page(ctx, titles=title, prop="info", inprop="protection")[0].get("protection") or []
        if {p["type"]: p["level"] for p in shown} != {k: p["level"] for k, p in new.items() if p["level"]}:
            return None
        return [p for p in shown if not p.get("source")]
    def protect() -> dict[str, Any]:
        try:
            return ctx.client.write(params)
        except WikiError as error:
            raise bad_expiry(ctx, expiry or "", error.code) if error.code in ("invalidexpiry", "pastexpiry") else error
    answer, shown = settle_write(
        protect, protection_as_shown, what="the protection was changed",
        look="read it with get-page", absent=f"The wiki shows the protection of {title!r} unchanged, so "
        "nothing was changed. Call again to retry.")
    done = answer.get("protect", {})
    result = shown if shown is not None else [
        {"type": kind, "level": level, "expiry": entry.get("expiry"), "cascade": done.get("cascade")}
        for entry in done.get("protections") or [] for kind, level in entry.items() if kind != "expiry"]
    status = "Protection changed." if shown is None else \
        after_lost_answer("Protection changed.", "the wiki shows the new protection")
    return status + "\n" + labelled(("Title", title), ("Protection", protection_text([*result, *imposed])),
                                    ("URL", ctx.site.page_url(title)))


def check_protection(ctx: ToolContext, asked: Mapping[str, str], cascade: bool | None, expiry: str | None) -> None:
    """Refuses, asking the wiki nothing, the arguments of protect-page it would refuse: the wiki
    judges an expiry itself (bad_expiry), but one with a character no time has is refused here."""
    if not asked and cascade is None:
        raise invalid_input("Give a level for edit, move, upload or create (or cascade); nothing was "
                            "changed.")
    if expiry is not None and not expiry.strip():
        raise invalid_input("Argument 'expiry' must not be empty: give a time, such as 1 week, or infinite.")
    if expiry is not None and re.search(r"[{}|\[\]<>\n]", expiry):  # in no time; the wiki judges the others
        raise bad_expiry(ctx, expiry, "invalidexpiry")
    levels = [level for level in ctx.site.restrictions.get("levels") or () if level]
    for kind, level in asked.items():
        if levels and level not in (*levels, "all"):
            raise invalid_input(f"Argument {kind!r} must be a protection level of {ctx.wiki.key}: "
                                f"{', '.join(levels)}, or all to lift it; got {level!r}.")


def bad_expiry(ctx: ToolContext, expiry: str, code: str) -> WikiError:
    """The refusal of an expiry the wiki cannot read as a time (MediaWiki's invalidexpiry), or one in
    the past (pastexpiry): the model's to change."""
    if code == "pastexpiry":
        return invalid_input(f"Argument 'expiry' is {expiry!r}, which is in the past; nothing was changed. Give "
                             "a duration such as 1 week, a later time, or infinite.")
    return invalid_input(f"Argument 'expiry' is {expiry!r}, which {ctx.wiki.key} does not read as a time; "
                         "nothing was changed. Give a duration such as 1 week, a time such as "
                         "2030-01-31T00:00:00Z, or infinite.")


def level_text(entry: Mapping[str, Any] | None) -> str:
    """``sysop until 1 week``: one kind's protection level, or none."""
    return f"{entry['level']}{until_clause(entry.get('expiry'))}" if entry and entry.get("level") else "none"


@tool("watch-page", "Watch page", toolset="changes", read_only=False, destructive=True, idempotent=True,
      rights=("editmywatchlist",), offered=has_account,
      see={"for their changes": "get-watchlist"})
def watch_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    unwatch: Annotated[bool, Arg("Removes it instead.")] = False,
    expiry: Annotated[str | None, Arg("Until: 1 week or ISO 8601; default: for good.")] = None,
) -> str:
    """Adds a page, existing or not, to the account's watchlist (until an expiry, if given), or
    removes it."""
    if unwatch and expiry is not None:
        raise invalid_input("expiry goes with watching: give unwatch or expiry, not both.")
    if expiry is not None and not expiry.strip():
        raise invalid_input("Argument 'expiry' must not be empty: give a time, such as 1 week.")
    if expiry and WATCH_EXPIRY not in ctx.client.parameters:  # MediaWiki would watch it for good
        raise invalid_input(f"{ctx.wiki.key} keeps watchlist entries without expiry; nothing was changed. "
                            "Call again without expiry to watch the page until it is unwatched.")
    done = "unwatched" if unwatch else "watched"

    def watch_as_shown() -> dict[str, Any] | None:
        entry, _ = query_page(ctx, titles=title, prop="info", inprop="watched")
        if bool(entry.get("watched")) == unwatch:
            return None
        return {**entry, "expiry": entry.get("watchlistexpiry")}
    answer, shown = settle_write(
        lambda: ctx.client.write({"action": "watch", "titles": title, "unwatch": unwatch, "expiry": expiry},
                                 token="watch"), watch_as_shown, what=f"the page was {done}",
        look="read the watchlist", absent=f"The wiki shows {title!r} still "
        f"{'watched' if unwatch else 'unwatched'}, so nothing was changed. Call again to retry.")
    entry: dict[str, Any] = shown or next(iter(answer.get("watch") or []), {})
    status = f"{done.title()}."
    status = after_lost_answer(status, f"the wiki shows the page {done}") if shown else status
    check_page(ctx, entry, title, must_exist=False)
    if entry.get("special"):
        raise invalid_input(f"{entry.get('title', title)!r} is a special page, which cannot be watched.")
    listed = entry.get("title", title) + (" (does not exist yet)" if entry.get("missing") else "")
    expires = entry.get("expiry") if until_clause(entry.get("expiry")) else None
    return status + "\n" + labelled(("Title", listed), ("Until", expires))


# ---------------------------------------------------------------------------
# write_files.py: Write tools for files: uploads from disk or from a URL, new files and new versions.
# ---------------------------------------------------------------------------

# An upload goes in one or two steps. First the file is sent (or, for a URL the wiki
# fetches itself, named), and MediaWiki answers with its warnings: a file with this
# title exists, the same content is already there, the name is odd. MediaWiki can only
# ignore all warnings at once (ignorewarnings), so a warned upload waits in the wiki's
# upload stash, the warnings are sorted here, and only then is the stashed file published
# with ignorewarnings: never a blind overwrite, and the bytes are not sent again.

FilePathArg = Arg("Absolute path in an upload directory.", max_length=4096, max_length_listed=False)


FileUrlArg = Arg("http(s) URL of the file.", max_length=2000, max_length_listed=False)


UploadCommentArg = Arg("Upload summary.", max_length=500, max_length_listed=False)


UploadTextArg = Arg("Description page wikitext; default: the comment.")


IgnoreWarningsArg = Arg("Upload despite warnings.")


#: Seconds the server spends fetching a URL before it leaves the fetch to the wiki.
UPLOAD_FETCH_SECONDS = 120.0


UPLOAD_FETCH_CHUNK = 64 * 1024


#: Progress of a fetch is reported at most once per this many bytes.
PROGRESS_STEP_BYTES = 1 << 20


#: MediaWiki's upload warnings in words, and whether each is about what is on the wiki
#: (conflict) or about the upload itself (invalid_input). ``{v}`` is the warning's value,
#: ``{file}`` the wiki's name of the File namespace.
UPLOAD_WARNINGS: dict[str, tuple[str, str]] = {
    "exists": ("conflict", "a file with this title exists"),
    "page-exists": ("conflict", "the description page exists but holds no file"),
    "exists-normalized": ("conflict", "a file with a similar name exists: {file}:{v}"),
    "thumb": ("conflict", "the name looks like a thumbnail of an existing file"),
    "was-deleted": ("conflict", "a file with this title was deleted before"),
    "duplicate": ("conflict", "the same content is already on the wiki as {v}"),
    "duplicate-archive": ("conflict", "the same content was deleted before as {file}:{v}"),
    "duplicateversions": ("conflict", "the content equals an earlier version of this file"),
    "nochange": ("conflict", "the content equals the current version"),
    "badfilename": ("invalid_input", "the title is not a valid file name; the wiki would save it as {file}:{v}"),
    "bad-prefix": ("invalid_input", ("the name starts like a camera's automatic name; wikis want a "
                                     "descriptive title")),
    "thumb-name": ("invalid_input", "the name looks like a thumbnail's (NNNpx-...)"),
    "filetype-unwanted-type": ("invalid_input", "the wiki discourages .{v} files"),
    "large-file": ("invalid_input", "the file is larger than the wiki recommends"),
    "empty-file": ("invalid_input", "the file is empty"),
}


#: Warnings an update expects (exists) or answers itself (nochange); any other stops it
#: unless the call passes ignoreWarnings (an earlier version's bytes included).
UPDATE_WARNINGS = ("exists", "nochange")


@dataclasses.dataclass
class UploadSource:
    """What an upload sends: the bytes, or (``data`` None) a URL for the wiki to fetch."""
    data: bytes | None
    url: str | None = None
    why_wiki_fetches: str = ""   # why the server left the fetch to the wiki

    @property
    def sha1(self) -> str | None:
        return hashlib.sha1(self.data).hexdigest() if self.data is not None else None


def explain_warnings(warnings: Mapping[str, Any], skip: Iterable[str] = (),
                     file_namespace: str = CANONICAL_NAMESPACES[6]) -> list[str]:
    """MediaWiki's upload warnings as short sentences (unknown ones by their code), files
    named with the wiki's own name of the File namespace."""
    said = []
    for code, value in [(code, value) for code, value in warnings.items() if code not in skip]:
        if isinstance(value, list):
            value = (", ".join(f"{file_namespace}:{v}" for v in value) if code == "duplicate"
                     else (value[0] if value else ""))
        text = UPLOAD_WARNINGS.get(code, ("", f"{code} ({value})" if isinstance(value, str) else code))[1]
        said.append(text.replace("{v}", str(value).replace("_", " ")).replace("{file}", file_namespace))
    return said


def file_title(ctx: ToolContext, name: str) -> str:
    """A file name as the wiki shows its title: ``Datei:Rot.png`` on a German wiki."""
    return f"{file_namespace(ctx)}:{name.replace('_', ' ')}"


def file_namespace(ctx: ToolContext) -> str:
    return ctx.site.namespaces.get(6) or CANONICAL_NAMESPACES[6]


def uploads_allowed(ctx: ToolContext) -> None:
    if ctx.site.raw.get("uploadsenabled") is False:
        raise permission_denied(f"{ctx.wiki.key} has uploads switched off; no retry by the "
                                "model changes this.")


def check_wiki_size(ctx: ToolContext, size: int, what: str) -> None:
    wiki_max = ctx.site.raw.get("maxuploadsize")
    if wiki_max and size > wiki_max:
        raise invalid_input(f"{what} is {size} bytes; {ctx.wiki.key} accepts files up to {wiki_max} bytes. "
                            "Nothing was uploaded.")


def check_upload_size(ctx: ToolContext, size: int, what: str) -> None:
    check_wiki_size(ctx, size, what)
    cap = ctx.state.config.upload_max_bytes
    if size > cap:
        raise invalid_input(f"{what} is {size} bytes; this server uploads files up to {cap} bytes "
                            "(MCP_UPLOAD_MAX_BYTES, which the operator can raise). Nothing was uploaded.")


def read_upload_file(ctx: ToolContext, filepath: str) -> UploadSource:
    """The bytes of a file from disk, if it lies inside an upload directory once links
    are resolved. Nothing is read otherwise."""
    uploads_allowed(ctx)
    directories = ctx.state.config.upload_dirs
    if not directories:
        raise permission_denied("Uploads from disk are switched off: the operator has set no upload "
                                "directory (MCP_UPLOAD_DIRS, or uploadDirs in the configuration file). No "
                                "retry by the model changes this; upload-file-from-url uploads from a URL.")
    if not os.path.isabs(filepath):
        raise invalid_input(f"filepath must be an absolute path, not {filepath!r}.")
    real = os.path.realpath(filepath)
    if not any(os.path.commonpath([real, d]) == d for d in directories):
        linked = " once its links are resolved" if real != os.path.normpath(filepath) else ""
        raise permission_denied(f"{filepath} lies outside the upload directories{linked} "
                                f"({', '.join(directories)}); this server reads no other file. No retry with "
                                "this path changes this: the file must be copied into one of them.")
    try:  # the checked path itself, never a link swapped in since; a FIFO must not block the open
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise not_found(f"There is no file {filepath}.") from None
    except OSError as error:
        raise permission_denied(f"{filepath} cannot be read: {error.strerror}.") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise invalid_input(f"{filepath} is not a regular file.")
        check_upload_size(ctx, info.st_size, filepath)
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(ctx.state.config.upload_max_bytes + 1)
    finally:
        os.close(fd)
    check_upload_size(ctx, len(data), filepath)  # it may have grown
    return UploadSource(data)


def fetch_upload_url(ctx: ToolContext, url: str) -> UploadSource:
    """Fetches a URL's file for an upload through the address guard, with a session of its own
    (the wiki's cookies and token never go to that host). A file over the cap, or whose download
    breaks off, is left to the wiki to fetch from the last address, once every redirect is checked
    here (the wiki follows them unguarded); a URL not followed to its end is refused."""
    uploads_allowed(ctx)
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = urllib.parse.urlsplit("")
    address = without_userinfo(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid_input(f"{address!r} is not an http(s) URL of a file.")
    cap = ctx.state.config.upload_max_bytes
    with pinnable_session(ctx.state.config.user_agent) as session:  # not the wiki's: its cookies stay home
        try:
            # the wiki's timeout, read past the rights check: the fetch asks the wiki nothing
            response = guarded_get(session, url, ctx.state.guard, timeout=ctx._client.timeout, stream=True)
        except WikiError as error:
            if error.category != "upstream_failure":
                raise  # refused by the guard, or no URL at all
            raise upstream_failure(f"{error.message} Nothing was uploaded, and the URL was not "
                                   "handed to the wiki: this server could not check where it leads. "
                                   + RETRY_LATER) from None
        with response:
            final = response.url  # the wiki follows redirects unguarded: it starts where the checks ended
            if response.status_code >= 400:
                raise (not_found if response.status_code in (404, 410) else upstream_failure)(
                    f"{address} answered HTTP {response.status_code}; nothing was uploaded. Check the URL.")
            length = response.headers.get("Content-Length", "")
            length_known = int(length) if length.isdigit() else None
            if length_known is not None:
                check_wiki_size(ctx, length_known, address)
                if length_known > cap:
                    return UploadSource(None, final, f"it is {length_known} bytes, over this server's "
                                        f"{cap}-byte cap")
            data = bytearray()
            reported = 0
            shown = 0.0  # progress must grow with every report
            deadline = time.monotonic() + UPLOAD_FETCH_SECONDS
            try:
                for chunk in response.iter_content(UPLOAD_FETCH_CHUNK):
                    data += chunk
                    if (got := len(data)) > cap:
                        return UploadSource(None, final, f"it is over this server's {cap}-byte cap")
                    if time.monotonic() > deadline:
                        return UploadSource(None, final, f"this server could not fetch it within "
                                            f"{UPLOAD_FETCH_SECONDS:g} s")
                    if got - reported >= PROGRESS_STEP_BYTES and min(got / (length_known or cap), 0.99) > shown:
                        reported, shown = got, min(got / (length_known or cap), 0.99)
                        ctx.progress(shown, 3, f"Fetched {got} bytes from {host_of(url)}")
            except _requests().RequestException as exc:
                return UploadSource(None, final, f"this server's download from {host_of(url)} broke off "
                                    f"({type(exc).__name__})")
    check_wiki_size(ctx, len(data), address)
    return UploadSource(bytes(data), final)


def upload_file_to_wiki(ctx: ToolContext, title: str, source: UploadSource, *, new: bool,
                        text: str | None, comment: str | None, ignore_warnings: bool) -> str:
    """Uploads ``source`` as a new file (``new``) or a new version of an existing one,
    publishing past exactly the warnings that the call allows (see the banner above)."""
    name = title_in_namespace(ctx.site, title, 6).partition(":")[2].strip()  # under any name of File:
    # the tool to use instead when the title's existence is the other way; a URL was fetched first
    sibling = ("update-file" if new else "upload-file") + ("-from-url" if source.url else "")
    done, total = (1, 3) if source.url else (0, 2)
    summary = edit_summary(ctx, comment)
    publish = {"action": "upload", "filename": name, "comment": summary, "tags": change_tags(ctx),
               # MediaWiki puts the comment on a new description page when no text is given;
               # the comment as written, then, not the attribution suffix.
               "text": (text if text is not None else comment or "") if new else None}
    files = {"file": (name, source.data)} if source.data is not None else None
    origin = {} if files else {"url": source.url}
    ctx.progress(done, total, f"Sending {len(source.data)} bytes to {ctx.wiki.key}" if source.data is not None
                 else f"Asking {ctx.wiki.key} to fetch {without_userinfo(source.url or '')}")
    if new and files:  # one request when the wiki has no warning: it publishes at once
        answer = send_upload(ctx, publish, files, name, source.sha1, publishing=True)
    else:  # an update always has a warning (the file exists); a URL for the wiki: learn its SHA-1
        try:
            answer = send_upload(ctx, {"action": "upload", "filename": name, "stash": True, **origin},
                                 files, name, None, publishing=False)
        except WikiError as error:
            if files or not error.code:
                raise
            raise WikiError(error.category, f"{without_userinfo(source.url or '')} was left to the wiki to "
                            f"fetch, since {source.why_wiki_fetches}, and the wiki did not: {error.message}",
                            error.code) from None
    warnings = answer.get("warnings") or {}
    where = f"{file_title(ctx, name)} on {ctx.wiki.key}"
    explained = functools.partial(explain_warnings, file_namespace=file_namespace(ctx))
    if answer.get("result") == "Success" and "filekey" not in answer:
        return upload_result(ctx, answer, name, "Uploaded.", source, total)
    if "page-exists" in warnings:  # a description page without a file: a moved file's old title?
        refuse_redirected_title(ctx, name, where, f"use {sibling} with" if new else "call again with",
                                " For a new file, pick another title." if new else "")
    if new and "exists" in warnings:
        raise conflict(f"{where} already exists; nothing was uploaded. To upload a new "
                       f"version of it, use {sibling}; otherwise pick another title.")
    if not new and "exists" not in warnings:
        why = "".join(f"; {w}" for w in explained(
            {k: v for k, v in warnings.items() if k in ("page-exists", "was-deleted")}))
        raise not_found(f"{where} does not exist{why}; nothing was uploaded. To upload a new "
                        f"file, use {sibling}.")
    if "nochange" in warnings:
        return ("No change: the file's current version already has these bytes; nothing was uploaded.\n"
                + labelled(("Title", file_title(ctx, name))))
    concerns = {k: v for k, v in warnings.items() if k not in (() if new else UPDATE_WARNINGS)}
    # the name MediaWiki publishes under, when it renames a bad one
    published_name = str(warnings.get("badfilename") or name)
    if concerns and not ignore_warnings:
        refusal = conflict if any(UPLOAD_WARNINGS.get(k, ("",))[0] == "conflict" for k in concerns) \
            else invalid_input
        remedy = (f" To use that name, call again with title='{file_title(ctx, published_name)}'."
                  if "badfilename" in concerns else "")
        raise refusal("Nothing was uploaded: the wiki warns that "
                      f"{'; '.join(explained(concerns))}.{remedy} To upload anyway, call again with "
                      "ignoreWarnings=true.")
    ctx.progress(done + 1, total, f"{ctx.wiki.key} checked the file; publishing it")
    filekey = answer.get("filekey")
    sha1 = source.sha1 or (answer.get("imageinfo") or {}).get("sha1")
    if sha1 is None and filekey:  # a warned stash of a URL the wiki fetched: its SHA-1, for a lost answer
        stashed = ctx.client.get({"action": "query", "prop": "stashimageinfo", "siifilekey": filekey,
                                  "siiprop": "sha1"}).get("query", {}).get("stashimageinfo") or [{}]
        sha1 = stashed[0].get("sha1")
    commit = {**publish, "ignorewarnings": bool(warnings), **({"filekey": filekey} if filekey else origin)}
    answer = send_upload(ctx, commit, None if filekey else files, published_name, sha1, publishing=True)
    if answer.get("result") != "Success":  # warned at publishing time: something changed since the check
        raise conflict(f"Nothing was uploaded: since the file was checked, the wiki found that "
                       f"{'; '.join(explained(answer.get('warnings') or {}))}. Look at "
                       f"{file_title(ctx, name)} before calling again.")
    raced = new and "exists" in (answer.get("warnings") or {})
    status = ("Uploaded, as a new version: a file with this title appeared between the check and the "
              "upload; its version stays in the file history." if raced
              else "Uploaded." if new else "Uploaded a new version; earlier versions stay in the file history.")
    return upload_result(ctx, answer, name, status, source, total, explained(warnings, ("exists",)))


def refuse_redirected_title(ctx: ToolContext, name: str, where: str, remedy: str, otherwise: str) -> None:
    """Refuses an upload to a file title that redirects, as a moved file's old title does: the
    file would lie hidden behind the redirect. ``remedy`` leads to ``title=`` the target."""
    page, redirected = query_page(ctx, titles=file_title(ctx, name), redirects=True)
    if redirected:
        target = page.get("title")
        raise conflict(f"{where} redirects to {target}; nothing was uploaded, since a file there "
                       f"would lie hidden behind the redirect. To upload a new version of {target}, "
                       f"{remedy} title='{target}'.{otherwise}")


def send_upload(ctx: ToolContext, params: Mapping[str, Any], files: Mapping[str, Any] | None,
                name: str, sha1: str | None, *, publishing: bool) -> dict[str, Any]:
    """One action=upload. A lost answer is never resent: after a publishing request the
    file's history tells whether it landed (its latest version is these bytes, by this
    account); a lost stash request published nothing. ``name``: the file's name as published."""
    def send() -> dict[str, Any]:
        try:
            return ctx.client.write(params, files=files).get("upload") or {}
        except WikiError as error:
            # MediaWiki files the replaced version under the current second, so a second new
            # version within one second fails, before anything is written (the stash is kept):
            # that second is waited out once.
            if error.code != "backend-fail-alreadyexists" or not publishing:
                raise
            ctx.client.retry.sleep(1.0)
            return ctx.client.write(params, files=files).get("upload") or {}
    answer, landed = settle_write(
        send, (lambda: landed_upload(ctx, name, sha1)) if publishing else lambda: None,
        what="the file was uploaded", look="look at the file", absent=(
            "The file's history shows no upload of these bytes by this account yet. A slow wiki may still "
            "save it: look at the file (get-file) before calling again." if publishing else
            "The wiki was only checking the file, so nothing was published; call again."))
    return answer if landed is None else {"result": "Success", "filename": name, "imageinfo": landed,
                                          "lost": True}


def landed_upload(ctx: ToolContext, name: str, sha1: str | None) -> dict[str, Any] | None:
    """The file's latest version, if it holds the bytes with this SHA-1 and this account uploaded it."""
    query = ctx.client.get({"action": "query", "titles": f"File:{name}", "prop": "imageinfo",
                            "meta": "userinfo", "iiprop": "sha1|user|url|size|mime|canonicaltitle",
                            "iilimit": 1}).get("query", {})
    page, _ = resolve_page(query)
    latest = (page.get("imageinfo") or [{}])[0]
    me = query.get("userinfo", {}).get("name")
    return latest if sha1 and latest.get("sha1") == sha1 and latest.get("user") == me else None


def upload_result(ctx: ToolContext, answer: Mapping[str, Any], name: str, status: str,
                  source: UploadSource, steps: int, noted: Iterable[str] = ()) -> str:
    """The answer to an upload, the last of its ``steps`` of progress."""
    info = answer.get("imageinfo") or {}
    title = info.get("canonicaltitle") or file_title(ctx, answer.get("filename", name))
    if answer.get("lost"):
        status = after_lost_answer(status, "the file's history shows the upload")
    ctx.progress(steps, steps, status)
    return status + "\n" + labelled(
        ("Title", title), ("File URL", info.get("url")), ("Description page", ctx.site.page_url(title)),
        ("Size", f"{info['size']} bytes" if "size" in info else None), ("MIME type", info.get("mime")),
        ("Fetched by", f"the wiki, since {source.why_wiki_fetches}" if source.why_wiki_fetches else None),
        ("Wiki warnings", "; ".join(noted)))


@tool("upload-file", "Upload file", toolset="files", read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, rights=("upload",), needs_upload_dirs=True,
      see={"for a new version": "update-file", "from a URL": "upload-file-from-url"})
def upload_file(ctx: ToolContext, filepath: Annotated[str, FilePathArg], title: Annotated[str, FileTitleArg],
                text: Annotated[str | None, UploadTextArg] = None,
                comment: Annotated[str | None, UploadCommentArg] = None,
                ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """Uploads a file from this server's upload directories as a new file. Capped at
    {upload_max_bytes:MB}. Fails if the title exists."""
    return upload_file_to_wiki(ctx, title, read_upload_file(ctx, filepath), new=True, text=text,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("update-file", "Update file", toolset="files", read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, rights=("upload", "reupload|reupload-own"), needs_upload_dirs=True,
      see={"for a new file": "upload-file", "for its description": "update-page"})
def update_file(ctx: ToolContext, filepath: Annotated[str, FilePathArg], title: Annotated[str, FileTitleArg],
                comment: Annotated[str | None, UploadCommentArg] = None,
                ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """Uploads a file from this server's upload directories as a new version of a file.
    Capped at {upload_max_bytes:MB}."""
    return upload_file_to_wiki(ctx, title, read_upload_file(ctx, filepath), new=False, text=None,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("upload-file-from-url", "Upload file from URL", toolset="files",
      read_only=False, destructive=False, idempotent=True,
      idempotency_key=True, rights=("upload",),
      see={"for a new version": "update-file-from-url", "from disk": "upload-file"})
def upload_file_from_url(ctx: ToolContext, url: Annotated[str, FileUrlArg], title: Annotated[str, FileTitleArg],
                         text: Annotated[str | None, UploadTextArg] = None,
                         comment: Annotated[str | None, UploadCommentArg] = None,
                         ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """The server fetches the URL and uploads it as a new file. Over {upload_max_bytes:MB}, the wiki
    fetches it where allowed; private addresses are refused. Fails if the title exists."""
    return upload_file_to_wiki(ctx, title, fetch_upload_url(ctx, url), new=True, text=text,
                               comment=comment, ignore_warnings=ignoreWarnings)


@tool("update-file-from-url", "Update file from URL", toolset="files",
      read_only=False, destructive=True, idempotent=True,
      idempotency_key=True, rights=("upload", "reupload|reupload-own"),
      see={"for a new file": "upload-file-from-url", "from disk": "update-file"})
def update_file_from_url(ctx: ToolContext, url: Annotated[str, FileUrlArg], title: Annotated[str, FileTitleArg],
                         comment: Annotated[str | None, UploadCommentArg] = None,
                         ignoreWarnings: Annotated[bool, IgnoreWarningsArg] = False) -> str:
    """The server fetches the URL and uploads it as a new version of a file. Over
    {upload_max_bytes:MB}, the wiki fetches it where allowed; private addresses are refused."""
    return upload_file_to_wiki(ctx, title, fetch_upload_url(ctx, url), new=False, text=None,
                               comment=comment, ignore_warnings=ignoreWarnings)


# ---------------------------------------------------------------------------
# write_everyday.py: Everyday edits: a page's categories, a talk page's new topic and a reply signed as the wiki
# signs.
# ---------------------------------------------------------------------------

# Each reads the page, makes the change here, and saves it pinned to the revision it read
# (baserevid), as update-page's find-replace does: an edit made since is merged by MediaWiki
# or refused as a conflict, never overwritten.

@tool("update-page-categories", "Update page categories", toolset="edit",
      read_only=False, destructive=True, idempotent=True,
      dry_run=True, idempotency_key=True, rights=("edit",),
      see={"for other changes": "update-page"})
def update_page_categories(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    add: Annotated[list[str] | None, Arg("To add (Name|sortkey); Category: optional.", max_items=50)] = None,
    remove: Annotated[list[str] | None, Arg("To remove, any sort key.", max_items=50)] = None,
    latestId: Annotated[int | None, LatestIdArg] = None,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str] | str:
    """Adds and removes a page's categories without sending its text."""
    site = ctx.site
    adding = given_categories(site, add or [], "add")
    removing = given_categories(site, remove or [], "remove")
    if not adding and not removing:
        raise invalid_input("Give add or remove: the categories to put the page in or take it out of.")
    if both := [name for name in adding if name in removing]:
        raise invalid_input(f"{', '.join(both)} cannot be both added and removed; nothing was changed.")

    def compose(target: EditTarget) -> Composed | str:
        placed = [title_text(site, c["title"].partition(":")[2]) for c in target.page.get("categories") or []]
        new, outcome = recategorised(site, target.base_text, adding, removing, placed,
                                     template=site.namespace_of(target.title) == 10)
        # get-page showed the target's text under this title
        if target.page.get("redirect") and (redirect := REDIRECT_TEXT.match(target.base_text)):
            outcome += (f"\nRedirect: {target.title} is a redirect to {redirect.group(1).strip()}; these are the "
                        "categories of the redirect page itself, not of the page it leads to")
        if new == target.base_text:
            return ("No change: the page already is as asked; nothing was saved.\n"
                    + labelled(("Title", target.title), ("Revision ID", target.latest)) + "\n" + outcome)
        return Composed(new, outcome, edit_summary(ctx, comment))
    return edit_page(ctx, title, compose, CATEGORY_CHANGE, latest_id=latestId)


#: The start of a redirect page's text, with its target: the magic word in any of the wiki's
#: languages (#REDIRECT, #WEITERLEITUNG), so only for a page the wiki says is a redirect.
REDIRECT_TEXT = re.compile(r"\s*#[^\s\[:]+\s*:?\s*\[\[([^\[\]|\n]+)")


#: Where a link to a category places nothing: comments, and tags whose text is not wikitext
#: read on this page.
UNPARSED_WIKITEXT = re.compile(r"<!--.*?(?:-->|$)|<(nowiki|pre|includeonly|syntaxhighlight|source|math)\b"
                               r"[^>]*?(?:/>|>.*?(?:</\1\s*>|$))", re.DOTALL | re.IGNORECASE)


def title_text(site: SiteInfo, name: str) -> str:
    """A name (a category's, a user's) as the wiki writes it in titles: spaces for underscores,
    one space at a time, and a capital first letter where the wiki capitalises titles."""
    name = " ".join(name.replace("_", " ").split())
    capitalised = site.raw.get("case", "first-letter") == "first-letter"
    return name[:1].upper() + name[1:] if capitalised else name


def given_categories(site: SiteInfo, names: list[str], argument: str) -> dict[str, str]:
    """The category names a call gives (with any of the wiki's prefixes for the namespace), each
    with the sort key given after a '|' ("Wendle catchment|Wendle"), or ''."""
    found: dict[str, str] = {}
    for given in names:
        named, _, key = given.partition("|")
        name = title_text(site, named.partition(":")[2] if site.namespace_of(named) == 14 else named)
        if not name or re.search(r"[\[\]{}<>#\n]", name) or re.search(r"[\[\]\n]", key):
            raise invalid_input(f"{argument} holds {given!r}, which is not a category name (with a sort key "
                                "after '|'); nothing was changed.")
        found.setdefault(name, key.strip())
    return found


def namespace_names(site: SiteInfo, *namespaces: int) -> str:
    """A regular expression for any of the wiki's names of these namespaces (local, canonical,
    alias), spaces or underscores between words; to match without regard to case."""
    return "|".join(re.escape(name).replace(r"\ ", "[ _]+") for name, namespace in site.namespace_ids.items()
                    if namespace in namespaces)


def category_links(site: SiteInfo, text: str) -> list[tuple[re.Match[str], str]]:
    """The links in wikitext that place its page in a category (by any of the wiki's names
    for the namespace, with or without a sort key: the match's second group), each with the
    category's name."""
    link = re.compile(rf"\[\[[ _]*(?:{namespace_names(site, 14)})[ _]*:([^\[\]{{}}|<>\n]+)"
                      r"(?:\|([^\[\]\n]*))?\]\]", re.IGNORECASE)
    return [(m, title_text(site, m.group(1))) for m in parsed_matches(link, text)]


#: A template's part that only the pages using it get (unclosed, it runs to the end).
INCLUDEONLY = re.compile(r"<includeonly\s*>(.*?)(?:</includeonly\s*>|$)", re.DOTALL | re.IGNORECASE)


#: Why a category link in <includeonly> is not taken out: it is not this page's category.
INCLUDED_CATEGORY = ("in <includeonly>, so it puts the pages that use the template in the category, not this "
                     "page: to take them out, change that link in the template's wikitext with update-page")


def recategorised(site: SiteInfo, text: str, adding: Mapping[str, str], removing: Collection[str],
                  placed: list[str], template: bool = False) -> tuple[str, str]:
    """``text`` with the links to ``removing`` taken out (a line left empty goes too) and links
    to ``adding`` (each with its sort key, if any) set on lines of their own after the last
    category link, or at the end (a link there already gets the sort key given); and what was
    done, as labelled lines ending with the categories after it. ``placed``: the page's
    categories now, from templates included. On a ``template``, links are added inside its last
    <noinclude> (made when there is none): elsewhere they would place every page that uses the
    template in the category."""
    links = category_links(site, text)
    linked = {name for _, name in links}
    included = {name for part in INCLUDEONLY.findall(text) for _, name in category_links(site, part)}
    removed = [name for name in removing if name in linked]
    resorted = [name for name, key in adding.items() if key and any(
        linked_name == name and (match.group(2) or "").strip() != key for match, linked_name in links)]
    already = [name for name in adding if name not in resorted and (name in linked or name in placed)]
    added = [name for name in adding if name not in already and name not in resorted]
    prefix = site.namespaces.get(14) or CANONICAL_NAMESPACES[14]

    def link(name: str) -> str:  # [[Category:Rivers|Wendle]], or without a sort key [[Category:Rivers]]
        return f"[[{prefix}:{name}|{adding[name]}]]" if adding[name] else f"[[{prefix}:{name}]]"
    for match, name in reversed(links):
        if name in removed:
            text = cut_out(text, *match.span())
        elif name in resorted:
            text = text[:match.start()] + link(name) + text[match.end():]
    new_links = "".join("\n" + link(name) for name in added)
    if new_links and template:
        text = in_noinclude(text, new_links)
    elif new_links and (after := category_links(site, text)):
        end = text.find("\n", after[-1][0].end())
        end = len(text) if end < 0 else end
        text = text[:end] + new_links + text[end:]
    elif new_links:  # at the end, a blank line apart
        text = text.rstrip() + "\n" + new_links if text.strip() else new_links.lstrip("\n")
    kept = [f"{prefix}:{name} (" + ("placed by a template, not in the page's wikitext)" if name in placed else
                                    f"{INCLUDED_CATEGORY})" if name in included else
                                    "not on the page)") for name in removing if name not in linked]

    def named(names: list[str]) -> str:
        return ", ".join(f"{prefix}:{n}" for n in names)
    now = [name for name in dict.fromkeys(placed + added) if name not in removed]
    inside = template and added and "inside <noinclude>, so pages using the template are not put in it"
    return text, labelled(("Added", named(added)), ("Placed", inside), ("Removed", named(removed)),
                          ("Sort key set", ", ".join(f"{prefix}:{n} ({adding[n]})" for n in resorted)),
                          ("Already in", named(already)), ("Not removed", "; ".join(kept)),
                          ("Categories", named(now) or "none"))


#: A template's part that pages using it do not get.
NOINCLUDE = re.compile(r"<noinclude\s*>(.*?)</noinclude\s*>", re.DOTALL | re.IGNORECASE)


def in_noinclude(text: str, lines: str) -> str:
    """Template text with ``lines`` (each after a line break) at the end of its last
    <noinclude> part, or in a new one at the end, right after the text so that the template
    gives no new line break."""
    parts = parsed_matches(NOINCLUDE, text)
    if not parts:
        return f"{text}<noinclude>{lines}\n</noinclude>"
    start, end = parts[-1].span(1)
    return text[:start] + text[start:end].rstrip("\n") + lines + "\n" + text[end:]


def parsed_matches(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """The matches of ``pattern`` in wikitext that start outside comments and unparsed tags."""
    unparsed = [m.span() for m in UNPARSED_WIKITEXT.finditer(text)]
    return [m for m in pattern.finditer(text) if not any(start <= m.start() < end for start, end in unparsed)]


def cut_out(text: str, start: int, end: int) -> str:
    """``text`` without ``text[start:end]``, and without its line if nothing else is on it."""
    line_start, line_end = text.rfind("\n", 0, start) + 1, text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if not (text[line_start:start] + text[end:line_end]).strip():
        return text[:line_start] + text[line_end + 1:]
    before = text[:start]
    if before.endswith(" ") and text[end:end + 1] in (" ", "\n", ""):  # no double space where it stood
        before = before[:-1]
    return before + text[end:]


def with_signature(message: str) -> str:
    """A talk page message signed with ~~~~ (which the wiki expands), unless it is already."""
    message = message.strip()
    return message if message.endswith("~~~~") else message + " ~~~~"


@tool("add-talk-topic", "Add talk topic", toolset="talk",
      read_only=False, destructive=False, idempotent=False, dry_run=True,
      idempotency_key=True, rights=("edit",),
      see={"to answer a topic": "reply-on-talk-page"})
def add_talk_topic(
    ctx: ToolContext,
    title: Annotated[str, TalkTitleArg],
    heading: Annotated[str, Arg("Heading.", max_length=255)],
    message: Annotated[str, Arg("Wikitext; the server signs it.")],
) -> list[str] | str:
    """Starts a topic at the end of a page's talk page (made if missing); returns the revision and
    the talk page used."""
    heading, text = heading_given(heading), with_signature(as_wiki_receives(message))
    if not heading or not message.strip():
        raise invalid_input("heading and message must not be empty.")
    talk = talk_title(ctx, title)
    if inside := next((line.strip() for line in text.split("\n") if starts_heading(line)), None):
        raise invalid_input(f"The message holds a heading ({inside}), which would split it into a topic of its "
                            f"own on {talk!r}; nothing was saved. Give the message without it, or start each "
                            "topic with add-talk-topic.")

    def compose(target: EditTarget) -> Composed:
        if not target.latest and talk != title and (to := subject_redirect(ctx, target.title)):
            raise invalid_input(f"Nothing was saved: {title!r} is a redirect to {to!r}, and {target.title!r} "
                                "does not exist, so a topic there would go where readers of that page do not "
                                f"look. To start it on {talk_title(ctx, to)!r}, call add-talk-topic with "
                                f"title={json.dumps(to, ensure_ascii=False)}; to make {target.title!r} anyway, "
                                "pass that as title.")
        new = (target.now + "\n\n" if target.now else "") + f"== {heading} ==\n\n{text}"
        sections = wikitext_sections(target.now, ctx.site.syntax)
        same = next((s for s in sections if heading_key(s.heading) == heading_key(heading)), None)
        note = same and (f"Note: {target.title!r} already had a topic headed {same.heading!r} (section "
                         f"{same.number}); this is section {sections[-1].number + 1}. To answer a topic, use "
                         "reply-on-talk-page.")
        # in the wiki's language, as MediaWiki's: '/* Plans */ new section', 'Neuer Abschnitt /* Pläne */'
        summary = ctx.client.summaries.get("newsectionsummary", "/* $1 */ new section").replace("$1", heading)
        # MediaWiki adds a new section to the page as it then is: no base, and it makes the page.
        return Composed(new, note or "", edit_summary(ctx, summary),
                        fields={"section": "new", "sectiontitle": heading, "text": text, "baserevid": None,
                                "nocreate": None, "createonly": None})
    return edit_page(ctx, talk, compose, NEW_TOPIC)


def heading_given(heading: str) -> str:
    """A heading as given, on one line, without the '==' markup around it if it came with it."""
    heading = " ".join(heading.split())
    marked = re.fullmatch(r"=+\s*(.*?)\s*=+", heading)
    return marked.group(1) if marked else heading


@dataclasses.dataclass(frozen=True)
class TalkComment:
    """A signed comment in a topic's lines."""
    first: int      # its first line
    last: int       # its signature's line
    indent: str     # the list markup its first line starts with (':', '*:', ...)
    author: str
    time: str       # the signature's time, as written
    words: str      # its text on one line, indentation left out
    shown: str = ""  # the name its signature shows, when not the user name ([[User:Dave|Davey]])


def list_markup(line: str) -> str:
    """The list markup a line starts with: how deep it is indented (':', '*:', '#', ...)."""
    return line[:len(line) - len(line.lstrip(":*#"))]


def talk_comments(site: SiteInfo, lines: list[str]) -> list[TalkComment]:
    """The comments in a topic's lines: each ends on a line signed with a user link and a time."""
    # a link to a user's page, talk page or contributions (its user name the first or second group,
    # the name it shows the third), and a signature's time: 12:34, 5 March 2026 (UTC) in the wiki's language
    contributions = "|".join(["Contributions", *(re.escape(a) for a in site.contributions_aliases)])
    user = re.compile(rf"\[\[[ _]*(?:(?:{namespace_names(site, 2, 3)})[ _]*:[ _]*([^\]|/#\n]+?)|"
                      rf"(?:{namespace_names(site, -1)})[ _]*:[ _]*(?:{contributions})/([^\]|/#\n]+?))[ _]*"
                      r"(?:[/#][^\]|\n]*)?(?:\|([^\]\n]*))?\]\]", re.IGNORECASE)
    time_pattern = re.compile(r"\d{1,2}:\d{2}\b[^\n]*?\(\w+\)")
    comments: list[TalkComment] = []
    start = 0
    for number, line in enumerate(lines):
        times = list(time_pattern.finditer(line))
        links = [m for m in user.finditer(line) if times and m.end() <= times[-1].start()]
        if not links:
            continue
        first = comment_start(lines, start, number)
        author = title_text(site, links[-1].group(1) or links[-1].group(2))
        signature = links[-1].start()  # with the links just before it: [[User:A|A]] ([[User talk:A|talk]])
        for link in reversed(links[:-1]):
            if len(line[link.end():signature]) > 10:
                break
            signature = link.start()
        # the name shown is the first link's, a user page's: the talk link after it shows "talk"
        shown = heading_plain(next(m for m in links if m.start() == signature).group(3) or "")
        said = [*lines[first:number], line[:signature]]
        words = " ".join(" ".join(text[len(list_markup(text)):] for text in said).split())
        comments.append(TalkComment(first, number, list_markup(lines[first]), author, times[-1].group(),
                                    words, shown if shown.casefold() != author.casefold() else ""))
        start = number + 1
    return comments


def comment_start(lines: list[str], start: int, signed: int) -> int:
    """The first line of the comment signed on line ``signed``: back over the lines at its
    indentation, not past ``start`` or a heading. Lines at another indentation before it are
    an unsigned comment of someone else's, not the beginning of this one, except a line one
    level up that ends in a colon: it introduces the list or quote the comment ends with ("What
    we need:" then "* plates", "* cups ~~~~")."""
    markup, first = list_markup(lines[signed]), signed
    for i in range(signed - 1, start - 1, -1):
        line = lines[i]
        if starts_heading(line):
            break
        if not line.strip():
            continue
        outer = list_markup(line)
        if outer != markup and not (markup and outer == markup[:-1] and line.rstrip().endswith(":")):
            break
        markup, first = outer, i
    return first


@tool("reply-on-talk-page", "Reply on talk page", toolset="talk", read_only=False, destructive=False,
      idempotent=False, dry_run=True, idempotency_key=True, rights=("edit",),
      see={"to start a topic": "add-talk-topic"})
def reply_on_talk_page(
    ctx: ToolContext,
    title: Annotated[str, TalkTitleArg],
    topic: Annotated[int | str, Arg("Heading or number.")],
    message: Annotated[str, Arg("Wikitext; the server indents and signs it.")],
    replyTo: Annotated[str | None, Arg(
        "Comment answered: author and time as signed, or first words; default: the topic's end.")] = None,
) -> list[str] | str:
    """Replies in a topic of a page's talk page, after the answered comment's replies, one level
    deeper, signed. Edits made meanwhile are merged, else it is a conflict."""
    if not message.strip():
        raise invalid_input("message must not be empty.")
    site = ctx.site

    def compose(target: EditTarget) -> Composed:
        talk, whole, latest = target.title, target.now, target.latest
        # a topic by number as this client read it: topics archived above it since renumber it
        wanted = as_read(ctx, talk, topic, whole, latest) if isinstance(topic, int) and topic else topic
        section = topic_section(ctx, talk, whole, str(wanted))
        span = section_span(whole, section.number, site.syntax) or (0, 0)
        text = section_text(whole, span)
        subsections = wikitext_sections(text, site.syntax)[1:]
        own = len(text.encode()[:subsections[0].start].decode()) if subsections else len(text)
        comments = talk_comments(site, text[:own].split("\n"))
        answered = answered_comment(comments, replyTo, talk, section) if replyTo else None
        # a reply at the end of the page's last topic goes above the links that close the page, as
        # an append does: below them it would read as a reply to them, and MediaWiki keeps them last
        closing = closing_links(site, text) if answered is None and span[1] >= utf8_len(whole) else None
        closing_block = text[closing:] if closing is not None else ""
        lines = text[:closing].split("\n")  # the topic's own comments first; its subsections follow them
        body = reply_blocks(talk, as_wiki_receives(message))
        # a link to the topic and the word for a reply in the wiki's language, where it has one
        # (DiscussionTools' message; an English wiki's is "reply"), else the link alone
        english = site.lang.partition("-")[0] in ("en", "")
        word = ctx.client.summaries.get("discussiontools-defaultsummary-reply", "reply" if english else "")
        summary = edit_summary(ctx, f"/* {section.heading} */ {word}".rstrip())
        reply_to = answered or (comments[0] if comments else None)

        def with_discussion_tools() -> str | None:  # a reply to a named comment, where the wiki has it
            if answered is None or "discussiontools" not in ctx.client.extensions:
                return None
            comment_id = discussion_tools_id(ctx, talk, latest, whole, text, span, answered)
            return comment_id and reply_with_discussion_tools(ctx, talk, latest, comment_id, "\n".join(body),
                                                              summary)
        return Composed("\n".join(with_reply(lines, comments, reply_to, body, at_end=answered is None))
                        + closing_block,
                        labelled(("Topic", f"{section.number} ({section.heading})"),
                                 ("Reply to", f"{reply_to.author}, {reply_to.time}" if reply_to else None),
                                 ("Paragraphs", blank_lines_left_out(message, body) and PARAGRAPHS_JOINED)),
                        summary, section=section.number, send=with_discussion_tools)
    return edit_page(ctx, talk_title(ctx, title), compose, REPLY)


def with_reply(lines: list[str], comments: list[TalkComment], answered: TalkComment | None, body: list[str],
               at_end: bool) -> list[str]:
    """A topic's lines with a reply's lines put in, one level deeper than the comment answered in
    the page's list style (':' or '*', as its ``comments`` are indented): after that comment and
    the replies below it, or (at_end) after the topic's last line."""
    indent = answered.indent if answered else ""
    at = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=len(lines))
    if answered and not at_end:
        at = answered.last + 1
        for i in range(at, len(lines)):
            if lines[i].strip() and len(list_markup(lines[i])) <= len(indent):
                break
            at = i + 1 if lines[i].strip() else at
    # The style of the replies, not of any indented line: a comment's own list or quote is no reply,
    # and a '*' reply after a comment's bulleted list would be that list's next item.
    style = indent[-1] if indent[-1:] in (":", "*") else next(
        (c.indent[-1] for c in comments if c.indent[-1:] in (":", "*")), ":")
    # MediaWiki indents a table only by colons (Parser::handleTables): '*{|' is no table.
    return lines[:at] + [(":" * len(indent + style) if block.startswith("{|") else indent + style) + block
                         for block in body] + lines[at:]


#: Tags whose content may run over several lines of a reply (block_open counts them).
BLOCK_TAGS = re.compile(r"<(/?)(pre|syntaxhighlight|source|poem|math|gallery|blockquote|div|table|ref|nowiki|"
                        r"code|references)\b[^>]*?(/?)>", re.IGNORECASE)


def reply_blocks(talk: str, message: str) -> list[str]:
    """A reply's lines, signed, each to be indented as one comment line: a table, a template
    call or a tag that runs over several lines stays one block whose lines after the first are
    not indented, since list markup before them would break them (':| a || b' is no table row).
    Empty lines go, except inside a block; the signature goes on a line of its own after one."""
    if any(starts_heading(line) for line in message.split("\n")):
        raise invalid_input(f"A reply cannot hold a heading, which would start a new topic of {talk!r}; "
                            "nothing was saved. To start a topic, use add-talk-topic.")
    blocks: list[str] = []
    for line in message.strip().split("\n"):
        if blocks and block_open(blocks[-1]):
            blocks[-1] += "\n" + line
        elif line.strip():
            blocks.append(line.strip())
    if blocks and block_open(blocks[-1]):
        raise invalid_input(f"The reply leaves a table, template call or tag open ({blocks[-1][:60]!r}...); "
                            "nothing was saved. Close it ('|}', '}}', '</tag>'), then call again.")
    if blocks and "\n" in blocks[-1] and not blocks[-1].rstrip().endswith("~~~~"):
        return [*blocks, "~~~~"]
    return [*blocks[:-1], with_signature(blocks[-1])] if blocks else []


#: What a reply whose paragraphs were apart says: its blank lines went.
PARAGRAPHS_JOINED = ("each is a line of its own at the reply's indentation, the blank lines between them left "
                     "out, as MediaWiki's reply tool writes them: a blank line would end the indentation")


def blank_lines_left_out(message: str, body: list[str]) -> bool:
    """Whether the lines of a reply (reply_blocks) left out blank lines of its ``message``."""
    def blank(text: str) -> int:
        return sum(not line.strip() for line in text.split("\n"))
    return blank(message.strip()) > sum(blank(block) for block in body)


def block_open(text: str) -> bool:
    """Whether ``text`` opens a table, template call or tag that it does not close."""
    lines = text.split("\n")
    tables = sum(line.lstrip(":").lstrip().startswith("{|") for line in lines) - sum(
        line.lstrip().startswith("|}") for line in lines)
    tags: collections.Counter[str] = collections.Counter()
    for closing, name, empty in BLOCK_TAGS.findall(text):
        tags[name.lower()] += 0 if empty else -1 if closing else 1
    return tables > 0 or text.count("{{") > text.count("}}") or any(n > 0 for n in tags.values())


def topic_section(ctx: ToolContext, talk: str, text: str, topic: str) -> Section:
    """The section of a talk page that ``topic`` names: by its heading (its '==' markup
    optional), else by its number. The lead, section 0, is no topic."""
    sections = wikitext_sections(text, ctx.site.syntax)
    wanted = heading_given(topic)
    listed = section_list(numbered_headings(sections)) or "none"
    named = ([s for s in sections if s.heading == wanted]  # else as get-page-sections shows it, case aside
             or [s for s in sections if heading_key(s.heading) == heading_key(wanted)]
             or [s for s in sections if heading_key(s.heading, marks=False) == heading_key(wanted, marks=False)])
    if len(named) > 1:
        raise invalid_input(f"{len(named)} topics of {talk!r} are headed {wanted!r} (sections "
                            f"{', '.join(str(s.number) for s in named)}); pass the section number as topic.")
    if named:
        return named[0]
    if wanted.isdigit() and int(wanted) == 0:
        raise invalid_input(f"Topic 0 is the lead of {talk!r}, the text above its first heading, which is no "
                            f"topic; nothing was saved. Its topics: {listed}. To start one, use add-talk-topic.")
    if numbered := next((s for s in sections if wanted.isdigit() and s.number == int(wanted)), None):
        return numbered
    raise not_found(f"{talk!r} on {ctx.wiki.key} has no topic {topic!r}. Its topics: {listed}. "
                    "To start one, use add-talk-topic.")


def answered_comment(comments: list[TalkComment], reply_to: str, talk: str,
                     section: Section) -> TalkComment:
    """The comment that ``reply_to`` names: by its first words, else by its author and time."""
    wanted = " ".join(reply_to.split()).casefold()
    found = ([c for c in comments if c.words.casefold().startswith(wanted)]
             or [c for c in comments if signed_so(c, wanted)])
    if len(found) == 1:
        return found[0]
    candidates = "; ".join(f"{c.author}, {c.time}: {c.words[:60]}" for c in (found or comments)) or "none"
    where = f"topic {section.number} ({heading_plain(section.heading)}) of {talk!r}"
    if found:
        raise invalid_input(f"replyTo matches {len(found)} comments in {where}: {candidates}. Give more of "
                            "the comment's first words, or its author and time.")
    raise not_found(f"No comment in {where} starts with {reply_to!r} or is signed so. Its comments: "
                    f"{candidates}. Pass one's author and time, or its first words, as replyTo.")


def signed_so(comment: TalkComment, wanted: str) -> bool:
    """Whether ``wanted`` (casefolded) names the comment by its signature: its author's user name
    or shown name (alone, or as User:Name), its time alone, or a name with the time."""
    names = {comment.author.casefold(), comment.shown.casefold()} - {""}
    when = comment.time.rsplit("(", 1)[0].strip().casefold()
    name = re.sub(r"^[^\d:][^:]*:\s*", "", wanted)  # User:Dave, Benutzer:Dave
    return (name in names or wanted in (when, comment.time.casefold())
            or (any(n in wanted for n in names) and when in wanted))


def discussion_tools_id(ctx: ToolContext, talk: str, latest: int, whole: str, section: str,
                        span: tuple[int, int], comment: TalkComment) -> str | None:
    """The DiscussionTools ID of ``comment``: the one of its author's comments in the page
    that comes as many after the others as it does here. None if the two readings differ."""
    info = ctx.client.get({"action": "discussiontoolspageinfo", "page": talk, "oldid": latest,
                           "prop": "threaditemshtml"}).get("discussiontoolspageinfo", {})

    def flat(found: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
        for item in found:
            yield item
            yield from flat(item.get("replies") or [])
    by_author = [item.get("id") for item in flat(info.get("threaditemshtml") or [])
                 if item.get("type") == "comment" and title_text(ctx.site, str(item.get("author", ""))) ==
                 comment.author]
    before = whole.encode()[:span[0]].decode() + "\n".join(section.split("\n")[:comment.last])
    earlier = sum(1 for c in talk_comments(ctx.site, before.split("\n")) if c.author == comment.author)
    return str(by_author[earlier]) if earlier < len(by_author) else None


def reply_with_discussion_tools(ctx: ToolContext, talk: str, latest: int, comment_id: str, text: str,
                                summary: str | None) -> str:
    """Saves a reply through DiscussionTools, which places and indents it as its reply tool does."""
    params = {"action": "discussiontoolsedit", "paction": "addcomment", "page": talk,
              "commentid": comment_id, "wikitext": text, "summary": summary, "tags": change_tags(ctx),
              "nocontent": True}
    data, landed = settle_edit(ctx, lambda: ctx.client.write(params), talk, latest, summary, {"text": text})
    answer = landed or data.get("discussiontoolsedit") or {}
    if "newrevid" not in answer:
        raise upstream_failure(f"The wiki did not save the reply ({answer or 'no reason'}). "
                               + NEXT_STEP["upstream_failure"])
    status = after_lost_answer("Saved.", EDIT_SHOWN_ONCE) if answer.get("lost") else "Saved."
    return saved_lines(ctx, talk, answer["newrevid"], answer.get("oldrevid") or latest, status)


# ---------------------------------------------------------------------------
# write_replace.py: replace-in-pages: one find and replace across many pages, previewed, then saved page by page.
# ---------------------------------------------------------------------------

@tool("replace-in-pages", "Replace in pages", toolset="edit",
      read_only=False, destructive=True, idempotent=False,
      dry_run=True, dry_run_default=True, idempotency_key=True, asks=True, rights=("edit",),
      see={"for one page": "update-page"})
def replace_in_pages(
    ctx: ToolContext,
    find: Annotated[str, Arg("Exact wikitext, or a regular expression.")],
    replace: Annotated[str, Arg("Replacement; '' deletes; \\1 or $1 is a group.")],
    titles: Annotated[list[str] | None, TitlesArg] = None,
    category: Annotated[str | None, Arg("Or a category's members.", title=True)] = None,
    regex: Annotated[bool, Arg("find is a Python regular expression.")] = False,
    comment: Annotated[str | None, CommentArg] = None,
) -> list[str]:
    """Replaces find in up to 50 pages; by default a dry run showing each page's diff, then
    dryRun=false saves, skipping pages changed since the preview."""
    if (titles is None) == (category is None):
        raise invalid_input("Give titles or category (one of them): the pages to change.")
    if not find:
        raise invalid_input("Argument 'find' must not be empty.")
    find, replace = as_wiki_receives(find), as_wiki_receives(replace)
    change = json.dumps([find, replace, regex], ensure_ascii=False)  # what the ledger knows its previews by
    template = regex_template(find, replace) if regex else None  # refused before any page is read
    pages = [replaced(ctx, title, page, why, find, replace, template) for title, page, why
             in pages_to_change(ctx, titles, category)]
    if ctx.dry_run:
        return preview_replacements(ctx, pages, change, category)
    changing = [page for page in pages if page.changes]
    if ctx.asks and not ctx.confirmed and changing:  # the person picks the pages to save
        rows = "; ".join(f"{p.title} ({counted(p.count, 'replacement')}, revision {p.revid}"
                         f"{'; ' + removed_note(p.removed) if p.removed else ''})" for p in changing)
        how = " (a regular expression)" if regex else ""
        raise Preview("Nothing was saved.", f"replace {as_typed(find)} with {as_typed(replace)}{how} in "
                      f"{counted(len(changing), 'page')} on {ctx.wiki.key}: {rows}.", [p.title for p in changing])
    return save_replacements(ctx, pages, change, edit_summary(ctx, comment), ctx.picked)


def as_typed(text: str) -> str:
    """``text`` quoted for a person to check, as it was written: repr, but with its backslashes
    single, so that a regular expression's \\b or a group's \\1 reads as typed (a newline still
    shows as \\n, which a regular expression reads alike)."""
    return repr(text).replace("\\\\", "\\")


@dataclasses.dataclass(frozen=True)
class PageChange:
    """One page of a replace across pages: why it cannot be changed (None: it can), the latest
    revision as read, its text, the text with the replacements, and how many; ``removed``: the
    template calls and categories the replacements remove."""
    title: str
    why: str | None
    revid: int = 0
    old: str = ""
    new: str = ""
    count: int = 0
    removed: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return bool(self.count) and as_saved(self.new) != self.old


def pages_to_change(ctx: ToolContext, titles: list[str] | None,
                    category: str | None) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    """Each page to change, in one query (more if the wiki splits the answer): its title, the
    page with its latest revision's text, and why it cannot be changed, if so."""
    params: dict[str, Any] = {"action": "query", "prop": "revisions", "rvprop": "ids|content",
                              "rvslots": "main"}
    if category:
        category = title_in_namespace(ctx.site, category, 14)
        params.update(generator="categorymembers", gcmtitle=category, gcmlimit=ctx.state.pages_per_call)
    else:
        params["titles"] = titles = list(dict.fromkeys(titles or []))
    normalized: list[dict[str, str]] = []
    by_key: dict[Any, dict[str, Any]] = {}
    data: dict[str, Any] = {"continue": {}}
    while "continue" in data and not data.get("batchcomplete"):  # the wiki sends as much text as fits
        data = ctx.client.get({**params, **data["continue"]})
        normalized += data.get("query", {}).get("normalized") or []
        for page in data.get("query", {}).get("pages") or []:
            known = by_key.setdefault(page.get("pageid") or page.get("title"), {**page, "revisions": []})
            known["revisions"] += page.get("revisions") or []
    if category and "gcmcontinue" in data.get("continue", {}):
        most = ctx.state.pages_per_call
        raise invalid_input(f"{category} has more than {most} member pages; replace-in-pages changes at most "
                            f"{most} a call. get-category-members lists them: pass them as titles, {most} at a time.")
    if category:
        if not by_key:
            raise not_found(f"{category} has no member pages on {ctx.wiki.key}. search-page-by-prefix with "
                            "namespace=14 finds existing categories.")
        return [(page["title"], page, None) for page in sorted(by_key.values(), key=lambda p: p["title"])]
    found = batch_pages({"normalized": normalized, "pages": list(by_key.values())}, titles or [])
    result: dict[str, tuple[str, dict[str, Any] | None, str | None]] = {}
    for asked, (page, _) in found.items():
        title = page.get("title", asked) if page else asked
        why = ("on another wiki (an interwiki prefix)" if page is None or "interwiki" in page else
               f"not a valid title ({invalid_reason(page)})" if page.get("invalid") else
               "a special page, which cannot be edited" if page.get("special") else
               "does not exist" if page.get("missing") else None)
        result.setdefault(title, (title, None if why else page, why))
    return list(result.values())


def replaced(ctx: ToolContext, title: str, page: dict[str, Any] | None, why: str | None, find: str,
             replace: str, template: str | None) -> PageChange:
    """A page's change (``template``: of the regular expression ``find``, regex_template's); one the
    wiki's checks would refuse to save is skipped, saying why."""
    slot = main_slot(revision_of(page or {}))
    text = slot.get("content", "")
    if template is None:
        new, count = text.replace(find, replace), text.count(find)
    elif page is None:
        new, count = text, 0
    else:
        # an empty match is left alone, as find-in-page shows none (x* would put the replacement
        # between every two characters)
        substituted = run_regex(find, text, ctx.state.regex_seconds, template)
        if isinstance(substituted, str):
            raise invalid_regex(substituted)
        new, count = substituted
    if refused := count and page is not None and unsaveable(ctx, title, new, slot.get("contentmodel")):
        return PageChange(title, f"the wiki would not save the change: {refused}")
    if not count and (redirect := REDIRECT_TEXT.match(text)):  # get-page showed its target's text under it
        to = json.dumps(redirect.group(1).strip(), ensure_ascii=False)
        why = why or f"a redirect to {to}, whose own text has no match; to change that page, pass {to}"
    removed = tuple(removed_markup(ctx.site, text, new)) if count else ()
    return PageChange(title, why, int(revision_of(page or {}).get("revid", 0)), text, new, count, removed)


def regex_template(find: str, replace: str) -> str:
    """The replacement template (dollar_groups) of the regular expression ``find``; invalid_input
    when either is not valid."""
    try:
        return dollar_groups(re.compile(find), replace)
    except (re.error, IndexError) as error:
        raise invalid_regex(error) from None


def invalid_regex(error: object) -> WikiError:
    """The refusal of a find or replacement that is not a valid regular expression (what Python said)."""
    return invalid_input(f"find or replace is not a valid regular expression here: {error}. Nothing was changed.")


def dollar_groups(pattern: re.Pattern[str], replace: str) -> str:
    """``replace`` as a template for ``pattern``: $1 and ${name} (as JavaScript and PCRE write a
    group) are that group where ``pattern`` has it; any other $ is text. A group the pattern lacks
    raises re.error or IndexError, on every page, matched or not."""
    def group(mark: re.Match[str]) -> str:
        name = mark.group(1) or mark.group(2)
        known = int(name) <= pattern.groups if name.isdigit() else name in pattern.groupindex
        return rf"\g<{name}>" if known else mark.group()
    template = re.sub(r"\$(?:(\d+)|\{(\w+)\})", group, replace)
    pattern.sub(template, "")
    return template


def preview_replacements(ctx: ToolContext, pages: list[PageChange], change: str,
                         category: str | None) -> list[str]:
    """The dry run: the diff of each page that would change, as many as the budget holds, and
    the rest named; each page's revision is noted, so that the save skips a page changed since."""
    diffs: dict[str, str] = {}
    for page in pages:
        if page.why is None:
            ctx.reads.previewed(page.title, change, page.revid)
        if page.changes:
            removed = f"\n{removed_note(page.removed)}" if page.removed else ""
            diffs[page.title] = (f"{page.title} | {counted(page.count, 'replacement')} | base revision ID "
                                 f"{page.revid}{removed}\n{line_diff(page.old, as_saved(page.new))}")
    save = ("There is nothing to save." if not diffs else
            f"No call of replace-in-pages saves them from here. {ctx.unconfirmable} The person can also "
            "make these changes on the wiki themselves." if ctx.unconfirmable else
            "To save them, call replace-in-pages again with dryRun=false; a page changed since this preview is "
            "then skipped.")
    head = (f"Dry run: nothing was saved. {len(diffs)} of {counted(len(pages), 'page')} would change "
            f"({counted(sum(p.count for p in pages if p.changes), 'replacement')}). {save}\n"
            + labelled(("Unchanged (no match)", ", ".join(p.title for p in pages
                                                          if not p.why and not p.changes)),
                       ("Skipped", "; ".join(f"{p.title} ({p.why})" for p in pages if p.why))))
    ends = list(itertools.accumulate(utf8_len(text) for text in diffs.values()))
    fit = bisect.bisect_right(ends, ctx.budget)  # the diffs that fit whole, in order
    shown, used = list(diffs.values())[:fit], ends[fit - 1] if fit else 0
    left = list(diffs)[fit:]
    if left and not shown:  # not even the first diff fits: it is cut, and named with the rest
        piece = slice_content(diffs[left[0]], 0, ctx.budget)
        shown, used = [piece.text], piece.end
    blocks = ["\n\n".join([head.rstrip(), *shown])]
    if left:
        instead = " in place of category" if category else ""
        blocks.append(f"Content truncated at {used} of {sum(utf8_len(t) for t in diffs.values())} bytes. To "
                      f"review the diffs of {', '.join(left)}, call replace-in-pages again with "
                      f"{call_args(titles=left)}{instead}.")
    return blocks


def save_replacements(ctx: ToolContext, pages: list[PageChange], change: str,
                      summary: str | None, picked: frozenset[str] | None = None) -> list[str]:
    """Saves each page that changes on its own, pinned to the revision read, one row each, but
    those held_back; a wiki that throttles stops it."""
    rows: list[str] = []
    stopped: WikiError | None = None
    left: list[str] = []  # the titles not saved from the one it stopped at
    saved = 0
    # Every preview is looked up before the first save: a store that fails later stops nothing midway.
    previews = [ctx.reads.preview(page.title, change) or (None, None) for page in pages]
    for number, (page, (previewed, saved_as)) in enumerate(zip(pages, previews), 1):
        outcome = "not attempted" if stopped else held_back(page, previewed, saved_as, picked)
        if outcome is None:
            fields = {"text": page.new, "nocreate": True, "baserevid": page.revid}
            try:
                edit = send_edit(ctx, page.title, fields, page.revid, summary, composed=True)
            except WikiError as error:
                # the wiki throttles this account, or does not answer as it should: the pages after
                # would fare no better
                if error.category in ("rate_limited", "upstream_failure", "authentication"):
                    stopped, left = error, [p.title for p in pages[number - 1:]]
                outcome = f"{'failed' if stopped else 'skipped'} | {one_line(str(error))}"
            else:
                outcome = "unchanged | no change"
                if not edit.get("nochange"):  # noted, so that the same call again saves nothing twice
                    saved += 1
                    ctx.reads.previewed(page.title, change, previewed or page.revid, edit["newrevid"])
                    merged = edit.get("oldrevid", page.revid) != page.revid
                    outcome = f"saved | {edit['newrevid']}" + (
                        f" | {LOST_ANSWER}; {EDIT_SHOWN_ONCE}" if edit.get("lost") else
                        f" | merged with the edits made since revision {page.revid}" if merged else "") + (
                        f" | {removed_note(page.removed)}" if page.removed else "")
        rows.append(f"{page.title} | {outcome}")
        ctx.progress(number, len(pages), rows[-1])
    if stopped and not saved:
        raise stopped
    head = f"Saved {saved} of {counted(len(pages), 'page')}."
    if stopped:
        head = (f"Stopped early: {stopped}\n{head} Not saved: {', '.join(left)}. To save them, wait a "
                f"minute, then call replace-in-pages again with {call_args(titles=left)} and dryRun=false.")
    return [head + "\npage | outcome | revision ID, or why\n" + "\n".join(rows)]


def held_back(page: PageChange, previewed: int | None, saved_as: int | None,
              picked: frozenset[str] | None) -> str | None:
    """Why a replace does not save ``page``, as its row's outcome (None: it saves it): it cannot be
    changed, the person did not pick it (``picked``: those they did, where they were asked), this
    change saved it before (unless previewed again since), it changed since its preview, or it has
    no match."""
    if page.why:
        return f"skipped | {page.why}"
    if picked is not None and page.changes and page.title not in picked:
        return "skipped | not picked by the person; nothing was saved"
    if saved_as == page.revid:
        return f"unchanged | saved by this change before, as revision {saved_as}"
    if saved_as:
        return (f"skipped | saved by this change before, as revision {saved_as}, and changed since (now "
                f"{page.revid}); nothing was saved: preview it again to change it once more")
    if previewed and previewed != page.revid:
        return (f"skipped | changed since the preview (revision {previewed}, now {page.revid}); nothing was "
                "saved: preview it again")
    return None if page.changes else "unchanged | no match"


# ---------------------------------------------------------------------------
# write_copy.py: copy-page: a page copied between wikis, with what it uses that the target lacks named.
# ---------------------------------------------------------------------------

# copy-page reads the source wiki (the page and its /doc, then the templates they use), asks
# the target which of those it has, then creates each page through edit_page, so
# a copy meets every guard an edit meets. The summary credits the source page and revision,
# as licences such as CC BY-SA require of a copy.

@dataclasses.dataclass(frozen=True)
class SourcePage:
    """A page of the source wiki as a copy reads it, and the title it takes on the target
    (None where the target has no such namespace); ``redirect``: the page is one (its text then
    only leads to another page)."""
    title: str
    revid: int
    text: str
    target: str | None
    redirect: bool = False


def source_client(ctx: ToolContext, key: str) -> tuple[WikiConfig, MediaWikiClient]:
    """The wiki a copy reads from, and the client it reads with (a signed-in person's own, as
    Caller.client chooses): the one place a tool reads a wiki other than its call's."""
    wiki, client = ctx.state.wiki_and_client(key)
    return wiki, ctx.caller.client(ctx.state, wiki, client)


def on_target(site: SiteInfo, page: Mapping[str, Any]) -> str | None:
    """A source page's title on the target wiki (``site``): the same name in the same namespace,
    as the target names it; None when the target lacks that namespace (a Module: without
    Scribunto)."""
    namespace = int(page.get("ns", 0))
    name = page["title"].partition(":")[2] if namespace else page["title"]
    if namespace not in site.namespaces:
        return None
    return f"{site.namespaces[namespace]}:{name}" if namespace else name


def pages_by_title(client: MediaWikiClient, titles: Sequence[str], **params: Any
                   ) -> dict[str, dict[str, Any]]:
    """The pages of ``titles`` as a query with ``params`` answers, by the title asked ({} for one
    the wiki does not answer), in one request each 50 titles (MediaWiki's limit for most accounts)."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(titles), MAX_PAGES_PER_CALL):
        asked = list(titles[start:start + MAX_PAGES_PER_CALL])
        query = client.get({"action": "query", "titles": asked, **params}).get("query", {})
        found |= {title: page or {} for title, (page, _) in batch_pages(query, asked).items()}
    return found


@tool("copy-page", "Copy page", toolset="edit",
      read_only=False, destructive=True, idempotent=True, dry_run=True, idempotency_key=True,
      rights=("edit", "createpage"), offered=lambda state: len(state.wikis) > 1)
def copy_page(
    ctx: ToolContext,
    title: Annotated[str, TitleArg],
    fromWiki: Annotated[str, Arg("Wiki key to copy from; wiki is the target.", max_length=300,
                                 max_length_listed=False)],
    newTitle: Annotated[str | None, Arg("Title on the target; default: title.", title=True)] = None,
    withTemplates: Annotated[bool, Arg("Also its /doc, the templates it uses, their modules.")] = False,
    overwrite: Annotated[bool, Arg("Replace the page and /doc where they exist.")] = False,
) -> str:
    """Copies a page's wikitext from another configured wiki, the summary crediting the source page
    and revision. Leaves an existing page alone unless overwrite=true, and a template the target
    has always; dryRun lists what would be created. Answers with what was created, left alone, and
    the templates still missing. A private wiki's pages go to private wikis only."""
    key = ctx.state.resolve_wiki(fromWiki)
    if key == ctx.wiki.key:
        raise invalid_input(f"fromWiki and wiki both name {key}: copy-page copies from one wiki to another "
                            "(wiki is the target).")
    source, client = source_client(ctx, key)
    if source.private and not ctx.wiki.private:
        raise permission_denied(f"The wiki {key} is private and {ctx.wiki.key} is not: a copy would "
                                "publish its page there; nothing was copied. The operator marks wikis "
                                "private, and no retry by the model changes it.")
    nothing = f"Nothing was copied{' (dry run)' if ctx.dry_run else ''}"
    plan = copy_plan(ctx, key, client, title, newTitle, withTemplates, overwrite, nothing)
    return copy_answer(ctx, plan, nothing)


def copy_plan(ctx: ToolContext, key: str, client: MediaWikiClient, title: str, new_title: str | None,
              templates: bool, overwrite: bool, nothing: str) -> CopyPlan:
    """What a copy of ``title`` from the wiki ``key`` would do here: the source read (the page,
    with ``templates`` its /doc and the templates they use), and the target asked which of
    their titles it has."""
    here = ctx.client.site  # the client's first use checks the account's rights, before the source is read
    texts = {"rvprop": "ids|content", "rvslots": "main"}  # the latest revision's
    read = pages_by_title(client, [title, f"{title}/doc"] if templates else [title],
                          prop="revisions|templates|info", tllimit="max", **texts)
    first = read[title]
    if first.get("invalid"):
        raise invalid_input(f"{title!r} is not a valid page title: {invalid_reason(first)}")
    if first.get("special") or "interwiki" in first:
        raise invalid_input(f"{title!r} is no page of {key} (a special page, or another wiki's); "
                            f"{nothing.lower()}.")
    if new_title and here.namespace_of(new_title) < 0:
        raise invalid_input(f"newTitle {new_title!r} names a special page, which no one can create; "
                            f"{nothing.lower()}.")
    if first.get("missing") or not first:
        raise not_found(f"Page {title!r} does not exist on {key}; {nothing.lower()}. search-page-by-prefix "
                        f"with wiki={key} finds its titles.")
    pages = [page for page in read.values() if page and not page.get("missing")]  # the page, then its /doc
    named = {page["title"] for page in pages}
    used = {t["title"]: t for page in pages for t in page.get("templates") or [] if t["title"] not in named}
    if templates and used:
        pages += [p for p in pages_by_title(client, sorted(used), prop="revisions", **texts).values()
                  if p and not p.get("missing")]
    copies = [SourcePage(page["title"], revision_of(page).get("revid", 0),
                         main_slot(revision_of(page)).get("content", ""), on_target(here, page),
                         bool(page.get("redirect"))) for page in pages]
    if new_title:
        copies[0] = dataclasses.replace(copies[0], target=new_title)
        if len(named) > 1:
            copies[1] = dataclasses.replace(copies[1], target=f"{new_title}/doc")
    elif copies[0].target is None:
        raise invalid_input(f"{ctx.wiki.key} has no namespace for {copies[0].title!r}; {nothing.lower()}. "
                            "Pass newTitle, a title in a namespace it has.")
    # the templates used that this copy does not bring: all without withTemplates, else those the
    # source lacks too (a red link there)
    brought = {c.title for c in copies}
    elsewhere = [on_target(here, t) or t["title"] for t in used.values() if t["title"] not in brought]
    exists = {target: page.get("lastrevid", 0) for target, page in pages_by_title(
        ctx.client, [c.target for c in copies if c.target] + elsewhere, prop="info").items()
        if page and not page.get("missing") and not page.get("invalid")}
    replaced = {c.target for c in copies[:len(named)]} if overwrite else set()
    return CopyPlan(key, client.site, copies, exists, replaced, [t for t in elsewhere if t not in exists])


@dataclasses.dataclass(frozen=True)
class CopyPlan:
    """What a copy found: the source's pages to copy (the page first, then its /doc, then the
    templates), the target's existing ones among their titles (with their latest revision), those
    an overwrite replaces, and templates the page uses that the target lacks and this copy leaves."""
    source: str
    site: SiteInfo
    copies: list[SourcePage]
    exists: Mapping[str, int]
    replaced: Collection[str | None]
    lacking: list[str]


def copy_answer(ctx: ToolContext, plan: CopyPlan, nothing: str) -> str:
    """Copies each page of the plan that it copies (a dry run only says which), the first one's
    error being the call's; the answer says what was created, left alone and still lacking."""
    lacking = plan.lacking + [f"{c.title} (the target has no namespace for it)" for c in plan.copies
                              if c.target is None]
    kept = [c.target for c in plan.copies
            if c.target and c.target in plan.exists and c.target not in plan.replaced]
    going = [(c, c.target) for c in plan.copies if c.target and c.target not in kept]
    blocks: list[str] = []
    failed: list[str] = []
    for number, (copy, target) in enumerate(going):
        replacing = target in plan.exists
        if ctx.dry_run:
            blocks.append(f"Would {'replace' if replacing else 'create'}: {target}, from revision {copy.revid} "
                          f"of {copy.title!r} ({utf8_len(copy.text)} bytes)")
            continue
        # crediting the source page and revision, and where to read its history
        source = f"{copy.title!r} on {plan.site.name or plan.site.server}, revision {copy.revid}"
        summary = edit_summary(ctx, f"Copied from {source} ({plan.site.index_url(oldid=copy.revid)}); its "
                                    "history names the authors")
        change = Composed(copy.text, summary=summary)
        try:  # created (createonly), or replaced pinned to the revision last read here, else the latest
            saved = edit_page(ctx, target, functools.partial(overwriting, ctx, change),
                              OVERWRITE if replacing else CREATION)
            blocks.append("\n".join(as_blocks(saved)))
        except WikiError as error:
            if error.code == "articleexists":  # made since the target was asked
                kept.append(target)
                continue
            if not number:
                raise
            failed.append(f"{target} ({one_line(str(error))})")
    same = sum(block.startswith(UNCHANGED) for block in blocks)  # an overwrite with the text it has
    done = len(blocks) - same
    head = (f"{nothing}. copy-page would copy {counted(done, 'page')} from {plan.source}." if ctx.dry_run else
            f"Copied {counted(done, 'page')} from {plan.source}"
            + (f" ({counted(same, 'page')} here already had the source's text)." if same else "."))
    redirects = [f"{target} (from {copy.title!r})" for copy, target in going if copy.redirect]
    files = [target for _, target in going if ctx.site.namespace_of(target) == 6]
    alone = ("Left alone (the target's own templates: overwrite replaces the page and its /doc only)"
             if plan.replaced else "Left alone (it exists here; overwrite=true replaces the page and its /doc)")
    notes = [f"{label}: {', '.join(titles)}" for label, titles in (
        (alone, kept),
        ("A redirect, copied as one (copy the page it leads to as well)", redirects),
        ("A file's description page, copied without the file (upload-file uploads it)", files),
        ("Not copied", failed), ("Templates this wiki still lacks", lacking)) if titles]
    apart = "\n" if ctx.dry_run else "\n\n"  # a dry run's rows, or each save's own answer
    return "\n".join([head, *notes]) + "".join(apart + block for block in blocks)


def overwriting(ctx: ToolContext, change: Composed, target: EditTarget) -> Composed:
    """A copy's change of ``target``, refused where the target changed since the revision it is
    pinned to and that revision already has the source's text: MediaWiki would merge nothing into
    the latest and save nothing, leaving what the target has and the source lacks."""
    if target.pin and target.pin != target.latest and as_saved(change.text) == as_saved(target.base_text) \
            and as_saved(target.now) != as_saved(target.base_text):
        diff = slice_content(line_diff(change.text, target.now), 0, ctx.budget)
        raise conflict(f"Nothing was copied to {target.title!r}: it changed since revision {target.pin}, the one "
                       f"last read here, which has the source's text; its latest, {target.latest}, has what the "
                       "source lacks, so the save would change nothing. The source's text against the "
                       f"target's latest:\n{diff.text}{' …' if diff.truncated else ''}\nTo replace that with the "
                       "source's text, read the page with get-page, then call copy-page again with overwrite=true.")
    return change


# ---------------------------------------------------------------------------
# wikis.py: Wikis and toolsets: list-wikis, add-wiki, remove-wiki and load-toolset, and the wikis as
# resources.
# ---------------------------------------------------------------------------

def managing_wikis(state: ServerState) -> bool:
    """add-wiki and remove-wiki: unless the operator froze the list, or replicas share no state."""
    return state.config.allow_wiki_management and not state.stateless


def wiki_facts(state: ServerState, key: str, contact: bool) -> dict[str, Any]:
    """A wiki's public facts (never a credential); ``contact`` fetches site info if not known."""
    wiki, client = state.wiki_and_client(key)
    site, api = client.learnt
    problem = None
    if contact and site is None:
        try:
            site, api = client.site, client.api_url
        except WikiError as error:  # a refused login or account is no network trouble
            problem = (PROBLEM_LABELS.get(error.category, "problem"), error.message)
    parts = urllib.parse.urlsplit(wiki.url)
    return {"key": key, "name": site.name if site else wiki.sitename,
            "server": site.server if site else f"{parts.scheme}://{parts.netloc}", "api": api,
            "read_only": wiki.read_only, "default": key == state.config.default_wiki,
            "private": wiki.private, "problem": problem}


#: How list-wikis and the wiki resources name a wiki's problem, by its error category.
PROBLEM_LABELS = {"authentication": "no access", "permission_denied": "no access",
                  "upstream_failure": "unreachable", "rate_limited": "unreachable"}


def wiki_summary(state: ServerState, key: str) -> str:
    """The text of the resource mcp://wikis/{key}."""
    facts = wiki_facts(state, key, contact=True)
    return labelled(("Wiki", key), ("Name", facts["name"]), ("Server", facts["server"]),
                    ("API", facts["api"]), ("Read-only", facts["read_only"] and "yes"),
                    ("Default", facts["default"] and "yes"), ("Private", facts["private"] and "yes"),
                    *([(facts["problem"][0].capitalize(), facts["problem"][1])] if facts["problem"] else []))


#: The resource template of the wikis, whose {key} completion/complete offers.
WIKI_RESOURCE_TEMPLATE = "mcp://wikis/{key}"


def wiki_resources(state: ServerState) -> list[dict[str, Any]]:
    """resources/list entries, one per wiki, from what is known (no request)."""
    resources = []
    for key in state.wikis:
        facts = wiki_facts(state, key, contact=False)
        resources.append({"uri": f"mcp://wikis/{key}", "name": key, "title": facts["name"] or None,
                          "mime_type": "text/plain", "description": f"The wiki at {facts['server']}"
                          + (" (default)" if facts["default"] else "")})
    return resources


def serves_url(wiki_url: str, site: SiteInfo | None, url: str) -> bool:
    """Whether ``url``, any URL of a wiki, is one of the wiki whose API is ``wiki_url``: on its
    host, and the bare host or a path under its script or article path. Two wikis may share a
    host (/w/ and /de/w/): the host alone does not tell them apart."""
    if wiki_key(wiki_url) != wiki_key(url):
        return False
    path = urllib.parse.urlsplit(url).path.rstrip("/")
    if not urllib.parse.urlsplit(wiki_url).path.strip("/"):
        return True  # configured by its server alone: the host is all there is to go by
    script = urllib.parse.urlsplit(wiki_url).path.rpartition("/")[0]
    # until its site info says, the usual short URLs: /w/ for scripts, /wiki/ for pages
    prefixes = {script, script.removesuffix("/w") + "/wiki" if script.endswith("/w") else ""}
    if site and wiki_key(site.server) == wiki_key(url):  # its paths are on its own server
        prefixes |= {site.script_path, site.article_path.split("$1")[0]}
    return not path or any(p.strip("/") and f"{path}/".startswith(f"/{p.strip('/')}/") for p in prefixes)


@tool("add-wiki", "Add wiki", toolset="wikis",
      read_only=False, destructive=False, idempotent=True, open_world=True,
      scoped=False, offered=managing_wikis)
def add_wiki(
    ctx: ToolContext,
    wikiUrl: Annotated[str, Arg("Any URL of the wiki: a page, its address or api.php.",
                                max_length=2000, max_length_listed=False)],
) -> str:
    """Adds a wiki until the server stops, from any URL of it, keyed by its server name (e.g.
    en.wikipedia.org); then every tool takes a wiki argument, and the client is told the tool list
    changed. Anonymous and read-only unless configured with credentials. Fails for private addresses
    and for a wiki already configured."""
    state = ctx.state
    try:
        url = normalise_server(wikiUrl)
    except ValueError:
        raise invalid_input(f"{wikiUrl!r} is not an http(s) URL of a wiki.") from None
    if split_userinfo(url)[1]:
        raise invalid_input("wikiUrl must not carry a user name or password; a wiki that needs them is one "
                            "for the operator to configure.")
    options = {"user_agent_prefix": state.config.user_agent, **state.client_options}
    wiki = next((w for k, w in state.config.wikis.items()  # the operator's entry, since removed
                 if k not in state.wikis and serves_url(w.url, None, url)), None)
    known = next((k for k, w, c in state.entries() if serves_url(w.url, c.learnt[0], url)), None)
    if wiki is None and known is None:  # a URL from a model: every request passes the address guard
        client = MediaWikiClient(url, guard=state.guard, **options)
        site = client.site
        known = next((k for k, c in state.clients.items() if c.learnt[1] == client.api_url), None)
    if known:
        raise conflict(f"{known} is already configured, and {url} is one of its addresses; pass it as wiki "
                       "to other tools.")
    if wiki is None:
        key = wiki_key(site.server) or wiki_key(client.api_url)
        names = {name for k, w, c in state.entries()
                 for name in (k, wiki_key(w.url), wiki_key(c.learnt[0].server) if c.learnt[0] else None)}
        if key in names or key in state.config.wikis:  # another wiki on this host
            key += site.script_path or urllib.parse.urlsplit(client.api_url).path.rpartition("/")[0]
        wiki = next((w for k, w in state.config.wikis.items()  # the operator's entry by this name, removed
                     if k not in state.wikis and key in (k, wiki_key(w.url))),
                    WikiConfig(key=key, url=client.api_url, sitename=site.name))
    if wiki.key in state.config.wikis:  # the operator's entry, with its credentials
        client = wiki.client(**options)
        site = client.site
    state.add_wiki(wiki, client)
    return labelled(("Added wiki", wiki.key), ("Name", site.name), ("MediaWiki", site.generator),
                    ("Server", site.server), ("API", client.api_url),
                    ("Access", "read-only" if wiki.read_only else "read and write")
                    ) + f"\nPass {call_args(wiki=wiki.key)} to other tools to use it."


@tool("remove-wiki", "Remove wiki", toolset="wikis",
      read_only=False, destructive=True, idempotent=True, open_world=False,
      scoped=False, offered=lambda state: managing_wikis(state) and len(state.wikis) > 1,
      see={"to bring it back": "add-wiki"})
def remove_wiki(
    ctx: ToolContext,
    wiki: Annotated[str, Arg("Key of the wiki to remove.", max_length=300)],
) -> str:
    """Removes a wiki from this server, added or configured (never the default wiki). Nothing
    changes on the wiki itself."""
    if not wiki.strip():
        raise invalid_input("Argument 'wiki' must name the wiki to remove.")
    key = ctx.state.resolve_wiki(wiki)
    removed = ctx.state.remove_wiki(key)
    return f"Removed wiki {key}" + (f" ({removed.sitename})" if removed.sitename else "") + "."


@tool("list-wikis", "List wikis", toolset="pages", read_only=True, scoped=False,
      offered=lambda state: len(state.wikis) > 1)
def list_wikis(ctx: ToolContext) -> str:
    """Returns the configured wikis, one per line: key (the wiki argument of other tools), name,
    public and API addresses, then "default" and "read-only" where so. The resource
    mcp://wikis/{{key}} holds the same for one wiki."""
    rows = []
    for key in ctx.state.wikis:
        facts = wiki_facts(ctx.state, key, contact=True)
        marks = [m for m, on in (("default", facts["default"]), ("read-only", facts["read_only"]),
                                 ("private", facts["private"])) if on]
        if facts["problem"]:
            marks.append(": ".join(facts["problem"]))
        rows.append(f"{key}: " + ", ".join(str(v) for v in (
            facts["name"], facts["server"], f"API {facts['api']}" if facts["api"] else None) if v)
            + (f" ({'; '.join(marks)})" if marks else ""))
    return "\n".join(rows)


def toolset_tools(state: ServerState, session: Session | None, name: str, caller: Caller = NO_PERSON) -> list[str]:
    """The tools a toolset would add for a session of ``caller``, as offered_tools offers them (a
    read-only server offers no tool that writes; a person, none their account lacks the rights for)."""
    with_it = Session(toolsets_of(state, session) | {name})
    return [spec.name for spec in offered_tools(state, with_it, caller) if spec.toolset == name]


def toolsets_to_load(state: ServerState, session: Session | None, caller: Caller) -> str:
    """load-toolset's live sentence: each toolset the session can load that adds a tool, by its
    name, with what it is for (a model given examples of what toolsets hold took them for names)."""
    names = [name for name in loadable_now(state, session) if toolset_tools(state, session, name, caller)]
    if not names:
        return "This session has every toolset it can load."
    return "Toolsets: " + "; ".join(f"'{name}': {TOOLSETS[name]}" for name in names) + "."


def toolsets_holding(word: str, state: ServerState) -> list[str]:
    """The toolsets whose description or tool names hold ``word``, a plural as its singular: where
    a model that named a toolset by what it holds ('logs', 'contributions') finds it."""
    wanted = word.removesuffix("s")
    if len(wanted) < 3:
        return []
    found = []
    for name, holds in TOOLSETS.items():
        words = re.findall("[a-z]+", " ".join([holds, *(spec.name for spec in state.registry.tools.values()
                                                          if spec.toolset == name)]))
        if wanted in {w.removesuffix("s") for w in words}:
            found.append(name)
    return found


@tool("load-toolset", "Load toolset", toolset="pages", read_only=True, open_world=False, scoped=False,
      in_session=True, offered=lambda state: bool(state.config.loadable_toolsets - state.config.toolsets),
      live=toolsets_to_load)
def load_toolset(
    ctx: ToolContext,
    toolset: Annotated[str | None, Arg("Omitted: lists their tools.", max_length=50,
                                       max_length_listed=False)] = None,
) -> str:
    """Adds a toolset's tools to this session."""
    state, session, caller = ctx.state, ctx.session, ctx.caller
    assert session is not None  # in_session: offered to sessions only
    choices = loadable_now(state, session)
    if toolset is None:
        rows = [f"{name}: {TOOLSETS[name]}; tools: {', '.join(tools)}"
                for name in choices if (tools := toolset_tools(state, session, name, caller))]
        barred = [name for name in TOOLSETS if name not in toolsets_of(state, session) | set(choices)]
        return "\n".join(rows or ["There is no toolset left for this session to load."]) + (
            f"\nNot loadable (the operator's choice): {', '.join(barred)}." if barred else "")
    name = toolset.strip().lower()
    if name not in TOOLSETS:
        holding = toolsets_holding(name, state)
        raise invalid_input(f"There is no toolset {toolset!r}; the toolsets are {', '.join(TOOLSETS)}" + (
            f". {toolset.strip()!r} is in the toolset {' and '.join(holding)}." if holding else "."))
    if name in toolsets_of(state, session):
        return f"The toolset {name} is already loaded: {', '.join(toolset_tools(state, session, name, caller))}."
    if name not in choices:
        raise permission_denied(f"The operator does not let a session load the toolset {name} "
                                "(MCP_LOADABLE_TOOLSETS); no retry by the model changes it.")
    tools = toolset_tools(state, session, name, caller)
    if not tools and caller.person and toolset_tools(state, session, name):
        raise permission_denied(f"The toolset {name} offers {caller.person.name} no tool: their account lacks the "
                                "rights of each on every wiki where they may write. Only the wiki's administrators "
                                "can give them; no retry by the model changes it.")
    if not tools:
        raise permission_denied(f"The toolset {name} offers no tool with this server's configuration (on "
                                "read-only wikis, none that writes).")
    session.loaded |= {name}
    return f"Loaded the toolset {name} for this session; the tool list now has {', '.join(tools)}."


# ---------------------------------------------------------------------------
# stdio.py: The stdio transport: lines screened before the SDK reads them, and the server run on stdin and
# stdout.
# ---------------------------------------------------------------------------

#: A surrogate code point: in a decoded string, the trace of a JSON escape such as \ud800 with no
#: partner, which is no Unicode character and cannot be written as UTF-8.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogates(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], bool]]:
    """Where the strings of a decoded JSON value hold a lone surrogate: (path, whether in a key)."""
    if isinstance(value, str):
        if LONE_SURROGATE.search(value):
            yield path, False
    elif isinstance(value, dict):
        for key, item in value.items():
            if LONE_SURROGATE.search(key):
                yield (*path, key), True
            yield from lone_surrogates(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from lone_surrogates(item, (*path, index))


def screen_line(line: bytes) -> tuple[Any, Any]:
    """One line of stdin read as a JSON-RPC message: (message, None), or (None, the JSON-RPC
    error that answers it), or (None, None) for a blank line. An error carries the request's id
    where one can be read, else null. A lone surrogate passes only in a value of a tool's
    arguments, where the tool's argument check refuses it as invalid_input; anywhere else the
    answer could not even be written (the SDK's JSON writer fails on it)."""
    import mcp_types as mt
    from pydantic import ValidationError

    def refusal(code: int, message: str, value: Any = None) -> tuple[Any, Any]:
        rpc_id = value.get("id") if isinstance(value, dict) and "method" in value else None
        readable = isinstance(rpc_id, int) and not isinstance(rpc_id, bool) or (
            isinstance(rpc_id, str) and not LONE_SURROGATE.search(rpc_id))
        return None, mt.JSONRPCError(jsonrpc="2.0", id=rpc_id if readable else None,
                                     error=mt.ErrorData(code=code, message=message))

    if not line.strip():
        return None, None
    value: Any = None
    unreadable = ""
    try:  # read as UTF-8 would be, for the request's id when the line is not UTF-8
        value = json.loads(line.decode("utf-8", "replace"))
        surrogates = list(lone_surrogates(value))
    except (ValueError, RecursionError) as error:
        unreadable = f"Parse error: {error}."
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"byte {line[error.start]:#04x} at offset {error.start}"
        return refusal(mt.PARSE_ERROR, f"Parse error: the line is not UTF-8 ({where}); send JSON in UTF-8.",
                       value)
    if unreadable:
        return refusal(mt.PARSE_ERROR, unreadable)
    for path, in_key in surrogates:
        in_arguments = len(path) > 2 and path[:2] == ("params", "arguments") and value.get("method") == "tools/call"
        if in_key or not in_arguments:
            where = ".".join(map(str, path)).encode("utf-8", "backslashreplace").decode() or "the message"
            message = (f"Parse error: {where} holds a lone surrogate, which is no Unicode character; send "
                       "text as UTF-8 or as paired \\u escapes.")
            return refusal(mt.PARSE_ERROR, message, value)
    try:
        return mt.jsonrpc_message_adapter.validate_python(value, by_name=False), None
    except (ValidationError, RecursionError):
        return refusal(mt.INVALID_REQUEST, "Invalid Request: the line is JSON but no JSON-RPC 2.0 request, "
                                           "notification or response.", value)


async def serve_stdio(server: Server[Any]) -> None:
    """Serves MCP over stdin and stdout, answering every line.

    The SDK's stdio reader drops a line it cannot read without answering it, so the client waits
    until it times out (modelcontextprotocol/python-sdk#2751), and it reads invalid UTF-8 as U+FFFD,
    which an edit would then save. Here screen_line reads each line; the SDK still writes stdout
    and keeps stray output off it."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async def none() -> AsyncIterator[str]:  # the SDK's reader gets no lines: they are read below
        return
        yield

    messages, read_stream = anyio.create_memory_object_stream[Any](0)
    async with stdio_server(stdin=typing.cast(Any, none())) as (_, write_stream):
        async def read_lines() -> None:
            async with messages:
                async for line in anyio.wrap_file(sys.stdin.buffer):
                    message, refusal = screen_line(line)
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        if message is not None:
                            await messages.send(SessionMessage(message))
                        elif refusal is not None:
                            log.warning("stdin: %s", refusal.error.message)
                            await write_stream.send(SessionMessage(refusal))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            await server.run(read_stream, write_stream, server.create_initialization_options())


# ---------------------------------------------------------------------------
# server.py: create_server: the SDK's server wired to this server's tools, prompts, resources and completion.
# ---------------------------------------------------------------------------

@functools.cache
def wiki_server_class() -> Any:
    """WikiServer, made on first use: the SDK is imported only when a server is built."""
    from mcp.server.lowlevel.server import NotificationOptions, Server

    class WikiServer(Server[Any]):
        """The SDK's low-level server with the state it serves (``server.state``), for embedders and tests."""

        def __init__(self, state: ServerState, name: str, **options: Any) -> None:
            super().__init__(name, **options)
            self.state = state

        def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                          *more: Any, **named: Any) -> Any:
            # Handshake-era sessions learn listChanged only from this argument, which the SDK's
            # transports leave out when they call it (mcp/server/lowlevel/server.py, TODO L53).
            changed = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
            return super().create_initialization_options(notification_options or changed, *more, **named)
    return WikiServer


def create_server(config: Config | None = None, state: ServerState | None = None) -> WikiServer:
    """Builds the MCP server for a configuration (default: the environment's) or a server state."""
    import mcp_types as mt
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
    from mcp.shared.exceptions import MCPError

    state = state or ServerState.from_config(config or Config.from_env())
    bus = InMemorySubscriptionBus()  # our own, so that tool calls can publish list changes
    changes = ListChanges(state, bus)

    # The SDK's low-level server, as MCPServer builds schemas with pydantic, keeps unknown arguments
    # quiet and answers failures as "Error executing tool", where the tool contract needs otherwise,
    # and cannot remove a resource (remove-wiki must): all is served from the registry here.
    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        changes.listening(ctx)
        caller = await caller_of(state, ctx)
        return mt.ListToolsResult(tools=listed_tools(state, session_of(ctx), caller, confirmer(state, ctx)))

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        # Tools run on threads, which cannot talk to the session; so the lists are compared
        # before and after the call, and a change is announced from here.
        changes.listening(ctx)
        session, caller = session_of(ctx), await caller_of(state, ctx)
        before, loaded = changes.lists(), session.loaded if session else None
        wiki, write = turn_of(state, params.name, params.arguments)
        job = functools.partial(run_tool, state, params.name, params.arguments, caller=caller, session=session)
        try:
            blocks, is_error = await run_guarded(state, ctx, params.name, job, wiki, write)
        except WikiError as error:  # the server is stopping
            blocks, is_error = [str(error)], True
        note_tool_call(state, ctx, caller.person, params.name, wiki, blocks, is_error)
        await changes.announce(before)
        if session and loaded is not None and session.loaded != loaded:
            await changes.announce_to(ctx, loaded)
        return mt.CallToolResult(content=[
            mt.TextContent(type="text", text=b) if isinstance(b, str) else b for b in blocks],
            is_error=is_error)

    async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
        changes.listening(ctx)
        return mt.ListResourcesResult(resources=[mt.Resource(**r) for r in wiki_resources(state)])

    async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        key = uri.removeprefix("mcp://wikis/")
        if not uri.startswith("mcp://wikis/") or key not in state.wikis:
            raise MCPError(code=mt.INVALID_PARAMS, data={"uri": uri}, message=(
                f"Unknown resource {uri}; the wikis are {', '.join(f'mcp://wikis/{k}' for k in state.wikis)}."))
        try:
            text = await state.calls.run(key, functools.partial(wiki_summary, state, key), write=False)
        except WikiError as error:  # the server is stopping
            raise MCPError(code=mt.INTERNAL_ERROR, message=error.message) from None
        return mt.ReadResourceResult(contents=[mt.TextResourceContents(uri=uri, mime_type="text/plain", text=text)])

    # Prompts and completion come from PROMPTS, listed as offered_prompts allows each session.
    async def list_prompts(ctx: Any, params: Any) -> mt.ListPromptsResult:
        changes.listening(ctx)
        return mt.ListPromptsResult(prompts=listed_prompts(state, session_of(ctx)))

    async def get_prompt(ctx: Any, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        try:
            prompt, text = prompt_text(state, params.name, params.arguments, session_of(ctx))
        except WikiError as error:
            raise MCPError(code=mt.INVALID_PARAMS, message=str(error)) from None
        return mt.GetPromptResult(description=prompt.description, messages=[
            mt.PromptMessage(role="user", content=mt.TextContent(type="text", text=text))])

    async def complete(ctx: Any, params: mt.CompleteRequestParams) -> mt.CompleteResult:
        kind = completed_kind(state, params.ref, params.argument.name, session_of(ctx))
        named = (params.context.arguments or {}).get("wiki") if params.context else None
        try:
            key = state.resolve_wiki(named) if kind in ("page", "category") else ""
            job = functools.partial(completion_values, state, kind, params.argument.value, key,
                                    await caller_of(state, ctx))
            values, more = await state.calls.run(key, job, write=False)
        except WikiError as error:  # completion is a convenience: a wiki that cannot answer offers none
            log.info("no completion for %s: %s", params.argument.name, error)
            values, more = [], False
        return mt.CompleteResult(completion=mt.Completion(values=values, has_more=more or None))

    return wiki_server_class()(
        state, "mediawiki-mcp", version=__version__, instructions=(
            "Reads, searches and edits MediaWiki wikis. Wiki pages are addressed by page title; "
            f"the default wiki is {state.config.default_wiki}."),
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates, on_read_resource=read_resource,
        on_list_prompts=list_prompts, on_get_prompt=get_prompt, on_completion=complete,
        on_subscriptions_listen=ListenHandler(bus),
        # No tool declares Mcp-Param headers; without this the SDK would list the tools at each
        # 2026-protocol call over HTTP to find that out.
        get_tool_input_schema=lambda name: None)


class ListChanges:
    """Tells every session that can hear it when the lists of wikis and tools change, and one session
    when its own do (load-toolset): subscriptions/listen streams through the bus, handshake-era
    sessions on their own streams, which the SDK does not list, so each connection that asks for
    a list is noted here, weakly."""

    def __init__(self, state: ServerState, bus: Any) -> None:
        self.state, self.bus = state, bus
        self.listeners: weakref.WeakSet[Any] = weakref.WeakSet()

    def listening(self, ctx: Any) -> None:
        connection = connection_of(ctx)
        if connection.has_standalone_channel:
            self.listeners.add(connection)

    def lists(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The wikis, the tools offered with the shared arguments left out, and the prompts."""
        offered = [spec.name for spec in offered_tools(self.state)]
        tools = (*offered, *sorted(unlisted_arguments(self.state)))
        prompts = (*(prompt.name for prompt in prompts_using(offered)), f"wiki argument: {len(self.state.wikis) > 1}")
        return tuple(self.state.wikis), tools, prompts

    async def announce(self, before: tuple[tuple[str, ...], ...]) -> None:
        """Announces the lists that differ from ``before``."""
        from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
        after = self.lists()
        for changed, event, send in (
                (before[0] != after[0], ResourcesListChanged(), "send_resource_list_changed"),
                (before[1] != after[1], ToolsListChanged(), "send_tool_list_changed"),
                (before[2] != after[2], PromptsListChanged(), "send_prompt_list_changed")):
            if changed:
                await self.bus.publish(event)
                for connection in list(self.listeners):
                    try:
                        await getattr(connection, send)()
                    except Exception:  # advisory: a lost notification must not fail the call
                        log.debug("could not announce a list change", exc_info=True)

    async def announce_to(self, ctx: Any, loaded: frozenset[str]) -> None:
        """Tells one session that its tools changed (it had ``loaded``), and its prompts if they did."""
        prompts = [offered_prompts(self.state, session) for session in (Session(loaded), session_of(ctx))]
        try:
            await ctx.session.send_tool_list_changed()
            if prompts[0] != prompts[1]:
                await ctx.session.send_prompt_list_changed()
        except Exception:  # advisory, as above
            log.debug("could not announce a list change", exc_info=True)


async def list_resource_templates(ctx: Any, params: Any) -> Any:
    """resources/templates/list's answer, the same for every server."""
    import mcp_types as mt

    return mt.ListResourceTemplatesResult(resource_templates=[mt.ResourceTemplate(
        uri_template=WIKI_RESOURCE_TEMPLATE, name="wiki", mime_type="text/plain",
        description="A configured wiki: its name, public address, API address and access.")])


def listed_prompts(state: ServerState, session: Session | None = None) -> list[Any]:
    import mcp_types as mt

    return [mt.Prompt(name=prompt.name, title=prompt.title, description=prompt.description,
                      arguments=[mt.PromptArgument(name=a.name, description=a.description, required=a.required)
                                 for a in prompt_arguments(state, prompt)])
            for prompt in offered_prompts(state, session)]


def completed_kind(state: ServerState, ref: Any, argument: str, session: Session | None) -> str | None:
    """What an argument of completion/complete names (PromptArg's ``completes``); an unknown
    reference is an MCP error."""
    import mcp_types as mt
    from mcp.shared.exceptions import MCPError

    if isinstance(ref, mt.ResourceTemplateReference):
        if ref.uri != WIKI_RESOURCE_TEMPLATE:
            raise MCPError(code=mt.INVALID_PARAMS, message=f"Unknown resource template {ref.uri}; this server's "
                           f"is {WIKI_RESOURCE_TEMPLATE}.")
        return "wiki" if argument == "key" else None
    try:
        prompt = listed_prompt(state, ref.name, session)
    except WikiError as error:
        raise MCPError(code=mt.INVALID_PARAMS, message=str(error)) from None
    return next((a.completes for a in prompt_arguments(state, prompt) if a.name == argument), None)


def turn_of(state: ServerState, name: str, arguments: Mapping[str, Any] | None) -> tuple[str, bool]:
    """The wiki whose turn a tools/call waits for ('' for none), and whether the call may change it."""
    spec = state.registry.tools.get(name)
    if spec is None or not spec.scoped:
        return "", False
    try:
        return state.resolve_wiki((arguments or {}).get("wiki")), not spec.read_only
    except WikiError:
        return "", not spec.read_only


# ---------------------------------------------------------------------------
# http_ops.py: What an operator watches over HTTP: the health check, /metrics, and the cap on each person's
# sessions.
# ---------------------------------------------------------------------------

#: (connect, read) seconds of the health check's site-info request: a load balancer waits on it.
HEALTH_TIMEOUT = (2.0, 3.0)


#: Health probes closer together than this share one answer, so /health cannot flood the wiki.
HEALTH_MIN_INTERVAL_SECONDS = 1.0


#: After each failed login in a row, /health waits twice as long before it tries again, up to
#: this: MediaWiki throttles an account after a few failed logins.
HEALTH_LOGIN_BACKOFF_MAX_SECONDS = 300.0


LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")


def header_allowed(value: str | None, patterns: Iterable[str]) -> bool:
    """Whether a Host or Origin header matches a pattern: exactly, or ``name:*`` for
    that name with any port (case-insensitive)."""
    value = (value or "").strip().lower()
    return any(value == pattern or pattern.endswith(":*") and value.startswith(pattern[:-1])
               and value[len(pattern) - 1:].isdigit() for pattern in map(str.lower, patterns))


def bearer_matches(authorization: str, token: str) -> bool:
    """Whether an Authorization header carries the token, compared in constant time."""
    supplied = bearer_token(authorization)  # digests of equal lengths: the comparison reveals nothing
    return bool(supplied) and secrets.compare_digest(token_digest(supplied), token_digest(token))


class WikiProbe:
    """Whether one configured wiki answers a site-info request (``problem``: None, or the error's
    category), asked by a client of its own: short timeouts, no retries, the tools' client
    untouched; after failed logins, less often (HEALTH_LOGIN_BACKOFF_MAX_SECONDS)."""

    def __init__(self, client: MediaWikiClient, clock: Callable[[], float]) -> None:
        self.client, self.clock = client, clock
        self.problem: str | None = None
        self.next_probe = float("-inf")
        self.failed_logins = 0  # in a row

    def probe(self) -> None:
        if self.clock() < self.next_probe:
            return
        try:
            self.client.get({"action": "query", "meta": "siteinfo"})
            self.problem = None
        except WikiError as error:
            log.warning("health check: %s", error)
            self.problem = error.category
        except Exception:
            log.exception("health check failed")
            self.problem = "upstream_failure"
        self.failed_logins = self.failed_logins + 1 if self.problem == "authentication" else 0
        self.next_probe = self.clock() + min(HEALTH_MIN_INTERVAL_SECONDS * 2 ** self.failed_logins,
                                             HEALTH_LOGIN_BACKOFF_MAX_SECONDS)


class HealthCheck:
    """GET /health: whether the configured wikis answer a site-info request, quickly; and, with a
    shared store (MCP_STATE_URL), whether it answers. 503 only when no wiki answers: a wiki down
    of several, or the store down (this replica serves reads but refuses writes), is "degraded",
    still 200, so that one outage does not take everything the others serve down with it.

    Exempt from the token and the Host check: a load balancer probes it, and the answer (ok, an
    error category, the keys of the wikis down) reveals nothing of the wikis' content."""

    def __init__(self, state: ServerState, clock: Callable[[], float] = time.monotonic) -> None:
        import anyio
        config = state.config
        self.store = state.reads.store
        self.wikis = {key: WikiProbe(wiki.client(config.user_agent, timeout=HEALTH_TIMEOUT,
                                                 retry=RetryPolicy(budget=0)), clock)
                      for key, wiki in config.wikis.items()}
        self.default = config.default_wiki
        self.answer: tuple[int, dict[str, Any]] = (503, {"status": "unknown"})
        self.clock = clock
        self.next_probe = float("-inf")
        self.lock = anyio.Lock()

    def probe(self) -> tuple[int, dict[str, Any]]:
        """Asks the store and the wikis due (all at once: a load balancer waits on the slowest)."""
        store: dict[str, str] = {}
        if self.store.name != MemoryStore.name:
            problem = self.store.problem()  # logged by the store, once per outage
            store = {"store": "unavailable" if problem else "ok"}
        with concurrent.futures.ThreadPoolExecutor(len(self.wikis)) as pool:
            list(pool.map(WikiProbe.probe, self.wikis.values()))
        down = {key: wiki.problem for key, wiki in self.wikis.items() if wiki.problem}
        named = {"down": down} if down and len(self.wikis) > 1 else {}
        if len(down) == len(self.wikis):
            return 503, {"status": "unavailable", "error": down[self.default], **named, **store}
        degraded = down or store.get("store") == "unavailable"
        return 200, {"status": "degraded" if degraded else "ok", **named, **store}

    async def endpoint(self, request: Any) -> Any:
        from starlette.responses import JSONResponse
        async with self.lock:
            if self.clock() >= self.next_probe:
                self.answer = await on_own_thread(self.probe)  # never waiting behind tool calls
                self.next_probe = self.clock() + HEALTH_MIN_INTERVAL_SECONDS
        status, body = self.answer
        return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


class Metrics:
    """The series of GET /metrics, in Prometheus' text format, in a registry of this server's own.
    Labels are tool names, outcomes, reasons and wiki keys: never a person, a title or an address.

    Answered to a client on this machine (a Prometheus beside the server) that names it as Host, or to
    one sending MCP_METRICS_TOKEN: the counts tell how the server is used, if not by whom."""

    def __init__(self, state: ServerState, token: str | None = None, hosts: Sequence[str] = ()) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram
        from prometheus_client.core import CounterMetricFamily
        self.token = token
        self.hosts = [*LOOPBACK_HOSTS, *hosts]  # Host headers of a scrape without the token
        self.registry = CollectorRegistry()
        self.tool_calls = Counter("mediawiki_mcp_tool_calls", "Tool calls, by tool and outcome (done, or the "
                                  "error's category)", ["tool", "outcome"], registry=self.registry)
        self.sign_ins = Counter("mediawiki_mcp_sign_ins", "Sign-in forms sent (MCP_AUTH=login), by outcome: "
                                "signed_in, or why the sign-in was refused", ["outcome"], registry=self.registry)
        self.refusals = Counter("mediawiki_mcp_refused_requests", "Requests refused before any tool saw them, by "
                                "reason: no_token and token (401: none, or one that is unknown, expired, revoked or "
                                "whose person cannot be used), host (421), origin (403), sessions (429: "
                                "MCP_SESSIONS_PER_PERSON), store_down (503 with MCP_AUTH=login), grant (400 at /token: "
                                "a code or refresh token used twice, expired, or of a signed-out person)", ["reason"],
                                registry=self.registry)
        self.wiki_request_seconds = Histogram("mediawiki_mcp_wiki_request_seconds", "Seconds each request to "
                                              "a wiki took, by wiki key", ["wiki"], registry=self.registry)
        store = state.reads.store

        class StoreErrors:  # the store counts them itself; read at each scrape
            def collect(self) -> Iterator[Any]:
                yield CounterMetricFamily("mediawiki_mcp_store_errors", "Requests to the shared state store "
                                          "(MCP_STATE_URL) that could not reach it", value=store.errors)
        self.registry.register(StoreErrors())  # type: ignore[arg-type]  # a Collector by its collect()

    def allowed(self, scope: Any) -> bool:
        """Whether a request may read the metrics: with MCP_METRICS_TOKEN, which no web page has; else
        from a loopback address (after uvicorn's reading of a trusted proxy's X-Forwarded-For) with a
        Host naming this server, as a browser led there by DNS rebinding would not."""
        from starlette.datastructures import Headers
        headers = Headers(scope=scope)
        if self.token:
            return bearer_matches(headers.get("authorization", ""), self.token)
        with contextlib.suppress(TypeError, IndexError, ValueError):
            return (ipaddress.ip_address(scope["client"][0]).is_loopback
                    and header_allowed(headers.get("host"), self.hosts))
        return False

    async def endpoint(self, scope: Any, receive: Any, send: Any) -> None:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
        from starlette.responses import JSONResponse, Response
        if not self.allowed(scope):
            reason = ("Send MCP_METRICS_TOKEN as 'Authorization: Bearer'." if self.token else
                      "/metrics answers this machine only; set MCP_METRICS_TOKEN to scrape it from elsewhere.")
            answer: Any = JSONResponse({"error": reason}, status_code=401 if self.token else 403,
                                       headers={"WWW-Authenticate": "Bearer"} if self.token else None)
        else:
            answer = Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST,
                              headers={"Cache-Control": "no-store"})
        await answer(scope, receive, send)


class PersonSessions:
    """The MCP sessions each person (of MCP_AUTH_TOKENS, or signed in) has open, at most ``cap``: one
    more closes their oldest idle session, whose client is answered 404 next and opens another, as
    the specification asks of it; while every one is busy (a call, or an event stream, open), the new
    one is refused with 429. Without a cap, one person's client could hold sessions without end.
    Used on the event loop only, so without a lock."""

    def __init__(self, server: WikiServer, cap: int) -> None:
        self.server, self.cap = server, cap
        self.open: dict[str, dict[str, int]] = {}  # person ID -> session ID -> requests in flight, oldest first
        self.owner: dict[str, str] = {}  # session ID -> person ID
        self.opening: collections.Counter[str] = collections.Counter()  # sessions being opened, by person ID

    def _transports(self) -> Mapping[str, Any]:
        # private: the SDK offers no way to a session by its ID, nor one to end it but its client's DELETE
        return typing.cast(Mapping[str, Any], self.server.session_manager._server_instances)

    async def serve(self, app: Any, scope: Any, receive: Any, send: Any) -> None:
        """Serves a request to /mcp through ``app``, keeping count of its person's sessions."""
        from starlette.datastructures import Headers, MutableHeaders
        from starlette.responses import JSONResponse
        headers = Headers(scope=scope)
        session = headers.get("mcp-session-id")
        if session is not None:  # a request in a session: busy while it is served
            sessions = self.open.get(self.owner.get(session, ""), {})
            if session in sessions:
                sessions[session] += 1
            try:
                await app(scope, receive, send)
            finally:
                if session in sessions:
                    sessions[session] -= 1
            return
        person = scope.get(PERSON_SCOPE)  # resolved where the request came in (http_app)
        if person is None or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        sessions = self.open.setdefault(person.id, {})
        live = self._transports()
        for ended in [sid for sid in sessions if sid not in live]:
            del sessions[ended]
            self.owner.pop(ended, None)
        if len(sessions) + self.opening[person.id] >= self.cap:
            idle = next((sid for sid, busy in sessions.items() if not busy), None)
            if idle is None:
                log.warning("refused a new MCP session of %s: their %d are all busy (MCP_SESSIONS_PER_PERSON)",
                            logged(person.in_log), self.cap)
                self.server.state.refused("sessions")
                reason = (f"{person.name} has {self.cap} MCP sessions open on this server, each busy, which is "
                          "as many as one person may have (MCP_SESSIONS_PER_PERSON): end one (DELETE /mcp with "
                          "its Mcp-Session-Id), or connect again once a call has finished.")
                await JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}},
                                   status_code=429)(scope, receive, send)
                return
            del sessions[idle]
            self.owner.pop(idle, None)
            transport = live.get(idle)
            if transport is not None and transport.idle_scope is not None:
                transport.idle_scope.cancel()  # the SDK then ends the session, as after its idle time
            log.info("closed the oldest idle MCP session of %s to open another (MCP_SESSIONS_PER_PERSON=%d)",
                     logged(person.in_log), self.cap)
        opened = person.id

        async def noting(message: Any) -> None:
            if message["type"] == "http.response.start":
                sid = MutableHeaders(raw=message["headers"]).get("mcp-session-id")
                if sid:
                    sessions[sid], self.owner[sid] = 0, opened
            await send(message)
        self.opening[opened] += 1
        try:
            await app(scope, receive, noting)
        finally:
            self.opening[opened] -= 1


# ---------------------------------------------------------------------------
# http.py: The Streamable HTTP transport: its options, the bearer tokens or sign-in in front of /mcp,
# and uvicorn run with a graceful shutdown.
# ---------------------------------------------------------------------------

MCP_PATH = "/mcp"


HEALTH_PATH = "/health"


METRICS_PATH = "/metrics"


#: Then the answers get this long to reach their clients before the last streams are cut.
SHUTDOWN_FLUSH_SECONDS = 1


if TYPE_CHECKING:  # imported at run time with MCP_AUTH=login only: see login_module()
    from .login_forms import SignInOptions


@dataclasses.dataclass
class HttpOptions:
    """How the Streamable HTTP transport listens and whom it answers."""
    host: str = DEFAULT_HTTP_HOST
    port: int = DEFAULT_HTTP_PORT
    allowed_hosts: list[str] = dataclasses.field(default_factory=list)
    allowed_origins: list[str] = dataclasses.field(default_factory=list)
    auth_token: str | None = dataclasses.field(default=None, repr=False)
    auth: str | None = None  # MCP_AUTH: one of AUTH_MODES, None for no check of who calls
    tokens: TokenTable | None = None  # the people of MCP_AUTH_TOKENS
    sign_in: SignInOptions | None = None  # MCP_AUTH=login: people sign in (login.py)
    stateless: bool = False
    session_idle_seconds: float = 30 * 60  # closes a session without a request or event stream this long
    shutdown_grace_seconds: float = SHUTDOWN_GRACE_SECONDS  # after SIGTERM, for the calls in flight
    sessions_per_person: int = DEFAULT_SESSIONS_PER_PERSON  # MCP sessions one person may have open
    header_timeout_seconds: float = DEFAULT_HEADER_TIMEOUT_SECONDS  # to send a request's line and headers
    metrics_token: str | None = dataclasses.field(default=None, repr=False)  # MCP_METRICS_TOKEN

    @property
    def loopback(self) -> bool:
        with contextlib.suppress(ValueError):
            return ipaddress.ip_address(self.host).is_loopback
        return self.host.lower() == "localhost"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{MCP_PATH}"

    @property
    def public_url(self) -> str:
        """The origin clients reach this server at: MCP_PUBLIC_URL, else the address it listens on."""
        return self.sign_in and self.sign_in.public_url or self.url.removesuffix(MCP_PATH)

    @property
    def served_hosts(self) -> list[str]:
        """The Host headers answered (header_allowed's patterns): MCP_ALLOWED_HOSTS, else the loopback
        names when listening on loopback; and MCP_PUBLIC_URL's host, which clients are sent to. None:
        Host is not checked."""
        hosts = list(self.allowed_hosts or (LOOPBACK_HOSTS if self.loopback else ()))
        if self.sign_in and self.sign_in.public_url:
            public = urllib.parse.urlsplit(self.sign_in.public_url)
            # also without its port, as a proxy passes it on from nginx's $host
            hosts += dict.fromkeys([public.netloc, public.netloc.rsplit(":", 1)[0] if public.port else public.netloc])
        return hosts


def http_options(args: argparse.Namespace, environ: Mapping[str, str] | None = None,
                 config: Config | None = None) -> HttpOptions | None:
    """The HTTP transport's options, from the command line, else the environment;
    None when the transport is stdio. ``config`` (default: the environment's) names the wikis
    the people of MCP_AUTH_TOKENS have accounts on."""
    env = os.environ if environ is None else environ
    if (args.transport or setting(env, "MCP_TRANSPORT")) == "stdio":
        return None
    port = setting(env, "PORT") if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise ConfigError(f"The port (--port or PORT) must be between 0 and 65535, not {port}")
    host = (args.host or setting(env, "MCP_BIND")).strip().removeprefix("[").removesuffix("]")
    if not valid_host(host):
        raise ConfigError(f"The address to listen on (--host or MCP_BIND) must be an IP address or a host "
                          f"name, not {host!r}")
    token, tokens_path = setting(env, "MCP_AUTH_TOKEN"), setting(env, "MCP_AUTH_TOKENS")
    auth = setting(env, "MCP_AUTH") or ("token" if token or tokens_path else None)
    if auth == "token" and not (token or tokens_path):
        raise ConfigError("MCP_AUTH=token needs MCP_AUTH_TOKEN (one token for everyone) or MCP_AUTH_TOKENS "
                          "(a file of people and their tokens)")
    if auth == "login" and (token or tokens_path):  # the sign-in's tokens are the only ones then: say so
        raise ConfigError(f"{'MCP_AUTH_TOKENS' if tokens_path else 'MCP_AUTH_TOKEN'} is for MCP_AUTH=token; with "
                          "MCP_AUTH=login people sign in, and only the tokens of their sign-ins are accepted: "
                          "leave one of the two out")
    tokens = tokens_path and token_table(tokens_path, env, (config or Config.from_env(env)).wikis, token)
    metrics_token = setting(env, "MCP_METRICS_TOKEN")
    if metrics_token and importlib.util.find_spec("prometheus_client") is None:
        raise ConfigError("MCP_METRICS_TOKEN is set, but /metrics needs the prometheus-client package, which "
                          "is not installed: pip install 'mediawiki-mcp[metrics]'")
    loopback = HttpOptions(host=host).loopback
    sign_in = login_module("login_forms").sign_in_options(env, loopback) if auth == "login" else None
    return HttpOptions(host=host, port=port, allowed_hosts=setting(env, "MCP_ALLOWED_HOSTS"),
                       allowed_origins=setting(env, "MCP_ALLOWED_ORIGINS"),
                       auth_token=token, auth=auth, tokens=tokens or None, sign_in=sign_in,
                       stateless=bool(args.stateless or setting(env, "MCP_STATELESS")),
                       shutdown_grace_seconds=setting(env, "MCP_SHUTDOWN_GRACE_SECONDS"),
                       sessions_per_person=setting(env, "MCP_SESSIONS_PER_PERSON"),
                       header_timeout_seconds=setting(env, "MCP_HEADER_TIMEOUT_SECONDS"),
                       metrics_token=metrics_token)


def login_module(name: str = "login") -> Any:
    """login.py (or login_forms.py), the sign-in of MCP_AUTH=login, which the extra ``login`` needs."""
    return optional_module(name, "MCP_AUTH=login", "login", "cryptography.fernet", "the cryptography package")


def http_refusal(headers: Mapping[str, str], options: HttpOptions,
                 path: str = MCP_PATH) -> tuple[int, str] | None:
    """Why a request to ``path`` is refused, as (HTTP status, reason), or None.
    Host and Origin checks stop DNS rebinding (a web page reaching a server on this
    machine or network through a browser); the bearer token stops everyone else (with
    MCP_AUTH=login, the tokens of sign-ins, checked by SignIns.require_person)."""
    hosts = options.served_hosts
    if hosts and not header_allowed(headers.get("host"), hosts):
        return 421, f"Host {headers.get('host')!r} is not served here (MCP_ALLOWED_HOSTS)."
    origin = headers.get("origin")  # none: the request is not from a browser page
    origins = options.allowed_origins or [f"http://{host}" for host in LOOPBACK_HOSTS if options.loopback]
    if (origin is not None and not header_allowed(origin, [*origins, options.public_url])
            and not (options.sign_in and path in options.sign_in.OAUTH_PATHS)):
        return 403, f"Origin {origin!r} is not allowed (MCP_ALLOWED_ORIGINS)."
    if options.sign_in or not (options.auth_token or options.tokens):
        return None  # with MCP_AUTH=login, SignIns.require_person checks the tokens
    authorization = headers.get("authorization", "")
    if options.auth_token and bearer_matches(authorization, options.auth_token):
        return None
    if options.tokens and options.tokens.person(bearer_token(authorization)):
        return None
    return 401, ("This server needs 'Authorization: Bearer <token>' (MCP_AUTH_TOKEN"
                 + (", or a person's own of MCP_AUTH_TOKENS)." if options.tokens else ")."))


def metrics_of(state: ServerState, options: HttpOptions) -> Metrics | None:
    """/metrics' series for a server about to be served, with each wiki's requests timed; None, said
    once, without prometheus-client (the extra ``metrics``)."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        log.info("%s is off: it needs prometheus-client (pip install 'mediawiki-mcp[metrics]')", METRICS_PATH)
        return None
    state.metrics = Metrics(state, options.metrics_token, options.served_hosts)
    for key, _, client in state.entries():
        state.observed(key, client)
    return state.metrics


def http_app(server: WikiServer, options: HttpOptions) -> Any:
    """The ASGI application: MCP at /mcp behind the Host, Origin and token checks,
    and /health. Embedders can serve it with any ASGI server."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.datastructures import Headers
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    metrics = server.state.metrics or metrics_of(server.state, options)
    # The SDK's Host/Origin check (TransportSecuritySettings) is off, since it does not cover
    # these cases: it cannot leave Host unchecked while checking Origin (a non-loopback bind
    # without MCP_ALLOWED_HOSTS); it compares case-sensitively (LOCALHOST:3000) and takes any
    # text after "name:" for a port; and its plain-text refusals name no setting to change.
    # guarded() below checks both, and the token, before the SDK sees a request.
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=options.stateless, host=options.host,
        session_idle_timeout=options.session_idle_seconds,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        custom_starlette_routes=[Route(HEALTH_PATH, HealthCheck(server.state).endpoint, methods=["GET"])])

    oauth: Any = None
    signed_in: Any = None
    if options.sign_in:
        sign_ins = login_module().SignIns(server.state, options.sign_in, options.public_url)
        server.state.people.required = True
        oauth = sign_ins.app()
    capped = PersonSessions(server, options.sessions_per_person) if (
        (options.tokens or options.sign_in) and not options.stateless) else None

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        """/mcp, with its person's sessions kept within the cap (the person is in the scope by now)."""
        if capped is not None:
            await capped.serve(app, scope, receive, send)
        else:
            await app(scope, receive, send)
    if options.sign_in:
        signed_in = sign_ins.require_person(counted)

    # Where a request comes in: the Host, Origin and token checks, then its person, resolved here
    # once and carried in its scope (PERSON_SCOPE) to the handlers (person_of).
    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        target: Any = app
        if scope["type"] == "http" and scope["path"] == METRICS_PATH:
            target = metrics.endpoint if metrics else JSONResponse(
                {"error": "/metrics needs prometheus-client: pip install 'mediawiki-mcp[metrics]'"}, status_code=404)
        elif scope["type"] == "http" and scope["path"] != HEALTH_PATH:
            headers = Headers(scope=scope)
            refusal = http_refusal(headers, options, scope["path"])
            if refusal is not None:
                status, reason = refusal
                log.warning("refused %s %s: %s", scope.get("method"), scope["path"], reason)
                server.state.refused({421: "host", 403: "origin"}.get(status) or (
                    "token" if bearer_token(headers.get("authorization", "")) else "no_token"))
                target = JSONResponse(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}},
                    status_code=status, headers={"WWW-Authenticate": "Bearer"} if status == 401 else None)
            elif options.sign_in and scope["path"] != MCP_PATH + "/":  # the SDK's app sends that on to /mcp
                # /mcp for signed-in people only; the OAuth endpoints and sign-in pages beside it
                target = signed_in if scope["path"] == MCP_PATH else oauth
            elif options.tokens:
                scope = {**scope, PERSON_SCOPE: options.tokens.person(bearer_token(headers.get("authorization", "")))}
                if scope["path"] == MCP_PATH:
                    target = counted
        await target(scope, receive, send)
    return guarded


def http_warnings(options: HttpOptions, blank: Collection[str] = ()) -> list[str]:
    """What an operator should hear at start about how exposed the server is; ``blank``: the
    settings that were set but empty, which --empty-means-unset reads as not given."""
    warnings = [f"{name} is set but empty, and --empty-means-unset reads it as not set"
                + (f": {BLANK_MEANS[name]}." if name in BLANK_MEANS else ".") for name in sorted(blank)]
    if options.auth_token or options.tokens or options.sign_in:
        return warnings
    if options.loopback:
        return [*warnings, (f"Listening on {options.host} without MCP_AUTH_TOKEN: any program or user on "
                "this machine can use every tool. Set MCP_AUTH_TOKEN unless this machine is yours alone.")]
    return [*warnings, f"Listening on {options.host}, beyond this machine, without MCP_AUTH_TOKEN: anyone who "
            "reaches this address can use every tool. Set MCP_AUTH_TOKEN, or listen on 127.0.0.1 "
            "behind a proxy that authenticates."
            + ("" if options.allowed_hosts else " Host headers are not checked (MCP_ALLOWED_HOSTS).")]


#: What a blank setting turns into that an operator would not expect from an empty value.
BLANK_MEANS = {"MCP_AUTH_TOKEN": "HTTP requests need no token",
               "MEDIAWIKI_URL": f"the wiki is the default, {DEFAULT_WIKI_URL}"}


def head_timeout_protocol(seconds: float) -> type:
    """uvicorn's HTTP protocol, but a connection that has not sent a whole request line and headers
    ``seconds`` after it opened, or after it began the next request, is closed. uvicorn has no such
    timeout (its timeout_keep_alive counts only while no byte arrives between requests), so a client
    sending a request's head a byte at a time (slowloris) could hold a connection for good."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HeadTimeoutProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        head_deadline: Any = None  # the asyncio.TimerHandle that closes the connection

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self.head_deadline = self.loop.call_later(seconds, self.head_late)

        def data_received(self, data: bytes) -> None:
            between = self.cycle is None or self.cycle.response_complete  # no request being served
            if between and self.head_deadline is None:  # the next request of a kept-alive connection
                self.head_deadline = self.loop.call_later(seconds, self.head_late)
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:  # its head came whole
                self.head_arrived()

        def connection_lost(self, exc: Exception | None) -> None:
            self.head_arrived()
            super().connection_lost(exc)

        def head_arrived(self) -> None:
            if self.head_deadline is not None:
                self.head_deadline.cancel()
                self.head_deadline = None

        def head_late(self) -> None:
            self.head_deadline = None
            if not self.transport.is_closing():
                address = self.client[0] if self.client else "?"
                log.info("closed a connection from %s that sent no whole request head in %g s "
                         "(MCP_HEADER_TIMEOUT_SECONDS)", address, seconds)
                self.transport.close()
    return HeadTimeoutProtocol


def serve_http(server: WikiServer, options: HttpOptions, blank: Collection[str] = ()) -> int:
    """Serves MCP over Streamable HTTP until SIGTERM or SIGINT; returns the exit code. ``blank``:
    the settings --empty-means-unset dropped, which the start warns of."""
    import uvicorn  # HTTP-only imports stay out of importing this module
    from sse_starlette.sse import AppStatus

    # uvicorn's own timeout_graceful_shutdown cancels the requests still running when it ends,
    # which answers their calls with nothing; here the calls get the grace time first, and
    # those still running then are answered (ToolCalls.stop) before uvicorn shuts down.
    class GracefulServer(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for listening in self.servers:  # no new connections while the calls finish
                listening.close()
            await server.state.calls.stop(options.shutdown_grace_seconds)
            await super().shutdown(sockets)

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
    for warning in http_warnings(options, blank):
        log.warning(warning)
    if options.stateless and server.state.config.confirm == "person":  # unconfirmable
        log.warning("MCP_CONFIRM=person on stateless HTTP: no client can be asked here, so every guarded "
                    "action (delete-page, protect-page, rollback-edits, replace-in-pages saves, ...) is "
                    "refused. Serve HTTP with sessions, or set MCP_CONFIRM to auto or model.")
    config = uvicorn.Config(
        http_app(server, options), log_config=None, access_log=log.isEnabledFor(logging.DEBUG),
        server_header=False, timeout_graceful_shutdown=SHUTDOWN_FLUSH_SECONDS,
        http=head_timeout_protocol(options.header_timeout_seconds))
    # sse-starlette ends every event stream as soon as uvicorn hears SIGTERM, which would cut
    # off the answers of the calls still in flight.
    AppStatus.disable_automatic_graceful_drain()
    log.info("Serving MCP over Streamable HTTP at %s (%shealth check: %s)", options.url,
             "stateless; " if options.stateless else "", HEALTH_PATH)
    # uvicorn shuts down gracefully on SIGTERM and SIGINT, then raises the signal again
    # for the previous handler: these make that a clean exit instead of a kill or a traceback.
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        GracefulServer(config).run(sockets=[listener])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
    log.info("Stopped serving MCP over Streamable HTTP")
    return 0


# ---------------------------------------------------------------------------
# cli.py: The command line: arguments, --check of the configured wikis, sign-in, and main().
# ---------------------------------------------------------------------------

def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mediawiki-mcp", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Serves the Model Context Protocol for MediaWiki wikis, over stdio by default "
                    "(default wiki: English Wikipedia, anonymous and read-only).",
        epilog="environment variables:\n" + "\n".join(
            textwrap.fill(row.described, 100, initial_indent=f"  {row.variable:<24} ", subsequent_indent=" " * 27)
            for row in SETTINGS.values()))
    parser.add_argument("--version", action="version", version=f"mediawiki-mcp {__version__}")
    parser.add_argument("--check", action="store_true",
                        help="connect to each configured wiki, print what it offers, and exit (non-zero on a failure)")
    # these do what the variable named does (below), and win over it
    parser.add_argument("--config", metavar="PATH", help="as CONFIG")
    parser.add_argument("--transport", choices=["stdio", "http"], help="as MCP_TRANSPORT")
    parser.add_argument("--host", help="as MCP_BIND")
    parser.add_argument("--port", type=int, help="as PORT")
    parser.add_argument("--stateless", action="store_true", default=None, help="as MCP_STATELESS")
    parser.add_argument("--upload-dirs", nargs="*", default=[], metavar="DIR",
                        help="directories uploads may read files from, besides those of MCP_UPLOAD_DIRS")
    parser.add_argument("--empty-means-unset", action="store_true",
                        help="read a variable set to nothing as unset, for installers that set every "
                             "variable (the Claude Desktop bundle)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    sign_in = commands.add_parser(
        "sign-in", help="who is signed in (MCP_AUTH=login): list, or revoke WIKI:USER",
        description="Lists or revokes the sign-ins of MCP_AUTH=login, in the shared store of MCP_STATE_URL; "
                    "run it with the server's environment (MCP_STATE_URL, MCP_AUTH_SECRET, the wikis).")
    actions = sign_in.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="each person signed in: wiki, account, when, and their live tokens")
    revoke = actions.add_parser("revoke", help="signs a person out: every token of theirs stops working")
    revoke.add_argument("person", metavar="WIKI:USER", help="the person, as list names them")
    return parser


def sign_in_to_check(args: argparse.Namespace, env: Mapping[str, str], config: Config) -> HttpOptions | None:
    """--check without --transport http: the HTTP options all the same when MCP_AUTH=login, as the
    HTTP server would read them, so that a key or public URL that would stop it fails the check first."""
    if setting(env, "MCP_AUTH") != "login":
        return None
    return http_options(argparse.Namespace(**{**vars(args), "transport": "http"}), env, config)


def sign_in_command(args: argparse.Namespace, config: Config, env: Mapping[str, str], out: typing.TextIO) -> int:
    """``mediawiki-mcp sign-in list|revoke``: the sign-ins kept in the shared store; the exit status."""
    if not config.state_url:
        raise ConfigError("sign-in list and revoke read the shared store of MCP_STATE_URL, which is not set: "
                          "without it, sign-ins live in the server process's own memory, which no other process "
                          "can see (restarting that server signs everyone out)")
    options = login_module("login_forms").sign_in_options(env, True, decrypts=False)
    sign_ins = login_module().SignIns(ServerState.from_config(config), options, "http://localhost")
    try:
        if args.action == "revoke":  # as list shows them, or as they are
            person = next((person["person"] for person in sign_ins.signed_in_people()
                           if args.person in (person["person"], unreordered(person["person"]))), None)
            if person is None:
                print(f"No one is signed in as {unreordered(args.person)}; 'mediawiki-mcp sign-in list' names who "
                      "is.", file=out)
                return 1
            sign_ins.sign_out_person(person)
            print(f"Signed out {unreordered(person)}: every token of theirs is revoked; their MCP client asks them "
                  "to sign in again.", file=out)
            return 0
        people = sign_ins.signed_in_people()
    except WikiError as error:  # the store cannot be reached
        print(f"mediawiki-mcp: {error.message}", file=sys.stderr)
        return 1
    if not people:
        print("No one is signed in.", file=out)
    rows = [("PERSON", "WIKI", "ACCOUNT", "SIGNED IN", "LIVE TOKENS")] + [
        (unreordered(p["person"]), p["wiki"], unreordered(p["account"] or "-"), datetime.datetime.fromtimestamp(
            p["since"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if p["since"] else "-",
         str(p["tokens"])) for p in people]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows if people else ():
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip(), file=out)
    return 0


def unreordered(text: str) -> str:
    """A name a person chose as a terminal should show it (sign-in list): with any control or bidi
    character escaped (U+202E as \\u202e, as logged() does), which MediaWiki keeps in user names or
    strips only as it logs in, so that no name reorders the table."""
    return text if text.isprintable() else repr(text)[1:-1]


def check_wikis(config: Config, out: typing.TextIO, http: HttpOptions | None = None) -> int:
    """--check: connects to each wiki and prints its name, MediaWiki version, the account
    the server acts as and the tools it can use there (the account's rights, the upload
    directories), and with MCP_AUTH=login (``http.sign_in``) how people sign in. Returns the
    exit status."""
    state = ServerState.from_config(config)
    offered = offered_tools(state)
    failures = 0
    for key, wiki, client in state.entries():
        try:
            site, account = client.site, client.account
            tools = [spec.name for spec in offered if spec.scoped and (spec.read_only or not wiki.read_only)
                     and (not spec.needs_extension or spec.needs_extension.lower() in client.extensions)
                     and all(account.can(right) for right in spec.rights)
                     and (config.upload_dirs or not spec.needs_upload_dirs)]
        except WikiError as error:
            failures += 1
            print(f"{key}: FAILED: {error}", file=out)
            continue
        identity = ("anonymous" if account.anonymous else account.name
                    + (f" (bot password {client.username})" if client.username else " (OAuth token)"))
        unusable = [] if wiki.read_only else tags_not_applicable(client, wiki.tags)
        failures += bool(unusable)
        writes = ("read-only" if wiki.read_only else f"read; every write FAILS: the wiki does not let the "
                  f"configured change tag{'s' * (len(unusable) > 1)} {', '.join(unusable)} be applied "
                  "(Special:Tags defines them)" if unusable else "read and write")
        print(f"{key}{' (default)' if key == config.default_wiki else ''}: {site.name}, {site.generator}, "
              f"as {identity}, {writes}\n"
              f"  API: {client.api_url}\n  Tools: {', '.join(tools)}", file=out)
    unscoped = [spec.name for spec in offered if not spec.scoped]
    if unscoped:
        print(f"Server tools: {', '.join(unscoped)}", file=out)
    store, store_down = state.reads.store, store_problem_at_start(state.reads.store)
    if store.name != MemoryStore.name:
        print(f"State store: {store.name}, " + (f"FAILED: it cannot be reached ({store_down}), so every write "
                                                "is refused" if store_down else "reached"), file=out)
    if http is not None and http.sign_in:
        keys = len(http.sign_in.keys)
        print(f"Sign-in: MCP_AUTH=login, public URL {http.public_url}"
              + ("" if http.sign_in.public_url else " (the address listened on: MCP_PUBLIC_URL is not set)")
              + f", {keys} key{'s' * (keys > 1)} in MCP_AUTH_SECRET", file=out)
    chosen = (f"from {config.toolsets_from}" if config.toolsets_from else
              "by default (MCP_TOOLSETS, or toolsets in a configuration file, chooses others)")
    print(f"Toolsets: {', '.join(t for t in TOOLSETS if t in config.toolsets)} (of {', '.join(TOOLSETS)}), "
          f"{chosen}", file=out)
    if failures:
        print(f"{failures} of {len(config.wikis)} wikis failed the check.", file=out)
    return 1 if failures or store_down else 0


def tags_not_applicable(client: MediaWikiClient, tags: Sequence[str]) -> list[str]:
    """Those of ``tags`` that no write could carry: not defined on the wiki by hand, or not active
    (MediaWiki's own tags, such as mw-undo, it applies itself)."""
    if not tags:
        return []
    listed = client.get({"action": "query", "list": "tags", "tgprop": "defined|active", "tglimit": "max"})
    usable = {t.get("name") for t in listed.get("query", {}).get("tags") or []
              if t.get("defined") and t.get("active")}
    return [tag for tag in tags if tag not in usable]


#: Libraries whose DEBUG lines hold what a page says, kept at INFO even at DEBUG: sse-starlette logs each
#: event it sends (a tool's answer, page text and all), urllib3 each request's URL (a read's parameters,
#: such as wikitext to render or compare).
TEXT_LOGGERS = ("sse_starlette", "urllib3")


def main(argv: list[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)
    env = {name: value for name, value in os.environ.items() if value.strip() or not args.empty_means_unset}
    try:
        logging.basicConfig(level=setting(env, "MEDIAWIKI_MCP_LOG_LEVEL"), stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        for name in TEXT_LOGGERS:
            logging.getLogger(name).setLevel(max(logging.getLogger().level, logging.INFO))
        config = Config.from_env(env, config_path=args.config)
        config = dataclasses.replace(config, upload_dirs=tuple(dict.fromkeys(
            config.upload_dirs + upload_directories(args.upload_dirs, "--upload-dirs"))))
        if args.command == "sign-in":
            return sign_in_command(args, config, env, sys.stdout)
        http = http_options(args, env, config)
        state = ServerState.from_config(config, stateless=http is not None and http.stateless)
        problem = store_problem_at_start(state.reads.store)
    except ConfigError as error:
        print(f"mediawiki-mcp: {error}", file=sys.stderr)
        return 2
    if args.check:
        try:
            signing_in = http if http is not None and http.sign_in else sign_in_to_check(args, env, config)
        except ConfigError as error:
            print(f"mediawiki-mcp: {error}", file=sys.stderr)
            return 2
        return check_wikis(config, sys.stdout, signing_in)
    store = state.reads.store
    if store.name != MemoryStore.name:
        down = f", which cannot be reached now ({problem}): writes are refused until it is" if problem else ""
        log.log(logging.WARNING if problem else logging.INFO, "Idempotency keys and reads are shared through %s%s",
                store.name, down)
    server = create_server(state=state)
    if http is not None:
        blank = [name for name, value in os.environ.items() if name in SETTINGS and not value.strip()]
        return serve_http(server, http, blank if args.empty_means_unset else ())
    import anyio
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(serve_stdio, server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

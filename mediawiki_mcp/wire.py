"""One request on the wire: the requests session made lazily, the User-Agent, parameters encoded, an
answer decoded and its error code read, and the call in flight a write marks."""
from __future__ import annotations

import base64
import contextvars
import dataclasses
import functools
import logging
import re
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import upstream_failure

if TYPE_CHECKING:
    import requests


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

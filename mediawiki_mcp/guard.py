"""The address guard: a URL a model gives (add-wiki, uploads from a URL) reaches no private or
loopback address, at every redirect; and finding a wiki's API from its address."""
from __future__ import annotations

import dataclasses
import functools
import html
import html.parser
import ipaddress
import re
import socket
import urllib.parse
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .errors import NEXT_STEP, RETRY_LATER, WikiError, invalid_input, not_found, permission_denied, upstream_failure
from .wire import DEFAULT_PORTS, _requests, host_of, send_once, user_agent, without_userinfo

if TYPE_CHECKING:
    import requests

    from .client import MediaWikiClient


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

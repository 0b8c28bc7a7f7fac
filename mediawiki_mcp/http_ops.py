"""What an operator watches over HTTP: the health check, /metrics, and the cap on each person's
sessions."""
from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import ipaddress
import secrets
import time
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .calls import on_own_thread
from .client import MediaWikiClient, RetryPolicy
from .errors import WikiError
from .identity import PERSON_SCOPE, bearer_token, token_digest
from .state import ServerState
from .store import MemoryStore
from .wire import log, logged

if TYPE_CHECKING:
    from .server import WikiServer


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

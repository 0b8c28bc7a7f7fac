"""The Streamable HTTP transport: its options, the bearer tokens or sign-in in front of /mcp,
and uvicorn run with a graceful shutdown."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import ipaddress
import logging
import os
import signal
import socket
import sys
import urllib.parse
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from .config import Config
from .http_ops import LOOPBACK_HOSTS, HealthCheck, Metrics, PersonSessions, bearer_matches, header_allowed
from .identity import PERSON_SCOPE, TokenTable, bearer_token, token_table
from .settings import (
    DEFAULT_HEADER_TIMEOUT_SECONDS,
    DEFAULT_HTTP_HOST,
    DEFAULT_HTTP_PORT,
    DEFAULT_SESSIONS_PER_PERSON,
    DEFAULT_WIKI_URL,
    SHUTDOWN_GRACE_SECONDS,
    ConfigError,
    optional_module,
    setting,
    valid_host,
)
from .state import ServerState
from .wire import log

if TYPE_CHECKING:
    from .server import WikiServer


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

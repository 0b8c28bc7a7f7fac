"""ServerState: the live state one server holds (configuration, clients, stores, people), made once
by create_server and shared by every call."""
from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .calls import IdempotencyStore, ToolCalls
from .client import MediaWikiClient
from .config import Config, WikiConfig
from .errors import conflict, invalid_input
from .guard import AddressGuard, resolve_addresses
from .identity import People
from .ledger import ReadLedger
from .registry import REGISTRY, SHARED_PARAMS, Registry, check_value
from .store import open_state_store

if TYPE_CHECKING:
    from .http_ops import Metrics


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

"""The state store: what replicas share (MCP_STATE_URL) or this process keeps, behind one small
interface that the Redis module implements too."""
from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time
import typing
from collections.abc import Callable, Iterator
from typing import Any

from .errors import RETRY_LATER, WikiError, upstream_failure
from .settings import ConfigError, optional_module, shown_address
from .wire import log

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

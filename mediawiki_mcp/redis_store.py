"""The state store of mediawiki-mcp in Valkey or Redis (MCP_STATE_URL), shared by replicas.

Only ``pip install 'mediawiki-mcp[redis]'`` users need this module; the server runs
without it when MCP_STATE_URL is unset. What a failure to reach the store turns into is given to
RedisStore by store.open_state_store.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import redis

from .errors import WikiError
from .ledger import Base, LedgerIndex, PageRead
from .store import STORE_DOWN
from .wire import log

if TYPE_CHECKING:
    from .store import StateKey


#: A claim on an idempotency key lapses this long after the replica running its call stops
#: renewing it (it renews it every third of this), so a replica that dies mid-write is known to
#: have died within this time.
LEASE_SECONDS = 15.0


#: Seconds to connect to the store and to wait for each of its answers.
TIMEOUT_SECONDS = 2.0


#: What was noted while the store could not be reached is written again this often.
STATE_RETRY_SECONDS = 1.0


def read_from_wire(text: str) -> PageRead:
    revid, ranges, total, order, ends, _, *starts = json.loads(text)
    if isinstance(ranges, int):  # as kept before byte ranges were: read without a gap up to there
        ranges = [(0, ranges)] if ranges else []
    return PageRead(revid, [(a, b) for a, b in ranges], total, order, {int(n): end for n, end in ends},
                    {int(n): start for n, start in (starts[0] if starts else [])})


def read_to_wire(read: PageRead) -> str:
    # [0, 0]: where earlier versions, which replicas may still run, keep the last read's bytes
    return json.dumps([read.revid, read.ranges, read.total, read.order, list(read.section_ends.items()),
                       [0, 0], list(read.section_starts.items())])


def json_tuples(value: Any) -> Any:
    return tuple(map(json_tuples, value)) if isinstance(value, list) else value


#: The read ledger's kinds of entries, as they are written in the store (the text of others is
#: kept as it is): from it, and to it. Replicas of other versions read and write them too.
LEDGER_WIRE: dict[str, tuple[Callable[[str], Any], Callable[[Any], str]]] = {
    "read": (read_from_wire, read_to_wire),
    **dict.fromkeys(("base", "outline"), (lambda text: Base(*json.loads(text)), lambda base: json.dumps(
        [base.revid, base.order, base.whole, *([True] if base.shown else [])]))),
    **dict.fromkeys(("cut", "preview", "rendered"), (lambda text: json_tuples(json.loads(text)), json.dumps)),
    "ledger": (lambda text: LedgerIndex(**json.loads(text)), lambda index: json.dumps(dataclasses.asdict(index))),
}


def from_wire(kind: str, text: str | None) -> Any:
    return LEDGER_WIRE[kind][0](text) if text is not None and kind in LEDGER_WIRE else text


def to_wire(kind: str, value: Any) -> Any:
    return LEDGER_WIRE[kind][1](value) if kind in LEDGER_WIRE else value


class RedisStore:
    """The state the write tools keep (mediawiki_mcp.StateStore), shared by every replica: keys
    ``mediawiki-mcp:{wiki}:kind:name``, each expiring as in memory. A claim holds a lease that this
    process renews while the call runs, so another replica can tell a call still running from one
    whose replica died. A failure to reach the store raises ``unreachable(error)``, before anything
    was written; what the read ledger notes meanwhile is kept here and written once it is back."""
    # A claim and its lease are set, and let go, together, so that no replica sees one without the
    # other, and only the replica holding the lease lets go of them. redis-py's Lock covers the
    # lease alone: the entry beside it would take a second round trip, and a replica looking in
    # between would take a running call for one whose replica died.
    CLAIM = ("if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
             "redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4]) return 1 end return 0")
    RELEASE = ("if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) "
               "if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end end return 0")
    RENEW = ("if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end "
             "return 0")
    # GETDEL, as a script: Redis has the command from 6.2 only, and 6.0 is still many systems' own
    TAKE = "local value = redis.call('GET', KEYS[1]) if value then redis.call('DEL', KEYS[1]) end return value"

    def __init__(self, url: str, name: str, unreachable: Callable[[Exception], Exception]) -> None:
        self.name, self.unreachable = name, unreachable
        self.client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=TIMEOUT_SECONDS,
                                           socket_connect_timeout=TIMEOUT_SECONDS)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._claim, self._release, self._renew, self._take = (self.client.register_script(s) for s in
                                                               (self.CLAIM, self.RELEASE, self.RENEW, self.TAKE))
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self.errors = 0  # requests that could not reach the store (/metrics); counted under _lock
        self._renewer: threading.Thread | None = None
        self._down = False  # an outage is logged once as it starts, and once as it ends
        self._pending: collections.deque[Callable[[], None]] = collections.deque()
        self._pending_lock = threading.RLock()
        self._flusher: threading.Thread | None = None

    def key(self, key: StateKey) -> str:
        wiki, kind, name = key
        return f"mediawiki-mcp:{{{wiki}}}:{kind}:{name}"

    def lease(self, key: StateKey) -> str:
        return self.key((key[0], f"{key[1]}-lease", key[2]))

    @contextlib.contextmanager
    def reaching(self) -> Iterator[None]:
        try:
            yield
        except redis.RedisError as error:
            with self._lock:
                self.errors += 1
            self._note(error)
            raise self.unreachable(error) from None
        self._note(None)

    def _note(self, error: redis.RedisError | None) -> None:
        """Logs a change between reaching the store and not: a WARNING as an outage starts, with
        the error, and an INFO as it ends, not a line per request in between."""
        with self._lock:
            if self._down == (error is not None):
                return
            self._down = error is not None
        if error is not None:  # a ResponseError is the store's own answer: it was reached
            log.warning("state store %s %s: %s", self.name,
                        "refuses" if isinstance(error, redis.ResponseError) else "cannot be reached", error)
        else:
            log.info("state store %s is reached again", self.name)

    def get(self, key: StateKey) -> Any:
        self._flush()
        with self.reaching():
            return from_wire(key[1], cast("str | None", self.client.get(self.key(key))))

    def put(self, key: StateKey, value: str, ttl: float) -> None:
        with self.reaching():
            self.client.set(self.key(key), value, px=int(ttl * 1000))

    def update(self, key: StateKey, change: Callable[[Any], Any], ttl: float) -> None:
        name = self.key(key)

        def attempt(pipe: Any) -> None:  # run again by redis-py if the key changes meanwhile
            new = change(from_wire(key[1], pipe.get(name)))
            if new is not None:
                pipe.multi()
                pipe.set(name, to_wire(key[1], new), px=int(ttl * 1000))
        with self.reaching():
            self.client.transaction(attempt, name)

    def claim(self, key: StateKey, value: str, ttl: float) -> bool:
        lease = self.lease(key)
        with self.reaching():
            if not self._claim(keys=[self.key(key), lease],
                               args=[value, int(ttl * 1000), self.owner, int(LEASE_SECONDS * 1000)]):
                return False
        with self._lock:
            self._held.add(lease)
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew_leases, name="mediawiki-mcp leases",
                                                 daemon=True)
                self._renewer.start()
        return True

    def held(self, key: StateKey) -> bool:
        with self.reaching():
            return bool(self.client.exists(self.lease(key)))

    def release(self, key: StateKey, forget: bool) -> None:
        lease = self.lease(key)
        with self._lock:
            self._held.discard(lease)
        with self.reaching():
            self._release(keys=[self.key(key), lease], args=[self.owner, "1" if forget else "0"])

    def forget(self, key: StateKey) -> None:
        with self.reaching():
            self.client.delete(self.key(key))

    def entries(self, wiki: str, kind: str) -> Iterator[tuple[str, str]]:
        prefix = self.key((wiki, kind, ""))
        with self.reaching():
            for name in self.client.scan_iter(match=re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*", count=500):
                value = self.client.get(name)
                if value is not None:  # expired meanwhile
                    yield name[len(prefix):], str(value)

    def take(self, key: StateKey) -> str | None:
        with self.reaching():
            return cast("str | None", self._take(keys=[self.key(key)]))

    def next_order(self) -> int:
        with self.reaching():
            return int(cast(int, self.client.incr("mediawiki-mcp:order")))

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)  # another replica's write wakes nobody here

    def require(self) -> None:
        with self.reaching():
            self.client.ping()

    def problem(self) -> str | None:
        try:
            self.client.ping()
        except redis.ResponseError as error:  # reached, but refusing: what it said helps, not the name
            self._note(error)
            return f"{type(error).__name__}: {error}"
        except redis.RedisError as error:
            self._note(error)
            return type(error).__name__
        self._note(None)
        return None

    def when_reached(self, write: Callable[[], None]) -> bool:
        try:
            self._flush()
            write()
        except WikiError as error:
            if error.code != STORE_DOWN:
                raise
            log.warning("a read or save was not recorded in the state store %s yet", self.name)
            with self._pending_lock:
                self._pending.append(write)
                if self._flusher is None:
                    self._flusher = threading.Thread(target=self._flush_when_back, daemon=True,
                                                     name="mediawiki-mcp ledger")
                    self._flusher.start()
            return False
        return True

    def _flush(self) -> None:
        """Writes what was noted while the store could not be reached; raises while it still cannot."""
        with self._pending_lock:
            while self._pending:
                self._pending[0]()
                self._pending.popleft()

    def _flush_when_back(self) -> None:
        while True:
            time.sleep(STATE_RETRY_SECONDS)
            with self._pending_lock:
                try:
                    self._flush()
                except WikiError as error:
                    if error.code != STORE_DOWN:
                        log.exception("reads noted during an outage of the state store are lost")
                        self._pending.clear()
                    continue
                self._flusher = None
                log.info("state store %s is back: the reads noted meanwhile are recorded", self.name)
                return

    def _renew_leases(self) -> None:
        while True:
            time.sleep(LEASE_SECONDS / 3)
            with self._lock:
                held = list(self._held)
            for lease in held:
                try:
                    self._renew(keys=[lease], args=[self.owner, int(LEASE_SECONDS * 1000)])
                except redis.RedisError as error:
                    log.warning("state store %s: cannot renew a claim: %s", self.name, error)

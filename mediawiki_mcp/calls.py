"""Tool calls in flight and idempotency keys: a retried write is answered once, and a call still
running is waited for, not repeated."""
from __future__ import annotations

import collections
import concurrent.futures
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from .client import MAX_CALLS_PER_WIKI
from .errors import conflict, upstream_failure
from .ledger import client_entry
from .store import MemoryStore, StateStore, unless_store_down
from .wire import RUNNING_CALL, RunningCall, log

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

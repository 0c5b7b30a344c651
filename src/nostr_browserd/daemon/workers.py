"""This daemon as one of several workers that share an identity and a state store.

Every worker reads every relay, so every worker opens every command.  The claim (one statement
in the store) decides which worker runs it; the controller's lease decides which worker may
claim it, so that one controller's commands run in order, in one browser context:

- After a message is authenticated and before it is claimed, :meth:`Worker.admit` asks whether
  this worker holds, or may take, the sender's lease.  A message for a controller leased to
  another worker is kept aside, unclaimed, in arrival order; it is dropped once the other
  worker has claimed it, and claimed here when the lease comes free (released, or expired
  because its worker died), to be run or, if the other worker had it, dropped as a replay.
- Free controllers go to their preferred worker: rendezvous hashing over the live workers that
  are not draining, so each worker gets a fair share and a new worker takes only its own share.
  Any worker takes a controller whose message has waited :data:`GRACE` seconds (its preferred
  worker does not see it).  A controller idle for a lease period is handed to its preferred
  worker when that is another one, so a worker that joins later gets its share too.
- A heartbeat every third of the lease renews this worker's row and every lease it holds; a
  lease it finds taken by another worker (it was paused) is dropped, and its commands are
  fenced by the store (``start_held``, ``answering``).  When a worker dies, its leases expire
  and another worker takes its controllers, answers what the dead one held (``INTERRUPTED``
  when it was running, not run when queued), and serves what arrived meanwhile, in order.
- A controller's login state (Playwright's storage_state) is saved in the store after every
  command that may change it and at drain; a worker that takes the controller over creates its
  browser context from it (``BrowserPool.initial_state``).
- SIGTERM drains: nothing new is admitted, what was claimed runs to its reply, the sessions are
  saved, the leases released at once (others take over without waiting) and the worker is
  marked gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..browser.pool import BrowserPool
from ..dm.messages import Incoming
from ..errors import BrowserdError
from ..supervise import supervise
from .store import Store

if TYPE_CHECKING:
    from .dispatch import Dispatcher

log = logging.getLogger(__name__)

SESSION_STATE = ".session"
"""The saved-state name of a controller's own session: outside the names ``state_save``
accepts, so a controller can neither overwrite nor list it."""
GRACE = 2.0
"""Seconds a message waits for its controller's preferred worker before any worker takes it."""
ASIDE_TICK = 0.25
"""Seconds between two looks at the messages kept aside."""
STATE_TIMEOUT = 2.0
"""Seconds a controller's login state may take to read after a command before it is skipped."""
LIVE_FRESH = 1.0
"""Seconds the list of live workers is trusted before a free controller is placed by it."""

Proceed = Callable[[Incoming], Awaitable[None]]


def preferred(controller: str, workers: Sequence[str]) -> str | None:
    """The worker ``controller`` goes to when free: the highest hash of (worker, controller).

    Rendezvous hashing: each worker gets an even share, and a worker joining or leaving moves
    only the controllers that prefer it.
    """

    def score(worker: str) -> bytes:
        return hashlib.sha256(f"{worker}\n{controller}".encode()).digest()

    return max(workers, key=score, default=None)


class Worker:
    """This process's worker row, its leases, its heartbeat and the messages kept aside."""

    def __init__(
        self,
        store: Store,
        name: str,
        lease: float,
        *,
        dispatcher: Dispatcher,
        browser: BrowserPool,
    ) -> None:
        self.store, self.name, self.lease = store, name, lease
        self.dispatcher, self.browser = dispatcher, browser
        self.instance = secrets.token_hex(8)  # this process, among those that used the name
        self.held: set[str] = set()
        self.live: list[str] = [name]
        self._live_at = -math.inf  # when ``live`` was read
        self.draining = False
        self.aside: dict[str, deque[tuple[Incoming, Proceed]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._used: dict[str, float] = {}  # when a controller's last message was admitted
        self._renewed: dict[str, float] = {}  # when its lease was last asked for and granted
        self._orphaned: dict[str, float] = {}  # when its dead worker's commands were found
        self._saved: dict[str, str] = {}  # the digest of each controller's last saved state
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Register (taking the name back from a killed process at once) and start beating."""
        await self.store.worker_up(self.name, self.instance)
        await self._refresh_live()
        # Supervised: a heartbeat that died would let every lease here expire, and a dead
        # watcher would strand the messages kept aside.
        self._tasks = [
            supervise(f"worker {self.name} heartbeat", self._beat),
            supervise(f"worker {self.name} kept-aside watcher", self._watch_aside),
        ]
        log.info("worker %s: controllers leased for %g s", self.name, self.lease)

    async def drain(self) -> None:
        """Admit nothing more; other workers stop preferring this one (SIGTERM, first step)."""
        self.draining = True
        self.aside.clear()
        with contextlib.suppress(BrowserdError):
            await self.store.set_draining(self.name)

    async def leave(self) -> None:
        """After the claimed commands ran: save every session, release every lease, go."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for controller in sorted(self.held):
            await self.keep_state(controller)
        try:
            await self.store.release_leases(self.name)
            await self.store.worker_gone(self.name, self.instance)
        except BrowserdError as exc:
            log.error("%s (the leases expire by themselves)", exc.message)
        log.info("worker %s: released %d controller(s)", self.name, len(self.held))
        self.held.clear()

    # --- admission: before the claim ---------------------------------------------------

    async def admit(self, incoming: Incoming, proceed: Proceed) -> bool:
        """Whether this worker claims ``incoming`` now.

        False when it is another worker's: an ``approve`` for a code another worker holds is
        left to it; a command for a controller leased elsewhere is kept aside, and once the
        lease is this worker's ``proceed(incoming)`` claims and submits it.
        """
        if self.draining:
            return False
        code = self.dispatcher.approval_code(incoming.content)
        if code is not None:
            return await self._holds_code(code)
        controller = incoming.sender
        if incoming.refusal is not None or controller not in self.dispatcher.controllers:
            return True  # answered at once, by whichever worker claims it
        waiting = self.aside.get(controller)
        if waiting:  # behind those already kept aside: in order
            waiting.append((incoming, proceed))
            return False
        try:
            if await self._lease(controller, waited=0.0):
                return True
        except BrowserdError as exc:  # the claim cannot be written either: it says so
            log.error("%s", exc.message)
            return True
        self.aside[controller] = deque([(incoming, proceed)])
        self._wake.set()
        return False

    async def _holds_code(self, code: str) -> bool:
        """An approval goes to the worker whose command waits for it (the store's approval
        table says which); a code nobody holds is answered by whichever worker claims it."""
        if self.dispatcher.holds_code(code):
            return True
        try:
            holder = await self.store.approval_holder(code)
        except BrowserdError as exc:  # the claim cannot be written either: it says so
            log.error("%s", exc.message)
            return True
        return holder is None or holder == self.name

    async def _may_take(self, controller: str, waited: float) -> bool:
        if controller in self.held or waited >= GRACE:
            return True
        if time.monotonic() - self._live_at > LIVE_FRESH:
            await self._refresh_live()
        return preferred(controller, self.live) in (self.name, None)

    async def _refresh_live(self) -> None:
        """Read the live workers that take new controllers (this one, unless draining)."""
        live = await self.store.live_workers(self.lease)
        if not self.draining and self.name not in live:
            live = sorted([*live, self.name])
        self.live, self._live_at = live, time.monotonic()

    async def _lease(self, controller: str, waited: float) -> bool:
        """Take or renew ``controller``'s lease; on taking it, answer what others left."""
        lock = self._locks.setdefault(controller, asyncio.Lock())
        async with lock:
            if self._fresh(controller):
                self._used[controller] = time.monotonic()
                return True
            if not await self._may_take(controller, waited):
                return False
            asked = time.monotonic()
            if not await self.store.take_lease(controller, self.name, self.lease):
                self.held.discard(controller)
                return False
            self._used[controller] = self._renewed[controller] = asked
            if controller not in self.held:
                self.held.add(controller)
                self._orphaned.pop(controller, None)
                adopted = await self.store.adopt_held(controller, self.name)
                if adopted:
                    log.warning(
                        "took over %s with %d unanswered command(s) of another worker",
                        controller[:12],
                        len(adopted),
                    )
                    await self.dispatcher.answer_held(adopted)
            return True

    def _fresh(self, controller: str) -> bool:
        """Whether ``controller``'s lease is surely still this worker's without asking: held,
        and granted less than a third of the lease ago (asked before the statement ran, so the
        database's expiry is later still).  This spares a write for every command."""
        granted = self._renewed.get(controller, -math.inf)
        return controller in self.held and time.monotonic() - granted < self.lease / 3

    async def renew(self, controller: str) -> bool:
        """Renew ``controller``'s lease before a command runs (it lapsed during a pause);
        False when another worker holds it now."""
        return await self._lease(controller, waited=GRACE)

    async def _watch_aside(self) -> None:
        """Drop what the lease holder claimed; claim the rest here once the lease is free."""
        while True:
            if not self.aside:
                await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(ASIDE_TICK)
            try:
                await self._look_aside()
            except BrowserdError as exc:
                log.error("%s", exc.message)

    async def _look_aside(self) -> None:
        ids = [incoming.outer_id for kept in self.aside.values() for incoming, _ in kept]
        claimed = await self.store.known(ids)
        for controller in list(self.aside):
            kept = deque(e for e in self.aside[controller] if e[0].outer_id not in claimed)
            if not kept:
                del self.aside[controller]
                continue
            self.aside[controller] = kept
            waited = time.monotonic() - kept[0][0].received
            if not await self._lease(controller, waited):
                continue
            while kept:  # what arrives meanwhile is appended here: in order
                incoming, proceed = kept.popleft()
                try:
                    await proceed(incoming)
                except Exception:  # one message must never stop the others
                    log.exception("could not take %s", incoming.event_id[:12])
            if self.aside.get(controller) is kept:
                del self.aside[controller]

    # --- heartbeat ---------------------------------------------------------------------

    async def _beat(self) -> None:
        while True:
            try:
                await self.beat()
            except BrowserdError as exc:
                log.error("%s", exc.message)
            await asyncio.sleep(self.lease / 3)

    async def beat(self) -> None:
        """Record the load, renew the leases, hand idle controllers to their preferred worker
        and take over the controllers of workers that died."""
        status = self.dispatcher.status()
        mine = await self.store.heartbeat(
            self.name,
            self.instance,
            running=len(status["running"]),
            queued=sum(status["queued"].values()),
            contexts=len(self.browser.sessions()),
        )
        if not mine:
            log.error(
                "another process took the worker name %s: give each worker its own"
                " ([state] worker)",
                self.name,
            )
        await self._refresh_live()
        asked = time.monotonic()
        kept = await self.store.renew_leases(self.name, self.lease)
        self._renewed.update(dict.fromkeys(kept, asked))
        for controller in sorted(self.held - kept):
            log.warning("lost the lease of %s to another worker: stopped serving it", controller)
            self.held.discard(controller)
            await self.browser.release(controller)
        await self._hand_over_idle()
        await self._adopt_orphans()

    async def _hand_over_idle(self) -> None:
        now = time.monotonic()
        for controller in sorted(self.held):
            if preferred(controller, self.live) in (self.name, None):
                continue
            if now - self._used.get(controller, 0.0) < self.lease:
                continue
            async with self._locks.setdefault(controller, asyncio.Lock()):
                if not self.dispatcher.idle(controller):
                    continue
                await self.keep_state(controller)
                await self.store.release_lease(controller, self.name)
                self.held.discard(controller)
            await self.browser.release(controller)
            log.info(
                "handed idle %s to worker %s", controller[:12], preferred(controller, self.live)
            )

    async def _adopt_orphans(self) -> None:
        now = time.monotonic()
        for controller in await self.store.orphans(self.name):
            found = self._orphaned.setdefault(controller, now)
            await self._lease(controller, waited=now - found)

    # --- the controller's login state --------------------------------------------------

    async def keep_state(self, controller: str) -> None:
        """Save ``controller``'s cookies and storage in the store when they changed, while
        the lease is still this worker's (one that lost it must not overwrite the new one's).

        Only while another worker is live, which could take the controller over: a lone
        daemon pays nothing and, as before, starts its contexts afresh.  Reading the state
        evaluates in the pages, which a page in a busy loop never lets finish: it is bounded
        by :data:`STATE_TIMEOUT`, and such a session keeps its last saved state.
        """
        session = self.browser.existing(controller)
        if session is None or session.context is None or not self._others_live():
            return
        try:
            async with asyncio.timeout(STATE_TIMEOUT):
                state = dict(await session.context.storage_state())
        except Exception:  # a closed, crashed or busy context: nothing to save now
            return
        digest = _digest(state)
        if self._saved.get(controller) == digest:
            return
        try:
            if await self.store.take_lease(controller, self.name, self.lease):
                await self.store.save_state(controller, SESSION_STATE, state)
                self._saved[controller] = digest
        except BrowserdError as exc:
            log.error("%s", exc.message)

    def _others_live(self) -> bool:
        return any(name != self.name for name in self.live)

    async def initial_state(self, owner: str) -> dict[str, Any] | None:
        """What a new browser context of ``owner`` starts with: its last saved session."""
        if owner not in self.dispatcher.controllers:
            return None
        try:
            state = await self.store.load_state(owner, SESSION_STATE)
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return None
        if state is not None:
            self._saved[owner] = _digest(state)
        return state

    # --- status ------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """The workers, their load and the leases, as the store has them."""
        workers = [w.to_dict() for w in await self.store.workers()]
        leases = [lease.to_dict() for lease in await self.store.leases()]
        return {
            "worker": self.name,
            "live": self.live,  # as this worker last read it: where it places free controllers
            "workers": workers,
            "leases": leases,
            "kept_aside": sum(len(kept) for kept in self.aside.values()),
        }


def _digest(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


__all__ = ["GRACE", "SESSION_STATE", "Worker", "preferred"]

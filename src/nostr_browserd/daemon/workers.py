"""This daemon as one of several workers that share an identity and a state store: the I/O
shell around the lease decisions of ``daemon/placement.py`` (store calls, the heartbeat, the
kept-aside watcher, drain).

Every worker reads every relay, so every worker opens every gift wrap, whose first
decryption names its sender; only the worker where that sender's commands may run opens the
seal inside (:meth:`Worker.opens`), and the others keep the wrap aside, sealed.  The claim
(one statement in the store) decides which worker runs it; the controller's lease decides
which worker may claim it, so that one controller's commands run in order, in one browser
context, on one worker at a time:

- A worker takes its name only from a process that is gone, silent for a lease, or dead on
  this host (``_take_name``): two live processes under one name would share its leases.
- After a message is authenticated and before it is claimed, :meth:`Worker.admit` asks whether
  this worker holds, or may take, the sender's lease.  A message for a controller leased to
  another worker (or whose lease the store cannot be asked about, or whose claim could not be
  written, while another worker is live) is kept aside, unclaimed, in arrival order; it is
  dropped once another worker has claimed it, and claimed here when the lease comes free
  (released, or expired because its worker died), to be run or, if the other worker had it,
  dropped as a replay.
- Free controllers go to their preferred worker (``placement.py``); a held one stays here while
  this worker lives.
- A heartbeat every third of the lease renews this worker's row and every lease it holds; a
  lease it finds taken by another worker (it was paused) is dropped, and its commands are
  fenced by the store (``start_held``, ``answering``).  When a worker dies, its leases expire
  and another worker takes its controllers, answers what the dead one held (``INTERRUPTED``
  when it was running, not run when queued), and serves what arrived meanwhile, in order.
- A controller's login state and pages follow it (``daemon/session_state.py``): reopened
  here before its first command after it moved (:meth:`Worker.follow`).
- SIGTERM drains: nothing new is admitted, what was claimed runs to its reply, the sessions are
  saved, the leases released at once (others take over without waiting) and the worker is
  marked gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import secrets
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..browser.pool import BrowserPool
from ..dm.messages import Incoming
from ..errors import BrowserdError
from ..supervise import supervise
from .approvals import approval_code
from .placement import Placement
from .session_state import SessionKeeper
from .store import Store

if TYPE_CHECKING:
    from .dispatch import Dispatcher

log = logging.getLogger(__name__)

ASIDE_TICK = 0.25
"""Seconds between two looks at the messages kept aside."""

SEALED_ASIDE = 1_000
"""Messages kept aside, beyond which every seal is opened here again: a flood of forged seals
that name a controller would otherwise wait here, sealed, until its worker rejected them."""

Proceed = Callable[[Incoming], Awaitable[None]]


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
        # this process, among those that used the name: its host and pid say when it is dead
        self.instance = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
        self.placement = Placement(name, lease)
        self.sessions = SessionKeeper(
            store,
            browser,
            allowed=lambda key: key in dispatcher.controllers,
            confirm=self._still_mine,
            others_live=self.placement.others_live,
        )
        self.aside: dict[str, deque[tuple[Incoming, Proceed]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._orphaned: dict[str, float] = {}  # when its dead worker's commands were found
        self._arrived: dict[str, dict[str, Any]] = {}  # pages to reopen before a command
        self._wake = asyncio.Event()
        self._asked_aside = -math.inf  # when the store was last asked about the kept aside
        self.aside_asked = 0  # how many times
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def held(self) -> set[str]:
        """The controllers this worker serves now."""
        return set(self.placement.held)

    @property
    def live(self) -> list[str]:
        """The live workers, as this worker last read them: where it places free controllers."""
        return self.placement.live

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Take the worker name (waiting while a live process has it), start beating."""
        await self._take_name()
        await self._refresh_live()
        # Supervised: a heartbeat that died would let every lease here expire, and a dead
        # watcher would strand the messages kept aside.
        self._tasks = [
            supervise(f"worker {self.name} heartbeat", self._beat),
            supervise(f"worker {self.name} kept-aside watcher", self._watch_aside),
        ]
        log.info("worker %s: controllers leased for %g s", self.name, self.lease)

    async def _take_name(self) -> None:
        """Wait until no live process has this worker's name, and take it: two processes
        under one name would both take that name's leases, and serve the same controllers in
        two browsers.  A process of the name that died on this host gives it up at once."""
        told = False
        while True:
            holder = await self.store.worker_instance(self.name)
            dead = holder if holder is not None and _died_here(holder) else ""
            if await self.store.worker_up(
                self.name, self.instance, silent_for=self.lease, dead=dead
            ):
                return
            if not told:
                log.error(
                    "the worker name %s is used by a live process: waiting until it stops or"
                    " is silent for %g s; give each worker its own ([state] worker)",
                    self.name,
                    self.lease,
                )
                told = True
            await asyncio.sleep(self.lease / 3)

    async def drain(self) -> None:
        """Admit nothing more; other workers stop preferring this one (SIGTERM, first step)."""
        self.placement.draining = True
        self.aside.clear()
        with contextlib.suppress(BrowserdError):
            await self.store.set_draining(self.name)

    async def leave(self) -> None:
        """After the claimed commands ran: save every session, release every lease, go."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        held = sorted(self.placement.held)
        for controller in held:
            await self.keep_state(controller)
        try:
            await self.store.release_leases(self.name)
            await self.store.worker_gone(self.name, self.instance)
        except BrowserdError as exc:
            log.error("%s (the leases expire by themselves)", exc.message)
        log.info("worker %s: released %d controller(s)", self.name, len(held))
        self.placement.held.clear()

    # --- admission: before the claim ---------------------------------------------------

    async def admit(self, incoming: Incoming, proceed: Proceed) -> bool:
        """Whether this worker claims ``incoming`` now.

        False when it is another worker's: an ``approve`` for a code another worker holds is
        left to it; a command for a controller leased elsewhere is kept aside, and once the
        lease is this worker's ``proceed(incoming)`` claims and submits it.
        """
        if self.placement.draining:
            return False
        code = approval_code(incoming.content)
        if code is not None:
            return await self._holds_code(code)
        controller = incoming.sender
        if incoming.refusal is not None or controller not in self.dispatcher.controllers:
            return True  # answered at once, by whichever worker claims it
        if self.keep_now(incoming, proceed):
            return False
        try:
            if await self._lease(controller, waited=0.0):
                return True
        except BrowserdError as exc:
            log.error("%s", exc.message)
            if not self.shared():
                return True  # alone: its claim cannot be written either, and says so, truly
            # kept aside until the store says whose it is: another worker may run it
        self.aside[controller] = deque([(incoming, proceed)])
        self._wake.set()
        return False

    def keep_now(self, incoming: Incoming, proceed: Proceed) -> bool:
        """Keep aside now a message of a controller, with no statement and no wait: behind
        those of its controller kept aside already (in order), or when the controller's lease
        is surely not this worker's to take (:meth:`_lease` would say so without a statement:
        the live workers were read a moment ago and it may not take it).  False: only
        :meth:`admit` can say (which may ask the store).  The inbox calls it for a wrap it
        keeps sealed as it arrives; what a bystander spends on a command ends here."""
        controller = incoming.sender
        if self.placement.draining or controller not in self.dispatcher.controllers:
            return False
        waiting = self.aside.get(controller)
        if waiting:
            waiting.append((incoming, proceed))
            return True
        lock, now = self._locks.get(controller), time.monotonic()
        if (lock is not None and lock.locked()) or self.placement.needs_live(controller, 0.0, now):
            return False  # its lease is being asked for, or the live workers must be read
        if self.placement.may_take(controller, 0.0, now):
            return False
        self.aside[controller] = deque([(incoming, proceed)])
        self._wake.set()
        return True

    def opens(self, sender: str) -> bool:
        """Whether to open now the seal of a gift wrap whose first decryption names
        ``sender`` (not yet authenticated): where its command may run, and everywhere while
        this worker is alone, waits for an approval (whose code any approver may send), or
        ``sender`` is no controller (answered by whichever worker claims it).  No statement:
        what this worker knows now; a wrap kept aside sealed is opened when it is claimed."""
        if not self.shared() or self.dispatcher.approvals.waiting():
            return True
        if sender not in self.dispatcher.controllers or self.kept_aside() >= SEALED_ASIDE:
            return True
        return self.placement.opens(sender, time.monotonic())

    def kept_aside(self) -> int:
        """How many messages are kept aside here."""
        return sum(len(kept) for kept in self.aside.values())

    async def _still_mine(self, controller: str) -> bool:
        """Whether ``controller``'s lease is still this worker's: surely, when it was granted
        a moment ago (no write); else as the store says, renewing it."""
        if self.placement.fresh(controller, time.monotonic()):
            return True
        return await self.store.take_lease(controller, self.name, self.lease)

    def shared(self) -> bool:
        """Whether another worker is live, which could claim what this one cannot."""
        return self.placement.others_live()

    def keep(self, incoming: Incoming, proceed: Proceed) -> None:
        """Keep aside a message whose claim could not be written, before any others of its
        sender (it came first): claimed once the store answers, or dropped once another
        worker has."""
        self.aside.setdefault(incoming.sender, deque()).appendleft((incoming, proceed))
        self._wake.set()

    async def _holds_code(self, code: str) -> bool:
        """An approval goes to the worker whose command waits for it (the store's approval
        table says which); a code nobody holds is answered by whichever worker claims it."""
        if self.dispatcher.approvals.holds(code):
            return True
        try:
            holder = await self.store.approval_holder(code)
        except BrowserdError as exc:  # not this worker's command: left to the one it is
            log.error("%s", exc.message)
            return False
        return holder is None or holder == self.name

    async def _refresh_live(self) -> None:
        """Read the live workers that take new controllers (this one, unless draining)."""
        self.placement.read_live(await self.store.live_workers(self.lease), time.monotonic())

    async def _lease(self, controller: str, waited: float) -> bool:
        """Take or renew ``controller``'s lease; on taking it, answer what others left."""
        placement = self.placement
        async with self._locks.setdefault(controller, asyncio.Lock()):
            if placement.fresh(controller, time.monotonic()):
                placement.used(controller, time.monotonic())
                return True
            if placement.needs_live(controller, waited, time.monotonic()):
                await self._refresh_live()
            if not placement.may_take(controller, waited, time.monotonic()):
                return False
            asked = time.monotonic()
            if not await self.store.take_lease(controller, self.name, self.lease):
                was_held = controller in placement.held
                placement.refused(controller, asked)
                if was_held:  # a command or a schedule noticed before the heartbeat did
                    await self._let_go(controller)
                return False
            if placement.granted(controller, asked):
                self._orphaned.pop(controller, None)
                pages = await self.sessions.arrived(controller)
                if pages is not None:
                    self._arrived[controller] = pages
                adopted = await self.store.adopt_held(controller, self.name, silent_for=self.lease)
                if adopted:
                    log.warning(
                        "took over %s with %d unanswered command(s) of another worker",
                        controller[:12],
                        len(adopted),
                    )
                    await self.dispatcher.lanes.answer_held(adopted)
            return True

    async def renew(self, controller: str) -> bool:
        """Renew ``controller``'s lease before a command runs (it lapsed during a pause);
        False when another worker holds it now."""
        return await self._lease(controller, waited=math.inf)

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
        now = time.monotonic()
        waits = {
            controller: now - kept[0][0].received for controller, kept in self.aside.items() if kept
        }
        if not self.placement.ask_aside(waits, self._asked_aside, now):
            return
        self._asked_aside = now
        self.aside_asked += 1
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
                if kept and kept[0][0] is incoming:
                    break  # its claim could not be written: it is kept, and so are the rest
            if not kept and self.aside.get(controller) is kept:
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
        """Record the load, renew the leases and take over the controllers of workers that
        died."""
        status = self.dispatcher.status()
        mine = await self.store.heartbeat(
            self.name,
            self.instance,
            running=len(status["running"]),
            queued=sum(status["queued"].values()),
            contexts=len(self.browser.sessions()),
        )
        if not mine:
            await self._name_lost()
            return
        await self._refresh_live()
        asked = time.monotonic()
        kept = await self.store.renew_leases(self.name, self.lease)
        for controller in self.placement.renewed(kept, asked):
            await self._let_go(controller)
        await self._adopt_orphans()

    async def _let_go(self, controller: str) -> None:
        """Another worker took ``controller``'s lease while this one was paused: its pages
        close here (they live on there), whichever of the heartbeat or a command saw it."""
        log.warning("lost the lease of %s to another worker: stopped serving it", controller)
        await self.browser.release(controller)

    async def _name_lost(self) -> None:
        """Another process took this worker's name: this one was silent for a lease (paused,
        or cut off), so its leases are that one's now.  Serve nothing more."""
        if not self.placement.draining:
            log.error(
                "another process took the worker name %s while this one was silent: this one"
                " serves nothing more; give each worker its own ([state] worker)",
                self.name,
            )
        self.placement.draining = True
        self.aside.clear()
        for controller in sorted(self.placement.held):
            self.placement.lost(controller)
            await self.browser.release(controller)

    async def _adopt_orphans(self) -> None:
        now = time.monotonic()
        for controller in await self.store.orphans(self.name, silent_for=self.lease):
            found = self._orphaned.setdefault(controller, now)
            await self._lease(controller, waited=now - found)

    # --- the controller's login state --------------------------------------------------

    async def keep_state(self, controller: str, *, login: bool = True) -> None:
        """Save ``controller``'s pages, and its login state unless ``login`` is False, in the
        store while its lease is this worker's."""
        await self.sessions.keep(controller, login=login)

    async def follow(self, controller: str) -> None:
        """Before ``controller``'s first command here after it moved: reopen its pages."""
        pages = self._arrived.pop(controller, None)
        if pages is None:
            return
        try:
            await self.sessions.reopen(controller, pages)
        except Exception:  # no browser for it now: the command says so, in its own words
            log.exception("could not reopen the pages of %s", controller[:12])

    async def initial_state(self, owner: str) -> dict[str, Any] | None:
        """What a new browser context of ``owner`` starts with: its last saved session."""
        return await self.sessions.initial_state(owner)

    # --- status ------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        """The workers, their load and the leases, as the store has them."""
        workers = [w.to_dict() for w in await self.store.workers()]
        leases = [lease.to_dict() for lease in await self.store.leases()]
        return {
            "worker": self.name,
            "live": self.placement.live,  # as this worker last read it
            "workers": workers,
            "leases": leases,
            "kept_aside": self.kept_aside(),
            "kept_aside_checks": self.aside_asked,  # store questions about them
        }


def _died_here(instance: str) -> bool:
    """Whether the process ``instance`` ran on this host and is no longer running."""
    host, _, rest = instance.partition("/")
    pid = rest.partition("/")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process has that pid now
        return False
    return False


__all__ = ["Worker"]

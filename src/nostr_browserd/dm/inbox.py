"""From a relay event to an authenticated, fresh, never-seen command (or nothing at all).

The order of the checks is the point of this module:

1. the scheme is one the config accepts (kind 1059 for NIP-17, kind 4 for NIP-04) and the event
   is addressed to us;
2. an outer id already processed, or already rejected, is skipped before any decryption (three
   relays, one command; a restart's re-delivery of two days of strangers' wraps): copies of
   an event already waiting are dropped as they arrive, and what a relay had stored (it came
   before the relay's EOSE) is checked against the store in one query (:meth:`Inbox.sort`)
   before it joins the backlog.  A live event is not: it was published after the
   subscription started, so only a relay's copy could have come before it, and the relay pool
   drops those by id; the claim (step 6) still decides whether it runs;
3. the sender is authenticated: NIP-04 by the event's own signature, NIP-17 by the seal's
   signature with seal pubkey == rumor pubkey (``nip59.unwrap``); the pubkey read from inside is
   never trusted on its own.  A gift wrap's own signature (a one-time key's: it binds the
   wrap's tags, its NIP-40 expiration, to the sender who sealed it) is verified just before
   its seal is opened; the relay pool checked only its id (``unverified``), which
   binds every other field.  With several workers, only the worker where the seal's signer's
   commands may run verifies the wrap and verifies and decrypts the seal (``Gate.opens``);
   the others keep the wrap aside, sealed, under the sender it claims, and open it only if
   that sender's lease comes to them.  With a key held here a live wrap that finds nothing
   waiting before it is decrypted as it arrives, and kept aside there and then when the gate
   can say so without a statement (``Inbox._aside_now``, ``Gate.keep_now``): what a worker
   that does not run a command spends on it ends in the relay's frame handler.  A wrap
   whose signature fails is dropped and not remembered: a relay altered that copy, and
   another relay's copy of the same id may be good;
4. only allow-listed keys go further; anything else is dropped and logged (rate-limited), and
   never answered, so a stranger cannot even learn that the daemon reads its messages.  A
   kind 4's sender is known before decrypting; a gift wrap's only after its first decryption,
   which names the seal's signer, so a stranger's seal is never decrypted, its wrap id is
   remembered as rejected, and :class:`StrangerBudget` bounds these decryptions per minute;
5. with several workers sharing the identity, the gate (``daemon/workers.py``) says whether
   this worker may claim the sender's command now, or keeps it aside, unclaimed, while the
   sender's controller is leased to another worker;
6. the replay guard claims the wrap id and the rumor id (or the kind 4 id) in the store, so a
   command runs at most once, across relays, restarts and workers;
7. a command older than the freshness window, dated in the future, or expired (NIP-40) is
   refused with an answer, since its sender is authenticated and may simply be offline.

With ContextVM on, a gift wrap may also carry a signed kind 25910 (an MCP message, CEP-4),
and an ephemeral kind 21059 wrap is read too (CEP-19): the same budget, allow-list, gate,
replay guard and freshness apply, and the sender is the inner event's own signature.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from ..errors import BrowserdError, ErrorCode, said
from ..nostr import contextvm, nip17, nip40
from ..nostr.nip01 import Event, InvalidEvent, tag_values, verify_event
from ..nostr.nip59 import GIFT_WRAP_KIND, UnwrapError, open_seal, unwrap_seal, unwrap_seal_now
from ..nostr.signer import KeySigner, Signer
from ..ratelog import RateLimitedLog
from .messages import DM_KIND, ContextVm, Incoming, Scheme

log = logging.getLogger(__name__)

KIND_OF: dict[str, int] = {"nip17": GIFT_WRAP_KIND, "nip04": DM_KIND}
# Gift wraps are back-dated up to two days (NIP-59): the subscription must reach that far.
WRAP_LOOKBACK = 2 * 24 * 3600
STRANGER_BUDGET = 1200
"""Default decryptions per minute (and burst) for gift wraps that are not an allowed key's:
a local key spends well under a second of CPU on them, a bunker 20 round trips a second."""
OPENING_AT_ONCE = 8
"""Events decrypted at the same time: a remote signer's round trips overlap."""
BACKLOG_SIZE = 10_000
"""Gift wraps waiting for their first decryption; beyond it the oldest-received is dropped
(not remembered: a restart fetches it again)."""


Proceed = Callable[[Incoming], Awaitable[None]]


class Ledger(Protocol):
    """The replay guard's memory of event ids (the daemon's state store)."""

    async def known(self, ids: Iterable[str]) -> set[str]:
        """Those of ``ids`` processed or rejected before."""
        ...

    async def claim(self, ids: Iterable[str], *, owe: bool = True) -> bool:
        """Mark ``ids`` processed; False when one of them already was.  A failed write
        raises; with ``owe`` the ids are remembered and written with the next claim."""
        ...

    async def reject(self, event_id: str) -> None:
        """Remember a stranger's or a broken event, so it is never opened again."""
        ...


class Gate(Protocol):
    """Which worker claims a command: the one its controller is leased to."""

    async def admit(self, incoming: Incoming, proceed: Proceed) -> bool:
        """True: claim it now.  False: not this worker's now; when it becomes so, the gate
        calls ``proceed(incoming)`` (which claims and submits it)."""
        ...

    def shared(self) -> bool:
        """Whether another worker could claim a command this one could not: then a claim
        that cannot be written is neither answered ("not run" could be false: the other may
        run it) nor remembered, but kept (:meth:`keep`)."""
        ...

    def keep(self, incoming: Incoming, proceed: Proceed) -> None:
        """Keep ``incoming``, whose claim could not be written, to claim it later (or drop it
        once another worker has)."""
        ...

    def opens(self, sender: str) -> bool:
        """Whether to open now the seal of a gift wrap whose first decryption names
        ``sender``; False: admit it sealed (this worker will not run it unless its sender's
        lease comes here, and then ``proceed`` opens it)."""
        ...

    def keep_now(self, incoming: Incoming, proceed: Proceed) -> bool:
        """Keep ``incoming`` (sealed: :meth:`opens` said no) aside now, as :meth:`admit`
        would, when that needs no statement and no wait; False: only :meth:`admit` can say."""
        ...


class StrangerBudget:
    """How many decryptions gift wraps not from an allowed key may cost per minute.

    A wrap's sender is unknown until its first decryption, and with a bunker or an n_signer
    each one is a remote round trip (or a prompt on the owner's phone).  Wraps that turn out
    to be a stranger's, forged or unreadable spend one unit; the budget refills evenly over
    the minute, and while it is empty no wrap is opened (a controller's included: nothing
    tells its wrap apart before the decryption).
    """

    def __init__(self, per_minute: int, burst: int | None = None) -> None:
        self.per_minute = per_minute
        self.burst = per_minute if burst is None else burst
        self._units, self._at = float(self.burst), time.monotonic()
        self.spent = 0

    def _refill(self) -> None:
        now = time.monotonic()
        self._units = min(self.burst, self._units + (now - self._at) * self.per_minute / 60)
        self._at = now

    def wait_time(self) -> float:
        """Seconds until one unit is there (0 when it is there now)."""
        self._refill()
        return max(0.0, (1 - self._units) * 60 / self.per_minute)

    def spend(self) -> None:
        """One decryption went to a wrap that was not an allowed key's."""
        self._refill()
        self._units -= 1
        self.spent += 1

    def hold(self, units: int) -> None:
        """Set ``units`` aside while that many wraps are being opened (``-units`` gives back):
        opening several at once never takes more than what is left."""
        self._refill()
        self._units -= units


def subscription_filters(
    pubkey: str, schemes: Iterable[Scheme], now: int, freshness: float, mcp: bool = False
) -> list[dict[str, Any]]:
    """REQ filters for our inbox: wraps since two days back, kind 4 since the freshness edge,
    and with ContextVM (``mcp``) its ephemeral wraps from now on.

    Anything older could only be refused, so it is not worth fetching after a restart.
    """
    filters: list[dict[str, Any]] = []
    if "nip17" in schemes or mcp:
        filters.append({"kinds": [GIFT_WRAP_KIND], "#p": [pubkey], "since": now - WRAP_LOOKBACK})
    if mcp:
        filters.append({"kinds": [contextvm.EPHEMERAL_WRAP_KIND], "#p": [pubkey], "since": now})
    if "nip04" in schemes:
        filters.append({"kinds": [DM_KIND], "#p": [pubkey], "since": now - int(freshness)})
    return filters


class Inbox:
    """Turns relay events into :class:`Incoming` commands, or drops them."""

    def __init__(
        self,
        signer: Signer,
        pubkey: str,
        store: Ledger,
        *,
        is_known: Callable[[str], bool],
        schemes: Iterable[Scheme],
        freshness: float,
        stranger_budget: int = STRANGER_BUDGET,
        backlog_size: int = BACKLOG_SIZE,
        gate: Gate | None = None,
        mcp: bool = False,
    ) -> None:
        """``mcp``: ContextVM messages are read too (kind 25910 in either gift wrap)."""
        self.signer, self.pubkey, self.store = signer, pubkey, store
        self._key = signer if isinstance(signer, KeySigner) else None  # held here: see serve
        self.gate = gate
        self.is_known = is_known
        self.schemes = set(schemes)
        self.mcp = mcp
        self.kinds = {KIND_OF[s] for s in schemes} | (set(contextvm.WRAP_KINDS) if mcp else set())
        self.freshness = freshness
        self.dropped = RateLimitedLog(log)
        self.budget = StrangerBudget(stranger_budget)
        self.backlog_size = backlog_size
        self._arrivals: deque[tuple[Event, bool]] = deque()  # (event, stored), not yet sorted
        self._queued: set[str] = set()  # copies arrived, waiting or being opened (_copy)
        self._known: deque[Event] = deque()  # kind 4 from allowed keys: no budget needed
        self._wraps: deque[Event] = deque()  # gift wraps, sender unknown until decrypted
        self._flooded = False  # the budget ran out: both ends of the backlog until it empties
        self._newest_next = True
        self._arrived = asyncio.Event()
        # wraps whose first layer was opened as they arrived, and what it held (_aside_now)
        self._first_layers: dict[str, Event | UnwrapError] = {}
        self._unadmitted: Counter[str] = Counter()  # opened, not yet past the gate: by sender
        self._submit: Callable[[Incoming], None] | None = None  # while serve runs
        self.checked = 0  # events checked against the store before opening
        self.wraps_opened = 0  # gift wraps decrypted once (which names the sender)
        self.seals_opened = 0  # seals verified and decrypted: commands this worker may run
        self.bad_signatures = 0  # gift wraps dropped before their seal: a relay altered them

    def status(self) -> dict[str, int]:
        """For the status page: a flood shows here before anywhere else."""
        return {
            "stranger_budget_per_minute": self.budget.per_minute,
            "stranger_decryptions": self.budget.spent,
            "wraps_waiting": len(self._wraps),
            "checked_in_store": self.checked,
            "wraps_opened": self.wraps_opened,
            "seals_opened": self.seals_opened,
            "bad_signatures": self.bad_signatures,
        }

    def _addressed(self, event: Event) -> bool:
        """Our scheme and to us: worth a look."""
        return event.get("kind") in self.kinds and self.pubkey in tag_values(event, "p")

    async def _unknown(self, event: Event) -> bool:
        """Neither processed nor rejected before.  A store that cannot answer says nothing:
        the claim decides (and answers ``UNAVAILABLE`` when it cannot be written either)."""
        event_id = event.get("id", "")
        self.checked += 1
        try:
            return event_id not in await self.store.known([event_id])
        except BrowserdError as exc:
            self.dropped.warning("store", "%s", exc.message)
            return True

    def take(self, event: Event, stored: bool = True) -> None:
        """Sort a relay event without decrypting it: keep what may be a command, drop the rest.

        The relay subscription calls it as each event arrives (it is the subscription's
        sink), so a flood waits here, where a controller's kind 4 goes ahead of every gift
        wrap, and not in the subscription's queue.  Nothing here waits for the store:
        :meth:`sort` checks what arrived, all of it at once, before it is opened; ``stored``
        False (a live event: see the module's step 2) is not checked.
        """
        copy = _copy(event)
        if not self._addressed(event) or copy in self._queued:
            return
        if event["kind"] == DM_KIND and not self._allowed(event["pubkey"], "nip04"):
            return
        try:
            if not stored and self._aside_now(event, copy):
                return
        except Exception:  # a bug here must not lose the wrap: the queue's path opens it
            log.exception("could not sort %s as it arrived", str(event.get("id", "?"))[:12])
        if len(self._arrivals) >= self.backlog_size:
            self._drop(self._arrivals.popleft()[0])
        self._queued.add(copy)
        self._arrivals.append((event, stored))
        self._stir()

    async def sort(self) -> None:
        """Drop what a relay had stored and was processed or rejected before (one query for
        all of it, none when all is live), and queue the rest in arrival order: a
        controller's kind 4 ahead of the gift wraps."""
        while self._arrivals:
            batch = list(self._arrivals)
            self._arrivals.clear()
            known: set[str] = set()
            stored = [event["id"] for event, was_stored in batch if was_stored]
            if stored:
                self.checked += len(stored)
                try:
                    known = await self.store.known(stored)
                except BrowserdError as exc:  # the claim decides
                    self.dropped.warning("store", "%s", exc.message)
            for event, _ in batch:
                if event["id"] in known:
                    self._forget(event)
                elif event["kind"] == DM_KIND:
                    self._known.append(event)
                else:
                    if len(self._wraps) >= self.backlog_size:
                        self._drop(self._wraps.popleft())
                    self._wraps.append(event)

    def _aside_now(self, event: Event, copy: str) -> bool:
        """Open a live gift wrap's first layer as it arrives and, when it is another worker's
        (its sender's commands run there), keep it aside sealed at once: what a worker that
        does not run a command spends on it, without a hop through the serving loop or the
        settling task.  Only with a key held here, while :meth:`serve` runs, nothing waits
        before the wrap (a sender's messages keep their order) and the stranger budget has a
        unit; and only when the gate can say so without a statement (``Gate.keep_now``).
        False: the wrap goes on through the queue, and its first layer, opened here, is
        kept for it (never decrypted twice)."""
        gate, key = self.gate, self._key
        if (
            gate is None
            or key is None
            or self._submit is None
            or event["kind"] != GIFT_WRAP_KIND
            or self._queued
            or self.budget.wait_time() > 0
        ):
            return False
        try:
            seal = unwrap_seal_now(event, key, verified=True)
        except UnwrapError as exc:
            self._first_layers[copy] = exc  # said and remembered by the serving loop
            return False
        self.wraps_opened += 1
        sealed = self._sealed(event, seal)
        if (
            sealed is not None
            and not self._unadmitted[sealed.sender]
            and gate.keep_now(sealed, self._proceed)
        ):
            return True
        self._first_layers[copy] = seal
        return False

    def _forget(self, event: Event) -> None:
        """``event`` left the queue: opened, dropped, or known already."""
        copy = _copy(event)
        self._queued.discard(copy)
        self._first_layers.pop(copy, None)

    def _drop(self, event: Event) -> None:
        """The backlog is full: the oldest-received goes, not remembered (a restart fetches
        it again)."""
        self._forget(event)
        self.dropped.warning("backlog", "%d gift wraps wait: dropped the oldest", self.backlog_size)

    async def serve(self, submit: Callable[[Incoming], None]) -> None:
        """Open queued events and hand each command to ``submit``, in the order they were
        taken; runs forever.

        With a key held here an event is opened in this loop, one at a time (a decryption
        never waits; a task per event would cost every worker more than the decryption's
        Python).  With a remote signer up to :data:`OPENING_AT_ONCE` are opened at the same
        time (a bunker's round trips overlap).  Each gift wrap holds one unit of the stranger
        budget until it is open.  Wraps are taken oldest first while the budget lasts, so
        commands keep their order.  Once strangers have spent it, the backlog is worked from
        both ends in turn until it is empty again: newest first reaches a command sent after
        a burst (or after a restart's re-delivery) at once, oldest first bounds the wait when
        a flood goes on, and taking both in turn costs at most twice the better of the two.
        """
        opening: deque[asyncio.Task[Incoming | None]] = deque()
        opened: asyncio.Queue[Incoming] = asyncio.Queue()
        settling = asyncio.create_task(self._settle(opened))
        self._submit = submit
        try:
            while True:
                while opening and opening[0].done():
                    incoming = opening.popleft().result()
                    if incoming is not None:
                        self._hand_on(opened, incoming)
                self._arrived.clear()
                if self._arrivals:
                    await self.sort()
                event, wait = self._next() if len(opening) < OPENING_AT_ONCE else (None, None)
                if event is not None:
                    wrap = event["kind"] != DM_KIND
                    if wrap:  # now, before the next one is taken
                        self.budget.hold(1)
                    if self._key is not None:  # it never waits to decrypt: opened here, no task
                        if (incoming := await self._open_safely(event, wrap)) is not None:
                            self._hand_on(opened, incoming)
                        continue
                    task = asyncio.create_task(self._open_safely(event, wrap))
                    task.add_done_callback(self._stir)
                    opening.append(task)
                    continue
                # One event wakes this loop (an arrival, an opening done): no task and no
                # asyncio.wait per turn.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._arrived.wait()
        finally:
            self._submit = None
            self._unadmitted.clear()  # what was opened and not admitted is gone with the queue
            settling.cancel()
            for task in opening:
                task.cancel()

    def _stir(self, _: object = None) -> None:
        """Wake :meth:`serve`: an event arrived, or one being opened is done."""
        self._arrived.set()

    def _hand_on(self, opened: asyncio.Queue[Incoming], incoming: Incoming) -> None:
        """Queue an opened command for :meth:`_settle`, counted under its sender until the
        gate has seen it (:meth:`_aside_now` keeps nothing aside before it)."""
        self._unadmitted[incoming.sender] += 1
        opened.put_nowait(incoming)

    async def _settle(self, opened: asyncio.Queue[Incoming]) -> None:
        """Claim the opened commands one at a time, in the order they arrived, and submit
        them; with a gate, only those this worker may claim now (it keeps the rest aside)."""
        while True:
            incoming = await opened.get()
            try:
                try:
                    admitted = self.gate is None or await self.gate.admit(incoming, self._proceed)
                finally:
                    self._unadmitted[incoming.sender] -= 1
                    if not self._unadmitted[incoming.sender]:
                        del self._unadmitted[incoming.sender]
                if admitted:
                    await self._proceed(incoming)
            except Exception:  # one command must never stop the inbox
                log.exception("could not take %s", incoming.event_id[:12])

    async def _proceed(self, incoming: Incoming) -> None:
        """Claim ``incoming`` (its seal opened first) and submit it: at once, or once the gate
        lets this worker have it."""
        opened = await self.unseal(incoming)  # sealed: now it is this worker's to claim
        if opened is None or self._submit is None:
            return
        incoming = opened
        if self.gate is not None and self.gate.shared():
            try:
                claimed = await self.claimed(incoming, owe=False)
            except BrowserdError:
                self.gate.keep(incoming, self._proceed)
                return
        else:
            claimed = await self.claimed(incoming)
        if claimed is not None:
            self._submit(claimed)

    def _next(self) -> tuple[Event | None, float | None]:
        """The next event to open, or None and how long the budget needs (None: no limit)."""
        if self._known:
            return self._known.popleft(), None
        if not self._wraps:
            self._flooded = False
            return None, None
        wait = self.budget.wait_time()
        if wait > 0:
            self._flooded = True
            return None, wait
        newest = self._flooded and self._newest_next
        self._newest_next = not newest
        return (self._wraps.pop() if newest else self._wraps.popleft()), None

    async def _open_safely(self, event: Event, held: bool) -> Incoming | None:
        try:
            return await self.authenticate(event)
        except Exception:  # one bad event must never stop the inbox
            log.exception("could not process event %s", str(event.get("id", "?"))[:12])
            return None
        finally:
            self._forget(event)
            if held:
                self.budget.hold(-1)

    async def open(self, event: Event) -> Incoming | None:
        """The command ``event`` carries, claimed, or None when it must be ignored (one event
        at a time: it is checked against the store first, as :meth:`sort` does)."""
        if not await self._unknown(event):
            return None
        incoming = await self.authenticate(event)
        if incoming is not None:
            incoming = await self.unseal(incoming)
        return None if incoming is None else await self.claimed(incoming)

    async def authenticate(self, event: Event) -> Incoming | None:
        """The command ``event`` carries, not yet claimed, or None when it must be ignored;
        sealed when the gate says another worker runs its sender's commands (:meth:`unseal`).
        Whether it was seen before is the caller's to ask (:meth:`sort`, or :meth:`open`)."""
        if not self._addressed(event):
            return None
        if event["kind"] == DM_KIND:
            return await self._open_nip04(event)
        if event["kind"] == contextvm.EPHEMERAL_WRAP_KIND:
            return await self._open_contextvm(event)
        return await self._open_nip17(event)

    async def claimed(self, incoming: Incoming, *, owe: bool = True) -> Incoming | None:
        """``incoming`` once claimed (the replay guard), and checked for freshness; None when
        it was claimed before: by this worker, or by another one that ran it.

        A claim that cannot be written (a full disk) is answered as not run, and its ids are
        remembered, so it never runs later; with ``owe`` False it raises instead, and nothing
        is remembered (another worker may claim it)."""
        try:
            fresh = await self.store.claim({incoming.outer_id, incoming.event_id}, owe=owe)
        except BrowserdError as exc:
            if not owe:
                raise
            return replace(incoming, refusal=exc)
        if not fresh:
            log.info("replay of %s from %s ignored", incoming.event_id[:12], incoming.sender[:12])
            return None
        return self._check_time(incoming)

    async def _open_nip04(self, event: Event) -> Incoming | None:
        try:
            verify_event(event)
        except InvalidEvent as exc:
            self.dropped.warning("invalid", "dropped a kind 4 event: %s", exc)
            return None
        sender = event["pubkey"]
        if not self._allowed(sender, "nip04"):
            return None
        try:
            content = await self.signer.nip04_decrypt(sender, event["content"])
        except (ValueError, BrowserdError) as exc:
            self.dropped.warning(
                "undecryptable", "kind 4 from %s: cannot decrypt (%s)", sender[:12], said(exc)
            )
            return None
        return Incoming(
            sender,
            "nip04",
            content,
            event["id"],
            event["id"],
            event["created_at"],
            nip40.expiration(event),
        )

    async def _open_nip17(self, event: Event) -> Incoming | None:
        try:
            seal = await self._first_layer(event)
            if (sealed := self._sealed(event, seal)) is not None:
                return sealed  # another worker runs this sender's commands: kept aside (step 5)
            if self.mcp and seal.get("kind") == contextvm.MESSAGE_KIND:
                return await self._open_contextvm(event, seal) if self._signed(event) else None
            if "nip17" not in self.schemes:
                raise UnwrapError("a NIP-17 message, and [nostr] dm does not take NIP-17")
            if seal["pubkey"] == self.pubkey or not self._allowed(seal["pubkey"], "nip17"):
                await self._reject(event)
                return None
        except (UnwrapError, BrowserdError) as exc:
            await self._unopened(event, exc)
            return None
        return await self._open_seal(event, seal)

    async def _first_layer(self, event: Event) -> Event:
        """The seal in gift wrap ``event``: opened as it arrived (:meth:`_aside_now`), or now.
        Its signature is checked where it is trusted: before a seal or message is opened."""
        found = self._first_layers.pop(_copy(event), None)
        if isinstance(found, UnwrapError):
            raise found
        if found is not None:
            return found
        seal = await unwrap_seal(event, self.signer, verified=True)
        self.wraps_opened += 1
        return seal

    def _sealed(self, event: Event, seal: Event) -> Incoming | None:
        """Gift wrap ``event``, kept sealed, when its seal names (not yet authenticated) an
        allowed key whose commands the gate says another worker runs; None otherwise (the
        seal is this worker's to open, or the wrap carries no command to keep)."""
        sender = seal["pubkey"]
        if (
            self.gate is None
            or (self.mcp and seal.get("kind") == contextvm.MESSAGE_KIND)
            or "nip17" not in self.schemes
            or sender == self.pubkey
            or not self.is_known(sender)
            or self.gate.opens(sender)
        ):
            return None
        return Incoming(sender, "nip17", "", "", event["id"], 0, sealed=(event, seal))

    async def unseal(self, incoming: Incoming) -> Incoming | None:
        """``incoming`` with its seal opened (as it arrived when it was not sealed), or None
        when the seal does not authenticate its sender or carries no command."""
        if incoming.sealed is None:
            return incoming
        opened = await self._open_seal(*incoming.sealed)
        return None if opened is None else replace(opened, received=incoming.received)

    async def _open_seal(self, event: Event, seal: Event) -> Incoming | None:
        """The command in the seal of ``event``, its sender authenticated (step 3)."""
        if not self._signed(event):
            return None
        try:
            opened = await open_seal(event, seal, self.signer)
            self.seals_opened += 1
        except (UnwrapError, BrowserdError) as exc:
            await self._unopened(event, exc)
            return None
        sender, rumor = opened.sender, opened.rumor
        expirations = [t for t in map(nip40.expiration, (event, rumor)) if t is not None]
        incoming = Incoming(
            sender,
            "nip17",
            rumor["content"],
            rumor["id"],
            event["id"],
            rumor["created_at"],
            min(expirations, default=None),
        )
        if rumor["kind"] == nip17.FILE_KIND:  # a file for upload (files/incoming.py)
            tags = tuple(tuple(str(v) for v in t) for t in rumor["tags"] if isinstance(t, list))
            incoming = replace(incoming, file_tags=tags)
        elif rumor["kind"] != nip17.CHAT_KIND:
            # Reactions and the like are not commands: ignored on purpose.
            log.info("ignored a kind %s rumor from %s", rumor["kind"], sender[:12])
            with contextlib.suppress(BrowserdError):  # at worst opened again later
                await self.store.claim([event["id"], rumor["id"]])
            return None
        others = set(tag_values(rumor, "p")) - {self.pubkey, sender}
        if others:
            # A group chat: never act in it, and answer the sender alone.
            return _refused(
                incoming,
                ErrorCode.REFUSED,
                "Commands are accepted in a one-to-one chat only; this one had "
                f"{len(others)} other member(s). Send it to the daemon alone.",
            )
        return incoming

    async def _open_contextvm(self, event: Event, inner: object = None) -> Incoming | None:
        """A ContextVM message: ``inner`` is what a kind 1059 held (decrypted already, to
        tell it from a seal); a kind 21059 is decrypted here."""
        ephemeral = event["kind"] == contextvm.EPHEMERAL_WRAP_KIND
        carrier: ContextVm = "contextvm-ephemeral" if ephemeral else "contextvm"
        try:
            if inner is None:
                inner = await contextvm.unwrap(event, self.signer)
            message = contextvm.inner_message(inner, self.pubkey)
        except (UnwrapError, BrowserdError) as exc:
            await self._unopened(event, exc, "a ContextVM message")
            return None
        sender = message["pubkey"]
        if sender == self.pubkey or not self._allowed(sender, "ContextVM"):
            await self._reject(event)
            return None
        expirations = [t for t in map(nip40.expiration, (event, message)) if t is not None]
        return Incoming(
            sender,
            carrier,
            message["content"],
            message["id"],
            event["id"],
            message["created_at"],
            min(expirations, default=None),
        )

    def _signed(self, event: Event) -> bool:
        """Whether the gift wrap ``event`` is what its one-time key signed (step 3).  A copy
        that is not was altered by a relay: dropped, not remembered (another relay's copy of
        the same id may be good), and it spends a unit of the stranger budget."""
        try:
            verify_event(event)
        except InvalidEvent as exc:
            self.dropped.warning("signature", "dropped a gift wrap: %s", exc.reason)
            self.budget.spend()
            self.bad_signatures += 1
            return False
        return True

    async def _unopened(
        self, event: Event, exc: UnwrapError | BrowserdError, what: str = "a gift wrap"
    ) -> None:
        """A wrap that could not be opened: dropped, and remembered unless the signer did
        not answer (that says nothing of the wrap: a restart may retry it)."""
        self.dropped.warning("unwrap", "dropped %s: %s", what, said(exc))
        answered = not isinstance(exc, BrowserdError) or exc.code is ErrorCode.SIGNER_ERROR
        await self._reject(event, remember=answered)

    async def _reject(self, event: Event, remember: bool = True) -> None:
        """A wrap that cost a decryption and carried no command: never decrypt it again."""
        self.budget.spend()
        if remember:
            with contextlib.suppress(BrowserdError):  # at worst decrypted again later
                await self.store.reject(event["id"])

    def _allowed(self, sender: str, scheme: str) -> bool:
        if self.is_known(sender):
            return True
        self.dropped.warning("unknown", "dropped a %s message from unknown key %s", scheme, sender)
        return False

    def _check_time(self, incoming: Incoming) -> Incoming:
        now = time.time()
        age = now - incoming.created_at
        if incoming.refusal is not None:
            return incoming
        if age > self.freshness or age < -self.freshness:
            return _refused(
                incoming,
                ErrorCode.REFUSED,
                f"This command was written {int(age)} s ago, outside the {int(self.freshness)} s"
                " freshness window (or the sender's clock is off); it was not run. Send it again.",
            )
        if incoming.expiration is not None and incoming.expiration <= now:
            return _refused(incoming, ErrorCode.REFUSED, "This command had expired (NIP-40).")
        return incoming


def _refused(incoming: Incoming, code: ErrorCode, message: str) -> Incoming:
    log.info("refusing %s from %s: %s", incoming.event_id[:12], incoming.sender[:12], message)
    return replace(incoming, refusal=BrowserdError(code, message))


def _copy(event: Event) -> str:
    """What tells two copies of an event apart: the id binds every field but the signature."""
    return f"{event.get('id', '')}{event.get('sig', '')}"

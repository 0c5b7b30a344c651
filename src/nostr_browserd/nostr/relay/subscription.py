"""One subscription across the relays of a pool: what passes to its reader, and what it keeps.

An event reaches the reader only verified (id and signature), inside the filters, and once:
de-duplicated by id across relays and reconnects in a bounded LRU.  An event of a kind whose
signature the reader verifies itself, where it needs it (``unverified``: the daemon's inbox for
gift wraps, see ``dm/inbox.py``), comes with its id checked (the hash binds every field but the
signature) and its signature not, the first copy of each id; a later copy of that id with
another signature is verified here and passed on only if it is good, so a relay's badly signed
copy that came first cannot shadow a good one, and at most one unverified copy of an id
reaches the reader.  The pool asks :meth:`Subscription.passed_on` first, with the id and
signature read from a frame's text (``nip01.copy_of``): the second relay's copy of an event
costs no JSON.
A reader that only sorts what arrives (the daemon's inbox) may take each event through a
``sink``, called as the event passes, instead of iterating: one task between the relay and it
fewer, per event.
The subscription also remembers, per relay, the newest ``created_at`` it delivered, so a
reconnect re-sends the filters with ``since`` advanced (see :data:`SINCE_MARGIN`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

from ..nip01 import Event, InvalidEvent, check_shape, matches, verify_event, verify_id

__all__ = ["SINCE_MARGIN", "Subscription"]

log = logging.getLogger(__name__)

SINCE_MARGIN = 120
"""Seconds subtracted from the newest ``created_at`` seen when a subscription is re-sent
(relays' clocks and late-indexed events)."""


class Subscription:
    """Events matching ``filters`` from every relay of the pool: verified, de-duplicated.

    Iterate with ``async for``; iteration ends when the subscription or the pool is closed.
    If the consumer falls ``queue_size`` events behind, the oldest waiting event is dropped
    for each new one and counted in ``dropped`` (the pool must not grow without bound or stall
    other subscriptions; what just arrived, a command behind a flood, is what matters most).

    ``stored`` says of the event iteration returned last whether its relay had it stored
    (it came before that relay's EOSE for this REQ, a reconnect's included) rather than live:
    only a stored event may be one this process, or an earlier one, has handled before.

    The pool makes it (``on_close`` is how it tells the pool to send CLOSE) and feeds it
    through :meth:`receive`, :meth:`resent_to` and :meth:`note_answered`.
    """

    def __init__(
        self,
        on_close: Callable[[Subscription], None],
        sub_id: str,
        filters: list[dict[str, Any]],
        *,
        advance_since: bool,
        queue_size: int,
        dedup_size: int,
        unverified: frozenset[int] = frozenset(),
        sink: Callable[[Event, bool], None] | None = None,
    ) -> None:
        self.id = sub_id
        self._sink = sink
        self.unverified = unverified
        self.filters = filters
        self.advance_since = advance_since
        self.eose: set[str] = set()
        self.closed_by: dict[str, str] = {}
        self.dropped = 0
        self._on_close = on_close
        self._queue_size = queue_size
        self._dedup_size = dedup_size
        self._items: deque[tuple[Event, bool]] = deque()  # (event, stored)
        self.stored = True
        self._wakeup = asyncio.Event()
        # id -> created_at, the signatures of its copies passed on
        self._seen: OrderedDict[str, tuple[int, tuple[str, ...]]] = OrderedDict()
        self._latest: dict[str, int] = {}  # relay url -> newest created_at it delivered
        self._all_answered = asyncio.Event()
        self._closed = False

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while not self._items:
            if self._closed:
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        event, self.stored = self._items.popleft()
        return event

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def wait_eose(self, timeout: float | None = None) -> bool:
        """Wait until every relay sent EOSE, closed the subscription or is unreachable.

        Returns False if that did not happen within ``timeout`` seconds.  ``eose`` holds the
        relays that did send EOSE, ``closed_by`` those that closed it, with their reason.
        """
        try:
            async with asyncio.timeout(timeout):
                await self._all_answered.wait()
        except TimeoutError:
            return False
        return True

    async def wait_closed(self) -> None:
        """Wait until :meth:`close` (or the pool's) ended the subscription."""
        while not self._closed:
            self._wakeup.clear()
            await self._wakeup.wait()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` (or the pool's) ended the subscription."""
        return self._closed

    def close(self) -> None:
        """Stop the subscription on every relay and end iteration (after queued events)."""
        if not self._closed:
            self._on_close(self)
            self._closed = True
            self._wakeup.set()

    # -- called by the pool -------------------------------------------------------------

    def note_answered(self) -> None:
        """Every relay has answered (EOSE, CLOSED) or is unreachable: :meth:`wait_eose` ends."""
        self._all_answered.set()

    def filters_for(self, url: str) -> list[dict[str, Any]]:
        """The filters to (re)send to ``url``: ``since`` advanced past what it already gave."""
        latest = self._latest.get(url)
        if not self.advance_since or latest is None:
            return self.filters
        since = latest - SINCE_MARGIN
        return [{**f, "since": max(f.get("since", 0), since)} for f in self.filters]

    def resent_to(self, url: str) -> list[dict[str, Any]]:
        """The filters of a REQ sent to ``url`` again: what comes before its EOSE is stored."""
        self.closed_by.pop(url, None)
        self.eose.discard(url)
        return self.filters_for(url)

    def receive(self, url: str, event: dict[str, Any], counts: Counter[str]) -> None:
        """Take an event ``url`` sent for this subscription, counting what became of it."""
        event_id = event.get("id")
        kind = event.get("kind")
        later = isinstance(kind, int) and kind in self.unverified  # the reader verifies it
        seen = self._seen_before(url, event_id) if isinstance(event_id, str) else None
        if seen is not None and (not later or event.get("sig") in seen):
            counts["events"] += 1
            counts["duplicates"] += 1
            return
        try:
            if later and seen is None:  # the first copy: its id binds all but the signature
                check_shape(event)
                verify_id(event)
            else:  # verified here (another signature for a known id included)
                verify_event(event)
        except InvalidEvent as exc:
            counts["invalid"] += 1
            log.debug("%s: dropped invalid event: %s", url, exc.reason)
            return
        counts["events"] += 1
        if not any(matches(f, event) for f in self.filters):
            counts["unmatched"] += 1
            return
        self._deliver(url, event)

    def passed_on(self, url: str, event_id: str, sig: str, counts: Counter[str]) -> bool:
        """Whether ``url``'s copy of ``event_id`` signed ``sig`` (read from its frame, not yet
        parsed: ``nip01.copy_of``) is one passed on already: then it is counted as a
        duplicate, and :meth:`receive` is spared its JSON."""
        seen = self._seen_before(url, event_id)
        if seen is None or sig not in seen:
            return False
        counts["events"] += 1
        counts["duplicates"] += 1
        return True

    def _note(self, url: str, created_at: int) -> None:
        # clamp to now: one event dated in the future must not make us skip the present
        seen = min(created_at, int(time.time()))
        self._latest[url] = max(self._latest.get(url, 0), seen)

    def _seen_before(self, url: str, event_id: str) -> tuple[str, ...] | None:
        """The signatures of the copies of ``event_id`` passed on, if one was."""
        seen = self._seen.get(event_id)
        if seen is None:
            return None
        self._seen.move_to_end(event_id)
        self._note(url, seen[0])
        return seen[1]

    def _deliver(self, url: str, event: Event) -> None:
        self._note(url, event["created_at"])
        if self._sink is None and len(self._items) >= self._queue_size:
            oldest, _ = self._items.popleft()
            self._seen.pop(oldest["id"], None)  # a later copy from another relay may get through
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription %s: consumer too slow, %d dropped", self.id, self.dropped)
        created_at, sigs = self._seen.get(event["id"], (event["created_at"], ()))
        self._seen[event["id"]] = (created_at, (*sigs, event["sig"]))
        if len(self._seen) > self._dedup_size:
            self._seen.popitem(last=False)
        if self._sink is None:
            self._items.append((event, url not in self.eose))
            self._wakeup.set()
            return
        try:
            self._sink(event, url not in self.eose)
        except Exception:  # the reader's bug loses that event, never the relay's connection
            log.exception("subscription %s: its sink failed on %s", self.id, event["id"][:12])

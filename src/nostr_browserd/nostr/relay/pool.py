"""The pool: several relays, and what spans them (subscriptions, EOSE, a publish to all)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from ..nip01 import MAX_FRAME, Event, check_shape, close_message, req_message
from ..signer import Signer
from .connection import Connection, ConnectionLost, ConnectionSettings, Relay, RelayStatus, short
from .publish import PublishResult, publish_to
from .subscription import Subscription

__all__ = ["RelayPool"]


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a relay URL (want ws:// or wss://host): {url!r}")
    return url


class RelayPool:
    """Connections to several relays: subscribe across all of them, publish to all of them.

    ::

        async with RelayPool(urls, auth_signer=signer) as pool:
            inbox = pool.subscribe([{"kinds": [1059], "#p": [me], "since": two_days_ago}],
                                   advance_since=False)
            async for wrap in inbox:  # verified, each id once
                result = await pool.publish(reply_to(wrap))
                if not result.ok:
                    log.warning("nobody took the reply: %s", result.refused)

    Use ``async with`` or call :meth:`start` and :meth:`close`.
    ``auth_signer`` answers NIP-42 challenges; without it, AUTH requests are ignored and
    refusals with ``auth-required:`` are reported as they are.  ``backoff_base`` and
    ``backoff_cap`` (seconds) bound the reconnect delays; ``max_frame`` (bytes) is the
    largest message a relay may send before it is disconnected.
    """

    def __init__(
        self,
        urls: Iterable[str] = (),
        *,
        auth_signer: Signer | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        open_timeout: float = 10.0,
        ping_interval: float | None = 20.0,
        max_frame: int = MAX_FRAME,
        auth_timeout: float = 10.0,
    ) -> None:
        self._settings = ConnectionSettings(
            connect_options={
                "open_timeout": open_timeout,
                "ping_interval": ping_interval,
                "ping_timeout": ping_interval,
                "close_timeout": 2.0,
                "max_size": max_frame,
                "max_queue": 16,
            },
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
            auth_signer=auth_signer,
            auth_timeout=auth_timeout,
        )
        self._relays: dict[str, Relay] = {}
        self._subs: dict[str, Subscription] = {}
        self.last_reconnect: float | None = None
        """``time.monotonic()`` when a reading connection last came back after a loss: what
        a peer sent meanwhile (ephemeral events) may be lost, so requests may be re-sent."""
        self._started = False
        for url in urls:
            self.add_relay(url)

    async def __aenter__(self) -> RelayPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def urls(self) -> list[str]:
        """The relays in the pool, in the order they were added."""
        return list(self._relays)

    def add_relay(self, url: str) -> None:
        """Add a relay (``ws://`` or ``wss://``); it connects now if the pool is started."""
        if _check_url(url) in self._relays:
            return
        relay = Relay(self, self._settings, url)
        self._relays[url] = relay
        if self._started:
            relay.start()

    async def remove_relay(self, url: str) -> None:
        """Disconnect from a relay and forget it; unknown URLs are ignored."""
        relay = self._relays.pop(url, None)
        if relay:
            await relay.stop()
            for sub in self._subs.values():
                self._check_eose(sub)

    async def start(self) -> None:
        """Connect to every relay (in the background: see :meth:`wait_connected`)."""
        if self._started:
            return
        self._started = True
        for relay in self._relays.values():
            relay.start()

    async def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until both connections to every relay are open; False on timeout."""
        waits = [c.opened.wait() for r in self._relays.values() for c in (r.reader, r.writer)]
        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*waits)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """End every subscription and close every connection cleanly."""
        for sub in list(self._subs.values()):
            sub.close()
        await asyncio.gather(*(self.remove_relay(url) for url in list(self._relays)))
        self._started = False

    def status(self) -> dict[str, RelayStatus]:
        """A snapshot per relay URL: states, last error and notice, counters."""
        return {url: relay.status() for url, relay in self._relays.items()}

    def subscribe(
        self,
        filters: list[dict[str, Any]],
        *,
        sub_id: str | None = None,
        advance_since: bool = True,
        queue_size: int = 1000,
        dedup_size: int = 10_000,
        unverified: frozenset[int] = frozenset(),
        sink: Callable[[Event, bool], None] | None = None,
    ) -> Subscription:
        """Subscribe on every relay, now and after every reconnect.

        ``advance_since=False`` re-sends the filters unchanged after a reconnect: use it for
        gift wraps (kind 1059), whose ``created_at`` is randomised up to two days back.
        ``unverified``: kinds whose signature the reader verifies itself before it trusts
        them (see :class:`Subscription`).  ``sink``: called with each event, and whether its
        relay had it stored, as it arrives, instead of queueing it for ``async for`` (which
        then only ends when the subscription does; :meth:`Subscription.wait_closed` too).
        """
        if not filters or not all(isinstance(f, dict) for f in filters):
            raise ValueError("filters must be a non-empty list of dicts")
        sub_id = sub_id or secrets.token_hex(8)
        if sub_id in self._subs:
            raise ValueError(f"subscription id {sub_id!r} is already in use")
        sub = Subscription(
            self._unsubscribe,
            sub_id,
            filters,
            advance_since=advance_since,
            queue_size=queue_size,
            dedup_size=dedup_size,
            unverified=unverified,
            sink=sink,
        )
        self._subs[sub_id] = sub
        for relay in self._relays.values():
            relay.reader.post(req_message(sub_id, *filters))
        self._check_eose(sub)
        return sub

    async def publish(self, event: Event, timeout: float = 10.0) -> PublishResult:
        """Send a signed event to every relay and wait up to ``timeout`` s for their OKs.

        A relay that is not connected is waited for (it may be reconnecting) only until
        another relay has accepted the event: one dead relay must not delay every publish
        by the full timeout.  A refusal with ``auth-required:`` is retried once after the
        relay accepted our AUTH.  Raises :class:`InvalidEvent` if ``event`` is not even
        shaped like an event; the signature is left for the relays to judge.
        """
        if not self._started:
            raise RuntimeError("start the pool before publishing")
        check_shape(event)
        urls = list(self._relays)
        accepted = asyncio.Event()
        can_auth = self._settings.auth_signer is not None
        acks = await asyncio.gather(
            *(
                publish_to(self._relays[url].writer, event, timeout, accepted, can_auth=can_auth)
                for url in urls
            )
        )
        return PublishResult(event["id"], dict(zip(urls, acks, strict=True)))

    def _unsubscribe(self, sub: Subscription) -> None:
        if self._subs.pop(sub.id, None) is sub:
            for relay in self._relays.values():
                relay.reader.post(close_message(sub.id))

    def _check_eose(self, sub: Subscription) -> None:
        answered = sub.eose | set(sub.closed_by)
        if all(
            url in answered or relay.reader.state == "backoff"
            for url, relay in self._relays.items()
        ):
            sub.note_answered()

    # -- called by the connections (ConnectionOwner) ------------------------------------

    def reading_reopened(self) -> None:
        self.last_reconnect = time.monotonic()

    async def resubscribe(self, conn: Connection) -> None:
        for sub in list(self._subs.values()):
            if self._subs.get(sub.id) is sub:  # not closed while we waited for room
                await conn.send(req_message(sub.id, *sub.resent_to(conn.url)))

    def relay_changed(self, relay: Relay) -> None:
        for sub in self._subs.values():
            self._check_eose(sub)

    def passed_on(self, conn: Connection, sub_id: str, event_id: str, sig: str) -> bool:
        sub = self._subs.get(sub_id)
        return sub is not None and sub.passed_on(conn.url, event_id, sig, conn.relay.counts)

    def on_event(self, conn: Connection, sub_id: str, event: dict[str, Any]) -> None:
        sub = self._subs.get(sub_id)
        if sub is not None:  # else a late event for a subscription we closed
            sub.receive(conn.url, event, conn.relay.counts)

    def on_eose(self, conn: Connection, sub_id: str) -> None:
        sub = self._subs.get(sub_id)
        if sub:
            sub.eose.add(conn.url)
            self._check_eose(sub)

    def on_closed(self, conn: Connection, sub_id: str, reason: str) -> None:
        sub = self._subs.get(sub_id)
        if sub is None:
            return
        if (
            reason.startswith("auth-required:")
            and self._settings.auth_signer is not None
            and sub_id not in conn.auth_retried
        ):
            conn.auth_retried.add(sub_id)
            conn.spawn(self._resubscribe_after_auth(conn, sub, reason))
            return
        sub.closed_by[conn.url] = short(reason)
        self._check_eose(sub)

    async def _resubscribe_after_auth(
        self, conn: Connection, sub: Subscription, reason: str
    ) -> None:
        try:
            async with asyncio.timeout(self._settings.auth_timeout):
                await conn.authenticated.wait()
        except TimeoutError:
            sub.closed_by[conn.url] = short(reason)
            self._check_eose(sub)
            return
        if self._subs.get(sub.id) is sub:
            with contextlib.suppress(ConnectionLost):  # then it is re-sent on reconnect
                await conn.send(req_message(sub.id, *sub.filters_for(conn.url)))

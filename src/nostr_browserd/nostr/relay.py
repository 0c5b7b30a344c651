"""An asyncio pool of Nostr relay connections, built on ``websockets``.

Why it is shaped this way:

- Two connections per relay: one reads (subscriptions), one publishes.  A reply published on
  the connection that carried the request stalled ~40 ms behind the relay's delayed ACK
  (reference/nostr.md); a connection of its own removes the stall.  asyncio already sets
  TCP_NODELAY on our sockets, and we send our ACKs at once (TCP_QUICKACK, see
  :func:`_ack_now`) so a relay's Nagle never waits on us either.
- Every event is verified (id and signature) and checked against the subscription's filters
  before a subscriber sees it, then de-duplicated per subscription by id across relays and
  reconnects (bounded LRU).
- Subscriptions are re-sent on reconnect with ``since`` advanced to the newest ``created_at``
  that relay delivered, minus :data:`SINCE_MARGIN`.  Gift wraps (NIP-59) carry ``created_at``
  randomised up to two days into the past, so their subscriptions pass
  ``advance_since=False``: advancing would skip wraps published while a relay was away.
- Everything is bounded: frame size, the outbound queue of each connection, each
  subscription's queue and its LRU.  A relay that sends garbage is counted and ignored; one
  that sends huge frames or stops reading is disconnected and retried with backoff; one that
  never answers only costs a timeout.  No relay can hold up another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import socket
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ..net import is_loopback_host
from .nip01 import (
    Auth,
    Closed,
    Eose,
    Event,
    EventFrame,
    InvalidEvent,
    Notice,
    Ok,
    RelayMessageError,
    auth_message,
    check_shape,
    close_message,
    event_message,
    matches,
    parse_relay_message,
    req_message,
    verify_event,
)
from .nip42 import auth_template
from .signer import Signer

__all__ = [
    "MAX_AUTH_ATTEMPTS",
    "OUTBOX_SIZE",
    "SINCE_MARGIN",
    "PublishResult",
    "RelayAck",
    "RelayPool",
    "RelayStatus",
    "Subscription",
    "backoff_delay",
]

log = logging.getLogger(__name__)

State = Literal["connecting", "connected", "backoff", "closed"]

SINCE_MARGIN = 120
"""Seconds subtracted from the newest ``created_at`` seen when a subscription is re-sent
(relays' clocks and late-indexed events)."""

OUTBOX_SIZE = 256
"""Frames that may wait to be written on one connection.  Publishers wait for room (within
their timeout); a REQ or CLOSE that finds no room means the relay stopped reading, and the
connection is dropped, as it is when one write takes longer than the ping interval."""

_COUNTS = (
    "connects",
    "events",
    "duplicates",
    "invalid",
    "unmatched",
    "bad_messages",
    "notices",
    "auth",
)

MAX_AUTH_ATTEMPTS = 3
"""AUTH challenges answered per connection before we stop (each may need a remote signer)."""

_TEXT_LIMIT = 300  # relays' notices and errors are kept truncated to this many characters


class _ConnectionLost(Exception):
    """The connection closed while a request was waiting for the relay's answer."""


@dataclass(frozen=True)
class RelayAck:
    """One relay's answer to a publish: ``OK`` true/false and its message, or why none came.

    ``accepted`` is also true for a ``duplicate:`` answer: the relay has the event.
    """

    accepted: bool
    message: str


@dataclass(frozen=True)
class PublishResult:
    """Per-relay outcome of :meth:`RelayPool.publish`."""

    event_id: str
    acks: dict[str, RelayAck]

    @property
    def accepted(self) -> list[str]:
        """URLs of the relays that stored the event."""
        return [url for url, ack in self.acks.items() if ack.accepted]

    @property
    def refused(self) -> dict[str, str]:
        """URL → reason, for every relay that did not accept (refusal, timeout, no connection)."""
        return {url: ack.message for url, ack in self.acks.items() if not ack.accepted}

    @property
    def ok(self) -> bool:
        """True if at least one relay accepted the event."""
        return bool(self.accepted)


@dataclass(frozen=True)
class RelayStatus:
    """A snapshot of one relay for ``status()``: connection states, last problems, counters.

    ``counts`` keys: ``connects``, ``events`` (valid events received, duplicates and
    unmatched included), ``duplicates``, ``invalid`` (failed verification), ``unmatched``
    (outside the subscription's filters), ``bad_messages`` (not a valid relay message),
    ``notices``, ``auth`` (AUTHs the relay accepted).
    """

    state: State
    publish_state: State
    authenticated: bool
    last_error: str | None
    last_notice: str | None
    counts: dict[str, int]


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter: uniform in [d/2, d], d = min(cap, base * 2**attempt).

    The jitter spreads out reconnections of many clients after a relay restarts.
    """
    delay = min(cap, base * 2 ** min(attempt, 32))
    return random.uniform(delay / 2, delay)


def _ack_now(sock: socket.socket | None) -> None:
    """Acknowledge what we received right away instead of after Linux's 40 ms delayed ACK.

    A relay that has written a small frame (EOSE, say) holds its next one back (Nagle)
    until that ACK arrives, so without this the first event after a quiet moment came
    ~40 ms late.  TCP_QUICKACK is not sticky, hence once per received frame.
    """
    if sock is not None and hasattr(socket, "TCP_QUICKACK"):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


async def _first_of(*events: asyncio.Event) -> None:
    """Wait until any of ``events`` is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def _short(text: object) -> str:
    return str(text)[:_TEXT_LIMIT]


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"not a relay URL (want ws:// or wss://host): {url!r}")
    return url


class Subscription:
    """Events matching ``filters`` from every relay of the pool: verified, de-duplicated.

    Iterate with ``async for``; iteration ends when the subscription or the pool is closed.
    If the consumer falls ``queue_size`` events behind, the oldest waiting event is dropped
    for each new one and counted in ``dropped`` (the pool must not grow without bound or stall
    other subscriptions; what just arrived, a command behind a flood, is what matters most).

    ``stored`` says of the event iteration returned last whether its relay had it stored
    (it came before that relay's EOSE for this REQ, a reconnect's included) rather than live:
    only a stored event may be one this process, or an earlier one, has handled before.
    """

    def __init__(
        self,
        pool: RelayPool,
        sub_id: str,
        filters: list[dict[str, Any]],
        *,
        advance_since: bool,
        queue_size: int,
        dedup_size: int,
    ) -> None:
        self.id = sub_id
        self.filters = filters
        self.advance_since = advance_since
        self.eose: set[str] = set()
        self.closed_by: dict[str, str] = {}
        self.dropped = 0
        self._pool = pool
        self._queue_size = queue_size
        self._dedup_size = dedup_size
        self._items: deque[tuple[Event, bool]] = deque()  # (event, stored)
        self.stored = True
        self._wakeup = asyncio.Event()
        self._seen: OrderedDict[str, int] = OrderedDict()  # id -> created_at
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

    @property
    def closed(self) -> bool:
        """True once :meth:`close` (or the pool's) ended the subscription."""
        return self._closed

    def close(self) -> None:
        """Stop the subscription on every relay and end iteration (after queued events)."""
        if not self._closed:
            self._pool._unsubscribe(self)
            self._end()

    def _end(self) -> None:
        self._closed = True
        self._wakeup.set()

    def _filters_for(self, url: str) -> list[dict[str, Any]]:
        """The filters to (re)send to ``url``: ``since`` advanced past what it already gave."""
        latest = self._latest.get(url)
        if not self.advance_since or latest is None:
            return self.filters
        since = latest - SINCE_MARGIN
        return [{**f, "since": max(f.get("since", 0), since)} for f in self.filters]

    def _note(self, url: str, created_at: int) -> None:
        # clamp to now: one event dated in the future must not make us skip the present
        seen = min(created_at, int(time.time()))
        self._latest[url] = max(self._latest.get(url, 0), seen)

    def _seen_before(self, url: str, event_id: str) -> bool:
        created_at = self._seen.get(event_id)
        if created_at is None:
            return False
        self._seen.move_to_end(event_id)
        self._note(url, created_at)
        return True

    def _deliver(self, url: str, event: Event) -> None:
        self._note(url, event["created_at"])
        if len(self._items) >= self._queue_size:
            oldest, _ = self._items.popleft()
            self._seen.pop(oldest["id"], None)  # a later copy from another relay may get through
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("subscription %s: consumer too slow, %d dropped", self.id, self.dropped)
        self._seen[event["id"]] = event["created_at"]
        if len(self._seen) > self._dedup_size:
            self._seen.popitem(last=False)
        self._items.append((event, url not in self.eose))
        self._wakeup.set()


class _Connection:
    """One websocket to one relay, reopened with backoff until the pool stops it."""

    def __init__(self, pool: RelayPool, relay: _Relay, purpose: Literal["read", "publish"]):
        self.pool = pool
        self.relay = relay
        self.purpose = purpose
        self.state: State = "connecting"
        self.opened = asyncio.Event()
        self.authenticated = asyncio.Event()
        self.auth_retried: set[str] = set()  # subscription ids re-sent after AUTH, this socket
        self._ws: ClientConnection | None = None
        self._outbox: asyncio.Queue[str] | None = None
        self._waiting_ok: dict[str, asyncio.Future[tuple[bool, str]]] = {}
        self._auth_task: asyncio.Task[None] | None = None
        self._helpers: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._abort_reason: str | None = None
        self._auth_attempts = 0
        self._opens = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"relay {self.purpose} {self.url}")

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.state = "closed"

    @property
    def url(self) -> str:
        return self.relay.url

    def post(self, frame: str) -> None:
        """Queue ``frame`` without waiting; dropped if not connected (re-sent on connect)."""
        if self._ws is None or self._outbox is None:
            return
        try:
            self._outbox.put_nowait(frame)
        except asyncio.QueueFull:
            self._abort(self._ws, "the relay is not reading what we send")

    async def send(self, frame: str) -> None:
        """Queue ``frame``, waiting for room in the outbox as long as the socket lives."""
        ws, outbox = self._ws, self._outbox
        if ws is None or outbox is None:
            raise _ConnectionLost("not connected")
        if not outbox.full():
            outbox.put_nowait(frame)
            return
        put = asyncio.ensure_future(outbox.put(frame))
        closed = asyncio.ensure_future(ws.wait_closed())
        try:
            await asyncio.wait([put, closed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            queued = put.done()
            if not queued:
                put.cancel()
        if not queued:
            raise _ConnectionLost("connection closed while waiting to send")

    async def request_ok(self, frame: str, event_id: str) -> tuple[bool, str]:
        """Send an EVENT or AUTH frame and wait for the relay's ``OK`` for ``event_id``.

        The caller bounds the wait; raises :class:`_ConnectionLost` if the socket goes away.
        """
        future = self._waiting_ok.get(event_id)
        if future is not None:  # the same event is already in flight here: share its answer
            return await asyncio.shield(future)
        future = asyncio.get_running_loop().create_future()
        self._waiting_ok[event_id] = future
        try:
            await self.send(frame)
            return await future
        finally:
            if self._waiting_ok.get(event_id) is future:
                del self._waiting_ok[event_id]

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a helper that lives only as long as this socket."""
        task = asyncio.create_task(coro)
        self._helpers.add(task)
        task.add_done_callback(self._helpers.discard)

    async def _run(self) -> None:
        attempt = 0
        while True:
            self._set_state("connecting")
            self._abort_reason = None
            opened_at: float | None = None
            try:
                options = self.pool._connect_options
                # Loopback relays never go through a proxy; True: the environment's, if any.
                proxy: Literal[True] | None = (
                    None if is_loopback_host(urlsplit(self.url).netloc) else True
                )
                async with connect(self.url, proxy=proxy, **options) as ws:
                    opened_at = time.monotonic()
                    await self._serve(ws)
                error = "connection closed by the relay"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure of one relay must not end the pool
                error = f"{type(exc).__name__}: {exc}"
            finally:
                self._drop_socket()
            self.relay.last_error = _short(self._abort_reason or error)
            if opened_at is not None and time.monotonic() - opened_at >= self.pool._backoff_cap:
                attempt = 0  # it stayed up a while: start over from the short delays
            delay = backoff_delay(attempt, self.pool._backoff_base, self.pool._backoff_cap)
            attempt += 1
            log.info("%s (%s): %s; retrying in %.1f s", self.url, self.purpose, error, delay)
            self._set_state("backoff")
            await asyncio.sleep(delay)

    async def _serve(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._outbox = asyncio.Queue(OUTBOX_SIZE)
        writer = asyncio.create_task(self._write(ws, self._outbox))
        try:
            self.relay.counts["connects"] += 1
            self._opens += 1
            if self.purpose == "read" and self._opens > 1:
                self.pool.last_reconnect = time.monotonic()
            self.opened.set()
            self._set_state("connected")
            if self.purpose == "read":
                await self.pool._resubscribe(self)
            sock = ws.transport.get_extra_info("socket")
            async for raw in ws:
                self._handle(raw)
                _ack_now(sock)
        finally:
            writer.cancel()
            await ws.close()  # normal closure (1000), also when the pool stops us

    async def _write(self, ws: ClientConnection, outbox: asyncio.Queue[str]) -> None:
        # A relay that stops reading blocks our writes, and websockets' keepalive with them
        # (its ping queues behind our data): so writes get the ping interval as a deadline.
        deadline = self.pool._connect_options["ping_interval"]
        with contextlib.suppress(ConnectionClosed):  # the reading side reports the loss
            while True:
                frame = await outbox.get()
                try:
                    async with asyncio.timeout(deadline):
                        await ws.send(frame)
                except TimeoutError:
                    self._abort(ws, f"the relay took no data from us for {deadline} s")
                    return

    def _abort(self, ws: ClientConnection, reason: str) -> None:
        self._abort_reason = reason
        ws.transport.abort()

    def _drop_socket(self) -> None:
        self._ws = None
        self._outbox = None
        self.opened.clear()
        self.authenticated.clear()
        self.auth_retried.clear()
        self._auth_attempts = 0
        for future in self._waiting_ok.values():
            if not future.done():
                future.set_exception(_ConnectionLost("connection lost"))
        self._waiting_ok.clear()
        for task in [self._auth_task, *self._helpers]:
            if task:
                task.cancel()
        self._auth_task = None

    def _set_state(self, state: State) -> None:
        self.state = state
        self.pool._relay_changed(self.relay)

    def _handle(self, raw: str | bytes) -> None:
        try:
            message = parse_relay_message(raw)
        except RelayMessageError as exc:
            self.relay.counts["bad_messages"] += 1
            log.debug("%s: ignored a bad message: %s", self.url, exc)
            return
        match message:
            case EventFrame(sub_id, event) if self.purpose == "read":
                self.pool._on_event(self, sub_id, event)
            case Eose(sub_id):
                self.pool._on_eose(self, sub_id)
            case Closed(sub_id, reason):
                self.pool._on_closed(self, sub_id, reason)
            case Ok(event_id, accepted, reason):
                self._on_ok(event_id, accepted, reason)
            case Notice(text):
                self.relay.counts["notices"] += 1
                self.relay.last_notice = _short(text)
                log.info("%s notice: %s", self.url, self.relay.last_notice)
            case Auth(challenge):
                self._on_auth(challenge)
            case _:  # an EVENT on the publishing connection, which subscribes to nothing
                self.relay.counts["bad_messages"] += 1

    def _on_ok(self, event_id: str, accepted: bool, reason: str) -> None:
        future = self._waiting_ok.get(event_id)
        if future is None and len(self._waiting_ok) == 1:
            # Some relays (nostr-relay) answer an event they could not parse with an empty
            # id; with a single request in flight the answer can only be for that one.
            [future] = self._waiting_ok.values()
        if future is not None and not future.done():
            future.set_result((accepted, reason))

    def _on_auth(self, challenge: str) -> None:
        # Each answer may cost a remote signer a round trip, or its user a prompt: answer
        # only until authenticated, and only a few times per connection.
        if self.pool._auth_signer is None or self.authenticated.is_set():
            return
        if self._auth_attempts >= MAX_AUTH_ATTEMPTS:
            self.relay.last_error = "the relay keeps asking for AUTH; no longer answering"
            return
        self._auth_attempts += 1
        if self._auth_task:
            self._auth_task.cancel()  # a newer challenge replaces the old one
        self._auth_task = asyncio.create_task(self._authenticate(challenge))

    async def _authenticate(self, challenge: str) -> None:
        """Answer a NIP-42 challenge through the pool's signer (which may be remote)."""
        signer = self.pool._auth_signer
        assert signer is not None
        try:
            async with asyncio.timeout(self.pool._auth_timeout):
                event = await signer.sign_event(auth_template(self.url, challenge))
                accepted, reason = await self.request_ok(auth_message(event), event["id"])
        except (TimeoutError, _ConnectionLost) as exc:
            self.relay.last_error = _short(f"AUTH failed: {exc or 'timed out'}")
            return
        except Exception as exc:  # a failing signer must not take the connection down
            self.relay.last_error = _short(f"AUTH signing failed: {exc}")
            return
        if accepted:
            self.relay.counts["auth"] += 1
            self.authenticated.set()
            self.pool._relay_changed(self.relay)
        else:
            self.relay.last_error = _short(f"AUTH refused: {reason}")


class _Relay:
    """Both connections to one relay, and what they observed."""

    def __init__(self, pool: RelayPool, url: str) -> None:
        self.url = url
        self.counts: Counter[str] = Counter()
        self.last_error: str | None = None
        self.last_notice: str | None = None
        self.reader = _Connection(pool, self, "read")
        self.writer = _Connection(pool, self, "publish")

    def start(self) -> None:
        self.reader.start()
        self.writer.start()

    async def stop(self) -> None:
        await asyncio.gather(self.reader.stop(), self.writer.stop())

    def status(self) -> RelayStatus:
        return RelayStatus(
            state=self.reader.state,
            publish_state=self.writer.state,
            authenticated=self.reader.authenticated.is_set() or self.writer.authenticated.is_set(),
            last_error=self.last_error,
            last_notice=self.last_notice,
            counts={name: self.counts[name] for name in _COUNTS},
        )


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
        max_frame: int = 1 << 20,
        auth_timeout: float = 10.0,
    ) -> None:
        self._auth_signer = auth_signer
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        self._auth_timeout = auth_timeout
        self._connect_options: dict[str, Any] = {
            "open_timeout": open_timeout,
            "ping_interval": ping_interval,
            "ping_timeout": ping_interval,
            "close_timeout": 2.0,
            "max_size": max_frame,
            "max_queue": 16,
        }
        self._relays: dict[str, _Relay] = {}
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
        relay = _Relay(self, url)
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
    ) -> Subscription:
        """Subscribe on every relay, now and after every reconnect.

        ``advance_since=False`` re-sends the filters unchanged after a reconnect: use it for
        gift wraps (kind 1059), whose ``created_at`` is randomised up to two days back.
        """
        if not filters or not all(isinstance(f, dict) for f in filters):
            raise ValueError("filters must be a non-empty list of dicts")
        sub_id = sub_id or secrets.token_hex(8)
        if sub_id in self._subs:
            raise ValueError(f"subscription id {sub_id!r} is already in use")
        sub = Subscription(
            self,
            sub_id,
            filters,
            advance_since=advance_since,
            queue_size=queue_size,
            dedup_size=dedup_size,
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
        acks = await asyncio.gather(
            *(self._publish_to(self._relays[url].writer, event, timeout, accepted) for url in urls)
        )
        return PublishResult(event["id"], dict(zip(urls, acks, strict=True)))

    async def _publish_to(
        self, conn: _Connection, event: Event, timeout: float, accepted_elsewhere: asyncio.Event
    ) -> RelayAck:
        frame = event_message(event)
        auth_retried = False
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if not conn.opened.is_set():
                        last = f"not connected: {conn.relay.last_error or conn.state}"
                        await _first_of(conn.opened, accepted_elsewhere)
                        if not conn.opened.is_set():
                            return RelayAck(False, _short(last))
                    last = f"no OK within {timeout} s"
                    try:
                        accepted, reason = await conn.request_ok(frame, event["id"])
                    except _ConnectionLost:
                        continue  # wait for the reconnection, send again
                    # it has the event already; some relays (nostr-relay) say so with false
                    accepted = accepted or reason.startswith("duplicate:")
                    if accepted:
                        accepted_elsewhere.set()
                    needs_auth = not accepted and reason.startswith("auth-required:")
                    if not needs_auth or auth_retried or self._auth_signer is None:
                        return RelayAck(accepted, reason)
                    last, auth_retried = reason, True
                    await conn.authenticated.wait()
        except TimeoutError:
            return RelayAck(False, _short(f"timeout: {last}"))

    # -- called by the connections ------------------------------------------------------

    def _unsubscribe(self, sub: Subscription) -> None:
        if self._subs.pop(sub.id, None) is sub:
            for relay in self._relays.values():
                relay.reader.post(close_message(sub.id))

    async def _resubscribe(self, conn: _Connection) -> None:
        for sub in list(self._subs.values()):
            if self._subs.get(sub.id) is sub:  # not closed while we waited for room
                sub.closed_by.pop(conn.url, None)
                sub.eose.discard(conn.url)  # what comes before its next EOSE is stored
                await conn.send(req_message(sub.id, *sub._filters_for(conn.url)))

    def _relay_changed(self, relay: _Relay) -> None:
        for sub in self._subs.values():
            self._check_eose(sub)

    def _check_eose(self, sub: Subscription) -> None:
        answered = sub.eose | set(sub.closed_by)
        if all(
            url in answered or relay.reader.state == "backoff"
            for url, relay in self._relays.items()
        ):
            sub._all_answered.set()

    def _on_event(self, conn: _Connection, sub_id: str, event: dict[str, Any]) -> None:
        sub = self._subs.get(sub_id)
        if sub is None:
            return  # a late event for a subscription we closed
        counts = conn.relay.counts
        event_id = event.get("id")
        if isinstance(event_id, str) and sub._seen_before(conn.url, event_id):
            counts["events"] += 1
            counts["duplicates"] += 1
            return
        try:
            verify_event(event)
        except InvalidEvent as exc:
            counts["invalid"] += 1
            log.debug("%s: dropped invalid event: %s", conn.url, exc.reason)
            return
        counts["events"] += 1
        if not any(matches(f, event) for f in sub.filters):
            counts["unmatched"] += 1
            return
        sub._deliver(conn.url, event)

    def _on_eose(self, conn: _Connection, sub_id: str) -> None:
        sub = self._subs.get(sub_id)
        if sub:
            sub.eose.add(conn.url)
            self._check_eose(sub)

    def _on_closed(self, conn: _Connection, sub_id: str, reason: str) -> None:
        sub = self._subs.get(sub_id)
        if sub is None:
            return
        if (
            reason.startswith("auth-required:")
            and self._auth_signer is not None
            and sub_id not in conn.auth_retried
        ):
            conn.auth_retried.add(sub_id)
            conn.spawn(self._resubscribe_after_auth(conn, sub, reason))
            return
        sub.closed_by[conn.url] = _short(reason)
        self._check_eose(sub)

    async def _resubscribe_after_auth(
        self, conn: _Connection, sub: Subscription, reason: str
    ) -> None:
        try:
            async with asyncio.timeout(self._auth_timeout):
                await conn.authenticated.wait()
        except TimeoutError:
            sub.closed_by[conn.url] = _short(reason)
            self._check_eose(sub)
            return
        if self._subs.get(sub.id) is sub:
            with contextlib.suppress(_ConnectionLost):  # then it is re-sent on reconnect
                await conn.send(req_message(sub.id, *sub._filters_for(conn.url)))

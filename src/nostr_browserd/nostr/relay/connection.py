"""One relay's two websockets (reading and publishing), each reopened with backoff.

A connection writes through a bounded outbox with a deadline per write, parses what the relay
sends and hands subscription traffic to its :class:`ConnectionOwner` (the pool), matches
``OK`` answers to the requests that wait for them, and answers NIP-42 challenges a few times
at most.  What one relay does never reaches another relay's connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from ...net import is_loopback_host
from ..nip01 import (
    Auth,
    Closed,
    Eose,
    EventFrame,
    Notice,
    Ok,
    RelayMessageError,
    auth_message,
    copy_of,
    parse_relay_message,
)
from ..nip42 import auth_template
from ..signer import Signer

__all__ = [
    "MAX_AUTH_ATTEMPTS",
    "OUTBOX_SIZE",
    "Connection",
    "ConnectionLost",
    "ConnectionOwner",
    "ConnectionSettings",
    "Relay",
    "RelayStatus",
    "backoff_delay",
    "short",
]

log = logging.getLogger(__name__)

State = Literal["connecting", "connected", "backoff", "closed"]

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
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only


class ConnectionLost(Exception):
    """The connection closed while a request was waiting for the relay's answer."""


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


@dataclass(frozen=True)
class ConnectionSettings:
    """The pool's settings every connection shares: websockets' options, backoff, AUTH."""

    connect_options: dict[str, Any]
    backoff_base: float
    backoff_cap: float
    auth_signer: Signer | None
    auth_timeout: float


class ConnectionOwner(Protocol):
    """What a connection tells the pool: what spans relays (subscriptions, EOSE) is the pool's."""

    def reading_reopened(self) -> None: ...

    async def resubscribe(self, conn: Connection) -> None: ...

    def relay_changed(self, relay: Relay) -> None: ...

    def passed_on(self, conn: Connection, sub_id: str, event_id: str, sig: str) -> bool:
        """Whether this copy of ``event_id`` (signed ``sig``) was passed on already for
        ``sub_id``, and so is dropped unparsed."""
        ...

    def on_event(self, conn: Connection, sub_id: str, event: dict[str, Any]) -> None: ...

    def on_eose(self, conn: Connection, sub_id: str) -> None: ...

    def on_closed(self, conn: Connection, sub_id: str, reason: str) -> None: ...


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with jitter: uniform in [d/2, d], d = min(cap, base * 2**attempt).

    The jitter spreads out reconnections of many clients after a relay restarts.
    """
    delay = min(cap, base * 2 ** min(attempt, 32))
    return random.uniform(delay / 2, delay)


def ack_now(sock: socket.socket | None) -> None:
    """Acknowledge what we received right away instead of after Linux's 40 ms delayed ACK.

    A relay that has written a small frame (EOSE, say) holds its next one back (Nagle)
    until that ACK arrives, so without this the first event after a quiet moment came
    ~40 ms late.  TCP_QUICKACK is not sticky, hence once per received frame (so no context
    manager or attribute look-up here: every worker pays this for every frame of every relay).
    """
    if sock is not None and _QUICKACK is not None:
        try:  # noqa: SIM105 (contextlib.suppress is an object and two calls per frame)
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:
            pass


def short(text: object) -> str:
    """A relay's notice or error as we keep it: truncated."""
    return str(text)[:_TEXT_LIMIT]


class Connection:
    """One websocket to one relay, reopened with backoff until the pool stops it."""

    def __init__(self, relay: Relay, purpose: Literal["read", "publish"]):
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

    @property
    def _owner(self) -> ConnectionOwner:
        return self.relay.owner

    @property
    def _settings(self) -> ConnectionSettings:
        return self.relay.settings

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
            raise ConnectionLost("not connected")
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
            raise ConnectionLost("connection closed while waiting to send")

    async def request_ok(self, frame: str, event_id: str) -> tuple[bool, str]:
        """Send an EVENT or AUTH frame and wait for the relay's ``OK`` for ``event_id``.

        The caller bounds the wait; raises :class:`ConnectionLost` if the socket goes away.
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
        settings = self._settings
        while True:
            self._set_state("connecting")
            self._abort_reason = None
            opened_at: float | None = None
            try:
                # Loopback relays never go through a proxy; True: the environment's, if any.
                proxy: Literal[True] | None = (
                    None if is_loopback_host(urlsplit(self.url).netloc) else True
                )
                async with connect(self.url, proxy=proxy, **settings.connect_options) as ws:
                    opened_at = time.monotonic()
                    await self._serve(ws)
                error = "connection closed by the relay"
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure of one relay must not end the pool
                error = f"{type(exc).__name__}: {exc}"
            finally:
                self._drop_socket()
            self.relay.last_error = short(self._abort_reason or error)
            if opened_at is not None and time.monotonic() - opened_at >= settings.backoff_cap:
                attempt = 0  # it stayed up a while: start over from the short delays
            delay = backoff_delay(attempt, settings.backoff_base, settings.backoff_cap)
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
                self._owner.reading_reopened()
            self.opened.set()
            self._set_state("connected")
            if self.purpose == "read":
                await self._owner.resubscribe(self)
            sock = ws.transport.get_extra_info("socket")
            async for raw in ws:
                self._handle(raw)
                ack_now(sock)
        finally:
            writer.cancel()
            await ws.close()  # normal closure (1000), also when the pool stops us

    async def _write(self, ws: ClientConnection, outbox: asyncio.Queue[str]) -> None:
        # A relay that stops reading blocks our writes, and websockets' keepalive with them
        # (its ping queues behind our data): so writes get the ping interval as a deadline.
        deadline = self._settings.connect_options["ping_interval"]
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
                future.set_exception(ConnectionLost("connection lost"))
        self._waiting_ok.clear()
        for task in [self._auth_task, *self._helpers]:
            if task:
                task.cancel()
        self._auth_task = None

    def _set_state(self, state: State) -> None:
        self.state = state
        self._owner.relay_changed(self.relay)

    def _handle(self, raw: str | bytes) -> None:
        # Every relay sends every event: the second relay's copy is told from its text.
        if self.purpose == "read" and (copy := copy_of(raw)) and self._owner.passed_on(self, *copy):
            return
        try:
            message = parse_relay_message(raw)
        except RelayMessageError as exc:
            self.relay.counts["bad_messages"] += 1
            log.debug("%s: ignored a bad message: %s", self.url, exc)
            return
        match message:
            case EventFrame(sub_id, event) if self.purpose == "read":
                self._owner.on_event(self, sub_id, event)
            case Eose(sub_id):
                self._owner.on_eose(self, sub_id)
            case Closed(sub_id, reason):
                self._owner.on_closed(self, sub_id, reason)
            case Ok(event_id, accepted, reason):
                self._on_ok(event_id, accepted, reason)
            case Notice(text):
                self.relay.counts["notices"] += 1
                self.relay.last_notice = short(text)
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
        if self._settings.auth_signer is None or self.authenticated.is_set():
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
        signer = self._settings.auth_signer
        assert signer is not None
        try:
            async with asyncio.timeout(self._settings.auth_timeout):
                event = await signer.sign_event(auth_template(self.url, challenge))
                accepted, reason = await self.request_ok(auth_message(event), event["id"])
        except (TimeoutError, ConnectionLost) as exc:
            self.relay.last_error = short(f"AUTH failed: {exc or 'timed out'}")
            return
        except Exception as exc:  # a failing signer must not take the connection down
            self.relay.last_error = short(f"AUTH signing failed: {exc}")
            return
        if accepted:
            self.relay.counts["auth"] += 1
            self.authenticated.set()
            self._owner.relay_changed(self.relay)
        else:
            self.relay.last_error = short(f"AUTH refused: {reason}")


class Relay:
    """Both connections to one relay, and what they observed."""

    def __init__(self, owner: ConnectionOwner, settings: ConnectionSettings, url: str) -> None:
        self.url = url
        self.owner = owner
        self.settings = settings
        self.counts: Counter[str] = Counter()
        self.last_error: str | None = None
        self.last_notice: str | None = None
        self.reader = Connection(self, "read")
        self.writer = Connection(self, "publish")

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

"""Publishing one event: each relay's answer, and how long to wait for it.

A relay that is not connected is waited for only until another relay accepted the event, so
one dead relay does not delay every publish by the whole timeout; a refusal that asks for
AUTH is retried once, after the relay accepted ours.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ..nip01 import Event, event_message
from .connection import Connection, ConnectionLost, short

__all__ = ["PublishResult", "RelayAck", "publish_to"]


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


async def _first_of(*events: asyncio.Event) -> None:
    """Wait until any of ``events`` is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def publish_to(
    conn: Connection,
    event: Event,
    timeout: float,
    accepted_elsewhere: asyncio.Event,
    *,
    can_auth: bool,
) -> RelayAck:
    """Send ``event`` on ``conn`` and return the relay's answer within ``timeout`` seconds.

    ``accepted_elsewhere`` is set here when this relay accepts, and ends the wait for a
    relay that is not connected.  ``can_auth``: the pool answers AUTH, so a refusal with
    ``auth-required:`` is worth one retry.
    """
    frame = event_message(event)
    auth_retried = False
    try:
        async with asyncio.timeout(timeout):
            while True:
                if not conn.opened.is_set():
                    last = f"not connected: {conn.relay.last_error or conn.state}"
                    await _first_of(conn.opened, accepted_elsewhere)
                    if not conn.opened.is_set():
                        return RelayAck(False, short(last))
                last = f"no OK within {timeout} s"
                try:
                    accepted, reason = await conn.request_ok(frame, event["id"])
                except ConnectionLost:
                    continue  # wait for the reconnection, send again
                # it has the event already; some relays (nostr-relay) say so with false
                accepted = accepted or reason.startswith("duplicate:")
                if accepted:
                    accepted_elsewhere.set()
                needs_auth = not accepted and reason.startswith("auth-required:")
                if not needs_auth or auth_retried or not can_auth:
                    return RelayAck(accepted, reason)
                last, auth_retried = reason, True
                await conn.authenticated.wait()
    except TimeoutError:
        return RelayAck(False, short(f"timeout: {last}"))

"""The NIP-46 transport both ends share: kind-24133 events over a relay pool.

One :class:`Channel` owns a pool, subscribes to the events p-tagged to its own key and
yields the decrypted messages; :meth:`Channel.send` encrypts and publishes one.  The
bunker client (``bunker.py``) and the remote signer (``bunker_server.py``) differ only in
what they do with the messages.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..errors import BrowserdError, ErrorCode
from ..nostr import nip46
from ..nostr.nip01 import now
from ..nostr.relay import RelayPool, Subscription
from ..nostr.signer import Event, Signer
from ..ratelog import RateLimitedLog

__all__ = ["Channel", "Incoming"]

log = logging.getLogger(__name__)

# How far back to look when subscribing: NIP-46 events are ephemeral, so this only
# covers clock skew between us, the relay and the peer.
_SINCE_SLACK = 30


@dataclass(frozen=True)
class Incoming:
    """A decrypted message, its sender, and whether it came NIP-04 encrypted."""

    sender: str
    message: nip46.Request | nip46.Response
    nip04: bool
    event: Event


class Channel:
    """Send and receive NIP-46 messages as ``pubkey`` (whose ``transport`` signer decrypts)."""

    def __init__(
        self,
        relays: list[str] | tuple[str, ...],
        transport: Signer,
        pubkey: str,
        *,
        publish_timeout: float = 10.0,
        accept_nip44: bool = True,
    ) -> None:
        """``accept_nip44=False`` makes a legacy (NIP-04 only) end, for tests and old peers."""
        self.relays = tuple(relays)
        self.pubkey = pubkey
        self._transport = transport
        self._publish_timeout = publish_timeout
        self._accept_nip44 = accept_nip44
        self._pool = RelayPool(self.relays, auth_signer=transport)
        self._sub: Subscription | None = None
        self._dropped = RateLimitedLog(log)

    async def open(self, timeout: float = 10.0) -> None:
        """Connect and subscribe; returns once every relay answered the subscription."""
        await self._pool.start()
        self._sub = self._pool.subscribe(
            [{"kinds": [nip46.KIND], "#p": [self.pubkey], "since": now() - _SINCE_SLACK}]
        )
        if not await self._sub.wait_eose(timeout):
            log.info("NIP-46: not every relay answered within %s s; going on", timeout)

    async def wait_connected(self, timeout: float) -> bool:
        """Wait (up to ``timeout`` s) until every relay is connected again."""
        return await self._pool.wait_connected(timeout)

    @property
    def connected(self) -> bool:
        """Whether a relay of the channel is connected now (the signer can be reached)."""
        return any(st.state == "connected" for st in self._pool.status().values())

    @property
    def last_reconnect(self) -> float | None:
        """When (``time.monotonic()``) a relay connection last came back after a loss."""
        return self._pool.last_reconnect

    def add_relay(self, url: str) -> None:
        """Listen and publish on one more relay too (a nostrconnect client's relay)."""
        if url not in self.relays:
            self.relays += (url,)
            self._pool.add_relay(url)

    async def close(self) -> None:
        await self._pool.close()

    async def send(
        self, peer: str, message: nip46.Request | nip46.Response, *, nip04: bool = False
    ) -> None:
        """Encrypt ``message`` to ``peer``, sign and publish it; error if no relay took it."""
        content = await nip46.encrypt_content(self._transport, peer, message.encode(), nip04=nip04)
        event = await self._transport.sign_event(nip46.event_template(peer, content))
        result = await self._pool.publish(event, self._publish_timeout)
        if not result.ok:
            reasons = "; ".join(f"{url}: {why}" for url, why in result.refused.items())
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"no relay accepted the NIP-46 message ({reasons}); check the relays",
            )

    async def messages(self) -> AsyncIterator[Incoming]:
        """Every readable message addressed to us.

        Whatever an event holds, it cannot end this iteration: one that does not decrypt or
        decode is dropped with a (rate-limited) log line.  Iterating again after the
        consumer stopped resumes with the next event.
        """
        assert self._sub is not None, "open() the channel first"
        async for event in self._sub:
            content = event["content"]
            if not self._accept_nip44 and not nip46.is_nip04_payload(content):
                continue
            try:
                text, was_nip04 = await nip46.decrypt_content(
                    self._transport, event["pubkey"], content
                )
                message = nip46.decode_message(text)
            except (ValueError, BrowserdError) as exc:
                self._dropped.warning(
                    "bad", "NIP-46: dropped event %s: %s", event["id"][:12], _reason(exc)
                )
                continue
            except Exception as exc:  # a signer's own failure: still only this event's
                self._dropped.warning(
                    "failed",
                    "NIP-46: dropped event %s: %s",
                    event["id"][:12],
                    type(exc).__name__,
                )
                continue
            yield Incoming(event["pubkey"], message, was_nip04, event)


def _reason(exc: Exception) -> str:
    return exc.message if isinstance(exc, BrowserdError) else str(exc)[:200]

"""Replies go back in the scheme of the request, signed through the Signer, confirmed by OK.

- NIP-04 request (kind 4) → kind 4 reply with ``["p", controller]`` and ``["e", request]``.
- NIP-17 request (gift wrap) → a kind 14 rumor to the controller alone, tagged
  ``["e", rumor id]``, sealed and gift-wrapped.  No copy to ourselves: nobody reads it, and it
  would come back through our own inbox.

A reply too big for one message goes out as numbered parts (:mod:`.chunks`).  Every event is
published to the daemon's relays and, when the controller announced a kind 10050 DM inbox list,
to those relays as well, so a phone that reads only its own inbox still gets the answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..nostr import nip17
from ..nostr.nip01 import Event, now
from ..nostr.relay import PublishResult, RelayPool
from ..nostr.signer import Signer
from .chunks import DEFAULT_PART_BYTES, split
from .messages import DM_KIND, ReplyAddress, Scheme, is_dm

log = logging.getLogger(__name__)

MAX_INBOX_RELAYS = 5  # of a controller's kind 10050; NIP-17 asks clients to keep it short


class Outbox:
    """Encrypts, signs and publishes messages from the daemon."""

    def __init__(
        self,
        signer: Signer,
        pool: RelayPool,
        *,
        part_bytes: int = DEFAULT_PART_BYTES,
        timeout: float = 10.0,
    ) -> None:
        self.signer, self.pool = signer, pool
        self.part_bytes, self.timeout = part_bytes, timeout
        self._inboxes: dict[str, tuple[int, RelayPool]] = {}

    async def reply(self, to: ReplyAddress, text: str, request_id: object = None) -> bool:
        """Answer the message ``to`` names, in its own scheme; True when every part reached a
        relay."""
        if not is_dm(to.scheme):
            raise ValueError(f"{to.scheme} is answered by its own server, not by direct message")
        return await self.send(
            to.sender,
            text,
            scheme=to.scheme,
            reply_to=to.event_id,
            request_id=request_id,
        )

    async def send(
        self,
        recipient: str,
        text: str,
        *,
        scheme: Scheme,
        reply_to: str | None = None,
        request_id: object = None,
    ) -> bool:
        """Send ``text`` (split into parts if needed) to ``recipient``."""
        parts = split(text, request_id, self.part_bytes)
        events = await asyncio.gather(*(self._event(recipient, p, scheme, reply_to) for p in parts))
        results = await asyncio.gather(*(self._publish(recipient, e) for e in events))
        return all(results)

    async def send_file(self, to: ReplyAddress, url: str, tags: list[list[str]]) -> bool:
        """A NIP-17 file message (kind 15) of ``url`` answering ``to``; True when it reached a
        relay.  Only NIP-17 has file messages: a kind 4 chat gets none."""
        wraps = await nip17.make_dm(
            self.signer,
            [to.sender],
            url,
            kind=nip17.FILE_KIND,
            tags=tags,
            reply_to=to.event_id,
            copy_to_self=False,
        )
        return await self._publish(to.sender, wraps[0][1])

    async def _event(
        self, recipient: str, text: str, scheme: Scheme, reply_to: str | None
    ) -> Event:
        if scheme == "nip04":
            tags = [["p", recipient]] + ([["e", reply_to]] if reply_to else [])
            content = await self.signer.nip04_encrypt(recipient, text)
            template = {"kind": DM_KIND, "content": content, "tags": tags, "created_at": now()}
            return await self.signer.sign_event(template)
        wraps = await nip17.make_dm(
            self.signer, [recipient], text, reply_to=reply_to, copy_to_self=False
        )
        return wraps[0][1]

    async def _publish(self, recipient: str, event: Event) -> bool:
        pools = [self.pool]
        if recipient in self._inboxes:
            pools.append(self._inboxes[recipient][1])
        results: Sequence[PublishResult] = await asyncio.gather(
            *(p.publish(event, self.timeout) for p in pools)
        )
        if any(r.ok for r in results):
            return True
        refused = {url: why for r in results for url, why in r.refused.items()}
        log.warning("no relay accepted reply %s: %s", event["id"][:12], refused)
        return False

    async def publish(self, event: Event) -> PublishResult:
        """Publish an already signed event (profile, relay lists) to the daemon's relays."""
        return await self.pool.publish(event, self.timeout)

    async def learn_inbox(self, event: Event) -> None:
        """Remember a controller's kind 10050 DM inbox relays (the newest list wins)."""
        author, created = event["pubkey"], event["created_at"]
        known = self._inboxes.get(author)
        if known and known[0] >= created:
            return
        listed = [u for u in nip17.inbox_relays(event) if u.startswith(("ws://", "wss://"))]
        extra = [url for url in listed if url not in self.pool.urls][:MAX_INBOX_RELAYS]
        if known:
            await known[1].close()
            del self._inboxes[author]
        if extra:
            pool = RelayPool(extra, auth_signer=self.signer)  # inbox relays often want AUTH
            await pool.start()
            self._inboxes[author] = (created, pool)
            log.info("replies to %s also go to its inbox relays %s", author[:12], extra)

    def reaches_inbox_of(self, author: str) -> bool:
        """Whether replies to ``author`` also go to relays its kind 10050 named."""
        return author in self._inboxes

    async def close(self) -> None:
        """Disconnect from the controllers' inbox relays (the main pool is not ours)."""
        await asyncio.gather(*(pool.close() for _, pool in self._inboxes.values()))
        self._inboxes.clear()

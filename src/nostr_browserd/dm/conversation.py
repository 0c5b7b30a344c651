"""One request to a daemon over DMs and its reply, as the client end sees it.

``nostr-browserd send`` and ``mcp --to`` both talk to a daemon this way: the request goes as a
NIP-17 gift wrap (or a NIP-04 kind 4), and a message counts as the reply only when it is
authenticated as the daemon's (seal pubkey == rumor pubkey == the daemon for NIP-17, the
event's signature for NIP-04) and cites the request.  A reply in parts is joined and
checked against its sha256 (:mod:`.chunks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..nostr import nip17
from ..nostr.nip01 import Event, now, tag_values
from ..nostr.nip59 import UnwrapError, make_rumor, wrap
from ..nostr.signer import KeySigner
from .chunks import as_part, reassemble
from .messages import DM_KIND


class Conversation:
    """One request to a daemon and the collection of its reply's parts."""

    def __init__(self, signer: KeySigner, daemon: str, nip04: bool) -> None:
        self.signer, self.daemon, self.nip04 = signer, daemon, nip04
        self.request_event_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def reply_filter(self) -> dict[str, Any]:
        """Live events only (``limit: 0``): we subscribe before sending."""
        me = self.signer.pubkey
        if self.nip04:
            return {"kinds": [DM_KIND], "authors": [self.daemon], "#p": [me], "limit": 0}
        return {"kinds": [1059], "#p": [me], "limit": 0}

    async def request(self, content: str) -> Event:
        """The event carrying ``content`` to the daemon; remembers what a reply must cite."""
        if self.nip04:
            template = {
                "kind": DM_KIND,
                "content": await self.signer.nip04_encrypt(self.daemon, content),
                "tags": [["p", self.daemon]],
                "created_at": now(),
            }
            event = await self.signer.sign_event(template)
            self.request_event_id = event["id"]
            return event
        rumor = make_rumor(self.signer.pubkey, nip17.CHAT_KIND, content, [["p", self.daemon]])
        self.request_event_id = rumor["id"]
        return await wrap(rumor, self.signer, self.daemon)

    async def open(self, event: Event) -> DaemonMessage | None:
        """``event`` opened, when it is authenticated as the daemon's message to us."""
        if self.nip04:
            if event["pubkey"] != self.daemon:
                return None
            text = await self.signer.nip04_decrypt(self.daemon, event["content"])
            return DaemonMessage(text, tuple(tag_values(event, "e")))
        try:
            opened = await nip17.open_dm(event, self.signer, kinds={nip17.CHAT_KIND})
        except UnwrapError:
            return None
        if opened.sender != self.daemon:
            return None
        return DaemonMessage(opened.rumor["content"], tuple(tag_values(opened.rumor, "e")))

    def collect(self, text: str) -> str | None:
        """The whole reply once ``text`` (a whole reply, or one part of it) completes it."""
        part = as_part(text)
        if part is None:
            return text
        self._parts.append(part)
        return reassemble(self._parts)

    async def accept(self, event: Event) -> str | None:
        """The whole reply once ``event`` completes it; None for unrelated events."""
        message = await self.open(event)
        if message is None or self.request_event_id not in message.cites:
            return None
        return self.collect(message.text)


@dataclass(frozen=True)
class DaemonMessage:
    """A message authenticated as the daemon's: its text and the events it cites (``e``)."""

    text: str
    cites: tuple[str, ...]

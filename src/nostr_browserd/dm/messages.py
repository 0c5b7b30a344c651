"""What travels over the DM transport, named once for both ends: the schemes, an
authenticated incoming message, and where a reply to one goes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeGuard

from ..errors import BrowserdError
from ..nostr.nip01 import Event

Scheme = Literal["nip17", "nip04"]
"""NIP-17 (gift-wrapped kind 14) or legacy NIP-04 (kind 4): a reply goes in the request's."""
DM_KIND = 4
ContextVm = Literal["contextvm", "contextvm-ephemeral"]
"""A ContextVM message (MCP over Nostr) in a kind 1059 or an ephemeral kind 21059 gift wrap:
its answer goes back in the same kind of wrap."""
Carrier = Scheme | ContextVm
"""How a message came, and so how its answer goes back."""


def is_dm(carrier: Carrier) -> TypeGuard[Scheme]:
    """A direct message (NIP-17, NIP-04), not a ContextVM message."""
    return carrier in ("nip17", "nip04")


class ReplyAddress(Protocol):
    """Where a reply goes: to ``sender``, carried as ``scheme`` came, citing ``event_id``.

    An :class:`Incoming` is one; so is a command held in the store, which a restarted
    daemon answers without the message that brought it.
    """

    @property
    def sender(self) -> str: ...

    @property
    def scheme(self) -> Carrier: ...

    @property
    def event_id(self) -> str: ...


@dataclass(frozen=True)
class Incoming:
    """An authenticated message from a known key, ready for the dispatcher.

    ``event_id`` is what a reply references (the rumor id, or the kind 4 id); ``refusal`` is
    set when the message must be answered with that error instead of being run.  A NIP-17
    file message (kind 15) carries its tags in ``file_tags`` and its URL as ``content``.

    ``sealed`` is a gift wrap and its seal, not yet opened (another worker runs its sender's
    commands): then ``sender`` is only what the seal claims, ``content`` and ``event_id`` are
    empty, and nothing may run it before the inbox opened it (``Inbox.unseal``).
    """

    sender: str
    scheme: Carrier
    content: str
    event_id: str
    outer_id: str
    created_at: int
    expiration: int | None = None
    refusal: BrowserdError | None = None
    received: float = field(default_factory=time.monotonic)
    file_tags: tuple[tuple[str, ...], ...] | None = None
    sealed: tuple[Event, Event] | None = None

"""An asyncio pool of Nostr relay connections, built on ``websockets``.

The rooms, after rust-nostr's relay crate: :mod:`.pool` (the relays of the pool, and what
every subscription and publish spans), :mod:`.connection` (one websocket to one relay,
reopened with backoff, and its NIP-42 answers), :mod:`.subscription` (one REQ across the
relays: verified, de-duplicated, bounded) and :mod:`.publish` (one EVENT to every relay, and
their answers).

Why it is shaped this way:

- Two connections per relay: one reads (subscriptions), one publishes.  A reply published on
  the connection that carried the request stalled ~40 ms behind the relay's delayed ACK
  (reference/nostr.md); a connection of its own removes the stall.  asyncio already sets
  TCP_NODELAY on our sockets, and we send our ACKs at once (TCP_QUICKACK, see
  :func:`.connection.ack_now`) so a relay's Nagle never waits on us either.
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

from .connection import MAX_AUTH_ATTEMPTS, OUTBOX_SIZE, RelayStatus, backoff_delay
from .pool import RelayPool
from .publish import PublishResult, RelayAck
from .subscription import SINCE_MARGIN, Subscription

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

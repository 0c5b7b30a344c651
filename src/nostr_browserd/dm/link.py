"""The daemon's Nostr side for one identity: relays, the inbox, the outbox, announcements.

Everything here belongs to the identity logged in now and goes together: ``start`` connects
the relay pools, subscribes to the DMs addressed to us, announces where to reach us and
follows the controllers' DM inbox relays; ``close`` undoes all of it.  Switching identity
closes one link and starts another, so nothing of the old key outlives it.  A read-only
identity gets the relay pool (for status) and nothing that would need a signature.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol

from .. import __version__
from ..login.readonly import READ_ONLY_MESSAGE
from ..nostr import nip17
from ..nostr.nip01 import now
from ..nostr.nip19 import npub_encode
from ..nostr.nip59 import GIFT_WRAP_KIND
from ..nostr.relay import RelayPool, RelayStatus, Subscription
from ..nostr.signer import Signer
from ..supervise import supervise
from .inbox import Gate, Inbox, Ledger, subscription_filters
from .messages import Incoming, ReplyAddress, Scheme, is_dm
from .outbox import Outbox

log = logging.getLogger(__name__)

RELAY_LIST_KIND = 10002
PROFILE_KIND = 0


class LinkSettings(Protocol):
    """What the link reads of the daemon's ``[nostr]`` section."""

    @property
    def dm(self) -> Sequence[Scheme]: ...

    @property
    def freshness(self) -> float: ...

    @property
    def stranger_budget(self) -> int: ...

    @property
    def publish_timeout(self) -> float: ...

    @property
    def discovery_relays(self) -> list[str]: ...

    @property
    def name(self) -> str: ...

    @property
    def about(self) -> str: ...


class AllowedKeys(Protocol):
    """The allow-list as the DM side reads it (the daemon's ``AllowList``): at each use, so
    a reload needs no word to the link or the inbox."""

    def __iter__(self) -> Iterator[str]:
        """The controllers' keys (hex): whose DM inbox relays are followed."""
        ...

    def is_known(self, pubkey: str) -> bool:
        """Whether ``pubkey`` is on the allow-list (a controller or an approver)."""
        ...


class Receiver(Protocol):
    """Who runs what the inbox lets through (the daemon's dispatcher)."""

    def submit(self, incoming: Incoming) -> None:
        """Queue an authenticated command (or its refusal) for its controller."""
        ...


class NostrLink:
    """Relay pools, inbox subscription, outbox and their tasks, for one signer."""

    def __init__(
        self,
        signer: Signer,
        *,
        readonly: bool,
        relays: list[str],
        config: LinkSettings,
        store: Ledger,
        dispatcher: Receiver,
        allowed: AllowedKeys,
        gate: Gate | None = None,
        announcements: Callable[[], list[dict[str, Any]]] = list,
        mcp: bool = False,
    ) -> None:
        """``gate`` decides, before each claim, whether this worker claims the command;
        ``announcements()`` are further events published with ours (a kind 10063); ``mcp``:
        ContextVM messages are read too, and handed to ``dispatcher`` like DMs."""
        self.signer, self.readonly, self.relays = signer, readonly, relays
        self.gate, self.announcements, self.mcp = gate, announcements, mcp
        self.config, self.store, self.dispatcher = config, store, dispatcher
        self.allowed = allowed
        self.pubkey: str | None = None
        self.pool: RelayPool | None = None
        self.discovery: RelayPool | None = None
        self.outbox: Outbox | None = None
        self.inbox: Inbox | None = None
        self._inbox_sub: Subscription | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._follow: asyncio.Task[None] | None = None

    @property
    def listening(self) -> bool:
        """Whether direct messages are being read and can be answered."""
        return self._inbox_sub is not None and self.outbox is not None

    async def start(self) -> None:
        """Connect, subscribe to our DMs, announce ourselves, follow the controllers."""
        self.pubkey = await self.signer.public_key()
        if self.readonly:
            self.pool = RelayPool(self.relays)
            await self.pool.start()
            return
        signer, pubkey = self.signer, self.pubkey
        self.pool = RelayPool(self.relays, auth_signer=signer)
        await self.pool.start()
        self.outbox = Outbox(signer, self.pool, timeout=self.config.publish_timeout)
        self.inbox = inbox = Inbox(
            signer,
            pubkey,
            self.store,
            is_known=self.allowed.is_known,
            schemes=self.config.dm,
            freshness=self.config.freshness,
            stranger_budget=self.config.stranger_budget,
            gate=self.gate,
            mcp=self.mcp,
        )
        config = self.config
        filters = subscription_filters(pubkey, config.dm, now(), config.freshness, self.mcp)
        # The inbox verifies a gift wrap's signature where it opens the seal: a worker that
        # keeps the wrap aside sealed (another worker runs its sender's commands) never does.
        wraps = frozenset({GIFT_WRAP_KIND})
        self._inbox_sub = sub = self.pool.subscribe(
            filters, advance_since=False, unverified=wraps, sink=inbox.take
        )
        read = supervise("inbox", lambda: self._read_inbox(inbox, sub), finished=lambda: sub.closed)
        self._tasks.append(read)
        if self.config.discovery_relays:
            self.discovery = RelayPool(self.config.discovery_relays)
            await self.discovery.start()
        self._tasks.append(asyncio.create_task(self._announce()))
        self.follow_controllers()
        log.info(
            "listening for %s on %s as %s",
            "/".join([*self.config.dm, *(["ContextVM"] if self.mcp else [])]),
            self.relays,
            npub_encode(pubkey),
        )

    def stop_listening(self) -> None:
        """Take no more DMs (the first step of a stop); replies can still go out."""
        if self._inbox_sub is not None:
            self._inbox_sub.close()
            self._inbox_sub = None

    async def close(self) -> None:
        """Stop every task, close the outbox and the relay pools."""
        self.stop_listening()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._follow = None
        self.inbox = None
        if self.outbox is not None:
            await self.outbox.close()
            self.outbox = None
        for pool in (self.pool, self.discovery):
            if pool is not None:
                await pool.close()
        self.pool = self.discovery = None

    # --- replies -------------------------------------------------------------------------

    async def reply(self, to: ReplyAddress, text: str, request_id: Any) -> bool:
        """Answer a DM in its own scheme; False when we cannot send."""
        if self.outbox is None:
            return False
        return await self.outbox.reply(to, text, request_id)

    async def send_file(self, to: ReplyAddress, url: str, tags: list[list[str]]) -> bool:
        """Send a NIP-17 file message answering ``to``; False when we cannot send."""
        return self.outbox is not None and await self.outbox.send_file(to, url, tags)

    async def send(self, recipient: str, text: str, scheme: Scheme) -> bool:
        """Send a DM of our own (an approval request, a watched event)."""
        if self.outbox is None:
            return False
        return await self.outbox.send(recipient, text, scheme=scheme)

    def relay_status(self) -> dict[str, RelayStatus]:
        """Each relay's connection state, for the status page."""
        return self.pool.status() if self.pool is not None else {}

    # --- tasks ---------------------------------------------------------------------------

    async def _read_inbox(self, inbox: Inbox, sub: Subscription) -> None:
        """Open what waits in the inbox's backlog until the subscription ends; it hands each
        event to the backlog as it arrives (``Inbox.take``, its sink: no task between)."""
        opening = asyncio.create_task(inbox.serve(self.dispatcher.submit))
        try:
            await sub.wait_closed()
        finally:
            opening.cancel()
            await asyncio.gather(opening, return_exceptions=True)

    async def _announce(self) -> None:
        """Publish kind 10050 and 10002 (where to reach us), kind 0 (who we are) and the
        daemon's further announcements (its Blossom servers).

        Clients that speak only NIP-17 refuse to send to a key without a kind 10050, so
        these go to our relays and to the discovery relays (indexers) too.
        """
        config = self.config
        public = [url for url in self.relays if not url.startswith("ws://127.")] or self.relays
        templates = [
            nip17.inbox_relays_event_template(public),
            {
                "kind": RELAY_LIST_KIND,
                "content": "",
                "tags": [["r", url] for url in public],
                "created_at": now(),
            },
            {
                "kind": PROFILE_KIND,
                "content": json.dumps(
                    {
                        "name": config.name,
                        "about": config.about,
                        "bot": True,
                        "version": __version__,  # which release answers, for its operator
                    }
                ),
                "tags": [],
                "created_at": now(),
            },
            *self.announcements(),
        ]
        for template in templates:
            try:
                event = await self.signer.sign_event(template)
                for pool in (self.pool, self.discovery):
                    if pool is not None:
                        result = await pool.publish(event, config.publish_timeout)
                        if not result.ok:
                            log.warning("kind %s not accepted: %s", event["kind"], result.refused)
            except Exception:
                log.exception("could not publish kind %s", template["kind"])

    def follow_controllers(self) -> None:
        """(Re)start following the allow-list's DM inbox relays (after a reload too)."""
        if self.outbox is None:
            return
        if self._follow is not None:
            self._follow.cancel()
            self._tasks.remove(self._follow)
        self._follow = asyncio.create_task(self._follow_controller_inboxes())
        self._tasks.append(self._follow)

    async def _follow_controller_inboxes(self) -> None:
        """Learn controllers' kind 10050 DM inbox relays so replies also reach them there."""
        authors = list(self.allowed)
        if not authors or self.pool is None:
            return
        filters = [{"kinds": [nip17.DM_RELAYS_KIND], "authors": authors}]
        subs = [p.subscribe(filters) for p in (self.pool, self.discovery) if p is not None]
        try:
            await asyncio.gather(*(self._learn(sub) for sub in subs))
        finally:
            for sub in subs:
                sub.close()

    async def _learn(self, sub: Subscription) -> None:
        async for event in sub:
            if self.outbox is not None:
                await self.outbox.learn_inbox(event)


WAITING_FOR_LOGIN = "waiting for login on the local channel"


class Identity(Protocol):
    """The identity logged in now, as the link reads it (the daemon's ``IdentityManager``)."""

    @property
    def logged_in(self) -> bool: ...

    @property
    def readonly(self) -> bool: ...

    @property
    def signer(self) -> Signer: ...


class CarrierServer(Receiver, Protocol):
    """A second carrier on the link's inbox (the ContextVM server): it takes what the inbox
    lets through, answers its own calls, and closes with the link."""

    async def reply(self, to: ReplyAddress, text: str, request_id: Any) -> bool: ...

    def close(self) -> None: ...


# The ContextVM server for a signer (None: DMs only); ``started`` once its link listens.
MakeCarrier = Callable[[Signer], Awaitable[CarrierServer | None]]
Started = Callable[[CarrierServer, Signer], Awaitable[None]]


class IdentityLink:
    """The link of whoever is logged in now: connected at start, and rebuilt after every
    login, switch or logout (``switch``), one rebuild after another."""

    def __init__(
        self,
        identity: Identity,
        make_link: Callable[[Signer, bool, Receiver | None], NostrLink],
        carrier: MakeCarrier,
        started: Started,
    ) -> None:
        """``make_link(signer, readonly, carrier)`` builds the link for a signer (with the
        carrier, if any, in the receiver's place); ``carrier`` makes the ContextVM server
        for a signer that may write, and ``started`` is told once its link listens."""
        self.identity = identity
        self._make_link, self._carrier, self._started = make_link, carrier, started
        self.link: NostrLink | None = None
        self.carrier: CarrierServer | None = None
        self.rewiring: asyncio.Task[None] | None = None

    async def start(self, before: Awaitable[None] | None = None) -> None:
        """The first connection (whatever login the start made), once ``before`` is done
        (the embedded relay's start): a login meanwhile rewires after both."""

        async def connect() -> None:
            if before is not None:
                await before
            await self._connect()

        self.rewiring = asyncio.create_task(connect())
        await self.rewiring

    def switch(
        self, between: Callable[[], Awaitable[None]], after: Callable[[], Awaitable[None]]
    ) -> None:
        """The identity changed: take the link down, ``between()``, bring it up for the
        identity logged in now, ``after()``; behind whatever rebuild came before."""
        previous = self.rewiring

        async def rewire() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self._disconnect()
            await between()
            await self._connect()
            await after()

        self.rewiring = asyncio.create_task(rewire())

    async def close(self) -> None:
        """After the rebuild under way, if any: the link down for good."""
        if self.rewiring is not None:
            await asyncio.gather(self.rewiring, return_exceptions=True)
        await self._disconnect()

    async def _connect(self) -> None:
        identity = self.identity
        if not identity.logged_in:
            log.warning(
                "no identity: %s (the local token is required); until then every tool but"
                " the login tools answers NOT_LOGGED_IN and direct messages are off",
                WAITING_FOR_LOGIN,
            )
            return
        if identity.readonly:
            log.warning("%s", READ_ONLY_MESSAGE)
        signer, readonly = identity.signer, identity.readonly
        self.carrier = None if readonly else await self._carrier(signer)
        self.link = self._make_link(signer, readonly, self.carrier)
        await self.link.start()
        if self.carrier is not None:
            await self._started(self.carrier, signer)

    async def _disconnect(self) -> None:
        if self.carrier is not None:
            self.carrier.close()
            self.carrier = None
        if self.link is not None:
            link, self.link = self.link, None
            await link.close()

    # --- what goes out, by whichever link is up --------------------------------------------

    async def reply(self, to: ReplyAddress, text: str, request_id: Any) -> bool:
        """An answer: by DM in its scheme, or a ContextVM call's as MCP, by its server."""
        if not is_dm(to.scheme):
            return self.carrier is not None and await self.carrier.reply(to, text, request_id)
        return self.link is not None and await self.link.reply(to, text, request_id)

    async def send(self, recipient: str, text: str, scheme: Scheme) -> bool:
        """A DM of ours, outside any reply; False while there is no link."""
        return self.link is not None and await self.link.send(recipient, text, scheme)

    async def publish(self, event: dict[str, Any]) -> bool:
        """Publish a signed event on the link's relays (the ContextVM server's)."""
        link = self.link
        pool = link.pool if link is not None else None
        if link is None or pool is None:
            return False
        return (await pool.publish(event, link.config.publish_timeout)).ok

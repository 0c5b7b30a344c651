"""``mcp --to NPUB --key FILE``: every tool call as a NIP-17 direct message to a remote daemon.

Each call is a JSON request in a gift wrap signed by the agent's own key; the daemon's
allow-list, roles and approver apply to it as to any phone.  A reply counts only when it is
authenticated as the daemon's and cites the request (``dm.conversation.Conversation``, shared
with ``nostr-browserd send``); parts are joined and checked against their hash.  Each request
asks for large files by Blossom link (``files.link``), fetched and checked here.  While a
gated call waits for its approver the daemon says so, and the host gets progress notices.

A daemon never answers a key it does not know, so silence is all a stranger gets: after
``timeout`` seconds the call fails with an error that says what that silence means.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from ..dm.chunks import ReassemblyError
from ..dm.conversation import Conversation
from ..dm.pending import as_pending
from ..errors import BrowserdError, ErrorCode
from ..files.link import inline
from ..net import is_loopback_host
from ..nostr import nip17
from ..nostr.nip01 import Event
from ..nostr.nip19 import npub_encode
from ..nostr.relay import RelayPool, Subscription
from ..nostr.signer import KeySigner
from ..untrusted_json import json_object
from .backend import EventSink, Progress, Response

log = logging.getLogger(__name__)

RELAY_LIST_KIND = 10002
DEFAULT_DISCOVERY = ("wss://purplepag.es", "wss://relay.nos.social", "wss://relay.damus.io")
CONNECT_TIMEOUT = 10.0
PROGRESS_EVERY = 5.0  # seconds between "waiting for approval" notices
MAX_RELAYS = 8


class DaemonLine:
    """The relays to one daemon and the subscription its answers come on, as one agent key:
    what both ways of ``mcp --to`` (our DM envelope, ContextVM) open and close alike."""

    def __init__(
        self,
        signer: KeySigner,
        daemon: str,
        relays: list[str] | None,
        *,
        discovery: list[str] | None = None,
        timeout: float = 60.0,
        links: bool = True,
    ) -> None:
        """``relays`` None: the daemon's own lists, looked up on ``discovery``; ``timeout``:
        seconds an answer may take beyond any approval wait; ``links``: ask for large files
        by Blossom link (``files.link``; False: always in parts, which the bench times)."""
        self.signer, self.daemon, self.relays = signer, daemon, relays
        self.discovery = discovery or list(DEFAULT_DISCOVERY)
        self.timeout, self.links = timeout, links
        self.pool: RelayPool | None = None
        self.local = False  # every relay to the daemon is on loopback: it is on this machine
        self._sub: Subscription | None = None
        self._reader: asyncio.Task[None] | None = None
        self._begin()

    def _begin(self) -> None:
        """Set up what one way of talking keeps (calls waiting for answers, the tools)."""
        raise NotImplementedError

    async def listen(self, filters: list[dict[str, Any]]) -> None:
        """Find the daemon's relays if none were given, connect, read ``filters``."""
        relays = self.relays or await daemon_relays(self.daemon, self.discovery)
        self.local = all(is_loopback_host(urlsplit(url).netloc) for url in relays)
        self.pool = RelayPool(relays, auth_signer=self.signer)
        await self.pool.start()
        if not await self.pool.wait_connected(CONNECT_TIMEOUT):
            log.warning("not every relay of %s answered yet; going on", relays)
        self._sub = self.pool.subscribe(filters, advance_since=False)
        await self._sub.wait_eose(CONNECT_TIMEOUT)
        self._reader = asyncio.create_task(self._read(self._sub))

    async def close(self) -> None:
        """Stop listening and disconnect."""
        if self._sub is not None:
            self._sub.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        if self.pool is not None:
            await self.pool.close()

    async def _read(self, sub: Subscription) -> None:
        raise NotImplementedError


class RemoteBackend(DaemonLine):
    """Talks to one daemon over relays, as one agent key."""

    def _begin(self) -> None:
        self._listener = Conversation(self.signer, self.daemon, nip04=False)
        self._pending: dict[str, tuple[Conversation, asyncio.Queue[str | Exception]]] = {}
        self._sinks: list[EventSink] = []
        self._allowed: list[str] | None = None

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Find the daemon's relays if none were given, connect, listen for its replies."""
        await self.listen([self._listener.reply_filter()])

    # --- what the agent may do -----------------------------------------------------------

    async def allowed(self) -> Collection[str] | None:
        """The tools the daemon lets this key run, from its answer to ``help``."""
        if self._allowed is None:
            response = await self.call("help", {}, _no_progress)
            if not response.get("success"):
                error = response.get("error") or {}
                raise LookupError(f"{error.get('code')}: {error.get('message')}")
            self._allowed = [t["name"] for t in response["data"].get("tools", [])]
        return self._allowed

    # --- one call ------------------------------------------------------------------------

    async def call(self, tool: str, params: dict[str, Any], progress: Progress) -> Response:
        """Send the request, wait for its reply (reporting any approval wait), return it."""
        assert self.pool is not None, "start() first"
        request_id = secrets.token_hex(4)
        talk = Conversation(self.signer, self.daemon, nip04=False)
        asked = {"id": request_id, "tool": tool, "params": params}
        request = json.dumps({**asked, "files": "link"} if self.links else asked)
        event = await talk.request(request)
        assert talk.request_event_id is not None
        inbox: asyncio.Queue[str | Exception] = asyncio.Queue()
        self._pending[talk.request_event_id] = (talk, inbox)
        ticker: asyncio.Task[None] | None = None
        try:
            published = await self.pool.publish(event, CONNECT_TIMEOUT)
            if not published.ok:
                return failure(
                    request_id,
                    ErrorCode.UNAVAILABLE,
                    f"No relay took the command ({published.refused}); check the relays.",
                )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.timeout
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        got = await inbox.get()
                except TimeoutError:
                    return failure(request_id, ErrorCode.UNAVAILABLE, self._silence())
                if isinstance(got, Exception):
                    return failure(request_id, ErrorCode.INTERNAL, f"A broken reply: {got}")
                held = as_pending(got)
                if held is None:
                    return await _with_file(request_id, _response(request_id, got), self.local)
                expires = float(held.get("expires_in") or 0)
                deadline = loop.time() + expires + self.timeout
                if ticker is None:
                    ticker = asyncio.create_task(_tick(progress, expires, loop.time()))
        finally:
            self._pending.pop(talk.request_event_id, None)
            if ticker is not None:
                ticker.cancel()

    def _silence(self) -> str:
        return (
            f"The daemon did not answer within {self.timeout:g} s. It never answers a key that "
            f"is not on its allow-list: its owner must allow {npub_encode(self.signer.pubkey)} "
            "(a [[controllers]] entry, or nostr.controllers). If it is allowed, check that the "
            f"daemon runs and reads {', '.join(self.pool.urls if self.pool else [])}."
        )

    # --- replies and events ----------------------------------------------------------------

    def on_event(self, sink: EventSink) -> None:
        """Events the daemon forwards to this key (``watch``) go to ``sink``."""
        self._sinks.append(sink)

    async def _read(self, sub: Subscription) -> None:
        async for event in sub:
            try:
                await self._route(event)
            except Exception:  # one bad message must never stop the reader
                log.exception("could not read event %s", str(event.get("id"))[:12])

    async def _route(self, event: Event) -> None:
        message = await self._listener.open(event)
        if message is None:
            return
        for cited in message.cites:
            if cited in self._pending:
                talk, inbox = self._pending[cited]
                try:
                    whole = talk.collect(message.text)
                except ReassemblyError as exc:
                    inbox.put_nowait(exc)
                    return
                if whole is not None:
                    inbox.put_nowait(whole)
                return
        if not message.cites:
            self._forward(message.text)

    def _forward(self, text: str) -> None:
        """``{"type": "events", "events": [...]}`` from a ``watch``: each event to the sinks."""
        pushed = json_object(text)
        if pushed is None or pushed.get("type") != "events":
            return
        for item in pushed.get("events") or []:
            if isinstance(item, dict) and "event" in item:
                for sink in self._sinks:
                    sink({"event": item["event"], "data": item.get("data") or {}})


async def daemon_relays(daemon: str, discovery: list[str], timeout: float = 10.0) -> list[str]:
    """The daemon's relays from its newest kind 10050 (DM inbox) and 10002 (relay list)."""
    newest: dict[int, Event] = {}
    async with RelayPool(discovery) as pool:
        sub = pool.subscribe(
            [{"kinds": [nip17.DM_RELAYS_KIND, RELAY_LIST_KIND], "authors": [daemon]}]
        )
        await sub.wait_eose(timeout)
        sub.close()
        async for event in sub:
            kind = event["kind"]
            if event["pubkey"] == daemon and (
                kind not in newest or event["created_at"] > newest[kind]["created_at"]
            ):
                newest[kind] = event
    urls: list[str] = []
    if nip17.DM_RELAYS_KIND in newest:
        urls += nip17.inbox_relays(newest[nip17.DM_RELAYS_KIND])
    if RELAY_LIST_KIND in newest:
        urls += [t[1] for t in newest[RELAY_LIST_KIND]["tags"] if len(t) > 1 and t[0] == "r"]
    urls = [u for u in dict.fromkeys(urls) if u.startswith(("ws://", "wss://"))][:MAX_RELAYS]
    if not urls:
        raise ValueError(
            f"found no kind 10050 or 10002 relay list of {npub_encode(daemon)} on "
            f"{', '.join(discovery)}; name the daemon's relays with --relay"
        )
    return urls


async def _tick(progress: Progress, expires: float, started: float) -> None:
    """Progress every few seconds while the approver decides, with the time left."""
    loop = asyncio.get_running_loop()
    while True:
        waited = loop.time() - started
        left = max(0, round(expires - waited))
        try:
            await progress(
                waited, expires, f"waiting for approval on the approver's phone, {left} s left"
            )
        except Exception as exc:  # the host went away: the call itself will tell
            log.debug("progress not delivered: %s", exc)
        await asyncio.sleep(PROGRESS_EVERY)


async def _no_progress(done: float, total: float | None, message: str) -> None:
    return None


def failure(request_id: Any, code: ErrorCode, message: str) -> Response:
    """The protocol's failure shape, for a call that got no usable answer."""
    return {"id": request_id, "success": False, "error": {"code": code.value, "message": message}}


async def _with_file(request_id: str, response: Response, local: bool) -> Response:
    """``response`` with a file that came by link fetched into it (``files.link``)."""
    try:
        return await inline(response, local)
    except BrowserdError as exc:
        return failure(request_id, exc.code, exc.message)


def _response(request_id: str, text: str) -> Response:
    response = json_object(text)
    if response is None or "success" not in response:
        return failure(request_id, ErrorCode.INTERNAL, f"Not a response: {text[:200]}")
    return response

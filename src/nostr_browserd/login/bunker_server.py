"""``nostr-browserd bunker``: a NIP-46 remote signer, so the daemon's key can live elsewhere.

It serves one Signer over relays.  A client pairs with the ``bunker://`` URL and its
secret (which works once), or the bunker answers a client's ``nostrconnect://`` URI.
The secret pairs one client, or, with ``reusable_secret`` (the workers of one deployment
sharing one ``bunker://`` URL file), every client that shows it.  Each paired client gets a
permission list (``sign_event:1,nip44_decrypt,…``): requests
inside it are answered; outside it the policy decides: ``auto`` refuses them, ``prompt``
asks on the terminal (yes once / always / no).  With ``auth_url`` set, a request that
waits for the operator first gets an ``auth_url`` answer, as nsecbunker does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import BrowserdError, ErrorCode
from ..nostr import nip46
from ..nostr.keys import is_valid_pubkey
from ..nostr.signer import Signer
from ..ratelog import RateLimitedLog
from ..supervise import stopped_readers, supervise
from ..untrusted_json import loads as loads_json
from .nip46_channel import Channel, Incoming

__all__ = [
    "ALL_PERMS",
    "DAEMON_PERMS",
    "Approval",
    "BunkerServer",
    "TerminalPrompt",
    "serve_bunker",
]

log = logging.getLogger(__name__)

ALL_PERMS = nip46.parse_perms("sign_event,nip04_encrypt,nip04_decrypt,nip44_encrypt,nip44_decrypt")
DAEMON_PERMS = nip46.parse_perms(
    "sign_event:0,4,13,10002,10050,10063,22242,24242,"
    "nip04_encrypt,nip04_decrypt,nip44_encrypt,nip44_decrypt"
)
"""What a nostr-browserd needs: its profile, kind 4 replies, NIP-17 seals, its relay and
Blossom server lists, NIP-42 AUTH, Blossom's upload and delete authorizations (BUD-11), and
the DM ciphers.  The command line's default: any other kind is refused."""
_ALWAYS_ALLOWED = {"ping", "get_public_key", "get_relays", "switch_relays", "logout"}
# Requests handled at once (each may wait for the operator); beyond it, new ones are dropped
# so that a flood from anyone on the relay cannot grow memory without bound.
_MAX_IN_FLIGHT = 64
_HEALTH_CHECK = 1.0  # seconds between looks at whether the reader is still served
_ANSWERS_KEPT = 1024  # recent answers kept to repeat for re-sent request ids
_STRANGER_ANSWERS = 3  # refused connects answered per minute, to all strangers together
_CRYPTO = ("nip04_encrypt", "nip04_decrypt", "nip44_encrypt", "nip44_decrypt")

Decision = Literal["once", "always", "deny"]
# What the operator may type at the prompt; anything else is "deny".
_TYPED: dict[str, Decision] = {"y": "once", "yes": "once", "a": "always", "always": "always"}


@dataclass(frozen=True)
class Approval:
    """A request outside a client's permissions, for the operator to decide on."""

    client: str
    method: str
    kind: int | None
    summary: str


Approver = Callable[[Approval], Awaitable[Decision]]


class _Refused(Exception):
    """A request we answer with an error (the message goes back to the client)."""


@dataclass
class _Client:
    perms: tuple[nip46.Permission, ...]


class TerminalPrompt:
    """Ask the operator on the terminal, one request at a time."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    async def __call__(self, approval: Approval) -> Decision:
        async with self._lock:
            print(
                f"\nClient {approval.client[:16]}… asks: {approval.summary}\n"
                "Allow? [y]es once, [a]lways for this client, [N]o: ",
                end="",
                file=sys.stderr,
                flush=True,
            )
            answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        return _TYPED.get(answer, "deny")


class BunkerServer:
    """Serve ``signer`` to NIP-46 clients over ``relays``."""

    def __init__(
        self,
        signer: Signer,
        relays: list[str] | tuple[str, ...],
        *,
        secret: str | None = None,
        perms: tuple[nip46.Permission, ...] = ALL_PERMS,
        approver: Approver | None = None,
        auth_url: str | None = None,
        transport: Signer | None = None,
        nip04_only: bool = False,
        reusable_secret: bool = False,
    ) -> None:
        """``transport`` signs and decrypts the NIP-46 traffic (default: ``signer`` itself);
        ``nip04_only`` behaves like a legacy signer that ignores NIP-44 requests;
        ``reusable_secret`` keeps the secret valid after the first pairing.
        """
        self._signer = signer
        self._transport = transport or signer
        self._relays = tuple(relays)
        self._secret: str | None = secret or secrets.token_hex(16)
        self._perms = perms
        self._approver = approver
        self._auth_url = auth_url
        self._nip04_only = nip04_only
        self._reusable_secret = reusable_secret
        self._clients: dict[str, _Client] = {}
        self._channel: Channel | None = None
        self._user = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._reader: asyncio.Task[None] | None = None
        # (client, request id) → the answer (None while it is worked out): a re-sent request
        # is answered once, the same way, and never signed or prompted for twice.
        self._answers: OrderedDict[tuple[str, str], nip46.Response | None] = OrderedDict()
        self._stranger_answers: deque[float] = deque()
        self._dropped = RateLimitedLog(log)

    def __repr__(self) -> str:
        return f"BunkerServer(user={self._user}, clients={len(self._clients)})"

    @property
    def pubkey(self) -> str:
        """The transport pubkey clients address (in the bunker:// URL)."""
        assert self._channel is not None, "start() first"
        return self._channel.pubkey

    @property
    def bunker_url(self) -> str:
        """The pairing URL for the operator (it holds the one-time secret while unused)."""
        return nip46.bunker_url(self.pubkey, self._relays, self._secret)

    @property
    def clients(self) -> dict[str, str]:
        """Paired clients and their permissions (for status)."""
        return {pk: nip46.format_perms(c.perms) for pk, c in self._clients.items()}

    async def start(self) -> None:
        """Connect to the relays and listen for requests."""
        self._user = await self._signer.public_key()
        channel = Channel(
            self._relays,
            self._transport,
            await self._transport.public_key(),
            accept_nip44=not self._nip04_only,
        )
        await channel.open()
        self._channel = channel
        self._reader = supervise("NIP-46 bunker reader", self._read)

    async def aclose(self) -> None:
        tasks = [*self._tasks, *([self._reader] if self._reader else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._channel is not None:
            await self._channel.close()

    async def accept_nostrconnect(self, uri: str) -> str:
        """Pair with a client that showed a ``nostrconnect://`` URI; returns its pubkey."""
        assert self._channel is not None, "start() first"
        pointer = nip46.parse_nostrconnect_uri(uri)
        for relay in pointer.relays:
            self._channel.add_relay(relay)
        self._clients[pointer.client_pubkey] = _Client(self._grant(pointer.perms))
        reply = nip46.Response(nip46.new_request_id(), pointer.secret)
        await self._channel.send(pointer.client_pubkey, reply, nip04=self._nip04_only)
        log.info("bunker: paired with nostrconnect client %s…", pointer.client_pubkey[:16])
        return pointer.client_pubkey

    def _grant(self, requested: tuple[nip46.Permission, ...]) -> tuple[nip46.Permission, ...]:
        """What a client gets: what it asked for that we allow (all we allow if it asked
        for nothing).
        """
        if not requested:
            return self._perms
        return tuple(p for p in requested if nip46.permits(self._perms, p.method, p.kind))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read(self) -> None:
        assert self._channel is not None
        async for incoming in self._channel.messages():
            if not isinstance(incoming.message, nip46.Request):
                continue
            if len(self._tasks) >= _MAX_IN_FLIGHT:
                log.warning("bunker: too many requests in flight; dropped one")
                continue
            self._spawn(self._handle(incoming, incoming.message))

    async def _handle(self, incoming: Incoming, request: nip46.Request) -> None:
        assert self._channel is not None
        key = (incoming.sender, request.id)
        if key in self._answers:  # a client re-sent a request it got no answer to
            response = self._answers[key]
            if response is None:
                return  # still being answered
        elif not self._may_answer(incoming.sender, request):
            self._dropped.warning(
                "stranger", "bunker: no answer to %s from unpaired %s…", request.method, key[0][:16]
            )
            return
        else:
            self._answers[key] = None
            while len(self._answers) > _ANSWERS_KEPT:
                self._answers.popitem(last=False)
            response = await self._answer(incoming, request)
            self._answers[key] = response
        log.info(
            "bunker: %s from %s… → %s",
            request.method,
            incoming.sender[:16],
            "error" if response.error else "ok",
        )
        try:
            await self._channel.send(incoming.sender, response, nip04=incoming.nip04)
        except BrowserdError as exc:
            log.warning("bunker: could not send the answer: %s", exc.message)

    def _may_answer(self, client_pk: str, request: nip46.Request) -> bool:
        """Paired clients and a ``connect`` with the secret get every answer; a stranger only
        a few refused ``connect``s.

        Each answer is signed (often by the served key itself) and published: strangers must
        not be able to make us do that at will.  A mistyped bunker:// secret still gets
        its clear refusal, within :data:`_STRANGER_ANSWERS` per minute for everyone.
        """
        if client_pk in self._clients:
            return True
        if request.method != "connect":
            return False
        if self._shows_secret(request.params):
            return True  # not a stranger: ten workers may start at once
        now = time.monotonic()
        while self._stranger_answers and now - self._stranger_answers[0] > 60:
            self._stranger_answers.popleft()
        if len(self._stranger_answers) >= _STRANGER_ANSWERS:
            return False
        self._stranger_answers.append(now)
        return True

    async def _answer(self, incoming: Incoming, request: nip46.Request) -> nip46.Response:
        try:
            return nip46.Response(request.id, await self._dispatch(incoming, request))
        except (_Refused, BrowserdError) as exc:
            return nip46.Response(request.id, None, str(exc))
        except Exception as exc:  # a malformed request gets an answer, never a dead task
            return nip46.Response(request.id, None, f"bad request: {type(exc).__name__}")

    async def _dispatch(self, incoming: Incoming, request: nip46.Request) -> str:
        client_pk, method, params = incoming.sender, request.method, request.params
        if method == "connect":
            return self._connect(client_pk, params)
        client = self._clients.get(client_pk)
        if client is None:
            raise _Refused("not connected: send connect with the bunker secret first")
        if method in _ALWAYS_ALLOWED:
            return await self._harmless(client_pk, method)
        if method == "sign_event":
            template = loads_json(params[0])
            if template.get("pubkey", self._user) != self._user:
                raise _Refused("this bunker signs only as " + self._user)
            kind = template["kind"]
            summary = f"sign_event kind {kind}: {str(template.get('content', ''))[:60]!r}"
            await self._approve(client_pk, client, request, incoming.nip04, kind, summary)
            return json.dumps(await self._signer.sign_event(template))
        if method in _CRYPTO:
            peer, text = params[0], params[1]
            if not is_valid_pubkey(peer):
                raise _Refused(f"{method}: the first param must be a 64-hex pubkey")
            summary = f"{method} with {peer[:16]}… ({len(text)} characters)"
            await self._approve(client_pk, client, request, incoming.nip04, None, summary)
            return str(await getattr(self._signer, method)(peer, text))
        raise _Refused(f"unknown method {method!r}")

    def _connect(self, client_pk: str, params: tuple[str, ...]) -> str:
        if params and params[0] and params[0] != self.pubkey:
            raise _Refused("this connect is addressed to another signer")
        if client_pk in self._clients:
            return "ack"  # a paired client reconnecting
        if not self._shows_secret(params):
            raise _Refused("invalid or already used secret")
        if not self._reusable_secret:
            self._secret = None  # single use
        requested = nip46.parse_perms(params[2]) if len(params) > 2 else ()
        self._clients[client_pk] = _Client(self._grant(requested))
        log.info("bunker: client %s… connected", client_pk[:16])
        return "ack"

    def _shows_secret(self, params: tuple[str, ...]) -> bool:
        """Whether a ``connect`` carries the pairing secret (while it is valid)."""
        given = params[1] if len(params) > 1 else ""
        return (
            self._secret is not None
            and isinstance(given, str)
            and secrets.compare_digest(given.encode(), self._secret.encode())
        )

    async def _harmless(self, client_pk: str, method: str) -> str:
        if method == "ping":
            return "pong"
        if method == "get_public_key":
            return self._user
        if method == "logout":
            self._clients.pop(client_pk, None)
            return "ack"
        if method == "get_relays":
            return json.dumps({r: {"read": True, "write": True} for r in self._relays})
        return "null"  # switch_relays: we stay where we are

    async def _approve(
        self,
        client_pk: str,
        client: _Client,
        request: nip46.Request,
        nip04: bool,
        kind: int | None,
        summary: str,
    ) -> None:
        """Return if allowed; raise :class:`_Refused` otherwise."""
        if nip46.permits(client.perms, request.method, kind):
            return
        if self._approver is None:
            raise _Refused(f"{request.method} is not permitted for this client")
        if self._auth_url and self._channel is not None:
            challenge = nip46.Response(request.id, "auth_url", self._auth_url)
            await self._channel.send(client_pk, challenge, nip04=nip04)
        decision = await self._approver(Approval(client_pk, request.method, kind, summary))
        if decision == "always":
            client.perms += (nip46.Permission(request.method, kind),)
        elif decision != "once":
            raise _Refused(f"the operator declined {request.method}")


def print_url(url: str) -> None:
    print(url, flush=True)


async def serve_bunker(
    signer: Signer,
    relays: list[str] | tuple[str, ...],
    *,
    secret: str | None = None,
    policy: Literal["auto", "prompt"] | Approver = "auto",
    perms: tuple[nip46.Permission, ...] = ALL_PERMS,
    auth_url: str | None = None,
    transport: Signer | None = None,
    nostrconnect: str | None = None,
    reusable_secret: bool = False,
    on_ready: Callable[[str], None] = print_url,
) -> None:
    """Serve ``signer`` until cancelled; ``on_ready`` gets the bunker:// URL (default:
    stdout, never the log, since it carries the secret).  Raises ``UNAVAILABLE`` if the
    reader of requests keeps failing and is given up on.
    """
    approver: Approver | None
    approver = TerminalPrompt() if policy == "prompt" else None if policy == "auto" else policy
    server = BunkerServer(
        signer,
        relays,
        secret=secret,
        perms=perms,
        approver=approver,
        auth_url=auth_url,
        transport=transport,
        reusable_secret=reusable_secret,
    )
    await server.start()
    try:
        on_ready(server.bunker_url)
        if nostrconnect:
            await server.accept_nostrconnect(nostrconnect)
        # Serve until cancelled, or until the reader is given up on: then exit with an error,
        # so that whatever runs the bunker (systemd's Restart=) starts it afresh.
        while (stopped := stopped_readers()) is None:
            await asyncio.sleep(_HEALTH_CHECK)
        raise BrowserdError(
            ErrorCode.UNAVAILABLE, f"the {stopped} stopped for good; exiting to be restarted"
        )
    finally:
        await server.aclose()

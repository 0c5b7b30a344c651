"""Log in with a NIP-46 remote signer ("bunker"): the key stays on another machine.

Two ways to pair: the operator pastes the signer's ``bunker://`` URL (we send ``connect``
with its one-time secret), or we show a ``nostrconnect://`` URI and wait for a signer
app to answer with our secret.  Either way we then ask ``get_public_key`` (the user key
may differ from the signer's transport key) and forward every Signer call.

We speak NIP-44 and fall back to NIP-04 for old signers: if ``connect`` gets no answer
in NIP-44 it is retried in NIP-04, and any answer in NIP-04 switches us over.  An
``auth_url`` answer is shown to the operator while the request keeps waiting.  Every
signed event that comes back is verified against the user's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import BrowserdError, ErrorCode
from ..nostr import nip46
from ..nostr.signer import KeySigner
from ..supervise import supervise
from .nip46_channel import Channel, Incoming
from .remote import RemoteSigner

__all__ = ["DEFAULT_PERMS", "BunkerSigner"]

log = logging.getLogger(__name__)

DEFAULT_PERMS = nip46.parse_perms(
    "get_public_key,sign_event,nip04_encrypt,nip04_decrypt,nip44_encrypt,nip44_decrypt"
)

AuthUrlCallback = Callable[[str], None]

_RESEND_FIRST = 0.5  # seconds before an unanswered request is first sent again
_RECONNECT_GRACE = 10.0  # a request sent this soon after a reconnect may have been lost


def _print_uri(uri: str) -> None:
    print(f"Open this in your NIP-46 signer app:\n{uri}", file=sys.stderr, flush=True)


@dataclass
class _Pending:
    """A request waiting for its answer; an ``auth_url`` pushes the deadline out."""

    method: str
    deadline: float
    future: asyncio.Future[nip46.Response] = field(repr=False)
    auth_url: str | None = None


class BunkerSigner(RemoteSigner):
    """A :class:`~nostr_browserd.nostr.signer.Signer` that forwards to a NIP-46 signer.

    Build it with :meth:`connect` (``bunker://``) or :meth:`from_nostrconnect`.
    """

    _who = "the bunker"

    def __init__(
        self,
        channel: Channel,
        *,
        timeout: float = 30.0,
        auth_timeout: float = 300.0,
        on_auth_url: AuthUrlCallback | None = None,
    ) -> None:
        self._channel = channel
        self._timeout = timeout
        self._auth_timeout = auth_timeout
        self._on_auth_url = on_auth_url
        self._remote: str | None = None  # the signer's transport pubkey
        self._nip04 = False
        self._heard = False  # any answer from the signer yet (so it reads our transport)
        self._pending: dict[str, _Pending] = {}
        self._paired: asyncio.Future[str] | None = None  # nostrconnect: the signer's pubkey
        self._pair_secret: str | None = None
        # bunker://: the connect params, sent again when the bunker stops answering (a
        # restarted bunker has forgotten its clients and ignores theirs)
        self._connect_params: tuple[str, ...] | None = None
        self._reader: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"BunkerSigner(remote={self._remote}, user={self._user}, nip04={self._nip04})"

    # -- pairing -------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        url: str | nip46.BunkerPointer,
        *,
        timeout: float = 30.0,
        connect_timeout: float | None = None,
        auth_timeout: float = 300.0,
        on_auth_url: AuthUrlCallback | None = None,
        app_key: KeySigner | None = None,
        perms: tuple[nip46.Permission, ...] = (),
    ) -> BunkerSigner:
        """Pair through a ``bunker://`` URL: ``connect`` (NIP-44, then NIP-04), then
        ``get_public_key``.  ``connect_timeout`` (default ``min(timeout, 10)``) bounds the
        NIP-44 attempt before the NIP-04 retry.
        """
        try:
            pointer = url if isinstance(url, nip46.BunkerPointer) else nip46.parse_bunker_url(url)
        except nip46.Nip46Error as exc:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, f"bunker URL: {exc}") from None
        app = app_key or KeySigner.generate()
        signer = cls(
            Channel(pointer.relays, app, app.pubkey, publish_timeout=min(timeout, 10.0)),
            timeout=timeout,
            auth_timeout=auth_timeout,
            on_auth_url=on_auth_url,
        )
        signer._remote = pointer.pubkey
        try:
            await signer._open()
            params = [pointer.pubkey, pointer.secret or ""]
            if perms:
                params.append(nip46.format_perms(perms))
            first_wait = min(timeout, 10.0) if connect_timeout is None else connect_timeout
            try:
                answer = await signer._call("connect", *params, timeout=first_wait)
            except BrowserdError as exc:
                if exc.code is not ErrorCode.TIMEOUT or signer._nip04 or signer._heard:
                    raise
                log.info("NIP-46: no answer to connect over NIP-44; retrying over NIP-04")
                signer._nip04 = True
                answer = await signer._call("connect", *params)
            if answer != "ack" and not (pointer.secret and answer == pointer.secret):
                raise BrowserdError(
                    ErrorCode.SIGNER_ERROR, "the remote signer answered connect unexpectedly"
                )
            signer._connect_params = tuple(params)
            await signer.public_key()
        except BaseException:
            await signer.aclose()
            raise
        return signer

    @classmethod
    async def from_nostrconnect(
        cls,
        relays: list[str] | tuple[str, ...],
        *,
        timeout: float = 30.0,
        pair_timeout: float = 300.0,
        auth_timeout: float = 300.0,
        name: str = "nostr-browserd",
        perms: tuple[nip46.Permission, ...] = DEFAULT_PERMS,
        show_uri: Callable[[str], None] = _print_uri,
        on_auth_url: AuthUrlCallback | None = None,
        app_key: KeySigner | None = None,
    ) -> BunkerSigner:
        """Show a ``nostrconnect://`` URI (via ``show_uri``), wait up to ``pair_timeout`` s
        for a signer to answer with its secret, then ask ``get_public_key``.
        """
        app = app_key or KeySigner.generate()
        try:
            channel = Channel(relays, app, app.pubkey, publish_timeout=min(timeout, 10.0))
            secret = secrets.token_hex(16)
            uri = nip46.nostrconnect_uri(app.pubkey, channel.relays, secret, perms, name)
        except (nip46.Nip46Error, ValueError) as exc:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, f"nostrconnect: {exc}") from None
        signer = cls(channel, timeout=timeout, auth_timeout=auth_timeout, on_auth_url=on_auth_url)
        signer._pair_secret = secret
        signer._paired = asyncio.get_running_loop().create_future()
        try:
            await signer._open()
            show_uri(uri)
            try:
                paired = asyncio.shield(signer._paired)
                signer._remote = await asyncio.wait_for(paired, pair_timeout)
            except TimeoutError:
                raise BrowserdError(
                    ErrorCode.TIMEOUT,
                    f"no signer answered the nostrconnect:// URI within {pair_timeout:g} s",
                ) from None
            await signer.public_key()
        except BaseException:
            await signer.aclose()
            raise
        return signer

    async def _open(self) -> None:
        await self._channel.open()
        self._reader = supervise("NIP-46 client reader", self._read)

    async def aclose(self) -> None:
        """Stop listening and disconnect; pending requests fail with ``SIGNER_ERROR``."""
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None
        await self._channel.close()
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(
                    BrowserdError(ErrorCode.SIGNER_ERROR, "the bunker session was closed")
                )

    # -- messages ------------------------------------------------------------------

    async def _read(self) -> None:
        async for incoming in self._channel.messages():
            if isinstance(incoming.message, nip46.Response):
                self._on_response(incoming, incoming.message)

    def _on_response(self, incoming: Incoming, response: nip46.Response) -> None:
        if self._remote is None:
            self._on_pairing(incoming, response)
            return
        if incoming.sender != self._remote:
            return  # only the signer we paired with may answer
        pending = self._pending.get(response.id)
        if pending is None or pending.future.done():
            return
        self._heard = True
        if incoming.nip04 and not self._nip04:
            log.info("NIP-46: the remote signer answers in NIP-04; switching to it")
            self._nip04 = True
        if response.is_auth_url:
            assert response.error is not None
            pending.auth_url = response.error
            pending.deadline = asyncio.get_running_loop().time() + self._auth_timeout
            log.warning(
                "NIP-46: the remote signer asks for approval of %s: open %s",
                pending.method,
                response.error,
            )
            if self._on_auth_url is not None:
                self._on_auth_url(response.error)
            return
        pending.future.set_result(response)

    def _on_pairing(self, incoming: Incoming, response: nip46.Response) -> None:
        """nostrconnect: the first response carrying our secret names the signer."""
        assert self._paired is not None and self._pair_secret is not None
        if self._paired.done() or not response.result:
            return
        if secrets.compare_digest(response.result, self._pair_secret):
            self._nip04 = incoming.nip04
            self._paired.set_result(incoming.sender)
        else:
            log.info("NIP-46: ignored a pairing answer without our secret")

    async def _call(self, method: str, *params: str, timeout: float | None = None) -> str:
        """Send one request and return its result; with no answer in time, pair again once
        (``connect`` with the URL's secret, which a bunker answers even when it has
        forgotten us: ``--reusable-secret``) and send it again.
        """
        try:
            return await self._request(method, *params, timeout=timeout)
        except BrowserdError as exc:
            if exc.code is not ErrorCode.TIMEOUT or method == "connect" or not self._connect_params:
                raise
        log.warning("NIP-46: no answer to %s; pairing with the bunker again", method)
        await self._request("connect", *self._connect_params, timeout=timeout)
        return await self._request(method, *params, timeout=timeout)

    async def _request(self, method: str, *params: str, timeout: float | None = None) -> str:
        """Send one request and wait for its result (``auth_url`` extends the wait).

        Answers are ephemeral events: one sent while the signer (or we) were reconnecting is
        gone.  So a request sent around a reconnect of ours, or pending across one, is sent
        again with the same id (0.5 s, 1 s, 2 s … apart) until anything comes back; the
        signer answers a repeated id once.
        """
        assert self._remote is not None
        loop = asyncio.get_running_loop()
        request = nip46.Request(nip46.new_request_id(), method, params)
        pending = _Pending(method, loop.time() + (timeout or self._timeout), loop.create_future())
        self._pending[request.id] = pending
        try:
            # After a relay dropped us, wait for it to be back (the pool resubscribes on
            # reconnect) rather than miss the answer.
            await self._channel.wait_connected(max(0.0, pending.deadline - loop.time()))
            await self._channel.send(self._remote, request, nip04=self._nip04)
            sent, pause = loop.time(), _RESEND_FIRST
            next_send = sent + pause
            while not pending.future.done():
                now = loop.time()
                remaining = pending.deadline - now
                if remaining <= 0:
                    waited = "approval of" if pending.auth_url else "answer to"
                    raise BrowserdError(
                        ErrorCode.TIMEOUT,
                        f"the remote signer gave no {waited} {method} in time; is it "
                        "running and connected to " + ", ".join(self._channel.relays),
                    )
                if now >= next_send:
                    if pending.auth_url is None and self._reconnected_since(sent):
                        await self._resend(request, remaining)
                    pause *= 2
                    next_send = loop.time() + pause
                    continue
                await asyncio.wait([pending.future], timeout=min(remaining, next_send - now))
            response = pending.future.result()
        finally:
            del self._pending[request.id]
        if response.error is not None or response.result is None:
            raise BrowserdError(
                ErrorCode.SIGNER_ERROR,
                f"the remote signer refused {method}: {(response.error or 'no result')[:200]}",
            )
        return response.result

    def _reconnected_since(self, sent: float) -> bool:
        """Whether a relay came back shortly before ``sent`` or after it: a loss is likely."""
        last = self._channel.last_reconnect
        return last is not None and last > sent - _RECONNECT_GRACE

    async def _resend(self, request: nip46.Request, remaining: float) -> None:
        """Send ``request`` again; a failure here only costs this attempt."""
        assert self._remote is not None
        log.info("NIP-46: no answer to %s since a reconnect; sending it again", request.method)
        with contextlib.suppress(BrowserdError, TimeoutError):
            async with asyncio.timeout(remaining):
                await self._channel.send(self._remote, request, nip04=self._nip04)

    def describe(self) -> dict[str, Any]:
        """Status details (no secrets): the signer, relays, transport, pending approvals."""
        return {
            "remote_signer": self._remote,
            "relays": list(self._channel.relays),
            "connected": self._channel.connected,
            "transport": "nip04" if self._nip04 else "nip44",
            "auth_urls": [p.auth_url for p in self._pending.values() if p.auth_url],
        }

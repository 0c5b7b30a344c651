"""The local control channel: the protocol over a WebSocket on 127.0.0.1, path ``/agent``.

It is for agents and scripts on the same machine, and only those holding its bearer token
(``Authorization: Bearer …``; never in the URL, where logs and histories keep it).  Without a
configured token one is generated (0600) into the state directory.  A browser page must never
reach it: any request carrying an ``Origin`` header (every page's WebSocket does, ``null``
included) or ``Sec-Fetch-Mode`` (every request a browser makes, a top-level navigation
included) is refused with 403, and the socket binds to loopback unless told otherwise and
then answers only to loopback ``Host`` names (against DNS rebinding).  ``GET /`` answers the
daemon's status as JSON, for curl with the token.

One exception, made narrow: ``/live``, the live view a person watches in a browser (see
live_page.py).  ``GET /live`` returns a static page with no data; its WebSocket is let in
only from that page's own origin (``http://127.0.0.1:PORT``), and gets nothing until its
first message carries the watch token.  That token is not the channel's: it is derived from
it (an HMAC), is good for watching only, and is what the page's address holds, so the
full-control token stays out of browser history and sync.  Viewers (``/agent`` clients and
``/live`` pages) are sent the stream's frames with flow control (browser/screencast.py).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from ..browser.screencast import Fanout
from ..errors import BrowserdError, ErrorCode
from ..login.files import read_private_file
from ..net import is_loopback_host
from .keyfile import ensure_token
from .live_page import page_response

log = logging.getLogger(__name__)

DEFAULT_PORT = 17777
OWNER = "local"
Handle = Callable[[str, str], Awaitable[str]]
Status = Callable[[], Awaitable[dict[str, Any]]]
Live = Callable[[], Awaitable[dict[str, Any]]]
LIVE = "/live"
LIVE_TOKEN_SECONDS = 10.0  # a /live socket that sends no token by then is closed
LIVE_EVERY = 1.0  # seconds between the live page's updates of the tab and commands


class LocalServer:
    """WebSocket + status endpoint on loopback; every message goes to ``handle(owner, raw)``."""

    def __init__(
        self,
        handle: Handle,
        status: Status,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str,
        path: str = "/agent",
        frames: Fanout | None = None,
        live: Live | None = None,
    ) -> None:
        self.handle = handle
        self.status = status
        self.host = host
        self.port = port
        if not token:
            raise ValueError("the local channel needs a token")
        self.token = token
        self._token = token.encode()
        self._watch = watch_token(token).encode()
        self.path = path
        self.clients: set[ServerConnection] = set()
        self.frames = frames if frames is not None else Fanout()
        self.live = live
        self._server: Server | None = None

    async def start(self) -> None:
        """Listen; with port 0 the chosen port is in ``self.port`` afterwards."""
        self._server = await serve(
            self._serve, self.host, self.port, process_request=self._check, max_size=2**22
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    @property
    def loopback(self) -> bool:
        """Whether we listen on loopback only (then only loopback Host names are served)."""
        return is_loopback_host(self.host)

    @property
    def url(self) -> str:
        """Where clients connect."""
        return f"ws://{self.host}:{self.port}{self.path}"

    def broadcast(self, event: dict[str, Any]) -> None:
        """Push ``{"type": "event", "event", "data"}`` to every connected client."""
        broadcast(self.clients, json.dumps({"type": "event", **event}, ensure_ascii=False))

    @property
    def live_url(self) -> str:
        """The live view's address, with the watch-only token in its fragment."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{LIVE}#{self._watch.decode()}"

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends to be let in."""
        return {"Authorization": f"Bearer {self.token}"}

    async def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse web pages and wrong tokens; answer GET / with status; pass /agent on."""
        if urlsplit(request.path).path == LIVE:
            return self._check_live(request)
        if "Origin" in request.headers:  # "null" too: sandboxed frames and file: pages send it
            return reply(HTTPStatus.FORBIDDEN, {"error": "Web pages may not use this socket."})
        if "Sec-Fetch-Mode" in request.headers:  # a browser: navigations carry no Origin
            return reply(HTTPStatus.FORBIDDEN, {"error": "Browsers may not use this socket."})
        if self.loopback and not is_loopback_host(request.headers.get("Host", "")):
            # A page that rebinds its own DNS name to 127.0.0.1 still names itself in Host.
            return reply(HTTPStatus.FORBIDDEN, {"error": "Use 127.0.0.1 or localhost."})
        if not self._authorised(request):
            return reply(
                HTTPStatus.UNAUTHORIZED,
                {"error": "Send the token: Authorization: Bearer <the local token file>."},
            )
        parts = urlsplit(request.path)
        if parts.path == "/":
            return reply(HTTPStatus.OK, {**await self.status(), "live_view": self.live_url})
        if parts.path != self.path:
            return reply(HTTPStatus.NOT_FOUND, {"error": f"Connect to {self.path}."})
        return None

    def _check_live(self, request: Request) -> Response | None:
        """``/live``: the static page to anyone on loopback; its socket from its origin only."""
        host = request.headers.get("Host", "")
        if self.loopback and not is_loopback_host(host):
            return reply(HTTPStatus.FORBIDDEN, {"error": "Use 127.0.0.1 or localhost."})
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return page_response()
        if request.headers.get("Origin") != f"http://{host}" or not host.endswith(f":{self.port}"):
            return reply(HTTPStatus.FORBIDDEN, {"error": "Only the live page may use /live."})
        return None

    def _authorised(self, request: Request) -> bool:
        """The header's token, compared as bytes in constant time (any character is a 401)."""
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return False
        # websockets decodes header bytes as ISO-8859-1: this gives the bytes sent back.
        return self._token_matches(header[7:].encode("latin-1", "replace"))

    def _token_matches(self, offered: bytes) -> bool:
        return hmac.compare_digest(offered, self._token)

    async def _serve_live(self, connection: ServerConnection) -> None:
        """A live page: the watch token first, then frames, events and updates; it runs nothing."""
        try:
            async with asyncio.timeout(LIVE_TOKEN_SECONDS):
                first = await connection.recv()
            offered = json.loads(first).get("token", "")
        except (TimeoutError, ValueError, AttributeError, ConnectionClosed):
            offered = ""
        if not isinstance(offered, str) or not hmac.compare_digest(offered.encode(), self._watch):
            await connection.close(4401, "the watch token is missing or wrong")
            return
        self.clients.add(connection)
        self.frames.add(connection, connection.send)
        updates = asyncio.create_task(self._live_updates(connection))
        try:
            async for _ignored in connection:  # a viewer's messages are never commands
                pass
        except ConnectionClosed:
            pass
        finally:
            updates.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await updates
            self.frames.remove(connection)
            self.clients.discard(connection)

    async def _live_updates(self, connection: ServerConnection) -> None:
        """Every second: the active tab's address and title, the stream, the last commands."""
        if self.live is None:
            return
        with contextlib.suppress(ConnectionClosed):
            while True:
                state = await self.live()
                await connection.send(json.dumps({"type": "live", **state}, default=str))
                await asyncio.sleep(LIVE_EVERY)

    async def _serve(self, connection: ServerConnection) -> None:
        if connection.request is not None and urlsplit(connection.request.path).path == LIVE:
            await self._serve_live(connection)
            return
        self.clients.add(connection)
        self.frames.add(connection, connection.send)
        try:
            async for message in connection:
                raw = message if isinstance(message, str) else message.decode("utf-8", "replace")
                try:
                    answer = await self.handle(OWNER, raw)
                except Exception:
                    log.exception("local command failed")
                    answer = json.dumps(
                        {
                            "id": None,
                            "success": False,
                            "error": {"code": "INTERNAL", "message": "The command failed."},
                        }
                    )
                await connection.send(answer)
        except ConnectionClosed:
            pass
        finally:
            self.frames.remove(connection)
            self.clients.discard(connection)


def watch_token(token: str) -> str:
    """The live view's token: derived from the channel's, and no way back to it."""
    digest = hmac.new(token.encode(), b"nostr-browserd live view", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def reply(status: HTTPStatus, body: dict[str, Any]) -> Response:
    """A small JSON HTTP response."""
    data = json.dumps(body, default=str).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return Response(status.value, status.phrase, headers, data)


def load_token(path: Path, *, generate: bool) -> str:
    """The channel's token from ``path``, owner-only like a key file; made first if allowed."""
    if generate and ensure_token(path):
        log.warning("generated the local channel's token in %s (mode 0600)", path)
    token = read_private_file(path)
    if not token:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"the local token file {path} is empty")
    return token

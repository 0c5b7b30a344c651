"""The local control channel: the protocol over a WebSocket on 127.0.0.1, path ``/agent``.

It is for agents and scripts on the same machine, and only those holding its bearer token
(``Authorization: Bearer …``; never in the URL, where logs and histories keep it).  Without a
configured token one is generated (0600) into the state directory.  A browser page must never
reach it: any request carrying an ``Origin`` header (every page's WebSocket does, ``null``
included) or ``Sec-Fetch-Mode`` (every request a browser makes, a top-level navigation
included) is refused with 403, and the socket binds to loopback unless told otherwise and
then answers only to loopback ``Host`` names (against DNS rebinding).  ``GET /`` answers the
daemon's status as JSON, for curl with the token.
"""

from __future__ import annotations

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

from ..errors import BrowserdError, ErrorCode
from ..login.files import read_private_file
from ..net import is_loopback_host
from .keyfile import ensure_token

log = logging.getLogger(__name__)

DEFAULT_PORT = 17777
OWNER = "local"
Handle = Callable[[str, str], Awaitable[str]]
Status = Callable[[], dict[str, Any]]


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
    ) -> None:
        self.handle = handle
        self.status = status
        self.host = host
        self.port = port
        if not token:
            raise ValueError("the local channel needs a token")
        self.token = token
        self._token = token.encode()
        self.path = path
        self.clients: set[ServerConnection] = set()
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
    def headers(self) -> dict[str, str]:
        """What a client sends to be let in."""
        return {"Authorization": f"Bearer {self.token}"}

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse web pages and wrong tokens; answer GET / with status; pass /agent on."""
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
            return reply(HTTPStatus.OK, self.status())
        if parts.path != self.path:
            return reply(HTTPStatus.NOT_FOUND, {"error": f"Connect to {self.path}."})
        return None

    def _authorised(self, request: Request) -> bool:
        """The header's token, compared as bytes in constant time (any character is a 401)."""
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return False
        # websockets decodes header bytes as ISO-8859-1: this gives the bytes sent back.
        offered = header[7:].encode("latin-1", "replace")
        return hmac.compare_digest(offered, self._token)

    async def _serve(self, connection: ServerConnection) -> None:
        self.clients.add(connection)
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
            self.clients.discard(connection)


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

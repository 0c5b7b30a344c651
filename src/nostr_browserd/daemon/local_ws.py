"""The local control channel: the protocol over a WebSocket on 127.0.0.1, path ``/agent``.

It is for agents and scripts on the same machine.  A browser page must never reach it:
any request carrying an ``Origin`` header (every page's WebSocket does, ``null`` included)
is refused with 403, the socket binds to loopback unless told otherwise and then answers
only to loopback ``Host`` names (against DNS rebinding), and a bearer token can be
required on top.  ``GET /`` answers the daemon's status as JSON, for curl.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from ..net import is_loopback_host

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
        token: str | None = None,
        path: str = "/agent",
    ) -> None:
        self.handle = handle
        self.status = status
        self.host = host
        self.port = port
        self.token = token
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

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        """Refuse web pages and wrong tokens; answer GET / with status; pass /agent on."""
        if "Origin" in request.headers:  # "null" too: sandboxed frames and file: pages send it
            return reply(HTTPStatus.FORBIDDEN, {"error": "Web pages may not use this socket."})
        if self.loopback and not is_loopback_host(request.headers.get("Host", "")):
            # A page that rebinds its own DNS name to 127.0.0.1 still names itself in Host.
            return reply(HTTPStatus.FORBIDDEN, {"error": "Use 127.0.0.1 or localhost."})
        parts = urlsplit(request.path)
        if self.token is not None and not self._authorised(request, parts.query):
            return reply(HTTPStatus.UNAUTHORIZED, {"error": "A bearer token is required."})
        if parts.path == "/":
            return reply(HTTPStatus.OK, self.status())
        if parts.path != self.path:
            return reply(HTTPStatus.NOT_FOUND, {"error": f"Connect to {self.path}."})
        return None

    def _authorised(self, request: Request, query: str) -> bool:
        header = request.headers.get("Authorization", "")
        offered = header[7:] if header.startswith("Bearer ") else None
        offered = offered or (parse_qs(query).get("token") or [None])[0]
        return offered is not None and hmac.compare_digest(offered, self.token or "")

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

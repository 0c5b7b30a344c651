"""``mcp --http 127.0.0.1:PORT``: the same server over Streamable HTTP, behind a bearer token.

Only loopback addresses are served (a browser that obeys an agent is no thing to publish),
the SDK's DNS-rebinding guard checks ``Host`` and ``Origin``, and every HTTP request must
carry ``Authorization: Bearer <token>``: the token is read from a file, created once (0600).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

import uvicorn

from ..net import is_loopback_host
from .server import BrowserMcp

TOKEN_FILE = "mcp-token"
Scope = dict[str, Any]


def parse_address(address: str) -> tuple[str, int]:
    """``127.0.0.1:8931`` → host and port; anything off loopback is refused."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http wants HOST:PORT, e.g. 127.0.0.1:8931, not {address!r}")
    if not is_loopback_host(f"[{host}]" if ":" in host else host):
        raise ValueError(f"--http serves loopback only (127.0.0.1, ::1, localhost), not {host}")
    return host, int(port)


def load_token(path: Path) -> str:
    """The bearer token in ``path``; a new random one is written there (0600) when missing."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text().strip()
        if len(token) < 16:
            raise ValueError(f"{path} holds no usable token (16 characters or more)") from None
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token


class BearerGate:
    """ASGI middleware: an HTTP request without the right bearer token gets 401, nothing else."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            offered = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(offered, self.expected):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Any) -> None:
    body = json.dumps({"error": "A bearer token is required (Authorization: Bearer …)."}).encode()
    headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_http(mcp: BrowserMcp, address: str, token_file: Path | None, state: Path) -> int:
    """Serve until interrupted; the backend lives as long as the HTTP server."""
    host, port = parse_address(address)
    if token_file is None:
        state.mkdir(parents=True, exist_ok=True, mode=0o700)
        token_file = state / TOKEN_FILE
    token = load_token(token_file)
    app = BearerGate(mcp.server.streamable_http_app(host=host), token)
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    )
    await mcp.backend.start()
    try:
        serving = asyncio.create_task(server.serve())
        while not server.started and not serving.done():  # uvicorn has no "listening" hook
            await asyncio.sleep(0.05)
        if server.started:  # the line a supervisor (or a test) waits for
            print(
                f"nostr-browserd mcp: Streamable HTTP on http://{host}:{port}/mcp "
                f"(bearer token in {token_file})",
                file=sys.stderr,
                flush=True,
            )
        await serving
    finally:
        await mcp.backend.close()
    return 0

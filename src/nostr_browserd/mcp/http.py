"""``mcp --http 127.0.0.1:PORT``: the same server over Streamable HTTP, behind a bearer token.

Only loopback addresses are served (a browser that obeys an agent is no thing to publish),
the SDK's DNS-rebinding guard checks ``Host`` and ``Origin`` on whichever loopback address
is served (the SDK turns it on by itself for 127.0.0.1, localhost and ::1 only), and every
HTTP request must carry ``Authorization: Bearer <token>``: the token is read from a file,
created once (0600) and refused, like the local channel's, when others may read it.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import sys
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from ..daemon.keyfile import ensure_token
from ..errors import BrowserdError
from ..login.files import read_private_file
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
    """The bearer token in ``path`` (owner-only, like a key file); made there when missing."""
    try:
        ensure_token(path)
        token = read_private_file(path)
    except BrowserdError as exc:
        raise ValueError(exc.message) from None
    if len(token) < 16:
        raise ValueError(f"{path} holds no usable token (16 characters or more)")
    return token


def transport_security(host: str) -> TransportSecuritySettings:
    """The SDK's loopback Host and Origin rules, with the address served among them."""
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in sorted(names)],
        allowed_origins=[f"http://{name}:*" for name in sorted(names)],
    )


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
    security = transport_security(host)
    app = BearerGate(mcp.server.streamable_http_app(transport_security=security), token)
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

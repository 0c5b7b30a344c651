"""The daemon's own HTTP requests (``download --url``, Blossom in and out, ``mcp --to``'s
links): httpx's async client, which a deadline really stops.

Every request runs under an absolute deadline (the event loop's clock), enforced around
every read: a server that sends a byte a second holds it no longer than the deadline, and
the request that ends there, or is cancelled, closes its connection at once.  No thread is
left behind, because none is used.  Redirects are never followed (each hop is judged by the
network policy first), no proxy comes from the environment, certificates are checked against
the system's authorities, and a body is read only up to a cap.

httpx is imported on first use: importing it would add a quarter of a second to the daemon's
start.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx


class Unreachable(Exception):
    """The request failed on the way (refused, reset, malformed answer): the reason."""


class Overflow(Exception):
    """A body over its cap: how large it said it was, or that it went over."""


@asynccontextmanager
async def opened(
    method: str,
    url: str,
    *,
    deadline: float,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    proxy: str | None = None,
) -> AsyncIterator[httpx.Response]:
    """The response to one request, its body not yet read; the block that reads it runs
    under ``deadline`` (``loop.time()``) too: ``TimeoutError`` past it."""
    import httpx

    try:
        async with (
            asyncio.timeout_at(deadline),
            httpx.AsyncClient(
                proxy=proxy,
                trust_env=False,
                verify=ssl.create_default_context(),
                follow_redirects=False,
                timeout=None,  # the deadline bounds everything
            ) as client,
            client.stream(method, url, headers=headers, content=body) as response,
        ):
            yield response
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as exc:  # the wire, a bad address
        raise Unreachable(reason(exc)) from None


async def read_body(response: httpx.Response, cap: int) -> bytes:
    """The whole body, ``Overflow`` as soon as it is over ``cap`` bytes (or says it will be)."""
    length = response.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > cap:
        raise Overflow(f"{int(length):,} bytes")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            raise Overflow(f"over {cap:,} bytes")
    return bytes(body)


def reason(exc: BaseException) -> str:
    """What went wrong, in the words of the error underneath httpx's (``Connection refused``)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror) and seen.strerror:
            return seen.strerror  # "Name or service not known"
        if isinstance(seen, OSError) and seen.errno and seen.errno > 0:
            return os.strerror(seen.errno)  # not asyncio's "Connect call failed (…)"
        seen = seen.__cause__ or seen.__context__
    return str(exc) or type(exc).__name__

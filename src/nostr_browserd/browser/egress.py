"""The forward proxy that blocked contexts' traffic goes through: every hop judged at connect time.

Routes see a navigation's first request only: a redirect, a page's WebSocket or a service
worker's fetch would pass them.  A context whose owner is under ``block_private_networks`` is
given this proxy (loopback included: ``<-loopback>``), so every connection its pages open
arrives here as ``CONNECT host:port`` (https, wss) or an absolute-form request (http).  The
host is resolved and judged here, and the connection goes to the very address judged: a name
that rebinds to 127.0.0.1 after the check cannot slip through.  A refusal is a 403 whose text
says why.

It listens on loopback, for the browser launched here, browser servers on this machine and the
daemon's own fetches.  Browser servers elsewhere reach it on ``[browser] egress_host``: there
it answers only requests that carry its credential (made at start, given to each context
with its proxy), so it is nobody else's open proxy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from functools import partial
from urllib.parse import urlsplit

from .netpolicy import NetworkPolicy

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 30.0
# Hop-by-hop headers of the client's request: this proxy speaks one request per connection.
DROPPED = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
USER = "nostr-browserd"
Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class EgressProxy:
    """A loopback HTTP proxy that connects only where ``policy`` lets a blocked context go."""

    def __init__(self, policy: NetworkPolicy, connect: Connect = asyncio.open_connection) -> None:
        self.policy = policy
        self.connect = connect  # to an address, never a name: what was judged is what is reached
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.url = ""
        self.remote_url = ""
        self.password = secrets.token_urlsafe(24)
        token = base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        self._authorization = f"Basic {token}"

    async def start(self) -> str:
        """Listen on 127.0.0.1 (a free port); returns the proxy's URL."""
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
        self._servers.append(server)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        return self.url

    async def listen_for_remote(self, host: str) -> str:
        """Also listen on ``host`` (a free port), for its credential only; returns that URL."""
        serve = partial(self._serve, authenticated=True)
        server = await asyncio.start_server(serve, host, 0, limit=HEAD_LIMIT)
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        self.remote_url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        return self.remote_url

    def credentials(self) -> dict[str, str]:
        """The proxy settings of a context on a browser server elsewhere."""
        return {"server": self.remote_url, "username": USER, "password": self.password}

    async def close(self) -> None:
        """Stop listening and cut every open tunnel (its tasks then end on their own)."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        authenticated: bool = False,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._proxy(reader, writer, authenticated)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client or a server that went away, or a malformed request: drop it
        except TimeoutError:
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _proxy(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, authenticated: bool
    ) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        if authenticated and not self._authorized(header_lines):
            return await refuse(writer, 407, "nostr-browserd: this proxy wants its credential.")
        method, target, _version = request_line.split(" ")
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            port, forward = int(port_text), None
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                return await refuse(writer, 400, "Only absolute http:// requests and CONNECT.")
            host, port = parts.hostname, parts.port or 80
            path = parts.path or "/"
            headers = [h for h in header_lines if h and h.split(":")[0].lower() not in DROPPED]
            forward = "\r\n".join(
                [f"{method} {path}{'?' + parts.query if parts.query else ''} HTTP/1.1", *headers]
            )
            forward += "\r\nConnection: close\r\n\r\n"
        reason, addresses = await self.policy.judge(host, port, private=True)
        if reason is not None:
            log.info("refused a connection to %s:%s: %s", host[:100], port, reason)
            return await refuse(writer, 403, f"nostr-browserd: {reason}")
        if not addresses:
            return await refuse(writer, 502, f"nostr-browserd: cannot resolve {host}.")
        try:
            up_reader, up_writer = await self.connect(str(addresses[0]), port)
        except OSError as exc:
            return await refuse(writer, 502, f"nostr-browserd: cannot connect to {host}: {exc}")
        self._writers.add(up_writer)
        try:
            if forward is None:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                up_writer.write(forward.encode("latin-1"))
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self._writers.discard(up_writer)
            up_writer.close()

    def _authorized(self, header_lines: list[str]) -> bool:
        """Whether the request carries this proxy's credential (compared in constant time)."""
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.strip().lower() == "proxy-authorization":
                return hmac.compare_digest(value.strip().encode(), self._authorization.encode())
        return False


async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until end of file or a broken connection, then half-close ``sink``."""
    with contextlib.suppress(OSError):
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
    with contextlib.suppress(OSError, RuntimeError):
        if sink.can_write_eof():
            sink.write_eof()


async def refuse(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    """A short plain-text answer, then the connection closes."""
    body = text.encode()
    reasons = {400: "Bad Request", 403: "Forbidden", 407: "Proxy Authentication Required"}
    reasons[502] = "Bad Gateway"
    challenge = 'Proxy-Authenticate: Basic realm="nostr-browserd"\r\n' if status == 407 else ""
    writer.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"{challenge}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()

"""The forward proxy that blocked contexts' traffic goes through: every hop judged at connect time.

Routes see a navigation's first request only: a redirect, a page's WebSocket or a service
worker's fetch would pass them.  A context whose owner is under ``block_private_networks`` is
given this proxy (loopback included: ``<-loopback>``), so every connection its pages open
arrives here as ``CONNECT host:port`` (https, wss) or an absolute-form request (http).  The
host is resolved and judged here, and the connection goes to the very address judged: a name
that rebinds to 127.0.0.1 after the check cannot slip through.  A refusal is a 403 whose text
says why.

It listens on loopback, for the browser launched here, browser servers on this machine and the
daemon's own fetches: on a port of each owner's own (:meth:`EgressProxy.url_for`), so that
it knows whose every connection is.  Browser servers elsewhere reach it on ``[browser]
egress_host``: there it answers only requests that carry its credential (made at start,
given to each context with its proxy, the owner named in its user name), so it is nobody
else's open proxy.  Each owner has at most ``per_owner`` connections open at once
(``[browser] egress_connections``; a page of its asking for more gets a 503 saying so), of
:data:`CONNECTIONS` in all, and its name lookups count against its share of the policy's
(lookups.py).
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

from ..capacity import Capacity
from ..errors import BrowserdError
from .netpolicy import NetworkPolicy

log = logging.getLogger(__name__)

HEAD_LIMIT = 64 * 1024
HEAD_TIMEOUT = 30.0
# Hop-by-hop headers of the client's request: this proxy speaks one request per connection.
DROPPED = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
USER = "nostr-browserd"
CONNECTIONS = 1024  # open at once, every owner's
Connect = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class EgressProxy:
    """A loopback HTTP proxy that connects only where ``policy`` lets a blocked context go."""

    def __init__(
        self,
        policy: NetworkPolicy,
        connect: Connect = asyncio.open_connection,
        per_owner: int = 64,
    ) -> None:
        """``per_owner``: connections one owner may have open at once."""
        self.policy = policy
        self.connect = connect  # to an address, never a name: what was judged is what is reached
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._owned: dict[str, str] = {}  # owner → the URL of its loopback port
        self._opening = asyncio.Lock()
        self.connections = Capacity("connections through the egress proxy", CONNECTIONS, per_owner)
        self.remote_url = ""
        self.password = secrets.token_urlsafe(24)

    async def url_for(self, owner: str) -> str:
        """The proxy's URL for ``owner``: a port on 127.0.0.1 of its own, opened on first use."""
        async with self._opening:
            url = self._owned.get(owner)
            if url is None:
                serve = partial(self._serve, owner=owner)
                server = await asyncio.start_server(serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
                self._servers.append(server)
                url = self._owned[owner] = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            return url

    async def listen_for_remote(self, host: str) -> str:
        """Also listen on ``host`` (a free port), for its credential only; returns that URL."""
        server = await asyncio.start_server(self._serve, host, 0, limit=HEAD_LIMIT)
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        self.remote_url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
        return self.remote_url

    def credentials(self, owner: str) -> dict[str, str]:
        """The proxy settings of ``owner``'s context on a browser server elsewhere."""
        return {"server": self.remote_url, "username": f"{USER}.{owner}", "password": self.password}

    async def close(self) -> None:
        """Stop listening and cut every open tunnel (its tasks then end on their own)."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        self._owned.clear()
        for writer in list(self._writers):
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        owner: str | None = None,
    ) -> None:
        """One connection: ``owner``'s (its own port), else whoever its credential names."""
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._proxy(reader, writer, owner)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client or a server that went away, or a malformed request: drop it
        except TimeoutError:
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _proxy(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, owner: str | None
    ) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        request_line, *header_lines = head.split("\r\n")
        owner = owner or self._authorized(header_lines)
        if owner is None:
            return await refuse(writer, 407, "nostr-browserd: this proxy wants its credential.")
        try:
            release = await self.connections.claim(owner)
        except BrowserdError as exc:
            return await refuse(writer, 503, f"nostr-browserd: {exc.message}")
        try:
            await self._forward(reader, writer, owner, request_line, header_lines)
        finally:
            release()

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        owner: str,
        request_line: str,
        header_lines: list[str],
    ) -> None:
        """Judge where the request goes, connect to that very address, and pipe."""
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
        try:
            reason, addresses = await self.policy.judge(host, port, True, owner)
        except BrowserdError as exc:  # BUSY: the owner's name lookups are all under way
            return await refuse(writer, 503, f"nostr-browserd: {exc.message}")
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

    def _authorized(self, header_lines: list[str]) -> str | None:
        """The owner the request's credential names, when it carries this proxy's password
        (compared in constant time); else None."""
        for line in header_lines:
            name, _, value = line.partition(":")
            if name.strip().lower() != "proxy-authorization":
                continue
            scheme, _, token = value.strip().partition(" ")
            try:
                user, _, password = base64.b64decode(token, validate=True).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return None
            right = hmac.compare_digest(password.encode(), self.password.encode())
            if scheme.lower() == "basic" and right and user.startswith(f"{USER}."):
                return user.removeprefix(f"{USER}.") or None
            return None
        return None


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
    reasons |= {502: "Bad Gateway", 503: "Service Unavailable"}
    challenge = 'Proxy-Authenticate: Basic realm="nostr-browserd"\r\n' if status == 407 else ""
    writer.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"{challenge}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()

"""Which addresses the browser may reach: the rules, and the routes where no proxy holds them.

A controller on the far side of a relay must not use the daemon's browser to reach what only
this machine can: its loopback services, the LAN, a cloud's metadata address
(169.254.169.254).  With ``[browser] block_private_networks`` on (the default for DM
controllers; off for the local owner, who is on this machine already) a request whose host is,
or resolves to, an address that is not global is refused; ``allowed_hosts`` names the
exceptions.  The daemon's own local port (its status page and control channel) is refused to
every context, whatever the policy.  The egress proxy (egress.py) applies these rules to every
connection of a blocked context; :meth:`NetworkPolicy.install` routes a context's requests
through them where the proxy cannot reach its browser.

Names are resolved on threads of the policy's own, a few at a time for each owner
(lookups.py): one owner's slow names never hold another's ``open``.

A host is resolved here and again by Chromium: a name that answers differently within the
cache's few seconds (DNS rebinding) can still slip through; the unit's ``IPAddressDeny=`` is
the layer below that holds regardless.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from ..errors import BrowserdError, ErrorCode
from .lookups import IPAddress, Lookups

log = logging.getLogger(__name__)

LOCAL_OWNER = "local"
CHECKED_SCHEMES = {"http": 80, "https": 443, "ws": 80, "wss": 443}
RESOLVE_TTL = 10.0
Resolver = Callable[[str, str], Awaitable[list[IPAddress]]]  # (host, owner) → addresses


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries, where a translator or tunnel would reach it.

    IPv4-mapped (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), NAT64 (``64:ff9b::/96``)
    and 6to4 (``2002:aabb:ccdd::/48``): judged as the address inside, so ``64:ff9b::a00:1``
    is 10.0.0.1, not a public IPv6 address.
    """
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64 or address in IPV4_COMPATIBLE:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """Globally routable, and so is any IPv4 address it wraps."""
    inner = embedded_ipv4(address)
    return address.is_global and (inner is None or inner.is_global)


def _loopback(address: IPAddress) -> bool:
    judged = embedded_ipv4(address) or address
    return address.is_loopback or judged.is_loopback or judged.is_unspecified


class NetworkPolicy:
    """The rules of one browser pool; ``check`` says why a URL is refused, or None."""

    def __init__(
        self,
        block_private: bool | None,
        allowed_hosts: list[str],
        resolver: Resolver | None = None,
    ) -> None:
        self.block_private = block_private
        self.allowed_hosts = {h.lower() for h in allowed_hosts}
        self.denied_ports: set[int] = set()
        self.resolver = resolver or Lookups()
        self._resolved: dict[str, tuple[float, list[IPAddress]]] = {}

    def blocks_private(self, owner: str) -> bool:
        """The configured policy, else on for everyone but the local owner."""
        if self.block_private is not None:
            return self.block_private
        return owner != LOCAL_OWNER

    def deny_port(self, port: int) -> None:
        """Refuse loopback ``port`` to every context (the daemon's own local channel)."""
        self.denied_ports.add(port)

    async def check(self, url: str, owner: str) -> str | None:
        """Why ``url`` may not be fetched for ``owner``, or None when it may."""
        parts = urlsplit(url)
        default_port = CHECKED_SCHEMES.get(parts.scheme.lower())
        if default_port is None or not parts.hostname:
            return None  # about:, data:, blob: … carry no network address
        try:
            port = parts.port or default_port
        except ValueError:
            return f"{url!r} has an invalid port."
        reason, _ = await self.judge(parts.hostname, port, self.blocks_private(owner), owner)
        return reason

    async def judge(
        self, host: str, port: int, private: bool, owner: str
    ) -> tuple[str | None, list[IPAddress]]:
        """Why ``host:port`` is refused (or None), and the addresses that were judged.

        Without ``private`` and away from a denied port nothing is resolved (no addresses).
        ``BUSY`` when a name must be looked up and ``owner``'s lookups are all under way.
        """
        host = host.lower().strip("[]").removesuffix(".")  # "localhost." is localhost
        if not private and port not in self.denied_ports:
            return None, []
        addresses = await self._resolve(host, owner)
        if port in self.denied_ports and any(map(_loopback, addresses)):
            return f"{host}:{port} is the daemon's own local channel: no browser may reach it.", []
        if private and not ({host, f"{host}:{port}"} & self.allowed_hosts):
            for address in addresses:
                if not is_public(address):
                    return (
                        f"{host} is a private address ({address}): [browser] "
                        "block_private_networks refuses it (allowed_hosts lists exceptions).",
                        [],
                    )
        return None, addresses

    async def refuse(self, url: str, owner: str) -> None:
        """``FORBIDDEN`` with the reason when ``url`` may not be fetched for ``owner``."""
        reason = await self.check(url, owner)
        if reason is not None:
            raise BrowserdError(ErrorCode.FORBIDDEN, reason)

    async def _resolve(self, host: str, owner: str) -> list[IPAddress]:
        """The addresses of ``host`` (a literal is itself); names under .localhost are loopback.

        ``host`` comes without its trailing dot: Chromium maps ``localhost.`` and
        ``x.localhost.`` to loopback too, never asking DNS.
        """
        if host == "localhost" or host.endswith(".localhost"):
            return [ipaddress.ip_address("127.0.0.1")]  # Chromium maps these without DNS
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        cached = self._resolved.get(host)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        addresses = await self.resolver(host, owner)
        if len(self._resolved) > 1000:
            self._resolved.clear()
        self._resolved[host] = (time.monotonic() + RESOLVE_TTL, addresses)
        return addresses

    async def install(self, context: Any, owner: str) -> None:
        """Route every request and WebSocket of ``context`` through ``check``."""

        async def on_request(route: Any) -> None:
            try:
                reason = await self.check(route.request.url, owner)
            except BrowserdError as exc:  # BUSY
                reason = exc.message
            if reason is None:
                await route.fallback()
            else:
                log.info("refused %s for %s: %s", route.request.url[:200], owner[:12], reason)
                await route.abort("blockedbyclient")

        async def on_websocket(ws: Any) -> None:
            try:
                reason = await self.check(ws.url, owner)
            except BrowserdError as exc:  # BUSY
                reason = exc.message
            if reason is None:
                ws.connect_to_server()
            else:
                await ws.close(code=1008, reason="blocked by the network policy")

        await context.route("**/*", on_request)
        await context.route_web_socket("**/*", on_websocket)

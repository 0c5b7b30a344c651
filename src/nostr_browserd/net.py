"""Whether an address is on this machine: loopback relays skip proxies, the local channel
answers only loopback Host names (no DNS rebinding)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback_host(host: str) -> bool:
    """``127.0.0.1:17777``, ``localhost``, ``[::1]:80`` and the like."""
    name = urlsplit(f"//{host}").hostname or ""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False

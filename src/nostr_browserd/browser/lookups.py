"""Name lookups on threads of their own, a few at a time for each owner.

``getaddrinfo`` blocks, so it needs a thread, and a thread cannot be cancelled: a name whose
DNS answers slowly keeps one busy however early its caller gives up.  asyncio's own
``loop.getaddrinfo`` uses the default executor, which Blossom, fetches and the rest of the
process share; these lookups have a pool of :data:`THREADS` threads instead, of which one
owner holds at most :data:`PER_OWNER`, each until its thread returns.  An owner's further
lookups wait in its own queue (a page's burst of new names), for at most :data:`SECONDS`,
then are refused ``BUSY``; a lookup itself is waited for at most :data:`SECONDS`, then the
name is taken as unresolved.  All threads busy: ``BUSY`` at once, never a queue.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from concurrent.futures import ThreadPoolExecutor

from ..capacity import Capacity

THREADS = 32
PER_OWNER = 8
SECONDS = 10.0
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Lookups:
    """The machine's answers for host names, bounded per owner (see the module)."""

    def __init__(self, threads: int = THREADS, per_owner: int = PER_OWNER) -> None:
        self.capacity = Capacity("name lookups", threads, per_owner)
        self._threads = ThreadPoolExecutor(threads, thread_name_prefix="lookup")

    async def __call__(self, host: str, owner: str) -> list[IPAddress]:
        """``host``'s addresses; none when it has none, or none came within SECONDS."""
        # BUSY when the owner's own lookups stay all under way: a page's burst of new names
        # waits its turn, a name that never answers holds only its owner's share.
        release = await self.capacity.claim(owner, SECONDS)
        future = asyncio.get_running_loop().run_in_executor(
            self._threads, socket.getaddrinfo, host, None, 0, socket.SOCK_STREAM
        )
        future.add_done_callback(lambda _: release())  # held until the thread returns
        try:
            infos = await asyncio.wait_for(asyncio.shield(future), SECONDS)
        except (OSError, TimeoutError):
            return []
        return [
            ipaddress.ip_address(info[4][0].split("%")[0])
            for info in infos
            if isinstance(info[4][0], str)  # an unknown family gives (int, bytes)
        ]

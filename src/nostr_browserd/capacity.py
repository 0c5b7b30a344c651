"""Bounded shares of the daemon's shared machinery: no one owner can take all of it.

Name lookups, the egress proxy's connections, fetches by address and Blossom transfers each
have a :class:`Capacity`: at most ``total`` at once, and at most ``per_owner`` of them for one
owner (a controller, or ``local``).  A claim past the total is refused at once with ``BUSY``;
a claim past the owner's share is too, or waits a little in that owner's own queue (never
anyone else's) and is refused when no slot of its own came free in time.  A claim is held
until the work really ends: a lookup's thread that outlives its caller still counts against
its owner until it returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from .errors import BrowserdError, ErrorCode


class Capacity:
    """``total`` slots of one kind of work, ``per_owner`` of them at most for each owner."""

    def __init__(self, work: str, total: int, per_owner: int) -> None:
        """``work`` names it in the refusal ("file fetches", "name lookups", …)."""
        self.work, self.total, self.per_owner = work, total, per_owner
        self._owners: dict[str, asyncio.Semaphore] = {}
        self.in_use = 0

    async def claim(self, owner: str, wait: float = 0.0) -> Callable[[], None]:
        """A slot for ``owner``, waiting up to ``wait`` seconds for one of its own, else
        ``BUSY`` saying which bound it met; call the returned function when the work ends."""
        share = self._owners.setdefault(owner, asyncio.Semaphore(self.per_owner))
        try:
            if share.locked() and wait <= 0:
                raise TimeoutError
            async with asyncio.timeout(wait if share.locked() else None):
                await share.acquire()
        except TimeoutError:
            raise BrowserdError(
                ErrorCode.BUSY,
                f"You have {self.per_owner} {self.work} under way, the most one controller may "
                "have at once: wait for one to end, then try again.",
            ) from None
        if self.in_use >= self.total:
            share.release()
            raise BrowserdError(
                ErrorCode.BUSY,
                f"The daemon's {self.total} {self.work} are all under way: try again shortly.",
            )
        self.in_use += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:  # once, whoever calls it first (a callback, a finally)
                released = True
                self.in_use -= 1
                share.release()

        return release

    @asynccontextmanager
    async def slot(self, owner: str, wait: float = 0.0) -> AsyncIterator[None]:
        """Hold a slot for ``owner`` while the block runs (``BUSY`` when none is free)."""
        release = await self.claim(owner, wait)
        try:
            yield
        finally:
            release()

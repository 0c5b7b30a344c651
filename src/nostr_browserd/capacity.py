"""Bounded shares of the daemon's shared machinery: no one owner can take all of it.

Name lookups, the egress proxy's connections, fetches by address and Blossom transfers each
have a :class:`Capacity`: at most ``total`` at once, and at most ``per_owner`` of them for one
owner (a controller, or ``local``).  A claim past either bound is refused at once with
``BUSY`` (never queued, so nothing waits behind a slow owner), and a claim is held until the
work really ends: a lookup's thread that outlives its caller's deadline still counts against
its owner until it returns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .errors import BrowserdError, ErrorCode


class Capacity:
    """``total`` slots of one kind of work, ``per_owner`` of them at most for each owner."""

    def __init__(self, work: str, total: int, per_owner: int) -> None:
        """``work`` names it in the refusal ("fetches by address", "name lookups", …)."""
        self.work, self.total, self.per_owner = work, total, per_owner
        self._held: Counter[str] = Counter()

    @property
    def in_use(self) -> int:
        """Slots held now, every owner's."""
        return self._held.total()

    def held(self, owner: str) -> int:
        """Slots ``owner`` holds now."""
        return self._held[owner]

    def claim(self, owner: str) -> Callable[[], None]:
        """A slot for ``owner``, or ``BUSY`` saying which bound it met; call the returned
        function exactly once when the work has ended."""
        if self._held[owner] >= self.per_owner:
            raise BrowserdError(
                ErrorCode.BUSY,
                f"You have {self.per_owner} {self.work} under way, the most one controller may "
                "have at once: wait for one to end, then try again.",
            )
        if self.in_use >= self.total:
            raise BrowserdError(
                ErrorCode.BUSY,
                f"The daemon's {self.total} {self.work} are all under way: try again shortly.",
            )
        self._held[owner] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._held[owner] -= 1
                if not self._held[owner]:
                    del self._held[owner]

        return release

    @contextmanager
    def slot(self, owner: str) -> Iterator[None]:
        """Hold a slot for ``owner`` while the block runs (``BUSY`` when none is free)."""
        release = self.claim(owner)
        try:
            yield
        finally:
            release()

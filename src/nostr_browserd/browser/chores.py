"""What event handlers start (a cleanup, an announcement): run to their end, and awaited.

Playwright calls a page's handlers synchronously, so what they must await is started here; a
reference is kept until it is done (a task nobody holds may be collected), its failure is
swallowed (the page it touched may be gone), and a command waits for them before its reply,
so the events it caused go out first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any


class Chores:
    """The handlers' work in progress of one session (or of its background tabs)."""

    def __init__(self) -> None:
        self._pending: set[asyncio.Future[Any]] = set()

    def run(self, awaitable: Awaitable[Any]) -> None:
        """Run ``awaitable`` to its end, kept until it is done; ``settle`` waits for it."""
        task = asyncio.ensure_future(_quietly(awaitable))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settle(self) -> None:
        """Let the work in progress finish (at most 5 s: a command's reply does not hang)."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=5)


async def _quietly(awaitable: Awaitable[Any]) -> None:
    with contextlib.suppress(Exception):
        await awaitable

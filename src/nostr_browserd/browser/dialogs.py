"""The dialogs of a session's tabs: the one that waits for an answer, and the actions it stops.

Each tab holds its own pending dialog (``Tab.dialog``); the session answers the newest.  A
click that opens ``confirm()`` does not return until the dialog is answered, so a command
runs its action with ``until`` and returns as soon as a dialog interrupts it, with the dialog
as its state; the action finishes later.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from ..errors import BrowserdError, ErrorCode
from .tab import PendingDialog, Tab, consume


class Dialogs:
    """The pending dialogs of ``tabs`` (the session's own dict), alerts and interrupted waits."""

    def __init__(self, tabs: dict[str, Tab]) -> None:
        self._tabs = tabs
        self.last_alert: dict[str, Any] | None = None  # for the next result, then forgotten
        self._opened = asyncio.Event()
        self._count = 0
        self._watchers = 0  # ``until`` calls in progress (a batch nests them)

    @property
    def pending(self) -> PendingDialog | None:
        """The dialog that waits for an answer (each tab holds its own): the newest."""
        waiting = [t.dialog for t in self._tabs.values() if t.dialog is not None]
        return max(waiting, key=lambda d: d.number, default=None)

    def opened(self, alert: dict[str, Any] | None) -> None:
        """A tab's dialog opened: an alert for the next result, or one ``until`` meets."""
        if alert is not None:
            self.last_alert = alert
        else:
            self._count += 1
        self._opened.set()

    async def answer(self, accept: bool, value: str | None = None) -> dict[str, Any]:
        """Accept or dismiss the dialog that waits for an answer (``pending``)."""
        pending = self.pending
        if pending is None:
            raise BrowserdError(ErrorCode.NO_DIALOG, "No dialog is open.")
        return await self._tabs[pending.tab].answer(accept, value)

    async def until(self, action: Awaitable[Any]) -> tuple[bool, Any]:
        """Run ``action`` until it finishes or opens a dialog that waits for an answer.

        Returns ``(True, None)`` when a dialog interrupted it: a click that opens
        ``confirm()`` does not return until the dialog is answered, so the command returns
        with the dialog as state and the action finishes later.  Alerts do not interrupt.
        When calls nest (a batch runs each of its commands this way), the innermost one is
        interrupted and the outer ones wait for their action to return (the batch's summary).

        Cancelled (the command's deadline), it cancels the action and returns only once the
        action has ended: a stopped command does nothing afterwards, and the session's lock
        is not released while it still could (pass a task to see how it ended).
        """
        start = self._count
        self._watchers += 1
        depth = self._watchers
        task = asyncio.ensure_future(action)
        try:
            while not task.done():
                opened = asyncio.ensure_future(self._opened.wait())
                try:
                    await asyncio.wait({task, opened}, return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    opened.cancel()
                    task.cancel()  # Playwright aborts the call in the browser too
                    await asyncio.wait({task})
                    consume(task)
                    raise
                opened.cancel()
                self._opened.clear()
                inner = self._watchers > depth
                if not (task.done() or inner) and self._count != start and self.pending:
                    task.add_done_callback(consume)
                    return True, None
            return False, task.result()
        finally:
            self._watchers -= 1

    async def race(self, action: Awaitable[Any]) -> bool:
        """Run ``action``; True if a dialog interrupted it (see ``until``)."""
        interrupted, _ = await self.until(action)
        return interrupted

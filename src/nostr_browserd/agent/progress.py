"""Progress for a person on a phone: a few messages, not hundreds.

A turn produces a status line per step and a stream of text deltas from the model.  They are
coalesced: the first goes at once, then at most one message per ``interval`` seconds carries
the latest status line and all text written since the previous message.  What is still
pending when the turn ends is dropped, because the final reply carries the whole answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


class Progress:
    """Coalesces status lines and text deltas into messages sent by ``send``."""

    def __init__(self, send: Callable[[str], Awaitable[Any]], interval: float) -> None:
        self._send = send
        self.interval = interval
        self._line = ""
        self._text = ""
        self._last = float("-inf")
        self._task: asyncio.Task[None] | None = None
        self._sending = False
        self._closed = False
        self.sent = 0

    def note(self, line: str) -> None:
        """A status line (replaces one not yet sent)."""
        self._line = line
        self._kick()

    def text(self, delta: str) -> None:
        """Text the model wrote (appended to what is not yet sent)."""
        self._text += delta
        self._kick()

    def _kick(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._flush_later())

    async def _flush_later(self) -> None:
        try:
            while not self._closed and (self._line or self._text):
                wait = self._last + self.interval - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                parts = [p for p in (self._line, self._text.strip()) if p]
                self._line, self._text = "", ""
                self._last = time.monotonic()
                if not parts:
                    continue
                self._sending = True
                self.sent += 1
                try:
                    await self._send("… " + "\n".join(parts))
                except Exception:  # a lost progress message must never end the turn
                    log.exception("could not send a progress message")
                finally:
                    self._sending = False
        finally:
            self._task = None

    async def close(self) -> None:
        """Drop what is pending; let a message already on its way finish."""
        self._closed = True
        task = self._task
        if task is None:
            return
        if not self._sending:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

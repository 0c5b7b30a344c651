"""Events a controller watches, sent to it as messages: at most one per interval.

A watched session's events (see the ``watch`` tool) arrive here with their owner.  The
first goes out at once; whatever comes within the next ``interval`` seconds is held and
sent as one message when it is over, so a page that reloads in a loop costs one message
every two seconds, not one per load.  A backlog keeps the newest ``MAX_HELD`` events and
says how many it dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

MAX_HELD = 20
NOT_CONTROLLERS = frozenset({"local", "shared"})  # sessions no single key owns
Deliver = Callable[[str, str], Awaitable[Any]]


class EventForwarder:
    """Coalesce each owner's watched events into at most one message per ``interval``."""

    def __init__(self, deliver: Deliver, interval: float = 2.0) -> None:
        self.deliver = deliver
        self.interval = interval
        self._held: dict[str, list[dict[str, Any]]] = {}
        self._dropped: dict[str, int] = {}
        self._senders: dict[str, asyncio.Task[None]] = {}

    def push(self, event: dict[str, Any]) -> None:
        """Take one pool event (``{"event", "data", "owner", "watched"?}``); never blocks."""
        owner = event.get("owner")
        if not event.get("watched") or not isinstance(owner, str) or owner in NOT_CONTROLLERS:
            return
        held = self._held.setdefault(owner, [])
        held.append({"event": event["event"], "data": event["data"]})
        if len(held) > MAX_HELD:
            del held[0]
            self._dropped[owner] = self._dropped.get(owner, 0) + 1
        if owner not in self._senders:
            self._senders[owner] = asyncio.create_task(self._send(owner))

    async def _send(self, owner: str) -> None:
        """Send what is held, then wait out the interval; stop when nothing came meanwhile."""
        try:
            while self._held.get(owner):
                message: dict[str, Any] = {"type": "events", "events": self._held.pop(owner)}
                dropped = self._dropped.pop(owner, 0)
                if dropped:
                    message["dropped"] = dropped
                try:
                    await self.deliver(owner, json.dumps(message, ensure_ascii=False))
                except Exception:
                    log.exception("could not send events to %s", owner[:12])
                await asyncio.sleep(self.interval)
        finally:
            self._senders.pop(owner, None)

    async def close(self) -> None:
        """Stop sending; held events are dropped."""
        for task in list(self._senders.values()):
            task.cancel()
        for task in list(self._senders.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._held.clear()

"""Waiting for an event with a deadline, so that a cancel always gets through.

On Python 3.11 ``asyncio.wait_for`` loses a cancel that comes in the same turn of the loop as
the event it waits for: it returns as if nothing happened.  A loop that a cancel stops then
goes on (the monitors' scheduler held a daemon's stop for ever that way), and a command
stopped at its deadline reads on.  ``asyncio.timeout`` lets every cancel through.
"""

from __future__ import annotations

import asyncio

__all__ = ["set_within"]


async def set_within(event: asyncio.Event, seconds: float | None) -> bool:
    """Whether ``event`` is set within ``seconds`` (None: no limit)."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True

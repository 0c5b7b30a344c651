"""Reader tasks that must outlive any bug: restarted when they end, reported when they can't be.

A task that reads outside input (the inbox, a NIP-46 channel) and ends, by an exception or
by returning, silences the daemon without a trace.  :func:`supervise` runs such a reader
in a loop: each end is logged and followed by a restart after a short, growing pause.  A
reader that ends more than ``limit`` times within ``window`` seconds is given up on; then
:func:`stopped_readers` names it, the daemon stops sending systemd's ``WATCHDOG=1``,
and systemd restarts the whole process (which is what a broken reader needs).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable

__all__ = ["stopped_readers", "supervise"]

log = logging.getLogger(__name__)

_dead: dict[object, str] = {}  # one token per supervised reader that was given up on


def stopped_readers() -> str | None:
    """None while every supervised reader runs (or will be restarted); else which do not.

    The watchdog's test: the daemon stops pinging systemd while this is not None.
    """
    return ", ".join(sorted(_dead.values())) or None


def supervise(
    name: str,
    reader: Callable[[], Awaitable[None]],
    *,
    limit: int = 5,
    window: float = 60.0,
    pause: float = 0.2,
    finished: Callable[[], bool] = lambda: False,
) -> asyncio.Task[None]:
    """Run ``reader()`` until the returned task is cancelled, restarting it whenever it ends.

    Cancel the task to stop the reader; a reader that returns while ``finished()`` is true
    (its subscription was closed on purpose) ends the supervision quietly too.
    """
    run = _keep_running(name, reader, finished, limit, window, pause)
    return asyncio.create_task(run, name=name)


async def _keep_running(
    name: str,
    reader: Callable[[], Awaitable[None]],
    finished: Callable[[], bool],
    limit: int,
    window: float,
    pause: float,
) -> None:
    token = object()
    ends: deque[float] = deque()
    try:
        while True:
            try:
                await reader()
                if finished():
                    return
                log.error("%s stopped; restarting it", name)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed; restarting it", name)
            now = time.monotonic()
            ends.append(now)
            while ends and now - ends[0] > window:
                ends.popleft()
            if len(ends) > limit:
                _dead[token] = name
                log.critical(
                    "%s ended %d times within %g s; giving up (the watchdog stops now)",
                    name,
                    len(ends),
                    window,
                )
                await asyncio.Event().wait()  # until cancelled: a new login may replace it
            await asyncio.sleep(min(5.0, pause * 2 ** (len(ends) - 1)))
    finally:
        _dead.pop(token, None)

"""systemd's notify protocol (``Type=notify``): one datagram per state change, no dependency.

``READY=1`` once the daemon listens, ``WATCHDOG=1`` at half the ``WatchdogSec`` interval while
the event loop runs and every reader is alive, ``STOPPING=1`` on shutdown.  Outside systemd
(no ``$NOTIFY_SOCKET``) every call is a no-op.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable


def notify(state: str, environ: dict[str, str] | None = None) -> bool:
    """Send ``state`` (``"READY=1"``, ``"STATUS=…"``) to systemd; False when not under it."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        try:
            sock.sendto(state.encode(), address)
        except OSError:
            return False
    return True


def watchdog_interval(environ: dict[str, str] | None = None) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``WatchdogSec``), or None if it is off."""
    env = os.environ if environ is None else environ
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2e6
    except ValueError:
        return None


async def watchdog(interval: float, problem: Callable[[], str | None]) -> None:
    """Send ``WATCHDOG=1`` every ``interval`` s while ``problem()`` is None, else its text.

    A blocked event loop and a reader that stopped for good both end the pings, so systemd
    restarts the daemon after ``WatchdogSec``.
    """
    while True:
        trouble = problem()
        notify("WATCHDOG=1" if trouble is None else f"STATUS=not healthy: {trouble}")
        await asyncio.sleep(interval)

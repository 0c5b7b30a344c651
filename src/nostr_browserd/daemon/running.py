"""Running: one admitted request on its owner's session, within the command deadline.

Stopped means stopped.  When the deadline passes, the request is cancelled, and this
returns only after it has ended: the tool's action is cancelled and awaited
(``Session.until_dialog``; Playwright aborts the call in the browser as well), and the
session's lock is released only then, so the controller's next command never runs beside
what was stopped.  The reply then says what really happened (``protocol.Progress``): not
run, stopped in the middle, or done but past the deadline.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..browser.session import Session
from ..commands.protocol import Progress, Request, run
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode


async def within(
    registry: Registry, session: Session, request: Request, seconds: float
) -> dict[str, Any]:
    """``request``'s response on ``session``, or ``TIMEOUT`` once ``seconds`` pass, raised
    only after the request has ended."""
    progress = Progress()
    try:
        return await asyncio.wait_for(run(registry, session, request, progress), seconds)
    except TimeoutError:
        raise overdue(request.tool, seconds, progress) from None


def overdue(tool: str, seconds: float, progress: Progress) -> BrowserdError:
    """The ``TIMEOUT`` a request past its deadline gets, as far as it had got."""
    late = f"{tool} did not finish within {seconds:g} s"
    if not progress.started:
        return BrowserdError(ErrorCode.TIMEOUT, f"{late}: it had not started, and was not run.")
    if not progress.done:
        return BrowserdError(ErrorCode.TIMEOUT, f"{late} and was stopped.")
    return BrowserdError(
        ErrorCode.TIMEOUT,
        f"{late}, but its action was done: only reading the page after it was cut short."
        " Look (snapshot, get url) before you send it again.",
    )

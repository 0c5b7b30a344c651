"""``watch screen``: after each command of yours that changes the page, the page itself.

A controller that watches ``screen`` gets, with the text reply to each command that is not
read-only (open, click, fill, press, back…), an annotated screenshot of the page as it is
now: its picture as a file message, its legend in the text reply, and its numbers ready for
``click 3``.  The picture is taken after the command, in the controller's own session, by the
same ``screenshot_annotated`` a person could send.
"""

from __future__ import annotations

from typing import Any

from ..browser.pool import BrowserPool
from ..commands.protocol import Request, run
from ..commands.registry import Registry
from ..tools.events import SCREEN

Response = dict[str, Any]


class ScreenWatch:
    """Takes the picture a ``watch screen`` controller gets after a command."""

    def __init__(self, registry: Registry, browser: BrowserPool) -> None:
        self.registry, self.browser = registry, browser

    async def after(self, owner: str, request: Request, response: Response) -> Response | None:
        """The annotated screenshot's response after ``request``; None when ``owner`` does not
        watch the screen, or the command failed or changed nothing."""
        session = self.browser.existing(owner)
        if session is None or SCREEN not in session.events.watching or not response.get("success"):
            return None
        if request.tool not in self.registry or self.registry.get(request.tool).read_only:
            return None
        shot = await run(self.registry, session, Request(tool="screenshot_annotated"))
        return shot if shot.get("success") else None

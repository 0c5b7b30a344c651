"""What the tabs of a session said, kept in bounded ring buffers, and what they fetched.

Playwright reports console messages and uncaught errors only as events, so a tool that asks
later (console, errors) reads them from here; each buffer drops its oldest entries first,
nothing grows without bound.  Requests are asked of Playwright when a tool wants them
(``requestlog``): listening to each would cost every load.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from playwright.async_api import ConsoleMessage, Page

from .requestlog import RequestLog

CONSOLE_MAX = 500
ERRORS_MAX = 100
TEXT_MAX = 2000


class PageLog:
    """Console messages, page errors and requests of every tab of one session."""

    def __init__(self) -> None:
        self.console: deque[dict[str, Any]] = deque(maxlen=CONSOLE_MAX)
        self.errors: deque[dict[str, Any]] = deque(maxlen=ERRORS_MAX)
        self.requests = RequestLog()

    def attach(self, tab: str, page: Page) -> None:
        """Start recording ``page`` as tab ``tab``."""
        page.on("console", lambda m: self._on_console(tab, m))
        page.on("pageerror", lambda e: self._on_error(tab, e))
        self.requests.attach(tab, page)

    def _on_console(self, tab: str, message: ConsoleMessage) -> None:
        where = message.location or {}
        self.console.append(
            {
                "tab": tab,
                "level": message.type,
                "text": message.text[:TEXT_MAX],
                "source": f"{where.get('url', '')}:{where.get('lineNumber', '')}"[:300],
            }
        )

    def _on_error(self, tab: str, error: Any) -> None:
        stack = str(getattr(error, "stack", "") or "")
        self.errors.append(
            {"tab": tab, "message": str(error)[:TEXT_MAX], "stack": stack[:TEXT_MAX]}
        )

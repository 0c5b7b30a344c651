"""What the tabs of a session said and fetched, kept in bounded ring buffers.

Playwright reports console messages, uncaught errors and requests only as events, so a
tool that asks later (console, errors, network_requests, har_stop) reads them from here.
Each buffer drops its oldest entries first; nothing grows without bound.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import ConsoleMessage, Page, Request, Response

CONSOLE_MAX = 500
ERRORS_MAX = 100
REQUESTS_MAX = 500
TEXT_MAX = 2000


@dataclass
class Exchange:
    """One request of a tab and, once it came, its response."""

    id: str
    tab: str
    request: Request
    started: float = field(default_factory=time.time)
    response: Response | None = None
    failure: str | None = None

    @property
    def size(self) -> int | None:
        """The response body's declared length (Content-Length), when the server sent one."""
        length = self.response.headers.get("content-length") if self.response else None
        return int(length) if length and length.isdigit() else None

    def summary(self) -> dict[str, Any]:
        """id, method, url, status, resource type, size and failure: one line of a list."""
        return {
            "id": self.id,
            "method": self.request.method,
            "url": self.request.url[:500],
            "status": self.response.status if self.response else None,
            "type": self.request.resource_type,
            "size": self.size,
            "failure": self.failure,
        }


class PageLog:
    """Console messages, page errors and requests of every tab of one session."""

    def __init__(self) -> None:
        self.console: deque[dict[str, Any]] = deque(maxlen=CONSOLE_MAX)
        self.errors: deque[dict[str, Any]] = deque(maxlen=ERRORS_MAX)
        self.requests: deque[Exchange] = deque(maxlen=REQUESTS_MAX)
        self._ids = itertools.count(1)

    def attach(self, tab: str, page: Page) -> None:
        """Start recording ``page`` as tab ``tab``."""
        page.on("console", lambda m: self._on_console(tab, m))
        page.on("pageerror", lambda e: self._on_error(tab, e))
        page.on("request", lambda r: self.requests.append(Exchange(f"r{next(self._ids)}", tab, r)))
        page.on("response", self._on_response)
        page.on("requestfailed", self._on_failed)

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

    def exchange(self, request: Request) -> Exchange | None:
        """The entry recording ``request`` (newest first: that is where answers land)."""
        for entry in reversed(self.requests):
            if entry.request is request:
                return entry
        return None

    def _on_response(self, response: Response) -> None:
        entry = self.exchange(response.request)
        if entry is not None:
            entry.response = response

    def _on_failed(self, request: Request) -> None:
        entry = self.exchange(request)
        if entry is not None:
            entry.failure = request.failure or "failed"

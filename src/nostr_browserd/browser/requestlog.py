"""Which requests a session's tabs made: asked of Playwright when a tool wants them.

Listening to every request costs each navigation five driver messages a request (the
Request, its event, its Response, that event and ``requestFinished``), on the load's path,
for a log most sessions never read.  Playwright's driver keeps each page's last 100 requests
(``page.requests()``), so the tools ask for them when called:

- ``listed``: a tab's last ``KEPT`` requests (91 to 100 once it made more: the driver drops
  its oldest ten at a time), oldest first, each with an id (``r12``) given when it is first
  listed, counting up through the session; ``find`` leads an id back to its request while
  Playwright still holds it and its tab is open.
- A failure's reason comes only with the ``requestfailed`` event, so every tab listens to
  that one event: it costs nothing while requests succeed.
- A HAR wants every request since its start, so only while one records (``start`` to
  ``stop``) do the tabs listen to ``request``; ``RECORDED_MAX`` of them are kept.
"""

from __future__ import annotations

import itertools
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Page, Request

KEPT = 100  # what Playwright's driver keeps of a page's requests (1.65)
RECORDED_MAX = 500


def may_have_dropped(listed: int) -> bool:
    """Whether a tab that lists ``listed`` requests may have had older ones: over ``KEPT``,
    the driver drops its oldest tenth, so a full list holds 91 to 100."""
    return listed > KEPT - KEPT // 10


def size(request: Request) -> int | None:
    """The response body's declared length (Content-Length), when the server sent one."""
    response = request.existing_response
    length = response.headers.get("content-length") if response else None
    return int(length) if length and length.isdigit() else None


def summary(request_id: str, request: Request) -> dict[str, Any]:
    """id, method, url, status, resource type, size and failure: one line of a list."""
    response = request.existing_response
    return {
        "id": request_id,
        "method": request.method,
        "url": request.url[:500],
        "status": response.status if response else None,
        "type": request.resource_type,
        "size": size(request),
        "failure": request.failure,
    }


@dataclass
class Exchange:
    """A request a HAR recorded, of tab ``tab``, from when it went out."""

    tab: str
    request: Request
    started: float = field(default_factory=time.time)


def _subscribed(_request: Request) -> None:
    """Listens only so that Playwright sends the event's requests (see ``RequestLog``)."""


class RequestLog:
    """The requests of one session's tabs: listed on demand, recorded only for a HAR."""

    def __init__(self) -> None:
        # A listed request → its id and its tab's page.
        self._ids: weakref.WeakKeyDictionary[Request, tuple[str, Page]] = (
            weakref.WeakKeyDictionary()
        )
        self._requests: weakref.WeakValueDictionary[str, Request] = weakref.WeakValueDictionary()
        self._count = itertools.count(1)
        self.recorded: deque[Exchange] | None = None  # while a HAR records
        self.dropped = 0  # recorded requests that left ``recorded`` (over RECORDED_MAX)
        self._listening: list[tuple[Page, Callable[[Request], None]]] = []

    def attach(self, tab: str, page: Page) -> None:
        """Keep ``page``'s failures (and, while a HAR records, its requests) as tab ``tab``."""
        page.on("requestfailed", _subscribed)
        if self.recorded is not None:
            self._listen(tab, page)

    async def listed(self, page: Page) -> list[tuple[str, Request]]:
        """``page``'s last requests (up to ``KEPT``) with their ids, oldest first."""
        requests = await page.requests()
        # Asking subscribes the page to every later request in Playwright's driver; a
        # listener's coming and going says "no longer" (and nothing while one listens).
        page.on("request", _subscribed)
        page.remove_listener("request", _subscribed)
        return [(self._id(request, page), request) for request in requests]

    def find(self, request_id: str) -> Request | None:
        """The request listed as ``request_id``, while Playwright still holds it (not once
        its tab closed)."""
        request = self._requests.get(request_id)
        if request is None or self._ids[request][1].is_closed():
            return None
        return request

    def _id(self, request: Request, page: Page) -> str:
        known = self._ids.get(request)
        if known is None:
            known = self._ids[request] = (f"r{next(self._count)}", page)
            self._requests[known[0]] = request
        return known[0]

    def start(self, tabs: dict[str, Page]) -> None:
        """Record every request of ``tabs`` (and of tabs opened later) from now on, afresh."""
        self.stop()
        self.recorded, self.dropped = deque(maxlen=RECORDED_MAX), 0
        for tab, page in tabs.items():
            self._listen(tab, page)

    def stop(self) -> list[Exchange] | None:
        """Stop recording; what was recorded, or None when nothing was."""
        for page, listener in self._listening:
            page.remove_listener("request", listener)
        self._listening.clear()
        recorded, self.recorded = self.recorded, None
        return list(recorded) if recorded is not None else None

    def _listen(self, tab: str, page: Page) -> None:
        def record(request: Request) -> None:
            if self.recorded is not None:
                if len(self.recorded) == RECORDED_MAX:
                    self.dropped += 1
                self.recorded.append(Exchange(tab, request))

        page.on("request", record)
        self._listening.append((page, record))

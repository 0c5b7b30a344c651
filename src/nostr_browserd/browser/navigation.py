"""The page an action opened: wait for it to commit and load, within the action's timeout.

A click on Save, Enter in a search box, a link a script follows: each starts a navigation of
the tab's main frame, and the reply should describe the page it led to, so that the next
command acts on that page.  Playwright's click returns once the navigation committed, before
the new document loaded (a dblclick, a mouse button or a bare key press not even that).  A
``NavigationWatch`` sees the main frame's navigation request go out while the action runs;
``settle`` then waits for the new document's load event, the request's failure, or the end
of the action's timeout.  An action that sent no navigation request waits for nothing.

``load``, not ``domcontentloaded``: ``open`` waits for it too, pages build their widgets in
load handlers (the Django admin does), and a tab reports its title at its load.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Page, Request

# A navigation that ends without a new document: a download, a 204, the page stopping it.
ABORTED = "net::ERR_ABORTED"


class NavigationWatch:
    """The main frame's navigation an action starts, from its request to its load.

    Entered before the action and left once its result is known; ``settle`` may be called
    any number of times in between, and waits only once a navigation request went out.
    """

    def __init__(self, page: Page, timeout_ms: float) -> None:
        self.page = page
        self.timeout_ms = timeout_ms
        self._deadline = time.monotonic() + timeout_ms / 1000
        self._request: Request | None = None  # the latest navigation request (redirects too)
        self._ended = asyncio.Event()  # the request's document committed, or it failed
        self._committed = False
        self._failure: str | None = None
        self._outcome: dict[str, Any] | None = None

    def __enter__(self) -> NavigationWatch:
        self.page.on("request", self._on_request)
        self.page.on("requestfailed", self._on_failed)
        self.page.on("framenavigated", self._on_navigated)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.page.remove_listener("request", self._on_request)
        self.page.remove_listener("requestfailed", self._on_failed)
        self.page.remove_listener("framenavigated", self._on_navigated)

    def _on_request(self, request: Request) -> None:
        with contextlib.suppress(PlaywrightError):  # a request with no frame (a worker's)
            if request.is_navigation_request() and request.frame is self.page.main_frame:
                self._request = request
                self._committed, self._failure, self._outcome = False, None, None
                self._ended.clear()

    def _on_failed(self, request: Request) -> None:
        if request is self._request and not self._ended.is_set():
            self._failure = request.failure or "failed"
            self._ended.set()

    def _on_navigated(self, frame: Frame) -> None:
        if frame is self.page.main_frame and self._request and not self._ended.is_set():
            self._committed = True
            self._ended.set()

    async def settle(self) -> dict[str, Any] | None:
        """Once a navigation started: wait for its document to load (or its failure) and say
        how it ended; None when none started, or it ended with no new page (a download, a
        204: what the action did otherwise stands)."""
        if self._request is None:
            return None
        if self._outcome is None:
            self._outcome = await self._wait(self._request)
        return self._outcome or None

    async def _wait(self, request: Request) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self.left()):
                await self._ended.wait()
        except TimeoutError:
            return {"changes": ["navigation started"], "note": self.not_loaded()}
        if self._failure == ABORTED:
            return {}
        if self._failure is not None:
            note = f"NAVIGATION FAILED: could not load {request.url}: {self._failure}."
            return {"changes": ["navigation failed"], "note": note}
        if not await self.load(self.page):
            return {"changes": ["new page opened"], "note": self.not_loaded()}
        return {"changes": ["new page loaded"], **await status(request)}

    async def load(self, page: Page) -> bool:
        """Wait for ``page``'s load event (this tab's new document, or a tab it opened)
        within what is left of the action's timeout; whether it came."""
        try:
            await page.wait_for_load_state("load", timeout=self.left() * 1000)
        except PlaywrightError:  # its timeout, or the tab closed
            return False
        return True

    def left(self) -> float:
        """Seconds left of the action's timeout (never quite 0: a timeout of 0 is none)."""
        return max(self._deadline - time.monotonic(), 0.001)

    def not_loaded(self) -> str:
        """The note of a page that had not loaded when the action's time was up."""
        return f"NOT LOADED: the new page had not loaded after {self.timeout_ms:.0f} ms."


async def status(request: Request) -> dict[str, Any]:
    """The HTTP status the new document came with, when it came over HTTP."""
    with contextlib.suppress(PlaywrightError):
        response = await request.response()
        if response is not None:
            return {"status": response.status}
    return {}

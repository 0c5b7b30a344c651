"""Tabs no one sees: pages a session opens for its own checks (monitors), beside the owner's.

A background tab is a page in the owner's first window, so it has the owner's cookies and
logins, and a ``Tab`` of its own (``tab.background``), so its snapshot, refs and numbers are
its own.  It is never in the session's ``tabs``: ``tab_list`` does not show it, it never
becomes the active tab, its events go to no controller, and a dialog it opens interrupts no
command.  A popup it opens is closed at once.

A new page of the window is the owner's tab unless it is one of these, and which it is is
known only once ``new_page`` returns (the window hears of a page before that).  So while a
background tab is being opened, or is open, new pages are held for a moment: until ``new_page``
returned, or until the popup event that tells whose popup a page is has gone by.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable

from playwright.async_api import BrowserContext, Page

from .chores import Chores
from .dialogs import Dialogs
from .events import Events
from .tab import Tab

PageHook = Callable[[Page], None]


class BackgroundTabs:
    """A session's background tabs, and the pages held until it is known whose they are."""

    def __init__(self, on_page: PageHook) -> None:
        self._on_page = on_page  # the session's, which asks ``claims`` first
        self._pages: set[Page] = set()  # open background pages and their popups
        self._numbers = itertools.count(1)
        self._opening = 0
        self._held: list[Page] = []
        self._handed_back: set[Page] = set()
        # A background tab's owner: its events, dialogs and chores reach no controller.
        self.events = Events("background", [])
        self.dialogs = Dialogs({})
        self.chores = Chores()

    def claims(self, page: Page) -> bool:
        """Whether a new page of the window is not (or not yet known to be) the owner's."""
        if page in self._handed_back:
            self._handed_back.discard(page)
            return False
        if page in self._pages:
            return True
        if not (self._opening or self._pages):
            return False
        self._held.append(page)
        if not self._opening:  # a popup's event comes right after the window's page event
            asyncio.get_running_loop().call_soon(self._release)
        return True

    def _release(self) -> None:
        """Hand the held pages that are not background ones to the owner's tabs."""
        held, self._held = self._held, []
        for page in held:
            if page not in self._pages and not page.is_closed():
                self._handed_back.add(page)
                self._on_page(page)

    @contextlib.asynccontextmanager
    async def open(self, context: BrowserContext) -> AsyncIterator[Tab]:
        """A blank background tab in ``context``, closed when the block ends."""
        self._opening += 1
        try:
            page = await context.new_page()
            self._pages.add(page)
        finally:
            self._opening -= 1
            if not self._opening:
                self._release()
        page.on("popup", self._popup)
        try:
            yield Tab(f"b{next(self._numbers)}", page, "w1", self, background=True)
        finally:
            with contextlib.suppress(Exception):  # a browser that died took it already
                await page.close()
            self._pages.discard(page)

    def _popup(self, popup: Page) -> None:
        self._pages.add(popup)
        popup.on("close", lambda closed: self._pages.discard(closed))
        self.chores.run(popup.close())

    # --- the rest of what a tab tells its owner (``tab.TabOwner``) ------------------

    def loaded(self, tab: Tab) -> None:
        """No live view shows a background tab."""

    def closed(self, tab: Tab) -> None:
        """Its block forgets it."""

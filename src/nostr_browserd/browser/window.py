"""A browser context made ready to be a session's window: what every window has.

Each window gets the title observer's init script (its binding is each tab's: ``titles.py``),
the popup guard and one tab.  A window is prepared either for its session
(``Session._add_window``) or before any session exists: the pool's spare, made while the
daemon waits for its first command (``BrowserPool``).  Until a session adopts the window, the
pages it opens are held for it; a session adopts its own before it prepares it, so nothing
waits.
"""

from __future__ import annotations

from collections.abc import Callable

from playwright.async_api import BrowserContext, Page

from .titles import TITLE_OBSERVER

# A document may open this many popups; further window.open calls get null, as from a popup
# blocker.  Creating a window costs Chromium and Playwright a target each: a page opening 500
# would hold the browser for minutes.  Session.MAX_TABS bounds what gets through another way.
POPUP_BUDGET = 20
POPUP_GUARD = f"""(() => {{
  const open = window.open;
  let left = {POPUP_BUDGET};
  window.open = function (...args) {{ return left-- > 0 ? open.apply(this, args) : null; }};
}})()"""
# One script, not two: each is evaluated in every document of every frame.
INIT_SCRIPT = f"{TITLE_OBSERVER};\n{POPUP_GUARD}"

PageHook = Callable[[Page], None]


class Window:
    """One context, prepared once; its new pages go to the adopter."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self._prepared = False
        self._on_page: PageHook | None = None
        self._held: list[Page] = []  # opened before a session adopted the window

    async def prepare(self, timeout_ms: float) -> Window:
        """The default timeout, the title observer, the popup guard and one tab (once)."""
        if not self._prepared:
            self._prepared = True
            self.context.set_default_timeout(timeout_ms)
            await self.context.add_init_script(INIT_SCRIPT)
            self.context.on("page", self._page)
            await self.context.new_page()
        return self

    def adopt(self, on_page: PageHook) -> None:
        """Send new pages to a session, the pages opened so far first."""
        self._on_page = on_page
        held, self._held = self._held, []
        for page in held:
            if not page.is_closed():
                on_page(page)

    def _page(self, page: Page) -> None:
        if self._on_page is None:
            self._held.append(page)
        else:
            self._on_page(page)

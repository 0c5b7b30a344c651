"""A browser context made ready to be a session's window: what every window has.

Each window gets the title observer (a binding and its init script), the popup guard and one
tab.  A window is prepared either for its session (``Session._add_window``) or before any
session exists: the pool's spare, made while the daemon waits for its first command
(``BrowserPool``).  Until a session adopts the window, the title reports and the pages it
opens are held for it; a session adopts its own before it prepares it, so nothing waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from playwright.async_api import BrowserContext, Page

# Every top document reports its title from its load on, whenever it changes, so a result's
# state can carry it without a round trip to the page.  It observes only where the title lives
# (the document, its root, the head and the <title>): a whole-document observer slowed big
# pages' loads by 12%.  The first report comes when the load event begins (ours is its first
# listener), marked as the load's; what the page's own load handlers change is reported as they
# change it.  All of it arrives before Playwright's load event, so a load or ``open`` announces
# the title the page has after its load handlers without asking the page once more.  Nothing
# is reported while the document is parsed: each report is a round trip through Playwright's
# driver during the load, and the load's report carries the title then; before it, a command
# asks the page (``Tab.read_title``).  A document that had loaded when the script ran (a new
# tab's blank one) reports at once.
TITLE_BINDING = "__browserdTitle"
TITLE_OBSERVER = f"""(() => {{
  if (window.top !== window) return;
  const report = window.{TITLE_BINDING};
  const observe = (atLoad) => {{
    let last = document.title;
    report(last, atLoad);
    const observer = new MutationObserver(() => watch());
    const watch = () => {{
      observer.disconnect();
      for (const node of [document, document.documentElement, document.head]) {{
        if (node) observer.observe(node, {{childList: true}});
      }}
      const title = document.querySelector("title");
      if (title) observer.observe(title, {{childList: true, characterData: true, subtree: true}});
      if (document.title !== last) {{ last = document.title; report(last); }}
    }};
    watch();
  }};
  if (document.readyState === "complete") observe(false);  // a new tab's blank document
  else addEventListener("load", () => observe(true), true);
}})()"""
# A document may open this many popups; further window.open calls get null, as from a popup
# blocker.  Creating a window costs Chromium and Playwright a target each: a page opening 500
# would hold the browser for minutes.  Session.MAX_TABS bounds what gets through another way.
POPUP_BUDGET = 20
POPUP_GUARD = f"""(() => {{
  const open = window.open;
  let left = {POPUP_BUDGET};
  window.open = function (...args) {{ return left-- > 0 ? open.apply(this, args) : null; }};
}})()"""

TitleHook = Callable[..., None]  # (source, title, at_load=False), the binding's arguments
PageHook = Callable[[Page], None]


class Window:
    """One context, prepared once; its title reports and new pages go to the adopter."""

    def __init__(self, context: BrowserContext) -> None:
        self.context = context
        self._prepared = False
        self._on_title: TitleHook | None = None
        self._on_page: PageHook | None = None
        self._held: list[Page] = []  # opened before a session adopted the window
        self._held_titles: list[tuple[Any, ...]] = []  # and what their documents reported

    async def prepare(self, timeout_ms: float) -> Window:
        """The default timeout, the title observer, the popup guard and one tab (once)."""
        if not self._prepared:
            self._prepared = True
            self.context.set_default_timeout(timeout_ms)
            await self.context.expose_binding(TITLE_BINDING, self._title)
            await self.context.add_init_script(TITLE_OBSERVER)
            await self.context.add_init_script(POPUP_GUARD)
            self.context.on("page", self._page)
            await self.context.new_page()
        return self

    def adopt(self, on_title: TitleHook, on_page: PageHook) -> None:
        """Send the title reports and new pages to a session, the pages opened so far first."""
        self._on_title, self._on_page = on_title, on_page
        held, self._held = self._held, []
        for page in held:
            if not page.is_closed():
                on_page(page)
        titles, self._held_titles = self._held_titles, []
        for report in titles:  # a document reports once loaded, and only then is its title kept
            on_title(*report)

    def _title(self, source: dict[str, Any], *report: Any) -> None:
        if self._on_title is None:
            self._held_titles.append((source, *report))
        else:
            self._on_title(source, *report)

    def _page(self, page: Page) -> None:
        if self._on_page is None:
            self._held.append(page)
        else:
            self._on_page(page)

"""One owner's browsing: its windows, its tabs with stable ids, which one is active, its lock.

Every controller (a pubkey, or ``local``) gets a ``Session`` from the pool (``pool.py``): its
own BrowserContext, so cookies and storage are never shared, its own tabs (``t1``, ``t2``, …
never reused) and its own pending-dialog state.  When its browser dies the pool binds it to a
fresh context; the command that hit the crash reports ``BROWSER_CRASHED`` and the next one
works.

The session is shaped after Playwright MCP's ``Context``: it holds the windows, the tabs and
which one is active, and the lock its commands take.  What belongs to one page (frame focus,
its dialog, its title, its refs and numbers) is its ``Tab``'s.  What spans the tabs has an
object of its own: ``dialogs`` (the one waiting, the actions a dialog interrupts), ``events``
(who hears them, what the controller watches), ``stream`` (the live view and a recording),
``actions`` (the door every action goes through) and ``background_tabs`` (tabs no one sees).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from playwright.async_api import BrowserContext, Frame, Locator, Page

from ..capacity import Capacity
from ..errors import BrowserdError, ErrorCode
from .actions import Actions
from .background_tabs import BackgroundTabs
from .chores import Chores
from .config import BrowserConfig, RecordConfig
from .dialogs import Dialogs
from .endpoints import Endpoint
from .events import EventCallback, Events
from .live import LiveStream
from .masked import filled_in
from .pagelog import PageLog
from .quota import FileQuota
from .reach import Reach, Services
from .screencast import Fanout
from .tab import Tab
from .window import Window

if TYPE_CHECKING:
    from .recorder import Recorder

__all__ = ["EventCallback", "Pool", "Session"]


class Pool(Services, Protocol):
    """What a session asks of the pool that placed it (``pool.BrowserPool``, which imports us)."""

    config: BrowserConfig
    listeners: list[EventCallback]
    frames: Fanout
    fetches: Capacity
    quota: FileQuota

    async def revive(self, session: Session) -> bool:
        """Give ``session`` a live context; True when the one it had died."""
        ...

    async def release(self, owner: str) -> None:
        """Close ``owner``'s context and forget the session."""
        ...

    async def new_context(self, session: Session) -> BrowserContext:
        """Another window's context for ``session``."""
        ...


class Session:
    """One owner's browsing: its windows and tabs, the active tab, and its lock.

    The session is each tab's ``TabOwner``: it hears their events and keeps what spans them.
    """

    # A page that opens popups without end gets this many tabs; the rest are closed at once.
    MAX_TABS = 50

    def __init__(self, pool: Pool, owner: str) -> None:
        self.pool = pool
        self.owner = owner
        self.config = pool.config
        self.lock = asyncio.Lock()
        self.context: BrowserContext | None = None
        # Where ``context`` lives; its browser's loss shows in ``browser_lost``.
        self.endpoint: Endpoint | None = None
        self._context_gone = False
        # The controller was told its browser was lost (the running command's error): the
        # next command starts on a fresh context without saying it a second time.
        self._crash_told = False
        self.tabs: dict[str, Tab] = {}
        self.tab: Tab | None = None
        # (tab, url, title, frame) as the controller's last reply told them (protocol.run).
        self.place_told: tuple[Any, ...] | None = None
        self._next_tab = 1
        self.tab_opened = asyncio.Event()
        self.popups_closed = 0
        self.log = PageLog()
        # Windows are BrowserContexts of this owner (w1 is ``context``); tabs span them all.
        self.windows: dict[str, BrowserContext] = {}
        self._next_window = 1
        # For the next result after the browser moved here from another worker (once).
        self.moved_note: str | None = None
        self.reach = Reach(pool, owner)  # what its tools reach beyond the pages (ToolContext)
        self.chores = Chores()  # what event handlers started; a command's reply waits for it
        self.events = Events(owner, pool.listeners, lambda: filled_in(self.windows.values()))
        self.dialogs = Dialogs(self.tabs)
        self.stream = LiveStream(pool.frames, self.chores.run)
        self.actions = Actions()
        self.background_tabs = BackgroundTabs(self._on_page)

    # --- lifecycle -----------------------------------------------------------------

    async def bind(self, window: Window, endpoint: Endpoint) -> None:
        """Attach a fresh window (first use, or after a relaunch), with its one tab; the
        window is prepared here unless it was already (the pool's spare)."""
        context = window.context
        self.context = context
        self.endpoint = endpoint
        self._context_gone = False
        context.on("close", lambda closed: self._closed(closed))
        self.tabs.clear()
        self.tab = None
        self.windows.clear()
        await self._add_window(window)

    async def open_window(self) -> str:
        """A new window: its own context on this session's endpoint, one tab, made active."""
        return await self._add_window(Window(await self.pool.new_context(self)))

    async def _add_window(self, window: Window) -> str:
        """Track ``window`` as a window of this session, with one tab, made active."""
        name = f"w{self._next_window}"
        self._next_window += 1
        self.windows[name] = window.context
        window.adopt(self._on_page)
        await window.prepare(self.config.timeout_ms)
        if self.tab is not None:  # its blank tab: reports before the first command reads it
            await self.tab.observed()
        await self.chores.settle()  # its tab_changed goes out now, not in the next command
        return name

    async def close_window(self, window: str) -> list[str]:
        """Close a window other than w1 and forget its tabs; returns their ids."""
        context = self.windows.pop(window)
        closed = [t.id for t in self.tabs.values() if t.window == window]
        await context.close()
        for tab_id in closed:
            self.forget(tab_id)
        return closed

    def _closed(self, context: BrowserContext) -> None:
        if context is self.context:
            self._context_gone = True

    @property
    def browser_lost(self) -> bool:
        """Whether this session's context died with its browser (crashed, killed, cut off)."""
        if self.context is None:
            return False
        endpoint = self.endpoint
        return (
            self._context_gone
            or endpoint is None
            or not endpoint.alive
            or self.context.browser is not endpoint.browser
        )

    async def ready(self) -> None:
        """Make sure the browser is alive; ``BROWSER_CRASHED`` if it had died under us.

        The session gets a fresh context (a relaunched browser, or another endpoint), so the
        command after this one works; this one fails, because its tabs and page state are
        gone, unless the command that met the loss has said so already.
        """
        for tab in self.tabs.values():
            tab.new_command()
        lost = await self.pool.revive(self)
        told, self._crash_told = self._crash_told, False
        if lost and not told:
            raise BrowserdError(
                ErrorCode.BROWSER_CRASHED,
                "The browser had stopped (crashed, killed, or its server lost); this session "
                "starts again on a fresh one with a fresh tab: open the page again.",
            )

    def crash_reported(self) -> None:
        """The running command's error told the controller its browser was lost.

        The next command then starts on the fresh context without saying so a second time.
        """
        self._crash_told = True

    async def close(self) -> None:
        """Close this owner's context (a recording is dropped); the pool forgets the session."""
        await self.stream.abandon_recording()
        await self.pool.release(self.owner)

    # --- tabs ----------------------------------------------------------------------

    def _on_page(self, page: Page) -> None:
        """A new page in one of our contexts (a popup, or ours): a tab, unless too many or a
        background tab's (which may hold it until it knows, then hands it back)."""
        if self.background_tabs.claims(page):
            return
        known = any(tab.page is page for tab in self.tabs.values())
        if known or len(self.tabs) < self.MAX_TABS:
            self.track(page)
            return
        self.popups_closed += 1
        if self.popups_closed == 1:  # said once per session, not 500 times
            self.events.emit("popup_closed", {"reason": f"at most {self.MAX_TABS} tabs"})
        self.chores.run(page.close())

    def track(self, page: Page) -> str:
        """Give a page a tab id (idempotent: its event may come late) and make it active:
        popups come to the front."""
        for known in self.tabs.values():
            if known.page is page:
                return known.id
        tab_id = f"t{self._next_tab}"
        self._next_tab += 1
        window = next(w for w, c in self.windows.items() if c is page.context)
        self.tabs[tab_id] = Tab(tab_id, page, window, self)
        self.tab_opened.set()
        self.log.attach(tab_id, page)
        self.switch(tab_id)
        return tab_id

    def switch(self, tab_id: str) -> Page:
        """Make ``tab_id`` the active tab."""
        tab = self.tabs.get(tab_id)
        if tab is None:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                f"No tab {tab_id!r}; open tabs: {', '.join(self.tabs) or 'none'}.",
            )
        if self.tab is not tab:
            self.tab = tab
            self.chores.run(tab.announce("tab_changed"))
            self.stream.follow(tab)  # the live view and a recording follow the active tab
        return tab.page

    @property
    def active_tab(self) -> str | None:
        """The active tab's id."""
        return self.tab.id if self.tab is not None else None

    def forget(self, tab_id: str) -> None:
        """Drop a closed tab; the most recent remaining tab becomes active."""
        tab = self.tabs.pop(tab_id, None)
        if tab is not None and self.tab is tab:
            self.tab = None
            if self.tabs:
                self.switch(list(self.tabs)[-1])

    async def new_tab(self) -> tuple[str, Page]:
        """Open a blank tab in the active tab's window and make it active."""
        if len(self.tabs) >= self.MAX_TABS:
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"{len(self.tabs)} tabs are open, the most a session may have: close some "
                "(tab_close, close_all).",
            )
        current = self.page_or_none
        context = current.context if current is not None else self.main_context()
        page = await context.new_page()
        tab_id = self.track(page)
        await self.tabs[tab_id].observed()
        return tab_id, page

    def open_background_tab(self) -> contextlib.AbstractAsyncContextManager[Tab]:
        """``async with session.open_background_tab() as tab``: a blank tab in window w1 (the
        owner's cookies and logins) that no tab list shows, that never becomes active and
        whose refs are its own, closed when the block ends (``background_tabs.py``).

        It does not take the session's lock: what runs in it runs beside the owner's
        commands, on its own page.
        """
        return self.background_tabs.open(self.main_context())

    def main_context(self) -> BrowserContext:
        """Window w1's context: the session's own, which only a relaunch replaces."""
        if self.context is None:
            raise BrowserdError(ErrorCode.BROWSER_CRASHED, "The browser is not running.")
        return self.context

    @property
    def page(self) -> Page:
        """The active tab's page; refuses while a dialog blocks it (a command would hang).

        For what is the tab's as a whole (keyboard, mouse, context, navigation, screenshots);
        anything that finds elements or runs script in the page uses ``scope``.
        """
        tab = self.tab
        if tab is None:
            raise BrowserdError(ErrorCode.REFUSED, "No open tab: use open or tab_new.")
        if tab.dialog is not None:
            info = tab.dialog.describe()
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"A {info['type']} dialog is open ({info['message']!r}); "
                "answer it first with: dialog accept [value] | dialog dismiss.",
            )
        return tab.page

    @property
    def page_or_none(self) -> Page | None:
        """The active tab's page without the dialog check (for url and state)."""
        return self.tab.page if self.tab is not None else None

    @property
    def scope(self) -> Page | Frame:
        """Where targets resolve and scripts run: the active tab's frame, else its page."""
        page = self.page
        assert self.tab is not None
        return self.tab.frame or page

    async def locate(self, ref: str | None = None, selector: str | None = None) -> Locator:
        """Exactly one element of the active tab (``Tab.locate``), or a coded error, fast;
        refused while a dialog blocks the tab, as ``page`` is."""
        page = self.page
        assert self.tab is not None and self.tab.page is page
        return await self.tab.locate(ref, selector)

    async def start_recording(self, settings: RecordConfig) -> Recorder:
        """Record the active tab, and the tabs it moves to (``stream``), masking the secret
        fields of the active page as they are then."""
        # Here, not at the top: PyAV and Pillow load with the first recording, not at start.
        from .mask_boxes import secret_boxes
        from .recorder import Recorder

        page = self.page
        assert self.tab is not None and self.tab.page is page
        recorder = Recorder(settings, lambda: secret_boxes(self.page))
        return await self.stream.record(recorder, self.tab)

    # --- what the tabs tell it (the session is their TabOwner) --------------------

    def loaded(self, tab: Tab) -> None:
        """A tab loaded: the live view and a recording may start again on it."""
        self.stream.loaded(tab)

    def closed(self, tab: Tab) -> None:
        """A tab closed or crashed: forgotten."""
        self.forget(tab.id)

    # --- state ---------------------------------------------------------------------

    async def state(self, fresh: bool = True) -> dict[str, Any]:
        """url, title, tab and dialog: merged into every result (``fresh``: see Tab.read_title)."""
        tab = self.tab
        state: dict[str, Any] = {"url": tab.page.url if tab else None, "title": None}
        if tab is not None and self.dialogs.pending is None:
            state["title"] = await tab.read_title(fresh)
        state["tab"] = self.active_tab
        if tab is not None and tab.frame is not None:
            state["frame"] = {"url": tab.frame.url, "name": tab.frame.name or None}
        if tab is not None and tab.frame_note is not None:
            state["frame_note"], tab.frame_note = tab.frame_note, None
        if self.moved_note is not None:
            state["moved"], self.moved_note = self.moved_note, None
        if tab is not None and tab.told_labels:
            state["label"] = "; ".join(label.describe() for label in tab.told_labels.values())
        dialog = self.dialogs.pending  # again: one may have opened while the title was read
        state["dialog"] = dialog.describe() if dialog else None
        if self.dialogs.last_alert is not None:
            state["alert"], self.dialogs.last_alert = self.dialogs.last_alert, None
        return state

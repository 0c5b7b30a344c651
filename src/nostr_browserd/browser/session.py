"""One owner's browsing: its windows, tabs with stable ids, frames, dialogs and events.

Every controller (a pubkey, or ``local``) gets a ``Session`` from the pool (``pool.py``): its
own BrowserContext, so cookies and storage are never shared, its own tabs (``t1``, ``t2``, …
never reused) and its own pending-dialog state.  When its browser dies the pool binds it to a
fresh context; the command that hit the crash reports ``BROWSER_CRASHED`` and the next one
works.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from playwright.async_api import (
    BrowserContext,
    Dialog,
    Download,
    Frame,
    Locator,
    Page,
)

from ..errors import BrowserdError, ErrorCode
from .config import BrowserConfig
from .egress import EgressProxy
from .endpoints import Endpoint
from .netpolicy import NetworkPolicy
from .pagelog import PageLog
from .refs import locate
from .screencast import Fanout, Screencast
from .shelf import StateShelf
from .tab import Tab

log = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]
# Every top document reports its title whenever it changes, so a result's state can carry it
# without a round trip to the page.  It observes only where the title lives (the document, its
# root, the head and the <title>): a whole-document observer slowed big pages' loads by 12%.
TITLE_BINDING = "__browserdTitle"
TITLE_OBSERVER = f"""(() => {{
  if (window.top !== window) return;
  const report = window.{TITLE_BINDING};
  let last = document.title;
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


class Pool(Protocol):
    """What a session asks of the pool that placed it (``pool.BrowserPool``, which imports us)."""

    config: BrowserConfig
    listeners: list[EventCallback]
    policy: NetworkPolicy
    egress: EgressProxy | None
    shelf: StateShelf | None
    frames: Fanout

    @property
    def devices(self) -> dict[str, Any]:
        """Playwright's device descriptors by name."""
        ...

    async def revive(self, session: Session) -> bool:
        """Give ``session`` a live context; True when the one it had died."""
        ...

    async def release(self, owner: str) -> None:
        """Close ``owner``'s context and forget the session."""
        ...

    async def new_context(self, session: Session) -> BrowserContext:
        """Another window's context for ``session``."""
        ...


@dataclass
class PendingDialog:
    """A dialog the page opened and nobody has answered yet."""

    tab: str
    dialog: Dialog

    def describe(self) -> dict[str, Any]:
        """What a controller needs to decide: type, message and a prompt's default."""
        info: dict[str, Any] = {"type": self.dialog.type, "message": self.dialog.message}
        if self.dialog.type == "prompt":
            info["default"] = self.dialog.default_value
        info["tab"] = self.tab
        info["hint"] = "answer with: dialog accept [value] | dialog dismiss"
        return info


class Session:
    """One owner's browsing: its windows and tabs, the active tab, frames, dialogs, events.

    What belongs to one tab (its page, window, title, last snapshot and screenshot) is a
    ``Tab`` in ``tabs``; ``tab`` is the active one.
    """

    # A page that opens popups without end gets this many tabs; the rest are closed at once.
    MAX_TABS = 50
    # Alerts accepted per tab and command before one is left open (an alert loop).
    ALERT_LIMIT = 20

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
        self.crash_told = False
        self.tabs: dict[str, Tab] = {}
        self.tab: Tab | None = None
        self.dialog: PendingDialog | None = None
        self.last_alert: dict[str, Any] | None = None
        self._next_tab = 1
        self._listeners: list[EventCallback] = []
        self._dialog_opened = asyncio.Event()
        self._dialog_count = 0
        self._dialog_watchers = 0  # until_dialog calls in progress (a batch nests them)
        self._pending: set[asyncio.Future[Any]] = set()
        self.tab_opened = asyncio.Event()
        self.popups_closed = 0
        self._alerts: dict[str, int] = {}
        # Changes with every title report or page event, so a title read it raced is not kept.
        self._title_version = 0
        self.log = PageLog()
        # Windows are BrowserContexts of this owner (w1 is ``context``); tabs span them all.
        self.windows: dict[str, BrowserContext] = {}
        self._next_window = 1
        # The frame targets resolve in after frame_switch, the tab it belongs to, and a note
        # for the next result when it was lost (navigation, detached).
        self.frame: Frame | None = None
        self.frame_tab: str | None = None
        self.frame_note: str | None = None
        # Events a controller asked to be sent (watch): marked for the daemon to forward.
        self.watching: frozenset[str] = frozenset()
        # The live view's screencast of the active tab (stream_enable), when on.
        self.screencast: Screencast | None = None

    # --- lifecycle -----------------------------------------------------------------

    async def bind(self, context: BrowserContext, endpoint: Endpoint) -> None:
        """Attach a fresh context (first use, or after a relaunch) and open one tab."""
        self.context = context
        self.endpoint = endpoint
        self._context_gone = False
        context.on("close", lambda closed: self._closed(closed))
        self.tabs.clear()
        self.tab = None
        self.dialog = None
        self.frame = None
        self.windows.clear()
        await self.add_window(context)

    async def add_window(self, context: BrowserContext) -> str:
        """Track ``context`` as a window of this session, with one tab, made active."""
        window = f"w{self._next_window}"
        self._next_window += 1
        self.windows[window] = context
        context.set_default_timeout(self.config.timeout_ms)
        await context.expose_binding(TITLE_BINDING, self._on_title)
        await context.add_init_script(TITLE_OBSERVER)
        await context.add_init_script(POPUP_GUARD)
        context.on("page", self._on_page)
        await context.new_page()
        await self.settle()  # its tab_changed goes out now, not during the next command
        return window

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
        self._alerts.clear()
        lost = await self.pool.revive(self)
        told, self.crash_told = self.crash_told, False
        if lost and not told:
            raise BrowserdError(
                ErrorCode.BROWSER_CRASHED,
                "The browser had stopped (crashed, killed, or its server lost); this session "
                "starts again on a fresh one with a fresh tab: open the page again.",
            )

    async def close(self) -> None:
        """Close this owner's context; the pool forgets the session."""
        await self.pool.release(self.owner)

    # --- tabs ----------------------------------------------------------------------

    def _on_page(self, page: Page) -> None:
        """A new page in one of our contexts (a popup, or ours): a tab, unless too many."""
        known = any(tab.page is page for tab in self.tabs.values())
        if known or len(self.tabs) < self.MAX_TABS:
            self._track(page)
            return
        self.popups_closed += 1
        if self.popups_closed == 1:  # said once per session, not 500 times
            self._emit("popup_closed", {"reason": f"at most {self.MAX_TABS} tabs"})
        self._background(page.close())

    def _track(self, page: Page) -> str:
        """Give a page a tab id (idempotent) and make it active: popups come to the front."""
        for known in self.tabs.values():
            if known.page is page:
                return known.id
        tab_id = f"t{self._next_tab}"
        self._next_tab += 1
        window = next(w for w, c in self.windows.items() if c is page.context)
        tab = self.tabs[tab_id] = Tab(tab_id, page, window)
        self.tab_opened.set()
        page.on("dialog", lambda d: self._on_dialog(tab_id, d))
        page.on("framenavigated", lambda f: self._on_navigated(tab, f))
        page.on("domcontentloaded", lambda _p: self._title_changed(tab))
        page.on("load", lambda _p: self._on_load(tab))
        page.on("close", lambda _p: self.forget(tab_id))
        page.on("download", lambda d: self._on_download(tab_id, d))
        page.on("console", lambda m: self._on_console(tab_id, m))
        page.on("crash", lambda p: self._on_crash(tab_id, p))
        page.on("pageerror", lambda e: self._emit("console_error", {"tab": tab_id, "text": str(e)}))
        page.on("framedetached", self._frame_detached)
        self.log.attach(tab_id, page)
        self.switch(tab_id)
        return tab_id

    def tab_id(self, page: Page) -> str:
        """The id of a page this session tracks (registering it if the event is late)."""
        return self._track(page)

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
            self._background(self._announce("tab_changed", tab))
            if self.screencast is not None:  # the live view follows the active tab
                self._background(self.screencast.start(tab.id, tab.page))
        return tab.page

    @property
    def active_tab(self) -> str | None:
        """The active tab's id."""
        return self.tab.id if self.tab is not None else None

    async def _announce(self, event: str, tab: Tab) -> None:
        """Emit a tab's ``{"url", "title", "tab"}`` event."""
        url = tab.page.url
        self._emit(event, {"url": url, "title": await self.tab_title(tab), "tab": tab.id})

    async def tab_title(self, tab: Tab, fresh: bool = False) -> str | None:
        """A tab's title, or None while a dialog blocks its scripts (or it is gone).

        Cached: the page reports its title as it changes and navigation forgets it.  Only a
        command that acted on the page asks ``fresh``: the report of a change it caused may
        still be on its way.
        """
        if self.dialog is not None and self.dialog.tab == tab.id:
            return None
        if not fresh and tab.title is not None:
            return tab.title
        version = self._title_version
        with contextlib.suppress(Exception):
            title = await asyncio.wait_for(tab.page.title(), 2)
            if version == self._title_version:
                tab.title = title
            return title
        return None

    def _title_changed(self, tab: Tab, title: str | None = None) -> None:
        """Keep a tab's reported title, or forget its title (None) when its document changed."""
        self._title_version += 1
        tab.title = title

    def _on_title(self, source: dict[str, Any], title: Any) -> None:
        """The title observer's report from a tab's top document."""
        for tab in self.tabs.values():
            if tab.page is source["page"] and isinstance(title, str):
                self._title_changed(tab, title)

    def _on_navigated(self, tab: Tab, frame: Frame) -> None:
        if frame.parent_frame is None:
            self._title_changed(tab)

    def _on_load(self, tab: Tab) -> None:
        self._title_changed(tab)
        self._background(self._announce("load", tab))
        cast = self.screencast
        if cast is not None and cast.tab == tab.id and cast.quiet:
            # Started while the tab was opening: Chrome sent nothing, so start it again.
            self._background(cast.start(tab.id, tab.page))

    async def settle(self) -> None:
        """Let event handlers' work finish, so a command's events go out before its reply."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=5)

    def _on_crash(self, tab_id: str, page: Page) -> None:
        """A tab whose renderer died is useless: drop it so the next command can go on."""
        self._emit("crash", {"tab": tab_id, "url": page.url})
        self.forget(tab_id)
        self._background(page.close())

    def _background(self, awaitable: Awaitable[Any]) -> None:
        """Run a cleanup from an event handler, keeping a reference until it is done."""
        task = asyncio.ensure_future(_quietly(awaitable))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def forget(self, tab_id: str) -> None:
        """Drop a closed tab; the most recent remaining tab becomes active."""
        tab = self.tabs.pop(tab_id, None)
        if self.frame_tab == tab_id:
            self.frame = None
        if self.dialog and self.dialog.tab == tab_id:
            self.dialog = None
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
        return self.tab_id(page), page

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
        page = self.page_or_none
        if page is None:
            raise BrowserdError(ErrorCode.REFUSED, "No open tab: use open or tab_new.")
        if self.dialog is not None and self.dialog.tab == self.active_tab:
            info = self.dialog.describe()
            raise BrowserdError(
                ErrorCode.REFUSED,
                f"A {info['type']} dialog is open ({info['message']!r}); "
                "answer it first with: dialog accept [value] | dialog dismiss.",
            )
        return page

    @property
    def page_or_none(self) -> Page | None:
        """The active tab's page without the dialog check (for url and state)."""
        return self.tab.page if self.tab is not None else None

    @property
    def active_frame(self) -> Frame | None:
        """The frame chosen with frame_switch, when it belongs to the active tab."""
        return self.frame if self.frame is not None and self.frame_tab == self.active_tab else None

    @property
    def scope(self) -> Page | Frame:
        """Where targets resolve and scripts run: the frame_switch frame, else the page."""
        page = self.page
        return self.active_frame or page

    def _frame_detached(self, frame: Frame) -> None:
        """The chosen frame went away (removed, or its page navigated): back to main."""
        if frame is self.frame:
            self.frame = None
            self.frame_note = "The frame is gone (removed or the page navigated): back to main."

    async def locate(self, ref: str | None = None, selector: str | None = None) -> Locator:
        """Exactly one element by snapshot ref or CSS selector, or a coded error, fast."""
        return await locate(self.scope, ref=ref, selector=selector)

    # --- dialogs -------------------------------------------------------------------

    def _on_dialog(self, tab_id: str, dialog: Dialog) -> None:
        """Alerts are accepted and reported once; anything that asks waits for an answer.

        A page that alerts without end (``for (;;) alert()``) gets ``ALERT_LIMIT`` accepted
        per command; the next one stays open like a confirm, and the page waits on it.
        """
        alerts = self._alerts[tab_id] = self._alerts.get(tab_id, 0) + 1
        if dialog.type == "alert" and alerts <= self.ALERT_LIMIT:
            self.last_alert = {"type": "alert", "message": dialog.message, "tab": tab_id}
            self._background(dialog.accept())
        else:
            self.dialog = PendingDialog(tab_id, dialog)
            self._dialog_count += 1
        self._dialog_opened.set()
        self._emit("dialog", {"tab": tab_id, "type": dialog.type, "message": dialog.message})

    async def answer_dialog(self, accept: bool, value: str | None = None) -> dict[str, Any]:
        """Accept or dismiss the pending dialog of the active tab."""
        pending = self.dialog
        if pending is None:
            raise BrowserdError(ErrorCode.NO_DIALOG, "No dialog is open.")
        self.dialog = None
        info = pending.describe()
        info.pop("hint")
        if accept:
            await pending.dialog.accept(
                value
            ) if value is not None else await pending.dialog.accept()
        else:
            await pending.dialog.dismiss()
        return {**info, "answer": "accepted" if accept else "dismissed"}

    async def until_dialog(self, action: Awaitable[Any]) -> tuple[bool, Any]:
        """Run ``action`` until it finishes or opens a dialog that waits for an answer.

        Returns ``(True, None)`` when a dialog interrupted it: a click that opens
        ``confirm()`` does not return until the dialog is answered, so the command returns
        with the dialog as state and the action finishes later.  Alerts do not interrupt.
        When calls nest (a batch runs each of its commands this way), the innermost one is
        interrupted and the outer ones wait for their action to return (the batch's summary).
        """
        start = self._dialog_count
        self._dialog_watchers += 1
        depth = self._dialog_watchers
        try:
            task = asyncio.ensure_future(action)
            while not task.done():
                opened = asyncio.ensure_future(self._dialog_opened.wait())
                await asyncio.wait({task, opened}, return_when=asyncio.FIRST_COMPLETED)
                opened.cancel()
                self._dialog_opened.clear()
                inner = self._dialog_watchers > depth
                if not (task.done() or inner) and self._dialog_count != start and self.dialog:
                    task.add_done_callback(_consume)
                    return True, None
            return False, task.result()
        finally:
            self._dialog_watchers -= 1

    async def race_dialog(self, action: Awaitable[Any]) -> bool:
        """Run ``action``; True if a dialog interrupted it (see ``until_dialog``)."""
        interrupted, _ = await self.until_dialog(action)
        return interrupted

    # --- events and state ----------------------------------------------------------

    def on_event(self, callback: EventCallback) -> None:
        """Call ``callback({"event", "data"})`` for load, tab_changed, dialog, download, …"""
        self._listeners.append(callback)

    def _emit(self, event: str, data: dict[str, Any]) -> None:
        mine: dict[str, Any] = {"event": event, "data": data}
        everyone: dict[str, Any] = {**mine, "owner": self.owner}
        if event in self.watching:  # the daemon forwards these to the controller (watch)
            everyone["watched"] = True
        for callback, message in [
            *((c, mine) for c in self._listeners),
            *((c, everyone) for c in self.pool.listeners),
        ]:
            try:
                callback(message)
            except Exception:
                log.exception("event listener failed")

    def _on_download(self, tab_id: str, download: Download) -> None:
        self._emit(
            "download",
            {"tab": tab_id, "url": download.url, "filename": download.suggested_filename},
        )

    def _on_console(self, tab_id: str, message: Any) -> None:
        if message.type == "error":
            self._emit("console_error", {"tab": tab_id, "text": message.text[:500]})

    async def state(self, fresh: bool = True) -> dict[str, Any]:
        """url, title, tab and dialog: merged into every result (``fresh``: see tab_title)."""
        tab = self.tab
        state: dict[str, Any] = {"url": tab.page.url if tab else None, "title": None}
        if tab is not None and self.dialog is None:
            state["title"] = await self.tab_title(tab, fresh)
        state["tab"] = self.active_tab
        if self.active_frame is not None:
            state["frame"] = {"url": self.active_frame.url, "name": self.active_frame.name or None}
        if self.frame_note is not None:
            state["frame_note"] = self.frame_note
            self.frame_note = None
        state["dialog"] = self.dialog.describe() if self.dialog else None
        if self.last_alert is not None:
            state["alert"] = self.last_alert
            self.last_alert = None
        return state


async def _quietly(awaitable: Any) -> None:
    with contextlib.suppress(Exception):
        await awaitable


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()

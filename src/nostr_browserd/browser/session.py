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
from typing import TYPE_CHECKING, Any, Protocol

from playwright.async_api import (
    BrowserContext,
    Frame,
    Locator,
    Page,
)

from ..errors import BrowserdError, ErrorCode
from .config import BrowserConfig
from .egress import EgressProxy
from .endpoints import Endpoint
from .labels import is_label, label_of
from .netpolicy import NetworkPolicy
from .pagelog import PageLog
from .refs import locate
from .screencast import Fanout, Screencast, StreamSettings
from .shelf import StateShelf
from .tab import PendingDialog, Tab, consume
from .window import Window

if TYPE_CHECKING:
    from ..vault.entry import Keeper

log = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]


class Pool(Protocol):
    """What a session asks of the pool that placed it (``pool.BrowserPool``, which imports us)."""

    config: BrowserConfig
    listeners: list[EventCallback]
    policy: NetworkPolicy
    egress: EgressProxy | None
    shelf: StateShelf | None
    vault: Keeper | None
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


class Session:
    """One owner's browsing: its windows and tabs, the active tab, frames, dialogs, events.

    What belongs to one tab (its page and the listeners on it, its window, title, dialog,
    alerts, last snapshot and screenshot) is a ``Tab`` in ``tabs``; ``tab`` is the active one.
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
        self.last_alert: dict[str, Any] | None = None
        # (tab, url, title, frame) as the controller's last reply told them (protocol.run).
        self.place_told: tuple[Any, ...] | None = None
        self._next_tab = 1
        self._listeners: list[EventCallback] = []
        self._dialog_opened = asyncio.Event()
        self._dialog_count = 0
        self._dialog_watchers = 0  # until_dialog calls in progress (a batch nests them)
        self._pending: set[asyncio.Future[Any]] = set()
        self.tab_opened = asyncio.Event()
        self.popups_closed = 0
        self.log = PageLog()
        # Windows are BrowserContexts of this owner (w1 is ``context``); tabs span them all.
        self.windows: dict[str, BrowserContext] = {}
        self._next_window = 1
        # The frame targets resolve in after frame_switch, the tab it belongs to, and a note
        # for the next result when it was lost (navigation, detached).
        self._frame: Frame | None = None
        self._frame_tab: str | None = None
        self._frame_note: str | None = None
        # For the next result after the browser moved here from another worker (once).
        self.moved_note: str | None = None
        # Events a controller asked to be sent (watch): marked for the daemon to forward.
        self._watching: frozenset[str] = frozenset()
        # The live view's screencast of the active tab (stream_enable), when on.
        self.screencast: Screencast | None = None

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
        self._frame = None
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
        window.adopt(self._on_title, self._on_page)
        await window.prepare(self.config.timeout_ms)
        await self.settle()  # its tab_changed goes out now, not during the next command
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
            self.emit("popup_closed", {"reason": f"at most {self.MAX_TABS} tabs"})
        self.background(page.close())

    def _track(self, page: Page) -> str:
        """Give a page a tab id (idempotent) and make it active: popups come to the front."""
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
            self.background(tab.announce("tab_changed"))
            if self.screencast is not None:  # the live view follows the active tab
                self.background(self.screencast.start(tab.id, tab.page))
        return tab.page

    @property
    def active_tab(self) -> str | None:
        """The active tab's id."""
        return self.tab.id if self.tab is not None else None

    def forget(self, tab_id: str) -> None:
        """Drop a closed tab; the most recent remaining tab becomes active."""
        tab = self.tabs.pop(tab_id, None)
        if self._frame_tab == tab_id:
            self._frame = None
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
    def active_frame(self) -> Frame | None:
        """The frame chosen with frame_switch, when it belongs to the active tab."""
        return self._frame if self._frame_tab == self.active_tab else None

    @property
    def scope(self) -> Page | Frame:
        """Where targets resolve and scripts run: the frame_switch frame, else the page."""
        page = self.page
        return self.active_frame or page

    def enter_frame(self, frame: Frame) -> None:
        """Resolve targets and run scripts in ``frame``, of the active tab (frame_switch)."""
        self._frame, self._frame_tab = frame, self.active_tab

    def leave_frame(self) -> bool:
        """Back to the main frame (frame_main); whether a frame had been chosen."""
        chosen, self._frame = self._frame is not None, None
        return chosen

    def frame_detached(self, frame: Frame) -> None:
        """The chosen frame went away (removed, or its page navigated): back to main."""
        if frame is self._frame:
            self._frame = None
            self._frame_note = "The frame is gone (removed or the page navigated): back to main."

    async def locate(self, ref: str | None = None, selector: str | None = None) -> Locator:
        """Exactly one element by snapshot ref, CSS selector or a label of the last annotated
        screenshot (a bare number), or a coded error, fast.

        A reloaded page has no refs until a snapshot here: on a tab reopened after the browser
        moved, a ref that names nothing is one from before the move, and the error says so.
        """
        if is_label(selector) and ref is None:
            assert selector is not None
            label = label_of(self.tab.labels if self.tab else None, selector)
            ref, selector = label.ref, None
            if self.tab is not None:  # the reply repeats what the number meant (click 3)
                self.tab.told_labels[label.n] = label
        try:
            return await locate(self.scope, ref=ref, selector=selector)
        except BrowserdError as exc:
            tab = self.tab
            if exc.code is not ErrorCode.STALE_REF or tab is None or not tab.reloaded:
                raise
            raise BrowserdError(
                ErrorCode.STALE_REF,
                f"Ref {ref} is from before this browser moved to another worker, which reopened"
                " and reloaded its pages: take a new snapshot.",
            ) from None

    # --- what the tabs tell it (the session is their TabOwner) --------------------

    def _on_title(self, source: dict[str, Any], title: Any, at_load: Any = False) -> None:
        """The title observer's report from a tab's top document (a binding per window)."""
        for tab in self.tabs.values():
            if tab.page is source["page"] and isinstance(title, str):
                tab.title_reported(title, at_load is True)

    def loaded(self, tab: Tab) -> None:
        """A tab loaded: a screencast started while it was opening starts again."""
        cast = self.screencast
        if cast is not None and cast.tab == tab.id and cast.quiet:
            # Started while the tab was opening: Chrome sent nothing, so start it again.
            self.background(cast.start(tab.id, tab.page))

    def closed(self, tab: Tab) -> None:
        """A tab closed or crashed: forgotten."""
        self.forget(tab.id)

    async def settle(self) -> None:
        """Let event handlers' work finish, so a command's events go out before its reply."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=5)

    def background(self, awaitable: Awaitable[Any]) -> None:
        """Run what an event handler started (a cleanup, an announcement) to its end.

        A reference is kept until it is done, and ``settle`` waits for it.
        """
        task = asyncio.ensure_future(_quietly(awaitable))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # --- dialogs -------------------------------------------------------------------

    @property
    def dialog(self) -> PendingDialog | None:
        """The dialog that waits for an answer (each tab holds its own): the newest."""
        waiting = [t.dialog for t in self.tabs.values() if t.dialog is not None]
        return max(waiting, key=lambda d: d.number, default=None)

    def dialog_opened(self, alert: dict[str, Any] | None) -> None:
        """A tab's dialog opened: an alert for the next result, or one ``until_dialog`` meets."""
        if alert is not None:
            self.last_alert = alert
        else:
            self._dialog_count += 1
        self._dialog_opened.set()

    async def answer_dialog(self, accept: bool, value: str | None = None) -> dict[str, Any]:
        """Accept or dismiss the dialog that waits for an answer (``dialog``)."""
        pending = self.dialog
        if pending is None:
            raise BrowserdError(ErrorCode.NO_DIALOG, "No dialog is open.")
        return await self.tabs[pending.tab].answer(accept, value)

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
                    task.add_done_callback(consume)
                    return True, None
            return False, task.result()
        finally:
            self._dialog_watchers -= 1

    async def race_dialog(self, action: Awaitable[Any]) -> bool:
        """Run ``action``; True if a dialog interrupted it (see ``until_dialog``)."""
        interrupted, _ = await self.until_dialog(action)
        return interrupted

    # --- what the session reaches through its pool -----------------------------------

    async def refuse_url(self, url: str) -> None:
        """``FORBIDDEN`` with the reason when the network policy refuses ``url`` to the owner."""
        await self.pool.policy.refuse(url, self.owner)

    async def check_url(self, url: str) -> str | None:
        """Why the network policy refuses ``url`` to the owner, or None when it allows it."""
        return await self.pool.policy.check(url, self.owner)

    @property
    def egress(self) -> EgressProxy | None:
        """The proxy the owner's own fetches go through, when private networks are refused."""
        return self.pool.egress if self.pool.policy.blocks_private(self.owner) else None

    @property
    def shelf(self) -> StateShelf | None:
        """Where the owner's saved login states are kept (the daemon's store), if anywhere."""
        return self.pool.shelf

    @property
    def vault(self) -> Keeper | None:
        """The credential vault (the daemon's store and key), if the daemon keeps one."""
        return self.pool.vault

    @property
    def devices(self) -> dict[str, Any]:
        """Playwright's device descriptors by name ("iPhone 13", "Pixel 7", …)."""
        return self.pool.devices

    # --- the live view --------------------------------------------------------------

    async def start_stream(self, settings: StreamSettings) -> dict[str, Any]:
        """Screencast the active tab to the live view's viewers; again: new settings."""
        if self.screencast is not None:
            await self.screencast.stop()
        cast = self.screencast = Screencast(self.pool.frames, settings)
        page = self.page
        assert self.tab is not None
        await cast.start(self.tab.id, page)
        return cast.status()

    async def stop_stream(self) -> dict[str, Any]:
        """Stop the screencast; the viewers keep no stale picture for the next one."""
        if self.screencast is not None:
            await self.screencast.stop()
            self.screencast = None
            self.pool.frames.last = None
        return self.stream_status()

    def stream_status(self) -> dict[str, Any]:
        """The screencast's counters when it is on, else the viewers' alone."""
        if self.screencast is None:
            return {"on": False, **self.pool.frames.status()}
        return self.screencast.status()

    # --- events and state ----------------------------------------------------------

    @property
    def watching(self) -> frozenset[str]:
        """The events the controller asked to be sent (``watch``), ``screen`` among them."""
        return self._watching

    def watch(self, events: frozenset[str], off: bool = False) -> frozenset[str]:
        """Mark ``events`` for the daemon to forward (watch), or stop; what is watched now."""
        self._watching = self._watching - events if off else self._watching | events
        return self._watching

    def on_event(self, callback: EventCallback) -> None:
        """Call ``callback({"event", "data"})`` for load, tab_changed, dialog, download, …"""
        self._listeners.append(callback)

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Tell this session's listeners, and the pool's (with ``owner``), of ``event``."""
        mine: dict[str, Any] = {"event": event, "data": data}
        everyone: dict[str, Any] = {**mine, "owner": self.owner}
        if event in self._watching:  # the daemon forwards these to the controller (watch)
            everyone["watched"] = True
        for callback, message in [
            *((c, mine) for c in self._listeners),
            *((c, everyone) for c in self.pool.listeners),
        ]:
            try:
                callback(message)
            except Exception:
                log.exception("event listener failed")

    async def state(self, fresh: bool = True) -> dict[str, Any]:
        """url, title, tab and dialog: merged into every result (``fresh``: see Tab.read_title)."""
        tab = self.tab
        state: dict[str, Any] = {"url": tab.page.url if tab else None, "title": None}
        if tab is not None and self.dialog is None:
            state["title"] = await tab.read_title(fresh)
        state["tab"] = self.active_tab
        if self.active_frame is not None:
            state["frame"] = {"url": self.active_frame.url, "name": self.active_frame.name or None}
        if self._frame_note is not None:
            state["frame_note"] = self._frame_note
            self._frame_note = None
        if self.moved_note is not None:
            state["moved"] = self.moved_note
            self.moved_note = None
        if tab is not None and tab.told_labels:
            state["label"] = "; ".join(label.describe() for label in tab.told_labels.values())
        state["dialog"] = self.dialog.describe() if self.dialog else None
        if self.last_alert is not None:
            state["alert"] = self.last_alert
            self.last_alert = None
        return state


async def _quietly(awaitable: Any) -> None:
    with contextlib.suppress(Exception):
        await awaitable

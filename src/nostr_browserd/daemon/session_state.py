"""A controller's browser session, kept in the store so that it follows the controller.

After every command that may change them, and at drain, a controller's login state
(Playwright's storage_state) and its pages (each tab's address, in order, and which one is
active) are saved in the store.  The worker that takes the controller over creates its browser
context from the login state (``BrowserPool.initial_state``) and, before the controller's
first command there, reopens its tabs at their addresses, the active one active; that
command's result says the browser moved and the pages were reloaded (``moved``), and a ref
from before the move is refused as such (``Session.locate``).  All of it only while another
worker is live, which could take the controller over: a lone daemon pays nothing and starts
its contexts afresh.  Tabs of other windows are reopened in the first one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..browser.pool import BrowserPool
from ..browser.session import Session
from ..errors import BrowserdError
from .store import Store

log = logging.getLogger(__name__)

SESSION_STATE = ".session"
"""The saved-state name of a controller's own session: outside the names ``state_save``
accepts, so a controller can neither overwrite nor list it."""
PAGES = ".pages"
"""The saved-state name of a controller's tabs (reserved like :data:`SESSION_STATE`)."""
STATE_TIMEOUT = 2.0
"""Seconds a controller's login state may take to read after a command before it is skipped."""
RELOAD_TIMEOUT = 30.0
"""Seconds each reopened tab may take to load before it is left as it got."""


class SessionKeeper:
    """Saves each controller's session in the store and gives it back to a new context.

    ``confirm(controller)`` says, in the store, whether the controller's lease is still this
    worker's (one that lost it must not overwrite the new one's); ``others_live()`` whether
    another worker could take a controller over; ``allowed(key)`` whether a key is an
    allow-listed controller now (a reload changes the list).
    """

    def __init__(
        self,
        store: Store,
        browser: BrowserPool,
        *,
        allowed: Callable[[str], bool],
        confirm: Callable[[str], Awaitable[bool]],
        others_live: Callable[[], bool],
    ) -> None:
        self.store, self.browser = store, browser
        self._allowed, self._confirm, self._others_live = allowed, confirm, others_live
        # the digest of what was last saved under each (controller, name)
        self._saved: dict[tuple[str, str], str] = {}

    async def keep(self, controller: str, *, login: bool = True) -> None:
        """Save ``controller``'s pages, and with ``login`` its cookies and storage, in the
        store when they changed, while its lease is still this worker's.

        Reading the login state evaluates in the pages, which a page in a busy loop never
        lets finish: it is bounded by :data:`STATE_TIMEOUT`, and such a session keeps its last
        saved state (its pages are saved all the same).  The pages cost no round trip.
        """
        session = self.browser.existing(controller)
        if session is None or session.context is None or not self._others_live():
            return
        saving = {PAGES: pages_of(session)}
        if login:
            try:
                async with asyncio.timeout(STATE_TIMEOUT):
                    saving[SESSION_STATE] = dict(await session.context.storage_state())
            except Exception:  # a closed, crashed or busy context: its login stays as saved
                pass
        changed = {
            name: state
            for name, state in saving.items()
            if self._saved.get((controller, name)) != _digest(state)
        }
        try:
            if changed and await self._confirm(controller):
                for name, state in changed.items():
                    await self.store.save_state(controller, name, state)
                    self._saved[(controller, name)] = _digest(state)
        except BrowserdError as exc:
            log.error("%s", exc.message)

    async def arrived(self, controller: str) -> dict[str, Any] | None:
        """The pages ``controller`` left on the worker it comes from, when it has a browser
        session on none here yet (this worker has just taken it over)."""
        if self.browser.existing(controller) is not None:
            return None
        try:
            pages = await self.store.load_state(controller, PAGES)
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return None
        tabs = pages.get("tabs") if pages else None
        if not isinstance(tabs, list) or not tabs or not all(isinstance(t, str) for t in tabs):
            return None
        assert pages is not None
        self._saved[(controller, PAGES)] = _digest(pages)
        return pages

    async def reopen(self, controller: str, pages: dict[str, Any]) -> None:
        """Reopen the tabs of ``pages`` in ``controller``'s new session, in order, each at
        its address, the active one active; the next result says so."""
        session = await self.browser.session(controller)
        async with session.lock:
            opened = []
            for n, url in enumerate(pages["tabs"]):
                if n == 0 and session.page_or_none is not None:
                    tab_id, page = session.active_tab, session.page
                else:
                    tab_id, page = await session.new_tab()
                assert tab_id is not None
                await _reload(session, page, url)
                session.tabs[tab_id].reloaded = True
                opened.append(tab_id)
            active = pages.get("active")
            session.switch(
                opened[active if isinstance(active, int) and active < len(opened) else 0]
            )
            session.moved_note = (
                f"This browser moved to another worker: its {len(opened)} tab(s) were reopened"
                " at their last addresses and reloaded (what was typed or scrolled there is"
                " gone). Look again before you act; refs from before the move are void."
            )
        log.info("reopened %d tab(s) of %s, moved here", len(opened), controller[:12])

    async def initial_state(self, owner: str) -> dict[str, Any] | None:
        """What a new browser context of ``owner`` starts with: its last saved session."""
        if not self._allowed(owner):
            return None
        try:
            state = await self.store.load_state(owner, SESSION_STATE)
        except BrowserdError as exc:
            log.error("%s", exc.message)
            return None
        if state is not None:
            self._saved[(owner, SESSION_STATE)] = _digest(state)
        return state


def pages_of(session: Session) -> dict[str, Any]:
    """Each tab's address, in order, and the active tab's place among them."""
    tabs = list(session.tabs.values())
    active = tabs.index(session.tab) if session.tab in tabs else 0
    return {"tabs": [tab.page.url for tab in tabs], "active": active}


async def _reload(session: Session, page: Any, url: str) -> None:
    """Load ``url`` in ``page`` as the network policy allows; a tab that cannot is left as
    it got (blank, or part-loaded), and says so in the log."""
    if url in ("", "about:blank"):
        return
    try:
        await session.reach.refuse_url(url)
        async with asyncio.timeout(RELOAD_TIMEOUT):
            await page.goto(url, wait_until="load")
    except Exception as exc:  # a page that is gone or refused: the tab stays, the rest go on
        log.warning("could not reopen a tab of %s: %s", session.owner[:12], exc)


def _digest(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


__all__ = ["PAGES", "SESSION_STATE", "STATE_TIMEOUT", "SessionKeeper", "pages_of"]

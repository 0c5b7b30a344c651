"""A controller's browser session, kept in the store so that it follows the controller.

A controller's login state (Playwright's storage_state) is saved after every command that may
change it and at drain; the worker that takes the controller over creates its browser context
from it (``BrowserPool.initial_state``).  Only while another worker is live, which could take
the controller over: a lone daemon pays nothing and starts its contexts afresh.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..browser.session import BrowserPool
from ..errors import BrowserdError
from .store import Store

log = logging.getLogger(__name__)

SESSION_STATE = ".session"
"""The saved-state name of a controller's own session: outside the names ``state_save``
accepts, so a controller can neither overwrite nor list it."""
STATE_TIMEOUT = 2.0
"""Seconds a controller's login state may take to read after a command before it is skipped."""


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
        self._saved: dict[str, str] = {}  # the digest of each controller's last saved state

    async def keep(self, controller: str) -> None:
        """Save ``controller``'s cookies and storage in the store when they changed, while
        its lease is still this worker's.

        Reading the state evaluates in the pages, which a page in a busy loop never lets
        finish: it is bounded by :data:`STATE_TIMEOUT`, and such a session keeps its last
        saved state.
        """
        session = self.browser.existing(controller)
        if session is None or session.context is None or not self._others_live():
            return
        try:
            async with asyncio.timeout(STATE_TIMEOUT):
                state = await session.context.storage_state()
        except Exception:  # a closed, crashed or busy context: nothing to save now
            return
        digest = _digest(state)
        if self._saved.get(controller) == digest:
            return
        try:
            if await self._confirm(controller):
                await self.store.save_state(controller, SESSION_STATE, state)
                self._saved[controller] = digest
        except BrowserdError as exc:
            log.error("%s", exc.message)

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
            self._saved[owner] = _digest(state)
        return state


def _digest(state: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


__all__ = ["SESSION_STATE", "STATE_TIMEOUT", "SessionKeeper"]

"""A session's events: who hears them, and which ones its controller asked to be sent.

Tabs report what their pages do (load, dialog, download, crash, …) and the session adds its
own (tab_changed, popup_closed).  Each goes to the session's listeners as ``{"event",
"data"}`` and to the pool's with the ``owner``; one the controller watches (``watch``) is
marked for the daemon to forward.  A title, a dialog or a console line the page made of a
value the vault filled shows ``MASK`` in its place (browser/masked.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..redact import scrub

log = logging.getLogger(__name__)

EventCallback = Callable[[dict[str, Any]], None]
Secrets = Callable[[], frozenset[str]]


class Events:
    """One owner's event listeners and watched events."""

    def __init__(
        self, owner: str, everyone: list[EventCallback], secrets: Secrets = frozenset
    ) -> None:
        self.owner = owner
        self._everyone = everyone  # the pool's listeners: the daemon's, for every owner
        self._secrets = secrets  # the values the vault filled into the owner's windows
        self._listeners: list[EventCallback] = []
        self._watching: frozenset[str] = frozenset()

    @property
    def watching(self) -> frozenset[str]:
        """The events the controller asked to be sent (``watch``), ``screen`` among them."""
        return self._watching

    def watch(self, events: frozenset[str], off: bool = False) -> frozenset[str]:
        """Mark ``events`` for the daemon to forward (watch), or stop; what is watched now."""
        self._watching = self._watching - events if off else self._watching | events
        return self._watching

    def listen(self, callback: EventCallback) -> None:
        """Call ``callback({"event", "data"})`` for load, tab_changed, dialog, download, …"""
        self._listeners.append(callback)

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """Tell this session's listeners, and the pool's (with ``owner``), of ``event``."""
        data = scrub(data, self._secrets())
        mine: dict[str, Any] = {"event": event, "data": data}
        everyone: dict[str, Any] = {**mine, "owner": self.owner}
        if event in self._watching:  # the daemon forwards these to the controller (watch)
            everyone["watched"] = True
        for callback, message in [
            *((c, mine) for c in self._listeners),
            *((c, everyone) for c in self._everyone),
        ]:
            try:
                callback(message)
            except Exception:
                log.exception("event listener failed")

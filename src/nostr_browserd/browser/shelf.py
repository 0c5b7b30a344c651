"""Where saved browser states are kept: the shelf the daemon's state store puts up.

``state_save``/``state_load``/``state_list`` reach their states through this protocol, so
the browser and tool layers never import the daemon; the daemon hands its store to the
:class:`~nostr_browserd.browser.pool.BrowserPool` (``pool.shelf``), and on PostgreSQL a
state saved through one worker loads through any other.  Names that match ``paths.NAME`` are
a controller's own; any other name (``".session"``) is reserved for the daemon and never
listed to a controller.
"""

from __future__ import annotations

from typing import Any, Protocol


class StateShelf(Protocol):
    """Named ``storage_state`` dicts (cookies and each origin's storage), per owner."""

    async def save_state(self, owner: str, name: str, state: dict[str, Any]) -> None:
        """Keep ``state`` as ``owner``'s ``name``, replacing what was there."""
        ...

    async def load_state(self, owner: str, name: str) -> dict[str, Any] | None:
        """``owner``'s state ``name``, or None when there is none."""
        ...

    async def state_names(self, owner: str) -> list[str]:
        """Every name ``owner`` has a state under, reserved ones included, sorted."""
        ...

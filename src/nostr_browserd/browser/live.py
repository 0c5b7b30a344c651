"""The live view's stream of one session: a screencast that follows the active tab.

``stream_enable`` starts it on the active tab; switching tabs moves it to the new one, and a
tab that loads while its screencast had sent nothing (started while the tab was opening)
gets it started again.  Stopping it clears the viewers' last picture, so the next stream
never opens on a stale one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .screencast import Fanout, Screencast, StreamSettings
from .tab import Tab

Background = Callable[[Awaitable[Any]], None]


class LiveStream:
    """A session's screencast to the live view's viewers (``frames``), when it is on."""

    def __init__(self, frames: Fanout, background: Background) -> None:
        self.frames = frames
        self._background = background  # the session's: settled before a command's reply
        self.screencast: Screencast | None = None

    async def start(self, settings: StreamSettings, tab: Tab) -> dict[str, Any]:
        """Screencast ``tab`` (the active one) to the viewers; again: new settings."""
        if self.screencast is not None:
            await self.screencast.stop()
        cast = self.screencast = Screencast(self.frames, settings)
        await cast.start(tab.id, tab.page)
        return cast.status()

    async def stop(self) -> dict[str, Any]:
        """Stop the screencast; the viewers keep no stale picture for the next one."""
        if self.screencast is not None:
            await self.screencast.stop()
            self.screencast = None
            self.frames.last = None
        return self.status()

    def status(self) -> dict[str, Any]:
        """The screencast's counters when it is on, else the viewers' alone."""
        if self.screencast is None:
            return {"on": False, **self.frames.status()}
        return self.screencast.status()

    def follow(self, tab: Tab) -> None:
        """The active tab changed: the live view shows the new one."""
        if self.screencast is not None:
            self._background(self.screencast.start(tab.id, tab.page))

    def loaded(self, tab: Tab) -> None:
        """A tab loaded: a screencast started while it was opening starts again."""
        cast = self.screencast
        if cast is not None and cast.tab == tab.id and cast.quiet:
            # Started while the tab was opening: Chrome sent nothing, so start it again.
            self._background(cast.start(tab.id, tab.page))

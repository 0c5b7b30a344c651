"""The screencasts that follow a session's active tab: the live view's stream, and a recording.

``stream_enable`` starts the live view on the active tab, ``record_start`` a recording
(``recorder.py``, a screencast of its own).  Switching tabs moves both to the new one, and a
tab that loads while its screencast had sent nothing (started while the tab was opening)
gets it started again.  Stopping the live view clears the viewers' last picture, so the next
stream never opens on a stale one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import BrowserdError, ErrorCode
from .screencast import Fanout, Screencast, StreamSettings
from .tab import Tab

if TYPE_CHECKING:
    from .recorder import Recorder, Recording

Run = Callable[[Awaitable[Any]], None]


class LiveStream:
    """A session's screencasts: the live view's (to ``frames``) and a recording's, when on."""

    def __init__(self, frames: Fanout, run: Run) -> None:
        self.frames = frames
        self._run = run  # the session's chores: settled before a command's reply
        self.screencast: Screencast | None = None
        self.recorder: Recorder | None = None  # a recording of the active tab (record_start)
        # A recording whose stop its command's deadline cut: still being finished, or done and
        # not yet delivered.  The next record stop brings it.
        self.finishing: asyncio.Task[Recording] | None = None

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

    async def record(self, recorder: Recorder, tab: Tab) -> Recorder:
        """Record ``tab`` (the active one), and the tabs it moves to, until ``stop_recording``."""
        if self.recorder is not None:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "A recording is on: record stop ends it.")
        if self.finishing is not None:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                "The last recording's stop ran out of time and it is still kept: record stop"
                " brings it first.",
            )
        self.recorder = recorder
        await recorder.cast.start(tab.id, tab.page)
        return recorder

    async def stop_recording(self) -> Recording:
        """End the recording; its video and contact sheet.

        The video is finished even when the command's deadline ends the wait for it (a long
        recording on a busy machine): the next ``record stop`` brings it, not "no recording".
        """
        if self.finishing is None:
            if self.recorder is None:
                raise BrowserdError(ErrorCode.INVALID_PARAMS, "No recording is on: record start.")
            recorder, self.recorder = self.recorder, None
            self.finishing = asyncio.ensure_future(recorder.stop())
        finishing = self.finishing
        try:
            return await asyncio.shield(finishing)
        finally:
            if finishing.done():  # delivered, or failed: either way not kept any more
                self.finishing = None

    async def abandon_recording(self) -> None:
        """Drop a recording without a video (the session closed)."""
        if self.recorder is not None:
            recorder, self.recorder = self.recorder, None
            await recorder.abandon()
        if self.finishing is not None:  # its video would reach nobody
            finishing, self.finishing = self.finishing, None
            await asyncio.gather(finishing, return_exceptions=True)

    def _casts(self) -> list[Screencast]:
        recording = self.recorder.cast if self.recorder is not None else None
        return [cast for cast in (self.screencast, recording) if cast is not None]

    def follow(self, tab: Tab) -> None:
        """The active tab changed: the live view and a recording show the new one."""
        for cast in self._casts():
            self._run(cast.start(tab.id, tab.page))

    def loaded(self, tab: Tab) -> None:
        """A tab loaded: a screencast started while it was opening starts again."""
        for cast in self._casts():
            if cast.tab == tab.id and cast.quiet:
                # Started while the tab was opening: Chrome sent nothing, so start it again.
                self._run(cast.start(tab.id, tab.page))

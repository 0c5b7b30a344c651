"""The live view's picture: a CDP screencast of the active tab, fanned out to viewers.

Chrome sends a ``Page.screencastFrame`` and waits for its ``Page.screencastFrameAck``
before sending the next (the page's latest paint, kept meanwhile), so the ack is the brake.
A frame is acknowledged when the first viewer that took it has sent it (or at once when no
viewer could take it), and no sooner than ``1 / max_fps`` after the previous ack: a slow
viewer slows the stream down instead of a queue growing.  Each viewer holds at most one
frame in flight; a frame that finds it still sending is dropped for that viewer and counted.
The stream follows the session's active tab: on ``tab_changed`` it stops on the old page and
starts on the new one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import CDPSession, Page

log = logging.getLogger(__name__)

Send = Callable[[str], Awaitable[None]]
Ack = Callable[[], Awaitable[None]]
FPS_WINDOW = 5.0  # seconds of sent frames the reported fps is averaged over
# One frame unacknowledged at a time, and the page's latest paint kept for the next ack: a page
# that paints while we wait out ``max_fps`` is shown as it ended, not as it was before.
IN_FLIGHT = {"maxFramesInFlight": 1, "sendLastFrame": True}


class Viewer:
    """One connection that watches: how it sends, whether it is free for a frame, its drops."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.free = asyncio.Event()
        self.free.set()
        self.sent = 0
        self.dropped = 0


class Fanout:
    """Frames to every viewer, at most one in flight each; the rest dropped and counted."""

    def __init__(self) -> None:
        self.viewers: dict[object, Viewer] = {}
        self.sent = 0
        self.dropped = 0
        self._times: deque[float] = deque(maxlen=256)
        self._tasks: set[asyncio.Task[None]] = set()
        # The latest frame: a viewer who comes in gets the picture of a page at rest at once.
        self.last: str | None = None

    def add(self, key: object, send: Send) -> None:
        """Start sending frames to ``key`` (a connection) through ``send``; the latest first."""
        viewer = self.viewers[key] = Viewer(send)
        if self.last is not None:
            viewer.free.clear()
            self._spawn(self._send(viewer, self.last))

    def remove(self, key: object) -> None:
        """Stop sending frames to ``key``."""
        self.viewers.pop(key, None)

    def offer(self, text: str, ack: Ack) -> None:
        """Hand one frame to every free viewer; ``ack`` runs once one of them is free again.

        With nobody watching the frame is acknowledged at once; a frame every viewer was
        too busy for is dropped, and acknowledged when the first of them is done, so
        Chrome waits for the slowest link instead of us queueing.
        """
        self.last = text
        if not self.viewers:
            self._spawn(ack())
            return
        taking = []
        for viewer in self.viewers.values():
            if viewer.free.is_set():
                taking.append(viewer)
            else:
                viewer.dropped += 1
                self.dropped += 1
        waits = taking or list(self.viewers.values())
        self._spawn(self._ack_after([v.free for v in waits], ack))
        for viewer in taking:
            viewer.free.clear()
            self._spawn(self._send(viewer, text))

    async def _send(self, viewer: Viewer, text: str) -> None:
        try:
            await viewer.send(text)
            viewer.sent += 1
            self.sent += 1
            self._times.append(time.monotonic())
        except Exception:  # a closed connection: it is removed when its handler ends
            log.debug("a viewer did not take a frame", exc_info=True)
        finally:
            viewer.free.set()

    @staticmethod
    async def _ack_after(free: list[asyncio.Event], ack: Ack) -> None:
        waiting = [asyncio.ensure_future(event.wait()) for event in free]
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waiting:
                task.cancel()
        await ack()

    def _spawn(self, awaitable: Awaitable[None]) -> None:
        task = asyncio.ensure_future(awaitable)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def fps(self) -> float:
        """Frames sent per second over the last few seconds."""
        now = time.monotonic()
        recent = [t for t in self._times if now - t <= FPS_WINDOW]
        return round(len(recent) / FPS_WINDOW, 1)

    def status(self) -> dict[str, Any]:
        """Viewers, frames sent and dropped, fps."""
        return {
            "viewers": len(self.viewers),
            "frames_sent": self.sent,
            "frames_dropped": self.dropped,
            "fps": self.fps(),
        }


@dataclass(frozen=True)
class StreamSettings:
    """What ``stream_enable`` asked for."""

    format: str = "jpeg"
    quality: int = 60
    max_fps: int = 10
    max_width: int = 1280


class Screencast:
    """A screencast of one session's active tab, following it across tab switches."""

    clock: Callable[[], float] = staticmethod(time.monotonic)  # the pacing's (a test's own)
    sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

    def __init__(self, fanout: Fanout, settings: StreamSettings) -> None:
        self.fanout = fanout
        self.settings = settings
        self.tab: str | None = None
        self.frames = 0  # frames Chrome sent us
        self.quiet = True  # no frame yet since the last start
        self._cdp: CDPSession | None = None
        self._last_ack = 0.0
        self._lock = asyncio.Lock()

    async def start(self, tab: str, page: Page) -> None:
        """Stream ``page`` (the active tab), stopping whatever page streamed before."""
        async with self._lock:
            await self._stop()
            cdp = await page.context.new_cdp_session(page)
            cdp.on("Page.screencastFrame", lambda frame: self._on_frame(cdp, frame))
            s = self.settings
            params: dict[str, Any] = {"format": s.format, "maxWidth": s.max_width}
            if s.format == "jpeg":
                params["quality"] = s.quality
            params |= IN_FLIGHT
            # Current before the start: its first frame may come before the answer.
            self._cdp, self.tab, self.quiet = cdp, tab, True
            await cdp.send("Page.startScreencast", params)

    async def stop(self) -> None:
        """Stop streaming."""
        async with self._lock:
            await self._stop()

    async def _stop(self) -> None:
        cdp, self._cdp, self.tab = self._cdp, None, None
        if cdp is None:
            return
        try:
            await cdp.send("Page.stopScreencast")
            await cdp.detach()
        except Exception:  # the page is already gone
            log.debug("screencast stop on a closed page", exc_info=True)

    def _on_frame(self, cdp: CDPSession, frame: dict[str, Any]) -> None:
        if cdp is not self._cdp:
            return  # a late frame of the page we left
        self.frames += 1
        self.quiet = False
        meta = frame.get("metadata", {})
        event = {
            "type": "event",
            "event": "stream_frame",
            "data": {
                "seq": self.frames,
                "tab": self.tab,
                "format": self.settings.format,
                "width": meta.get("deviceWidth"),
                "height": meta.get("deviceHeight"),
                "timestamp": meta.get("timestamp"),  # when Chrome took it (its clock, seconds)
                "data": frame["data"],
            },
        }
        session_id = frame["sessionId"]
        self.fanout.offer(json.dumps(event), lambda: self._ack(cdp, session_id))

    async def _ack(self, cdp: CDPSession, session_id: int) -> None:
        """Acknowledge a frame, no sooner than max_fps allows after the previous one.

        Each ack takes its turn when it is asked for, so acks that wait at the same time are
        spaced out too.
        """
        now = self.clock()
        turn = self._last_ack = max(now, self._last_ack + 1 / self.settings.max_fps)
        if turn > now:
            await self.sleep(turn - now)
        if cdp is self._cdp:
            try:
                await cdp.send("Page.screencastFrameAck", {"sessionId": session_id})
            except Exception:  # the page closed meanwhile
                log.debug("screencast ack on a closed page", exc_info=True)

    def status(self) -> dict[str, Any]:
        """On/off, the settings, the tab, and the fan-out's counters."""
        return {
            "on": self._cdp is not None,
            "tab": self.tab,
            **self.settings.__dict__,
            "frames_received": self.frames,
            **self.fanout.status(),
        }

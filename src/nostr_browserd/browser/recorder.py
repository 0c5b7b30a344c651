"""A recording of one session: the live view's screencast, encoded as it comes, with steps.

The recorder is one more viewer of a screencast (:mod:`.screencast`), its own, so a
recording needs no live view and opens no second capture path: Chrome paints, the frame comes
here, and it is queued for the encoder, which runs in a thread of :data:`ENCODERS` (a
bounded pool: two recordings encode at once on the whole daemon, the others wait their turn
frame by frame; one owner has one recording at a time).  The screencast's ack waits for the
queue, so a slow encoder slows Chrome's frames down instead of a backlog growing.  While a
step runs (for its first :data:`DEFER_S`), frames wait in the queue: the command has the CPU,
and its frames are encoded once it has answered.

Each step (a command, an approval, the handoff) is marked at once, without waiting for any
frame: a frame is placed by when Chrome took it, not when it came.  A step's caption is drawn
on the frames taken in the :data:`CAPTION_MS` after it began, and the last picture taken
before the next step began becomes its cell of the contact sheet (a step that painted
nothing keeps the picture before it).  Fields that hold a secret (a vault value,
``--secret``) are boxed out of every frame before it is encoded: with the boxes read before
the frame came and those of a read begun after it (see ``_read_from_now``).  At ``max_seconds`` or
``max_mb`` the recording stops by itself and says which bound stopped it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..waits import set_within
from .config import RecordConfig
from .frames import Box, Caption, Frame, contact_sheet
from .screencast import Fanout, Screencast, StreamSettings
from .video import Video, VideoEncoder

log = logging.getLogger(__name__)

ENCODERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="record-encode")
CAPTION_MS = 2500
# At the stop, when no frame came since the last step ended, its paint is waited for this long.
SETTLE_AT_STOP = 1.0
DEFER_S = 1.0  # a step's frames wait this long at most for it to end before they are encoded
QUEUE_FRAMES = 8  # frames waiting for the encoder before the screencast waits for us
MASK_WAIT_S = 1.0  # a frame waits this long for the page to say where its secrets are
JPEG_START = b"\xff\xd8\xff"
Masks = Callable[[], Awaitable[tuple[float, list[Box]]]]  # the viewport's width, the boxes


@dataclass
class Step:
    """A marked step: its caption, when it was, and the picture it left."""

    number: int
    text: str
    at_ms: int
    frame: Frame | None = None  # the last one taken before the next step began
    end_ms: int | None = None


@dataclass(frozen=True)
class Recording:
    """What ``stop`` hands back: the video, the sheet of its steps, and why it ended."""

    video: Video | None
    sheet: bytes | None
    steps: list[str]
    stopped_by: str | None  # "max_seconds" or "max_mb" when a bound ended it


class Recorder:
    """One session's recording, from :meth:`start` to :meth:`stop`."""

    clock: Callable[[], float] = staticmethod(time.monotonic)

    def __init__(self, settings: RecordConfig, masks: Masks) -> None:
        self.settings = settings
        self._masks = masks
        self._boxes: tuple[float, tuple[Box, ...]] = (0.0, ())  # the latest read
        self._asking: asyncio.Task[tuple[float, tuple[Box, ...]]] | None = None  # being read
        self._masking: asyncio.Task[tuple[float, tuple[Box, ...]]] | None = None  # to be read next
        self.fanout = Fanout()
        self.fanout.add(self, self._take)
        stream = StreamSettings("jpeg", 70, settings.fps, settings.max_width)
        self.cast = Screencast(self.fanout, stream)
        self.started = self.clock()
        self.steps: list[Step] = []
        self.stopped_by: str | None = None
        self._before: Frame | None = None  # the last frame taken before the first step
        self._last_ms = -1  # the latest frame's time: frames go into the video in order
        self._gap_ms: float | None = None  # Chrome's clock to ours (see ``_taken_ms``)
        self._fresh = asyncio.Event()  # set by each frame
        self._between_steps = asyncio.Event()  # no step is running: frames are encoded
        self._between_steps.set()
        self._encoder: VideoEncoder | None = None
        self._queue: asyncio.Queue[Frame | None] = asyncio.Queue(QUEUE_FRAMES)
        self._encoding = asyncio.create_task(self._encode_all())
        self._ended = asyncio.Event()

    @property
    def elapsed_ms(self) -> int:
        return round((self.clock() - self.started) * 1000)

    def begin(self, text: str) -> None:
        """A step starts: frames taken from now on are its own, captioned with ``text``.

        Nothing is waited for: the previous step's last paint, should it come later, is
        placed by when Chrome took it.  Encoding holds off until the step ends.
        """
        self.steps.append(Step(len(self.steps) + 1, text, self.elapsed_ms))
        self._between_steps.clear()

    def end(self) -> None:
        """The current step is done: its frames are encoded now."""
        if self.steps:
            self.steps[-1].end_ms = self.elapsed_ms
            self._fresh.clear()
        self._between_steps.set()

    async def _settle(self, seconds: float) -> None:
        """Wait (at most ``seconds``) for a frame, if none came since the last step ended."""
        step = self.steps[-1] if self.steps else None
        if step is None or step.end_ms is None or self._fresh.is_set() or self.stopped_by:
            return
        await set_within(self._fresh, seconds)

    def _place(self, frame: Frame) -> None:
        """``frame`` pictures the step it was taken in (the latest one begun before it)."""
        for step in reversed(self.steps):
            if step.at_ms <= frame.at_ms:
                step.frame = frame
                return
        self._before = frame

    def _pictures(self) -> list[tuple[Frame, str]]:
        """Each step's picture and caption; a step that painted nothing keeps the one before."""
        cells, picture = [], self._before
        for step in self.steps:
            picture = step.frame or picture
            if picture is not None:
                cells.append((picture, f"{step.number} · {step.text}"))
        return cells

    def _taken_ms(self, timestamp: Any, arrived_ms: int) -> int:
        """When Chrome took a frame, in our milliseconds since the start (else when it came).

        The browser's clock may be another machine's: its offset from ours is taken as the
        smallest gap yet seen between a frame's taking and its coming.  Never before the
        frame before it, nor after it came.
        """
        if isinstance(timestamp, int | float) and not isinstance(timestamp, bool):
            gap = arrived_ms - timestamp * 1000
            self._gap_ms = gap if self._gap_ms is None else min(self._gap_ms, gap)
            arrived_ms = min(arrived_ms, round(timestamp * 1000 + self._gap_ms))
        self._last_ms = max(arrived_ms, self._last_ms + 1)
        return self._last_ms

    async def _take(self, text: str) -> None:
        """The screencast's frame, queued for the encoder (this is a viewer's ``send``)."""
        if self.stopped_by is not None or self._ended.is_set() or self._encoding.done():
            return  # nobody would take it off the queue
        at_ms = self.elapsed_ms
        if at_ms > self.settings.max_seconds * 1000:
            self._limit("max_seconds")
            return
        try:
            data = json.loads(text)["data"]
            jpeg = base64.b64decode(data["data"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error):
            log.debug("a screencast frame that is no JPEG", exc_info=True)
            return
        if not jpeg.startswith(JPEG_START):
            log.debug("a screencast frame that is no JPEG")
            return
        taken_ms = self._taken_ms(data.get("timestamp"), at_ms)
        before = self._boxes
        try:
            async with asyncio.timeout(MASK_WAIT_S):
                css_width, after = await asyncio.shield(self._read_from_now())
        except TimeoutError:  # a page too busy to say where its secrets are: no picture of it
            log.debug("a recording dropped a frame whose masks did not come")
            return
        frame = Frame(jpeg, taken_ms, before[1] + after, css_width or before[0])
        self._place(frame)
        self._fresh.set()
        await self._queue.put(frame)

    def _read_from_now(self) -> asyncio.Task[tuple[float, tuple[Box, ...]]]:
        """A read of the mask boxes that begins no earlier than now.

        A frame is painted with the boxes read before it came and those read after: whatever
        held a secret when Chrome took it is in one of them, even a field the page has just
        copied a value into.  One question at a time: frames that come while one is asked
        share the next.
        """
        if self._masking is None:
            self._masking = asyncio.create_task(self._ask_masks(self._asking))
        return self._masking

    async def _ask_masks(
        self, previous: asyncio.Task[tuple[float, tuple[Box, ...]]] | None
    ) -> tuple[float, tuple[Box, ...]]:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        self._asking, self._masking = self._masking, None
        try:
            css_width, boxes = await self._masks()
        except Exception:  # a page between documents: the boxes we had
            log.debug("mask boxes not read", exc_info=True)
            return self._boxes
        self._boxes = (css_width, tuple(boxes))
        return self._boxes

    def _limit(self, bound: str) -> None:
        if self.stopped_by is None:
            self.stopped_by = bound
            log.info("a recording stopped at its %s", bound)

    def _caption(self, at_ms: int) -> Caption | None:
        for step in reversed(self.steps):
            if step.at_ms <= at_ms:
                if at_ms - step.at_ms <= CAPTION_MS:
                    return Caption(f"{step.number} · {step.text}", step.at_ms + CAPTION_MS)
                return None
        return None

    async def _encode_all(self) -> None:
        """Hand each queued frame to the encoder, in order, in the bounded pool."""
        try:
            while (frame := await self._queue.get()) is not None:
                await self._out_of_the_way()
                try:
                    size = await self._encode(frame)
                except Exception:  # one frame that will not decode or encode is dropped
                    log.warning("a recording dropped a frame it could not encode", exc_info=True)
                    continue
                if size > self.settings.max_mb * 1_000_000:
                    self._limit("max_mb")
                    break
        finally:  # a frame waiting for room goes on: nothing takes frames from here on
            while not self._queue.empty():
                self._queue.get_nowait()

    async def _out_of_the_way(self) -> None:
        """While a step runs, wait for it to end (at most ``DEFER_S`` into it): its command
        has the CPU, the encoding catches up after its answer."""
        if self._between_steps.is_set() or not self.steps:
            return
        left = self.steps[-1].at_ms / 1000 + DEFER_S - (self.clock() - self.started)
        if left > 0:
            await set_within(self._between_steps, left)

    async def _encode(self, frame: Frame) -> int:
        """One frame into the video (made with the first frame's size); the bytes so far."""
        loop = asyncio.get_running_loop()
        if self._encoder is None:
            picture = frame.image()
            self._encoder = await loop.run_in_executor(
                ENCODERS, VideoEncoder, picture.width, picture.height
            )
        await loop.run_in_executor(ENCODERS, self._encoder.add, frame, self._caption(frame.at_ms))
        return self._encoder.size

    async def stop(self) -> Recording:
        """End the recording; the video and sheet are made off the event loop."""
        await self._settle(SETTLE_AT_STOP)
        self._ended.set()
        self._between_steps.set()  # nothing left to keep out of the way of
        end_ms = min(self.elapsed_ms, round(self.settings.max_seconds * 1000))
        await self.cast.stop()
        if not self._encoding.done():
            await self._queue.put(None)
        await self._encoding
        for reading in (self._masking, self._asking):
            if reading is not None:
                reading.cancel()
        loop = asyncio.get_running_loop()
        video = None
        if self._encoder is not None:
            video = await loop.run_in_executor(ENCODERS, self._encoder.finish, end_ms)
        cells = self._pictures()
        sheet = await loop.run_in_executor(ENCODERS, contact_sheet, cells) if cells else None
        return Recording(video, sheet, [s.text for s in self.steps], self.stopped_by)

    async def abandon(self) -> None:
        """Stop without a video (the session closed)."""
        self._ended.set()
        await self.cast.stop()
        self._encoding.cancel()
        await asyncio.gather(self._encoding, return_exceptions=True)
        if self._encoder is not None:
            await asyncio.get_running_loop().run_in_executor(ENCODERS, self._encoder.abandon)

    def status(self) -> dict[str, Any]:
        """Recording or not, for how long, how many frames and steps, and any bound hit."""
        return {
            "recording": self.stopped_by is None,
            "seconds": round(self.elapsed_ms / 1000, 1),
            "frames": self._encoder.frames if self._encoder else 0,
            "steps": len(self.steps),
            "stopped_by": self.stopped_by,
            "max_seconds": self.settings.max_seconds,
            "max_mb": self.settings.max_mb,
        }

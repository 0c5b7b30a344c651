"""A recording's frames (no browser): a frame that will not decode, which step a frame
pictures, and when frames are encoded."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os

import pytest
from PIL import Image

from nostr_browserd.browser.config import RecordConfig
from nostr_browserd.browser.frames import Frame
from nostr_browserd.browser.recorder import DEFER_S, Recorder
from tests.fixtures.daemon import wait_until


async def no_masks() -> tuple[float, list[tuple[float, float, float, float]]]:
    return 0.0, []


def frame_event(data: bytes, taken: float | None = None) -> str:
    """A frame as the screencast hands it to a viewer (``taken``: by the browser's clock)."""
    return json.dumps({"data": {"data": base64.b64encode(data).decode(), "timestamp": taken}})


def jpeg(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(out, "JPEG")
    return out.getvalue()


def noise() -> bytes:
    """A picture no encoder can make small: its packets come out frame after frame."""
    out = io.BytesIO()
    Image.frombytes("RGB", (64, 48), os.urandom(64 * 48 * 3)).save(out, "JPEG")
    return out.getvalue()


async def test_frames_that_will_not_decode_are_dropped_and_the_recording_goes_on() -> None:
    recorder = Recorder(RecordConfig(), no_masks)
    await recorder._take("not JSON")
    await recorder._take(frame_event(b"no picture at all"))
    await recorder._take(frame_event(b"\xff\xd8\xff" + b"\0" * 100))  # a JPEG cut short
    await recorder._take(frame_event(jpeg("red")))
    recording = await recorder.stop()
    assert recording.video is not None and recording.video.frames >= 1
    assert (recording.video.width, recording.video.height) == (64, 48)


async def test_no_frame_waits_forever_once_the_encoder_stopped_at_its_bound() -> None:
    """Past ``max_mb`` nothing takes frames any more: a viewer's send still returns."""
    recorder = Recorder(RecordConfig(max_mb=0.000001), no_masks)
    for _ in range(100):  # far more than the encoder's look-ahead and the queue hold
        await recorder._take(frame_event(noise()))
    recording = await recorder.stop()
    assert recording.stopped_by == "max_mb"


async def test_a_frame_is_painted_with_boxes_read_after_it_came_and_before() -> None:
    """The page copies a secret somewhere new, then Chrome's frame of it comes: the boxes
    read before the frame cannot know the new place, so the frame waits for a read that
    begins after it came, and is painted with both."""
    reads: list[list[tuple[float, float, float, float]]] = [[(0, 0, 10, 10)], [(20, 20, 10, 10)]]
    asked = 0

    async def masks() -> tuple[float, list[tuple[float, float, float, float]]]:
        nonlocal asked
        asked += 1
        return 64.0, reads[min(asked, len(reads)) - 1]

    recorder = Recorder(RecordConfig(), masks)
    await recorder._take(frame_event(jpeg("white")))
    await recorder._take(frame_event(jpeg("white")))  # the page has moved its secret since
    taken = recorder._before
    recording = await recorder.stop()
    assert recording.video is not None
    assert taken is not None and taken.masks == ((0, 0, 10, 10), (20, 20, 10, 10))
    assert asked == 2


async def test_a_frame_whose_masks_never_come_is_dropped_and_the_recording_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("nostr_browserd.browser.recorder.MASK_WAIT_S", 0.05)
    stuck = asyncio.Event()

    async def masks() -> tuple[float, list[tuple[float, float, float, float]]]:
        await stuck.wait()  # a page whose main thread spins
        return 64.0, []

    recorder = Recorder(RecordConfig(), masks)
    await recorder._take(frame_event(jpeg("red")))
    await recorder._take(frame_event(jpeg("red")))
    assert recorder._before is None  # no frame was kept unmasked
    stuck.set()
    await recorder._take(frame_event(jpeg("red")))
    recording = await recorder.stop()
    assert recording.video is not None and recording.video.frames >= 1


class Clock:
    """The recorder's clock, moved by the test: nothing here is timed."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(Recorder, "clock", staticmethod(clock))
    return clock


def colour_at(sheet: bytes, cell: int) -> tuple[int, ...]:
    """The colour in the middle of the top of the sheet's ``cell`` (400 px wide, in a row)."""
    picture = Image.open(io.BytesIO(sheet)).convert("RGB")
    return picture.getpixel((cell * 400 + 200, 10))


async def test_a_step_is_marked_at_once_and_pictured_by_when_its_frames_were_taken(
    clock: Clock,
) -> None:
    """A paint taken before the next step began, that comes after it began (Chrome waits
    for the ack to send it), pictures its own step; the browser's clock is not ours."""
    recorder = Recorder(RecordConfig(), no_masks)
    browser = 5000.0  # the browser's clock at our start: another machine's, say
    await recorder._take(frame_event(jpeg("white"), browser))  # came at once: the gap is 0
    clock.now += 0.1
    assert recorder.begin("open red") is None  # marked, nothing awaited
    clock.now += 0.1
    recorder.end()
    clock.now += 0.1
    await recorder._take(frame_event(jpeg("red"), browser + 0.25))
    clock.now += 0.1
    recorder.begin("open blue")
    recorder.end()
    clock.now += 0.1
    recorder.begin("click")  # begun before the blue page's paint came
    await recorder._take(frame_event(jpeg("blue"), browser + 0.45))  # taken before it
    recorder.end()
    clock.now += 0.1
    recorder.begin("scroll")  # paints nothing: keeps the picture before it
    recorder.end()
    clock.now += 0.1
    recording = await recorder.stop()
    pictures = [frame.jpeg for frame, _ in recorder._pictures()]
    assert pictures == [jpeg("red"), jpeg("blue"), jpeg("blue"), jpeg("blue")]
    assert recording.sheet is not None  # and so the sheet shows them
    for cell, wanted in enumerate(((255, 0, 0), (0, 0, 255))):
        shown = colour_at(recording.sheet, cell)
        assert all(abs(a - b) < 40 for a, b in zip(shown, wanted, strict=True)), shown


class Encoded:
    """Stands in for the encoder: which frames reached it."""

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    async def __call__(self, frame: Frame) -> int:
        self.frames.append(frame)
        return 0


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> Encoded:
    encoded = Encoded()
    monkeypatch.setattr(Recorder, "_encode", lambda self, frame: encoded(frame))
    return encoded


async def test_a_steps_frames_are_encoded_once_it_has_answered(
    clock: Clock, encoded: Encoded
) -> None:
    """The command has the CPU: its frames wait in the queue until it ends."""
    recorder = Recorder(RecordConfig(), no_masks)
    recorder.begin("open red")
    for _ in range(3):
        await recorder._take(frame_event(jpeg("red")))
    for _ in range(20):  # the encoder's task has every chance to run
        await asyncio.sleep(0)
    assert encoded.frames == []
    recorder.end()
    await wait_until(lambda: len(encoded.frames) == 3)
    await recorder.stop()


async def test_a_long_step_does_not_hold_its_frames_back(clock: Clock, encoded: Encoded) -> None:
    """Past ``DEFER_S`` into a step (a long wait, say), its frames are encoded as they come."""
    recorder = Recorder(RecordConfig(), no_masks)
    recorder.begin("wait 5000")
    clock.now += DEFER_S + 0.1
    await recorder._take(frame_event(jpeg("red")))
    await wait_until(lambda: len(encoded.frames) == 1)
    recorder.end()
    await recorder.stop()

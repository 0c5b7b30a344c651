"""A recording's frames: what a screencast frame that will not decode does (no browser)."""

from __future__ import annotations

import base64
import io
import json
import os

from PIL import Image

from nostr_browserd.browser.config import RecordConfig
from nostr_browserd.browser.recorder import Recorder


async def no_masks() -> tuple[float, list[tuple[float, float, float, float]]]:
    return 0.0, []


def frame_event(data: bytes) -> str:
    """A frame as the screencast hands it to a viewer."""
    return json.dumps({"data": {"data": base64.b64encode(data).decode()}})


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

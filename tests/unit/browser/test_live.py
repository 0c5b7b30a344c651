"""A recording's stop that its command's deadline cut: the video is still finished, and the
next stop brings it (no browser: the recorder is a stand-in that finishes when told)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from nostr_browserd.browser.live import LiveStream
from nostr_browserd.browser.screencast import Fanout
from nostr_browserd.errors import BrowserdError


class SlowRecorder:
    """Finishes its video only when ``done`` is set, as a long recording's encoder would."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.stops = 0

    async def stop(self) -> str:
        self.stops += 1
        await self.done.wait()
        return "the video"


def stream_recording(recorder: SlowRecorder) -> LiveStream:
    stream = LiveStream(Fanout(), lambda _: None)
    stream.recorder = cast(Any, recorder)
    return stream


async def test_a_stop_cut_by_its_deadline_is_brought_by_the_next_stop() -> None:
    recorder = SlowRecorder()
    stream = stream_recording(recorder)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):  # the command's deadline
            await stream.stop_recording()
    with pytest.raises(BrowserdError, match="record stop brings it first"):
        await stream.record(cast(Any, SlowRecorder()), cast(Any, None))
    recorder.done.set()
    assert await stream.stop_recording() == "the video"
    assert recorder.stops == 1
    with pytest.raises(BrowserdError, match="No recording is on"):
        await stream.stop_recording()


async def test_a_closed_session_waits_for_a_kept_stop_and_drops_it() -> None:
    recorder = SlowRecorder()
    stream = stream_recording(recorder)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await stream.stop_recording()
    recorder.done.set()
    await stream.abandon_recording()
    assert stream.finishing is None and stream.recorder is None

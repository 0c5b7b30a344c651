"""set_within: a deadline on an event that never loses a cancel."""

from __future__ import annotations

import asyncio

import pytest

from nostr_browserd.waits import set_within


async def test_an_event_set_in_time_says_so_and_one_not_set_times_out() -> None:
    event = asyncio.Event()
    asyncio.get_running_loop().call_soon(event.set)
    assert await set_within(event, 10)
    assert not await set_within(asyncio.Event(), 0.01)


async def test_a_cancel_that_comes_with_the_event_still_cancels() -> None:
    """The waiter is cancelled in the very turn its event is set: it must end cancelled."""
    event = asyncio.Event()
    waiter = asyncio.ensure_future(set_within(event, 10))
    await asyncio.sleep(0)  # it waits on the event now
    event.set()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter

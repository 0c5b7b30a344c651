"""Dialogs.until: a stopped command's action has ended before the stop returns."""

import asyncio

from nostr_browserd.browser.dialogs import Dialogs


async def test_a_cancelled_watch_returns_only_once_its_action_has_ended():
    """The deadline cancels the command: its action is cancelled too, and awaited, so the
    session's lock is not released (and the lane goes on) while the action could still act."""
    dialogs = Dialogs({})  # no tab: the action is ours
    began, steps = asyncio.Event(), []

    async def action() -> None:
        began.set()
        try:
            await asyncio.Event().wait()  # a click waiting for its button
        finally:
            await asyncio.sleep(0)  # its clean-up takes a turn of the loop
            steps.append("action ended")

    watching = asyncio.create_task(dialogs.until(action()))
    await began.wait()
    watching.cancel()
    try:
        await watching
    except asyncio.CancelledError:
        steps.append("stop returned")
    assert steps == ["action ended", "stop returned"]

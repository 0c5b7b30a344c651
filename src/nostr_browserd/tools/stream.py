"""The live view: a screencast of the active tab, pushed to the local WebSocket's viewers.

Frames go out as ``stream_frame`` events on the local channel and to the ``/live`` page
(see browser/screencast.py for the flow control).  The tools are ``local_only``: a relay
is no video channel, so over messages they are refused and ``watch`` with screenshots is
the way to follow along.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..browser.screencast import Fanout, StreamSettings
from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry

TOOLS = Registry()


class StreamParams(Params):
    """How the picture is encoded and how fast it may come."""

    format: Literal["jpeg", "png"] = Field("jpeg", description="jpeg (smaller) or png")
    quality: int = Field(60, ge=1, le=100, description="jpeg quality")
    max_fps: int = Field(10, ge=1, le=30, description="frames per second at most")
    max_width: int = Field(1280, ge=160, le=3840, description="pixels; larger pages are scaled")


@TOOLS.tool(
    "stream_enable",
    family="live view",
    gated=False,
    read_only=False,
    params=StreamParams,
    local_only=True,
)
async def stream_enable(session: Session, params: StreamParams) -> dict[str, Any]:
    """Stream the active tab as stream_frame events to local viewers (the /live page).

    Local channel only: over messages, use watch and screenshot.  Enabling again applies
    new settings.
    """
    page = session.page  # refuses while a dialog blocks the active tab
    assert session.tab is not None and session.tab.page is page
    return await session.stream.start(StreamSettings(**params.model_dump()), session.tab)


@TOOLS.tool("stream_status", family="live view", gated=False, local_only=True)
async def stream_status(session: Session, params: NoParams) -> dict[str, Any]:
    """The live view: on or off, fps, frames sent and dropped, viewers."""
    return session.stream.status()


@TOOLS.tool("stream_disable", family="live view", gated=False, read_only=False, local_only=True)
async def stream_disable(session: Session, params: NoParams) -> dict[str, Any]:
    """Stop the live view's stream."""
    return await session.stream.stop()


async def live_state(
    session: Session | None, frames: Fanout, recent: list[dict[str, Any]]
) -> dict[str, Any]:
    """The live page's text: the active tab's address and title, the stream, the commands."""
    tab = session.tab if session is not None else None
    if session is None or tab is None:
        return {"url": None, "title": None, "stream": {"on": False}, "recent": recent}
    cast = session.stream.screencast
    stream = cast.status() if cast is not None else {"on": False, **frames.status()}
    title = await tab.read_title()
    return {"url": tab.page.url, "title": title, "stream": stream, "recent": recent}

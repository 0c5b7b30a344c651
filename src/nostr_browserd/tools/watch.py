"""Watching: a controller asks for the session's events (load, dialog, download…).

The tool only records the choice on the session; events are then marked as watched, and
the daemon forwards marked events to the controller who owns the session, rate-limited
and coalesced.  The local WebSocket receives every event anyway.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from .registry import Params, Registry
from .session import Session

TOOLS = Registry()
Event = Literal["load", "tab_changed", "dialog", "download", "console_error", "crash"]
EVENTS: tuple[str, ...] = get_args(Event)


class WatchParams(Params):
    """Which events, and whether to start (on) or stop watching them."""

    events: list[Event] | None = Field(None, max_length=10, description="default: all of them")
    on: bool = Field(True, description="false: stop watching these (or all)")

    @field_validator("events", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value


@TOOLS.tool("watch", family="events", gated=False, params=WatchParams, args=("*events",))
async def watch(session: Session, params: WatchParams) -> dict[str, Any]:
    """Have this session's events (load, tab_changed, dialog, download…) sent to you.

    They come as messages, at most one every few seconds, several events coalesced.
    """
    chosen = frozenset(params.events or EVENTS)
    session.watching = session.watching | chosen if params.on else session.watching - chosen
    return {"watching": sorted(session.watching)}

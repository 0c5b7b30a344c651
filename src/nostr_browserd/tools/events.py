"""Watching: a controller asks for the session's events (load, dialog, download…).

The tool only records the choice on the session; events are then marked as watched, and
the daemon forwards marked events to the controller who owns the session, rate-limited
and coalesced.  The local WebSocket receives every event anyway.

Typed: ``watch load dialog`` starts, ``watch off`` stops all, ``watch off load`` stops
one.  ``watch screen`` asks for an annotated screenshot after each command of yours that
changes the page, as a file in the chat.  JSON: ``{"events": ["load"]}`` and
``{"off": true}`` (with ``events``: only those).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from ..browser.session import Session
from ..commands.registry import Params, Registry

TOOLS = Registry()
Event = Literal["load", "tab_changed", "dialog", "download", "console_error", "crash", "screen"]
SCREEN = "screen"
"""Not an event but a picture: after each of your commands that changes the page, an
annotated screenshot (sent by the daemon as a file message; files/watch.py)."""
EVENTS: tuple[str, ...] = tuple(e for e in get_args(Event) if e != SCREEN)
"""What ``watch`` alone watches: every event, not the pictures (each costs an upload)."""


class WatchParams(Params):
    """Which events, and whether to stop watching them instead."""

    events: list[Event] | None = Field(
        None, max_length=10, description='default: all; typed "off" first stops them'
    )
    off: bool = Field(False, description="stop watching these events (or all)")

    @model_validator(mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        """Typed words: ``off load`` is ``{"off": true, "events": ["load"]}``."""
        if isinstance(value, dict) and isinstance(value.get("events"), str):
            words = value["events"].split()
            off = bool(words) and words[0].lower() == "off"
            value = {**value, "events": words[off:] or None, "off": value.get("off") or off}
        return value


@TOOLS.tool("watch", family="events", gated=False, params=WatchParams, args=("*events",))
async def watch(session: Session, params: WatchParams) -> dict[str, Any]:
    """Have this session's events (load, dialog…), or with screen its pictures, sent to you.

    Events come as messages, at most one every few seconds, several events coalesced;
    ``watch screen`` sends an annotated screenshot after each of your commands that changes
    the page, as a file in the chat.  ``watch off`` stops them all.
    """
    chosen = frozenset(params.events or (get_args(Event) if params.off else EVENTS))
    return {"watching": sorted(session.events.watch(chosen, off=params.off))}

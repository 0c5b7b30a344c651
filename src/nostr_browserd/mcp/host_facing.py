"""What each of our MCP servers tells a host the same way, with or without the MCP SDK: its
instructions, and which browser events reach the host as log notices at which level."""

from __future__ import annotations

from typing import Any, Literal

Level = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

INSTRUCTIONS = (
    "A real Chromium. Start with open (a URL), then snapshot: it lists the page with @e refs "
    "that click, fill and the other tools take as their target. Tools marked read-only change "
    "nothing; the others may need the owner's approval, and wait for it."
)
LEVELS: tuple[Level, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
EVENT_LEVELS: dict[str, Level] = {
    "dialog": "warning",
    "crashed": "error",
    "console_error": "notice",
}


def event_notice(event: dict[str, Any], floor: Level) -> tuple[Level, dict[str, Any]] | None:
    """A browser event's log level and data, or None when it is below the host's ``floor``
    (``logging/setLevel``)."""
    level = EVENT_LEVELS.get(str(event.get("event")), "info")
    if LEVELS.index(level) < LEVELS.index(floor):
        return None
    return level, {"event": event.get("event"), **(event.get("data") or {})}

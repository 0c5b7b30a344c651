"""NIP-40 expiration: ``["expiration", "<unix seconds>"]``."""

from __future__ import annotations

from . import nip01
from .nip01 import Event

__all__ = ["expiration", "expiration_tag", "is_expired"]


def expiration(event: Event) -> int | None:
    """The first expiration timestamp of ``event``; None if absent or malformed."""
    for tag in event.get("tags", ()):
        if isinstance(tag, list) and len(tag) >= 2 and tag[0] == "expiration":
            value = tag[1]
            if isinstance(value, str) and value.isascii() and value.isdigit():
                return int(value)
            return None
    return None


def is_expired(event: Event, now: int | None = None) -> bool:
    """True if ``event`` has an expiration at or before ``now`` (default: the clock)."""
    exp = expiration(event)
    if exp is None:
        return False
    return exp <= (nip01.now() if now is None else now)


def expiration_tag(ts: int) -> list[str]:
    """``["expiration", str(ts)]``."""
    return ["expiration", str(int(ts))]

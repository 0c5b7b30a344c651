"""NIP-42 relay authentication: the kind 22242 AUTH event."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .nip01 import Event, InvalidEvent, now, verify_event

__all__ = ["AUTH_KIND", "AuthError", "auth_template", "same_relay", "verify_auth"]

AUTH_KIND = 22242


class AuthError(InvalidEvent):
    """An AUTH event that does not authenticate for this relay and challenge."""


def auth_template(relay_url: str, challenge: str) -> dict[str, Any]:
    """The unsigned kind 22242 answer to ``["AUTH", challenge]`` from ``relay_url``."""
    return {
        "kind": AUTH_KIND,
        "content": "",
        "tags": [["relay", relay_url], ["challenge", challenge]],
        "created_at": now(),
    }


def _norm(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"wss": 443, "ws": 80}.get(parts.scheme.lower())
    return (
        parts.scheme.lower(),
        (parts.hostname or "").lower(),
        port if port is not None else default,
        parts.path.rstrip("/"),
    )


def same_relay(a: str, b: str) -> bool:
    """True if two relay URLs name the same relay (case, default port, trailing slash)."""
    return _norm(a) == _norm(b)


def verify_auth(
    event: Event, relay_url: str, challenge: str, max_age: int = 600, *, at: int | None = None
) -> None:
    """Raise :class:`AuthError` unless ``event`` is a valid AUTH for this relay and challenge."""
    try:
        verify_event(event)
    except InvalidEvent as exc:
        raise AuthError(exc.reason) from None
    if event["kind"] != AUTH_KIND:
        raise AuthError(f"kind is {event['kind']}, expected {AUTH_KIND}")
    tags = {t[0]: t[1] for t in reversed(event["tags"]) if len(t) >= 2}
    if tags.get("challenge") != challenge:
        raise AuthError("challenge does not match")
    if "relay" not in tags or not same_relay(tags["relay"], relay_url):
        raise AuthError("relay URL does not match")
    t = now() if at is None else at
    if abs(t - event["created_at"]) > max_age:
        raise AuthError("created_at is too far from now")

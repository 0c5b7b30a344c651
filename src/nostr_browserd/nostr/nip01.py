"""NIP-01 events: canonical serialisation, id, signing, strict verification.

A received event is trusted only after :func:`verify_event`: its shape is checked, its id
is recomputed from the content and compared with the claimed id, and the BIP-340
signature is verified over that id.  Frame helpers build the client's messages;
:func:`parse_relay_message` reads a relay's into typed messages (raising only
:class:`RelayMessageError`), and :func:`matches` checks an event against a filter, so
hostile relays can be tested without a socket.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..untrusted_json import BadJSON
from ..untrusted_json import loads as loads_json
from .errors import NostrError
from .keys import Keypair, schnorr_verify

__all__ = [
    "MAX_FRAME",
    "MAX_RELAY_TEXT",
    "Auth",
    "Closed",
    "Eose",
    "Event",
    "EventFrame",
    "InvalidEvent",
    "Notice",
    "Ok",
    "RelayMessage",
    "RelayMessageError",
    "auth_message",
    "check_shape",
    "close_message",
    "copy_of",
    "event_id",
    "event_message",
    "finalize_event",
    "is_valid",
    "matches",
    "now",
    "parse_relay_message",
    "req_message",
    "serialize",
    "tag_values",
    "verify_event",
]

Event = dict[str, Any]

_HEX = frozenset("0123456789abcdef")
_REQUIRED = ("id", "pubkey", "created_at", "kind", "tags", "content", "sig")


class InvalidEvent(NostrError):
    """An event that is malformed or whose id or signature does not check out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def now() -> int:
    """Current unix time in whole seconds."""
    return int(time.time())


def serialize(
    pubkey: str, created_at: int, kind: int, tags: Sequence[Sequence[str]], content: str
) -> str:
    """The canonical NIP-01 JSON array ``[0, pubkey, created_at, kind, tags, content]``."""
    return json.dumps(
        [0, pubkey, created_at, kind, [list(t) for t in tags], content],
        separators=(",", ":"),
        ensure_ascii=False,
    )


def event_id(
    pubkey: str, created_at: int, kind: int, tags: Sequence[Sequence[str]], content: str
) -> str:
    """sha256 of the UTF-8 canonical serialisation, as 64 lowercase hex characters."""
    try:
        data = serialize(pubkey, created_at, kind, tags, content).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidEvent("content or tags are not valid Unicode (lone surrogate)") from None
    return hashlib.sha256(data).hexdigest()


def _id_of(event: Event) -> str:
    return event_id(
        event["pubkey"], event["created_at"], event["kind"], event["tags"], event["content"]
    )


def finalize_event(template: dict[str, Any], key: Keypair | bytes) -> Event:
    """Sign ``template`` (kind, content, tags=[], created_at=now) with ``key``.

    Returns a new dict with id, pubkey, created_at, kind, tags, content and sig.  A key that
    signs often is passed as its :class:`~.keys.Keypair`, derived once.
    """
    keypair = key if isinstance(key, Keypair) else Keypair(key)
    event: Event = {
        "pubkey": keypair.pubkey,
        "created_at": template.get("created_at", now()),
        "kind": template["kind"],
        "tags": [list(t) for t in template.get("tags", [])],
        "content": template.get("content", ""),
    }
    _check_fields(event)
    event["id"] = _id_of(event)
    event["sig"] = keypair.sign(bytes.fromhex(event["id"]))
    return event


def _is_hex(value: object, length: int) -> TypeGuard[str]:
    return isinstance(value, str) and len(value) == length and set(value) <= _HEX


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_fields(event: Event) -> None:
    """Shape checks shared by signed events and rumors (everything but id and sig)."""
    if not _is_hex(event.get("pubkey"), 64):
        raise InvalidEvent("pubkey must be 64 lowercase hex characters")
    created_at = event.get("created_at")
    if not _is_int(created_at) or created_at < 0:
        raise InvalidEvent("created_at must be a non-negative integer")
    kind = event.get("kind")
    if not _is_int(kind) or not 0 <= kind <= 65535:
        raise InvalidEvent("kind must be an integer between 0 and 65535")
    tags = event.get("tags")
    if not isinstance(tags, list):
        raise InvalidEvent("tags must be a list")
    for i, tag in enumerate(tags):
        if not isinstance(tag, list) or not all(isinstance(x, str) for x in tag):
            raise InvalidEvent(f"tag {i} must be a list of strings")
    if not isinstance(event.get("content"), str):
        raise InvalidEvent("content must be a string")


def check_shape(event: object, *, require_sig: bool = True) -> None:
    """Raise :class:`InvalidEvent` unless ``event`` has every NIP-01 field, well typed.

    ``require_sig=False`` checks a rumor (an unsigned event that still has an id).
    """
    if not isinstance(event, dict):
        raise InvalidEvent("event must be a JSON object")
    required = _REQUIRED if require_sig else _REQUIRED[:-1]
    missing = [k for k in required if k not in event]
    if missing:
        raise InvalidEvent(f"missing field(s): {', '.join(missing)}")
    if not _is_hex(event["id"], 64):
        raise InvalidEvent("id must be 64 lowercase hex characters")
    if require_sig and not _is_hex(event["sig"], 128):
        raise InvalidEvent("sig must be 128 lowercase hex characters")
    _check_fields(event)


def verify_id(event: Event) -> None:
    """Raise ``InvalidEvent("id mismatch")`` unless the claimed id is the recomputed one."""
    if _id_of(event) != event["id"]:
        raise InvalidEvent("id mismatch: the id is not the hash of the event")


def verify_event(event: object) -> None:
    """Check shape, recompute and compare the id, then verify the BIP-340 signature."""
    check_shape(event)
    assert isinstance(event, dict)
    verify_id(event)
    if not schnorr_verify(bytes.fromhex(event["id"]), event["sig"], event["pubkey"]):
        raise InvalidEvent("bad signature")


def is_valid(event: object) -> bool:
    """True iff :func:`verify_event` accepts ``event``."""
    try:
        verify_event(event)
    except InvalidEvent:
        return False
    return True


def tag_values(event: Event, name: str) -> list[str]:
    """The first values of every tag named ``name`` (e.g. all ``p`` pubkeys)."""
    return [t[1] for t in event.get("tags", ()) if len(t) >= 2 and t[0] == name]


def first_tag_value(event: Event, name: str) -> str | None:
    """The value of the first ``name`` tag, or None."""
    values = tag_values(event, name)
    return values[0] if values else None


# -- client → relay frames ------------------------------------------------------------


def _frame(*parts: Any) -> str:
    return json.dumps(list(parts), separators=(",", ":"), ensure_ascii=False)


def event_message(event: Event) -> str:
    """``["EVENT", event]``."""
    return _frame("EVENT", event)


def req_message(sub_id: str, *filters: dict[str, Any]) -> str:
    """``["REQ", sub_id, filter, ...]``."""
    return _frame("REQ", sub_id, *filters)


def close_message(sub_id: str) -> str:
    """``["CLOSE", sub_id]``."""
    return _frame("CLOSE", sub_id)


def auth_message(event: Event) -> str:
    """``["AUTH", event]`` (NIP-42)."""
    return _frame("AUTH", event)


# -- relay → client frames -------------------------------------------------------------

MAX_FRAME = 1 << 20
"""The largest relay message, in bytes, that a relay pool accepts by default (``max_frame``):
whatever an event carries (a NIP-44 payload) is shorter than the frame that brought it."""

MAX_RELAY_TEXT = 300
"""Longest AUTH challenge accepted, in characters (each answer may cost a remote signer)."""


class RelayMessageError(NostrError):
    """A frame from a relay that is not a NIP-01 (or NIP-42) relay message we understand."""


@dataclass(frozen=True)
class EventFrame:
    """``["EVENT", sub_id, event]``: ``event`` is unverified (see :func:`verify_event`)."""

    sub_id: str
    event: dict[str, Any]


@dataclass(frozen=True)
class Eose:
    """``["EOSE", sub_id]``: stored events end, live ones follow."""

    sub_id: str


@dataclass(frozen=True)
class Closed:
    """``["CLOSED", sub_id, reason]``: the relay ended (or refused) a subscription."""

    sub_id: str
    reason: str


@dataclass(frozen=True)
class Ok:
    """``["OK", event_id, accepted, reason]``: the relay's answer to an EVENT or AUTH."""

    event_id: str
    accepted: bool
    reason: str


@dataclass(frozen=True)
class Notice:
    """``["NOTICE", text]``: something for a human."""

    text: str


@dataclass(frozen=True)
class Auth:
    """``["AUTH", challenge]`` (NIP-42)."""

    challenge: str


RelayMessage = EventFrame | Eose | Closed | Ok | Notice | Auth


_COPY_HEAD = re.compile(r'\["EVENT","([^"\\]{1,64})",\{"id":"([0-9a-f]{64})",')
_COPY_TAIL = re.compile(r',"sig":"([0-9a-f]{128})"\}\]')
_TAIL = len(',"sig":"') + 128 + len('"}]')


def copy_of(raw: str | bytes) -> tuple[str, str, str] | None:
    """``(sub_id, id, sig)`` of an EVENT frame read from its text without parsing it, when
    it is written the usual way: no spaces, the event's ``id`` first and its ``sig`` last
    (as relays write it); None for any other frame, which is then parsed.

    Unambiguous for such a frame: the head and tail lie outside every string of it (an
    unescaped ``"`` delimits a string, and an escaped one is preceded by ``\\``).  A relay
    that repeats the ``id`` key (JSON keeps the last) can only have its own frame taken for
    a copy of another event and dropped, which it could do by not sending it.  For telling
    apart the second relay's copy of an event already passed on: the pool's de-duplication
    then costs no JSON."""
    if not isinstance(raw, str) or not (head := _COPY_HEAD.match(raw)):
        return None
    tail = _COPY_TAIL.fullmatch(raw, len(raw) - _TAIL)
    if tail is None:
        return None
    return head[1], head[2], tail[1]


def parse_relay_message(raw: str | bytes) -> RelayMessage:
    """One frame from a relay as a typed message; anything else is a RelayMessageError."""
    try:
        message = loads_json(raw)
    except BadJSON as exc:
        raise RelayMessageError(str(exc)) from None
    match message:
        case ["EVENT", str(sub_id), dict(event)]:
            return EventFrame(sub_id, event)
        case ["EOSE", str(sub_id)]:
            return Eose(sub_id)
        case ["CLOSED", str(sub_id), str(reason)]:
            return Closed(sub_id, reason)
        case ["OK", str(event_id), bool(accepted), str(reason)]:
            return Ok(event_id, accepted, reason)
        case ["NOTICE", str(text)]:
            return Notice(text)
        case ["AUTH", str(challenge)] if len(challenge) <= MAX_RELAY_TEXT:
            return Auth(challenge)
    verb = message[0] if isinstance(message, list) and message else None
    name = repr(verb)[:40] if isinstance(verb, str) else "a frame"
    raise RelayMessageError(f"{name} that is not a relay message we understand")


def matches(filter_: dict[str, Any], event: Event) -> bool:
    """True if ``event`` matches one NIP-01 filter (``limit`` is the relay's business)."""
    for key, wanted in filter_.items():
        if key == "ids" and event["id"] not in wanted:
            return False
        if key == "authors" and event["pubkey"] not in wanted:
            return False
        if key == "kinds" and event["kind"] not in wanted:
            return False
        if key == "since" and event["created_at"] < wanted:
            return False
        if key == "until" and event["created_at"] > wanted:
            return False
        if key.startswith("#") and len(key) == 2:
            values = {t[1] for t in event["tags"] if len(t) >= 2 and t[0] == key[1]}
            if values.isdisjoint(wanted):
                return False
    return True

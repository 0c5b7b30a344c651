"""Never trust a remote signer's output: check every signed event it returns.

A bunker or an n_signer could be buggy, compromised or simply holding another key; an
event it signs is accepted only if it verifies, is by the expected pubkey and is the
event we asked for.
"""

from __future__ import annotations

from typing import Any

from ..errors import BrowserdError, ErrorCode
from ..nostr.keys import is_valid_pubkey
from ..nostr.nip01 import InvalidEvent, now, verify_event
from ..untrusted_json import loads as loads_json

__all__ = ["checked_event", "checked_pubkey", "unsigned_event"]


def unsigned_event(template: dict[str, Any], pubkey: str) -> dict[str, Any]:
    """The event a remote signer is asked to sign: the template completed for ``pubkey``."""
    return {
        "pubkey": pubkey,
        "created_at": template.get("created_at", now()),
        "kind": template["kind"],
        "tags": [list(t) for t in template.get("tags", [])],
        "content": template.get("content", ""),
    }


def checked_pubkey(value: object, who: str) -> str:
    """``value`` if it is a valid x-only pubkey in hex, else ``SIGNER_ERROR``."""
    if isinstance(value, str) and is_valid_pubkey(value.lower()):
        return value.lower()
    raise BrowserdError(ErrorCode.SIGNER_ERROR, f"{who} returned an invalid public key")


def checked_event(
    result: str | dict[str, Any], template: dict[str, Any], pubkey: str, who: str
) -> dict[str, Any]:
    """The signed event in ``result`` if it is valid, by ``pubkey`` and matches ``template``."""
    try:
        event = loads_json(result) if isinstance(result, str) else result
    except ValueError:
        raise BrowserdError(ErrorCode.SIGNER_ERROR, f"{who} returned a non-JSON event") from None
    try:
        verify_event(event)
    except InvalidEvent as exc:
        raise BrowserdError(
            ErrorCode.SIGNER_ERROR, f"{who} returned an invalid signed event: {exc.reason}"
        ) from None
    if event["pubkey"] != pubkey:
        raise BrowserdError(
            ErrorCode.SIGNER_ERROR,
            f"{who} signed with key {event['pubkey'][:16]}…, not the logged-in key "
            f"{pubkey[:16]}…: refusing the event",
        )
    for name in ("kind", "content", "tags", "created_at"):
        if name in template and event[name] != template[name]:
            raise BrowserdError(
                ErrorCode.SIGNER_ERROR, f"{who} changed the event's {name}: refusing the event"
            )
    return event

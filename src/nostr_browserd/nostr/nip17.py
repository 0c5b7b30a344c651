"""NIP-17 private direct messages: kind 14 rumors sealed and gift-wrapped per recipient."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .keys import is_valid_pubkey
from .nip01 import Event, now
from .nip59 import UnwrapError, Unwrapped, make_rumor, unwrap, wrap
from .signer import Signer

__all__ = [
    "CHAT_KIND",
    "DM_RELAYS_KIND",
    "FILE_KIND",
    "inbox_relays",
    "inbox_relays_event_template",
    "make_dm",
    "open_dm",
]

CHAT_KIND = 14
FILE_KIND = 15
DM_RELAYS_KIND = 10050


async def make_dm(
    signer: Signer,
    recipients: Sequence[str],
    content: str,
    *,
    kind: int = CHAT_KIND,
    tags: Iterable[Sequence[str]] = (),
    reply_to: str | None = None,
    copy_to_self: bool = True,
    expiration: int | None = None,
) -> list[tuple[str, Event]]:
    """Gift wraps of one message: ``[(recipient_pubkey, wrap), ...]``.

    The rumor carries ``["p", r]`` for every recipient, then ``tags``, then
    ``["e", reply_to]``. One wrap per recipient, plus one to the sender itself when
    ``copy_to_self`` (so the sender's other devices see the message). Each wrap is
    sealed separately, so each recipient can only open its own.
    """
    if not recipients:
        raise ValueError("a direct message needs at least one recipient")
    for r in recipients:
        if not is_valid_pubkey(r):
            raise ValueError("recipient is not a valid public key (64 lowercase hex)")
    if reply_to is not None and not (
        isinstance(reply_to, str)
        and len(reply_to) == 64
        and set(reply_to) <= set("0123456789abcdef")
    ):
        raise ValueError("reply_to must be an event id (64 lowercase hex)")
    me = await signer.public_key()
    rumor_tags = [["p", r] for r in dict.fromkeys(recipients)]
    rumor_tags += [list(t) for t in tags]
    if reply_to is not None:
        rumor_tags.append(["e", reply_to])
    rumor = make_rumor(me, kind, content, rumor_tags, created_at=now())
    targets = list(dict.fromkeys(recipients))
    if copy_to_self and me not in targets:
        targets.append(me)
    return [(r, await wrap(rumor, signer, r, expiration=expiration)) for r in targets]


async def open_dm(
    wrap_event: Event,
    signer: Signer,
    *,
    kinds: Iterable[int] | None = None,
    verified: bool = False,
) -> Unwrapped:
    """Unwrap a NIP-17 message; ``.sender`` is the authenticated author.

    ``kinds`` optionally restricts the rumor kinds accepted (e.g. ``{14, 15}``); ``verified``:
    the wrap came from a RelayPool subscription (see :mod:`.nip59`).
    """
    opened = await unwrap(wrap_event, signer, verified=verified)
    if kinds is not None and opened.rumor["kind"] not in set(kinds):
        raise UnwrapError(f"rumor: kind {opened.rumor['kind']} is not a direct message")
    return opened


def inbox_relays_event_template(relays: Iterable[str]) -> dict[str, Any]:
    """Kind 10050 (the user's DM inbox relays) with one ``["relay", url]`` tag each."""
    return {
        "kind": DM_RELAYS_KIND,
        "content": "",
        "tags": [["relay", url] for url in dict.fromkeys(relays)],
        "created_at": now(),
    }


def inbox_relays(event: Event) -> list[str]:
    """The relay URLs of a kind 10050 event (empty if it is another kind)."""
    if event.get("kind") != DM_RELAYS_KIND:
        return []
    return [t[1] for t in event.get("tags", ()) if len(t) >= 2 and t[0] == "relay"]

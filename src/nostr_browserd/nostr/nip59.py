"""NIP-59 gift wrap: rumor (unsigned) → seal (kind 13, by the author) → wrap (kind 1059).

Sealing goes through a :class:`~.signer.Signer` so a bunker can seal; wrapping uses a
fresh local one-time key, derived once. :func:`unwrap` authenticates the sender: both
signatures are verified, the seal's pubkey must equal the rumor's pubkey and the rumor id must
recompute. Authorise on :attr:`Unwrapped.sender` only.

A wrap delivered by a :class:`~.relay.RelayPool` subscription had its id and signature verified
there, before it was de-duplicated (a relay's badly signed copy must not shadow a good one);
``verified=True`` says so and spares the second verification.  The daemon's inbox passes it
too for a wrap whose id alone its subscription checked (``unverified``): it verifies the
wrap itself before it opens the seal, and a worker that does not open it never needs to.  The
seal's is never spared: it is what authenticates the sender.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from ..untrusted_json import BadJSON
from ..untrusted_json import loads as loads_json
from . import nip44
from .errors import NostrError
from .keys import Keypair, is_valid_pubkey
from .nip01 import Event, InvalidEvent, check_shape, event_id, finalize_event, now, verify_event
from .signer import KeySigner, Signer

__all__ = [
    "GIFT_WRAP_KIND",
    "MAX_TWEAK",
    "SEAL_KIND",
    "UnwrapError",
    "Unwrapped",
    "gift_wrap",
    "make_rumor",
    "open_seal",
    "random_past",
    "seal",
    "unwrap",
    "unwrap_seal",
    "unwrap_seal_now",
    "wrap",
]

SEAL_KIND = 13
GIFT_WRAP_KIND = 1059
# Seal and wrap timestamps are pushed up to two days into the past (NIP-59).
MAX_TWEAK = 2 * 24 * 60 * 60


class UnwrapError(NostrError):
    """A gift wrap that cannot be opened or does not authenticate its sender."""


@dataclass(frozen=True)
class Unwrapped:
    """An opened gift wrap. ``sender`` is the authenticated author (seal pubkey == rumor pubkey)."""

    wrap: Event
    seal: Event
    rumor: Event
    sender: str


def random_past(base: int | None = None) -> int:
    """A timestamp uniformly up to two days before ``base`` (default now)."""
    return (now() if base is None else base) - secrets.randbelow(MAX_TWEAK)


def _dumps(event: Event) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def make_rumor(
    pubkey: str,
    kind: int,
    content: str,
    tags: list[list[str]] | tuple[list[str], ...] = (),
    created_at: int | None = None,
) -> Event:
    """An unsigned event with its id: what gets sealed. ``created_at`` is the real time."""
    rumor: Event = {
        "pubkey": pubkey,
        "created_at": now() if created_at is None else created_at,
        "kind": kind,
        "tags": [list(t) for t in tags],
        "content": content,
    }
    rumor["id"] = event_id(
        rumor["pubkey"], rumor["created_at"], rumor["kind"], rumor["tags"], rumor["content"]
    )
    check_shape(rumor, require_sig=False)
    return rumor


async def seal(
    rumor: Event, signer: Signer, recipient_pubkey: str, *, created_at: int | None = None
) -> Event:
    """Kind 13: the rumor NIP-44-encrypted to ``recipient_pubkey`` and signed by ``signer``.

    Tags are empty and ``created_at`` is randomised (up to two days back). A ``sig`` on
    the rumor is stripped: a rumor must stay deniable.
    """
    if not is_valid_pubkey(recipient_pubkey):
        raise ValueError("recipient is not a valid public key")
    author = await signer.public_key()
    if rumor.get("pubkey") != author:
        raise ValueError("the rumor's pubkey is not the signer's public key")
    body = {k: v for k, v in rumor.items() if k != "sig"}
    content = await signer.nip44_encrypt(recipient_pubkey, _dumps(body))
    template = {
        "kind": SEAL_KIND,
        "content": content,
        "tags": [],
        "created_at": random_past() if created_at is None else created_at,
    }
    return await signer.sign_event(template)


def gift_wrap(
    seal_event: Event,
    recipient_pubkey: str,
    *,
    expiration: int | None = None,
    created_at: int | None = None,
) -> Event:
    """Kind 1059: the seal NIP-44-encrypted to the recipient under a one-time key.

    Tags: ``["p", recipient]`` and, if given, a NIP-40 ``["expiration", ts]``.
    """
    if not is_valid_pubkey(recipient_pubkey):
        raise ValueError("recipient is not a valid public key")
    one_time = Keypair.generate()
    conv = nip44.conversation_key(one_time.secret, recipient_pubkey)
    tags = [["p", recipient_pubkey]]
    if expiration is not None:
        tags.append(["expiration", str(int(expiration))])
    return finalize_event(
        {
            "kind": GIFT_WRAP_KIND,
            "content": nip44.encrypt(_dumps(seal_event), conv),
            "tags": tags,
            "created_at": random_past() if created_at is None else created_at,
        },
        one_time,
    )


async def wrap(
    rumor: Event, signer: Signer, recipient_pubkey: str, *, expiration: int | None = None
) -> Event:
    """Seal ``rumor`` with ``signer`` and gift-wrap it to ``recipient_pubkey``."""
    sealed = await seal(rumor, signer, recipient_pubkey)
    return gift_wrap(sealed, recipient_pubkey, expiration=expiration)


def _parse(text: str, what: str) -> dict[str, Any]:
    try:
        value = loads_json(text)
    except BadJSON:
        raise UnwrapError(f"{what} is not valid JSON") from None
    if not isinstance(value, dict):
        raise UnwrapError(f"{what} is not a JSON object")
    return value


def _check(event: Event, kind: int, layer: str, *, verified: bool = False) -> None:
    """Verify one signed layer (wrap or seal) and check its kind.

    ``verified``: its id and signature were verified already; its shape is checked again.
    """
    try:
        check_shape(event) if verified else verify_event(event)
    except InvalidEvent as exc:
        raise UnwrapError(f"{layer}: {exc.reason}") from None
    if event["kind"] != kind:
        raise UnwrapError(f"{layer}: kind is {event['kind']}, expected {kind}")


async def _open(
    event: Event, kind: int, layer: str, signer: Signer, *, verified: bool = False
) -> str:
    """Verify one signed layer (wrap or seal), check its kind, and decrypt its content."""
    _check(event, kind, layer, verified=verified)
    try:
        return await signer.nip44_decrypt(event["pubkey"], event["content"])
    except ValueError as exc:
        raise UnwrapError(f"{layer}: cannot decrypt ({exc})") from None


def _seal_in(opened: str) -> Event:
    """The seal a wrap's decrypted content holds, its pubkey a key (not yet its signer's)."""
    seal_event = _parse(opened, "seal")
    if not is_valid_pubkey(seal_event.get("pubkey")):
        raise UnwrapError("seal: pubkey is not a valid public key")
    return seal_event


async def unwrap_seal(wrap_event: Event, signer: Signer, *, verified: bool = False) -> Event:
    """The seal inside a gift wrap: one decryption, the seal's signature not yet checked.

    Its ``pubkey`` names the claimed sender, enough to drop a stranger's message before
    paying for the second decryption; trust it only once :func:`open_seal` returned.
    ``verified``: the wrap came from a RelayPool subscription (see the module's docstring).
    """
    return _seal_in(await _open(wrap_event, GIFT_WRAP_KIND, "gift wrap", signer, verified=verified))


def unwrap_seal_now(wrap_event: Event, signer: KeySigner, *, verified: bool = False) -> Event:
    """:func:`unwrap_seal` with a key held in this process, without an ``await``: what a
    caller that cannot wait (a relay subscription's sink) may do as the wrap arrives."""
    _check(wrap_event, GIFT_WRAP_KIND, "gift wrap", verified=verified)
    try:
        opened = signer.nip44_decrypt_now(wrap_event["pubkey"], wrap_event["content"])
    except ValueError as exc:
        raise UnwrapError(f"gift wrap: cannot decrypt ({exc})") from None
    return _seal_in(opened)


async def open_seal(wrap_event: Event, seal_event: Event, signer: Signer) -> Unwrapped:
    """Verify and decrypt the seal from :func:`unwrap_seal`; authenticate the rumor's author."""
    rumor_json = await _open(seal_event, SEAL_KIND, "seal", signer)
    rumor = _parse(rumor_json, "rumor")
    try:
        check_shape({"id": "0" * 64, **rumor}, require_sig=False)
        computed = event_id(
            rumor["pubkey"], rumor["created_at"], rumor["kind"], rumor["tags"], rumor["content"]
        )
        # Some clients omit the rumor id; compute it so the checks below still bind it.
        if rumor.setdefault("id", computed) != computed:
            raise InvalidEvent("id mismatch: the id is not the hash of the event")
    except InvalidEvent as exc:
        raise UnwrapError(f"rumor: {exc.reason}") from None
    if rumor["pubkey"] != seal_event["pubkey"]:
        raise UnwrapError("forged sender: the rumor's pubkey differs from the seal's signer")
    return Unwrapped(wrap=wrap_event, seal=seal_event, rumor=rumor, sender=seal_event["pubkey"])


async def unwrap(wrap_event: Event, signer: Signer, *, verified: bool = False) -> Unwrapped:
    """Open a gift wrap addressed to ``signer`` and authenticate the sender.

    Checks, in order: the wrap's shape, id and signature (unless ``verified``), kind 1059;
    decryption; the seal's shape, id, signature and kind 13; decryption; the rumor's shape
    and id; and that the seal's pubkey equals the rumor's pubkey. Any failure is an
    :class:`UnwrapError` naming the step.
    """
    seal_event = await unwrap_seal(wrap_event, signer, verified=verified)
    return await open_seal(wrap_event, seal_event, signer)

"""Data of any size sealed to the daemon's key: its own AES key sealed by NIP-44, the data
under AES-256-GCM.

What the store keeps of a browser session (cookies, HttpOnly tokens, local storage) and of an
``ask`` conversation (page text the model read) is sealed here.  NIP-44 holds at most 64 KiB
and, with a bunker or an n_signer, each seal is a round trip or a prompt, while a saved state
can hold megabytes and is saved after every command when workers share the store.  So each
row's data is encrypted under a key of its own, and that key is sealed (``login/sealed.py``,
as the vault's entries) together with what the data is: its kind, owner and name.  The same
three are the cipher's associated data, so a row copied to another owner or name, or edited,
does not open.  The key made or opened for a row is kept in memory (:class:`Envelopes`):
saving the same state again costs no round trip to the signer.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from typing import Any, TypeGuard

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import BrowserdError, ErrorCode
from ..nostr.signer import Signer
from .sealed import NOT_LOGGED_IN, Unreadable, seal, unseal

NONCE = 12
# (our pubkey, kind, owner, name) -> the row's sealed key (its nip44 text) and the key
Opened = dict[tuple[str, str, str, str], tuple[str, bytes]]


def is_sealed(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a stored value is an envelope (else: plaintext an older release wrote)."""
    return isinstance(value, dict) and {"to", "nip44", "gcm"} <= value.keys()


class Envelopes:
    """Seals and opens data of ``kind`` for an owner and a name, through ``signer()`` now."""

    def __init__(self, signer: Callable[[], Signer | None]) -> None:
        self.signer = signer
        self._opened: Opened = {}

    async def seal(
        self, kind: str, owner: str, name: str, data: Any, *, instead: str
    ) -> dict[str, str]:
        """``data`` (JSON-ready) as ``{"to", "nip44", "gcm"}``; a read-only identity (or none)
        is refused, with ``instead`` appended: nothing is ever kept in plaintext."""
        signer = self.signer()
        if signer is None:
            raise BrowserdError(
                ErrorCode.NOT_LOGGED_IN,
                "No identity is logged in to encrypt it, and nothing is stored in plaintext: "
                + instead,
            )
        me = await signer.public_key()
        known = self._opened.get((me, kind, owner, name))
        if known is None:
            key = AESGCM.generate_key(bit_length=256)
            what = {
                "kind": kind,
                "owner": owner,
                "name": name,
                "key": base64.b64encode(key).decode(),
            }
            envelope = await seal(signer, what, instead=instead)
            known = self._opened[(me, kind, owner, name)] = (envelope["nip44"], key)
        nonce = os.urandom(NONCE)
        plain = json.dumps(data, ensure_ascii=False).encode()
        sealed = AESGCM(known[1]).encrypt(nonce, plain, _bound(kind, owner, name))
        return {"to": me, "nip44": known[0], "gcm": base64.b64encode(nonce + sealed).decode()}

    async def open(self, kind: str, owner: str, name: str, envelope: dict[str, Any]) -> Any:
        """What :meth:`seal` put in ``envelope`` for this kind, owner and name.

        Raises :class:`Unreadable` when it is another identity's, another row's, or damaged,
        and the signer's own error (a bunker that said no) as it came.
        """
        signer = self.signer()
        if signer is None:
            raise BrowserdError(ErrorCode.NOT_LOGGED_IN, NOT_LOGGED_IN)
        me = await signer.public_key()
        key = await self._key(signer, me, (kind, owner, name), envelope)
        try:
            blob = base64.b64decode(str(envelope["gcm"]), validate=True)
            plain = AESGCM(key).decrypt(blob[:NONCE], blob[NONCE:], _bound(kind, owner, name))
            return json.loads(plain)
        except (InvalidTag, ValueError):
            raise Unreadable("it was sealed for another row, or edited") from None

    async def _key(
        self, signer: Signer, me: str, row: tuple[str, str, str], envelope: dict[str, Any]
    ) -> bytes:
        """The row's key: known already, or opened now (and then kept for its next save)."""
        known = self._opened.get((me, *row))
        if known is not None and known[0] == envelope.get("nip44"):
            return known[1]
        what = await unseal(signer, envelope)
        if (what.get("kind"), what.get("owner"), what.get("name")) != row:
            raise Unreadable("it was sealed for another owner or name")
        try:
            key = base64.b64decode(str(what.get("key")), validate=True)
        except ValueError:
            raise Unreadable("it holds no key") from None
        if len(key) != 32:
            raise Unreadable("it holds no key")
        self._opened[(me, *row)] = (str(envelope["nip44"]), key)
        return key


def _bound(kind: str, owner: str, name: str) -> bytes:
    """The associated data: what the row is, so that it opens as nothing else."""
    return json.dumps([kind, owner, name]).encode()

"""A read-only identity: a public key with no way to sign, encrypt or decrypt.

It lets the daemon start, serve its local control channel and report status for an
npub, while every operation that needs the secret key fails in one place, clearly.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import Bech32Error, parse_pubkey

__all__ = ["READ_ONLY_MESSAGE", "ReadOnlySigner"]

READ_ONLY_MESSAGE = (
    "this identity is read-only (logged in with an npub): it cannot sign, encrypt or "
    "decrypt, so it cannot read or answer direct messages. Log in with a key, a seed, "
    "a bunker or an n_signer to do that."
)


class ReadOnlySigner:
    """A :class:`~nostr_browserd.nostr.signer.Signer` that only knows its public key."""

    __slots__ = ("_pubkey",)

    def __init__(self, pubkey: str) -> None:
        """``pubkey``: ``npub1…``, ``nprofile1…`` or 64 hex characters."""
        try:
            self._pubkey = parse_pubkey(pubkey)
        except Bech32Error as exc:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, f"read-only login: {exc}") from None

    def __repr__(self) -> str:
        return f"ReadOnlySigner(pubkey={self._pubkey})"

    async def public_key(self) -> str:
        return self._pubkey

    def _refuse(self) -> NoReturn:
        raise BrowserdError(ErrorCode.READ_ONLY_IDENTITY, READ_ONLY_MESSAGE)

    async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
        self._refuse()

    async def nip04_encrypt(self, pubkey: str, plaintext: str) -> str:
        self._refuse()

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str:
        self._refuse()

    async def nip44_encrypt(self, pubkey: str, plaintext: str) -> str:
        self._refuse()

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str:
        self._refuse()

"""The Signer half shared by every signer that keeps the key elsewhere (bunker, n_signer).

Each forwards a call by its NIP-46 method name over its own channel and checks what comes
back; only the channel differs, so subclasses provide ``_call`` and a name for messages.
"""

from __future__ import annotations

import json
from typing import Any

from .verify import checked_event, checked_pubkey, unsigned_event


class RemoteSigner:
    """A :class:`~nostr_browserd.nostr.signer.Signer` answering through ``_call``."""

    _who = "the remote signer"
    _user: str | None = None  # the user's key, asked once

    async def _call(self, method: str, *params: str) -> str:
        """Send one NIP-46 method call and return its result (errors as BrowserdError)."""
        raise NotImplementedError

    async def public_key(self) -> str:
        if self._user is None:
            self._user = checked_pubkey(await self._call("get_public_key"), self._who)
        return self._user

    async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
        pubkey = await self.public_key()
        unsigned = unsigned_event(template, pubkey)
        result = await self._call("sign_event", json.dumps(unsigned))
        return checked_event(result, unsigned, pubkey, self._who)

    async def nip04_encrypt(self, pubkey: str, plaintext: str) -> str:
        return await self._call("nip04_encrypt", pubkey, plaintext)

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str:
        return await self._call("nip04_decrypt", pubkey, ciphertext)

    async def nip44_encrypt(self, pubkey: str, plaintext: str) -> str:
        return await self._call("nip44_encrypt", pubkey, plaintext)

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str:
        return await self._call("nip44_decrypt", pubkey, ciphertext)

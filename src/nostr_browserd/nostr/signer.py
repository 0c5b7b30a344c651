"""The one interface for everything that signs, encrypts or decrypts.

A local key, a NIP-46 bunker and an n_signer over qrexec all implement it, so every
caller works the same whatever the login.  ``nostr/`` only defines the shape;
``login/`` provides the implementations (``KeySigner`` lives in ``nostr/keys.py``
because gift wraps need throw-away keys too).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

Event = dict[str, Any]


@runtime_checkable
class Signer(Protocol):
    """Async signer: every method may cross a network or a qrexec channel."""

    async def public_key(self) -> str:
        """The x-only public key, 64 lowercase hex characters."""
        ...

    async def sign_event(self, template: Event) -> Event:
        """Sign ``{kind, content, tags, created_at}``; return it with pubkey, id and sig."""
        ...

    async def nip04_encrypt(self, pubkey: str, plaintext: str) -> str: ...

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str: ...

    async def nip44_encrypt(self, pubkey: str, plaintext: str) -> str: ...

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str: ...

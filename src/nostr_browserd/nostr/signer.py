"""The one interface for everything that signs, encrypts or decrypts.

A local key, a NIP-46 bunker and an n_signer over qrexec all implement it, so every
caller works the same whatever the login.  :class:`KeySigner`, the local key, lives here
beside the protocol (gift wraps need throw-away keys too); ``login/`` provides the
remote implementations.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from . import nip01, nip04, nip44
from .conversations import ConversationKeys
from .keys import Keypair, generate_secret

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


class KeySigner:
    """A :class:`Signer` backed by a secret key held in this process.

    Its keypair is derived once, and its NIP-44 conversation keys are computed once per peer
    (:class:`~.conversations.ConversationKeys`) and forgotten by :meth:`aclose`.
    """

    __slots__ = ("_conversations", "_keypair", "_pubkey", "_seckey")

    def __init__(self, seckey: bytes) -> None:
        self._keypair = Keypair(seckey)
        self._seckey = self._keypair.secret
        self._pubkey = self._keypair.pubkey
        self._conversations = ConversationKeys(self._seckey)

    @classmethod
    def generate(cls) -> KeySigner:
        """A signer with a fresh random key (gift-wrap one-time keys, tests)."""
        return cls(generate_secret())

    @property
    def pubkey(self) -> str:
        """The x-only public key, synchronously (it is known locally)."""
        return self._pubkey

    @property
    def secret(self) -> bytes:
        """The raw secret; for code that must derive from it (ECDH) in this process."""
        return self._seckey

    def __repr__(self) -> str:
        return f"KeySigner(pubkey={self._pubkey})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("KeySigner holds a secret key and cannot be pickled")

    async def public_key(self) -> str:
        return self._pubkey

    def sign_event_sync(self, template: dict[str, Any]) -> dict[str, Any]:
        """Synchronous ``sign_event``."""
        return nip01.finalize_event(template, self._keypair)

    async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
        return self.sign_event_sync(template)

    async def nip04_encrypt(self, pubkey: str, plaintext: str) -> str:
        return nip04.encrypt(self._seckey, pubkey, plaintext)

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str:
        return nip04.decrypt(self._seckey, pubkey, ciphertext)

    async def nip44_encrypt(self, pubkey: str, plaintext: str) -> str:
        return nip44.encrypt(plaintext, self._conversations.get(pubkey))

    def nip44_decrypt_now(self, pubkey: str, ciphertext: str) -> str:
        """Synchronous ``nip44_decrypt`` (a key held here never waits)."""
        return nip44.decrypt(ciphertext, self._conversations.get(pubkey))

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str:
        return self.nip44_decrypt_now(pubkey, ciphertext)

    async def aclose(self) -> None:
        """Logged out or switched away: forget the conversation keys computed with this key."""
        self._conversations.clear()

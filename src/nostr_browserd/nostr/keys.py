"""secp256k1 keys: generation, x-only public keys, BIP-340 Schnorr, unhashed ECDH.

Everything here is a thin, strict layer over coincurve (libsecp256k1). Secrets are
``bytes`` of length 32; public keys are 64 lowercase hex characters (x-only, BIP-340).
``KeySigner`` is the local-key implementation of the :class:`~.signer.Signer` protocol.
"""

from __future__ import annotations

import secrets
from typing import Any

from coincurve import PrivateKey, PublicKey, PublicKeyXOnly

__all__ = [
    "KeySigner",
    "generate_secret",
    "is_valid_pubkey",
    "is_valid_secret",
    "public_key_hex",
    "schnorr_sign",
    "schnorr_verify",
    "shared_x",
]

# Order of the secp256k1 group.
CURVE_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141

_HEX = frozenset("0123456789abcdef")


def _is_lower_hex(s: object, length: int) -> bool:
    return isinstance(s, str) and len(s) == length and set(s) <= _HEX


def is_valid_secret(seckey: object) -> bool:
    """True if ``seckey`` is 32 bytes encoding an integer in [1, n-1]."""
    if not isinstance(seckey, bytes | bytearray) or len(seckey) != 32:
        return False
    return 0 < int.from_bytes(seckey, "big") < CURVE_N


def _check_secret(seckey: object) -> bytes:
    if not is_valid_secret(seckey):
        # Never echo the value: it may be a real secret that is merely mis-sized.
        raise ValueError("invalid secret key: expected 32 bytes in the range 1..n-1")
    return bytes(seckey)  # type: ignore[arg-type]


def generate_secret() -> bytes:
    """A fresh, uniformly random valid secp256k1 secret key (32 bytes)."""
    while True:
        candidate = secrets.token_bytes(32)
        if is_valid_secret(candidate):
            return candidate


def public_key_hex(seckey: bytes) -> str:
    """The x-only (BIP-340) public key of ``seckey`` as 64 lowercase hex characters."""
    sk = PrivateKey(_check_secret(seckey))
    return sk.public_key_xonly.format().hex()


def is_valid_pubkey(pubkey_hex: object) -> bool:
    """True if ``pubkey_hex`` is 64 lowercase hex chars naming a point on the curve."""
    if not _is_lower_hex(pubkey_hex, 64):
        return False
    try:
        PublicKeyXOnly(bytes.fromhex(pubkey_hex))  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


def _lift_x(pubkey_hex: str) -> PublicKey:
    """The even-y point with x-coordinate ``pubkey_hex``; ValueError if there is none."""
    if not _is_lower_hex(pubkey_hex, 64):
        raise ValueError("invalid public key: expected 64 lowercase hex characters")
    try:
        return PublicKey(b"\x02" + bytes.fromhex(pubkey_hex))
    except ValueError:
        raise ValueError("invalid public key: not a point on secp256k1") from None


def shared_x(seckey: bytes, pubkey_hex: str) -> bytes:
    """Unhashed ECDH: the 32-byte x-coordinate of ``seckey · lift_x(pubkey)``.

    This is the shared secret of NIP-04 and the input keying material of NIP-44
    (coincurve's ``ecdh()`` hashes, which is what neither NIP wants).
    """
    point = _lift_x(pubkey_hex)
    return point.multiply(_check_secret(seckey)).format(compressed=True)[1:]


def schnorr_sign(msg32: bytes, seckey: bytes, aux_rand: bytes | None = None) -> str:
    """BIP-340 signature of the 32-byte ``msg32`` as 128 hex characters.

    ``aux_rand`` defaults to 32 fresh random bytes (as BIP-340 recommends); tests pass the
    vector's value to reproduce a signature exactly.
    """
    if not isinstance(msg32, bytes | bytearray) or len(msg32) != 32:
        raise ValueError("message to sign must be 32 bytes")
    aux = secrets.token_bytes(32) if aux_rand is None else aux_rand
    return PrivateKey(_check_secret(seckey)).sign_schnorr(bytes(msg32), aux).hex()


def schnorr_verify(msg32: bytes, sig_hex: str, pubkey_hex: str) -> bool:
    """True iff ``sig_hex`` is a valid BIP-340 signature of ``msg32`` by ``pubkey_hex``.

    Never raises: malformed input of any kind is simply not a valid signature.
    """
    try:
        if not isinstance(msg32, bytes | bytearray) or len(msg32) != 32:
            return False
        if not isinstance(sig_hex, str) or len(sig_hex) != 128:
            return False
        if not isinstance(pubkey_hex, str) or len(pubkey_hex) != 64:
            return False
        sig = bytes.fromhex(sig_hex)
        pk = PublicKeyXOnly(bytes.fromhex(pubkey_hex))
        return pk.verify(sig, bytes(msg32))
    except (ValueError, TypeError):
        return False


class KeySigner:
    """A :class:`~.signer.Signer` backed by a secret key held in this process."""

    __slots__ = ("_pubkey", "_seckey")

    def __init__(self, seckey: bytes) -> None:
        self._seckey = _check_secret(seckey)
        self._pubkey = public_key_hex(self._seckey)

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
        from .nip01 import finalize_event

        return finalize_event(template, self._seckey)

    async def sign_event(self, template: dict[str, Any]) -> dict[str, Any]:
        return self.sign_event_sync(template)

    async def nip04_encrypt(self, pubkey: str, plaintext: str) -> str:
        from . import nip04

        return nip04.encrypt(self._seckey, pubkey, plaintext)

    async def nip04_decrypt(self, pubkey: str, ciphertext: str) -> str:
        from . import nip04

        return nip04.decrypt(self._seckey, pubkey, ciphertext)

    async def nip44_encrypt(self, pubkey: str, plaintext: str) -> str:
        from . import nip44

        return nip44.encrypt(plaintext, nip44.conversation_key(self._seckey, pubkey))

    async def nip44_decrypt(self, pubkey: str, ciphertext: str) -> str:
        from . import nip44

        return nip44.decrypt(ciphertext, nip44.conversation_key(self._seckey, pubkey))

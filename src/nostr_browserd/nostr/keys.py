"""secp256k1 keys: generation, x-only public keys, BIP-340 Schnorr, unhashed ECDH.

Everything here is a thin, strict layer over coincurve (libsecp256k1). Secrets are
``bytes`` of length 32; public keys are 64 lowercase hex characters (x-only, BIP-340).
A leaf: it imports nothing from the package (``KeySigner`` lives in ``signer.py``).

A key that signs is a :class:`Keypair`, derived once: coincurve's ``PrivateKey`` derives its
public key twice when built and the keypair again, then verifies the fresh signature, on every
``sign_schnorr``.  That verification is a countermeasure against faults injected into the
signing hardware; it authenticates nothing (the signature is our own), and the relays verify
what we publish, so we sign once and move on.
"""

from __future__ import annotations

import secrets
from typing import Any, TypeGuard

from coincurve import PublicKey, PublicKeyXOnly
from coincurve._libsecp256k1 import ffi, lib
from coincurve.context import GLOBAL_CONTEXT

__all__ = [
    "Keypair",
    "check_secret",
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


def _is_lower_hex(s: object, length: int) -> TypeGuard[str]:
    return isinstance(s, str) and len(s) == length and set(s) <= _HEX


def is_valid_secret(seckey: object) -> TypeGuard[bytes | bytearray]:
    """True if ``seckey`` is 32 bytes encoding an integer in [1, n-1]."""
    if not isinstance(seckey, bytes | bytearray) or len(seckey) != 32:
        return False
    return 0 < int.from_bytes(seckey, "big") < CURVE_N


def check_secret(seckey: object) -> bytes:
    if not is_valid_secret(seckey):
        # Never echo the value: it may be a real secret that is merely mis-sized.
        raise ValueError("invalid secret key: expected 32 bytes in the range 1..n-1")
    return bytes(seckey)


def generate_secret() -> bytes:
    """A fresh, uniformly random valid secp256k1 secret key (32 bytes)."""
    while True:
        candidate = secrets.token_bytes(32)
        if is_valid_secret(candidate):
            return candidate


class Keypair:
    """A secret key with its libsecp256k1 keypair and x-only public key, derived once."""

    __slots__ = ("_keypair", "pubkey", "secret")

    def __init__(self, seckey: bytes) -> None:
        self.secret = check_secret(seckey)
        self._keypair = ffi.new("secp256k1_keypair *")
        if not lib.secp256k1_keypair_create(GLOBAL_CONTEXT.ctx, self._keypair, self.secret):
            raise ValueError("invalid secret key")  # unreachable: check_secret passed
        xonly = ffi.new("secp256k1_xonly_pubkey *")
        lib.secp256k1_keypair_xonly_pub(GLOBAL_CONTEXT.ctx, xonly, ffi.NULL, self._keypair)
        out = ffi.new("unsigned char[32]")
        lib.secp256k1_xonly_pubkey_serialize(GLOBAL_CONTEXT.ctx, out, xonly)
        self.pubkey: str = bytes(ffi.buffer(out, 32)).hex()

    @classmethod
    def generate(cls) -> Keypair:
        """A fresh random key: a gift wrap's one-time key, a new identity."""
        return cls(generate_secret())

    def __repr__(self) -> str:
        return f"Keypair(pubkey={self.pubkey})"

    def __reduce__(self) -> Any:
        raise TypeError("a Keypair holds a secret key and cannot be pickled")

    def sign(self, msg32: bytes, aux_rand: bytes | None = None) -> str:
        """BIP-340 signature of the 32-byte ``msg32`` as 128 hex characters.

        ``aux_rand`` defaults to 32 fresh random bytes (as BIP-340 recommends); tests pass the
        vector's value to reproduce a signature exactly.
        """
        if not isinstance(msg32, bytes | bytearray) or len(msg32) != 32:
            raise ValueError("message to sign must be 32 bytes")
        aux = secrets.token_bytes(32) if aux_rand is None else aux_rand
        if len(aux) != 32:
            raise ValueError("aux_rand must be 32 bytes")
        sig = ffi.new("unsigned char[64]")
        if not lib.secp256k1_schnorrsig_sign32(
            GLOBAL_CONTEXT.ctx, sig, bytes(msg32), self._keypair, aux
        ):
            raise ValueError("signing failed")
        return bytes(ffi.buffer(sig, 64)).hex()


def public_key_hex(seckey: bytes) -> str:
    """The x-only (BIP-340) public key of ``seckey`` as 64 lowercase hex characters."""
    return Keypair(seckey).pubkey


def is_valid_pubkey(pubkey_hex: object) -> bool:
    """True if ``pubkey_hex`` is 64 lowercase hex chars naming a point on the curve."""
    if not _is_lower_hex(pubkey_hex, 64):
        return False
    try:
        PublicKeyXOnly(bytes.fromhex(pubkey_hex))
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
    return point.multiply(check_secret(seckey)).format(compressed=True)[1:]


def schnorr_sign(msg32: bytes, seckey: bytes, aux_rand: bytes | None = None) -> str:
    """BIP-340 signature of ``msg32`` by ``seckey`` (see :meth:`Keypair.sign`)."""
    return Keypair(seckey).sign(msg32, aux_rand)


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

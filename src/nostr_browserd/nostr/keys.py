"""secp256k1 keys: generation, x-only public keys, BIP-340 Schnorr, unhashed ECDH.

Everything here is a thin, strict layer over coincurve (libsecp256k1). Secrets are
``bytes`` of length 32; public keys are 64 lowercase hex characters (x-only, BIP-340).
A leaf: it imports nothing from the package (``KeySigner`` lives in ``signer.py``).
"""

from __future__ import annotations

import secrets
from typing import TypeGuard

from coincurve import PrivateKey, PublicKey, PublicKeyXOnly

__all__ = [
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


def public_key_hex(seckey: bytes) -> str:
    """The x-only (BIP-340) public key of ``seckey`` as 64 lowercase hex characters."""
    sk = PrivateKey(check_secret(seckey))
    return sk.public_key_xonly.format().hex()


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
    """BIP-340 signature of the 32-byte ``msg32`` as 128 hex characters.

    ``aux_rand`` defaults to 32 fresh random bytes (as BIP-340 recommends); tests pass the
    vector's value to reproduce a signature exactly.
    """
    if not isinstance(msg32, bytes | bytearray) or len(msg32) != 32:
        raise ValueError("message to sign must be 32 bytes")
    aux = secrets.token_bytes(32) if aux_rand is None else aux_rand
    return PrivateKey(check_secret(seckey)).sign_schnorr(bytes(msg32), aux).hex()


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

"""NIP-04 (deprecated, still widely sent): AES-256-CBC with the unhashed ECDH x as key.

Payload: ``base64(ciphertext) + "?iv=" + base64(iv)``. There is no MAC: the sender is
authenticated only by the signature of the kind-4 event that carries the payload.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .errors import NostrError
from .keys import shared_x

__all__ = ["MAX_PAYLOAD", "Nip04Error", "decrypt", "encrypt", "looks_like_nip04"]

# A kind-4 content larger than this is refused before any work (1 MiB).
MAX_PAYLOAD = 1 << 20


class Nip04Error(NostrError):
    """A NIP-04 payload that cannot be decrypted (malformed, wrong key, bad padding)."""


def looks_like_nip04(payload: object) -> bool:
    """True if ``payload`` has NIP-04's ``?iv=`` shape (used to pick NIP-04 vs NIP-44)."""
    return isinstance(payload, str) and "?iv=" in payload


def _key(seckey: bytes, pubkey_hex: str) -> bytes:
    try:
        return shared_x(seckey, pubkey_hex)
    except ValueError as exc:
        raise Nip04Error(str(exc)) from None


def encrypt(seckey: bytes, pubkey_hex: str, plaintext: str, iv: bytes | None = None) -> str:
    """Encrypt ``plaintext`` from ``seckey`` to ``pubkey_hex``."""
    if not isinstance(plaintext, str):
        raise Nip04Error("plaintext must be a string")
    key = _key(seckey, pubkey_hex)
    iv = os.urandom(16) if iv is None else iv
    if len(iv) != 16:
        raise Nip04Error("iv must be 16 bytes")
    padder = padding.PKCS7(128).padder()
    try:
        data = padder.update(plaintext.encode("utf-8")) + padder.finalize()
    except UnicodeEncodeError:
        raise Nip04Error("plaintext is not valid Unicode") from None
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ct = enc.update(data) + enc.finalize()
    return base64.b64encode(ct).decode("ascii") + "?iv=" + base64.b64encode(iv).decode("ascii")


def decrypt(seckey: bytes, pubkey_hex: str, payload: str) -> str:
    """Decrypt a NIP-04 ``payload`` sent between ``seckey`` and ``pubkey_hex``."""
    if not isinstance(payload, str):
        raise Nip04Error("payload must be a string")
    if len(payload) > MAX_PAYLOAD:
        raise Nip04Error("payload is too large")
    ct_b64, sep, iv_b64 = payload.partition("?iv=")
    if not sep:
        raise Nip04Error("payload has no '?iv=' part: not NIP-04")
    try:
        ct = base64.b64decode(ct_b64, validate=True)
        iv = base64.b64decode(iv_b64, validate=True)
    except (binascii.Error, ValueError):
        raise Nip04Error("payload is not valid base64") from None
    if len(iv) != 16:
        raise Nip04Error("iv must be 16 bytes")
    if not ct or len(ct) % 16:
        raise Nip04Error("ciphertext length is not a positive multiple of 16")
    key = _key(seckey, pubkey_hex)
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = dec.update(ct) + dec.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        data = unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        raise Nip04Error("bad padding (wrong key or corrupted message)") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Nip04Error("decrypted text is not UTF-8 (wrong key?)") from None

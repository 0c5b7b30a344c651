"""NIP-44 v2 encryption: secp256k1 ECDH, HKDF-SHA256, ChaCha20, HMAC-SHA256, padding.

Verified against every vector in paulmillr/nip44's ``nip44.vectors.json``, and NIP-44's
extended length prefix against the spec's vectors at 65,535, 65,536 and 65,537 bytes.

Plaintexts of 65,536 bytes and more carry a 6-byte length prefix (two zero bytes, then a u32),
which nostr-tools and rust-nostr send.  We read them, up to what one relay frame can carry
(``nip01.MAX_FRAME``: no payload is longer than the frame that brought it), and write them
only when asked (``extended=True``): older clients cannot read them, so what the daemon sends
stays within :data:`MAX_PLAINTEXT`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

from .errors import NostrError
from .keys import shared_x
from .nip01 import MAX_FRAME

__all__ = [
    "EXTENDED_THRESHOLD",
    "MAX_PLAINTEXT",
    "MIN_PLAINTEXT",
    "Nip44Error",
    "calc_padded_len",
    "conversation_key",
    "decrypt",
    "encrypt",
    "message_keys",
    "pad",
    "unpad",
]

VERSION = 2
MIN_PLAINTEXT = 1
MAX_PLAINTEXT = 65535
"""The most we encrypt by default: a 2-byte length prefix, which every client reads."""
EXTENDED_THRESHOLD = 65536
"""From this length on, the plaintext's length is a 6-byte prefix: ``00 00`` and a u32."""
_MAX_EXTENDED = 0xFFFFFFFF
_SALT = b"nip44-v2"
# base64 payload length bounds (v2): 1 + 32 + (2 + 32) + 32 bytes at least; at most a frame.
_MIN_PAYLOAD_B64 = 132
_MIN_DECODED = 99


class Nip44Error(NostrError):
    """A NIP-44 input that is invalid or a payload that fails to authenticate/decrypt."""


def _hkdf_extract(salt: bytes, ikm: bytes) -> bytes:
    return hmac.new(salt, ikm, hashlib.sha256).digest()


def _hkdf_expand(prk: bytes, info: bytes, length: int) -> bytes:
    out = b""
    block = b""
    counter = 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes((counter,)), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def conversation_key(seckey: bytes, pubkey_hex: str) -> bytes:
    """HKDF-extract(salt="nip44-v2", IKM=unhashed ECDH x): symmetric between both parties."""
    try:
        x = shared_x(seckey, pubkey_hex)
    except ValueError as exc:
        raise Nip44Error(str(exc)) from None
    return _hkdf_extract(_SALT, x)


def message_keys(conv_key: bytes, nonce: bytes) -> tuple[bytes, bytes, bytes]:
    """``(chacha_key 32, chacha_nonce 12, hmac_key 32)`` for one message nonce."""
    if not isinstance(conv_key, bytes | bytearray) or len(conv_key) != 32:
        raise Nip44Error("conversation key must be 32 bytes")
    if not isinstance(nonce, bytes | bytearray) or len(nonce) != 32:
        raise Nip44Error("nonce must be 32 bytes")
    keys = _hkdf_expand(bytes(conv_key), bytes(nonce), 76)
    return keys[0:32], keys[32:44], keys[44:76]


def calc_padded_len(unpadded_len: int) -> int:
    """Padded length of a plaintext of ``unpadded_len`` bytes (min 32, power-of-two chunks)."""
    if unpadded_len < MIN_PLAINTEXT:
        raise Nip44Error("plaintext must be at least 1 byte")
    if unpadded_len <= 32:
        return 32
    next_power = 1 << ((unpadded_len - 1).bit_length())
    chunk = 32 if next_power <= 256 else next_power // 8
    return chunk * ((unpadded_len - 1) // chunk + 1)


def pad(plaintext: str, *, extended: bool = False) -> bytes:
    """Length prefix ‖ UTF-8 plaintext ‖ zeros up to :func:`calc_padded_len`.

    The prefix is a big-endian u16, or with ``extended`` from :data:`EXTENDED_THRESHOLD` bytes
    on, ``00 00`` and a u32 (which clients older than the extended length cannot read).
    """
    try:
        data = plaintext.encode("utf-8")
    except (UnicodeEncodeError, AttributeError):
        raise Nip44Error("plaintext must be a valid Unicode string") from None
    n = len(data)
    most = _MAX_EXTENDED if extended else MAX_PLAINTEXT
    if not MIN_PLAINTEXT <= n <= most:
        raise Nip44Error(f"plaintext must be 1..{most} bytes of UTF-8, got {n}")
    prefix = bytes(2) + n.to_bytes(4, "big") if n >= EXTENDED_THRESHOLD else n.to_bytes(2, "big")
    return prefix + data + bytes(calc_padded_len(n) - n)


def unpad(padded: bytes) -> str:
    """Inverse of :func:`pad`; :class:`Nip44Error` if the length prefix or padding is wrong."""
    n, start = int.from_bytes(padded[0:2], "big"), 2
    if n == 0 and len(padded) >= 6:  # the extended prefix: a u32 after two zero bytes
        n, start = int.from_bytes(padded[2:6], "big"), 6
        if n < EXTENDED_THRESHOLD:  # a length the u16 holds has one encoding only
            raise Nip44Error("invalid padding")
    if n < MIN_PLAINTEXT or len(padded) != start + calc_padded_len(n):
        raise Nip44Error("invalid padding")
    data = padded[start : start + n]
    if any(padded[start + n :]):
        raise Nip44Error("invalid padding")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Nip44Error("plaintext is not valid UTF-8") from None


def _chacha20(key: bytes, nonce12: bytes, data: bytes) -> bytes:
    # cryptography's ChaCha20 takes a 16-byte nonce: 4-byte LE counter (0) ‖ 12-byte nonce.
    cipher = Cipher(algorithms.ChaCha20(key, b"\x00\x00\x00\x00" + nonce12), mode=None)
    enc = cipher.encryptor()
    return enc.update(data) + enc.finalize()


def _hmac_aad(key: bytes, message: bytes, aad: bytes) -> bytes:
    return hmac.new(key, aad + message, hashlib.sha256).digest()


def encrypt(
    plaintext: str, conv_key: bytes, nonce: bytes | None = None, *, extended: bool = False
) -> str:
    """Encrypt ``plaintext`` under ``conv_key``; ``nonce`` (32 bytes) is random by default.

    Up to :data:`MAX_PLAINTEXT` bytes unless ``extended`` (see :func:`pad`).
    """
    nonce = os.urandom(32) if nonce is None else nonce
    chacha_key, chacha_nonce, hmac_key = message_keys(conv_key, nonce)
    ciphertext = _chacha20(chacha_key, chacha_nonce, pad(plaintext, extended=extended))
    mac = _hmac_aad(hmac_key, ciphertext, bytes(nonce))
    return base64.b64encode(bytes((VERSION,)) + bytes(nonce) + ciphertext + mac).decode("ascii")


def decode_payload(payload: str) -> tuple[bytes, bytes, bytes]:
    """Split a v2 payload into ``(nonce, ciphertext, mac)`` after all length checks."""
    if not isinstance(payload, str):
        raise Nip44Error("payload must be a string")
    if not payload:
        raise Nip44Error("payload is empty")
    if payload[0] == "#":
        raise Nip44Error("unknown encryption version (payload starts with '#')")
    if not _MIN_PAYLOAD_B64 <= len(payload) <= MAX_FRAME:
        raise Nip44Error("invalid payload length")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise Nip44Error("payload is not valid base64") from None
    if len(data) < _MIN_DECODED:
        raise Nip44Error("invalid decoded payload length")
    if data[0] != VERSION:
        raise Nip44Error(f"unknown encryption version {data[0]}")
    return data[1:33], data[33:-32], data[-32:]


def decrypt(payload: str, conv_key: bytes) -> str:
    """Authenticate and decrypt ``payload`` under ``conv_key`` (MAC compared in constant time)."""
    nonce, ciphertext, mac = decode_payload(payload)
    chacha_key, chacha_nonce, hmac_key = message_keys(conv_key, nonce)
    expected = _hmac_aad(hmac_key, ciphertext, nonce)
    if not hmac.compare_digest(expected, mac):
        raise Nip44Error("invalid MAC (wrong key or tampered message)")
    return unpad(_chacha20(chacha_key, chacha_nonce, ciphertext))

"""A file as a NIP-17 kind 15 carries it: AES-GCM encrypted, named by hashes, in tags.

The blob on the server is ``AESGCM(key).encrypt(nonce, file)`` (the 16-byte tag appended);
``x`` is the blob's sha256 (its Blossom address), ``ox`` the file's.  The key is 32 random
bytes and the nonce 16, as Amethyst sends them; a reader takes nonces of 8 to 32 bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import BrowserdError, ErrorCode

ALGORITHM = "aes-gcm"
KEY_BYTES, NONCE_BYTES = 32, 16
HEX = re.compile(r"^[0-9a-f]*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Sealed:
    """An encrypted file, ready to upload, and what its reader needs to open it."""

    blob: bytes
    key: bytes
    nonce: bytes
    x: str  # sha256 of the blob
    ox: str  # sha256 of the file
    size: int  # of the file


def seal(data: bytes) -> Sealed:
    """Encrypt ``data`` under a fresh key and nonce."""
    key, nonce = os.urandom(KEY_BYTES), os.urandom(NONCE_BYTES)
    blob = AESGCM(key).encrypt(nonce, data, None)
    return Sealed(blob, key, nonce, sha256(blob), sha256(data), len(data))


def sha256(data: bytes) -> str:
    """The hex digest Blossom and the ``x``/``ox`` tags use."""
    return hashlib.sha256(data).hexdigest()


def file_tags(sealed: Sealed, mime: str, dim: str | None) -> list[list[str]]:
    """The tags of a kind 15 for ``sealed`` (its ``p`` and ``e`` come from the DM itself)."""
    tags = [
        ["file-type", mime],
        ["encryption-algorithm", ALGORITHM],
        ["decryption-key", sealed.key.hex()],
        ["decryption-nonce", sealed.nonce.hex()],
        ["x", sealed.x],
        ["ox", sealed.ox],
        ["size", str(sealed.size)],
    ]
    return tags + ([["dim", dim]] if dim else [])


@dataclass(frozen=True)
class FileMessage:
    """What a received kind 15 says about its file, checked for shape (not yet fetched)."""

    url: str
    mime: str
    key: bytes
    nonce: bytes
    x: str
    ox: str
    name: str | None


class Unsealable(ValueError):
    """A file message (or link) that is malformed, or a blob that does not check out."""


def refused(message: str) -> BrowserdError:
    """The one error a bad file message gets: nothing was kept."""
    return BrowserdError(ErrorCode.REFUSED, f"{message} Nothing was kept; send the file again.")


def read_file_message(content: str, tags: list[list[str]]) -> FileMessage:
    """The file message's fields; :class:`Unsealable` naming the first missing or malformed
    one."""
    first = {t[0]: t[1] for t in reversed(tags) if len(t) >= 2 and isinstance(t[1], str)}
    algorithm = first.get("encryption-algorithm", "")
    if algorithm != ALGORITHM:
        raise Unsealable(f"The file is encrypted with {algorithm or 'nothing'!r}, not aes-gcm.")
    key, nonce = first.get("decryption-key", ""), first.get("decryption-nonce", "")
    if len(key) != 2 * KEY_BYTES or not HEX.match(key):
        raise Unsealable("Its decryption-key is not 32 bytes in hex.")
    if not 16 <= len(nonce) <= 64 or len(nonce) % 2 or not HEX.match(nonce):
        raise Unsealable("Its decryption-nonce is not 8 to 32 bytes in hex.")
    for name in ("x", "ox"):
        if not SHA256.match(first.get(name, "")):
            raise Unsealable(f"Its {name} tag is not a sha256.")
    url = content.strip()
    if not url.startswith(("https://", "http://")):
        raise Unsealable("Its content is not an http(s) address.")
    return FileMessage(
        url,
        first.get("file-type", "application/octet-stream"),
        bytes.fromhex(key),
        bytes.fromhex(nonce),
        first["x"],
        first["ox"],
        first.get("name"),
    )


def unseal(message: FileMessage, blob: bytes) -> bytes:
    """The file in ``blob``, after checking ``x``, the decryption and ``ox``
    (:class:`Unsealable` saying which failed)."""
    if sha256(blob) != message.x:
        raise Unsealable("The downloaded blob does not match the message's x hash.")
    try:
        data = AESGCM(message.key).decrypt(message.nonce, blob, None)
    except (InvalidTag, ValueError):
        raise Unsealable("The file does not decrypt with the message's key and nonce.") from None
    if sha256(data) != message.ox:
        raise Unsealable("The decrypted file does not match the message's ox hash.")
    return data

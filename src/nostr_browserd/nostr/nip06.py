"""NIP-06: keys from a BIP-39 mnemonic, BIP-32 path ``m/44'/1237'/<account>'/0/0``.

The words are secrets: no error message here ever contains one. A wrong or misspelt
word is reported by its 1-based position only.
"""

from __future__ import annotations

import hashlib
import hmac
import unicodedata

from coincurve import PrivateKey
from mnemonic import Mnemonic

from .errors import NostrError
from .keys import CURVE_N

__all__ = [
    "MnemonicError",
    "derive_path",
    "generate_mnemonic",
    "secret_from_mnemonic",
    "validate_mnemonic",
]

_WORD_COUNTS = (12, 15, 18, 21, 24)
_HARDENED = 0x80000000
_mnemo = Mnemonic("english")
_wordset = frozenset(_mnemo.wordlist)


class MnemonicError(NostrError):
    """A mnemonic that is not valid BIP-39 English (message never contains the words)."""


def _words(words: str) -> list[str]:
    if not isinstance(words, str):
        raise MnemonicError("the mnemonic must be a string of words")
    return unicodedata.normalize("NFKD", words).lower().split()


def validate_mnemonic(words: str) -> None:
    """Raise :class:`MnemonicError` unless ``words`` is a valid English BIP-39 mnemonic."""
    ws = _words(words)
    if len(ws) not in _WORD_COUNTS:
        raise MnemonicError(f"a mnemonic has 12, 15, 18, 21 or 24 words, not {len(ws)}")
    for i, w in enumerate(ws, 1):
        if w not in _wordset:
            raise MnemonicError(f"word {i} is not in the BIP-39 English word list (misspelt?)")
    if not _mnemo.check(" ".join(ws)):
        raise MnemonicError(
            "bad checksum: every word is valid but the last word does not match the others "
            "(a word is wrong or out of order)"
        )


def _ckd_priv(key: bytes, chain: bytes, index: int) -> tuple[bytes, bytes]:
    if index & _HARDENED:
        data = b"\x00" + key + index.to_bytes(4, "big")
    else:
        data = PrivateKey(key).public_key.format(compressed=True) + index.to_bytes(4, "big")
    digest = hmac.new(chain, data, hashlib.sha512).digest()
    il, ir = int.from_bytes(digest[:32], "big"), digest[32:]
    child = (il + int.from_bytes(key, "big")) % CURVE_N
    if il >= CURVE_N or child == 0:  # probability ~2^-127
        raise MnemonicError("this derivation path yields an invalid key; use another account")
    return child.to_bytes(32, "big"), ir


def derive_path(seed: bytes, path: list[int]) -> bytes:
    """BIP-32 private derivation of ``seed`` along ``path`` (indices, hardened ≥ 2^31)."""
    digest = hmac.new(b"Bitcoin seed", seed, hashlib.sha512).digest()
    key, chain = digest[:32], digest[32:]
    if not 0 < int.from_bytes(key, "big") < CURVE_N:
        raise MnemonicError("this seed yields an invalid master key")
    for index in path:
        key, chain = _ckd_priv(key, chain, index)
    return key


def secret_from_mnemonic(words: str, passphrase: str = "", account: int = 0) -> bytes:
    """The 32-byte secret key at ``m/44'/1237'/<account>'/0/0``."""
    validate_mnemonic(words)
    if not isinstance(account, int) or not 0 <= account < _HARDENED:
        raise MnemonicError("account must be an integer in 0..2^31-1")
    seed = Mnemonic.to_seed(" ".join(_words(words)), passphrase)
    path = [44 | _HARDENED, 1237 | _HARDENED, account | _HARDENED, 0, 0]
    return derive_path(seed, path)


def generate_mnemonic(strength: int = 128) -> str:
    """A fresh English mnemonic (128 bits → 12 words, 256 bits → 24 words)."""
    if strength not in (128, 160, 192, 224, 256):
        raise MnemonicError("strength must be 128, 160, 192, 224 or 256 bits")
    return _mnemo.generate(strength)

"""Log in with a BIP-39 mnemonic (NIP-06: ``m/44'/1237'/<account>'/0/0``).

The mnemonic's checksum is validated first, so a misspelt word is reported by its
position instead of silently deriving some other key.  Words never appear in errors.
"""

from __future__ import annotations

import os

from ..errors import BrowserdError, ErrorCode
from ..nostr.nip06 import MnemonicError, secret_from_mnemonic, validate_mnemonic
from ..nostr.signer import KeySigner
from .files import read_private_file

__all__ = ["MAX_ACCOUNT", "signer_from_mnemonic", "signer_from_seed_file"]

MAX_ACCOUNT = 2**31 - 1  # hardened BIP-32 index


def signer_from_mnemonic(
    words: str, passphrase: str = "", account: int = 0, *, source: str = "the mnemonic"
) -> KeySigner:
    """A :class:`KeySigner` for NIP-06 account ``account`` of ``words`` (+ ``passphrase``)."""
    if not isinstance(account, int) or not 0 <= account <= MAX_ACCOUNT:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"account must be an integer 0..{MAX_ACCOUNT}"
        )
    try:
        validate_mnemonic(words)
        secret = secret_from_mnemonic(words, passphrase, account)
    except MnemonicError as exc:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"{source}: {exc}") from None
    return KeySigner(secret)


def signer_from_seed_file(
    path: str | os.PathLike[str],
    passphrase: str = "",
    account: int = 0,
    *,
    passphrase_file: str | os.PathLike[str] | None = None,
) -> KeySigner:
    """Read the mnemonic (and optionally the passphrase) from owner-only files."""
    if passphrase_file is not None:
        if passphrase:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS, "give a passphrase or a passphrase file, not both"
            )
        passphrase = read_private_file(passphrase_file, strip=False)
    return signer_from_mnemonic(
        read_private_file(path), passphrase, account, source=f"seed file {os.fspath(path)}"
    )

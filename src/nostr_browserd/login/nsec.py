"""Log in with a secret key (``nsec1…`` or 64 hex) from a string, a file, the environment
or a systemd credential.  Errors name where the key came from, never the key.
"""

from __future__ import annotations

import os

from ..errors import BrowserdError, ErrorCode
from ..nostr.nip19 import Bech32Error, parse_secret
from ..nostr.signer import KeySigner
from .files import credential_path, read_private_file

__all__ = ["signer_from_credential", "signer_from_env", "signer_from_file", "signer_from_nsec"]


def signer_from_nsec(text: str, *, source: str = "the nsec parameter") -> KeySigner:
    """A :class:`KeySigner` for ``text``; ``source`` says where it came from in errors."""
    try:
        return KeySigner(parse_secret(text))
    except (Bech32Error, ValueError) as exc:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"{source} is not a usable secret key ({exc}); expected nsec1… or 64 hex characters",
        ) from None


def signer_from_file(path: str | os.PathLike[str]) -> KeySigner:
    """Read the key from ``path``, which must be private to its owner (``chmod 600``)."""
    return signer_from_nsec(read_private_file(path), source=f"key file {os.fspath(path)}")


def signer_from_env(name: str) -> KeySigner:
    """Read the key from the environment variable ``name``."""
    value = os.environ.get(name)
    if not value:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"environment variable {name} is not set or is empty"
        )
    return signer_from_nsec(value, source=f"environment variable {name}")


def signer_from_credential(name: str) -> KeySigner:
    """Read the key from the systemd credential ``name`` (``$CREDENTIALS_DIRECTORY/name``)."""
    path = credential_path(name)
    return signer_from_nsec(read_private_file(path), source=f"systemd credential {name}")

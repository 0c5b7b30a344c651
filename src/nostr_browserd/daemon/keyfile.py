"""Generated secrets on disk: created owner-only (0600) from the first byte, never overwritten.

Used for the daemon's own identity in the zero-config default, for the local channel's token
when none is configured, and by ``nostr-browserd keygen`` for a controller's key.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from ..nostr.keys import generate_secret, public_key_hex
from ..nostr.nip19 import nsec_encode

DEFAULT_IDENTITY_FILE = "identity.nsec"
DEFAULT_TOKEN_FILE = "local-token"


def _write_private(path: Path, text: str) -> None:
    """Create ``path`` with ``text``, mode 0600 from creation; ``O_EXCL`` never replaces one.

    An empty owner-only file is a slot waiting for its key (``make install`` leaves
    /etc/nostr-browserd/nsec so), and is filled; any other existing file is refused.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        fd = _empty_slot(path)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _empty_slot(path: Path) -> int:
    """Open an existing empty, regular, owner-only file for writing, or raise FileExistsError."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
    info = os.fstat(fd)
    if info.st_size or not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
        os.close(fd)
        raise FileExistsError(path)
    return fd


def write_new_key(path: Path) -> str:
    """Create ``path`` holding a fresh ``nsec1…``; returns the public key (hex).

    ``O_EXCL`` refuses to replace an existing key; the mode is 0600 at creation, so the
    secret is never readable by anyone else, not even for a moment.
    """
    secret = generate_secret()
    _write_private(path, nsec_encode(secret) + "\n")
    return public_key_hex(secret)


def ensure_key(path: Path) -> bool:
    """Make sure a key exists at ``path``; True when it was generated just now."""
    if path.exists():
        return False
    write_new_key(path)
    return True


def ensure_token(path: Path) -> bool:
    """Make sure a bearer token (256 random bits) exists at ``path``; True when new."""
    if path.exists():
        return False
    _write_private(path, secrets.token_urlsafe(32) + "\n")
    return True

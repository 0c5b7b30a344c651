"""Reading secrets from files the way ssh does: refuse any the group or others can read.

A key readable by other users is already leaked; failing loudly (with the fix) is kinder
than signing with it.  Every message names the path and never the file's content.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import BrowserdError, ErrorCode

__all__ = ["credential_path", "private_dir", "read_private_file"]

# A secret file is one short line or a mnemonic; anything bigger is a wrong path.
_MAX_BYTES = 4096


def read_private_file(path: str | os.PathLike[str], *, strip: bool = True) -> str:
    """The text of ``path``, if only its owner may read or write it.

    ``strip=False`` removes only the final line break (a passphrase may end in spaces).
    """
    p = Path(path).expanduser()
    try:
        st = p.stat()
    except FileNotFoundError:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"secret file {p} does not exist") from None
    except OSError as exc:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"cannot stat secret file {p}: {exc.strerror}"
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"secret file {p} is not a regular file")
    if st.st_mode & 0o077:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"permissions {stat.S_IMODE(st.st_mode):04o} for {p} are too open: a secret must "
            f"be readable by its owner only. Fix: chmod 600 {p}",
        )
    if st.st_size > _MAX_BYTES:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"secret file {p} is larger than {_MAX_BYTES} bytes"
        )
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"cannot read secret file {p}: {exc.strerror}"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"secret file {p} is not UTF-8") from None
    return text.strip() if strip else text.removesuffix("\n").removesuffix("\r")


def private_dir(path: Path, what: str) -> Path:
    """``path`` made (0700) if missing; refused, with the fix, when the group or others may
    enter it: what is inside (keys, the store) is only as private as the directory."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"permissions {mode:04o} for {what} {path} are too open: the group and others "
            f"must not read it. Fix: chmod 700 {path}",
        )
    return path


def credential_path(name: str) -> Path:
    """``$CREDENTIALS_DIRECTORY/<name>``: a systemd credential (``LoadCredential=``)."""
    if not name or "/" in name or name in (".", ".."):
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"credential name {name!r} must be a plain file name"
        )
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if not directory:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"CREDENTIALS_DIRECTORY is not set: run under systemd with "
            f"LoadCredential={name}:/path/to/secret (or LoadCredentialEncrypted=)",
        )
    return Path(directory) / name

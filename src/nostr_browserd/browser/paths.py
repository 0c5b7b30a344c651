"""Files a controller may touch: inside one configured directory, per owner, never outside.

Uploads, downloads and recordings all live under directories the operator chose.
A name from a command is checked before any file is opened: no absolute paths, no ``..``,
and the resolved path (symlinks followed) must still sit inside the directory.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..errors import BrowserdError, ErrorCode

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def configured(directory: Path | None, setting: str, tool: str) -> Path:
    """The directory behind a setting, or ``UNAVAILABLE`` saying how to turn ``tool`` on."""
    if directory is None:
        raise BrowserdError(
            ErrorCode.UNAVAILABLE, f"{tool} is off: set browser.{setting} in the configuration."
        )
    return Path(directory).expanduser().resolve()


def owner_name(owner: str) -> str:
    """The name of ``owner``'s folder in each files directory."""
    return owner if NAME.match(owner) else hashlib.sha256(owner.encode()).hexdigest()[:32]


def owner_dir(base: Path, owner: str) -> Path:
    """``base/<owner>`` (created 0700): one controller never sees another's files."""
    path = base / owner_name(owner)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def inside(base: Path, name: str) -> Path:
    """The existing regular file ``name`` under ``base``; ``FORBIDDEN`` for any escape."""
    relative = Path(name)
    if not name or relative.is_absolute() or ".." in relative.parts:
        raise BrowserdError(
            ErrorCode.FORBIDDEN, f"{name!r}: only names inside the configured directory."
        )
    path = (base / relative).resolve()
    if not path.is_relative_to(base.resolve()):
        raise BrowserdError(ErrorCode.FORBIDDEN, f"{name!r} leads outside the directory.")
    if not path.is_file():
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"No file {name!r} in the directory.")
    return path


def free_name(directory: Path, suggested: str) -> Path:
    """A path in ``directory`` for a download: the page's name, cleaned, never overwriting."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(suggested).name).lstrip(".") or "download"
    first = directory / stem[:128]
    path, n = first, 1
    while path.exists():
        path = directory / f"{first.stem}-{n}{first.suffix}"
        n += 1
    return path

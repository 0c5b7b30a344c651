"""How much of the daemon's disk one controller's files may take, and the room kept free.

A controller's files are those it sent in from the chat (``uploads_dir/<owner>``), those it
downloaded (``downloads_dir/<owner>``) and its recordings (``state_dir/<owner>/recordings``).
Every writer asks ``FileQuota.reserve`` for the bytes it means to write before it writes
them, and lets the reservation go once the file is whole (or gone): the owner's use is then
read from the disk itself, so a restart or a file the operator deleted counts as it is.  A
new writer (a screen recording) does the same: ``write`` for a whole file, or ``reserve``
with ``exact=False`` for a stream, stopping at the reservation's ``size``.  Two limits hold:

- ``limit``: one owner's files together (``[files] quota_mb``); past it that owner is told
  its use, and every other owner is served as before;
- ``free``: the bytes every write leaves free on its filesystem (``[files] free_mb``), so that
  files are refused before the state store, beside them by default, runs out of room.

A file that fails half-written (a full disk) is removed: ``write_new`` does it for whole
files, and a streaming writer removes its own.  Files received from the chat (``receive``)
expire after ``received_keep`` seconds (``expire``); their list is
``<state_dir>/received.json``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import BrowserdError, ErrorCode
from .config import BrowserConfig
from .paths import owner_name

MB = 1024 * 1024
QUOTA_MB = 1024.0
FREE_MB = 128.0
RECEIVED_KEEP = 7 * 86400.0

Kind = Literal["uploads", "downloads", "recordings"]
KINDS: tuple[Kind, ...] = ("uploads", "downloads", "recordings")
ROOTS: dict[Kind, str] = {
    "uploads": "uploads_dir",
    "downloads": "downloads_dir",
    "recordings": "state_dir",
}


def size_text(n: float) -> str:
    """``3.2 MB``, ``512 KB``: what a person reads."""
    if n >= MB:
        return f"{n / MB:.1f} MB"
    return f"{n / 1024:.0f} KB" if n >= 1024 else f"{n:.0f} bytes"


@dataclass
class Reservation:
    """Bytes set aside for one write; ``size`` is how many the writer may write, and ``over``
    what a stream that passes them is told (None: ``size`` is the writer's own cap)."""

    quota: FileQuota
    owner: str
    size: int
    over: BrowserdError | None = None

    def release(self) -> None:
        """The write is over (the file is whole and counted from the disk, or gone)."""
        self.quota._held.remove(self)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class FileQuota:
    """Every owner's files on the daemon's disk, held to ``limit`` each and ``free`` overall."""

    def __init__(
        self,
        config: BrowserConfig,
        limit_mb: float = QUOTA_MB,
        free_mb: float = FREE_MB,
        received_keep: float = RECEIVED_KEEP,
    ) -> None:
        self.limit, self.free = int(limit_mb * MB), int(free_mb * MB)
        self.received_keep = received_keep
        self.config = config  # its directories, read when asked: they are the tools' too
        self._held: list[Reservation] = []

    def folder(self, owner: str, kind: Kind) -> Path | None:
        """Where ``owner``'s files of ``kind`` are (None: that kind is not kept)."""
        root = getattr(self.config, ROOTS[kind])
        if root is None:
            return None
        folder = Path(root).expanduser() / owner_name(owner)
        return folder / "recordings" if kind == "recordings" else folder

    def use(self, owner: str) -> dict[str, int]:
        """``owner``'s bytes on the disk by kind, with its ``total`` and its ``quota``."""
        used: dict[str, int] = {k: _bytes_under(self.folder(owner, k)) for k in KINDS}
        return {**used, "total": sum(used.values()), "quota": self.limit}

    def reserve(self, owner: str, where: Path, size: int, *, exact: bool = True) -> Reservation:
        """Set ``size`` bytes aside for a file of ``owner`` in ``where``.

        ``exact=False`` (a stream of unknown length, ``size`` its cap) takes what room there
        is, which the writer then must not pass (``Reservation.over``).  Refused when there
        is none, saying which limit: the owner's quota or the disk's free room.
        """
        held = sum(r.size for r in self._held if r.owner == owner)
        quota_room = self.limit - self.use(owner)["total"] - held
        room = min(quota_room, self._disk_room(where))
        if room < (size if exact else 1):
            raise self.refusal(owner, size) if quota_room == room else disk_full(self.free)
        over = None
        if room < size:  # what a stream that passes the room is told
            over = self.refusal(owner, size) if quota_room == room else disk_full(self.free)
        reservation = Reservation(self, owner, min(size, room), over)
        self._held.append(reservation)
        return reservation

    def write(self, owner: str, path: Path, data: bytes, *, replace: bool = False) -> None:
        """Write a whole file of ``owner`` (0600), within the quota and the free room."""
        with self.reserve(owner, path.parent, len(data)):
            write_new(path, data, replace=replace)

    def refusal(self, owner: str, size: int) -> BrowserdError:
        """What ``owner`` is told when ``size`` more bytes would pass its quota."""
        use = self.use(owner)
        kinds = ", ".join(f"{kind} {size_text(use[kind])}" for kind in KINDS)
        return BrowserdError(
            ErrorCode.TOO_LARGE,
            f"Over your file quota: your files on this daemon take {size_text(use['total'])} "
            f"of {size_text(self.limit)} ([files] quota_mb; {kinds}), and this one may need "
            f"{size_text(size)}. Nothing was kept. Files you sent expire "
            f"{self.received_keep / 86400:g} days after they came; ask the operator to free "
            "the rest.",
        )

    def _disk_room(self, where: Path) -> int:
        """Bytes a new file in ``where`` may take and still leave ``free`` on its disk."""
        existing = next(p for p in (where, *where.parents) if p.exists())
        held = sum(r.size for r in self._held)
        return shutil.disk_usage(existing).free - self.free - held

    # --- received files, and their expiry --------------------------------------------

    def receive(self, owner: str, path: Path, data: bytes) -> None:
        """Keep a file ``owner`` sent in from the chat, until ``received_keep`` from now.

        Not listed for expiry (the disk is full), it is not kept either.
        """
        self.write(owner, path, data)
        try:
            ledger = self._ledger()
            ledger[str(path)] = time.time() + self.received_keep
            self._save(ledger)
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    def expire(self, now: float | None = None) -> list[Path]:
        """Delete the received files that are due; the ones deleted."""
        now = time.time() if now is None else now
        ledger = self._ledger()
        due = [Path(p) for p, at in ledger.items() if at <= now]
        for path in due:
            path.unlink(missing_ok=True)
            del ledger[str(path)]
        if due:
            self._save(ledger)
        return due

    def _ledger_path(self) -> Path | None:
        root = self.config.state_dir
        return None if root is None else Path(root).expanduser() / "received.json"

    def _ledger(self) -> dict[str, float]:
        path = self._ledger_path()
        with contextlib.suppress(FileNotFoundError, ValueError):
            if path is not None:
                return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
        return {}

    def _save(self, ledger: dict[str, float]) -> None:
        path = self._ledger_path()
        if path is not None:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_new(path.with_suffix(".tmp"), json.dumps(ledger).encode(), replace=True)
            path.with_suffix(".tmp").replace(path)


def disk_full(free: int | None = None) -> BrowserdError:
    """The refusal when the daemon's disk has no room for a file beside its state store
    (``free``: the room it keeps; None: the disk ran out while writing)."""
    why = (
        "ran out of room while writing"
        if free is None
        else f"keeps {size_text(free)} free for its state store ([files] free_mb)"
    )
    return BrowserdError(
        ErrorCode.UNAVAILABLE,
        f"The daemon's disk is full: it {why}, so the file was not written. Nothing was kept.",
    )


@contextlib.contextmanager
def whole_or_gone(path: Path) -> Iterator[None]:
    """Whatever stops the writing of ``path`` inside (a full disk, a cap, a deadline), nothing
    of it is left; a full disk is said plainly."""
    try:
        yield
    except OSError as exc:
        path.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise disk_full() from None
        raise
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def write_new(path: Path, data: bytes, *, replace: bool = False) -> None:
    """Write ``data`` to ``path``, owner-only (0600) from creation; on any failure (a full
    disk) the partial file is removed and a full disk is said plainly."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if replace else os.O_EXCL)
    fd = os.open(path, flags, 0o600)
    with whole_or_gone(path), os.fdopen(fd, "wb") as out:
        out.write(data)


def _bytes_under(folder: Path | None) -> int:
    """The size of every regular file under ``folder`` (symlinks not followed)."""
    total = 0
    for directory, _dirs, files in os.walk(folder) if folder is not None else ():
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total

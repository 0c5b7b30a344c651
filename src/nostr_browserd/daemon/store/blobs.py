"""Blobs the daemon put on Blossom servers, until their ``[files] keep`` is up.

One row per (server, sha256) with the time it is due for deletion; the cleanup deletes it
from the server (BUD-12) and then forgets the row, so a restart, or another worker sharing
the store, deletes what is left.  A blob uploaded twice keeps the later time.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any


class BlobTables:
    """The statements on ``blob`` (mixed into ``Store``)."""

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def keep_blob(self, server: str, sha256: str, expires: float) -> None:
        """Remember an uploaded blob, to delete it at ``expires`` (seconds since the epoch)."""
        await self._change(
            "INSERT INTO blob (server, sha256, expires) VALUES (?, ?, ?)"
            " ON CONFLICT (server, sha256) DO UPDATE SET expires = excluded.expires",
            (server, sha256, expires),
        )

    async def due_blobs(self, at: float) -> list[tuple[str, str]]:
        """(server, sha256) of every blob due by ``at``, the oldest first."""
        rows = await self._rows(
            "SELECT server, sha256 FROM blob WHERE expires <= ? ORDER BY expires", (at,)
        )
        return [(row[0], row[1]) for row in rows]

    async def next_blob_due(self) -> float | None:
        """When the next blob is due; None when none is kept."""
        rows = await self._rows("SELECT min(expires) FROM blob")
        return rows[0][0] if rows else None

    async def forget_blob(self, server: str, sha256: str) -> None:
        """The blob was deleted from ``server``."""
        await self._change("DELETE FROM blob WHERE server = ? AND sha256 = ?", (server, sha256))

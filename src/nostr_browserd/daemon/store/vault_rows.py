"""The credential vault's rows: one per owner and entry name, the values sealed.

A row keeps in the clear only what ``vault_list`` shows (the entry's origins and whether it
has a TOTP secret) and the pubkey the entry is sealed to; the username, the password and the
TOTP secret are in ``sealed``, NIP-44 to the daemon's own key (``login/sealed.py``), together
with the owner, the name and the origins again: the vault believes only what the seal holds,
so a row edited in the database cannot move an entry to another owner or widen its origins.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from ...vault.keeper import VaultRow


class VaultRows:
    """The statements on ``vault`` (mixed into ``Store``)."""

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def vault_put(self, owner: str, row: VaultRow) -> None:
        """Keep ``row`` in ``owner``'s vault, replacing the entry of that name."""
        await self._change(
            "INSERT INTO vault (owner, name, origins, totp, sealed, at) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (owner, name) DO UPDATE SET origins = excluded.origins,"
            " totp = excluded.totp, sealed = excluded.sealed, at = excluded.at",
            (
                owner,
                row.name,
                json.dumps(row.origins),
                int(row.totp),
                json.dumps(row.sealed),
                time.time(),
            ),
        )

    async def vault_rows(self, owner: str, name: str | None = None) -> list[VaultRow]:
        """``owner``'s entries (or the one called ``name``), by name; unreadable rows skipped."""
        sql = "SELECT name, origins, totp, sealed FROM vault WHERE owner = ?"
        params: tuple[str, ...] = (owner,)
        if name is not None:
            sql, params = sql + " AND name = ?", (owner, name)
        rows = []
        for found, origins, totp, sealed in await self._rows(sql, params):
            try:
                rows.append(VaultRow(found, json.loads(origins), bool(totp), json.loads(sealed)))
            except ValueError:
                continue
        return sorted(rows, key=lambda row: row.name)

    async def vault_remove(self, owner: str, name: str) -> bool:
        """Forget ``owner``'s entry ``name``; whether there was one."""
        return bool(
            await self._change("DELETE FROM vault WHERE owner = ? AND name = ?", (owner, name))
        )

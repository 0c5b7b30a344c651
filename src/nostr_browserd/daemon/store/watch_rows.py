"""Monitors and schedules, one row each, per owner (``daemon/schedule``).

A row keeps what was asked (``spec``: the address, selector, interval, the command, the
scheme and form of the request that made it) and what has happened since (``state``: the
baseline text, the last check and its outcome, failures in a row, paused), both as JSON,
and ``due``, when it runs next.  Ids are per owner and kind (``m1``, ``s1``…), numbered
after the highest one kept.
"""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["monitor", "schedule"]
PREFIX: dict[Kind, str] = {"monitor": "m", "schedule": "s"}
COLUMNS = "owner, id, spec, state, due"


@dataclass
class WatchRow:
    """One monitor or schedule as the store keeps it."""

    kind: Kind
    owner: str
    id: str
    spec: dict[str, Any]
    state: dict[str, Any]
    due: float


def _row(kind: Kind, row: Sequence[Any]) -> WatchRow | None:
    try:
        spec, state = json.loads(row[2]), json.loads(row[3])
    except ValueError:
        return None
    return WatchRow(kind, row[0], row[1], spec, state, float(row[4]))


class WatchRows:
    """The statements on ``monitor`` and ``schedule`` (mixed into ``Store``)."""

    @abstractmethod
    async def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    async def _change(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    async def watch_add(
        self, kind: Kind, owner: str, spec: dict[str, Any], state: dict[str, Any], due: float
    ) -> str:
        """Keep a new monitor or schedule of ``owner``; its id."""
        while True:
            rows = await self._rows(f"SELECT max(n) FROM {kind} WHERE owner = ?", (owner,))
            n = (rows[0][0] or 0) + 1
            ident = f"{PREFIX[kind]}{n}"
            added = await self._change(
                f"INSERT INTO {kind} (owner, id, n, spec, state, due, at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING",
                (owner, ident, n, json.dumps(spec), json.dumps(state), due, time.time()),
            )
            if added:  # else another worker took that number a moment ago: the next one
                return ident

    async def watches(self, kind: Kind, owner: str | None = None) -> list[WatchRow]:
        """``owner``'s monitors or schedules (everyone's without an owner), by number;
        unreadable rows skipped."""
        where, params = ("WHERE owner = ?", (owner,)) if owner is not None else ("", ())
        rows = await self._rows(f"SELECT {COLUMNS} FROM {kind} {where} ORDER BY owner, n", params)
        return [r for r in (_row(kind, row) for row in rows) if r is not None]

    async def watch(self, kind: Kind, owner: str, ident: str) -> WatchRow | None:
        """``owner``'s monitor or schedule ``ident``; None when it has none of that id."""
        rows = await self._rows(
            f"SELECT {COLUMNS} FROM {kind} WHERE owner = ? AND id = ?", (owner, ident)
        )
        return _row(kind, rows[0]) if rows else None

    async def watch_save(self, row: WatchRow) -> bool:
        """Keep ``row``'s state and due time; False when it was removed meanwhile."""
        return bool(
            await self._change(
                f"UPDATE {row.kind} SET state = ?, due = ? WHERE owner = ? AND id = ?",
                (json.dumps(row.state), row.due, row.owner, row.id),
            )
        )

    async def watch_remove(self, kind: Kind, owner: str, ident: str) -> bool:
        """Forget ``owner``'s monitor or schedule ``ident``; whether there was one."""
        return bool(
            await self._change(f"DELETE FROM {kind} WHERE owner = ? AND id = ?", (owner, ident))
        )

    async def watch_count(self, owner: str) -> int:
        """How many monitors and schedules ``owner`` has, together (their one limit)."""
        rows = await self._rows(
            "SELECT (SELECT count(*) FROM monitor WHERE owner = ?)"
            " + (SELECT count(*) FROM schedule WHERE owner = ?)",
            (owner, owner),
        )
        return int(rows[0][0])

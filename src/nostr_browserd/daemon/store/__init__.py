"""The daemon's state store: one interface (:class:`Store`), in SQLite or in PostgreSQL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import AuditEntry, Pending, Store
from .sqlite import SqliteStore

if TYPE_CHECKING:
    from ..config import StateConfig


async def open_store(state: StateConfig) -> Store:
    """The store ``[state]`` names: ``database`` when set, else ``<dir>/state.sqlite3``."""
    if state.database:
        from .postgres import PostgresStore

        return await PostgresStore.connect(state.database)
    return SqliteStore(state.dir / "state.sqlite3")


__all__ = ["AuditEntry", "Pending", "SqliteStore", "Store", "open_store"]

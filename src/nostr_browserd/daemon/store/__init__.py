"""The daemon's state store: one interface (:class:`Store`), in SQLite or in PostgreSQL."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ...errors import BrowserdError
from ...nostr.signer import Signer
from .base import AuditEntry, Pending, Store, no_signer
from .sqlite import SqliteStore

if TYPE_CHECKING:
    from ..config import StateConfig

log = logging.getLogger(__name__)


async def open_store(state: StateConfig, signer: Callable[[], Signer | None] = no_signer) -> Store:
    """The store ``[state]`` names: ``database`` when set, else ``<dir>/state.sqlite3``;
    ``signer()`` (the identity logged in now) seals its saved states and conversations."""
    if state.database:
        from .postgres import PostgresStore

        return await PostgresStore.connect(state.database, signer=signer)
    return SqliteStore(state.dir / "state.sqlite3", signer)


async def quietly(write: Awaitable[Any]) -> None:
    """A store write nothing depends on (an audit row, a release): a full disk or a lost
    database is logged, not raised into the command it follows."""
    try:
        await write
    except BrowserdError as exc:
        log.error("%s", exc.message)


__all__ = ["AuditEntry", "Pending", "SqliteStore", "Store", "open_store", "quietly"]

"""Named login states: a controller saves its cookies and storage, and loads them later.

A state is Playwright's ``storage_state`` (cookies and each origin's localStorage), kept in
the daemon's state store (``browser/shelf.py``): in SQLite beside the replay guard, or in
PostgreSQL where every worker finds it.  The owner comes from the session, never from the
command, so one controller can never load another's state.  Names outside ``NAME`` are the
daemon's own and never listed here.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import StorageState
from pydantic import Field

from ..browser.paths import NAME
from ..browser.session import Session
from ..browser.shelf import StateShelf
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class StateName(Params):
    """The state's name."""

    name: str = Field(pattern=NAME.pattern, description="letters, digits, _ or -; at most 64")


def shelf(session: Session) -> StateShelf:
    """Where this session's pool keeps saved states."""
    if session.reach.shelf is None:
        raise BrowserdError(
            ErrorCode.UNAVAILABLE, "Saved login states need the daemon's state store."
        )
    return session.reach.shelf


def counts(state: dict[str, Any]) -> dict[str, int]:
    """How much a state holds: cookies and origins with storage."""
    return {"cookies": len(state.get("cookies", [])), "origins": len(state.get("origins", []))}


@TOOLS.tool(
    "state_save", family="storage", gated=True, params=StateName, args=("name",), destructive=True
)
async def state_save(session: Session, params: StateName) -> dict[str, Any]:
    """Save this session's cookies and local storage under a name, for state_load later."""
    state = dict(await session.page.context.storage_state())
    await shelf(session).save_state(session.owner, params.name, state)
    return {"saved": params.name, **counts(state)}


@TOOLS.tool(
    "state_load", family="storage", gated=True, params=StateName, args=("name",), destructive=True
)
async def state_load(session: Session, params: StateName) -> dict[str, Any]:
    """Replace this session's cookies and local storage with a state saved earlier."""
    state = await shelf(session).load_state(session.owner, params.name)
    if state is None:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"No saved state {params.name!r}: see state_list."
        )
    await session.page.context.set_storage_state(
        StorageState(cookies=state.get("cookies", []), origins=state.get("origins", []))
    )
    return {"loaded": params.name, **counts(state)}


@TOOLS.tool("state_list", family="storage", gated=False)
async def state_list(session: Session, params: NoParams) -> dict[str, Any]:
    """The names of the states this controller has saved."""
    names = await shelf(session).state_names(session.owner)
    return {"states": [name for name in names if NAME.match(name)]}

"""Named login states: a controller saves its cookies and storage, and loads them later.

A state is Playwright's ``storage_state`` (cookies and each origin's localStorage), kept
as ``<state_dir>/<owner>/<name>.json`` with mode 0600.  The owner's directory comes from
the session, never from the command, so one controller can never load another's state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from ..browser.paths import NAME, configured, owner_dir, valid_name, write_private
from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class StateName(Params):
    """The state's name."""

    name: str = Field(pattern=NAME.pattern, description="letters, digits, _ or -; at most 64")


def owner_states(session: Session) -> Path:
    """This session's owner's directory of states."""
    base = configured(session.config.state_dir, "state_dir", "Saving login state")
    return owner_dir(base, session.owner)


def state_path(session: Session, name: str) -> Path:
    """Where ``name`` lives for this session's owner."""
    return owner_states(session) / f"{valid_name(name)}.json"


def counts(state: dict[str, Any]) -> dict[str, int]:
    """How much a state holds: cookies and origins with storage."""
    return {"cookies": len(state["cookies"]), "origins": len(state["origins"])}


@TOOLS.tool(
    "state_save", family="storage", gated=True, params=StateName, args=("name",), destructive=True
)
async def state_save(session: Session, params: StateName) -> dict[str, Any]:
    """Save this session's cookies and local storage under a name, for state_load later."""
    state = await session.page.context.storage_state()
    path = state_path(session, params.name)
    write_private(path, json.dumps(state).encode())
    return {"saved": params.name, **counts(state)}


@TOOLS.tool(
    "state_load", family="storage", gated=True, params=StateName, args=("name",), destructive=True
)
async def state_load(session: Session, params: StateName) -> dict[str, Any]:
    """Replace this session's cookies and local storage with a state saved earlier."""
    path = state_path(session, params.name)
    if not path.is_file():
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"No saved state {params.name!r}: see state_list."
        )
    state = json.loads(path.read_text())
    await session.page.context.set_storage_state(state)
    return {"loaded": params.name, **counts(state)}


@TOOLS.tool("state_list", family="storage", gated=False)
async def state_list(session: Session, params: NoParams) -> dict[str, Any]:
    """The names of the states this controller has saved."""
    return {"states": sorted(p.stem for p in owner_states(session).glob("*.json"))}

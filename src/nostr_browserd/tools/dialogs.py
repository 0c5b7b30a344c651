"""Dialogs: see what the page asks, then accept (a prompt with text) or dismiss it.

Alerts are accepted by the session as they open and reported once; confirm, prompt and
beforeunload wait, blocking their tab, until one of these tools answers them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry

TOOLS = Registry()


class AcceptParams(Params):
    """The text that answers a prompt(); a confirm takes none."""

    value: str | None = Field(None, max_length=10_000, description="text for a prompt()")


@TOOLS.tool("dialog_accept", family="dialogs", gated=True, params=AcceptParams, args=("*value",))
async def dialog_accept(session: Session, params: AcceptParams) -> dict[str, Any]:
    """Accept the open confirm/prompt/beforeunload dialog (a prompt with the given text)."""
    return await session.dialogs.answer(True, params.value)


@TOOLS.tool("dialog_dismiss", family="dialogs", gated=True)
async def dialog_dismiss(session: Session, params: NoParams) -> dict[str, Any]:
    """Dismiss (cancel) the open dialog."""
    return await session.dialogs.answer(False)


@TOOLS.tool("dialog_status", family="dialogs", gated=False)
async def dialog_status(session: Session, params: NoParams) -> dict[str, Any]:
    """Whether a dialog is open, and which: its type, message, a prompt's default, its tab."""
    pending = session.dialogs.pending
    return {"open": pending is not None, "dialog": pending.describe() if pending else None}

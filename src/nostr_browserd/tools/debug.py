"""Debugging a page: its console, its uncaught errors, and a highlight for screenshots.

Console messages and errors come from the session's page log (bounded ring buffers), of
the active tab only, newest last; reading them is free and ``clear`` empties them.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

from pydantic import Field

from ..browser.session import Session
from ..commands.params import OptionalTarget
from ..commands.registry import Params, Registry

TOOLS = Registry()
Level = Literal["log", "debug", "info", "error", "warning", "trace", "assert"]


class LogParams(Params):
    """How many entries to return, and whether to empty the buffer afterwards."""

    limit: int = Field(50, ge=1, le=500, description="newest entries to return")
    clear: bool = Field(False, description="forget this tab's entries after reading them")


class ConsoleParams(LogParams):
    """Optionally, only messages of one level."""

    level: Level | None = Field(None, description="only this level (error, warning, log…)")


def read_log(
    session: Session, buffer: deque[dict[str, Any]], params: LogParams, **match: Any
) -> dict[str, Any]:
    """The active tab's newest ``limit`` entries of ``buffer`` that match; cleared on ask."""
    tab = session.active_tab
    mine = [e for e in buffer if e["tab"] == tab]
    picked = [e for e in mine if all(e.get(k) == v for k, v in match.items() if v is not None)]
    if params.clear:
        kept = [e for e in buffer if e["tab"] != tab]
        buffer.clear()
        buffer.extend(kept)
    shown = [{k: v for k, v in e.items() if k != "tab"} for e in picked[-params.limit :]]
    return {"entries": shown, "count": len(picked), "cleared": params.clear}


@TOOLS.tool("console", family="debug", gated=False, params=ConsoleParams, args=("level",))
async def console(session: Session, params: ConsoleParams) -> dict[str, Any]:
    """The active tab's recent console messages (level, text, source); --clear empties them."""
    return read_log(session, session.log.console, params, level=params.level)


@TOOLS.tool("errors", family="debug", gated=False, params=LogParams)
async def errors(session: Session, params: LogParams) -> dict[str, Any]:
    """The active tab's recent uncaught page errors, with their stacks; --clear empties them."""
    return read_log(session, session.log.errors, params)


class HighlightParams(OptionalTarget):
    """The element to outline; none (or clear) removes the highlight."""

    clear: bool = Field(False, description="remove the highlight")


@TOOLS.tool("highlight", family="debug", gated=True, params=HighlightParams, args=("target",))
async def highlight(session: Session, params: HighlightParams) -> dict[str, Any]:
    """Outline one element so a screenshot shows it; without a target, remove the outline."""
    page = session.page
    await page.hide_highlight()
    if params.clear or not params.has_target:
        return {"highlighted": False}
    locator = await session.locate(**params.target())
    await locator.highlight()
    return {"highlighted": True}

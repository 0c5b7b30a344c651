"""Windows: more isolated BrowserContexts for the same owner, each with its own cookies.

A session starts with window w1.  window_new opens another (w2, w3, …) with one tab that
becomes active; tab ids stay unique across windows, and tab_new opens in the active tab's
window.  Closing a window closes its tabs; w1 holds the session itself and stays.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode
from .navigate import address, goto
from .tabs import describe_tabs

TOOLS = Registry()


class WindowNewParams(Params):
    """An optional address for the new window's tab."""

    url: str | None = Field(None, max_length=2000, description="address, bare host or search")


@TOOLS.tool(
    "window_new",
    family="windows",
    gated=True,
    params=WindowNewParams,
    args=("*url",),
    sends=True,
    reports_place=True,
)
async def window_new(session: Session, params: WindowNewParams) -> dict[str, Any]:
    """Open a new window: its own cookies and storage, one tab (active), optionally a URL."""
    url = address(session, params.url) if params.url else None
    window = await session.open_window()
    result: dict[str, Any] = {"window": window, "opened": session.active_tab}
    if url:
        result.update(await goto(session, session.page, url))
    return result


@TOOLS.tool("window_list", family="windows", gated=False, reports_place=True)
async def window_list(session: Session, params: NoParams) -> dict[str, Any]:
    """Every window with its tabs; the active tab is marked."""
    tabs = await describe_tabs(session)
    return {
        "windows": [
            {"window": w, "tabs": [t for t in tabs if session.tabs[t["tab"]].window == w]}
            for w in session.windows
        ]
    }


class WindowId(Params):
    """A window by id."""

    window: str = Field(pattern=r"^w\d+$", description="window id, e.g. w2")


@TOOLS.tool(
    "window_close",
    family="windows",
    gated=True,
    params=WindowId,
    args=("window",),
    reports_place=True,
)
async def window_close(session: Session, params: WindowId) -> dict[str, Any]:
    """Close a window and its tabs (not w1, the session's own: use close_all there)."""
    context = session.windows.get(params.window)
    if context is None:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS,
            f"No window {params.window!r}; windows: {', '.join(session.windows)}.",
        )
    if context is session.context:
        raise BrowserdError(ErrorCode.REFUSED, "w1 is the session's own window: use close_all.")
    return {"closed": params.window, "tabs_closed": await session.close_window(params.window)}

"""Starting over: close every window but w1 and every tab, and leave one blank tab."""

from __future__ import annotations

from typing import Any

from ..browser.session import Session
from ..commands.registry import NoParams, Registry

TOOLS = Registry()


@TOOLS.tool("close_all", family="tabs", gated=True, reports_place=True)
async def close_all(session: Session, params: NoParams) -> dict[str, Any]:
    """Close every tab and extra window; w1 gets one blank tab (its cookies are kept)."""
    closed = list(session.tabs)
    for window in [w for w, c in session.windows.items() if c is not session.context]:
        await session.close_window(window)
    page = await session.main_context().new_page()
    fresh = session.track(page)
    for tab_id in closed:
        old = session.tabs.get(tab_id)
        if old is not None:
            await old.page.close()
        session.forget(tab_id)
    return {"closed": closed, "active": fresh}

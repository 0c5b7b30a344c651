"""Starting over: close every tab of the session and leave one blank tab."""

from __future__ import annotations

from typing import Any

from .registry import NoParams, Registry
from .session import Session

TOOLS = Registry()


@TOOLS.tool("close_all", family="tabs", gated=True)
async def close_all(session: Session, params: NoParams) -> dict[str, Any]:
    """Close every tab and open one blank tab (cookies and storage are kept)."""
    closed = list(session.tabs)
    fresh, _ = await session.new_tab()
    for tab_id in closed:
        page = session.tabs.get(tab_id)
        if page is not None:
            await page.close()
        session.forget(tab_id)
    return {"closed": closed, "active": fresh}

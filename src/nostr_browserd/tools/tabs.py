"""Tabs: list, open, switch, close.  Ids (t1, t2, …) are never reused in a session."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..browser.session import Session
from ..commands.params import TabId
from ..commands.registry import NoParams, Params, Registry
from .navigate import address, goto

TOOLS = Registry()


async def describe_tabs(session: Session) -> list[dict[str, Any]]:
    """Every tab's id, address, title and whether it is active."""
    tabs = []
    for tab in list(session.tabs.values()):  # tabs come and go while titles are read
        title = await tab.read_title()
        tabs.append(
            {"tab": tab.id, "url": tab.page.url, "title": title, "active": tab is session.tab}
        )
    return tabs


@TOOLS.tool("tab_list", family="tabs", gated=False, reports_place=True)
async def tab_list(session: Session, params: NoParams) -> dict[str, Any]:
    """List open tabs with their ids, addresses and titles."""
    return {"tabs": await describe_tabs(session)}


class TabNewParams(Params):
    """An optional address for the new tab."""

    url: str | None = Field(None, description="address, bare host or search phrase")


@TOOLS.tool(
    "tab_new",
    family="tabs",
    gated=True,
    params=TabNewParams,
    args=("*url",),
    sends=True,
    reports_place=True,
)
async def tab_new(session: Session, params: TabNewParams) -> dict[str, Any]:
    """Open a new tab (blank, or at an address) and make it active."""
    url = address(session, params.url) if params.url else None
    tab_id, page = await session.new_tab()
    result: dict[str, Any] = {"opened": tab_id}
    if url:
        result.update(await goto(session, page, url))
    return result


class TabSwitchParams(Params):
    """The tab to bring to the front."""

    tab: str = Field(pattern=r"^t\d+$", description="tab id, e.g. t2")


@TOOLS.tool(
    "tab_switch",
    family="tabs",
    gated=False,
    params=TabSwitchParams,
    args=("tab",),
    read_only=False,  # the next command acts on another tab: no host should switch unasked
    reports_place=True,
)
async def tab_switch(session: Session, params: TabSwitchParams) -> dict[str, Any]:
    """Make another tab the active one."""
    session.switch(params.tab)
    return {"active": params.tab}


@TOOLS.tool("tab_close", family="tabs", gated=True, params=TabId, args=("tab",), reports_place=True)
async def tab_close(session: Session, params: TabId) -> dict[str, Any]:
    """Close a tab (the active one by default)."""
    tab_id = params.tab or session.active_tab
    if tab_id is None:
        return {"closed": None, "note": "No tab is open."}
    tab = session.tabs.get(tab_id)
    if tab is None:
        session.switch(tab_id)  # raises, naming the open tabs
        return {}
    await tab.page.close()
    session.forget(tab_id)
    return {"closed": tab_id, "remaining": list(session.tabs)}


@TOOLS.tool("close", family="tabs", gated=True, reports_place=True)
async def close(session: Session, params: NoParams) -> dict[str, Any]:
    """Close the active tab."""
    return await tab_close(session, TabId())

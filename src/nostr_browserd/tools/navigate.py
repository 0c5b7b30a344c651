"""Navigation: open an address, go back, forward, reload."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page, Response
from pydantic import Field

from ..browser.refs import first_line
from ..browser.session import Session
from ..browser.urls import resolve
from ..commands.params import Url
from ..commands.registry import NoParams, Registry
from ..errors import BrowserdError, ErrorCode
from .read import SnapshotParams, remembered_snapshot

TOOLS = Registry()


class OpenParams(Url):
    """Where to go, and whether to snapshot the page once it has loaded."""

    snapshot: bool = Field(False, description="also return an interactive snapshot")


def address(session: Session, text: str) -> str:
    """``text`` as the allowed absolute URL an address bar would load, or REFUSED.

    Tools that open a tab or window resolve first, so a refused address opens nothing.
    """
    return resolve(text, session.config.allowed_schemes, session.config.search_url)


async def goto(session: Session, page: Page, text: str) -> dict[str, Any]:
    """Load ``text`` (resolved like an address bar) in ``page`` and wait for its load event."""
    url = address(session, text)
    await session.reach.refuse_url(url)  # said plainly; the proxy sees the rest
    try:
        response = await page.goto(url, wait_until="load")
    except PlaywrightError as exc:
        if "Download is starting" in str(exc):  # cancelled: no command asked for it
            raise BrowserdError(
                ErrorCode.NAVIGATION_FAILED,
                f"{url} is a download, not a page: nothing was kept. download --url saves it.",
            ) from None
        if "net::" not in str(exc):
            raise
        raise BrowserdError(
            ErrorCode.NAVIGATION_FAILED, f"Could not load {url}: {first_line(exc)}"
        ) from None
    return loaded(response)


def loaded(response: Response | None) -> dict[str, Any]:
    """The HTTP status of a navigation, when there was one."""
    return {"status": response.status} if response is not None else {}


@TOOLS.tool(
    "open",
    family="navigate",
    gated=True,
    params=OpenParams,
    args=("*url",),
    sends=True,
    reports_place=True,
)
async def open_(session: Session, params: OpenParams) -> dict[str, Any]:
    """Open an address, bare host or search phrase in the active tab; returns once loaded."""
    if session.page_or_none is None:
        await session.new_tab()
    page = session.page
    result = await goto(session, page, params.url)
    if params.snapshot:  # kept as the tab's last snapshot: a later --delta compares with it
        rendered = await remembered_snapshot(session, SnapshotParams(interactive=True))
        result["snapshot"] = rendered.text
    return result


async def history(session: Session, step: str) -> dict[str, Any]:
    page = session.page
    move = {"back": page.go_back, "forward": page.go_forward, "reload": page.reload}[step]
    response = await move(wait_until="load")
    if response is None and step != "reload":
        return {"moved": False, "note": f"There is no page to go {step} to."}
    return {"moved": True, **loaded(response)}


@TOOLS.tool("back", family="navigate", gated=True, reports_place=True)
async def back(session: Session, params: NoParams) -> dict[str, Any]:
    """Go back one page in the active tab's history."""
    return await history(session, "back")


@TOOLS.tool("forward", family="navigate", gated=True, reports_place=True)
async def forward(session: Session, params: NoParams) -> dict[str, Any]:
    """Go forward one page in the active tab's history."""
    return await history(session, "forward")


@TOOLS.tool("reload", family="navigate", gated=True, reports_place=True)
async def reload(session: Session, params: NoParams) -> dict[str, Any]:
    """Reload the active tab."""
    return await history(session, "reload")

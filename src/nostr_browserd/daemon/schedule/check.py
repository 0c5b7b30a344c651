"""Reading a watched page: the one place a check touches the browser.

A check runs in the controller's own browser session, on a background tab
(``Session.open_background_tab``): in window w1, with the owner's live cookies and logins and
the network policy of every page of the owner, never in ``tab list``, never the active tab,
its refs its own, a popup it opens closed, and closed after the check: nothing is kept open
between checks.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from playwright.async_api import Locator, Page

from ...browser.pool import BrowserPool
from ...errors import BrowserdError, ErrorCode
from ...tools.navigate import goto


@asynccontextmanager
async def check_page(browser: BrowserPool, owner: str) -> AsyncIterator[Page]:
    """A page of its own in ``owner``'s browser session, for one check; closed after it.

    A session whose browser was lost is left for the controller's next command to revive
    (and to say so): the check fails meanwhile, and is tried again.
    """
    session = await browser.session(owner)
    if session.browser_lost:
        raise BrowserdError(ErrorCode.BROWSER_CRASHED, "The browser is starting again.")
    async with session.open_background_tab() as tab:
        tab.page.set_default_timeout(session.config.timeout_ms)
        yield tab.page


@dataclass(frozen=True)
class Reading:
    """What a check read: the visible text, and a picture when one was asked for."""

    text: str
    picture: bytes | None = None


async def read_watched(
    browser: BrowserPool, owner: str, url: str, selector: str | None, picture: bool
) -> Reading:
    """Load ``url`` as ``open`` would (the network policy holds exactly as there) and read
    the element's visible text, or the page's main text without a selector; never a click,
    a key or a submit."""
    async with check_page(browser, owner) as page:
        session = await browser.session(owner)
        await goto(session, page, url)
        where = page.locator(selector) if selector else await _main(page)
        if await where.count() == 0:
            raise BrowserdError(
                ErrorCode.ELEMENT_NOT_FOUND, f"{selector!r} matches nothing on the page."
            )
        element = where.first
        text = await element.inner_text()
        shot = None
        if picture:
            shot = await (element.screenshot() if selector else page.screenshot())
        return Reading(text, shot)


async def _main(page: Page) -> Locator:
    """The page's main text: its ``main`` element when it has one, else the body."""
    main = page.locator("main")
    return main if await main.count() else page.locator("body")


def as_file(picture: bytes) -> dict[str, str]:
    """A picture as a result's file (what ``screenshot`` answers)."""
    return {"base64": base64.b64encode(picture).decode(), "mime": "image/png"}

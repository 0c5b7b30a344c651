"""Acting on the page: click, fill, type, press, hover, focus and scroll.

Each action inspects before it acts and reports what it did: a click that changed
nothing says NOT VERIFIED, a fill the page rewrote says MISMATCH, and a dialog the
action opened comes back as state instead of hanging the command.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator
from pydantic import Field

from ..browser.checks import (
    changes,
    check_length,
    editable_field,
    fingerprint,
    owner_frame,
    refuse_if_covered,
)
from ..browser.masked import remember
from ..browser.navigation import NavigationWatch
from ..browser.refs import first_line
from ..browser.session import Session
from ..commands.params import OptionalTarget, Target
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode
from ..waits import set_within

TOOLS = Registry()
NOT_VERIFIED = "NOT VERIFIED: nothing observable changed (URL, title, content, fields, focus)."


async def act_and_compare(
    session: Session, action: Any, target: Locator | None = None, *, opens_tab: bool = False
) -> dict[str, Any]:
    """Run ``action`` and report what changed, a dialog it opened, or NOT VERIFIED.

    Focus landing on the element acted on is a side effect of any click, not a change.
    Without a target the chosen frame (frame_switch) is watched as well as the page.
    An action that starts a navigation of the tab answers once the new page has loaded (or
    failed, or the timeout is up: ``NavigationWatch``), and says so instead of comparing two
    documents.  A link with a target opens its tab in a new process, which can take a while:
    with ``opens_tab`` we wait for it (up to the timeout) instead of calling the click a
    no-op; a tab the action opened is reported once it has loaded too.
    """
    page = session.page
    tabs_before = set(session.tabs)
    session.tab_opened.clear()
    chosen = session.tab.frame if session.tab is not None else None
    frame = await owner_frame(target) if target is not None else chosen
    before = await fingerprint(page, frame)
    with NavigationWatch(page, session.config.timeout_ms) as navigation:
        if await session.dialogs.race(acted(action, navigation)):
            return {"verified": True, "changes": ["a dialog opened"]}
        reasons = await changes(page, before, frame, navigation.settle)
        opened = await navigation.settle()
        if opened is not None:
            return {"verified": True, **opened}
        if reasons == ["focus moved"] and target is not None and await has_focus(target):
            reasons = []
        if opens_tab and not reasons:
            await set_within(session.tab_opened, navigation.left())
        new_tabs = [t for t in session.tabs if t not in tabs_before]
        if not new_tabs and not reasons:
            return {"verified": False, "changes": [], "note": NOT_VERIFIED}
        if not new_tabs:
            return {"verified": True, "changes": reasons}
        loaded = [await navigation.load(session.tabs[t].page) for t in new_tabs]
    result: dict[str, Any] = {"verified": True, "changes": [*reasons, "new tab opened"]}
    if not all(loaded):
        result["note"] = navigation.not_loaded()
    return {**result, "new_tabs": new_tabs}


async def acted(action: Awaitable[Any], navigation: NavigationWatch) -> None:
    """The action, then the page it opened, loaded: a dialog during either interrupts."""
    await action
    await navigation.settle()


OPENS_TAB_JS = """el => {
  const link = el.closest('a[target], area[target]');
  return !!link && !['', '_self', '_parent', '_top'].includes(link.target.toLowerCase());
}"""


async def has_focus(locator: Locator) -> bool:
    """Whether focus is on the element or inside it."""
    focused: bool = await locator.evaluate(
        "el => el === document.activeElement || el.contains(document.activeElement)"
    )
    return focused


@TOOLS.tool("click", family="interact", gated=True, params=Target, args=("target",))
async def click(session: Session, params: Target) -> dict[str, Any]:
    """Click one element unless covered; says what changed, after a page it opened loads."""
    locator = await session.locate(**params.target())
    await refuse_if_covered(locator)
    opens_tab = await locator.evaluate(OPENS_TAB_JS)
    return await act_and_compare(session, locator.click(), locator, opens_tab=opens_tab)


class FillParams(Target):
    """A text field and the text that replaces its content."""

    value: str = Field(description="the text to put in the field")
    secret: bool = Field(False, description="required for password fields; value never echoed")


async def read_back(locator: Locator, info: dict[str, Any], expected: str) -> dict[str, Any]:
    """Compare the field's value with what was typed; MISMATCH when the page rewrote it."""
    actual = await locator.evaluate("el => el.isContentEditable ? el.innerText : el.value")
    if actual == expected:
        return {"ok": True}
    if info["password"]:
        return {"ok": False, "note": "MISMATCH: the page changed the password field's value."}
    return {"ok": False, "value": actual, "note": f"MISMATCH: the field now reads {actual!r}."}


@TOOLS.tool("fill", family="interact", gated=True, params=FillParams, args=("target", "*value"))
async def fill(session: Session, params: FillParams) -> dict[str, Any]:
    """Replace a text field's content and read it back (password fields need secret=true)."""
    locator = await session.locate(**params.target())
    info = await editable_field(locator, secret=params.secret)
    check_length(info, len(params.value))
    if params.secret:  # masked wherever the session shows it: snapshots, recordings
        remember(locator.page.context, params.value)
    await locator.fill(params.value)
    return await read_back(locator, info, params.value)


@TOOLS.tool("type", family="interact", gated=True, params=FillParams, args=("target", "*value"))
async def type_(session: Session, params: FillParams) -> dict[str, Any]:
    """Type text key by key at the end of a field, firing the key events a person would."""
    locator = await session.locate(**params.target())
    info = await editable_field(locator, secret=params.secret)
    check_length(info, len(info["value"]) + len(params.value))
    if params.secret:
        remember(locator.page.context, info["value"] + params.value)
    await locator.evaluate("el => { el.focus(); el.setSelectionRange?.(1e9, 1e9); }")
    await locator.press_sequentially(params.value)
    return await read_back(locator, info, info["value"] + params.value)


class PressParams(OptionalTarget):
    """A key or chord, sent to an element or to whatever has focus."""

    key: str = Field(min_length=1, description="e.g. Enter, Tab, Escape, Control+a, ArrowDown")


@TOOLS.tool("press", family="interact", gated=True, params=PressParams, args=("key", "target"))
async def press(session: Session, params: PressParams) -> dict[str, Any]:
    """Press a key (Enter, Tab, Control+a…) on an element or the focus; awaits a page it opens."""
    locator = await session.locate(**params.target()) if params.has_target else None
    action = locator.press(params.key) if locator else session.page.keyboard.press(params.key)
    try:
        return await act_and_compare(session, action, locator)
    except PlaywrightError as exc:
        if "Unknown key" in str(exc):
            raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
        raise


@TOOLS.tool("hover", family="interact", gated=True, params=Target, args=("target",))
async def hover(session: Session, params: Target) -> dict[str, Any]:
    """Move the mouse over one element (opens hover menus and tooltips)."""
    locator = await session.locate(**params.target())
    await refuse_if_covered(locator)
    return await act_and_compare(session, locator.hover(), locator)


@TOOLS.tool("focus", family="interact", gated=True, params=Target, args=("target",))
async def focus(session: Session, params: Target) -> dict[str, Any]:
    """Give one element keyboard focus."""
    locator = await session.locate(**params.target())
    await locator.focus()
    return {"focused": await has_focus(locator)}


class ScrollParams(OptionalTarget):
    """A direction and distance, or an element to bring into view."""

    direction: Literal["down", "up", "left", "right"] = "down"
    amount: int = Field(600, ge=1, le=100_000, description="pixels")


SCROLL_POSITION_JS = """() => ({
  x: Math.round(scrollX), y: Math.round(scrollY), height: document.documentElement.scrollHeight
})"""


@TOOLS.tool(
    "scroll",
    family="interact",
    gated=False,
    params=ScrollParams,
    args=("direction", "amount"),
    read_only=False,  # it moves the page, which may load more
)
async def scroll(session: Session, params: ScrollParams) -> dict[str, Any]:
    """Scroll the page or chosen frame (down/up/left/right, pixels), or to an element."""
    page = session.scope
    if params.has_target:
        locator = await session.locate(**params.target())
        await locator.scroll_into_view_if_needed()
    else:
        dx, dy = {
            "down": (0, params.amount),
            "up": (0, -params.amount),
            "right": (params.amount, 0),
            "left": (-params.amount, 0),
        }[params.direction]
        await page.evaluate("([dx, dy]) => window.scrollBy(dx, dy)", [dx, dy])
    return {"position": await page.evaluate(SCROLL_POSITION_JS)}

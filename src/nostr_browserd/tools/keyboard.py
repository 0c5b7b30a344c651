"""The keyboard without a target: type or insert text at the focus, hold and release keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Keyboard
from pydantic import Field

from ..browser.refs import first_line
from ..browser.session import Session
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode
from .interact import act_and_compare

TOOLS = Registry()

# The element that really has focus, through open shadow roots and same-origin iframes.
FOCUS_IS_PASSWORD_JS = """() => {
  let el = document.activeElement;
  for (;;) {
    if (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
    else if (el?.contentDocument?.activeElement) el = el.contentDocument.activeElement;
    else break;
  }
  return !!el && el.tagName === 'INPUT' && el.type === 'password';
}"""


async def focus_is_password(session: Session) -> bool:
    """Whether the focus is a password field, in the page or in the chosen frame (a
    cross-origin frame's focus is out of the page's reach)."""
    chosen = session.tab.frame if session.tab is not None else None
    for frame in (session.page.main_frame, chosen):
        if frame is not None and await frame.evaluate(FOCUS_IS_PASSWORD_JS):
            return True
    return False


class KeyboardText(Params):
    """Text for whatever has focus."""

    text: str = Field(min_length=1, max_length=10_000, description="the text, at most 10000")
    secret: bool = Field(False, description="required when the focus is a password field")


def text_tool(name: str, send: Callable[[Keyboard, str], Awaitable[None]], doc: str) -> None:
    """Register a focus-typing tool; both refuse a password field unless secret=true."""

    async def handler(session: Session, params: KeyboardText) -> dict[str, Any]:
        page = session.page
        if not params.secret and await focus_is_password(session):
            raise BrowserdError(
                ErrorCode.REFUSED,
                "The focus is a password field: pass secret=true (--secret) to type into it.",
            )
        return await act_and_compare(session, send(page.keyboard, params.text))

    handler.__doc__ = doc
    TOOLS.tool(name, family="interact", gated=True, params=KeyboardText, args=("*text",))(handler)


text_tool(
    "keyboard_type",
    lambda keyboard, text: keyboard.type(text),
    "Type text at the focus with a key event per character, as a person would.",
)
text_tool(
    "insert_text",
    lambda keyboard, text: keyboard.insert_text(text),
    "Insert text at the focus in one go, without key events (like a paste or an IME).",
)


class KeyParams(Params):
    """One key, by its name."""

    key: str = Field(min_length=1, max_length=32, description="e.g. Shift, Control, a, ArrowDown")


def key_tool(name: str, down: bool, doc: str) -> None:
    """Register ``keydown`` or ``keyup``: one definition, two directions."""

    async def handler(session: Session, params: KeyParams) -> dict[str, Any]:
        keyboard = session.page.keyboard
        try:
            await (keyboard.down if down else keyboard.up)(params.key)
        except PlaywrightError as exc:
            if "Unknown key" in str(exc):
                raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
            raise
        return {"key": params.key, "down": down}

    handler.__doc__ = doc
    TOOLS.tool(name, family="interact", gated=True, params=KeyParams, args=("key",))(handler)


key_tool("keydown", True, "Hold a key down (Shift, Control…) until keyup; later keys combine.")
key_tool("keyup", False, "Release a key held with keydown.")

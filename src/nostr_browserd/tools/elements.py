"""Reading one element's state: value, count, box, computed styles, visible/enabled/checked.

All free.  A password field's value is never returned, only whether it holds one.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator
from pydantic import Field

from ..browser.masked import masked
from ..browser.refs import first_line
from ..browser.session import Session
from ..browser.snapshot import MASK
from ..commands.params import SELECTOR_HELP, Target
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode
from .pointer import BOX_JS

TOOLS = Registry()

VALUE_JS = """el => {
  if (el.isContentEditable) return {kind: 'editable', value: el.innerText};
  if (!('value' in el) || el.tagName === 'BUTTON' || el.tagName === 'LI') return null;
  const type = (el.type || '').toLowerCase();
  if (type === 'password') return {kind: 'password', filled: el.value.length > 0};
  if (type === 'checkbox' || type === 'radio')
    return {kind: type, value: el.value, checked: el.checked};
  if (el.tagName === 'SELECT')
    return {kind: 'select', value: el.value, values: [...el.selectedOptions].map(o => o.value)};
  if (type === 'file') return {kind: 'file', files: [...el.files].map(f => f.name)};
  return {kind: type || el.tagName.toLowerCase(), value: el.value};
}"""
STYLES_JS = """(el, names) => {
  const style = getComputedStyle(el);
  return Object.fromEntries(names.map(n => [n, style.getPropertyValue(n)]));
}"""
DEFAULT_STYLES = (
    "display",
    "visibility",
    "opacity",
    "color",
    "background-color",
    "font-family",
    "font-size",
    "font-weight",
    "position",
    "z-index",
    "width",
    "height",
    "margin",
    "padding",
    "border",
    "overflow",
    "cursor",
    "pointer-events",
)


@TOOLS.tool("get_value", family="read", gated=False, params=Target, args=("target",))
async def get_value(session: Session, params: Target) -> dict[str, Any]:
    """The current value of a field (checked state too); a password field's is never shown."""
    locator = await session.locate(**params.target())
    info: dict[str, Any] | None = await locator.evaluate(VALUE_JS)
    if info is None:
        raise BrowserdError(ErrorCode.REFUSED, "Not a form field: use get_text or get_attr.")
    if info["kind"] == "password":
        info["note"] = "A password field's value is never returned."
    elif info.get("value") in masked(session.page.context):
        info["value"], info["note"] = MASK, "Filled from the vault: its value is never returned."
    return info


class CountParams(Params):
    """A CSS selector; every match counts."""

    selector: str = Field(min_length=1, max_length=1000, description=SELECTOR_HELP)


@TOOLS.tool("get_count", family="read", gated=False, params=CountParams, args=("*selector",))
async def get_count(session: Session, params: CountParams) -> dict[str, Any]:
    """How many elements match a CSS selector (open shadow roots included)."""
    try:
        count = await session.scope.locator(params.selector).count()
    except PlaywrightError as exc:
        raise BrowserdError(
            ErrorCode.INVALID_PARAMS, f"Selector does not parse: {first_line(exc)}"
        ) from None
    return {"count": count}


@TOOLS.tool("get_box", family="read", gated=False, params=Target, args=("target",))
async def get_box(session: Session, params: Target) -> dict[str, Any]:
    """An element's box in the viewport (CSS pixels) and whether it is on screen."""
    locator = await session.locate(**params.target())
    return {"box": await locator.evaluate(BOX_JS)}


class StylesParams(Target):
    """An element and, optionally, the CSS properties to read."""

    properties: list[str] | None = Field(
        None,
        max_length=50,
        description="CSS property names (default: a set about layout, colour and type)",
    )


@TOOLS.tool("get_styles", family="read", gated=False, params=StylesParams, args=("target",))
async def get_styles(session: Session, params: StylesParams) -> dict[str, Any]:
    """Computed CSS of one element: a useful default set, or the properties asked for."""
    names = params.properties or list(DEFAULT_STYLES)
    if any(not n or len(n) > 64 or not n.replace("-", "").isalnum() for n in names):
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "Property names look like font-size.")
    locator = await session.locate(**params.target())
    return {"styles": await locator.evaluate(STYLES_JS, names)}


def state_tool(name: str, probe: str, doc: str) -> None:
    """Register one ``is_*`` check; each asks Playwright the same question it asks itself."""

    async def handler(session: Session, params: Target) -> dict[str, Any]:
        locator: Locator = await session.locate(**params.target())
        try:
            answer = await getattr(locator, probe)(timeout=session.config.timeout_ms)
        except PlaywrightError as exc:
            raise BrowserdError(ErrorCode.REFUSED, first_line(exc)) from None
        return {name.removeprefix("is_"): answer}

    handler.__doc__ = doc
    TOOLS.tool(name, family="read", gated=False, params=Target, args=("target",))(handler)


state_tool("is_visible", "is_visible", "Whether one element is visible (has a size, not hidden).")
state_tool("is_enabled", "is_enabled", "Whether one element is enabled (not disabled).")
state_tool("is_checked", "is_checked", "Whether a checkbox, radio button or switch is checked.")

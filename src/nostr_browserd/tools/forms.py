"""Form controls beyond text: choose options, tick and untick, each read back afterwards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ..browser.checks import multi_control, refuse_if_covered
from ..browser.session import Session
from ..commands.params import Target
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()

OPTIONS_JS = """el => el.tagName !== 'SELECT' ? null : {
  multiple: el.multiple, disabled: el.disabled,
  options: [...el.options].map(o => ({value: o.value, label: o.label, disabled: o.disabled}))
}"""
SELECTED_JS = "el => [...el.selectedOptions].map(o => o.value)"
CHECKABLE_JS = """el => ({
  type: (el.type || '').toLowerCase(), role: el.getAttribute('role') || '',
  disabled: !!el.disabled || el.getAttribute('aria-disabled') === 'true'
})"""
CHECKABLE_ROLES = frozenset(["checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"])


class SelectParams(Target):
    """A <select> and the option(s) to choose, by value or by visible label."""

    value: str | list[str] = Field(
        description="an option's value or label; a list for a multi-select (at most 50)"
    )


def match_option(wanted: str, options: list[dict[str, Any]]) -> dict[str, Any]:
    """The option whose value is ``wanted``, else whose label is (exactly, then any case)."""
    tests: tuple[Callable[[dict[str, Any]], bool], ...] = (
        lambda o: o["value"] == wanted,
        lambda o: o["label"] == wanted,
        lambda o: o["label"].strip().casefold() == wanted.strip().casefold(),
    )
    for test in tests:
        found = next((o for o in options if test(o)), None)
        if found is not None:
            if found["disabled"]:
                raise BrowserdError(ErrorCode.REFUSED, f"Option {wanted!r} is disabled.")
            return found
    labels = ", ".join(repr(o["label"]) for o in options[:30])
    more = f" (and {len(options) - 30} more)" if len(options) > 30 else ""
    raise BrowserdError(
        ErrorCode.ELEMENT_NOT_FOUND, f"No option {wanted!r}; the options are {labels}{more}."
    )


@TOOLS.tool("select", family="interact", gated=True, params=SelectParams, args=("target", "*value"))
async def select(session: Session, params: SelectParams) -> dict[str, Any]:
    """Choose option(s) of a <select> by value or label, and read the selection back."""
    wanted = [params.value] if isinstance(params.value, str) else params.value
    if not wanted or len(wanted) > 50:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "Give 1 to 50 options.")
    locator = await session.locate(**params.target())
    info = await multi_control(
        locator,
        OPTIONS_JS,
        count=len(wanted),
        noun="list",
        item="option",
        other="Not a <select>: use click on custom dropdowns.",
    )
    chosen = [match_option(w, info["options"]) for w in wanted]
    values = [o["value"] for o in chosen]
    await locator.select_option(value=values)
    selected = await locator.evaluate(SELECTED_JS)
    labels = [o["label"] for o in chosen]
    if sorted(selected) != sorted(values):
        return {"ok": False, "selected": selected, "note": "MISMATCH: the page changed the choice."}
    return {"ok": True, "selected": labels}


def checkbox_tool(name: str, state: bool, doc: str) -> None:
    """Register ``check`` or ``uncheck``: one definition, two desired states."""

    async def handler(session: Session, params: Target) -> dict[str, Any]:
        locator = await session.locate(**params.target())
        info = await locator.evaluate(CHECKABLE_JS)
        kind = info["type"] if info["type"] in ("checkbox", "radio") else info["role"]
        if kind not in CHECKABLE_ROLES:
            raise BrowserdError(ErrorCode.REFUSED, "Not a checkbox, radio button or switch.")
        if info["disabled"]:
            raise BrowserdError(ErrorCode.REFUSED, "It is disabled: a person could not change it.")
        if not state and kind in ("radio", "menuitemradio"):
            raise BrowserdError(
                ErrorCode.REFUSED, "A radio button is unchecked by checking another one."
            )
        if await locator.is_checked() == state:
            return {"checked": state, "changed": False}
        await refuse_if_covered(locator)
        await locator.click()  # set_checked would throw when the page resists; we report it
        after = await locator.is_checked()
        result: dict[str, Any] = {"checked": after, "changed": after == state}
        if after != state:
            result["note"] = "MISMATCH: the page put it back."
        return result

    handler.__doc__ = doc
    TOOLS.tool(name, family="interact", gated=True, params=Target, args=("target",))(handler)


checkbox_tool("check", True, "Tick a checkbox, radio button or switch, and read its state back.")
checkbox_tool("uncheck", False, "Untick a checkbox or switch, and read its state back.")

"""The pointer: double-click, drag and drop, scroll into view, and the raw mouse.

Element gestures inspect first (nothing covers the element) and report what changed;
the raw mouse works in viewport pixels, for canvases, maps and sliders.
"""

from __future__ import annotations

from typing import Any, Literal

from playwright.async_api import Mouse
from pydantic import Field

from ..browser.checks import refuse_if_covered
from ..browser.refs import looks_like_ref
from ..browser.session import Session
from ..commands.params import REF_HELP, SELECTOR_HELP, Target
from ..commands.registry import Params, Registry
from .interact import act_and_compare

TOOLS = Registry()
PIXELS = 100_000
BOX_JS = """el => {
  const r = el.getBoundingClientRect();
  return {x: Math.round(r.x), y: Math.round(r.y), width: Math.round(r.width),
          height: Math.round(r.height),
          in_viewport: r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth};
}"""


def target_of(word: str) -> dict[str, str | None]:
    """``@e5`` is a ref, anything else a CSS selector: the arguments of ``Session.locate``."""
    is_ref = looks_like_ref(word)
    return {"ref": word if is_ref else None, "selector": None if is_ref else word}


@TOOLS.tool("dblclick", family="interact", gated=True, params=Target, args=("target",))
async def dblclick(session: Session, params: Target) -> dict[str, Any]:
    """Double-click one element unless covered; says what changed, after a page it opened loads."""
    locator = await session.locate(**params.target())
    await refuse_if_covered(locator)
    return await act_and_compare(session, locator.dblclick(), locator)


class DragParams(Params):
    """What to drag and where to drop it, each a ref or a selector."""

    source: str = Field(min_length=1, max_length=1000, description=f"{REF_HELP}, or a CSS selector")
    destination: str = Field(min_length=1, max_length=1000, description=SELECTOR_HELP + " or ref")


@TOOLS.tool(
    "drag", family="interact", gated=True, params=DragParams, args=("source", "destination")
)
async def drag(session: Session, params: DragParams) -> dict[str, Any]:
    """Drag one element onto another (HTML5 drag and drop and mouse-driven both work)."""
    source = await session.locate(**target_of(params.source))
    destination = await session.locate(**target_of(params.destination))
    await refuse_if_covered(source)
    return await act_and_compare(session, source.drag_to(destination), source)


@TOOLS.tool(
    "scroll_into_view",
    family="interact",
    gated=False,
    params=Target,
    args=("target",),
    read_only=False,  # it moves the page, which may load more
)
async def scroll_into_view(session: Session, params: Target) -> dict[str, Any]:
    """Scroll until one element is on screen; returns its box in the viewport."""
    locator = await session.locate(**params.target())
    await locator.scroll_into_view_if_needed()
    return {"box": await locator.evaluate(BOX_JS)}


class MoveParams(Params):
    """A point in the viewport, in CSS pixels."""

    x: float = Field(ge=0, le=PIXELS)
    y: float = Field(ge=0, le=PIXELS)
    steps: int = Field(1, ge=1, le=100, description="intermediate mousemove events")


@TOOLS.tool("mouse_move", family="mouse", gated=True, params=MoveParams, args=("x", "y"))
async def mouse_move(session: Session, params: MoveParams) -> dict[str, Any]:
    """Move the mouse to a point of the viewport (hover effects, canvases, sliders)."""
    mouse = session.page.mouse
    return await act_and_compare(session, mouse.move(params.x, params.y, steps=params.steps))


class ButtonParams(Params):
    """A mouse button."""

    button: Literal["left", "right", "middle"] = "left"


def button_tool(name: str, press: bool, doc: str) -> None:
    """Register ``mouse_down`` or ``mouse_up``: one definition, two directions."""

    async def handler(session: Session, params: ButtonParams) -> dict[str, Any]:
        mouse: Mouse = session.page.mouse
        action = (mouse.down if press else mouse.up)(button=params.button)
        return await act_and_compare(session, action)

    handler.__doc__ = doc
    TOOLS.tool(name, family="mouse", gated=True, params=ButtonParams, args=("button",))(handler)


button_tool("mouse_down", True, "Press a mouse button where the mouse is (mouse_move first).")
button_tool("mouse_up", False, "Release a mouse button pressed with mouse_down.")


class WheelParams(Params):
    """How far to turn the wheel, in pixels."""

    dy: float = Field(ge=-PIXELS, le=PIXELS, description="down when positive")
    dx: float = Field(0, ge=-PIXELS, le=PIXELS, description="right when positive")


@TOOLS.tool("mouse_wheel", family="mouse", gated=True, params=WheelParams, args=("dy", "dx"))
async def mouse_wheel(session: Session, params: WheelParams) -> dict[str, Any]:
    """Turn the mouse wheel where the mouse is (scrolls what is under it)."""
    return await act_and_compare(session, session.page.mouse.wheel(params.dx, params.dy))

"""Frames: work inside one iframe (same- or cross-origin), then go back to the main frame.

After ``frame_switch`` every ref, selector, find and script (eval, waits, scroll) works
inside that frame through ``Session.scope``, a snapshot shows only it, and each result's
state names it.  If the frame goes away (removed, or its page
navigated) the session falls back to the main frame and the next result says so.
"""

from __future__ import annotations

from typing import Any

from playwright.async_api import Frame, Page
from pydantic import Field, model_validator

from ..browser.session import Session
from ..commands.params import OptionalTarget
from ..commands.registry import NoParams, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class FrameParams(OptionalTarget):
    """The iframe: its element (ref or selector), its name, or part of its address."""

    name: str | None = Field(None, min_length=1, max_length=200, description="frame name")
    url: str | None = Field(None, min_length=1, max_length=2000, description="part of its URL")

    @model_validator(mode="after")
    def _exactly_one(self) -> FrameParams:
        given = [self.ref, self.selector, self.name, self.url]
        if sum(x is not None for x in given) != 1:
            raise ValueError("give one of ref, selector, name or url")
        return self


async def pick(session: Session, page: Page, params: FrameParams) -> Frame:
    """The one frame ``params`` names, or a coded error listing what there is."""
    if params.has_target:
        element = await session.locate(**params.target())
        frame = await (await element.element_handle()).content_frame()
        if frame is None:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "That element is not an iframe.")
        return frame
    children = [f for f in page.frames if f is not page.main_frame]
    if params.name is not None:
        matches = [f for f in children if f.name == params.name]
    else:
        matches = [f for f in children if params.url and params.url in f.url]
    if len(matches) != 1:
        known = ", ".join(f"{f.name or '(no name)'} {f.url}" for f in children) or "none"
        code = ErrorCode.AMBIGUOUS if matches else ErrorCode.ELEMENT_NOT_FOUND
        raise BrowserdError(code, f"{len(matches)} frames match; frames here: {known}.")
    return matches[0]


@TOOLS.tool(
    "frame_switch",
    family="frames",
    gated=False,
    params=FrameParams,
    args=("target",),
    flags={"n": "name", "u": "url"},
)
async def frame_switch(session: Session, params: FrameParams) -> dict[str, Any]:
    """Work inside an iframe (by ref, selector, name or URL part): targets and snapshots.

    Refs and selectors then resolve in that frame (nested frames: switch again from there).
    """
    page = session.page
    frame = await pick(session, page, params)
    assert session.tab is not None  # session.page has a tab
    session.tab.enter_frame(frame)
    return {"switched": True}


@TOOLS.tool("frame_main", family="frames", gated=False)
async def frame_main(session: Session, params: NoParams) -> dict[str, Any]:
    """Go back to the page's main frame."""
    tab = session.tab
    return {"switched": tab.leave_frame() if tab is not None else False}

"""Screenshots: PNG or JPEG, of the viewport, the full page or one element, bounded."""

from __future__ import annotations

import base64
from typing import Any, Literal

from pydantic import Field

from ..browser.masked import screen_masks
from ..browser.session import Session
from ..commands.params import OptionalTarget
from ..commands.registry import Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class ScreenshotParams(OptionalTarget):
    """What to capture and how to encode it; ref/selector capture one element."""

    format: Literal["png", "jpeg"] = "png"
    quality: int | None = Field(None, ge=1, le=100, description="JPEG quality")
    full_page: bool = Field(False, description="the whole page, not just the viewport")
    scale: Literal["css", "device"] = Field("css", description="css pixels or device pixels")
    if_changed: bool = Field(
        False, description="no picture when it is the same as this tab's last screenshot"
    )


@TOOLS.tool(
    "screenshot",
    family="output",
    gated=False,
    params=ScreenshotParams,
    args=("target",),
    flags={"f": "full_page"},
)
async def screenshot(session: Session, params: ScreenshotParams) -> dict[str, Any]:
    """A picture of the viewport, the full page or one element, as base64 PNG or JPEG."""
    if params.quality is not None and params.format != "jpeg":
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "quality applies to format=jpeg only.")
    options: dict[str, Any] = {"type": params.format, "scale": params.scale}
    if params.quality is not None:
        options["quality"] = params.quality
    async with screen_masks(session.page) as mask:  # what the vault filled, wherever shown
        if params.has_target:
            locator = await session.locate(**params.target())
            data = await locator.screenshot(mask=mask, **options)
        else:
            data = await session.page.screenshot(full_page=params.full_page, mask=mask, **options)
    tab = session.tab
    if params.if_changed and tab is not None and tab.screenshot == data:
        # A model that looked at the last one has it; one that did not asks without the flag.
        return {
            "mime": f"image/{params.format}",
            "bytes": len(data),
            "unchanged": True,
            "note": "The same picture as this tab's last screenshot: nothing on it changed.",
        }
    result = binary(
        session,
        data,
        f"image/{params.format}",
        "use format=jpeg with a lower quality, drop full_page, or capture one element",
    )
    if params.if_changed:
        result["unchanged"] = False
    if tab is not None:  # the baseline of diff_screenshot and of if_changed
        tab.screenshot = data
    return result


def binary(session: Session, data: bytes, mime: str, smaller: str) -> dict[str, Any]:
    """``{mime, bytes, base64}``, or ``TOO_LARGE`` saying how to get something ``smaller``."""
    cap = session.config.binary_cap
    if len(data) > cap:
        raise BrowserdError(
            ErrorCode.TOO_LARGE,
            f"The {mime} is {len(data):,} bytes, over the {cap:,}-byte cap: {smaller}.",
        )
    return {"mime": mime, "bytes": len(data), "base64": base64.b64encode(data).decode("ascii")}

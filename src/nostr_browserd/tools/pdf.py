"""The page as a PDF, printed by headless Chromium; bounded like every binary result."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..browser.masked import shows_filled
from ..browser.session import Session
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode
from .output import binary

TOOLS = Registry()


class PdfParams(Params):
    """Paper and print options."""

    format: Literal["A4", "A3", "A5", "Letter", "Legal", "Tabloid"] = "A4"
    landscape: bool = False
    scale: float = Field(1.0, ge=0.1, le=2.0, description="rendering scale, 0.1 to 2")
    print_background: bool = Field(False, description="include background colours and images")


@TOOLS.tool("pdf", family="output", gated=False, params=PdfParams, args=("format",))
async def pdf(session: Session, params: PdfParams) -> dict[str, Any]:
    """Print the active tab to PDF (A4 by default) and return it as base64."""
    if await shows_filled(session.page):  # a PDF keeps the page's text, masks cannot cover it
        raise BrowserdError(
            ErrorCode.REFUSED,
            "Not printed: the page shows a value filled from the vault, and a PDF would keep "
            "it. Take a screenshot (it masks the value), or print another page.",
        )
    data = await session.page.pdf(
        format=params.format,
        landscape=params.landscape,
        scale=params.scale,
        print_background=params.print_background,
    )
    return binary(session, data, "application/pdf", "print fewer pages or a smaller scale")

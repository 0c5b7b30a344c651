"""Running JavaScript in the page: gated, since a script can do anything a page can."""

from __future__ import annotations

import json
from typing import Any

from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from ..browser.refs import first_line
from ..browser.session import Session
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()


class EvalParams(Params):
    """A JavaScript expression, or a function that is called with no arguments."""

    script: str = Field(min_length=1, description="e.g. document.title or () => location.href")


@TOOLS.tool("eval", family="script", gated=True, params=EvalParams, args=("*script",), sends=True)
async def eval_(session: Session, params: EvalParams) -> dict[str, Any]:
    """Evaluate JavaScript in the active tab (or its chosen frame); returns a JSON result."""
    try:
        value = await session.scope.evaluate(params.script)
    except PlaywrightError as exc:
        message = first_line(exc)
        if "Target" in message and "closed" in message:
            raise
        raise BrowserdError(ErrorCode.INVALID_PARAMS, f"The script failed: {message}") from None
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        value = repr(value)
    return {"result": value}

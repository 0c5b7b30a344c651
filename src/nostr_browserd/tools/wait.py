"""Waiting: a fixed pause, or until an element reaches a state."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from ..errors import BrowserdError, ErrorCode
from .params import Target
from .refs import first_line, parse_ref
from .registry import Params, Registry
from .session import Session

TOOLS = Registry()
MAX_WAIT_MS = 60_000


class WaitParams(Params):
    """How long to pause."""

    ms: int = Field(ge=0, le=MAX_WAIT_MS, description="milliseconds, at most 60000")


@TOOLS.tool("wait", family="wait", gated=False, params=WaitParams, args=("ms",))
async def wait(session: Session, params: WaitParams) -> dict[str, Any]:
    """Pause for a number of milliseconds (at most 60000)."""
    await asyncio.sleep(params.ms / 1000)
    return {"waited_ms": params.ms}


class WaitForParams(Target):
    """An element and the state to wait for."""

    state: Literal["visible", "hidden", "attached", "detached"] = "visible"
    timeout_ms: int | None = Field(None, ge=0, le=MAX_WAIT_MS, description="default: config")


@TOOLS.tool("wait_for", family="wait", gated=False, params=WaitForParams, args=("target", "state"))
async def wait_for(session: Session, params: WaitForParams) -> dict[str, Any]:
    """Wait until an element is visible (or hidden, attached, detached)."""
    page = session.page
    query = f"aria-ref={parse_ref(params.ref)}" if params.ref else params.selector
    timeout = params.timeout_ms if params.timeout_ms is not None else session.config.timeout_ms
    try:
        await page.locator(query or "").wait_for(state=params.state, timeout=timeout)
    except PlaywrightError as exc:
        message = str(exc)
        if "strict mode violation" in message:
            raise BrowserdError(
                ErrorCode.AMBIGUOUS, f"{params.selector!r} matches several elements."
            ) from None
        if "Timeout" in message:
            raise BrowserdError(
                ErrorCode.TIMEOUT, f"Not {params.state} after {timeout} ms."
            ) from None
        raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
    return {"state": params.state}

"""Waiting: a fixed pause, or until an element, a text, an address, a load state or a
script's predicate is there; always bounded, and TIMEOUT says what did not come."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from pydantic import Field

from ..browser.masked import unfindable
from ..browser.refs import first_line, parse_ref
from ..browser.session import Session
from ..commands.params import Target
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
MAX_WAIT_MS = 60_000


class WaitParams(Params):
    """How long to pause."""

    ms: int = Field(ge=0, le=MAX_WAIT_MS, description="milliseconds, at most 60000")


@TOOLS.tool("wait", family="wait", gated=False, waits=True, params=WaitParams, args=("ms",))
async def wait(session: Session, params: WaitParams) -> dict[str, Any]:
    """Pause for a number of milliseconds (at most 60000)."""
    await asyncio.sleep(params.ms / 1000)
    return {"waited_ms": params.ms}


class WaitForParams(Target):
    """An element and the state to wait for."""

    state: Literal["visible", "hidden", "attached", "detached"] = "visible"
    timeout_ms: int | None = Field(None, ge=0, le=MAX_WAIT_MS, description="default: config")


@TOOLS.tool(
    "wait_for",
    family="wait",
    gated=False,
    waits=True,
    params=WaitForParams,
    args=("target", "state"),
)
async def wait_for(session: Session, params: WaitForParams) -> dict[str, Any]:
    """Wait until an element is visible (or hidden, attached, detached)."""
    query = f"aria-ref={parse_ref(params.ref)}" if params.ref else params.selector
    locator = session.scope.locator(query or "")
    if params.ref and await locator.count() == 0:  # a ref names an element seen before
        if params.state in ("hidden", "detached"):
            return {"state": params.state}
        raise BrowserdError(ErrorCode.STALE_REF, f"{params.ref} is gone: take a new snapshot.")
    timeout = params.timeout_ms if params.timeout_ms is not None else session.config.timeout_ms
    try:
        await locator.wait_for(state=params.state, timeout=timeout)
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


class Timed(Params):
    """How long to wait at most."""

    timeout_ms: int | None = Field(None, ge=0, le=MAX_WAIT_MS, description="default: config")


async def until(session: Session, what: str, timeout_ms: int | None, waiting: Any) -> int:
    """Await ``waiting(timeout)``; ``TIMEOUT`` naming ``what`` when it does not come."""
    timeout = timeout_ms if timeout_ms is not None else session.config.timeout_ms
    try:
        await waiting(timeout)
    except PlaywrightError as exc:
        if "Timeout" in str(exc):
            raise BrowserdError(ErrorCode.TIMEOUT, f"No {what} after {timeout} ms.") from None
        raise BrowserdError(ErrorCode.INVALID_PARAMS, first_line(exc)) from None
    return timeout


class WaitTextParams(Timed):
    """Text that should appear on the page."""

    text: str = Field(min_length=1, max_length=1000)
    exact: bool = Field(False, description="the whole text of an element, case-sensitively")


@TOOLS.tool(
    "wait_for_text", family="wait", gated=False, waits=True, params=WaitTextParams, args=("*text",)
)
async def wait_for_text(session: Session, params: WaitTextParams) -> dict[str, Any]:
    """Wait until some visible element shows the text."""
    shown = session.scope.get_by_text(params.text, exact=params.exact)
    locator = unfindable(shown, session.page.context).first
    await until(
        session,
        f"visible text {params.text!r}",
        params.timeout_ms,
        lambda t: locator.wait_for(state="visible", timeout=t),
    )
    return {"found": params.text}


class WaitUrlParams(Timed):
    """The address to wait for: a glob (``**/done*``) or a regular expression."""

    pattern: str = Field(min_length=1, max_length=1000)
    regex: bool = Field(False, description="pattern is a JavaScript regular expression")


# Matched in the page, never in the daemon: a pattern that backtracks without end on a long
# address would freeze the event loop, and with it every controller and the inbox.  In the
# page it costs that tab at most (V8 falls back to its linear engine: browser.endpoints).
MATCH_URL = "source => new RegExp(source).test(location.href)"


def glob_source(glob: str) -> str:
    """A URL glob as an anchored regular expression: ``**`` anything, ``*`` anything but
    ``/``, ``{a,b}`` either; everything else (``?`` included) stands for itself."""
    parts, group = ["^"], False
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**", i):
            parts.append(".*")
            i += 1
        elif char == "*":
            parts.append("[^/]*")
        elif char == "{" and not group:
            parts.append("(?:")
            group = True
        elif char == "}" and group:
            parts.append(")")
            group = False
        elif char == "," and group:
            parts.append("|")
        else:
            units = char.encode("utf-16-be")  # JavaScript strings are UTF-16
            parts += [f"\\u{units[j : j + 2].hex()}" for j in range(0, len(units), 2)]
        i += 1
    if group:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "The glob opens a { group it never closes.")
    return "".join(parts) + "$"


@TOOLS.tool(
    "wait_for_url", family="wait", gated=False, waits=True, params=WaitUrlParams, args=("pattern",)
)
async def wait_for_url(session: Session, params: WaitUrlParams) -> dict[str, Any]:
    """Wait until the address (of the tab, or of the chosen frame) matches a glob or regex."""
    scope = session.scope
    source = params.pattern if params.regex else glob_source(params.pattern)
    await until(
        session,
        f"address matching {params.pattern!r} (now {scope.url})",
        params.timeout_ms,
        lambda t: scope.wait_for_function(MATCH_URL, arg=source, timeout=t, polling=100),
    )
    return {"url": scope.url}


class WaitLoadParams(Timed):
    """The load state to reach."""

    state: Literal["load", "domcontentloaded", "networkidle"] = "load"


@TOOLS.tool(
    "wait_for_load", family="wait", gated=False, waits=True, params=WaitLoadParams, args=("state",)
)
async def wait_for_load(session: Session, params: WaitLoadParams) -> dict[str, Any]:
    """Wait for the page (or chosen frame) to reach load, domcontentloaded or networkidle."""
    page = session.scope
    await until(
        session,
        f"{params.state} state",
        params.timeout_ms,
        lambda t: page.wait_for_load_state(params.state, timeout=t),
    )
    return {"state": params.state}


class WaitFnParams(Timed):
    """A JavaScript predicate, polled until it returns something truthy."""

    script: str = Field(min_length=1, max_length=10_000, description="e.g. () => window.ready")
    interval_ms: int | None = Field(None, ge=10, le=10_000, description="default: every frame")


@TOOLS.tool(
    "wait_for_fn",
    family="wait",
    gated=True,
    waits=True,
    params=WaitFnParams,
    args=("*script",),
    sends=True,
)
async def wait_for_fn(session: Session, params: WaitFnParams) -> dict[str, Any]:
    """Wait until a JavaScript predicate is truthy (gated: it runs script, like eval)."""
    page = session.scope
    box: dict[str, Any] = {}

    async def poll(timeout: int) -> None:
        handle = await page.wait_for_function(
            params.script, timeout=timeout, polling=params.interval_ms or "raf"
        )
        box["value"] = await handle.json_value()

    await until(session, "truthy result from the script", params.timeout_ms, poll)
    value = box.get("value")
    return {"result": value if isinstance(value, str | int | float | bool) else True}

"""One protocol for every transport: JSON requests, a text grammar, coded results.

``{"id", "tool", "params"}`` → ``{"id", "success": true, "data"}`` or
``{"id", "success": false, "error": {"code", "message"}}``; ``"files": "link"`` in a request
asks for a large file as a sealed Blossom link instead of its base64 (``files.link``: what
``mcp --to`` asks).  People may type the
agent-browser style grammar instead (``click @e2``, ``fill @e3 "hello"``, ``snapshot -i``);
it is parsed with each tool's own ``args`` and ``flags`` from the registry, and such a
request gets a text reply that reads well on a phone (``render.render_text``).  ``encode``
is the one place a response becomes its wire form, text or JSON, cut to the result cap.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from pydantic import BaseModel, Field

from ..browser.masked import filled_in
from ..browser.refs import first_line
from ..errors import BrowserdError, ErrorCode
from ..redact import scrub
from ..untrusted_json import BadJSON
from ..untrusted_json import loads as loads_json
from .grammar import parse_text
from .registry import Registry, Tool
from .render import BINARY_KEYS, render_text

log = logging.getLogger(__name__)


class Request(BaseModel):
    """One command, whichever transport and syntax carried it."""

    id: int | str | None = None
    tool: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    text: bool = Field(False, exclude=True, description="came as text: reply in text")
    files: Literal["inline", "link"] = Field(
        "inline", exclude=True, description="a large file as base64, or as a Blossom link"
    )


def is_text(raw: str | dict[str, Any]) -> bool:
    """Whether a message is a line of the text grammar (``click @e2``): it gets a text reply."""
    return isinstance(raw, str) and not raw.lstrip().startswith("{")


def parse_request(raw: str | dict[str, Any], registry: Registry) -> Request:
    """A JSON object (or its text), or a line of the text grammar, as a ``Request``.

    Any malformed input, JSON or text, raises ``BrowserdError(INVALID_PARAMS)`` and
    nothing else: the command is answered, never lost.
    """
    if isinstance(raw, str) and not is_text(raw):
        try:
            raw = loads_json(raw)
        except BadJSON as exc:
            raise BrowserdError(ErrorCode.INVALID_PARAMS, f"{exc}.") from None
    if isinstance(raw, dict):
        if not isinstance(raw.get("tool"), str) or not raw["tool"]:
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS, 'A request is {"id", "tool", "params"}: tool is missing.'
            )
        if not isinstance(raw.get("params", {}), dict):
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "params must be an object.")
        if not isinstance(raw.get("id"), int | str | None):
            raise BrowserdError(ErrorCode.INVALID_PARAMS, "id must be a number or a string.")
        files = raw.get("files", "inline")
        if files not in ("inline", "link"):
            raise BrowserdError(
                ErrorCode.INVALID_PARAMS,
                'files is "inline" (base64, the default) or "link" (a large file on Blossom).',
            )
        return Request(
            id=raw.get("id"), tool=raw["tool"], params=raw.get("params") or {}, files=files
        )
    return Request(**parse_text(raw, registry), text=True)


@dataclass
class Progress:
    """How far a request got: what a deadline's reply may truthfully say (daemon/running.py).

    ``started``: its action began (the session was its own and ready); ``done``: the action
    ended by itself (returned, failed, or a dialog holds it), so whatever it does was done.
    Started and not done: it was cancelled, and awaited, in the middle of its action.
    """

    started: bool = False
    done: bool = False


async def run(
    registry: Registry, session: Any, request: Request, progress: Progress | None = None
) -> dict[str, Any]:
    """Run one request against ``session``; always returns a response, never raises (but
    a cancellation, which ``progress`` then explains).

    Whatever the page did with a value the vault filled into it (copied it into its text,
    an attribute, its title), the response shows ``MASK`` in its place (browser/masked.py).
    """
    response = await _run(registry, session, request, progress or Progress())
    windows = getattr(session, "windows", {})
    return scrub(response, filled_in(windows.values())) if windows else response


async def _run(
    registry: Registry, session: Any, request: Request, progress: Progress
) -> dict[str, Any]:
    try:
        tool, params = registry.validate(request.tool, request.params)
        if not tool.needs_session:
            progress.started = True
            data = await tool.run(registry, session, params)
            progress.done = True
        else:
            async with session.lock:
                await session.ready()
                recorder = session.stream.recorder
                if recorder is not None and acts_on_page(tool):
                    recorder.begin(step_caption(request))
                try:
                    data = await _act(registry, session, tool, params, progress)
                finally:
                    if recorder is not None:
                        recorder.end()  # the answer is ready: the step's frames are encoded now
        return {"id": request.id, "success": True, "data": cap(data, session.config.result_cap)}
    except (BrowserdError, PlaywrightError) as exc:
        error = coded(session, exc)
    except Exception as exc:
        log.exception("tool %s failed", request.tool)
        error = BrowserdError(ErrorCode.INTERNAL, f"Unexpected {type(exc).__name__}: {exc}")
    return {"id": request.id, "success": False, "error": error.to_dict()}


async def _act(
    registry: Registry, session: Any, tool: Tool[Any], params: Any, progress: Progress
) -> dict[str, Any]:
    """Run ``tool`` on the session (its lock held), then add where the tab now is."""
    progress.started = True
    action = asyncio.ensure_future(tool.run(registry, session, params))
    try:
        interrupted, data = await session.dialogs.until(action)
    except asyncio.CancelledError:  # the deadline: did it stop, or end first?
        progress.done = action.done() and not action.cancelled()
        raise
    progress.done = True  # ended, or a dialog holds it (it ends once answered)
    if interrupted:
        data = {"note": "A dialog opened; the command finishes once it is answered."}
    await session.chores.settle()
    state = await session.state(fresh=acts_on_page(tool))
    state |= place_told(session, state, tool, data)
    return {**data, **{k: v for k, v in state.items() if k not in data}}


PLACE_KEYS = ("tab", "url", "title", "frame")


def place_told(
    session: Any, state: dict[str, Any], tool: Tool[Any], data: dict[str, Any]
) -> dict[str, Any]:
    """``{"same_place": True}`` when the tab, its address, title and frame are what this
    controller's previous reply carried: the text reply then leaves the tab's line out,
    since nothing in it is news (``render.state_lines``).  JSON keeps them all.

    A tool whose answer is where the tab is (``reports_place``: it goes somewhere, or lists or
    closes tabs), or that answers with the address or title itself (``get url``), always
    shows the line: there it is the answer.
    """
    place = tuple(state.get(key) for key in PLACE_KEYS)
    answers = tool.reports_place or any(key in data for key in PLACE_KEYS)
    same = not answers and place == getattr(session, "place_told", None)
    session.place_told = place
    return {"same_place": True} if same else {}


def step_caption(request: Request) -> str:
    """A recorded step's caption: the command as a person would type it, secrets left out."""
    params = request.params
    words = [request.tool.replace("_", " ")]
    target = params.get("ref") or params.get("selector") or params.get("url")
    if isinstance(target, str):
        words.append(target)
    value = params.get("value", params.get("text", params.get("key")))
    if isinstance(value, str) and value:
        words.append("•••" if params.get("secret") else json.dumps(value[:40], ensure_ascii=False))
    return " ".join(words)


def acts_on_page(tool: Tool[Any]) -> bool:
    """Whether a tool may have changed the page (not read-only) or waited for it to change.

    After the others, the result's title comes from the session's cache, which the page's
    own reports keep current, rather than from one more round trip to the browser.
    """
    return not tool.read_only or tool.waits


def coded(session: Any, exc: BrowserdError | PlaywrightError) -> BrowserdError:
    """A tool's failure as the coded error a controller gets (batches report the same).

    Whatever a tool made of it, a failure while the browser died is ``BROWSER_CRASHED``; the
    session then knows its controller was told (its next command starts afresh in silence).
    """
    error = _coded(session, exc)
    if error.code is ErrorCode.BROWSER_CRASHED and getattr(session, "browser_lost", False):
        session.crash_reported()
    return error


def _coded(session: Any, exc: BrowserdError | PlaywrightError) -> BrowserdError:
    died = getattr(session, "browser_lost", False)
    if died and isinstance(exc, BrowserdError) and exc.code is not ErrorCode.BROWSER_CRASHED:
        return BrowserdError(ErrorCode.BROWSER_CRASHED, f"{BROWSER_GONE} ({exc.message})")
    if isinstance(exc, BrowserdError):
        return exc
    if isinstance(exc, PlaywrightTimeout):
        return BrowserdError(ErrorCode.TIMEOUT, f"Timed out: {first_line(exc)}")
    return playwright_error(session, exc)


BROWSER_GONE = (
    "The browser stopped (crashed, killed, or its server lost); the next command starts on a "
    "fresh one, with fresh tabs."
)


def playwright_error(session: Any, exc: PlaywrightError) -> BrowserdError:
    """A crashed or killed browser is BROWSER_CRASHED; anything else is INTERNAL."""
    message = first_line(exc)
    gone = "closed" in message or "crashed" in message.lower()
    if gone and getattr(session, "browser_lost", False):
        return BrowserdError(ErrorCode.BROWSER_CRASHED, BROWSER_GONE)
    if gone:
        return BrowserdError(
            ErrorCode.BROWSER_CRASHED, f"The tab closed or crashed: {message}. See tab_list."
        )
    return BrowserdError(ErrorCode.INTERNAL, message)


def cap(data: Any, limit: int) -> Any:
    """Cut the longest text fields until the result fits ``limit`` characters; flag it."""
    if not isinstance(data, dict):
        return data
    over = text_size(data) - limit
    if over <= 0:
        return data
    data = json.loads(json.dumps(data))
    while over > 0:
        holder, key, value = longest_string(data)
        if holder is None or len(value) < 100:
            break
        keep = max(0, len(value) - over - 100)
        holder[key] = value[:keep] + f"… [cut {len(value) - keep:,} characters]"
        over = text_size(data) - limit
    data["truncated"] = True
    data["note"] = f"Result cut to fit {limit:,} characters: ask for less (a target, a scope)."
    return data


def text_size(data: Any) -> int:
    """Characters of text in a result (keys and values), binary fields excepted."""
    if isinstance(data, dict):
        return sum(len(k) + text_size(v) for k, v in data.items() if k not in BINARY_KEYS)
    if isinstance(data, list):
        return sum(text_size(v) for v in data)
    return len(data) if isinstance(data, str) else len(str(data))


def longest_string(node: Any) -> tuple[Any, Any, str]:
    """(container, key, value) of the longest string leaf, binary fields excepted."""
    best: tuple[Any, Any, str] = (None, None, "")
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if key in BINARY_KEYS:
            continue
        if isinstance(value, str) and len(value) > len(best[2]):
            best = (node, key, value)
        elif isinstance(value, dict | list):
            candidate = longest_string(value)
            if len(candidate[2]) > len(best[2]):
                best = candidate
    return best


def encode(response: dict[str, Any], as_text: bool, cap: int) -> str:
    """A response's wire form: text for a person (answer cut to ``cap``), else compact JSON."""
    if as_text:
        return render_text(response, cap)
    return json.dumps(response, ensure_ascii=False, separators=(",", ":"))

"""Recordings of a session: a HAR of its requests and a Playwright trace of its window.

Playwright records a HAR only into a context created for it, so har_start/har_stop build
the HAR (1.2) from the requests the session's tabs make in between (``RequestLog.start``:
only then do they listen to each one), headers with credentials redacted, no bodies.  A
trace is Playwright tracing on the active window.  Either comes back by name with its size
and, when it fits the binary cap, its bytes; with a state_dir it is also kept there.  Never
a local path.
"""

from __future__ import annotations

import base64
import json
import tempfile
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playwright.async_api import BrowserContext
from pydantic import Field

from .. import __version__
from ..browser.masked import masked
from ..browser.paths import NAME, configured, owner_dir
from ..browser.requestlog import RECORDED_MAX, Exchange, size
from ..browser.session import Session
from ..commands.registry import NoParams, Params, Registry
from ..errors import BrowserdError, ErrorCode
from ..redact import redact_headers

TOOLS = Registry()
TRACING: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
SUFFIXES = {"har": "har", "trace": "zip", "mp4": "mp4", "webm": "webm"}


class RecordingName(Params):
    """What to call the recording."""

    name: str | None = Field(None, pattern=NAME.pattern, description="letters, digits, _ or -")


def deliver(session: Session, name: str | None, kind: str, data: bytes) -> dict[str, Any]:
    """A recording's name, size, and bytes when small; kept under state_dir when set and
    the owner's file quota has room (else only returned, saying why it was not kept)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    suffix = SUFFIXES[kind]
    filename = f"{name or kind + '-' + stamp}.{suffix}"
    result: dict[str, Any] = {"name": filename, "bytes": len(data), "stored": False}
    small = len(data) <= session.config.binary_cap
    if session.config.state_dir is not None:
        base = configured(session.config.state_dir, "state_dir", "Recording")
        recordings = owner_dir(base, session.owner) / "recordings"
        recordings.mkdir(mode=0o700, exist_ok=True)
        try:
            session.pool.quota.write(session.owner, recordings / filename, data, replace=True)
            result["stored"] = True
        except BrowserdError as exc:
            if not small:
                raise
            result["note"] = f"Not kept on the daemon: {exc.message}"
    if small:
        result["base64"] = base64.b64encode(data).decode("ascii")
    elif not result["stored"]:
        raise BrowserdError(
            ErrorCode.TOO_LARGE,
            f"The {kind} is {len(data):,} bytes, over the binary cap, and no state_dir is "
            "set to keep it: record less.",
        )
    else:
        result["note"] = "Too large to return; kept in the state directory."
    return result


@TOOLS.tool("har_start", family="recording", gated=True)
async def har_start(session: Session, params: NoParams) -> dict[str, Any]:
    """Start recording this session's requests (every tab) for har_stop."""
    session.log.requests.start({tab.id: tab.page for tab in session.tabs.values()})
    return {"recording": True}


def pairs(headers: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in redact_headers(headers).items()]


async def har_entry(entry: Exchange) -> dict[str, Any]:
    """One HAR 1.2 entry: request, response (no body) and timings, credentials redacted."""
    request = entry.request
    response, failure, length = request.existing_response, request.failure, size(request)
    timing = request.timing
    waited = max(timing["responseStart"] - timing["requestStart"], 0)
    received = max(timing["responseEnd"] - timing["responseStart"], 0)
    started = datetime.fromtimestamp(entry.started, UTC).isoformat()
    body = request.post_data_buffer or b""
    answer: dict[str, Any] = {"status": 0, "statusText": failure or "", "headers": []}
    mime = ""
    if response is not None:
        headers = await response.all_headers()
        mime = headers.get("content-type", "")
        answer = {"status": response.status, "statusText": response.status_text}
        answer["headers"] = pairs(headers)
    return {
        "startedDateTime": started,
        "time": waited + received,
        "request": {
            "method": request.method,
            "url": request.url,
            "httpVersion": "HTTP/1.1",
            "headers": pairs(await request.all_headers()),
            "queryString": [],
            "cookies": [],
            "headersSize": -1,
            "bodySize": len(body),
        },
        "response": {
            **answer,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "content": {"size": length if length is not None else -1, "mimeType": mime},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": length if length is not None else -1,
        },
        "cache": {},
        "timings": {"send": 0, "wait": waited, "receive": received},
        "_tab": entry.tab,
    }


@TOOLS.tool(
    "har_stop",
    family="recording",
    gated=True,
    params=RecordingName,
    args=("name",),
    destructive=True,
)
async def har_stop(session: Session, params: RecordingName) -> dict[str, Any]:
    """Stop recording and return the HAR of the requests since har_start (no bodies)."""
    log = session.log.requests
    dropped = log.dropped
    recorded = log.stop()
    if recorded is None:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "No HAR is being recorded: har_start first.")
    entries = [await har_entry(e) for e in recorded]
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "nostr-browserd", "version": __version__},
            "pages": [],
            "entries": entries,
        }
    }
    result = deliver(session, params.name, "har", json.dumps(har).encode())
    result["entries"] = len(entries)
    if dropped:
        result["note"] = (
            f"The oldest {dropped} requests were dropped (a HAR keeps the newest {RECORDED_MAX})."
        )
    return result


class TraceParams(Params):
    """What the trace captures besides actions and network."""

    screenshots: bool = Field(True, description="a filmstrip of screenshots")
    snapshots: bool = Field(True, description="DOM snapshots at each action")


@TOOLS.tool("trace_start", family="recording", gated=True, params=TraceParams)
async def trace_start(session: Session, params: TraceParams) -> dict[str, Any]:
    """Start a Playwright trace of the active window (open it with playwright show-trace)."""
    context = session.page.context
    if context in TRACING:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "A trace is already running: trace_stop.")
    if masked(context):
        raise BrowserdError(
            ErrorCode.REFUSED,
            "This window holds values filled from the vault, which a trace's DOM snapshots "
            "would keep: trace in a new window (window_new).",
        )
    await context.tracing.start(screenshots=params.screenshots, snapshots=params.snapshots)
    TRACING.add(context)
    return {"tracing": True}


@TOOLS.tool(
    "trace_stop",
    family="recording",
    gated=True,
    params=RecordingName,
    args=("name",),
    destructive=True,
)
async def trace_stop(session: Session, params: RecordingName) -> dict[str, Any]:
    """Stop the trace and return the zip (by name and size, with its bytes when small)."""
    context = session.page.context
    if context not in TRACING:
        raise BrowserdError(ErrorCode.INVALID_PARAMS, "No trace is running: trace_start first.")
    TRACING.discard(context)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "trace.zip"
        await context.tracing.stop(path=path)
        data = path.read_bytes()
    return deliver(session, params.name, "trace", data)

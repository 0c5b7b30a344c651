"""Fetch a page without rendering it, through curl_reap (an optional extra).

No script runs and no browser state is touched, so it is free.  The address obeys the
browser's scheme rules (``urls.resolve``) and must be https besides; the text returned is
capped like every result.  Without curl_reap the tool says how to install it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from ..browser.session import Session
from ..browser.urls import resolve
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
MODULE = "curl_reap"
INSTALL = "pip install 'nostr-browserd[scrape]'"


class ScrapeParams(Params):
    """An https address and the form of the text wanted."""

    url: str = Field(min_length=1, max_length=2000)
    format: Literal["markdown", "html"] = Field("markdown", description="readable text or HTML")


def available() -> bool:
    """Whether curl_reap can be imported by this interpreter."""
    return importlib.util.find_spec(MODULE) is not None


@TOOLS.tool("scrape", family="fetch", gated=False, params=ScrapeParams, args=("*url",))
async def scrape(session: Session, params: ScrapeParams) -> dict[str, Any]:
    """Fetch an https page without rendering it (no scripts) as markdown or HTML."""
    config = session.config
    url = resolve(params.url, config.allowed_schemes, config.search_url)
    if urlsplit(url).scheme != "https":
        raise BrowserdError(ErrorCode.REFUSED, "scrape fetches https addresses only.")
    if not available():
        raise BrowserdError(
            ErrorCode.UNAVAILABLE, f"scrape needs curl_reap, which is not installed: {INSTALL}"
        )
    cap = config.result_cap
    argv = [sys.executable, "-m", f"{MODULE}.cli", "get", url, "--max-len", str(cap)]
    if params.format == "html":
        argv[-2:] = ["--html"]
    text, error, code = await run_bounded(argv, cap, config.timeout_ms / 1000)
    if code != 0:
        reason = error.strip().splitlines()[-1:] or [f"exit status {code}"]
        raise BrowserdError(ErrorCode.NAVIGATION_FAILED, f"Could not fetch {url}: {reason[0]}")
    return {"url": url, "text": text[:cap], "truncated": len(text) > cap}


async def run_bounded(argv: list[str], limit: int, timeout: float) -> tuple[str, str, int]:
    """Run ``argv``: stdout up to ``limit`` characters (then it is stopped), stderr's tail."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    most = limit * 4 + 4  # UTF-8: at most four bytes a character

    async def head(stream: asyncio.StreamReader) -> bytes:
        data = b""
        while chunk := await stream.read(65536):
            data += chunk
            if len(data) >= most:  # enough: stop the fetch rather than buffer the rest
                process.kill()
                break
        return data[:most]

    async def tail(stream: asyncio.StreamReader) -> bytes:
        data = b""
        while chunk := await stream.read(65536):
            data = (data + chunk)[-4000:]
        return data

    try:
        async with asyncio.timeout(timeout):
            out, error = await asyncio.gather(head(process.stdout), tail(process.stderr))
            code = await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise BrowserdError(ErrorCode.TIMEOUT, f"The fetch took over {timeout:g} s.") from None
    full = len(out) >= most  # killed on purpose: not a failure
    return out.decode("utf-8", "replace"), error.decode("utf-8", "replace"), 0 if full else code

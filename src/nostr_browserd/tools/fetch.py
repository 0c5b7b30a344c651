"""Fetch a page without rendering it, through curl-reap (an optional extra).

No script runs and no browser state is touched, so it is free.  The address obeys the
browser's scheme rules (``urls.resolve``) and must be https besides; so must every redirect,
and each hop passes the network policy (for an owner under ``block_private_networks`` the
connection itself goes through the egress proxy, which judges the address it connects to).
The body is bounded, the whole fetch has a deadline, and the text returned is capped like
every result.  curl-reap blocks, so it runs on threads of this tool's own, never asyncio's
default executor, and holds one of the owner's fetch slots (``BUSY`` when all are taken)
until its thread returns, even when the command was stopped before.  Without curl-reap the
tool says how to install it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from ..browser.pool import FETCHES
from ..browser.session import Session
from ..browser.urls import resolve
from ..commands.registry import Params, Registry
from ..errors import BrowserdError, ErrorCode

TOOLS = Registry()
INSTALL = "pip install curl-reap"
MAX_BODY = 8 * 1024 * 1024  # bytes of HTML read at most
THREADS = ThreadPoolExecutor(FETCHES, thread_name_prefix="scrape")  # no more than fetch slots


class ScrapeParams(Params):
    """An https address and the form of the text wanted."""

    url: str = Field(min_length=1, max_length=2000)
    format: Literal["markdown", "html"] = Field("markdown", description="readable text or HTML")


def curl_reap() -> Any:
    """The curl_reap module, or ``UNAVAILABLE`` saying how to install it."""
    try:
        import curl_reap as module
    except ImportError:
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            f"scrape needs curl-reap, which is not installed: {INSTALL} "
            "(or the nostr-browserd[scrape] extra)",
        ) from None
    return module


@TOOLS.tool("scrape", family="fetch", gated=False, params=ScrapeParams, args=("*url",), sends=True)
async def scrape(session: Session, params: ScrapeParams) -> dict[str, Any]:
    """Fetch an https page without rendering it (no scripts) as markdown or HTML."""
    config = session.config
    url = resolve(params.url, config.allowed_schemes, config.search_url)
    if urlsplit(url).scheme != "https":
        raise BrowserdError(ErrorCode.REFUSED, "scrape fetches https addresses only.")
    reap = curl_reap()
    loop = asyncio.get_running_loop()
    refusal: list[BrowserdError] = []

    def allowed(hop: str) -> bool:
        """curl-reap asks before every hop, from its thread: judged on the event loop."""
        if urlsplit(hop).scheme != "https":
            refusal.append(BrowserdError(ErrorCode.REFUSED, f"Redirected to {hop}: https only."))
            return False
        judged = asyncio.run_coroutine_threadsafe(session.reach.check_url(hop), loop)
        reason = judged.result(timeout=30)
        if reason is not None:
            refusal.append(BrowserdError(ErrorCode.FORBIDDEN, reason))
        return reason is None

    proxy = await session.reach.proxy_url()
    client = reap.Session(
        timeout=config.timeout_ms / 1000,
        retries=0,
        url_policy=allowed,
        max_body_bytes=MAX_BODY,
        max_redirects=5,
        verify=str(config.scrape_ca_file) if config.scrape_ca_file else True,
        proxy=proxy,
        trust_env=proxy is None,
    )

    def fetch() -> tuple[bool, int, str]:
        response = client.get(url)
        if not response.ok:
            return False, response.status, ""
        text = response.text if params.format == "html" else response.markdown()
        return True, response.status, text

    release = await session.pool.fetches.claim(session.owner)

    def returned(done: asyncio.Future[tuple[bool, int, str]]) -> None:
        """The thread is free: so is the slot (a stopped command's error is dropped here)."""
        release()
        if not done.cancelled():
            done.exception()

    running = loop.run_in_executor(THREADS, fetch)
    running.add_done_callback(returned)
    try:
        ok, status, text = await asyncio.shield(running)
    except reap.URLPolicyError:
        raise refusal[-1] from None
    except Exception as exc:  # curl-reap's transport, TLS and decoding errors
        raise BrowserdError(
            ErrorCode.NAVIGATION_FAILED, f"Could not fetch {url}: {str(exc)[:300]}"
        ) from None
    if not ok:
        raise BrowserdError(ErrorCode.NAVIGATION_FAILED, f"HTTP {status} for {url}.")
    cap = config.result_cap
    return {"url": url, "text": text[:cap], "truncated": len(text) > cap}

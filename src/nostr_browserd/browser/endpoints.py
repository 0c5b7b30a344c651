"""Where browser contexts live: the Chromium this daemon launches, or browser servers it joins.

With no ``[browser] endpoints`` the pool launches one local Chromium (relaunched when it
dies).  Otherwise each endpoint is a browser elsewhere: ``ws://``/``wss://`` a Playwright
browser server (``playwright launch-server`` or ``run-server``), ``http://``/``https://`` (or
a ``ws://…/devtools/browser/…`` address) a Chromium's DevTools endpoint.  A lost endpoint is
connected again in the background, with backoff, while its controllers' next commands go to
the endpoints that are up.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
from collections.abc import Awaitable
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from playwright.async_api import Browser, Playwright
from playwright.async_api import Error as PlaywrightError

from ..errors import BrowserdError, ErrorCode

log = logging.getLogger(__name__)

LAUNCH_ARGS = [
    "--disable-gpu",
    "--disable-dev-shm-usage",
    # A regular expression that backtracks without end (wait_for_url's, a page's own) falls
    # back to V8's linear-time engine instead of holding its renderer.
    "--js-flags=--enable-experimental-regexp-engine-on-excessive-backtracks",
    # WebRTC's UDP (a STUN request to 127.0.0.1:U) goes around the proxy and the routes that
    # hold the network policy: only what can go through the proxy is left to it.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
]
# Where Chromium's sandbox cannot run, the daemon does not start unless told it may run without.
SANDBOX_OFF = "or set [browser] sandbox = false to run Chromium without its sandbox"
SANDBOX_FAILED = (
    "Chromium's sandbox could not start: it needs unprivileged user namespaces "
    "(sysctl user.max_user_namespaces > 0, and kernel.unprivileged_userns_clone = 1 where that "
    f"exists; a container may forbid them). Allow them, {SANDBOX_OFF}."
)
Kind = Literal["local", "playwright", "cdp"]
SCHEMES: dict[str, Kind] = {"ws": "playwright", "wss": "playwright", "http": "cdp", "https": "cdp"}
DEVTOOLS_PATH = "/devtools/"
CONNECT_TIMEOUT_MS = 15_000
RETRY_FIRST, RETRY_CAP = 1.0, 30.0
LOCAL: Kind = "local"
# Playwright started before the pool was made, and the local browser launched on it (none
# where the pool joins browser servers): ``BrowserPool(early=…)``.
Launched = tuple[Playwright, "Endpoint | None"]


class LaunchSettings(Protocol):
    """What an endpoint reads of ``[browser]`` (``config.BrowserConfig``, which imports us)."""

    executable: str | None
    headless: bool
    sandbox: bool
    endpoints: list[str]

    def find_executable(self) -> str:
        """The Chromium to launch here."""
        ...


def refuse_sandbox_as_root() -> None:
    """Chromium refuses its sandbox to root: say so before it fails with a cryptic log."""
    if os.geteuid() == 0:
        raise BrowserdError(
            ErrorCode.UNAVAILABLE,
            "Chromium's sandbox cannot run as root (Chromium refuses it): run the daemon as an "
            f"unprivileged user (the systemd unit does, with DynamicUser), {SANDBOX_OFF}.",
        )


def check_endpoint(url: str) -> str:
    """``url`` if it names a browser server or a DevTools endpoint, else a ValueError."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError(
            f"{shown_url(url)!r} is not a browser endpoint: ws:// or wss:// (a Playwright "
            "browser server) or http://, https:// or ws://…/devtools/… (a Chromium DevTools "
            "endpoint)"
        )
    return url


def endpoint_kind(url: str) -> Kind:
    """A Playwright server, or a DevTools endpoint (http, or a ws address under /devtools/)."""
    parts = urlsplit(url)
    return "cdp" if parts.path.startswith(DEVTOOLS_PATH) else SCHEMES[parts.scheme]


def shown_url(url: str) -> str:
    """``url`` fit for status and logs: scheme, host and port; no user, path or query.

    A browser server's path is often its only secret (launchServer's random ``wsPath``), and
    services put tokens in the query.
    """
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    rest = "/…" if parts.path.strip("/") or parts.query else ""
    return f"{parts.scheme}://{host}{port}{rest}"


def on_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine's loopback (the egress proxy is reachable)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Endpoint:
    """One browser that contexts are placed on, its state and the task that reconnects it."""

    def __init__(self, url: str | None, config: LaunchSettings) -> None:
        self.url = url
        self.config = config
        self.kind: Kind = endpoint_kind(url) if url else LOCAL
        self.browser: Browser | None = None
        self.error: str | None = None
        self._retry: asyncio.Task[None] | None = None
        self._playwright: Playwright | None = None
        self._closing = False

    @property
    def shown(self) -> str:
        """How status and logs name it (never with credentials or a secret path)."""
        return shown_url(self.url) if self.url else LOCAL

    @property
    def alive(self) -> bool:
        """Whether its browser is connected."""
        return self.browser is not None and self.browser.is_connected()

    @property
    def loopback(self) -> bool:
        """Whether its browser runs on this machine: the launched one, or a loopback server."""
        return self.url is None or on_loopback(self.url)

    @property
    def state(self) -> str:
        """up, reconnecting (a background task is trying) or down."""
        if self.alive:
            return "up"
        return "reconnecting" if self._retry is not None and not self._retry.done() else "down"

    async def open(self, playwright: Playwright) -> Browser:
        """Launch or connect its browser; errors say which endpoint, never its secrets."""
        self._playwright = playwright
        try:
            browser = await self._open(playwright, self.config)
        except PlaywrightError as exc:
            self.error = self.plain(exc)
            raise BrowserdError(
                ErrorCode.UNAVAILABLE, f"browser endpoint {self.shown}: {self.error}"
            ) from None
        self.browser, self.error = browser, None
        browser.on("disconnected", lambda _b: self._lost(browser))
        return browser

    async def _open(self, playwright: Playwright, config: LaunchSettings) -> Browser:
        chromium = playwright.chromium
        if self.kind == "cdp":
            assert self.url is not None
            return await chromium.connect_over_cdp(self.url, timeout=CONNECT_TIMEOUT_MS)
        if self.kind == "playwright":
            assert self.url is not None
            options = json.dumps(launch_options(config, remote=True))
            return await chromium.connect(
                self.url,
                timeout=CONNECT_TIMEOUT_MS,
                headers={"x-playwright-launch-options": options},
            )
        if config.sandbox:
            refuse_sandbox_as_root()
        else:
            log.warning("Chromium runs WITHOUT its sandbox ([browser] sandbox = false)")
        try:
            return await chromium.launch(**launch_options(config, remote=False))
        except PlaywrightError as exc:
            if config.sandbox and "sandbox" in str(exc).lower():
                raise BrowserdError(ErrorCode.UNAVAILABLE, SANDBOX_FAILED) from None
            raise

    def plain(self, exc: BaseException) -> str:
        """The first line of an error, with the endpoint's address and path hidden."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if self.url:
            text = text.replace(self.url, self.shown)
            secret = urlsplit(self.url).path.strip("/")
            if secret:
                text = text.replace(secret, "…")
        return text[:300]

    def _lost(self, browser: Browser) -> None:
        """Its browser disconnected: a remote one is tried again in the background."""
        if browser is not self.browser or self._closing:
            return
        self.browser = None
        self.error = "disconnected"
        log.warning("browser endpoint %s is lost", self.shown)
        self.reconnect()

    def reconnect(self) -> None:
        """Try to connect a remote endpoint again in the background, until it answers."""
        busy = self._retry is not None and not self._retry.done()
        if self.kind == LOCAL or self._closing or busy or self._playwright is None:
            return
        self._retry = asyncio.create_task(self._reconnect(self._playwright))

    async def _reconnect(self, playwright: Playwright) -> None:
        delay = RETRY_FIRST
        while not self._closing and not self.alive:
            try:
                await self.open(playwright)
            except Exception as exc:  # never let the retry die: the endpoint would stay lost
                if not isinstance(exc, BrowserdError):
                    self.error = self.plain(exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_CAP)
            else:
                log.info("browser endpoint %s is back", self.shown)

    async def close(self) -> None:
        """Stop reconnecting and let go of its browser (a server's browser keeps running)."""
        self._closing = True
        if self._retry is not None:
            self._retry.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retry
        if self.browser is not None:
            with contextlib.suppress(Exception):
                await self.browser.close()
        self.browser = None

    def status(self, contexts: int, limit: int | None, context_mb: float) -> dict[str, Any]:
        """What ``status`` shows of it."""
        return {
            "url": self.shown,
            "kind": self.kind,
            "state": self.state,
            "contexts": contexts,
            "limit": limit,
            "estimated_mb": round(contexts * context_mb, 1),
            "error": None if self.alive else self.error,
        }


async def launch_early(driver: Awaitable[Playwright], config: LaunchSettings) -> Launched:
    """Playwright, once ``driver`` has started it, and the local Chromium launched on it (none
    when ``config`` names browser servers), for a pool made later (``BrowserPool(early=…)``).

    ``nostr-browserd run`` starts the driver before it reads its config (``cli.run``).
    """
    playwright = await driver
    if config.endpoints:
        return playwright, None
    endpoint = Endpoint(None, config)
    try:
        await endpoint.open(playwright)
    except BaseException:
        await playwright.stop()
        raise
    return playwright, endpoint


def launch_options(config: LaunchSettings, remote: bool) -> dict[str, Any]:
    """How Chromium is launched: here as keyword arguments, for a server in its own names.

    A ``playwright run-server`` applies ``executablePath``, ``args`` and ``chromiumSandbox``
    only when started with ``--unsafe``; ``playwright launch-server --config`` takes them from
    its own file and ignores these.
    """
    if not remote:
        return {
            "executable_path": config.find_executable(),
            "headless": config.headless,
            "args": LAUNCH_ARGS,
            "chromium_sandbox": config.sandbox,
        }
    options: dict[str, Any] = {
        "headless": config.headless,
        "args": LAUNCH_ARGS,
        "chromiumSandbox": config.sandbox,
    }
    if config.executable:
        options["executablePath"] = config.executable
    return options

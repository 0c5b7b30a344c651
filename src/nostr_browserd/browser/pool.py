"""The browsers every session's context is placed on, relaunched or reconnected when lost.

A ``BrowserPool`` places contexts on its endpoints: the Chromium it launches, or browser
servers (``endpoints.py``), the least loaded first.  Every owner gets one ``Session``
(everyone the same one under ``isolation = "shared"``).  When a browser dies the pool
relaunches it (or moves the session to another endpoint) and binds the session again, with
its saved state when the daemon keeps one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from ..capacity import Capacity
from ..errors import BrowserdError, ErrorCode
from .config import BrowserConfig
from .downloads import refuse_unasked
from .egress import EgressProxy
from .endpoints import LOCAL, Endpoint, Launched
from .netpolicy import NetworkPolicy
from .quota import FileQuota
from .screencast import Fanout
from .session import EventCallback, Session
from .shelf import StateShelf
from .window import Window

if TYPE_CHECKING:
    from ..vault.entry import Keeper

log = logging.getLogger(__name__)

StateHook = Callable[[str], Awaitable[dict[str, Any] | None]]
FETCHES, FETCHES_PER_OWNER = 32, 4  # download --url and scrape at once: in all, one owner


class BrowserPool:
    """The browsers every session's context is placed on, relaunched or reconnected when lost."""

    def __init__(
        self,
        config: BrowserConfig | None = None,
        *,
        shelf: StateShelf | None = None,
        vault: Keeper | None = None,
        initial_state: StateHook | None = None,
        early: Awaitable[Launched] | None = None,
        spare_for: str | None = None,
        quota: FileQuota | None = None,
    ) -> None:
        """``shelf`` keeps saved states (the daemon's store); ``vault`` is the credential
        vault (the daemon's store and key); ``initial_state(owner)`` is what an owner's fresh
        context starts with (its saved session), if anything; ``early``: the local browser's
        launch, begun before the pool was made (``endpoints.launch_early``); ``spare_for``: the
        owner whose first window is made once the local browser is up, before it asks (the
        local channel's, whose command comes first on a cold start); ``quota``: what each
        owner's files may take of the disk (by default ``FileQuota``'s own limits)."""
        self.config = config or BrowserConfig()
        self.quota = quota or FileQuota(self.config)
        self._playwright: Playwright | None = None
        self._early = early
        urls = self.config.endpoints
        self.endpoints = [Endpoint(url, self.config) for url in urls] or [
            Endpoint(None, self.config)
        ]
        self._sessions: dict[str, Session] = {}
        self._lock = asyncio.Lock()
        self.listeners: list[EventCallback] = []
        self.policy = NetworkPolicy(self.config.block_private_networks, self.config.allowed_hosts)
        self.egress: EgressProxy | None = None
        self.fetches = Capacity("fetches by address", FETCHES, FETCHES_PER_OWNER)
        self.shelf = shelf
        self.vault = vault
        # The live view's viewers (the local WebSocket's connections) and their counters.
        self.frames = Fanout()
        self.initial_state = initial_state
        # Set once ``start`` has ended: the daemon serves while its browser launches, and a
        # command that needs a context waits for it (``revive``); the launch's error, if any.
        self._started = asyncio.Event()
        self._start_error: BaseException | None = None
        self.spare_for = spare_for
        self._spare: asyncio.Future[Window] | None = None

    def on_event(self, callback: EventCallback) -> None:
        """Hear every session's events, each with ``"owner"``: whose session it was."""
        self.listeners.append(callback)

    async def start(self) -> None:
        """Start Playwright, the egress proxy (when some owner needs it) and the browsers.

        The local browser must start.  Browser servers that do not answer yet are tried again
        in the background: a worker may start before its browser servers do.
        """
        try:
            await self._start()
            self._begin_spare()
        except BaseException as exc:
            self._start_error = exc
            raise
        finally:
            self._started.set()

    async def _start(self) -> None:
        if self._early is not None:
            early, self._early = self._early, None
            self._playwright, local = await early
            if local is not None:
                self.endpoints[0] = local
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        if self.config.block_private_networks is not False and self.egress is None:
            self.egress = EgressProxy(self.policy, per_owner=self.config.egress_connections)
            if self.config.egress_host:
                await self.egress.listen_for_remote(self.config.egress_host)
            for endpoint in self.endpoints:
                if not self._reaches_proxy(endpoint):
                    log.warning(
                        "browser endpoint %s is on another machine and [browser] egress_host "
                        "is not set: the network policy holds there by routes only, which do "
                        "not see redirect hops",
                        endpoint.shown,
                    )
        if self.endpoints[0].kind == LOCAL:
            if not self.endpoints[0].alive:
                await self.endpoints[0].open(self._playwright)
            return
        opened = await asyncio.gather(
            *(e.open(self._playwright) for e in self.endpoints), return_exceptions=True
        )
        for endpoint, result in zip(self.endpoints, opened, strict=True):
            if isinstance(result, BaseException):
                log.warning("%s; trying again in the background", result)
                endpoint.reconnect()

    @property
    def browser(self) -> Browser | None:
        """The first browser that is up (the local one, when it is launched here)."""
        return next((e.browser for e in self.endpoints if e.alive), None)

    @property
    def devices(self) -> dict[str, Any]:
        """Playwright's device descriptors by name ("iPhone 13", "Pixel 7", …)."""
        return self._playwright.devices if self._playwright is not None else {}

    @property
    def alive(self) -> bool:
        """Whether some browser is connected."""
        return any(e.alive for e in self.endpoints)

    async def close(self) -> None:
        """Close every context, let go of the browsers, stop Playwright."""
        await self.release_all()
        await self._drop_spare()
        for endpoint in self.endpoints:
            await endpoint.close()
        if self._playwright is not None:
            await self._playwright.stop()
        self._playwright = None
        if self.egress is not None:
            await self.egress.close()
            self.egress = None

    async def session(self, owner: str) -> Session:
        """The session of ``owner`` (everyone shares one under ``isolation="shared"``).

        An existing session is returned as it is; ``Session.ready`` (called before each
        command) notices a dead browser, so the command that meets it can say so.
        """
        key = "shared" if self.config.isolation == "shared" else owner
        session = self._sessions.get(key)
        if session is None:
            session = Session(self, key)
            self._sessions[key] = session
            try:
                await self.revive(session)
            except BaseException:
                del self._sessions[key]  # no endpoint had room: nothing half-made is kept
                raise
        return session

    def existing(self, owner: str) -> Session | None:
        """The session of ``owner`` if it has one already (never starts one)."""
        return self._sessions.get("shared" if self.config.isolation == "shared" else owner)

    async def revive(self, session: Session) -> bool:
        """Give ``session`` a live context: relaunch a dead local browser, or move it.

        Returns True when the session had a context that died (its tabs are gone).  Waits
        for ``start`` to end first; when it failed, its error is this command's.
        """
        await self._started.wait()
        if self._start_error is not None:
            raise BrowserdError(
                ErrorCode.UNAVAILABLE, f"The browser did not start: {self._start_error}"
            )
        async with self._lock:
            local = self.endpoints[0]
            if local.kind == LOCAL and not local.alive:
                log.warning("browser is gone; relaunching")
                assert self._playwright is not None
                await local.open(self._playwright)
            if session.context is not None and not session.browser_lost:
                return False
            lost = session.context is not None
            state = await self._saved_state(session.owner)
            await self._bind(session, state)
            return lost

    async def _bind(self, session: Session, state: dict[str, Any] | None) -> None:
        """A context for ``session`` on the least-loaded endpoint that takes one.

        An endpoint that fails to make one (lost a moment ago, before Playwright says so) is
        passed over for the next.
        """
        spare = await self._take_spare(session.owner, state)
        if spare is not None:
            await session.bind(spare, self.endpoints[0])
            return
        failed: Exception | None = None
        for endpoint in self._places():
            try:
                context = await self._new_context(endpoint, session.owner, state)
            except PlaywrightError as exc:
                log.warning(
                    "browser endpoint %s made no context: %s", endpoint.shown, endpoint.plain(exc)
                )
                failed = exc
                continue
            await session.bind(Window(context), endpoint)
            return
        assert failed is not None
        raise failed

    async def spare_made(self) -> None:
        """Once the first window for ``spare_for`` is made (or failed, or will not be made:
        no such owner, browser servers elsewhere, a launch that failed); at once when it was
        taken already.  Work put off until then does not compete with that owner's first
        command for the CPU: a local browser still launching holds it too, since the window
        comes right after the launch and the command needs both."""
        if self.spare_for is not None and self.endpoints[0].kind == LOCAL:
            await self._started.wait()
        if self._spare is not None:
            await asyncio.wait([self._spare])

    def _begin_spare(self) -> None:
        """Make ``spare_for``'s first window on the launched browser, in the background."""
        local = self.endpoints[0]
        if self.spare_for is not None and local.kind == LOCAL and local.alive:
            self._spare = asyncio.ensure_future(self._spare_window(local))

    async def _spare_window(self, endpoint: Endpoint) -> Window:
        """``spare_for``'s first window, made before it asks: a fresh context with no saved
        state, prepared as its session would (``Window.prepare``)."""
        assert self.spare_for is not None
        context = await self._new_context(endpoint, self.spare_for, None)
        return await Window(context).prepare(self.config.timeout_ms)

    async def _take_spare(self, owner: str, state: dict[str, Any] | None) -> Window | None:
        """The spare window, for the first context bound when it is ``spare_for``'s, with no
        saved state (the settings the spare was made with), on the browser still up.

        The spare goes to that one context or to none: any other first context closes it,
        as an idle tab would hold memory and a place under ``contexts_per_endpoint``.
        """
        if self._spare is None:
            return None
        spare, self._spare = self._spare, None
        try:
            window = await spare
        except Exception as exc:  # a fresh context is made instead, and says what fails
            log.debug("no spare window: %s", exc)
            return None
        local = self.endpoints[0]
        same = owner == self.spare_for and state is None
        if same and local.alive and window.context.browser is local.browser:
            return window
        with contextlib.suppress(Exception):
            await window.context.close()
        return None

    async def _drop_spare(self) -> None:
        """Close the spare window if no session took it."""
        if self._spare is not None:
            self._spare.cancel()
            with contextlib.suppress(BaseException):
                await (await self._spare).context.close()
            self._spare = None

    def load(self, endpoint: Endpoint) -> int:
        """The contexts this daemon holds on ``endpoint`` (every window counts)."""
        return len(endpoint.browser.contexts) if endpoint.browser is not None else 0

    def _places(self) -> list[Endpoint]:
        """The endpoints that are up with room for one more context, the least loaded first."""
        up = [e for e in self.endpoints if e.alive]
        if not up:
            why = "; ".join(f"{e.shown}: {e.error or e.state}" for e in self.endpoints)
            raise BrowserdError(
                ErrorCode.UNAVAILABLE, f"No browser endpoint is up ({why}); try again later."
            )
        room = [e for e in up if not self._full(e)]
        if not room:
            raise BrowserdError(
                ErrorCode.UNAVAILABLE,
                f"Every browser endpoint that is up holds {self.config.contexts_per_endpoint} "
                "contexts, its limit ([browser] contexts_per_endpoint): try again later.",
            )
        return sorted(room, key=self.load)

    def _full(self, endpoint: Endpoint) -> bool:
        limit = self.config.contexts_per_endpoint
        return limit is not None and self.load(endpoint) >= limit

    async def _saved_state(self, owner: str) -> dict[str, Any] | None:
        """The owner's saved storage state from ``initial_state``; None when it fails."""
        if self.initial_state is None:
            return None
        try:
            return await self.initial_state(owner)
        except Exception:
            log.exception("could not load the saved state of %s", owner[:12])
            return None

    async def new_context(self, session: Session) -> BrowserContext:
        """Another window's context for ``session``, on its endpoint (within its limit)."""
        async with self._lock:
            endpoint = session.endpoint
            if endpoint is None or not endpoint.alive:
                raise BrowserdError(ErrorCode.BROWSER_CRASHED, "The browser is not running.")
            if self._full(endpoint):
                raise BrowserdError(
                    ErrorCode.UNAVAILABLE,
                    f"The browser endpoint holds {self.config.contexts_per_endpoint} contexts, "
                    "its limit ([browser] contexts_per_endpoint): close a window first.",
                )
            return await self._new_context(endpoint, session.owner, None)

    async def proxy_url(self, owner: str) -> str | None:
        """The egress proxy's URL for ``owner``'s own fetches, when the policy applies to it."""
        if self.egress is None or not self.policy.blocks_private(owner):
            return None
        return await self.egress.url_for(owner)

    def _reaches_proxy(self, endpoint: Endpoint) -> bool:
        """Whether ``endpoint``'s browser can reach the egress proxy."""
        if self.egress is None:
            return False
        return endpoint.loopback or bool(self.egress.remote_url and endpoint.kind != LOCAL)

    async def _proxy(self, endpoint: Endpoint, owner: str) -> dict[str, str] | None:
        """The egress proxy as ``endpoint``'s browser reaches it for ``owner``, or None where
        it cannot.

        A browser server elsewhere reaches it on ``egress_host`` with ``owner``'s credential
        (so does one on this machine when that is set); the launched browser and a loopback
        server on loopback, on ``owner``'s own port.  Either way the proxy knows whose each
        connection is, and holds each owner to its share.
        """
        if self.egress is None or not self._reaches_proxy(endpoint):
            return None
        if self.egress.remote_url and endpoint.kind != LOCAL:
            return {**self.egress.credentials(owner), "bypass": "<-loopback>"}
        return {"server": await self.egress.url_for(owner), "bypass": "<-loopback>"}

    async def _new_context(
        self, endpoint: Endpoint, owner: str, state: dict[str, Any] | None
    ) -> BrowserContext:
        """A fresh isolated context of ``owner``: the viewport, downloads, the network policy.

        A download only a command asked for is let through (``downloads.refuse_unasked``).

        An owner under ``block_private_networks`` goes through the egress proxy, which judges
        every connection, redirects and WebSockets included, the daemon's own port too,
        wherever the browser can reach it (``_proxy``).  Only where it cannot do routes judge
        every first request: a route of any pattern makes Playwright intercept every request
        (issue 24 measured a docs page's goto at 101 ms without one and 178 ms with one), so
        a context has none where it would add nothing.  Without the policy, the daemon's own
        port is refused by the local channel itself (it refuses a browser's ``Origin`` and
        ``Sec-Fetch-Mode`` and wants its token) and by ``open``'s check of the address.
        Service workers are blocked: neither the routes nor the proxy would see them.
        """
        assert endpoint.browser is not None
        width, height = self.config.viewport
        options: dict[str, Any] = {}
        blocked = self.policy.blocks_private(owner)
        proxy = await self._proxy(endpoint, owner) if blocked else None
        if proxy is not None:
            options["proxy"] = proxy
        if state is not None:
            options["storage_state"] = state
        context = await endpoint.browser.new_context(
            viewport={"width": width, "height": height},
            accept_downloads=True,
            service_workers="block",
            **options,
        )
        if blocked and "proxy" not in options:
            await self.policy.install(context, owner)
        refuse_unasked(context)
        return context

    async def release(self, owner: str) -> None:
        """Close ``owner``'s context and forget the session."""
        session = self._sessions.pop(owner, None)
        if session is not None and session.context is not None:
            for context in session.windows.values():
                with contextlib.suppress(Exception):
                    await context.close()
            session.context = None

    async def release_all(self) -> None:
        """Close every owner's context (a stop, a logout); the browser stays up."""
        for owner in list(self._sessions):
            await self.release(owner)

    def sessions(self) -> list[Session]:
        """Every open session (for status)."""
        return list(self._sessions.values())

    def status(self) -> list[dict[str, Any]]:
        """Each endpoint: where (no secrets), its state, contexts, limit and estimated MB."""
        limit, mb = self.config.contexts_per_endpoint, self.config.context_mb
        return [
            {**e.status(self.load(e), limit, mb), "network_policy": self._enforced(e)}
            for e in self.endpoints
        ]

    def _enforced(self, endpoint: Endpoint) -> str:
        """How ``block_private_networks`` holds on ``endpoint``'s contexts (for status)."""
        if self.egress is None:
            return "off (block_private_networks = false)"
        if self._reaches_proxy(endpoint):
            return "egress proxy"
        return "routes only: redirect hops unseen (set egress_host)"

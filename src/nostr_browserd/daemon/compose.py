"""The service's core, built in one place: state store, browser pool and dispatcher.

The daemon and ``mcp --local`` both run it; only the daemon adds a worker (leases, fencing,
saved sessions) and ``ask``, and starts the rest of itself while the browser launches.  Every
piece gets what it uses when it is made, nothing is set on it afterwards.  The worker and
``ask`` are built around the dispatcher and the dispatcher calls them, so the dispatcher is
handed how to make them (``Dispatcher(worker=…, asker=…)``) and makes them itself, passing
itself in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..browser.endpoints import Launched
from ..browser.netpolicy import LOCAL_OWNER
from ..browser.pool import BrowserPool, StateHook
from ..catalog import REGISTRY
from ..login.files import private_dir
from ..nostr.signer import Signer
from ..vault.entry import Keeper
from .allow_list import AllowList
from .config import Config, file_quota, make_browser_dirs
from .delivery import Reply, Send
from .dispatch import Dispatcher, MakeAsker, MakeWorker
from .running import LocalTools
from .store import Store, open_store
from .store.base import no_signer
from .timeline import Timeline


@dataclass(frozen=True)
class Core:
    """What every front end of the service drives."""

    store: Store
    browser: BrowserPool
    dispatcher: Dispatcher


async def open_core(
    config: Config,
    allowed: AllowList,
    *,
    reply: Reply,
    send: Send,
    local_tools: LocalTools | None = None,
    logged_in: Callable[[], bool] = lambda: True,
    signer: Callable[[], Signer | None] = no_signer,
    initial_state: StateHook | None = None,
    vault: Callable[[Store], Keeper] | None = None,
    worker: MakeWorker | None = None,
    asker: MakeAsker | None = None,
    beside: Callable[[Core], Awaitable[None]] | None = None,
    timeline: Timeline | None = None,
    early: Awaitable[Launched] | None = None,
) -> Core:
    """Open the store (its saved states and conversations sealed through ``signer()``, the
    identity logged in now), make the browser pool and the dispatcher, and start the
    browser while ``beside(core)`` runs: the daemon signs in,
    connects its relays and opens its local channel meanwhile, and a command that needs the
    browser before it is up waits for it (``BrowserPool.revive``).  Returns once both are
    done; when one fails the other is stopped (a launch is let finish, for ``close``) and
    its error raised.  ``initial_state(owner)``: what a new browser context starts with (the
    daemon's worker keeps each controller's session); ``vault(store)``: the credential vault
    on that store (the daemon's, sealed by its identity); ``timeline``: where the store's
    and the browser's start are recorded; ``early``: the local browser's launch, begun before
    (``BrowserPool``)."""
    timeline = timeline or Timeline()
    # Made 0700 first: the browser's folders inside it would make it with the umask's mode.
    private_dir(config.state.dir, "the state directory")
    make_browser_dirs(config.browser)
    with timeline.step("store"):
        store = await open_store(config.state, signer)
    browser = BrowserPool(
        config.browser,
        shelf=store,
        vault=None if vault is None else vault(store),
        initial_state=initial_state,
        early=early,
        spare_for=LOCAL_OWNER if config.local.enabled else None,
        quota=file_quota(config),
    )
    dispatcher = Dispatcher(
        registry=REGISTRY,
        browser=browser,
        store=store,
        reply=reply,
        send=send,
        controllers=allowed,
        command_timeout=config.browser.command_timeout,
        queue_size=config.browser.queue_size,
        local_tools=local_tools,
        logged_in=logged_in,
        worker_name=config.state.worker,
        worker=worker,
        asker=asker,
    )
    core = Core(store, browser, dispatcher)
    launch = asyncio.ensure_future(_launch(browser, timeline))
    if beside is None:
        await launch
        return core
    rest = asyncio.ensure_future(beside(core))
    try:
        await asyncio.wait({launch, rest}, return_when=asyncio.FIRST_EXCEPTION)
        if launch.done() and launch.exception() is not None:
            rest.cancel()
        await asyncio.gather(launch, rest, return_exceptions=True)
    finally:
        rest.cancel()
    launch.result()  # the launch's error first: what ran beside it was stopped for it
    rest.result()
    return core


async def _launch(browser: BrowserPool, timeline: Timeline) -> None:
    with timeline.step("browser"):
        await browser.start()

"""The service's core, built in one place: state store, browser pool and dispatcher.

The daemon and ``mcp --local`` both run it; only the daemon adds a worker (leases, fencing,
saved sessions) and ``ask``.  Every piece gets what it uses when it is made, nothing is set
on it afterwards.  The worker and ``ask`` are built around the dispatcher and the dispatcher
calls them, so the dispatcher is handed how to make them (``Dispatcher(worker=…, asker=…)``)
and makes them itself, passing itself in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..browser.pool import BrowserPool, StateHook
from ..catalog import REGISTRY
from ..vault.entry import Keeper
from .allow_list import AllowList
from .config import Config, make_browser_dirs
from .dispatch import Dispatcher, LocalTools, MakeAsker, MakeWorker, Reply, Send
from .store import Store, open_store
from .store.state_files import import_state_files


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
    initial_state: StateHook | None = None,
    vault: Callable[[Store], Keeper] | None = None,
    worker: MakeWorker | None = None,
    asker: MakeAsker | None = None,
) -> Core:
    """Open the store (moving old state files into it), start the browser, make the
    dispatcher.  ``initial_state(owner)``: what a new browser context starts with (the
    daemon's worker keeps each controller's session); ``vault(store)``: the credential vault
    on that store (the daemon's, sealed by its identity)."""
    make_browser_dirs(config.browser)
    store = await open_store(config.state)
    await import_state_files(config.browser.state_dir, store)
    browser = BrowserPool(
        config.browser,
        shelf=store,
        vault=None if vault is None else vault(store),
        initial_state=initial_state,
    )
    await browser.start()
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
    return Core(store, browser, dispatcher)

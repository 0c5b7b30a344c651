"""``mcp --local``: the browser in this process, behind the daemon's own dispatcher.

The calls take the path every command takes (``Dispatcher.handle``, as the local channel): the
registry validates, the session runs it under its lock, the audit log records it (transport
``mcp``).  No relay and no identity are involved.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection
from typing import Any

from ..browser.pool import BrowserPool
from ..catalog import REGISTRY
from ..daemon.config import Config, make_browser_dirs
from ..daemon.dispatch import Dispatcher
from ..daemon.local_ws import OWNER
from ..daemon.store import Store, open_store
from ..daemon.store.state_files import shelve
from .backend import EventSink, Progress, Response

SESSIONS_WITH_US = frozenset({OWNER, "shared"})  # whose browser events are ours to report


class LocalBackend:
    """Runs tools against an in-process browser pool."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.browser = BrowserPool(config.browser)
        self.store: Store | None = None
        self.dispatcher: Dispatcher | None = None
        self._sinks: list[EventSink] = []

    async def start(self) -> None:
        """Create the browser's directories, open the audit log, launch Chromium."""
        make_browser_dirs(self.config.browser)
        self.store = await open_store(self.config.state)
        await shelve(self.browser, self.store)
        await self.browser.start()
        self.browser.on_event(self._event)
        self.dispatcher = Dispatcher(
            registry=REGISTRY,
            browser=self.browser,
            store=self.store,
            reply=_nowhere,
            send=_nowhere,
            controllers={},
            command_timeout=self.config.browser.command_timeout,
            queue_size=self.config.browser.queue_size,
        )

    async def close(self) -> None:
        """Close the browser and the audit log."""
        if self.dispatcher is not None:
            await self.dispatcher.close()
        await self.browser.close()
        if self.store is not None:
            await self.store.close()
            self.store = None

    async def allowed(self) -> Collection[str] | None:
        """Everything: the person who started this process owns the browser."""
        return None

    async def call(self, tool: str, params: dict[str, Any], progress: Progress) -> Response:
        """Run one tool as the local owner (nothing here ever waits for an approver)."""
        assert self.dispatcher is not None, "start() first"
        request = {"id": secrets.token_hex(4), "tool": tool, "params": params}
        answer = await self.dispatcher.handle(OWNER, request, transport="mcp", local=True)
        return answer.response

    def on_event(self, sink: EventSink) -> None:
        """Report this session's browser events (tab_changed, dialog, download…) to ``sink``."""
        self._sinks.append(sink)

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("owner") in SESSIONS_WITH_US:
            for sink in self._sinks:
                sink({"event": event["event"], "data": event["data"]})


async def _nowhere(*_: Any) -> bool:
    """No direct messages leave a local MCP server."""
    return False

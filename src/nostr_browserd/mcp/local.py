"""``mcp --local``: the browser in this process, behind the daemon's own dispatcher.

The calls take the path every command takes (``Dispatcher.handle``, as the local channel): the
registry validates, the session runs it under its lock, the audit log records it (transport
``mcp``).  No relay and no identity are involved.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Collection
from typing import Any

from ..browser.endpoints import Launched
from ..daemon.allow_list import AllowList
from ..daemon.compose import Core, open_core
from ..daemon.config import Config
from ..daemon.local_ws import OWNER
from .backend import EventSink, Progress, Response

SESSIONS_WITH_US = frozenset({OWNER, "shared"})  # whose browser events are ours to report


class LocalBackend:
    """Runs tools against an in-process browser pool."""

    def __init__(self, config: Config, early: Awaitable[Launched] | None = None) -> None:
        """``early``: the browser's launch, begun before (``cli.mcp``)."""
        self.config, self._early = config, early
        self.core: Core | None = None
        self._sinks: list[EventSink] = []

    async def start(self) -> None:
        """Open the store and launch Chromium, as the daemon does (``compose.open_core``),
        with nobody on the allow-list: only this machine's owner drives it."""
        self.core = await open_core(
            self.config, AllowList(), reply=_nowhere, send=_nowhere, early=self._early
        )
        self.core.browser.on_event(self._event)

    async def close(self) -> None:
        """Close the browser and the audit log."""
        if self.core is not None:
            core, self.core = self.core, None
            await core.dispatcher.close()
            await core.browser.close()
            await core.store.close()

    async def allowed(self) -> Collection[str] | None:
        """Everything: the person who started this process owns the browser."""
        return None

    async def call(self, tool: str, params: dict[str, Any], progress: Progress) -> Response:
        """Run one tool as the local owner (nothing here ever waits for an approver)."""
        assert self.core is not None, "start() first"
        request = {"id": secrets.token_hex(4), "tool": tool, "params": params}
        answer = await self.core.dispatcher.handle(OWNER, request, transport="mcp", local=True)
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

"""``mcp --local``: the browser in this process, behind the daemon's own dispatcher.

The calls take the path every command takes (``Dispatcher.handle``, as the local channel): the
registry validates, the session runs it under its lock, the audit log records it (transport
``mcp``).  No relay and no identity are involved.

The store and the browser open in the background (``start`` returns at once): a host's
``initialize`` and ``tools/list`` need neither and are answered meanwhile, its first call
waits for them.  Should they fail to open, the error is logged once and every call answers
it (``UNAVAILABLE``), where a host and its model read it.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Collection
from typing import Any

from ..browser.endpoints import Launched
from ..browser.netpolicy import LOCAL_OWNER as OWNER  # the local channel's owner (local_ws)
from ..daemon.allow_list import AllowList
from ..daemon.compose import Core, open_core
from ..daemon.config import Config
from ..errors import BrowserdError, ErrorCode, said
from .backend import EventSink, Progress, Response

log = logging.getLogger(__name__)

SESSIONS_WITH_US = frozenset({OWNER, "shared"})  # whose browser events are ours to report


class LocalBackend:
    """Runs tools against an in-process browser pool."""

    def __init__(self, config: Config, early: Awaitable[Launched] | None = None) -> None:
        """``early``: the browser's launch, begun before (``cli.mcp``)."""
        self.config, self._early = config, early
        self._opening: asyncio.Future[Core] | None = None
        self._sinks: list[EventSink] = []

    async def start(self) -> None:
        """Begin to open the store and launch Chromium (once; returns at once)."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())

    async def _open(self) -> Core:
        """The store and the browser, as the daemon opens them (``compose.open_core``), with
        nobody on the allow-list: only this machine's owner drives it."""
        try:
            core = await open_core(
                self.config, AllowList(), reply=_nowhere, send=_nowhere, early=self._early
            )
        except Exception as exc:
            log.error("the browser did not start: %s", said(exc))
            raise
        core.browser.on_event(self._event)
        return core

    async def _core(self) -> Core:
        """The opened core, once it is; a BrowserdError saying why when it could not be.
        Shielded: a call cancelled while it waits does not cancel the start."""
        assert self._opening is not None, "start() first"
        try:
            return await asyncio.shield(self._opening)
        except Exception as exc:
            raise BrowserdError(
                ErrorCode.UNAVAILABLE, f"the browser did not start: {said(exc)}"
            ) from None

    async def close(self) -> None:
        """Close the browser and the audit log (once the start, if still going, is done)."""
        opening, self._opening = self._opening, None
        if opening is None:
            return
        try:
            core = await opening
        except Exception:  # logged where it failed; open_core handed back nothing to close
            return
        await core.dispatcher.close()
        await core.browser.close()
        await core.store.close()

    async def allowed(self) -> Collection[str] | None:
        """Everything: the person who started this process owns the browser."""
        return None

    async def call(self, tool: str, params: dict[str, Any], progress: Progress) -> Response:
        """Run one tool as the local owner (nothing here ever waits for an approver)."""
        request = {"id": secrets.token_hex(4), "tool": tool, "params": params}
        try:
            core = await self._core()
        except BrowserdError as exc:
            return {"id": request["id"], "success": False, "error": exc.to_dict()}
        answer = await core.dispatcher.handle(OWNER, request, transport="mcp", local=True)
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

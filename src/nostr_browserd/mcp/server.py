"""The MCP server itself, on the SDK's low-level ``Server``: the registry's own schemas as they
are, calls handed to a ``Backend``, its answers turned into MCP content.

Push events become ``notifications/message`` (logger ``browser``) on the connection that
spoke last; a gated call waiting for its approver reports MCP progress while it waits.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from typing import Any

import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from .. import __version__
from ..catalog import REGISTRY
from ..commands.registry import Registry
from ..mcpshape.content import Shelf, shelved, to_result
from ..mcpshape.listing import mcp_tool
from ..mcpshape.selection import Selection, listed
from .backend import Backend
from .host_facing import INSTRUCTIONS, event_notice
from .stdio import stdio_streams

log = logging.getLogger(__name__)

# Logging is what hosts show for server-initiated notices; the SDK marks it deprecated for
# the 2026 protocol, which no host speaks yet.  Say so once, here, instead of on every event.
warnings.filterwarnings("ignore", message=".*logging capability.*", category=MCPDeprecationWarning)


class BrowserMcp:
    """One MCP server over one backend."""

    def __init__(
        self,
        backend: Backend,
        selection: Selection | None = None,
        registry: Registry = REGISTRY,
        name: str = "nostr-browserd",
    ) -> None:
        self.backend, self.registry = backend, registry
        self.selection = selection or Selection()
        self.selection.check(registry)
        self.shelf = Shelf()
        self._session: ServerSession | None = None
        self._level: types.LoggingLevel = "info"
        self._tasks: set[asyncio.Task[Any]] = set()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server: Server[Any] = Server(
                name,
                version=__version__,
                instructions=INSTRUCTIONS,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_list_resources=self._list_resources,
                on_read_resource=self._read_resource,
                on_set_logging_level=self._set_level,
            )
        backend.on_event(self._event)

    # --- handlers ----------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._session = ctx.session
        try:
            allowed = await self.backend.allowed()
        except LookupError as exc:  # the remote daemon did not tell us the agent's role
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        tools = listed(self.registry, self.selection, allowed)
        return types.ListToolsResult(tools=[mcp_tool(t) for t in tools])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self._session = ctx.session
        name = params.name
        if name in self.registry and not self.selection.offers(self.registry.get(name)):
            return _error(f"FORBIDDEN: {name} is not offered by this server (see --caps/--tools).")

        async def progress(done: float, total: float | None, message: str) -> None:
            await ctx.session.report_progress(done, total, message)

        response = await self.backend.call(name, dict(params.arguments or {}), progress)
        if isinstance(response, types.CallToolResult):  # a ContextVM server's: its large
            return shelved(response, self.shelf)  # files go on our shelf, as ours would
        return to_result(response, self.shelf)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=self.shelf.listing())

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        found = self.shelf.read(str(params.uri))
        if found is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"{params.uri} is no longer kept; run the tool again for a fresh copy.",
            )
        return types.ReadResourceResult(contents=[found])

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self._session = ctx.session
        self._level = params.level
        return types.EmptyResult()

    # --- push events -------------------------------------------------------------------

    def _event(self, event: dict[str, Any]) -> None:
        """A browser event, as a log notice to the host (best effort, never blocks)."""
        session, notice = self._session, event_notice(event, self._level)
        if session is None or notice is None:
            return
        task = asyncio.ensure_future(self._log(session, *notice))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _log(self, session: ServerSession, level: types.LoggingLevel, data: Any) -> None:
        try:
            await session.send_log_message(level, data, logger="browser")
        except Exception as exc:  # a host that went away is no reason to fail a command
            log.debug("could not send an event to the host: %s", exc)

    # --- running -----------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one host over stdin/stdout until it closes them."""
        async with stdio_streams() as (read, write):
            await self.backend.start()
            try:
                await self.server.run(read, write, self.server.create_initialization_options())
            finally:
                await self.backend.close()


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

"""What the MCP server needs from whatever runs the tools: in this process or over Nostr."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the MCP SDK takes half a second to import: mcp --local's backend does
    import mcp.types as types  # not wait for it (cli.mcp)

Response = dict[str, Any]
# (seconds waited, seconds in all or None, what is happening): becomes an MCP progress notice.
Progress = Callable[[float, float | None, str], Awaitable[None]]
# {"event", "data"} pushed by the browser (tab_changed, dialog, watched events…).
EventSink = Callable[[dict[str, Any]], None]


class Backend(Protocol):
    """Runs one tool call and answers with the protocol's response shape."""

    async def start(self) -> None:
        """Get ready, or begin to (launch the browser, or connect to the relays): what a
        call needs that ``start`` has not finished, the call waits for."""

    async def close(self) -> None:
        """Release everything ``start`` took."""

    async def allowed(self) -> Collection[str] | None:
        """The tool names this caller may run, or None for every tool."""

    async def call(
        self, tool: str, params: dict[str, Any], progress: Progress
    ) -> Response | types.CallToolResult:
        """Run ``tool`` and return ``{"id", "success", "data" | "error"}``, or the MCP result
        a ContextVM server already made of it; never raises."""

    def on_event(self, sink: EventSink) -> None:
        """Deliver pushed events to ``sink`` from now on."""

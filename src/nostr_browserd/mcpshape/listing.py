"""``tools/list`` from the registry alone, as the MCP SDK's types (the entries themselves are
:func:`.wire.tool_entry`'s).  Which tools are listed is :mod:`.selection`'s."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..commands.registry import Tool
from .wire import tool_entry


def mcp_tool(tool: Tool[Any]) -> types.Tool:
    """One registry tool as MCP lists it: its params' JSON Schema is the input schema."""
    return types.Tool.model_validate(tool_entry(tool))

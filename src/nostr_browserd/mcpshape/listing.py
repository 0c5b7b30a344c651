"""``tools/list`` from the registry alone: names, descriptions, JSON Schemas and annotations.

The annotations are read from the tool's own policy fields, never from its name or family.
Which tools are listed is :mod:`.selection`'s (it needs none of MCP's wire types).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..commands.registry import Tool


def tool_annotations(tool: Tool[Any]) -> types.ToolAnnotations:
    """MCP's ``readOnlyHint`` / ``destructiveHint`` / ``idempotentHint`` / ``openWorldHint``,
    as the tool declares them (``Tool.annotations``)."""
    return types.ToolAnnotations.model_validate(tool.annotations())


def mcp_tool(tool: Tool[Any]) -> types.Tool:
    """One registry tool as MCP lists it: its params' JSON Schema is the input schema."""
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.params.model_json_schema(),
        annotations=tool_annotations(tool),
    )

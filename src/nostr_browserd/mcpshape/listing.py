"""``tools/list`` from the registry alone: names, descriptions, JSON Schemas and annotations.

The annotations are read from the tool's own policy fields, never from its name or family;
``--caps`` (families) and ``--tools`` (names) narrow the list the way playwright-mcp's
capabilities do, and a remote daemon's answer narrows it to what the agent's role allows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..commands.registry import Registry, Tool


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


@dataclass(frozen=True)
class Selection:
    """Which tools to offer: ``caps`` are families, ``names`` are tools; empty means all."""

    caps: frozenset[str] = frozenset()
    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, caps: Iterable[str], names: Iterable[str]) -> Selection:
        """From repeatable or comma-separated options (``--caps navigate,read``)."""
        return cls(frozenset(_words(caps)), frozenset(_words(names)))

    def check(self, registry: Registry) -> None:
        """Refuse a family or tool name the registry does not know (a typo lists nothing)."""
        families = {t.family for t in registry}
        unknown = sorted(self.caps - families) + sorted(n for n in self.names if n not in registry)
        if unknown:
            raise ValueError(
                f"unknown tool families or names: {', '.join(unknown)}; "
                f"families are {', '.join(sorted(families))}"
            )

    def offers(self, tool: Tool[Any]) -> bool:
        """Whether ``tool`` is in the selection (a name given explicitly always is)."""
        if not self.caps and not self.names:
            return True
        return tool.family in self.caps or tool.name in self.names


def listed(
    registry: Registry, selection: Selection, allowed: Collection[str] | None = None
) -> list[Tool[Any]]:
    """The registry's tools in order, narrowed by ``selection`` and by ``allowed`` names."""
    return [t for t in registry if selection.offers(t) and (allowed is None or t.name in allowed)]


def _words(values: Iterable[str]) -> list[str]:
    return [w.strip() for v in values for w in v.split(",") if w.strip()]
